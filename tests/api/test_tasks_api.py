import pytest

from tests import factories
from tests.api.conftest import (
    SECRET,
    bearer,
    publish_catalog_task,
    publish_with_secrets,
    token_for,
)

pytestmark = pytest.mark.django_db


def test_the_catalog_lists_published_tasks_only(task, task_author, owner_token):
    factories.make_task(task_author, slug="still-a-draft")

    response = bearer(owner_token).get("/api/v1/tasks/")

    assert response.status_code == 200
    slugs = [t["slug"] for t in response.json()["results"]]
    assert slugs == ["row-softmax"]
    assert response.json()["results"][0]["version"] == task.current_version.number


def test_the_catalog_filters_by_kind_tags_difficulty_and_hardware(
    task_author, owner_token, text_answer
):
    publish_with_secrets(task_author, slug="a", tags=["gemm", "fp16"], difficulty="hard")
    publish_with_secrets(task_author, slug="b", tags=["gemm"], hardware="h100")
    publish_with_secrets(task_author, slug="c", tags=["softmax"], kind="text-answer")
    client = bearer(owner_token)

    def slugs(query):
        response = client.get(f"/api/v1/tasks/?{query}")
        assert response.status_code == 200, response.content
        return sorted(t["slug"] for t in response.json()["results"])

    assert slugs("tags=gemm") == ["a", "b"]
    assert slugs("tags=gemm,fp16") == ["a"]
    assert slugs("difficulty=hard") == ["a"]
    assert slugs("hardware=h100") == ["b"]
    assert slugs("kind=text-answer") == ["c"]
    assert slugs("kind=kernel&tags=softmax") == []


def test_a_bad_filter_is_a_json_400_naming_the_field(owner_token):
    response = bearer(owner_token).get("/api/v1/tasks/?difficulty=impossible")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert "difficulty" in error["fields"]


def test_a_task_shows_its_prompt_files_and_safe_grading_settings_only(task, owner_token):
    response = bearer(owner_token).get("/api/v1/tasks/row-softmax/")

    assert response.status_code == 200
    body = response.json()
    assert SECRET not in response.content.decode()
    assert sorted(f["path"] for f in body["files"]) == ["starter.py", "statement.md"]
    assert body["statement"] == "Compute **relu**."
    assert body["grading"]["shapes"] == [{"name": "small", "hosts": ["cpu"]}]
    assert body["grading"]["tolerances"] == {"float32": {"atol": 1e-5, "rtol": 1e-5}}
    assert "reference_outputs" not in body["grading"]
    assert [c["key"] for c in body["rubric"]] == ["correct", "clarity"]


def test_a_debugging_task_shows_its_codebase_and_visible_tests_never_a_hidden_one(owner_token):
    publish_catalog_task("debug-softmax-overflow")

    response = bearer(owner_token).get("/api/v1/tasks/debug-softmax-overflow/")

    assert response.status_code == 200, response.content
    body = response.json()
    assert sorted(f["path"] for f in body["files"]) == [
        "repo/softmax.py",
        "repo/tests/test_repro.py",
        "statement.md",
    ]
    grading = body["grading"]
    assert grading["root"] == "repo" and grading["fix_paths"] == ["softmax.py"]
    assert grading["fail_to_pass"] == {
        "total": 5,
        "visible": ["tests/test_repro.py::test_large_scores_stay_finite"],
    }
    assert grading["pass_to_pass"] == {
        "total": 4,
        "visible": [
            "tests/test_repro.py::test_small_scores",
            "tests/test_repro.py::test_causal_attention",
        ],
    }
    text = response.content.decode()
    for hidden in ("test_softmax_hidden", "test_huge_logits", "fix.diff", "clamp.diff"):
        assert hidden not in text


def test_a_task_whose_tests_talk_tcp_says_it_gets_the_sandbox_loopback(owner_token):
    publish_catalog_task("debug-gloo-skipped-collective")

    response = bearer(owner_token).get("/api/v1/tasks/debug-gloo-skipped-collective/")

    assert response.status_code == 200, response.content
    grading = response.json()["grading"]
    assert grading["network"] == "loopback"
    assert grading["fail_to_pass"] == {
        "total": 3,
        "visible": ["tests/test_repro.py::test_one_rank_has_no_examples"],
    }
    assert "test_metrics_hidden" not in response.content.decode()


@pytest.mark.parametrize("role", ["task_author", "reviewer", "admin"])
def test_even_those_who_may_see_hidden_files_get_only_prompt_files_here(role, task, request):
    user = request.getfixturevalue(role)

    response = bearer(token_for(user)).get("/api/v1/tasks/row-softmax/")

    assert response.status_code == 200
    assert SECRET not in response.content.decode()
    assert {f["path"] for f in response.json()["files"]} == {"starter.py", "statement.md"}


def test_a_draft_is_not_found_even_for_its_author(task_author):
    factories.make_task(task_author, slug="my-draft")

    response = bearer(token_for(task_author)).get("/api/v1/tasks/my-draft/")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
