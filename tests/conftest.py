import pytest


def _user(role, username, **extra):
    # Imported here, not at module level, so the Django-free sandbox tests can run
    # without Django set up.
    from tests import factories

    return factories.make_user(role, username=username, **extra)


@pytest.fixture
def author(db):
    return _user("author", "author")


@pytest.fixture
def colleague(db):
    """Another author: same role as the owner, but not the owner."""
    return _user("author", "colleague")


@pytest.fixture
def outsider(db):
    """An API client with no relation to the task."""
    return _user("api_client", "outsider")


@pytest.fixture
def reviewer(db):
    return _user("reviewer", "reviewer")


@pytest.fixture
def admin_user(db):
    return _user("admin", "admin", is_staff=True)


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker):
    """A real Celery worker process on the real Redis broker, using the test database.

    Tests that hand it work must use ``transactional_db`` so their rows are
    committed and visible to the worker's own connection.
    """
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    import redis
    from django.conf import settings

    from benchwright.celery import app
    from submissions.jobs import ping_job

    broker = settings.CELERY_BROKER_URL
    assert broker.startswith("redis://"), "the worker tests need the real Redis broker"
    redis.Redis.from_url(broker).flushdb()  # stale messages from an earlier run

    db = settings.DATABASES["default"]
    env = dict(os.environ)
    env["DATABASE_URL"] = (
        f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}"
    )
    # The tests' own task kind (tests/graders/text_answer.py), registered on the worker
    # the way a deployment adds one; in this process the ``text_answer`` fixture does.
    env["BENCHWRIGHT_TASK_KINDS"] = "text-answer=tests.graders.text_answer:TextAnswer"
    suffix = f"-{settings.TEST_WORKER}" if settings.TEST_WORKER else ""
    log_path = Path(settings.BASE_DIR) / "artifacts" / f"celery-worker{suffix}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("wb")
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
            "default,grading.store,grading.cpu",
            "--loglevel",
            "INFO",
            "--hostname",
            f"test-{os.getpid()}@%h",
            "--without-gossip",
            "--without-mingle",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=settings.BASE_DIR,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                assert ping_job.delay("ready").get(timeout=10) == "pong:ready"
                break
            except Exception:
                if worker.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"worker did not start; see {log_path}") from None
        yield worker
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
        log.close()
        app.close()


@pytest.fixture
def text_answer():
    """A task kind defined only in the tests (``tests/graders/text_answer.py``),
    registered for one test."""
    from graders import registry
    from tests.graders.text_answer import TextAnswer

    registry.register(TextAnswer)
    try:
        yield registry.get("text-answer")
    finally:
        registry.unregister("text-answer")


# The longest modules start first, longest first, then the rest of the slow ones: the
# parallel test processes then finish together instead of one waiting on a long module
# that began last (a module stays in one process). Minutes of one process each, on a
# clean clone of the 2-core machine: the kernel exploit corpus 22, the catalog 18, the
# re-profile corpus 12, the debugging corpus 8, the kernel gradings 3, the re-profile
# gradings 3; the kernel corpus once began last and ran 20 minutes alone.
LONGEST_FIRST = (
    "tests/graders/kernel/test_exploits.py",
    "tests/test_catalog.py",
    "tests/graders/profiling/test_reprofile_exploits.py",
    "tests/graders/debugging/test_exploits.py",
    "tests/graders/kernel/test_grading.py",
    "tests/graders/profiling/test_reprofile.py",
)


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        module = item.nodeid.split("::")[0]
        if module in LONGEST_FIRST:
            return LONGEST_FIRST.index(module)
        return len(LONGEST_FIRST) + (0 if item.get_closest_marker("slow") else 1)

    items.sort(key=rank)  # stable: within a rank, the collection order
