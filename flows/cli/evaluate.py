"""``benchwright evaluate``: a model (or a file of its answers) scored on a frozen release, by the
``benchwright-evaluate`` flow. What differs per benchmark (its strategies, its decoding settings) its help takes
from the registry when it is shown."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

import flows.cli.terminal as terminal
from flows.cli.printers import print_evaluation


def benchmark_defaults() -> str:
    """A paragraph per registered benchmark: its strategies (its default marked) and its paper's decoding."""
    from tasks import benchmarks

    lines = ["Per benchmark, its strategies and the decoding it asks with by default:"]
    for plugin in benchmarks.every():
        evaluation = plugin.evaluation
        strategies = ", ".join(s + (" (default)" if s == evaluation.default_strategy else "")
                               for s in evaluation.strategies)
        generation = evaluation.generation
        top_k = "unset" if generation.top_k is None else generation.top_k
        lines.append(f"{plugin.title}: {strategies}; temperature {generation.temperature:g}, top-p "
                     f"{generation.top_p:g}, top-k {top_k}, max-tokens {generation.max_tokens}.")
    return "\n\n".join(lines)


class BenchmarkDefaultsCommand(TyperCommand):
    """A command whose help ends with each benchmark's defaults (``benchmark_defaults``), worked out only when the
    help is shown: they come from every benchmark's evaluation, which a command's start should not import."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.epilog = benchmark_defaults()
        super().format_help(ctx, formatter)


def evaluate(
    release: Annotated[str, typer.Option(help="The release, NAME or NAME@VERSION (newest version when omitted).")],
    model: Annotated[str | None, typer.Option(help=(
        "Who answers: openai:NAME@URL (vLLM, SGLang, OpenAI; options after ?, e.g. base_url and max_concurrency, "
        "as in the example above), transformers:CHECKPOINT_DIR, chat (the \\[models.chat] role), or a baseline: "
        "baseline:random, baseline:constant?value=50, baseline:oracle?noise=0.1 (the truth plus noise). With "
        "--predictions: the name to file the answers under."))] = None,
    strategy: Annotated[str | None, typer.Option(help=(
        "How the benchmark asks; default: its paper's (each benchmark's are listed below). docs/fidelity.md maps "
        "every official name."))] = None,
    option: Annotated[list[str] | None, typer.Option(metavar="KEY=VALUE", help=(
        "KEY=VALUE: an evaluation option of the release's benchmark (repeatable), such as a stepwise strategy's "
        "segments or how it scores; an unknown key is an error that lists the benchmark's options."))] = None,
    predictions: Annotated[list[Path] | None, typer.Option(help=(
        "Score answers produced elsewhere instead of asking a model: JSONL lines {\"key\": ..., \"answer\": ...}, "
        "the key any name of an item (its record id, the identifier the benchmark's own files give it); or a "
        "benchmark's own harness files as they are; or what an evaluation harness wrote for a `release export "
        "--format vlmevalkit` or `lmms-eval` export, keyed by its index: VLMEvalKit's <model>_<dataset>.xlsx, "
        ".tsv or .json (index, prediction; an empty prediction is reported with its row) or lmms-eval's "
        "--log_samples file (<date_id>_samples_<task>.jsonl, read by its task and doc_id). Repeat it for several "
        "files (a harness writes one per configuration): they are scored as one run, an item answered twice "
        "refused the second time; a run that answers part of the release says so (partial), and files that "
        "answer no item are an error."),
        exists=True, dir_okay=False)] = None,
    judge_fallback: Annotated[bool, typer.Option("--judge-fallback", help=(
        "Answers the rules cannot read go to an LLM judge (--judge, default the \\[models.chat] role).")
    )] = False,
    judge: Annotated[str | None, typer.Option(help="Model spec of the judge for --judge-fallback.")] = None,
    limit: Annotated[int | None, typer.Option(help="Evaluate only the first N items (a smoke test).")] = None,
    concurrency: Annotated[int | None, typer.Option(help=(
        "Requests in flight at once (an OpenAI-compatible server; default 8, or max_concurrency in the spec)."))]
    = None,
    temperature: Annotated[float | None, typer.Option(help="Default: the benchmark's (below).")] = None,
    top_p: Annotated[float | None, typer.Option(help="Default: the benchmark's (below).")] = None,
    top_k: Annotated[int | None, typer.Option(help=(
        "Default: the benchmark's (below); -1 leaves it unset (OpenAI itself refuses top_k)."))] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Default: the benchmark's (below).")] = None,
    seed: Annotated[int | None, typer.Option(help="Sampling seed sent with every request (default 0).")] = None,
    out: Annotated[Path | None, typer.Option(help=(
        "Report folder; default: a folder per run below <export folder>/evaluations/, named by release, model, "
        "strategy and key."))] = None,
) -> None:
    """Evaluate a model on a frozen release with the paper's metrics, store every prediction and metric in the
    catalog, and write a report (Markdown, HTML, PNG plots).

    Each benchmark scores as its paper does, per subset and setting, with the model roles its scoring needs
    (offline by default; configure them for the paper's own judges). Answers are cached: run the same command
    again after an interruption and only what was missing is asked.

    Example: --model "openai:qwen?base_url=http://gpu:8000/v1&max_concurrency=32".
    """
    from flows.runtime import at_the_terminal, prepare_prefect

    settings = terminal.settings()
    prepare_prefect(settings)
    from flows.evaluate import evaluate_release

    options = terminal.key_values(option, "--option")
    check_before_a_flow(release, out, predictions, strategy, options)
    with terminal.failures_as_messages(), at_the_terminal(settings):
        result = evaluate_release(settings, release=release, model=model, strategy=strategy, options=options,
                                  predictions=[str(path) for path in predictions] if predictions else None,
                                  judge_fallback=judge_fallback, judge=judge, limit=limit, temperature=temperature,
                                  top_p=top_p, top_k=top_k, max_tokens=max_tokens, seed=seed,
                                  out_dir=str(out) if out else None, concurrency=concurrency,
                                  show_progress=True)
    print_evaluation(result)


def check_before_a_flow(release: str, out: Path | None, predictions: list[Path] | None, strategy: str | None = None,
                        options: dict[str, Any] | None = None) -> None:
    """An unknown release, an --out that cannot be a folder, a --predictions file that cannot be read at all or
    files that answer no item of the release are one line before a flow runs (inside one, Prefect logs the task's
    traceback first, and a run that scored nothing must not pass for one)."""
    from storage.output import OutputFolder
    from storage.releases import load_release
    from tasks.evaluate.answer_files import answer_rows
    from tasks.evaluate.engine import check_predictions
    from tasks.sources.door import SourceFolder

    with terminal.failures_as_messages():
        load_release(terminal.storage().catalog, release)
        if out:
            OutputFolder(out)
        for path in predictions or []:
            answer_rows(*SourceFolder.of_file(path))
        if predictions:
            check_predictions(terminal.settings(), release, strategy, [str(path) for path in predictions], options)


