"""ViC-Bench's metrics (Sec. IV-B; the seed lost Eqs. 6-10, so each reading is written here and in
docs/fidelity.md):

- **ACC**: the share of items answered right, x100. Stage 1: the chosen letter equals the right one (read by
  rules). Stages 2-3: the task's rule (maze: every move legal and the walk ends at E; jigsaw: all six pairs right;
  embodied: the key actions equal the plan's; counting: all four regions within the tolerance).
- **Recall_o**: the task's share of key step-wise components the final answer achieves (maze: how far along the
  true path the legal endpoint lies; jigsaw: right pairs / 6; embodied: verified actions / predicted steps;
  counting: right regions / 4), averaged over items, x100.
- **Legality**: legal steps / steps of an answer, averaged over items, x100. Stage 2: the answer's steps replayed in
  the simulator; Stage 3: the actions the model sent during the loop (an answer with no step: 0). Counting has none.
- **ThinkGain** (Stage 3): Recall_o of the final answer minus Recall_o of the state before the first retrospection
  (A_b, the task's rule: the maze's walk before the first revisit, each patch's or region's first use, the plan
  before the first repeated navigation or pick-up), averaged over items, x100. No retrospection: 0. A difference,
  not a ratio: the paper's tables hold negative values and zeros where the ratio would be undefined.
- An answer the rules cannot read scores 0 on every metric and stays in every denominator (``UNPARSED_COUNTS``);
  the paper's tables show some models' items dropped instead, which would flatter a model that fails to answer.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tasks.evaluate.scoring import Scoring
from tasks.vic.task import VicInstance, tagged

UNPARSED_COUNTS = True  # an unreadable answer is wrong and counted; False would drop it from the averages
METRICS = {1: ("ACC",), 2: ("ACC", "Recall_o", "Legality"), 3: ("ACC", "Recall_o", "ThinkGain", "Legality")}


def score_choice(task_name: str, right: str, reply: str) -> tuple[dict[str, Any], bool]:
    """A Stage-1 reply by the task's choice rule against the right letter: the one per-sample rule of Stage 1
    (``evaluate`` and the harness exports both call it)."""
    from tasks.vic.suite import task

    letter = task(task_name).parse_choice(reply)
    return {"choice": letter, "right": right, "ACC": float(letter == right)}, letter is not None


def score_open(task_name: str, instance: VicInstance, reply: str) -> tuple[dict[str, Any], bool]:
    """A Stage-2 answer: parsed by the task's rules, replayed and scored by the task."""
    from tasks.vic.suite import task

    chosen = task(task_name)
    answer = chosen.parse_open(instance, reply)
    scored = chosen.score_open(instance, answer)
    value = {"answer": answer, "ACC": scored.acc, "Recall_o": scored.recall, "Legality": scored.legality,
             "steps": scored.steps, **({"detail": scored.detail} if scored.detail else {})}
    return value, answer is not None


def score_loop(task_name: str, instance: VicInstance, replies: list[str], actions: list[str],
               legal: list[bool]) -> tuple[dict[str, Any], bool]:
    """A Stage-3 conversation: its final answer scored as in Stage 2, its actions' legality, and ThinkGain."""
    from tasks.vic.suite import task

    chosen = task(task_name)
    final_reply = next((r for r in reversed(replies) if tagged(r, "answer") is not None), None)
    answer = chosen.parse_open(instance, final_reply) if final_reply is not None else None
    scored = chosen.score_open(instance, answer)
    before = chosen.before_retrospection(instance, actions, answer)
    before_recall = scored.recall if before is None else chosen.score_open(instance, before).recall
    legality = None if scored.legality is None else (sum(legal) / len(legal) if legal else 0.0)
    value = {"answer": answer, "ACC": scored.acc, "Recall_o": scored.recall, "Legality": legality,
             "ThinkGain": scored.recall - before_recall, "turns": len(replies), "actions": actions,
             "legal": legal, "before_retrospection": before, "final_given": final_reply is not None}
    return value, answer is not None


def score_run(items: list[Any], parsed: dict[str, Any], stage: int) -> Scoring:
    """Per item its values, per task and over all tasks the stage's metrics (x100)."""
    scoring = Scoring()
    per_task: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for item in items:
        answer = parsed.get(item.key)
        if answer is None:
            continue
        value = dict(answer.value) if answer.method != "failed" or UNPARSED_COUNTS else None
        if value is None:
            continue
        if answer.method == "failed":  # unreadable: wrong, no recall, no gain; Legality is as scored (Stage 2: 0,
            # no step could be read; Stage 3: the actions the loop ran, each judged by the simulator)
            value.update({m: 0.0 for m in METRICS[stage] if m != "Legality"})
        scoring.per_sample[item.key] = {"task": item.task, **{m: value.get(m) for m in METRICS[stage]}}
        for metric in METRICS[stage]:
            if value.get(metric) is not None:
                per_task[item.task][metric].append(float(value[metric]))
    tables: dict[str, dict[str, tuple[float | None, int]]] = {}
    for name, metrics in sorted(per_task.items()):
        tables[name] = {m: (100 * sum(v) / len(v), len(v)) for m, v in metrics.items() if v}
        scoring.rows += [(m, name, value, n) for m, (value, n) in tables[name].items()]
    pooled = {m: [v for metrics in per_task.values() for v in metrics.get(m, [])] for m in METRICS[stage]}
    scoring.headline = {m: (100 * sum(v) / len(v) if v else None) for m, v in pooled.items()}
    scoring.rows += [(m, "all", value, len(pooled[m])) for m, value in scoring.headline.items()]
    scoring.tables = {"stage": stage, "tasks": tables}
    return scoring
