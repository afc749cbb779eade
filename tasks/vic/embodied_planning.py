"""The embodied task's expert planner, a breadth-first search over the high-level actions (shortest plans in key
actions), and the first reflective adjustment of a plan (ThinkGain's retrospection)."""

from __future__ import annotations

from tasks.vic.worlds import PICKABLE, Action, MiniGridWorld


def _candidates(world: MiniGridWorld) -> list[Action]:
    """The actions worth trying from a state (``toggle`` and ``close`` add nothing a shortest plan needs)."""
    actions = [Action("go to", t.color, t.kind) for t in world.things()]
    _, ahead = world.front()
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


