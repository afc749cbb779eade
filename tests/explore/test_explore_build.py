"""EXPLORE-Bench construction on the sample world's head camera: instances, stage-by-stage scene annotation checked
against the world's true final state, human correction as new versions, release in the official format."""

from __future__ import annotations

import json

import pytest

from schemas import Producer, Status
from schemas.config import Settings
from tasks.explore.construct import SCENE_QUEUE, Annotators, annotate_instance, build_clip
from tasks.explore.instances import QualityThresholds, SubsetBounds
from tasks.explore.quality import scene_quality, summarise
from tasks.models.vision import ClassicDetector, ClassicTagger
from tasks.sources.ego_clips import iter_clips
from tasks.sources.sample_world import generate_episode, write_episode
from tests.support.catalog import catalog_settings
from tests.support.scenes import PRODUCER, SPACY, build_scenes

TASKS = ("gather", "swap", "gather", "swap", "stack", "pick_place")


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ego")
    for index, task in enumerate(TASKS):
        write_episode(generate_episode(200 + index, task), folder, cameras=("ego",), size=(640, 480))
    return folder


def test_sample_clips_become_annotated_instances_close_to_the_truth(clips, storage):
    instances, quarantined = build_scenes(clips, storage)
    # pick-and-place narrates 8 actions and stacking 8: too few for the Short subset (11-99)
    assert len(instances) == 4 and len(quarantined) == 2
    assert all("atomic actions" in q.status_reason and "fewer than 11" in q.status_reason for q in quarantined)
    catalog = storage.catalog
    figures = []
    for instance in instances:
        assert instance.payload["subset"] == "Short" and instance.payload["atomic_actions"][0].startswith("C ")
        assert {b.role for b in instance.blobs} == {"initial", "final"}
        trajectory = catalog.get_record(instance.parents[0])
        scenes = {s.payload["stage"]: s for s in catalog.find_records(kind="scene")
                  if s.payload["instance_id"] == instance.id}
        assert list(scenes) == ["tagged", "grounded", "described", "integrated", "corrected"]
        for child, parent in (("grounded", "tagged"), ("described", "grounded"), ("integrated", "described"),
                              ("corrected", "integrated")):
            assert scenes[child].parents == (scenes[parent].id,)  # each stage derives from the one before
        corrected = scenes["corrected"]
        assert corrected.status == Status.CANDIDATE
        ids = [o["id"] for o in corrected.payload["objects"]]
        assert len(ids) == len(set(ids)) and all(i.count(".") == 1 for i in ids)  # category.k, unique
        assert not any(t in ("left hand", "right hand") for t in scenes["tagged"].payload["tags"])
        quality = scene_quality([_object(o) for o in corrected.payload["objects"]], trajectory.payload["meta"]["truth"])
        figures.append(quality)
    summary = summarise(figures)
    print("\nEXPLORE offline annotation vs the sample world's truth:",
          ", ".join(f"{k} {v:.2f}" for k, v in summary.items()))
    assert summary["object_recall"] >= 0.5 and summary["object_precision"] >= 0.5
    assert summary["relation_recall"] > 0 and summary["relation_precision"] > 0
    items = [i for i in catalog.find_records(kind="review_item") if i.payload["queue"] == SCENE_QUEUE]
    assert len(items) == 4 and all(i.payload["suggestion"]["objects"] for i in items)


def _object(entry):
    from tasks.explore.payloads import SceneObject

    return SceneObject.model_validate(entry)


def test_human_corrections_are_new_versions_and_the_release_exports_officially(clips, storage, tmp_path):
    from schemas.config import BlobSettings
    from tasks.explore.export import export_explore
    from tasks.explore.stages import apply_scene_corrections, final_scenes, freeze_explore_release
    from tasks.review import decide, open_items

    build_scenes(clips, storage, middle_frames=2)
    catalog = storage.catalog
    items = open_items(catalog, SCENE_QUEUE)
    first, second, third, *rest = items
    corrected = catalog.get_record(first.payload["target_id"])
    objects = [dict(o) for o in corrected.payload["objects"]]
    objects[0]["description"] = "a hand-written description"
    objects.append({"category": "table", "description": "brown wooden table", "relation": [],
                    "key_state": "The table is tidy."})
    decide(catalog, first, annotator="ann1", verdict="correct", correction={"objects": objects})
    decide(catalog, second, annotator="ann1", verdict="correct", correction={"objects": [
        {"category": "green ball", "description": "ball on the table", "relation": ["Ball On Table"]}]})
    decide(catalog, third, annotator="ann1", verdict="accept")
    for item in rest:
        decide(catalog, item, annotator="ann2", verdict="reject")
    settings = Settings(catalog=catalog_settings(catalog),
                        blobs=BlobSettings(uri=f"file://{storage.blobs.root}"))
    applied = apply_scene_corrections(settings, None)
    assert applied["corrections"] == 1 and applied["quarantined"] == 1
    reason = next(q for q in catalog.find_records(kind="quarantined_input")
                  if q.payload["source"].startswith("decision")).status_reason
    assert "colour word(s) green" in reason and "states a relation ('on the')" in reason
    assert "'Ball On Table' is not a short lowercase" in reason
    assert apply_scene_corrections(settings, None)["corrections"] == 0  # applied once
    human = [s for s in catalog.find_records(kind="scene") if s.payload["stage"] == "human"]
    assert len(human) == 1 and human[0].parents[0] == corrected.id  # a new version of the machine annotation
    machine = catalog.get_record(corrected.id)
    assert machine.status == Status.REJECTED and machine.status_reason == (
        "corrected by human review (ann1); the corrected version replaces it")  # not "rejected by human review"
    assert catalog.get_record(human[0].parents[1]).kind == "decision"
    assert human[0].payload["objects"][0]["description"] == "a hand-written description"
    chosen = final_scenes(catalog)
    assert set(chosen) == {corrected.payload["instance_id"], catalog.get_record(third.payload["target_id"])
                           .payload["instance_id"]}
    tag = freeze_explore_release(settings, "test", {})
    assert tag == "test-explore@1"
    written = export_explore(catalog, storage.blobs, tag, tmp_path / "out")
    assert written == {"instances": 2, "Short": 2}
    exported = json.loads((tmp_path / "out" / "explore_bench.json").read_text())
    entry = next(e for e in exported if e["end_frame_info"][0]["description"] == "a hand-written description")
    assert entry["atomic_actions"].count("|") == len(catalog.get_record(corrected.payload["instance_id"])
                                                     .payload["atomic_actions"]) - 1
    assert (tmp_path / "out" / entry["start_frame"]).read_bytes()[:2] == b"\xff\xd8"
    assert len(entry["middle_frames"]) == 2 and all((tmp_path / "out" / m).is_file() for m in entry["middle_frames"])
    assert entry["end_frame_info"][-1] == {"category": "table", "description": "brown wooden table",
                                           "relation": [], "key_state": "The table is tidy."}
    assert set(entry["end_frame_info"][0]) == {"category", "description", "relation"}


def test_the_chat_backend_path_validates_asks_again_and_quarantines(clips, storage):
    from tasks.models.openai_chat import OpenAIChat
    from tests.support.chat_server import ScriptedChatServer

    extract = Producer(task="extract-explore")
    locator, load = next(iter_clips(clips, "sample"))
    built = build_clip(load, locator, storage, extract, bounds=SubsetBounds(), quality=QualityThresholds())
    instance = built.records[1]
    final = storage.blobs.get(next(b for b in instance.blobs if b.role == "final").sha256)
    detector = ClassicDetector()
    tags = ["pink ball", "yellow ball", "orange bowl", "blue block", "green ball"]
    with ScriptedChatServer() as server:
        chat = OpenAIChat(model="qwen3-vl", params={"base_url": server.url, "max_concurrency": 1})
        annotators = Annotators(ClassicTagger(), detector, None, chat, SPACY)

        def script_for(objects):
            ids = [o.id for o in objects]
            attributes = [{i: f"small smooth {i.split('.')[0]}"} for i in ids]
            corrected = [{"category": i.split(".")[0], "description": f"small smooth {i.split('.')[0]}",
                          "relation": [f"{i.split('.')[0]} on table"]} for i in ids]
            return [("text", repr(tags)),  # the tag filter keeps what it was given
                    ("text", json.dumps([{ids[0]: "small ball next to the bowl"}])),  # a relation: asked again
                    ("text", json.dumps(attributes)),
                    ("text", json.dumps([[ids[0], "next to", "table.9"]])),  # unknown id: asked again
                    ("text", json.dumps([[ids[0], "next to", ids[1]]])),
                    ("text", "```json\n" + json.dumps(corrected) + "\n```")]

        from tasks.explore.describe import ground

        objects = ground(detector.detect(final, tags), spacy_model=SPACY)
        server.script(*script_for(objects))
        result = annotate_instance(instance, final, annotators, PRODUCER)
        assert result.records, result.quarantined[0].status_reason  # the scripted tags are among those it sent
        scenes = {r.payload["stage"]: r for r in result.records if r.kind == "scene"}
        described = scenes["described"].payload
        assert described["triplets"] == [[objects[0].id, "next to", objects[1].id]]
        assert all(o["description"].startswith("small smooth") for o in described["objects"])
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
        assert any("states a relation ('next to')" in str(p) for p in prompts)
        assert any("unknown object id(s) 'table.9'" in str(p) for p in prompts)
        assert scenes["corrected"].payload["objects"][0]["relation"][0].endswith("on table")

        server.script(("text", repr(tags)), ("text", "[{\"not\": json"))  # malformed JSON, every time
        broken = annotate_instance(instance, final, annotators, PRODUCER.model_copy(update={"backend": "b"}))
        assert not broken.records and len(broken.quarantined) == 1
        reason = broken.quarantined[0].status_reason
        assert "attributes: no valid answer after 3 tries" in reason and "malformed" in reason
        assert broken.quarantined[0].payload["raw"].count("[{\"not\": json") == 3


def test_scene_corrections_reach_a_release_only_through_their_items_resolution(clips, storage):
    """Overlap 2 on the scene queue: a lone correction waits; two different corrections are a conflict that
    releases nothing until an admin chooses one, then exactly that one; a correction outvoted is never applied."""
    from annotation_ui.agreement import percent_agreement
    from annotation_ui.figures import answers_by_item
    from annotation_ui.work import Work
    from schemas.config import AnnotationSettings, BlobSettings
    from tasks.explore.stages import apply_scene_corrections
    from tasks.resolving import answer_of
    from tasks.review import open_items

    build_scenes(clips, storage)
    catalog = storage.catalog
    settings = Settings(catalog=catalog_settings(catalog), blobs=BlobSettings(uri=f"file://{storage.blobs.root}"))
    work = Work(catalog, AnnotationSettings(overlap={SCENE_QUEUE: 3}))
    disputed, outvoted, *_ = open_items(catalog, SCENE_QUEUE)

    def corrected(item, description):
        objects = [dict(o) for o in catalog.get_record(item.payload["target_id"]).payload["objects"]]
        objects[0]["description"] = description
        return {"objects": objects}

    for name, verdict in (("ann1", "correct"), ("ann2", "reject"), ("ann3", "reject")):
        work.submit(outvoted.id, name, verdict, correction=corrected(outvoted, "a red bowl") if name == "ann1"
                    else None)
    assert catalog.get_record(outvoted.payload["target_id"]).status == Status.REJECTED
    assert apply_scene_corrections(settings, None)["corrections"] == 0  # rejected by majority: nothing applied
    mine, theirs = corrected(disputed, "a chipped mug"), corrected(disputed, "a tall glass")
    work.submit(disputed.id, "ann1", "correct", correction=mine)
    assert apply_scene_corrections(settings, None)["corrections"] == 0  # one answer of three: it waits
    work.submit(disputed.id, "ann2", "correct", correction=theirs)
    work.submit(disputed.id, "ann3", "accept")
    assert [item.id for item, _ in work.conflicts()] == [disputed.id]  # three different answers, no majority
    assert apply_scene_corrections(settings, None)["corrections"] == 0
    # of six pairs of answers only the two rejections agree: two corrections that differ do not
    assert percent_agreement(answers_by_item(catalog, SCENE_QUEUE)) == pytest.approx(1 / 6)
    reason = work.adjudicate(disputed.id, "boss", answer_of("correct", theirs))
    assert reason == ("corrected by admin adjudication (ann1, ann2, ann3, boss); the corrected version "
                      "replaces it")
    assert apply_scene_corrections(settings, None)["corrections"] == 1
    (human,) = [s for s in catalog.find_records(kind="scene", status=Status.ACCEPTED)
                if s.payload["stage"] == "human"]
    assert human.payload["objects"][0]["description"] == "a tall glass" and human.payload["annotator"] == "ann2"
    assert catalog.get_record(human.parents[1]).kind == "adjudication"
    work.undo("ann3", SCENE_QUEUE)  # an answer the adjudication settled is taken back: the item reopens
    assert apply_scene_corrections(settings, None)["withdrawn"] == 1
    assert catalog.get_record(human.id).status == Status.REJECTED


def test_an_instance_rejected_on_recheck_leaves_the_next_release_with_its_scene(clips, storage):
    from schemas.config import BlobSettings
    from storage.releases import load_release
    from tasks.explore.stages import freeze_explore_release
    from tasks.review import apply_unattended_policy

    build_scenes(clips, storage)
    catalog = storage.catalog
    apply_unattended_policy(catalog, SCENE_QUEUE)
    settings = Settings(catalog=catalog_settings(catalog), blobs=BlobSettings(uri=f"file://{storage.blobs.root}"))
    first = load_release(catalog, freeze_explore_release(settings, "t", {}))
    instances = [e.id for e in first.records if e.kind == "explore_instance"]
    catalog.set_status(instances[:1], Status.REJECTED, reason="rejected on recheck", actor="ann1")
    second = load_release(catalog, freeze_explore_release(settings, "t", {}))
    kept = {e.id for e in second.records}
    scenes = catalog.get_records([e.id for e in second.records if e.kind == "scene"])
    assert instances[0] not in kept and set(instances[1:]) <= kept
    assert all(scene.payload["instance_id"] in kept for scene in scenes) and len(scenes) == len(instances) - 1
    catalog.set_status(instances[1:], Status.REJECTED, reason="rejected on recheck", actor="ann1")
    assert freeze_explore_release(settings, "t", {}) is None  # nothing left: no empty version
