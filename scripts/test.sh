#!/usr/bin/env bash
# Runs ruff, mypy and every test against the real PostgreSQL and Redis.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/benchwright}"
# A Redis database of its own, so tests never touch a development queue.
export CELERY_BROKER_URL="${TEST_CELERY_BROKER_URL:-redis://127.0.0.1:6379/14}"
export CELERY_RESULT_BACKEND="${TEST_CELERY_RESULT_BACKEND:-redis://127.0.0.1:6379/14}"
export BENCHWRIGHT_ENV=test

echo "== ruff"
$PY -m ruff check .
$PY -m ruff format --check .
echo "== mypy"
$PY -m mypy .
echo "== pytest"
# The slowest tests are listed at the end, so a run that grows slower says where.
$PY -m pytest --durations=30 "$@"
