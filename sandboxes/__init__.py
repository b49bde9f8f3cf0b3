"""Sandbox backends and the code that runs inside them. Plain Python: no Django here."""

from __future__ import annotations

from .base import Sandbox


def get_backend(name: str) -> Sandbox:
    """A sandbox backend by name: ``"bwrap"`` or ``"docker"``."""
    if name == "bwrap":
        from .bwrap import BwrapSandbox

        return BwrapSandbox()
    if name == "docker":
        from .docker import DockerSandbox

        return DockerSandbox()
    raise ValueError(f"unknown sandbox backend {name!r}; known: bwrap, docker")
