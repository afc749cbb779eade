"""A release as VLMEvalKit custom datasets: per configuration ``bw_<release>_<config>.tsv`` (VLMEvalKit keeps every
custom dataset in ``$LMUData`` under its file name, so the release is in it), the layout VLMEvalKit's
``CustomMCQDataset`` reads when the file has option columns (``A``, ``B``...) and ``CustomVQADataset`` otherwise.

Columns: ``index`` (the item's record id: VLMEvalKit keeps a string index as it is, and writes it back beside each
``prediction``), ``image`` (base64; several images as a Python list of base64 strings, which VLMEvalKit's
``toliststr`` reads, with ``image_path`` naming each), ``question`` (the benchmark's prompt), ``A``-``D`` for
multiple choice, ``answer``, ``category``, then the benchmark's own columns. Copy the files into ``$LMUData`` and
run ``python run.py --data bw_<release>_<config> --model ...``; its ``<model>_bw_<release>_<config>.xlsx`` (or
``.tsv``) reads back with ``benchwright evaluate --predictions``.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from storage.output import OutputFolder
from tasks.exporting.hf import table_columns
from tasks.exporting.rows import HarnessRow, harness_release, image_suffix, task_prefix


def export_vlmevalkit(catalog: Any, store: Any, tag: str, out_dir: Path | OutputFolder) -> dict[str, int]:
    import pandas as pd

    release = harness_release(catalog, store, tag, "vlmevalkit")
    out = OutputFolder.of(out_dir)
    counts, prefix = {}, task_prefix(release.manifest.name)
    for config, rows in release.configs().items():
        frame = pd.DataFrame(table_columns(rows))
        frame.insert(1, "image", [_image_cell(row) for row in rows])
        if any(len(row.images) > 1 for row in rows):
            frame.insert(2, "image_path", [_image_paths(row) for row in rows])
        with out.open(f"{prefix}_{config}.tsv") as handle:
            frame.to_csv(handle, sep="\t", index=False)
        counts[config] = len(rows)
    return counts


def _image_cell(row: HarnessRow) -> str:
    encoded = [base64.b64encode(data).decode("ascii") for data in row.images]
    return encoded[0] if len(encoded) == 1 else repr(encoded)


def _image_paths(row: HarnessRow) -> str:
    """The names VLMEvalKit saves a row's images under (it needs them for a row of several images)."""
    names = [f"{row.index}_{n}.{image_suffix(data)}" for n, data in enumerate(row.images)]
    return names[0] if len(names) == 1 else repr(names)
