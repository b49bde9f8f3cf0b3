"""A small world to export: published tasks whose hidden files (reference, expert
solution, hidden tests) carry planted secrets; submissions graded through the real
grading_store with reports recorded from real gradings (``tests.recorded``), whose
internals (seeds, reasons, messages, the host) are secrets too; reviews and
pairwise judgements through the real review services. No exported byte may hold
a secret."""

from __future__ import annotations

import copy
import io
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from benchwright import roles
from exports import selectors as export_selectors
from exports import services as export_services
from exports.models import DefinitionVersion, ExportDefinition, Snapshot
from reviews import services as review_services
from reviews.models import ReviewAssignment
from rubrics.models import Criterion, CriterionKind
from submissions import services as submission_services
from submissions.models import Submission
from tasks import services as task_services
from tasks.models import FileRole, Task, TaskFile, TaskVersion, Visibility
from tests import factories, recorded

HIDDEN_SECRETS = (
    "HIDDEN-REFERENCE-c0ffee41",
    "HIDDEN-EXPERT-SOLUTION-beef77",
    "HIDDEN-TEST-CASES-5eed13",
)
REFERENCE_SECRET, EXPERT_SECRET, TESTS_SECRET = HIDDEN_SECRETS
# The graded submissions' reports are real ones (tests/recorded.py): an accepted
# grading and a wrong answer.
ACCEPTED_REPORT = recorded.ACCEPTED
WRONG_REPORT = recorded.WRONG_ANSWER


def report_internals(name: str) -> tuple[str, ...]:
    """What a recorded report holds that no export may carry: the trials' seeds,
    the reason, the host's platform string and the per-trial messages."""
    data = recorded.report(name)
    texts = [data["reason"], data["hardware"]["platform"]]
    texts += [c["seed"] for c in data["correctness"]]
    texts += [c["message"] for c in data["correctness"] if c["message"]]
    return tuple(texts)


SECRETS = HIDDEN_SECRETS + report_internals(ACCEPTED_REPORT) + report_internals(WRONG_REPORT)
# Identities of the submitters: absent from every export unless asked for and allowed.
SUBMITTER = "client-ident-qx7"
RUN = "run-ident-zz9"
LABEL = "label-ident-kk3"

REFERENCE = f'''import torch
from torch import nn

batch_size = 4
dim = 64
MARKER = "{REFERENCE_SECRET}"


class Model(nn.Module):
    def forward(self, x):
        expected_scale = 1.0  # the reference computes exactly this
        return torch.relu(x) * expected_scale


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''
EXPERT = f"""import torch
from torch import nn

# {EXPERT_SECRET}


class ModelNew(nn.Module):
    def forward(self, x):
        clamped_output_tensor = torch.clamp(x, min=0.0)
        assert clamped_output_tensor.shape == x.shape
        return clamped_output_tensor.contiguous()
"""
HIDDEN_TESTS = f'''CASES = ["{TESTS_SECRET}"]
SHAPES_UNDER_TEST = [(4, 64), (17, 33), (1, 1)]
EDGE_VALUES_UNDER_TEST = [0.0, -0.0, 1e30]
'''
STARTER = """import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x):
        raise NotImplementedError
"""


def solution(variant: int) -> str:
    """Distinct solutions (after normalisation) for distinct variants."""
    return f'''import torch
from torch import nn


class ModelNew(nn.Module):
    """Variant {variant}."""

    def forward(self, x):
        return torch.clamp(x, min=0) * {variant + 1}
'''


def report(verdict: str = "accepted") -> dict[str, Any]:
    """A real grading's report with this verdict (see ``tests.recorded``)."""
    name = {"accepted": ACCEPTED_REPORT, "wrong_answer": WRONG_REPORT}[verdict]
    made = recorded.report(name)
    assert made["verdict"] == verdict
    return made


def publish_task(owner: Any, slug: str, **fields: Any) -> Task:
    """A published task with hidden reference, expert solution and test cases, a
    prompt-visible starter, and a rubric: correct (+5), integrity (-3), clarity
    (+2, levels 0-2), explanation (+2, levels 0-2)."""
    task = factories.make_task(owner, slug=slug, title=f"Task {slug}", **fields)
    reference = TaskFile.objects.get(task=task, path="reference.py")
    reference.content = REFERENCE
    reference.save()
    for path, content, visibility, role in (
        ("starter.py", STARTER, Visibility.PROMPT, FileRole.STARTER),
        ("solution.py", EXPERT, Visibility.HIDDEN, FileRole.SOLUTION),
        ("tests/cases.py", HIDDEN_TESTS, Visibility.HIDDEN, FileRole.TEST),
    ):
        TaskFile.objects.create(
            task=task, path=path, content=content, visibility=visibility, role=role
        )
    rubric = task.rubric
    Criterion.objects.filter(rubric=rubric, key="clarity").update(
        levels=[{"score": s, "descriptor": f"clarity {s}"} for s in (0, 1, 2)]
    )
    Criterion.objects.create(
        rubric=rubric,
        key="integrity",
        title="Integrity",
        points=-3,
        kind=CriterionKind.AUTOMATIC,
        rule={"type": "integrity", "clean": False},
        position=2,
    )
    Criterion.objects.create(
        rubric=rubric,
        key="explanation",
        title="Explanation",
        points=2,
        kind=CriterionKind.HUMAN,
        levels=[{"score": s, "descriptor": f"explanation {s}"} for s in (0, 1, 2)],
        position=3,
    )
    factories.mark_validated(task)
    task_services.task_submit_for_review(task=task, user=task.owner)
    task.refresh_from_db()
    task_services.task_publish(task=task, reviewer=factories.make_user(roles.REVIEWER))
    task.refresh_from_db()
    # Reviewers see failures too, so critiques hold a rejected wrong answer.
    review_services.policy_set(task=task, actor=owner, reviews_required=1, review_failures=True)
    return task


def republish(task: Task, statement: str) -> TaskVersion:
    """A second version of a published task, with a changed statement."""
    task_services.task_revise(task=task, user=task.owner)
    task.refresh_from_db()
    task_services.task_statement_update(task=task, user=task.owner, text=statement)
    task.refresh_from_db()
    factories.mark_validated(task)
    task_services.task_submit_for_review(task=task, user=task.owner)
    task.refresh_from_db()
    version = task_services.task_publish(task=task, reviewer=factories.make_user(roles.REVIEWER))
    task.refresh_from_db()
    assert version.number == 2
    return version


def graded(
    version: TaskVersion,
    submitter: Any,
    files: dict[str, str],
    *,
    verdict: str = "accepted",
    model: str = "model-a",
    review: bool = True,
) -> Submission:
    submission = factories.make_submission(
        version, submitter=submitter, files=files, run_id=RUN, labels={"team": LABEL}
    )
    Submission.objects.filter(pk=submission.pk).update(model_name=model)
    assert submission_services.submission_claim(submission_id=submission.pk)
    submission_services.grading_store(
        submission_id=submission.pk, attempt=1, report=report(verdict)
    )
    if review:
        review_services.review_queue_enter(submission_id=submission.pk)
    submission.refresh_from_db()
    return submission


def review(
    reviewer: Any,
    submission: Submission,
    *,
    decision: str = "accept",
    clarity: int = 2,
    explanation: int = 2,
    feedback: str = "Clean clamp; handles the ragged shapes.",
    comment: str = "",
) -> Any:
    slot = ReviewAssignment.objects.filter(submission=submission, status="open").first()
    assert slot is not None, "no open review slot"
    data = review_services.ReviewInput(
        decision=decision,
        feedback=feedback,
        scores={
            "clarity": review_services.ScoreInput(level=clarity, comment=comment),
            "explanation": review_services.ScoreInput(level=explanation),
        },
        comments=(review_services.CommentInput(path="solution.py", line=1, body="Imports ok."),),
    )
    return review_services.review_submit(assignment_id=slot.pk, reviewer=reviewer, data=data)


@dataclass
class World:
    owner: Any  # an exporter
    submitter: Any
    reviewers: list[Any]
    tasks: list[Task] = field(default_factory=list)
    submissions: dict[str, list[Submission]] = field(default_factory=dict)


TASK_SLUGS = ("alpha-relu", "beta-relu", "gamma-relu", "delta-relu", "epsilon-relu", "zeta-relu")


def build_world(*, tasks: int = 6) -> World:
    """Per task: four distinct accepted solutions (two reviewed, one with an
    approved explanation), a reformatted copy of the first (a near duplicate), and
    a wrong answer; one pairwise judgement per task."""
    author = factories.make_user(roles.AUTHOR)
    world = World(
        owner=exporter("exporter-owner"),
        submitter=factories.make_user(roles.API_CLIENT, username=SUBMITTER),
        reviewers=[factories.make_user(roles.REVIEWER) for _ in range(2)],
    )
    for index, slug in enumerate(TASK_SLUGS[:tasks]):
        task = publish_task(
            author,
            slug,
            tags=["relu", "even" if index % 2 == 0 else "odd"],
            difficulty="easy" if index < 3 else "hard",
        )
        world.tasks.append(task)
        world.submissions[slug] = _submissions_for(world, task)
    return world


def _submissions_for(world: World, task: Task) -> list[Submission]:
    version = task.current_version
    assert version is not None
    made = []
    for variant in range(4):
        files = {"solution.py": solution(variant)}
        if variant == 1:
            files["explanation.md"] = f"Clamping at zero is relu; variant {variant} scales it.\n"
        made.append(graded(version, world.submitter, files, model=f"model-{'ab'[variant % 2]}"))
    reformatted = "# same thing, reformatted\n" + solution(0).replace("min=0", "min = 0")
    made.append(graded(version, world.submitter, {"kernel.py": reformatted}, model="model-c"))
    made.append(
        graded(version, world.submitter, {"solution.py": "x = 1\n"}, verdict="wrong_answer")
    )
    review(world.reviewers[0], made[0], clarity=2, explanation=0)
    review(world.reviewers[0], made[1], clarity=1, explanation=2)
    review(world.reviewers[1], made[5], decision="reject", clarity=0, explanation=0)
    _judge(world.reviewers[1], made[2], made[3])
    return made


def _judge(reviewer: Any, better: Submission, worse: Submission) -> None:
    from reviews.models import PairOffer

    offer = PairOffer.objects.create(
        reviewer=reviewer,
        task_version_id=better.task_version_id,
        submission_a=worse,
        submission_b=better,
    )
    review_services.pairwise_judge(
        offer_id=offer.pk,
        reviewer=reviewer,
        data=review_services.PairInput(
            winner="b",
            criterion_winners={"clarity": "b", "explanation": "tie"},
            reason="B keeps the scale explicit.",
        ),
    )


def exporter(username: str) -> Any:
    user = factories.make_user(roles.API_CLIENT, username=username)
    export_selectors.grant_exporter(user)
    return user


# With these ratios, seed 5 puts the six tasks 4 / 1 / 1 into train / validation / test.
SPLIT = {"train": 0.6, "validation": 0.2, "test": 0.2}
SEED = 5


def define(owner: Any, slug: str = "relu-data", **data: Any) -> ExportDefinition:
    content = {"title": f"Export {slug}", "format": "sft", "seed": SEED, "split": SPLIT} | data
    return export_services.definition_create(owner=owner, slug=slug, data=content)


def current(definition: ExportDefinition) -> DefinitionVersion:
    definition.refresh_from_db()
    assert definition.current_version is not None
    return definition.current_version


def build(definition: ExportDefinition, user: Any) -> Snapshot:
    """Queue and run a build in this process (the job's service, without the broker)."""
    snapshot = export_services.snapshot_create(definition=definition, user=user)
    assert export_services.snapshot_build(snapshot_id=snapshot.pk) == "succeeded", (
        Snapshot.objects.get(pk=snapshot.pk).error
    )
    snapshot.refresh_from_db()
    return snapshot


def snapshot_folder(snapshot: Snapshot) -> Path:
    from django.conf import settings

    return Path(settings.MEDIA_ROOT) / snapshot.storage_prefix


def archive_members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {
            m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }


def rows_of(snapshot: Snapshot, split: str) -> list[dict[str, Any]]:
    import json

    path = snapshot_folder(snapshot) / "data" / f"{split}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


def all_rows(snapshot: Snapshot) -> list[dict[str, Any]]:
    return [row for split in ("train", "validation", "test") for row in rows_of(snapshot, split)]


@pytest.fixture(autouse=True)
def _media_root(request, settings, tmp_path):
    """Snapshots go to a temporary MEDIA_ROOT, except where a Celery worker (another
    process, with the default MEDIA_ROOT) writes them: see ``shared_media``."""
    if "shared_media" not in request.fixturenames:
        settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def shared_media():
    """The default MEDIA_ROOT, which the worker process uses too; the snapshots made
    meanwhile are removed afterwards."""
    before = set(Snapshot.objects.values_list("pk", flat=True))
    yield
    for snapshot in Snapshot.objects.exclude(pk__in=before).select_related("version__definition"):
        export_services.discard_files(snapshot)


@pytest.fixture(scope="module")
def shared_world(django_db_setup, django_db_blocker):
    """One world per test module, inside a transaction rolled back at its end; each
    test runs in a savepoint within it, so what a test adds is gone after it."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield build_world()
        transaction.set_rollback(True)


@pytest.fixture
def world(shared_world, db) -> World:
    return shared_world


# The catalog, imported ------------------------------------------------------------------------

CATALOG = Path(__file__).resolve().parents[2] / "reference_solutions"
HONEST = Path(__file__).resolve().parent / "corpus" / "honest"
# Catalog tasks with a recorded accepted grading, the recording, and two honest
# solutions from the corpus (written from the statement; see exports.guard_check).
GRADED_TASKS = {
    "cpu-causal-softmax": ("causal-softmax-solution", ("masked_rows_cpp.py", "tile_of_rows.py")),
    "cpu-add-layernorm": ("add-layernorm-solution", ("two_pass_rows.py", "welford_kernel.py")),
    "cpu-masked-mean-pool": ("masked-mean-pool-solution", ("count_then_sum.py", "index_list.py")),
}


@dataclass
class Catalog:
    admin: Any  # imported the catalog: the tasks' owner
    exporter: Any
    submitter: Any
    reviewers: list[Any]
    tasks: dict[str, Task]
    accepted: dict[str, list[Submission]] = field(default_factory=dict)


def honest_code(slug: str, name: str) -> str:
    return (HONEST / slug / name).read_text(encoding="utf-8")


def import_catalog() -> Catalog:
    """Every catalog bundle imported and published as ``manage.py import_tasks`` does."""
    from tasks.bundle import load_bundle

    admin = factories.make_user(roles.ADMIN, username="catalog-admin")
    tasks = {}
    for folder in sorted(p for p in CATALOG.iterdir() if (p / "task.toml").exists()):
        bundle = load_bundle(folder)
        task_services.bundle_import(bundle=bundle, user=admin, publish=True)
        tasks[bundle.slug] = Task.objects.get(slug=bundle.slug)
    return Catalog(
        admin=admin,
        exporter=exporter("catalog-exporter"),
        submitter=factories.make_user(roles.API_CLIENT, username="catalog-client"),
        reviewers=[factories.make_user(roles.REVIEWER) for _ in range(2)],
        tasks=tasks,
    )


def graded_with(
    version: TaskVersion, submitter: Any, files: dict[str, str], recording: str, *, model: str
) -> Submission:
    """A submission graded with a recorded report and put in the review queue."""
    submission = factories.make_submission(version, submitter=submitter, files=files)
    Submission.objects.filter(pk=submission.pk).update(model_name=model)
    assert submission_services.submission_claim(submission_id=submission.pk)
    submission_services.grading_store(
        submission_id=submission.pk, attempt=1, report=recorded.report(recording)
    )
    review_services.review_queue_enter(submission_id=submission.pk)
    submission.refresh_from_db()
    return submission


def review_next(reviewer: Any, *, level: str, decision: str = "accept") -> Submission:
    """The reviewer claims the next item in the queue and reviews it, every human
    criterion at its lowest or highest level."""
    slot = review_services.assignment_claim_next(reviewer=reviewer)
    assert slot is not None, "nothing in the queue"
    version = slot.submission.task_version
    human = Criterion.objects.filter(rubric__version=version, kind=CriterionKind.HUMAN)
    scores = {
        c.key: review_services.ScoreInput(
            level=(max if level == "high" else min)(lvl["score"] for lvl in c.levels)
        )
        for c in human
    }
    review_services.review_submit(
        assignment_id=slot.pk,
        reviewer=reviewer,
        data=review_services.ReviewInput(
            decision=decision, feedback="Reads well; the masked range is handled.", scores=scores
        ),
    )
    return slot.submission


def build_catalog_world() -> Catalog:
    """The catalog imported; per graded task, two honest solutions graded with the
    task's recorded accepted report and accepted by a reviewer, one rated at the
    top of every human criterion, the other at the bottom."""
    catalog = import_catalog()
    for slug, (recording, names) in GRADED_TASKS.items():
        assert recorded.task_slug(recording) == slug
        version = catalog.tasks[slug].current_version
        assert version is not None
        catalog.accepted[slug] = [
            graded_with(
                version,
                catalog.submitter,
                {"solution.py": honest_code(slug, name)},
                recording,
                model=f"model-{n}",
            )
            for n, name in enumerate(names)
        ]
    for number in range(2 * len(GRADED_TASKS)):
        review_next(catalog.reviewers[number % 2], level="high" if number % 2 == 0 else "low")
    return catalog


@pytest.fixture(scope="module")
def shared_catalog(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), transaction.atomic():
        yield build_catalog_world()
        transaction.set_rollback(True)


@pytest.fixture
def catalog(shared_catalog, db) -> Catalog:
    return shared_catalog


def deep(value: Any) -> Any:
    return copy.deepcopy(value)
