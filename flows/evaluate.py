"""The evaluation flow: a frozen release, a model (or a file of its answers) -> parsed, scored, stored, reported."""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NONE

from flows.run_labels import label_run, run_tag
from flows.run_labels import report_evaluation as report_run
from flows.runtime import RESULTS_IN_THE_CATALOG, current_flow_run_id, recorded_run
from schemas.config import Settings, load_settings
from tasks.evaluate import engine
from tasks.evaluate.engine import report_folder

# The engine's steps as Prefect tasks: plain functions in tasks/evaluate/engine.py, orchestrated here.
prepare_evaluation = task(engine.prepare_evaluation, name="prepare-evaluation", cache_policy=NONE)
gather_answers = task(engine.gather_answers, name="ask-model", cache_policy=NONE)
score_and_store = task(engine.score_and_store, name="score-evaluation", cache_policy=NONE)
report_evaluation = task(engine.report_evaluation, name="evaluation-report", cache_policy=NONE)


def _run_name() -> str:
    """``evaluate-<release>-<model>`` (``-predictions`` for a file of answers), as the UI lists the run."""
    from prefect.runtime import flow_run

    given = flow_run.parameters
    model = run_tag("model", given.get("model") or "predictions").split(":", 1)[1]
    return f"evaluate-{given.get('release')}-{model}"


@flow(name="benchwright-evaluate", flow_run_name=_run_name, persist_result=RESULTS_IN_THE_CATALOG)
@recorded_run
def evaluate_release(settings: Settings | None = None, release: str = "benchwright-progress",
                     model: str | None = None, strategy: str | None = None,
                     options: dict[str, Any] | None = None, predictions: str | list[str] | None = None,
                     judge_fallback: bool = False, judge: str | None = None, limit: int | None = None,
                     temperature: float | None = None, top_p: float | None = None, top_k: int | None = None,
                     max_tokens: int | None = None, seed: int | None = None, out_dir: str | None = None,
                     concurrency: int | None = None, show_progress: bool = False) -> dict[str, Any]:
    """Evaluate ``model`` (a spec: ``openai:NAME@URL``, ``transformers:PATH``, ``chat``, ``baseline:oracle``...)
    on ``release`` (``name`` or ``name@version``), or score the answers in ``predictions`` (one file or several,
    read as one run: JSONL of key and answer, a harness's files). Decoding defaults to the paper's settings;
    ``strategy`` to the release's benchmark's default; ``options`` are the benchmark's own evaluation options (an
    unknown one is an error that lists them)."""
    settings = settings or load_settings()
    run_id = current_flow_run_id()
    plan = prepare_evaluation(settings, release, model, strategy, predictions, limit, concurrency,
                              options=options, judge_fallback=judge_fallback,
                              temperature=temperature, top_p=top_p, top_k=top_k, max_tokens=max_tokens, seed=seed)
    label_run(["evaluate", run_tag("benchmark", plan.benchmark), run_tag("release", plan.manifest.tag),
               run_tag("model", plan.label), run_tag("strategy", plan.settings.variant)])
    collected = gather_answers(settings, plan, show_progress)
    folder = out_dir or str(report_folder(settings, plan))
    result = score_and_store(settings, plan, collected, run_id, judge, folder)
    files = report_evaluation(settings, plan, result, folder)
    create_markdown_artifact(**files.pop("artifact"))
    shown = files.pop("headline")
    summary = {"release": plan.manifest.tag, "benchmark": plan.benchmark, "model": plan.label,
               "strategy": plan.settings.variant, "key": plan.key,
               "evaluation": result.record_id, "metrics": result.metrics, "counts": result.counts,
               "problems": result.problems, "report": files, "options": plan.settings.options,
               "how scored": dict(plan.evaluation.report_summary(plan.settings))}
    report_run(summary, shown)
    return summary
