"""What the New task page says about who sees a draft is what the access rule does."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from benchwright import roles
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_new_task_page_and_the_access_rule_agree() -> None:
    author = factories.make_user(roles.AUTHOR, username="ada")
    client = Client()
    client.force_login(author)
    text = client.get(reverse("task-create")).content.decode()
    assert "you, reviewers and admins can see it" in text

    draft = factories.make_task(author, slug="private-draft")
    for role, status in ((roles.REVIEWER, 200), (roles.ADMIN, 200), (roles.AUTHOR, 404),
                         (roles.API_CLIENT, 404)):  # fmt: skip
        viewer = Client()
        viewer.force_login(factories.make_user(role))
        assert viewer.get(reverse("task-detail", args=[draft.slug])).status_code == status


def test_a_clients_dashboard_is_their_submissions_not_the_catalog_health() -> None:
    client = Client()
    client.force_login(factories.make_user(roles.API_CLIENT))
    response = client.get(reverse("dashboard"))
    assert response.status_code == 302 and response.headers["Location"] == reverse(
        "submission-list"
    )
    author = Client()
    author.force_login(factories.make_user(roles.AUTHOR))
    assert "Catalog health" in author.get(reverse("dashboard")).content.decode()
