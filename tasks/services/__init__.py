"""Every write to tasks, by concern: manifests and content hashes (``manifests``), versions and
status changes (``lifecycle``), bundles as files (``bundles``) and zips (``zips``),
authoring a draft in the browser (``drafts``, ``files``, ``grading``, ``rubric``),
checking and validating it (``checks``) and reviewing it (``review``). Callers use
the names below: ``from tasks import services``."""

from .bundles import (
    ExportError,
    ExportResult,
    ImportResult,
    bundle_export,
    bundle_import,
    bundle_import_problems,
    bundle_render,
)
from .checks import DraftInvalid, draft_problems, task_validate
from .drafts import (
    METADATA_FIELDS,
    STATEMENT_PATH,
    task_create,
    task_statement_update,
    task_update_metadata,
)
from .files import task_file_delete, task_file_from_upload, task_file_rename, task_file_save
from .grading import grading_check, task_grading_update
from .lifecycle import (
    NotValidated,
    PermissionDenied,
    task_publish,
    task_request_changes,
    task_retire,
    task_revise,
    task_submit_for_review,
    version_freeze,
)
from .manifests import (
    content_hash,
    draft_manifest,
    draft_manifest_text,
    task_draft_hash,
    version_manifest,
    version_manifest_text,
)
from .review import (
    reviewer_may_decide,
    task_review_comment_add,
    task_review_comment_delete,
    task_review_decide,
)
from .rubric import (
    rubric_criterion_add,
    rubric_criterion_delete,
    rubric_criterion_move,
    rubric_criterion_update,
)
from .zips import MAX_ZIP_BYTES, ZIP_NOISE, bundle_zip_build, bundle_zip_import, bundle_zip_read

__all__ = [
    "MAX_ZIP_BYTES",
    "METADATA_FIELDS",
    "STATEMENT_PATH",
    "ZIP_NOISE",
    "DraftInvalid",
    "ExportError",
    "ExportResult",
    "ImportResult",
    "NotValidated",
    "PermissionDenied",
    "bundle_export",
    "bundle_import",
    "bundle_import_problems",
    "bundle_render",
    "bundle_zip_build",
    "bundle_zip_import",
    "bundle_zip_read",
    "content_hash",
    "draft_manifest",
    "draft_manifest_text",
    "draft_problems",
    "grading_check",
    "reviewer_may_decide",
    "rubric_criterion_add",
    "rubric_criterion_delete",
    "rubric_criterion_move",
    "rubric_criterion_update",
    "task_create",
    "task_draft_hash",
    "task_file_delete",
    "task_file_from_upload",
    "task_file_rename",
    "task_file_save",
    "task_grading_update",
    "task_publish",
    "task_request_changes",
    "task_retire",
    "task_review_comment_add",
    "task_review_comment_delete",
    "task_review_decide",
    "task_revise",
    "task_statement_update",
    "task_submit_for_review",
    "task_update_metadata",
    "task_validate",
    "version_freeze",
    "version_manifest",
    "version_manifest_text",
]
