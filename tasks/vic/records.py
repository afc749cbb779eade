"""A ViC-Bench instance as a catalog record and back: its images become blobs by role, its questions, answers and
ground truth the payload. The evaluation rebuilds the instance from the record, so the simulators and scorers work
on what was released, not on what a generator held in memory."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from schemas import BlobRef, Producer, Record, Status, make_record
from tasks.vic.payloads import VicInstanceRecord
from tasks.vic.task import OpenForm, StageOne, VicInstance

PutImage = Callable[[bytes, str], BlobRef]  # (PNG, role) -> the stored blob


def as_stored(instance: VicInstance) -> VicInstance:
    """The instance after a JSON round trip of its answers and ground truth (tuples become lists, keys strings),
    which is what a release holds; verification runs on this."""
    return VicInstance(task=instance.task, key=instance.key, stage_one=instance.stage_one,
                       open_form=OpenForm(instance.open_form.question, instance.open_form.image,
                                          json.loads(json.dumps(instance.open_form.answer))),
                       meta=json.loads(json.dumps(instance.meta)), images=instance.images)


def instance_record(instance: VicInstance, producer: Producer, put_image: PutImage, verified_by: str) -> Record:
    """A candidate record: a person rechecks it before a release takes it (the paper's Human Recheck)."""
    blobs = [put_image(instance.stage_one.image, "stage1"), put_image(instance.open_form.image, "open")]
    blobs += [put_image(data, f"option_{letter}") for letter, data in sorted(instance.stage_one.option_images.items())]
    blobs += [put_image(data, role) for role, data in sorted(instance.images.items())]
    payload = VicInstanceRecord(task=instance.task, key=instance.key,
                                stage_one_question=instance.stage_one.question,
                                stage_one_options=instance.stage_one.options,
                                stage_one_answer=instance.stage_one.answer,
                                open_question=instance.open_form.question, open_answer=instance.open_form.answer,
                                meta=instance.meta, verified_by=verified_by)
    return make_record(payload, benchmark="vic", producer=producer, blobs=blobs, status=Status.CANDIDATE,
                       status_reason="verified; awaiting the human recheck")


def instance_of(record: Any, image: Callable[[str], bytes]) -> VicInstance:
    """The instance a record holds, its images read through ``image`` (sha256 -> bytes)."""
    payload = record.payload
    by_role = {b.role: b.sha256 for b in record.blobs}
    options = {role.removeprefix("option_"): image(sha) for role, sha in by_role.items() if role.startswith("option_")}
    extra = {role: image(sha) for role, sha in by_role.items()
             if role not in ("stage1", "open") and not role.startswith("option_")}
    return VicInstance(
        task=payload["task"], key=payload["key"],
        stage_one=StageOne(payload["stage_one_question"], image(by_role["stage1"]), payload["stage_one_options"],
                           payload["stage_one_answer"], options),
        open_form=OpenForm(payload["open_question"], image(by_role["open"]), payload["open_answer"]),
        meta=payload["meta"], images=extra)


def novelty_keys(record: Any) -> Any:
    """An instance for the novelty screen (``tasks.novelty``): the picture that makes it the instance it is (the
    open form's: the maze, the room's start and end, the crowd; a jigsaw's source image); a crowd scene and a
    jigsaw's source by their perceptual hash (a near copy is a repeat), a maze and a grid room only when identical
    (their sparse renders hash alike); not the Stage-1 options, which show other mazes and frames on purpose; no
    text, its questions being templates."""
    from tasks.novelty import NoveltyKeys

    task = record.payload["task"]
    roles = HASHED_ROLES.get(task)
    by_role = {blob.role: blob.sha256 for blob in record.blobs}
    if roles:
        return NoveltyKeys(text="", images=tuple(by_role[role] for role in roles if role in by_role))
    return NoveltyKeys(text="", images=(), exact=(by_role["open"],))


HASHED_ROLES = {"jigsaw": ("source",), "counting": ("open",)}  # the others: the open picture, exactly
