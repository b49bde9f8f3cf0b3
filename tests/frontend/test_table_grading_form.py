"""A profiling draft's grading settings in the editor: the whole [grading] table as
TOML, checked by the kind as it is saved, the error naming the setting at fault."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import tomli_w
from django.test import Client

from benchwright import roles
from tasks import services as task_services
from tasks.bundle import load_bundle
from tasks.models import Task
from tests import factories

BUNDLE = Path(__file__).resolve().parents[2] / "reference_solutions" / "prof-host-sync"
URL = "/tasks/prof-host-sync/edit/grading/"


@pytest.fixture
def editor(db) -> Client:
    author = factories.make_user(roles.AUTHOR, username="tracy")
    task_services.bundle_import(bundle=load_bundle(BUNDLE), user=author, publish=False)
    client = Client()
    client.force_login(author)
    return client


def _table(client: Client) -> str:
    page = client.get(URL)
    assert page.status_code == 200
    return page.context["form"].initial["table"]


def test_the_table_round_trips_through_the_editor(editor):
    text = _table(editor)
    assert tomllib.loads(text) == Task.objects.get(slug="prof-host-sync").grading
    table = tomllib.loads(text)
    table["fields"]["bottleneck"]["points"] = 4
    response = editor.post(URL, {"table": tomli_w.dumps(table)})
    assert response.status_code == 302, response.content.decode()[:2000]
    saved = Task.objects.get(slug="prof-host-sync").grading
    assert saved["fields"]["bottleneck"]["points"] == 4


def test_a_bad_setting_is_refused_and_named(editor):
    table = tomllib.loads(_table(editor))
    table["fields"]["bottleneck"]["abs_tol"] = 1.0
    response = editor.post(URL, {"table": tomli_w.dumps(table)})
    assert response.status_code == 400
    errors = response.context["form"].errors["table"]
    assert errors == [
        "grading.fields.bottleneck.abs_tol: not a setting of a category field; known: type, points"
    ]
    assert Task.objects.get(slug="prof-host-sync").grading["fields"]["bottleneck"] == {
        "type": "category",
        "points": 3,
    }


def test_text_that_is_not_toml_is_refused(editor):
    response = editor.post(URL, {"table": 'form = "answer"\ntraces = ['})
    assert response.status_code == 400
    assert response.context["form"].errors["table"][0].startswith("not valid TOML")
