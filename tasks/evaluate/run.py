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
from pathlib import Path
from typing import Any

from schemas import Producer, canonical_json
from tasks import benchmark as benchmarks
from tasks.evaluate.answerers import Answerer, Request
from tasks.evaluate.items import item_aliases, item_name
from tasks.models.base import ChatBackend, Generation, Message

GENERATION_FIELDS = frozenset(f.name for f in fields(Generation))


@dataclass(frozen=True)
class EvalSettings:
    benchmark: str
    strategy: str
    generation: Generation
    judge_fallback: bool = False
    chunk_size: int = 1024  # items whose requests are built (images loaded) at once
    # the benchmark's own evaluation options (EXPLORE-Bench: segments, relation scoring, the S_obj pipeline), as
    # its Evaluation.run_options settled them; part of the run key
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def variant(self) -> str:
        """The strategy with its options, as the benchmark names it (``multi-turn:window=10``)."""
        return benchmarks.get(self.benchmark).evaluation.variant(self)

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)

    def as_dict(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "strategy": self.strategy, **self.options,
                "generation": self.generation.as_dict(), "judge_fallback": self.judge_fallback,
                "prompt_version": benchmarks.get(self.benchmark).evaluation.prompt_version}


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
    return EvalSettings(benchmark, strategy, chosen, judge_fallback, options=chosen_options)


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
    from_cache: int = 0
    asked: int = 0


def requests_for(item: Any, settings: EvalSettings) -> int:
    """How many requests an item takes: one per round (multi-turn strategies), else one."""
    if item.missing:
        return 0
    return benchmarks.get(settings.benchmark).evaluation.rounds(item, settings)


def collect_answers(items: list[Any], answerer: Answerer, settings: EvalSettings, image: Callable[[str], bytes],
                    progress: Callable[[int], None] | None = None) -> Collected:
    evaluation = benchmarks.get(settings.benchmark).evaluation
    collected = Collected()
    ready = []
    for item in items:
        if item.missing:
            collected.unshowable[item.key] = (f"{item_name(item, settings.benchmark)}: {item.missing}; "
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


# What the official EXPLORE-Bench harness strips from a raw response before scoring (infer_utils.remove_tags),
# every closing brace included, as it does.
_OFFICIAL_TAGS = ("<|begin_of_box|>", "<|end_of_box|>", "<answer>", "</answer>", "\\boxed{", "}")


def official_clean(response: Any) -> Any:
    """A raw response of the official harness as its convert_list_to_dict leaves it: the text after the first
    ``</think>``, the tags above removed; a list of responses (stepwise strategies) element by element."""
    if isinstance(response, list):
        return [official_clean(r) for r in response]
    if not isinstance(response, str):
        return response
    _, found, after = response.partition("</think>")
    text = after.lstrip() if found else response
    for tag in _OFFICIAL_TAGS:
        text = text.replace(tag, "")
    return text


def _last(answer: Any) -> Any:
    """The final scene: the last description of a list (single- or multi-turn), else the answer itself."""
    return answer[-1] if isinstance(answer, list) and answer else answer


def _answer_rows(path: Path) -> list[tuple[int, str, Any]]:
    """(line number, line, parsed row or None) of a JSONL file. The official EXPLORE-Bench harness's files are read
    as they are: its scored file, one JSON object ``{start_frame: description or [descriptions]}``, gives one row
    per entry; its ``results.json``, a JSON list of ``{start_frame, response, success}``, one row per element (the
    response cleaned as the harness cleans it); both numbered from 1, the last description of a list being the
    answer. Its per-chunk ``results_<k>.json`` are JSONL with the same keys. A VLMEvalKit prediction file (.xlsx,
    .tsv) gives a row per spreadsheet row (tasks/exporting/predictions.py)."""
    from tasks.exporting.predictions import TABLE_SUFFIXES, table_rows

    if path.suffix in TABLE_SUFFIXES:
        return table_rows(path)
    text = path.read_text(encoding="utf-8")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and not {"key", "id"} & whole.keys():
        return [(n, json.dumps({k: v}), {"key": k, "answer": _last(v)}) for n, (k, v) in enumerate(whole.items(), 1)]
    if isinstance(whole, list):
        return [(n, json.dumps(row, ensure_ascii=False), row) for n, row in enumerate(whole, 1)]
    rows: list[tuple[int, str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((number, line, json.loads(line)))
        except json.JSONDecodeError:
            rows.append((number, line, None))
    return rows


def _key_and_answer(row: dict[str, Any]) -> tuple[str | None, Any]:
    from tasks.exporting.predictions import harness_key_and_answer

    harness = harness_key_and_answer(row)
    if harness is not None:
        return harness
    if "start_frame" in row and "response" in row and not {"key", "id"} & row.keys():
        return str(row["start_frame"]), _last(official_clean(row["response"]))
    key = next((str(row[k]) for k in ("key", "id") if k in row), None)
    return key, next((row[k] for k in ("answer", "prediction", "response") if k in row), None)


def read_predictions(path: Path, items: list[Any], settings: EvalSettings
                     ) -> tuple[Collected, list[tuple[int, str, str]]]:
    """Answers from a JSONL file of ``{"key": ..., "answer": ...}`` (``id``/``prediction``/``response`` also
    read), from the official EXPLORE-Bench harness's JSON, or from what VLMEvalKit and lmms-eval write of a harness
    export (keyed by its ``index``, the record id). A key is an item's record id, its published
    ``<file>:<line>``, an EXPLORE clip id or its exported initial image. Returns the answers and the lines that
    could not be used: (line number, the line, why)."""
    from tasks.exporting.predictions import empty_prediction

    by_alias = {alias: item for item in items for alias in item_aliases(item, settings.benchmark)}
    collected = Collected()
    problems: list[tuple[int, str, str]] = []
    for number, line, row in _answer_rows(path):
        if row is None:
            problems.append((number, line, "not JSON"))
            continue
        if not isinstance(row, dict):
            problems.append((number, line, "not a JSON object"))
            continue
        key, answer = _key_and_answer(row)
        if key is None or not isinstance(answer, str):
            problems.append((number, line, "needs a \"key\" and an \"answer\" string (or the official "
                                           "\"start_frame\" and \"response\", VLMEvalKit's \"index\" and "
                                           "\"prediction\", lmms-eval's \"doc\".\"index\" and "
                                           "\"filtered_resps\")"))
            continue
        if empty_prediction(path, answer):
            problems.append((number, line, "empty prediction"))
            continue
        item = by_alias.get(key)
        if item is None:
            problems.append((number, line, f"no item of this release has the key {key!r}"))
            continue
        if item.key in collected.answers:
            problems.append((number, line, f"a second answer for {key!r}; the first is kept"))
            continue
        collected.answers[item.key] = answer
        collected.turns[item.key] = [answer]
    for item in items:
        if item.key not in collected.answers:
            collected.skipped[item.key] = "no answer in the predictions file"
    return collected, problems


@dataclass
class Parsed:
    value: dict[str, Any]
    method: str  # rule, judge, failed


def parse_answers(items: list[Any], collected: Collected, settings: EvalSettings,
                  judge: ChatBackend | None = None) -> dict[str, Parsed]:
    """Rules first; answers the rules cannot read go to the judge when one is given (one request each, cached)."""
    evaluation = benchmarks.get(settings.benchmark).evaluation
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
                    prompt_template_version=benchmarks.get(settings.benchmark).evaluation.prompt_version)
