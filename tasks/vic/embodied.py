"""ViC-Bench embodied long-horizon planning (paper Sec. III-D; spec §3.3, §5.3) on MiniGrid/BabyAI.

The paper plans in AI2-THOR, which cannot run here; the worlds are MiniGrid/BabyAI episodes driven by high-level
actions (``tasks/vic/worlds.py``: ``go to <color> <type>``, ``pick up <color> <type>``, ``drop``,
``open|close <color> door``, ``toggle <color> <type>``; an action is legal only if the simulator carries it out).
An instance is one episode (environment id + reset seed) and an expert plan over those actions that accomplishes its
mission. Stage 1: the initial frame and the plan in, which of four frames is the final one (the others are earlier
frames of the same trace, pixel-different from the final). Stages 2/3: the initial and the final frame in (side by
side), the plan out. The Stage-3 simulator runs each action and renders the new frame.

Expert plans come from our own planner, a breadth-first search over the high-level actions (shortest plans in key
actions), not from the BabyAI bot: the bot's subgoals include going next to bare cells to drop things, which the
action vocabulary cannot name. Deviation [documented]: the paper removed PickUp/Put tasks because AI2-THOR navigation
to them was unreliable; here navigation is exact, so pick-up and unlock missions stay (put-next missions are left out:
``drop`` puts the object beside the agent, so "next to X" cannot be named with these actions).

Settings (every choice the paper leaves open, with its default):

- generation (keys of ``generate``'s ``options``; defaults in ``embodied_generate``): ``envs`` ``DEFAULT_ENVS`` (DoorKey
  5x5 and 8x8, Unlock, UnlockLocal, UnlockPickup: missions whose shortest plans have 4-7 actions, planned in well under
  a second; measured and left out: BabyAI-UnlockPickupDist, 7 actions but about 5 s an instance; KeyCorridorS3R2, 8
  actions in about one episode of 30, about 20 s an instance; KeyCorridorS3R1 and BlockedUnlockPickup need 9-10 actions;
  BabyAI-SynthS5R2 took 0.7-7.7 s an episode to plan); ``plan_actions`` (3, 8) [guess: the paper's band is lost; its
  ``[x, y]`` counted AI2-THOR steps]; ``planner_budget`` 3,000 expanded actions per episode; ``max_tries`` 30 episodes
  per instance asked for; ``tile_size`` 32 px per cell (MiniGrid's); ``distractors`` "latest" (the three latest earlier
  frames of the trace, the hardest to tell apart from the final, standing in for the paper's hand-refined "ambiguous
  IVS"; "random": any three earlier frames).
- scoring (constants of ``embodied_answers``, parameters of ``score_plan`` and ``EmbodiedTask``): ``ACC_RULE``
  "exact_plan" (the canonical key actions equal the GT plan's, the paper's "all atomic actions matched"; "reaches_goal":
  the replayed answer accomplishes the mission, fairer where several shortest plans exist); ``RECALL_RULE`` "in_order"
  (a predicted action counts when it runs legally and is the next GT action still unmatched: the paper's "accumulated
  effective length of verified actions" over the total predicted steps; "prefix": counting stops at the first predicted
  action that does not).

Matching: the paper matches atomic actions by PaddleNLP similarity > 0.95; PaddleNLP downloads its (Chinese) model at
start-up, and MiniLM cosine rejects true paraphrases at 0.95 ("pick up the red key" vs "pickup red key": 0.838, spec
§5.3). Actions are therefore canonicalised by rules to (verb, color, type) — verb synonyms ("navigate to", "walk to",
"grab", "pickup", "unlock"...), articles and numbering dropped, a missing colour filled in when only one thing of that
type is present — and matched exactly. Non-critical steps (observe, move forward, turn left/right...) are ignored, as
in the paper: they are neither executed nor counted.

Scoring details: an unreadable step (no verb, or a thing the rules cannot name) is a step and an illegal one; an
answer with no readable step is unparseable (parsed False) and one with no step at all scores 0 (Legality 0 too).
Kept episodes: no two things share colour and type (``go to red key`` names one thing), and the GT plan has no
repeated ``go to`` / ``pick up`` of one thing, which would read as a reflective adjustment (ThinkGain's A_b).

The task's pieces: ``embodied_answers`` (prompts, the rules that read answers, scoring), ``embodied_planning`` (the
expert planner), ``embodied_generate`` (episodes and their instances) and ``embodied_verify`` (the replaying check);
this module holds the Stage-3 simulator and the task.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from tasks.vic.embodied_answers import (
    ACC_RULE,
    NON_CRITICAL,
    RECALL_RULE,
    canonical_action,
    parse_plan,
    readable,
    score_plan,
    stage_prompt,
    things_of,
)
from tasks.vic.embodied_generate import draw_episodes, episode_settings, png
from tasks.vic.embodied_planning import retrospection_index
from tasks.vic.embodied_verify import verify_episode
from tasks.vic.task import Drawn, DrawPlan, OpenScore, StepResult, VicInstance, VicTask, tagged
from tasks.vic.worlds import Action, MiniGridWorld


def generate_episodes(count: int, seed: int, options: dict[str, Any] | None = None) -> list[VicInstance]:
    """``count`` instances (fewer when ``max_tries`` episodes per instance do not give them), deterministic for a seed:
    the environments taken in turn, each attempt's episode drawn from (seed, attempt) alone."""
    return EmbodiedTask().generate(count, seed, options or {})


# -- the Stage-3 simulator -----------------------------------------------------------------------------------------

class EmbodiedSimulator:
    """One instance's world for the Stage-3 loop: each high-level action runs and the new frame is rendered."""

    def __init__(self, meta: dict[str, Any]) -> None:
        self.things = things_of(meta)
        self.world = MiniGridWorld(meta["env"], int(meta["tile_size"]))
        self.world.reset(int(meta["seed"]))

    def step(self, action: str) -> StepResult:
        text = tagged(action, "action") or action
        read = canonical_action(text, self.things)
        if read == NON_CRITICAL:
            refused = "only high-level actions run here (go to, pick up, drop, open, close, toggle); nothing changed"
            looked = re.match(r"\s*(?:observe|look)", text, flags=re.IGNORECASE)
            state = self._state()
            return StepResult(legal=bool(looked), message=state if looked else refused,
                              image=self.image() if looked else None, done=self.world.succeeded())
        if not isinstance(read, Action):
            return StepResult(legal=False, message=f"'{text.strip()}' is not an action of this world; nothing changed",
                              image=None, done=self.world.succeeded())
        outcome = self.world.execute(read)
        message = f"{read.text}: {outcome.message}." + ("" if outcome.legal else " Nothing changed.")
        return StepResult(legal=outcome.legal, message=f"{message} {self._state()}",
                          image=png(outcome.frame) if outcome.frame is not None else None,
                          done=self.world.succeeded())

    def _state(self) -> str:
        held = self.world.carrying()
        carried = f"You are carrying the {held.name}." if held else "Your hands are empty."
        return carried + (" The mission is accomplished." if self.world.succeeded() else "")

    def image(self) -> bytes:
        return png(self.world.frame())


class EmbodiedTask(VicTask):
    """ViC-Bench's embodied long-horizon planning on MiniGrid/BabyAI (a ``VicTask``)."""

    name = "embodied"

    def __init__(self, acc_rule: str = ACC_RULE, recall_rule: str = RECALL_RULE) -> None:
        self.acc_rule = acc_rule
        self.recall_rule = recall_rule

    def plan(self, count: int, seed: int, options: dict[str, Any]) -> DrawPlan:
        settings = episode_settings(options)
        return DrawPlan(range(count * settings["max_tries"]), {**settings, "seed": seed})

    def draws(self, specs: Sequence[Any], settings: Any) -> Iterator[Drawn]:
        return draw_episodes(specs, settings)

    def verify(self, instance: VicInstance) -> list[str]:
        return verify_episode(instance)

    def prompts(self, instance: VicInstance, stage: int, level: int) -> str:
        return stage_prompt(instance.meta, stage)  # IPII levels are maze-only in the paper

    def parse_open(self, instance: VicInstance, text: str) -> list[str] | None:
        return parse_plan(text, things_of(instance.meta))

    def score_open(self, instance: VicInstance, answer: Any) -> OpenScore:
        return score_plan(instance.meta, answer, self.acc_rule, self.recall_rule)

    def simulator(self, instance: VicInstance) -> EmbodiedSimulator:
        return EmbodiedSimulator(instance.meta)

    def before_retrospection(self, instance: VicInstance, actions: list[str], final: Any = None) -> list[str] | None:
        """A_b: the Stage-3 actions sent before the first reflective adjustment (a repeated ``go to`` or ``pick up``
        of one thing), scored like a final answer; None when there is none (A_b is then the final answer, ThinkGain
        0). ``final`` is not needed: every step of a plan is an action of the loop."""
        steps = readable(list(actions), things_of(instance.meta))
        index = retrospection_index(steps)
        return None if index is None else steps[:index]

    def answer_text(self, instance: VicInstance) -> str:
        return "; ".join(instance.open_form.answer)
