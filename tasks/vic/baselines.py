"""Model-free answers for ViC-Bench, in the format each stage asks for, so they go through the same parsers: the
noisy oracle (the main job's canary: it must score close to perfect), random and constant."""

from __future__ import annotations

import random
from typing import Any

from tasks.vic.task import LETTERS, VicInstance


def baseline_reply(baseline: str, options: dict[str, Any], request: Any, rng: random.Random, task_name: str,
                   instance: VicInstance) -> str:
    """Stage 1: the right letter (the oracle; another one with probability ``noise``), a random one, or
    ``value`` (default A). Stage 2: the right answer (the oracle) or an empty one. Stage 3: the oracle sends the
    right answer's actions one per turn, then the answer; with probability ``noise`` per turn it first sends an
    action the simulator refuses, so Legality and the loop's bookkeeping are exercised too."""
    from tasks.vic.suite import task

    chosen = task(task_name)
    noise = float(options.get("noise", 0.0))
    if request.strategy == "stage1":
        right = instance.stage_one.answer
        if baseline == "oracle":
            wrong = rng.choice([letter for letter in LETTERS if letter != right])
            return f"<answer>{right if rng.random() >= noise else wrong}</answer>"
        return f"<answer>{rng.choice(LETTERS) if baseline == 'random' else options.get('value', 'A')}</answer>"
    if baseline != "oracle":
        return "<answer></answer>"
    if request.strategy == "stage2":
        return f"<answer>{chosen.answer_text(instance)}</answer>"
    turn = sum(message.role == "assistant" for message in request.messages)
    actions = chosen.oracle_actions(instance)
    sent = [m.text() for m in request.messages if m.role == "assistant"]
    refused = sum("not a real action" in text for text in sent)
    if turn < len(actions) + refused:
        if rng.random() < noise and refused < 2:
            return "<action>not a real action</action>"
        return f"<action>{actions[turn - refused]}</action>"
    return f"<answer>{chosen.answer_text(instance)}</answer>"
