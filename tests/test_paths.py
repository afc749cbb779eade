"""The one containment check (storage.paths): input data names no path outside its root, symlinks included unless
allowed, and exports write only below their folder; empty sources say so in every format."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from schemas import Producer
from storage.paths import OutsideRoot, SourceRoot, export_path
from tasks.progress.construct import build_folder
from tasks.progress.published import import_into_catalog
from tasks.progress.sampling import SamplingPlan


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "in.txt").write_text("in")
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside / "secret.txt", root / "link-out.txt")
    os.symlink(root / "sub" / "in.txt", root / "link-in.txt")
    os.symlink(outside, root / "dir-out")
    return root, outside


@pytest.mark.parametrize("name", ["../outside/secret.txt", "sub/../../outside/secret.txt", "link-out.txt",
                                  "dir-out/secret.txt", "sub/../link-out.txt"])
def test_paths_leading_out_are_refused(layout, name):
    root, _ = layout
    with pytest.raises(OutsideRoot, match="refused"):
        SourceRoot(root).inside(name)


def test_absolute_paths_count_only_inside(layout):
    root, outside = layout
    with pytest.raises(OutsideRoot, match="outside the source root"):
        SourceRoot(root).inside(outside / "secret.txt")
    assert SourceRoot(root).inside(root / "sub" / "in.txt") == root / "sub" / "in.txt"


def test_paths_inside_and_links_staying_inside_are_kept(layout):
    root, _ = layout
    assert SourceRoot(root).inside("sub/./in.txt") == root / "sub" / "in.txt"
    assert SourceRoot(root).inside("link-in.txt").read_text() == "in"


def test_the_setting_allows_links_out_but_never_dotdot(layout):
    root, _ = layout
    allowed = SourceRoot(root, allow_symlinks_outside=True)
    assert allowed.inside("link-out.txt").read_text() == "secret"
    assert allowed.inside("dir-out/secret.txt").read_text() == "secret"
    with pytest.raises(OutsideRoot):
        allowed.inside("../outside/secret.txt")


def test_a_root_given_as_a_link_and_pointed_elsewhere_meanwhile_keeps_its_first_target(tmp_path):
    """A root's own symlinks are resolved once (a build checks three paths an episode against it): paths below the
    link are read while it points where it pointed at the first check; pointed elsewhere, they are refused."""
    first, other = tmp_path / "first", tmp_path / "other"
    for folder in (first, other):
        folder.mkdir()
        (folder / "clip.mp4").write_bytes(b"x")
    link = tmp_path / "episodes"
    link.symlink_to(first)
    root = SourceRoot(link)
    assert root.inside("clip.mp4") == link / "clip.mp4"
    link.unlink()
    link.symlink_to(other)
    with pytest.raises(OutsideRoot, match="symlink leading outside"):
        root.inside("clip.mp4")
    assert SourceRoot(link).inside("clip.mp4") == link / "clip.mp4"  # declared anew, the root is where it points


def test_listing_reports_entries_leading_out(layout):
    root, _ = layout
    refused = {path.name: problem for path, problem in SourceRoot(root).entries() if problem}
    assert set(refused) == {"link-out.txt", "dir-out"}
    assert "symlink leading outside" in refused["dir-out"]


def test_a_relative_root_lists_and_reads_what_is_inside(layout, monkeypatch):
    """The default source folders are relative (data/sources/...): what a listing yields must be readable as is."""
    root, _ = layout
    monkeypatch.chdir(root.parent)
    relative = SourceRoot(Path("root"))
    kept = {path.name: path for path, problem in relative.entries() if not problem}
    assert kept["sub"].is_dir() and kept["link-in.txt"].read_text() == "in"
    assert relative.inside(kept["sub"] / "in.txt").read_text() == "in"
    assert relative.inside("sub/in.txt") == root / "sub" / "in.txt"


@pytest.mark.parametrize("parts", [("..", "x.jpg"), ("a", "../../x.jpg"), ("/etc", "passwd"), ("a/..", "..", "x")])
def test_export_names_never_leave_the_folder(tmp_path, parts):
    with pytest.raises(OutsideRoot):
        export_path(tmp_path / "out", *parts)
    assert export_path(tmp_path / "out", "h5/task/001", "a..b.jpg") == tmp_path / "out" / "h5/task/001/a..b.jpg"


def test_progresslm_export_refuses_a_frame_name_leading_out(storage, tmp_path):
    """A record from before the import checks (or written by hand) whose frame name climbs out of --out: the export
    refuses that observation and writes nothing outside."""
    from schemas import BlobRef, Status, make_record
    from storage.releases import create_release
    from tasks.progress.payloads import Demo, Observation
    from tasks.progress.published_export import export_progresslm

    blob = storage.put_blob(b"leaked", role="observation", media_type="image/jpeg")
    demo = make_record(Demo(trajectory_id="t/1", modality="visual", task_goal="g", steps=["a.jpg"], total_steps=1,
                            data_source="s"), benchmark="progress", producer=Producer(task="t"),
                       status=Status.ACCEPTED)
    records = [demo, *(make_record(Observation(demo_id=demo.id, frame=frame, closest_idx=1, delta=0.0,
                                               progress_score=0.5, source_row=frame),
                                   benchmark="progress", producer=Producer(task="t"), parents=[demo.id],
                                   blobs=[BlobRef(sha256=blob.sha256, role="observation", media_type="image/jpeg")],
                                   status=Status.ACCEPTED)
                       for frame in ("../../../secret/outside.txt", "fine.jpg"))]
    storage.catalog.put_records(records)
    create_release(storage.catalog, storage.blobs, "escape")
    out = tmp_path / "exports" / "out"
    written = export_progresslm(storage.catalog, storage.blobs, "escape", out)
    assert written == {"visual_same_view.jsonl": 1, "refused": 1}
    assert (out / "frames" / "t" / "1" / "fine.jpg").read_bytes() == b"leaked"
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and out not in p.parents
               and not p.name.startswith("catalog.duckdb")]  # the catalog's file and its lock file
    assert not [p for p in outside if "blobs" not in p.parts]


@pytest.mark.parametrize("fmt", ["sample", "lerobot", "folder", "hdf5"])
def test_an_empty_source_folder_says_nothing_was_found(storage, tmp_path, fmt):
    (tmp_path / "empty").mkdir()
    plan = SamplingPlan(interval_per_segment=1, boundary_offsets=(), demo_camera="front", cross_cameras=())
    counts = build_folder(tmp_path / "empty", storage, Producer(task="t"), plan, episode_format=fmt)
    assert counts["episodes"] == 0 and "no episodes" in counts["nothing found"]


def test_empty_published_and_clip_folders_say_so(storage, tmp_path):
    from schemas.config import BlobSettings, Settings
    from tasks.explore.stages import extract_explore_instances
    from tests.support.catalog import catalog_settings

    (tmp_path / "empty").mkdir()
    assert "holds none of the PROGRESS-BENCH files" in import_into_catalog(
        tmp_path / "empty", storage, Producer(task="t"))["nothing found"]
    settings = Settings(catalog=catalog_settings(storage.catalog), blobs=BlobSettings(uri=storage.blobs.uri))
    for fmt in ("sample", "ego4d", "folder"):
        counts = extract_explore_instances(settings, str(tmp_path / "empty"), fmt, None, None)
        assert counts["clips"] == 0 and "no clips" in counts["nothing found"]
    assert not storage.catalog.find_records()
    assert json.dumps(counts)  # the summary a flow stores stays plain JSON
