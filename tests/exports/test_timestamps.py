"""``submitted_at`` is made by the database as RFC 3339 text in UTC, exactly as
Python's ``isoformat`` writes the same instant (with a ``Z``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import NotSupportedError, connection
from django.db.models import DateTimeField, Value
from django.db.utils import ConnectionHandler

from exports.source import IsoUtc
from submissions.models import Submission
from tests import factories

INSTANTS = [
    datetime(2026, 11, 29, 19, 30, 0, tzinfo=UTC),
    datetime(2026, 11, 29, 19, 30, 0, 500000, tzinfo=UTC),
    datetime(2026, 11, 29, 19, 30, 0, 7, tzinfo=UTC),
    # Another zone: the text is of the same instant in UTC, on the day before.
    datetime(2026, 3, 1, 1, 2, 3, 40, tzinfo=timezone(timedelta(hours=5))),
]


def python_text(instant: datetime) -> str:
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


@pytest.mark.django_db
def test_postgresql_writes_each_instant_as_python_does():
    assert connection.vendor == "postgresql"
    made = []
    for instant in INSTANTS:
        submission = factories.make_submission()
        Submission.objects.filter(pk=submission.pk).update(created_at=instant)
        made.append(submission.pk)

    texts = dict(
        Submission.objects.filter(pk__in=made)
        .annotate(text=IsoUtc("created_at"))
        .values_list("pk", "text")
    )

    assert [texts[pk] for pk in made] == [python_text(i) for i in INSTANTS]
    assert texts[made[3]] == "2026-02-28T20:02:03.000040Z"


def test_sqlite_writes_each_instant_as_python_does(django_db_blocker):
    """On an in-memory SQLite database, each value stored as Django stores it."""
    handler = ConnectionHandler(
        {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
    )
    sqlite = handler["default"]
    with django_db_blocker.unblock():
        for instant in INSTANTS:
            expression = IsoUtc(Value(instant, output_field=DateTimeField()))
            compiler = Submission.objects.none().query.get_compiler(connection=sqlite)
            sql, params = expression.as_sqlite(compiler, sqlite)
            with sqlite.cursor() as cursor:
                cursor.execute(f"SELECT {sql}", params)
                assert cursor.fetchone()[0] == python_text(instant)
        sqlite.close()


def test_another_database_is_told_it_is_not_supported():
    expression = IsoUtc(Value(INSTANTS[0], output_field=DateTimeField()))

    class Other:
        vendor = "oracle"

    with pytest.raises(NotSupportedError, match="oracle"):
        expression.as_sql(None, Other())
