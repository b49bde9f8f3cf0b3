"""The Docker backend, as far as it runs without a Docker Engine.

This host has the docker CLI but no engine, so no container is started here:
these tests check the ``docker run`` command line built for a request and that
``check()`` and ``run()`` refuse, with a clear message, when no engine answers
(the real CLI, pointed at a socket where nothing listens).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from sandboxes import get_backend, seccomp
from sandboxes.base import GiB, Limits, MiB, RunRequest, SandboxUnavailable
from sandboxes.bwrap import BwrapSandbox
from sandboxes.docker import CHANNEL_DIR, DockerSandbox


def build(request: RunRequest, cpus: float = 2.0) -> list[str]:
    backend = DockerSandbox(image="benchwright-sandbox:test", cpus=cpus)
    return backend.run_argv(
        request,
        docker="/usr/bin/docker",
        name="benchwright-1-0-abc",
        work_src="/run/x/work",
        channel_src="/run/x/channel",
        seccomp_profile="/run/x/seccomp.json",
    )


def value_after(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == flag]


def test_run_argv_isolates_and_limits_the_container():
    limits = Limits(
        cpu_time_s=9.5,
        memory_bytes=2 * GiB,
        max_processes=32,
        file_size_bytes=8 * MiB,
        open_files=128,
        workdir_bytes=64 * MiB,
        shm_bytes=16 * MiB,
    )
    request = RunRequest(
        argv=["python", "main.py"],
        limits=limits,
        env={"A": "1"},
        ro_binds=[("/opt/harness", "/harness")],
    )
    argv = build(request)
    assert argv[:2] == ["/usr/bin/docker", "run"]
    assert value_after(argv, "--network") == ["none"]
    assert "--read-only" in argv and "--init" in argv
    assert value_after(argv, "--user") == ["65534:65534"]
    assert value_after(argv, "--cap-drop") == ["ALL"]
    assert value_after(argv, "--security-opt") == [
        "no-new-privileges",
        "seccomp=/run/x/seccomp.json",
    ]
    assert value_after(argv, "--memory") == [str(2 * GiB)]
    assert value_after(argv, "--memory-swap") == [str(2 * GiB)]
    assert value_after(argv, "--pids-limit") == ["33"]
    assert value_after(argv, "--cpus") == ["2"]
    assert value_after(argv, "--shm-size") == [str(16 * MiB)]
    assert value_after(argv, "--tmpfs") == [f"/tmp:rw,nosuid,nodev,size={64 * MiB},mode=1777"]
    assert value_after(argv, "--ulimit") == [
        "cpu=10:11",
        f"fsize={8 * MiB}:{8 * MiB}",
        "nofile=128:128",
    ]
    assert value_after(argv, "--log-driver") == ["none"]
    assert value_after(argv, "--pull") == ["never"]
    assert value_after(argv, "--mount") == [
        "type=bind,source=/run/x/work,target=/work",
        f"type=bind,source=/run/x/channel,target={CHANNEL_DIR},readonly",
        "type=bind,source=/opt/harness,target=/harness,readonly",
    ]
    assert "--gpus" not in argv and "--interactive" not in argv
    assert f"BENCHWRIGHT_AS_KIB={(4 * GiB) // 1024}" in value_after(argv, "--env")
    # The image, then the shim, then exactly the requested environment and the command.
    image = argv.index("benchwright-sandbox:test")
    assert argv[image + 1 : image + 3] == ["/bin/sh", "-c"]
    assert argv[image + 4 :] == ["benchwright-shim", "A=1", "python", "main.py"]


def test_run_argv_passes_gpus_and_drops_the_address_space_limit():
    one = build(RunRequest(argv=["python", "x.py"], gpus=[3]))
    assert value_after(one, "--gpus") == ["device=3"]
    assert not any(arg.startswith("BENCHWRIGHT_AS_KIB=") for arg in one)
    two = build(RunRequest(argv=["python", "x.py"], gpus=[0, 1]))
    assert value_after(two, "--gpus") == ['"device=0,1"']


def test_stdin_makes_the_run_interactive():
    assert "--interactive" in build(RunRequest(argv=["cat"], stdin=b"data"))


def test_seccomp_profile_matches_the_bwrap_filter():
    profile = seccomp.docker_profile()
    json.dumps(profile)  # it is written to a file for the CLI
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    rules = {tuple(rule["names"]): rule for rule in profile["syscalls"]}
    denied = next(names for names in rules if "ptrace" in names)
    assert set(seccomp.REQUIRED_DENIED) <= set(denied)
    for name in ("keyctl", "io_uring_setup", "bpf", "mount", "unshare", "setns"):
        assert name in denied

    def socket_rules(profile):
        return [rule["args"] for rule in profile["syscalls"] if rule["names"] == ["socket"]]

    def arg(index, op, value):
        return {"index": index, "value": value, "op": f"SCMP_CMP_{op}"}

    # Only AF_UNIX (1): refused when 0 or above 1, the same as "not 1" on 64 bits.
    assert socket_rules(profile) == [[arg(0, "EQ", 0)], [arg(0, "GT", 1)]]
    assert rules[("socketpair",)]["args"] == [arg(0, "NE", 1)]
    assert all(rule["errnoRet"] == 1 for rule in profile["syscalls"])
    # A loopback run adds AF_INET (2), AF_INET6 (10) and route netlink (16, protocol 0).
    loopback = socket_rules(seccomp.docker_profile("loopback"))
    refused = {
        rule[0]["value"] for rule in loopback if len(rule) == 1 and rule[0]["op"].endswith("EQ")
    }
    assert refused == set(range(17)) - {1, 2, 10, 16}
    assert [arg(0, "GT", 16)] in loopback
    assert [arg(0, "EQ", 16), arg(2, "NE", 0)] in loopback


def test_check_refuses_when_no_engine_answers(monkeypatch, tmp_path):
    assert shutil.which("docker"), "the docker CLI is expected on this host"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing-listens.sock")
    backend = DockerSandbox()
    with pytest.raises(SandboxUnavailable, match="no Docker engine answers") as caught:
        backend.check()
    assert "Cannot connect to the Docker daemon" in str(caught.value)
    with pytest.raises(SandboxUnavailable):
        backend.run(RunRequest(argv=["python", "-c", "print('ran')"]))
    assert not list(tmp_path.iterdir())


def test_check_refuses_without_the_cli(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="docker CLI is not on PATH"):
        DockerSandbox().check()


def test_get_backend_knows_both_backends():
    assert isinstance(get_backend("bwrap"), BwrapSandbox)
    assert isinstance(get_backend("docker"), DockerSandbox)
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        get_backend("chroot")


def test_image_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("BENCHWRIGHT_DOCKER_IMAGE", "registry.example/sandbox:7")
    assert DockerSandbox().image == "registry.example/sandbox:7"
    assert DockerSandbox(image="other:1").image == "other:1"
    assert DockerSandbox().cpus == float(os.cpu_count() or 1)
