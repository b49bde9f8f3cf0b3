"""The test suite's parallel processes each get their own Redis databases and var
folder (benchwright/settings.py), and nothing else ever does."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SHOW = (
    "import json, os; from benchwright import settings as s; "
    "print(json.dumps([s.CELERY_BROKER_URL, s.CELERY_RESULT_BACKEND, str(s.VAR_DIR), "
    "os.environ['CELERY_BROKER_URL']]))"
)


def settings_with(**variables: str) -> list[str]:
    gone = {"PYTEST_XDIST_WORKER", "BENCHWRIGHT_TEST_REDIS_FOR"}
    env = {k: v for k, v in os.environ.items() if k not in gone}
    env.pop("BENCHWRIGHT_VAR_DIR", None)
    env.update(
        CELERY_BROKER_URL="redis://127.0.0.1:6379/14",
        CELERY_RESULT_BACKEND="redis://127.0.0.1:6379/14",
        DJANGO_SECRET_KEY="x" * 50,
        DJANGO_ALLOWED_HOSTS="example.org",
    )
    env.update(variables)
    shown = subprocess.run(
        [sys.executable, "-c", SHOW], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def test_each_test_process_moves_down_two_redis_databases_and_has_its_own_var_folder():
    first = settings_with(BENCHWRIGHT_ENV="test", PYTEST_XDIST_WORKER="gw0")
    second = settings_with(BENCHWRIGHT_ENV="test", PYTEST_XDIST_WORKER="gw1")
    assert first == [
        "redis://127.0.0.1:6379/14",
        "redis://127.0.0.1:6379/14",
        str(ROOT / "var" / "test-gw0"),
        "redis://127.0.0.1:6379/14",
    ]
    # Celery reads the variable before its settings: it holds the process's own database.
    assert second == [
        "redis://127.0.0.1:6379/12",
        "redis://127.0.0.1:6379/12",
        str(ROOT / "var" / "test-gw1"),
        "redis://127.0.0.1:6379/12",
    ]


def test_a_process_the_test_process_starts_keeps_its_databases():
    """A Celery worker started by a test process inherits the variables already moved:
    they are not moved again."""
    started = settings_with(
        BENCHWRIGHT_ENV="test",
        PYTEST_XDIST_WORKER="gw1",
        BENCHWRIGHT_TEST_REDIS_FOR="gw1",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/12",
        CELERY_RESULT_BACKEND="redis://127.0.0.1:6379/12",
    )
    assert started[0] == started[1] == started[3] == "redis://127.0.0.1:6379/12"


def test_outside_the_tests_the_process_name_changes_nothing():
    for environment in ("development", "production"):
        shown = settings_with(BENCHWRIGHT_ENV=environment, PYTEST_XDIST_WORKER="gw1")
        assert shown == [
            "redis://127.0.0.1:6379/14",
            "redis://127.0.0.1:6379/14",
            str(ROOT / "var"),
            "redis://127.0.0.1:6379/14",
        ]
