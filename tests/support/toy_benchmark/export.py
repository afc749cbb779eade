"""The toy benchmark's own release format: ``dots.jsonl`` (a line per image: its number, the dots, the file) and
``images/<number>.png``, written through the output door as every export is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from storage.output import OutputFolder
from storage.releases import load_release


def export_dots(catalog: Any, store: Any, tag: str, out_dir: Path | OutputFolder) -> dict[str, int]:
    out = OutputFolder.of(out_dir)
    manifest = load_release(catalog, tag)
    records = catalog.get_records(sorted(e.id for e in manifest.records if e.kind == "dots_image"))
    lines = []
    for record in sorted(records, key=lambda r: r.payload["number"]):
        image = out.copy_blob(store, record.blobs[0].sha256, "images", f"{record.payload['number']}.png")
        lines.append(json.dumps({"number": record.payload["number"], "dots": record.payload["dots"], "image": image}))
    out.save_text("".join(line + "\n" for line in lines), "dots.jsonl")
    return {"images": len(lines)}
