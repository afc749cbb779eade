"""PROGRESS-BENCH as the evaluation engine sees it: its items, requests, parsing, scoring, report and baselines.

The engine (``tasks/evaluate``) asks these through the benchmark registry; prompts and their parsing rules live in
``prompts.py``, the metrics in ``metrics.py``, the report tables in ``report.py``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.config import Settings
from schemas.releases import ReleaseManifest
from tasks.benchmark import Evaluation
from tasks.evaluate.answerers import Request
from tasks.evaluate.run import EvalSettings, Parsed
from tasks.evaluate.scoring import Scoring
from tasks.models.base import Generation, Message
from tasks.progress import prompts
from tasks.progress.metrics import ProgressSample, progress_report, sample_marks, score_aligned_step


@dataclass(frozen=True)
class ProgressItem:
    key: str  # the observation record's id
    source_row: str | None  # "<file>:<line>" for imported published rows
    trajectory: str
    setting: str  # same, cross or text
    modality: str  # visual or text
    answerable: bool
    truth: float | None
    closest: int | None
    goal: str
    steps: tuple[str, ...]
    total_steps: int
    demo_images: tuple[str, ...]  # blob sha256 of each key frame, in order (visual demos)
    observation_image: str | None
    missing: str = ""  # why the item cannot be shown to a model (frames the source did not provide)

    @property
    def step_progress(self) -> tuple[float, ...]:
        count = len(self.steps)
        return tuple(prompts.step_progress(self.modality, self.total_steps, count))


def progress_items(catalog: Any, manifest: ReleaseManifest) -> list[ProgressItem]:
    observations = catalog.get_records([e.id for e in manifest.records if e.kind == "observation"])
    demos = {r.id: r for r in catalog.get_records(sorted({o.payload["demo_id"] for o in observations}))}
    items = []
    for record in sorted(observations, key=lambda r: r.id):
        demo_record = demos[record.payload["demo_id"]]
        demo, seen = demo_record.payload, record.payload
        modality = demo["modality"]
        setting = "text" if modality == "text" else seen.get("view", "same")
        frames = sorted((int(b.role.removeprefix("demo_")), b.sha256) for b in demo_record.blobs
                        if b.role.startswith("demo_"))
        missing = []
        if record.payload.get("frame_missing") or not record.blobs:
            missing.append(f"observed frame {seen['frame']} was not provided")
        provided = {index for index, _ in frames}
        lacking = demo.get("missing_frames") or [name for index, name in enumerate(demo["steps"])
                                                 if index not in provided]
        if modality == "visual" and lacking:
            missing.append(f"demo key frame(s) {', '.join(lacking)} of demo {demo_record.id[:12]} were not provided")
        items.append(ProgressItem(
            key=record.id, source_row=seen.get("source_row"), trajectory=demo["trajectory_id"], setting=setting,
            modality=modality, answerable=bool(seen["answerable"]), truth=seen.get("progress_score"),
            closest=seen.get("closest_idx"), goal=demo["task_goal"], steps=tuple(demo["steps"]),
            total_steps=int(demo["total_steps"]), demo_images=tuple(sha for _, sha in frames),
            observation_image=record.blobs[0].sha256 if record.blobs else None, missing="; ".join(missing)))
    return items


def score_progress(items: list[ProgressItem], parsed: dict[str, Parsed]) -> Scoring:
    scoring = Scoring()
    for item in items:
        answer = parsed.get(item.key)
        if answer is None:
            continue
        value = answer.value
        ok = answer.method != "failed"
        predicted = value.get("score") if ok else None
        sample = ProgressSample(trajectory=item.trajectory, setting=item.setting, answerable=item.answerable,
                                truth=item.truth, predicted=predicted, parsed=ok, ref=value.get("ref"),
                                closest=item.closest, step_progress=item.step_progress)
        scoring.scored.append(sample)
        marks = sample_marks(sample.scored())
        per: dict[str, Any] = {"setting": item.setting, "answerable": item.answerable, "parsed": ok,
                               "abstained": bool(ok and predicted is None)}
        if marks["nse"] is not None:
            per["nse"] = marks["nse"]
            per["error"] = predicted - item.truth  # type: ignore[operator]
        if item.closest is not None and value.get("ref") is not None:
            per["ref_correct"] = value["ref"] == item.closest
        scoring.per_sample[item.key] = per
    report = progress_report(scoring.scored)
    scoring.tables = report
    for group, scores in report.groups.items():
        scoring.rows += [("NSE", group, scores.nse, scores.answerable), ("PRC", group, scores.prc,
                                                                         scores.prc_trajectories),
                         ("AFRR", group, scores.afrr, scores.answerable),
                         ("UDA", group, scores.uda, scores.unanswerable)]
    for metric, value in report.macro.items():
        scoring.rows.append((metric.upper(), "macro", value, 2))
    for setting, value in report.ref_accuracy.items():
        scoring.rows.append(("ref_accuracy", setting, value, report.ref_counted[setting]))
    micro = report.groups["micro"]
    scoring.headline = {"NSE": micro.nse, "PRC": micro.prc, "AFRR": micro.afrr, "UDA": micro.uda,
                        "NSE macro": report.macro["nse"], "PRC macro": report.macro["prc"],
                        "ref accuracy": report.ref_accuracy["all"]}
    return scoring


def baseline_answer(baseline: str, options: dict[str, Any], request: Request, rng: random.Random) -> str:
    """Random, constant or noisy-oracle progress (the truth plus Gaussian noise, a share of answerability
    flipped), in the strategy's tags."""
    item: ProgressItem = request.item
    value: float | None
    if baseline == "random":
        value = rng.uniform(0, 1)
    elif baseline == "constant":
        value = float(options.get("value", 50)) / 100
    else:
        flip = rng.random() < float(options.get("na_rate", 0))
        answerable = item.answerable != flip
        if not answerable:
            value = None
        else:
            truth = item.truth if item.truth is not None else rng.uniform(0, 1)
            value = min(1.0, max(0.0, truth + rng.gauss(0, float(options.get("noise", 0.1)))))
    score = "n/a" if value is None else f"{100 * value:.1f}%"
    if request.strategy == "direct":
        return f"<score>{score}</score>"
    ref = "n/a" if value is None else str(score_aligned_step(value, item.step_progress))
    return (f"<ref_think>{baseline} baseline</ref_think><ref>{ref}</ref>"
            f"<score_think>{baseline} baseline</score_think><score>{score}</score>")


class ProgressEvaluation(Evaluation):
    """The ``tasks.benchmark.Evaluation`` of PROGRESS-BENCH: no evaluation option of its own."""

    item_kind = "observation"
    strategies = prompts.STRATEGIES
    default_strategy = "direct"
    # ProgressLM App. B: temperature 0.6, top-p 0.9, top-k 50, 4,096 new tokens.
    generation = Generation(max_tokens=4096, temperature=0.6, top_p=0.9, top_k=50, seed=0)
    prompt_version = prompts.PROMPT_VERSION
    percent_metrics = True
    metric_order = ("NSE", "PRC", "AFRR", "UDA", "NSE macro", "PRC macro", "ref accuracy")  # ProgressLM Table 1
    lower_is_better = ("NSE", "AFRR", "NSE macro")  # errors (ProgressLM Table 1's arrows)

    def items(self, catalog: Any, manifest: ReleaseManifest, images: Any = None) -> list[Any]:
        return progress_items(catalog, manifest)

    def item_name(self, item: ProgressItem) -> str:
        where = f"row {item.source_row}" if item.source_row else f"trajectory {item.trajectory}"
        return f"observation {item.key[:12]} ({where})"

    def aliases(self, item: ProgressItem) -> list[str]:
        """The record id and the published row (``<file>:<line>``)."""
        return [item.key, item.source_row] if item.source_row else [item.key]

    def official_key(self, item: ProgressItem) -> str | None:
        """The published row, ``<file>:<line>`` (the files have no row id; a trajectory and frame may repeat)."""
        return item.source_row

    def messages(self, item: ProgressItem, settings: EvalSettings, image: Callable[[str], bytes], turn: int,
                 previous: list[str]) -> tuple[list[Message], int]:
        parts = prompts.progress_prompt(settings.strategy, item.modality, item.goal, list(item.steps),
                                        item.total_steps, [image(s) for s in item.demo_images],
                                        image(item.observation_image))  # type: ignore[arg-type]
        return [Message.user(*parts)], 1

    def parse(self, item: ProgressItem, text: str, settings: EvalSettings) -> tuple[dict[str, Any], bool]:
        answer = prompts.parse_progress_answer(text)
        return answer.as_dict(), answer.ok

    def judge_prompt(self, item: ProgressItem, answer: str) -> str:
        return prompts.judge_prompt(answer)

    def parse_judged(self, item: ProgressItem, reply: str) -> tuple[dict[str, Any], bool]:
        judged = prompts.parse_progress_answer(f"<score>{reply}</score>")
        return judged.as_dict(), judged.ok and "none" not in reply.lower()

    def score(self, settings: Settings, eval_settings: EvalSettings, items: list[Any], parsed: dict[str, Parsed],
              catalog: Any) -> Scoring:
        return score_progress(items, parsed)

    def report_tables(self, scoring: Scoring, label: str) -> str:
        from tasks.progress.report import progress_tables

        return progress_tables(scoring, label)

    def report_plots(self, scoring: Scoring, folder: Path, label: str) -> list[Path]:
        from tasks.progress.report import plot_progress

        return plot_progress(scoring, folder, label)

    def leaderboard_plots(self, runs: list[Any], catalog: Any, folder: Path) -> list[Path]:
        from tasks.progress.report import leaderboard_plots

        return leaderboard_plots(runs, catalog, folder)

    def report_summary(self, eval_settings: EvalSettings) -> list[tuple[str, str]]:
        return [("scoring", "ProgressLM's definitions (docs/fidelity.md)")]

    def baseline_answer(self, baseline: str, options: dict[str, Any], request: Request, rng: random.Random,
                        vocabulary: list[str]) -> str:
        return baseline_answer(baseline, options, request, rng)
