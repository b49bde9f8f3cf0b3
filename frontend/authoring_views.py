"""The task editor: create, describe, write files, set grading, build the rubric,
validate, send to review, import and export bundles. Views validate input with
forms and call ``tasks.services``; they never write models themselves."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from benchwright import roles
from graders.contract import GradingTableError
from rubrics.models import Criterion
from tasks import services as task_services
from tasks.bundle import MAX_FILE_BYTES, BundleError, BundleInvalid
from tasks.models import FileRole, Task, TaskFile
from tasks.selectors import can_edit_task
from tasks.validation import NothingToValidate

from . import selectors
from .access import acting_user, editor_view, insider_view, visible_task
from .authoring_forms import (
    BundleUploadForm,
    CriterionForm,
    FileForm,
    NewFileForm,
    RenameForm,
    StatementForm,
    TaskCreateForm,
    TaskMetadataForm,
    apply_errors,
)
from .editor import editor_context, file_tree
from .htmx import wants_fragment
from .kind_forms import grading_form_for, grading_form_missing
from .rendering import render_markdown
from .uploads import capped_upload, upload_refused


def _require_author(request: HttpRequest) -> None:
    if not roles.has_role(request.user, roles.AUTHOR):
        raise PermissionDenied("only authors write tasks")


# -- creating and describing -----------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def task_create(request: HttpRequest) -> HttpResponse:
    _require_author(request)
    form = TaskCreateForm(request.POST or None, initial={"kind": "kernel", "hardware": "cpu"})
    if request.method == "POST" and form.is_valid():
        try:
            task = task_services.task_create(user=acting_user(request), **form.cleaned_data)
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, f"Created {task.slug}. Write its statement and files next.")
            return redirect("task-edit", task.slug)
    return render(request, "frontend/edit/create.html", {"form": form, "section": "tasks"})


@editor_view
@require_http_methods(["GET", "POST"])
def task_edit(request: HttpRequest, task: Task) -> HttpResponse:
    """Overview: metadata, the statement with its live preview, and the bundle check."""
    initial = {f: getattr(task, f) for f in ("title", "kind", "difficulty", "hardware", "tags")}
    form = TaskMetadataForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            task_services.task_update_metadata(
                task=task, user=acting_user(request), **form.cleaned_data
            )
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, "Details saved.")
            return redirect("task-edit", task.slug)
    statement = StatementForm(initial={"statement": task.statement})
    return _overview(request, task, form, statement)


def _overview(
    request: HttpRequest, task: Task, form: TaskMetadataForm, statement: StatementForm
) -> HttpResponse:
    context = editor_context(
        task,
        "overview",
        form=form,
        statement_form=statement,
        problems=task_services.draft_problems(task),
    )
    return render(request, "frontend/edit/overview.html", context)


@editor_view
@require_POST
def task_statement(request: HttpRequest, task: Task) -> HttpResponse:
    form = StatementForm(request.POST)
    if form.is_valid():
        try:
            task_services.task_statement_update(
                task=task,
                user=acting_user(request),
                text=form.cleaned_data["statement"],
            )
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, "Statement saved.")
            return redirect("task-edit", task.slug)
    initial = {f: getattr(task, f) for f in ("title", "kind", "difficulty", "hardware", "tags")}
    return _overview(request, task, TaskMetadataForm(initial=initial), form)


@login_required
@require_POST
def markdown_preview(request: HttpRequest) -> HttpResponse:
    """The statement as solvers will see it, through the one sanitiser."""
    text = request.POST.get("statement", "")[:MAX_FILE_BYTES]
    return render(request, "frontend/edit/_preview.html", {"html": render_markdown(text)})


# -- files -----------------------------------------------------------------------------------


def _file(task: Task, pk: int) -> TaskFile:
    return get_object_or_404(TaskFile, pk=pk, task=task)


def _files_context(task: Task, **extra: Any) -> dict[str, Any]:
    return editor_context(task, "files", tree=file_tree(task.files.all()), **extra)


@editor_view
@require_GET
def task_files(request: HttpRequest, task: Task) -> HttpResponse:
    first = task.files.exclude(role=FileRole.STATEMENT).order_by("path").first()
    if first is None:
        return redirect("task-file-new", task.slug)
    return redirect("task-file-edit", task.slug, first.pk)


@capped_upload(MAX_FILE_BYTES)
@editor_view
@require_http_methods(["GET", "POST"])
def task_file_new(request: HttpRequest, task: Task) -> HttpResponse:
    initial = {"role": request.GET.get("role", "solution"), "visibility": "hidden"}
    posted = request.method == "POST"
    form = NewFileForm(
        request.POST if posted else None, request.FILES if posted else None, initial=initial
    )
    refused = upload_refused(request)
    if posted and form.is_valid() and not refused:
        try:
            data = dict(form.cleaned_data)
            upload = data.pop("upload", None)
            if upload is not None:
                data["content"] = task_services.task_file_from_upload(
                    upload.read(MAX_FILE_BYTES + 1), name=data.get("path") or upload.name
                )
            file = task_services.task_file_save(task=task, user=acting_user(request), **data)
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, f"Added {file.path}.")
            return redirect("task-file-edit", task.slug, file.pk)
    if refused:
        form.errors.pop("upload", None)
        form.add_error("upload", f"The file is larger than {refused} bytes.")
    return render(request, "frontend/edit/file_new.html", _files_context(task, form=form))


@editor_view
@require_http_methods(["GET", "POST"])
def task_file_edit(request: HttpRequest, task: Task, pk: int) -> HttpResponse:
    file = _file(task, pk)
    statement = file.role == FileRole.STATEMENT
    initial = {
        "role": file.role,
        "visibility": file.visibility,
        "expected_verdict": file.expected_verdict,
        "note": file.note,
        "content": file.content,
    }
    form = FileForm(request.POST or None, initial=initial, statement=statement)
    if request.method == "POST" and form.is_valid():
        try:
            task_services.task_file_save(
                task=task, user=acting_user(request), file=file, **form.cleaned_data
            )
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, f"Saved {file.path}.")
            return redirect("task-file-edit", task.slug, file.pk)
    context = _files_context(
        task, form=form, file=file, rename_form=RenameForm(initial={"path": file.path})
    )
    return render(request, "frontend/edit/file_edit.html", context)


@editor_view
@require_POST
def task_file_rename(request: HttpRequest, task: Task, pk: int) -> HttpResponse:
    file = _file(task, pk)
    form = RenameForm(request.POST)
    if form.is_valid():
        old = file.path
        try:
            task_services.task_file_rename(
                file=file, user=acting_user(request), new_path=form.cleaned_data["path"]
            )
        except ValidationError as exc:
            apply_errors(form, exc)
        else:
            messages.success(request, f"Renamed {old} to {file.path}.")
            return redirect("task-file-edit", task.slug, file.pk)
    file.refresh_from_db()
    edit_form = FileForm(
        initial={"role": file.role, "visibility": file.visibility, "content": file.content},
        statement=file.role == FileRole.STATEMENT,
    )
    context = _files_context(task, form=edit_form, file=file, rename_form=form)
    return render(request, "frontend/edit/file_edit.html", context, status=400)


@editor_view
@require_POST
def task_file_delete(request: HttpRequest, task: Task, pk: int) -> HttpResponse:
    file = _file(task, pk)
    try:
        task_services.task_file_delete(file=file, user=acting_user(request))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("task-file-edit", task.slug, file.pk)
    messages.success(request, f"Deleted {file.path}.")
    return redirect("task-files", task.slug)


# -- grading ---------------------------------------------------------------------------------


@editor_view
@require_http_methods(["GET", "POST"])
def task_grading(request: HttpRequest, task: Task) -> HttpResponse:
    chosen = grading_form_for(task.kind)
    if chosen is None:
        missing = grading_form_missing(task.kind)
        context = editor_context(task, "grading", form=None, missing=missing)
        return render(request, "frontend/edit/grading.html", context)
    form_class, template = chosen
    form = form_class.for_task(task, request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            task_services.task_grading_update(
                task=task,
                user=acting_user(request),
                grading=form.grading(task.grading or {}),
            )
        except GradingTableError as exc:
            form.add_table_error(exc)
        else:
            messages.success(request, "Grading settings saved.")
            return redirect("task-grading", task.slug)
    status = 400 if form.errors else 200
    context = editor_context(task, "grading", form=form, **form.page_context(request, task))
    return render(request, template, context, status=status)


# -- rubric ----------------------------------------------------------------------------------


def _criteria(task: Task) -> list[Criterion]:
    return list(Criterion.objects.filter(rubric__task=task).order_by("position", "pk"))


def _rubric_context(task: Task, **extra: Any) -> dict[str, Any]:
    criteria = _criteria(task)
    return editor_context(
        task,
        "rubric",
        criteria=criteria,
        positive=sum(c.points for c in criteria if c.points > 0),
        penalties=sum(c.points for c in criteria if c.points < 0),
        **extra,
    )


@editor_view
@require_http_methods(["GET", "POST"])
def task_rubric(request: HttpRequest, task: Task) -> HttpResponse:
    form = CriterionForm(request.POST or None, kind=task.kind)
    if request.method == "POST" and form.is_valid():
        try:
            task_services.rubric_criterion_add(
                task=task, user=acting_user(request), **form.service_values()
            )
        except ValidationError as exc:
            apply_errors(form, exc, CriterionForm.ERROR_ALIASES)
        else:
            messages.success(request, f"Added criterion {form.cleaned_data['key']}.")
            return redirect("task-rubric", task.slug)
    context = _rubric_context(task, form=form, editing=None)
    return render(request, "frontend/edit/rubric.html", context, status=400 if form.errors else 200)


def _criterion(task: Task, pk: int) -> Criterion:
    return get_object_or_404(Criterion, pk=pk, rubric__task=task)


@editor_view
@require_http_methods(["GET", "POST"])
def task_criterion_edit(request: HttpRequest, task: Task, pk: int) -> HttpResponse:
    criterion = _criterion(task, pk)
    form = CriterionForm(
        request.POST or None, initial=CriterionForm.initial_from(criterion), kind=task.kind
    )
    if request.method == "POST" and form.is_valid():
        try:
            task_services.rubric_criterion_update(
                criterion=criterion,
                user=acting_user(request),
                **form.service_values(),
            )
        except ValidationError as exc:
            apply_errors(form, exc, CriterionForm.ERROR_ALIASES)
        else:
            messages.success(request, f"Saved criterion {criterion.key}.")
            return redirect("task-rubric", task.slug)
    context = _rubric_context(task, form=form, editing=criterion)
    return render(request, "frontend/edit/rubric.html", context, status=400 if form.errors else 200)


def _rubric_response(request: HttpRequest, task: Task) -> HttpResponse:
    if wants_fragment(request):
        context = _rubric_context(task)
        return render(request, "frontend/edit/_criteria.html", context)
    return redirect("task-rubric", task.slug)


@editor_view
@require_POST
def task_criterion_delete(request: HttpRequest, task: Task, pk: int) -> HttpResponse:
    task_services.rubric_criterion_delete(criterion=_criterion(task, pk), user=acting_user(request))
    return _rubric_response(request, task)


@editor_view
@require_POST
def task_criterion_move(request: HttpRequest, task: Task, pk: int) -> HttpResponse:
    offset = -1 if request.POST.get("direction") == "up" else 1
    task_services.rubric_criterion_move(
        criterion=_criterion(task, pk), user=acting_user(request), offset=offset
    )
    return _rubric_response(request, task)


# -- validation and review -------------------------------------------------------------------


def run_context(task: Task, run: Any) -> dict[str, Any]:
    """A validation run's table, chart data and whether the draft moved on since."""
    rows = [selectors.validation_row(r) for r in run.results.all()] if run else []
    return {
        "run": run,
        "rows": rows,
        "debugging": task.kind == "debugging",
        "chart_id": f"validation-chart-{run.pk}" if run else "",
        "chart": selectors.validation_chart(rows) if run and run.status != "running" else None,
        "stale": run is not None and run.content_hash != task_services.task_draft_hash(task),
    }


@insider_view
@require_GET
def task_validation(request: HttpRequest, task: Task) -> HttpResponse:
    run = selectors.latest_validation(task)
    context = editor_context(
        task,
        "validation",
        editable=can_edit_task(request.user, task),
        earlier=task.validation_runs.order_by("-created_at", "-pk")[1:11],
        **run_context(task, run),
    )
    return render(request, "frontend/edit/validation.html", context)


@insider_view
@require_GET
def task_validation_run(request: HttpRequest, task: Task, run_id: int) -> HttpResponse:
    """The run's table alone: polled every second while the run is going."""
    run = get_object_or_404(task.validation_runs, pk=run_id)
    context = {
        "task": task,
        "readiness": selectors.review_readiness(task),
        "editable": can_edit_task(request.user, task),
        "oob": True,
        **run_context(task, run),
    }
    return render(request, "frontend/edit/_validation_run.html", context)


@editor_view
@require_POST
def task_validate(request: HttpRequest, task: Task) -> HttpResponse:
    try:
        task_services.task_validate(task=task, user=acting_user(request))
    except task_services.DraftInvalid as exc:
        messages.error(request, f"Fix the bundle check's problems first: {exc.errors[0]}")
    except NothingToValidate:
        messages.error(request, "Add a file with role solution: validation grades it.")
    return redirect("task-validation", task.slug)


@editor_view
@require_POST
def task_submit(request: HttpRequest, task: Task) -> HttpResponse:
    try:
        task_services.task_submit_for_review(task=task, user=acting_user(request))
    except task_services.NotValidated:
        messages.error(request, selectors.review_readiness(task).reason)
        return redirect("task-validation", task.slug)
    messages.success(request, "Sent to review. A reviewer will approve it or ask for changes.")
    return redirect("task-detail", task.slug)


@login_required
@require_POST
def task_revise(request: HttpRequest, slug: str) -> HttpResponse:
    task = visible_task(request, slug)
    if task.owner_id != request.user.pk and not roles.is_admin(request.user):
        raise Http404("not the author")
    try:
        task_services.task_revise(task=task, user=acting_user(request))
    except task_services.PermissionDenied as exc:
        raise PermissionDenied(str(exc)) from exc
    messages.success(request, "The task is a draft again; its published versions stay as they are.")
    return redirect("task-edit", task.slug)


# -- bundles ---------------------------------------------------------------------------------


@insider_view
@require_GET
def task_bundle(request: HttpRequest, task: Task) -> HttpResponse:
    """The draft (or ``?version=N``) as a bundle zip: hidden files included, so only
    for those who may see them."""
    number = request.GET.get("version", "")
    version = None
    if number:
        if not number.isdigit():
            raise Http404("no such version")
        version = get_object_or_404(task.versions, number=int(number))
    data = task_services.bundle_zip_build(task=None if version else task, version=version)
    name = f"{task.slug}-v{version.number}" if version else f"{task.slug}-draft"
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{name}.zip"'
    return response


@capped_upload(task_services.MAX_ZIP_BYTES)
@login_required
@require_http_methods(["GET", "POST"])
def task_import(request: HttpRequest) -> HttpResponse:
    _require_author(request)
    # Bound on every POST: a refused upload leaves POST and FILES empty.
    posted = request.method == "POST"
    form = BundleUploadForm(request.POST if posted else None, request.FILES if posted else None)
    errors: list[BundleError] = []
    refused = upload_refused(request)
    if posted and form.is_valid() and not refused:
        upload = form.cleaned_data["bundle"]
        data = upload.read(task_services.MAX_ZIP_BYTES + 1)
        try:
            result = task_services.bundle_zip_import(
                data=data, filename=upload.name, user=acting_user(request)
            )
        except BundleInvalid as exc:
            errors = exc.errors
        except task_services.PermissionDenied as exc:
            form.add_error("bundle", str(exc))
        else:
            messages.success(request, f"Imported {result.task.slug}: {result.summary}.")
            return redirect(reverse("task-edit", args=[result.task.slug]))
    if refused:
        form.errors.pop("bundle", None)  # not "required": it was sent, and refused
        form.add_error("bundle", f"The upload is larger than {refused} bytes.")
    status = 400 if errors or form.errors else 200
    context = {"form": form, "errors": errors, "section": "tasks"}
    return render(request, "frontend/edit/import.html", context, status=status)
