"""How tasks and solutions read as chat turns.

A user turn is the task statement followed by each file shown to solvers, a
heading with its path above a fenced block. An assistant turn is the
submission's files in the same form, after its explanation when one is
included. The same layout in every format, so a model trained on one reads
the others.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from graders.filetext import file_bytes, is_binary
from submissions.fingerprint import split_name

_BACKTICKS = re.compile(r"`+")

LANGUAGES = {
    ".py": "python",
    ".cu": "cuda",
    ".cuh": "cuda",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".cxx": "cpp",
    ".c": "c",
    ".h": "cpp",
    ".hpp": "cpp",
    ".md": "markdown",
    ".toml": "toml",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".sh": "bash",
    ".txt": "text",
}


def fence(path: str, content: str) -> str:
    """``content`` in a fenced block longer than any backtick run inside it. A gzip
    file (kept as base64) is named with its size instead: its bytes are not text."""
    if is_binary(path):
        size = len(file_bytes(path, content))
        return f"### `{path}`\n\n(gzip data, {size} bytes, given as a file)"
    language = LANGUAGES.get(split_name(path)[1], "")
    longest = max(map(len, _BACKTICKS.findall(content)), default=0) if "```" in content else 0
    ticks = "`" * max(3, longest + 1)
    body = content if content.endswith("\n") else content + "\n"
    return f"### `{path}`\n\n{ticks}{language}\n{body}{ticks}"


def render_files(files: Sequence[tuple[str, str]]) -> str:
    return "\n\n".join(fence(path, content) for path, content in files)


def render_prompt(statement: str, files: Sequence[tuple[str, str]]) -> str:
    text = statement.strip()
    if files:
        text += "\n\n## Files\n\n" + render_files(files)
    return text


def render_solution(files: Sequence[tuple[str, str]], explanation: str = "") -> str:
    code = render_files(files)
    explanation = explanation.strip()
    return f"{explanation}\n\n{code}" if explanation else code


def canonical_json(value: Any) -> str:
    """Key order as sorted, not as the database returned it (jsonb reorders keys)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
