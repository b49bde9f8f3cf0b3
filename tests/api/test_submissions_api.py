import json
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from accounts.models import ApiToken
from benchwright import roles
from submissions import services
from submissions.models import Submission, SubmissionStatus
from tests import factories, recorded
from tests.api.conftest import (
    GRADED,
    SECRET,
    bearer,
    graded_with,
    publish_catalog_task,
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


# What the grader writes and a submitter must not see: the per-trial seeds, the raw
# timing samples and the clock witnesses, the operator notes, the artifacts and the
# phase timings. (A failing trial's message is quoted by the public reason.)
HIDDEN_REPORT_KEYS = ("operator_notes", "artifacts", "phases")


def hidden_values(report):
    """Values of a real report that no API body may hold: every trial's seed (the
    inputs could be rebuilt from it) and the timing samples."""
    values = [t["seed"] for t in report["correctness"]]
    for side in ("reference", "submission"):
        stats = (report["timing"] or {}).get(side) or {}
        shown = {stats.get(key) for key in ("median_s", "ci_low_s", "ci_high_s")}
        values += [repr(v) for v in stats.get("samples_s", []) if v not in shown]
    return values


def test_the_recorded_reports_really_carry_what_the_api_must_drop():
    wrong, accepted = recorded.report(GRADED), recorded.report(recorded.ACCEPTED)
    assert all(key in wrong for key in HIDDEN_REPORT_KEYS)
    assert len(hidden_values(wrong)) == len(wrong["correctness"]) > 1, "a seed per trial"
    assert accepted["timing"]["witness"] and accepted["timing"]["reference"]["samples_s"]
    assert wrong["logs"]["stderr"], "a real stderr, for the tail"


@override_settings(API_LOG_TAIL_CHARS=100)
def test_a_graded_submission_shows_its_public_report_scores_and_no_hidden_data(
    graded_submission, owner_token
):
    response = bearer(owner_token).get(f"/api/v1/submissions/{graded_submission.pk}/")

    assert response.status_code == 200
    text = response.content.decode()
    assert SECRET not in text
    recorded_report = recorded.report(GRADED)
    for value in hidden_values(recorded_report):
        assert value not in text
    body = response.json()
    assert body["status"] == "graded" and body["verdict"] == "wrong_answer"
    report = body["grading"]["report"]
    assert report["reason"] == recorded_report["reason"]
    failing = [t for t in report["correctness"] if not t["ok"]]
    recorded_failing = [t for t in recorded_report["correctness"] if not t["ok"]]
    assert [t["shape"] for t in failing] == [t["shape"] for t in recorded_failing]
    assert failing[0]["max_abs_error"] is None, "an infinite error is stored as null"
    assert {"seed", "message"}.isdisjoint(report["correctness"][0])
    assert not set(HIDDEN_REPORT_KEYS) & set(report)
    assert set(report["logs"]) == {"stdout", "stderr"}
    assert report["logs"]["stderr"] == "…" + recorded_report["logs"]["stderr"][-100:]
    assert report["hardware"]["sandbox"] == "bwrap" and "gpu" not in report["hardware"]
    criteria = {c["key"]: c for c in body["rubric"]["criteria"]}
    assert criteria["correct"]["awarded"] == 0.0 and criteria["correct"]["met"] is False
    assert criteria["clarity"]["awarded"] is None, "human criteria wait for a reviewer"
    assert body["rubric"]["available"] == 7
    assert body["review"] is None
    solution = recorded.files(GRADED)["solution.py"]
    assert body["files"] == [{"path": "solution.py", "bytes": len(solution.encode())}]


def test_the_public_report_keeps_timing_summaries_but_not_samples_or_witnesses(owner):
    task = publish_catalog_task("cpu-causal-softmax")
    submission = graded_with(task, owner, recorded.ACCEPTED)

    response = bearer(token_for(owner)).get(f"/api/v1/submissions/{submission.pk}/")

    text = response.content.decode()
    for value in hidden_values(recorded.report(recorded.ACCEPTED)):
        assert value not in text
    assert '"samples_s"' not in text and '"witness"' not in text
    timing = response.json()["grading"]["report"]["timing"]
    reference = recorded.report(recorded.ACCEPTED)["timing"]["reference"]
    assert timing["reference"]["median_s"] == reference["median_s"]
    assert (timing["timing_mode"], timing["scored"], timing["significant"]) == (
        "cpu_time",
        True,
        True,
    )
    # The kind's named metrics, beside the report.
    metrics = response.json()["grading"]["metrics"]
    assert metrics["speedup"] == recorded.report(recorded.ACCEPTED)["speedup"]
    assert metrics["reference_median_s"] == reference["median_s"]


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
    b = graded_with(task, owner, recorded.INTERPRETER, model_name="m2", run_id="r1")
    c = make_owned(other_task, owner, model_name="m1", run_id="r2")
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
    make_owned(task, owner, run_id="r9")
    for name in (recorded.INTERPRETER, GRADED):  # accepted, wrong_answer
        graded_with(task, owner, name, run_id="r9")
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


# What the results say: timing mode, scored speedups, points, the review's outcome --------


@pytest.fixture
def catalog(db):
    """The catalog's CPU task (C++, timed by CPU time) and its GPU row softmax (Triton,
    graded on this CPU host under the interpreter), with their real rubrics."""
    return {
        "cpu": publish_catalog_task("cpu-causal-softmax"),
        "gpu": publish_catalog_task("row-softmax"),
    }


def listed(owner, query="run_id=r"):
    response = bearer(token_for(owner)).get(f"/api/v1/submissions/?{query}")
    assert response.status_code == 200, response.content
    return {row["id"]: row for row in response.json()["results"]}


def test_the_list_says_how_each_speedup_was_timed_and_marks_the_unscored(catalog, owner):
    fast, slower, wrong = (
        graded_with(catalog["cpu"], owner, name, run_id="r")
        for name in (recorded.ACCEPTED, recorded.ACCEPTED_SLOWER, recorded.WRONG_ANSWER)
    )
    interpreted = graded_with(catalog["gpu"], owner, recorded.INTERPRETER, run_id="r")

    rows = listed(owner)

    measured = recorded.report(recorded.ACCEPTED)["speedup"]
    assert rows[fast.pk]["timing_mode"] == "cpu_time"
    assert rows[fast.pk]["speedup"] == rows[fast.pk]["score_speedup"] == pytest.approx(measured)
    assert rows[fast.pk]["speedup_scored"] is True
    assert rows[fast.pk]["speedup_significant"] is True
    assert rows[fast.pk]["speedup_unscored_reason"] == ""
    assert rows[slower.pk]["speedup_scored"] is True
    assert rows[slower.pk]["speedup_significant"] is False, "about 1.0x: within noise"
    assert rows[wrong.pk]["timing_mode"] is None and rows[wrong.pk]["speedup"] is None
    assert rows[wrong.pk]["speedup_scored"] is False and rows[wrong.pk]["score_speedup"] is None
    row = rows[interpreted.pk]
    assert row["timing_mode"] == "interpreter"
    assert row["speedup"] == pytest.approx(recorded.report(recorded.INTERPRETER)["speedup"])
    assert row["speedup_scored"] is False
    assert row["score_speedup"] is None and row["speedup_significant"] is None
    assert "interpreter" in row["speedup_unscored_reason"]


def test_the_list_gives_automatic_points_of_the_real_rubrics(catalog, owner):
    fast, slower, wrong = (
        graded_with(catalog["cpu"], owner, name, run_id="r")
        for name in (recorded.ACCEPTED, recorded.ACCEPTED_SLOWER, recorded.WRONG_ANSWER)
    )
    interpreted = graded_with(catalog["gpu"], owner, recorded.INTERPRETER, run_id="r")

    rows = listed(owner)

    # correct 6, speedup 1.3x 2 and 2x 2 (2.1x, significant), no integrity finding 1
    assert rows[fast.pk]["automatic_points"] == rows[fast.pk]["points"] == 11
    assert rows[slower.pk]["points"] == 7, "no speedup points within noise"
    assert rows[wrong.pk]["points"] == 0, "a clean record counts only when accepted"
    assert rows[interpreted.pk]["points"] == 7, "interpreter timings earn no speedup points"
    assert {row["points_available"] for row in rows.values()} == {18}
    assert {row["review_decision"] for row in rows.values()} == {""}
    assert {row["review_score"] for row in rows.values()} == {None}


def test_the_detail_marks_an_interpreter_speedup_as_no_score(catalog, owner):
    submission = graded_with(catalog["gpu"], owner, recorded.INTERPRETER)

    body = bearer(token_for(owner)).get(f"/api/v1/submissions/{submission.pk}/").json()

    assert (body["timing_mode"], body["speedup_scored"], body["score_speedup"]) == (
        "interpreter",
        False,
        None,
    )
    measured = recorded.report(recorded.INTERPRETER)["speedup"]
    assert body["speedup"] == pytest.approx(measured), "the raw figure is kept"
    assert body["grading"]["speedup_scored"] is False
    assert body["grading"]["target_hardware"] is False, "row-softmax targets the h100"
    assert body["points"] == body["rubric"]["awarded"] == 7


def test_a_final_review_shows_its_decision_and_score_and_changes_the_points(
    catalog, owner, reviewer
):
    from reviews import services as review_services

    submission = graded_with(catalog["cpu"], owner, recorded.ACCEPTED, run_id="r")
    review_services.review_queue_enter(submission_id=submission.pk)
    assignment = review_services.assignment_claim_next(reviewer=reviewer)
    assert assignment is not None and assignment.submission_id == submission.pk
    before = listed(owner)[submission.pk]

    review_services.review_submit(
        assignment_id=assignment.pk,
        reviewer=reviewer,
        data=review_services.ReviewInput(
            decision="accept",
            feedback="Fast and careful; the 2x was measured on one shape only.",
            scores={
                "clarity": review_services.ScoreInput(level=1),
                "numerical-care": review_services.ScoreInput(level=2),
                "explanation": review_services.ScoreInput(level=1),
                "speedup-2x": review_services.ScoreInput(
                    overturned=True, reason="timed on one shape set only"
                ),
            },
        ),
    )

    after = listed(owner)[submission.pk]
    assert (before["points"], before["review_decision"], before["review_score"]) == (11, "", None)
    assert after["status"] == "reviewed"
    assert after["automatic_points"] == 11, "what the grader gave stays visible"
    assert after["points"] == 11 - 2 + 1 + 2 + 1, "the overturn and the human levels count"
    assert after["review_decision"] == "accepted"
    assert after["review_score"] == pytest.approx(13 / 18)
    detail = bearer(token_for(owner)).get(f"/api/v1/submissions/{submission.pk}/").json()
    assert detail["points"] == detail["rubric"]["awarded"] == 13
    assert detail["review"]["decision"] == "accepted"
