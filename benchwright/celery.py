"""The Celery app. Celery's tasks are called *jobs* here; each app keeps them in jobs.py."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchwright.settings")

app = Celery("benchwright")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(related_name="jobs")
