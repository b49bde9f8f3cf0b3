"""Looks for the hidden reference and, if it can reach it, returns its answer.

It checks already-imported modules for a `ref_kernel`, tries `import
reference` (which searches sys.path), and scans the working directory, its
parents, /tmp and common work roots for a .py file that defines
`ref_kernel`. A sandbox that
keeps hidden files away from the submission leaves it nothing to find, and the
fallback, a loss of 0, is a wrong answer. If this negative is ever accepted,
hidden task files are leaking into the submission's sandbox.
"""

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

_MAX_FILE_BYTES = 1 << 20
_DEFINES_REF_KERNEL = re.compile(r"^def ref_kernel\(", re.MULTILINE)
_SELF = Path(__file__).resolve()


def _loaded_ref_kernel() -> Callable[..., Any] | None:
    for module in list(sys.modules.values()):
        candidate = getattr(module, "ref_kernel", None)
        if callable(candidate):
            return candidate
    try:
        return importlib.import_module("reference").ref_kernel  # type: ignore[no-any-return]
    except Exception:
        return None


def _search_roots() -> Iterator[Path]:
    cwd = Path.cwd()
    yield from (cwd, *cwd.parents)
    # Probing shared directories is the point of this negative.
    yield from (Path(p) for p in ("/tmp", "/work", "/workspace", "/grader", "/task", "/srv"))  # noqa: S108


def _candidate_files(root: Path) -> Iterator[Path]:
    # Two levels deep at most: enough for a task folder next to the work dir.
    for depth_glob in ("*.py", "*/*.py"):
        try:
            yield from root.glob(depth_glob)
        except OSError:
            continue


def _ref_kernel_from_disk() -> Callable[..., Any] | None:
    seen: set[Path] = set()
    for root in _search_roots():
        if root in seen or not root.is_dir():
            continue
        seen.add(root)
        for path in _candidate_files(root):
            try:
                if path.resolve() == _SELF or path.stat().st_size > _MAX_FILE_BYTES:
                    continue
                if not _DEFINES_REF_KERNEL.search(path.read_text()):
                    continue
                spec = importlib.util.spec_from_file_location(f"_found_{len(seen)}", path)
                if spec is None or spec.loader is None:
                    continue
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module.ref_kernel  # type: ignore[no-any-return]
            except Exception:  # noqa: S112 - an unreadable candidate is just skipped
                continue
    return None


_REF_KERNEL = _loaded_ref_kernel() or _ref_kernel_from_disk()


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    if _REF_KERNEL is not None:
        return _REF_KERNEL(data)  # type: ignore[no-any-return]
    logits, _ = data
    return torch.zeros((), dtype=torch.float32, device=logits.device)
