#!/usr/bin/env bash
# Serves Benchwright at http://127.0.0.1:8000 (BENCHWRIGHT_HOST, BENCHWRIGHT_PORT) with a
# Celery worker beside it. DEBUG is off (DJANGO_DEBUG=1 turns it on for development).
# Embedded SQLite under var/ unless DATABASE_URL is set; Redis as the broker when one answers
# on 127.0.0.1:6379, else a filesystem broker that needs no server (never eager mode).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
mkdir -p var
HOST="${BENCHWRIGHT_HOST:-127.0.0.1}"
PORT="${BENCHWRIGHT_PORT:-8000}"
# A traceback page shows settings and local variables to whoever hits the error.
export DJANGO_DEBUG="${DJANGO_DEBUG:-0}"

if [ -z "${CELERY_BROKER_URL:-}" ]; then
    if $PY -c "import redis,sys; redis.Redis(host='127.0.0.1', port=6379, socket_timeout=1).ping()" 2>/dev/null; then
        export CELERY_BROKER_URL=redis://127.0.0.1:6379/0
        export CELERY_RESULT_BACKEND="${CELERY_RESULT_BACKEND:-redis://127.0.0.1:6379/0}"
        echo "Broker: Redis at 127.0.0.1:6379"
    else
        echo "Broker: filesystem queue under var/broker (no Redis found)"
    fi
fi

$PY manage.py migrate --noinput
$PY manage.py collectstatic --noinput >/dev/null
$PY manage.py import_tasks reference_solutions
$PY manage.py create_demo_users

$PY -m celery -A benchwright worker -Q default,grading.store,grading.cpu \
    --concurrency 1 --loglevel INFO &
WORKER=$!
trap 'kill $WORKER 2>/dev/null; wait $WORKER 2>/dev/null' EXIT INT TERM

echo "Benchwright: http://$HOST:$PORT"
$PY -m gunicorn benchwright.wsgi:application --bind "$HOST:$PORT" --workers 2 \
    --access-logfile - --timeout 120
