"""PROGRESS-BENCH metrics against values computed by hand, edge cases included."""

from __future__ import annotations

import pytest

from tasks.progress.metrics import Scored, average_ranks, nse, progress_scores, spearman


def test_nse_divides_by_the_largest_possible_error():
    assert nse(0.25, 0.5) == pytest.approx(0.25 / 0.75)
    assert nse(0.5, 1.0) == pytest.approx(1.0)  # max(0.5, 0.5) = 0.5
    assert nse(0.9, 0.0) == pytest.approx(1.0)
    assert nse(0.0, 0.0) == 0.0


def test_spearman_with_ties_and_degenerate_inputs():
    assert average_ranks([3.0, 1.0, 3.0, 2.0]) == [3.5, 1.0, 3.5, 2.0]
    assert spearman([0.1, 0.2, 0.3], [0.2, 0.4, 0.9]) == pytest.approx(1.0)
    assert spearman([0.1, 0.2, 0.3], [0.9, 0.5, 0.1]) == pytest.approx(-1.0)
    # truth ranks 1,2,3; prediction ranks 1.5,1.5,3 -> Pearson of ranks = 1.5 / sqrt(2 * 1.5) = 0.866
    assert spearman([0.1, 0.2, 0.3], [0.4, 0.4, 0.8]) == pytest.approx(3 ** 0.5 / 2)
    assert spearman([0.5, 0.5], [0.1, 0.9]) is None  # constant truth: undefined
    assert spearman([0.1, 0.9], [0.5, 0.5]) == 0.0  # constant prediction: orders nothing


def test_scores_by_hand():
    samples = [
        # trajectory a: perfect order, errors 0.1/0.9 and 0.1/0.7 -> NSE 0.1111 and 0.1429
        Scored("a", True, 0.1, 0.2), Scored("a", True, 0.7, 0.8),
        # trajectory b: reversed order (rho -1), one "n/a" that counts in AFRR only
        Scored("b", True, 0.2, 0.6), Scored("b", True, 0.6, 0.2), Scored("b", True, 0.9, None),
        # trajectory c: constant predictions -> skipped and counted, as the official code does
        Scored("c", True, 0.3, 0.5), Scored("c", True, 0.8, 0.5),
        # trajectory d: one valid point -> skipped; trajectory e: all "n/a" -> skipped
        Scored("d", True, 0.4, 0.4), Scored("e", True, 0.5, None),
        # trajectory f: constant truth -> skipped
        Scored("f", True, 0.5, 0.1), Scored("f", True, 0.5, 0.9),
        # unanswerable: one detected, one not
        Scored("a", False, None, None), Scored("b", False, None, 0.3),
    ]
    scores = progress_scores(samples)
    expected_nse = [0.1 / 0.9, 0.1 / 0.7, 0.4 / 0.8, 0.4 / 0.6, 0.2 / 0.7, 0.3 / 0.8, 0.0, 0.4 / 0.5, 0.4 / 0.5]
    assert scores.nse == pytest.approx(sum(expected_nse) / len(expected_nse))
    assert scores.prc == pytest.approx((1.0 - 1.0) / 2)
    assert scores.prc_trajectories == 2 and scores.constant_predictions == 1
    assert scores.prc_skipped == {"one numeric answer": 1, "no numeric answer": 1, "constant predictions": 1,
                                  "constant true progress": 1}
    assert scores.afrr == pytest.approx(2 / 11) and scores.uda == pytest.approx(1 / 2)
    assert (scores.answerable, scores.unanswerable) == (11, 2)


def test_a_model_that_always_answers_the_same_has_no_prc():
    # every trajectory constant: nothing left to average, as the paper's NaN for collapsed models
    scores = progress_scores([Scored(t, True, truth, 0.5) for t in "ab" for truth in (0.2, 0.6, 0.9)])
    assert scores.prc is None and scores.constant_predictions == 2 and scores.prc_trajectories == 0


def test_empty_inputs_give_no_score():
    scores = progress_scores([])
    assert (scores.nse, scores.prc, scores.afrr, scores.uda) == (None, None, None, None)
    only_na = progress_scores([Scored("a", True, 0.5, None), Scored("a", True, 0.6, None)])
    assert only_na.nse is None and only_na.afrr == 1.0 and only_na.prc_skipped == {"no numeric answer": 1}
