"""The Django admin works for every model: each changelist, add form and change form renders."""

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

from submissions.models import GradingRun
from tests import factories

pytestmark = pytest.mark.django_db

PROJECT_APPS = {"tasks", "rubrics", "submissions", "reviews", "exports", "accounts", "webhooks"}


def test_every_project_model_is_registered_in_the_admin():
    models = [m for m in apps.get_models() if m._meta.app_label in PROJECT_APPS]
    missing = [m.__name__ for m in models if not admin.site.is_registered(m)]
    assert models
    assert missing == []


def test_every_plural_is_english(client, admin_user):
    plurals = {
        str(m._meta.verbose_name_plural)
        for m in apps.get_models()
        if m._meta.app_label in PROJECT_APPS
    }
    assert "criteria" in plurals and "webhook deliveries" in plurals
    # Django's default adds an "s": "criterions", "webhook deliverys".
    assert not {plural for plural in plurals if plural.endswith(("rions", "ys"))}


def test_every_admin_page_renders(client, admin_user):
    admin_user.is_superuser = True
    admin_user.save()
    submission = factories.make_submission()
    GradingRun.objects.create(submission=submission, attempt=1, verdict="accepted")
    client.force_login(admin_user)

    for model, _ in admin.site._registry.items():
        if model._meta.app_label not in PROJECT_APPS:
            continue
        info = (model._meta.app_label, model._meta.model_name)
        changelist = client.get(reverse("admin:{}_{}_changelist".format(*info)))
        assert changelist.status_code == 200, info
        obj = model.objects.first()
        if obj is not None:
            change = client.get(reverse("admin:{}_{}_change".format(*info), args=[obj.pk]))
            assert change.status_code == 200, info
        add = client.get(reverse("admin:{}_{}_add".format(*info)))
        assert add.status_code in (200, 403), info


def test_frozen_versions_cannot_be_edited_in_the_admin(client, admin_user):
    admin_user.is_superuser = True
    admin_user.save()
    task = factories.make_published_task()
    client.force_login(admin_user)

    response = client.post(
        reverse("admin:tasks_taskversion_change", args=[task.current_version.pk]),
        {"title": "changed"},
    )

    task.current_version.refresh_from_db()
    assert response.status_code == 403
    assert task.current_version.title != "changed"
