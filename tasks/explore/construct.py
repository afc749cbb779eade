"""From egocentric clips to EXPLORE-Bench records: the clip (a ``trajectory`` record whose steps are the atomic
actions), its instance (initial and final frames, actions, subset), and the final scene's annotation at each stage,
each stage's ``scene`` record the child of the one before, so the lineage of every object is kept.

Stages that need a model use the configured backends; without a chat backend the offline methods run (rule-based
tag filter, attributes from pixels, relations from boxes, guideline correction) and say so in their producer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schemas import Producer, Record, ReviewItem, Status, Trajectory, make_record
from tasks.explore.describe import box_relations, chat_attributes, chat_relations, ground, pixel_attributes
from tasks.explore.instances import InstanceRejected, QualityThresholds, SubsetBounds, extract_instance
from tasks.explore.integrate import (
    apply_guidelines,
    chat_correction,
    correction_objects,
    export_entry,
    guideline_problems,
    integrate,
)
from tasks.explore.payloads import ExploreInstance, SceneAnnotation
from tasks.explore.tags import action_nouns, filter_by_chat, filter_by_rules, merge_tags
from tasks.quarantine import quarantine
from tasks.sources.ego_clips import ClipError, ClipSource
from tasks.sources.frames import FrameError, encode_jpeg

SCENE_QUEUE = "scene_correction"
EXTRACTED = "extracted from narrated video; the scene annotation is reviewed by people"


@dataclass
class Built:
    records: list[Record] = field(default_factory=list)
    quarantined: list[Record] = field(default_factory=list)


def build_clip(load: Any, locator: str, storage: Any, producer: Producer, *, bounds: SubsetBounds,
               quality: QualityThresholds, middle_frames: int = 0) -> Built:
    """The clip's trajectory and instance records, or a quarantined record naming the clip and the reason. With
    ``middle_frames``, that many evenly spaced frames between the two scenes are kept too (blobs ``middle_k``)."""
    built = Built()
    try:
        clip: ClipSource = load()
        extracted, frames = extract_instance(clip.id, clip.narrations, fps=clip.fps, n_frames=clip.n_frames,
                                             read_frames=clip.frames.read, bounds=bounds, quality=quality)
        span = extracted.end_frame - extracted.start_frame
        middle = [extracted.start_frame + round(span * (k + 1) / (middle_frames + 1)) for k in range(middle_frames)]
        middle_rgb = clip.frames.read(middle) if middle else {}
    except (ClipError, FrameError, InstanceRejected) as error:
        built.quarantined.append(quarantine(benchmark="explore", source=producer.params.get("folder", ""),
                                            locator=locator, reason=str(error), raw="", producer=producer))
        return built
    archived = []
    if clip.frames.archive is not None:
        archived = [storage.put_blob_file(clip.frames.archive, role="video", media_type="video/mp4")]
    trajectory = make_record(
        Trajectory(source=clip.source, source_id=clip.id, task_goal=str(clip.truth.get("goal", "")),
                   steps=[n.text for n in clip.narrations], step_times=[n.time_s for n in clip.narrations],
                   camera="ego", meta={"fps": clip.fps, "n_frames": clip.n_frames,
                                       **({"truth": clip.truth} if clip.truth else {})}),
        benchmark="explore", producer=producer, blobs=archived, status=Status.ACCEPTED,
        status_reason=EXTRACTED)
    blobs = [storage.put_blob(encode_jpeg(frames[role], quality=95), role=role, media_type="image/jpeg")
             for role in ("initial", "final")]
    blobs += [storage.put_blob(encode_jpeg(middle_rgb[index], quality=95), role=f"middle_{k}", media_type="image/jpeg")
              for k, index in enumerate(middle)]
    instance = make_record(
        ExploreInstance(clip_id=clip.id, source=clip.source, start_frame=extracted.start_frame,
                        end_frame=extracted.end_frame, start_s=round(extracted.start_s, 3),
                        end_s=round(extracted.end_s, 3), atomic_actions=extracted.actions, subset=extracted.subset,
                        quality={k: round(v, 3) for k, v in extracted.quality.items()}),
        benchmark="explore", producer=producer, parents=[trajectory.id], blobs=blobs,
        status=Status.ACCEPTED, status_reason=EXTRACTED)
    built.records += [trajectory, instance]
    return built


@dataclass
class Annotators:
    """The backends the annotation stages use; ``chat`` None means the offline methods."""

    tagger: Any
    detector: Any
    embedder: Any | None
    chat: Any | None
    spacy_model: str


def _scene(instance_id: str, stage: str, parent: str, producer: Producer, **fields: Any) -> Record:
    return make_record(SceneAnnotation(instance_id=instance_id, stage=stage, **fields), benchmark="explore",
                       producer=producer, parents=[parent], status=Status.ACCEPTED,
                       status_reason=f"machine annotation, stage {stage}")


def annotate_instance(instance: Record, final_image: bytes, annotators: Annotators, producer: Producer) -> Built:
    """Tagging -> grounding -> attributes and relations -> integration -> correction, one ``scene`` record per
    stage, then a review item for people. A chat answer that stays invalid after its retries quarantines the
    instance with the answers kept."""
    from tasks.models.classic_vision import to_rgb_array

    built = Built()
    rgb = to_rgb_array(final_image)
    size = (int(rgb.shape[1]), int(rgb.shape[0]))
    actions = instance.payload["atomic_actions"]
    nouns = action_nouns(actions, annotators.spacy_model)
    merged = merge_tags(annotators.tagger.tag(final_image), nouns)
    tags, dropped = filter_by_rules(merged, spacy_model=annotators.spacy_model, known_nouns=set(nouns),
                                    embed=annotators.embedder.embed_each if annotators.embedder else None)

    def reject(stage: str, problem: str | None, answers: list[str]) -> Built:
        built.quarantined.append(quarantine(
            benchmark="explore", source=f"explore-instance {instance.id}", locator=stage,
            reason=f"{stage}: no valid answer after {len(answers)} tries; last problem: {problem}",
            raw="\n---\n".join(answers), producer=producer))
        return built

    if annotators.chat is not None:
        kept = filter_by_chat(annotators.chat, tags)
        if kept.value is None:
            return reject("tag filter", kept.problem, kept.answers)
        tags = kept.value
    tagged = _scene(instance.id, "tagged", instance.id, producer, tags=tags)
    objects = ground(annotators.detector.detect(final_image, tags), spacy_model=annotators.spacy_model,
                     preferred=set(nouns))
    grounded = _scene(instance.id, "grounded", tagged.id, producer, tags=tags, objects=objects)
    if annotators.chat is not None and objects:
        attributes = chat_attributes(annotators.chat, final_image, size, objects)
        if attributes.value is None:
            return reject("attributes", attributes.problem, attributes.answers)
        relations = chat_relations(annotators.chat, final_image, size, objects)
        if relations.value is None:
            return reject("relations", relations.problem, relations.answers)
        descriptions, triplets = attributes.value, relations.value
    else:
        descriptions = {o.id: pixel_attributes(rgb, o) for o in objects}
        triplets = box_relations(objects)
    described = _scene(instance.id, "described", grounded.id, producer, tags=tags,
                       objects=[o.model_copy(update={"description": descriptions.get(o.id, "")}) for o in objects],
                       triplets=triplets)
    integrated_objects = integrate(objects, descriptions, triplets)
    integrated = _scene(instance.id, "integrated", described.id, producer, tags=tags, objects=integrated_objects)
    if annotators.chat is not None and integrated_objects:
        correction = chat_correction(annotators.chat, final_image, integrated_objects)
        if correction.value is None:
            return reject("correction", correction.problem, correction.answers)
        corrected_objects = correction.value
    else:
        corrected_objects = apply_guidelines(integrated_objects)
    corrected = make_record(
        SceneAnnotation(instance_id=instance.id, stage="corrected", tags=tags, objects=corrected_objects),
        benchmark="explore", producer=producer, parents=[integrated.id], status=Status.CANDIDATE,
        status_reason="awaiting human correction")
    item = make_record(
        ReviewItem(target_id=corrected.id, queue=SCENE_QUEUE,
                   question="Correct the final-scene annotation: add, delete or edit objects, descriptions and "
                            "relations so that they match the image.",
                   suggestion={"objects": [export_entry(o) for o in corrected_objects],
                               "boxes": {o.id: o.box for o in corrected_objects if o.box},
                               "dropped_tags": dropped}),
        benchmark="explore", producer=producer, parents=[corrected.id])
    built.records += [tagged, grounded, described, integrated, corrected, item]
    return built


def human_version(target: Record, decision: Record, producer: Producer) -> tuple[Record | None, str | None]:
    """The new ``human`` scene record a correction decision makes (parents: the machine annotation and the
    decision), or the reason the correction breaks the guidelines."""
    try:
        objects = correction_objects(decision.payload["correction"],
                                     {o["id"]: o.get("box") for o in target.payload["objects"]})
    except ValueError as error:
        return None, str(error)
    problems = guideline_problems(objects)
    if problems:
        return None, "; ".join(problems)
    annotator = decision.payload.get("author") or decision.payload["annotator"]  # an adjudication names its author
    return make_record(
        SceneAnnotation(instance_id=target.payload["instance_id"], stage="human", tags=target.payload["tags"],
                        objects=objects, annotator=annotator),
        benchmark="explore", producer=producer, parents=[target.id, decision.id], status=Status.ACCEPTED,
        status_reason=f"corrected by human review ({annotator})"), None
