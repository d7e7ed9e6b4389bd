"""Retrieval metrics with trec_eval's definitions, per query, per kind and overall.

A document is relevant when its grade is above 0. Every metric is cut at k:

- ``hit@k`` (trec_eval ``success_k``): 1 if a relevant document is in the top k.
- ``recall@k`` (``recall_k``): relevant documents in the top k / all relevant documents.
- ``precision@k`` (``P_k``): relevant documents in the top k / k, even when fewer are retrieved.
- ``mrr@k`` (``recip_rank`` on the run cut to k): 1 / rank of the first relevant document, else 0.
- ``ndcg@k`` (``ndcg_cut_k``, Järvelin and Kekäläinen 2002): linear gain = grade,
  discount log2(rank + 1), normalised by the ideal ordering of all judged grades.
- ``map@k`` (``map`` on the run cut to k, ``-M k``): mean over all R relevant documents of the precision at the
  rank of each one retrieved in the top k (0 for one not retrieved): average precision.
- ``rprec@k`` (``Rprec`` with ``-M k``): relevant documents in the top min(R, k) / R, R the relevant documents.

Which measures at which cut-offs a corpus reports is configuration (``sitegen.json``'s ``"metrics"``, see
:mod:`sitegen.inputs.metric_settings`): by default all seven at 1, 3, 5, 10, 20 and 100.

Queries with no relevant document (``answerable: false``) are not averaged, as in
trec_eval; a query with relevant documents but no hits scores 0 everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sitegen.inputs.metric_settings import DEFAULT_CUTOFFS, MEASURE_NAMES, parse_metric_settings

__all__ = [
    "CUTOFFS",
    "MEASURES",
    "REQUIRED_METRICS",
    "Measure",
    "average_precision",
    "configured_metric_names",
    "evaluate",
    "hit",
    "metric_names",
    "ndcg",
    "parse_metric",
    "precision",
    "r_precision",
    "recall",
    "reciprocal_rank",
    "score_query",
]

CUTOFFS: tuple[int, ...] = DEFAULT_CUTOFFS

Ranking = Sequence[str]
Grades = Mapping[str, int]


def hit(ranking: Ranking, grades: Grades, k: int) -> float:
    return 1.0 if any(grades.get(d, 0) > 0 for d in ranking[:k]) else 0.0


def recall(ranking: Ranking, grades: Grades, k: int) -> float:
    relevant = sum(1 for g in grades.values() if g > 0)
    if relevant == 0:
        return 0.0
    return sum(1 for d in ranking[:k] if grades.get(d, 0) > 0) / relevant


def precision(ranking: Ranking, grades: Grades, k: int) -> float:
    return sum(1 for d in ranking[:k] if grades.get(d, 0) > 0) / k


def reciprocal_rank(ranking: Ranking, grades: Grades, k: int) -> float:
    for rank, doc_id in enumerate(ranking[:k], start=1):
        if grades.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


def ndcg(ranking: Ranking, grades: Grades, k: int) -> float:
    dcg = sum(grades.get(d, 0) / math.log2(r + 1) for r, d in enumerate(ranking[:k], start=1) if grades.get(d, 0) > 0)
    ideal_grades = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(r + 1) for r, g in enumerate(ideal_grades, start=1))
    return dcg / ideal if ideal > 0 else 0.0


def average_precision(ranking: Ranking, grades: Grades, k: int) -> float:
    relevant = sum(1 for g in grades.values() if g > 0)
    found, total = 0, 0.0
    for rank, doc_id in enumerate(ranking[:k], start=1):
        if grades.get(doc_id, 0) > 0:
            found += 1
            total += found / rank
    return total / relevant if relevant else 0.0


def r_precision(ranking: Ranking, grades: Grades, k: int) -> float:
    relevant = sum(1 for g in grades.values() if g > 0)
    if relevant == 0:
        return 0.0
    return sum(1 for d in ranking[:k][:relevant] if grades.get(d, 0) > 0) / relevant


@dataclass(frozen=True)
class Measure:
    """A metric family: canonical name, long name, one-line description, kernel."""

    name: str
    pretty_name: str
    description: str
    trec_eval: str
    kernel: Callable[[Ranking, Grades, int], float]


MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        Measure("hit", "Hit rate", "1 if a relevant passage is in the top k, else 0", "success_k", hit),
        Measure("recall", "Recall", "share of the relevant passages found in the top k", "recall_k", recall),
        Measure("precision", "Precision", "share of the top k that is relevant (divided by k)", "P_k", precision),
        Measure(
            "mrr",
            "Mean reciprocal rank",
            "1 / rank of the first relevant passage within k",
            "recip_rank",
            reciprocal_rank,
        ),
        Measure("ndcg", "nDCG", "graded gain, log2 discount, normalised by the ideal order", "ndcg_cut_k", ndcg),
        Measure(
            "map",
            "Mean average precision",
            "precision at each relevant passage's rank within k, averaged over all relevant passages",
            "map",
            average_precision,
        ),
        Measure(
            "rprec",
            "R-precision",
            "share of the top R that is relevant, R the relevant passages (within k)",
            "Rprec",
            r_precision,
        ),
    )
}
if tuple(MEASURES) != MEASURE_NAMES:  # the settings layer lists the names it accepts; they must be these
    raise RuntimeError("sitegen.inputs.metric_settings.MEASURE_NAMES differs from the measures defined here")


def metric_names(cutoffs: Sequence[int] = CUTOFFS, measures: Sequence[str] = MEASURE_NAMES) -> list[str]:
    """Every metric name in report order: ``hit@1``, ``hit@3``, ..., ``rprec@100``."""
    return [f"{m}@{k}" for m in MEASURES if m in measures for k in cutoffs]


#: The metrics every corpus reports whatever its setting: the pages' tables, plots and experiments read them.
REQUIRED_METRICS = ("hit@1", "hit@3", "hit@5", "hit@10", "recall@10", "precision@5", "mrr@10", "ndcg@10")


def configured_metric_names(config: Mapping[str, Any]) -> list[str]:
    """The metrics a corpus reports: its ``sitegen.json`` ``"metrics"`` setting (else every measure at every
    default cut-off), with :data:`REQUIRED_METRICS` added, in report order (measure, then cut-off)."""
    chosen = metric_names(*parse_metric_settings(config["metrics"])) if "metrics" in config else metric_names()
    names = set(chosen) | set(REQUIRED_METRICS)
    order = list(MEASURES)
    return sorted(names, key=lambda n: (order.index(n.partition("@")[0]), int(n.partition("@")[2])))


def parse_metric(name: str) -> tuple[Measure, int]:
    """``"ndcg@10"`` -> (the nDCG measure, 10); a clear ValueError otherwise."""
    family, sep, cutoff = name.partition("@")
    if family not in MEASURES or not sep or not cutoff.isdigit() or int(cutoff) < 1:
        raise ValueError(f"unknown metric {name!r}: expected NAME@K with NAME one of {', '.join(MEASURES)} and K >= 1")
    return MEASURES[family], int(cutoff)


def score_query(ranking: Ranking, grades: Grades, metrics: Sequence[str]) -> dict[str, float]:
    """Every named metric for one query's ranked document ids."""
    scores = {}
    for name in metrics:
        measure, k = parse_metric(name)
        scores[name] = measure.kernel(ranking, grades, k)
    return scores


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def evaluate(
    rankings: Mapping[str, Ranking],
    qrels: Mapping[str, Grades],
    kinds: Mapping[str, str],
    metrics: Sequence[str] | None = None,
) -> dict[str, dict]:
    """Score one run: ``{"overall": {...}, "by_kind": {kind: {...}}, "per_query": {qid: {...}}}``.

    ``rankings`` maps query ids to ranked document ids; ``kinds`` maps every query
    id to its kind. Only queries with a relevant document are scored and averaged.
    """
    metrics = list(metrics) if metrics is not None else metric_names()
    per_query: dict[str, dict[str, float]] = {}
    for query_id in kinds:
        grades = qrels.get(query_id, {})
        if any(g > 0 for g in grades.values()):
            per_query[query_id] = score_query(rankings.get(query_id, ()), grades, metrics)
    by_kind: dict[str, dict[str, float]] = {}
    for kind in dict.fromkeys(kinds.values()):
        members = [q for q in per_query if kinds[q] == kind]
        if members:
            by_kind[kind] = {m: _mean([per_query[q][m] for q in members]) for m in metrics}
    overall = {m: _mean([s[m] for s in per_query.values()]) for m in metrics}
    return {"overall": overall, "by_kind": by_kind, "per_query": per_query}
