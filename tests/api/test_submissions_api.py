import json
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from accounts.models import ApiToken
from benchwright import roles
from submissions import services
from submissions.models import Submission, SubmissionStatus
from tests import factories
from tests.api.conftest import (
    GRADED_REPORT,
    SECRET,
    bearer,
    publish_with_secrets,
    submission_body,
    token_for,
)

pytestmark = pytest.mark.django_db


def test_a_submission_is_pinned_to_the_current_version_and_enqueued_on_commit(
    task, owner, owner_token, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = bearer(owner_token).post(
            "/api/v1/submissions/", submission_body("row-softmax"), format="json"
        )

    assert response.status_code == 201, response.content
    body = response.json()
    submission = Submission.objects.get(pk=body["id"])
    assert submission.task_version_id == task.current_version_id
    assert submission.submitter == owner
    assert submission.api_token == ApiToken.objects.get(prefix=owner_token[3:15])
    assert submission.status == SubmissionStatus.QUEUED
    assert {f.path: f.content for f in submission.files.all()} == {
        "solution.py": "class ModelNew: ...\n"
    }
    assert (body["task"], body["model"], body["run_id"]) == ("row-softmax", "model-a", "run-1")
    assert body["labels"] == {"temperature": "0.2"}
    assert response["Location"] == f"/api/v1/submissions/{submission.pk}/"
    assert len(callbacks) == 1, "grading is enqueued once the transaction commits"


def test_a_submission_to_a_task_that_is_not_published_is_refused(task_author, owner_token):
    factories.make_task(task_author, slug="draft-only")

    response = bearer(owner_token).post(
        "/api/v1/submissions/", submission_body("draft-only"), format="json"
    )

    assert response.status_code == 400
    assert "no published task" in response.json()["error"]["fields"]["task"][0]
    assert not Submission.objects.exists()


BAD_PATHS = {
    "/etc/passwd": "absolute",
    "../escape.py": "'..'",
    "a/../../b.py": "'..'",
    "dir\\file.py": "backslash",
    "bell\x07.py": "control",
    "new\nline.py": "control",
    "rtl\u202e.py": "control",
    "a//b.py": "empty",
    "./a.py": "'.'",
    "\u00e9" * 128 + ".py": "255 bytes",  # 131 characters, 259 bytes: no file system takes it
    "": "blank",
}


@pytest.mark.parametrize("path", list(BAD_PATHS))
def test_unsafe_file_names_are_refused(path, task, owner_token):
    body = submission_body("row-softmax", files=[{"path": path, "content": "x = 1\n"}])

    response = bearer(owner_token).post("/api/v1/submissions/", body, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert "files" in error["fields"]
    assert BAD_PATHS[path] in json.dumps(error["fields"]).lower() or path == ""
    assert not Submission.objects.exists()


@override_settings(API_MAX_FILES=2, API_MAX_FILE_BYTES=100, API_MAX_SUBMISSION_BYTES=150)
@pytest.mark.parametrize(
    ("files", "message"),
    [
        ([{"path": f"f{i}.py", "content": ""} for i in range(3)], "at most 2 files"),
        ([{"path": "big.py", "content": "é" * 51}], "102 bytes"),
        ([{"path": "a.py", "content": "x" * 100}, {"path": "b.py", "content": "y" * 60}], "160"),
        ([{"path": "a.py", "content": ""}, {"path": "a.py", "content": ""}], "unique"),
        ([{"path": "a", "content": ""}, {"path": "a/b.py", "content": ""}], "file and a folder"),
        ([], "empty"),
    ],
)
def test_file_count_and_size_limits_are_enforced_in_bytes(files, message, task, owner_token):
    response = bearer(owner_token).post(
        "/api/v1/submissions/", submission_body("row-softmax", files=files), format="json"
    )

    assert response.status_code == 400
    assert message in json.dumps(response.json()["error"]["fields"], ensure_ascii=False).lower()


@override_settings(API_MAX_BODY_BYTES=1000)
def test_an_oversized_body_is_refused_before_it_is_read(task, owner_token):
    body = submission_body("row-softmax", files=[{"path": "a.py", "content": "x" * 2000}])

    response = bearer(owner_token).post("/api/v1/submissions/", body, format="json")

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b'{"task": "row-softmax", "model": "\xff\xfe"}', "utf-8"),
        (b'{"task": "row-softmax", "model": ', "json"),
        (b"[" * 100_000, "json"),
        (b'{"model": NaN}', "json"),
    ],
)
def test_bodies_that_are_not_utf8_json_are_a_400(raw, fragment, task, owner_token):
    response = bearer(owner_token).post(
        "/api/v1/submissions/", raw, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"
    assert fragment in response.json()["error"]["message"].lower()


@pytest.mark.parametrize(
    "override",
    [
        {"files": [{"path": "a.py", "content": "nul \x00 byte"}]},
        {"files": [{"path": "a.py", "content": "lone \ud800 surrogate"}]},
        {"model": "m\x00"},
        {"labels": {"bad key!": "v"}},
        {"labels": {"k\x00": "v"}},
        {"labels": {f"k{i}": "v" for i in range(21)}},
        {"model": ""},
        {"model": 7},
        {"run_id": 1.5},
        {"labels": {"k": 1}},
        {"files": [{"path": 3, "content": "x"}]},
        {"task": "Not A Slug"},
    ],
)
def test_text_that_is_not_storable_utf8_or_not_well_formed_is_refused(override, task, owner_token):
    body = json.dumps(submission_body("row-softmax", **override)).encode()

    response = bearer(owner_token).post(
        "/api/v1/submissions/", body, content_type="application/json"
    )

    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"]
    assert not Submission.objects.exists()


def test_a_batch_is_created_in_one_transaction_with_one_enqueue(
    task, owner_token, django_capture_on_commit_callbacks
):
    items = [submission_body("row-softmax", labels={"i": str(i)}) for i in range(5)]

    with django_capture_on_commit_callbacks() as callbacks:
        response = bearer(owner_token).post(
            "/api/v1/submissions/batch/", {"submissions": items}, format="json"
        )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["count"] == 5
    ids = [s["id"] for s in body["submissions"]]
    created = Submission.objects.filter(pk__in=ids)
    assert sorted(s.labels["i"] for s in created) == ["0", "1", "2", "3", "4"]
    assert all(s.task_version_id == task.current_version_id for s in created)
    assert all(s.files.count() == 1 for s in created)
    assert len(callbacks) == 1, "one callback publishes every grading"


def test_a_batch_with_one_bad_item_creates_nothing_and_says_which(task, owner_token):
    items = [submission_body("row-softmax") for _ in range(4)]
    items[1]["files"] = [{"path": "../x.py", "content": ""}]
    items[3]["task"] = "no-such-task"

    response = bearer(owner_token).post(
        "/api/v1/submissions/batch/", {"submissions": items}, format="json"
    )

    assert response.status_code == 400
    fields = response.json()["error"]["fields"]["submissions"]
    assert set(fields) == {"1"}, "item-level validation first; tasks are looked up after"
    assert not Submission.objects.exists()

    items[1] = submission_body("row-softmax")
    response = bearer(owner_token).post(
        "/api/v1/submissions/batch/", {"submissions": items}, format="json"
    )
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]["submissions"]) == {"3"}
    assert not Submission.objects.exists()


@override_settings(API_MAX_BATCH=3)
def test_a_batch_over_the_limit_is_refused(task, owner_token):
    items = [submission_body("row-softmax") for _ in range(4)]

    response = bearer(owner_token).post(
        "/api/v1/submissions/batch/", {"submissions": items}, format="json"
    )

    assert response.status_code == 400
    assert "at most 3" in json.dumps(response.json()["error"]["fields"])
    assert not Submission.objects.exists()


def test_a_graded_submission_shows_its_public_report_scores_and_no_hidden_data(
    graded_submission, owner_token
):
    response = bearer(owner_token).get(f"/api/v1/submissions/{graded_submission.pk}/")

    assert response.status_code == 200
    text = response.content.decode()
    assert SECRET not in text
    body = response.json()
    assert body["status"] == "graded" and body["verdict"] == "wrong_answer"
    report = body["grading"]["report"]
    assert report["correctness"][0]["max_abs_error"] == 0.5
    assert "seed" not in report["correctness"][0]
    assert "message" not in report["correctness"][0]
    assert "operator_notes" not in report and "artifacts" not in report
    assert set(report["logs"]) == {"stdout", "stderr"}
    assert len(report["logs"]["stdout"]) <= 4001 and report["logs"]["stdout"].endswith("END")
    criteria = {c["key"]: c for c in body["rubric"]["criteria"]}
    assert criteria["correct"]["awarded"] == 0.0 and criteria["correct"]["met"] is False
    assert criteria["clarity"]["awarded"] is None, "human criteria wait for a reviewer"
    assert body["rubric"]["available"] == 7
    assert body["review"] is None
    assert body["files"] == [{"path": "solution.py", "bytes": 20}]


def make_owned(task, owner, model_name="m", run_id=""):
    return services.submission_create(
        version=task.current_version,
        submitter=owner,
        files={"solution.py": "x = 1\n"},
        model_name=model_name,
        run_id=run_id,
    )


def test_the_list_filters_by_task_model_run_status_verdict_and_date(task, task_author, owner):
    other_task = publish_with_secrets(task_author, slug="other")
    a = make_owned(task, owner, model_name="m1", run_id="r1")
    b = make_owned(task, owner, model_name="m2", run_id="r1")
    c = make_owned(other_task, owner, model_name="m1", run_id="r2")
    Submission.objects.filter(pk=b.pk).update(status="graded", verdict="accepted")
    Submission.objects.filter(pk=c.pk).update(created_at=timezone.now() - timedelta(days=3))
    client = bearer(token_for(owner))

    def ids(query):
        response = client.get(f"/api/v1/submissions/?{query}")
        assert response.status_code == 200, response.content
        return sorted(s["id"] for s in response.json()["results"])

    assert ids("") == sorted([a.pk, b.pk, c.pk])
    assert ids("task=other") == [c.pk]
    assert ids("model=m1") == sorted([a.pk, c.pk])
    assert ids("run_id=r1") == sorted([a.pk, b.pk])
    assert ids("status=graded") == [b.pk]
    assert ids("status=queued,graded") == sorted([a.pk, b.pk, c.pk])
    assert ids("verdict=accepted") == [b.pk]
    since = (timezone.now() - timedelta(days=1)).isoformat().replace("+00:00", "Z")
    assert ids(f"created_after={since}") == sorted([a.pk, b.pk])
    assert ids(f"created_before={since}") == [c.pk]
    assert client.get("/api/v1/submissions/?status=bogus").status_code == 400


def test_the_list_pages_with_a_cursor_without_gaps_or_repeats(task, owner):
    made = [make_owned(task, owner).pk for _ in range(7)]
    client = bearer(token_for(owner))
    seen = []
    url = "/api/v1/submissions/?page_size=3"
    pages = 0
    while url:
        body = client.get(url).json()
        seen += [s["id"] for s in body["results"]]
        url = body["next"]
        pages += 1

    assert pages == 3
    assert seen == sorted(made, reverse=True)


def test_the_summary_counts_a_run_by_status_and_verdict(task, owner):
    for status, verdict in [("queued", ""), ("graded", "accepted"), ("graded", "wrong_answer")]:
        s = make_owned(task, owner, run_id="r9")
        Submission.objects.filter(pk=s.pk).update(status=status, verdict=verdict)
    make_owned(task, owner, run_id="another")

    response = bearer(token_for(owner)).get("/api/v1/submissions/summary/?run_id=r9")

    assert response.json() == {
        "total": 3,
        "finished": 2,
        "unfinished": 1,
        "by_status": {"queued": 1, "graded": 2},
        "by_verdict": {"accepted": 1, "wrong_answer": 1},
    }


def test_a_queued_submission_can_be_cancelled_but_not_once_it_runs(task, owner):
    queued = make_owned(task, owner)
    running = make_owned(task, owner)
    assert services.submission_claim(submission_id=running.pk)
    client = bearer(token_for(owner))

    response = client.post(f"/api/v1/submissions/{queued.pk}/cancel/")
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"

    response = client.post(f"/api/v1/submissions/{running.pk}/cancel/")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "invalid_transition"
    running.refresh_from_db()
    assert running.status == SubmissionStatus.RUNNING


def test_the_task_author_can_regrade_a_graded_submission_but_not_a_queued_one(
    graded_submission, task_author, owner, django_capture_on_commit_callbacks
):
    client = bearer(token_for(task_author))

    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(f"/api/v1/submissions/{graded_submission.pk}/regrade/")

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "queued"
    assert len(callbacks) == 1
    response = client.post(f"/api/v1/submissions/{graded_submission.pk}/regrade/")
    assert response.status_code == 409


def test_the_submitter_cannot_regrade_its_own_submission(graded_submission, owner):
    response = bearer(token_for(owner)).post(f"/api/v1/submissions/{graded_submission.pk}/regrade/")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "missing_scope"


def test_an_author_who_also_submits_cannot_regrade_submissions_to_others_tasks(
    graded_submission, db
):
    other_author = factories.make_user(roles.AUTHOR, roles.API_CLIENT)

    response = bearer(token_for(other_author)).post(
        f"/api/v1/submissions/{graded_submission.pk}/regrade/"
    )

    assert response.status_code == 404, "not visible to them at all"


def test_the_graded_report_fixture_really_carries_the_secret():
    assert SECRET in json.dumps(GRADED_REPORT), "otherwise the leak checks prove nothing"


def test_a_create_and_a_batch_cost_a_fixed_number_of_queries(task, owner_token):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = bearer(owner_token)
    client.get("/api/v1/me/")  # the token's last use is recorded once a minute, not here
    with CaptureQueriesContext(connection) as single:
        client.post("/api/v1/submissions/", submission_body("row-softmax"), format="json")
    batch = {"submissions": [submission_body("row-softmax") for _ in range(50)]}
    with CaptureQueriesContext(connection) as many:
        client.post("/api/v1/submissions/batch/", batch, format="json")

    assert len(single) <= 9, [q["sql"][:90] for q in single]
    assert len(many) <= len(single) + 1, "a batch is bulk inserts, not a loop"
