import pytest

from tasks import validation
from tasks.models import FileRole, TaskFile, ValidationStatus, Visibility
from tests import factories, recorded

pytestmark = pytest.mark.django_db


def add_candidates(task):
    TaskFile.objects.create(
        task=task, path="solution.py", content="# expert\n", role=FileRole.SOLUTION
    )
    TaskFile.objects.create(
        task=task,
        path="bad/no_mask.py",
        content="# wrong\n",
        role=FileRole.NEGATIVE,
        expected_verdict="wrong_answer",
        visibility=Visibility.HIDDEN,
    )


def test_a_run_grades_the_solution_and_every_negative_through_the_queue(
    django_capture_on_commit_callbacks,
):
    task = factories.make_task()
    add_candidates(task)

    with django_capture_on_commit_callbacks() as callbacks:
        run = validation.validation_start(task=task, user=task.owner)

    expected = {r.path: r.expected_verdict for r in run.results.all()}
    assert expected == {"solution.py": "accepted", "bad/no_mask.py": "wrong_answer"}
    assert run.status == ValidationStatus.RUNNING
    assert len(callbacks) == 1, "the jobs are sent once the transaction commits"


def test_a_draft_without_a_solution_cannot_be_validated():
    task = factories.make_task()
    with pytest.raises(validation.NothingToValidate):
        validation.validation_start(task=task, user=task.owner)


def record_all(run, recordings):
    """Store, for each file, the report of a real grading (tests/recorded.py)."""
    for result in run.results.all():
        report = recorded.report(recordings[result.path])
        validation.validation_record(result_id=result.pk, report=report)
    run.refresh_from_db()


def test_the_run_passes_when_every_file_gets_its_expected_verdict():
    task = factories.make_task()
    add_candidates(task)
    run = validation.validation_start(task=task, user=task.owner)

    record_all(run, {"solution.py": recorded.ACCEPTED, "bad/no_mask.py": recorded.WRONG_ANSWER})

    assert run.status == ValidationStatus.PASSED
    negative = run.results.get(path="bad/no_mask.py")
    assert negative.verdict == "wrong_answer"
    assert negative.report["reason"] == recorded.report(recorded.WRONG_ANSWER)["reason"]
    assert run.finished_at is not None
    assert validation.validation_passed_for_draft(task)


def test_a_negative_that_slips_through_fails_the_run():
    task = factories.make_task()
    add_candidates(task)
    run = validation.validation_start(task=task, user=task.owner)

    record_all(run, {"solution.py": recorded.ACCEPTED, "bad/no_mask.py": recorded.ACCEPTED})

    assert run.status == ValidationStatus.FAILED
    assert not validation.validation_passed_for_draft(task)


def test_the_run_stays_open_until_the_last_file_reports():
    task = factories.make_task()
    add_candidates(task)
    run = validation.validation_start(task=task, user=task.owner)
    first = run.results.get(path="solution.py")

    validation.validation_record(result_id=first.pk, report=recorded.report(recorded.ACCEPTED))

    run.refresh_from_db()
    assert run.status == ValidationStatus.RUNNING


def test_a_redelivered_report_changes_nothing():
    task = factories.make_task()
    add_candidates(task)
    run = validation.validation_start(task=task, user=task.owner)
    result = run.results.get(path="solution.py")
    validation.validation_record(result_id=result.pk, report=recorded.report(recorded.ACCEPTED))

    again = validation.validation_record(
        result_id=result.pk, report=recorded.report(recorded.WRONG_ANSWER)
    )

    result.refresh_from_db()
    assert again is None
    assert result.verdict == "accepted"


def test_editing_the_draft_after_a_pass_requires_a_new_validation():
    task = factories.make_task()
    add_candidates(task)
    run = validation.validation_start(task=task, user=task.owner)
    record_all(run, {"solution.py": recorded.ACCEPTED, "bad/no_mask.py": recorded.WRONG_ANSWER})

    solution = task.files.get(path="solution.py")
    solution.content = "# changed\n"
    solution.save()

    assert not validation.validation_passed_for_draft(task)


def test_the_message_carries_the_candidate_under_its_own_name(
    django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr(
        validation, "_enqueue", lambda messages, kind, hardware: sent.extend(messages)
    )
    task = factories.make_task()
    add_candidates(task)

    with django_capture_on_commit_callbacks(execute=True):
        validation.validation_start(task=task, user=task.owner)

    by_file = {next(iter(m["submission_files"])): m for m in sent}
    assert set(by_file) == {"solution.py", "no_mask.py"}
    assert by_file["no_mask.py"]["submission_files"]["no_mask.py"] == "# wrong\n"
    assert "reference.py" in by_file["no_mask.py"]["task_files"]
