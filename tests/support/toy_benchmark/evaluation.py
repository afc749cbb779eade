"""The toy benchmark's evaluation: ask how many dots, read a number, score accuracy."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tasks.benchmark import Evaluation
from tasks.models.base import Generation, Message

PROMPT = "How many black dots are in the image? Answer with one number."


@dataclass(frozen=True)
class DotsItem:
    key: str
    dots: int
    image: str
    missing: str = ""


class DotsEvaluation(Evaluation):
    item_kind = "dots_image"
    generation = Generation(max_tokens=8, temperature=0.0, top_p=1.0, seed=0)
    prompt_version = "toy-v1"
    percent_metrics = True

    def item(self, record: Any, images: Any) -> DotsItem:
        return DotsItem(record.id, record.payload["dots"], record.blobs[0].sha256)

    def messages(self, item: DotsItem, settings: Any, image: Callable[[str], bytes], turn: int,
                 previous: list[str]) -> tuple[list[Message], int]:
        return [Message.user(image(item.image), PROMPT)], 1

    def parse(self, item: DotsItem, text: str, settings: Any) -> tuple[dict[str, Any], bool]:
        numbers = re.findall(r"\d+", text)
        return ({"dots": int(numbers[-1])}, True) if numbers else ({}, False)

    def score(self, settings: Any, eval_settings: Any, items: list[DotsItem], parsed: dict[str, Any],
              catalog: Any) -> Any:
        from tasks.evaluate.scoring import Scoring

        scoring = Scoring()
        for item in items:
            answer = parsed.get(item.key)
            if answer is not None:
                right = answer.method != "failed" and answer.value.get("dots") == item.dots
                scoring.per_sample[item.key] = {"correct": float(right)}
        values = [s["correct"] for s in scoring.per_sample.values()]
        accuracy = sum(values) / len(values) if values else None
        scoring.rows = [("accuracy", "all", accuracy, len(values))]
        scoring.headline = {"accuracy": accuracy}
        return scoring

    def baseline_answer(self, baseline: str, options: dict[str, Any], request: Any, rng: random.Random,
                        vocabulary: list[str]) -> str:
        item: DotsItem = request.item
        if baseline == "oracle":
            return str(item.dots)
        return str(rng.randint(1, 6)) if baseline == "random" else str(options.get("text", "3"))
