"""Comparing two versions' difficulty descriptors (``tasks.difficulty``) on distributions whose answer is known."""

from __future__ import annotations

import numpy as np

from tasks.difficulty import compare


def _draws(seed: int, mean: float, n: int = 300) -> list[float]:
    return [float(v) for v in np.random.default_rng(seed).poisson(mean, n)]


def test_two_draws_of_one_distribution_do_not_differ_and_a_shifted_one_does() -> None:
    old = {"moves": _draws(1, 6.0), "branches": _draws(2, 1.0)}
    same = {"moves": _draws(3, 6.0), "branches": _draws(4, 1.0)}
    harder = {"moves": _draws(5, 7.5), "branches": _draws(6, 1.0)}
    assert [c.flagged for c in compare(old, same)] == [False, False]
    flagged = {c.descriptor: c for c in compare(old, harder)}
    assert flagged["moves"].flagged and flagged["moves"].effect > 0.5 and flagged["moves"].p_value < 1e-4
    assert not flagged["branches"].flagged


def test_a_tiny_shift_in_a_large_version_is_significant_but_not_flagged() -> None:
    """Significance alone flags what nobody would notice in 20,000 items: the effect must be small too."""
    old, new = {"moves": _draws(7, 6.0, 20_000)}, {"moves": _draws(8, 6.15, 20_000)}
    (compared,) = compare(old, new)
    assert compared.p_value < 0.01 and abs(compared.effect) < 0.2 and not compared.flagged


def test_constant_descriptors_differ_only_when_their_values_do() -> None:
    (equal,) = compare({"doors": [1.0] * 20}, {"doors": [1.0] * 30})
    (moved,) = compare({"doors": [1.0] * 20}, {"doors": [2.0] * 30})
    assert not equal.flagged and moved.flagged and moved.p_value == 0.0
