"""ViC-Bench in the harness formats (tasks/exporting): per task its Stage-1 (multiple choice) and Stage-2 (open
form) questions as configurations ``<task>_stage1`` / ``<task>_stage2``. Stage 3 is an agent loop whose every turn
depends on the simulator's reply, which no one-question harness can ask. lmms-eval scores Stage 1 per sample
(the task's choice rule); a Stage-2 answer is replayed in the task's simulator, which needs the instance, so it is
scored by ``benchwright evaluate --predictions --strategy stage2`` on the harness's output."""

from __future__ import annotations

import json
from typing import Any

from tasks.benchmark import HarnessFields, HarnessMapping
from tasks.vic.evaluation import VicItem


def vic_fields(item: VicItem, strategy: str) -> HarnessFields:
    payload = item.payload
    if strategy == "stage1":
        return HarnessFields(config=f"{item.task}_stage1", category=item.task,
                             answer=str(payload["stage_one_answer"]), options=dict(payload["stage_one_options"]),
                             extra={"task": item.task, "instance": item.instance_key})
    return HarnessFields(config=f"{item.task}_stage2", category=item.task, answer=json.dumps(payload["open_answer"]),
                         extra={"task": item.task, "instance": item.instance_key})


def vic_sample_metric(doc: dict[str, Any], response: str) -> dict[str, float | None]:
    """Stage 1 by ``metrics.score_choice`` (the rule ``evaluate`` applies), x100 as ``evaluate`` shows ACC.
    Stage 2 is ``unscored``: its answer is replayed in the simulator, which needs the instance."""
    from tasks.vic.metrics import score_choice

    return {"ACC": 100.0 * score_choice(doc["task"], doc["answer"], response)[0]["ACC"]}


ANSWER_INSTRUCTION = "Think step by step"  # every Stage-1 prompt ends with its answer instruction from here


def vic_choice_question(item: VicItem, strategy: str, question: str) -> str:
    """A Stage-1 question without its option list (counting lists the options in the text) and its closing answer
    instruction (the letter inside <answer>), for VLMEvalKit to list the options once and ask for the letter. The
    labels of option images ("Option A:") stay where they are, each beside its image's place."""
    options = item.payload["stage_one_options"]
    listed = {f"{letter}. {text}" for letter, text in options.items()}
    text = "\n".join(line for line in question.split("\n") if line not in listed)
    cut = text.rfind(ANSWER_INSTRUCTION)
    if cut < 0 or "<answer>" in text[:cut]:
        raise ValueError(f"ViC-Bench item {item.key[:12]}: its Stage-1 question does not end with its answer "
                         f"instruction ({ANSWER_INSTRUCTION!r}...)")
    return text[:cut].rstrip()


def vic_source(record: Any) -> str | None:
    """The generator an instance came from (a maze generator, a bundled image) and the seed of the run that drew
    it: instances are generated, not collected."""
    source = (record.payload.get("meta") or {}).get("source")
    name = source.get("generator") if isinstance(source, dict) else source
    seed = (record.producer.params or {}).get("seed")
    if not name:
        return f"{record.producer.task} (seed {seed})" if record.producer.task else None
    return str(name) + (f" ({record.producer.task}, seed {seed})" if seed is not None else "")


HARNESS = HarnessMapping(strategies=("stage1", "stage2"), fields=vic_fields, sample_metric=vic_sample_metric,
                         metrics=("ACC",), unscored=("stage2",), choice_question=vic_choice_question,
                         source=vic_source)
