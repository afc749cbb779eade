"""Reading input files row by row, so one bad row is reported with its file and line instead of stopping a run.

Every importer reads its JSON, JSON Lines and CSV through the source door (``tasks.sources.door.SourceFolder``),
which opens the file and parses it with these helpers (they never open a file themselves): bytes that are not
UTF-8, malformed JSON, ``NaN``/``Infinity`` (which Python's json accepts and a catalog would store as null),
duplicated keys (which json.loads silently resolves to the last one) and numbers out of range each become a
``RowError`` naming the problem; the caller quarantines the row, file or episode and goes on.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson


class RowError(ValueError):
    """A value, line or file that cannot be used; the message says why."""


@dataclass(frozen=True)
class Problem:
    """A row or file that was refused: where it is and why, with the raw text when there is one."""

    source: str
    locator: str
    reason: str
    raw: str = ""


class NotFinite:
    """Where the JSON said NaN, Infinity or -Infinity, a number beyond a double (``1e400``, which Python's parser
    reads as infinity) or a whole number beyond 64 bits (which no catalog column holds): kept as a marker that no
    number check accepts."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


class JsonObject(dict):
    """A parsed JSON object that remembers the keys it held more than once (the first value is kept)."""

    duplicated: frozenset[str] = frozenset()


def _not_finite_in(value: Any) -> str | None:
    if isinstance(value, NotFinite):
        return value.name
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return next((found for found in map(_not_finite_in, children) if found), None)


def problems_of(data: Any) -> dict[str, str]:
    """For a file ``loads`` read with ``keyed``: the top-level keys refused, with the reason."""
    return getattr(data, "problems", {})


# Digits mapped to "0", a point kept, every other byte a space: "0" * 19 after a space then marks a whole number of
# 19 digits or more (a fraction's digits follow a point), which orjson may read as a float.
_DIGITS = bytes(0x30 if 0x30 <= byte <= 0x39 else byte if byte == 0x2E else 0x20 for byte in range(256))
_LONG_NUMBER = b" " + b"0" * 19
_INT64 = (-(2**63), 2**63 - 1)  # the whole numbers a catalog column (BIGINT) holds


def _checked_quickly(text: str) -> Any:
    """``text`` parsed by orjson when that is certainly what ``loads``' own parse returns, else ``None`` (then
    ``loads`` parses it itself). Python's parser with a hook per object took 1.75 ms of a sample-world episode.json
    (56 KB, mostly floats), this 0.85 ms: 0.2 s of CPU of a 240-episode build (bench/progress_build.py).

    orjson reads every valid JSON as Python's json does, except: NaN/Infinity, numbers out of a double's range and
    lone surrogates, which it refuses (``loads`` then names the problem); integers beyond 64 bits, which it turns into
    floats (text with 19 digits in a row not after a point is left to ``loads``); and a repeated key, which it keeps
    silently. Outside strings JSON has no quotes, and inside them a quote is written ``\\"`` (or ``\\u0022``: text
    holding ``\\u`` is left to ``loads``), which orjson writes back alike; so a repeated key, dropped with its value,
    leaves fewer quotes in orjson's output of the parse than in the text."""
    raw = text.encode("utf-8", "surrogatepass")
    if b"\\u" in raw or _LONG_NUMBER in b" " + raw.translate(_DIGITS):
        return None
    try:
        data = orjson.loads(raw)
        written = orjson.dumps(data)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):  # refused, or nested deeper than orjson writes
        return None
    return data if written.count(b'"') == raw.count(b'"') else None


def loads(text: str, *, keyed: bool = False) -> Any:
    """JSON without NaN/Infinity and without duplicated keys; RowError naming the problem. With ``keyed`` (a file
    keyed by episode or video), a top-level key repeated or holding NaN/Infinity is not an error for the file:
    it is listed in ``problems_of(result)``, so the caller refuses that one item instead of the whole file. A
    ``\\u0000`` (NUL) anywhere is refused: PostgreSQL cannot read it back out of a JSON column (``->>``)
    (raw NUL bytes are not JSON at all)."""
    if "\\u0000" in text:
        raise RowError("holds a NUL character (\\u0000), which a catalog cannot query")
    quick = _checked_quickly(text)
    if quick is not None:
        return quick
    repeated: list[JsonObject] = []
    constants: list[NotFinite] = []  # the walk below looks for them only when the parser met one

    def constant(name: str) -> NotFinite:
        constants.append(NotFinite(name))
        return constants[-1]

    def decimal(text: str) -> float | NotFinite:
        number = float(text)
        return number if math.isfinite(number) else constant(text)

    def integer(text: str) -> int | NotFinite:
        number = int(text)
        return number if _INT64[0] <= number <= _INT64[1] else constant(f"{text} (beyond 64 bits)")

    def collect(pairs: list[tuple[str, Any]]) -> JsonObject:
        result = JsonObject(pairs)  # built in C; keys are almost never repeated, so check the count first
        if len(result) == len(pairs):
            return result
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
        data = json.loads(text, parse_constant=constant, parse_float=decimal, parse_int=integer,
                          object_pairs_hook=collect)
    except RecursionError:
        raise RowError("not valid JSON (nested too deep to read)") from None
    except json.JSONDecodeError as error:
        # a row of a JSONL file is one line: its file line is already in the locator, the column is what helps
        where = f"column {error.colno}" if "\n" not in text.strip() else f"line {error.lineno} column {error.colno}"
        raise RowError(f"not valid JSON ({error.msg} at {where})") from None
    for obj in repeated:
        if not (keyed and obj is data):
            raise RowError(f"key {sorted(obj.duplicated)[0]!r} appears twice in one object")
    if keyed and isinstance(data, JsonObject):
        data.problems = {key: f"{key!r} appears twice" for key in data.duplicated}
        for key, value in data.items() if constants else ():
            found = _not_finite_in(value)
            if found and key not in data.problems:
                data.problems[key] = f"{key!r} holds {found}, not a finite number (NaN, infinities, numbers " \
                                     f"beyond a double and whole numbers beyond 64 bits are refused)"
    elif constants and (found := _not_finite_in(data)) is not None:
        raise RowError(f"{found} is not a finite number (NaN, infinities, numbers beyond a double and whole "
                       f"numbers beyond 64 bits are refused)")
    return data


def lines(raw: Iterable[bytes]) -> Iterator[tuple[int, str, str]]:
    """(line number, text, reason) for every non-blank line of ``raw`` (a file's lines as bytes, as the source
    door reads them: ``SourceFolder.lines``); reason is empty unless the line is not UTF-8, when the text has the bad
    bytes replaced (enough to tell which item the line belongs to, never to use it)."""
    for number, line in enumerate(raw, start=1):
        reason = ""
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            text = line.decode("utf-8", "replace")
            reason = f"not UTF-8 text (byte {error.start} of the line: {error.reason})"
        text = text.rstrip("\r\n")
        if text.strip():
            yield number, text, reason


def csv_rows(raw: Iterable[bytes], required: tuple[str, ...], what: str
             ) -> Iterator[tuple[int, dict[str, str] | None, str, str]]:
    """(line number, row or None, reason, raw line) per CSV data row of ``raw`` (as ``lines``); the header must name
    ``required``, else RowError naming ``what`` (the file). A row with a reason is bad (not UTF-8: its fields read
    with the bad bytes replaced). Rows are one line each (a quoted field spanning lines is reported as a bad row)."""
    header: list[str] | None = None
    for number, text, reason in lines(raw):
        try:
            fields = next(csv.reader([text]))
        except csv.Error as error:
            yield number, None, f"not a CSV row ({error})", text
            continue
        if header is None:
            header = [name.strip().lstrip("\ufeff") for name in fields]
            missing = [name for name in required if name not in header]
            if missing:
                raise RowError(f"{what}: the header names no {', '.join(missing)} column (has {', '.join(header)})")
            continue
        if len(fields) > len(header):
            yield number, None, f"{len(fields)} fields, the header has {len(header)}", text
            continue
        yield number, dict(zip(header, fields + [""] * (len(header) - len(fields)), strict=True)), reason, text


def delimited_records(data: bytes, delimiter: str) -> Iterator[tuple[int, list[str] | None, str, str]]:
    """(first line, fields or None, reason, raw text) per record of a delimited file (a TSV a harness wrote), quoted
    fields spanning lines included (a model's answer often has several): a record that cannot be parsed, or holds
    bytes that are not UTF-8, is refused alone and the next one read."""
    text = data.decode("utf-8", "surrogateescape").removeprefix("\ufeff")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    start = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            yield start, None, f"not a delimited row ({error})", ""
            start = reader.line_num + 1
            continue
        raw = delimiter.join(fields)
        shown = raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        bad = shown != raw
        if fields:
            yield start, None if bad else fields, "not UTF-8 text" if bad else "", shown
        start = reader.line_num + 1


def finite(value: Any, what: str, *, low: float | None = None, high: float | None = None,
           strictly_above: float | None = None) -> float:
    """A finite number (JSON number or numeric string) within the bounds; RowError otherwise."""
    if isinstance(value, NotFinite):
        raise RowError(f"{what} must be a finite number, got {value!r}")
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
