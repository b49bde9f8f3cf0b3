"""The definition body that docs/api.md shows is one the API accepts as it is."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rest_framework.test import APIClient

from tests.exports.conftest import exporter

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def documented_definition() -> dict:
    text = API_DOC.read_text(encoding="utf-8")
    after = text.split("A definition body", 1)[1]
    block = re.search(r"```json\n(.*?)```", after, re.S)
    assert block is not None, "docs/api.md shows a definition body"
    return json.loads(block.group(1))


def test_the_documented_definition_body_creates_a_definition(db):
    body = documented_definition()
    client = APIClient()
    client.force_authenticate(exporter("doc-reader"))

    response = client.post("/api/v1/exports/definitions/", body, format="json")

    assert response.status_code == 201, response.json()
    created = response.json()
    assert created["slug"] == body["slug"]
    snapshots = client.post(f"/api/v1/exports/definitions/{body['slug']}/snapshots/")
    assert snapshots.status_code == 202, snapshots.json()
