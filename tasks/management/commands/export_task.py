"""``manage.py export_task SLUG DIR [--version N]``: write a task back as a bundle."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tasks import services
from tasks.models import Task, TaskVersion


class Command(BaseCommand):
    help = (
        "Write a task as a bundle folder DIR: its draft, or a frozen version with --version. "
        "A bundle that was imported comes back byte for byte."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # Our --version N takes the place of Django's --version (print Django's version).
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", metavar="SLUG")
        parser.add_argument("dest", metavar="DIR", help="the bundle folder to create")
        parser.add_argument("--version", type=int, metavar="N", help="export version N")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="DIR already holds a bundle: remove its files and write this one",
        )

    def handle(
        self, *args: Any, slug: str, dest: str, version: int | None, replace: bool, **_: Any
    ) -> None:
        try:
            task = Task.objects.get(slug=slug)
        except Task.DoesNotExist as exc:
            raise CommandError(f"no task {slug!r}") from exc
        frozen = None
        if version is not None:
            try:
                frozen = task.versions.get(number=version)
            except TaskVersion.DoesNotExist as exc:
                raise CommandError(f"{slug} has no version {version}") from exc
        try:
            result = services.bundle_export(
                dest=dest, task=None if frozen else task, version=frozen, replace=replace
            )
        except services.ExportError as exc:
            raise CommandError(str(exc)) from exc
        what = f"version {frozen.number}" if frozen else "draft"
        self.stdout.write(f"{slug}: wrote {what} to {result.dest} ({len(result.paths)} files)")
        if result.problems:
            self.stderr.write(
                "warning: this bundle will not import until these are fixed:",
                style_func=self.style.WARNING,
            )
            for problem in result.problems:
                self.stderr.write(f"  {problem}", style_func=self.style.WARNING)
