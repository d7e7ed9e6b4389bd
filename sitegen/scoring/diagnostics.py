"""Why a ranker fails, and how far the judgements reach: the failure taxonomy and judged depth of one corpus.

Both are pure functions of the rankings, the qrels and the rankers' declared contracts, stored in
``report.json`` and recomputed by the audit.

``report.json``'s ``failures``::

    {"k": 10, "classes": [class, ...], "signals": {"lexical": [rankers], "dense": [...], "fusion": [...],
     "other": [...]}, "questions": {qid: class}, "counts": {"overall": {class: n}, "by_kind": {kind: {class: n}}},
     "fusion_lost": {fusion: [qids]}, "fusion_rescued": {fusion: [qids]}}

``report.json``'s ``judged``::

    {"k": 10, "gap": 0.1, "questions": n,
     "per_question": {"mean": x, "min": n, "max": n} (judged passages per scored question),
     "relevant": {qid: n} (passages graded above 0, per scored question),
     "rankers": {ranker: {"judged": share, "ndcg": mean, "ndcg_condensed": mean, "low": bool}}}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from sitegen.inputs.corpus import Corpus
from sitegen.rankers.base import Basis, Contract, Family
from sitegen.scoring.metrics import ndcg

__all__ = [
    "FAILURE_CLASSES",
    "FAILURE_DEPTH",
    "JUDGED_DEPTH",
    "JUDGED_GAP",
    "failure_taxonomy",
    "judged_depth",
    "signal",
]

FAILURE_DEPTH = 10
#: Each scored question's one class, in the order the page lists them: no ranker finds a relevant passage in its
#: top k; only lexical rankers do; only dense ones; at least one of each; only a fusion; only another system.
FAILURE_CLASSES = ("all-miss", "only-lexical", "only-dense", "every-family", "only-fusion", "other")
JUDGED_DEPTH = 10
#: A ranker whose judged@10 lies more than this below the highest ranker's is flagged: its scores count more
#: unjudged passages as not relevant, so they are lower bounds.
JUDGED_GAP = 0.1


def signal(contract: Contract) -> str:
    """What a ranker's list is made of, from its declared contract: ``fusion`` (it combines component lists),
    ``lexical`` or ``dense`` by family, and for any other family by its basis (stored vectors: dense; the inputs'
    text or PostgreSQL's text search: lexical); anything else (another system's run) is ``other``."""
    if contract.components:
        return "fusion"
    if contract.family in (Family.LEXICAL, Family.DENSE):
        return contract.family.value
    if Basis.VECTORS in contract.basis:
        return "dense"
    if Basis.INPUTS in contract.basis or Basis.POSTGRES in contract.basis:
        return "lexical"
    return "other"


def _classify(found: set[str], signals: Mapping[str, str]) -> str:
    kinds = {signals[r] for r in found}
    if not found:
        return "all-miss"
    if {"lexical", "dense"} <= kinds:
        return "every-family"
    if "lexical" in kinds:
        return "only-lexical"
    if "dense" in kinds:
        return "only-dense"
    return "only-fusion" if "fusion" in kinds else "other"


def failure_taxonomy(
    corpus: Corpus, rankings: Mapping[str, Mapping[str, Sequence[str]]], contracts: Mapping[str, Contract]
) -> dict[str, Any]:
    """Each scored question's class at k = 10, counted overall and per kind, and the questions each fusion lost
    (a component had a relevant passage in its top k, the fusion did not) or rescued (no component did, it did)."""
    k = FAILURE_DEPTH
    signals = {r: signal(contracts[r]) for r in rankings}
    scored = [q for q in corpus.queries if corpus.relevant(q.query_id)]
    questions: dict[str, str] = {}
    lost: dict[str, list[str]] = {r: [] for r in rankings if signals[r] == "fusion"}
    rescued: dict[str, list[str]] = {r: [] for r in lost}
    for query in scored:
        grades = corpus.relevant(query.query_id)
        found = {r for r in rankings if any(d in grades for d in list(rankings[r].get(query.query_id, ()))[:k])}
        questions[query.query_id] = _classify(found, signals)
        for fusion in lost:
            components = [c for c in contracts[fusion].components if c in rankings]
            by_component = any(c in found for c in components)
            if by_component and fusion not in found:
                lost[fusion].append(query.query_id)
            if not by_component and fusion in found:
                rescued[fusion].append(query.query_id)
    kinds = list(dict.fromkeys(q.kind for q in scored))
    return {
        "k": k,
        "classes": list(FAILURE_CLASSES),
        "signals": {s: [r for r in rankings if signals[r] == s] for s in ("lexical", "dense", "fusion", "other")},
        "questions": questions,
        "counts": {
            "overall": {c: sum(1 for v in questions.values() if v == c) for c in FAILURE_CLASSES},
            "by_kind": {
                kind: {
                    c: sum(1 for q in scored if q.kind == kind and questions[q.query_id] == c) for c in FAILURE_CLASSES
                }
                for kind in kinds
            },
        },
        "fusion_lost": lost,
        "fusion_rescued": rescued,
    }


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def judged_depth(corpus: Corpus, rankings: Mapping[str, Mapping[str, Sequence[str]]]) -> dict[str, Any]:
    """Per ranker, over the scored questions: judged@10, the share of its top 10 that carries any judgement
    (grade 0 included; ir_measures' Judged@10, divided by 10 even when fewer are returned); its nDCG@10; and the
    condensed-list nDCG@10 (Sakai 2007; trec_eval -J): unjudged passages removed before cutting at 10."""
    k = JUDGED_DEPTH
    scored = [q.query_id for q in corpus.queries if corpus.relevant(q.query_id)]
    judged = {q: corpus.qrels.get(q, {}) for q in scored}
    rows: dict[str, dict[str, Any]] = {}
    for ranker, lists in rankings.items():
        share, standard, condensed = [], [], []
        for q in scored:
            ranking = list(lists.get(q, ()))
            share.append(sum(1 for d in ranking[:k] if d in judged[q]) / k)
            standard.append(ndcg(ranking, judged[q], k))
            condensed.append(ndcg([d for d in ranking if d in judged[q]], judged[q], k))
        rows[ranker] = {"judged": _mean(share), "ndcg": _mean(standard), "ndcg_condensed": _mean(condensed)}
    top = max((r["judged"] for r in rows.values()), default=0.0)
    for row in rows.values():
        row["low"] = top - row["judged"] > JUDGED_GAP + 1e-12
    sizes = [len(judged[q]) for q in scored]
    return {
        "k": k,
        "gap": JUDGED_GAP,
        "questions": len(scored),
        "per_question": {"mean": _mean(sizes), "min": min(sizes, default=0), "max": max(sizes, default=0)},
        "relevant": {q: len(corpus.relevant(q)) for q in scored},
        "rankers": rows,
    }
