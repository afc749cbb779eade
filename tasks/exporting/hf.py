"""A release as a Hugging Face dataset folder: per configuration ``<config>/test.parquet`` (every benchmark item is
a test item), and a dataset card, ``README.md``, whose YAML lists the configurations, so
``datasets.load_dataset(folder, config)`` and ``load_dataset("parquet", data_files=...)`` both read it.

The Parquet files are written with pyarrow and carry the ``huggingface`` schema metadata ``datasets`` writes itself
(its Features), so ``images`` loads as a list of ``Image`` features (PIL images) and exporting needs no ``datasets``
install. Columns: ``index`` (the item's record id, the key predictions come back with), ``question`` (the benchmark's
prompt, ``<image>`` at each image's place: rows.py), ``images`` (in the placeholders' order), ``answer``,
``category``, ``strategy`` (whose prompt it is), ``A``-``D``... where the items are multiple choice, and the
benchmark's own columns. The dataset card says how to put the images back in their places.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from storage.output import OutputFolder
from tasks.exporting.card import dataset_card
from tasks.exporting.rows import HarnessRelease, HarnessRow, harness_release, image_suffix

SPLIT = "test"  # benchmark items are for evaluation only: every configuration has this one split

# arrow type -> the ``Value`` dtype ``datasets`` names it by
_DTYPES = {"string": "string", "large_string": "string", "int64": "int64", "double": "float64", "bool": "bool",
           "null": "null"}


def export_hf(catalog: Any, store: Any, tag: str, out_dir: Path | OutputFolder) -> dict[str, int]:
    release = harness_release(catalog, store, tag, "hf")
    out = OutputFolder.of(out_dir)
    counts = write_parquet_configs(release, out, "{config}/" + SPLIT + ".parquet")
    card = dataset_card(release, catalog, tag, out, {name: f"{name}/{SPLIT}.parquet" for name in counts})
    out.save_text(card, "README.md")
    return counts


def write_parquet_configs(release: HarnessRelease, out: OutputFolder, pattern: str) -> dict[str, int]:
    """One Parquet file per configuration at ``pattern`` (``{config}`` replaced), rows per configuration."""
    counts = {}
    for config, rows in release.configs().items():
        out.save_parquet(parquet_table(rows), *pattern.format(config=config).split("/"))
        counts[config] = len(rows)
    return counts


def option_letters(rows: list[HarnessRow]) -> list[str]:
    """The option letters a configuration's rows use, in order (empty: open questions)."""
    return sorted({letter for row in rows for letter in row.options})


def table_columns(rows: list[HarnessRow]) -> dict[str, list[Any]]:
    """The columns every harness table has, images aside, in the order they are written."""
    letters, extras = option_letters(rows), list(dict.fromkeys(k for row in rows for k in row.extra))
    columns: dict[str, list[Any]] = {"index": [r.index for r in rows], "question": [r.question for r in rows]}
    columns.update({letter: [r.options.get(letter) for r in rows] for letter in letters})
    columns.update({"answer": [r.answer for r in rows], "category": [r.category for r in rows],
                    "strategy": [r.strategy for r in rows]})
    columns.update({name: [r.extra.get(name) for r in rows] for name in extras if name not in columns})
    return columns


def parquet_table(rows: list[HarnessRow]) -> Any:
    """The rows as a pyarrow table with the ``huggingface`` metadata ``datasets`` writes (its Features)."""
    import pyarrow as pa

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    arrays = {name: pa.array(values) for name, values in table_columns(rows).items()}
    arrays["images"] = pa.array([[{"bytes": data, "path": f"{row.index}_{n}.{image_suffix(data)}"}
                                  for n, data in enumerate(row.images)] for row in rows], type=pa.list_(image))
    table = pa.table(arrays)
    features = {name: _feature(name, table.schema.field(name).type) for name in table.column_names}
    metadata = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    return table.replace_schema_metadata(metadata)


def _feature(name: str, arrow_type: Any) -> dict[str, Any]:
    """The ``datasets`` Features entry of a column: ``images`` is a List of Image, the others plain values."""
    if name == "images":
        return {"feature": {"_type": "Image"}, "_type": "List"}
    dtype = _DTYPES.get(str(arrow_type))
    if dtype is None:
        raise ValueError(f"a harness column of type {arrow_type} has no datasets dtype here")
    return {"dtype": dtype, "_type": "Value"}
