"""The API's models in the Django admin: every page renders, no secret is shown."""

import pytest
from django.contrib import admin
from django.urls import reverse

from accounts.models import ApiToken
from tests.api.conftest import token_for
from webhooks import services

pytestmark = pytest.mark.django_db


def test_every_api_admin_page_renders_without_secrets(client, admin, owner):
    admin.is_superuser = True
    admin.save()
    token = token_for(owner)
    _, secret = services.endpoint_create(
        user=owner, url="http://127.0.0.1:9/h", events=["submission.graded"]
    )
    client.force_login(admin)
    models = [m for m in admin_site_models() if m._meta.app_label in {"accounts", "webhooks"}]
    assert {m.__name__ for m in models} >= {"ApiToken", "IdempotencyRecord", "WebhookEndpoint"}

    for model in models:
        info = (model._meta.app_label, model._meta.model_name)
        pages = [
            reverse("admin:{}_{}_changelist".format(*info)),
            reverse("admin:{}_{}_add".format(*info)),
        ]
        obj = model.objects.first()
        if obj is not None:
            pages.append(reverse("admin:{}_{}_change".format(*info), args=[obj.pk]))
        for page in pages:
            response = client.get(page)
            assert response.status_code == 200, page
            assert secret not in response.content.decode()
            assert token not in response.content.decode()
    assert ApiToken.objects.filter(user=owner).exists()


def admin_site_models():
    return list(admin.site._registry)
