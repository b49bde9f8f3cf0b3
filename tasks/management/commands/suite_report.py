"""``manage.py suite_report PATH --format kernelbench|gpumode``: import every problem
of a public suite folder and grade its identity solution; print what happened to each
(see ``tasks.suite_report``)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tasks import suite_report


class Command(BaseCommand):
    help = (
        "Import every problem of a KernelBench or GPU MODE folder and grade its identity "
        "solution in the sandbox: imported, CPU-gradable or GPU-only, verdict, seconds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="a suite folder (e.g. KernelBench/level2, problems/pmpp)")
        parser.add_argument("--format", required=True, choices=("kernelbench", "gpumode"))
        parser.add_argument("--level", type=int, help="KernelBench: only this level")
        parser.add_argument("--sample", type=int, help="only this many problems, drawn at random")
        parser.add_argument("--seed", type=int, default=0, help="for --sample (default: 0)")
        parser.add_argument("--markdown", help="also write the table to this file")
        parser.add_argument("--json", help="also write every outcome to this file")

    def handle(self, *args: Any, **options: Any) -> None:
        root = Path(options["path"])
        if not root.exists():
            raise CommandError(f"{root}: no such file or folder")
        problems = suite_report.problems_of(root, options["format"], options["level"])
        if not problems:
            raise CommandError(f"{root}: no {options['format']} problems found")
        if options["sample"]:
            problems = sorted(
                random.Random(options["seed"]).sample(
                    problems, min(options["sample"], len(problems))
                )
            )
        outcomes = []
        for path, level in problems:
            outcome = suite_report.grade_problem(path, options["format"], level, root)
            outcomes.append(outcome)
            self.stdout.write(f"{outcome.problem}: {outcome.status} {outcome.note[:120]}")
        table = suite_report.markdown(outcomes)
        totals = suite_report.summary(outcomes)
        self.stdout.write(table)
        self.stdout.write(json.dumps(totals, indent=1))
        if options["markdown"]:
            Path(options["markdown"]).write_text(table, encoding="utf-8")
        if options["json"]:
            data = {"summary": totals, "problems": [vars(o) for o in outcomes]}
            Path(options["json"]).write_text(json.dumps(data, indent=1), encoding="utf-8")
