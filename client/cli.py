"""``benchwright``: the command line for model-evaluation pipelines.

The token comes from $BENCHWRIGHT_TOKEN (or --token), the server from
$BENCHWRIGHT_URL (or --url; default http://127.0.0.1:8000). Exit status: 0 done,
1 the API refused or could not be reached, 2 bad usage or manifest, 3 ``wait``
timed out.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from tqdm import tqdm

from .api import ApiError, BenchwrightClient
from .batch import MAX_CHUNK, ManifestError, default_state_path, submit_manifest

# ``results`` as JSON lines: the API's fields, the raw speedup marked by speedup_scored.
RESULT_FIELDS = [
    "id",
    "task",
    "task_version",
    "model",
    "run_id",
    "status",
    "verdict",
    "timing_mode",
    "speedup",
    "speedup_scored",
    "score_speedup",
    "speedup_significant",
    "speedup_unscored_reason",
    "automatic_points",
    "points",
    "points_available",
    "review_decision",
    "review_score",
    "attempts",
    "created_at",
    "status_changed_at",
    "labels",
]
# ``results --format csv``: a table, so an unscored speedup is words, never a number.
CSV_FIELDS = [
    "id",
    "task",
    "task_version",
    "model",
    "run_id",
    "status",
    "verdict",
    "timing_mode",
    "speedup",
    "speedup_significant",
    "speedup_unscored_reason",
    "automatic_points",
    "points",
    "points_available",
    "review_decision",
    "review_score",
    "attempts",
    "created_at",
    "status_changed_at",
    "labels",
]


class UsageError(Exception):
    pass


def cmd_tasks(client: BenchwrightClient, args: argparse.Namespace, out: TextIO) -> int:
    filters = {"kind": args.kind, "difficulty": args.difficulty, "hardware": args.hardware}
    tasks = client.tasks(tags=args.tags, **filters)
    if args.json:
        for task in tasks:
            out.write(json.dumps(task) + "\n")
        return 0
    rows = [("SLUG", "KIND", "DIFFICULTY", "HARDWARE", "VERSION", "TITLE")]
    rows += [
        (t["slug"], t["kind"], t["difficulty"], t["hardware"], str(t["version"]), t["title"])
        for t in tasks
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(row[:5], widths, strict=True)))
        out.write(f"  {row[5]}\n")
    return 0


def _labels(pairs: Sequence[str]) -> dict[str, str]:
    labels = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--label takes KEY=VALUE, not {pair!r}")
        labels[key] = value
    return labels


def cmd_submit(client: BenchwrightClient, args: argparse.Namespace, out: TextIO) -> int:
    files: dict[str, str] = {}
    for name in args.files:
        path = Path(name)
        if path.name in files:
            raise UsageError(f"two files are named {path.name}")
        try:
            files[path.name] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {name}: {exc}") from None
    submission = client.submit(
        task=args.task,
        model=args.model,
        files=files,
        run_id=args.run_id,
        labels=_labels(args.label),
        idempotency_key=args.idempotency_key,
    )
    if args.json:
        out.write(json.dumps(submission) + "\n")
    else:
        out.write(f"submission {submission['id']} {submission['status']}\n")
    return 0


def cmd_submit_batch(client: BenchwrightClient, args: argparse.Namespace, out: TextIO) -> int:
    manifest = Path(args.manifest)
    state = Path(args.state) if args.state else default_state_path(manifest)
    lines = sum(1 for raw in manifest.read_bytes().splitlines() if raw.strip())
    with tqdm(
        total=lines, unit="sub", desc="submitting", disable=args.no_progress, file=sys.stderr
    ) as bar:
        result = submit_manifest(
            client, manifest, chunk_size=args.chunk_size, state_path=state, on_chunk=bar.update
        )
    runs = ", ".join(sorted(r for r in result.run_ids if r)) or "-"
    out.write(
        f"{len(result.ids)} submissions ({result.submitted} sent now, {result.skipped} "
        f"already accepted before); runs: {runs}; state: {state}\n"
    )
    return 0


def cmd_wait(client: BenchwrightClient, args: argparse.Namespace, out: TextIO) -> int:
    deadline = time.monotonic() + args.timeout if args.timeout else None
    summary = client.summary(run_id=args.run_id)
    if summary["total"] == 0:
        raise ApiError(404, "not_found", f"no submissions in run {args.run_id!r}")
    with tqdm(
        total=summary["total"],
        unit="sub",
        desc="graded",
        disable=args.no_progress,
        file=sys.stderr,
    ) as bar:
        while True:
            bar.total = summary["total"]
            bar.update(summary["finished"] - bar.n)
            if summary["unfinished"] == 0:
                break
            if deadline is not None and time.monotonic() >= deadline:
                out.write(f"timed out: {summary['unfinished']} of {summary['total']} unfinished\n")
                return 3
            time.sleep(args.interval)
            summary = client.summary(run_id=args.run_id)
    verdicts = ", ".join(f"{v}: {n}" for v, n in sorted(summary["by_verdict"].items())) or "-"
    out.write(f"run {args.run_id}: {summary['total']} finished; {verdicts}\n")
    return 0


def speedup_text(row: dict[str, Any], *, short: bool = False) -> str:
    """A speedup for a table: the scored figure, or why a measured one is no score
    (a figure timed under Triton's interpreter is not a performance measurement).
    ``short``: 3 digits, an x, and whether it is within noise, for people."""
    if row.get("speedup") is None:
        return ""
    if not row.get("speedup_scored"):
        mode = row.get("timing_mode")
        return "not scored (interpreter)" if mode == "interpreter" else "not scored"
    value = float(row["score_speedup"])
    if not short:
        return str(value)
    return f"{value:.3g}x" + ("" if row.get("speedup_significant") else " (noise)")


def _number(value: Any) -> str:
    return "" if value is None else f"{value:g}"


def _table(rows: list[dict[str, Any]], out: TextIO) -> None:
    header = ("ID", "TASK", "MODEL", "VERDICT", "TIMING", "SPEEDUP", "POINTS", "REVIEW")
    lines = [header]
    for row in rows:
        speedup = speedup_text(row, short=True)
        points = _number(row.get("points"))
        if points and row.get("points_available") is not None:
            points += f"/{row['points_available']}"
        review = row.get("review_decision") or "-"
        if row.get("review_score") is not None:
            review += f" {row['review_score']:.2f}"
        lines.append(
            (
                str(row["id"]),
                row["task"],
                row["model"],
                row.get("verdict") or row["status"],
                row.get("timing_mode") or "-",
                speedup or "-",
                points or "-",
                review,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        out.write("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
        out.write("\n")


def cmd_results(client: BenchwrightClient, args: argparse.Namespace, out: TextIO) -> int:
    rows = client.submissions(run_id=args.run_id, page_size=1000)
    if args.format == "jsonl":
        for row in rows:
            out.write(json.dumps({k: row.get(k) for k in RESULT_FIELDS}) + "\n")
        return 0
    if args.format == "table":
        _table(list(rows), out)
        return 0
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        labels = json.dumps(row.get("labels") or {}, sort_keys=True)
        writer.writerow(row | {"speedup": speedup_text(row), "labels": labels})
    return 0


def cmd_export(client: BenchwrightClient, args: argparse.Namespace, out: TextIO) -> int:
    """Build a snapshot of an export definition, show its progress, download its tar.gz."""
    snapshot = client.request(
        "POST",
        f"/api/v1/exports/definitions/{quote(args.definition, safe='')}/snapshots/",
        idempotency_key=f"export-{uuid.uuid4()}",
    )
    deadline = time.monotonic() + args.timeout if args.timeout else None
    with tqdm(unit="item", desc="exporting", disable=args.no_progress, file=sys.stderr) as bar:
        while snapshot["status"] not in ("succeeded", "failed"):
            if deadline is not None and time.monotonic() >= deadline:
                out.write(f"timed out: snapshot {snapshot['id']} is {snapshot['status']}\n")
                return 3
            time.sleep(args.interval)
            snapshot = client.request("GET", f"/api/v1/exports/snapshots/{snapshot['id']}/")
            bar.total = snapshot["items_total"]
            bar.update(snapshot["items_done"] - bar.n)
            bar.set_postfix(rows=snapshot["rows_written"])
    if snapshot["status"] == "failed":
        raise ApiError(0, "export_failed", f"snapshot {snapshot['id']}: {snapshot['error']}")
    name = f"{snapshot['definition']}-v{snapshot['version']}-snapshot-{snapshot['id']}.tar.gz"
    target = Path(args.output or name)
    _download(client, snapshot["download_url"], target, snapshot["archive_sha256"])
    rows = ", ".join(f"{split} {n}" for split, n in (snapshot["rows"] or {}).items())
    out.write(f"{target}: snapshot {snapshot['id']}, {rows or 'no rows'}\n")
    return 0


def _download(client: BenchwrightClient, path: str, target: Path, sha256: str) -> None:
    """Stream a file to ``target``, checking its SHA-256; nothing is left on failure."""
    digest = hashlib.sha256()
    partial = target.with_name(target.name + ".part")
    with client._http.stream("GET", path) as response:
        if response.status_code != 200:
            response.read()
            raise ApiError(response.status_code, "download_failed", response.text[:500])
        with partial.open("wb") as fh:
            for block in response.iter_bytes():
                digest.update(block)
                fh.write(block)
    if digest.hexdigest() != sha256:
        partial.unlink()
        raise ApiError(0, "download_corrupt", f"{path}: SHA-256 does not match")
    partial.replace(target)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchwright", description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="server (default $BENCHWRIGHT_URL or http://127.0.0.1:8000)")
    parser.add_argument("--token", help="API token (default $BENCHWRIGHT_TOKEN)")
    sub = parser.add_subparsers(dest="command", required=True)

    tasks = sub.add_parser("tasks", help="list published tasks")
    tasks.add_argument("--kind")
    tasks.add_argument("--difficulty")
    tasks.add_argument("--hardware")
    tasks.add_argument("--tags", help="comma-separated; tasks carrying all of them")
    tasks.add_argument("--json", action="store_true", help="one JSON object per line")
    tasks.set_defaults(handler=cmd_tasks)

    submit = sub.add_parser("submit", help="submit one solution")
    submit.add_argument("--task", required=True, help="task slug")
    submit.add_argument("--model", required=True, help="the model that wrote it")
    submit.add_argument("--run-id", default="", help="groups submissions into a run")
    submit.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    submit.add_argument("--idempotency-key", help="safe retries: the same key never submits twice")
    submit.add_argument("--json", action="store_true")
    submit.add_argument("files", nargs="+", metavar="FILE", help="sent under its base name")
    submit.set_defaults(handler=cmd_submit)

    batch = sub.add_parser("submit-batch", help="submit a JSONL manifest, resumably")
    batch.add_argument("manifest", metavar="MANIFEST.jsonl")
    batch.add_argument("--chunk-size", type=int, default=MAX_CHUNK, help="per request (<= 1000)")
    batch.add_argument("--state", help="state file (default MANIFEST.jsonl.state.json)")
    batch.add_argument("--no-progress", action="store_true")
    batch.set_defaults(handler=cmd_submit_batch)

    wait = sub.add_parser("wait", help="wait until every submission of a run has finished")
    wait.add_argument("run_id", metavar="RUN_ID")
    wait.add_argument("--interval", type=float, default=5.0, help="seconds between polls")
    wait.add_argument("--timeout", type=float, default=0, help="give up after this many seconds")
    wait.add_argument("--no-progress", action="store_true")
    wait.set_defaults(handler=cmd_wait)

    results = sub.add_parser(
        "results", help="a run's submissions: grading, rubric points and review outcome"
    )
    results.add_argument("run_id", metavar="RUN_ID")
    results.add_argument(
        "--format",
        choices=["jsonl", "csv", "table"],
        default="jsonl",
        help="jsonl (default; raw speedups marked by speedup_scored), csv, or table",
    )
    results.set_defaults(handler=cmd_results)

    export = sub.add_parser("export", help="build a dataset snapshot, wait, download its tar.gz")
    export.add_argument("definition", metavar="DEFINITION", help="export definition name")
    export.add_argument("--output", "-o", help="file (default DEFINITION-vN-snapshot-ID.tar.gz)")
    export.add_argument("--interval", type=float, default=2.0, help="seconds between polls")
    export.add_argument("--timeout", type=float, default=0, help="give up after this many seconds")
    export.add_argument("--no-progress", action="store_true")
    export.set_defaults(handler=cmd_export)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = out or sys.stdout
    try:
        with BenchwrightClient(args.url, args.token) as client:
            return int(args.handler(client, args, out))
    except (UsageError, ManifestError) as exc:
        print(f"benchwright: {exc}", file=sys.stderr)
        return 2
    except ApiError as exc:
        print(f"benchwright: {exc}", file=sys.stderr)
        if exc.fields:
            print(json.dumps(exc.fields, indent=1), file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
