"""`make run` without Redis: the filesystem broker and result backend need no server.

Runs a real worker process on them, in a fresh var folder, and sends a job through
a named queue, as the grading jobs are sent. Never eager mode.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CLIENT = textwrap.dedent(
    """
    import django
    django.setup()
    from django.conf import settings
    from submissions.jobs import ping_job
    assert not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)
    print(ping_job.apply_async(args=("fs",), queue="grading.cpu").get(timeout=60))
    """
)


def test_a_job_round_trips_through_the_filesystem_broker(tmp_path):
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "DATABASE_URL"}
    }
    env.update(BENCHWRIGHT_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="benchwright.settings")
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "benchwright",
            "worker",
            "--pool",
            "solo",
            "-Q",
            "default,grading.cpu",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        result = subprocess.run(
            [sys.executable, "-c", CLIENT],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        worker.terminate()
        worker.wait(timeout=30)

    assert result.stdout.strip() == "pong:fs", result.stderr[-2000:]
    assert (tmp_path / "broker").is_dir(), "the queue lives in the var folder, no server"
    assert not (ROOT / "control").exists(), "nothing is written into the working directory"
