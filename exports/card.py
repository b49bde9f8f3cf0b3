"""The dataset card (README.md) and the manifest of a snapshot.

The card's YAML header has the ``configs`` block that ``datasets.load_dataset``
reads, naming each split's Parquet file, and ``dataset_info`` with the
features. It holds no time and no snapshot id, so two builds
of the same data give the same card. The manifest (manifest.json) is the one
file that records when and by which platform version a snapshot was made, the
definition it came from, and the SHA-256 of every other file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow as pa
import yaml

from graders import registry

from .build import BuildResult
from .models import ExportFormat
from .spec import SPLITS
from .writer import file_sha256

MANIFEST_VERSION = 1

FORMAT_NOTES = {
    ExportFormat.SFT: (
        "Conversational supervised fine-tuning data: `messages` holds a user turn (the task "
        "statement and the files shown to solvers) and an assistant turn (a solution the "
        "grader accepted and no final review turned down, after its reviewer-approved "
        "explanation where `has_explanation` is true). TRL's `SFTTrainer` reads it as it is."
    ),
    ExportFormat.PREFERENCE: (
        "Conversational preference pairs: `prompt` (user turn), `chosen` and `rejected` "
        "(assistant turns) for TRL's `DPOTrainer` or `RewardTrainer`. `source` is `pairwise` "
        "when reviewers preferred one solution (`votes` of them), or `score_margin` when "
        "the two solutions' scores, from the same source (`scored_by`), differ by at least "
        "the margin."
    ),
    ExportFormat.RL: (
        "Prompts for reinforcement learning with a verifier: one row per task version. "
        "A reward function grades a completion by submitting it to `task_version_id`; "
        "`grading` (JSON) holds the task's grading settings and `rubric` (JSON) its "
        "criteria, so rewards can be computed from the grading report. `submissions`, "
        "`accepted`, `solve_rate` and `mean_score` describe the matching submissions."
    ),
    ExportFormat.CRITIQUE: (
        "Solutions with their reviews, for critic and reward models: `prompt` and "
        "`completion` in TRL's prompt-completion form, the grader's `verdict` and "
        "`automatic` criteria, the `rubric` (JSON), and `reviews` (each reviewer's "
        "decision, rubric total, feedback, per-criterion points and comments, line "
        "comments)."
    ),
}


LEFT_OUT = {
    "duplicate": (
        "a solution whose code is the same as a row already written for the same task, "
        "once comments and whitespace are removed; file names, file order and explanation "
        "files do not count. Solutions that differ in anything else (a name, a constant, a "
        "docstring) are separate rows, however much boilerplate they share."
    ),
    "hidden_content": (
        "a row whose text quotes a hidden file of its task (the reference, the expert "
        "solution, a negative example, a hidden test): a run of lines only that file has, "
        "in its order. Imports, the interface every solution declares, what the task shows "
        "solvers, common idioms and lines found in several tasks' files prove nothing."
    ),
    "score_range": "a row whose score is outside the definition's score range.",
}


def platform_version() -> str:
    try:
        return metadata.version("benchwright")
    except metadata.PackageNotFoundError:
        return "unknown"


def hf_feature(kind: pa.DataType) -> dict[str, Any]:
    """An Arrow type as the ``features`` entry of a dataset card."""
    if pa.types.is_list(kind):
        inner = kind.value_type
        if pa.types.is_struct(inner):
            return {"list": hf_fields(inner)}
        return {"list": hf_feature(inner)["dtype"]}
    if pa.types.is_struct(kind):
        return {"struct": hf_fields(kind)}
    names = {pa.string(): "string", pa.bool_(): "bool"}
    return {"dtype": names.get(kind, str(kind))}


def hf_fields(struct: pa.StructType | pa.Schema) -> list[dict[str, Any]]:
    fields = (
        [struct.field(i) for i in range(struct.num_fields)]
        if isinstance(struct, pa.StructType)
        else list(struct)
    )
    return [{"name": f.name, **hf_feature(f.type)} for f in fields]


def card_text(*, slug: str, version: int, spec: Mapping[str, Any], result: BuildResult) -> str:
    used = [name for name in SPLITS if result.rows[name]]
    header: dict[str, Any] = {
        "pretty_name": spec["title"],
        "tags": ["benchwright", spec["format"], "code"],
    }
    if used:
        header["configs"] = [
            {
                "config_name": "default",
                "data_files": [{"split": n, "path": f"data/{n}.parquet"} for n in used],
            }
        ]
    # No ``splits`` entry: datasets wants its in-memory byte sizes there, which only it
    # can compute; the row counts are in the body and the manifest.
    header["dataset_info"] = {"features": hf_fields(result.schema)}
    front = yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=100)
    return f"---\n{front}---\n\n{_body(slug=slug, version=version, spec=spec, result=result)}"


def _metrics_section(spec: Mapping[str, Any]) -> list[str]:
    """What each name in the ``metrics`` column means, for the kinds the export covers
    (as each kind declares its metrics)."""
    wanted = (spec.get("filters") or {}).get("kinds") or registry.kinds()
    lines = ["## Metrics", "", "The `metrics` column is a JSON object of a grading's figures:"]
    lines += [""]
    lines += ["| kind | metric | unit | better | meaning |", "| --- | --- | --- | --- | --- |"]
    for name in wanted:
        if registry.is_kind(name):
            for metric in registry.get(name).metrics:
                lines.append(
                    f"| {name} | `{metric.name}` | {metric.unit or '-'} | {metric.direction} | "
                    f"{metric.description} |"
                )
    return lines


def _body(*, slug: str, version: int, spec: Mapping[str, Any], result: BuildResult) -> str:
    lines = [f"# {spec['title']}", ""]
    if spec.get("description"):
        lines += [spec["description"].strip(), ""]
    lines += [FORMAT_NOTES[ExportFormat(spec["format"])], ""]
    lines += ["## Splits", "", "Split by task: no task appears in two splits.", ""]
    lines += ["| split | rows | tasks | task versions |", "| --- | ---: | ---: | ---: |"]
    for name in SPLITS:
        lines.append(
            f"| {name} | {result.rows[name]} | {result.tasks[name]} | "
            f"{result.task_versions[name]} |"
        )
    if "metrics" in result.schema.names:
        lines += ["", *_metrics_section(spec)]
    lines += ["", "## Loading", "", "```python", "from datasets import load_dataset", ""]
    lines += ['dataset = load_dataset("path/to/this/folder")', "```", ""]
    lines += ["Each split is also in `data/<split>.jsonl`, one JSON object a line.", ""]
    lines += ["## Source", "", f"Export definition `{slug}`, version {version}:", ""]
    lines += ["```json", json.dumps(spec, indent=2, sort_keys=True, ensure_ascii=False), "```"]
    lines += ["", "## What is left out", ""]
    lines += [f"- {key.replace('_', ' ')}: {text}" for key, text in LEFT_OUT.items()]
    if result.skipped:
        lines += ["", "Left out while building:", ""]
        lines += [f"- {key.replace('_', ' ')}: {n}" for key, n in result.skipped.items()]
    return "\n".join(lines) + "\n"


def manifest(
    *,
    folder: Path,
    files: list[Path],
    snapshot_id: int,
    slug: str,
    version: int,
    spec: Mapping[str, Any],
    result: BuildResult,
    exported_at: str,
    includes_submitter: bool,
) -> dict[str, Any]:
    return {
        "manifest_version": MANIFEST_VERSION,
        "platform": {"name": "benchwright", "version": platform_version()},
        "exported_at": exported_at,
        "snapshot": snapshot_id,
        "definition": {"slug": slug, "version": version, **spec},
        "includes_submitter": includes_submitter,
        "rows": dict(result.rows),
        "tasks": dict(result.tasks),
        "task_versions": dict(result.task_versions),
        "items_read": result.items_total,
        "skipped": dict(result.skipped),
        "files": {
            path.relative_to(folder).as_posix(): {
                "sha256": result.sha256.get(path) or file_sha256(path),
                "bytes": path.stat().st_size,
            }
            for path in sorted(files, key=lambda p: p.relative_to(folder).as_posix())
        },
    }
