"""API throughput and latency on a real server: gunicorn + PostgreSQL + Redis.

    .venv/bin/python bench/api.py [--rate 100] [--seconds 20]

Creates a scratch database (``benchwright_bench``, dropped afterwards), migrates
it, seeds a published task and an API client's token, starts gunicorn on
127.0.0.1 and drives it from a second process over loopback:

1. open-loop single-submission creates at ``--rate`` requests/s for ``--seconds``
   (latency counted from each request's scheduled send time, so a stalled server
   cannot hide its queueing), after a short warm-up;
2. a closed-loop burst (``--burst-seconds``, 8 connections) for the most creates/s;
3. ``--batches`` 1,000-submission batches, timed from send to 201.

Prints the figures and writes bench/results/api.json. Bounded in time and
count; Redis database 12 is used for the broker and the throttle counters, and
flushed afterwards. No Celery worker runs: gradings stay queued in Redis.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
DB_NAME = "benchwright_bench"
PG = "postgres://postgres@127.0.0.1:5432"
REDIS_URL = "redis://127.0.0.1:6379/12"
RESULTS = ROOT / "bench" / "results" / "api.json"
SOLUTION = (
    "import torch\n\n\nclass ModelNew(torch.nn.Module):\n"
    "    def forward(self, x):\n        return x.relu()\n"
)

SEED = """
from django.contrib.auth import get_user_model
from accounts import services as accounts
from benchwright import roles
from rubrics.models import Criterion, Rubric
from tasks import services as tasks
from tasks.models import FileRole, Task, TaskFile, Visibility

User = get_user_model()
admin = User.objects.create_user("bench-admin")
roles.grant(admin, roles.ADMIN)
reviewer = User.objects.create_user("bench-reviewer")
roles.grant(reviewer, roles.REVIEWER)
client = User.objects.create_user("bench-client")
roles.grant(client, roles.API_CLIENT)
task = Task.objects.create(owner=admin, slug="relu", title="ReLU", statement="relu",
                           grading={"format": "kernelbench", "language": "pytorch", "trials": 5})
TaskFile.objects.create(task=task, path="statement.md", content="relu",
                        visibility=Visibility.PROMPT, role=FileRole.STATEMENT)
TaskFile.objects.create(task=task, path="reference.py", content="# reference",
                        visibility=Visibility.HIDDEN, role=FileRole.REFERENCE)
rubric = Rubric.objects.create(task=task)
Criterion.objects.create(rubric=rubric, key="correct", title="Correct", points=5,
                         kind="automatic", rule={"type": "verdict", "equals": "accepted"})
tasks.task_submit_for_review(task=task, user=admin, require_validation=False)
tasks.task_publish(task=Task.objects.get(pk=task.pk), reviewer=reviewer)
_, token = accounts.token_create(user=client, name="bench", scopes=["read", "submit"],
                                 max_submissions_per_day=10_000_000)
print(token)
"""


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": f"{PG}/{DB_NAME}",
            "CELERY_BROKER_URL": REDIS_URL,
            "CELERY_RESULT_BACKEND": REDIS_URL,
            "REDIS_CACHE_URL": REDIS_URL,
            "BENCHWRIGHT_ENV": "production",
            "DJANGO_SECRET_KEY": "bench-only-" + "x" * 40,
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DJANGO_DEBUG": "0",
            "BENCHWRIGHT_API_RATE_WRITE": "10000000/m",
            "BENCHWRIGHT_API_RATE_READ": "10000000/m",
            "LOG_LEVEL": "WARNING",
        }
    )
    return env


def psql(sql: str) -> None:
    subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-q", "-c", sql],
        check=True,
        capture_output=True,
        timeout=60,
    )


def flush_redis() -> None:
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()


def prepare(env: dict[str, str]) -> str:
    psql(f"DROP DATABASE IF EXISTS {DB_NAME}")
    psql(f"CREATE DATABASE {DB_NAME}")
    flush_redis()
    subprocess.run(
        [PY, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=300,
    )
    seeded = subprocess.run(
        [PY, "manage.py", "shell", "-c", SEED],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    return seeded.stdout.strip().splitlines()[-1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_gunicorn(
    env: dict[str, str], port: int, workers: int, threads: int
) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [
            PY, "-m", "gunicorn", "benchwright.wsgi:application",
            "--bind", f"127.0.0.1:{port}",
            "--workers", str(workers),
            "--worker-class", "gthread",
            "--threads", str(threads),
            "--keep-alive", "30",
            "--log-level", "warning",
        ],
        cwd=ROOT,
        env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise RuntimeError("gunicorn did not start")


# The load generator (runs in its own process) --------------------------------


def _body(i: int) -> bytes:
    return json.dumps(
        {
            "task": "relu",
            "model": "bench-model",
            "run_id": "bench",
            "labels": {"i": str(i)},
            "files": [{"path": "solution.py", "content": SOLUTION}],
        }
    ).encode()


def _post(conn: http.client.HTTPConnection, path: str, body: bytes, token: str) -> int:
    conn.request(
        "POST",
        path,
        body=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    response.read()
    return response.status


def open_loop(
    port: int, token: str, rate: float, seconds: float, threads: int = 16
) -> dict[str, Any]:
    """``rate`` requests/s on a fixed schedule; latency from each scheduled time."""
    total = int(rate * seconds)
    start = time.perf_counter() + 0.2
    latencies: list[float] = []
    service: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    counter = iter(range(total))

    def run() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for i in counter:  # iterators are consumed under the GIL, one index per thread
            scheduled = start + i / rate
            pause = scheduled - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            sent = time.perf_counter()
            try:
                status = _post(conn, "/api/v1/submissions/", _body(i), token)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                status = 0
            done = time.perf_counter()
            with lock:
                latencies.append(done - scheduled)
                service.append(done - sent)
                statuses[status] = statuses.get(status, 0) + 1
        conn.close()

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=seconds + 120)
    elapsed = time.perf_counter() - start
    return {
        "offered_rate": rate,
        "requests": total,
        "achieved_rate": round(len(latencies) / elapsed, 1),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "latency_ms": _percentiles(latencies),
        "service_time_ms": _percentiles(service),
    }


def closed_loop(port: int, token: str, seconds: float, connections: int = 8) -> dict[str, Any]:
    """As fast as ``connections`` clients can go: the most creates/s."""
    stop = time.perf_counter() + seconds
    counts: list[int] = []
    lock = threading.Lock()

    def run(offset: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        done = 0
        while time.perf_counter() < stop:
            if _post(conn, "/api/v1/submissions/", _body(offset + done), token) == 201:
                done += 1
        conn.close()
        with lock:
            counts.append(done)

    started = time.perf_counter()
    workers = [threading.Thread(target=run, args=(n * 1_000_000,)) for n in range(connections)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=seconds + 60)
    return {
        "connections": connections,
        "created": sum(counts),
        "creates_per_s": round(sum(counts) / (time.perf_counter() - started), 1),
    }


def batches(port: int, token: str, count: int, size: int = 1000) -> dict[str, Any]:
    times = []
    for n in range(count):
        items = [json.loads(_body(n * size + i)) for i in range(size)]
        body = json.dumps({"submissions": items}).encode()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        started = time.perf_counter()
        status = _post(conn, "/api/v1/submissions/batch/", body, token)
        times.append(time.perf_counter() - started)
        conn.close()
        if status != 201:
            raise RuntimeError(f"batch {n} answered {status}")
    return {
        "size": size,
        "count": size * count,
        "body_bytes": len(body),
        "seconds": [round(t, 3) for t in times],
        "median_s": round(statistics.median(times), 3),
    }


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)

    return {"p50": at(0.50), "p90": at(0.90), "p99": at(0.99), "max": at(1.0)}


def load(phase: str, port: int, token: str, args: argparse.Namespace, out: Any) -> None:
    """The second process: one measurement."""
    if phase == "warmup":
        out.send(open_loop(port, token, args.rate, 2.0))
    elif phase == "sustained":
        out.send(open_loop(port, token, args.rate, args.seconds))
    elif phase == "burst":
        out.send(closed_loop(port, token, args.burst_seconds))
    else:
        out.send(batches(port, token, args.batches))


def server_cpu_s(master: int) -> float:
    """CPU seconds used so far by the gunicorn master's worker processes."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == master:  # ppid
            total += int(fields[11]) + int(fields[12])  # utime + stime, in ticks
    return total / os.sysconf("SC_CLK_TCK")


def run_phase(phase: str, port: int, token: str, args: argparse.Namespace, master: int) -> Any:
    """Run one phase in a separate process; add the server's CPU time per request."""
    receive, send = multiprocessing.Pipe(duplex=False)
    loader = multiprocessing.get_context("spawn").Process(
        target=load, args=(phase, port, token, args, send)
    )
    cpu_before = server_cpu_s(master)
    loader.start()
    if not receive.poll(timeout=args.seconds + 60 * args.batches + 180):
        loader.kill()
        raise RuntimeError(f"the load generator did not finish the {phase} phase in time")
    figures = receive.recv()
    loader.join(timeout=30)
    cpu = server_cpu_s(master) - cpu_before
    count = figures.get("requests") or figures.get("created") or figures.get("count") or 0
    if count:
        figures["server_cpu_ms_per_submission"] = round(1000 * cpu / count, 2)
    return figures


def count_submissions(env: dict[str, str]) -> int:
    done = subprocess.run(
        [PY, "manage.py", "shell", "-c",
         "from submissions.models import Submission; print(Submission.objects.count())"],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return int(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--burst-seconds", type=float, default=5.0)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()

    env = server_env()
    # Other work on the machine skews every figure: the load is recorded with them.
    args.load_at_start = round(os.getloadavg()[0], 2)
    print(f"preparing {DB_NAME} (migrate, seed)…", flush=True)
    token = prepare(env)
    port = free_port()
    server = start_gunicorn(env, port, args.workers, args.threads)
    try:
        run_phase("warmup", port, token, args, server.pid)
        figures = {
            phase: run_phase(phase, port, token, args, server.pid)
            for phase in ("sustained", "burst", "batch")
        }
        figures["submissions_in_database"] = count_submissions(env)
    finally:
        server.terminate()
        server.wait(timeout=30)
    report(figures, args)
    psql(f"DROP DATABASE IF EXISTS {DB_NAME}")
    flush_redis()


def report(figures: dict[str, Any], args: argparse.Namespace) -> None:
    figures["setup"] = {
        "load_average_1m_at_start": args.load_at_start,
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        "server": f"gunicorn gthread, {args.workers} workers x {args.threads} threads",
        "database": "PostgreSQL on 127.0.0.1",
        "broker_and_cache": "Redis on 127.0.0.1",
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    sustained, burst, batch = figures["sustained"], figures["burst"], figures["batch"]
    print(
        f"single creates at {sustained['offered_rate']:g}/s offered: "
        f"{sustained['achieved_rate']}/s achieved, statuses {sustained['statuses']}, "
        f"latency p50 {sustained['latency_ms']['p50']} ms, p99 {sustained['latency_ms']['p99']} ms"
    )
    print(
        f"server CPU per submission: {sustained.get('server_cpu_ms_per_submission')} ms single, "
        f"{batch.get('server_cpu_ms_per_submission')} ms in batches"
    )
    print(f"most creates/s ({burst['connections']} connections): {burst['creates_per_s']}")
    print(
        f"1,000-submission batch accepted in {batch['median_s']} s (median of {batch['seconds']})"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"written to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
