"""Reference solvers' scores of two versions: Wilson intervals and Fisher's exact test on known counts."""

from __future__ import annotations

import pytest

from tasks.solver_scores import Score, compare_scores, scores


def test_a_score_has_its_wilson_interval():
    low, high = Score(45, 100).interval()
    assert (round(low, 4), round(high, 4)) == (0.3561, 0.5476)  # Wilson's 95% interval of 45/100
    assert Score(0, 20).interval()[0] == 0.0 and Score(20, 20).interval()[1] == pytest.approx(1.0)
    assert Score(3, 4).text() == "75.0% [30.1, 95.4] of 4"


def test_a_solver_is_flagged_only_when_the_scores_differ_clearly_and_by_more_than_the_tolerance():
    rows = {row["solver"]: row for row in compare_scores(
        {"walker": Score(80, 100), "close": Score(50, 100), "small": Score(3, 4)},
        {"walker": Score(50, 100), "close": Score(53, 100), "small": Score(0, 4)})}
    assert rows["walker"]["differs"] == "yes" and rows["walker"]["p (Fisher)"] < 0.001
    assert rows["close"]["differs"] == "no"  # three points: within the tolerance and no clear difference
    assert rows["small"]["differs"] == "no"  # 75 points apart, but four instances each prove nothing


def test_scores_count_what_each_solver_plays():
    class Item:
        def __init__(self, task: str, easy: bool) -> None:
            self.task, self.easy = task, easy

    def solve(item: Item, image: object) -> dict[str, bool]:
        return {"walker": item.easy} if item.task == "maze" else {}

    found = scores([Item("maze", True), Item("maze", False), Item("jigsaw", True)], solve, lambda sha: b"")
    assert found == {"walker": Score(1, 2)}
