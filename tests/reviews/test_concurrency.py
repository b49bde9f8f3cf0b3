"""Claims under concurrency, on real PostgreSQL connections from real threads.

Each thread has its own database connection (Django's are per thread), so the
row locks are PostgreSQL's own. The tests commit (transactional_db) so every
connection sees the same rows.
"""

import threading
import time

import pytest
from django.db import connection, transaction

from reviews import services as review_services
from reviews.models import AssignmentStatus, ReviewAssignment
from tests.reviews.conftest import graded, set_policy

pytestmark = pytest.mark.django_db(transaction=True)


def run_at_once(functions):
    """Start every function at the same moment, each in its own thread and connection."""
    barrier = threading.Barrier(len(functions))
    results: list = [None] * len(functions)
    errors: list = []

    def runner(index, function):
        try:
            barrier.wait()
            results[index] = function()
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=runner, args=(i, f)) for i, f in enumerate(functions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    return results


def test_reviewers_claiming_at_once_never_get_the_same_slot(task, make_reviewer):
    set_policy(task, 2)
    for _ in range(3):
        graded(task)
    reviewers = [make_reviewer(f"r{i}") for i in range(6)]

    claims = run_at_once(
        [lambda r=r: review_services.assignment_claim_next(reviewer=r) for r in reviewers]
    )

    ids = [c.pk for c in claims if c is not None]
    assert len(ids) == 6 and len(set(ids)) == 6  # six slots, six reviewers, all different
    rows = ReviewAssignment.objects.filter(pk__in=ids)
    assert {r.reviewer_id for r in rows} == {r.pk for r in reviewers}
    assert all(r.status == AssignmentStatus.CLAIMED for r in rows)
    # Two slots of one submission never went to the same reviewer.
    pairs = {(r.submission_id, r.reviewer_id) for r in rows}
    assert len(pairs) == 6


def test_more_reviewers_than_slots_leaves_the_extra_ones_empty_handed(task, make_reviewer):
    graded(task)
    reviewers = [make_reviewer(f"r{i}") for i in range(4)]

    claims = run_at_once(
        [lambda r=r: review_services.assignment_claim_next(reviewer=r) for r in reviewers]
    )

    assert sum(c is not None for c in claims) == 1
    assert ReviewAssignment.objects.filter(status=AssignmentStatus.CLAIMED).count() == 1


def test_a_slot_locked_by_an_unfinished_claim_is_skipped_not_waited_for(task, make_reviewer):
    first_submission = graded(task)
    second_submission = graded(task)
    locked = ReviewAssignment.objects.get(submission=first_submission)
    holding = threading.Event()
    release = threading.Event()

    def hold_the_first_slot():
        # Another claim in flight: its transaction holds the row lock for a while.
        with transaction.atomic():
            ReviewAssignment.objects.select_for_update().get(pk=locked.pk)
            holding.set()
            release.wait(timeout=30)
        connection.close()

    holder = threading.Thread(target=hold_the_first_slot)
    holder.start()
    assert holding.wait(timeout=30)
    try:
        started = time.monotonic()
        claim = review_services.assignment_claim_next(reviewer=make_reviewer("r1"))
        elapsed = time.monotonic() - started
    finally:
        release.set()
        holder.join(timeout=30)

    assert (
        claim is not None and claim.submission_id == second_submission.pk
    )  # SKIP LOCKED moved on to the next
    assert elapsed < 5  # and did not wait for the other transaction
