"""PROGRESS-BENCH scored as the official code and the paper define it, on files in the published format that the
test writes: each setting's file its own sequences (views never merged), constant-prediction trajectories skipped
and counted, Vision and Micro weighted by samples, Macro the plain mean, numbers read as the official parser reads
them. Every expected value is computed by hand below."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas import Producer
from schemas.releases import ReleaseSelection
from storage import open_storage
from storage.releases import create_release
from tests.support.evaluation import evaluate

VISUAL_T1 = [f"camera_top_{i:04d}.jpg" for i in (0, 10, 20, 30, 40)]
STEPS = ["pick up the cup", "move it over the plate", "put it down", "let go"]


def visual(trajectory: str, frame: str, progress: int, closest: int, demo: list[str], **extra: str) -> dict:
    return {"id": trajectory, "task_goal": "put the cup on the plate", "visual_demo": demo, "total_steps": "4",
            "stage_to_estimate": [frame], "closest_idx": str(closest), "delta": "+0%", "progress_score":
            f"{progress}%", "data_source": "h5_franka_3rgb", **extra}


def text(frame: str, progress: int | str, closest: int | str, steps: list[str] = STEPS) -> dict:
    return {"id": "robot/t1", "task_goal": "put the cup on the plate", "text_demo": steps, "total_steps": 4,
            "stage_to_estimate": [frame], "closest_idx": closest, "delta": "n/a" if progress == "n/a" else "+0%",
            "progress_score": progress if progress == "n/a" else f"{progress}%", "data_source": "h5_franka_3rgb"}


# file -> [(row, answer)]
FILES = {
    "visual_same_view.jsonl": [
        (visual("robot/t1", "camera_top_0008.jpg", 20, 1, VISUAL_T1), "<score>20%</score>"),
        (visual("robot/t1", "camera_top_0020.jpg", 50, 3, VISUAL_T1), "<score>50%</score>"),
        (visual("robot/t1", "camera_top_0032.jpg", 80, 4, VISUAL_T1), "<score>80%</score>"),
        # t2 is answered 50% throughout: the official code skips a constant trajectory
        (visual("robot/t2", "camera_top_0010.jpg", 25, 2, VISUAL_T1), "<score>50%</score>"),
        (visual("robot/t2", "camera_top_0030.jpg", 75, 4, VISUAL_T1), "<score>50%</score>"),
    ],
    "visual_cross_view.jsonl": [  # t1 again, from another camera: a sequence of its own, ranked backwards
        (visual("robot/t1", "camera_left_0008.jpg", 20, 1, VISUAL_T1, camera_combination="camera_top+camera_left"),
         "<score>80%</score>"),
        (visual("robot/t1", "camera_left_0032.jpg", 80, 4, VISUAL_T1, camera_combination="camera_top+camera_left"),
         "<score>20%</score>"),
    ],
    "text-normal.jsonl": [  # numbers as the official parser reads them: 0.5 -> 50%, 25 -> 25%, a bare 1 -> 100%
        (text("camera_top_0010.jpg", 25, 1), "<score>0.5</score>"),
        (text("camera_top_0020.jpg", 50, 2), "<score>25</score>"),
        (text("camera_top_0030.jpg", 75, 3), "<score>1</score>"),
    ],
    "visual-unanswerable.jsonl": [
        ({**visual("robot/t1", "camera_top_0020_edit.jpg", 0, 1, VISUAL_T1), "closest_idx": "n/a", "delta": "n/a",
          "progress_score": "n/a"}, "<score>n/a</score>"),
    ],
    "text-unanswerable.jsonl": [
        (text("camera_top_0020.jpg", "n/a", "n/a", [s.replace("cup", "kettle") for s in STEPS]),
         "<score>40%</score>"),
    ],
}


def test_published_files_are_scored_by_the_official_definitions(settings, tmp_path):
    from tasks.progress.published import import_into_catalog

    folder = tmp_path / "progress-bench"
    folder.mkdir()
    answers = []
    for name, rows in FILES.items():
        (folder / name).write_text("".join(json.dumps(row) + "\n" for row, _ in rows))
        answers += [{"key": f"{name}:{line}", "answer": answer} for line, (_, answer) in enumerate(rows, 1)]
    storage = open_storage(settings)
    counts = import_into_catalog(folder, storage, Producer(task="import-progress-published"))
    assert counts["quarantined"] == 0 and counts["rows"] == 12
    tag = create_release(storage.catalog, storage.blobs, "published", selection=ReleaseSelection(
        benchmarks=("progress",), kinds=("demo", "observation"))).tag
    path = Path(tmp_path / "answers.jsonl")
    path.write_text("".join(json.dumps(a) + "\n" for a in answers))
    _, collected, result = evaluate(settings, release=tag, model="harness", predictions=str(path))
    assert len(collected.answers) == 12 and result.counts["unparsed"] == 0
    report = result.scoring.tables
    same, cross, text_ = report.groups["same"], report.groups["cross"], report.groups["text"]
    # same view: t1 exact (rho 1, NSE 0); t2 constant 50% against 25/75%: NSE 1/3 each, no rho (skipped)
    assert same.nse == pytest.approx(2 / 15) and same.prc == pytest.approx(1.0)
    assert same.constant_predictions == 1 and same.prc_trajectories == 1
    assert same.uda == 1.0  # the edited frame was answered n/a
    # cross view on its own: 80% for 20% and 20% for 80%, NSE .6/.8 each, rho -1 (merged with same view, t1 would
    # be one sequence of five points instead)
    assert cross.nse == pytest.approx(0.75) and cross.prc == pytest.approx(-1.0)
    # text: read 50%, 25%, 100% against 25/50/75%: ranks 2,1,3 -> rho 1 - 6 * 2 / (3 * 8) = .5
    text_nse = (0.25 / 0.75 + 0.25 / 0.5 + 0.25 / 0.75) / 3
    assert text_.nse == pytest.approx(text_nse) and text_.prc == pytest.approx(0.5) and text_.uda == 0.0
    vision, micro = report.groups["vision"], report.groups["micro"]
    # Vision: 5 same-view and 2 cross-view answerable samples; Micro: 7 vision and 3 text
    assert vision.nse == pytest.approx((5 * 2 / 15 + 2 * 0.75) / 7) and vision.prc == pytest.approx(3 / 7)
    assert micro.nse == pytest.approx((7 * (13 / 42) + 3 * text_nse) / 10)
    assert micro.prc == pytest.approx((7 * 3 / 7 + 3 * 0.5) / 10)
    assert micro.uda == pytest.approx(0.5) and micro.afrr == 0.0
    assert report.macro["nse"] == pytest.approx((13 / 42 + text_nse) / 2)
    assert report.macro["prc"] == pytest.approx((3 / 7 + 0.5) / 2)
    assert result.metrics["PRC"] == pytest.approx(0.45) and result.metrics["PRC macro"] == report.macro["prc"]


def test_two_labels_for_one_frame_are_both_kept_and_scored(settings, tmp_path):
    """As lines 26 and 33 of the published same-view file: one frame of one trajectory against one demo, labelled
    61% and 66%. The official metric.py scores both rows; so do we, and the release's statistics list the pair."""
    from tasks.progress.published import import_into_catalog
    from tasks.progress.stats import stats_for_release

    demo = VISUAL_T1
    rows = [(visual("robot/t1", "camera_top_0010.jpg", 20, 2, demo), "<score>30%</score>"),
            (visual("robot/t1", "camera_top_0026.jpg", 61, 3, demo), "<score>60%</score>"),
            (visual("robot/t1", "camera_top_0040.jpg", 90, 4, demo), "<score>70%</score>"),
            (visual("robot/t1", "camera_top_0026.jpg", 66, 3, demo), "<score>60%</score>")]
    folder = tmp_path / "progress-bench"
    folder.mkdir()
    (folder / "visual_same_view.jsonl").write_text("".join(json.dumps(row) + "\n" for row, _ in rows))
    storage = open_storage(settings)
    counts = import_into_catalog(folder, storage, Producer(task="import-progress-published"))
    assert counts["quarantined"] == 0 and counts["label conflicts"] == 1 and counts["rows"] == 4
    tag = create_release(storage.catalog, storage.blobs, "published", selection=ReleaseSelection(
        benchmarks=("progress",), kinds=("demo", "observation"))).tag
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps({"key": f"visual_same_view.jsonl:{line}", "answer": answer}) + "\n"
                            for line, (_, answer) in enumerate(rows, 1)))
    _, collected, result = evaluate(settings, release=tag, model="harness", predictions=str(path))
    assert len(collected.answers) == 4
    same = result.scoring.tables.groups["same"]
    # by hand, all four rows: |p - p*| / max(p*, 1 - p*)
    truth, answered = [0.20, 0.61, 0.90, 0.66], [0.30, 0.60, 0.70, 0.60]
    assert same.nse == pytest.approx(sum(abs(a - t) / max(t, 1 - t) for a, t in zip(answered, truth, strict=True)) / 4)
    # Spearman over the four rows, ties averaged: truth ranks 1,2,4,3; answers 1,2.5,4,2.5
    rank_t, rank_a = [1, 2, 4, 3], [1, 2.5, 4, 2.5]
    mean = 2.5
    covariance = sum((x - mean) * (y - mean) for x, y in zip(rank_t, rank_a, strict=True))
    spread = (sum((x - mean) ** 2 for x in rank_t) * sum((y - mean) ** 2 for y in rank_a)) ** 0.5
    assert same.prc == pytest.approx(covariance / spread)
    conflicts = stats_for_release(storage.catalog, tag).conflicts
    assert [(c.frame, c.rows, c.labels, c.differing) for c in conflicts] == [
        ("camera_top_0026.jpg", ("visual_same_view.jsonl:2", "visual_same_view.jsonl:4"),
         ("61%, step 3, delta +0%", "66%, step 3, delta +0%"), ("61%", "66%"))]
    assert conflicts[0].as_row() == ("visual_same_view.jsonl:2, 4", "camera_top_0026.jpg", "61% / 66%")


def _official_nse_and_prc(rows: list[tuple[str, float | None, float | None]]) -> tuple[float, float]:
    """ProgressLM's eval/metric.py (calculate_nse_errors, calculate_prc) written again from its text, over one
    result file: (trajectory id, truth, prediction or None for n/a) per row."""
    from collections import defaultdict

    import numpy as np
    from scipy.stats import spearmanr

    errors = [abs(truth - pred) / max(truth, 1 - truth) for _, truth, pred in rows
              if truth is not None and pred is not None]
    trajectories: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for trajectory, truth, pred in rows:
        if truth is not None and pred is not None:
            trajectories[trajectory].append((truth, pred))
    rhos = []
    for samples in trajectories.values():
        truths, preds = [t for t, _ in samples], [p for _, p in samples]
        if len(samples) <= 1 or len(set(preds)) == 1 or len(set(truths)) == 1:
            continue
        rho = spearmanr(truths, preds)[0]
        if not np.isnan(rho):
            rhos.append(rho)
    return float(np.mean(errors)), float(np.mean(rhos))


def test_the_published_files_score_as_the_official_metric_code(settings, tmp_path):
    """All 3,325 published rows (tests/progress/published), answered by a seeded noisy oracle that sometimes
    abstains: NSE and PRC of each file equal an independent implementation of the official eval/metric.py over every
    row (the 25 frames labelled twice included), and AFRR and UDA equal a count by hand."""
    import random
    import tarfile

    from tasks.progress.published import FILE_KINDS, import_into_catalog

    with tarfile.open(Path(__file__).parent / "published" / "progress-bench.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    storage = open_storage(settings)
    import_into_catalog(tmp_path / "progress-bench", storage, Producer(task="import-progress-published"))
    tag = create_release(storage.catalog, storage.blobs, "published", selection=ReleaseSelection(
        benchmarks=("progress",), kinds=("demo", "observation"))).tag
    rng = random.Random(0)
    answers, official = [], {}
    for name in FILE_KINDS:
        official[name] = []
        lines = (tmp_path / "progress-bench" / name).read_text().splitlines()
        for line, row in enumerate((json.loads(text) for text in lines), 1):
            truth = None if row["progress_score"] == "n/a" else float(row["progress_score"].rstrip("%")) / 100
            pred = None
            if rng.random() >= (0.5 if truth is None else 0.05):
                centre = truth if truth is not None else rng.random()
                pred = float(f"{100 * min(1.0, max(0.0, rng.gauss(centre, 0.1))):.4f}") / 100
            shown = "n/a" if pred is None else f"{100 * pred:.4f}%"
            answers.append({"key": f"{name}:{line}", "answer": f"<score>{shown}</score>"})
            official[name].append((row["id"], truth, pred))
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in answers))
    _, collected, result = evaluate(settings, release=tag, model="noisy", predictions=str(path))
    assert len(collected.answers) == 3325 and result.counts["unparsed"] == 0
    groups = result.scoring.tables.groups
    for group, name in (("same", "visual_same_view.jsonl"), ("cross", "visual_cross_view.jsonl"),
                        ("text", "text-normal.jsonl")):
        nse, prc = _official_nse_and_prc(official[name])
        assert groups[group].nse == pytest.approx(nse, abs=1e-12) and groups[group].prc == pytest.approx(prc, abs=1e-12)
        rows = official[name]
        assert groups[group].afrr == pytest.approx(sum(p is None for _, _, p in rows) / len(rows))
    for group, name in (("same", "visual-unanswerable.jsonl"), ("text", "text-unanswerable.jsonl")):
        rows = official[name]
        assert groups[group].uda == pytest.approx(sum(p is None for _, _, p in rows) / len(rows))
