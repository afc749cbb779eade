"""Reading input files row by row, so one bad row is reported with its file and line instead of stopping a run.

Every importer reads its JSON, JSON Lines and CSV through these helpers: bytes that are not UTF-8, malformed JSON,
``NaN``/``Infinity`` (which Python's json accepts and a catalog would store as null), duplicated keys (which
json.loads silently resolves to the last one) and numbers out of range each become a ``RowError`` naming the
problem; the caller quarantines the row, file or episode and goes on.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class RowError(ValueError):
    """A value, line or file that cannot be used; the message says why."""


@dataclass(frozen=True)
class Problem:
    """A row or file that was refused: where it is and why, with the raw text when there is one."""

    source: str
    locator: str
    reason: str
    raw: str = ""


def _refuse_constant(name: str) -> Any:
    raise RowError(f"{name} is not a number JSON allows (NaN and infinities are refused)")


class JsonObject(dict):
    """A parsed JSON object that remembers the keys it held more than once (the first value is kept)."""

    duplicated: frozenset[str] = frozenset()


def loads(text: str, *, keyed: bool = False) -> Any:
    """JSON without NaN/Infinity and without duplicated keys; RowError naming the problem. With ``keyed`` (a file
    keyed by episode or video), a key repeated at the top level is allowed and listed in the result's
    ``duplicated``, so the caller refuses that one item instead of the whole file."""
    repeated: list[JsonObject] = []

    def collect(pairs: list[tuple[str, Any]]) -> JsonObject:
        result, seen = JsonObject(), set()
        for key, value in pairs:
            if key in result:
                seen.add(key)
                continue
            result[key] = value
        if seen:
            result.duplicated = frozenset(seen)
            repeated.append(result)
        return result

    try:
        data = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=collect)
    except json.JSONDecodeError as error:
        raise RowError(f"not valid JSON ({error.msg} at line {error.lineno} column {error.colno})") from None
    for obj in repeated:
        if not (keyed and obj is data):
            raise RowError(f"key {sorted(obj.duplicated)[0]!r} appears twice in one object")
    return data


def read_text(path: Path) -> str:
    """A whole file as UTF-8; RowError naming the file and the first bad byte."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise RowError(f"{path}: not UTF-8 text (byte {error.start}: {error.reason})") from None
    except OSError as error:
        raise RowError(f"{path}: unreadable ({error.strerror or error})") from None


def load_json(path: Path, *, keyed: bool = False) -> Any:
    """A JSON file (see ``loads``); RowError naming the file and the problem."""
    try:
        return loads(read_text(path), keyed=keyed)
    except RowError as error:
        message = str(error)
        raise RowError(message if message.startswith(str(path)) else f"{path}: {message}") from None


def lines(path: Path) -> Iterator[tuple[int, str | None, str]]:
    """(line number, text or None, reason) for every non-blank line; a line that is not UTF-8 comes with None
    and the reason, the rest of the file still read."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as error:
                yield number, None, f"not UTF-8 text (byte {error.start} of the line: {error.reason})"
                continue
            if text.strip():
                yield number, text, ""


def csv_rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str] | None, str, str]]:
    """(line number, row or None, reason, raw line) per CSV data row; the header must name ``required``. Rows are
    one line each (a quoted field spanning lines is reported as a bad row)."""
    header: list[str] | None = None
    for number, text, reason in lines(path):
        if text is None:
            yield number, None, reason, ""
            continue
        try:
            fields = next(csv.reader([text]))
        except csv.Error as error:
            yield number, None, f"not a CSV row ({error})", text
            continue
        if header is None:
            header = [name.strip().lstrip("\ufeff") for name in fields]
            missing = [name for name in required if name not in header]
            if missing:
                raise RowError(f"{path}: the header names no {', '.join(missing)} column (has {', '.join(header)})")
            continue
        if len(fields) > len(header):
            yield number, None, f"{len(fields)} fields, the header has {len(header)}", text
            continue
        yield number, dict(zip(header, fields + [""] * (len(header) - len(fields)), strict=True)), "", text


def finite(value: Any, what: str, *, low: float | None = None, high: float | None = None,
           strictly_above: float | None = None) -> float:
    """A finite number (JSON number or numeric string) within the bounds; RowError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise RowError(f"{what} must be a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise RowError(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise RowError(f"{what} must be a finite number, got {value!r}")
    if low is not None and number < low:
        raise RowError(f"{what} must be at least {low:g}, got {value!r}")
    if strictly_above is not None and number <= strictly_above:
        raise RowError(f"{what} must be above {strictly_above:g}, got {value!r}")
    if high is not None and number > high:
        raise RowError(f"{what} must be at most {high:g}, got {value!r}")
    return number


# Frame indices, step counts and episode indices beyond this are not data but damage (10**30 overflows the catalog).
MAX_COUNT = 10**9
MAX_FPS = 10_000.0  # likewise a frame rate above this


def whole(value: Any, what: str, *, low: int = 0, high: int = MAX_COUNT) -> int:
    """A whole number (``12``, ``12.0``, ``"12"``) within [low, high]; RowError otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        number_f = finite(value, what)
        if number_f != int(number_f):
            raise RowError(f"{what} must be a whole number, got {value!r}")
        number = int(number_f)
    if not low <= number <= high:
        raise RowError(f"{what} must lie in {low}-{high}, got {value!r}")
    return number


def text_field(value: Any, what: str) -> str:
    """A non-empty string; RowError otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise RowError(f"{what} must be non-empty text, got {value!r}")
    return value
