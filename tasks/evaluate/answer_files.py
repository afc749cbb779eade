"""Answers made elsewhere (``benchwright evaluate --predictions FILE``), read as the tools that wrote them wrote them.

A file is JSONL of ``{"key": ..., "answer": ...}`` (``id``/``prediction``/``response`` also read), a benchmark's own
harness's files (its evaluation reads their rows: ``Evaluation.answer_in_row``), or what VLMEvalKit and lmms-eval
write of a harness export. Every entry keeps the
line of the file it starts on, so a problem names the line a person opens the file at (a pretty-printed
``<model>.json`` has its entries on lines 2, 3, ...; a JSON list's may span several lines each).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tasks.evaluate.items import item_aliases
from tasks.evaluate.run import Collected
from tasks.evaluation_contract import Evaluation
from tasks.sources import rows
from tasks.sources.door import SourceFolder, entries_of, read_table_bytes
from tasks.sources.rows import RowError, delimited_records, lines


def last_answer(answer: Any) -> Any:
    """The final answer of a conversation written as a list (one per turn), else the answer itself."""
    return answer[-1] if isinstance(answer, list) and answer else answer


def answer_rows(door: SourceFolder, name: str, sha256: str | None = None) -> list[tuple[int, str, Any]]:
    """(line, the entry as text, parsed row or None) of an answers file, read through the source door. A whole JSON
    object of ``{key: answer or [answers]}`` gives one row per entry (a list's last answer is the final one); a JSON
    list one row per element; other text a row per line (JSONL). A VLMEvalKit prediction file (.xlsx, .tsv) gives
    a row per spreadsheet row. An entry or line that cannot be read (not UTF-8, NaN, a repeated key, nested too
    deep) is a row of its own, ``Unreadable`` with the reason. The file is read once; with ``sha256``, what was
    read must be the content an evaluation's run key named (a file rewritten between the two is refused, never
    scored under the earlier content's key)."""
    from tasks.exporting.predictions import TABLE_SUFFIXES, table_rows

    data = door.read_bytes(name)
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise RowError(f"{door.path(name)}: changed since this evaluation began (its run key names the content read "
                       f"then); run the evaluation again")
    suffix = Path(name).suffix.lower()
    if suffix == ".tsv":
        return _tsv_rows(data)
    if suffix in TABLE_SUFFIXES:
        frame = read_table_bytes(data, suffix, str(door.path(name)))
        return table_rows(list(enumerate(frame.to_dict(orient="records"), 2)))
    text = data.decode("utf-8", "surrogateescape")
    if _one_document(text):
        keyed = text.lstrip().startswith("{")
        entries = entries_of(text, str(door.path(name)))
        return [(line, _shown(key, value), ({"key": key, "answer": last_answer(value)} if keyed else value)
                 if not why else Unreadable(why)) for _, line, key, value, why in entries]
    return [(number, line, _row(line, why)) for number, line, why in lines(data.splitlines(keepends=True))]


def _tsv_rows(data: bytes) -> list[tuple[int, str, Any]]:
    """The rows of a VLMEvalKit TSV, each record parsed alone (``rows.delimited_records``): one that cannot be
    parsed, is not UTF-8 or has another number of fields than the header is ``Unreadable``, the rest scored."""
    from tasks.exporting.predictions import table_rows

    header: list[str] | None = None
    good: list[tuple[int, dict[str, Any]]] = []
    refused: list[tuple[int, str, Any]] = []
    # rows are numbered as a spreadsheet shows them (the header is row 1), whatever lines their cells span
    for row, (_, fields, why, raw) in enumerate(delimited_records(data, "\t"), 1):
        if header is None:
            if fields is None:
                return [(row, raw, Unreadable(f"the header row: {why}"))]
            header = [name.strip() for name in fields]
        elif fields is None or len(fields) != len(header):
            refused.append((row, raw, Unreadable(why or f"{len(fields or ())} fields, the header has {len(header)}")))
        else:
            good.append((row, dict(zip(header, fields, strict=True))))
    return sorted([*table_rows(good), *refused], key=lambda row: row[0])


def _one_document(text: str) -> bool:
    """A whole JSON list, or a JSON object that is not one answer (JSONL's lines are each an answer)."""
    start = text.lstrip()[:1]
    if start == "[":
        return True
    if start != "{":
        return False
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(whole, dict) and not {"key", "id"} & whole.keys()


def _shown(key: str | None, value: Any) -> str:
    return json.dumps({key: value} if key is not None else value, ensure_ascii=False, default=repr)


class Unreadable:
    """An entry or line of an answers file that could not be read, and why."""

    def __init__(self, why: str) -> None:
        self.why = why


def _row(line: str, why: str) -> Any:
    if why:
        return Unreadable(why)
    try:
        return rows.loads(line)
    except RowError as error:
        return Unreadable(str(error))


def key_and_answer(evaluation: Evaluation, row: dict[str, Any]) -> tuple[str | None, Any]:
    """The key and answer of a row: as the evaluation harnesses write them, as the benchmark's own harness does,
    else as ``key``/``id`` and ``answer``/``prediction``/``response``."""
    from tasks.exporting.predictions import harness_key_and_answer

    found = harness_key_and_answer(row)
    if found is None and not {"key", "id"} & row.keys():
        found = evaluation.answer_in_row(row)
    if found is not None:
        return found
    key = next((str(row[k]) for k in ("key", "id") if k in row), None)
    return key, next((row[k] for k in ("answer", "prediction", "response") if k in row), None)


_NEEDS = ("needs a \"key\" and an \"answer\" string (or the benchmark's own harness's fields, VLMEvalKit's "
          "\"index\" and \"prediction\", lmms-eval's \"doc\".\"index\" and \"filtered_resps\")")


def read_predictions(evaluation: Evaluation, path: Path, items: list[Any], sha256: str | None = None
                     ) -> tuple[Collected, list[tuple[int, str, str]]]:
    """The answers of an answers file, by item, and the lines that could not be used: (line, the line, why).
    A key is any of an item's aliases (its record id, its published ``<file>:<line>``, an EXPLORE clip id, its
    ``start_frame``...); an answer goes to every item of the release that the key names (the official EXPLORE
    evaluation scores two rows of one ``start_frame`` against the one answer), and an answer whose key names no
    item of the release is listed in ``Collected.elsewhere``, not refused. ``sha256``: see ``answer_rows``."""
    by_alias: dict[str, list[Any]] = {}
    for item in items:
        for alias in item_aliases(evaluation, item):
            by_alias.setdefault(alias, []).append(item)
    collected = Collected()
    problems: list[tuple[int, str, str]] = []
    seen: set[str] = set()  # items an earlier line answered, an empty answer included
    door, name = SourceFolder.of_file(path)
    for number, line, row in answer_rows(door, name, sha256):
        why, key, answer = _unusable(evaluation, row)
        if why:
            problems.append((number, line, why))
            continue
        named = by_alias.get(key, [])  # type: ignore[arg-type]
        if not named:
            collected.elsewhere.append((number, key))  # type: ignore[arg-type]
            continue
        if any(item.key in seen for item in named):
            problems.append((number, line, f"a second answer for {key!r}; the first is kept"))
            continue
        seen.update(item.key for item in named)
        if not answer.strip():  # no prediction (VLMEvalKit's empty cell, an empty string): the item is unanswered
            collected.empty.append((number, key))  # type: ignore[arg-type]
            continue
        for item in named:
            collected.answers[item.key] = answer
            collected.turns[item.key] = [answer]
    for item in items:
        if item.key not in collected.answers:
            collected.skipped[item.key] = "no answer in the predictions file"
    return collected, problems


def _unusable(evaluation: Evaluation, row: Any) -> tuple[str, str | None, Any]:
    """Why a row answers nothing ("" when it does), its key and its answer."""
    if isinstance(row, Unreadable):
        return row.why, None, None
    if not isinstance(row, dict):
        return "not a JSON object", None, None
    key, answer = key_and_answer(evaluation, row)
    if key is None or not isinstance(answer, str):
        return _NEEDS, None, None
    return "", key, answer
