"""Per-run cgroups on this host's real hierarchies (cgroup v1 controllers, plus the
cgroup v2 hierarchy mounted beside them). No Django here.

The v2 hierarchy here has no memory or pids controller (they are bound to v1), so
v2 limits are not exercised; membership, CPU time, killing and removal are."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

from sandboxes import cgroups
from sandboxes.base import MiB
from sandboxes.workdir import TmpfsWorkdir, sweep_stale

SPIN = ["/bin/sh", "-c", "while :; do :; done"]


def join(join_files: tuple[str, ...], argv: list[str]) -> subprocess.Popen[bytes]:
    script = 'for f in "$@"; do echo $$ > "$f"; done; exec ' + shlex.join(argv)
    return subprocess.Popen(["/bin/bash", "-c", script, "join", *join_files])


def wait_for(predicate, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def test_run_cgroup_gets_its_limits_and_sees_its_members():
    host = cgroups.detect()
    run = host.create(cgroups.new_cgroup_name(), memory_bytes=64 * MiB, max_tasks=7)
    try:
        assert isinstance(run, cgroups.V1RunCgroup)
        assert int((run.memory / "memory.limit_in_bytes").read_text()) == 64 * MiB
        assert (run.pids_dir / "pids.max").read_text().strip() == "7"
        process = join(run.join_files, SPIN)
        wait_for(lambda: run.pids() == [process.pid])
        wait_for(lambda: run.cpu_time_s() > 0.05)
        found = cgroups.of_process(process.pid)
        assert found is not None and found.pids() == [process.pid]
        assert not run.memory_exceeded() and not run.tasks_exceeded()
    finally:
        run.remove()
    assert process.wait(timeout=5) == -9
    assert not run.memory.exists() and not run.pids_dir.exists()


def test_tasks_limit_hit_is_counted():
    host = cgroups.detect()
    run = host.create(cgroups.new_cgroup_name(), memory_bytes=64 * MiB, max_tasks=2)
    try:
        process = join(run.join_files, ["/bin/sh", "-c", "sleep 5 & sleep 5 & sleep 5 & wait"])
        wait_for(run.tasks_exceeded)
    finally:
        run.remove()
    process.wait(timeout=5)


def test_v2_run_cgroup_lists_counts_kills_and_goes():
    mount = next((m for m in cgroups._mounts() if m.fstype == "cgroup2"), None)
    assert mount is not None, "this host mounts a cgroup v2 hierarchy"
    own = cgroups._own_cgroups()[""]
    run = cgroups.V2RunCgroup(cgroups._under(mount, own) / cgroups.new_cgroup_name())
    run.path.mkdir()
    try:
        process = join(run.join_files, SPIN)
        wait_for(lambda: run.pids() == [process.pid])
        wait_for(lambda: run.cpu_time_s() > 0.05)
    finally:
        run.remove()
    assert process.wait(timeout=5) == -9
    assert not run.path.exists()


def test_stale_cgroups_and_work_dirs_of_dead_graders_are_swept(tmp_path):
    dead = subprocess.Popen(["/bin/true"])
    dead.wait()
    name = f"{cgroups.NAME_PREFIX}{dead.pid}-0-stale"
    host = cgroups.detect()
    stale = host.create(name, memory_bytes=64 * MiB, max_tasks=4)
    workdir = TmpfsWorkdir(tmp_path, name, 1 * MiB)
    workdir.create()
    live = TmpfsWorkdir(tmp_path, f"{cgroups.NAME_PREFIX}{os.getpid()}-0-live", 1 * MiB)
    live.create()
    try:
        host.sweep_stale()
        sweep_stale(tmp_path)
        assert not any(Path(p).exists() for p in stale._dirs())
        assert not workdir.root.exists()
        assert os.path.ismount(live.root)
    finally:
        live.release()
        workdir.release()
        stale.remove()


def test_freezing_stops_every_member_and_killing_still_works_while_frozen():
    host = cgroups.detect()
    run = host.create(cgroups.new_cgroup_name(), memory_bytes=64 * MiB, max_tasks=8)
    try:
        process = join(
            run.join_files, ["/bin/sh", "-c", "while :; do :; done & while :; do :; done"]
        )
        wait_for(lambda: len(run.pids()) == 2 and run.cpu_time_s() > 0.05)
        run.freeze()
        frozen_at = run.cpu_time_s()
        time.sleep(0.2)
        assert run.cpu_time_s() == frozen_at
        run.thaw()
        wait_for(lambda: run.cpu_time_s() > frozen_at + 0.05)
        run.freeze()
        run.kill()  # thaws, or a frozen process would keep its SIGKILL pending
        assert run.pids() == []
    finally:
        run.remove()
    assert process.wait(timeout=5) == -9
