"""Dataset export throughput and memory on PostgreSQL, and how well the
hidden-content guard tells quoting from honest code.

    .venv/bin/python bench/export.py [--submissions 100000] [--tasks 50]
    .venv/bin/python bench/export.py --guard-only

First, in a child process and without a database, the guard is measured on the
catalog (``exports.guard_check``): the honest corpus (solutions written from the
statements, tests/exports/corpus/honest), of which none may be withheld, and
every distinctive passage of a hidden file (reference, expert solution,
negative) pasted into honest code, all of which must be caught; once with the
catalog's tasks as the platform's other tasks, once for a task alone. Prints
both figures; ``--guard-only`` stops there and writes bench/results/export-guard.json.

Creates a scratch database (``benchwright_bench_export``, dropped afterwards),
migrates it, and bulk-loads (COPY) ``--submissions`` synthetic submissions
spread over ``--tasks`` published task versions, every one graded (a grading
run, automatic criterion scores) and reviewed (an assignment, a review with
per-criterion scores, the consensus scores, a final outcome), plus pairwise
judgements. About 5% are near-duplicates of another (recommented).

Then, for each format, a fresh process builds one snapshot of an export
definition over all of it, exactly as the Celery job does
(``exports.services.snapshot_build``: query, dedup, guard, JSONL and Parquet,
card, manifest, tar.gz, storage), and reports rows written per second and its
peak RSS. Prints the figures and writes bench/results/export.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "benchwright_bench_export"
PG = os.environ.get("BENCH_POSTGRES", "postgres://postgres@127.0.0.1:5432")
RESULTS = ROOT / "bench" / "results" / "export.json"
GUARD_RESULTS = ROOT / "bench" / "results" / "export-guard.json"
FORMATS = ("sft", "preference", "rl", "critique")
TARGET_ROWS_PER_S = 20_000
TARGET_PEAK_RSS_MB = 300

STATEMENT = """Write `ModelNew`, a fused **bias + GELU** over a `(batch, dim)` float tensor.
The output must match the reference within `atol=1e-5`. Target: one read and one
write per element."""
SOLUTION = '''import torch
import triton
import triton.language as tl


@triton.jit
def _bias_gelu(x_ptr, b_ptr, y_ptr, n, dim, BLOCK: tl.constexpr):
    """Variant {n}: one program per {block} elements, fp32 math."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs % dim, mask=mask, other=0.0).to(tl.float32)
    u = x + b
    inner = 0.7978845608028654 * (u + 0.044715 * u * u * u)
    y = u / (1.0 + tl.exp(-2.0 * inner))  # sigmoid form: no inf/inf
    tl.store(y_ptr + offs, y * {scale}, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, dim: int = {dim}):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, {block}),)
        _bias_gelu[grid](x, self.bias, y, n, x.shape[-1], BLOCK={block})
        return y
'''


def admin_dsn(database: str = "postgres") -> str:
    return f"{PG}/{database}"


def recreate_database() -> None:
    import psycopg

    with psycopg.connect(admin_dsn(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}"')
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def drop_database() -> None:
    import psycopg

    with psycopg.connect(admin_dsn(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')


def child_env(media: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=admin_dsn(DB_NAME),
        DJANGO_MEDIA_ROOT=media,
        DJANGO_SETTINGS_MODULE="benchwright.settings",
        LOG_LEVEL="WARNING",
        # Nothing is enqueued (builds are called directly); never touch a real broker.
        CELERY_BROKER_URL="memory://",
        CELERY_RESULT_BACKEND="cache+memory://",
    )
    return env


def run_child(args: list[str], media: str) -> Any:
    done = subprocess.run(
        [sys.executable, __file__, *args],
        env=child_env(media),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"bench child {args} failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def best_of(runs: int, args: list[str], media: str) -> dict[str, Any]:
    """The fastest of ``runs`` builds (each in a fresh process), with every run's time:
    the machine is shared, so the slower runs measure the neighbours too."""
    results = [run_child(args, media) for _ in range(runs)]
    best = min(results, key=lambda r: r["seconds"])
    return best | {
        "runs_seconds": [r["seconds"] for r in results],
        "peak_rss_mb": max(r["peak_rss_mb"] for r in results),
    }


# In the child processes ------------------------------------------------------------------------


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def copy(cursor: Any, model: Any, columns: list[str], rows: Any) -> int:
    """COPY rows (tuples in ``columns`` order) into the model's table."""
    table = model._meta.db_table
    count = 0
    with cursor.copy(f'COPY "{table}" ({", ".join(columns)}) FROM STDIN') as sink:
        for row in rows:
            sink.write_row(row)
            count += 1
    return count


def seed(submissions: int, tasks: int) -> dict[str, Any]:
    """Migrate and load the synthetic world; returns row counts."""
    setup_django()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    world = _seed_tasks(tasks)
    counts = _seed_submissions(connection, world, submissions)
    with connection.cursor() as cursor:
        for table in (
            "submissions_submission",
            "submissions_submissionfile",
            "submissions_gradingrun",
            "rubrics_criterionscore",
            "reviews_reviewassignment",
            "reviews_review",
            "reviews_reviewscore",
            "reviews_reviewoutcome",
            "reviews_pairwisejudgement",
        ):
            # Ids were given explicitly: move each sequence past them.
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "  # noqa: S608 (constant names)
                f"COALESCE((SELECT MAX(id) FROM {table}), 1))"
            )
    # Outside a transaction: VACUUM sets the hint bits and visibility map a bulk load
    # leaves unset, as a database in use has them, and ANALYZE gives the planner stats.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")
    counts["seconds"] = round(time.perf_counter() - started, 1)
    return counts


def _seed_tasks(tasks: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from benchwright import roles
    from rubrics.models import Criterion, CriterionKind, Rubric
    from tasks.models import FileRole, Task, TaskFile, TaskStatus, TaskVersion, Visibility

    user_model = get_user_model()
    admin = user_model.objects.create_user("bench-admin")
    roles.grant(admin, roles.ADMIN)
    client = user_model.objects.create_user("bench-client")
    reviewers = [user_model.objects.create_user(f"bench-reviewer-{i}") for i in range(4)]
    versions = []
    for i in range(tasks):
        task = Task.objects.create(
            owner=admin,
            slug=f"bias-gelu-{i:03d}",
            title=f"Bias + GELU {i}",
            statement=STATEMENT,
            status=TaskStatus.PUBLISHED,
            difficulty=("easy", "medium", "hard")[i % 3],
            tags=["fusion", "triton"],
            hardware="h100",
            grading={"format": "kernelbench", "language": "triton", "trials": 5},
        )
        version = TaskVersion.objects.create(
            task=task,
            number=1,
            content_hash=f"{i:064d}",
            title=task.title,
            kind=task.kind,
            statement=STATEMENT,
            difficulty=task.difficulty,
            tags=task.tags,
            hardware=task.hardware,
            grading=task.grading,
        )
        for path, content, visibility, role in (
            ("statement.md", STATEMENT, Visibility.PROMPT, FileRole.STATEMENT),
            ("starter.py", "class ModelNew: ...\n", Visibility.PROMPT, FileRole.STARTER),
            (
                "reference.py",
                f"# hidden reference {i}\n" * 20,
                Visibility.HIDDEN,
                FileRole.REFERENCE,
            ),
            (
                "solution.py",
                f"# hidden expert solution {i}\n" * 30,
                Visibility.HIDDEN,
                FileRole.SOLUTION,
            ),
        ):
            TaskFile.objects.create(
                version=version, path=path, content=content, visibility=visibility, role=role
            )
        rubric = Rubric.objects.create(version=version)
        criteria = {}
        for position, (key, points, kind) in enumerate(
            [
                ("correct", 5, CriterionKind.AUTOMATIC),
                ("integrity", -3, CriterionKind.AUTOMATIC),
                ("clarity", 2, CriterionKind.HUMAN),
                ("explanation", 2, CriterionKind.HUMAN),
            ]
        ):
            criteria[key] = Criterion.objects.create(
                rubric=rubric,
                key=key,
                title=key.title(),
                points=points,
                kind=kind,
                position=position,
                rule={"type": "verdict"}
                if key == "correct"
                else {"type": "integrity", "clean": False},
                levels=[{"score": s, "descriptor": f"level {s}"} for s in (0, 1, 2)]
                if kind == CriterionKind.HUMAN
                else [],
            )
        Task.objects.filter(pk=task.pk).update(current_version=version)
        versions.append((version.pk, {k: c.pk for k, c in criteria.items()}))
    return {
        "admin": admin.pk,
        "client": client.pk,
        "reviewers": [r.pk for r in reviewers],
        "versions": versions,
    }


def _seed_submissions(connection: Any, world: dict[str, Any], total: int) -> dict[str, Any]:
    from reviews.models import (
        PairwiseJudgement,
        Review,
        ReviewAssignment,
        ReviewOutcome,
        ReviewScore,
    )
    from rubrics.models import CriterionScore
    from submissions.fingerprint import solution_key
    from submissions.models import GradingRun, Submission, SubmissionFile

    rng = random.Random(20261129)
    now = datetime(2026, 11, 1, tzinfo=UTC)
    plan = []  # (id, version_id, criteria, accepted, decision, clarity, explanation)
    versions = world["versions"]
    for pk in range(1, total + 1):
        version_id, criteria = versions[(pk - 1) % len(versions)]
        accepted = rng.random() < 0.8
        decision = "accepted" if accepted and rng.random() < 0.9 else "rejected"
        plan.append(
            (
                pk,
                version_id,
                criteria,
                accepted,
                decision,
                rng.choice((0, 1, 2)),
                rng.choice((0, 1, 2)),
            )
        )

    def when(pk: int) -> datetime:
        return now + timedelta(seconds=pk)

    def code(pk: int) -> str:
        # ~5% near-duplicates: the code of an earlier submission to the same task, recommented.
        source = pk - len(versions) if pk > len(versions) and pk % 20 == 0 else pk
        text = SOLUTION.format(
            n=source, block=128 * (1 + source % 8), dim=source % 4096 + 1, scale=1 + source % 7
        )
        return text if source == pk else "# reworded\n" + text

    counts: dict[str, int] = {}
    with connection.cursor() as django_cursor:
        cursor = django_cursor.cursor  # psycopg's own, for COPY
        counts["submissions"] = copy(
            cursor,
            Submission,
            [
                "id",
                "created_at",
                "updated_at",
                "task_version_id",
                "submitter_id",
                "model_name",
                "run_id",
                "labels",
                "status",
                "verdict",
                "attempts",
                "status_changed_at",
                "code_key",
            ],
            (
                (
                    pk,
                    when(pk),
                    when(pk),
                    v,
                    world["client"],
                    f"model-{pk % 5}",
                    f"run-{pk % 10}",
                    json.dumps({"batch": pk % 3}),
                    "reviewed",
                    "accepted" if ok else "wrong_answer",
                    1,
                    when(pk),
                    # As submission_create stores it: the key is made on arrival.
                    solution_key([("solution.py", code(pk))]),
                )
                for pk, v, _, ok, *_ in plan
            ),
        )
        counts["files"] = copy(
            cursor,
            SubmissionFile,
            ["id", "created_at", "updated_at", "submission_id", "path", "content"],
            ((pk, when(pk), when(pk), pk, "solution.py", code(pk)) for pk, *_ in plan),
        )
        counts["grading_runs"] = copy(
            cursor,
            GradingRun,
            [
                "id",
                "created_at",
                "updated_at",
                "submission_id",
                "attempt",
                "verdict",
                "reason",
                "report",
                "hardware",
                "target_hardware",
                "harness_version",
                "timing_mode",
                "speedup",
            ],
            (
                (
                    pk,
                    when(pk),
                    when(pk),
                    pk,
                    1,
                    "accepted" if ok else "wrong_answer",
                    "",
                    json.dumps(
                        {
                            "verdict": "accepted" if ok else "wrong_answer",
                            "operator_notes": "reference printed 0.1234",
                        }
                    ),
                    "H100",
                    True,
                    "1",
                    "cuda_events",
                    1.0 + (pk % 50) / 25 if ok else None,
                )
                for pk, _, _, ok, *_ in plan
            ),
        )
        counts["criterion_scores"] = copy(
            cursor,
            CriterionScore,
            [
                "id",
                "created_at",
                "updated_at",
                "submission_id",
                "criterion_id",
                "grading_run_id",
                "source",
                "points",
                "met",
                "detail",
            ],
            _scores(plan, when),
        )
        counts["assignments"] = copy(
            cursor,
            ReviewAssignment,
            [
                "id",
                "created_at",
                "updated_at",
                "submission_id",
                "slot",
                "status",
                "reviewer_id",
                "submitted_at",
            ],
            (
                (
                    pk,
                    when(pk),
                    when(pk),
                    pk,
                    1,
                    "submitted",
                    world["reviewers"][pk % len(world["reviewers"])],
                    when(pk),
                )
                for pk, *_ in plan
            ),
        )
        counts["reviews"] = copy(
            cursor,
            Review,
            [
                "id",
                "created_at",
                "updated_at",
                "assignment_id",
                "submission_id",
                "reviewer_id",
                "grading_run_id",
                "decision",
                "feedback",
                "score",
            ],
            (
                (
                    pk,
                    when(pk),
                    when(pk),
                    pk,
                    pk,
                    world["reviewers"][pk % len(world["reviewers"])],
                    pk,
                    "accept" if d == "accepted" else "reject",
                    f"Masking is right; block size {128 * (1 + pk % 8)} suits the H100.",
                    _total(ok, c, e),
                )
                for pk, _, _, ok, d, c, e in plan
            ),
        )
        counts["review_scores"] = copy(
            cursor,
            ReviewScore,
            [
                "id",
                "created_at",
                "updated_at",
                "review_id",
                "criterion_id",
                "points",
                "comment",
                "automatic_points",
                "overturned",
                "overturn_reason",
            ],
            _review_scores(plan, when),
        )
        counts["outcomes"] = copy(
            cursor,
            ReviewOutcome,
            [
                "id",
                "created_at",
                "updated_at",
                "submission_id",
                "status",
                "decision",
                "rule",
                "score",
                "review_count",
                "finalized_at",
                "adjudication_reason",
            ],
            (
                (
                    pk,
                    when(pk),
                    when(pk),
                    pk,
                    "final",
                    d,
                    "one review",
                    _total(ok, c, e),
                    1,
                    when(pk),
                    "",
                )
                for pk, _, _, ok, d, c, e in plan
            ),
        )
        counts["pairwise"] = copy(
            cursor,
            PairwiseJudgement,
            [
                "id",
                "created_at",
                "updated_at",
                "task_version_id",
                "submission_a_id",
                "submission_b_id",
                "winner",
                "criterion_winners",
                "reason",
                "reviewer_id",
            ],
            (
                (
                    i + 1,
                    now,
                    now,
                    plan[a][1],
                    plan[a][0],
                    plan[a + len(versions)][0],
                    rng.choice(("a", "b", "tie")),
                    "{}",
                    "A is tidier.",
                    world["reviewers"][0],
                )
                for i, a in enumerate(range(0, min(total, 20_000) - len(versions), 7))
            ),
        )
    return counts


def _total(accepted: bool, clarity: int, explanation: int) -> float:
    return ((5 if accepted else 0) + clarity + explanation) / 9


def _scores(plan: list[Any], when: Any) -> Any:
    pk = 0
    for sub, _, criteria, ok, _, clarity, explanation in plan:
        for key, points, run, met in (
            ("correct", 5.0 if ok else 0.0, sub, ok),
            ("integrity", 0.0, sub, False),
            ("clarity", float(clarity), None, None),
            ("explanation", float(explanation), None, None),
        ):
            pk += 1
            source = "automatic" if run else "human"
            yield (pk, when(sub), when(sub), sub, criteria[key], run, source, points, met, "")


def _review_scores(plan: list[Any], when: Any) -> Any:
    pk = 0
    for sub, _, criteria, ok, _, clarity, explanation in plan:
        for key, points, automatic in (
            ("correct", 5.0 if ok else 0.0, 5.0 if ok else 0.0),
            ("integrity", 0.0, 0.0),
            ("clarity", float(clarity), None),
            ("explanation", float(explanation), None),
        ):
            pk += 1
            yield (pk, when(sub), when(sub), sub, criteria[key], points, "", automatic, False, "")


def guard_figures() -> dict[str, Any]:
    """The guard on the catalog's honest and pasted corpora, both ways of building it."""
    setup_django()
    from exports import guard_check

    started = time.perf_counter()
    figures = [guard_check.measure(mode).as_dict() for mode in ("shared", "alone")]
    return {
        "passage_lines": guard_check.PASSAGE_LINES,
        "distinctive_lines": guard_check.DISTINCTIVE_LINES,
        "seconds": round(time.perf_counter() - started, 2),
        "modes": figures,
    }


def report_guard(guard: dict[str, Any]) -> None:
    print(
        f"hidden-content guard on the catalog (passages of {guard['passage_lines']} lines, "
        f"{guard['distinctive_lines']} of them distinctive; {guard['seconds']} s):"
    )
    for m in guard["modes"]:
        alone = "a task alone" if m["mode"] == "alone" else f"{m['tasks']} tasks together"
        print(
            f"  {alone:>18}: honest corpus {m['honest_submissions']} submissions, "
            f"{m['honest_withheld']} withheld (false positives); pasted corpus "
            f"{m['pasted_submissions']} submissions from {m['hidden_files']} hidden files, "
            f"{m['pasted_caught']} caught (recall {100 * m['recall']:.1f}%); "
            f"passages whose lines need no name of their own: "
            f"{m['lines_only_caught']} of {m['lines_only_pasted']} caught"
        )
        for line in m["withheld_examples"] + m["missed_examples"]:
            print(f"    {line}")


def export(fmt: str) -> dict[str, Any]:
    """Build one snapshot as the job does; report its rate and this process's peak RSS."""
    import resource

    setup_django()
    from django.contrib.auth import get_user_model

    from exports import services
    from exports.models import Snapshot

    admin = get_user_model().objects.get(username="bench-admin")
    definition = services.definition_create(
        owner=admin,
        slug=f"bench-{fmt}-{os.getpid()}",
        data={"title": f"Bench {fmt}", "format": fmt, "seed": 1},
    )
    assert definition.current_version is not None
    snapshot = Snapshot.objects.create(version=definition.current_version, created_by=admin)
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    status = services.snapshot_build(snapshot_id=snapshot.pk)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    snapshot.refresh_from_db()
    if status != "succeeded":
        raise SystemExit(f"{fmt}: {snapshot.error}")
    return {
        "format": fmt,
        "rows": snapshot.rows_written,
        "items_read": snapshot.items_total,
        "skipped": snapshot.manifest["skipped"],
        "seconds": round(seconds, 2),
        "rows_per_s": round(snapshot.rows_written / seconds),
        "items_per_s": round(snapshot.items_total / seconds),
        "archive_mb": round(snapshot.archive_bytes / 2**20, 1),
        # The exporter's own CPU time (PostgreSQL's is not in it): less sensitive than
        # wall time to what else the machine is running.
        "cpu_seconds": round(cpu, 2),
        "rows_per_cpu_s": round(snapshot.rows_written / cpu),
        "rss_before_build_mb": round(before.ru_maxrss / 1024, 1),
        "peak_rss_mb": round(after.ru_maxrss / 1024, 1),
    }


# The driver ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--submissions", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--runs", type=int, default=3, help="builds per format; the best counts")
    parser.add_argument(
        "--guard-only", action="store_true", help="measure the hidden-content guard only"
    )
    parser.add_argument("--child-seed", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-export", help=argparse.SUPPRESS)
    parser.add_argument("--child-guard", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_seed:
        print(json.dumps(seed(args.submissions, args.tasks)))
        return
    if args.child_export:
        print(json.dumps(export(args.child_export)))
        return
    if args.child_guard:
        print(json.dumps(guard_figures()))
        return
    guard = run_child(["--child-guard"], media=tempfile.gettempdir())
    report_guard(guard)
    if args.guard_only:
        write_results(GUARD_RESULTS, {"benchmark": "export-guard", "guard": guard})
        return
    recreate_database()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-export-") as media:
            seeded = run_child(
                [
                    "--child-seed",
                    "--submissions",
                    str(args.submissions),
                    "--tasks",
                    str(args.tasks),
                ],
                media,
            )
            print(f"seeded {seeded['submissions']:,} submissions in {seeded['seconds']} s")
            results = [
                best_of(args.runs, ["--child-export", fmt], media)
                for fmt in args.formats.split(",")
            ]
    finally:
        drop_database()
    report(args, seeded, results, guard)


def write_results(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = {"when": datetime.now(UTC).isoformat(timespec="seconds")}
    path.write_text(json.dumps(stamp | data, indent=2) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


def report(
    args: argparse.Namespace, seeded: dict[str, Any], results: list[Any], guard: dict[str, Any]
) -> None:
    for r in results:
        print(
            f"{r['format']:>10}: {r['rows']:>7,} rows from {r['items_read']:,} submissions in "
            f"{r['seconds']:.2f} s = {r['rows_per_s']:,} rows/s ({r['items_per_s']:,} "
            f"submissions/s; runs {', '.join(f'{t:.2f}' for t in r['runs_seconds'])} s; "
            f"exporter CPU {r['cpu_seconds']} s = {r['rows_per_cpu_s']:,} rows/CPU-s); "
            f"peak RSS {r['peak_rss_mb']} MB (before the build {r['rss_before_build_mb']} MB); "
            f"tar.gz {r['archive_mb']} MB"
        )
    print(f"aim: >= {TARGET_ROWS_PER_S:,} rows/s and < {TARGET_PEAK_RSS_MB} MB peak RSS")
    for r in results:
        # rl writes one row per task version: its rate is the submissions it reads.
        rate = r["items_per_s"] if r["format"] == "rl" else r["rows_per_s"]
        unit = "submissions/s" if r["format"] == "rl" else "rows/s"
        print(
            f"{r['format']:>10}: {rate:,} {unit} "
            f"{'met' if rate >= TARGET_ROWS_PER_S else 'NOT met'}; "
            f"{r['peak_rss_mb']} MB {'met' if r['peak_rss_mb'] < TARGET_PEAK_RSS_MB else 'NOT met'}"
        )
    write_results(
        RESULTS,
        {
            "benchmark": "export",
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "submissions": args.submissions,
            "task_versions": args.tasks,
            "seeded": seeded,
            "targets": {"rows_per_s": TARGET_ROWS_PER_S, "peak_rss_mb": TARGET_PEAK_RSS_MB},
            "results": results,
            "guard": guard,
        },
    )


if __name__ == "__main__":
    main()
