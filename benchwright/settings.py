"""Benchwright settings. Every value comes from an environment variable.

With nothing set, the platform runs for development: SQLite under ``var/``
and a filesystem broker that needs no server. Tests and production set
``DATABASE_URL`` (PostgreSQL) and ``CELERY_BROKER_URL`` (Redis). With
``BENCHWRIGHT_ENV=production`` the process refuses to start without a secret key
and allowed hosts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
ENVIRONMENT = os.environ.get("BENCHWRIGHT_ENV", "development")
PRODUCTION = ENVIRONMENT == "production"

# The test suite runs in several processes at once (pytest-xdist names each one
# gw0, gw1, ...). Each process, and every process it starts (they inherit the
# variable), gets a var folder and Redis databases of its own, so no two share a
# queue, a throttle counter or a stored file. pytest-django gives each its own
# test database.
TEST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "") if ENVIRONMENT == "test" else ""
TEST_WORKER_INDEX = int(TEST_WORKER.removeprefix("gw") or 0)

VAR_DIR = Path(
    os.environ.get("BENCHWRIGHT_VAR_DIR")
    or (BASE_DIR / "var" / f"test-{TEST_WORKER}" if TEST_WORKER else BASE_DIR / "var")
)


def redis_for_test_worker(url: str, offset: int = 0) -> str:
    """``url``'s Redis database moved down by two per test process, then by ``offset``:
    the suite's base database (14) gives gw0 14 and 13, gw1 12 and 11."""
    parsed = urlparse(url)
    if parsed.scheme != "redis" or not (TEST_WORKER_INDEX or offset):
        return url
    db = int(parsed.path.lstrip("/") or 0) - 2 * TEST_WORKER_INDEX - offset
    if db < 0:
        raise ImproperlyConfigured(f"too many test processes for the Redis databases of {url}")
    return parsed._replace(path=f"/{db}").geturl()


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def database_from_url(url: str) -> dict[str, object]:
    """``postgres://user:pass@host:port/name`` or ``sqlite:///relative/or/absolute.db``."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        # sqlite:////abs/path.db is absolute; sqlite:///rel/path.db is relative to BASE_DIR.
        path = parsed.path[1:]
        db_path = Path(path) if path.startswith("/") else BASE_DIR / path
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(db_path)}
    if parsed.scheme in {"postgres", "postgresql"}:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
            "TEST": {"NAME": os.environ.get("DATABASE_TEST_NAME") or None},
        }
    raise ImproperlyConfigured(f"DATABASE_URL has an unsupported scheme: {parsed.scheme!r}")


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when BENCHWRIGHT_ENV=production")
    SECRET_KEY = "development-only-secret-key-not-for-production"  # noqa: S105

DEBUG = env_bool("DJANGO_DEBUG", not PRODUCTION)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "" if PRODUCTION else "127.0.0.1,localhost")
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS must be set when BENCHWRIGHT_ENV=production")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "tasks",
    "rubrics",
    "submissions",
    "reviews",
    "exports",
    "frontend",
    "accounts",
    "webhooks",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "benchwright.urls"
WSGI_APPLICATION = "benchwright.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if ENVIRONMENT == "test":
    from benchwright.templating import MissingVariable

    # A template that looks up something the data does not have fails its test.
    options: dict[str, Any] = TEMPLATES[0]["OPTIONS"]  # type: ignore[assignment]
    options["string_if_invalid"] = MissingVariable("%s")

DATABASES = {
    "default": database_from_url(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'benchwright.sqlite3'}")
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "task-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles"))
NODE_MODULES = BASE_DIR / "frontend" / "node_modules"
# npm-installed assets are served straight from node_modules (installed by
# `make run` / `make test`, never committed).
STATICFILES_DIRS = [
    ("vendor/htmx", NODE_MODULES / "htmx.org" / "dist"),
    # KaTeX's stylesheet and fonts, for the formulas frontend/src/math.js typesets.
    ("vendor/katex", NODE_MODULES / "katex" / "dist"),
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
# Serve static files from the finders too, so `make run` works before or without collectstatic.
WHITENOISE_USE_FINDERS = True
MEDIA_ROOT = Path(os.environ.get("DJANGO_MEDIA_ROOT", VAR_DIR / "media"))

SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION

# Celery. The broker only carries work; PostgreSQL is the source of truth.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
CELERY_RESULT_BACKEND = os.environ.get(
    "CELERY_RESULT_BACKEND", f"file://{VAR_DIR / 'celery-results'}"
)
if TEST_WORKER and os.environ.get("BENCHWRIGHT_TEST_REDIS_FOR") != TEST_WORKER:
    # Celery takes these two variables over its settings, so a test process writes its
    # own databases back into them, for itself and every process it starts (its Celery
    # worker); the marker keeps those from moving them down a second time.
    CELERY_BROKER_URL = redis_for_test_worker(CELERY_BROKER_URL)
    CELERY_RESULT_BACKEND = redis_for_test_worker(CELERY_RESULT_BACKEND)
    os.environ.update(
        CELERY_BROKER_URL=CELERY_BROKER_URL,
        CELERY_RESULT_BACKEND=CELERY_RESULT_BACKEND,
        BENCHWRIGHT_TEST_REDIS_FOR=TEST_WORKER,
    )
if CELERY_RESULT_BACKEND.startswith("file://"):
    Path(CELERY_RESULT_BACKEND.removeprefix("file://")).mkdir(parents=True, exist_ok=True)
if CELERY_BROKER_URL == "filesystem://":
    _broker_dir = VAR_DIR / "broker"
    # The filesystem transport and result backend need their folders to exist.
    for _folder in ("processed", "control"):
        (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
        "data_folder_in": str(_broker_dir),
        "data_folder_out": str(_broker_dir),
        "processed_folder": str(_broker_dir / "processed"),
        # Broadcast exchanges (worker control) live here too, not in the current directory.
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_TIME_LIMIT = int(os.environ.get("CELERY_TASK_TIME_LIMIT", "3600"))
CELERY_TASK_SOFT_TIME_LIMIT = int(os.environ.get("CELERY_TASK_SOFT_TIME_LIMIT", "3300"))
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# Grading: which sandbox backend the grading workers use.
SANDBOX_BACKEND = os.environ.get("BENCHWRIGHT_SANDBOX", "bwrap")

# The REST API (/api/v1/). Bearer tokens for pipelines, the session for the browser.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["accounts.parsers.LimitedJSONParser"],
    "DEFAULT_THROTTLE_CLASSES": ["accounts.throttling.ApiRateThrottle"],
    "DEFAULT_SCHEMA_CLASS": "accounts.schema.ApiAutoSchema",
    "EXCEPTION_HANDLER": "accounts.errors.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Benchwright API",
    "DESCRIPTION": "List published evaluation tasks, submit solutions in bulk, collect grades.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI comes from the drf-spectacular-sidecar package, served as our own
    # static files: the docs page loads nothing from elsewhere. (Redoc's page pulls
    # web fonts from a CDN, so it is not offered.)
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 1, "maximum": 10**18 - 1}},
    "ENUM_NAME_OVERRIDES": {
        "SubmissionStatusEnum": "submissions.models.SubmissionStatus.choices",
        "DeliveryStatusEnum": "webhooks.models.DeliveryStatus.choices",
        "WebhookEventEnum": "webhooks.models.Event.choices",
        "TaskKindEnum": "tasks.models.kind_choices",
    },
}
# Requests per token (or user; per address when anonymous); "N/s", "N/m", "N/h" or "N/d".
API_RATES = {
    "read": os.environ.get("BENCHWRIGHT_API_RATE_READ", "1200/m"),
    "write": os.environ.get("BENCHWRIGHT_API_RATE_WRITE", "600/m"),
    "anon": os.environ.get("BENCHWRIGHT_API_RATE_ANON", "60/m"),
}
# Daily quotas for a token without its own (sandbox seconds: summed grading-run durations).
API_DAILY_SUBMISSIONS = int(os.environ.get("BENCHWRIGHT_API_DAILY_SUBMISSIONS", "20000"))
API_DAILY_SANDBOX_SECONDS = int(os.environ.get("BENCHWRIGHT_API_DAILY_SANDBOX_SECONDS", "86400"))
API_MAX_FILES = int(os.environ.get("BENCHWRIGHT_API_MAX_FILES", "20"))
API_MAX_FILE_BYTES = int(os.environ.get("BENCHWRIGHT_API_MAX_FILE_BYTES", str(256 * 1024)))
API_MAX_SUBMISSION_BYTES = int(
    os.environ.get("BENCHWRIGHT_API_MAX_SUBMISSION_BYTES", str(1024 * 1024))
)
API_MAX_BATCH = int(os.environ.get("BENCHWRIGHT_API_MAX_BATCH", "1000"))
# Room for a full submission's content after JSON escaping.
API_MAX_BODY_BYTES = int(os.environ.get("BENCHWRIGHT_API_MAX_BODY_BYTES", str(4 * 1024 * 1024)))
API_MAX_BATCH_BODY_BYTES = int(
    os.environ.get("BENCHWRIGHT_API_MAX_BATCH_BODY_BYTES", str(64 * 1024 * 1024))
)
API_LOG_TAIL_CHARS = int(os.environ.get("BENCHWRIGHT_API_LOG_TAIL_CHARS", "4000"))
# Webhooks: plain http and loopback callback URLs only where this is on (development, tests).
WEBHOOKS_ALLOW_INSECURE = env_bool("BENCHWRIGHT_WEBHOOKS_ALLOW_INSECURE", not PRODUCTION)
WEBHOOK_RETRY_DELAYS_S = [
    float(s) for s in env_list("BENCHWRIGHT_WEBHOOK_RETRY_DELAYS", "5,300,1800,7200,18000,36000")
]
WEBHOOK_TIMEOUT_S = float(os.environ.get("BENCHWRIGHT_WEBHOOK_TIMEOUT_S", "10"))

# Throttle counters live in the cache: Redis when configured (shared by every web process).
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["REDIS_CACHE_URL"],
        }
        if os.environ.get("REDIS_CACHE_URL")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

# GPU pools that have workers: a task targeting one of these is graded on its
# queue (grading.gpu.<name>); others are checked on the CPU pool.
GRADING_GPU_POOLS = env_list("BENCHWRIGHT_GPU_POOLS", "")
# A submission running longer than this is presumed lost with its worker and re-enqueued.
GRADING_STUCK_AFTER_S = int(os.environ.get("BENCHWRIGHT_GRADING_STUCK_AFTER_S", "3600"))
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-gradings": {"task": "submissions.sweep_stuck", "schedule": 300.0},
    # Webhook retries whose job was lost (a worker died) are sent again.
    "sweep-webhook-deliveries": {"task": "webhooks.sweep", "schedule": 60.0},
    "purge-idempotency-keys": {"task": "accounts.purge_idempotency_keys", "schedule": 3600.0},
    # Claims are also expired lazily whenever a reviewer asks for the next item.
    "expire-review-claims": {"task": "reviews.expire_claims", "schedule": 60.0},
    "sweep-review-queue": {"task": "reviews.sweep", "schedule": 300.0},
}
CELERY_TASK_ROUTES = {
    "submissions.grade": {"queue": "default"},
    "submissions.store_grading": {"queue": "grading.store"},
    "submissions.sweep_stuck": {"queue": "default"},
}

if ENVIRONMENT == "test":
    # Tests create many users; the default hasher's deliberate slowness only costs time there.
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
