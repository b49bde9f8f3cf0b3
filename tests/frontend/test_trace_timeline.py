"""The trace timeline's data and page, on catalog profiling tasks: lanes, nesting,
cited events across ranks, and who may open which trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from benchwright import roles
from graders.profiling.timeline import cited_positions, timeline
from graders.profiling.trace import load_trace
from tasks import services as task_services
from tasks.bundle import load_bundle
from tests import factories
from tests.api.conftest import publish_catalog_task

CATALOG = Path(__file__).resolve().parents[2] / "reference_solutions"


def _traces(slug: str) -> list:
    folder = CATALOG / slug
    return [
        load_trace(path.read_bytes(), name=str(path.relative_to(folder)))
        for path in sorted((folder / "traces").glob("rank*.json.gz"))
    ]


def test_every_complete_event_is_an_item_on_its_lane():
    (trace,) = _traces("prof-host-sync")
    data = timeline(trace)
    assert len(data["items"]) == len(trace) and not data["truncated"]
    assert [lane["label"] for lane in data["lanes"]] == [
        "python3 / thread 4100 (python3)",
        "GPU 0 stream 7",
    ]
    gpu = data["lanes"][1]["id"]
    kinds = {item["kind"] for item in data["items"] if item["lane"] == gpu}
    assert kinds == {"kernel", "memory"}
    # Nesting: a step at depth 0, the operators inside it deeper.
    steps = [i for i in data["items"] if i["name"].startswith("ProfilerStep#")]
    assert steps and all(step["depth"] == 0 for step in steps)
    assert max(item["depth"] for item in data["items"]) >= 2
    assert all(item["start"] >= 0 and item["end"] > item["start"] for item in data["items"])


def test_a_large_trace_is_cut_and_says_so():
    (trace,) = _traces("prof-launch-flood")
    data = timeline(trace, max_events=100)
    assert len(data["items"]) == 100 and data["truncated"] and data["total"] == len(trace)
    starts = [item["start"] for item in data["items"]]
    assert max(starts) <= min(
        i["start"]
        for i in timeline(trace)["items"]
        if i["id"] not in {x["id"] for x in data["items"]}
    )


def test_cited_ids_mark_events_of_their_own_rank():
    traces = _traces("prof-rank-imbalance")
    expert = json.loads((CATALOG / "prof-rank-imbalance" / "expert.json").read_text())
    on_rank1 = cited_positions(traces, 1, expert["evidence"])
    assert len(on_rank1) == 2 * len(expert["evidence"]), "each corr id: launch and kernel"
    assert cited_positions(traces, 0, expert["evidence"]) == []
    data = timeline(traces[1], cited=on_rank1)
    assert data["cited_shown"] == len(on_rank1)
    assert {i["kind"] for i in data["items"] if i["cited"]} == {"kernel", "runtime"}


@pytest.fixture
def author(db):
    return factories.make_user(roles.AUTHOR, username="tracy")


def test_the_page_draws_a_published_task_s_trace_with_its_citations(author):
    publish_catalog_task("prof-rank-imbalance")
    client = Client()
    client.force_login(author)
    page = client.get(
        "/tasks/prof-rank-imbalance/timeline/",
        {"file": "traces/rank1.json.gz", "cite": "rank1/corr:100000,rank0/corr:100000"},
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="trace-data"' in html and "version 1" in html
    assert "The answer cites 2 ids; 2 events of this trace are highlighted." in html
    assert html.count('aria-current="page"') >= 1 and "traces/rank0.json.gz" in html


def test_only_a_listed_trace_of_a_visible_task_opens(author):
    publish_catalog_task("prof-host-sync")
    publish_catalog_task("rmsnorm")
    client = Client()
    client.force_login(author)
    assert client.get("/tasks/prof-host-sync/timeline/", {"file": "key.json"}).status_code == 404
    assert client.get("/tasks/prof-host-sync/timeline/", {"version": "9"}).status_code == 404
    assert client.get("/tasks/rmsnorm/timeline/").status_code == 404
    assert Client().get("/tasks/prof-host-sync/timeline/").status_code == 302  # log in first
    # Another author's draft is not even there.
    other = factories.make_user(roles.AUTHOR, username="other")
    task_services.bundle_import(
        bundle=load_bundle(CATALOG / "prof-dominant-gemm"), user=other, publish=False
    )
    assert client.get("/tasks/prof-dominant-gemm/timeline/").status_code == 404
    owner = Client()
    owner.force_login(other)
    assert owner.get("/tasks/prof-dominant-gemm/timeline/").status_code == 200
