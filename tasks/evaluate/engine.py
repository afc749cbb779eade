"""Thin Prefect tasks over the evaluation stages; each opens storage from the settings it is given."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from schemas import EvaluationRun, MetricRow, Prediction, Status, make_record
from schemas.config import Settings
from schemas.releases import ReleaseManifest
from schemas.text import one_line
from storage import open_storage
from storage.output import OutputFolder
from storage.releases import load_release
from tasks.benchmark import BenchmarkPlugin
from tasks.evaluate.answer_files import HarnessContext, nothing_answered, read_prediction_files
from tasks.evaluate.answerers import Answerer, build_answerer, parse_model_spec
from tasks.evaluate.items import load_items
from tasks.evaluate.run import (
    GENERATION_FIELDS,
    Collected,
    EvalSettings,
    collect_answers,
    eval_producer,
    eval_settings,
    parse_answers,
    requests_for,
    run_key,
)
from tasks.evaluation_contract import Evaluation
from tasks.quarantine import quarantine
from tasks.sources.door import SourceFolder


@dataclass
class EvaluationPlan:
    manifest: ReleaseManifest
    plugin: BenchmarkPlugin  # the release's benchmark, looked up once
    items: list[Any]
    answerer: Answerer | None  # None when the answers come from a file
    label: str  # the model as reports name it
    settings: EvalSettings
    key: str
    predictions: tuple[str, ...] = ()  # the answers files, when the answers come from files
    predictions_sha256: tuple[str, ...] = ()  # each answers file's content, which the run key names
    released: int = 0  # the release's items that can be shown to a model (--limit aside): what a full run answers
    release_items: list[Any] = field(default_factory=list)  # every item of the release, as its exports hold them

    @property
    def benchmark(self) -> str:
        return self.plugin.name

    @property
    def evaluation(self) -> Evaluation:
        return self.plugin.evaluation

    @property
    def files(self) -> str:
        """The answers files as reports name them."""
        return ", ".join(self.predictions)

    def harness_context(self) -> HarnessContext:
        """How its answers files map harness rows back to items: the release's export, built when first needed."""
        from tasks.exporting.predictions import export_index

        manifest = self.manifest
        return HarnessContext(lambda: export_index(self.plugin, manifest.tag, manifest.name, self.release_items),
                              self.settings.strategy)


def prepare_evaluation(settings: Settings, release: str, model: str | None, strategy: str | None = None,
                       predictions: str | Sequence[str] | None = None, limit: int | None = None,
                       concurrency: int | None = None,
                       options: dict[str, Any] | None = None, judge_fallback: bool = False,
                       **given: Any) -> EvaluationPlan:
    """The release's items, the answerer the model spec names and the run's key. ``given`` overrides the paper's
    decoding (``temperature``, ``top_p``, ``top_k``, ``max_tokens``, ``seed``); the benchmark's own evaluation
    options come in ``options`` (any other name in ``given`` is taken as one too), with what the benchmark adds
    from the configuration (``Evaluation.options``)."""
    storage = open_storage(settings)
    manifest = load_release(storage.catalog, release)
    plugin, every_item = load_items(storage.catalog, manifest, storage.blobs.get)
    items = every_item[:limit] if limit else every_item
    released = sum(not item.missing for item in every_item)
    evaluation = plugin.evaluation
    decoding = {k: v for k, v in given.items() if k in GENERATION_FIELDS}
    named = {k: v for k, v in given.items() if k not in GENERATION_FIELDS}
    chosen = eval_settings(plugin.name, strategy, options=evaluation.options(settings, {**named, **(options or {})}),
                           judge_fallback=judge_fallback, **decoding)
    files = (predictions,) if isinstance(predictions, str) else tuple(predictions or ())
    if files:
        digests = tuple(hashlib.sha256(door.read_bytes(name)).hexdigest()
                        for door, name in (SourceFolder.of_file(path) for path in files))
        label = model or f"file:{Path(files[0]).stem}" + (f"+{len(files) - 1}" if len(files) > 1 else "")
        digest = digests[0] if len(files) == 1 else hashlib.sha256(" ".join(digests).encode()).hexdigest()
        key = run_key(manifest.tag, manifest.sha256(), f"file:{label}", chosen, digest)
        return EvaluationPlan(manifest, plugin, items, None, label, chosen, key, files, digests, released, every_item)
    if not model:
        raise ValueError("name a model (--model) or a file of answers (--predictions)")
    spec = parse_model_spec(model)
    if concurrency:
        spec = replace(spec, options={**spec.options, "max_concurrency": concurrency})
    answerer = build_answerer(spec, settings, storage.catalog, items, evaluation)
    key = run_key(manifest.tag, manifest.sha256(), answerer.fingerprint(), chosen)
    return EvaluationPlan(manifest, plugin, items, answerer, answerer.label, chosen, key, released=released,
                          release_items=every_item)


def read_answers_files(plan: EvaluationPlan) -> tuple[Collected, list[tuple[str, int, str, str]]]:
    """The answers of the plan's files as one run, and the lines that could not be used; an error naming every
    file and why when no item got an answer (a run that scores nothing must not pass for one)."""
    collected, problems = read_prediction_files(plan.evaluation, list(plan.predictions), plan.items,
                                                list(plan.predictions_sha256), plan.harness_context())
    return collected, problems


def check_predictions(settings: Settings, release: str, strategy: str | None, predictions: Sequence[str],
                      options: dict[str, Any] | None = None) -> None:
    """Before a flow runs: an error (one line, naming each file and why) when the files answer no item of the
    release, as the evaluation itself would stop."""
    plan = prepare_evaluation(settings, release, None, strategy, predictions, options=options)
    collected, problems = read_answers_files(plan)
    why = nothing_answered(collected, problems, list(plan.predictions), plan.manifest.tag)
    if why:
        raise ValueError(why)


def _listed(keyed: list[tuple[int, str]], shown: int = 10) -> str:
    """The first ``shown`` keys with their lines, each on the line it is printed on (a key is the answers file's
    text: it may hold newlines or escape sequences), and how many more."""
    listed = ", ".join(f"{one_line(key, 80)} (line {n})" for n, key in keyed[:shown])
    return listed + (f" and {len(keyed) - shown:,} more" if len(keyed) > shown else "")


def gather_answers(settings: Settings, plan: EvaluationPlan, show_progress: bool = False) -> Collected:
    """The model's answers (cached ones first; fresh ones cached as they arrive), or the file's."""
    storage = open_storage(settings)
    if plan.predictions:
        collected, problems = read_answers_files(plan)
        collected.problems = [f"{path}:{n}: {why}" for path, n, _, why in problems]
        producer = eval_producer("evaluate-read-predictions", None, plan.label, plan.settings, plan.key)
        storage.catalog.put_records([
            quarantine(benchmark=plan.benchmark, source=path, locator=f"line {n}", reason=why, raw=line,
                       producer=producer) for path, n, line, why in problems])
        why = nothing_answered(collected, problems, list(plan.predictions), plan.manifest.tag)
        if why:  # after the refused lines are stored: `records list --status quarantined` shows each
            raise ValueError(why)
        return collected
    assert plan.answerer is not None
    bar = None
    if show_progress:
        from tqdm import tqdm

        total = sum(requests_for(plan.evaluation, i, plan.settings) for i in plan.items)
        bar = tqdm(total=total, desc=f"asking {plan.label}", unit="answer", file=sys.stderr, dynamic_ncols=True,
                   disable=None)  # a bar on a terminal only, none in a log
    try:
        collected = collect_answers(plan.evaluation, plan.items, plan.answerer, plan.settings, storage.blobs.get,
                                    (lambda n: bar.update(n)) if bar is not None else None)  # type: ignore[misc]
    finally:
        if bar is not None:
            bar.close()
    return collected


@dataclass
class EvaluationResult:
    key: str
    record_id: str
    metrics: dict[str, Any]
    counts: dict[str, int]
    scoring: Any
    problems: list[str]
    predictions: list[dict[str, Any]] = field(default_factory=list)  # the stored predictions' payloads


def score_and_store(settings: Settings, plan: EvaluationPlan, collected: Collected, run_id: str | None = None,
                    judge: str | None = None, report_dir: str | None = None) -> EvaluationResult:
    """Parse (rules, then the judge), score with the papers' metrics, and store predictions, metric rows and the
    evaluation record (``store_run``), with every item that has no answer quarantined."""
    from tasks.models.registry import load_backend

    storage = open_storage(settings)
    catalog = storage.catalog
    judge_backend = None
    if plan.settings.judge_fallback:
        if judge:
            spec = parse_model_spec(judge)
            if spec.kind == "baseline":
                raise ValueError(f"--judge {judge}: the judge must be a chat model, not a baseline")
            judge_backend = build_answerer(spec, settings, catalog, []).backend  # type: ignore[attr-defined]
        else:
            judge_backend = load_backend(settings, "chat", cache=catalog)
    evaluation = plan.evaluation
    parsed = parse_answers(evaluation, plan.items, collected, plan.settings, judge_backend)  # type: ignore[arg-type]
    scoring = evaluation.score(settings, plan.settings, plan.items, parsed, catalog)
    producer = eval_producer("evaluate", run_id, plan.label, plan.settings, plan.key)
    benchmark = plan.benchmark
    tag = plan.manifest.tag
    origin = "file" if plan.predictions else "model"
    predictions = [
        make_record(Prediction(release=tag, item_id=item.key, official_key=evaluation.official_key(item),
                               model=plan.label, prompt_variant=plan.settings.variant,
                               raw_output=collected.answers[item.key], parsed=parsed[item.key].value,
                               parse_method=parsed[item.key].method, run=plan.key, origin=origin,
                               turns=collected.turns.get(item.key, []) if len(collected.turns.get(item.key, [])) > 1
                               else [], scores=scoring.per_sample.get(item.key, {})),
                    benchmark=benchmark, producer=producer, parents=[item.key])
        for item in plan.items if item.key in parsed]
    metric_rows = [make_record(MetricRow(release=tag, model=plan.label, metric=metric, value=value, subset=subset,
                                         n=n, run=plan.key), benchmark=benchmark, producer=producer)
                   for metric, subset, value, n in scoring.rows]
    failures = quarantined_items(collected, benchmark, f"evaluate {plan.label}", producer)
    counts = {"items": len(plan.items), "scored": len(parsed), "asked": collected.asked,
              "from cache": collected.from_cache, "quarantined": len(failures),
              # lines of a predictions file that cannot be used (no key, not JSON, NaN, a second answer): each
              # is stored as a quarantined input; the items they would have answered count as skipped
              "lines quarantined": len(collected.problems),
              # answers to items of another release (Medium answers against a Short release): listed, not errors
              "not in this release": len(collected.elsewhere),
              "empty answers": len(collected.empty),  # their items count as not answered (skipped)
              "other strategy's": len(collected.unasked),  # answers to another strategy's questions: not scored
              "released": plan.released,  # what a full run answers: more than "scored" makes this run partial
              "failed requests": len(collected.failed), "frames missing": len(collected.unshowable),
              "skipped": len(collected.skipped), "unparsed": sum(p.method == "failed" for p in parsed.values()),
              "judged": sum(p.method == "judge" for p in parsed.values())}
    run = make_record(
        EvaluationRun(key=plan.key, release=tag, release_sha256=plan.manifest.sha256(), benchmark=plan.benchmark,
                      model=plan.label, model_fingerprint=(plan.answerer.fingerprint() if plan.answerer else
                                                           f"file:{plan.files}"),
                      strategy=plan.settings.variant,
                      settings={**plan.settings.as_dict(), "model_spec": plan.label,
                                "predictions": list(plan.predictions) or None, "judge": judge},
                      metrics=scoring.headline, counts=counts, report=report_dir),
        benchmark=benchmark, producer=producer, parents=[], status=Status.ACCEPTED,
        status_reason="evaluation finished" + (f" with {len(failures)} item(s) quarantined" if failures else "")
        + (f"; {partial(counts, tag)}" if partial(counts, tag) else ""))
    store_run(catalog, plan, [*predictions, *metric_rows, run], failures, set(parsed), run_id)
    return EvaluationResult(plan.key, run.id, scoring.headline, counts, scoring, _problems(plan, collected, counts),
                            [p.payload for p in predictions])


def partial(counts: dict[str, int], release: str) -> str:
    """What a run that answered only part of the release says of itself ("" for a full run): its figures cover the
    items answered and do not rank with a full run's."""
    released, scored = counts.get("released"), counts.get("scored", 0)
    if not released or scored >= released:
        return ""
    return (f"partial run: {scored} of the {released} items of {release} answered; its figures are over those "
            f"{scored} only and do not compare with a full run's")


def _problems(plan: EvaluationPlan, collected: Collected, counts: dict[str, int]) -> list[str]:
    """What the report and the command list: the run's coverage first, then each file's lines and answers it could
    not use, failed requests, unshowable and unanswered items."""
    tag = plan.manifest.tag
    names = {item.key: plan.evaluation.item_name(item) for item in plan.items}
    notes = []
    for path, mine in (collected.by_file or {plan.files: collected}).items():
        notes += [f"{path}: {len(mine.elsewhere)} answer(s) to items not in {tag}, not scored: "
                  + _listed(mine.elsewhere)] if mine.elsewhere else []
        notes += [f"{path}: {len(mine.unasked)} answer(s) to the {mine.unasked[0][2]} questions, not "
                  f"{plan.settings.strategy}'s, not scored (evaluate them with --strategy {mine.unasked[0][2]}): "
                  + _listed([(n, key) for n, key, _ in mine.unasked])] if mine.unasked else []
        notes += [f"{path}: {len(mine.empty)} empty answer(s), their items not answered: "
                  + _listed(mine.empty)] if mine.empty else []
    return [*([partial(counts, tag)] if partial(counts, tag) else []),
            *(one_line(problem, 2000) for problem in collected.problems), *notes,
            *[f"{names[key]}: request failed: {why}" for key, why in collected.failed.items()],
            *[f"quarantined {why}" for why in collected.unshowable.values()],
            *[f"{names[key]}: not answered: {why}" for key, why in list(collected.skipped.items())[:20]]]


def store_run(catalog: Any, plan: EvaluationPlan, made: list[Any], failures: list[Any], answered: set[str],
              run_id: str | None) -> None:
    """Store a run's records and quarantined items; what an earlier run of the same key made and this one did not
    is superseded, and so is an earlier quarantine of an item answered now or quarantined now for another
    reason."""
    catalog.put_records([*made, *failures], run_id=run_id)
    new_ids = {r.id for r in [*made, *failures]}
    for kind in ("prediction", "metric", "evaluation"):
        field_name = "key" if kind == "evaluation" else "run"
        older = [r.id for r in catalog.find_records(kind=kind, payload_equals={field_name: plan.key})
                 if r.id not in new_ids and r.status != Status.SUPERSEDED]
        catalog.supersede(older, reason=f"evaluated again ({run_id or 'local'})")
    again = {r.payload["locator"] for r in failures}
    stale = [r.id for r in catalog.find_records(kind="quarantined_input", status=Status.QUARANTINED,
                                                payload_equals={"source": f"evaluate {plan.label}"})
             if r.payload["locator"] in answered or (r.payload["locator"] in again and r.id not in new_ids)]
    catalog.set_status(stale, Status.SUPERSEDED, reason=f"answered or quarantined again by a later run "
                                                        f"({run_id or 'local'})")
    # the same failure as an earlier run's, whose record a run in between superseded: stored once, so revived
    revived = [r.id for r in catalog.get_records([f.id for f in failures]) if r.status == Status.SUPERSEDED]
    catalog.set_status(revived, Status.QUARANTINED, reason=f"quarantined again ({run_id or 'local'})")


def quarantined_items(collected: Collected, benchmark: str, source: str, producer: Any) -> list[Any]:
    """One quarantined record per item that has no answer: its request failed (with the last body the server
    sent), or the source lacks its frames. The locator is the item's key, so a later run that answers the item
    supersedes the record."""
    why_not = {**{key: f"request failed: {why}" for key, why in collected.failed.items()}, **collected.unshowable}
    return [quarantine(benchmark=benchmark, source=source, locator=key, reason=why,
                       raw=collected.failed_raw.get(key, ""), producer=producer) for key, why in why_not.items()]


def report_folder(settings: Settings, plan: EvaluationPlan) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{plan.label}-{plan.settings.variant}")[:80]
    return (Path(settings.export.folder) / "evaluations" / f"{plan.manifest.name}-v{plan.manifest.version}"
            / f"{safe}-{plan.key[:8]}")


def report_evaluation(settings: Settings, plan: EvaluationPlan, result: EvaluationResult,
                      out_dir: str | None = None) -> dict[str, str]:
    """Markdown and HTML with the papers' tables and the plots; the Markdown itself under ``artifact`` (the flow
    shows it as a Prefect artifact)."""
    from tasks.evaluate import report

    folder = Path(out_dir) if out_dir else report_folder(settings, plan)
    evaluation = plan.evaluation
    tables = evaluation.report_tables(result.scoring, plan.label)
    coverage = partial(result.counts, plan.manifest.tag)
    if coverage:  # under the headline: the figures above it are over part of the release
        tables = f"**{coverage[0].upper()}{coverage[1:]}.**\n\n{tables}"
    plots = evaluation.report_plots(result.scoring, folder, plan.label)
    summary = [("release", f"{plan.manifest.tag} (manifest {plan.manifest.sha256()[:12]})"),
               ("model", plan.label), ("strategy", plan.settings.variant),
               ("generation", ", ".join(f"{k}={v}" for k, v in plan.settings.generation.as_dict().items())),
               ("run key", plan.key), *[(k, str(v)) for k, v in result.counts.items()]]
    summary += [("answers files", plan.files)] if plan.predictions else []
    summary += evaluation.report_summary(plan.settings)
    out = OutputFolder(folder)
    answers = out.path("predictions.jsonl")  # one line per item, for any tool that reads JSONL
    with out.open("predictions.jsonl") as handle:
        for payload in result.predictions:
            handle.write(json.dumps({k: payload.get(k) for k in ("item_id", "official_key", "raw_output", "turns",
                                                                  "parsed", "parse_method", "scores")},
                                    ensure_ascii=False) + "\n")
    scale = (lambda v: report.pct(v)) if evaluation.percent_metrics else (lambda v: report.num(v))
    headline = [(name, scale(value)) for name, value in result.metrics.items()]
    md, html_path, markdown = report.write_report(folder, title=f"{plan.label} on {plan.manifest.tag}",
                                                  headline=headline, summary=summary, tables=tables, plots=plots,
                                                  problems=result.problems)
    artifact = {"key": re.sub(r"[^a-z0-9-]", "-", f"eval-{plan.key[:16]}"), "markdown": markdown,
                "description": f"{plan.label} on {plan.manifest.tag}"}
    return {"markdown": str(md), "html": str(html_path), "predictions": str(answers),
            **{p.stem: str(p) for p in plots}, "artifact": artifact, "headline": dict(headline)}
