"""What a rerank buys at each depth: each bi-encoder rerank stage run again over the first stage's top N for
every N of :data:`SWEEP_DEPTHS`, scored beside the first stage itself.

A bi-encoder's score of a passage does not depend on which other passages are candidates, and it is recomputed
by the standalone audit from the stored vectors, so the sweep is cheap and checkable. A cross-encoder's or a
hook's scores exist only for the candidates its run scored, so their stages are not swept.

``evidence/<corpus>/rerank.json`` shape::

    {"schema_version": 1, "depths": [10, 20, 50, 100], "metrics": ["ndcg@10", "mrr@10", "recall@10"],
     "questions": n (scored: with a relevant passage), "ties": TIE_RULE,
     "stages": {rerank_ranker: {"first_stage", "candidates" (the run's own N), "embedding",
                "rows": [{"candidates": N, "first_stage": {metric: mean}, "reranked": {metric: mean},
                          "delta": {metric: reranked - first_stage}, "moved": questions whose top 10 changed}]}}}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from sitegen.inputs.corpus import Corpus
from sitegen.rankers.base import Family, RankInputs, Run
from sitegen.rankers.rerank import TIE_RULE, RerankRanker, rerank_hits
from sitegen.scoring.metrics import score_query

__all__ = ["SWEEP_DEPTHS", "SWEEP_METRICS", "rerank_sweep"]

SWEEP_DEPTHS = (10, 20, 50, 100)
SWEEP_METRICS = ("ndcg@10", "mrr@10", "recall@10")
_TOP = 10


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def rerank_sweep(rankers: Sequence[Any], inputs: RankInputs, depth: int) -> dict[str, Any] | None:
    """The sweep for every sweepable rerank stage among ``rankers`` whose run is in ``inputs.runs`` (None when
    there is none): each rerank again over the first stage's top N, N in :data:`SWEEP_DEPTHS` capped at
    ``depth``."""
    corpus, runs = inputs.corpus, inputs.runs
    stages = [
        r
        for r in rankers
        if r.contract.family is Family.RERANK
        and r.name in runs
        and getattr(getattr(r, "scorer", None), "sweepable", False)
    ]
    if not stages:
        return None
    scored = [q for q in corpus.queries if corpus.relevant(q.query_id)]
    return {
        "schema_version": 1,
        "depths": [n for n in SWEEP_DEPTHS if n <= depth],
        "metrics": list(SWEEP_METRICS),
        "questions": len(scored),
        "ties": TIE_RULE,
        "stages": {r.name: _stage(r, inputs, corpus, runs[r.first_stage], depth) for r in stages},
    }


def _stage(ranker: RerankRanker, inputs: RankInputs, corpus: Corpus, first: Run, depth: int) -> dict[str, Any]:
    score = ranker.scorer.scorer_for(inputs)
    scored = [q for q in corpus.queries if corpus.relevant(q.query_id)]
    deepest = max(n for n in SWEEP_DEPTHS if n <= depth)
    texts: Mapping[str, str] = {}
    # Scores do not depend on the candidate set: score the deepest list once, reorder each prefix.
    full = {
        q.query_id: dict(
            (h.doc_id, h.score)
            for h in rerank_hits(
                ranker.first_stage,
                first.hits.get(q.query_id, ())[:deepest],
                texts,
                lambda cands, q=q: score(q.query_id, q.text, cands),
            )
        )
        for q in scored
    }
    rows = []
    for n in (n for n in SWEEP_DEPTHS if n <= depth):
        before, after, moved = [], [], 0
        for q in scored:
            top = [h.doc_id for h in first.hits.get(q.query_id, ())[:n]]
            reranked = sorted(top, key=lambda d, q=q: (-full[q.query_id][d], d))
            grades = corpus.qrels.get(q.query_id, {})
            before.append(score_query(top, grades, SWEEP_METRICS))
            after.append(score_query(reranked, grades, SWEEP_METRICS))
            moved += top[:_TOP] != reranked[:_TOP]
        was = {m: _mean([s[m] for s in before]) for m in SWEEP_METRICS}
        now = {m: _mean([s[m] for s in after]) for m in SWEEP_METRICS}
        rows.append(
            {
                "candidates": n,
                "first_stage": was,
                "reranked": now,
                "delta": {m: now[m] - was[m] for m in SWEEP_METRICS},
                "moved": moved,
            }
        )
    return {
        "first_stage": ranker.first_stage,
        "candidates": ranker.candidates,
        "embedding": getattr(ranker.scorer, "embedding", None),
        "rows": rows,
    }
