"""The form model of the web-planning tests without a browser: strict operations, the goal read from the
instruction, the shortest recovery, the edge cases' distractor rules and the future-state plan families."""

from __future__ import annotations

import random

import pytest

from tasks.webplan.edge import RULES, candidates, distractors, draft_edge
from tasks.webplan.forms import (
    SUBMIT,
    Action,
    FormState,
    InvalidActionError,
    apply,
    goal_of,
    plan_words,
    recovery,
    run_plan,
)
from tasks.webplan.future import HORIZONS, draft_pair

BOXES = FormState(checkboxes=(("iyHxAx", False), ("Br", True), ("q7", False)))
SEQUENCE = FormState(checkboxes=(("1", False), ("2", False), ("3", False)), named_boxes=False, slider=8)
SEQUENCE_2 = FormState(radios=3, textboxes=("", "", ""))


def test_operations_are_strict_and_typing_appends() -> None:
    with pytest.raises(InvalidActionError, match="already checked"):
        apply(BOXES, Action("check", "Br"))
    with pytest.raises(InvalidActionError, match="already unchecked"):
        apply(BOXES, Action("uncheck", "iyHxAx"))
    assert apply(apply(BOXES, Action("click", "Br")), Action("click", "Br")) == BOXES
    with pytest.raises(InvalidActionError, match="cannot reach 13"):  # MiniWob++ would clamp at 10
        apply(SEQUENCE, Action("slider", value=5))
    assert apply(SEQUENCE, Action("slider", value=-18)).slider == -10
    typed = run_plan(SEQUENCE_2, [Action("type", "2", "99"), Action("type", "2", "27")])
    assert typed.textboxes == ("", "9927", "")
    with pytest.raises(InvalidActionError, match="already empty"):
        apply(SEQUENCE_2, Action("clear", "1"))
    with pytest.raises(InvalidActionError, match="already selected"):
        run_plan(SEQUENCE_2, [Action("radio", "2"), Action("radio", "2")])
    assert run_plan(BOXES, [Action("uncheck", "Br"), SUBMIT, Action("check", "Br")]).box("Br") is False


def test_plain_words_follow_the_papers_plans() -> None:
    plan = [Action("slider", value=3), Action("uncheck", "3"), Action("click", "2"), SUBMIT]
    assert plan_words(SEQUENCE, plan) == [
        "Move the slider handle to the right until the slider value increases by 3", "Uncheck the 3rd checkbox",
        "Click the 2nd checkbox", "Hit Submit"]
    assert Action("check", "iyHxAx").words(BOXES) == "Check 'iyHxAx'"
    assert Action("slider", value=-2).words(SEQUENCE).endswith("to the left until the slider value decreases by 2")


def test_goal_is_read_from_the_instruction_not_the_reward() -> None:
    goal = goal_of("click-checkboxes", "Select iyHxAx, q7 and click Submit.", BOXES)
    assert goal.boxes == {"iyHxAx": True, "Br": False, "q7": True}
    assert goal.misses(BOXES) == ["'iyHxAx' should be checked", "'Br' should be unchecked", "'q7' should be checked"]
    assert goal_of("click-checkboxes", "Select nothing and click Submit.", BOXES).boxes["Br"] is False
    sequence = goal_of("form-sequence", "Select -4 with the slider, click the 2nd checkbox, then hit Submit.",
                       SEQUENCE)
    assert (sequence.slider, sequence.boxes) == (-4, {"1": False, "2": True, "3": False})
    second = goal_of("form-sequence-2", 'Check the 3rd radio button and enter the number "-6" into the 1st '
                                        "textbox.", SEQUENCE_2)
    # a wrong radio with the right number is what MiniWob++ rewards with 1; our check does not
    assert second.misses(FormState(radios=3, radio=1, textboxes=("-6", "", ""))) == [
        "the 3rd radio button should be selected"]
    with pytest.raises(ValueError, match="cannot read"):
        goal_of("form-sequence", "Do something else.", SEQUENCE)
    with pytest.raises(ValueError, match="boxes the form lacks"):
        goal_of("click-checkboxes", "Select zz and click Submit.", BOXES)


def test_recovery_clears_before_typing_and_reaches_the_goal() -> None:
    start = FormState(radios=3, radio=1, textboxes=("99", "5", ""))
    goal = goal_of("form-sequence-2", 'Check the 3rd radio button and enter the number "27" into the 1st '
                                      "textbox.", start)
    plan = recovery(start, goal)
    assert plan_words(start, plan) == ["Select the 3rd radio button", "Clear the 1st textbox",
                                       'Type "27" into the 1st textbox', "Clear the 2nd textbox", "Hit Submit"]
    assert goal.reached(run_plan(start, plan))


@pytest.mark.parametrize(("task", "utterance", "clean"), [
    ("click-checkboxes", "Select iyHxAx, q7 and click Submit.", BOXES),
    ("form-sequence", "Select -4 with the slider, click the 2nd checkbox, then hit Submit.", SEQUENCE),
    ("form-sequence-2", 'Check the 2nd radio button and enter the number "45" into the 1st textbox.', SEQUENCE_2),
])
def test_edge_cases_have_exactly_one_plan_that_reaches_the_goal(task: str, utterance: str, clean: FormState) -> None:
    goal = goal_of(task, utterance, clean)
    built = [draft_edge(task, seed, utterance, clean, goal) for seed in range(12)]
    drafts = [d for d in built if not isinstance(d, str)]
    assert len(drafts) >= 8
    for draft in drafts:
        assert not goal.reached(draft.start) and draft.start == run_plan(clean, draft.disturbance)
        reached = [goal.reached(run_plan(draft.start, plan)) for _, plan in draft.plans]
        assert reached.count(True) == 1 and draft.plans[reached.index(True)][0] == "right"
        assert draft.answer == "ABCD"[reached.index(True)]
        texts = {tuple(plan_words(draft.start, plan)) for _, plan in draft.plans}
        assert len(texts) == 4 and all(plan[-1] == SUBMIT for _, plan in draft.plans)
        assert {rule for rule, _ in draft.plans} - {"right"} <= set(RULES)
    assert len({d.answer for d in drafts}) > 1  # the right plan is not always in one place
    assert draft_edge(task, 3, utterance, clean, goal) == draft_edge(task, 3, utterance, clean, goal)


def test_distractor_rules_by_hand() -> None:
    clean = FormState(radios=3, textboxes=("", "", ""))
    start = FormState(radios=3, radio=1, textboxes=("99", "", ""))  # wrong radio, 99 typed into the 1st box
    goal = goal_of("form-sequence-2", 'Check the 3rd radio button and enter the number "27" into the 1st '
                                      "textbox.", clean)
    right = recovery(start, goal)
    found = {rule: [plan_words(start, plan) for plan in plans]
             for rule, plans in candidates(clean, start, goal, right, random.Random(0)).items()}
    unclear = ["Select the 3rd radio button", 'Type "27" into the 1st textbox', "Hit Submit"]
    assert found["ignores the disturbance"] == [unclear] and found["types without clearing"] == [unclear]
    assert run_plan(start, recovery(clean, goal)).textboxes[0] == "9927"
    assert ["Select the 3rd radio button", "Clear the 1st textbox", "Hit Submit"] in found["misses a fix"]
    assert found["wrong amount"] == []  # no slider
    chosen = distractors(clean, start, goal, right, random.Random(0), count=3)
    assert chosen is not None and len({tuple(plan_words(start, p)) for _, p in chosen}) == 3
    assert all(not goal.reached(run_plan(start, plan)) for _, plan in chosen)
    assert distractors(clean, start, goal, right, random.Random(0), count=40) is None  # the rules give fewer


@pytest.mark.parametrize("horizon", list(HORIZONS))
@pytest.mark.parametrize("same", [True, False])
def test_future_pairs_have_the_label_the_model_gives(horizon: str, same: bool) -> None:
    low, high = HORIZONS[horizon]
    families = set()
    for seed in range(10):
        pair = draft_pair("form-sequence", seed, "", SEQUENCE, horizon, same)
        assert not isinstance(pair, str)
        for plan in (pair.plan_a, pair.plan_b):
            assert low <= len(plan) - 1 <= high and plan[-1] == SUBMIT
        assert (run_plan(SEQUENCE, pair.plan_a) == run_plan(SEQUENCE, pair.plan_b)) is same
        assert pair.plan_a != pair.plan_b
        families.add(pair.family)
    assert len(families) >= 2
