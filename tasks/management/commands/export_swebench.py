"""``manage.py export_swebench BUNDLE... [--out FILE.jsonl]``: debugging bundles as
SWE-bench instances, one JSON line each (``graders.debugging.swebench``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from graders.contract import GradingTableError
from graders.debugging.swebench import instance_from_bundle
from graders.files import TaskUnreadable, read_bundle


class Command(BaseCommand):
    help = (
        "Write each debugging bundle as a SWE-bench instance, one JSON line per bundle, with "
        "the repository's files in a 'snapshot' field. The instances hold the hidden tests "
        "and the expert fix: they are for operators, not solvers."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("bundles", nargs="+", metavar="BUNDLE_FOLDER")
        parser.add_argument("--out", metavar="FILE.jsonl", help="default: standard output")

    def handle(self, *args: Any, bundles: list[str], out: str | None, **_: Any) -> None:
        lines = [json.dumps(export_one(Path(folder)), ensure_ascii=False) for folder in bundles]
        text = "".join(f"{line}\n" for line in lines)
        if out is None:
            self.stdout.write(text, ending="")
            return
        Path(out).write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {len(lines)} instance(s) to {out}")


def export_one(folder: Path) -> dict[str, Any]:
    """One bundle folder's instance; a CommandError names the file and the field."""
    try:
        manifest, files = read_bundle(folder)
    except TaskUnreadable as error:
        raise CommandError(f"{folder.name}/{error}") from error
    kind = manifest.get("kind")
    if kind != "debugging":
        raise CommandError(
            f"{folder.name}/task.toml: kind: is {kind!r}; only debugging bundles export as "
            "SWE-bench instances"
        )
    try:
        return instance_from_bundle(manifest, files)
    except GradingTableError as error:
        raise CommandError(f"{folder.name}/{error}") from error
