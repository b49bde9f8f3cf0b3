"""What the grading host is: CPU model, GPU and driver, software versions.

``detect()`` is cheap after the first call (cached) and never raises: a field
it cannot read is ``None``. ``host_kind()`` tells which shape sets apply
(``cpu`` or ``gpu``).
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
from typing import Any

# Names of GPU hardware classes, matched in device names (lower case).
GPU_CLASSES = ("h100", "h200", "b200", "a100", "l40s", "mi300x")


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return platform.processor() or None


def _nvidia_driver() -> str | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else None


def _gpu() -> dict[str, Any] | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    return {
        "name": props.name,
        "count": torch.cuda.device_count(),
        "memory_bytes": int(props.total_memory),
        "capability": f"{props.major}.{props.minor}",
        "driver": _nvidia_driver(),
        "cuda": torch.version.cuda,
    }


def gpu_class(device_name: str) -> str | None:
    """The hardware class a device name belongs to, e.g. 'NVIDIA H100 80GB HBM3' -> 'h100'."""
    lowered = device_name.lower()
    for name in GPU_CLASSES:
        if re.search(rf"\b{name}\b", lowered):
            return name
    return None


def _version(module_name: str) -> str | None:
    try:
        module = __import__(module_name)
    except ImportError:
        return None
    return str(getattr(module, "__version__", None))


@functools.lru_cache(maxsize=1)
def detect() -> dict[str, Any]:
    """The host: a plain dict suitable for a report."""
    gpu = _gpu()
    return {
        "host_kind": "gpu" if gpu else "cpu",
        "name": (gpu_class(gpu["name"]) or gpu["name"]) if gpu else "cpu",
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "gpu": gpu,
        "python": platform.python_version(),
        "torch": _version("torch"),
        "triton": _version("triton"),
        "platform": platform.platform(),
    }


def host_kind() -> str:
    return str(detect()["host_kind"])
