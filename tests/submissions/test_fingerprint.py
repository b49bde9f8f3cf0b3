"""A submission's code key (its near-duplicate fingerprint) is made once, when it
arrives, by every way a submission arrives; a migration keys the ones already there."""

import importlib

import pytest
from django.apps import apps

from benchwright import roles
from submissions import services
from submissions.fingerprint import solution_key
from submissions.models import Submission
from tests import factories

pytestmark = pytest.mark.django_db

CODE = "import torch\n\n\ndef relu(x):  # clamp\n    return torch.clamp(x, min=0)\n"
RECOMMENTED = "import torch\ndef relu(x):\n    # new words\n    return torch.clamp(x, min=0)\n"


def published_version():
    task = factories.make_published_task()
    assert task.current_version is not None
    return task.current_version


def test_a_new_submission_stores_the_key_of_its_files():
    version = published_version()
    submitter = factories.make_user(roles.API_CLIENT)

    made = services.submission_create(
        version=version,
        submitter=submitter,
        files={"solution.py": CODE, "explanation.md": "Why."},
    )

    stored = Submission.objects.values_list("code_key", flat=True).get(pk=made.pk)
    assert bytes(stored) == solution_key([("solution.py", CODE)])
    assert len(stored) == 16


def test_each_submission_of_a_batch_stores_its_own_key():
    version = published_version()
    submitter = factories.make_user(roles.API_CLIENT)
    items = [
        services.NewSubmission(version=version, files={"solution.py": CODE}),
        services.NewSubmission(version=version, files={"kernel.py": RECOMMENTED}),
        services.NewSubmission(version=version, files={"solution.py": "x = 2\n"}),
    ]

    made = services.submissions_create_batch(submitter=submitter, items=items)

    keys = dict(
        Submission.objects.filter(pk__in=[s.pk for s in made]).values_list("pk", "code_key")
    )
    first, second, third = (bytes(keys[s.pk]) for s in made)
    assert first == second, "a recommented copy has the same key"
    assert third != first
    assert third == solution_key([("solution.py", "x = 2\n")])


def test_the_migration_keys_submissions_that_have_none():
    keyed = factories.make_submission(files={"solution.py": CODE})
    bare = [factories.make_submission(files={"a.py": f"x = {i}\n"}) for i in range(3)]
    Submission.objects.filter(pk__in=[s.pk for s in bare]).update(code_key=None)
    migration = importlib.import_module("submissions.migrations.0003_submission_code_key")

    migration.backfill(apps, None)

    keys = dict(Submission.objects.values_list("pk", "code_key"))
    for i, submission in enumerate(bare):
        assert bytes(keys[submission.pk]) == solution_key([("a.py", f"x = {i}\n")])
    assert bytes(keys[keyed.pk]) == solution_key([("solution.py", CODE)])
