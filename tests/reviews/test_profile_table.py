"""The review screen's Profile table, from a report the real grader just wrote.

The recorded reports (``tests/recorded.py``) predate the trace summary and are
re-recorded with ``manage.py record_reports``, which rewrites ``tests/fixtures``;
until then this test grades a catalog task itself (plain PyTorch, about 20 s).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graders.kernel.grading import grade
from graders.kernel.spec import GradingSpec
from sandboxes import get_backend
from sandboxes.base import Limits
from tests.reviews.conftest import graded
from tests.reviews.test_views import claim, logged_in

TASK = Path(__file__).resolve().parents[2] / "reference_solutions" / "cpu-add-layernorm"
PYTORCH = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x, residual):
        return torch.layer_norm(torch.add(x, residual), self.norm.normalized_shape,
                                self.norm.weight, self.norm.bias, self.norm.eps)
"""


@pytest.fixture(scope="module")
def real_report() -> dict:
    backend = get_backend("bwrap")
    backend.check()
    spec = GradingSpec.from_bundle_dir(TASK)
    report = grade(spec, {"solution.py": PYTORCH}, backend=backend, limits=Limits())
    assert report.verdict == "accepted", report.reason
    return report.to_dict()


@pytest.mark.django_db
def test_the_review_screen_shows_top_operators_side_by_side(
    client, task, make_reviewer, real_report
):
    graded(task, grading=real_report, files={"solution.py": PYTORCH})
    logged_in(client, make_reviewer("r1"))

    html = client.get(claim(client)).content.decode()

    assert "data-profile" in html
    table = html[html.index("data-profile") : html.index("</table>", html.index("data-profile"))]
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.DOTALL)
    assert rows and "Submission operator" in table and "Reference operator" in table
    # Both sides run an add and a layer norm: each appears on both sides of the table.
    for name in ("aten::add", "aten::native_layer_norm"):
        assert table.count(f"<code>{name}</code>") == 2
    assert "Self CUDA" not in table  # a CPU grading has no device column
    assert "calls profiled after the timing" in html
