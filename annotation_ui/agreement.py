"""Agreement between annotators who answered the same items.

- Percent agreement: over every pair of answers to the same item, the share of pairs that agree.
- Cohen's kappa, per pair of annotators over the items both answered: kappa = (p_o - p_e) / (1 - p_e), p_o their
  observed agreement, p_e the agreement expected from each one's own answer frequencies. Undefined (None) when
  p_e = 1 (both always gave the same single answer) or they share no item.
- Fleiss' kappa, over items with exactly n answers (n = the queue's overlap, n >= 2): P_i = (sum_j n_ij^2 - n) /
  (n (n - 1)), P_bar their mean, p_j the share of all answers in category j, P_e = sum_j p_j^2;
  kappa = (P_bar - P_e) / (1 - P_e), None when P_e = 1 or no item qualifies.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations


def percent_agreement(answers: dict[str, dict[str, str]]) -> float | None:
    agree = total = 0
    for by_annotator in answers.values():
        for a, b in combinations(by_annotator.values(), 2):
            total += 1
            agree += a == b
    return agree / total if total else None


def cohen_kappa(first: list[str], second: list[str]) -> float | None:
    if not first or len(first) != len(second):
        return None
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    counts_a, counts_b = Counter(first), Counter(second)
    expected = sum(counts_a[c] * counts_b[c] for c in set(first) | set(second)) / (n * n)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def pairwise_cohen(answers: dict[str, dict[str, str]]) -> dict[tuple[str, str], tuple[int, float | None]]:
    """(shared items, kappa) for every pair of annotators who answered at least one item in common."""
    names = sorted({name for by_annotator in answers.values() for name in by_annotator})
    table = {}
    for a, b in combinations(names, 2):
        shared = [(v[a], v[b]) for v in answers.values() if a in v and b in v]
        if shared:
            table[(a, b)] = (len(shared), cohen_kappa([x for x, _ in shared], [y for _, y in shared]))
    return table


def fleiss_kappa(answers: dict[str, dict[str, str]], raters: int) -> tuple[int, float | None]:
    """(items used, kappa) over the items with exactly ``raters`` answers."""
    rows = [Counter(v.values()) for v in answers.values() if len(v) == raters]
    if raters < 2 or not rows:
        return len(rows), None
    n = raters
    per_item = [(sum(c * c for c in row.values()) - n) / (n * (n - 1)) for row in rows]
    p_bar = sum(per_item) / len(rows)
    totals = Counter()
    for row in rows:
        totals.update(row)
    p_e = sum((count / (len(rows) * n)) ** 2 for count in totals.values())
    if p_e == 1:
        return len(rows), None
    return len(rows), (p_bar - p_e) / (1 - p_e)
