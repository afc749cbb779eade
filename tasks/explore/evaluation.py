"""EXPLORE-Bench as the evaluation engine sees it: its items, requests, parsing, scoring, report and baselines.

The engine (``tasks/evaluate``) asks these through the benchmark registry; prompts and their parsing rules live in
``prompts.py``, the metrics in ``metrics.py``, the report tables in ``report.py``.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas.config import Settings
from schemas.releases import ReleaseManifest
from tasks.benchmark import Evaluation
from tasks.evaluate.answerers import Request
from tasks.evaluate.run import EvalSettings, Parsed
from tasks.evaluate.scoring import Scoring
from tasks.explore import prompts
from tasks.explore.export import export_name
from tasks.explore.metrics import AnnotatedObject, Mode, explore_table, plan_instance, score_plans
from tasks.explore.payloads import SceneObject
from tasks.models.base import Generation, Message


@dataclass(frozen=True)
class ExploreItem:
    key: str  # the instance record's id
    clip_id: str
    subset: str
    actions: tuple[str, ...]
    initial_image: str | None
    objects: tuple[AnnotatedObject, ...] = field(default_factory=tuple)
    missing: str = ""
    image_name: str | None = None  # the official start_frame (imported official rows), the harness's answer key


def explore_items(catalog: Any, manifest: ReleaseManifest) -> list[ExploreItem]:
    records = catalog.get_records([e.id for e in manifest.records if e.kind in ("explore_instance", "scene")])
    scenes = {r.payload["instance_id"]: r for r in records if r.kind == "scene"}
    items = []
    for record in sorted((r for r in records if r.kind == "explore_instance"), key=lambda r: r.id):
        scene = scenes.get(record.id)
        objects = tuple(AnnotatedObject(category=o.category, description=o.description,
                                        relation=tuple(o.relation), key_state=o.key_state)
                        for o in (SceneObject.model_validate(x) for x in (scene.payload["objects"] if scene else [])))
        initial = next((b.sha256 for b in record.blobs if b.role == "initial"), None)
        image_name = record.payload.get("image_name")
        missing = "" if initial else (f"the initial image {image_name} was not provided" if image_name else
                                      f"the initial frame (frame {record.payload['start_frame']} of clip "
                                      f"{record.payload['clip_id']}) was not provided")
        items.append(ExploreItem(key=record.id, clip_id=record.payload["clip_id"], subset=record.payload["subset"],
                                 actions=tuple(record.payload["atomic_actions"]), initial_image=initial,
                                 objects=objects, missing=missing, image_name=image_name))
    return items


def score_explore(items: list[ExploreItem], parsed: dict[str, Parsed], nlp: Any, embedder: Any, scorer: Any,
                  mode: Mode = "correct") -> Scoring:
    scoring = Scoring()
    plans = []
    for item in items:
        answer = parsed.get(item.key)
        if answer is None:
            continue
        description = answer.value.get("description", "") if answer.method != "failed" else ""
        plan = plan_instance(item.key, item.subset, description, list(item.objects), nlp, embedder.embed, mode)
        if plan is None:
            scoring.per_sample[item.key] = {"skipped": "no annotated object"}
            continue
        plans.append(plan)
    scoring.scored = score_plans(plans, lambda pairs, aspect: scorer.score_many(pairs, aspect), mode)
    for instance in scoring.scored:
        scoring.per_sample[instance.key] = {"S_obj": instance.s_obj, "S_att": instance.s_att,
                                            "S_rel": instance.s_rel, "S_key": instance.s_key,
                                            "S_uni": instance.s_uni, "words": instance.words,
                                            "subset": instance.subset, **instance.details}
    table = explore_table(scoring.scored)
    scoring.tables = table
    for subset, scores in table.items():
        scoring.rows += [("S_obj", subset, scores.s_obj, scores.instances),
                         ("S_att", subset, scores.s_att, scores.instances),
                         ("S_rel", subset, scores.s_rel, scores.instances - scores.without_relations),
                         ("S_uni", subset, scores.s_uni, scores.instances)]
        if scores.key_instances:
            scoring.rows += [("S_key", subset, scores.s_key, scores.key_instances),
                             ("S_abn", subset, scores.s_abn, scores.key_instances)]
    full = table["Full"]
    scoring.headline = {"S_obj": full.s_obj, "S_att": full.s_att, "S_rel": full.s_rel, "S_uni": full.s_uni,
                        **({"S_key": full.s_key, "S_abn": full.s_abn} if full.key_instances else {})}
    return scoring


def baseline_answer(baseline: str, options: dict[str, Any], request: Request, rng: random.Random,
                    vocabulary: list[str]) -> str:
    """The noisy oracle writes the annotated scene out, each object dropped with probability ``drop``; random
    names categories of the release; constant says one text (``text``) or the five most common categories."""
    item: ExploreItem = request.item
    if baseline == "oracle":
        drop = float(options.get("drop", 0.2))
        sentences = []
        for obj in item.objects:
            if rng.random() < drop:
                continue
            sentences.append(f"The {obj.category} is {obj.description.rstrip('.')}")
            sentences += [relation.rstrip(".").capitalize() for relation in obj.relation]
            if obj.key_state:
                sentences.append(f"The {obj.category} is {obj.key_state.rstrip('.')}")
        text = ". ".join(sentences) + ("." if sentences else "")
    elif baseline == "random":
        picks = rng.sample(vocabulary, min(len(vocabulary), max(1, len(item.objects))))
        text = " ".join(f"There is a {c}." for c in picks)
    else:
        text = str(options.get("text") or " ".join(f"There is a {c}." for c in vocabulary[:5]))
    if request.strategy == "single-turn":
        return json.dumps([text] * request.segments)
    return text


def _segments(item: ExploreItem, settings: EvalSettings) -> list[list[str]]:
    if settings.strategy == "final-scene":
        return [list(item.actions)]
    return prompts.segments(list(item.actions), segment_num=settings.option("segment_num"),
                            window_size=settings.option("window_size"))


STEPWISE = ("single-turn", "multi-turn")
SCORINGS = ("correct", "official")  # relation alignment: each phrase with its own sentences, or the official code's
OPTIONS = ("segment_num", "window_size", "scoring", "s_obj_pipeline")


def run_options(strategy: str, options: dict[str, Any]) -> dict[str, Any]:
    """EXPLORE-Bench's evaluation options: segments of the stepwise strategies (``segment_num`` or
    ``window_size``), relation ``scoring`` and the spaCy pipeline S_obj's nouns come from (``s_obj_pipeline``,
    added from the configuration); the keys and values every run key has held."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"EXPLORE-Bench has no evaluation option {', '.join(unknown)}; its options: "
                         f"{', '.join(OPTIONS)}")
    segment_num, window_size = options.get("segment_num"), options.get("window_size")
    if (segment_num or window_size) and strategy not in STEPWISE:
        raise ValueError("--segment-num and --window-size go with the single-turn and multi-turn strategies")
    if segment_num and window_size:
        raise ValueError("give --segment-num or --window-size, not both")
    if strategy in STEPWISE and not (window_size or (segment_num or 0) >= 2):
        raise ValueError(f"the {strategy} strategy needs --segment-num 2 or more, or --window-size")
    scoring = options.get("scoring") or "correct"
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be {' or '.join(SCORINGS)}")
    pipeline = options.get("s_obj_pipeline")
    return {"segment_num": segment_num, "window_size": window_size, "scoring": scoring,
            **({"s_obj_pipeline": pipeline} if pipeline else {})}


class ExploreEvaluation(Evaluation):
    """The ``tasks.benchmark.Evaluation`` of EXPLORE-Bench."""

    item_kind = "explore_instance"
    strategies = prompts.STRATEGIES
    default_strategy = "final-scene"
    # EXPLORE-Bench App. D: greedy, 8,192 new tokens.
    generation = Generation(max_tokens=8192, temperature=0.0, top_p=1.0, seed=0)
    prompt_version = prompts.PROMPT_VERSION
    percent_metrics = False
    metric_order = ("S_obj", "S_att", "S_rel", "S_uni", "S_key", "S_abn")  # EXPLORE-Bench Table 2

    def items(self, catalog: Any, manifest: ReleaseManifest, images: Any = None) -> list[Any]:
        return explore_items(catalog, manifest)

    def options(self, settings: Settings, options: dict[str, Any]) -> dict[str, Any]:
        from tasks.explore.metrics import s_obj_pipeline

        return {**options, "s_obj_pipeline": s_obj_pipeline(settings.nlp.s_obj_model)}

    def run_options(self, strategy: str, options: dict[str, Any]) -> dict[str, Any]:
        return run_options(strategy, options)

    def variant(self, settings: EvalSettings) -> str:
        if settings.strategy in STEPWISE:
            window = settings.option("window_size")
            option = f"window={window}" if window else f"segments={settings.option('segment_num') or 1}"
            return f"{settings.strategy}:{option}"
        return settings.strategy

    def item_name(self, item: ExploreItem) -> str:
        where = f"start_frame {item.image_name}" if item.image_name else f"clip {item.clip_id}"
        return f"instance {item.key[:12]} ({where})"

    def aliases(self, item: ExploreItem) -> list[str]:
        """The record id, the clip id, its exported id and the exported initial image (the official harness keys
        answers by it), and for an imported official row the ``start_frame`` (``<uid>-start.jpg``), also as
        ``images/<name>``."""
        exported = export_name(item.clip_id)
        names = [item.key, item.clip_id, exported, f"images/{exported}_start.jpg"]
        if item.image_name:
            names += [item.image_name, f"images/{item.image_name}"]
        return names

    def official_key(self, item: ExploreItem) -> str | None:
        """The official ``start_frame`` of an imported row (the official answer files' key), else the clip."""
        return item.image_name or item.clip_id

    def rounds(self, item: ExploreItem, settings: EvalSettings) -> int:
        return len(_segments(item, settings)) if settings.strategy == "multi-turn" else 1

    def messages(self, item: ExploreItem, settings: EvalSettings, image: Callable[[str], bytes], turn: int,
                 previous: list[str]) -> tuple[list[Message], int]:
        parts_of = _segments(item, settings)
        if settings.strategy == "single-turn":
            text = prompts.single_turn_prompt(parts_of)
        elif turn == 0:
            text = prompts.final_scene_prompt(parts_of[0])
        else:
            text = prompts.next_turn_prompt(previous[-1] if previous else "", parts_of[turn])
        return [Message.user(image(item.initial_image), text)], len(parts_of)  # type: ignore[arg-type]

    def parse(self, item: ExploreItem, text: str, settings: EvalSettings) -> tuple[dict[str, Any], bool]:
        scene = prompts.parse_scene_answer(text, settings.strategy)
        value = {"description": scene.description, "ok": scene.ok}
        if scene.problem:
            value["problem"] = scene.problem
        return value, scene.ok

    def answer_in_row(self, row: dict[str, Any]) -> tuple[str, Any] | None:
        """A row of the official harness's results (``start_frame``, ``response``), cleaned as it cleans it."""
        from tasks.explore.official_answers import official_answer

        return official_answer(row)

    def judge_prompt(self, item: ExploreItem, answer: str) -> str:
        return prompts.JUDGE_PROMPT.format(answer=answer[-12000:])

    def parse_judged(self, item: ExploreItem, reply: str) -> tuple[dict[str, Any], bool]:
        scene = prompts.parse_judged_scene(reply)
        return {"description": scene.description, "ok": scene.ok}, scene.ok

    def score(self, settings: Settings, eval_settings: EvalSettings, items: list[Any], parsed: dict[str, Parsed],
              catalog: Any) -> Scoring:
        from tasks.models.registry import load_backend
        from tasks.nlp import load_nlp

        scorer = load_backend(settings, "scorer", cache=catalog)
        embedder = getattr(scorer, "embedder", None) or load_backend(settings, "embedder")  # one model, not two
        return score_explore(items, parsed, load_nlp(eval_settings.option("s_obj_pipeline")), embedder,
                             scorer, eval_settings.option("scoring", "correct"))  # type: ignore[arg-type]

    def report_tables(self, scoring: Scoring, label: str) -> str:
        from tasks.explore.report import explore_tables

        return explore_tables(scoring, label)

    def report_plots(self, scoring: Scoring, folder: Path, label: str) -> list[Path]:
        from tasks.explore.report import plot_explore

        return plot_explore(scoring, folder, label)

    def report_summary(self, eval_settings: EvalSettings) -> list[tuple[str, str]]:
        from tasks.explore.metrics import OFFICIAL_S_OBJ_PIPELINE

        pipeline = eval_settings.option("s_obj_pipeline")
        scoring = eval_settings.option("scoring", "correct")
        pairing = ("as the official code: its relation pairing, repeated sentences in S_att/S_rel/S_key, S_rel 0 "
                   "without relations)" if scoring == "official" else
                   "each relation phrase judged on its own sentences, each sentence once)")
        source = ("the official one)" if pipeline == OFFICIAL_S_OBJ_PIPELINE else
                  f"the official code uses {OFFICIAL_S_OBJ_PIPELINE}; see docs/fidelity.md)")
        return [("scoring", f"{scoring} (" + pairing),
                ("S_obj spaCy pipeline", f"{pipeline} (" + source)]

    def baseline_answer(self, baseline: str, options: dict[str, Any], request: Request, rng: random.Random,
                        vocabulary: list[str]) -> str:
        return baseline_answer(baseline, options, request, rng, vocabulary)

    def baseline_vocabulary(self, items: list[Any]) -> list[str]:
        """The categories of the release, most common first."""
        counts = Counter(o.category for item in items for o in item.objects)
        return [category for category, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
