"""Releases: frozen, versioned manifests of records and blobs, with verify, diff and export.

A release is written once and never updated: ``create`` refuses an existing name and version, the manifest's
sha256 is stored beside it and the manifest itself is also put in the blob store, so ``verify`` notices a manifest
edited in the catalog as well as a blob or a record whose content no longer matches its address.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from schemas.records import Record, Status, canonical_json, code_version, record_id
from schemas.releases import BlobInfo, ReleaseEntry, ReleaseManifest, ReleaseSelection, content_sha256
from storage.blobs import BlobNotFoundError, BlobStore, sha256_bytes
from storage.catalog import Catalog
from storage.output import OutputFolder

Progress = Callable[[int], None] | None


class ReleaseError(RuntimeError):
    pass


def parse_tag(tag: str) -> tuple[str, int | None]:
    """``name`` or ``name@version``."""
    name, _, version = tag.partition("@")
    if version and not version.isdigit():
        raise ReleaseError(f"release {tag!r}: the version after @ must be a whole number")
    return name, int(version) if version else None


def create_release(catalog: Catalog, store: BlobStore, name: str, *, selection: ReleaseSelection | None = None,
                   params: dict[str, Any] | None = None, version: int | None = None,
                   only_if_changed: bool = False) -> ReleaseManifest:
    """Freeze the records the selection picks (default: every accepted record) as ``name@version``.

    The version defaults to one more than the newest of that name. Refuses an empty selection and one whose
    records point at blobs missing from the store, so a release can always be exported. With
    ``only_if_changed``, a selection identical to the newest release of that name returns that release instead
    of making a new version, so a scheduled rerun over unchanged data adds nothing.
    """
    selection = selection or ReleaseSelection()
    records = _select(catalog, selection)
    if not records:
        raise ReleaseError(f"release {name}: the selection {selection.model_dump(mode='json')} matches no record")
    shas = sorted({b.sha256 for r in records for b in r.blobs})
    missing = [sha for sha in shas if not store.exists(sha)]
    if missing:
        raise ReleaseError(f"release {name}: {len(missing)} blob(s) are not in {store.uri}, first {missing[0]}")
    meta = catalog.blob_meta(shas)
    media_by_sha = {b.sha256: b.media_type for r in records for b in r.blobs}
    existing = [v for n, v, *_ in list_releases(catalog) if n == name]
    entries = tuple(ReleaseEntry(id=r.id, kind=r.kind, benchmark=r.benchmark, status=r.status,
                                 blobs=tuple(b.sha256 for b in r.blobs), parents=r.parents) for r in records)
    if only_if_changed and existing and version is None:
        newest = load_release(catalog, f"{name}@{max(existing)}")
        if newest.records == entries and newest.selection == selection:
            return newest
    if version is None:
        version = max(existing, default=0) + 1
    elif version in existing:
        raise ReleaseError(f"release {name}@{version} already exists and releases never change")
    blobs = {sha: BlobInfo(size=meta[sha][0] if sha in meta else None, media_type=media_by_sha[sha])
             for sha in shas}
    manifest = ReleaseManifest(
        name=name, version=version, created_at=datetime.now(UTC), code_version=code_version(),
        selection=selection, params=params or {}, records=entries, blobs=blobs,
        content_sha256=content_sha256(entries, blobs),
    )
    text = manifest.canonical()
    manifest_sha = store.put(text.encode())

    def write(con: Any) -> None:
        taken = con.execute("SELECT 1 FROM releases WHERE name = ? AND version = ?", [name, version]).fetchall()
        if taken:
            raise ReleaseError(f"release {name}@{version} already exists and releases never change")
        con.execute("INSERT INTO releases VALUES (?, ?, ?, ?, ?)",
                    [name, version, text, manifest_sha, manifest.created_at])

    catalog.run(write)
    return manifest


def _select(catalog: Catalog, selection: ReleaseSelection) -> list[Record]:
    records: list[Record] = []
    for benchmark in selection.benchmarks or (None,):
        for kind in selection.kinds or (None,):
            records.extend(catalog.find_records(benchmark=benchmark, kind=kind, status=selection.statuses,
                                                run_id=selection.run_id))
    if selection.only_ids is not None:
        wanted = set(selection.only_ids)
        records = [r for r in records if r.id in wanted]
    return sorted({r.id: r for r in records}.values(), key=lambda r: r.id)


def list_releases(catalog: Catalog) -> list[tuple[str, int, datetime, int, str]]:
    """(name, version, created_at, number of records, manifest sha256) of every release, oldest first."""
    return catalog.query("SELECT name, version, created_at, json_array_length(manifest->'records'), "
                         "manifest_sha256 FROM releases ORDER BY name, version")


def content_hashes(catalog: Catalog) -> dict[tuple[str, int], str]:
    """The content hash of every release by (name, version); computed from the manifest where it predates them."""
    rows = catalog.query("SELECT name, version, manifest->>'content_sha256' FROM releases")
    hashes = {(name, version): sha for name, version, sha in rows if sha}
    for name, version, sha in rows:
        if not sha:
            hashes[(name, version)] = load_release(catalog, f"{name}@{version}").content_hash()
    return hashes


def load_release(catalog: Catalog, tag: str) -> ReleaseManifest:
    name, version = parse_tag(tag)
    if version is None:
        rows = catalog.query("SELECT manifest FROM releases WHERE name = ? ORDER BY version DESC LIMIT 1", [name])
    else:
        rows = catalog.query("SELECT manifest FROM releases WHERE name = ? AND version = ?", [name, version])
    if not rows:
        known = sorted({f"{n}@{v}" for n, v, *_ in list_releases(catalog)})
        raise ReleaseError(f"no release {tag!r}; known: {', '.join(known) or 'none yet'}")
    return ReleaseManifest.model_validate_json(rows[0][0])


@dataclass
class VerifyReport:
    tag: str
    content_sha256: str = ""
    records_checked: int = 0
    blobs_checked: int = 0
    manifest_ok: bool = True
    content_ok: bool = True
    missing_blobs: list[str] = field(default_factory=list)
    corrupt_blobs: list[str] = field(default_factory=list)
    missing_records: list[str] = field(default_factory=list)
    altered_records: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.manifest_ok and self.content_ok and not (self.missing_blobs or self.corrupt_blobs
                                                             or self.missing_records or self.altered_records)

    def problems(self) -> list[str]:
        lines = [] if self.manifest_ok else [f"{self.tag}: the manifest no longer matches its recorded sha256"]
        if not self.content_ok:
            lines.append(f"{self.tag}: the records and blobs no longer match the manifest's content hash")
        lines += [f"blob {sha}: missing from the blob store" for sha in self.missing_blobs]
        lines += [f"blob {sha}: content does not hash to its address (tampered or corrupt)"
                  for sha in self.corrupt_blobs]
        lines += [f"record {rid}: missing from the catalog" for rid in self.missing_records]
        lines += [f"record {rid}: stored content no longer hashes to its id" for rid in self.altered_records]
        return lines


def verify_release(catalog: Catalog, store: BlobStore, tag: str, *, on_progress: Progress = None) -> VerifyReport:
    """Re-read every blob and record of a release and check each against its hash."""
    manifest = load_release(catalog, tag)
    recomputed = content_sha256(manifest.records, manifest.blobs)
    report = VerifyReport(tag=manifest.tag, content_sha256=recomputed,
                          content_ok=manifest.content_sha256 in (None, recomputed))
    stored_sha = catalog.query("SELECT manifest_sha256 FROM releases WHERE name = ? AND version = ?",
                               [manifest.name, manifest.version])[0][0]
    report.manifest_ok = sha256_bytes(manifest.canonical().encode()) == stored_sha and store.verify(stored_sha)
    for sha in manifest.blobs:
        try:
            actual = sha256_bytes(store.get(sha))
        except BlobNotFoundError:
            report.missing_blobs.append(sha)
        else:
            if actual != sha:
                report.corrupt_blobs.append(sha)
        report.blobs_checked += 1
        if on_progress:
            on_progress(1)
    for chunk in _chunks([e.id for e in manifest.records], 5000):
        found = {r.id: r for r in catalog.get_records(chunk)}
        for rid in chunk:
            record = found.get(rid)
            if record is None:
                report.missing_records.append(rid)
            elif record_id(record.kind, record.benchmark, record.payload, record.blobs, record.parents) != rid:
                report.altered_records.append(rid)
        report.records_checked += len(chunk)
        if on_progress:
            on_progress(len(chunk))
    return report


@dataclass
class ReleaseDiff:
    old: str
    new: str
    added: list[str]
    removed: list[str]
    changed: list[tuple[str, str, str]]  # (old id or same id, new id, what changed)
    kinds: dict[str, str] = field(default_factory=dict)  # record id -> its kind, for every id above

    def by_kind(self) -> dict[str, dict[str, int]]:
        """How many records of each kind were added, removed and changed (a change counted by its new record)."""
        counts: dict[str, dict[str, int]] = {}
        for what, ids in (("added", self.added), ("removed", self.removed),
                          ("changed", [after for _, after, _ in self.changed])):
            for rid in ids:
                kind = counts.setdefault(self.kinds.get(rid, "?"), {"added": 0, "removed": 0, "changed": 0})
                kind[what] += 1
        return dict(sorted(counts.items()))


def diff_releases(catalog: Catalog, old_tag: str, new_tag: str) -> ReleaseDiff:
    """Records added, removed and changed from one release to another.

    Records are immutable, so a change is either the same record with another status or blobs, or a new record
    that names a record of the old release as its parent and replaces it there.
    """
    old, new = load_release(catalog, old_tag), load_release(catalog, new_tag)
    old_by_id = {e.id: e for e in old.records}
    new_by_id = {e.id: e for e in new.records}
    changed: list[tuple[str, str, str]] = []
    for rid in sorted(old_by_id.keys() & new_by_id.keys()):
        a, b = old_by_id[rid], new_by_id[rid]
        if a.status != b.status:
            changed.append((rid, rid, f"status {a.status.value} -> {b.status.value}"))
        elif a.blobs != b.blobs:
            changed.append((rid, rid, "blobs"))
    gone = old_by_id.keys() - new_by_id.keys()
    replaced: set[str] = set()
    for rid in sorted(new_by_id.keys() - old_by_id.keys()):
        for parent in new_by_id[rid].parents:
            if parent in gone:
                changed.append((parent, rid, "replaced by a derived record"))
                replaced.add(parent)
                replaced.add(rid)
    added = sorted(new_by_id.keys() - old_by_id.keys() - replaced)
    removed = sorted(gone - replaced)
    kinds = {e.id: e.kind for e in (*old.records, *new.records)}
    return ReleaseDiff(old=old.tag, new=new.tag, added=added, removed=removed, changed=changed, kinds=kinds)


def export_release(catalog: Catalog, store: BlobStore, tag: str, out_dir: str | Path | OutputFolder, *,
                   on_progress: Progress = None) -> Path:
    """Write ``records.jsonl``, ``records.parquet``, ``manifest.json`` and ``blobs/<sha256><ext>`` files into
    ``<out_dir>/<name>-v<version>``, through the output door (nothing outside it, no symlink followed).

    Each exported record carries its status as frozen in the release and, under ``files``, the relative paths of
    its blobs, so tools that know nothing of benchwright can load it with pandas, datasets or DuckDB.
    """
    import pyarrow as pa

    manifest = load_release(catalog, tag)
    target = OutputFolder.of(out_dir).sub(f"{manifest.name}-v{manifest.version}")
    file_names = {sha: f"blobs/{sha}{file_extension(info.media_type)}" for sha, info in manifest.blobs.items()}
    for sha, name in file_names.items():
        target.copy_blob(store, sha, name)  # a manifest edited to name "../x" writes nothing outside
        if on_progress:
            on_progress(1)
    frozen_status = {e.id: e.status for e in manifest.records}
    rows: list[dict[str, Any]] = []
    for chunk in _chunks([e.id for e in manifest.records], 5000):
        for record in catalog.get_records(chunk):
            rows.append({
                "id": record.id, "kind": record.kind, "benchmark": record.benchmark,
                "status": frozen_status[record.id].value, "payload": canonical_json(record.payload),
                "blobs": canonical_json([b.model_dump() for b in record.blobs]),
                "files": [file_names[b.sha256] for b in record.blobs],
                "parents": list(record.parents), "producer": record.producer.model_dump_json(),
                "created_at": record.created_at.isoformat(),
            })
        if on_progress:
            on_progress(len(chunk))
    rows.sort(key=lambda row: row["id"])
    with target.open("records.jsonl", binary=True) as handle:
        for row in rows:  # the JSON columns are already serialised: embed them as they are
            handle.write(orjson.dumps({**row, **{k: orjson.Fragment(row[k]) for k in ("payload", "blobs", "producer")}})
                         + b"\n")
    target.save_parquet(pa.Table.from_pylist(rows, schema=pa.schema([
        ("id", pa.string()), ("kind", pa.string()), ("benchmark", pa.string()), ("status", pa.string()),
        ("payload", pa.string()), ("blobs", pa.string()), ("files", pa.list_(pa.string())),
        ("parents", pa.list_(pa.string())), ("producer", pa.string()), ("created_at", pa.string())])),
        "records.parquet")
    target.save_text(json.dumps(manifest.model_dump(mode="json"), indent=1), "manifest.json")
    return target.root


def export_blob(store: BlobStore, sha256: str, out: Path | OutputFolder, *parts: str) -> str:
    """Write one blob to ``out/parts`` (once: an existing file is kept), never outside ``out`` nor through a
    symlink; its path relative to ``out``, with forward slashes."""
    return OutputFolder.of(out).copy_blob(store, sha256, *parts)


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def file_extension(media_type: str) -> str:
    """The file suffix of a blob's media type (``.jpg``, ``.png``; none for raw bytes)."""
    if media_type == "application/octet-stream":
        return ""
    return {"image/jpeg": ".jpg"}.get(media_type) or mimetypes.guess_extension(media_type) or ""


def statuses_from_names(names: Iterable[str]) -> tuple[Status, ...]:
    return tuple(Status(n.strip()) for n in names if n.strip())
