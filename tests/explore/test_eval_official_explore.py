"""The official EXPLORE-Bench files end to end: annotation files in the official layout (exp_anno_*.json with images/
beside them), imported, frozen, and the official harness's prediction files scored, every item matched."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from schemas import Producer, Status
from storage import open_storage
from tasks.explore.instances import SubsetBounds
from tasks.explore.official import clip_id_of, import_official_into_catalog
from tests.support.evaluation import evaluate


def write_jpeg(path: Path, seed: int) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((16, 16, 3), seed, dtype=np.uint8)).save(path, format="JPEG")


def obj(category: str, description: str, relation: list[str], **extra: str) -> dict:
    return {"category": category, "description": description, "relation": relation, **extra}


KITCHEN = [obj("cup", "red ceramic cup", ["cup on table"]), obj("table", "brown wooden table", []),
           obj("bowl", "white bowl", ["bowl next to cup"], key_state="The bowl is knocked over.")]
DESK = [obj("laptop", "grey laptop", ["laptop on desk"]), obj("desk", "white desk", [])]


def official_folder(root: Path) -> Path:
    """Three short instances (u3's image is not in the folder), one medium; the full file repeats them all, once
    with different actions (a label conflict: both rows are kept), and holds two bad rows."""
    folder = root / "EXPLORE-Dataset"
    for index, uid in enumerate(("u1", "u2", "u4")):
        write_jpeg(folder / "images" / f"{uid}-start.jpg", 40 * index + 10)
    short = [{"start_frame": "u1-start.jpg", "atomic_actions": "|".join(f"C moves cup {i}" for i in range(12)),
              "end_frame_info": KITCHEN, "middle_frame_1_info": KITCHEN[:1]},
             {"start_frame": "u2-start.jpg", "atomic_actions": "|".join(f"C types {i}" for i in range(15)),
              "end_frame_info": DESK},
             {"start_frame": "u3-start.jpg", "atomic_actions": "|".join(f"C waits {i}" for i in range(11)),
              "end_frame_info": DESK}]
    medium = [{"start_frame": "u4-start.jpg", "atomic_actions": "|".join(f"C stirs {i}" for i in range(120)),
               "end_frame_info": KITCHEN[:2]}]
    full = [*short, *medium,
            {**short[0], "atomic_actions": "C does something else"},  # conflicts with the subset file's u1
            {"start_frame": "../../etc/passwd", "atomic_actions": "|".join("ab" * 6), "end_frame_info": DESK},
            {"start_frame": "u5-start.jpg", "atomic_actions": "a|b"}]  # no final scene
    (folder / "exp_anno_short.json").write_text(json.dumps(short))
    (folder / "exp_anno_med.json").write_text(json.dumps(medium))
    (folder / "exp_anno_long.json").write_text("[]")
    (folder / "exp_anno.json").write_text(json.dumps(full))
    return folder


def test_official_names_give_the_uid():
    assert clip_id_of("abc123-start.jpg") == "abc123" and clip_id_of("images/x_start.jpg") == "x"
    assert clip_id_of("plain.png") == "plain"


def test_official_annotations_import_and_the_official_predictions_score_every_item(settings, tmp_path):
    folder = official_folder(tmp_path)
    storage = open_storage(settings)
    counts = import_official_into_catalog(folder, storage, Producer(task="import-explore-official"), SubsetBounds(),
                                          release="explore-official")
    # the full file's u1 says other actions than the short file's: both rows are official, both kept
    assert counts["instances"] == 5 and counts["repeated in the full file"] == 4
    assert counts["label conflicts"] == 1
    assert counts["quarantined"] == 2 and counts["images missing"] == 1
    quarantined = {q.payload["locator"]: q.payload for q in
                   storage.catalog.find_records(kind="quarantined_input", status=Status.QUARANTINED)}
    assert set(quarantined) == {"item 5", "item 6"}
    assert all(q["source"].endswith("exp_anno.json") for q in quarantined.values())
    assert "outside the source root" in quarantined["item 5"]["reason"]
    assert "no end_frame_info" in quarantined["item 6"]["reason"]
    from tasks.explore.stats import stats_for_release

    stats = stats_for_release(storage.catalog, counts["release"])
    assert stats.conflicts == [("u1-start.jpg", "exp_anno.json:4, exp_anno_short.json:0", "atomic_actions")]
    assert stats.tables()[0].rows[-1][:2] == ("all", 5)
    rows = {r.payload["source_row"]: r for r in storage.catalog.find_records(kind="explore_instance")}
    assert {w: (r.payload["clip_id"], r.payload["subset"]) for w, r in rows.items()} == {
        "exp_anno_short.json:0": ("u1", "Short"), "exp_anno_short.json:1": ("u2", "Short"),
        "exp_anno_short.json:2": ("u3", "Short"), "exp_anno_med.json:0": ("u4", "Medium"),
        "exp_anno.json:4": ("u1", "Short")}  # its subset is the subset file's that lists its start_frame
    assert rows["exp_anno.json:4"].payload["atomic_actions"] == ["C does something else"]
    instances = {r.payload["clip_id"]: r for w, r in rows.items() if w != "exp_anno.json:4"}
    assert instances["u3"].payload["missing_images"] == ["u3-start.jpg"] and not instances["u3"].blobs
    u1 = instances["u1"].payload
    assert u1["official"]["middle_frame_1_info"] == KITCHEN[:1] and u1["source_row"] == "exp_anno_short.json:0"
    assert len(u1["atomic_actions"]) == 12 and u1["image_name"] == "u1-start.jpg"

    # the official harness's scored file: {start_frame: description}, a list for stepwise strategies
    answers = {"u1-start.jpg": ["A cup.", "Two cups stand on the table, next to a plate."],
               "u2-start.jpg": "A laptop on the desk.", "u3-start.jpg": "A desk.", "u4-start.jpg": "A cup."}
    path = tmp_path / "Qwen3-VL-8B-Instruct.json"
    path.write_text(json.dumps(answers))
    _plan, collected, result = evaluate(settings, release=counts["release"], model="official-harness",
                                        predictions=str(path))
    # the answer for u1-start.jpg scores both u1 rows, as the official evaluation of each file would
    assert len(collected.answers) == 5 and not collected.skipped and not result.problems
    assert result.counts["scored"] == 5 and result.counts["unparsed"] == 0
    where = {r.id: w for w, r in rows.items()}
    stored = storage.catalog.find_records(kind="prediction", payload_equals={"run": result.key})
    assert {where[p.payload["item_id"]]: p.payload["official_key"] for p in stored} == {
        w: r.payload["image_name"] for w, r in rows.items()}
    by_row = {where[p.payload["item_id"]]: p.payload["scores"]["S_obj"] for p in stored}
    assert by_row["exp_anno.json:4"] == by_row["exp_anno_short.json:0"]  # the same final scene, the same answer
    s_obj = {rows[w].payload["clip_id"]: value for w, value in by_row.items() if w != "exp_anno.json:4"}
    # u1: nouns cup (from "cups"), table, plate; categories cup, table, bowl: cup and table match themselves
    # (cosine 1), bowl's best candidate is taken by its own category, so bowl is unmatched: (1 + 1 + 0) / 3
    assert s_obj["u1"] == pytest.approx(100 * 2 / 3, abs=1e-3)
    assert s_obj["u2"] == pytest.approx(100.0, abs=1e-3)  # laptop and desk both named
    assert s_obj["u4"] == pytest.approx(100 / 2, abs=1e-3)  # cup of cup and table
    full = result.scoring.tables
    assert full["Short"].instances == 4 and full["Medium"].instances == 1
    assert result.metrics["S_obj"] == pytest.approx(sum(by_row.values()) / 5, abs=1e-6)

    # its raw results.json (a list of start_frame/response) reads the same, cleaned as the harness cleans it
    raw = [{"start_frame": k, "response": (["<think>hm</think>" + x for x in v] if isinstance(v, list) else
                                           f"<answer>{v}</answer>"), "success": True} for k, v in answers.items()]
    (tmp_path / "results.json").write_text(json.dumps(raw))
    _, again, rerun = evaluate(settings, release=counts["release"], model="official-harness-raw",
                               predictions=str(tmp_path / "results.json"))
    assert again.answers == collected.answers and rerun.metrics["S_obj"] == pytest.approx(result.metrics["S_obj"])


def test_a_folder_without_the_official_files_says_so(settings, tmp_path):
    counts = import_official_into_catalog(tmp_path, open_storage(settings), Producer(task="t"), SubsetBounds())
    assert counts["instances"] == 0 and "exp_anno_short.json" in counts["nothing found"]


def test_a_missing_initial_image_is_never_sent_to_a_model(settings, tmp_path):
    folder = official_folder(tmp_path)
    storage = open_storage(settings)
    counts = import_official_into_catalog(folder, storage, Producer(task="t"), SubsetBounds(), release="official")
    _, collected, result = evaluate(settings, release=counts["release"], model="baseline:oracle?drop=0")
    assert result.counts["frames missing"] == 1 and result.counts["scored"] == 4
    assert any("the initial image u3-start.jpg was not provided" in why for why in collected.unshowable.values())


def test_answers_name_their_real_lines_and_answers_to_other_subsets_are_listed(settings, tmp_path):
    """A pretty-printed official <model>.json answers every subset; scored against the Short release only, the
    Medium answer is listed once as not in the release (no quarantine record), and a problem names the line the
    entry is written on."""
    folder = official_folder(tmp_path)
    (folder / "exp_anno.json").unlink()
    (folder / "exp_anno_med.json").write_text("[]")
    storage = open_storage(settings)
    counts = import_official_into_catalog(folder, storage, Producer(task="t"), SubsetBounds(), release="short")
    answers = {"u1-start.jpg": "A cup on a table.", "u2-start.jpg": 7, "u3-start.jpg": "A desk.",
               "u4-start.jpg": "A pot on the stove."}
    path = tmp_path / "Qwen3-VL-2B-Instruct.json"
    path.write_text(json.dumps(answers, indent=4))  # "{" on line 1, the entries on lines 2-5
    result = evaluate(settings, release=counts["release"], model="m", predictions=str(path))[2]
    assert result.counts["scored"] == 2 and result.counts["not in this release"] == 1
    assert f"{path}:3: needs a \"key\" and an \"answer\" string" in "\n".join(result.problems)
    assert any("1 answer(s) to items not in short@" in p and "u4-start.jpg (line 5)" in p for p in result.problems)
    quarantined = storage.catalog.find_records(kind="quarantined_input", payload_equals={"source": str(path)})
    assert [q.payload["locator"] for q in quarantined] == ["line 3"]
    # a results.json list, one element over several lines: each named by the line it starts on
    raw = [{"start_frame": "u1-start.jpg", "response": "A cup.", "success": True},
           {"start_frame": "u2-start.jpg", "success": True}]
    (tmp_path / "results.json").write_text(json.dumps(raw, indent=2))
    result = evaluate(settings, release=counts["release"], model="m2", predictions=str(tmp_path / "results.json"))[2]
    assert any(p.startswith(f"{tmp_path / 'results.json'}:7: needs") for p in result.problems)
