#!/usr/bin/env bash
# Runs ruff, mypy and every test against the real PostgreSQL and Redis.
#
# The tests run in two phases. First everything not marked ``serial``, in parallel
# test processes (pytest-xdist, TEST_PROCESSES of them, two by default: one per core
# of the machines this runs on). Each process has its own test database, Redis
# databases, var folder and Celery worker (benchwright/settings.py), and a module's
# tests stay in one process (--dist loadfile), so a module's fixtures are made once.
# Then the ``serial`` tests, one at a time: a serving engine under load measures the
# whole host, and another test beside it would change what it measures.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/benchwright}"
# Redis databases of their own, so tests never touch a development queue; each test
# process moves down from these (settings.redis_for_test_worker).
export CELERY_BROKER_URL="${TEST_CELERY_BROKER_URL:-redis://127.0.0.1:6379/14}"
export CELERY_RESULT_BACKEND="${TEST_CELERY_RESULT_BACKEND:-redis://127.0.0.1:6379/14}"
export BENCHWRIGHT_ENV=test

echo "== ruff"
$PY -m ruff check .
$PY -m ruff format --check .
echo "== mypy"
$PY -m mypy .

# Both phases run whatever the first gave; the run fails if either did. pytest exits 5
# when a phase selects no test (a run given only serial tests, say).
status=0
run_phase() {
  local rc=0
  "$PY" -m pytest "$@" || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then
    status=$rc
  fi
}

# The slowest tests are listed at the end of each phase, so a run that grows slower
# says where.
echo "== pytest, in parallel"
run_phase -n "${TEST_PROCESSES:-2}" --dist loadfile -m "not serial" --durations=30 "$@"
echo "== pytest, the serial tests"
run_phase -m serial --durations=10 "$@"
exit "$status"
