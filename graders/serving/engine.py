"""One engine in a sandbox of its own, driven from the grader.

``Engine`` starts the serving driver (``driver.py``) with the serving
environment's interpreter in a sandbox whose network is its own loopback
(``network="loopback"``: the engine may listen there, and nothing outside can
reach it), the model bound read-only, and the task's limits; then it asks the
driver to start vLLM, run workloads with vLLM's benchmark client, and stop
it. ``close`` ends the sandbox whatever happened: the engine, its workers and
everything else in the sandbox's cgroup are killed, and the sandbox's result
says how it ended.

The other engine of a grading is frozen (``paused``) while one runs a
workload, so that the two never share the CPU during a measurement.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graders.kernel.side import Side, SideFailure
from sandboxes.base import GiB, Limits, RunRequest, RunResult, Sandbox, python_env

ROOT = Path(__file__).resolve().parents[2]
SERVING_VENV = Path(os.environ.get("BENCHWRIGHT_SERVING_VENV", ROOT / ".venv-serving"))
MOUNT = "/opt/benchwright"
MODEL_MOUNT = "/opt/model"
WORKDIR = "/workdir"
BOOTSTRAP = f"import sys; sys.path.insert(0, {MOUNT!r}); from serving.driver import main; main()"
HELLO_TIMEOUT_S = 120.0
CPU_TOPOLOGY = ("/sys/devices/system/cpu", "/sys/devices/system/node")
STOP_TIMEOUT_S = 40.0

# An engine and its workers: several processes with dozens of threads each (the
# process limit counts threads), a few GiB of memory with the KV cache.
ENGINE_LIMITS = Limits(
    wall_time_s=1800.0,
    cpu_time_s=3600.0,
    memory_bytes=8 * GiB,
    max_processes=1024,
    file_size_bytes=1 * GiB,
    open_files=4096,
    workdir_bytes=2 * GiB,
    shm_bytes=2 * GiB,
)


class EngineError(Exception):
    """The engine's sandbox or driver failed: the platform's problem, not the config's."""


class EngineTimeout(EngineError):
    """The driver did not answer in time: the engine serves too slowly for the run (the
    grading blames the side whose engine it is)."""


def serving_python() -> Path:
    return SERVING_VENV / "bin" / "python"


def serving_available() -> str:
    """Why the serving environment cannot run engines here ("" when it can)."""
    if not serving_python().exists():
        return f"no serving environment at {SERVING_VENV} (make serving-deps)"
    return ""


@dataclass
class StartResult:
    ready: bool
    ready_s: float | None = None
    exit_code: int | None = None
    log: str = ""


@dataclass
class Engine:
    """One sandboxed engine; ``role`` names it in reports ("reference", "submission")."""

    role: str
    backend: Sandbox
    model_dir: Path
    env: Mapping[str, str] = field(default_factory=dict)
    limits: Limits = ENGINE_LIMITS
    gpus: tuple[int, ...] = ()  # device indices passed into the sandbox (GPU hosts)
    side: Side | None = None
    result: RunResult | None = None

    def open(self) -> None:
        """Start the sandbox and wait for the driver's hello."""
        self.side = Side.start(self.role, self.backend, self.run_request())
        try:
            self.side.await_reply("hello", HELLO_TIMEOUT_S)
        except SideFailure as failure:
            self.close()
            raise EngineError(f"the {self.role} engine's driver did not start: {failure}") from None

    def run_request(self) -> RunRequest:
        """The sandbox this engine runs in: the serving environment, the driver and the
        model read-only, loopback networking only, and on a GPU host its devices."""
        env = {
            **python_env(WORKDIR),
            "PATH": f"{serving_python().parent}:/usr/local/bin:/usr/bin:/bin",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "VLLM_CPU_OMP_THREADS_BIND": "nobind",
            **self.env,
        }
        # The interpreter's own threads: vLLM sets its compute threads itself.
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env.pop(name, None)
        return RunRequest(
            argv=[str(serving_python()), "-B", "-c", BOOTSTRAP],
            limits=self.limits,
            env=env,
            ro_binds=[
                (str(SERVING_VENV), str(SERVING_VENV)),
                (str(Path(__file__).resolve().parent), f"{MOUNT}/serving"),
                (str(ROOT / "graders" / "kernel" / "harness"), f"{MOUNT}/harness"),
                (str(self.model_dir), MODEL_MOUNT),
                # vLLM's CPU worker reads the CPU topology (lscpu) to place its threads.
                *[(path, path) for path in CPU_TOPOLOGY if Path(path).exists()],
            ],
            workdir=WORKDIR,
            network="loopback",
            gpus=self.gpus,
        )

    def _ask(self, op: str, header: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if self.side is None:
            raise EngineError(f"the {self.role} engine's sandbox is not open")
        try:
            reply = self.side.request(op, header, timeout_s=timeout_s)
        except SideFailure as failure:
            message = f"the {self.role} engine's driver failed on {op}: {failure}"
            if failure.kind == "timeout":
                raise EngineTimeout(message) from None
            raise EngineError(message) from None
        return dict(reply.header)

    def start(self, argv: Sequence[str], timeout_s: float) -> StartResult:
        reply = self._ask(
            "start",
            {"argv": list(argv), "model": MODEL_MOUNT, "timeout_s": timeout_s},
            timeout_s + 30,
        )
        return StartResult(
            ready=reply.get("ready") is True,
            ready_s=reply.get("ready_s"),
            exit_code=reply.get("exit_code"),
            log=str(reply.get("log") or ""),
        )

    def bench(
        self, argv: Sequence[str], timeout_s: float, lengths: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """One run of vLLM's benchmark client against this engine. ``lengths``: the
        prompts of a length-distribution workload, which the driver writes first
        (``driver.write_length_prompts``'s arguments but the model)."""
        header = {"argv": list(argv), "lengths": dict(lengths) if lengths else None}
        return self._ask("bench", header, timeout_s)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Frozen, so that nothing in this sandbox runs while the other engine is measured."""
        if self.side is None:
            yield
            return
        self.side.freeze()
        try:
            yield
        finally:
            self.side.thaw()

    def close(self) -> RunResult | None:
        """Stop the engine (politely first) and end the sandbox; what the sandbox saw."""
        if self.side is None:
            return self.result
        with contextlib.suppress(SideFailure, OSError):
            if self.side.frozen:
                self.side.thaw()
            self.side.request("stop", {}, timeout_s=STOP_TIMEOUT_S)
        self.result = self.side.finish()
        self.side = None
        return self.result
