"""Predictions as the harnesses write them, read back as answers keyed by the exported ``index`` (the item's record
id, see rows.py):

- VLMEvalKit: its prediction file, ``<model>_<dataset>.xlsx`` (its default), ``.tsv`` or ``.json``
  (``PRED_FORMAT``), the exported columns plus ``prediction``; rows are numbered as a spreadsheet shows them (the
  header is row 1). One file per configuration (dataset).
- lmms-eval: the ``--log_samples`` files, ``<date_id>_samples_<task>.jsonl``, one per task (configuration), a line
  per sample. lmms-eval 0.7 writes ``doc_id`` (the row's position in the task's dataset), ``target``,
  ``filtered_resps`` (the response after the task's filters, one string for a one-request task; ``resps`` where it
  differs), ``input`` (the prompt), ``doc_hash``, ``token_counts`` and what ``process_results`` returned, and drops
  ``doc``. A line is mapped back by its task (the file's name; a task is ``<prefix>_<config>``, the configuration
  of the export) and ``doc_id``: the row an export of the release writes at that position of that configuration
  (``rows.exported_rows``: the order is the release's, with no file of the export needed). The line must agree
  with that row: its ``target`` is the row's answer, and the ``index`` the exported ``process_results`` echoes is
  the row's record id; a line of another export (another version of the release) is refused with the reason.
  Earlier lmms-eval versions kept ``doc`` (the row less its images): ``doc.index`` is then the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tasks.exporting.rows import ExportedRow, exported_rows, task_prefix

TABLE_SUFFIXES = (".xlsx", ".tsv")
SAMPLES_FILE = re.compile(r"(?:^|_)samples_(?P<task>.+)\.jsonl$", re.IGNORECASE)


def table_rows(records: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, str, Any]]:
    """(row number, the row as text, the row as a dict) of a VLMEvalKit prediction table's rows (row number, cells
    by column, every cell as written): ``{}`` for a row without an ``index`` and a ``prediction``; the exported
    ``strategy`` kept where the file has it."""
    rows = []
    for number, record in records:
        shown = [c for c in ("index", "prediction") if c in record]
        text = "\t".join(str(record[c]) for c in shown) or str(record)
        if len(shown) < 2:
            rows.append((number, text, {}))
            continue
        kept = {"index": record["index"], "prediction": record["prediction"]}
        if isinstance(record.get("strategy"), str) and record["strategy"].strip():
            kept["strategy"] = record["strategy"].strip()
        rows.append((number, text, kept))
    return rows


@dataclass(frozen=True)
class HarnessLine:
    """What a line of a harness's answer file answers: its key and answer, or why it answers nothing."""

    key: str | None
    answer: Any
    why: str = ""  # "" when the line answers an item
    strategy: str | None = None  # the exported strategy whose question it answers, where the file says


@dataclass(frozen=True)
class ExportIndex:
    """A release as harness answer files name its rows: its tasks' prefix and each configuration's rows."""

    release: str  # the release tag
    prefix: str
    configs: dict[str, list[ExportedRow]]

    def task_rows(self, file_name: str) -> tuple[list[ExportedRow] | None, str]:
        """The rows of the configuration an lmms-eval ``--log_samples`` file's name names, or why none."""
        named = SAMPLES_FILE.search(file_name)
        if not named:
            return None, ("an lmms-eval line without its doc's index (lmms-eval 0.7 drops the doc) is read by its "
                          "doc_id in the task its file is named after, <date_id>_samples_<task>.jsonl, and this "
                          "file's name names no task")
        task = named.group("task")
        config = task[len(self.prefix) + 1:] if task.startswith(f"{self.prefix}_") else None
        if config not in self.configs:
            tasks = ", ".join(f"{self.prefix}_{name}" for name in self.configs)
            return None, f"task {task!r} (the file's name) is not one of {self.release}'s: {tasks}"
        return self.configs[config], ""


def export_index(plugin: Any, release: str, release_name: str, items: list[Any]) -> ExportIndex:
    """``ExportIndex`` of a release of ``plugin``'s benchmark with these ``items`` (all of them, as exported)."""
    return ExportIndex(release, task_prefix(release_name), exported_rows(plugin, items))


def harness_line(row: dict[str, Any], task_rows: list[ExportedRow] | None = None,
                 task_problem: str = "") -> HarnessLine | None:
    """The key and answer of an lmms-eval sample line (mapped by ``doc_id`` into ``task_rows``, the rows of its
    file's task; ``task_problem`` says why there are none) or a VLMEvalKit JSON row; None for a row of neither."""
    if "doc_id" in row and ({"doc", "filtered_resps", "resps"} & row.keys()):
        return _lmms_eval_line(row, task_rows, task_problem)
    if "index" in row and "prediction" in row:
        strategy = row.get("strategy")
        return HarnessLine(str(row["index"]), row["prediction"],
                           strategy=strategy.strip() if isinstance(strategy, str) and strategy.strip() else None)
    return None


def _lmms_eval_line(row: dict[str, Any], task_rows: list[ExportedRow] | None, task_problem: str) -> HarnessLine:
    responses = row.get("filtered_resps", row.get("resps"))
    while isinstance(responses, list) and responses:  # one request per doc: response, [response] or [[response]]
        responses = responses[0]
    doc = row.get("doc")
    if isinstance(doc, dict) and doc.get("index") is not None:  # lmms-eval before 0.7 kept the row
        strategy = doc.get("strategy")
        return HarnessLine(str(doc["index"]), responses, strategy=strategy if isinstance(strategy, str) else None)
    echoed = row.get("index") if isinstance(row.get("index"), str) else None
    if task_rows is None:
        # the index the exported process_results echoes names the item even where the file's name does not
        return HarnessLine(echoed, responses) if echoed else HarnessLine(None, None, why=task_problem)
    doc_id = row["doc_id"]
    if not isinstance(doc_id, int) or isinstance(doc_id, bool) or not 0 <= doc_id < len(task_rows):
        return HarnessLine(None, None, why=f"doc_id {doc_id!r} is no row of its task, which has {len(task_rows)}")
    exported = task_rows[doc_id]
    again = "export again and rerun lmms-eval, or evaluate the release version that was exported"
    if echoed is not None and echoed != exported.index:
        return HarnessLine(None, None, why=f"doc_id {doc_id} is item {exported.index[:12]} in this release's "
                                           f"export, but the line names {echoed[:12]}: the log is of another "
                                           f"export ({again})")
    if "target" in row and str(row["target"]) != exported.answer:
        return HarnessLine(None, None, why=f"doc_id {doc_id}'s target {str(row['target'])[:80]!r} is not the answer "
                                           f"exported at that row ({exported.answer[:80]!r}): the log is of another "
                                           f"export ({again})")
    return HarnessLine(exported.index, responses, strategy=exported.strategy)
