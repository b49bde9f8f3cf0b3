"""task.toml as text: edits change only what changed.

A task's settings live in the database; its ``task.toml`` is rendered from them.
An author's hand-written file has comments, an order and a layout of its own, so
after an edit in the UI the new text is the last text the task had, with only the
values that differ written in (``tomlkit`` keeps the rest byte for byte). The
result must parse to exactly the new settings (the content hash is computed from
them); when it would not, the file is generated afresh.
"""

from __future__ import annotations

import json
from typing import Any

import tomli_w
import tomlkit
from tomlkit.items import AoT, Array, InlineTable, Table

# How the entries of each array of tables are told apart when entries come and go.
IDENTITY_KEYS = ("path", "id", "key", "name")
# Arrays whose order means nothing (a task's files are kept sorted by path): the
# text keeps the order it has.
UNORDERED = frozenset({("files",)})


def _canonical(value: Any) -> str:
    """Equal only when the TOML would be equal: 1 and 1.0 differ, as in the hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _plain(item: Any) -> Any:
    return item.unwrap() if hasattr(item, "unwrap") else item


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _identity(entry: dict[str, Any]) -> tuple[str, Any] | None:
    for key in IDENTITY_KEYS:
        if key in entry:
            return key, _canonical(entry[key])
    return None


def _normal(data: Any, path: tuple[str, ...] = ()) -> Any:
    """``data`` with the entries of unordered arrays sorted, for comparisons."""
    if isinstance(data, dict):
        return {key: _normal(value, (*path, key)) for key, value in data.items()}
    if isinstance(data, list) and path in UNORDERED:
        return sorted((_normal(v) for v in data), key=_canonical)
    return data


def _merge_table(container: Any, new: dict[str, Any], path: tuple[str, ...] = ()) -> None:
    for key in [key for key in container if key not in new]:
        del container[key]
    for key, value in new.items():
        if key not in container:
            container[key] = value
            continue
        current = container[key]
        where = (*path, key)
        if _canonical(_normal(_plain(current), where)) == _canonical(_normal(value, where)):
            continue
        if isinstance(value, dict) and isinstance(current, Table | InlineTable):
            _merge_table(current, value, where)
        elif _is_table_list(value) and isinstance(current, AoT):
            if where in UNORDERED:
                value = _in_order_of(current, value)
            try:
                _merge_tables(current, value)
            except _Rewrite:
                container[key] = value
        elif isinstance(value, list) and isinstance(current, Array):
            _merge_array(current, value)
        else:
            container[key] = value


def _merge_array(array: Array, new: list[Any]) -> None:
    """An inline array edited in place: items that changed are replaced, the rest keep
    their layout, extra ones go or new ones are appended."""
    for index, item in enumerate(new):
        if isinstance(item, dict):
            inline = tomlkit.inline_table()
            inline.update(item)
            item = inline
        if index >= len(array):
            array.append(item)
        elif _canonical(_plain(array[index])) != _canonical(_plain(item)):
            array[index] = item
    while len(array) > len(new):
        del array[len(array) - 1]


def _in_order_of(tables: AoT, new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``new`` with the entries the text has in the text's order, the others after."""
    place = {_identity(_plain(t)): index for index, t in enumerate(tables)}
    known = [entry for entry in new if _identity(entry) in place]
    known.sort(key=lambda entry: place[_identity(entry)])
    return known + [entry for entry in new if _identity(entry) not in place]


def _merge_tables(tables: AoT, new: list[dict[str, Any]]) -> None:
    """An array of tables: entries kept (matched by path, key or name, else by place)
    are edited in place, removed ones go, new ones are appended in order."""
    old = list(tables)
    matched: list[Table | None] = []
    by_identity = {_identity(_plain(t)): t for t in old if _identity(_plain(t)) is not None}
    for index, entry in enumerate(new):
        identity = _identity(entry)
        if identity is not None and identity in by_identity:
            matched.append(by_identity.pop(identity))
        elif identity is None and index < len(old) and _identity(_plain(old[index])) is None:
            matched.append(old[index])
        else:
            matched.append(None)
    kept_ids = {id(t) for t in matched if t is not None}
    order_kept = [id(t) for t in old if id(t) in kept_ids]
    first_new = next((i for i, t in enumerate(matched) if t is None), len(matched))
    if order_kept != [id(t) for t in matched if t is not None] or any(
        t is not None for t in matched[first_new:]
    ):
        # Reordered, or new entries between old ones: the array is written afresh.
        raise _Rewrite
    for position in reversed(range(len(old))):
        if id(old[position]) not in kept_ids:
            del tables[position]
    for table, entry in zip(matched, new, strict=True):
        if table is not None:
            _merge_table(table, entry)
    for entry in new[first_new:]:
        table = tomlkit.table()
        for key, value in entry.items():
            table[key] = value
        table.add(tomlkit.nl())
        tables.append(table)


class _Rewrite(Exception):
    """An edit the text cannot take in place."""


def edited(original: str, data: dict[str, Any]) -> str:
    """``original`` with ``data``'s values written in; a fresh file when that fails."""
    try:
        document = tomlkit.parse(original)
        _merge_table(document, data)
        text = tomlkit.dumps(document)
        if _canonical(_normal(tomlkit.parse(text).unwrap())) == _canonical(_normal(data)):
            return text
    except (_Rewrite, tomlkit.exceptions.TOMLKitError, ValueError, TypeError, KeyError):
        pass
    return tomli_w.dumps(data)
