"""A JSON list or object read entry by entry, for the source door (``SourceFolder.json_entries`` and
``SourceFolder.keyed_json``): each entry is parsed and checked alone (``tasks.sources.rows.loads``: NaN, infinities,
``1e400``, whole numbers beyond 64 bits, repeated keys), so an entry that is not UTF-8, holds a bad number or nests
too deep is refused with its reason and the others are read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tasks.sources import rows
from tasks.sources.rows import RowError

_SPACE = re.compile(r"[ \t\n\r]*")


def entries_of(text: str, what: str) -> Iterator[tuple[int, int, str | None, Any, str]]:
    """The entries of the JSON list or object in ``text`` (``SourceFolder.json_entries``); bytes that were not
    UTF-8 come as surrogate escapes and refuse their entry."""
    decoder = json.JSONDecoder()
    index = _SPACE.match(text).end()  # type: ignore[union-attr]
    if index >= len(text) or text[index] not in "[{":
        raise RowError(f"{what}: expected a JSON list or object")
    closing = "]" if text[index] == "[" else "}"
    index, number, line, counted = index + 1, 0, 1, 0
    while True:
        index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
        if number and text.startswith(",", index):
            index = _SPACE.match(text, index + 1).end()  # type: ignore[union-attr]
        if index >= len(text) or text[index] == closing:
            return
        line, counted = line + text.count("\n", counted, index), index
        try:
            key, start = _entry_key(decoder, text, index, closing)
            index = _value_end(decoder, text, start)
        except ValueError as error:
            yield number, line, None, None, f"not valid JSON ({error}); this entry and any after it cannot be read"
            return
        if index < 0:  # nested deeper than a parser reads: skipped by its brackets, refused alone
            index = -index
            yield number, line, key, None, "nested too deep to read"
            number += 1
            continue
        yield (number, line, key, *_checked_entry(text[start:index] if key is None or _utf8(key) else "\udcff"))
        number += 1


def _entry_key(decoder: json.JSONDecoder, text: str, index: int, closing: str) -> tuple[str | None, int]:
    if closing == "]":
        return None, index
    key, index = decoder.raw_decode(text, index)
    index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
    if not isinstance(key, str) or not text.startswith(":", index):
        raise ValueError("expected a key and a colon")
    return key, _SPACE.match(text, index + 1).end()  # type: ignore[union-attr]


_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _value_end(decoder: json.JSONDecoder, text: str, start: int) -> int:
    """Where the JSON value at ``start`` ends; minus that when it nests too deep for the parser (its end found by
    matching brackets outside strings). ValueError when it is not JSON."""
    try:
        return decoder.raw_decode(text, start)[1]
    except RecursionError:
        depth = 0
        for match in _STRING_OR_BRACKET.finditer(text, start):
            token = match.group()
            if token[0] == '"':
                continue
            depth += 1 if token in "[{" else -1
            if depth == 0:
                return -match.end()
        raise ValueError("a bracket is never closed") from None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _checked_entry(raw: str) -> tuple[Any, str]:
    """(value, "") or (None, why): an entry's value parsed again with every check of ``rows.loads``."""
    if not _utf8(raw):
        return None, "not UTF-8 text"
    try:
        return rows.loads(raw), ""
    except RowError as error:
        return None, str(error)
