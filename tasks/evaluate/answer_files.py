"""Answers made elsewhere (``benchwright evaluate --predictions FILE``), read as the tools that wrote them wrote them.

A file is JSONL of ``{"key": ..., "answer": ...}`` (``id``/``prediction``/``response`` also read), a benchmark's own
harness's files (its evaluation reads their rows: ``Evaluation.answer_in_row``), or what VLMEvalKit and lmms-eval
write of a harness export. Every entry keeps the
line of the file it starts on, so a problem names the line a person opens the file at (a pretty-printed
``<model>.json`` has its entries on lines 2, 3, ...; a JSON list's may span several lines each).

Several files are one run (``read_prediction_files``: a harness writes one per configuration or task): an item
answered in two is refused the second time with where the first is, and files that answer no item of the release
are an error naming each file and why (``nothing_answered``), never a run of nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
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
    """A whole JSON list, or a JSON object that is not one answer (JSONL's lines are each an answer: a file of one
    line holding an lmms-eval sample, ``doc_id``..., or a VLMEvalKit row, ``index`` and ``prediction``, is a file of
    one answer)."""
    start = text.lstrip()[:1]
    if start == "[":
        return True
    if start != "{":
        return False
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return (isinstance(whole, dict) and not {"key", "id", "doc_id"} & whole.keys()
            and not {"index", "prediction"} <= whole.keys())


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


class HarnessContext:
    """What reading one file of a harness's answers needs beyond the file: the rows of the release's export (built
    once, on the first lmms-eval line that has only its ``doc_id``) and the strategy being evaluated."""

    def __init__(self, export: Callable[[], Any] | None = None, strategy: str | None = None) -> None:
        self._export, self._built = export, None
        self.strategy = strategy

    def task_rows(self, file_name: str) -> tuple[list[Any] | None, str]:
        if self._export is None:
            return None, ("an lmms-eval line without its doc's index is read by its doc_id in the release's export, "
                          "which this reader was not given")
        if self._built is None:
            self._built = self._export()
        return self._built.task_rows(file_name)  # type: ignore[attr-defined]


def key_and_answer(evaluation: Evaluation, row: dict[str, Any], rows_of: Callable[[], tuple[Any, str]] | None = None
                   ) -> tuple[str | None, Any, str, str | None]:
    """The key, answer, why the row answers nothing ("" when it does) and the exported strategy it answers (None
    where the file does not say) of a row: as the evaluation harnesses write them (an lmms-eval line without its
    doc through ``rows_of``, the rows of its file's task, and why there are none), as the benchmark's own harness
    does, else as ``key``/``id`` and ``answer``/``prediction``/``response``."""
    from tasks.exporting.predictions import harness_line

    doc = row.get("doc")
    if "doc_id" in row and rows_of is not None and not (isinstance(doc, dict) and doc.get("index") is not None):
        found = harness_line(row, *rows_of())
    else:
        found = harness_line(row)
    if found is not None:
        return found.key, found.answer, found.why, found.strategy
    own = evaluation.answer_in_row(row) if not {"key", "id"} & row.keys() else None
    if own is not None:
        return own[0], own[1], "", None
    key = next((str(row[k]) for k in ("key", "id") if k in row), None)
    return key, next((row[k] for k in ("answer", "prediction", "response") if k in row), None), "", None


_NEEDS = ("needs a \"key\" and an \"answer\" string (or the benchmark's own harness's fields, VLMEvalKit's "
          "\"index\" and \"prediction\", lmms-eval's \"doc_id\" and \"filtered_resps\")")


def read_predictions(evaluation: Evaluation, path: Path, items: list[Any], sha256: str | None = None,
                     context: HarnessContext | None = None, seen: dict[str, tuple[str, int]] | None = None
                     ) -> tuple[Collected, list[tuple[int, str, str]]]:
    """The answers of an answers file, by item, and the lines that could not be used: (line, the line, why).
    A key is any of an item's aliases (its record id, its published ``<file>:<line>``, an EXPLORE clip id, its
    ``start_frame``...); an answer goes to every item of the release that the key names (the official EXPLORE
    evaluation scores two rows of one ``start_frame`` against the one answer), and an answer whose key names no
    item of the release is listed in ``Collected.elsewhere``, not refused; one to another strategy's question
    than ``context.strategy`` (a ViC-Bench Stage-2 log read for Stage 1) in ``Collected.unasked``. ``seen``: the
    items earlier files answered (item key -> (file, line)), whose second answer is refused. ``sha256``: see
    ``answer_rows``."""
    by_alias: dict[str, list[Any]] = {}
    for item in items:
        for alias in item_aliases(evaluation, item):
            by_alias.setdefault(alias, []).append(item)
    context = context or HarnessContext()
    collected = Collected()
    problems: list[tuple[int, str, str]] = []
    seen = {} if seen is None else seen  # items answered, an empty answer included
    door, name = SourceFolder.of_file(path)
    rows_of = _once(lambda: context.task_rows(name))
    for number, line, row in answer_rows(door, name, sha256):
        why, key, answer, strategy = _unusable(evaluation, row, rows_of)
        if why:
            problems.append((number, line, why))
            continue
        named = by_alias.get(key, [])  # type: ignore[arg-type]
        if not named:
            collected.elsewhere.append((number, key))  # type: ignore[arg-type]
            continue
        if strategy and context.strategy and strategy != context.strategy:
            collected.unasked.append((number, key, strategy))  # type: ignore[arg-type]
            continue
        first = next((seen[item.key] for item in named if item.key in seen), None)
        if first is not None:
            where = "" if first[0] == str(path) else f" (the first: {first[0]}, line {first[1]})"
            problems.append((number, line, f"a second answer for {key!r}{where}; the first is kept"))
            continue
        seen.update({item.key: (str(path), number) for item in named})
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


def _once(make: Callable[[], Any]) -> Callable[[], Any]:
    made: list[Any] = []

    def value() -> Any:
        if not made:
            made.append(make())
        return made[0]

    return value


def _unusable(evaluation: Evaluation, row: Any, rows_of: Callable[[], tuple[Any, str]] | None = None
              ) -> tuple[str, str | None, Any, str | None]:
    """Why a row answers nothing ("" when it does), its key, its answer and the strategy it answers."""
    if isinstance(row, Unreadable):
        return row.why, None, None, None
    if not isinstance(row, dict):
        return "not a JSON object", None, None, None
    key, answer, why, strategy = key_and_answer(evaluation, row, rows_of)
    if why:
        return why, None, None, None
    if key is None or not isinstance(answer, str):
        return _NEEDS, None, None, None
    return "", key, answer, strategy


def read_prediction_files(evaluation: Evaluation, paths: list[str], items: list[Any],
                          sha256s: list[str] | None = None, context: HarnessContext | None = None
                          ) -> tuple[Collected, list[tuple[str, int, str, str]]]:
    """The answers of several answers files as one run (VLMEvalKit writes a file per configuration, lmms-eval one
    per task): each file read on its own (``read_predictions``), an item answered in two files refused the second
    time with where the first is; each file's own findings in ``Collected.by_file``. The problems are (file,
    line, the line, why)."""
    merged, problems = Collected(), []
    seen: dict[str, tuple[str, int]] = {}
    for n, path in enumerate(paths):
        collected, found = read_predictions(evaluation, Path(path), items, sha256s[n] if sha256s else None,
                                            context, seen)
        merged.by_file[path] = collected
        merged.answers.update(collected.answers)
        merged.turns.update(collected.turns)
        merged.elsewhere += collected.elsewhere
        merged.empty += collected.empty
        merged.unasked += collected.unasked
        problems += [(path, number, line, why) for number, line, why in found]
    merged.skipped = {item.key: "no answer in the predictions file" + ("s" if len(paths) > 1 else "")
                      for item in items if item.key not in merged.answers}
    return merged, problems


def nothing_answered(collected: Collected, problems: list[tuple[str, int, str, str]], paths: list[str],
                     release: str) -> str:
    """Why no item of ``release`` got an answer from the files, in one line naming each file ("" when some item
    did): its lines refused (how many, the first reason), its answers to other items or strategies, its empty
    answers."""
    if collected.answers:
        return ""
    parts = []
    for path in paths:
        mine = collected.by_file.get(path, Collected())
        refused = [(n, why) for where, n, _, why in problems if where == path]
        said = [f"{len(refused)} line(s) refused (line {refused[0][0]}: {refused[0][1]})"] if refused else []
        said += [f"{len(mine.elsewhere)} answer(s) to items not in {release}"] if mine.elsewhere else []
        said += [f"{len(mine.unasked)} answer(s) to the {mine.unasked[0][2]} questions"] if mine.unasked else []
        said += [f"{len(mine.empty)} empty answer(s)"] if mine.empty else []
        parts.append(f"{path}: " + ("; ".join(said) or "no answer in it"))
    return f"no answer for any item of {release}, so nothing was scored: " + " | ".join(parts)
