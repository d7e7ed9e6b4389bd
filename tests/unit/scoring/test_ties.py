"""Tie-aware metrics against brute force over every order of the tied groups (STYLE "Ties")."""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Mapping, Sequence
from fractions import Fraction

import numpy as np
import pytest

from sitegen import audit
from sitegen.scoring.metrics import CUTOFFS, metric_names, score_query
from sitegen.scoring.ties import TIE_MEASURES, expected_metric, tie_groups, tie_range, ties_report

NAMES = metric_names(CUTOFFS, TIE_MEASURES)  # ties.json covers these; MAP and R-precision are left out


def _orderings(ranking: Sequence[str], scores: Sequence[float]) -> list[list[str]]:
    """Every ranking reachable by permuting documents with equal scores (duplicates kept: each order counts once)."""
    parts = [list(itertools.permutations(ranking[s:e])) for s, e in tie_groups(scores)]
    return [[d for part in combo for d in part] for combo in itertools.product(*parts)]


def _exact(name: str, ranking: Sequence[str], grades: Mapping[str, int]) -> Fraction:
    """The metric as an exact Fraction (not nDCG), independent of sitegen.scoring.metrics' floats."""
    family, k = name.split("@")[0], int(name.split("@")[1])
    rel = [grades.get(d, 0) > 0 for d in ranking[:k]]
    total = sum(1 for g in grades.values() if g > 0)
    if family == "hit":
        return Fraction(int(any(rel)))
    if family == "recall":
        return Fraction(sum(rel), total)
    if family == "precision":
        return Fraction(sum(rel), k)
    return Fraction(1, rel.index(True) + 1) if any(rel) else Fraction(0)


def _brute(name: str, ranking: Sequence[str], scores: Sequence[float], grades: Mapping[str, int]) -> tuple:
    """(mean, min, max) over every ordering, exact where the metric is rational."""
    orders = _orderings(ranking, scores)
    if name.startswith("ndcg"):
        values = [score_query(o, grades, [name])[name] for o in orders]
        return math.fsum(values) / len(values), min(values), max(values)
    exact = [_exact(name, o, grades) for o in orders]
    return sum(exact, Fraction(0)) / len(exact), min(exact), max(exact)


CASES = {
    # ranking, scores, grades
    "group straddling k=3 and k=5": (
        ["a", "b", "c", "d", "e", "f", "g"],
        [9, 8, 7, 7, 7, 7, 1],
        {"e": 1, "f": 2},
    ),
    "relevant before the group": (
        ["a", "b", "c", "d", "e"],
        [5, 4, 4, 4, 3],
        {"a": 1, "c": 1, "d": 2},
    ),
    "several groups, first relevant in the second": (
        ["a", "b", "c", "d", "e", "f", "g", "h"],
        [6, 6, 5, 5, 5, 4, 4, 4],
        {"d": 1, "e": 3, "g": 2, "x": 1},
    ),
    "group straddling k=1": (
        ["a", "b", "c", "d"],
        [2, 2, 2, 2],
        {"c": 1},
    ),
    "graded, groups at the top and straddling k=20": (
        [f"d{i}" for i in range(22)],
        [9.0] * 3 + [8.0 - i / 16 for i in range(13)] + [2.0] * 6,
        {"d1": 2, "d2": 1, "d10": 3, "d17": 1, "d20": 2, "d21": 1},
    ),
    "no ties": (
        ["a", "b", "c"],
        [3, 2, 1],
        {"b": 1},
    ),
    "no relevant retrieved": (
        ["a", "b", "c"],
        [1, 1, 1],
        {"z": 1},
    ),
}


@functools.cache
def _brute_case(case: str, name: str) -> tuple:
    """:func:`_brute` of a named case, computed once for both tests below (thousands of orders for the largest)."""
    return _brute(name, *CASES[case])


def test_tie_groups_split_runs_of_equal_scores() -> None:
    assert tie_groups([3, 3, 2, 1, 1, 1]) == [(0, 2), (2, 3), (3, 6)]
    assert tie_groups([]) == []


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_expected_metric_equals_mean_over_every_tie_order(case: str) -> None:
    ranking, scores, grades = CASES[case]
    for name in NAMES:
        mean, _, _ = _brute_case(case, name)
        got = expected_metric(name, ranking, scores, grades)
        if name.startswith("ndcg"):
            assert got == pytest.approx(mean, abs=1e-12), name
        else:
            assert got == mean, name  # exact Fractions on both sides


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_tie_range_is_min_and_max_over_every_tie_order(case: str) -> None:
    ranking, scores, grades = CASES[case]
    lows, highs = tie_range(NAMES, ranking, scores, grades)
    for name in NAMES:
        _, low, high = _brute_case(case, name)
        assert lows[name] == pytest.approx(float(low), abs=1e-12), name
        assert highs[name] == pytest.approx(float(high), abs=1e-12), name


def test_expected_metric_matches_brute_force_on_random_small_runs() -> None:
    rng = random.Random(16)
    for _ in range(60):
        n = rng.randint(1, 8)
        ranking = [f"d{i}" for i in range(n)]
        scores = sorted((rng.choice([1.0, 2.0, 3.0]) for _ in range(n)), reverse=True)
        grades = {d: rng.choice([0, 0, 1, 2]) for d in ranking}
        grades["missing"] = rng.choice([0, 1])
        if not any(g > 0 for g in grades.values()):
            grades["missing"] = 1
        for name in NAMES:
            mean, _, _ = _brute(name, ranking, scores, grades)
            assert float(expected_metric(name, ranking, scores, grades)) == pytest.approx(float(mean), abs=1e-12)


def test_expected_metric_refuses_scores_of_another_length() -> None:
    with pytest.raises(ValueError):
        expected_metric("hit@1", ["a", "b"], [1.0], {"a": 1})


def test_ties_report_lists_only_questions_whose_value_moves() -> None:
    ranking, scores, grades = CASES["group straddling k=3 and k=5"]
    rankings = {"r": {"q1": ranking, "q2": ["e", "a"]}}
    run_scores = {"r": {"q1": scores, "q2": [2.0, 1.0]}}
    qrels = {"q1": grades, "q2": {"e": 1}, "q3": {}}
    names = ["hit@3", "hit@10", "mrr@10"]
    metrics = {
        "r": {
            "per_query": {q: score_query(rankings["r"][q], qrels[q], names) for q in ("q1", "q2")},
            "overall": {n: 0.0 for n in names},
        }
    }
    report = ties_report(rankings, run_scores, qrels, ["q1", "q2", "q3"], metrics, names)
    entry = report["rankers"]["r"]
    assert (entry["questions"], entry["depending"]) == (2, 1)
    assert entry["metrics"]["hit@10"]["depending"] == 0  # both relevant inside the top 10 whatever the order
    hit3 = entry["metrics"]["hit@3"]
    assert hit3["depending"] == 1 and hit3["largest_move"] == 1.0
    assert hit3["questions"]["q1"] == {"reported": 0.0, "expected": 1 - 2 / 4, "min": 0.0, "max": 1.0}
    assert hit3["expected_mean"] == pytest.approx((0.5 + 1.0) / 2)


def test_the_audit_recomputes_tie_aware_values_the_same_way_by_another_route() -> None:
    """audit.py shares no code with sitegen: its survival-product formulas must agree with the closed forms."""
    from sitegen import audit

    rng = random.Random(7)
    for _ in range(80):
        n = rng.randint(0, 24)
        scores = sorted((float(rng.randint(1, 5)) for _ in range(n)), reverse=True)
        hits = [{"doc_id": f"d{i}", "score": s} for i, s in enumerate(scores)]
        grades = {f"d{i}": rng.choice([0, 0, 0, 1, 2, 3]) for i in range(n + 3)}
        grades["d0" if n == 0 else "extra"] = 1
        blocks = audit._score_blocks(hits)
        ranking = [h["doc_id"] for h in hits]
        for name in NAMES:
            want = float(expected_metric(name, ranking, scores, grades))
            assert audit.tie_expected(name, blocks, grades) == pytest.approx(want, abs=1e-12), name


def _reference_tie_expected(name: str, blocks: list[list[str]], grades: dict[str, int]) -> float:
    """audit.tie_expected before it visited only the blocks holding slots."""
    family, _, cut = name.partition("@")
    k = int(cut)
    where = [(b, i) for b, block in enumerate(blocks) for i in range(len(block))][:k]
    share = [sum(1 for d in block if grades.get(d, 0) > 0) for block in blocks]

    def none_in_first(t: int) -> float:
        p = 1.0
        for b, block in enumerate(blocks):
            slots = sum(1 for bb, _ in where[:t] if bb == b)
            p *= math.comb(len(block) - share[b], slots) / math.comb(len(block), slots)
        return p

    if family == "hit":
        return 1.0 - none_in_first(len(where))
    return math.fsum((none_in_first(t) - none_in_first(t + 1)) / (t + 1) for t in range(len(where)))


@pytest.mark.parametrize("seed", range(40))
def test_the_audit_s_tie_expectation_equals_the_previous_one_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, size=int(rng.integers(0, 30)))
    blocks = [[f"d{b}_{i}" for i in range(int(s))] for b, s in enumerate(sizes)]
    grades = {d: int(rng.integers(0, 3)) for block in blocks for d in block if rng.random() < 0.3}
    for name in ("hit@1", "hit@5", "hit@10", "mrr@1", "mrr@10", "mrr@100"):
        assert audit.tie_expected(name, blocks, grades) == _reference_tie_expected(name, blocks, grades), name
