"""PROGRESS-BENCH metrics (ProgressLM Sec. 4), with the edge cases decided here and counted, never hidden.

Progress values are fractions in [0, 1]; ``predicted`` None means the model answered "n/a".

- NSE, normalised score error, on answerable samples with a numeric answer: |p - p*| / max(p*, 1 - p*). The
  denominator is the largest error possible for that p*, so NSE lies in [0, 1]; it is never 0 (p* in [0, 1] gives
  at least 0.5). An "n/a" answer has no NSE (it counts in AFRR instead).
- PRC, progress rank correlation: Spearman's rho between predicted and true progress over the answerable samples of
  one trajectory that have a numeric answer, averaged over trajectories. Ties get average ranks (rho is then the
  Pearson correlation of the ranks). A trajectory is skipped, and counted by reason, when it has fewer than two such
  samples or when its true progress is constant (rho undefined). Constant predictions over a non-constant truth give
  rho = 0 and are counted: they order nothing, and skipping them would reward a collapsed model.
- AFRR, answerable false rejection rate: the share of answerable samples answered "n/a".
- UDA, unanswerable detection accuracy: the share of unanswerable samples answered "n/a".
A metric with no sample to average over is None.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Scored:
    trajectory: str
    answerable: bool
    truth: float | None  # p*, None for unanswerable samples
    predicted: float | None  # None: the model answered "n/a"


def nse(truth: float, predicted: float) -> float:
    return abs(predicted - truth) / max(truth, 1.0 - truth)


def average_ranks(values: list[float]) -> list[float]:
    """1-based ranks, tied values sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(truth: list[float], predicted: list[float]) -> float | None:
    """Spearman's rho with average ranks; None when the truth is constant; 0 when only the prediction is."""
    x, y = average_ranks(truth), average_ranks(predicted)
    mean_x, mean_y = sum(x) / len(x), sum(y) / len(y)
    var_x = sum((v - mean_x) ** 2 for v in x)
    var_y = sum((v - mean_y) ** 2 for v in y)
    if var_x == 0:
        return None
    if var_y == 0:
        return 0.0
    covariance = sum((a - mean_x) * (b - mean_y) for a, b in zip(x, y, strict=True))
    return covariance / (var_x * var_y) ** 0.5


@dataclass
class ProgressScores:
    nse: float | None
    prc: float | None
    afrr: float | None
    uda: float | None
    answerable: int
    unanswerable: int
    prc_trajectories: int
    prc_skipped: dict[str, int] = field(default_factory=dict)  # reason -> trajectories
    constant_predictions: int = 0


def progress_scores(samples: list[Scored]) -> ProgressScores:
    answerable = [s for s in samples if s.answerable]
    unanswerable = [s for s in samples if not s.answerable]
    numeric = [s for s in answerable if s.predicted is not None and s.truth is not None]
    errors = [nse(s.truth, s.predicted) for s in numeric]  # type: ignore[arg-type]
    by_trajectory: dict[str, list[Scored]] = defaultdict(list)
    for sample in numeric:
        by_trajectory[sample.trajectory].append(sample)
    rhos: list[float] = []
    skipped: dict[str, int] = {}
    constant = 0
    # trajectories whose answers were all "n/a" have no valid point at all
    too_few = len({s.trajectory for s in answerable} - set(by_trajectory))
    for group in by_trajectory.values():
        if len(group) < 2:
            too_few += 1
            continue
        rho = spearman([s.truth for s in group], [s.predicted for s in group])  # type: ignore[misc]
        if rho is None:
            skipped["constant true progress"] = skipped.get("constant true progress", 0) + 1
            continue
        constant += len({s.predicted for s in group}) == 1
        rhos.append(rho)
    if too_few:
        skipped["fewer than two valid points"] = too_few
    return ProgressScores(
        nse=sum(errors) / len(errors) if errors else None,
        prc=sum(rhos) / len(rhos) if rhos else None,
        afrr=sum(s.predicted is None for s in answerable) / len(answerable) if answerable else None,
        uda=sum(s.predicted is None for s in unanswerable) / len(unanswerable) if unanswerable else None,
        answerable=len(answerable), unanswerable=len(unanswerable), prc_trajectories=len(rhos),
        prc_skipped=skipped, constant_predictions=constant)
