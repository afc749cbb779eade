"""Small releases of each benchmark to evaluate, export and read back (every image distinct), and one evaluation
run the way the engine runs it (prepare, gather the answers, score and store)."""

from __future__ import annotations

import numpy as np

from schemas import Producer, Status, make_record
from schemas.config import Settings
from schemas.releases import ReleaseSelection
from storage import open_storage
from storage.releases import create_release
from tasks.explore.payloads import ExploreInstance, SceneAnnotation, SceneObject
from tasks.models.base import encode_png
from tasks.progress.payloads import Demo, Observation
from tasks.webplan.instance import WebplanInstance
from tests.support.images import solid_png as png


def picture(seed: int) -> bytes:
    return encode_png(np.full((8, 8, 3), seed % 256, dtype=np.uint8) + np.arange(8, dtype=np.uint8)[:, None, None])


def progress_release(settings: Settings, trajectories: int = 2, per_demo: int = 3, lacking: bool = False
                     ) -> tuple[str, int]:
    """Per trajectory a visual demo (3 key frames, N = 2) and a text demo, ``per_demo`` answerable observations
    at progress k / (per_demo + 1) for each, and one unanswerable (edited) observation; every image distinct.
    ``lacking`` adds two items whose frames the source lacks: an observation without its frame, and one of a
    visual demo without its last key frame (not counted in the items returned)."""
    storage = open_storage(settings)
    producer = Producer(task="test")
    records = []
    for t in range(trajectories):
        frames = [storage.put_blob(picture(10 * t + i), role=f"demo_{i}", media_type="image/png") for i in range(3)]
        common = {"trajectory_id": f"robot/task/{t}", "task_goal": f"stack block {t}", "total_steps": 2,
                  "data_source": "test"}
        visual = make_record(Demo(modality="visual", steps=["f0.jpg", "f1.jpg", "f2.jpg"], **common),
                             benchmark="progress", producer=producer, blobs=frames, status=Status.ACCEPTED)
        text = make_record(Demo(modality="text", steps=["pick the block", "place the block"], **common),
                           benchmark="progress", producer=producer, status=Status.ACCEPTED)
        records += [visual, text]
        for demo in (visual, text):
            for k in range(1, per_demo + 1):
                progress = k / (per_demo + 1)
                seen = storage.put_blob(picture(100 + 10 * t + k + (50 if demo is text else 0)), role="observation",
                                        media_type="image/png")
                closest = (2 if progress <= 0.5 else 3) if demo is visual else (1 if progress <= 0.75 else 2)
                records.append(make_record(
                    Observation(demo_id=demo.id, frame=f"o{k}.jpg", closest_idx=closest, progress_score=progress),
                    benchmark="progress", producer=producer, parents=[demo.id], blobs=[seen],
                    status=Status.ACCEPTED))
        edited = storage.put_blob(picture(200 + t), role="observation", media_type="image/png")
        records.append(make_record(Observation(demo_id=visual.id, frame="edit.jpg", answerable=False,
                                               negative="visual"),
                                   benchmark="progress", producer=producer, parents=[visual.id],
                                   blobs=[edited], status=Status.ACCEPTED))
    if lacking:
        records += lacking_frames(storage, producer)
    storage.catalog.put_records(records)
    manifest = create_release(storage.catalog, storage.blobs, "tiny-progress",
                              selection=ReleaseSelection(benchmarks=("progress",), kinds=("demo", "observation")))
    return manifest.tag, trajectories * (2 * per_demo + 1)


def lacking_frames(storage, producer: Producer) -> list:
    frames = [storage.put_blob(picture(60 + i), role=f"demo_{i}", media_type="image/png") for i in range(2)]
    demo = make_record(Demo(modality="visual", steps=["g0.jpg", "g1.jpg", "g2.jpg"], missing_frames=["g2.jpg"],
                            trajectory_id="robot/task/lacking", task_goal="open the drawer", total_steps=2,
                            data_source="test"),
                       benchmark="progress", producer=producer, blobs=frames, status=Status.ACCEPTED)
    seen = storage.put_blob(picture(70), role="observation", media_type="image/png")
    of_demo = make_record(Observation(demo_id=demo.id, frame="g1.jpg", closest_idx=2, progress_score=0.5),
                          benchmark="progress", producer=producer, parents=[demo.id], blobs=[seen],
                          status=Status.ACCEPTED)
    text = make_record(Demo(modality="text", steps=["open", "pull"], trajectory_id="robot/task/blind",
                            task_goal="open the drawer", total_steps=2, data_source="test"),
                       benchmark="progress", producer=producer, status=Status.ACCEPTED)
    unseen = make_record(Observation(demo_id=text.id, frame="gone.jpg", closest_idx=1, progress_score=0.25,
                                     frame_missing=True),
                         benchmark="progress", producer=producer, parents=[text.id], status=Status.ACCEPTED)
    return [demo, of_demo, text, unseen]


def explore_release(settings: Settings, lacking: bool = False) -> str:
    """Two annotated instances; ``lacking`` adds a third whose initial frame the source did not provide."""
    storage = open_storage(settings)
    producer = Producer(task="test")
    records = []
    scenes = [
        [SceneObject(id="cup.1", category="cup", description="red ceramic cup", relation=["cup on table"]),
         SceneObject(id="table.1", category="table", description="brown wooden table"),
         SceneObject(id="bowl.1", category="bowl", description="white bowl", relation=["bowl next to cup"],
                     key_state="bowl knocked over")],
        [SceneObject(id="plate.1", category="plate", description="blue plate", relation=["plate on table"]),
         SceneObject(id="table.1", category="table", description="grey table")],
    ]
    for index, objects in enumerate(scenes):
        image = storage.put_blob(picture(index), role="initial", media_type="image/png")
        instance = make_record(ExploreInstance(
            clip_id=f"clip{index}", source="test", start_frame=0, end_frame=100, start_s=0, end_s=10,
            atomic_actions=[f"C picks up object {i}" for i in range(12 + index)], subset="Short"),
            benchmark="explore", producer=producer, blobs=[image], status=Status.ACCEPTED)
        scene = make_record(SceneAnnotation(instance_id=instance.id, stage="human", objects=objects),
                            benchmark="explore", producer=producer, parents=[instance.id],
                            status=Status.ACCEPTED)
        records += [instance, scene]
    if lacking:
        records.append(make_record(ExploreInstance(
            clip_id="clip9", source="test", start_frame=40, end_frame=100, start_s=4, end_s=10,
            atomic_actions=["C opens the door"], subset="Short"),
            benchmark="explore", producer=producer, status=Status.ACCEPTED))
    storage.catalog.put_records(records)
    return create_release(storage.catalog, storage.blobs, "tiny-explore",
                          selection=ReleaseSelection(benchmarks=("explore",))).tag


def vic_release(settings: Settings, tasks: tuple[str, ...] = ("maze",), count: int = 2) -> str:
    """Instances built by the build stage's own function, accepted as if people had rechecked them, released."""
    from tasks.vic.stages import build_task

    storage = open_storage(settings)
    for name in tasks:
        assert build_task(storage, name, count, 0, {}, None)["quarantined"] == 0
    ids = [r.id for r in storage.catalog.find_records(kind="vic_instance")]
    storage.catalog.set_status(ids, Status.ACCEPTED, reason="rechecked (test)", actor="test")
    return create_release(storage.catalog, storage.blobs, "vic-test",
                          selection=ReleaseSelection(benchmarks=("vic",), kinds=("vic_instance",))).tag


def webplan_instances() -> list[WebplanInstance]:
    """Temporal questions in both orders and both forms, a future-state and an edge case: one of each kind."""
    made = []
    for order, (first, second) in (("order1", (1, 2)), ("order2", (2, 1))):
        for form in ("mcq", "open"):
            right = "Picture 1" if order == "order1" else "Picture 2"
            answer = ("A" if right == "Picture 1" else "B") if form == "mcq" else right
            made.append(WebplanInstance(test="temporal", key=f"temporal-{order}-{form}", task="Log in",
                                        answer=answer, options={"A": "Picture 1", "B": "Picture 2"} if form == "mcq"
                                        else {}, images={"picture_1": png(first * 40), "picture_2": png(second * 40)},
                                        meta={"dataset": "miniwob", "order": order, "form": form}))
    plans = {"A": {"words": ["Check 'x'", "Hit Submit"]}, "B": {"words": ["Click 'x'", "Hit Submit"]}}
    made.append(WebplanInstance(test="future", key="future-1", task="Select x and click Submit.", answer="Yes",
                                images={"start": png(7)}, meta={"horizon": "short", "task_number": 1,
                                                                "plans": plans}))
    made.append(WebplanInstance(test="edge", key="edge-1", task="Select x and click Submit.", answer="C",
                                options={k: f"1. plan {k}." for k in "ABCD"}, images={"start": png(9)},
                                meta={"task_number": 1}))
    return made


def webplan_release(settings: Settings) -> str:
    """``webplan_instances`` stored, accepted as verified, released as ``webplan-test``."""
    from tasks.webplan.records import instance_record

    storage = open_storage(settings)
    put = lambda data, role: storage.put_blob(data, role=role, media_type="image/png")  # noqa: E731
    records = [instance_record(i, Producer(task="test"), put) for i in webplan_instances()]
    storage.catalog.put_records(records)
    storage.catalog.set_status([r.id for r in records], Status.ACCEPTED, reason="verified (test)", actor="test")
    return create_release(storage.catalog, storage.blobs, "webplan-test",
                          selection=ReleaseSelection(benchmarks=("webplan",), kinds=("webplan_instance",))).tag


def evaluate(settings: Settings, **options):
    from tasks.evaluate.engine import gather_answers, prepare_evaluation, score_and_store

    predictions = options.pop("predictions", None)
    judge = options.pop("judge", None)
    plan = prepare_evaluation(settings, options.pop("release"), options.pop("model", None),
                                 options.pop("strategy", None), predictions, None, **options)
    collected = gather_answers(settings, plan)
    result = score_and_store(settings, plan, collected, None, judge)
    return plan, collected, result
