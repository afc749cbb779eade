from __future__ import annotations

import json

import pytest

from schemas import Producer, Status
from storage import Storage
from storage.blobs import LocalBlobStore
from storage.catalog import Catalog as CatalogClass
from tasks.progress.payloads import Observation
from tasks.progress.published import SAMPLE_DIR, import_folder, import_into_catalog, parse_published
from tests.support.images import jpeg

PRODUCER = Producer(task="test-import")


def _line(**overrides):
    row = {"id": "h5_franka_3rgb/stack/001", "task_goal": "stack the cube",
           "visual_demo": ["camera_top_0000.jpg", "camera_top_0040.jpg", "camera_top_0080.jpg"],
           "total_steps": "2", "stage_to_estimate": ["camera_top_0020.jpg"], "closest_idx": "1",
           "delta": "+25%", "progress_score": "25%", "data_source": "robomind_h5_franka_3rgb"}
    row.update(overrides)
    return json.dumps(row)


def test_types_of_both_file_families_are_normalised():
    visual = parse_published([_line()], source="v.jsonl", file_kind="visual_same_view.jsonl", producer=PRODUCER)
    demo, observation = visual.records
    assert demo.kind == "demo" and demo.payload["total_steps"] == 2
    assert demo.payload["data_source"] == "robomind_h5_franka_3rgb"  # kept as written
    obs = observation.typed()
    assert isinstance(obs, Observation)
    assert (obs.closest_idx, obs.delta, obs.progress_score, obs.answerable) == (1, 25, 0.25, True)
    assert observation.parents == (demo.id,)
    text = parse_published([json.dumps({"id": "t", "task_goal": "g", "text_demo": ["a", "b"], "total_steps": 2,
                                        "stage_to_estimate": "f.jpg", "closest_idx": 2, "progress_score": "100%",
                                        "data_source": "h5_ur_1rgb"})],
                           source="t.jsonl", file_kind="text-normal.jsonl", producer=PRODUCER)
    assert text.records[1].typed().progress_score == 1.0
    unanswerable = parse_published([_line(closest_idx="n/a", delta="n/a", progress_score="n/a",
                                          stage_to_estimate=["camera_top_0020_edit.jpg"])],
                                   source="u.jsonl", file_kind="visual-unanswerable.jsonl", producer=PRODUCER)
    obs = unanswerable.records[1].typed()
    assert (obs.answerable, obs.negative, obs.progress_score) == (False, "visual", None)


def test_bad_lines_are_quarantined_with_item_and_reason_and_the_rest_goes_on():
    lines = [_line(), "{not json", _line(progress_score="140%"), _line(closest_idx="7"),
             _line(stage_to_estimate=[]), "", _line(id="other", task_goal="another goal")]
    result = parse_published(lines, source="f.jsonl", file_kind="visual_same_view.jsonl", producer=PRODUCER)
    assert result.rows == 6
    assert len(result.records) == 4  # two good rows: a demo and an observation each
    reasons = [q.status_reason for q in result.quarantined]
    assert all(q.status is Status.QUARANTINED for q in result.quarantined)
    assert reasons[0].startswith("f.jsonl:line 2: not valid JSON")
    assert "line 3" in reasons[1] and "progress_score" in reasons[1] and "0-100%" in reasons[1]
    assert "line 4" in reasons[2] and "outside the demo's 3 steps" in reasons[2]
    assert "line 5" in reasons[3] and "stage_to_estimate" in reasons[3]
    assert result.quarantined[0].payload["raw"] == "{not json"
    with pytest.raises(ValueError, match="unknown PROGRESS-BENCH file kind"):
        parse_published([], source="x", file_kind="other.jsonl", producer=PRODUCER)


def test_bundled_sample_imports_and_reimport_adds_nothing(storage):
    catalog = storage.catalog
    first = import_into_catalog(SAMPLE_DIR, storage, PRODUCER)
    assert first["quarantined"] == 0 and first["new"] == first["records"] > 100
    records = catalog.find_records()
    viewable = [r for r in records if r.kind == "observation" or r.payload["modality"] == "visual"]
    assert first["frames missing"] == len(viewable)  # no frame folder: every record that shows frames says so
    assert all(r.payload["frame_missing"] for r in records if r.kind == "observation")
    again = import_into_catalog(SAMPLE_DIR, storage, Producer(task="another run"))
    assert again["new"] == 0
    kinds = {k: n for (_, k, _), n in catalog.count_records().items()}
    assert kinds["observation"] == first["rows"]
    views = {r.payload["view"] for r in catalog.find_records(kind="observation")}
    assert views == {"same", "cross"}


def test_crash_mid_import_then_rerun_resumes_without_duplicates(tmp_path, monkeypatch):
    import storage.catalog as catalog_module

    clean = import_folder(SAMPLE_DIR, PRODUCER)
    catalog = CatalogClass(tmp_path / "c.duckdb", batch_size=20)
    storage = Storage(catalog=catalog, blobs=LocalBlobStore(tmp_path / "blobs"))
    real_insert = catalog_module.insert_batch
    calls = {"n": 0}

    def crash_after_three_batches(records, run_id):
        calls["n"] += 1
        if calls["n"] > 3:
            raise KeyboardInterrupt("killed mid-import")
        return real_insert(records, run_id)

    monkeypatch.setattr(catalog_module, "insert_batch", crash_after_three_batches)
    with pytest.raises(KeyboardInterrupt):
        import_into_catalog(SAMPLE_DIR, storage, PRODUCER)
    assert catalog.query("SELECT count(*) FROM records")[0][0] == 60  # three committed batches survive
    monkeypatch.setattr(catalog_module, "insert_batch", real_insert)
    resumed = import_into_catalog(SAMPLE_DIR, storage, PRODUCER)
    assert resumed["new"] == len(clean.records) - 60
    assert catalog.query("SELECT count(*), count(DISTINCT id) FROM records")[0] == (len(clean.records),) * 2


def test_published_files_round_trip_through_a_release(storage, tmp_path):
    from storage.releases import create_release
    from tasks.progress.published import FILE_KINDS
    from tasks.progress.published_export import export_progresslm

    import_into_catalog(SAMPLE_DIR, storage, PRODUCER)
    create_release(storage.catalog, storage.blobs, "published")
    written = export_progresslm(storage.catalog, storage.blobs, "published", tmp_path / "out")
    assert set(written) == set(FILE_KINDS)
    for name in FILE_KINDS:
        original = sorted(json.dumps(json.loads(line), sort_keys=True)
                          for line in (SAMPLE_DIR / name).read_text().splitlines() if line.strip())
        exported = sorted(json.dumps(json.loads(line), sort_keys=True)
                          for line in (tmp_path / "out" / name).read_text().splitlines())
        assert exported == original, name  # every field, with the file's own types


def test_a_frame_folder_attaches_frames_and_marks_the_missing_ones(storage, tmp_path):
    from storage.releases import create_release
    from tasks.progress.published_export import export_progresslm

    rows = [json.loads(line) for line in (SAMPLE_DIR / "visual_same_view.jsonl").read_text().splitlines()]
    rows = [*rows[:3], *[r for r in rows if r["id"] != rows[0]["id"]][:3]]  # two of them from other demos
    (tmp_path / "pub").mkdir()
    (tmp_path / "pub" / "visual_same_view.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    frames = tmp_path / "frames"
    first = rows[0]
    for number, name in enumerate([*first["visual_demo"][:-1], first["stage_to_estimate"][0]]):
        (frames / first["id"]).mkdir(parents=True, exist_ok=True)
        (frames / first["id"] / name).write_bytes(jpeg(number))  # the last key frame is absent
    counts = import_into_catalog(tmp_path / "pub", storage, PRODUCER, frames_dir=frames)
    assert counts["quarantined"] == 0 and counts["rows"] == 6
    observation = next(o for o in storage.catalog.find_records(kind="observation")
                       if o.payload["source_row"] == "visual_same_view.jsonl:1")
    demo = storage.catalog.get_record(observation.parents[0])
    assert not observation.payload["frame_missing"]
    assert storage.blobs.get(observation.blobs[0].sha256) == jpeg(len(first["visual_demo"]) - 1)
    assert demo.payload["missing_frames"] == [first["visual_demo"][-1]]
    assert [b.role for b in demo.blobs] == [f"demo_{i}" for i in range(len(first["visual_demo"]) - 1)]
    others = [o for o in storage.catalog.find_records(kind="observation")
              if o.payload["demo_id"] != demo.id and o.payload["frame"] not in first["visual_demo"]]
    assert others and all(o.payload["frame_missing"] and not o.blobs for o in others)
    # exported frames land where a re-import finds them: the round trip keeps the frames, and the demos' ids (the
    # observations differ only in the row they were read from)
    create_release(storage.catalog, storage.blobs, "pub")
    export_progresslm(storage.catalog, storage.blobs, "pub", tmp_path / "out")
    assert (tmp_path / "out" / "frames" / first["id"] / first["stage_to_estimate"][0]).read_bytes() == \
        jpeg(len(first["visual_demo"]) - 1)
    before = storage.catalog.find_records(kind="observation")
    again = import_into_catalog(tmp_path / "out", storage, PRODUCER, frames_dir=tmp_path / "out" / "frames")
    assert again["new"] == 6 and len(storage.catalog.find_records(kind="demo")) == 2  # no new demo

    def without_row(records):
        return sorted((json.dumps({**r.payload, "source_row": None}, sort_keys=True), r.blobs) for r in records)

    after = [o for o in storage.catalog.find_records(kind="observation") if o.id not in {b.id for b in before}]
    assert without_row(after) == without_row(before)


def test_every_row_of_the_published_files_comes_back_from_a_release(storage, tmp_path):
    """The real published PROGRESS-BENCH files (tests/progress/published): all 3,325 rows imported, the 25 frames
    the files label twice kept as label conflicts, and the export equal to the published files row by row."""
    import tarfile
    from pathlib import Path

    from storage.releases import create_release
    from tasks.progress.published import FILE_KINDS
    from tasks.progress.published_export import export_progresslm
    from tasks.progress.stats import stats_for_release

    with tarfile.open(Path(__file__).parent / "published" / "progress-bench.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    published = tmp_path / "progress-bench"
    counts = import_into_catalog(published, storage, PRODUCER)
    assert (counts["rows"], counts["quarantined"], counts["label conflicts"]) == (3325, 0, 25)
    tag = create_release(storage.catalog, storage.blobs, "published").tag
    written = export_progresslm(storage.catalog, storage.blobs, tag, tmp_path / "out")
    assert written == {"text-normal.jsonl": 503, "text-unanswerable.jsonl": 503, "visual_same_view.jsonl": 1413,
                       "visual_cross_view.jsonl": 546, "visual-unanswerable.jsonl": 360}
    for name in FILE_KINDS:
        original = sorted(json.dumps(json.loads(line), sort_keys=True)
                          for line in (published / name).read_text().splitlines() if line.strip())
        exported = sorted(json.dumps(json.loads(line), sort_keys=True)
                          for line in (tmp_path / "out" / name).read_text().splitlines())
        assert exported == original, name
    conflicts = stats_for_release(storage.catalog, tag).conflicts
    files = [c.rows[0].partition(":")[0] for c in conflicts]
    assert (files.count("visual_same_view.jsonl"), files.count("visual_cross_view.jsonl")) == (20, 5)
    first = next(c for c in conflicts if c.rows[0] == "visual_same_view.jsonl:26")
    assert first.rows[1] == "visual_same_view.jsonl:33" and [label[:3] for label in first.labels] == ["61%", "66%"]


def test_a_harness_export_card_lists_the_label_conflicts(storage, tmp_path):
    """Two published rows label one frame 61% and 66%: the hf export holds both samples, and its dataset card's
    statistics name the two rows and the labels that differ."""
    import datasets

    from storage.releases import create_release
    from tasks.exporting.hf import export_hf

    demo = ["camera_top_0000.jpg", "camera_top_0040.jpg", "camera_top_0080.jpg"]
    rows = [_line(visual_demo=demo, stage_to_estimate=["camera_top_0020.jpg"], closest_idx="1", delta="+0%",
                  progress_score=f"{score}%") for score in (61, 66)]
    (tmp_path / "pub").mkdir()
    (tmp_path / "pub" / "visual_same_view.jsonl").write_text("\n".join(rows) + "\n")
    frames = tmp_path / "frames" / json.loads(rows[0])["id"]
    frames.mkdir(parents=True)
    for number, name in enumerate([*demo, "camera_top_0020.jpg"]):
        (frames / name).write_bytes(jpeg(number))
    counts = import_into_catalog(tmp_path / "pub", storage, PRODUCER, frames_dir=tmp_path / "frames")
    assert (counts["rows"], counts["quarantined"], counts["label conflicts"]) == (2, 0, 1)
    create_release(storage.catalog, storage.blobs, "pub")
    written = export_hf(storage.catalog, storage.blobs, "pub", tmp_path / "hf")
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "**label conflicts: 1 frame labelled more than once (every sample kept and scored)**" in card
    assert "| visual_same_view.jsonl:1, 2 | camera_top_0020.jpg | 61% / 66% |" in card
    loaded = [datasets.load_dataset(str(tmp_path / "hf"), config, split="test") for config in written]
    assert sum(len(rows) for rows in loaded) == 2
