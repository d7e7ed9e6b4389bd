"""Rankers that ask PostgreSQL: pgvector's HNSW index, tsvector full-text search, and the
Reciprocal Rank Fusion of the two computed in one SQL statement.

Each reads the corpus index the build loaded into the server (``inputs.postgres``, a
:class:`sitegen.postgres.index.PgCorpusIndex`) and the query vectors from ``inputs.embeddings``;
the SQL of each is in :mod:`sitegen.postgres.index`.

- ``pg-vector``: ``ORDER BY embedding <=> q`` through the HNSW index (cosine distance);
  score = 1 - distance, the cosine similarity, comparable with ``dense``. Approximate; exact
  when the corpus has at most ``ef_search`` passages. Above pgvector's ef_search ceiling (1000
  passages) it runs as an exact scan instead (:func:`sitegen.postgres.index.vector_search`),
  and the run's ``vector_search`` parameter says which search ran and why.
- ``pg-tsvector``: ``to_tsvector('english', title || ' ' || text)`` against
  ``plainto_tsquery('english', q)`` with AND rewritten to OR, only matching passages ranked
  by ``ts_rank_cd`` (cover density, normalisation 0). It is not BM25: there is no idf.
- ``pg-hybrid-sql``: RRF, k = 60, the first 20 of each list, weights 1 : 1, with
  ``sitegen.rankers.fusion``'s tie rule, so it equals ``RRFRanker`` over ``pg-vector`` and
  ``pg-tsvector`` in ids, order and scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sitegen.errors import SitegenError
from sitegen.postgres.index import (
    DEFAULT_HYBRID,
    EF_SEARCH,
    EF_SEARCH_MAX,
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    HybridSettings,
)
from sitegen.rankers.base import Basis, Contract, Family, Hit, RankInputs, Reproduction, Run
from sitegen.rankers.fusion import TIE_RULE

__all__ = ["PgHybridRanker", "PgTsvectorRanker", "PgVectorRanker", "same_top"]

_HNSW = {"opclass": "vector_cosine_ops", "m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION}
_SEQSCAN_NOTE = (
    "enable_seqscan = off, so the query goes through its index even on small tables; "
    "keyword results are the same either way"
)
_VECTOR_TIES = 'cosine distance ascending, then document id ascending (COLLATE "C", Python\'s string order)'
_KEYWORD_TIES = 'ts_rank_cd descending, then document id ascending (COLLATE "C", Python\'s string order)'


def _vector_params(ef_search: int) -> dict[str, Any]:
    return {
        "distance": "cosine distance (embedding <=> query), pgvector",
        "index": {"type": "hnsw", **_HNSW, "parallel_build_workers": 0},
        "ef_search": ef_search,
        "ef_search_rule": f"raised to the number of rows asked for, at most {EF_SEARCH_MAX}; above "
        f"{EF_SEARCH_MAX} passages an exact scan instead (index scans off), see vector_search",
        "vectors": "the build's normalised float32 embeddings, sent as pgvector text",
    }


def _keyword_params() -> dict[str, Any]:
    return {
        "document": "to_tsvector('english', title || ' ' || text), a stored generated column with a GIN index",
        "query": "plainto_tsquery('english', query) with its AND operators rewritten to OR",
        "matching": "only passages matching at least one query lexeme are ranked",
        "score": "ts_rank_cd(tsv, query), normalisation 0 (float4)",
        "note": "ts_rank_cd is not BM25: no idf",
    }


def _index(inputs: RankInputs, ranker: str) -> Any:
    index = inputs.postgres
    if index is None:
        raise SitegenError(f"ranker {ranker!r} needs the corpus loaded into PostgreSQL, but none was loaded")
    if getattr(index, "corpus_name", inputs.corpus.name) != inputs.corpus.name:
        raise SitegenError(
            f"ranker {ranker!r} was handed the PostgreSQL index of {index.corpus_name!r} for {inputs.corpus.name!r}"
        )
    return index


def _query_vectors(inputs: RankInputs, ranker: str) -> dict[str, np.ndarray]:
    embeddings = inputs.embeddings
    if embeddings is None:
        raise SitegenError(f"ranker {ranker!r} needs embeddings, but none were computed")
    vectors = {qid: embeddings.query_vectors[row] for row, qid in enumerate(embeddings.query_ids)}
    missing = [q.query_id for q in inputs.corpus.queries if q.query_id not in vectors]
    if missing:
        raise SitegenError(f"ranker {ranker!r}: no embedding for query {missing[0]!r}")
    return vectors


def _filter_params(filtered: bool) -> dict[str, Any]:
    if not filtered:
        return {}
    return {
        "filtered": True,
        "filter": "the question's metadata filter as a SQL WHERE clause over the metadata jsonb column, "
        "field names and values as bind parameters, dates compared as dates",
    }


def _conditions(ranker: Any, inputs: RankInputs, query: Any) -> tuple[Any, ...]:
    """The question's filter, compiled against the corpus's declared vocabulary (empty when unfiltered)."""
    if not ranker.contract.filtered or not query.filter:
        return ()
    from sitegen.inputs.filters import compile_filter, parse_vocabulary

    return compile_filter(query.filter, parse_vocabulary(inputs.corpus.config.get("filters", {})))


def _run_params(ranker: Any, index: Any, rows_asked: int | None = None) -> dict[str, Any]:
    """The ranker's settings, the index it read and, for a vector list of ``rows_asked`` rows, the
    search that ran (HNSW or exact scan) and why."""
    params = ranker.params()
    if hasattr(index, "index_params"):
        params["index_built"] = index.index_params()
    if rows_asked is not None and hasattr(index, "vector_search"):
        params["vector_search"] = index.vector_search(rows_asked, ranker.ef_search).params()
    return params


class PgVectorRanker:
    """``pg-vector``: nearest passages by cosine distance through pgvector's HNSW index."""

    def __init__(
        self,
        name: str = "pg-vector",
        ef_search: int = EF_SEARCH,
        filtered: bool = False,
        unfiltered: str | None = None,
        reproduces: Reproduction | None = None,
    ) -> None:
        self.name = name
        self.ef_search = ef_search
        self.contract = Contract(
            Family.POSTGRES,
            "pgvector-hnsw",
            filtered=filtered,
            unfiltered=unfiltered,
            uses_embeddings=True,
            uses_postgres=True,
            reproduces=reproduces,
            basis=(Basis.VECTORS,),  # the server-less check ranks the stored vectors exactly
        )

    def params(self) -> dict[str, Any]:
        return {
            "method": self.contract.verifier,
            **_vector_params(self.ef_search),
            "score": "1 - cosine distance, the cosine similarity (float8)",
            "planner": _SEQSCAN_NOTE,
            "ties": _VECTOR_TIES,
        } | _filter_params(self.contract.filtered)

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        index = _index(inputs, self.name)
        vectors = _query_vectors(inputs, self.name)
        hits: dict[str, tuple[Hit, ...]] = {}
        for query in inputs.corpus.queries:
            rows = index.vector_top(
                vectors[query.query_id], depth, ef_search=self.ef_search, conditions=_conditions(self, inputs, query)
            )
            hits[query.query_id] = tuple(
                Hit(doc_id=doc_id, rank=rank, score=1.0 - distance)
                for rank, (doc_id, distance) in enumerate(rows, start=1)
            )
        return Run(ranker=self.name, contract=self.contract, params=_run_params(self, index, depth), hits=hits)


class PgTsvectorRanker:
    """``pg-tsvector``: PostgreSQL full-text search, any query lexeme, ranked by ts_rank_cd."""

    def __init__(self, name: str = "pg-tsvector", filtered: bool = False, unfiltered: str | None = None) -> None:
        self.name = name
        self.contract = Contract(
            Family.POSTGRES,
            "postgres-tsvector",
            filtered=filtered,
            unfiltered=unfiltered,
            uses_embeddings=True,  # not for ranking: the build loads vectors and text into one table
            uses_postgres=True,
            basis=(Basis.POSTGRES,),  # PostgreSQL's parser, stemmer and ts_rank_cd
        )

    def params(self) -> dict[str, Any]:
        return {
            "method": self.contract.verifier,
            **_keyword_params(),
            "planner": _SEQSCAN_NOTE,
            "ties": _KEYWORD_TIES,
        } | _filter_params(self.contract.filtered)

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        index = _index(inputs, self.name)
        hits: dict[str, tuple[Hit, ...]] = {}
        for query in inputs.corpus.queries:
            rows = index.keyword_top(query.text, depth, conditions=_conditions(self, inputs, query))
            hits[query.query_id] = tuple(
                Hit(doc_id=doc_id, rank=rank, score=score) for rank, (doc_id, score) in enumerate(rows, start=1)
            )
        return Run(ranker=self.name, contract=self.contract, params=_run_params(self, index), hits=hits)


class PgHybridRanker:
    """``pg-hybrid-sql``: RRF of the pg-vector and pg-tsvector candidate lists in one SQL statement."""

    def __init__(
        self,
        name: str = "pg-hybrid-sql",
        components: tuple[str, str] = ("pg-vector", "pg-tsvector"),
        fusion: HybridSettings = DEFAULT_HYBRID,
        filtered: bool = False,
        unfiltered: str | None = None,
        reproduces: Reproduction | None = None,
    ) -> None:
        weights = fusion.weights
        if len(weights) != 2 or any(w <= 0 for w in weights):
            raise ValueError(f"need two positive weights (pg-vector, pg-tsvector), got {list(weights)}")
        self.name = name
        self.k = float(fusion.k)
        self.candidates = fusion.candidates
        self.weights = (float(weights[0]), float(weights[1]))
        self.ef_search = fusion.ef_search
        # The runs the audit fuses to check this one: they run first and sit beside it in the bundle.
        self.contract = Contract(
            Family.POSTGRES,
            "postgres-hybrid-sql",
            components=components,
            filtered=filtered,
            unfiltered=unfiltered,
            uses_embeddings=True,
            uses_postgres=True,
            reproduces=reproduces,
        )

    def params(self) -> dict[str, Any]:
        return {
            "method": self.contract.verifier,
            "fusion": "reciprocal rank fusion: sum over lists of weight / (k + rank), in double precision",
            "components": list(self.contract.components),
            "k": self.k,
            "candidates_per_list": self.candidates,
            "weights": dict(zip(self.contract.components, self.weights, strict=True)),
            "ties": TIE_RULE,
            "sql_order": "ORDER BY score DESC, vector_rank NULLS LAST, keyword_rank",
            "vector_list": {**_vector_params(self.ef_search), "ties": _VECTOR_TIES},
            "keyword_list": {**_keyword_params(), "ties": _KEYWORD_TIES},
            "planner": _SEQSCAN_NOTE,
        } | _filter_params(self.contract.filtered)

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        index = _index(inputs, self.name)
        vectors = _query_vectors(inputs, self.name)
        hits: dict[str, tuple[Hit, ...]] = {}
        for query in inputs.corpus.queries:
            rows = index.hybrid_top(
                vectors[query.query_id],
                query.text,
                depth,
                HybridSettings(self.k, self.candidates, self.weights, self.ef_search),
                _conditions(self, inputs, query),
            )
            hits[query.query_id] = tuple(
                Hit(
                    doc_id=row.doc_id,
                    rank=rank,
                    score=row.score,
                    components=(
                        (self.contract.components[0], row.vector_rank),
                        (self.contract.components[1], row.keyword_rank),
                    ),
                )
                for rank, row in enumerate(rows, start=1)
            )
        params = _run_params(self, index, max(depth, self.candidates))
        return Run(ranker=self.name, contract=self.contract, params=params, hits=hits)


def _top_ids(hits: Mapping[str, Sequence[Hit]], query_id: str, n: int) -> list[str]:
    return [h.doc_id for h in hits.get(query_id, ())[:n]]


def same_top(first: Run, second: Run, n: int) -> int:
    """Questions whose top ``n`` ids are identical and in the same order in both runs (an index against
    an exact search, SQL against Python); a question missing from one run has no hits."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    queries = sorted(set(first.hits) | set(second.hits))
    return sum(_top_ids(first.hits, q, n) == _top_ids(second.hits, q, n) for q in queries)
