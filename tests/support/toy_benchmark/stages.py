"""The toy benchmark's build stage: images of dots, each confirmed by a person before release."""

from __future__ import annotations

import io
import random

from pydantic import BaseModel

from schemas import Producer, Status, make_record
from schemas.config import Settings
from storage import open_storage
from tasks.benchmark import BuildContext

NAME = "toy"
QUEUE = "dots_check"


class ToyOptions(BaseModel):
    images: int = 4
    seed: int = 7


def dots_png(dots: int, seed: int) -> bytes:
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    image = Image.new("RGB", (64, 64), "white")
    draw = ImageDraw.Draw(image)
    for index in range(dots):
        x, y = 4 + 15 * (index % 4), 6 + 28 * (index // 4) + rng.randint(0, 4)
        draw.ellipse((x, y, x + 9, y + 9), fill="black")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def draw_dots(settings: Settings, context: BuildContext) -> dict[str, int]:
    """Images of 1-6 dots, each a candidate until a person confirms the count (one review item per image)."""
    from schemas.payloads import ReviewItem
    from tests.support.toy_benchmark.payloads import DotsImage

    storage = open_storage(settings)
    producer = Producer(task="draw-dots", flow_run_id=context.run_id, params=context.options.model_dump())
    rng = random.Random(context.options.seed)
    records = []
    for number in range(context.options.images):
        dots = rng.randint(1, 6)
        blob = storage.put_blob(dots_png(dots, number), role="image", media_type="image/png")
        image = make_record(DotsImage(number=number, dots=dots), benchmark=NAME, producer=producer, blobs=[blob],
                            status=Status.CANDIDATE, status_reason="awaiting a person's count check")
        review = make_record(ReviewItem(target_id=image.id, queue=QUEUE, question=f"Are there {dots} dots?"),
                             benchmark=NAME, producer=producer, parents=[image.id])
        records += [image, review]
    return {"images": context.options.images, "records": len(records),
            "new": storage.catalog.put_records(records, run_id=context.run_id)}
