"""A release as a Hugging Face dataset folder: per configuration ``<config>/test.parquet`` (every benchmark item is
a test item), and a dataset card, ``README.md``, whose YAML lists the configurations, so
``datasets.load_dataset(folder, config)`` and ``load_dataset("parquet", data_files=...)`` both read it.

The Parquet files are written with pyarrow and carry the ``huggingface`` schema metadata ``datasets`` writes itself
(its Features), so ``images`` loads as a list of ``Image`` features (PIL images) and exporting needs no ``datasets``
install. Columns: ``index`` (the item's record id, the key predictions come back with), ``question`` (the benchmark's
prompt), ``images``, ``answer``, ``category``, ``strategy`` (whose prompt it is), ``A``-``D``... where the items are
multiple choice, and the benchmark's own columns.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from storage.paths import export_path
from tasks.exporting.card import dataset_card
from tasks.exporting.rows import HarnessRelease, HarnessRow, harness_release, image_suffix

SPLIT = "test"  # benchmark items are for evaluation only: every configuration has this one split

# arrow type -> the ``Value`` dtype ``datasets`` names it by
_DTYPES = {"string": "string", "large_string": "string", "int64": "int64", "double": "float64", "bool": "bool",
           "null": "null"}


def export_hf(catalog: Any, store: Any, tag: str, out_dir: Path) -> dict[str, int]:
    release = harness_release(catalog, store, tag, "hf")
    out_dir = Path(os.path.abspath(out_dir))
    counts = write_parquet_configs(release, out_dir, "{config}/" + SPLIT + ".parquet")
    card = dataset_card(release, catalog, tag, out_dir, {name: f"{name}/{SPLIT}.parquet" for name in counts})
    export_path(out_dir, "README.md").write_text(card, encoding="utf-8")
    return counts


def write_parquet_configs(release: HarnessRelease, out_dir: Path, pattern: str) -> dict[str, int]:
    """One Parquet file per configuration at ``pattern`` (``{config}`` replaced), rows per configuration."""
    counts = {}
    for config, rows in release.configs().items():
        path = export_path(out_dir, *pattern.format(config=config).split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_parquet(rows, path)
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


def write_parquet(rows: list[HarnessRow], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    arrays = {name: pa.array(values) for name, values in table_columns(rows).items()}
    arrays["images"] = pa.array([[{"bytes": data, "path": f"{row.index}_{n}.{image_suffix(data)}"}
                                  for n, data in enumerate(row.images)] for row in rows], type=pa.list_(image))
    table = pa.table(arrays)
    features = {name: _feature(name, table.schema.field(name).type) for name in table.column_names}
    metadata = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), path)


def _feature(name: str, arrow_type: Any) -> dict[str, Any]:
    """The ``datasets`` Features entry of a column: ``images`` is a List of Image, the others plain values."""
    if name == "images":
        return {"feature": {"_type": "Image"}, "_type": "List"}
    dtype = _DTYPES.get(str(arrow_type))
    if dtype is None:
        raise ValueError(f"a harness column of type {arrow_type} has no datasets dtype here")
    return {"dtype": dtype, "_type": "Value"}
