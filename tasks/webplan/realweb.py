"""Plan assessment on the real web (the paper's Sec. 5.1, App. B, Fig. 10-11): a task, the screenshot 4-5 actions
before the end of an expert trajectory, and four plans for the rest of it; the right one is what the expert did.

- Trajectories of more than ``max_actions`` (10) actions are dropped, as are those of fewer than 4.
- The plan length k is 4 or 5 (5 drawn with the seed where the trajectory has at least 5 actions; the paper does
  not say how it chose); the screenshot is the one before action n - k; the actions before it are the history
  (App. H, Fig. 18).
- ``shuffle`` (Fig. 10): for k = 4 the distractors are the reversed plan, [p4, p3, p1, p2] and [p3, p4, p2, p1];
  for k = 5 the reversed plan, [p5, p4, p3, p1, p2] and [p4, p3, p2, p1, p5].
- ``semantic`` (Fig. 11): each distractor is a copy of a base plan with one action, at a drawn position, replaced
  by an action drawn from another task's plan (another website where one exists), never equal to the one it
  replaces. The base is the three shuffled distractors (``semantic_base = "shuffled"``, as Fig. 26d shows) or the
  right plan itself (``"original"``, as the prose of Sec. 5.1 describes). The source plans are never modified: the
  figure's code edits them in place through Python aliasing, which we do not reproduce.
- Options are shuffled with the seed; two options that read the same make the instance ambiguous and it is dropped.
- Where the trajectory was recorded on MiniWob++, every option is replayed in the browser from the same seed after
  the history: the right plan must earn reward 1 and no distractor may (a reordering of independent actions often
  still completes the task; such an instance is dropped, naming the option).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from tasks.webplan.instance import LETTERS, WebplanInstance, content_key, lettered
from tasks.webplan.trajectories import WebStep, WebTrajectory

STRATEGIES = ("shuffle", "semantic")
SHUFFLES = {4: ((3, 2, 1, 0), (3, 2, 0, 1), (2, 3, 1, 0)), 5: ((4, 3, 2, 1, 0), (4, 3, 2, 0, 1), (3, 2, 1, 0, 4))}


@dataclass(frozen=True)
class PlanQuestion:
    trajectory: WebTrajectory
    strategy: str
    cut: int  # the index of the step whose screenshot is shown; the plan is steps[cut:]
    options: list[tuple[str, list[WebStep]]]  # (how it was made, steps) in option order; "right" once

    @property
    def answer(self) -> str:
        return LETTERS[[made for made, _ in self.options].index("right")]


def shuffled(plan: list[WebStep]) -> list[tuple[str, list[WebStep]]]:
    """Fig. 10's three permutations of a 4- or 5-action plan, as new lists."""
    return [("shuffle " + "".join(str(i + 1) for i in order), [plan[i] for i in order])
            for order in SHUFFLES[len(plan)]]


def semantic(plan: list[WebStep], donors: list[list[WebStep]], rng: random.Random,
             base: str = "shuffled") -> list[tuple[str, list[WebStep]]] | None:
    """Three copies of the base plans, each with one action replaced by one of a donor plan's (Fig. 11); None when
    no donor has an action that differs."""
    bases = shuffled(plan) if base == "shuffled" else [("original", plan)] * 3
    made = []
    for name, steps in bases:
        copy = list(steps)  # never the source list: Fig. 11 as printed overwrites it through aliasing
        position = rng.randrange(len(copy))
        pool = [s for donor in donors for s in donor if s.action_raw != copy[position].action_raw]
        if not pool:
            return None
        replacement = rng.choice(pool)
        copy[position] = replacement
        made.append((f"{name}, action {position + 1} replaced", copy))
    return made


def usable(trajectory: WebTrajectory, max_actions: int = 10) -> bool:
    return 4 <= len(trajectory.steps) <= max_actions


def question(trajectory: WebTrajectory, strategy: str, donors: list[WebTrajectory], seed: int,
             base: str = "shuffled") -> PlanQuestion | str:
    """The plan-assessment question of one trajectory, or why it gives none."""
    if not usable(trajectory):
        return f"{len(trajectory.steps)} actions (plan assessment needs 4 to 10)"
    rng = random.Random(f"realweb/{strategy}/{trajectory.id}/{seed}")
    lengths = [k for k in (4, 5) if k <= len(trajectory.steps) and trajectory.steps[-k].fresh]
    if not lengths:
        return "no screenshot 4 or 5 actions before the end (a multi-action step hides it)"
    length = rng.choice(lengths)
    cut = len(trajectory.steps) - length
    plan = list(trajectory.steps[cut:])
    if strategy == "shuffle":
        wrong = shuffled(plan)
    else:
        others = [list(d.steps) for d in donors if d.task != trajectory.task and d.website != trajectory.website]
        others = others or [list(d.steps) for d in donors if d.task != trajectory.task]
        found = semantic(plan, others, rng, base)
        if found is None:
            return "no other task's action to put into the plan"
        wrong = found
    options = [("right", plan), *wrong]
    rng.shuffle(options)
    texts = [tuple(s.action for s in steps) for _, steps in options]
    if len(set(texts)) < len(texts):
        return "two options read the same (the plan repeats an action)"
    return PlanQuestion(trajectory=trajectory, strategy=strategy, cut=cut, options=options)


def confirm(plan: PlanQuestion, replay: Callable[[list[WebStep]], tuple[bool, str]]) -> list[str]:
    """Each option replayed after the history (``replay(steps)`` -> (rewarded, what happened)): the right one
    completes the task, no distractor does."""
    history = list(plan.trajectory.steps[:plan.cut])
    problems = []
    for letter, (made, steps) in zip(LETTERS, plan.options, strict=False):
        done, happened = replay(history + steps)
        if made == "right" and not done:
            problems.append(f"the right plan {letter} does not complete the task in the browser ({happened})")
        if made != "right" and done:
            problems.append(f"distractor {letter} ({made}) also completes the task in the browser")
    return problems


def realweb_instance(plan: PlanQuestion, verified_by: str) -> WebplanInstance:
    trajectory = plan.trajectory
    words = [[s.action for s in steps] for _, steps in plan.options]
    meta = {"strategy": plan.strategy, "dataset": trajectory.source, "trajectory": trajectory.id,
            "website": trajectory.website, "plan_len": len(trajectory.steps) - plan.cut, "step": plan.cut,
            "previous_actions": [s.action for s in trajectory.steps[:plan.cut]],
            "options": [{"letter": letter, "made": made, "actions_raw": [s.action_raw for s in steps]}
                        for letter, (made, steps) in zip(LETTERS, plan.options, strict=False)],
            **({"seed": trajectory.meta["seed"]} if "seed" in trajectory.meta else {})}
    key = content_key("realweb", plan.strategy, trajectory.source, trajectory.id, words)
    return WebplanInstance(test="realweb", key=key, task=trajectory.task, answer=plan.answer,
                           options=lettered(words), images={"start": trajectory.steps[plan.cut].screenshot},
                           meta=meta, verified_by=verified_by)
