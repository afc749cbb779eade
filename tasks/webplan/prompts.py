"""The web-planning prompts (our wording, the structure of the paper's Fig. 12-20) beside the rules that read the
answers, and the judge's prompt with its fixed label sets (Fig. 21-23).

Two styles per test (Sec. 3): ``instruct`` asks for the answer only; ``cot`` asks for numbered reasoning steps,
then ``REASONING: ...`` and ``OUTPUT: ...`` (``OUTPUT CHOICE:`` for the edge cases, as Fig. 20).

Rules, in order (Sec. 3: regular expressions first, the judge for the rest):
1. the text after the last ``OUTPUT:`` / ``OUTPUT CHOICE:`` / ``ANSWER:`` marker, else the whole reply;
2. in it, an answer alone (quotes, brackets and a final full stop allowed): a letter, ``Picture N``, ``Yes``/``No``;
3. else the last ``Plan X`` / ``Option X`` / ``Picture N`` / ``answer is X`` in it;
4. else nothing: the judge (when one is configured) reads the reply and answers one label or ``unclear``;
   ``unclear`` and anything still unread count as wrong, and are reported per cell (unparsed rate).
For a multiple-choice temporal question ``Picture 1``/``Picture 2`` read as ``A``/``B``.
"""

from __future__ import annotations

import re
from typing import Any

STYLES = ("instruct", "cot")

TEMPORAL = """You are given a web task and two screenshots taken during one expert's successful attempt at it. Decide \
which screenshot shows the earlier step. A step is earlier when it must logically or procedurally come first, the way \
details are filled in before they are confirmed.
Keep in mind:
1. "Picture 1" and "Picture 2" only name the images; the names say nothing about the order.
2. Both screenshots belong to this task.
3. They come from an expert trajectory that completed the task.
4. They are shown in an arbitrary order.

Task: {task}
Which picture shows the earlier step?{options}"""

FUTURE = """The image shows a web form in its starting state. The form needs some actions before it is submitted; \
hitting Submit sends it and leaves the page. Two plans follow. Each plan is carried out on its own, starting from this \
same state.

{plans}

Question: just before Submit is hit, is the form in exactly the same state after Plan A as after Plan B?"""

REALWEB = """The screenshot shows what a user sees right now while doing a web task. Four plans for the rest of the \
task follow. Imagine how the page changes after each action of each plan; some plans hold actions that cannot work or \
come in the wrong order. The task can be completed within the next {plan_len} actions, and every plan is about this \
task.

Task: {task}{history}
Plans:
{plans}

Which plan ({letters}) completes the task?"""

EDGE = """The screenshot shows a web form as it is now; someone may already have changed some of its fields. Several \
action plans for the task follow. Choose the plan that completes the task correctly from the state shown.

Task: {task}
Possible action plans:
{plans}

Which action plan ({letters}) completes the task?"""

INSTRUCT = {"letter": "Answer with the letter of your choice only.", "picture": 'Answer with "Picture 1" or '
            '"Picture 2" only.', "yesno": 'Answer with "Yes" or "No" only.'}
COT_STEPS = {
    "temporal": "(1) understand what the task needs, (2) describe what each screenshot shows, (3) compare them and "
                "reason about which state comes first, (4) give the answer",
    "future": "(1) describe the form in the image, (2) work out the form's state after each plan, (3) compare the "
              "two states, (4) give the answer",
    "realweb": "(1) understand the task, (2) describe the screenshot, (3) simulate each plan action by action, "
               "(4) select the plan that completes the task, (5) give the answer",
    "edge": "(1) analyse the form in the image and the task, (2) evaluate each option from the state shown, "
            "(3) make the final choice",
}
COT_OUTPUT = {"letter": "OUTPUT: the letter", "picture": 'OUTPUT: "Picture 1" or "Picture 2"',
              "yesno": 'OUTPUT: "Yes" or "No"'}
LABELS = {"letter": None, "picture": ("Picture 1", "Picture 2"), "yesno": ("Yes", "No")}


def answer_kind(test: str, form: str = "") -> str:
    if test == "future":
        return "yesno"
    if test == "temporal" and form == "open":
        return "picture"
    return "letter"


def instruction(test: str, style: str, kind: str) -> str:
    if style == "instruct":
        return INSTRUCT[kind]
    output = COT_OUTPUT[kind].replace("OUTPUT:", "OUTPUT CHOICE:") if test == "edge" else COT_OUTPUT[kind]
    return (f"Think step by step: {COT_STEPS[test]}. Then write your reasoning after REASONING: and your answer on "
            f"the last line as {output}.")


def _plans(options: dict[str, str]) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in sorted(options.items()))


def prompt(payload: dict[str, Any], style: str, history: bool = False, listed: bool = True) -> str:
    """The question of one instance in one style (``history``: the real-web prompt lists the earlier actions).
    ``listed`` False: a multiple-choice question without its options, their letters and the answer instruction,
    for a harness that lists the options and asks for a letter itself (VLMEvalKit)."""
    test, meta, options = payload["test"], payload.get("meta", {}), payload.get("options", {})
    kind = answer_kind(test, meta.get("form", ""))
    letters = ", ".join(sorted(options))
    if options and not listed:
        return _unlisted(prompt(payload, style, history), options, letters, instruction(test, style, kind))
    if test == "temporal":
        extra = "\nOptions:\nA. Picture 1\nB. Picture 2" if meta.get("form") == "mcq" else ""
        body = TEMPORAL.format(task=payload["task"], options=extra)
    elif test == "future":
        plans = "\n".join(f"Plan {name}: " + " ".join(f"{i}. {step}." for i, step in enumerate(plan["words"], 1))
                          for name, plan in sorted(meta["plans"].items()))
        body = FUTURE.format(plans=plans)
    elif test == "realweb":
        previous = meta.get("previous_actions") or []
        said = ("\nPrevious actions: " + " ".join(f"{i}. {a}." for i, a in enumerate(previous, 1))) \
            if history and previous else ("\nPrevious actions: none" if history else "")
        body = REALWEB.format(task=payload["task"], history=said, plans=_plans(options), letters=letters,
                              plan_len=meta.get("plan_len", 4))
    else:
        body = EDGE.format(task=payload["task"], plans=_plans(options), letters=letters)
    return f"{body}\n\n{instruction(test, style, kind)}"


def _unlisted(question: str, options: dict[str, str], letters: str, asked: str) -> str:
    """``question`` less its option list (with its heading), the letters of "Which plan (A, B, C, D)" and the
    instruction that closes it; an error where the list or the instruction is not there (the templates changed)."""
    closing = f"\n\n{asked}"
    listing = next((f"\n{head}\n{_plans(options)}" for head in ("Plans:", "Possible action plans:", "Options:")
                    if f"\n{head}\n{_plans(options)}" in question), None)
    if listing is None or closing not in question:
        raise ValueError("a web-planning question without its option list or its instruction: the unlisted form "
                         "no longer matches the templates")
    return question.replace(closing, "", 1).replace(listing, "", 1).replace(f" ({letters})", "", 1)


_MARKER = re.compile(r"(?:OUTPUT CHOICE|OUTPUT|FINAL ANSWER|ANSWER)\s*[:：]\s*(.+)", re.IGNORECASE)
_TRIM = " \t\"'`*()[]{}.,!:;"


def _final(text: str) -> str:
    found = _MARKER.findall(text)
    return found[-1].strip() if found else text.strip()


def read_answer(text: str, kind: str, letters: tuple[str, ...]) -> str | None:
    """The label a reply gives by the rules, or None."""
    part = _final(text)
    alone = part.strip(_TRIM)
    if kind == "yesno":
        match = re.fullmatch(r"(yes|no)\b.*", alone, flags=re.IGNORECASE | re.DOTALL)
        if match and len(alone.split()) <= 3:
            return match.group(1).capitalize()
        found = re.findall(r"\b(yes|no)\b", part, flags=re.IGNORECASE)
        return found[-1].capitalize() if len(set(f.lower() for f in found)) == 1 else None
    picture = re.fullmatch(r"picture\s*([12])", alone, flags=re.IGNORECASE)
    if kind == "picture" or (picture and "A" in letters):
        found = [picture.group(1)] if picture else re.findall(r"\bpicture\s*([12])\b", part, flags=re.IGNORECASE)
        if found:
            label = f"Picture {found[-1]}"
            return label if kind == "picture" else ("A" if found[-1] == "1" else "B")
        if kind == "picture":
            return None
    choices = "".join(letters)
    if re.fullmatch(rf"[{choices}]", alone, flags=re.IGNORECASE):
        return alone.upper()
    found = re.findall(rf"\b(?:plan|option|choice|answer is|answer)\s*[:：]?\s*\(?([{choices}])\b", part,
                       flags=re.IGNORECASE)
    return found[-1].upper() if found else None


def labels(kind: str, letters: tuple[str, ...]) -> tuple[str, ...]:
    return LABELS[kind] or letters


JUDGE = """A model answered a {what} question; its reply is below. Which answer does the reply finally give? \
Answer with exactly one of: {labels}, or "unclear" if it gives none or several.

Reply:
{reply}"""


def judge_prompt(kind: str, letters: tuple[str, ...], reply: str) -> str:
    what = {"yesno": "yes/no", "picture": "two-picture ordering", "letter": "multiple-choice"}[kind]
    return JUDGE.format(what=what, labels=", ".join(f'"{label}"' for label in labels(kind, letters)),
                        reply=reply[-6000:])


def read_judged(reply: str, kind: str, letters: tuple[str, ...]) -> str | None:
    """The judge's label; None for "unclear" or anything else."""
    said = reply.strip().strip(_TRIM).lower()
    return next((label for label in labels(kind, letters) if label.lower() == said), None)
