"""One evaluation: ask (or read answers from a file), parse, score, store. Pure of Prefect; tasks.py wraps it.

Asking goes a chunk of items at a time (images fetched per chunk, so memory stays flat on large releases); inside a
chunk the backend runs its requests concurrently, and every answer is cached as it arrives, so a run killed midway
asks again only what it had not received. A request that still fails after its retries (a malformed answer
included) quarantines its item with the reason and the last body the server sent; an item whose frames the source
lacks is never sent and is quarantined naming the frames. The rest of the run goes on and the report counts them.
Running again asks only the items that have no cached answer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from schemas import Producer, canonical_json
from tasks import benchmarks
from tasks.evaluate.answerers import Answerer, Request
from tasks.evaluation_contract import Evaluation
from tasks.models.base import ChatBackend, Generation, Message

GENERATION_FIELDS = frozenset(f.name for f in fields(Generation))


@dataclass(frozen=True)
class EvalSettings:
    benchmark: str
    strategy: str
    generation: Generation
    judge_fallback: bool = False
    chunk_size: int = 1024  # items whose requests are built (images loaded) at once
    # the benchmark's own evaluation options (segments, relation scoring, a scoring pipeline...), as its
    # Evaluation.run_options settled them; part of the run key
    options: dict[str, Any] = field(default_factory=dict)
    prompt_version: str = ""  # the benchmark's prompts' (part of the run key)
    # the strategy with its options, as the benchmark names it (``multi-turn:window=10``): set by ``eval_settings``
    variant: str = ""

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)

    def as_dict(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "strategy": self.strategy, **self.options,
                "generation": self.generation.as_dict(), "judge_fallback": self.judge_fallback,
                "prompt_version": self.prompt_version}


def eval_settings(benchmark: str, strategy: str | None = None, *, options: dict[str, Any] | None = None,
                  judge_fallback: bool = False, **given: Any) -> EvalSettings:
    """The run's settings: the strategy (the benchmark's default when None), the paper's decoding with what
    ``given`` overrides (``temperature``, ``top_k``...; a negative ``top_k`` leaves it unset), and the benchmark's
    own options, from ``options`` and any other name in ``given``, checked by the benchmark against the
    strategy."""
    evaluation = benchmarks.get(benchmark).evaluation
    strategy = strategy or evaluation.default_strategy
    if strategy not in evaluation.strategies:
        raise ValueError(f"strategy {strategy!r} does not apply to {benchmark}: choose from "
                         f"{', '.join(evaluation.strategies)}")
    generation = {k: given.pop(k) for k in list(given) if k in GENERATION_FIELDS}
    chosen_options = evaluation.run_options(strategy, {**given, **(options or {})})
    chosen = replace(evaluation.generation, **{k: v for k, v in generation.items() if v is not None})
    if (generation.get("top_k") or 0) < 0:  # an explicit "no top-k" (OpenAI itself refuses the field)
        chosen = replace(chosen, top_k=None)
    settled = EvalSettings(benchmark, strategy, chosen, judge_fallback, options=chosen_options,
                           prompt_version=evaluation.prompt_version)
    return replace(settled, variant=evaluation.variant(settled))


def parse_options(pairs: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``KEY=VALUE`` strings (a CLI's repeated ``--option``) as a benchmark's evaluation options: a value that reads
    as JSON (``3``, ``true``, ``null``) is taken as such, anything else as a string."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"option {pair!r}: write KEY=VALUE, e.g. segment_num=3")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


def run_key(release_tag: str, release_sha: str, fingerprint: str, settings: EvalSettings,
            predictions_sha: str | None = None) -> str:
    return hashlib.sha256(canonical_json({"release": release_tag, "manifest": release_sha, "model": fingerprint,
                                          "settings": settings.as_dict(),
                                          "predictions": predictions_sha}).encode()).hexdigest()


@dataclass
class Collected:
    """Raw answers by item key (the final answer and every round's), and what could not be asked."""

    answers: dict[str, str] = field(default_factory=dict)
    turns: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # item key -> why the request failed
    failed_raw: dict[str, str] = field(default_factory=dict)  # item key -> the failed request's last body
    unshowable: dict[str, str] = field(default_factory=dict)  # item key -> the frames it lacks; never asked
    skipped: dict[str, str] = field(default_factory=dict)  # item key -> why the answers file has no answer
    problems: list[str] = field(default_factory=list)  # lines of an answers file that could not be used
    elsewhere: list[tuple[int, str]] = field(default_factory=list)  # (line, key) of answers to no item released
    empty: list[tuple[int, str]] = field(default_factory=list)  # (line, key) of empty answers: items unanswered
    # (line, key, strategy) of answers to another strategy's questions (a Stage-2 log read for Stage 1): not scored
    unasked: list[tuple[int, str, str]] = field(default_factory=list)
    by_file: dict[str, Collected] = field(default_factory=dict)  # each answers file's own, where several are read
    from_cache: int = 0
    asked: int = 0


def requests_for(evaluation: Evaluation, item: Any, settings: EvalSettings) -> int:
    """How many requests an item takes: one per round (multi-turn strategies), else one."""
    if item.missing:
        return 0
    return evaluation.rounds(item, settings)


def collect_answers(evaluation: Evaluation, items: list[Any], answerer: Answerer, settings: EvalSettings,
                    image: Callable[[str], bytes], progress: Callable[[int], None] | None = None) -> Collected:
    collected = Collected()
    ready = []
    for item in items:
        if item.missing:
            collected.unshowable[item.key] = (f"{evaluation.item_name(item)}: {item.missing}; "
                                              f"not sent to the model")
        else:
            ready.append(item)
    rounds_of = {i.key: evaluation.rounds(i, settings) for i in ready}
    last_round = max(rounds_of.values(), default=1)

    def counted(index: int, answer: Any, cached: bool) -> None:
        collected.from_cache += cached
        collected.asked += not cached
        if progress:
            progress(1)

    for turn in range(last_round):
        this_round = [i for i in ready if i.key not in collected.failed and (turn == 0 or (
            rounds_of[i.key] > turn and not evaluation.finished(i, settings, collected.turns.get(i.key, []))))]
        for start in range(0, len(this_round), settings.chunk_size):
            chunk = this_round[start:start + settings.chunk_size]
            fetch = _chunk_images(image)
            requests = []
            for item in chunk:
                messages, count = evaluation.messages(item, settings, fetch, turn, collected.turns.get(item.key, []))
                requests.append(Request(item, messages, settings.strategy, count))
            answers = answerer.answer(requests, settings.generation, counted)
            for item, answer in zip(chunk, answers, strict=True):
                if isinstance(answer, Exception):
                    collected.failed[item.key] = f"round {turn + 1}: {answer}"
                    # a backend's error may carry the body that failed (the OpenAI-compatible one does)
                    collected.failed_raw[item.key] = str(getattr(answer, "raw", ""))
                    collected.answers.pop(item.key, None)
                    continue
                collected.answers[item.key] = answer
                collected.turns.setdefault(item.key, []).append(answer)
    return collected


def _chunk_images(image: Callable[[str], bytes]) -> Callable[[str], bytes]:
    """A fetcher that reads each image once per chunk (demo frames repeat across a demo's observations)."""
    images: dict[str, bytes] = {}

    def fetch(sha: str) -> bytes:
        if sha not in images:
            images[sha] = image(sha)
        return images[sha]

    return fetch


@dataclass
class Parsed:
    value: dict[str, Any]
    method: str  # rule, judge, failed


def parse_answers(evaluation: Evaluation, items: list[Any], collected: Collected, settings: EvalSettings,
                  judge: ChatBackend | None = None) -> dict[str, Parsed]:
    """Rules first; answers the rules cannot read go to the judge when one is given (one request each, cached)."""
    parsed: dict[str, Parsed] = {}
    unread: list[Any] = []
    for item in items:
        text = collected.answers.get(item.key)
        if text is None:
            continue
        value, ok = evaluation.parse_conversation(item, collected.turns.get(item.key) or [text], settings)
        parsed[item.key] = Parsed(value, "rule" if ok else "failed")
        if not ok:
            unread.append(item)
    if judge is not None and unread:
        prompts = [[Message.user(evaluation.judge_prompt(i, collected.answers[i.key]))] for i in unread]
        replies = judge.answer_all(prompts, Generation(max_tokens=512, temperature=0.0))
        for item, reply in zip(unread, replies, strict=True):
            if isinstance(reply, Exception):
                continue
            value, ok = evaluation.parse_judged(item, reply)
            if ok:
                value["judge_answer"] = reply
                parsed[item.key] = Parsed(value, "judge")
    return parsed


def eval_producer(task: str, run_id: str | None, label: str, settings: EvalSettings, key: str) -> Producer:
    return Producer(task=task, flow_run_id=run_id, backend=label.split(":")[0], model_id=label,
                    params={"run": key, **settings.as_dict()},
                    prompt_template_version=settings.prompt_version)
