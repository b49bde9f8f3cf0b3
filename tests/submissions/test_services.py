from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from benchwright.state import InvalidTransition
from graders.worker import lost_worker_report
from rubrics.models import CriterionScore
from submissions import services
from submissions.models import SUBMISSION_TRANSITIONS, GradingRun, Submission, SubmissionStatus
from tests import factories, recorded

pytestmark = pytest.mark.django_db


def running_submission(**task_fields):
    task = factories.make_published_task(**task_fields) if task_fields else None
    submission = factories.make_submission(
        task.current_version if task else None, files=recorded.files(recorded.ACCEPTED)
    )
    assert services.submission_claim(submission_id=submission.pk)
    submission.refresh_from_db()
    return submission


def test_every_status_pair_is_allowed_exactly_as_the_transitions_map_says():
    first = factories.make_submission()
    for source in SubmissionStatus.values:
        for target in SubmissionStatus.values:
            submission = factories.make_submission(first.task_version, first.submitter)
            Submission.objects.filter(pk=submission.pk).update(status=source)
            allowed = target in SUBMISSION_TRANSITIONS[source]
            if allowed:
                services.submission_set_status(submission_id=submission.pk, to=target)
            else:
                with pytest.raises(InvalidTransition):
                    services.submission_set_status(submission_id=submission.pk, to=target)
            submission.refresh_from_db()
            assert submission.status == (target if allowed else source), (source, target)


def test_the_database_refuses_an_unknown_status():
    submission = factories.make_submission()
    with pytest.raises(IntegrityError), transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(status="hacked")


def test_a_submission_is_claimed_only_once():
    submission = factories.make_submission()

    assert services.submission_claim(submission_id=submission.pk) is True
    assert services.submission_claim(submission_id=submission.pk) is False

    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.RUNNING
    assert submission.attempts == 1


def test_storing_a_report_records_the_run_scores_criteria_and_marks_it_graded():
    submission = running_submission()
    report = recorded.report(recorded.ACCEPTED)

    run = services.grading_store(submission_id=submission.pk, attempt=1, report=report)

    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.GRADED
    assert submission.verdict == "accepted"
    assert run is not None and run.speedup == report["speedup"]
    assert run.timing_mode == "cpu_time"
    assert run.reference_median_s == report["timing"]["reference"]["median_s"]
    assert run.submission_median_s == report["timing"]["submission"]["median_s"]
    # The kind's named metrics, stored as one validated object.
    run.refresh_from_db()
    assert run.metrics == {
        "speedup": report["speedup"],
        "reference_median_s": report["timing"]["reference"]["median_s"],
        "submission_median_s": report["timing"]["submission"]["median_s"],
        "checked_calls": float(report["checked_calls"]),
    }
    assert (run.hardware, run.harness_version) == ("cpu", report["harness_version"])
    assert run.target_hardware is True  # graded on a CPU host; the factory task targets the CPU
    assert run.started_at is not None and run.finished_at is not None
    assert (run.finished_at - run.started_at).total_seconds() == pytest.approx(
        report["duration_s"], abs=0.5
    )
    correct = CriterionScore.objects.get(grading_run=run, criterion__key="correct")
    assert correct.met is True and correct.points == 5
    # Human criteria are left to reviewers.
    assert not CriterionScore.objects.filter(criterion__key="clarity").exists()


def test_a_report_from_a_cpu_host_is_not_on_target_for_a_gpu_task():
    submission = running_submission(hardware="h100")

    run = services.grading_store(
        submission_id=submission.pk, attempt=1, report=recorded.report(recorded.INTERPRETER)
    )

    assert run is not None and run.target_hardware is False
    assert (run.hardware, run.timing_mode) == ("cpu", "interpreter")


def test_a_redelivered_report_changes_nothing():
    submission = running_submission()
    report = recorded.report(recorded.ACCEPTED)
    services.grading_store(submission_id=submission.pk, attempt=1, report=report)

    again = services.grading_store(submission_id=submission.pk, attempt=1, report=report)

    assert again is None
    assert GradingRun.objects.filter(submission=submission).count() == 1
    assert CriterionScore.objects.filter(submission=submission).count() == 1


def test_an_internal_error_is_retried_and_never_blamed_on_the_submission(
    django_capture_on_commit_callbacks,
):
    submission = running_submission()

    with django_capture_on_commit_callbacks() as callbacks:
        services.grading_store(
            submission_id=submission.pk,
            attempt=1,
            report=lost_worker_report(),
        )

    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.QUEUED
    assert submission.verdict == ""
    assert len(callbacks) == 1, "the retry is enqueued once the transaction commits"


def test_internal_errors_past_the_retry_budget_mark_the_submission_failed():
    submission = factories.make_submission()
    for attempt in range(1, services.MAX_GRADING_ATTEMPTS + 1):
        assert services.submission_claim(submission_id=submission.pk)
        services.grading_store(
            submission_id=submission.pk, attempt=attempt, report=lost_worker_report()
        )
    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.FAILED
    assert submission.attempts == services.MAX_GRADING_ATTEMPTS


BROKEN_REFERENCE = """
import torch


def generate_input(**params):
    return torch.ones(1) * (1 // 0)


def ref_kernel(data):
    return data
"""


@pytest.fixture(scope="module")
def task_error_report(tmp_path_factory):
    """A real grading against a reference whose input generator raises."""
    from graders.kernel.grading import grade
    from graders.kernel.spec import GradingSpec
    from sandboxes import get_backend
    from sandboxes.base import Limits

    path = tmp_path_factory.mktemp("broken") / "reference.py"
    path.write_text(BROKEN_REFERENCE)
    spec = GradingSpec.from_problem_file(path)
    solution = "def custom_kernel(data):\n    return data\n"
    report = grade(spec, {"solution.py": solution}, backend=get_backend("bwrap"), limits=Limits())
    return report.to_dict()


def test_a_task_error_fails_the_submission_at_once_and_is_logged(task_error_report, caplog):
    assert task_error_report["verdict"] == "task_error", task_error_report["reason"]
    submission = running_submission()

    services.grading_store(submission_id=submission.pk, attempt=1, report=task_error_report)

    submission.refresh_from_db()
    assert (submission.status, submission.verdict) == (SubmissionStatus.FAILED, "task_error")
    assert submission.attempts == 1, "grading again cannot mend a broken reference"
    assert "its reference failed" in caplog.text and "ZeroDivisionError" in caplog.text
    assert not CriterionScore.objects.filter(submission=submission).exists()


def test_the_sweeper_requeues_only_submissions_stuck_past_the_limit():
    stuck = running_submission()
    fresh = running_submission()
    Submission.objects.filter(pk=stuck.pk).update(
        status_changed_at=timezone.now() - timedelta(hours=2)
    )

    requeued = services.submissions_sweep_stuck(older_than=timedelta(hours=1))

    assert requeued == [stuck.pk]
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.status == SubmissionStatus.QUEUED
    assert fresh.status == SubmissionStatus.RUNNING


def test_a_late_report_from_a_swept_attempt_is_ignored():
    submission = running_submission()
    services.submissions_sweep_stuck(older_than=timedelta(seconds=-1))
    assert services.submission_claim(submission_id=submission.pk)  # attempt 2

    stale = services.grading_store(
        submission_id=submission.pk, attempt=1, report=recorded.report(recorded.ACCEPTED)
    )

    assert stale is None
    [swept] = GradingRun.objects.filter(submission=submission)
    assert (swept.attempt, swept.verdict) == (1, "internal_error")


def test_the_sweeper_records_why_and_fails_the_submission_past_the_attempt_budget():
    submission = running_submission()
    for attempt in range(1, services.MAX_GRADING_ATTEMPTS + 1):
        assert services.submissions_sweep_stuck(older_than=timedelta(seconds=-1)) == [submission.pk]
        submission.refresh_from_db()
        if attempt < services.MAX_GRADING_ATTEMPTS:
            assert submission.status == SubmissionStatus.QUEUED
            assert services.submission_claim(submission_id=submission.pk)
    assert submission.status == SubmissionStatus.FAILED
    assert submission.verdict == "internal_error"
    runs = list(GradingRun.objects.filter(submission=submission).order_by("attempt"))
    assert [run.attempt for run in runs] == list(range(1, services.MAX_GRADING_ATTEMPTS + 1))
    assert all("its grading job was lost or hung" in run.reason for run in runs)
    # Nothing is left to sweep: a failed submission stays failed.
    assert services.submissions_sweep_stuck(older_than=timedelta(seconds=-1)) == []


def test_a_message_redelivered_after_its_worker_died_is_not_graded_again(monkeypatch):
    from graders import worker
    from submissions import jobs

    graded, stored = [], []
    monkeypatch.setattr(worker, "grade_message", lambda *a, **k: graded.append(a) or {})
    monkeypatch.setattr(
        jobs.store_grading_job, "apply_async", lambda args, queue: stored.append(args)
    )
    message = {"submission_id": 7, "attempt": 2}
    jobs.run_grading_job.push_request(delivery_info={"redelivered": True})  # type: ignore[call-arg]
    try:
        verdict = jobs.run_grading_job.run(message)
    finally:
        jobs.run_grading_job.pop_request()
    assert verdict == "internal_error" and graded == []
    [(submission_id, attempt, report)] = stored
    assert (submission_id, attempt) == (7, 2)
    assert report["reason"] == "the grading worker was lost while grading this attempt"


def test_cancel_only_from_queued():
    queued = factories.make_submission()
    services.submission_cancel(submission=queued)
    queued.refresh_from_db()
    assert queued.status == SubmissionStatus.CANCELLED

    running = running_submission()
    with pytest.raises(InvalidTransition):
        services.submission_cancel(submission=running)


def test_gpu_targets_go_to_their_pool_only_when_one_is_configured(settings):
    task = factories.make_published_task(hardware="h100")
    settings.GRADING_GPU_POOLS = []
    assert services.grading_queue_for(task.current_version) == "grading.cpu"
    settings.GRADING_GPU_POOLS = ["h100"]
    assert services.grading_queue_for(task.current_version) == "grading.gpu.h100"


def test_the_grading_message_carries_everything_the_sandbox_host_needs():
    submission = factories.make_submission(files={"solution.py": "x = 1\n"})
    submission.refresh_from_db()

    message = services.grading_message(submission)

    assert message["submission_files"] == {"solution.py": "x = 1\n"}
    assert "reference.py" in message["task_files"]
    assert message["manifest"]["grading"]["format"] == "kernelbench"
    assert {f["role"] for f in message["manifest"]["files"]} == {"statement", "reference"}


def test_a_report_postgresql_would_refuse_is_stored_cleaned():
    """The trusted side does not rely on the grader's own cleaning: a report (data that
    crossed the broker) whose text holds a NUL and a lone surrogate, and whose figures
    are not finite, is stored, and the submission is graded, not left running."""
    submission = factories.make_submission(files=recorded.files(recorded.INTEGRITY_VIOLATION))
    assert services.submission_claim(submission_id=submission.pk)
    report = recorded.report(recorded.INTEGRITY_VIOLATION)
    report["reason"] = "output is a m\x00.W\ud800, not a plain torch.Tensor"
    report["integrity"]["violations"].append("a W\ud800\x00 was returned")
    report["logs"] = {"stdout": "before\x00after\n", "stderr": ""}
    report["speedup"] = float("nan")

    run = services.grading_store(submission_id=submission.pk, attempt=1, report=report)

    run.refresh_from_db()
    assert run.verdict == "integrity_violation" and run.speedup is None
    fffd = "\N{REPLACEMENT CHARACTER}"
    assert run.reason.startswith(f"output is a m{fffd}.W{fffd}")
    assert "\x00" not in run.reason and "\x00" not in run.report["logs"]["stdout"]
    assert run.report["logs"]["stdout"] == "before\N{REPLACEMENT CHARACTER}after\n"
    assert run.report["speedup"] is None
    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.GRADED
