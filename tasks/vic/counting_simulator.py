"""Complex counting's Stage-3 simulator: an action counts one region and the tool draws that many boxes there."""

from __future__ import annotations

import hashlib
import io

import numpy as np

from tasks.vic.counting_answers import REGIONS, read_action
from tasks.vic.counting_geometry import box_cover, inside_even_odd
from tasks.vic.counting_scene import label_font
from tasks.vic.task import StepResult, VicInstance

MAX_ACTION_COUNT = 200  # [design] the simulator refuses larger counts: scenes hold at most 40 heads, and drawing
# thousands of boxes would only slow the loop
REGION_COLOURS = {"1": (230, 40, 40), "2": (40, 110, 240), "3": (30, 190, 60), "4": (200, 50, 220)}


class CountingSimulator:
    """Stage 3: an action ``region R: N`` draws N boxes in region R: the region's true boxes first (in reading
    order), then, when N is higher than the truth, extra boxes on free ground inside the region (over-cover), so
    the model sees its count against the heads. A region counted again is redrawn (a revision). Done when all four
    regions have a count."""

    def __init__(self, instance: VicInstance, max_count: int = MAX_ACTION_COUNT) -> None:
        from PIL import Image

        from tasks.sources.door import decode_checked

        self._instance = instance
        self._max_count = max_count
        self._base = Image.fromarray(decode_checked(instance.open_form.image, "a counting picture"))
        self._png = instance.open_form.image
        self.counts: dict[str, int] = {}
        meta = instance.meta
        self._true: dict[str, list[list[float]]] = {r: [] for r in REGIONS}
        for point, box in zip(meta["points"], meta["boxes"], strict=True):
            self._true[str(point["region"])].append([float(v) for v in box])
        for boxes in self._true.values():
            boxes.sort(key=lambda b: (round((b[1] + b[3]) / 2 / 40), b[0]))  # rows of about a head, left to right
        sides = sorted(b[2] - b[0] for boxes in self._true.values() for b in boxes)
        self._side = sides[len(sides) // 2] if sides else 32.0

    def image(self) -> bytes:
        return self._png

    def step(self, action: str) -> StepResult:
        read = read_action(action)
        if read is None:
            return StepResult(legal=False, message=f"Could not read the action {action!r}: send one region and "
                              "its count, e.g. <action>region 2: 7</action>.", image=None)
        region, count = read
        if not 1 <= region <= 4:
            return StepResult(legal=False, message=f"There is no region {region}: the regions are 1 to 4.",
                              image=None)
        if count > self._max_count:
            return StepResult(legal=False, message=f"{count} is more than the tool draws ({self._max_count}).",
                              image=None)
        revised = str(region) in self.counts
        self.counts[str(region)] = count
        self._png = self._render()
        done = len(self.counts) == len(REGIONS)
        so_far = ", ".join(f"region {r}: {c}" for r, c in sorted(self.counts.items()))
        left = [r for r in REGIONS if r not in self.counts]
        message = (f"Region {region} {'recounted' if revised else 'counted'} as {count}; {count} boxes drawn in "
                   f"region {region}. Counts so far: {so_far}. "
                   + (f"Regions still to count: {', '.join(left)}." if left else "All four regions are counted."))
        return StepResult(legal=True, message=message, image=self._png, done=done)

    def _render(self) -> bytes:
        from PIL import Image, ImageDraw

        overlay = Image.new("RGBA", self._base.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(overlay)
        for region, count in self.counts.items():
            colour = REGION_COLOURS[region]
            for box in self._boxes(region, count):
                draw.rectangle(box, fill=(*colour, 60), outline=(*colour, 255), width=2)
            x0, y0, _, y1 = self._instance.meta["labels"][region]
            tag_y = y1 + 4 if y1 + 30 < self._base.height else y0 - 30
            draw.rounded_rectangle([x0, tag_y, x0 + 44, tag_y + 24], radius=4, fill=(*colour, 230))
            draw.text((x0 + 22, tag_y + 12), str(count), fill=(255, 255, 255, 255), font=label_font(18), anchor="mm")
        composed = Image.alpha_composite(self._base.convert("RGBA"), overlay).convert("RGB")
        buffer = io.BytesIO()
        composed.save(buffer, format="PNG")
        return buffer.getvalue()

    def _boxes(self, region: str, count: int) -> list[list[float]]:
        true = self._true[region]
        boxes = true[:count]
        polygon = [(float(x), float(y)) for x, y in self._instance.meta["regions"][region]]
        seed = int(hashlib.sha256(f"{self._instance.key}/{region}/{count}".encode()).hexdigest()[:8], 16)
        rng = np.random.default_rng(seed)
        xs, ys, half = [p[0] for p in polygon], [p[1] for p in polygon], self._side / 2
        # the region numbers and the count tags under or over them stay readable
        labels = [[x0 - 4, y0 - 34, x1 + 14, y1 + 34] for x0, y0, x1, y1 in self._instance.meta["labels"].values()]
        for tries in range(200 * max(0, count - len(true))):
            if len(boxes) >= count:
                break
            x, y = rng.uniform(min(xs) + half, max(xs) - half), rng.uniform(min(ys) + half, max(ys) - half)
            box = [x - half, y - half, x + half, y + half]
            corners = [(box[0], box[1]), (box[2], box[1]), (box[0], box[3]), (box[2], box[3]), (x, y)]
            if not all(inside_even_odd(cx, cy, polygon) for cx, cy in corners):
                continue
            if tries < 100 * count and any(box_cover(box, b) > 0.2 for b in boxes + labels):
                continue  # free ground first; a crowded region takes overlapping boxes after that
            boxes.append(box)
        return boxes
