"""ViC-Bench as the evaluation engine sees it: its three stages as strategies, the Stage-3 agent loop, parsing,
scoring, report and baselines.

- ``stage1``: the multiple-choice form, one request; ``stage2``: the open form, one request; ``stage3``: the open
  form as an agent loop. Each turn the model sends one action; the task's simulator runs it and the next request
  shows the model whether it was allowed and the new intermediate visual state, until the model sends its final
  answer or ``max_turns`` (30) turns have passed. Every turn is a request of its own, so the response cache keeps
  each one: a run killed mid-loop resumes by replaying the cached turns, asking nothing twice.
- The option ``level`` is the IPII level (1-3; the paper ran levels 2-3 on the maze only, the other tasks read
  level 1's prompt at every level).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.benchmark import Evaluation
from tasks.models.base import Generation, Message
from tasks.vic.task import LETTERS, STAGE3_PROTOCOL, VicInstance, tagged

STAGES = {"stage1": 1, "stage2": 2, "stage3": 3}
OPTIONS = ("level", "max_turns", "history_images")
NO_ACTION = ("No action was found in your reply. Send exactly one action inside <action>...</action>, or your final "
             "answer inside <answer>...</answer>.")


@dataclass
class VicItem:
    key: str  # the vic_instance record's id
    task: str
    instance_key: str
    payload: dict[str, Any]
    blobs: dict[str, str]  # role -> sha256
    load_image: Callable[[str], bytes] | None = field(default=None, repr=False)
    missing: str = ""


class Stage3Replay:
    """One item's Stage-3 conversation, kept between rounds so each round steps the simulator once; rebuilt from
    the replies when they do not continue it (a resumed run replays the cached turns)."""

    def __init__(self, task: Any, instance: VicInstance, question: str) -> None:
        self.task, self.simulator = task, task.simulator(instance)
        self.messages: list[Message] = []
        self.feedback: list[tuple[str, bytes | None]] = [(question, instance.open_form.image)]
        self.replies: list[str] = []
        self.actions: list[str] = []
        self.legal: list[bool] = []

    def advance(self, reply: str) -> None:
        self.replies.append(reply)
        action = self.task.parse_action(reply)
        if tagged(reply, "answer") is not None and action is None:
            self.feedback.append(("Final answer received.", None))
            return
        if action is None:
            self.feedback.append((NO_ACTION, None))
            return
        result = self.simulator.step(action)
        self.actions.append(action)
        self.legal.append(result.legal)
        verdict = "done" if result.legal else "NOT allowed, nothing changed"
        note = " The goal is reached: send your final answer." if result.done else ""
        self.feedback.append((f"Action {action!r}: {verdict}. {result.message}{note}",
                              result.image or (self.simulator.image() if result.legal else None)))

    def conversation(self, history_images: str, turns_left: int) -> list[Message]:
        """The whole exchange so far: the question with its image, then per turn the reply and the feedback, with
        the initial image and the latest state only (``latest``) or every state (``all``)."""
        messages = []
        last = len(self.feedback) - 1
        for index, (text, image) in enumerate(self.feedback):
            if index:
                messages.append(Message("assistant", (self.replies[index - 1],)))
                text += f" ({turns_left} turns left.)" if index == last else ""
            shown = image is not None and (index in (0, last) or history_images == "all")
            messages.append(Message.user(*((image,) if shown else ()), text))
        return messages


class VicEvaluation(Evaluation):
    """The ``tasks.benchmark.Evaluation`` of ViC-Bench."""

    item_kind = "vic_instance"
    strategies = tuple(STAGES)
    default_strategy = "stage3"  # the agent loop: the main job's canary exercises every simulator
    # ViC-Bench V-A: temperature 0, top-k 1, top-p 1, 8,192 new tokens.
    generation = Generation(max_tokens=8192, temperature=0.0, top_p=1.0, top_k=1, seed=0)
    prompt_version = "vic-v1"
    percent_metrics = False  # its figures are x100 already, as the paper prints them
    metric_order = ("ACC", "Recall_o", "ThinkGain", "Legality")

    def __init__(self) -> None:
        self._instances: dict[str, VicInstance] = {}
        self._replays: dict[tuple[str, str], Stage3Replay] = {}

    def item(self, record: Any, images: Callable[[str], bytes] | None) -> VicItem:
        return VicItem(key=record.id, task=record.payload["task"], instance_key=record.payload["key"],
                       payload=record.payload, blobs={b.role: b.sha256 for b in record.blobs}, load_image=images)

    def order(self, item: VicItem) -> tuple[str, str]:
        return item.task, item.instance_key

    def options(self, settings: Any, options: dict[str, Any]) -> dict[str, Any]:
        configured = settings.vic
        return {"max_turns": configured.max_turns, "history_images": configured.history_images, **options}

    def run_options(self, strategy: str, options: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise ValueError(f"ViC-Bench has no evaluation option {', '.join(unknown)}; its options: "
                             f"{', '.join(OPTIONS)}")
        level = int(options.get("level") or 1)
        if level not in (1, 2, 3):
            raise ValueError(f"level {level}: the IPII levels are 1, 2 and 3")
        history = options.get("history_images") or "latest"
        if history not in ("latest", "all"):
            raise ValueError(f"history_images {history!r}: latest or all")
        return {"level": level, "max_turns": int(options.get("max_turns") or 30), "history_images": history}

    def variant(self, settings: Any) -> str:
        level = settings.option("level", 1)
        return settings.strategy if level == 1 else f"{settings.strategy}:level={level}"

    def item_name(self, item: VicItem) -> str:
        return f"{item.task} instance {item.instance_key} ({item.key[:12]})"

    def aliases(self, item: VicItem) -> list[str]:
        return [item.key, item.instance_key, f"{item.task}/{item.instance_key}"]

    def official_key(self, item: VicItem) -> str | None:
        """The id the ``vic`` export gives the instance in its task's files."""
        return f"{item.task}/{item.instance_key}"

    def instance(self, item: VicItem, image: Callable[[str], bytes] | None = None) -> VicInstance:
        """The released instance, rebuilt once from its record and images."""
        from tasks.vic.records import instance_of

        if item.key not in self._instances:
            loader = image or item.load_image
            if loader is None:
                raise ValueError(f"{self.item_name(item)}: no image store to rebuild the instance from")
            self._instances[item.key] = instance_of(ItemRecord(item), loader)
        return self._instances[item.key]

    def rounds(self, item: VicItem, settings: Any) -> int:
        return settings.option("max_turns", 30) if settings.strategy == "stage3" else 1

    def finished(self, item: VicItem, settings: Any, replies: list[str]) -> bool:
        return bool(replies) and tagged(replies[-1], "answer") is not None

    def messages(self, item: VicItem, settings: Any, image: Callable[[str], bytes], turn: int,
                 previous: list[str]) -> tuple[list[Message], int]:
        from tasks.vic.suite import task

        instance, chosen = self.instance(item, image), task(item.task)
        stage, level = STAGES[settings.strategy], settings.option("level", 1)
        question = chosen.prompts(instance, stage, level)
        if stage == 1:
            options = [part for letter in sorted(instance.stage_one.option_images)
                       for part in (f"Option {letter}:", instance.stage_one.option_images[letter])]
            return [Message.user(instance.stage_one.image, *options, question)], 1
        if stage == 2:
            return [Message.user(instance.open_form.image, question)], 1
        replay = self._replay(item, instance, f"{question}\n\n{STAGE3_PROTOCOL}", previous)
        turns_left = settings.option("max_turns", 30) - len(previous)
        return replay.conversation(settings.option("history_images", "latest"), turns_left), 1

    def _replay(self, item: VicItem, instance: VicInstance, question: str, replies: list[str]) -> Stage3Replay:
        from tasks.vic.suite import task

        cache_key = (item.key, question)
        replay = self._replays.get(cache_key)
        if replay is None or replay.replies != replies[:len(replay.replies)]:
            replay = Stage3Replay(task(item.task), instance, question)
        for reply in replies[len(replay.replies):]:
            replay.advance(reply)
        self._replays[cache_key] = replay
        return replay

    def parse(self, item: VicItem, text: str, settings: Any) -> tuple[dict[str, Any], bool]:
        return self.parse_conversation(item, [text], settings)

    def parse_conversation(self, item: VicItem, replies: list[str], settings: Any) -> tuple[dict[str, Any], bool]:
        from tasks.vic.metrics import score_choice, score_loop, score_open

        stage = STAGES[settings.strategy]
        if stage == 1:
            return score_choice(item.task, item.payload["stage_one_answer"], replies[-1])
        instance = self.instance(item)
        if stage == 2:
            return score_open(item.task, instance, replies[-1])
        replay = Stage3Replay(__import__("tasks.vic.suite", fromlist=["task"]).task(item.task), instance, "")
        for reply in replies:
            replay.advance(reply)
        return score_loop(item.task, instance, replay.replies, replay.actions, replay.legal)

    def judge_prompt(self, item: VicItem, answer: str) -> str:
        return ("Rewrite the final answer of the reply below in the exact format the question asked for, inside "
                "<answer>...</answer>, changing nothing of its content; write <answer></answer> if it gives none."
                f"\n\nReply:\n{answer[-8000:]}")

    def parse_judged(self, item: VicItem, reply: str) -> tuple[dict[str, Any], bool]:
        return self.parse(item, reply, _JudgedStage(item))

    def score(self, settings: Any, eval_settings: Any, items: list[VicItem], parsed: dict[str, Any],
              catalog: Any) -> Any:
        from tasks.vic.metrics import score_run

        return score_run(items, parsed, STAGES[eval_settings.strategy])

    def report_tables(self, scoring: Any, label: str) -> str:
        from tasks.vic.report import vic_tables

        return vic_tables(scoring, label)

    def report_plots(self, scoring: Any, folder: Path, label: str) -> list[Path]:
        from tasks.vic.report import plot_vic

        return plot_vic(scoring, folder, label)

    def report_summary(self, eval_settings: Any) -> list[tuple[str, str]]:
        return [("IPII level", str(eval_settings.option("level", 1))),
                ("unparseable answers", "counted as wrong (0), kept in every denominator")]

    def leaderboard_plots(self, runs: list[Any], catalog: Any, folder: Path) -> list[Path]:
        from tasks.vic.report import plot_levels

        return plot_levels(runs, catalog, folder)

    def baseline_answer(self, baseline: str, options: dict[str, Any], request: Any, rng: random.Random,
                        vocabulary: list[str]) -> str:
        from tasks.vic.baselines import baseline_reply

        item: VicItem = request.item
        return baseline_reply(baseline, options, request, rng, item.task, self.instance(item))

    def baseline_vocabulary(self, items: list[VicItem]) -> list[str]:
        return list(LETTERS)


@dataclass(frozen=True)
class ItemRecord:
    """The view of an item ``records.instance_of`` reads."""

    item: VicItem

    @property
    def payload(self) -> dict[str, Any]:
        return self.item.payload

    @property
    def blobs(self) -> list[Any]:
        from schemas import BlobRef

        return [BlobRef(sha256=sha, role=role, media_type="image/png") for role, sha in self.item.blobs.items()]


@dataclass(frozen=True)
class _JudgedStage:
    """Settings for re-reading a judge's rewrite: the open form's parser (the judge rewrites final answers)."""

    item: VicItem
    strategy: str = "stage2"

    def option(self, name: str, default: Any = None) -> Any:
        return default
