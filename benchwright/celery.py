"""The Celery app. Celery's tasks are called *jobs* here; each app keeps them in jobs.py."""

import os

from celery import Celery, Task

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchwright.settings")

app = Celery("benchwright")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(related_name="jobs")


def redelivered(task: Task) -> bool:
    """Whether the broker handed this job's message out before, to a worker that never
    acknowledged it (it died, or was killed, mid-job)."""
    info = getattr(task.request, "delivery_info", None) or {}
    return bool(info.get("redelivered"))
