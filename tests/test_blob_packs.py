"""A local store's staged blobs (a build's units) go to pack files, one a unit, published by renaming their index:
content addressing, crash safety, garbage collection and reading by other processes stay as with one file a blob."""

from __future__ import annotations

import os
import time

import pytest

from storage import Catalog, LocalBlobStore, Storage
from storage.blob_packs import PackError, read_index
from storage.blobs import sha256_bytes
from storage.gc import collect_garbage
from tests.support.broken_writes import FILE_SIZES, break_blob_writes
from tests.support.catalog import demo_with_frame

DAY = 24 * 3600


def _staged(store: LocalBlobStore, *blobs: bytes) -> tuple[list[str], list[tuple[str, str]]]:
    with store.batch(publish=False) as staged:
        addresses = [store.put(data) for data in blobs]
    return addresses, staged


def _age_packs(store: LocalBlobStore, seconds: float) -> None:
    then = time.time() - seconds
    for path in (store.root / "packs").iterdir():
        os.utime(path, (then, then))


def test_a_pack_is_addressed_by_content_and_read_back_by_another_process(blob_store: LocalBlobStore):
    elsewhere = LocalBlobStore(blob_store.root)  # another process's view, its packs read before this one's exist
    assert not elsewhere.exists(sha256_bytes(b"x"))
    (one, two, again), staged = _staged(blob_store, b"frame one", b"frame two" * 1000, b"frame one")
    assert one == again == sha256_bytes(b"frame one") and two == sha256_bytes(b"frame two" * 1000)
    assert len(staged) == 2  # a blob put twice in a unit is packed once
    blob_store.publish(staged)
    assert elsewhere.get(one) == b"frame one" and elsewhere.verify(two) and elsewhere.exists(two)
    assert sorted(elsewhere.iter_addresses()) == sorted([one, two])
    assert not list(blob_store.root.glob("??/*"))  # no file a blob


def test_a_pack_not_yet_published_is_unseen_and_collected_once_old(catalog: Catalog, blob_store: LocalBlobStore):
    """A writer killed before its unit was published leaves a pack and an unpublished index: nothing reads them,
    and the garbage collector removes both once old (a young one may belong to a build running now)."""
    (orphan,), _ = _staged(blob_store, b"frame of a killed build")  # staged, never published
    assert not LocalBlobStore(blob_store.root).exists(orphan)
    assert collect_garbage(catalog, blob_store).removed == []  # young
    _age_packs(blob_store, 2 * DAY)
    report = collect_garbage(catalog, blob_store)
    assert len(report.removed) == 2 and all(n.endswith(".pack") or n.startswith(".incoming-") for n in report.removed)
    assert list((blob_store.root / "packs").iterdir()) == []


def test_removing_a_packed_orphan_keeps_the_rest_of_its_pack(catalog: Catalog, blob_store: LocalBlobStore):
    storage = Storage(catalog, blob_store)
    with blob_store.batch(publish=False) as staged:
        demo = demo_with_frame(storage, 0)
        orphan = blob_store.put(b"frame whose record was never written")
    blob_store.publish(staged)
    catalog.put_records([demo])
    reader = LocalBlobStore(blob_store.root)
    assert reader.get(orphan)  # its view of the packs read now, before the collector replaces the pack
    _age_packs(blob_store, 2 * DAY)
    report = collect_garbage(catalog, blob_store)
    assert report.removed == [orphan] and report.referenced == 1
    kept = demo.blobs[0].sha256
    assert not blob_store.exists(orphan) and not reader.exists(orphan)
    assert blob_store.verify(kept) and reader.get(kept) == blob_store.get(kept)
    assert collect_garbage(catalog, blob_store).removed == []


def test_orphans_sharing_a_pack_are_taken_out_with_one_rewrite_of_it(catalog: Catalog, blob_store: LocalBlobStore,
                                                                     monkeypatch: pytest.MonkeyPatch):
    from storage import blob_packs

    storage = Storage(catalog, blob_store)
    with blob_store.batch(publish=False) as staged:
        demo = demo_with_frame(storage, 0)
        orphans = [blob_store.put(f"orphan frame {n}".encode()) for n in range(3)]
    blob_store.publish(staged)
    (lonely,), alone = _staged(blob_store, b"an orphan alone in its pack")
    blob_store.publish(alone)
    catalog.put_records([demo])
    _age_packs(blob_store, 2 * DAY)
    made = []
    create = blob_packs.PackWriter.create
    monkeypatch.setattr(blob_packs.PackWriter, "create", lambda folder, name: made.append(name) or create(folder, name))
    report = collect_garbage(catalog, blob_store)
    assert sorted(report.removed) == sorted([*orphans, lonely])
    assert len(made) == 1  # the shared pack rewritten once, with the kept frame; the lonely one's pack just removed
    assert len(list((blob_store.root / "packs").glob("*.pack"))) == 1
    reader = LocalBlobStore(blob_store.root)
    assert not any(reader.exists(sha) for sha in [*orphans, lonely]) and reader.verify(demo.blobs[0].sha256)


def test_a_packed_blob_stored_again_is_young_again(catalog: Catalog, blob_store: LocalBlobStore):
    (sha,), staged = _staged(blob_store, b"frame stored before a crash")
    blob_store.publish(staged)
    _age_packs(blob_store, 2 * DAY)
    (again,), restaged = _staged(LocalBlobStore(blob_store.root), b"frame stored before a crash")
    assert again == sha and restaged == []  # known published: not written twice, but made young
    assert collect_garbage(catalog, blob_store).removed == []
    assert blob_store.exists(sha)


def test_a_tampered_pack_fails_verify_and_a_broken_index_is_refused(blob_store: LocalBlobStore):
    (sha, other), staged = _staged(blob_store, b"original frame", b"another frame")
    blob_store.publish(staged)
    pack = next((blob_store.root / "packs").glob("*.pack"))
    data = bytearray(pack.read_bytes())
    data[0] ^= 0xFF
    pack.write_bytes(bytes(data))
    reader = LocalBlobStore(blob_store.root)
    assert not reader.verify(sha) and reader.verify(other)
    index = next((blob_store.root / "packs").glob("*.idx"))
    index.write_bytes(b"not an index")
    with pytest.raises(PackError, match="not a blob pack index"):
        read_index(str(index))


@FILE_SIZES
def test_a_failed_write_leaves_the_pack_whole(blob_store: LocalBlobStore, tmp_path, monkeypatch, size: int):
    source = tmp_path / "clip.bin"
    source.write_bytes(b"y" * size)
    with blob_store.batch(publish=False) as staged:
        first = blob_store.put(b"frame before")
        break_blob_writes(monkeypatch)
        with pytest.raises(OSError, match="disk went away"):
            blob_store.put_file(source)
        monkeypatch.undo()
        after = blob_store.put(b"frame after")
    blob_store.publish(staged)
    assert [sha for sha, _ in staged] == [first, after]
    assert blob_store.get(first) == b"frame before" and blob_store.get(after) == b"frame after"
    assert not blob_store.exists(sha256_bytes(source.read_bytes()))


def test_a_store_of_files_reads_on_and_packs_its_next_units(tmp_path):
    """A store written before packs keeps its files; a unit staged now goes to a pack beside them."""
    root = tmp_path / "blobs"
    old = sha256_bytes(b"stored by an earlier version")
    (root / old[:2]).mkdir(parents=True)
    (root / old[:2] / old).write_bytes(b"stored by an earlier version")
    store = LocalBlobStore(root)
    (new, again), staged = _staged(store, b"stored now", b"stored by an earlier version")
    store.publish(staged)
    assert again == old and store.get(old) == b"stored by an earlier version" and store.get(new) == b"stored now"
    assert sorted(store.iter_addresses()) == sorted([old, new])  # each once, though stored twice
    store.delete(old)
    assert not LocalBlobStore(root).exists(old) and LocalBlobStore(root).exists(new)


def test_publish_refuses_an_index_outside_the_store(blob_store: LocalBlobStore, tmp_path):
    (sha,), staged = _staged(blob_store, b"frame")
    outside = tmp_path / "packs" / ".incoming-1-2-3.idx"
    with pytest.raises(ValueError, match="not a staged blob"):
        blob_store.publish([(sha, str(outside))])
    with pytest.raises(ValueError, match="not a staged blob"):
        blob_store.publish([(sha, str(blob_store.root / "packs" / "sub" / ".incoming-1.idx"))])
    blob_store.publish(staged)
    assert blob_store.get(sha) == b"frame"


def test_unpacked_blobs_are_files_under_s3s_keys(blob_store: LocalBlobStore):
    (one, two), staged = _staged(blob_store, b"frame one", b"frame two")
    blob_store.publish(staged)
    assert blob_store.unpack() == 2 and blob_store.unpack() == 0
    assert (blob_store.root / one[:2] / one).read_bytes() == b"frame one" and blob_store.verify(two)
    assert sorted(blob_store.iter_addresses()) == sorted([one, two])


def test_blobs_unpack_writes_the_packed_blobs_of_the_configured_store(tmp_path, monkeypatch: pytest.MonkeyPatch):
    from tests.support.cli import invoke, pin_console_width

    store = LocalBlobStore(tmp_path / "blobs")
    (one, two), staged = _staged(store, b"frame one", b"frame two")
    store.publish(staged)
    config = tmp_path / "benchwright.toml"
    config.write_text(f'[catalog]\npath = "{tmp_path / "catalog.duckdb"}"\n[blobs]\nuri = "file://{store.root}"\n')
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))
    pin_console_width(monkeypatch, 200)
    said = invoke("blobs", "unpack")
    assert said.exit_code == 0 and "2 packed blobs written as files of their own" in said.output, said.output
    assert (store.root / one[:2] / one).read_bytes() == b"frame one" and (store.root / two[:2] / two).is_file()
    assert "0 packed blobs" in invoke("blobs", "unpack").output


def test_a_staging_process_lists_the_packs_at_most_once_a_second_yet_knows_its_own_at_once(
        blob_store: LocalBlobStore, monkeypatch: pytest.MonkeyPatch):
    import subprocess
    import sys

    import storage.blob_packs as blob_packs

    now = [1000.0]
    monkeypatch.setattr(blob_packs.time, "monotonic", lambda: now[0])
    _staged(blob_store, b"a first unit")  # lists the folder
    code = ("import sys\nfrom storage.blobs import LocalBlobStore\nstore = LocalBlobStore(sys.argv[1])\n"
            "with store.batch(publish=False) as staged:\n    store.put(b'published elsewhere')\n"
            "store.publish(staged)\n")
    subprocess.run([sys.executable, "-c", code, str(blob_store.root)], check=True)
    now[0] += 0.5  # within the second: the other process's pack is not looked for, its blob is written again
    (_,), staged = _staged(blob_store, b"published elsewhere")
    assert len(staged) == 1
    (own,), staged = _staged(blob_store, b"mine")
    blob_store.publish(staged)
    (again,), restaged = _staged(blob_store, b"mine")  # published by this process: known at once
    assert again == own and restaged == []
    now[0] += 1.0  # a second later the folder is listed again
    (_,), restaged = _staged(blob_store, b"published elsewhere")
    assert restaged == []


def test_a_group_whose_transaction_is_refused_once_is_stored_whole_and_counted_once(tmp_path):
    """``store_group``: the staged blobs are published once, before the transaction; a transaction refused by a
    concurrent writer (DuckDB's duplicate key) runs again, and what it counts is the run that committed."""
    import duckdb

    from storage import BlobWriter, store_group

    storage = Storage(catalog=Catalog(tmp_path / "catalog.duckdb"), blobs=LocalBlobStore(tmp_path / "blobs"))
    writer = BlobWriter(storage.blobs)
    with writer.unit():
        demo = demo_with_frame(writer, 1)  # type: ignore[arg-type]  # a worker's putter, as a build's
    runs: list[int] = []

    def write() -> int:
        runs.append(len(runs))
        new = storage.catalog.put_records([demo])
        if len(runs) == 1:
            raise duckdb.ConstraintException('Duplicate key "id: x" violates primary key constraint')
        return new

    assert store_group(storage, [writer], write) == 1 and runs == [0, 1]
    sha = demo.blobs[0].sha256
    assert storage.blobs.get(sha) == b"jpeg bytes 1" and storage.catalog.blob_meta([sha]) == {
        sha: (len(b"jpeg bytes 1"), "image/jpeg")}
    assert [r.id for r in storage.catalog.get_records([demo.id])] == [demo.id]
