"""Predictions as the harnesses write them, read back as answers keyed by the exported ``index`` (the item's record
id, see rows.py):

- VLMEvalKit: its prediction file, ``<model>_<dataset>.xlsx`` (its default) or ``.tsv`` (``PRED_FORMAT=tsv``), the
  exported columns plus ``prediction``; rows are numbered as a spreadsheet shows them (the header is row 1).
- lmms-eval: the ``--log_samples`` JSONL, a line per sample with ``doc_id``, ``doc`` (the row less its images, so
  ``doc.index``) and ``filtered_resps`` (the response after the task's filters; ``resps`` where it has none).
"""

from __future__ import annotations

from typing import Any

TABLE_SUFFIXES = (".xlsx", ".tsv")


def table_rows(records: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, str, Any]]:
    """(row number, the row as text, the row as a dict) of a VLMEvalKit prediction table's rows (row number, cells
    by column, every cell as written): ``{}`` for a row without an ``index`` and a ``prediction``."""
    rows = []
    for number, record in records:
        shown = [c for c in ("index", "prediction") if c in record]
        text = "\t".join(str(record[c]) for c in shown) or str(record)
        if len(shown) < 2:
            rows.append((number, text, {}))
            continue
        rows.append((number, text, {"index": record["index"], "prediction": record["prediction"]}))
    return rows


def harness_key_and_answer(row: dict[str, Any]) -> tuple[str | None, Any] | None:
    """The key and answer of an lmms-eval sample line or a VLMEvalKit JSON row; None for a row of neither."""
    if "doc_id" in row and "doc" in row:
        doc = row["doc"] if isinstance(row["doc"], dict) else {}
        responses = row.get("filtered_resps", row.get("resps"))
        while isinstance(responses, list) and responses:  # one request per doc: [response] or [[response]]
            responses = responses[0]
        key = doc.get("index")
        return (str(key) if key is not None else None), responses
    if "index" in row and "prediction" in row:
        return str(row["index"]), row["prediction"]
    return None
