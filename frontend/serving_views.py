"""A serving draft's reference config, edited on its grading tab.

Saving puts the text through the gates a grading will: TOML, the platform's flag
policy and the task's allow-list and ranges (answered at once, each problem
naming its flag; nothing is saved while one stands). Once saved, vLLM's own
parser and config checks run on a grading host, where the serving environment
is (``tasks.check_engine_config``); the page polls for the answer, which comes
back through Celery's result backend. The job's id is kept in the author's
session, so that only the author who saved sees it.
"""

from __future__ import annotations

from typing import Any

from celery.result import AsyncResult
from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from graders import registry
from graders.contract import GradingTableError
from graders.serving.spec import ServingSpec
from tasks import services as task_services
from tasks.models import FileRole, Task, Visibility
from tasks.selectors import grading_payload

from .access import acting_user, editor_view
from .authoring_forms import apply_errors
from .editor import editor_context
from .htmx import wants_fragment
from .kind_forms import grading_form_for
from .serving_forms import ReferenceConfigForm, check_session_key, reference_context, reference_path

FRAGMENT = "frontend/edit/_serving_reference.html"


def _payload(task: Task) -> dict[str, Any]:
    """The draft as a grading host sees it: its manifest and its files' texts."""
    return grading_payload(
        slug=task.slug,
        kind=task.kind,
        hardware=task.hardware,
        grading=task.grading or {},
        files=task.files.all(),
    )


def _spec(task: Task, path: str, text: str) -> ServingSpec:
    payload = _payload(task)
    files = {**payload["task_files"], path: text}
    return ServingSpec.from_manifest(payload["manifest"], files)


def _gate(task: Task, path: str, text: str) -> list[str]:
    """Every problem the platform finds with the config at once: not TOML, a flag that is
    never allowed, not on the task's list, or out of its range; or grading settings
    that do not parse yet."""
    try:
        spec = _spec(task, path, text)
        config = spec.config_of(text, file=path)
    except GradingTableError as error:
        if error.file == path:
            return [f"{error.field}: {error.message}"]
        return [f"fix the grading settings first ({error})"]
    _, errors = spec.policy.check(config)
    return [str(error) for error in errors]


def _enqueue_check(request: HttpRequest, task: Task, path: str) -> None:
    from tasks.jobs import check_engine_config_job

    payload = _payload(task)
    queue = registry.grading_queue(task.kind, task.hardware, settings.GRADING_GPU_POOLS)
    job = check_engine_config_job.apply_async(
        args=(payload["manifest"], payload["task_files"], path), queue=queue
    )
    request.session[check_session_key(task)] = job.id


def _answer(
    request: HttpRequest, task: Task, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    if wants_fragment(request):
        # htmx swaps only 2xx answers: the fragment carries its errors in a 200.
        return render(request, FRAGMENT, {"task": task, **context})
    if status == 200:
        return redirect("task-grading", task.slug)
    chosen = grading_form_for(task.kind)
    assert chosen is not None
    form_class, template = chosen
    page = editor_context(task, "grading", form=form_class.for_task(task, None), **context)
    return render(request, template, page, status=status)


@editor_view
@require_POST
def task_serving_reference(request: HttpRequest, task: Task) -> HttpResponse:
    """Save the reference config once the platform's gate passes it; then ask vLLM."""
    form = ReferenceConfigForm(request.POST)
    path = reference_path(task)
    text = form.cleaned_data["content"] if form.is_valid() else ""
    for problem in _gate(task, path, text) if form.is_valid() else []:
        form.add_error("content", problem)
    if form.errors:
        return _answer(request, task, reference_context(request, task, form), status=400)
    file = task.files.filter(path=path).first()
    try:
        task_services.task_file_save(
            task=task,
            user=acting_user(request),
            content=text,
            visibility=file.visibility if file else Visibility.HIDDEN,
            role=file.role if file else FileRole.OTHER,
            expected_verdict=file.expected_verdict if file else "",
            note=file.note if file else "",
            path=path,
            file=file,
        )
    except ValidationError as exc:
        apply_errors(form, exc, {"path": "content"})
        return _answer(request, task, reference_context(request, task, form), status=400)
    _enqueue_check(request, task, path)
    return _answer(request, task, reference_context(request, task))


@editor_view
@require_GET
def task_serving_reference_check(request: HttpRequest, task: Task) -> HttpResponse:
    """The state of vLLM's check of the saved reference: pending (the fragment polls
    again), its answer, or nothing when none was asked for in this session."""
    job_id = request.session.get(check_session_key(task))
    context: dict[str, Any] = {"task": task, "check": None, "pending": False}
    if job_id:
        result: AsyncResult[Any] = AsyncResult(job_id)
        if not result.ready():
            context["pending"] = True
        elif result.successful() and isinstance(result.result, dict):
            context["check"] = _shown(result.result)
        else:
            failure = f"the check failed on the grading host: {result.result}"
            context["check"] = {"unavailable": failure, "errors": [], "engine": []}
    return render(request, "frontend/edit/_serving_check.html", context)


def _shown(answer: dict[str, Any]) -> dict[str, Any]:
    """vLLM's answer as the page lists it: errors by flag, and the engine settings vLLM
    resolved (what the config amounts to once every default is filled in)."""
    errors = [
        f"--{str(e.get('flag') or 'config').replace('_', '-')}: {e.get('message', '')}"
        for e in answer.get("errors") or []
        if isinstance(e, dict)
    ]
    engine = answer.get("engine") or {}
    return {
        "unavailable": answer.get("unavailable"),
        "errors": errors,
        "engine": sorted(engine.items()) if isinstance(engine, dict) else [],
    }
