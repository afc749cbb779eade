"""Evaluation metrics against values computed by hand: the PROGRESS-BENCH breakdowns of Tables 1-2 and the anchor
step, and EXPLORE-Bench's S_obj / S_att / S_rel / S_uni / S_key / S_abn in both relation-scoring modes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from tasks.explore.metrics import (
    AnnotatedObject,
    InstanceScores,
    explore_table,
    mutual_max_matches,
    plan_instance,
    score_plans,
    soft_coverage,
    split_sentences,
)
from tasks.progress.metrics import ProgressSample, progress_report, score_aligned_step

VISUAL = (0.0, 0.5, 1.0)  # a visual demo of N = 2 steps: three key frames
TEXT = (0.5, 1.0)  # a text demo of N = 2 steps


def sample(trajectory: str, setting: str, truth: float | None, predicted: float | None, *, ref: int | None = None,
           closest: int | None = None, parsed: bool = True) -> ProgressSample:
    return ProgressSample(trajectory, setting, truth is not None, truth, predicted, parsed, ref, closest,
                          TEXT if setting == "text" else VISUAL)


SAMPLES = [
    sample("A", "same", 0.25, 0.50, ref=2, closest=2),
    sample("A", "same", 0.75, 0.50, ref=2, closest=3),  # constant same-view answers: skipped in PRC
    sample("A", "cross", 0.50, None, closest=2),  # answered n/a: a false rejection
    sample("A", "cross", 0.25, 0.20, closest=1),
    sample("A", "cross", 0.75, 0.90, closest=2),
    sample("A", "text", 0.50, 0.25, ref=1, closest=1),
    sample("A", "text", 1.00, 1.00, ref=2, closest=2),
    sample("B", "text", None, None),  # unanswerable, detected
    sample("B", "same", None, 0.30),  # unanswerable, missed
    sample("B", "cross", 0.30, None, closest=1, parsed=False),  # unparseable
]


def test_progress_breakdown_matches_the_hand_computed_tables():
    report = progress_report(SAMPLES)
    same, cross, text = report.groups["same"], report.groups["cross"], report.groups["text"]
    # same view: NSE |.5-.25|/.75 and |.5-.75|/.75; A's answers are constant, so no PRC (skipped, counted)
    assert (same.nse, same.prc, same.afrr, same.uda) == (pytest.approx(1 / 3), None, 0.0, 0.0)
    assert same.prc_skipped == {"constant predictions": 1} and same.constant_predictions == 1
    # cross view on its own: A's two numbers rank right (rho 1); B's one answer is unparseable
    assert cross.nse == pytest.approx((0.05 / 0.75 + 0.15 / 0.75) / 2) and cross.prc == pytest.approx(1.0)
    assert cross.afrr == pytest.approx(1 / 4) and cross.uda is None
    assert cross.prc_skipped == {"no numeric answer": 1}
    assert (text.nse, text.prc, text.afrr, text.uda) == (pytest.approx(0.25), pytest.approx(1.0), 0.0, 1.0)
    vision, micro = report.groups["vision"], report.groups["micro"]
    # Vision: weighted by answerable samples, same 2 and cross 4; its PRC has a part without value: None
    assert vision.nse == pytest.approx((2 * (1 / 3) + 4 * (2 / 15)) / 6) and vision.prc is None
    assert vision.afrr == pytest.approx((2 * 0 + 4 * 0.25) / 6) and vision.uda == 0.0
    # Micro: Vision (6 answerable, 1 unanswerable) and Text (2, 1)
    assert micro.nse == pytest.approx((6 * 0.2 + 2 * 0.25) / 8) and micro.prc is None
    assert micro.afrr == pytest.approx(1 / 8) and micro.uda == pytest.approx(1 / 2)
    assert report.macro["nse"] == pytest.approx(0.225) and report.macro["prc"] is None
    assert report.macro["afrr"] == pytest.approx(1 / 12) and report.macro["uda"] == pytest.approx(0.5)
    assert report.unparsed == {"same": 0, "cross": 1, "text": 0}


def test_views_are_never_one_sequence_and_the_averages_weigh_samples():
    rows = [*[sample("S", "same", t, t) for t in (0.2, 0.5, 0.8)],  # rho 1, NSE 0
            sample("S", "cross", 0.2, 0.8), sample("S", "cross", 0.8, 0.2),  # rho -1, NSE .75 each
            *[sample("S", "text", t, p) for t, p in ((0.25, 0.5), (0.5, 0.25), (0.75, 0.75))]]  # rho .5
    report = progress_report(rows)
    vision, micro = report.groups["vision"], report.groups["micro"]
    assert vision.prc_trajectories == 2  # S same-view and S cross-view: two sequences
    assert vision.prc == pytest.approx((3 * 1 - 2 * 1) / 5) and vision.nse == pytest.approx(2 * 0.75 / 5)
    text_nse = (0.25 / 0.75 + 0.25 / 0.5 + 0) / 3
    assert report.groups["text"].prc == pytest.approx(0.5)
    assert micro.prc == pytest.approx((5 * 0.2 + 3 * 0.5) / 8)
    assert micro.nse == pytest.approx((5 * 0.3 + 3 * text_nse) / 8)
    assert report.macro["prc"] == pytest.approx((0.2 + 0.5) / 2)
    assert report.macro["nse"] == pytest.approx((0.3 + text_nse) / 2)


def test_anchor_step_accuracy_and_the_score_aligned_step():
    report = progress_report(SAMPLES)
    # cross-view answers name no anchor at all (an n/a and an unparseable one): no accuracy rather than 0; over all
    # samples, those two count as wrong
    assert report.ref_accuracy == {"same": 0.5, "cross": None, "text": 1.0, "all": 3 / 8}
    assert report.ref_counted == {"same": 2, "cross": 0, "text": 2, "all": 8}
    assert report.anchor_pairs == {"same": [(2, 2), (2, 2)], "cross": [], "text": [(1, 1), (2, 2)]}
    assert score_aligned_step(0.25, VISUAL) == 1  # a tie between 0% and 50% goes to the earlier step
    assert score_aligned_step(0.26, VISUAL) == 2
    assert score_aligned_step(0.9, TEXT) == 2


def test_direct_answers_have_no_anchor_accuracy():
    report = progress_report([sample("A", "same", 0.25, 0.3, closest=1), sample("A", "same", 0.75, 0.7, closest=3)])
    assert set(report.ref_accuracy.values()) == {None}


def test_macro_average_is_the_one_modality_when_the_other_is_absent():
    report = progress_report([sample("A", "text", 0.5, 0.5), sample("A", "text", 1.0, 1.0)])
    assert report.groups["vision"].nse is None
    assert report.macro["nse"] == 0.0 and report.macro["prc"] == 1.0


def test_mutual_maximum_matching_and_soft_coverage():
    similarity = np.array([[0.9, 0.2, 0.5],
                           [0.8, 0.7, 0.1]])
    matches = mutual_max_matches(similarity)
    # (1, 1) = .7 is its column's maximum but not its row's (.8 is), so category 1 stays unmatched
    assert matches.tolist() == [[True, False, False], [False, False, False]]
    assert soft_coverage(similarity, matches) == (pytest.approx(0.45), [0.9, 0.0])
    empty = np.zeros((2, 0))
    assert soft_coverage(empty, mutual_max_matches(empty)) == (0.0, [0.0, 0.0])
    ties = np.array([[0.6, 0.6]])
    assert mutual_max_matches(ties).tolist() == [[True, True]]  # every maximum matches


def test_sentences_split_as_the_official_code_does():
    assert split_sentences("A cup. A plate\nA lamp\\nA bowl</s>3.5 cm") == ["A cup", "A plate", "A lamp", "A bowl",
                                                                             "3", "5 cm"]


@dataclass
class Token:
    lemma_: str
    tag_: str


class WordNlp:
    """Every word of NOUNS is a noun (its own lemma); nothing else is."""

    NOUNS = frozenset({"cup", "plate", "table", "lamp"})

    def pipe(self, texts):
        for text in texts:
            yield [Token(w.lower(), "NN" if w.lower() in self.NOUNS else "DT") for w in text.split()]


def one_hot(texts: list[str]) -> list[list[float]]:
    vocabulary = sorted(set(texts))
    return [[1.0 if v == t else 0.0 for v in vocabulary] for t in texts]


def all_words_present(pairs: list[tuple[str, str]], aspect: str) -> list[int]:
    """5 when every word of the phrase but its preposition is in the sentence, else 0: a judge whose answers can
    be foreseen."""
    prepositions = {"on", "under", "near", "above"}
    return [5 if set(p.split()) - prepositions <= set(s.lower().replace(".", "").split()) else 0 for s, p in pairs]


OBJECTS = [
    AnnotatedObject("cup", "red cup", ("cup on table",), key_state="red cup"),
    AnnotatedObject("plate", "white plate", ()),  # no relation: what shifts the official pairing
    AnnotatedObject("table", "wooden table", ("table under lamp", "table near plate")),
    AnnotatedObject("lamp", "tall lamp", ("lamp above cup",)),
]
DESCRIPTION = "A red cup. A white plate. A wooden table. A lamp"


def test_correct_mode_pairs_every_relation_with_its_own_sentences():
    plan = plan_instance("i", "Short", DESCRIPTION, OBJECTS, WordNlp(), one_hot, "correct")
    assert plan is not None and plan.coverage == 1.0
    assert plan.relation_pairs == [("A red cup. A wooden table", "cup on table"),
                                   ("A wooden table. A lamp", "table under lamp"),
                                   ("A white plate. A wooden table", "table near plate"),
                                   ("A red cup. A lamp", "lamp above cup")]
    [scores] = score_plans([plan], all_words_present, "correct")
    assert scores.s_obj == 100.0
    assert scores.s_att == pytest.approx(15 / 4)  # "tall lamp" is not in "A lamp"
    assert scores.s_rel == 5.0
    assert scores.s_uni == pytest.approx(0.25 * 100 + 0.35 * 20 * 3.75 + 0.40 * 20 * 5)  # 91.25
    assert scores.s_key == 5.0


def test_official_mode_reproduces_the_shifted_relation_pairs():
    plan = plan_instance("i", "Short", DESCRIPTION, OBJECTS, WordNlp(), one_hot, "official")
    assert plan is not None
    # The plate's empty sentence takes the second phrase's place; the table's second phrase keeps the lamp's
    # sentence gathered for its first; the last sentences ("A red cup. A lamp") are never used.
    assert plan.relation_pairs == [("A red cup. A wooden table", "cup on table"),
                                   ("", "table under lamp"),
                                   ("A wooden table. A lamp", "table near plate"),
                                   ("A white plate. A wooden table. A lamp", "lamp above cup")]
    [scores] = score_plans([plan], all_words_present, "official")
    assert scores.s_rel == pytest.approx(5 / 4)
    assert scores.s_uni == pytest.approx(25 + 26.25 + 10)


def test_empty_sentences_score_zero_without_asking_the_judge():
    asked: list[tuple[str, str]] = []

    def judge(pairs, aspect):
        asked.extend(pairs)
        return [5] * len(pairs)

    plan = plan_instance("i", "Short", "Nothing here", OBJECTS, WordNlp(), one_hot, "correct")
    [scores] = score_plans([plan], judge, "correct")
    assert asked == [] and scores.s_obj == 0.0 and scores.s_att == 0.0 and scores.s_rel == 0.0


def test_subsets_full_and_the_abnormal_score():
    def instance(key, subset, s_obj, s_att, s_rel, s_key=None):
        return InstanceScores(key, subset, s_obj, s_att, s_rel, s_key, 10)

    table = explore_table([instance("a", "Short", 80, 3, 4, s_key=5), instance("b", "Short", 60, 1, None),
                           instance("c", "Long", 40, 2, 2)])
    short, full = table["Short"], table["Full"]
    assert short.instances == 2 and short.s_obj == 70 and short.s_att == 2
    assert short.s_rel == 4 and short.without_relations == 1  # b has no relation phrase: left out of S_rel
    assert short.s_uni == pytest.approx(0.25 * 70 + 0.35 * 40 + 0.40 * 80)
    assert table["Medium"].instances == 0 and table["Medium"].s_uni is None
    assert full.s_obj == 60 and full.s_rel == 3
    # S_abn over the one key-state instance: 0.1 * S_uni(a) + 0.9 * 20 * 5
    s_uni_a = 0.25 * 80 + 0.35 * 60 + 0.40 * 80
    assert full.s_key == 5 and full.key_instances == 1
    assert full.s_abn == pytest.approx(0.1 * s_uni_a + 0.9 * 100)


def test_an_instance_without_objects_is_not_planned():
    assert plan_instance("i", "Short", DESCRIPTION, [], WordNlp(), one_hot) is None
