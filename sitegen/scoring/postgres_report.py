"""``postgres.json`` of a corpus: how the PostgreSQL rankers agree with the in-process rankers they
reproduce, the index plans and parameters, or why they did not run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sitegen.embedding.vectors import CorpusEmbeddings
from sitegen.inputs.corpus import Corpus
from sitegen.rankers import Run, needs_postgres

__all__ = ["postgres_report"]


def postgres_report(
    corpus: Corpus,
    rankers: Sequence[Any],
    runs: dict[str, Run],
    embeddings: CorpusEmbeddings | None,
    pg_index: Any,
    not_run: dict[str, str],
) -> dict[str, Any] | None:
    """Agreement figures and index plans for the rankers that need PostgreSQL, or why they did not run."""
    pg_names = needs_postgres(rankers)
    asked = [r.name for r in rankers if r.name in pg_names and (r.name in runs or r.name in not_run)]
    if not asked:
        return None
    evidence: dict[str, Any] = {
        "schema_version": 1,
        "rankers": asked,
        "not_run": {n: not_run[n] for n in asked if n in not_run},
        "questions": len(corpus.queries),
        "note": "ts_rank_cd is not BM25: it has no idf, so a common word counts as much as a rare one",
    }
    if pg_index is None or embeddings is None:
        return evidence
    from sitegen.postgres.index import EF_SEARCH_MAX
    from sitegen.rankers.pg import same_top

    evidence["agreement"] = [
        {
            "ranker": name,
            "reproduces": claim.ranker,
            "top": claim.top,
            "claim": claim.claim,
            "identical": same_top(runs[claim.ranker], runs[name], claim.top),
        }
        for name, run in runs.items()
        if (claim := run.contract.reproduces) is not None and name in asked and claim.ranker in runs
    ]
    plans = pg_index.explain_plans(embeddings.query_vectors[0], corpus.queries[0].text)
    evidence["plans"] = {
        "query_id": corpus.queries[0].query_id,
        "scans": {kind: [dict(vars(node)) for node in nodes] for kind, nodes in plans.items()},
        # The search the plans ran, with explain_plans' defaults: HNSW, or an exact scan above the ceiling.
        "vector_search": pg_index.vector_search(20, EF_SEARCH_MAX).params(),
    }
    evidence["index"] = pg_index.index_params()
    return evidence
