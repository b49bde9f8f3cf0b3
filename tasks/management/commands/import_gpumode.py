"""``manage.py import_gpumode PATH``: GPU MODE problems (reference.py + task.yml) as bundles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tasks.importers import find_gpumode_folders

from .import_kernelbench import add_import_arguments, build_bundles, write_and_import


class Command(BaseCommand):
    help = (
        "Turn GPU MODE problem folders (reference.py and task.yml) into task bundles under "
        "--out, then import them. Tests and benchmarks become GPU shapes; the tests, scaled "
        "down, a CPU set."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_import_arguments(parser, default_out="gpumode")

    def handle(self, *args: Any, **options: Any) -> None:
        root = Path(options["path"])
        folders = find_gpumode_folders(root) if root.is_dir() else []
        if not folders:
            raise CommandError(f"{root}: no GPU MODE problem folders (with task.yml) found")
        problems: list[tuple[Path, int | None]] = [(folder, None) for folder in folders]
        write_and_import(self, build_bundles(self, "gpumode", problems, root, options), options)
