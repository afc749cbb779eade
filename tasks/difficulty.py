"""Whether a fresh release version is as hard as the one before it: each instance's difficulty descriptors (a
benchmark says what they are: ``BenchmarkPlugin.difficulty``, e.g. a maze's moves and branching cells) compared
version against version, per descriptor, by a two-sample test.

A descriptor is flagged when its two distributions differ both significantly and by more than a small effect:
Kolmogorov-Smirnov's two-sample test (``scipy.stats.ks_2samp``, which needs no assumption on the distributions'
shape, and descriptors are counts with few values) at ``ALPHA``, and a difference of means above ``EFFECT`` pooled
standard deviations (Cohen's d; 0.2 is "small"), so a large version is not flagged for a difference nobody would
notice and a small one is not flagged by chance."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from statistics import fmean, pstdev
from typing import Any

ALPHA = 0.01
EFFECT = 0.2


@dataclass(frozen=True)
class Compared:
    """One descriptor in two versions."""

    descriptor: str
    old_n: int
    new_n: int
    old_mean: float
    new_mean: float
    effect: float  # (new mean - old mean) / pooled standard deviation; 0 when both are constant and equal
    p_value: float  # Kolmogorov-Smirnov two-sample test
    flagged: bool

    def row(self) -> dict[str, Any]:
        return {"descriptor": self.descriptor, "old n": self.old_n, "new n": self.new_n,
                "old mean": round(self.old_mean, 3), "new mean": round(self.new_mean, 3),
                "effect (d)": round(self.effect, 3), "p (KS)": float(f"{self.p_value:.3g}"),
                "differs": "yes" if self.flagged else "no"}


def descriptors(records: Iterable[Any], describe: Callable[[Any], dict[str, float]]) -> dict[str, list[float]]:
    """Each descriptor's values over the records (a record without one leaves it out)."""
    found: dict[str, list[float]] = defaultdict(list)
    for record in records:
        for name, value in describe(record).items():
            found[name].append(float(value))
    return dict(found)


def compare(old: dict[str, list[float]], new: dict[str, list[float]], alpha: float = ALPHA,
            effect: float = EFFECT) -> list[Compared]:
    """Every descriptor both versions have, in name order."""
    from scipy.stats import ks_2samp

    compared = []
    for name in sorted(set(old) & set(new)):
        before, after = old[name], new[name]
        spread = ((pstdev(before) ** 2 + pstdev(after) ** 2) / 2) ** 0.5
        shift = fmean(after) - fmean(before)
        d = shift / spread if spread else (0.0 if shift == 0 else float("inf") * (1 if shift > 0 else -1))
        p = float(ks_2samp(before, after).pvalue) if spread else (1.0 if shift == 0 else 0.0)
        compared.append(Compared(name, len(before), len(after), fmean(before), fmean(after), d, p,
                                 p < alpha and abs(d) > effect))
    return compared



def matched_subset(before: dict[str, list[float]], candidates: list[Any], describe: Callable[[Any], dict[str, float]],
                   min_share: float, alpha: float = ALPHA, effect: float = EFFECT) -> tuple[list[Any], bool]:
    """The candidates resampled until no descriptor differs from ``before`` (a fresh version made as hard as the one
    before it): while one is flagged, the candidate lying furthest out in the direction of the most shifted
    descriptor (the largest |d|) is left out, never more than ``1 - min_share`` of them; (the ones kept, whether
    no descriptor differs now). Deterministic: ties go to the candidate listed last."""
    described = [describe(candidate) for candidate in candidates]
    kept = list(range(len(candidates)))
    least = max(1, -(-len(candidates) * min_share // 1))

    def values() -> dict[str, list[float]]:
        found: dict[str, list[float]] = defaultdict(list)
        for index in kept:
            for name, value in described[index].items():
                found[name].append(float(value))
        return dict(found)

    while True:
        flagged = [c for c in compare(before, values(), alpha, effect) if c.flagged]
        if not flagged or len(kept) <= least:
            return [candidates[index] for index in kept], not flagged
        worst = max(flagged, key=lambda c: abs(c.effect))
        sign = 1.0 if worst.new_mean > worst.old_mean else -1.0
        holding = [index for index in kept if worst.descriptor in described[index]]
        kept.remove(max(reversed(holding), key=lambda index: sign * described[index][worst.descriptor]))
