"""Every ranker sitegen can run, by stable name.

Adding a ranker is one module plus one line in :data:`RANKERS`: the ranker's :class:`Contract`
(family, verifier, components, filter) is all the build, the experiments, the evidence writer and
the audit read about it. A ranker of a family the audit recomputes (lexical, dense, fusion) is
audited with no further change; the audit's own table of the rankers sitegen ships
(``audit.SHIPPED_RANKERS``) pins each shipped name to its family and verifier.

Other packages add rankers through the ``sitegen.rankers`` entry-point group (:mod:`sitegen.rankers.plugins`),
read only for a name :data:`RANKERS` lacks; ``RANKERS`` stays the built-in table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sitegen.embedding.models import MPNET_SPEC, ModelSpec
from sitegen.errors import SitegenError
from sitegen.postgres.index import EF_SEARCH_MAX, HybridSettings
from sitegen.rankers.base import Contract, Family, Hit, Ranker, RankInputs, Reproduction, Run, top_k
from sitegen.rankers.bm25 import BM25Ranker
from sitegen.rankers.dense import DenseRanker
from sitegen.rankers.fusion import RRFRanker, reciprocal_rank_fusion
from sitegen.rankers.pg import PgHybridRanker, PgTsvectorRanker, PgVectorRanker
from sitegen.rankers.plugins import entry_point_names, load_entry_point_ranker
from sitegen.rankers.rerank import BiEncoderScorer, RerankRanker

__all__ = [
    "DEFAULT_RANKERS",
    "RANKERS",
    "Contract",
    "Family",
    "Hit",
    "RankInputs",
    "Ranker",
    "Reproduction",
    "Run",
    "chunking_sweep_rankers",
    "make_rankers",
    "model_rankers",
    "needs_postgres",
    "reciprocal_rank_fusion",
    "top_k",
]

_HNSW = "pgvector's HNSW search (approximate) against exact cosine"
_SQL = "the fusion as one SQL statement against the same fusion in Python"

RANKERS: dict[str, Callable[[], Ranker]] = {
    "bm25": lambda: BM25Ranker("bm25", stemmed=False, chunking_sweep=True),
    "bm25-stem": lambda: BM25Ranker("bm25-stem", stemmed=True),
    "dense": lambda: DenseRanker("dense", chunking_sweep=True),
    "rrf-dense-bm25": lambda: RRFRanker("rrf-dense-bm25", ("dense", "bm25"), chunking_sweep=True),
    "rrf-dense-bm25-stem": lambda: RRFRanker("rrf-dense-bm25-stem", ("dense", "bm25-stem")),
    # all-mpnet-base-v2 (sitegen[mpnet]): a rebuild from a bundle's frozen vectors needs no model.
    "dense-mpnet": lambda: DenseRanker("dense-mpnet", model=MPNET_SPEC),
    "rrf-mpnet-bm25": lambda: RRFRanker("rrf-mpnet-bm25", ("dense-mpnet", "bm25")),
    "rrf-mpnet-bm25-stem": lambda: RRFRanker("rrf-mpnet-bm25-stem", ("dense-mpnet", "bm25-stem")),
    # The seed's pipeline end to end: retrieve, fuse, then rerank the fused top 50 by the embedding model's
    # cosine. The scorer's embedding is the one place to name another configured model.
    "rerank-dense": lambda: RerankRanker("rerank-dense", "rrf-dense-bm25", 50, BiEncoderScorer("dense")),
    "rerank-mpnet": lambda: RerankRanker(
        "rerank-mpnet", "rrf-dense-bm25", 50, BiEncoderScorer("dense-mpnet", MPNET_SPEC)
    ),
    # Filtered variants run only on corpora whose questions carry a metadata filter.
    "bm25-filtered": lambda: BM25Ranker("bm25-filtered", stemmed=False, filtered=True, unfiltered="bm25"),
    "dense-filtered": lambda: DenseRanker("dense-filtered", filtered=True, unfiltered="dense"),
    "rrf-dense-bm25-filtered": lambda: RRFRanker(
        "rrf-dense-bm25-filtered", ("dense-filtered", "bm25-filtered"), filtered=True, unfiltered="rrf-dense-bm25"
    ),
    # ef_search at pgvector's ceiling: on corpora up to 1,000 passages the HNSW search visits every
    # passage, so pg-vector is exact and two builds agree byte for byte; above it the vector lists run
    # as an exact scan (sitegen.postgres.index.vector_search).
    "pg-vector": lambda: PgVectorRanker(
        "pg-vector", ef_search=EF_SEARCH_MAX, reproduces=Reproduction("dense", 10, _HNSW)
    ),
    "pg-tsvector": lambda: PgTsvectorRanker("pg-tsvector"),
    "rrf-pgvector-tsvector": lambda: RRFRanker("rrf-pgvector-tsvector", ("pg-vector", "pg-tsvector")),
    "pg-hybrid-sql": lambda: PgHybridRanker(
        "pg-hybrid-sql",
        fusion=HybridSettings(ef_search=EF_SEARCH_MAX),
        reproduces=Reproduction("rrf-pgvector-tsvector", 5, _SQL),
    ),
    "pg-vector-filtered": lambda: PgVectorRanker(
        "pg-vector-filtered",
        ef_search=EF_SEARCH_MAX,
        filtered=True,
        unfiltered="pg-vector",
        reproduces=Reproduction("dense-filtered", 10, _HNSW),
    ),
    "pg-tsvector-filtered": lambda: PgTsvectorRanker("pg-tsvector-filtered", filtered=True, unfiltered="pg-tsvector"),
    "rrf-pgvector-tsvector-filtered": lambda: RRFRanker(
        "rrf-pgvector-tsvector-filtered",
        ("pg-vector-filtered", "pg-tsvector-filtered"),
        filtered=True,
        unfiltered="rrf-pgvector-tsvector",
    ),
    "pg-hybrid-sql-filtered": lambda: PgHybridRanker(
        "pg-hybrid-sql-filtered",
        ("pg-vector-filtered", "pg-tsvector-filtered"),
        fusion=HybridSettings(ef_search=EF_SEARCH_MAX),
        filtered=True,
        unfiltered="pg-hybrid-sql",
        reproduces=Reproduction("rrf-pgvector-tsvector-filtered", 5, _SQL),
    ),
}

DEFAULT_RANKERS: tuple[str, ...] = tuple(RANKERS)


def needs_postgres(rankers: Iterable[Ranker]) -> set[str]:
    """Names of the rankers (in dependency order) that need PostgreSQL, themselves or through a component."""
    names: set[str] = set()
    for ranker in rankers:
        if ranker.contract.uses_postgres or names & set(ranker.contract.components):
            names.add(ranker.name)
    return names


def chunking_sweep_rankers() -> tuple[str, ...]:
    """The registered rankers whose contract asks to be rerun on every chunking setting, in registry order."""
    return tuple(name for name, factory in RANKERS.items() if factory().contract.chunking_sweep)


def model_rankers(specs: Iterable[ModelSpec], taken: Iterable[str] = ()) -> list[Ranker]:
    """A dense ranker for each model entry (``sitegen.toml``'s ``[[models]]``, a corpus's ``"models"``); an
    entry may not take a built-in ranker's name or one in ``taken``."""
    used = set(RANKERS) | set(taken)
    rankers: list[Ranker] = []
    for spec in specs:
        if spec.name in used:
            raise SitegenError(f"model entry {spec.name}: the name is already a ranker's; give the entry another")
        used.add(spec.name)
        rankers.append(DenseRanker(spec.name, model=spec))
    return rankers


def make_rankers(names: Iterable[str]) -> list[Ranker]:
    """Instantiate rankers in dependency order, adding any component a fusion needs."""
    ordered: list[Ranker] = []
    placed: set[str] = set()

    def place(name: str, chain: tuple[str, ...]) -> None:
        if name in placed:
            return
        if name in chain:
            raise SitegenError(f"rankers depend on each other in a cycle: {' -> '.join((*chain, name))}")
        # A name that is not built in may be another package's ranker (entry-point group "sitegen.rankers").
        ranker = RANKERS[name]() if name in RANKERS else load_entry_point_ranker(name)
        if ranker is None:
            known = [*RANKERS, *(n for n in entry_point_names() if n not in RANKERS)]
            raise SitegenError(f"unknown ranker {name!r}; known rankers: {', '.join(known)}")
        if ranker.name != name:
            raise SitegenError(f"the ranker registered as {name!r} calls itself {ranker.name!r}")
        for component in ranker.contract.components:
            place(component, (*chain, name))
        placed.add(name)
        ordered.append(ranker)

    for name in names:
        place(name, ())
    return ordered
