"""``manage.py import_swebench FILE.jsonl [--out DIR] [--visible-test PATH...]``:
SWE-bench instances as debugging bundles (``graders.debugging.swebench``), then
imported like any bundle unless ``--no-import``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tomli_w
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from graders.debugging.swebench import InstanceError, bundle_from_instance
from tasks.bundle import MANIFEST, BundleInvalid, parse_bundle
from tasks.importers import ImportedBundle

from .import_kernelbench import write_and_import


class Command(BaseCommand):
    help = (
        "Turn SWE-bench instances (a JSON Lines file, one instance a line, each with the "
        "repository's files in a 'snapshot' field) into debugging bundles under --out, then "
        "import them. Every test is hidden unless named with --visible-test or in the "
        "instance's 'benchwright' object."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", metavar="FILE.jsonl")
        parser.add_argument(
            "--out",
            default=str(settings.VAR_DIR / "imported" / "swebench"),
            help="where the bundles are written (default: %(default)s)",
        )
        parser.add_argument(
            "--visible-test",
            dest="visible_tests",
            action="append",
            default=[],
            metavar="PATH",
            help="a test file (relative to the repository root) shown to solvers; repeatable; "
            "every instance in the file must have it",
        )
        parser.add_argument("--no-import", action="store_true", help="only write the bundles")
        parser.add_argument("--user", help="who imports (see import_tasks)")
        parser.add_argument("--draft", action="store_true", help="import without publishing")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        bundles: dict[str, ImportedBundle] = {}
        for number, instance in read_instances(path):
            try:
                manifest, files = bundle_from_instance(
                    instance, visible_tests=options["visible_tests"]
                )
            except InstanceError as error:
                raise CommandError(f"{path.name}:{number}: {error}") from error
            slug = manifest["slug"]
            if slug in bundles:
                raise CommandError(f"{path.name}:{number}: instance_id: {slug} comes twice")
            written = {MANIFEST: tomli_w.dumps(manifest), **files}
            try:  # the checks import_tasks makes, so --no-import writes only good bundles
                parse_bundle({name: text.encode() for name, text in written.items()}, name=slug)
            except BundleInvalid as error:
                problems = "; ".join(str(problem) for problem in error.errors)
                raise CommandError(f"{path.name}:{number}: {problems}") from error
            bundles[slug] = ImportedBundle(slug=slug, files=written)
        if not bundles:
            raise CommandError(f"{path.name}: no instances")
        write_and_import(self, list(bundles.values()), options)


def read_instances(path: Path) -> list[tuple[int, Any]]:
    """Each non-blank line's JSON value, with its line number."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"{path}: cannot be read: {error}") from error
    instances = []
    # Split on newlines only: a JSON string may hold U+2028 and other line separators.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            instances.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            raise CommandError(f"{path.name}:{number}: not valid JSON: {error}") from error
    return instances
