"""The toy benchmark's one record kind: an image of some dots."""

from __future__ import annotations

from pydantic import Field

from schemas.records import Payload, register_payload


@register_payload
class DotsImage(Payload):
    kind = "dots_image"

    number: int = Field(ge=0)  # its place in the build
    dots: int = Field(ge=1)  # how many dots were drawn: the answer
    name: str = ""  # the picture's file name without its suffix, when it was imported
