from django.contrib.auth import views as auth_views
from django.urls import path

from . import authoring_views as edit
from . import review_views as review
from . import serving_views, timeline_views, views

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="frontend/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    # Django's LogoutView accepts POST only, so a link or an image cannot log anyone out.
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.task_list, name="home"),
    path("dashboard/", views.dashboard, name="dashboard"),
    path("preview/markdown/", edit.markdown_preview, name="markdown-preview"),
    path("tasks/", views.task_list, name="task-list"),
    path("submissions/", views.submission_list, name="submission-list"),
    path("submissions/<int:pk>/", views.submission_detail, name="submission-detail"),
    # Outside tasks/<slug>/: any word there could be a task's slug.
    path("new-task/", edit.task_create, name="task-create"),
    path("import-bundle/", edit.task_import, name="task-import"),
    path("tasks/<slug:slug>/", views.task_detail, name="task-detail"),
    path("tasks/<slug:slug>/history/", views.task_history, name="task-history"),
    path("tasks/<slug:slug>/timeline/", timeline_views.task_timeline, name="task-timeline"),
    path("tasks/<slug:slug>/bundle.zip", edit.task_bundle, name="task-bundle"),
    # The editor: the author's draft.
    path("tasks/<slug:slug>/edit/", edit.task_edit, name="task-edit"),
    path("tasks/<slug:slug>/edit/statement/", edit.task_statement, name="task-statement"),
    path("tasks/<slug:slug>/edit/files/", edit.task_files, name="task-files"),
    path("tasks/<slug:slug>/edit/files/new/", edit.task_file_new, name="task-file-new"),
    path("tasks/<slug:slug>/edit/files/<int:pk>/", edit.task_file_edit, name="task-file-edit"),
    path(
        "tasks/<slug:slug>/edit/files/<int:pk>/rename/",
        edit.task_file_rename,
        name="task-file-rename",
    ),
    path(
        "tasks/<slug:slug>/edit/files/<int:pk>/delete/",
        edit.task_file_delete,
        name="task-file-delete",
    ),
    path("tasks/<slug:slug>/edit/grading/", edit.task_grading, name="task-grading"),
    path(
        "tasks/<slug:slug>/edit/grading/reference/",
        serving_views.task_serving_reference,
        name="task-serving-reference",
    ),
    path(
        "tasks/<slug:slug>/edit/grading/reference/check/",
        serving_views.task_serving_reference_check,
        name="task-serving-reference-check",
    ),
    path("tasks/<slug:slug>/edit/rubric/", edit.task_rubric, name="task-rubric"),
    path(
        "tasks/<slug:slug>/edit/rubric/<int:pk>/",
        edit.task_criterion_edit,
        name="task-criterion-edit",
    ),
    path(
        "tasks/<slug:slug>/edit/rubric/<int:pk>/delete/",
        edit.task_criterion_delete,
        name="task-criterion-delete",
    ),
    path(
        "tasks/<slug:slug>/edit/rubric/<int:pk>/move/",
        edit.task_criterion_move,
        name="task-criterion-move",
    ),
    path("tasks/<slug:slug>/validation/", edit.task_validation, name="task-validation"),
    path(
        "tasks/<slug:slug>/validation/<int:run_id>/",
        edit.task_validation_run,
        name="task-validation-run",
    ),
    path("tasks/<slug:slug>/validate/", edit.task_validate, name="task-validate"),
    path("tasks/<slug:slug>/submit/", edit.task_submit, name="task-submit"),
    path("tasks/<slug:slug>/revise/", edit.task_revise, name="task-revise"),
    # Task review.
    path("tasks/<slug:slug>/review/", review.task_review, name="task-review"),
    path(
        "tasks/<slug:slug>/review/comment-form/",
        review.review_comment_form,
        name="review-comment-form",
    ),
    path(
        "tasks/<slug:slug>/review/comments/", review.review_comment_add, name="review-comment-add"
    ),
    path(
        "tasks/<slug:slug>/review/comments/<int:pk>/delete/",
        review.review_comment_delete,
        name="review-comment-delete",
    ),
    path("tasks/<slug:slug>/review/decide/", review.review_decide, name="review-decide"),
]
