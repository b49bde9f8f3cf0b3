from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tasks.bundle import find_bundles
from tasks.catalog import check_bundles, format_table


class Command(BaseCommand):
    help = (
        "Grade each bundle's solution and negative examples in the sandbox and print a table: "
        "a bundle passes when its solution is accepted and every negative gets its expected "
        "verdict. No database needed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "paths", nargs="*", default=["reference_solutions"], help="bundles or folders of them"
        )
        parser.add_argument("--jobs", type=int, default=1, help="gradings at a time")
        parser.add_argument("--hardware", help="this host's hardware class (default: detected)")

    def handle(self, *args: Any, **options: Any) -> None:
        paths = [Path(str(p)) for p in options["paths"]]
        folders = []
        for path in paths:
            try:
                folders.extend(find_bundles(path)[0])
            except NotADirectoryError as error:
                raise CommandError(str(error)) from error
        if not folders:
            raise CommandError(
                f"no bundles (folders with task.toml) under {', '.join(map(str, paths))}"
            )
        checks = check_bundles(
            folders,
            jobs=int(options["jobs"]),
            hardware=options["hardware"],
        )
        self.stdout.write(format_table(checks))
        failed = [c.name for c in checks if not c.passed]
        if failed:
            raise CommandError(
                f"{len(failed)} of {len(checks)} bundle(s) failed: {', '.join(failed)}"
            )
        self.stdout.write(self.style.SUCCESS(f"all {len(checks)} bundle(s) valid"))
