from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from benchwright.state import InvalidTransition
from rubrics.models import CriterionScore
from submissions import services
from submissions.models import SUBMISSION_TRANSITIONS, GradingRun, Submission, SubmissionStatus
from tests import factories

pytestmark = pytest.mark.django_db

ACCEPTED_REPORT = {
    "verdict": "accepted",
    "reason": "all 5 trials within tolerance",
    "speedup": 1.8,
    "timing_mode": "wall",
    "timing": {
        "reference": {"median_s": 0.018},
        "submission": {"median_s": 0.010},
        "significant": True,
    },
    "integrity": {"violations": []},
    "hardware": {"kind": "cpu", "name": "Test CPU"},
    "harness_version": "1",
    "duration_s": 3.0,
}


def running_submission():
    submission = factories.make_submission()
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

    run = services.grading_store(submission_id=submission.pk, attempt=1, report=ACCEPTED_REPORT)

    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.GRADED
    assert submission.verdict == "accepted"
    assert run is not None and run.speedup == pytest.approx(1.8)
    assert run.target_hardware is True  # the factory task targets the CPU
    correct = CriterionScore.objects.get(grading_run=run, criterion__key="correct")
    assert correct.met is True and correct.points == 5
    # Human criteria are left to reviewers.
    assert not CriterionScore.objects.filter(criterion__key="clarity").exists()


def test_a_redelivered_report_changes_nothing():
    submission = running_submission()
    services.grading_store(submission_id=submission.pk, attempt=1, report=ACCEPTED_REPORT)

    again = services.grading_store(submission_id=submission.pk, attempt=1, report=ACCEPTED_REPORT)

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
            report={"verdict": "internal_error", "reason": "sandbox host lost"},
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
            submission_id=submission.pk, attempt=attempt, report={"verdict": "internal_error"}
        )
    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.FAILED
    assert submission.attempts == services.MAX_GRADING_ATTEMPTS


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

    stale = services.grading_store(submission_id=submission.pk, attempt=1, report=ACCEPTED_REPORT)

    assert stale is None
    assert not GradingRun.objects.filter(submission=submission).exists()


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
