"""How hard one set of a benchmark's items is against another, the one report the freeze of a fresh version
(``tasks.releasing``), ``benchwright release diff --difficulty`` and a release's card share: every difficulty
descriptor's two distributions (``tasks.difficulty``) and every reference solver's two scores with their
confidence intervals (``tasks.solver_scores``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def hardness_report(before: list[Any], after: list[Any], describe: Callable[[Any], dict[str, float]],
                    solve: Callable[[Any, Callable[[str], bytes]], dict[str, bool]] | None = None,
                    image: Callable[[str], bytes] | None = None) -> dict[str, Any]:
    """``descriptors``: one row per descriptor, ``differs``: those flagged, ``rule``: when one is; with ``solve``
    (and ``image``, reading a blob by sha256), ``solvers``, ``solvers differ`` and ``solver rule`` too."""
    from tasks.difficulty import ALPHA, EFFECT, compare, descriptors

    compared = compare(descriptors(before, describe), descriptors(after, describe))
    report: dict[str, Any] = {"rule": f"Kolmogorov-Smirnov p < {ALPHA} and |Cohen's d| > {EFFECT}",
                              "descriptors": [c.row() for c in compared],
                              "differs": [c.descriptor for c in compared if c.flagged]}
    if solve is None or image is None:
        return report
    from tasks.solver_scores import RULE, compare_scores, scores

    rows = compare_scores(scores(before, solve, image), scores(after, solve, image))
    return {**report, "solver rule": RULE, "solvers": rows,
            "solvers differ": [row["solver"] for row in rows if row["differs"] == "yes"]}
