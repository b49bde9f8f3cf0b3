"""Whether a speedup is a score: the same answer from a grading run and from the
list's annotations, for real reports."""

import pytest

from submissions import selectors, services
from submissions.models import Submission
from tests import factories, recorded

pytestmark = pytest.mark.django_db


def graded(recording, **task_fields):
    task = factories.make_published_task(**task_fields)
    submission = factories.make_submission(task.current_version, files=recorded.files(recording))
    assert services.submission_claim(submission_id=submission.pk)
    run = services.grading_store(
        submission_id=submission.pk, attempt=1, report=recorded.report(recording)
    )
    assert run is not None
    listed = selectors.with_latest_grading(Submission.objects.filter(pk=submission.pk)).get()
    return selectors.run_speedup_view(run), selectors.speedup_view(
        listed.speedup, listed.latest_timing
    )


def test_a_cpu_time_speedup_on_a_cpu_task_is_a_score():
    from_run, from_list = graded(recorded.ACCEPTED)

    assert from_run == from_list
    assert from_run["speedup_scored"] is True and from_run["speedup_significant"] is True
    assert from_run["score_speedup"] == recorded.report(recorded.ACCEPTED)["speedup"]


def test_a_speedup_timed_off_the_tasks_hardware_is_no_score():
    from_run, from_list = graded(recorded.ACCEPTED, hardware="h100")

    assert from_run == from_list
    assert from_run["timing_mode"] == "cpu_time"
    assert from_run["speedup"] == recorded.report(recorded.ACCEPTED)["speedup"]
    assert from_run["speedup_scored"] is False and from_run["score_speedup"] is None
    assert from_run["speedup_unscored_reason"] == "not graded on the task's target hardware"


def test_the_graders_reason_comes_first_for_an_interpreter_timing():
    from_run, from_list = graded(recorded.INTERPRETER, hardware="h100")

    assert from_run == from_list
    assert from_run["speedup_scored"] is False and from_run["speedup_significant"] is None
    assert from_run["speedup_unscored_reason"] == (
        "Triton's interpreter on a CPU host is not a performance measurement"
    )


def test_a_failed_grading_has_no_speedup_and_no_reason():
    from_run, from_list = graded(recorded.WRONG_ANSWER)

    assert from_run == from_list
    assert (from_run["timing_mode"], from_run["speedup"], from_run["speedup_scored"]) == (
        None,
        None,
        False,
    )
    assert from_run["speedup_unscored_reason"] == ""
