"""Every ranker sitegen can run, by stable name.

Adding a ranker is one module plus one line in :data:`RANKERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sitegen.errors import SitegenError
from sitegen.postgres import EF_SEARCH_MAX
from sitegen.rankers.base import Hit, Ranker, RankInputs, Run, top_k
from sitegen.rankers.bm25 import BM25Ranker
from sitegen.rankers.dense import DenseRanker
from sitegen.rankers.fusion import RRFRanker, reciprocal_rank_fusion
from sitegen.rankers.pg import PgHybridRanker, PgTsvectorRanker, PgVectorRanker

__all__ = [
    "DEFAULT_RANKERS",
    "RANKERS",
    "Hit",
    "RankInputs",
    "Ranker",
    "Run",
    "make_rankers",
    "reciprocal_rank_fusion",
    "top_k",
]

RANKERS: dict[str, Callable[[], Ranker]] = {
    "bm25": lambda: BM25Ranker("bm25", stemmed=False),
    "bm25-stem": lambda: BM25Ranker("bm25-stem", stemmed=True),
    "dense": lambda: DenseRanker("dense"),
    "rrf-dense-bm25": lambda: RRFRanker("rrf-dense-bm25", ("dense", "bm25")),
    "rrf-dense-bm25-stem": lambda: RRFRanker("rrf-dense-bm25-stem", ("dense", "bm25-stem")),
    # Filtered variants run only on corpora whose questions carry a metadata filter.
    "bm25-filtered": lambda: BM25Ranker("bm25-filtered", stemmed=False, filtered=True),
    "dense-filtered": lambda: DenseRanker("dense-filtered", filtered=True),
    "rrf-dense-bm25-filtered": lambda: RRFRanker("rrf-dense-bm25-filtered", ("dense-filtered", "bm25-filtered")),
    # ef_search at pgvector's ceiling: on corpora up to 1,000 passages the HNSW search visits every
    # passage, so pg-vector is exact and two builds agree byte for byte.
    "pg-vector": lambda: PgVectorRanker("pg-vector", ef_search=EF_SEARCH_MAX),
    "pg-tsvector": lambda: PgTsvectorRanker("pg-tsvector"),
    "rrf-pgvector-tsvector": lambda: RRFRanker("rrf-pgvector-tsvector", ("pg-vector", "pg-tsvector")),
    "pg-hybrid-sql": lambda: PgHybridRanker("pg-hybrid-sql", ef_search=EF_SEARCH_MAX),
    "pg-vector-filtered": lambda: PgVectorRanker("pg-vector-filtered", ef_search=EF_SEARCH_MAX, filtered=True),
    "pg-tsvector-filtered": lambda: PgTsvectorRanker("pg-tsvector-filtered", filtered=True),
    "rrf-pgvector-tsvector-filtered": lambda: RRFRanker(
        "rrf-pgvector-tsvector-filtered", ("pg-vector-filtered", "pg-tsvector-filtered")
    ),
    "pg-hybrid-sql-filtered": lambda: PgHybridRanker("pg-hybrid-sql-filtered", ef_search=EF_SEARCH_MAX, filtered=True),
}

DEFAULT_RANKERS: tuple[str, ...] = tuple(RANKERS)


def make_rankers(names: Iterable[str]) -> list[Ranker]:
    """Instantiate rankers in dependency order, adding any component a fusion needs."""
    ordered: list[Ranker] = []
    placed: set[str] = set()

    def place(name: str, chain: tuple[str, ...]) -> None:
        if name in placed:
            return
        if name not in RANKERS:
            raise SitegenError(f"unknown ranker {name!r}; known rankers: {', '.join(RANKERS)}")
        if name in chain:
            raise SitegenError(f"rankers depend on each other in a cycle: {' -> '.join((*chain, name))}")
        ranker = RANKERS[name]()
        for component in ranker.requires:
            place(component, (*chain, name))
        placed.add(name)
        ordered.append(ranker)

    for name in names:
        place(name, ())
    return ordered
