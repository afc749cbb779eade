"""The toy benchmark's evaluation: ask how many dots, read a number, score accuracy."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.models.base import Generation, Message

PROMPT = "How many black dots are in the image? Answer with one number."


@dataclass(frozen=True)
class DotsItem:
    key: str
    dots: int
    image: str
    missing: str = ""


class DotsEvaluation:
    strategies = ("direct",)
    default_strategy = "direct"
    generation = Generation(max_tokens=8, temperature=0.0, top_p=1.0, seed=0)
    prompt_version = "toy-v1"
    percent_metrics = True

    def holds_items(self, manifest: Any) -> bool:
        return any(e.kind == "dots_image" for e in manifest.records)

    def items(self, catalog: Any, manifest: Any, images: Any = None) -> list[DotsItem]:
        records = catalog.get_records([e.id for e in manifest.records if e.kind == "dots_image"])
        return [DotsItem(r.id, r.payload["dots"], r.blobs[0].sha256) for r in sorted(records, key=lambda r: r.id)]

    def options(self, settings: Any, options: dict[str, Any]) -> dict[str, Any]:
        return options

    def run_options(self, strategy: str, options: dict[str, Any]) -> dict[str, Any]:
        if options:
            raise ValueError(f"the toy benchmark has no evaluation option ({', '.join(options)})")
        return {}

    def variant(self, settings: Any) -> str:
        return settings.strategy

    def item_name(self, item: DotsItem) -> str:
        return f"image {item.key[:12]}"

    def aliases(self, item: DotsItem) -> list[str]:
        return [item.key]

    def official_key(self, item: DotsItem) -> str | None:
        return None

    def rounds(self, item: DotsItem, settings: Any) -> int:
        return 1

    def messages(self, item: DotsItem, settings: Any, image: Callable[[str], bytes], turn: int,
                 previous: list[str]) -> tuple[list[Message], int]:
        return [Message.user(image(item.image), PROMPT)], 1

    def parse(self, item: DotsItem, text: str, settings: Any) -> tuple[dict[str, Any], bool]:
        numbers = re.findall(r"\d+", text)
        return ({"dots": int(numbers[-1])}, True) if numbers else ({}, False)

    def finished(self, item: Any, settings: Any, replies: list[str]) -> bool:
        return False  # every round of a strategy is asked

    def parse_conversation(self, item: Any, replies: list[str], settings: Any) -> tuple[dict[str, Any], bool]:
        return self.parse(item, replies[-1], settings)

    def judge_prompt(self, item: DotsItem, answer: str) -> str:
        return f"Which number of dots does this answer give? Reply with the number only.\n\n{answer}"

    def parse_judged(self, item: DotsItem, reply: str) -> tuple[dict[str, Any], bool]:
        return self.parse(item, reply, None)

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

    def report_tables(self, scoring: Any, label: str) -> str:
        return f"| model | accuracy |\n|---|---:|\n| {label} | {scoring.headline['accuracy']} |"

    def report_plots(self, scoring: Any, folder: Path, label: str) -> list[Path]:
        return []

    def leaderboard_plots(self, runs: list[Any], catalog: Any, folder: Path) -> list[Path]:
        return []

    def report_summary(self, eval_settings: Any) -> list[tuple[str, str]]:
        return []

    def baseline_answer(self, baseline: str, options: dict[str, Any], request: Any, rng: random.Random,
                        vocabulary: list[str]) -> str:
        item: DotsItem = request.item
        if baseline == "oracle":
            return str(item.dots)
        return str(rng.randint(1, 6)) if baseline == "random" else str(options.get("text", "3"))

    def baseline_vocabulary(self, items: list[DotsItem]) -> list[str]:
        return []
