"""Web trajectories and web-planning instances as catalog records and back: screenshots become blobs by role, the
rest the payload. Instances are rebuilt from their records for evaluation and export, so what is scored is what
was released."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schemas import BlobRef, Producer, Record, Status, make_record
from tasks.webplan.instance import WebplanInstance
from tasks.webplan.payloads import WebplanInstanceRecord, WebTrajectoryRecord
from tasks.webplan.trajectories import WebStep, WebTrajectory

NAME = "webplan"
PutImage = Callable[[bytes, str], BlobRef]  # (image bytes, role) -> the stored blob


def media_type(data: bytes) -> str:
    """The image's media type as the chat backends name it; another format Pillow reads (an imported BMP or TIFF
    screenshot) is stored as raw bytes."""
    from tasks.models.openai_chat import image_media_type

    try:
        return image_media_type(data)
    except ValueError:
        return "application/octet-stream"


def trajectory_record(trajectory: WebTrajectory, producer: Producer, put_image: PutImage) -> Record:
    """Accepted as it comes: a trajectory is a source (an expert's, verified by its reward, or a dataset's), and
    every instance cut from it goes to people before a release."""
    blobs = [put_image(step.screenshot, f"step_{i}") for i, step in enumerate(trajectory.steps)]
    if trajectory.final_screenshot is not None:
        blobs.append(put_image(trajectory.final_screenshot, "final"))
    payload = WebTrajectoryRecord(trajectory_id=trajectory.id, source=trajectory.source, task=trajectory.task,
                                  website=trajectory.website, actions_raw=[s.action_raw for s in trajectory.steps],
                                  actions=[s.action for s in trajectory.steps],
                                  locators=[s.locator for s in trajectory.steps],
                                  fresh=[s.fresh for s in trajectory.steps], meta=trajectory.meta)
    return make_record(payload, benchmark=NAME, producer=producer, blobs=blobs, status=Status.ACCEPTED,
                       status_reason="source trajectory")


def trajectory_of(record: Any, image: Callable[[str], bytes]) -> WebTrajectory:
    payload, by_role = record.payload, {b.role: b.sha256 for b in record.blobs}
    fresh = payload.get("fresh") or [True] * len(payload["actions_raw"])
    locators = payload.get("locators") or [""] * len(payload["actions_raw"])
    steps = tuple(WebStep(action_raw=raw, action=words, screenshot=image(by_role[f"step_{i}"]), locator=locator,
                          fresh=is_fresh)
                  for i, (raw, words, locator, is_fresh) in enumerate(zip(payload["actions_raw"], payload["actions"],
                                                                          locators, fresh, strict=True)))
    return WebTrajectory(id=payload["trajectory_id"], source=payload["source"], task=payload["task"],
                         website=payload.get("website", ""), steps=steps,
                         final_screenshot=image(by_role["final"]) if "final" in by_role else None,
                         meta=payload.get("meta", {}))


def instance_record(instance: WebplanInstance, producer: Producer, put_image: PutImage,
                    parents: tuple[str, ...] = ()) -> Record:
    """A candidate: a person checks it before a release takes it (the paper verified every data point by hand)."""
    blobs = [put_image(data, role) for role, data in sorted(instance.images.items())]
    payload = WebplanInstanceRecord(test=instance.test, key=instance.key, task=instance.task, answer=instance.answer,
                                    options=instance.options, meta=instance.meta, verified_by=instance.verified_by)
    return make_record(payload, benchmark=NAME, producer=producer, blobs=blobs, parents=parents,
                       status=Status.CANDIDATE, status_reason="verified; awaiting human verification")


def instance_of(payload: dict[str, Any], blobs: dict[str, str], image: Callable[[str], bytes]) -> WebplanInstance:
    return WebplanInstance(test=payload["test"], key=payload["key"], task=payload["task"], answer=payload["answer"],
                           options=payload.get("options", {}), meta=payload.get("meta", {}),
                           images={role: image(sha) for role, sha in blobs.items()},
                           verified_by=payload.get("verified_by", ""))
