"""Every benchmark's test release exported for a harness, answered by a stand-in model and run through the harness's
own code (tests/support/harnesses.py): what ``evaluate --predictions`` then reads is what the harness wrote.

One catalog holds the four releases (``CASES``); the answers are keyed by strategy and index, as the stand-in
models look them up: the evaluated strategy's are ``CASES``' (VLMEvalKit's multiple-choice rows: a letter, as its
prompt asks), ViC-Bench's Stage-2 rows get an open answer or none."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas.config import BlobSettings, CatalogSettings, ExportSettings, Settings
from storage import open_storage
from tasks.exporting.lmms_eval import export_lmms_eval
from tasks.exporting.rows import task_prefix
from tasks.exporting.vlmevalkit import export_vlmevalkit
from tests.support.harness_cases import CASES, items_of, letter_answer
from tests.support.harnesses import run_script


@dataclass
class HarnessRun:
    settings: Settings
    home: Path
    tags: dict[str, str] = field(default_factory=dict)  # benchmark -> release tag
    items: dict[str, list[Any]] = field(default_factory=dict)  # benchmark -> its release's items
    answers: dict[str, dict[str, str]] = field(default_factory=dict)  # strategy -> index -> the model's answer
    out: dict[str, Any] = field(default_factory=dict)  # what the harness reported (VLMEvalKit's runner's JSON)

    def prefix(self, name: str) -> str:
        return task_prefix(self.tags[name].split("@")[0])

    def direct(self, name: str, folder: Path) -> Path:
        """The answers to the evaluated strategy's questions of ``name``'s release as JSONL of key and answer."""
        strategy = CASES[name][1]
        keys = {item.key for item in self.items[name] if not item.missing}
        path = folder / f"direct-{name}.jsonl"
        path.write_text("".join(json.dumps({"key": key, "answer": answer}) + "\n"
                                for key, answer in self.answers.get(strategy, {}).items() if key in keys))
        return path


def harness_settings(home: Path) -> Settings:
    return Settings(catalog=CatalogSettings(path=home / "catalog.duckdb"),
                    blobs=BlobSettings(uri=f"file://{home}/blobs"), export=ExportSettings(folder=home / "exp"))


def _answered(run: HarnessRun, multiple_choice_letters: bool) -> None:
    """Every benchmark's release built and answered (``run.answers``)."""
    for name, (build, strategy, answer_of) in CASES.items():
        run.tags[name] = build(run.settings)
        plugin, run.items[name] = items_of(run.settings, run.tags[name])
        mapping = plugin.harness_mapping()
        for n, item in enumerate(i for i in run.items[name] if not i.missing):
            options = mapping.fields(item, strategy).options
            answer = letter_answer(name, item, n) if options and multiple_choice_letters else answer_of(item, n)
            run.answers.setdefault(strategy, {})[item.key] = answer
            if name == "vic":
                run.answers.setdefault("stage2", {})[item.key] = "<answer>left</answer>" if n % 2 == 0 else ""


def lmms_eval_run(home: Path, target: Path) -> HarnessRun:
    """lmms-eval's own command line (installed in ``target``) over every release's exported task folder (one run,
    every group), twice: as a chat model (``home/logs`` holds its ``--log_samples`` files and results,
    ``home/chat.jsonl`` the messages it received) and as a simple one (``--force_simple``: ``home/logs-simple``,
    ``home/simple.jsonl``); tests/support/lmms_eval_run.py."""
    run = HarnessRun(harness_settings(home), home)
    _answered(run, multiple_choice_letters=False)
    storage = open_storage(run.settings)
    for name, tag in run.tags.items():
        export_lmms_eval(storage.catalog, storage.blobs, tag, home / "tasks" / name)
    (home / "answers.json").write_text(json.dumps(run.answers))
    groups = ",".join(run.prefix(name) for name in run.tags)
    for mode, logs, extra in (("chat", "logs", []), ("simple", "logs-simple", ["--force_simple"])):
        run_script("lmms_eval_run.py", [str(home / "answers.json"), str(home / f"{mode}.jsonl"), "--tasks", groups,
                                        "--include_path", str(home / "tasks"), "--log_samples", "--output_path",
                                        str(home / logs), "--batch_size", "1", "--verbosity", "WARNING", *extra],
                   target, home)
    return run


def vlmevalkit_run(home: Path, target: Path, formats: tuple[str, ...] = ("xlsx", "tsv")) -> HarnessRun:
    """VLMEvalKit's own code (installed in ``target``) over every release's exported TSVs
    (tests/support/vlmevalkit_run.py): ``run.out`` holds, per dataset, its class, prompts, loaded cells, exact-match
    hits and prediction files."""
    run = HarnessRun(harness_settings(home), home)
    _answered(run, multiple_choice_letters=True)
    storage = open_storage(run.settings)
    for tag in run.tags.values():
        export_vlmevalkit(storage.catalog, storage.blobs, tag, home / "LMUData")
    configs = sorted(str(path) for path in (home / "LMUData").glob("*.json"))
    job = {"configs": configs, "model": "bwmodel", "work_dir": str(home / "outputs"), "formats": list(formats),
           "answers": run.answers}
    (home / "job.json").write_text(json.dumps(job))
    run_script("vlmevalkit_run.py", [str(home / "job.json"), str(home / "out.json")], target, home)
    run.out = json.loads((home / "out.json").read_text())
    return run


def benchmark_of(run: HarnessRun, dataset: str) -> str:
    """The benchmark whose release a harness dataset or task name belongs to."""
    return next(name for name in run.tags if dataset.startswith(run.prefix(name) + "_") or
                dataset == run.prefix(name))

