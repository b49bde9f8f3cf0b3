"""Error pages: styled, and they never show a traceback, settings or the URL list.

Tests run with ``DEBUG`` off, as ``make run`` serves (``scripts/run.sh``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import path

from benchwright.urls import urlpatterns as project_urls

ROOT = Path(__file__).resolve().parents[2]


def _explode(request):
    raise RuntimeError("secret local detail")


urlpatterns = [path("explode/", _explode), *project_urls]


def test_make_run_serves_with_debug_off_on_a_configurable_port() -> None:
    script = (ROOT / "scripts" / "run.sh").read_text()
    assert 'export DJANGO_DEBUG="${DJANGO_DEBUG:-0}"' in script
    assert 'PORT="${BENCHWRIGHT_PORT:-8000}"' in script
    assert '--bind "$HOST:$PORT"' in script
    assert "BENCHWRIGHT_PORT" in (ROOT / "README.md").read_text()


@pytest.mark.django_db
def test_404_is_styled_and_lists_no_urls(client: Client, settings) -> None:
    assert settings.DEBUG is False
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "Not found" in body and "app.css" in body
    assert "urlpatterns" not in body and "admin/" not in body


@pytest.mark.django_db
def test_403_is_styled(author, client: Client) -> None:
    client.force_login(author)
    response = client.get("/review/")
    assert response.status_code == 403
    body = response.content.decode()
    assert "Not allowed" in body and "app.css" in body


@pytest.mark.django_db
def test_500_is_styled_and_shows_nothing_of_the_server(author, settings) -> None:
    settings.ROOT_URLCONF = __name__
    client = Client(raise_request_exception=False)
    client.force_login(author)
    response = client.get("/explode/")
    assert response.status_code == 500
    body = response.content.decode()
    assert "Something went wrong" in body and "app.css" in body
    assert "secret local detail" not in body and "Traceback" not in body
    assert "SECRET_KEY" not in body and str(ROOT) not in body
