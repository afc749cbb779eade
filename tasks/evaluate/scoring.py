"""From parsed answers to the papers' tables: per-sample values, per-subset metric rows, headline figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tasks.evaluate.explore_metrics import InstanceScores, Mode, explore_table, plan_instance, score_plans
from tasks.evaluate.items import ExploreItem, ProgressItem
from tasks.evaluate.progress_metrics import ProgressReport, ProgressSample, nse, progress_report
from tasks.evaluate.run import Parsed


@dataclass
class Scoring:
    per_sample: dict[str, dict[str, Any]] = field(default_factory=dict)  # item key -> metric values
    rows: list[tuple[str, str, float | None, int]] = field(default_factory=list)  # metric, subset, value, n
    headline: dict[str, float | None] = field(default_factory=dict)
    progress: ProgressReport | None = None
    explore: dict[str, Any] | None = None  # subset -> SubsetScores
    instances: list[InstanceScores] = field(default_factory=list)
    samples: list[ProgressSample] = field(default_factory=list)


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
        scoring.samples.append(sample)
        per: dict[str, Any] = {"setting": item.setting, "answerable": item.answerable, "parsed": ok,
                               "abstained": bool(ok and predicted is None)}
        if ok and item.answerable and predicted is not None and item.truth is not None:
            per["nse"] = nse(item.truth, predicted)
            per["error"] = predicted - item.truth
        if item.closest is not None and value.get("ref") is not None:
            per["ref_correct"] = value["ref"] == item.closest
        scoring.per_sample[item.key] = per
    report = progress_report(scoring.samples)
    scoring.progress = report
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
    scoring.instances = score_plans(plans, lambda pairs, aspect: scorer.score_many(pairs, aspect), mode)
    for instance in scoring.instances:
        scoring.per_sample[instance.key] = {"S_obj": instance.s_obj, "S_att": instance.s_att,
                                            "S_rel": instance.s_rel, "S_key": instance.s_key,
                                            "S_uni": instance.s_uni, "words": instance.words,
                                            "subset": instance.subset, **instance.details}
    table = explore_table(scoring.instances)
    scoring.explore = table
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
