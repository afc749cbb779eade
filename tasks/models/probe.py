"""One small real request per role, to check a configuration (``benchwright models check ROLE``)."""

from __future__ import annotations

from typing import Any

from schemas.config import Settings
from tasks.models.base import Backend, EditRequest, Generation, Message, encode_png
from tasks.models.registry import load_backend


def probe_scene() -> bytes:
    """A drawn tabletop: a red cube and a blue ball on a grey table."""
    import cv2
    import numpy as np

    picture = np.full((128, 160, 3), (128, 120, 110), np.uint8)
    cv2.rectangle(picture, (20, 30), (59, 69), (220, 30, 30), thickness=-1)
    cv2.circle(picture, (110, 80), 20, (30, 60, 220), thickness=-1)
    return encode_png(picture)


def probe(settings: Settings, role: str) -> tuple[Backend, Any]:
    backend = load_backend(settings, role)
    image = probe_scene()
    if role == "chat":
        answer: Any = backend.complete([Message.user(image, "Name one object in this image in a few words.")],
                                       Generation(max_tokens=24))
    elif role == "detector":
        answer = [(d.phrase, tuple(round(v) for v in d.box), round(d.score, 2))
                  for d in backend.detect(image, ["red cube", "blue ball"])]
    elif role == "tagger":
        answer = backend.tag(image)
    elif role == "editor":
        edited = backend.edit(image, EditRequest(prompt="Change the red cube to green.", strategy="color",
                                                 target="red cube", new_value="green"))
        answer = f"edited image of {len(edited)} bytes"
    elif role == "embedder":
        answer = f"{len(backend.embed(['a red cube'])[0])}-dimensional embedding"
    elif role == "scorer":
        answer = f"score {backend.score('A red cube sits on the table.', 'red cube')} of 5"
    else:
        raise KeyError(f"no probe for role {role!r}")
    return backend, answer
