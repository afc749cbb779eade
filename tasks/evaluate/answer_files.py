"""Answers made elsewhere (``benchwright evaluate --predictions FILE``), read as the tools that wrote them wrote them.

A file is JSONL of ``{"key": ..., "answer": ...}`` (``id``/``prediction``/``response`` also read), the official
EXPLORE-Bench harness's JSON, or what VLMEvalKit and lmms-eval write of a harness export. Every entry keeps the
line of the file it starts on, so a problem names the line a person opens the file at (a pretty-printed
``<model>.json`` has its entries on lines 2, 3, ...; a JSON list's may span several lines each).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tasks.evaluate.items import item_aliases
from tasks.evaluate.run import Collected

# What the official EXPLORE-Bench harness strips from a raw response before scoring (infer_utils.remove_tags),
# every closing brace included, as it does.
_OFFICIAL_TAGS = ("<|begin_of_box|>", "<|end_of_box|>", "<answer>", "</answer>", "\\boxed{", "}")
_SPACE = re.compile(r"[ \t\n\r]*")


def official_clean(response: Any) -> Any:
    """A raw response of the official harness as its convert_list_to_dict leaves it: the text after the first
    ``</think>``, the tags above removed; a list of responses (stepwise strategies) element by element."""
    if isinstance(response, list):
        return [official_clean(r) for r in response]
    if not isinstance(response, str):
        return response
    _, found, after = response.partition("</think>")
    text = after.lstrip() if found else response
    for tag in _OFFICIAL_TAGS:
        text = text.replace(tag, "")
    return text


def _last(answer: Any) -> Any:
    """The final scene: the last description of a list (single- or multi-turn), else the answer itself."""
    return answer[-1] if isinstance(answer, list) and answer else answer


def _whole(text: str) -> Any:
    """The file as one JSON value, or None when it is not one (JSONL, or nesting too deep to read)."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None


def json_entries(text: str) -> Iterator[tuple[int, str | None, Any]]:
    """(line the entry starts on, its key or None in a list, its value) for every entry of the JSON object or list
    that ``text`` holds, a key written twice included (a dict would keep only the last). ``text`` must be valid
    JSON (``_whole`` read it)."""
    decoder = json.JSONDecoder()
    index = _SPACE.match(text).end()  # type: ignore[union-attr]
    closing = "}" if text[index] == "{" else "]"
    index, line, counted = index + 1, 1, 0
    while True:
        index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
        if text[index] == ",":
            index = _SPACE.match(text, index + 1).end()  # type: ignore[union-attr]
        if text[index] == closing:
            return
        line, counted = line + text.count("\n", counted, index), index
        key = None
        if closing == "}":
            key, index = decoder.raw_decode(text, index)
            index = _SPACE.match(text, index).end() + 1  # type: ignore[union-attr]  # past the colon
            index = _SPACE.match(text, index).end()  # type: ignore[union-attr]
        value, index = decoder.raw_decode(text, index)
        yield line, key, value


def answer_rows(path: Path) -> list[tuple[int, str, Any]]:
    """(line, the entry as text, parsed row or None) of an answers file. The official EXPLORE-Bench harness's files
    are read as they are: its scored file, one JSON object ``{start_frame: description or [descriptions]}``, gives
    one row per entry; its ``results.json``, a JSON list of ``{start_frame, response, success}``, one row per
    element (the response cleaned as the harness cleans it); the last description of a list is the answer. Its
    per-chunk ``results_<k>.json`` are JSONL with the same keys. A VLMEvalKit prediction file (.xlsx, .tsv) gives
    a row per spreadsheet row (tasks/exporting/predictions.py)."""
    from tasks.exporting.predictions import TABLE_SUFFIXES, table_rows

    if path.suffix in TABLE_SUFFIXES:
        return table_rows(path)
    text = path.read_text(encoding="utf-8")
    whole = _whole(text)
    if isinstance(whole, dict) and not {"key", "id"} & whole.keys():
        return [(line, json.dumps({key: value}, ensure_ascii=False), {"key": key, "answer": _last(value)})
                for line, key, value in json_entries(text)]
    if isinstance(whole, list):
        return [(line, json.dumps(row, ensure_ascii=False), row) for line, _, row in json_entries(text)]
    rows: list[tuple[int, str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            rows.append((number, line, _whole(line)))
    return rows


def key_and_answer(row: dict[str, Any]) -> tuple[str | None, Any]:
    from tasks.exporting.predictions import harness_key_and_answer

    harness = harness_key_and_answer(row)
    if harness is not None:
        return harness
    if "start_frame" in row and "response" in row and not {"key", "id"} & row.keys():
        return str(row["start_frame"]), _last(official_clean(row["response"]))
    key = next((str(row[k]) for k in ("key", "id") if k in row), None)
    return key, next((row[k] for k in ("answer", "prediction", "response") if k in row), None)


_NEEDS = ("needs a \"key\" and an \"answer\" string (or the official \"start_frame\" and \"response\", VLMEvalKit's "
          "\"index\" and \"prediction\", lmms-eval's \"doc\".\"index\" and \"filtered_resps\")")


def read_predictions(path: Path, items: list[Any], benchmark: str) -> tuple[Collected, list[tuple[int, str, str]]]:
    """The answers of an answers file, by item, and the lines that could not be used: (line, the line, why).
    A key is any of an item's aliases (its record id, its published ``<file>:<line>``, an EXPLORE clip id, its
    ``start_frame``...); an answer goes to every item of the release that the key names (the official EXPLORE
    evaluation scores two rows of one ``start_frame`` against the one answer), and an answer whose key names no
    item of the release is listed in ``Collected.elsewhere``, not refused."""
    by_alias: dict[str, list[Any]] = {}
    for item in items:
        for alias in item_aliases(item, benchmark):
            by_alias.setdefault(alias, []).append(item)
    collected = Collected()
    problems: list[tuple[int, str, str]] = []
    for number, line, row in answer_rows(path):
        why, key, answer = _unusable(path, row)
        if why:
            problems.append((number, line, why))
            continue
        named = by_alias.get(key, [])  # type: ignore[arg-type]
        if not named:
            collected.elsewhere.append((number, key))  # type: ignore[arg-type]
            continue
        if any(item.key in collected.answers for item in named):
            problems.append((number, line, f"a second answer for {key!r}; the first is kept"))
            continue
        for item in named:
            collected.answers[item.key] = answer
            collected.turns[item.key] = [answer]
    for item in items:
        if item.key not in collected.answers:
            collected.skipped[item.key] = "no answer in the predictions file"
    return collected, problems


def _unusable(path: Path, row: Any) -> tuple[str, str | None, Any]:
    """Why a row answers nothing ("" when it does), its key and its answer."""
    from tasks.exporting.predictions import empty_prediction

    if row is None:
        return "not JSON", None, None
    if not isinstance(row, dict):
        return "not a JSON object", None, None
    key, answer = key_and_answer(row)
    if key is None or not isinstance(answer, str):
        return _NEEDS, None, None
    if empty_prediction(path, answer):
        return "empty prediction", None, None
    return "", key, answer
