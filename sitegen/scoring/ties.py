"""Tie-aware metrics: the expected value of each metric over every order of tied scores.

A run reports one order: score descending, then document id ascending (DESIGN rule 4).
Documents with exactly equal stored scores could have come in any order, so a metric may
depend on that rule. Following McSherry and Najork, "Computing Information Retrieval
Performance Measures Efficiently in the Presence of Tied Scores" (ECIR 2008), as in
scikit-learn's ``_tie_averaged_dcg``, this module computes the mean over all orderings of
each tied group in closed form:

- nDCG@k: every position of a tied group gets the group's average gain, so expected
  DCG@k = sum over groups of (mean gain of the group) x (sum of the group's discounts within k);
- recall@k and precision@k: expected relevant in the top k = for each group, relevant in the
  group x (its slots within k) / (its size);
- hit@k: 1 if a relevant document precedes the group straddling k; otherwise
  1 - C(g - r, m) / C(g, m) for that group (g documents, r relevant, m slots within k);
- MRR@k: the first group holding a relevant document decides; with g documents, r relevant,
  starting at 0-based position s, P(first relevant at s + j) = C(g - j - 1, r - 1) / C(g, r).

min and max over orderings place relevant documents worst and best (by grade) within each
group. Only the stored hits are permuted: documents tied with the last stored hit but cut by
the run depth are unknown and left out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from sitegen.scoring.metrics import metric_names, parse_metric, score_query

__all__ = ["TIE_RULE", "expected_metric", "tie_groups", "tie_range", "ties_report"]

TIE_RULE = (
    "tied means exactly equal stored scores; the expected value is the mean over every order of each tied "
    "group (McSherry & Najork, ECIR 2008); min and max place the relevant passages last and first within "
    "each group; only the stored hits are permuted (passages tied with the last stored hit but cut by the "
    "run depth are unknown)"
)
#: The measures whose expected value over tie orders is written here; MAP and R-precision are left out of ties.json.
TIE_MEASURES = ("hit", "recall", "precision", "mrr", "ndcg")
_MOVES = 1e-12  # a metric depends on the tie order when max - min exceeds this


def tie_groups(scores: Sequence[float]) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of equal consecutive scores (size 1 included), in rank order."""
    groups: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(scores) + 1):
        if i == len(scores) or scores[i] != scores[start]:
            groups.append((start, i))
            start = i
    return groups


def expected_metric(name: str, ranking: Sequence[str], scores: Sequence[float], grades: Mapping[str, int]) -> Any:
    """Mean of ``name`` (e.g. ``"mrr@10"``) over all orderings of tied scores.

    Exact ``Fraction`` for hit, recall, precision and MRR; ``float`` for nDCG (log discounts).
    """
    if len(ranking) != len(scores):
        raise ValueError("ranking and scores differ in length")
    measure, k = parse_metric(name)
    family = measure.name
    groups = tie_groups(scores)
    relevant = [grades.get(d, 0) > 0 for d in ranking]
    total_relevant = sum(1 for g in grades.values() if g > 0)
    if family in ("recall", "precision"):
        found = sum(
            (Fraction(sum(relevant[s:e]) * max(0, min(e, k) - s), e - s) for s, e in groups),
            Fraction(0),
        )
        if family == "precision":
            return found / k
        return found / total_relevant if total_relevant else Fraction(0)
    if family == "hit":
        for s, e in groups:
            if s >= k:
                break
            r, g, m = sum(relevant[s:e]), e - s, min(e, k) - s
            if r:
                return 1 - Fraction(math.comb(g - r, m), math.comb(g, m))
        return Fraction(0)
    if family == "mrr":
        for s, e in groups:
            r, g = sum(relevant[s:e]), e - s
            if r:
                total = math.comb(g, r)
                return sum(
                    (Fraction(math.comb(g - j - 1, r - 1), total * (s + j + 1)) for j in range(g - r + 1) if s + j < k),
                    Fraction(0),
                )
        return Fraction(0)
    dcg = 0.0
    for s, e in groups:
        if s >= k:
            break
        mean_gain = math.fsum(max(grades.get(d, 0), 0) for d in ranking[s:e]) / (e - s)
        dcg += mean_gain * math.fsum(1 / math.log2(p + 2) for p in range(s, min(e, k)))
    ideal_grades = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(r + 1) for r, g in enumerate(ideal_grades, start=1))
    return dcg / ideal if ideal > 0 else 0.0


def tie_range(
    names: Sequence[str], ranking: Sequence[str], scores: Sequence[float], grades: Mapping[str, int]
) -> tuple[dict[str, float], dict[str, float]]:
    """(min, max) of each metric over orderings: relevant passages placed last, then first, in every group.

    Every metric here rewards higher grades earlier, so sorting each group by grade gives both ends.
    """
    worst: list[str] = []
    best: list[str] = []
    for s, e in tie_groups(scores):
        group = list(ranking[s:e])
        worst += sorted(group, key=lambda d: grades.get(d, 0))
        best += sorted(group, key=lambda d: -grades.get(d, 0))
    return score_query(worst, grades, names), score_query(best, grades, names)


def ties_report(
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    scores: Mapping[str, Mapping[str, Sequence[float]]],
    qrels: Mapping[str, Mapping[str, int]],
    query_ids: Sequence[str],
    metrics: Mapping[str, Mapping[str, Any]],
    names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """``ties.json`` for one corpus: per ranker and metric, the questions whose value depends on the tie order.

    Shape::

        {"schema_version": 1, "rule": str, "metrics": [names],
         "rankers": {ranker: {"questions": n scored, "depending": n with any metric depending,
            "metrics": {metric: {"depending": n, "largest_move": max - min at most,
                "reported_mean": x, "expected_mean": y,
                "questions": {qid: {"reported", "expected", "min", "max"}}}}}}}

    ``query_ids`` lists every question in order; only those with a relevant passage are scored,
    as in :func:`sitegen.scoring.metrics.evaluate`; ``metrics`` is each ranker's ``metrics.json`` entry.
    """
    if names is None:  # every reported metric the tie-aware formulas cover
        reported = next(iter(metrics.values()))["overall"] if metrics else {}
        names = [n for n in (reported or metric_names()) if parse_metric(n)[0].name in TIE_MEASURES]
    names = list(names)
    scored = [q for q in query_ids if any(g > 0 for g in qrels.get(q, {}).values())]
    out: dict[str, Any] = {}
    for ranker, by_query in rankings.items():
        per_metric: dict[str, dict[str, Any]] = {
            n: {"depending": 0, "largest_move": 0.0, "expected": [], "questions": {}} for n in names
        }
        depending: set[str] = set()
        for qid in scored:
            ranking, run_scores, grades = list(by_query.get(qid, ())), list(scores[ranker].get(qid, ())), qrels[qid]
            # With no tied scores every order is the reported one: nothing can move, nothing to range over.
            tied = any(end - start > 1 for start, end in tie_groups(run_scores))
            lows, highs = tie_range(names, ranking, run_scores, grades) if tied else ({}, {})
            reported = metrics[ranker]["per_query"][qid]
            for n in names:
                moves = tied and highs[n] - lows[n] > _MOVES
                expected = float(expected_metric(n, ranking, run_scores, grades)) if moves else reported[n]
                entry = per_metric[n]
                entry["expected"].append(expected)
                if moves:
                    depending.add(qid)
                    entry["depending"] += 1
                    entry["largest_move"] = max(entry["largest_move"], highs[n] - lows[n])
                    entry["questions"][qid] = {
                        "reported": reported[n],
                        "expected": expected,
                        "min": lows[n],
                        "max": highs[n],
                    }
        out[ranker] = {
            "questions": len(scored),
            "depending": len(depending),
            "metrics": {
                n: {
                    "depending": e["depending"],
                    "largest_move": e["largest_move"],
                    "reported_mean": metrics[ranker]["overall"][n],
                    "expected_mean": math.fsum(e["expected"]) / len(scored) if scored else 0.0,
                    "questions": e["questions"],
                }
                for n, e in per_metric.items()
            },
        }
    return {"schema_version": 1, "rule": TIE_RULE, "metrics": names, "rankers": out}
