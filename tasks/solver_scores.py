"""How a benchmark's reference solvers score two release versions: model-free players (a benchmark names them:
``BenchmarkPlugin.solvers``, e.g. a maze walker that sees two moves ahead) probe whether a fresh version is as hard
as the one before it in ways no single descriptor names.

Each solver's score is the share of instances it solves, with a 95% Wilson interval (``scipy.stats.binomtest``'s
``proportion_ci``: honest at small counts and near 0 or 1, where the normal interval is not). Two versions' scores
are compared by Fisher's exact test on the solved / unsolved counts; a solver is flagged when the test finds a
difference at ``tasks.difficulty.ALPHA`` and the scores differ by more than ``TOLERANCE`` (so a large version is not
flagged for a point nobody would notice)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tasks.difficulty import ALPHA

TOLERANCE = 0.10  # the least difference of two versions' solver scores that is flagged
LEVEL = 0.95


@dataclass(frozen=True)
class Score:
    solved: int
    of: int

    @property
    def share(self) -> float:
        return self.solved / self.of if self.of else 0.0

    def interval(self) -> tuple[float, float]:
        """The 95% Wilson interval of the share."""
        from scipy.stats import binomtest

        if not self.of:
            return 0.0, 1.0
        found = binomtest(self.solved, self.of).proportion_ci(confidence_level=LEVEL, method="wilson")
        return float(found.low), float(found.high)

    def text(self) -> str:
        low, high = self.interval()
        return f"{100 * self.share:.1f}% [{100 * low:.1f}, {100 * high:.1f}] of {self.of}"


def scores(records: Iterable[Any], solve: Callable[[Any, Callable[[str], bytes]], dict[str, bool]],
           image: Callable[[str], bytes]) -> dict[str, Score]:
    """Each solver's score over ``records``; ``solve(record, image)`` says which solvers solve the record (a solver
    that does not play the record's task leaves it out); ``image`` reads an image by its sha256."""
    solved: dict[str, list[bool]] = defaultdict(list)
    for record in records:
        for name, right in solve(record, image).items():
            solved[name].append(bool(right))
    return {name: Score(sum(found), len(found)) for name, found in sorted(solved.items())}


def compare_scores(old: dict[str, Score], new: dict[str, Score], alpha: float = ALPHA,
                   tolerance: float = TOLERANCE) -> list[dict[str, Any]]:
    """One row per solver both versions have: the two scores with their intervals, Fisher's p, whether it differs."""
    from scipy.stats import fisher_exact

    rows = []
    for name in sorted(set(old) & set(new)):
        before, after = old[name], new[name]
        table = [[before.solved, before.of - before.solved], [after.solved, after.of - after.solved]]
        p = float(fisher_exact(table).pvalue) if before.of and after.of else 1.0
        differs = p < alpha and abs(after.share - before.share) > tolerance
        rows.append({"solver": name, "earlier": before.text(), "new": after.text(), "p (Fisher)": float(f"{p:.3g}"),
                     "differs": "yes" if differs else "no"})
    return rows


RULE = f"Fisher's exact p < {ALPHA} and the scores {100 * TOLERANCE:.0f} points apart"
