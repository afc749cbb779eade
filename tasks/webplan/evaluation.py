"""The web-planning tests as the evaluation engine sees them: the two prompt styles as strategies, one request per
instance, rules-then-judge parsing, accuracy per cell, the report and the model-free baselines.

Strategies ``instruct`` and ``cot`` (Sec. 3); the option ``history`` (default off) adds the earlier actions to the
real-web prompt (App. H, Fig. 18). Decoding: the paper does not give its settings; greedy decoding (temperature 0)
with room for a chain of thought (1,024 new tokens) is our choice, a setting of every run (``--temperature``...).
Baselines: ``oracle`` (the right answer; with probability ``noise`` another one), ``random`` (a label drawn
uniformly: 50% on the two-way tests, 25% on the four-way ones, the paper's random lines) and ``constant``
(``value``, default the first label: "Picture 1"/A/"Yes"; on temporal ordering it scores 100% on Order1 and 0% on
Order2, the largest order bias there is).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.benchmark import Evaluation
from tasks.models.base import Generation, Message
from tasks.webplan import prompts

OPTIONS = ("history",)


@dataclass
class WebplanItem:
    key: str  # the webplan_instance record's id
    test: str
    instance_key: str
    payload: dict[str, Any]
    blobs: dict[str, str]  # role -> sha256
    missing: str = ""
    letters: tuple[str, ...] = field(default=())

    @property
    def kind(self) -> str:
        return prompts.answer_kind(self.test, self.payload.get("meta", {}).get("form", ""))


def _history(settings: Any) -> bool:
    return bool(settings.option("history", False))


class WebplanEvaluation(Evaluation):
    """The ``tasks.benchmark.Evaluation`` of the web-planning tests."""

    item_kind = "webplan_instance"
    strategies = prompts.STYLES
    default_strategy = "instruct"
    generation = Generation(max_tokens=1024, temperature=0.0, seed=0)
    prompt_version = "webplan-v1"
    percent_metrics = False  # accuracies are percentages already
    metric_order = ("temporal", "order_gap_mcq", "order_gap_open", "future_short", "future_long", "future",
                    "realweb_shuffle", "realweb_semantic", "realweb", "edge")
    best_at_zero = ("order_gap_mcq", "order_gap_open")  # Order1 - Order2 accuracy: 0 is no position bias

    def item(self, record: Any, images: Callable[[str], bytes] | None) -> WebplanItem:
        payload = record.payload
        return WebplanItem(key=record.id, test=payload["test"], instance_key=payload["key"], payload=payload,
                           blobs={b.role: b.sha256 for b in record.blobs},
                           letters=tuple(sorted(payload.get("options", {}))))

    def order(self, item: WebplanItem) -> tuple[str, str]:
        return item.test, item.instance_key

    def run_options(self, strategy: str, options: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise ValueError(f"the web-planning tests have no evaluation option {', '.join(unknown)}; their "
                             f"options: {', '.join(OPTIONS)}")
        history = options.get("history")
        if isinstance(history, str):
            if history.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(f"history {history!r}: true or false")
            history = history.lower() in ("true", "1", "yes")
        return {"history": bool(history)}

    def variant(self, settings: Any) -> str:
        return f"{settings.strategy}:history" if _history(settings) else settings.strategy

    def item_name(self, item: WebplanItem) -> str:
        return f"{item.test} instance {item.instance_key} ({item.key[:12]})"

    def aliases(self, item: WebplanItem) -> list[str]:
        return [item.key, item.instance_key]

    def official_key(self, item: WebplanItem) -> str | None:
        """The id the ``webplan`` export gives the instance in its test's file."""
        return item.instance_key

    def finished(self, item: WebplanItem, settings: Any, replies: list[str]) -> bool:
        return bool(replies)

    def messages(self, item: WebplanItem, settings: Any, image: Callable[[str], bytes], turn: int,
                 previous: list[str]) -> tuple[list[Message], int]:
        question = prompts.prompt(item.payload, settings.strategy, _history(settings))
        if item.test == "temporal":
            parts: list[Any] = ["Picture 1:", image(item.blobs["picture_1"]), "Picture 2:",
                                image(item.blobs["picture_2"])]
        else:
            parts = [image(item.blobs["start"])]
        return [Message.user(*parts, question)], 1

    def parse(self, item: WebplanItem, text: str, settings: Any) -> tuple[dict[str, Any], bool]:
        label = prompts.read_answer(text, item.kind, item.letters or ("A", "B"))
        return {"label": label}, label is not None

    def judge_prompt(self, item: WebplanItem, answer: str) -> str:
        return prompts.judge_prompt(item.kind, item.letters or ("A", "B"), answer)

    def parse_judged(self, item: WebplanItem, reply: str) -> tuple[dict[str, Any], bool]:
        label = prompts.read_judged(reply, item.kind, item.letters or ("A", "B"))
        return {"label": label}, label is not None

    def score(self, settings: Any, eval_settings: Any, items: list[WebplanItem], parsed: dict[str, Any],
              catalog: Any) -> Any:
        from tasks.webplan.metrics import score_run

        return score_run(items, parsed, eval_settings.strategy, _history(eval_settings))

    def report_tables(self, scoring: Any, label: str) -> str:
        from tasks.webplan.report import webplan_tables

        return webplan_tables(scoring, label)

    def report_plots(self, scoring: Any, folder: Path, label: str) -> list[Path]:
        from tasks.webplan.report import plot_order_bias

        return plot_order_bias(scoring, folder, label)

    def report_summary(self, eval_settings: Any) -> list[tuple[str, str]]:
        return [("prompt style", eval_settings.strategy + (" with previous actions" if _history(eval_settings)
                                                            else "")),
                ("unreadable answers", "wrong (0), in every denominator; unparsed rate per cell")]

    def leaderboard_plots(self, runs: list[Any], catalog: Any, folder: Path) -> list[Path]:
        return []

    def baseline_answer(self, baseline: str, options: dict[str, Any], request: Any, rng: random.Random,
                        vocabulary: list[str]) -> str:
        item: WebplanItem = request.item
        choices = list(prompts.labels(item.kind, item.letters or ("A", "B")))
        right = item.payload["answer"]
        if baseline == "oracle":
            wrong = [c for c in choices if c != right]
            answer = rng.choice(wrong) if wrong and rng.random() < float(options.get("noise", 0.0)) else right
        elif baseline == "random":
            answer = rng.choice(choices)
        else:
            answer = str(options.get("value") or choices[0])
        if request.strategy == "cot":
            marker = "OUTPUT CHOICE" if item.test == "edge" else "OUTPUT"
            return f"REASONING: a model-free {baseline} answer.\n{marker}: {answer}"
        return answer

    def baseline_vocabulary(self, items: list[WebplanItem]) -> list[str]:
        return []
