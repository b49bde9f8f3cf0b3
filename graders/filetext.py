"""Task files as the platform stores them: text, with gzip files as base64.

Task files travel as text everywhere (the database, grading messages, the API,
exports), and nearly all of them are UTF-8 source, statements and settings. A
few are binary by nature: a profiler trace is usually shipped gzip-compressed
(``rank0.json.gz``). A file whose path ends in one of ``BINARY_SUFFIXES`` is
stored as the base64 of its bytes, and ``file_bytes`` gives the bytes back, so
that a bundle exported from the platform is byte for byte the bundle imported.
The suffix alone decides: there is no second flag to get out of step.
"""

from __future__ import annotations

import base64
import binascii

BINARY_SUFFIXES = (".gz",)
GZIP_MAGIC = b"\x1f\x8b"


def is_binary(path: str) -> bool:
    """Whether the platform stores the file at ``path`` as base64."""
    return path.endswith(BINARY_SUFFIXES)


def stored_text(path: str, data: bytes) -> str:
    """The text the platform stores for a file's bytes (UTF-8 must already be checked
    for text files)."""
    if is_binary(path):
        return base64.b64encode(data).decode("ascii")
    return data.decode("utf-8")


def file_bytes(path: str, text: str) -> bytes:
    """A stored file's bytes, as a bundle holds them."""
    if is_binary(path):
        try:
            return base64.b64decode(text.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise ValueError(f"{path}: the stored content is not base64") from None
    return text.encode("utf-8")
