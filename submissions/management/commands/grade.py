"""``manage.py grade TASK SUBMISSION``: grade a submission in the sandbox.

No database is touched. TASK is a bundle folder of any registered kind, or a
bare problem file of a kind that takes them (``--kind``, default kernel: a
KernelBench or GPU MODE problem); SUBMISSION a file or a folder of files. A
report is always printed (one JSON object with ``--json``); the exit status is
0 when the submission is accepted and 1 otherwise.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from graders import registry
from graders.files import exit_code, grade_paths, render, task_kind


class Command(BaseCommand):
    help = "Grade a submission against a task inside the sandbox and print a report."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("task", help="a task bundle folder or a bare problem file")
        parser.add_argument("submission", help="the solution file, or a folder of files")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--kind",
            default="kernel",
            choices=registry.kinds(),
            help="the kind of a bare problem file (a bundle names its own)",
        )
        parser.add_argument(
            "--trials", type=int, default=None, help="correctness trials per shape (>= 5)"
        )
        parser.add_argument(
            "--hardware", default=None, help="this host's hardware class (default: detected)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        overrides = {
            key: options[key] for key in ("trials", "hardware") if options[key] is not None
        }
        kind = task_kind(options["task"], default=options["kind"])
        report = grade_paths(options["task"], options["submission"], kind=kind, overrides=overrides)
        self.stdout.write(render(report, kind=kind, as_json=options["json"]))
        self.stdout.flush()
        code = exit_code(report)
        if code:
            sys.exit(code)
