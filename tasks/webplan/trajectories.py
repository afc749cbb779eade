"""Web trajectories: a task, the actions an expert took (raw, and in plain words once paraphrased) and the
screenshot before each action (and, where the source has it, after the last). The temporal-ordering and real-web
plan-assessment tests are cut from them; they come from the scripted MiniWob++ solvers (``record``) or from users'
files (``tasks.webplan.importers``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tasks.webplan.browser import MiniWobBrowser
from tasks.webplan.solvers import SOLVERS

# A CSS path from the nearest ancestor with an id: the same seed draws the same page, so the path finds the element
# again when a plan is replayed (an element the plan's order has not made appear yet is not found: the plan fails).
_CSS_PATH = """
var path = [], node = arguments[0];
while (node && node.nodeType === 1 && !node.id) {
  var index = 1, sibling = node;
  while ((sibling = sibling.previousElementSibling)) { index++; }
  path.unshift(node.tagName.toLowerCase() + ':nth-child(' + index + ')');
  node = node.parentElement;
}
if (node && node.id) { path.unshift('#' + CSS.escape(node.id)); }
return path.join(' > ');
"""


@dataclass(frozen=True)
class WebStep:
    action_raw: str  # as the source writes it: "[textbox]  Username -> TYPE: macie"
    screenshot: bytes  # the page before the action (PNG or JPEG bytes)
    action: str = ""  # in plain words ("Type "macie" into the Username field"); empty until paraphrased
    locator: str = ""  # MiniWob++ trajectories: where the element is, so a plan of these steps can be replayed
    fresh: bool = True  # the screenshot shows the page just before this action (not so for a GUIAct step's 2nd)


@dataclass(frozen=True)
class WebTrajectory:
    id: str  # unique within its source
    source: str  # "miniwob", "jsonl", "mm-mind2web", "guiact"
    task: str  # the instruction
    website: str
    steps: tuple[WebStep, ...]
    final_screenshot: bytes | None = None  # after the last action, when the source has it
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def last_screenshot(self) -> bytes:
        """i_T: after the last action where the source has it, else before it (Multimodal-Mind2Web has one
        screenshot per action row, taken before the action)."""
        return self.final_screenshot or self.steps[-1].screenshot


class SolverFailedError(RuntimeError):
    pass


def perform(browser: MiniWobBrowser, element: Any, op: str, value: str) -> None:
    if op == "TYPE":
        browser.press(element, value)
    else:
        browser.click(element)


def replay(browser: MiniWobBrowser, task: str, seed: int, steps: list[WebStep]) -> tuple[bool, str]:
    """Carry out ``steps`` (recorded MiniWob++ steps, in any order) on a fresh episode of the seed: whether the page
    rewards them with 1, and what happened."""
    from tasks.webplan.paraphrase import parts

    browser.reset(task, seed)
    for number, step in enumerate(steps, 1):
        if browser.result()["done"]:
            return False, f"the episode ended before action {number}"
        found = browser.find_all(step.locator) if step.locator else []
        if not found or not found[0].is_displayed():
            return False, f"action {number}: its element is not on the page ({step.action_raw})"
        _, _, op, value = parts(step.action_raw)
        try:
            perform(browser, found[0], op, value)
        except Exception as error:  # a click the page refuses (covered, not interactable) fails the plan
            return False, f"action {number} refused: {type(error).__name__}"
    result = browser.result()
    return bool(result["done"] and result["raw_reward"] == 1.0), f"reward {result['raw_reward']}"


def record(browser: MiniWobBrowser, task: str, seed: int) -> WebTrajectory:
    """The scripted expert's trajectory of one MiniWob++ episode, kept only if the page rewards it with 1."""
    try:
        solver = SOLVERS[task]
    except KeyError:
        raise ValueError(f"no scripted solver for {task!r}: {', '.join(SOLVERS)}") from None
    episode = browser.reset(task, seed)
    steps: list[WebStep] = []
    try:
        for action in solver(browser, episode):
            shot = browser.screenshot()
            locator = browser.run(_CSS_PATH, action.element)
            perform(browser, action.element, action.op, action.value)
            steps.append(WebStep(action_raw=action.raw, screenshot=shot, locator=locator))
    except Exception as error:  # a solver that cannot go on (an element missing, a click refused) says why
        raise SolverFailedError(f"{task} seed {seed}: the solver stopped after {len(steps)} actions: "
                                f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
                                ) from error
    result = browser.result()
    if not result["done"] or result["raw_reward"] != 1.0:
        raise SolverFailedError(f"{task} seed {seed}: MiniWob++ gave {result['raw_reward']} after {len(steps)} "
                                "actions (an expert trajectory must earn 1)")
    browser.run("core.cover_div.style.display = 'none';")  # the page as the last action left it, not the START cover
    final = browser.screenshot()
    return WebTrajectory(id=f"miniwob/{task}/{seed}", source="miniwob", task=episode.utterance,
                         website=f"miniwob/{task}", steps=tuple(steps), final_screenshot=final,
                         meta={"seed": seed, "raw_reward": result["raw_reward"]})
