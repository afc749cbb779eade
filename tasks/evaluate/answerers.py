"""Who answers an evaluation: a chat model named by a spec, or a baseline that needs no model.

Model specs (``--model``):
- ``openai:NAME@URL`` or ``openai:NAME?base_url=URL&max_concurrency=32&timeout_s=300&api_key_env=VAR``: any
  OpenAI-compatible server (vLLM, SGLang, LMDeploy, OpenAI) serving NAME.
- ``transformers:PATH?device=cuda&batch_size=4``: a local checkpoint folder (Qwen2/2.5/3-VL style).
- ``chat``: whatever ``[models.chat]`` in benchwright.toml configures.
- ``baseline:random`` (a uniform guess, never "n/a"), ``baseline:constant?value=50`` (one answer for every item),
  ``baseline:oracle?noise=0.1&na_rate=0`` (the truth plus Gaussian noise of that standard deviation, in progress
  units, and a share of flipped answerability; for EXPLORE the annotated scene written out, each object dropped with
  probability ``drop``). Baselines answer in the asked format, so their answers go through the same parser.
Every option a spec carries goes to the backend's params; ``seed`` seeds the baselines.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qsl

from schemas import canonical_json
from schemas.config import ModelRole, Settings
from tasks.models.base import ChatBackend, Generation, Message, ResponseCache

BASELINES = ("random", "constant", "oracle")
_SECRET_OPTIONS = {"api_key"}


@dataclass(frozen=True)
class ModelSpec:
    kind: str  # openai, transformers, chat, baseline
    name: str  # served model name, checkpoint path, baseline name; empty for chat
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The spec without secrets: what reports and the leaderboard call the model."""
        shown = {k: v for k, v in self.options.items() if k not in _SECRET_OPTIONS and k != "base_url"}
        suffix = ("?" + "&".join(f"{k}={v}" for k, v in sorted(shown.items()))) if shown and \
            self.kind == "baseline" else ""
        return f"{self.kind}:{self.name}{suffix}" if self.name else self.kind


def parse_model_spec(spec: str) -> ModelSpec:
    text = spec.strip()
    if text == "chat":
        return ModelSpec("chat", "")
    kind, sep, rest = text.partition(":")
    if not sep or kind not in ("openai", "transformers", "baseline"):
        raise ValueError(f"model spec {spec!r}: write openai:NAME@URL, transformers:PATH, chat, or "
                         f"baseline:{'|'.join(BASELINES)} (options after ?, e.g. baseline:oracle?noise=0.1)")
    name, _, query = rest.partition("?")
    options: dict[str, Any] = {k: _value(v) for k, v in parse_qsl(query, keep_blank_values=True)}
    if kind == "openai" and "@" in name:
        name, _, url = name.partition("@")
        options.setdefault("base_url", url)
    if not name:
        raise ValueError(f"model spec {spec!r} names no model")
    if kind == "baseline" and name not in BASELINES:
        raise ValueError(f"no baseline {name!r}: choose from {', '.join(BASELINES)}")
    return ModelSpec(kind, name, options)


def _value(text: str) -> Any:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


@dataclass(frozen=True)
class Request:
    item: Any  # an item of the release's benchmark
    messages: list[Message]
    strategy: str
    segments: int = 1  # scenes asked for (single-turn)


OnAnswer = Callable[[int, "str | Exception", bool], None]


class Answerer(Protocol):
    label: str

    def fingerprint(self) -> str: ...

    def answer(self, requests: list[Request], generation: Generation, on_answer: OnAnswer | None = None
               ) -> list[str | Exception]: ...


@dataclass
class ChatAnswerer:
    """A chat backend; its answers come from and go to the catalog's response cache."""

    backend: ChatBackend
    label: str

    def fingerprint(self) -> str:
        return self.backend.fingerprint()

    def answer(self, requests: list[Request], generation: Generation, on_answer: OnAnswer | None = None
               ) -> list[str | Exception]:
        return self.backend.answer_all([r.messages for r in requests], generation, on_answer=on_answer)


@dataclass
class Baseline:
    """A model-free answerer. The benchmark computes its answer from the item (and, for the oracle, the item's
    truth), with a random generator seeded by the item, so the same run gives the same answers."""

    name: str
    options: dict[str, Any]
    label: str
    evaluation: Any  # the release's tasks.benchmark.Evaluation, which writes the answers
    vocabulary: list[str] = field(default_factory=list)  # what the benchmark's baselines may name

    def fingerprint(self) -> str:
        return hashlib.sha256(canonical_json({"baseline": self.name, "options": self.options}).encode()).hexdigest()

    def answer(self, requests: list[Request], generation: Generation, on_answer: OnAnswer | None = None
               ) -> list[str | Exception]:
        answers: list[str | Exception] = []
        for index, request in enumerate(requests):
            # seeded by the item and the question (the round, in multi-turn), never by its place in a batch
            rng = random.Random(f"{self.options.get('seed', 0)}:{request.item.key}:{request.messages[-1].text()}")
            text = self.evaluation.baseline_answer(self.name, self.options, request, rng, self.vocabulary)
            answers.append(text)
            if on_answer:
                on_answer(index, text, False)
        return answers


def build_answerer(spec: ModelSpec, settings: Settings, cache: ResponseCache | None, items: list[Any],
                   evaluation: Any = None) -> Answerer:
    """The answerer a spec names; a baseline answers through ``evaluation``, the release's benchmark's."""
    if spec.kind == "baseline":
        if evaluation is None:
            raise ValueError(f"{spec.label}: a baseline answers only in an evaluation of a release")
        return Baseline(spec.name, dict(spec.options), spec.label, evaluation,
                        evaluation.baseline_vocabulary(items))
    from tasks.models.registry import build_backend, load_backend

    if spec.kind == "chat":
        backend = load_backend(settings, "chat", cache=cache)
    else:
        params = {k: v for k, v in spec.options.items() if k not in _SECRET_OPTIONS}
        role = ModelRole(backend=spec.kind, model=spec.name, params=params, api_key=spec.options.get("api_key"))
        backend = build_backend(settings, "chat", role, cache)
    assert isinstance(backend, ChatBackend)
    label = spec.label if spec.kind != "chat" else f"{backend.name}:{backend.model}"
    return ChatAnswerer(backend, label)
