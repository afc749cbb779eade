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

- generation (keys of ``generate``'s ``options``): ``envs`` ``DEFAULT_ENVS`` (DoorKey 5x5 and 8x8, Unlock,
  UnlockLocal, UnlockPickup: missions whose shortest plans have 4-7 actions, planned in well under a second; measured
  and left out: BabyAI-UnlockPickupDist, 7 actions but about 5 s an instance; KeyCorridorS3R2, 8 actions in about
  one episode of 30, about 20 s an instance; KeyCorridorS3R1 and BlockedUnlockPickup need 9-10 actions; BabyAI-SynthS5R2
  took 0.7-7.7 s an episode to plan); ``plan_actions`` (3, 8)
  [guess: the paper's band is lost; its ``[x, y]`` counted AI2-THOR steps]; ``planner_budget`` 3,000 expanded
  actions per episode; ``max_tries`` 30 episodes per instance asked for; ``tile_size`` 32 px per cell (MiniGrid's);
  ``distractors`` "latest" (the three latest earlier frames of the trace, the hardest to tell apart from the final,
  standing in for the paper's hand-refined "ambiguous IVS"; "random": any three earlier frames).
- scoring (module constants, parameters of ``score_plan`` and ``EmbodiedTask``): ``ACC_RULE`` "exact_plan" (the
  canonical key actions equal the GT plan's, the paper's "all atomic actions matched"; "reaches_goal": the replayed
  answer accomplishes the mission, fairer where several shortest plans exist); ``RECALL_RULE`` "in_order" (a
  predicted action counts when it runs legally and is the next GT action still unmatched: the paper's "accumulated
  effective length of verified actions" over the total predicted steps; "prefix": counting stops at the first
  predicted action that does not).

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
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tasks.vic.task import (
    LETTERS,
    STAGE3_PROTOCOL,
    Drawn,
    DrawPlan,
    OpenForm,
    OpenScore,
    StageOne,
    StepResult,
    VicInstance,
    VicTask,
    tagged,
)
from tasks.vic.worlds import PICKABLE, Action, MiniGridWorld, Thing

DEFAULT_ENVS = ("MiniGrid-DoorKey-5x5-v0", "MiniGrid-DoorKey-8x8-v0", "MiniGrid-Unlock-v0", "BabyAI-UnlockLocal-v0",
                "BabyAI-UnlockPickup-v0")
PLAN_ACTIONS = (3, 8)
PLANNER_BUDGET = 3000
MAX_TRIES = 30
TILE_SIZE = 32
DISTRACTORS = "latest"
ACC_RULE = "exact_plan"
RECALL_RULE = "in_order"

COLORS = ("red", "green", "blue", "purple", "yellow", "grey")
KINDS = ("key", "ball", "box", "door", "goal")
NON_CRITICAL = "~"  # canonical_action's answer for a step the scoring ignores

# -- the answer rules: verbs and their synonyms, read at the start of a step ---------------------------------------
_VERBS: tuple[tuple[str, str], ...] = (
    (r"(?:go|navigate|walk|move|head|travel|proceed|get)\s+(?:over\s+)?(?:to|towards?)|goto|approach|reach", "go to"),
    (r"pick\s*up|pickup|grab|take|collect|get", "pick up"),
    (r"drop|put\s+down|place|release|put", "drop"),
    (r"open|unlock", "open"),
    (r"close|shut", "close"),
    (r"toggle|use|activate|interact\s+with", "toggle"),
)
_NON_CRITICAL = re.compile(r"(?:observe|look(?:\s+around)?|move\s+forward|forward|step\s+forward|turn\s+(?:left|right|"
                           r"around)|rotate\s+(?:left|right)|wait|end|done|stop|init|explore)\b.*")
_KIND_WORDS = {"key": "key", "ball": "ball", "box": "box", "door": "door", "goal": "goal", "square": "goal",
               "gate": "door", "crate": "box", "sphere": "ball"}
_NOISE = re.compile(r"^\s*(?:[-*•>]+|(?:step|action)?\s*\d+\s*[.):\-]|step\s*\d+\s*:?)\s*", re.IGNORECASE)


def canonical_action(step: str, things: list[Thing] | None = None) -> Action | str | None:
    """A written step as its canonical ``Action``; ``NON_CRITICAL`` for a step the scoring ignores; None when the
    rules cannot read it. ``things``: the instance's things, to fill in a colour left out when only one fits."""
    text = _NOISE.sub("", step.strip().lower())
    text = re.sub(r"[`*_\"'.!,:;()\[\]]", " ", text)
    text = re.sub(r"\b(?:the|a|an|agent|then|now|next|finally|first)\b", " ", text)
    text = " ".join(text.split())
    if not text:
        return NON_CRITICAL
    if _NON_CRITICAL.fullmatch(text):
        return NON_CRITICAL
    means = re.fullmatch(r"use\s+.*?\s+to\s+((?:open|unlock|close)\s+.*)", text)
    if means:  # "use the red key to open the red door" names the door's action, not a toggle of the key
        text = means.group(1)
    for pattern, verb in _VERBS:
        match = re.match(rf"(?:{pattern})\b\s*(.*)", text)
        if match:
            return _with_object(verb, match.group(1), things)
    return None


def _with_object(verb: str, rest: str, things: list[Thing] | None) -> Action | None:
    if verb == "drop":
        return Action("drop")
    words = ["grey" if word == "gray" else word for word in rest.split()]
    colors = [word for word in words if word in COLORS]
    kinds = [_KIND_WORDS[w.rstrip("s")] for w in words if w.rstrip("s") in _KIND_WORDS]
    if not kinds:
        return None
    kind = kinds[0]
    color = colors[0] if colors else ""
    if not color:
        fitting = sorted({t.color for t in things or [] if t.kind == kind})
        if len(fitting) != 1:
            return None
        color = fitting[0]
    return Action(verb, color, kind)  # "open <color> box" stays: the executor refuses it and says to toggle


def action_from_text(text: str) -> Action:
    """A canonical action text (``Action.text``) back as an ``Action``."""
    if text == "drop":
        return Action("drop")
    for verb in ("go to", "pick up", "open", "close", "toggle"):
        if text.startswith(verb + " "):
            color, kind = text[len(verb) + 1:].split(" ")
            return Action(verb, color, kind)
    raise ValueError(f"not a canonical action: {text!r}")


def read_steps(content: str) -> list[str]:
    """An answer's steps, one a line or ``;``-separated (also ``->`` / ``,`` when the whole answer is one line)."""
    lines = [line for line in re.split(r"[\n;]+", content) if line.strip()]
    if len(lines) == 1:
        lines = [part for part in re.split(r"\s*(?:->|→|,|\bthen\b)\s*", lines[0]) if part.strip()]
    return [line.strip() for line in lines]


def readable(steps: list[str], things: list[Thing]) -> list[str]:
    """The steps in the answer structure: canonical texts, ``?<step>`` for an unreadable one, non-critical dropped."""
    out: list[str] = []
    for step in steps:
        if step.startswith("?"):
            out.append(step)  # already read as unreadable (a parsed answer scored again)
            continue
        action = canonical_action(step, things)
        if action == NON_CRITICAL:
            continue
        out.append(action.text if isinstance(action, Action) else "?" + step.strip())
    return out


def parse_plan(text: str, things: list[Thing]) -> list[str] | None:
    """The answer's plan (``readable``), None when there is no ``<answer>`` (or ``Answer:``) or no step reads."""
    content = tagged(text, "answer")
    if content is None:
        opened = re.split(r"<answer>", text, flags=re.IGNORECASE)
        labelled = re.split(r"(?:final\s+)?answer\s*[:：]", text, flags=re.IGNORECASE)
        content = opened[-1] if len(opened) > 1 else labelled[-1] if len(labelled) > 1 else None
    if content is None:
        return None
    steps = readable(read_steps(content), things)
    if steps and all(step.startswith("?") for step in steps):
        return None
    return steps


def _things(meta: dict[str, Any]) -> list[Thing]:
    return [Thing(*name.split(" ")) for name in meta["things"]]


# -- planning ------------------------------------------------------------------------------------------------------

def _candidates(world: MiniGridWorld) -> list[Action]:
    """The actions worth trying from a state (``toggle`` and ``close`` add nothing a shortest plan needs)."""
    actions = [Action("go to", t.color, t.kind) for t in world.things()]
    _, ahead = world._front()
    if ahead is not None and ahead.type in PICKABLE and world.carrying() is None:
        actions.append(Action("pick up", ahead.color, ahead.type))
    if world.carrying() is not None:
        actions.append(Action("drop"))
    if ahead is not None and ahead.type == "door" and not ahead.is_open:
        actions.append(Action("open", ahead.color, "door"))
    return actions


def plan_mission(world: MiniGridWorld, max_actions: int, budget: int) -> list[Action] | None:
    """A shortest plan of high-level actions accomplishing the world's mission (breadth-first over distinct states),
    None when none has at most ``max_actions`` or the search spends its ``budget`` of tried actions."""
    from collections import deque

    seen = {world.state_key()}
    queue: deque[tuple[MiniGridWorld, list[Action]]] = deque([(world.clone(), [])])
    tried = 0
    while queue:
        state, plan = queue.popleft()
        if len(plan) >= max_actions:
            continue
        for action in _candidates(state):
            tried += 1
            if tried > budget:
                return None
            nxt = state.clone()
            if not nxt.execute(action).legal:
                continue
            if nxt.succeeded():
                return [*plan, action]
            key = nxt.state_key()
            if key not in seen:
                seen.add(key)
                queue.append((nxt, [*plan, action]))
    return None


def retrospection_index(actions: list[str]) -> int | None:
    """The first "reflective adjustment" (paper III-D ThinkGain): the first ``go to`` of a thing already gone to, or
    ``pick up`` of a thing already picked up; None when there is none. ``actions`` are canonical texts."""
    seen: set[str] = set()
    for index, text in enumerate(actions):
        if text.startswith(("go to ", "pick up ")):
            if text in seen:
                return index
            seen.add(text)
    return None


# -- instances -----------------------------------------------------------------------------------------------------

def png(frame: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(frame).save(buffer, format="PNG")
    return buffer.getvalue()


def _side_by_side(first: np.ndarray, last: np.ndarray) -> bytes:
    """The Stage-2/3 input: the initial frame (left) and the final frame (right), each captioned."""
    from PIL import Image, ImageDraw

    gap, caption = 16, 24
    height, width = first.shape[0], first.shape[1]
    canvas = Image.new("RGB", (2 * width + gap, height + caption), (255, 255, 255))
    canvas.paste(Image.fromarray(first), (0, caption))
    canvas.paste(Image.fromarray(last), (width + gap, caption))
    draw = ImageDraw.Draw(canvas)
    draw.text((4, 6), "initial state", fill=(0, 0, 0))
    draw.text((width + gap + 4, 6), "final state", fill=(0, 0, 0))
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return buffer.getvalue()


def _settings(options: dict[str, Any]) -> dict[str, Any]:
    known = {"envs": DEFAULT_ENVS, "plan_actions": PLAN_ACTIONS, "planner_budget": PLANNER_BUDGET,
             "max_tries": MAX_TRIES, "tile_size": TILE_SIZE, "distractors": DISTRACTORS}
    unknown = set(options) - set(known)
    if unknown:
        raise ValueError(f"unknown embodied options: {sorted(unknown)}")
    settings = {**known, **options}
    settings["envs"] = tuple(settings["envs"])
    settings["plan_actions"] = tuple(int(v) for v in settings["plan_actions"])
    if settings["distractors"] not in ("latest", "random"):
        raise ValueError("distractors must be 'latest' or 'random'")
    return settings


def _trace(world: MiniGridWorld, seed: int, plan: list[Action]) -> list[np.ndarray] | None:
    """The frames before and after each action of the plan, None unless every action runs and the mission is done."""
    frames = [world.reset(seed)]
    for action in plan:
        outcome = world.execute(action)
        if not outcome.legal or outcome.frame is None:
            return None
        frames.append(outcome.frame)
    return frames if world.succeeded() else None


def _distractors(frames: list[np.ndarray], how: str, rng: random.Random) -> list[int] | None:
    """Three earlier frames of the trace, pixel-different from the final frame and from one another."""
    order = [*range(len(frames) - 2, 0, -1), 0]  # intermediate frames first, latest first; the initial last
    if how == "random":
        middle = order[:-1]
        rng.shuffle(middle)
        order = [*middle, 0]
    chosen: list[int] = []
    for index in order:
        if all(not np.array_equal(frames[index], frames[other]) for other in [*chosen, len(frames) - 1]):
            chosen.append(index)
        if len(chosen) == 3:
            return chosen
    return None


def instance_key(meta: dict[str, Any]) -> str:
    content = json.dumps({k: meta[k] for k in ("env", "seed", "plan", "tile_size", "stage_one")}, sort_keys=True)
    return "embodied-" + hashlib.sha256(content.encode()).hexdigest()[:16]


def _instance(world: MiniGridWorld, env_id: str, seed: int, plan: list[Action], frames: list[np.ndarray],
              rng: random.Random, settings: dict[str, Any]) -> VicInstance | None:
    earlier = _distractors(frames, settings["distractors"], rng)
    if earlier is None:
        return None
    shown = [len(frames) - 1, *earlier]
    rng.shuffle(shown)
    stage_one = {letter: index for letter, index in zip(LETTERS, shown, strict=True)}
    answer = next(letter for letter, index in stage_one.items() if index == len(frames) - 1)
    world.reset(seed)
    meta = {"env": env_id, "seed": seed, "mission": world.mission, "plan": [a.text for a in plan],
            "things": [t.name for t in world.things()], "trace": shown, "stage_one": stage_one,
            "frames": len(frames), "tile_size": settings["tile_size"], "plan_actions": list(settings["plan_actions"])}
    pngs = {index: png(frames[index]) for index in set(shown) | {0}}
    one = StageOne(question=stage_prompt(meta, 1), image=pngs[0],
                   options={letter: f"the frame shown as option image {letter}" for letter in LETTERS},
                   answer=answer, option_images={letter: pngs[index] for letter, index in stage_one.items()})
    open_form = OpenForm(question=stage_prompt(meta, 2), image=_side_by_side(frames[0], frames[-1]),
                         answer=list(meta["plan"]))
    return VicInstance(task="embodied", key=instance_key(meta), stage_one=one, open_form=open_form, meta=meta,
                       images={"initial": pngs[0], "final": png(frames[-1])})


def generate_episodes(count: int, seed: int, options: dict[str, Any] | None = None) -> list[VicInstance]:
    """``count`` instances (fewer when ``max_tries`` episodes per instance do not give them), deterministic for a seed:
    the environments taken in turn, each attempt's episode drawn from (seed, attempt) alone."""
    return EmbodiedTask().generate(count, seed, options or {})


def draw_episodes(attempts: Sequence[int], settings: dict[str, Any]) -> Iterator[Drawn]:
    """An instance from each attempt, or nothing (two things alike, a plan out of the band or none, no three
    distinct earlier frames). Each attempt's random stream is its own (``attempt_rng``), so an attempt draws the same
    episode wherever it runs and whatever the attempts before it gave; one world per environment is reset for each."""
    low, high = settings["plan_actions"]
    worlds: dict[str, MiniGridWorld] = {}
    for attempt in attempts:
        rng = attempt_rng(settings["seed"], attempt)
        env_id = settings["envs"][attempt % len(settings["envs"])]
        env_seed = rng.randrange(2**31)
        world = worlds.setdefault(env_id, MiniGridWorld(env_id, settings["tile_size"]))
        first = world.reset(env_seed)
        things = world.things()
        if len({(t.color, t.kind) for t in things}) != len(things):
            yield Drawn()  # two things of one colour and type ("go to red key" ambiguous)
            continue
        plan = plan_mission(world, high, settings["planner_budget"])
        if plan is None or len(plan) < low or retrospection_index([a.text for a in plan]) is not None:
            yield Drawn()  # out of the band, or a GT plan that would itself read as a reflective adjustment
            continue
        frames = _trace(world, env_seed, plan)
        built = None if frames is None else _instance(world, env_id, env_seed, plan, frames, rng, settings)
        # an episode repeated (one room and start drawn twice) is taken once
        yield Drawn(built, signature=(env_id, hashlib.sha256(first.tobytes()).hexdigest()))


def attempt_rng(seed: int, attempt: int) -> random.Random:
    return random.Random(f"embodied:{seed}:{attempt}")


# -- verification (a replay in a fresh world; shares nothing with the planner) ---------------------------------------

def _decode(data: bytes) -> np.ndarray:
    from tasks.sources.door import decode_checked

    return decode_checked(data, "an embodied frame")


def _stage_one_problems(instance: VicInstance, frames: list[np.ndarray]) -> list[str]:
    meta, one = instance.meta, instance.stage_one
    final = frames[-1]
    problems = []
    if not np.array_equal(_decode(one.image), frames[0]):
        problems.append("the Stage-1 image is not the episode's initial frame")
    if set(one.option_images) != set(LETTERS) or set(meta["stage_one"]) != set(LETTERS):
        return [*problems, "Stage 1 needs four option images A-D"]
    matching = [letter for letter in LETTERS if np.array_equal(_decode(one.option_images[letter]), final)]
    if matching != [one.answer]:
        problems.append(f"the options showing the final frame are {matching}, the answer is {one.answer}")
    for letter in LETTERS:
        index = int(meta["stage_one"][letter])
        if not 0 <= index < len(frames) or not np.array_equal(_decode(one.option_images[letter]), frames[index]):
            problems.append(f"option {letter} is not frame {index} of the replayed trace")
    return problems


def verify_episode(instance: VicInstance) -> list[str]:
    """Replay the stored plan in a fresh world from the stored seed: every action legal, the mission accomplished
    (the environment's own reward), the frames the options show, the distractors different from the final frame."""
    meta = instance.meta
    world = MiniGridWorld(meta["env"], int(meta["tile_size"]))
    frames = [world.reset(int(meta["seed"]))]
    problems = [] if world.mission == meta["mission"] else [f"the mission is {world.mission!r}, not the stored one"]
    low, high = meta["plan_actions"]
    if not low <= len(meta["plan"]) <= high:
        problems.append(f"the plan has {len(meta['plan'])} actions, outside {low}-{high}")
    if list(instance.open_form.answer) != list(meta["plan"]):
        problems.append("the open-form answer is not the plan")
    for number, text in enumerate(meta["plan"], 1):
        outcome = world.execute(action_from_text(text))
        if not outcome.legal or outcome.frame is None:
            return [*problems, f"action {number} ({text}) is refused: {outcome.message}"]
        frames.append(outcome.frame)
    if not world.succeeded():
        problems.append("the replayed plan does not accomplish the mission")
    stored_final = instance.images.get("final")
    if stored_final is None or not np.array_equal(_decode(stored_final), frames[-1]):
        problems.append("the stored final frame is not the replayed final frame")
    return problems + _stage_one_problems(instance, frames)


# -- prompts (our wording; the paper's are in its unavailable supplement) -----------------------------------------

WORLD_PROMPT = (
    "You see a top-down grid world. The agent is the red triangle, pointing where it faces; grey cells are walls. "
    "Things have a colour (red, green, blue, purple, yellow, grey) and a type (key, ball, box, door, goal). "
    "The agent acts with these high-level actions:\n"
    "- go to <color> <type>: walk to the thing and face it (onto it for the goal square)\n"
    "- pick up <color> <type>: pick up the key, ball or box in front (the hands hold one thing)\n"
    "- drop: put the carried thing down beside the agent\n"
    "- open <color> door / close <color> door: a locked door opens only while carrying the key of its colour\n"
    "- toggle <color> <type>: operate the thing in front\n"
    "An action that cannot be carried out changes nothing. Mission: {mission}.")
STAGE1_PROMPT = (
    "{world}\nThe first image shows the initial state. The agent carries out these actions in order:\n{actions}\n"
    "Which of the option images A, B, C, D shows the state after the last action? Think step by step, then give the "
    "letter inside <answer>...</answer>.")
STAGE2_PROMPT = (
    "{world}\nThe image shows the initial state (left) and the final state (right). Write the sequence of actions "
    "that takes the agent from the initial state to the final state. Think step by step, then give the actions "
    "inside <answer>...</answer>, one action per line (or separated by ';'), each in one of the forms above.")


def stage_prompt(meta: dict[str, Any], stage: int) -> str:
    world = WORLD_PROMPT.format(mission=meta["mission"])
    if stage == 1:
        actions = "\n".join(f"{number}. {text}" for number, text in enumerate(meta["plan"], 1))
        return STAGE1_PROMPT.format(world=world, actions=actions)
    question = STAGE2_PROMPT.format(world=world)
    return question if stage == 2 else question + "\n" + STAGE3_PROTOCOL


# -- scoring -------------------------------------------------------------------------------------------------------

def score_plan(meta: dict[str, Any], answer: list[str] | None, acc_rule: str = ACC_RULE,
               recall_rule: str = RECALL_RULE) -> OpenScore:
    """Replay an answer (``readable`` steps or raw action texts) in a fresh world from the instance's seed.
    Legality: legal steps / steps; Recall_o: steps that run legally and match the next unmatched GT action / steps;
    ACC by ``acc_rule``. An unreadable step is an illegal step; an unparseable answer or zero steps scores 0."""
    if acc_rule not in ("exact_plan", "reaches_goal") or recall_rule not in ("in_order", "prefix"):
        raise ValueError(f"unknown rule: acc_rule={acc_rule!r}, recall_rule={recall_rule!r}")
    if answer is None:
        return OpenScore(acc=0.0, recall=0.0, legality=0.0, parsed=False, steps=0)
    steps = readable(list(answer), _things(meta))
    if not steps:
        return OpenScore(acc=0.0, recall=0.0, legality=0.0, parsed=True, steps=0)
    world = MiniGridWorld(meta["env"], int(meta["tile_size"]))
    world.reset(int(meta["seed"]))
    plan, matched, effective, deviated, legal = meta["plan"], 0, 0, False, []
    for text in steps:
        ok = not text.startswith("?") and world.execute(action_from_text(text)).legal
        legal.append(ok)
        if ok and matched < len(plan) and text == plan[matched]:
            matched += 1
            effective += 0 if deviated else 1
        elif recall_rule == "prefix":
            deviated = True
    if recall_rule == "in_order":
        effective = matched
    acc = steps == list(plan) if acc_rule == "exact_plan" else world.succeeded()
    return OpenScore(acc=float(acc), recall=effective / len(steps), legality=sum(legal) / len(steps), parsed=True,
                     steps=len(steps), detail={"actions": steps, "legal": legal, "matched": matched,
                                               "reached_goal": world.succeeded()})


# -- the Stage-3 simulator -----------------------------------------------------------------------------------------

class EmbodiedSimulator:
    """One instance's world for the Stage-3 loop: each high-level action runs and the new frame is rendered."""

    def __init__(self, meta: dict[str, Any]) -> None:
        self.things = _things(meta)
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
        settings = _settings(options)
        return DrawPlan(range(count * settings["max_tries"]), {**settings, "seed": seed})

    def draws(self, specs: Sequence[Any], settings: Any) -> Iterator[Drawn]:
        return draw_episodes(specs, settings)

    def verify(self, instance: VicInstance) -> list[str]:
        return verify_episode(instance)

    def prompts(self, instance: VicInstance, stage: int, level: int) -> str:
        return stage_prompt(instance.meta, stage)  # IPII levels are maze-only in the paper

    def parse_open(self, instance: VicInstance, text: str) -> list[str] | None:
        return parse_plan(text, _things(instance.meta))

    def score_open(self, instance: VicInstance, answer: Any) -> OpenScore:
        return score_plan(instance.meta, answer, self.acc_rule, self.recall_rule)

    def simulator(self, instance: VicInstance) -> EmbodiedSimulator:
        return EmbodiedSimulator(instance.meta)

    def before_retrospection(self, instance: VicInstance, actions: list[str], final: Any = None) -> list[str] | None:
        """A_b: the Stage-3 actions sent before the first reflective adjustment (a repeated ``go to`` or ``pick up``
        of one thing), scored like a final answer; None when there is none (A_b is then the final answer, ThinkGain
        0). ``final`` is not needed: every step of a plan is an action of the loop."""
        steps = readable(list(actions), _things(instance.meta))
        index = retrospection_index(steps)
        return None if index is None else steps[:index]

    def answer_text(self, instance: VicInstance) -> str:
        return "; ".join(instance.open_form.answer)
