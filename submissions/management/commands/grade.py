"""``manage.py grade REFERENCE SUBMISSION``: grade a kernel submission in the sandbox.

No database is touched. REFERENCE is a bundle folder or a bare KernelBench /
GPU MODE problem file; SUBMISSION a solution file or a folder of files. A
report is always printed (one JSON object with ``--json``); the exit status
is 0 when the submission is accepted and 1 otherwise.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sandboxes.kernel_cli import exit_code, grade_paths, render


class Command(BaseCommand):
    help = "Grade a kernel submission against a reference inside the sandbox and print a report."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("reference", help="a task bundle folder or a bare problem file")
        parser.add_argument("submission", help="the solution file, or a folder of files")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--trials", type=int, default=None, help="correctness trials per shape (>= 5)"
        )
        parser.add_argument(
            "--hardware", default=None, help="this host's hardware class (default: detected)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        report = grade_paths(
            options["reference"],
            options["submission"],
            trials=options["trials"],
            hardware=options["hardware"],
        )
        self.stdout.write(render(report, as_json=options["json"]))
        self.stdout.flush()
        code = exit_code(report)
        if code:
            sys.exit(code)
