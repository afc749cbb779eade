from __future__ import annotations

import hashlib
import threading
import uuid

import boto3
import pytest

from storage.blobs import BlobNotFoundError, LocalBlobStore, S3BlobStore, open_blob_store, sha256_bytes
from tests.support.broken_writes import FILE_SIZES, break_blob_writes


def test_local_put_get_exists_verify(blob_store: LocalBlobStore, tmp_path):
    data = b"frame bytes" * 100
    sha = blob_store.put(data)
    assert sha == hashlib.sha256(data).hexdigest()
    assert blob_store.exists(sha) and blob_store.get(sha) == data and blob_store.verify(sha)
    assert blob_store.put(data) == sha  # idempotent
    source = tmp_path / "big.bin"
    source.write_bytes(b"x" * 3_000_000)
    assert blob_store.put_file(source) == sha256_bytes(source.read_bytes())
    assert sorted(blob_store.iter_addresses()) == sorted([sha, sha256_bytes(source.read_bytes())])
    with pytest.raises(BlobNotFoundError):
        blob_store.get("0" * 64)
    with pytest.raises(ValueError, match="not a sha256"):
        blob_store.get("../../etc/passwd")


def test_a_write_that_stops_short_is_carried_on_to_the_last_byte(tmp_path, monkeypatch):
    import os

    from storage import blobs

    real_write = os.write
    monkeypatch.setattr(blobs.os, "write", lambda fd, data: real_write(fd, bytes(data[:1000])))
    store = LocalBlobStore(tmp_path / "blobs")
    data = bytes(range(256)) * 40
    sha = store.put(data)
    monkeypatch.undo()
    assert store.get(sha) == data and store.verify(sha)


def test_a_new_store_keeps_blobs_under_s3s_keys_and_says_so(tmp_path):
    store = LocalBlobStore(tmp_path / "blobs")
    sha = store.put(b"a frame")
    assert (tmp_path / "blobs" / sha[:2] / sha).read_bytes() == b"a frame"  # as S3BlobStore.key_for names it
    assert (tmp_path / "blobs" / "LAYOUT").read_text().strip() == "sha[:2]/sha"
    assert list(store.iter_addresses()) == [sha]
    assert LocalBlobStore(tmp_path / "blobs").get(sha) == b"a frame"  # opened again: the file decides


def test_a_store_made_with_two_folder_levels_keeps_them(tmp_path):
    root = tmp_path / "blobs"
    old = sha256_bytes(b"stored by an earlier version")
    (root / old[:2] / old[2:4]).mkdir(parents=True)
    (root / old[:2] / old[2:4] / old).write_bytes(b"stored by an earlier version")
    store = LocalBlobStore(root)
    assert store.get(old) == b"stored by an earlier version" and store.verify(old)
    new = store.put(b"stored now")
    assert (root / new[:2] / new[2:4] / new).read_bytes() == b"stored now"
    assert sorted(store.iter_addresses()) == sorted([old, new])
    assert (root / "LAYOUT").read_text().strip() == "sha[:2]/sha[2:4]/sha"
    store.delete(old)
    assert not LocalBlobStore(root).exists(old) and LocalBlobStore(root).exists(new)


def test_an_unknown_layout_is_refused_by_name(tmp_path):
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / "LAYOUT").write_text("sha[:4]/sha\n")
    with pytest.raises(ValueError, match=r"blobs/LAYOUT: unknown blob layout 'sha\[:4\]/sha'"):
        LocalBlobStore(tmp_path / "blobs")


def test_local_tampered_blob_fails_verify(blob_store: LocalBlobStore):
    sha = blob_store.put(b"original")
    blob_store.path_for(sha).write_bytes(b"tampered")
    assert not blob_store.verify(sha)
    assert not blob_store.verify("1" * 64)


@FILE_SIZES
def test_local_failed_write_leaves_nothing_visible(blob_store: LocalBlobStore, tmp_path, monkeypatch, size: int):
    source = tmp_path / "clip.bin"
    source.write_bytes(b"y" * size)
    sha = sha256_bytes(source.read_bytes())
    break_blob_writes(monkeypatch)
    with pytest.raises(OSError, match="disk went away"):
        blob_store.put_file(source)
    assert not blob_store.exists(sha)
    assert list(blob_store.path_for(sha).parent.iterdir()) == []  # no temporary file left behind either


def test_a_batch_publishes_its_blobs_together_at_its_end(blob_store: LocalBlobStore, monkeypatch):
    import storage.blobs as blobs

    syncs: list[int] = []
    real_sync = blobs._sync_file_system
    monkeypatch.setattr(blobs, "_sync_file_system", lambda files: syncs.append(len(files)) or real_sync(files))
    elsewhere = LocalBlobStore(blob_store.root)  # another reader of the same folder (another process)
    stored_before = blob_store.put(b"already there")
    with blob_store.batch():
        with blob_store.batch():  # nested: the outermost block publishes
            first = blob_store.put(b"frame one")
        second = blob_store.put(b"frame two")
        assert blob_store.put(b"frame two") == second and blob_store.put(b"already there") == stored_before
        # written and readable here, invisible elsewhere until the batch is durable
        assert blob_store.get(first) == b"frame one" and blob_store.exists(second) and blob_store.verify(second)
        assert not elsewhere.exists(first) and not elsewhere.exists(second) and syncs == []
    assert syncs == [2]  # one sync for the batch, not one per blob
    assert elsewhere.get(first) == b"frame one" and elsewhere.get(second) == b"frame two"
    leftovers = [p for p in blob_store.root.rglob(".incoming-*")]
    assert leftovers == []


def test_a_batch_that_fails_still_publishes_what_it_wrote_whole(blob_store: LocalBlobStore):
    with pytest.raises(RuntimeError, match="stage failed"), blob_store.batch():
        sha = blob_store.put(b"written before the failure")
        raise RuntimeError("stage failed")
    assert LocalBlobStore(blob_store.root).get(sha) == b"written before the failure"


def test_staged_blobs_stay_unseen_until_one_sync_publishes_a_whole_group(blob_store: LocalBlobStore, tmp_path,
                                                                         monkeypatch):
    """A build's workers stage each unit's blobs (``batch(publish=False)``); the process that writes the catalog
    publishes a group of units with one sync, before it writes their records."""
    import storage.blobs as blobs

    syncs: list[int] = []
    real_sync = blobs._sync_file_system
    monkeypatch.setattr(blobs, "_sync_file_system", lambda files: syncs.append(len(files)) or real_sync(files))
    worker = LocalBlobStore(blob_store.root)  # a worker process's view of the same folder
    monkeypatch.chdir(blob_store.root.parent)
    blob_store = LocalBlobStore(blob_store.root.name)  # the publisher's root given relative, as data/blobs is
    with worker.batch(publish=False) as staged:
        first, second = worker.put(b"frame one"), worker.put(b"frame two")
    with worker.batch(publish=False) as staged_next:
        third = worker.put(b"frame three")
    assert syncs == [] and len(staged) == 2 and len(staged_next) == 1
    assert not any(blob_store.exists(sha) or worker.exists(sha) for sha in (first, second, third))
    with pytest.raises(ValueError, match="not a staged blob"):
        blob_store.publish([(first, str(tmp_path / ".incoming-elsewhere"))])
    blob_store.publish(staged + staged_next)
    assert syncs == [4]  # one sync of the file system for both units' packs and their indexes
    assert [blob_store.get(sha) for sha in (first, second, third)] == [b"frame one", b"frame two", b"frame three"]
    assert list(blob_store.root.rglob(".incoming-*")) == []
    # each unit's blobs in one pack file, found by its index: two files a unit, not one a blob
    assert sorted(p.suffix for p in (blob_store.root / "packs").iterdir()) == [".idx", ".idx", ".pack", ".pack"]


def test_a_temporary_name_already_taken_is_left_alone(blob_store: LocalBlobStore):
    """A local store names its temporary files by process and counter; a file left under the next such name (by
    an earlier process that had this pid) is neither overwritten nor published, and the blob is still stored."""
    import os

    address = sha256_bytes(b"frame")
    folder = blob_store.path_for(address).parent
    folder.mkdir(parents=True, exist_ok=True)
    taken = folder / f".incoming-{os.getpid():x}-{blob_store._writer}-{next(blob_store._serial)}"
    taken.write_bytes(b"left by a killed writer")
    blob_store._serial = iter(range(int(taken.name.rsplit("-", 1)[1]), 10))  # the name is drawn again
    with blob_store.batch(publish=False) as staged:
        assert blob_store.put(b"frame") == address
    assert [tmp for _, tmp in staged] != [str(taken)] and taken.read_bytes() == b"left by a killed writer"
    with pytest.raises(ValueError, match="not a staged blob"):  # a name beside the address, but in a folder below
        blob_store.publish([(address, str(folder / ".incoming-x" / "y"))])
    blob_store.publish(staged)
    assert blob_store.get(address) == b"frame"


def _bucket(endpoint: str) -> str:
    name = f"bw-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=name)
    return name


def test_s3_round_trip_over_http(s3_endpoint: str):
    bucket = _bucket(s3_endpoint)
    store = open_blob_store(f"s3://{bucket}/bench/v1", endpoint_url=s3_endpoint)
    assert isinstance(store, S3BlobStore)
    data = b"\x89PNG fake image"
    sha = store.put(data)
    assert store.exists(sha) and store.get(sha) == data and store.verify(sha)
    assert list(store.iter_addresses()) == [sha]
    raw = boto3.client("s3", endpoint_url=s3_endpoint)
    head = raw.head_object(Bucket=bucket, Key=f"bench/v1/{sha[:2]}/{sha}")
    assert head["Metadata"]["sha256"] == sha
    raw.put_object(Bucket=bucket, Key=f"bench/v1/{sha[:2]}/{sha}", Body=b"tampered")
    assert not store.verify(sha)
    assert not store.exists("2" * 64)
    with pytest.raises(BlobNotFoundError):
        store.get("2" * 64)


def test_s3_multipart_failure_leaves_no_partial_blob(s3_endpoint: str, tmp_path):
    bucket = _bucket(s3_endpoint)
    store = S3BlobStore(bucket, "p", endpoint_url=s3_endpoint, multipart_threshold=5 * 2**20,
                        multipart_chunksize=5 * 2**20)
    source = tmp_path / "video.bin"
    source.write_bytes(bytes(range(256)) * (12 * 2**20 // 256))  # 12 MiB: three parts
    sha = sha256_bytes(source.read_bytes())
    parts_sent = []
    lock = threading.Lock()

    def fail_second_part(params, **kwargs):
        with lock:
            parts_sent.append(params.get("PartNumber"))
            if len(parts_sent) >= 2:
                raise ConnectionError("network dropped mid-upload")

    store.client.meta.events.register("before-parameter-build.s3.UploadPart", fail_second_part)
    with pytest.raises(ConnectionError, match="mid-upload"):
        store.put_file(source)
    raw = boto3.client("s3", endpoint_url=s3_endpoint)
    assert len(parts_sent) >= 2, "the upload must have been multipart and failed part-way"
    assert not store.exists(sha)
    assert raw.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
    assert raw.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []  # aborted, not dangling

    store.client.meta.events.unregister("before-parameter-build.s3.UploadPart", fail_second_part)
    assert store.put_file(source) == sha  # a retry completes the same address
    assert store.verify(sha)
