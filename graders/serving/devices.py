"""Which devices a serving grading uses, and the engine arguments the platform adds for
them: shared by the grading (``grading.py``) and the authoring page's config check
(``check.check_draft_config``), so that vLLM's checks see what the engines will get."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sandboxes.hardware import gpu_class

from .spec import ServingSpec

# On a GPU, the share of its memory each of the grading's two engines may hold.
GPU_SHARE = 0.45


def grading_gpus(hardware: str, gpu: Mapping[str, Any] | None) -> tuple[int, ...] | str:
    """The devices a grading of a task targeting ``hardware`` uses on a host whose GPU is
    ``gpu`` (``sandboxes.hardware.detect()["gpu"]``), or why this host cannot grade it.
    A CPU task uses none; a GPU task, the first device of a host of its class (a GPU
    worker grades one submission at a time, its two engines sharing the device)."""
    if hardware == "cpu":
        return ()
    name = str((gpu or {}).get("name") or "")
    if gpu_class(name) != hardware:
        found = f"a {name}" if name else "no GPU"
        return f"this task's engines need a {hardware} GPU; this host has {found}"
    return (0,)


def platform_flags(spec: ServingSpec, gpus: tuple[int, ...]) -> dict[str, Any]:
    """The engine arguments the platform adds to every engine of a grading: the task's KV
    cache in bytes (on a CPU host too: vLLM's older ``VLLM_CPU_KVCACHE_SPACE`` takes
    whole GiB only). On a GPU the two engines share the device: each may hold at most
    ``GPU_SHARE`` of the device's memory, so that the second one starts beside the first."""
    flags: dict[str, Any] = {"kv_cache_memory_bytes": spec.kv_cache_bytes}
    if gpus:
        flags["gpu_memory_utilization"] = GPU_SHARE
    return flags
