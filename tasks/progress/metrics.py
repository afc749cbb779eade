"""PROGRESS-BENCH metrics (ProgressLM Sec. 4 and its ``eval/metric.py``), with the edge cases decided here and
counted, never hidden.

Progress values are fractions in [0, 1]; ``predicted`` None means the model answered "n/a".

- NSE, normalised score error, on answerable samples with a numeric answer: |p - p*| / max(p*, 1 - p*). The
  denominator is the largest error possible for that p*, so NSE lies in [0, 1]. An "n/a" answer has no NSE (it
  counts in AFRR instead).
- PRC, progress rank correlation: Spearman's rho between predicted and true progress over the answerable samples of
  one trajectory *within one setting* (same-view, cross-view and text are separate files in the benchmark and are
  scored separately by the official code, so a trajectory's same-view and cross-view rows are two sequences, never
  one), averaged over trajectories. Ties get average ranks. As in the official code, a trajectory is skipped, and
  counted by reason, when it has no numeric answer, only one, when all its numeric predictions are equal (the
  official code skips these; the paper then prints NaN when nothing is left), or when its true progress is constant.
- AFRR, answerable false rejection rate: the share of answerable samples answered "n/a".
- UDA, unanswerable detection accuracy: the share of unanswerable samples answered "n/a".
- An unparseable answer is neither a number nor an "n/a": NSE and PRC never see it; in AFRR and UDA it counts in
  the denominator as no rejection and no detection.
A metric with no sample to average over is None.

Averages (ProgressLM Table 1, checked against its printed rows): Vision is the sample-weighted mean of the
same-view and cross-view values, Micro the sample-weighted mean of the Vision and Text values, Macro the plain mean
of Vision and Text. The weights are answerable samples (NSE, PRC, AFRR) or unanswerable samples (UDA). A part that
has samples but no value (every trajectory skipped) makes the average None, as the paper's NaN does; a part with no
samples at all is left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Scored:
    trajectory: str
    answerable: bool
    truth: float | None  # p*, None for unanswerable samples
    predicted: float | None  # None: the model answered "n/a"
    parsed: bool = True  # False: the answer could be read neither as a number nor as "n/a"


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
    constant_predictions: int = 0  # trajectories skipped because every numeric prediction was equal


# The official code's reasons for leaving a trajectory out of PRC, in the order it checks them.
NO_ANSWER = "no numeric answer"
ONE_ANSWER = "one numeric answer"
CONSTANT_PREDICTION = "constant predictions"
CONSTANT_TRUTH = "constant true progress"


def _skip_reason(group: list[Scored]) -> str | None:
    if not group:
        return NO_ANSWER
    if len(group) == 1:
        return ONE_ANSWER
    if len({s.predicted for s in group}) == 1:
        return CONSTANT_PREDICTION
    if len({s.truth for s in group}) == 1:
        return CONSTANT_TRUTH
    return None


def sample_marks(sample: Scored) -> dict[str, float | None]:
    """What one sample counts in the per-sample metrics (None: not counted there): NSE of a numeric answer to an
    answerable sample, AFRR's rejection of an answerable one, UDA's detection of an unanswerable one. The one
    per-sample rule: ``progress_scores`` averages these, and the harness exports report them per row."""
    abstained = float(sample.parsed and sample.predicted is None)
    if not sample.answerable:
        return {"nse": None, "afrr": None, "uda": abstained}
    numeric = sample.parsed and sample.predicted is not None and sample.truth is not None
    return {"nse": nse(sample.truth, sample.predicted) if numeric else None,  # type: ignore[arg-type]
            "afrr": abstained, "uda": None}


def _mean_of(marks: list[dict[str, float | None]], metric: str) -> float | None:
    counted = [mark[metric] for mark in marks if mark[metric] is not None]
    return sum(counted) / len(counted) if counted else None  # type: ignore[arg-type]


def rank_correlation(samples: list[Scored]) -> tuple[float | None, int, dict[str, int]]:
    """PRC over samples: the mean Spearman's rho of the trajectories scored, their number, and the skipped ones
    by reason."""
    numeric = [s for s in samples if s.answerable and sample_marks(s)["nse"] is not None]
    # every trajectory with an answerable sample is a sequence, even one whose answers were all "n/a"
    by_trajectory: dict[str, list[Scored]] = {s.trajectory: [] for s in samples
                                               if s.answerable and s.truth is not None}
    for sample in numeric:
        by_trajectory[sample.trajectory].append(sample)
    rhos: list[float] = []
    skipped: dict[str, int] = {}
    for group in by_trajectory.values():
        reason = _skip_reason(group)
        rho = None if reason else spearman([s.truth for s in group], [s.predicted for s in group])  # type: ignore
        if rho is None:
            reason = reason or CONSTANT_TRUTH
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        rhos.append(rho)
    return (sum(rhos) / len(rhos) if rhos else None), len(rhos), skipped


def progress_scores(samples: list[Scored]) -> ProgressScores:
    """The four metrics over the samples of one setting; PRC groups them by ``trajectory``."""
    marks = [sample_marks(sample) for sample in samples]
    prc, trajectories, skipped = rank_correlation(samples)
    return ProgressScores(
        nse=_mean_of(marks, "nse"), prc=prc, afrr=_mean_of(marks, "afrr"), uda=_mean_of(marks, "uda"),
        answerable=sum(s.answerable for s in samples), unanswerable=sum(not s.answerable for s in samples),
        prc_trajectories=trajectories, prc_skipped=skipped, constant_predictions=skipped.get(CONSTANT_PREDICTION, 0))


def _weighted(parts: list[tuple[float | None, int]]) -> float | None:
    """The mean of values weighted by their sample counts; parts without samples are left out, and a part with
    samples but no value makes the whole None (the paper prints NaN there)."""
    present = [(value, weight) for value, weight in parts if weight > 0]
    if not present or any(value is None for value, _ in present):
        return None
    return sum(value * weight for value, weight in present) / sum(w for _, w in present)  # type: ignore[operator]


def combine(parts: list[ProgressScores]) -> ProgressScores:
    """The sample-weighted average of settings scored on their own (Vision from same and cross view, Micro from
    Vision and Text): NSE, PRC and AFRR weighted by answerable samples, UDA by unanswerable ones."""
    skipped: dict[str, int] = {}
    for part in parts:
        for reason, count in part.prc_skipped.items():
            skipped[reason] = skipped.get(reason, 0) + count

    def by_answerable(metric: str) -> float | None:
        return _weighted([(getattr(p, metric), p.answerable) for p in parts])

    return ProgressScores(
        nse=by_answerable("nse"), prc=by_answerable("prc"), afrr=by_answerable("afrr"),
        uda=_weighted([(p.uda, p.unanswerable) for p in parts]),
        answerable=sum(p.answerable for p in parts), unanswerable=sum(p.unanswerable for p in parts),
        prc_trajectories=sum(p.prc_trajectories for p in parts), prc_skipped=skipped,
        constant_predictions=sum(p.constant_predictions for p in parts))


# -- the tables of the paper: breakdowns, averages, the anchor step --------------------------------------------

SETTINGS = ("same", "cross", "text")  # visual same-view, visual cross-view, text demo


@dataclass(frozen=True)
class ProgressSample:
    """One scored sample with what the breakdowns need. ``predicted`` None means "n/a"; unparseable answers have
    ``parsed`` False and are kept out of NSE/PRC, count as no rejection in AFRR and as a miss in UDA."""

    trajectory: str
    setting: str  # one of SETTINGS
    answerable: bool
    truth: float | None
    predicted: float | None
    parsed: bool = True
    ref: int | None = None  # the anchor step the answer named (two-stage answers)
    closest: int | None = None  # the true closest step
    step_progress: tuple[float, ...] = ()  # progress of each demo entry, for the score-aligned step

    @property
    def modality(self) -> str:
        return "text" if self.setting == "text" else "vision"

    def scored(self) -> Scored:
        # A sequence is one trajectory within one setting: its same-view, cross-view and text samples are three.
        return Scored(f"{self.trajectory}|{self.setting}", self.answerable, self.truth, self.predicted, self.parsed)


def _scores_of(samples: list[ProgressSample]) -> ProgressScores:
    return progress_scores([s.scored() for s in samples])


def score_aligned_step(score: float, step_progress: tuple[float, ...]) -> int:
    """1-based index of the demo entry whose progress is nearest the predicted score (ties: the earlier one):
    ProgressLM's score-aligned demonstration index (App. C.3)."""
    return min(range(len(step_progress)), key=lambda i: (abs(step_progress[i] - score), i)) + 1


@dataclass
class ProgressReport:
    """Table 1 (vision, text, micro and macro averages), Table 2 (same vs cross view), UDA per modality, the
    anchor-step accuracy, unparseable counts, and the anchor vs score-aligned step pairs for the heatmaps."""

    groups: dict[str, ProgressScores]  # same, cross, text (each on its own), vision and micro (weighted averages)
    macro: dict[str, float | None]  # nse, prc, afrr, uda: the plain mean of the vision and text values
    ref_accuracy: dict[str, float | None]  # per setting and "all": share of answerable samples whose ref is right
    ref_counted: dict[str, int]
    unparsed: dict[str, int]  # per setting
    anchor_pairs: dict[str, list[tuple[int, int]]]  # per setting: (anchor step, score-aligned step)


def progress_report(samples: list[ProgressSample]) -> ProgressReport:
    by_setting = {s: [x for x in samples if x.setting == s] for s in SETTINGS}
    groups = {setting: _scores_of(by_setting[setting]) for setting in SETTINGS}
    groups["vision"] = combine([groups["same"], groups["cross"]])
    groups["micro"] = combine([groups["vision"], groups["text"]])
    macro: dict[str, float | None] = {}
    for metric in ("nse", "prc", "afrr", "uda"):
        # The plain mean of the two modalities; a modality without samples is left out (its value is then the
        # other's), one with samples but no value makes it None.
        weight = "unanswerable" if metric == "uda" else "answerable"
        macro[metric] = _weighted([(getattr(groups[g], metric), 1 if getattr(groups[g], weight) else 0)
                                   for g in ("vision", "text")])
    ref_accuracy: dict[str, float | None] = {}
    ref_counted: dict[str, int] = {}
    for name, group in [*by_setting.items(), ("all", samples)]:
        # Over answerable samples (an "n/a" or missing anchor counts as wrong); None when no answer of the group
        # names an anchor at all, as with the direct strategy.
        answerable = [s for s in group if s.answerable and s.closest is not None]
        named = any(s.ref is not None for s in group)
        ref_counted[name] = len(answerable) if named else 0
        ref_accuracy[name] = (sum(s.ref == s.closest for s in answerable) / len(answerable)
                              if answerable and named else None)
    pairs = {name: [(s.ref, score_aligned_step(s.predicted, s.step_progress)) for s in group
                    if s.answerable and s.parsed and s.ref is not None and s.predicted is not None
                    and s.step_progress and 1 <= s.ref <= len(s.step_progress)]
             for name, group in by_setting.items()}
    return ProgressReport(groups=groups, macro=macro, ref_accuracy=ref_accuracy, ref_counted=ref_counted,
                          unparsed={name: sum(not s.parsed for s in group) for name, group in by_setting.items()},
                          anchor_pairs=pairs)  # type: ignore[arg-type]
