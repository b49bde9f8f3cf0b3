"""``manage.py import_kernelbench PATH [--level N]``: KernelBench problems as bundles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tasks import suite_report
from tasks.importers import ImportedBundle, ProblemFormatError, find_kernelbench_files


class Command(BaseCommand):
    help = (
        "Turn KernelBench problem files (a file, a levelN folder or a tree of them) into task "
        "bundles under --out, then import them. GPU shapes are kept; a CPU shape set is added."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_import_arguments(parser, default_out="kernelbench")
        parser.add_argument("--level", type=int, help="only problems of this level")

    def handle(self, *args: Any, **options: Any) -> None:
        root = Path(options["path"])
        if not root.exists():
            raise CommandError(f"{root}: no such file or folder")
        problems = find_kernelbench_files(root, options["level"])
        if not problems:
            raise CommandError(f"{root}: no KernelBench problem files found")
        write_and_import(self, build_bundles(self, "kernelbench", problems, root, options), options)


def add_import_arguments(parser: CommandParser, *, default_out: str) -> None:
    parser.add_argument("path", help="a problem file or a folder of them")
    parser.add_argument(
        "--out",
        default=str(settings.VAR_DIR / "imported" / default_out),
        help="where the bundles are written (default: %(default)s)",
    )
    parser.add_argument("--hardware", default="h100", help="target hardware (default: h100)")
    parser.add_argument(
        "--language", default="triton", help="what solutions are written in (default: triton)"
    )
    parser.add_argument(
        "--fit-cpu",
        action="store_true",
        help="grade each problem's identity solution in the sandbox; where the reference "
        "fails at the CPU sizes, shrink less; GPU-only if it fails at every size",
    )
    parser.add_argument(
        "--relax",
        type=int,
        default=0,
        help="divide the CPU shrink factor by 2**RELAX (larger CPU sizes, so calls are long "
        "enough to time on CPU; with --fit-cpu, where fitting starts)",
    )
    parser.add_argument("--no-import", action="store_true", help="only write the bundles")
    parser.add_argument("--user", help="who imports (see import_tasks)")
    parser.add_argument("--draft", action="store_true", help="import without publishing")


def build_bundles(
    command: BaseCommand,
    fmt: str,
    problems: list[tuple[Path, int | None]],
    root: Path,
    options: dict[str, Any],
) -> list[ImportedBundle]:
    """Each problem as a bundle; with ``--fit-cpu``, at the CPU sizes its reference
    runs at (``tasks.suite_report.fit_problem``)."""
    extra = {"hardware": options["hardware"], "language": options["language"]}
    relax = max(0, int(options.get("relax") or 0))
    bundles = []
    for path, level in problems:
        if options["fit_cpu"]:
            bundle, outcome = suite_report.fit_problem(path, fmt, level, root, relax=relax, **extra)
            command.stdout.write(f"{outcome.problem}: {outcome.status} {outcome.note[:200]}")
            if bundle is None:
                raise CommandError(outcome.note)
        else:
            try:
                bundle = suite_report.import_one(path, fmt, level, relax=relax, **extra)
            except ProblemFormatError as error:
                raise CommandError(str(error)) from error
        bundles.append(bundle)
    return bundles


def write_and_import(command: BaseCommand, bundles: list[Any], options: dict[str, Any]) -> None:
    out = Path(options["out"])
    folders = []
    for bundle in bundles:
        folders.append(bundle.write(out))
        for note in bundle.notes:
            command.stdout.write(f"{bundle.slug}: {note}")
    command.stdout.write(f"wrote {len(folders)} bundle(s) under {out}")
    if options["no_import"]:
        return
    extra = ["--draft"] if options["draft"] else []
    if options["user"]:
        extra += ["--user", options["user"]]
    call_command("import_tasks", *map(str, folders), *extra, stdout=command.stdout)
