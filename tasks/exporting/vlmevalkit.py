"""A release as VLMEvalKit custom datasets: per configuration ``bw_<release>_<config>.tsv`` (VLMEvalKit keeps every
custom dataset in ``$LMUData`` under its file name, so the release is in it), and ``bw_<release>.json``, the
``run.py --config`` file naming each TSV with the dataset class that reads it: ``MUIRDataset``, whose
``build_prompt`` keeps the request's order of text and images.

Columns: ``index`` (the item's record id: VLMEvalKit keeps a string index as it is, and writes it back beside each
``prediction``), ``image`` (base64; several images as a Python list of base64 strings, which VLMEvalKit's
``toliststr`` reads, with ``image_path`` naming each), ``question``, ``A``-``D`` for multiple choice, ``answer``,
``category``, then the benchmark's own columns. Copy the TSVs into ``$LMUData``, add a model to the JSON's
``model`` and run ``python run.py --config bw_<release>.json``; its ``<model>_bw_<release>_<config>.xlsx`` (or
``.tsv``, ``.json`` with ``PRED_FORMAT``) reads back with ``benchwright evaluate --predictions``.

How VLMEvalKit reads these files (ms-vlmeval 0.0.20, the tests run its own code on them):

- Order: a custom dataset (``run.py --data NAME``: ``build_dataset`` takes a TSV with option columns for a
  ``CustomMCQDataset``, else a ``CustomVQADataset``) shows every image before the whole text. The datasets of
  interleaved benchmarks put each image at its place in the text: ``MUIRDataset.split_MUIR`` splits its prompt on
  ``<image>`` and puts the n-th image at the n-th placeholder, the form of the exported ``question`` (rows.py;
  ``MMMUDataset.split_MMMU``'s ``<image N>`` reads one digit, nine images at most). ``run.py --config`` builds a
  dataset of a named class over a TSV of ``$LMUData`` (``build_dataset_from_config``; ``MUIRDataset`` loads
  ``<name>.tsv`` there as any dataset without a download URL). Its ``build_prompt`` is ``question``, then, where
  the row has options, the ``A``-``D`` columns (``A. ...``) and "Answer with the option's letter from the given
  choices directly.", each image at its place.
- ``question``: an open question is the benchmark's prompt. A multiple-choice one is the benchmark's question
  without its own option list and answer instruction (``HarnessMapping.choice_question``), so the options appear
  once and the model answers with a letter, which VLMEvalKit's exact-match scorer (``can_infer``) reads;
  ``answer`` is that letter. ``MUIRDataset`` is a multiple-choice class: its ``evaluate`` scores the files with
  option columns by their letters; its figure of an open configuration (no letter to match) is 0 and means
  nothing: ``benchwright evaluate --predictions`` scores those.
- VLMEvalKit loads a TSV with ``pd.read_csv(sep="\\t")``, whose default NA parsing turns a cell ``n/a``, ``NA``,
  ``None``, ``null``... (pandas' ``STR_NA_VALUES``) into a blank, whatever quoting it has. Such a text cell
  (a can't-tell ``n/a`` answer, an option named ``None``) is written with a trailing space (``n/a ``), which
  pandas keeps as text; strip it to compare. A value that is really missing stays an empty cell.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from storage.output import OutputFolder
from tasks.exporting.hf import table_columns
from tasks.exporting.rows import HarnessRow, harness_release, image_suffix, task_prefix

# the VLMEvalKit dataset class whose build_prompt puts each image at its ``<image>`` in the question
INTERLEAVED_CLASS = "MUIRDataset"


def export_vlmevalkit(catalog: Any, store: Any, tag: str, out_dir: Path | OutputFolder) -> dict[str, int]:
    import pandas as pd

    release = harness_release(catalog, store, tag, "vlmevalkit")
    out = OutputFolder.of(out_dir)
    counts, prefix = {}, task_prefix(release.manifest.name)
    for config, rows in release.configs().items():
        columns = table_columns(rows)
        columns["question"] = [row.choice_question or row.question for row in rows]
        frame = pd.DataFrame({name: [kept_as_text(value) for value in values] for name, values in columns.items()})
        frame.insert(1, "image", [_image_cell(row) for row in rows])
        if any(len(row.images) > 1 for row in rows):
            frame.insert(2, "image_path", [_image_paths(row) for row in rows])
        with out.open(f"{prefix}_{config}.tsv") as handle:
            frame.to_csv(handle, sep="\t", index=False)
        counts[config] = len(rows)
    out.save_text(run_config([f"{prefix}_{config}" for config in counts]), f"{prefix}.json")
    return counts


def run_config(datasets: list[str]) -> str:
    """VLMEvalKit's ``run.py --config`` file for the exported datasets: each read by ``INTERLEAVED_CLASS``; its
    ``model`` is left for the user to fill (a name of VLMEvalKit's ``supported_VLM`` with ``{}``, or a class and
    its arguments)."""
    data = {name: {"class": INTERLEAVED_CLASS, "dataset": name} for name in datasets}
    return json.dumps({"model": {}, "data": data}, indent=2) + "\n"


def kept_as_text(value: Any) -> Any:
    """A text cell that pandas' default reading would take for a missing value, with a trailing space that keeps it
    text (``n/a`` -> ``n/a ``); any other value as it is."""
    from pandas._libs.parsers import STR_NA_VALUES

    return f"{value} " if isinstance(value, str) and value in STR_NA_VALUES else value


def _image_cell(row: HarnessRow) -> str:
    encoded = [base64.b64encode(data).decode("ascii") for data in row.images]
    return encoded[0] if len(encoded) == 1 else repr(encoded)


def _image_paths(row: HarnessRow) -> str:
    """The names VLMEvalKit saves a row's images under (it needs them for a row of several images)."""
    names = [f"{row.index}_{n}.{image_suffix(data)}" for n, data in enumerate(row.images)]
    return names[0] if len(names) == 1 else repr(names)
