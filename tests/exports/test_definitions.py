"""Definitions are named and versioned: an edit freezes a new version, snapshots keep
the version they were built from, and the content is validated field by field."""

from __future__ import annotations

import pytest

from exports import services
from exports.models import DefinitionVersion, FrozenVersionError
from exports.spec import DEFAULT_OPTIONS, Spec, SpecError
from tests.exports.conftest import build, current, define, exporter

pytestmark = pytest.mark.django_db

CONTENT = {"title": "Kernels", "format": "sft"}


def test_a_new_definition_starts_at_version_one_with_canonical_content():
    owner = exporter("owner")
    definition = define(
        owner,
        slug="kernels",
        filters={"tags": ["b", "a", "a"], "kinds": ["kernel"], "score_min": 0.5},
    )

    version = current(definition)
    assert version.number == 1
    assert version.filters == {"kinds": ["kernel"], "tags": ["a", "b"], "score_min": 0.5}
    assert version.split == {"train": 0.6, "validation": 0.2, "test": 0.2}
    assert version.options == DEFAULT_OPTIONS
    assert version.created_by == owner


def test_editing_freezes_a_new_version_and_old_snapshots_keep_theirs(world):
    definition = define(world.owner, slug="evolving")
    first = build(definition, world.owner)

    second_version = services.definition_update(
        definition_id=definition.pk,
        user=world.owner,
        data={"title": "Evolving", "format": "sft", "filters": {"difficulties": ["hard"]}},
    )
    second = build(definition, world.owner)

    first.refresh_from_db()
    assert second_version.number == 2
    assert first.version.number == 1 and second.version.number == 2
    assert first.manifest["definition"]["version"] == 1
    assert second.manifest["definition"]["filters"] == {"difficulties": ["hard"]}
    assert sum(second.manifest["rows"].values()) < sum(first.manifest["rows"].values())
    assert definition.versions.count() == 2


def test_saving_the_same_content_makes_no_new_version_and_going_back_reuses_one():
    owner = exporter("owner")
    definition = define(owner, slug="steady", **CONTENT)
    content = services.version_content(current(definition))

    again = services.definition_update(definition_id=definition.pk, user=owner, data=content)
    changed = services.definition_update(
        definition_id=definition.pk, user=owner, data=content | {"seed": 99}
    )
    back = services.definition_update(definition_id=definition.pk, user=owner, data=content)

    assert again.number == 1 and changed.number == 2 and back.number == 1
    assert current(definition).number == 1
    assert definition.versions.count() == 2


def test_a_frozen_version_cannot_change():
    definition = define(exporter("owner"), slug="frozen")
    version = current(definition)

    version.title = "changed"
    with pytest.raises(FrozenVersionError):
        version.save()
    with pytest.raises(FrozenVersionError):
        DefinitionVersion.objects.filter(pk=version.pk).update(title="changed")


def test_only_the_owner_or_an_admin_edits_a_definition(admin_user):
    owner, colleague = exporter("owner"), exporter("colleague")
    definition = define(owner, slug="mine")

    with pytest.raises(services.NotAllowed):
        services.definition_update(definition_id=definition.pk, user=colleague, data=CONTENT)
    version = services.definition_update(
        definition_id=definition.pk, user=admin_user, data=CONTENT | {"seed": 3}
    )
    assert version.number == 2


def test_only_exporters_define_exports(outsider):
    with pytest.raises(services.NotAllowed):
        define(outsider, slug="nope")


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"format": "sft"}, "title"),
        ({"title": "x", "format": "csv"}, "format"),
        ({"title": "x", "format": "sft", "split": {"train": 0.5, "test": 0.2}}, "split"),
        ({"title": "x", "format": "sft", "split": {"train": 1, "dev": 0}}, "split"),
        ({"title": "x", "format": "sft", "seed": -1}, "seed"),
        ({"title": "x", "format": "sft", "seed": True}, "seed"),
        ({"title": "x", "format": "sft", "filters": {"kinds": ["gpu"]}}, "filters.kinds"),
        ({"title": "x", "format": "sft", "filters": {"colour": ["red"]}}, "filters"),
        ({"title": "x", "format": "sft", "filters": {"score_min": 2}}, "filters.score_min"),
        (
            {"title": "x", "format": "sft", "filters": {"score_min": 0.8, "score_max": 0.2}},
            "filters.score_max",
        ),
        (
            {
                "title": "x",
                "format": "sft",
                "filters": {"created_after": "2026-02-01", "created_before": "2026-01-01"},
            },
            "filters.created_before",
        ),
        (
            {"title": "x", "format": "sft", "filters": {"task_versions": ["1"]}},
            "filters.task_versions",
        ),
        ({"title": "x", "format": "sft", "options": {"margin": 3}}, "options.margin"),
        ({"title": "x", "format": "sft", "options": {"colour": 1}}, "options"),
        ({"title": "x", "format": "sft", "include_submitter": "yes"}, "include_submitter"),
    ],
)
def test_invalid_content_is_refused_under_the_field_it_concerns(data, field):
    with pytest.raises(SpecError) as raised:
        Spec.parse(data)
    assert field in raised.value.errors, raised.value.errors


def test_a_taken_or_malformed_name_is_refused():
    owner = exporter("owner")
    define(owner, slug="taken")

    for slug in ("taken", "Bad Name", "new", ""):
        with pytest.raises(SpecError) as raised:
            services.definition_create(owner=owner, slug=slug, data=CONTENT)
        assert "slug" in raised.value.errors


def test_the_content_hash_ignores_order_and_duplicates():
    a = Spec.parse(CONTENT | {"filters": {"tags": ["x", "y"], "models": ["m2", "m1"]}})
    b = Spec.parse(CONTENT | {"filters": {"models": ["m1", "m2", "m1"], "tags": ["y", "x"]}})
    c = Spec.parse(CONTENT | {"filters": {"tags": ["x"]}})

    assert a.content_hash == b.content_hash != c.content_hash
