"""The PostgreSQL cost test (``sitegen bench-pg``): what the pg-* rankers cost at 50,000 rows,
against sitegen's in-process rankers on the same rows.

Not part of the build. Its timings depend on the machine, so they go to their own labelled
file (``bench/results-pg.json``), shown on the site beside a description of the machine,
never into the checksummed evidence.

Rows. The corpus's passages, then filler rows up to ``rows``, made to look like the corpus at
no embedding cost. Filler rows come in blocks of 1,000, block b drawn from
``numpy.random.default_rng([seed, b])``, so a row is the same whatever the total: each picks
3 of the corpus's passages (with replacement), takes as many words as the first has, each drawn
uniformly from the three passages' tokens together (so the vocabulary and roughly the word
frequencies are the corpus's), and has no title. Embedding 50,000 texts with the model would
take about 15 minutes on a 2-core machine, so a filler row's vector is synthetic: the picked
passages' real embeddings mixed with Dirichlet(1, 1, 1) weights and normalised, plus Gaussian
noise of norm about ``FILLER_NOISE``, normalised again. The passages and questions keep their
real embeddings, computed and cached exactly as the build does.

Timing. The table is loaded through :meth:`PgCorpusIndex.load` (the build's path), which
records the seconds of COPY, the HNSW build, the GIN build and ANALYZE. Each ranker then
answers every question ``warmups + runs`` times; only the last ``runs`` passes count. Within a
pass the rankers take turns per question (A B C ... then the next question), so drift on a shared
machine reaches every side alike. The turn's order is shuffled for each question (seeded), because
what ran just before matters: a PostgreSQL query that scores thousands of rows evicts the
in-process rankers' arrays from the CPU caches, and a hybrid run right after its own components
finds their data there. The in-process rankers are then timed again in passes of their own, with
no PostgreSQL query between calls, and reported beside. Python's garbage collector is paused
during a pass and run between passes. Question vectors are computed once beforehand: embedding
time is excluded on every side.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from sitegen import wording
from sitegen.bench.filler import FILLER_SEED, FILLER_TEXT, FILLER_VECTORS, FillerRows, make_filler
from sitegen.bench.machine import LIBRARIES, cpu_ticks, machine, other_cpu_share, process_tree_cpu_seconds
from sitegen.bench.pg_report import (
    HNSW_AGREEMENT_DEPTH,
    hybrid_by_kind,
    latency_row,
    percentile,
    rows_matched_by_kind,
)
from sitegen.embedding.cache import Embedder, EmbeddingCache, cache_key, default_cache_dir
from sitegen.embedding.model import EmbeddingModel
from sitegen.embedding.vectors import CorpusEmbeddings
from sitegen.errors import SitegenError
from sitegen.inputs.corpus import Corpus, load_corpus, passage_text
from sitegen.inputs.vectors import embed_corpus
from sitegen.rankers.base import doc_id_order, top_k
from sitegen.rankers.bm25 import bm25_scores, build_bm25_index
from sitegen.rankers.dense import dense_top_k
from sitegen.rankers.fusion import reciprocal_rank_fusion
from sitegen.rankers.tokenize import tokenize

__all__ = ["KIND", "LABEL", "TARGET_SPEEDUP", "PgCostSettings", "run_pg_cost"]

KIND = "sitegen-pg-cost"
SCHEMA = 1
LABEL = "Timings measured on one machine; absolute times vary between machines. Not part of the checksummed evidence."
TARGET_SPEEDUP = 5.0
ORDER_SEED = 1

Progress = Callable[[str], None]

# The rankers timed on the PostgreSQL side; the others run in this process.
_PG_SIDES = ("pg-vector", "pg-tsvector", "rrf-pgvector-tsvector", "pg-hybrid-sql")


def _quiet(_: str) -> None:
    return None


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class PgCostSettings:
    """What a cost test measures: the rows in the table, the measured and warm-up passes, the depth of each
    ranking, the filler's seed, the server (None: a private one from ``pgserver``), the embedding cache
    (None: the build's), and the command recorded with the result."""

    rows: int = 50_000
    runs: int = 3
    warmups: int = 2
    depth: int = 20
    seed: int = FILLER_SEED
    pg_dsn: str | None = None
    cache_dir: Path | None = None
    command: str = "sitegen bench-pg"


@dataclass(frozen=True)
class _Table:
    """The rows timed: the corpus as the build ranks it, then the filler rows; their vectors (the corpus's real
    ones, then the filler's synthetic ones) and the questions' real ones."""

    corpus: Corpus
    filler: FillerRows
    rows: Corpus
    embeddings: CorpusEmbeddings

    @property
    def doc_ids(self) -> tuple[str, ...]:
        return self.embeddings.doc_ids

    @property
    def matrix(self) -> np.ndarray:
        return self.embeddings.doc_vectors


@dataclass(frozen=True)
class _Rankers:
    """The build's rankers, for their settings: ef_search, RRF k, candidates and weights."""

    pg_vector: Any
    pg_hybrid: Any
    rrf_pg: Any
    rrf_local: Any

    @classmethod
    def shipped(cls) -> _Rankers:
        from sitegen.rankers import RANKERS

        return cls(
            RANKERS["pg-vector"](),
            RANKERS["pg-hybrid-sql"](),
            RANKERS["rrf-pgvector-tsvector"](),
            RANKERS["rrf-dense-bm25"](),
        )


@dataclass(frozen=True)
class _InProcess:
    """The in-process rankers over the same rows (BM25 postings built once, the dense matrix as it is), as
    functions of a question's position."""

    sides: Mapping[str, Callable[[int], list[str]]]
    bm25: Any
    bm25_seconds: float
    #: The RRF k of the in-process fusion (the build's rrf-dense-bm25).
    rrf_k: float


@dataclass(frozen=True)
class _Measured:
    """What the run against PostgreSQL measured: the server's versions, the load's steps and sizes, the rows each
    question matches, each side's samples and answers, the in-process sides timed alone, the build's vector
    search, and the HNSW lists at each ef_search with their times."""

    versions: Mapping[str, str]
    #: The build's pg-vector ef_search, which the HNSW lists are also taken at.
    ef_search: int
    steps: Mapping[str, float]
    sizes: Mapping[str, Any]
    index: Mapping[str, int]
    matched: list[int]
    samples: Mapping[str, list[int]]
    answers: Mapping[str, list[list[str]]]
    timing: Mapping[str, float]
    alone: Mapping[str, list[int]]
    build_search: Any
    hnsw: Mapping[int, tuple[list[list[str]], list[int]]]


@dataclass(frozen=True)
class _WholeRun:
    """Wall-clock seconds of the whole call and the CPU ticks the machine and this process spent meanwhile."""

    seconds: float
    busy: float
    own: float


def run_pg_cost(
    corpus_dir: Path,
    settings: PgCostSettings = PgCostSettings(),
    model: Any = None,
    progress: Progress = _quiet,
) -> dict[str, Any]:
    """Load the corpus plus filler rows into PostgreSQL and time every ranker; the result as JSON data.

    Raises SitegenError (CorpusError, PostgresUnavailable) with a one-line reason; no PostgreSQL
    server started here outlives the call.
    """
    if settings.runs < 1 or settings.warmups < 0 or settings.depth < 1:
        raise SitegenError(
            f"need runs >= 1, warmups >= 0 and depth >= 1, got {settings.runs}, {settings.warmups} and {settings.depth}"
        )
    clock = time.perf_counter()
    busy0, own0 = cpu_ticks()
    table = _table(Path(corpus_dir), settings, model, progress)
    rankers = _Rankers.shipped()
    local = _in_process(table, rankers, settings.depth, progress)
    measured = _measure(table, local, rankers, settings, progress)
    busy1, own1 = cpu_ticks()
    whole = _WholeRun(time.perf_counter() - clock, busy1 - busy0, own1 - own0)
    return _result(settings, table, local, measured, whole)


def _table(corpus_dir: Path, settings: PgCostSettings, model: Any, progress: Progress) -> _Table:
    """The corpus with its real vectors, then filler rows up to ``settings.rows``."""
    corpus = _load(corpus_dir)
    rows = settings.rows
    if rows < len(corpus.documents):
        raise SitegenError(f"rows ({rows:,}) must be at least the corpus's {len(corpus.documents):,} passages")
    embeddings = _embed(corpus, settings.cache_dir, model, progress)
    progress(f"making {rows - len(corpus.documents):,} filler rows (seed {settings.seed})")
    filler = make_filler(corpus.documents, embeddings.doc_vectors, rows - len(corpus.documents), settings.seed)
    table = replace(corpus, documents=corpus.documents + filler.documents)
    table_embeddings = replace(
        embeddings,
        doc_ids=tuple(d.doc_id for d in table.documents),
        doc_vectors=np.concatenate([embeddings.doc_vectors, filler.vectors]),
    )
    return _Table(corpus, filler, table, table_embeddings)


def _embed(corpus: Corpus, cache_dir: Path | None, model: Any, progress: Progress) -> CorpusEmbeddings:
    """The corpus's real vectors, through the build's own embedding path and cache."""
    model = model or EmbeddingModel()
    cache = EmbeddingCache(cache_dir or default_cache_dir(), cache_key(model.config))
    try:
        embeddings, stats = embed_corpus(corpus, Embedder(model, cache))
    finally:
        cache.close()
    embedded = wording.count(stats.embedded, "text")
    progress(f"{corpus.name}: embedded {embedded}, {stats.cached} from the cache ({cache.path})")
    return embeddings


def _load(corpus_dir: Path) -> Corpus:
    """The corpus as the build ranks it: chunked when its sitegen.json asks for chunking."""
    corpus = load_corpus(corpus_dir)
    if "chunking" in corpus.config:
        from sitegen.inputs.chunk_settings import parse_chunking
        from sitegen.inputs.chunking import chunk_corpus

        corpus = chunk_corpus(corpus, parse_chunking(corpus.config["chunking"]).default)
    return corpus


def _machine(versions: Mapping[str, str]) -> dict[str, Any]:
    import platform

    info = machine((*LIBRARIES, "psycopg", "pgserver"))
    info["cpu_model"] = info.get("cpu_model") or platform.processor() or "unknown"
    info["memory_gb"] = round(info.get("memory_total_bytes", 0) / 1e9, 1)
    info["numpy"] = np.__version__
    info["postgres"] = versions.get("postgresql", "unknown")
    info["pgvector"] = versions.get("pgvector", "unknown")
    info["load_average_at_end"] = list(os.getloadavg())
    return info


def _fuse(ranker: Any, lists: list[list[str]], depth: int) -> list[str]:
    fused = reciprocal_rank_fusion(lists, ranker.k, ranker.weights, ranker.candidates)[:depth]
    return [item.doc_id for item in fused]


def _in_process(table: _Table, rankers: _Rankers, depth: int, progress: Progress) -> _InProcess:
    """bm25, dense and their fusion over the same rows, as the build runs them."""
    progress("indexing the same rows in-process (BM25 postings; the dense matrix is the vectors themselves)")
    doc_ids, matrix = table.doc_ids, table.matrix
    queries, query_vectors = table.corpus.queries, table.embeddings.query_vectors
    mark = time.perf_counter()
    bm25 = build_bm25_index([tokenize(passage_text(d)) for d in table.rows.documents])
    bm25_seconds = time.perf_counter() - mark
    id_key = doc_id_order(doc_ids)

    def bm25_ids(q: int) -> list[str]:
        scores = bm25_scores(bm25, tokenize(queries[q].text))
        return [doc_ids[i] for i in top_k(scores, id_key, depth, positive_only=True)]

    def dense_ids(q: int) -> list[str]:
        best, _ = dense_top_k(matrix, query_vectors[q], id_key, depth)
        return [doc_ids[i] for i in best]

    sides = {
        "bm25": bm25_ids,
        "dense": dense_ids,
        "rrf-dense-bm25": lambda q: _fuse(rankers.rrf_local, [dense_ids(q), bm25_ids(q)], depth),
    }
    return _InProcess(sides, bm25, bm25_seconds, rankers.rrf_local.k)


def _postgres_sides(index: Any, table: _Table, rankers: _Rankers, depth: int) -> dict[str, Callable[[int], list[str]]]:
    """The pg-* rankers over the loaded index, as the build runs them."""
    queries, query_vectors = table.corpus.queries, table.embeddings.query_vectors
    pg_hybrid, ef_search = rankers.pg_hybrid, rankers.pg_vector.ef_search

    def pg_vector_ids(q: int) -> list[str]:
        return [d for d, _ in index.vector_top(query_vectors[q], depth, ef_search=ef_search)]

    def pg_keyword_ids(q: int) -> list[str]:
        return [d for d, _ in index.keyword_top(queries[q].text, depth)]

    from sitegen.postgres.index import HybridSettings

    def pg_hybrid_ids(q: int) -> list[str]:
        found = index.hybrid_top(
            query_vectors[q],
            queries[q].text,
            depth,
            HybridSettings(pg_hybrid.k, pg_hybrid.candidates, pg_hybrid.weights, pg_hybrid.ef_search),
        )
        return [row.doc_id for row in found]

    return {
        "pg-vector": pg_vector_ids,
        "pg-tsvector": pg_keyword_ids,
        "rrf-pgvector-tsvector": lambda q: _fuse(rankers.rrf_pg, [pg_vector_ids(q), pg_keyword_ids(q)], depth),
        "pg-hybrid-sql": pg_hybrid_ids,
    }


def _hnsw_lists(index: Any, table: _Table, depth: int, ef_search: int) -> dict[int, tuple[list[list[str]], list[int]]]:
    """The HNSW index at pgvector's default and at the build's ef_search, also above the ceiling of 1000 rows,
    where the build's pg-vector runs an exact scan instead: what that exactness costs. One untimed pass each."""
    from sitegen.postgres.index import EF_SEARCH

    query_vectors = table.embeddings.query_vectors
    lists: dict[int, tuple[list[list[str]], list[int]]] = {}
    for ef in sorted({EF_SEARCH, ef_search}):
        hnsw = replace(index.vector_search(depth, ef), exact=False)
        found, found_ns = [], []
        for q in range(len(query_vectors)):
            start = time.perf_counter_ns()
            found.append([d for d, _ in index.vector_top(query_vectors[q], depth, search=hnsw)])
            found_ns.append(time.perf_counter_ns() - start)
        lists[ef] = (found, found_ns)
    return lists


def _measure(
    table: _Table, local: _InProcess, rankers: _Rankers, settings: PgCostSettings, progress: Progress
) -> _Measured:
    """Load the rows into PostgreSQL (the build's path) and time every side, interleaved, then the in-process
    sides alone and the HNSW lists; the server is stopped before this returns."""
    from sitegen.postgres.index import PgCorpusIndex
    from sitegen.postgres.server import PostgresServer

    questions, ef_search = len(table.corpus.queries), rankers.pg_vector.ef_search
    with PostgresServer(settings.pg_dsn) as server:
        versions = server.versions()
        progress(f"postgres: {server.describe()}")
        progress(f"loading {settings.rows:,} rows (COPY, then HNSW and GIN builds, single-threaded; minutes at 50,000)")
        index = PgCorpusIndex.load(server.connect(), table.rows, table.embeddings)
        steps = index.step_seconds
        progress(
            f"loaded: COPY {steps['copy']:.1f} s, HNSW {steps['hnsw']:.1f} s, GIN {steps['gin']:.1f} s, "
            f"ANALYZE {steps['analyze']:.1f} s"
        )
        sizes = index.sizes()
        matched = [index.match_count(q.text) for q in table.corpus.queries]
        pg_sides = _postgres_sides(index, table, rankers, settings.depth)
        sides = {name: pg_sides[name] for name in _PG_SIDES} | dict(local.sides)
        samples, answers, timing = _time_sides(sides, questions, settings, server.pid, progress)
        progress("timing the in-process rankers again, alone")
        alone, _, _ = _time_sides(
            local.sides, questions, replace(settings, warmups=min(settings.warmups, 1)), None, _quiet
        )
        build_search = index.vector_search(settings.depth, ef_search)
        hnsw = _hnsw_lists(index, table, settings.depth, ef_search)
        index_params = {"m": index.m, "ef_construction": index.ef_construction}
        index.close()
    return _Measured(
        versions, ef_search, steps, sizes, index_params, matched, samples, answers, timing, alone, build_search, hnsw
    )


def _time_sides(
    sides: Mapping[str, Callable[[int], list[str]]],
    questions: int,
    settings: PgCostSettings,
    server_pid: int | None,
    progress: Progress,
) -> tuple[dict[str, list[int]], dict[str, list[list[str]]], dict[str, float]]:
    """Nanoseconds per measured call (``settings.runs`` passes after ``settings.warmups``), each side's answers
    from the first measured pass, and how busy the rest of the machine was meanwhile."""
    runs, warmups = settings.runs, settings.warmups
    names = list(sides)
    order = np.random.default_rng(ORDER_SEED)
    samples: dict[str, list[int]] = {name: [] for name in names}
    answers: dict[str, list[list[str]]] = {name: [] for name in names}
    clock = time.perf_counter()
    busy0, own0 = cpu_ticks()
    server0 = process_tree_cpu_seconds(server_pid) if server_pid else 0.0
    for run in range(warmups + runs):
        measured = run >= warmups
        label = f"measured pass {run - warmups + 1} of {runs}" if measured else f"warm-up pass {run + 1} of {warmups}"
        progress(f"timing: {label} ({questions} questions x {len(names)} rankers)")
        gc.collect()
        gc.disable()
        try:
            for q in range(questions):
                for name in [names[i] for i in order.permutation(len(names))]:
                    start = time.perf_counter_ns()
                    found = sides[name](q)
                    elapsed = time.perf_counter_ns() - start
                    if measured:
                        samples[name].append(elapsed)
                        if run == warmups:
                            answers[name].append(found)
        finally:
            gc.enable()
    busy1, own1 = cpu_ticks()
    server1 = process_tree_cpu_seconds(server_pid) if server_pid else 0.0
    seconds = time.perf_counter() - clock
    share = other_cpu_share(busy1 - busy0, (own1 - own0) + (server1 - server0), seconds)
    return samples, answers, {"seconds": seconds, "other_cpu_share": share}


def _descriptions(depth: int, ef_search: int, k: float, exact: bool) -> dict[str, str]:
    search = (
        "exact scan (more rows than pgvector's ef_search ceiling: index scans off)"
        if exact
        else f"HNSW (ef_search {ef_search})"
    )
    return {
        "pg-vector": f"{search} top {depth} by cosine distance through PgCorpusIndex.vector_top: "
        "one transaction with the ranker's SET LOCAL settings, the vector sent as text",
        "pg-tsvector": f"GIN match of plainto_tsquery with AND rewritten to OR, top {depth} by ts_rank_cd "
        "(PgCorpusIndex.keyword_top)",
        "rrf-pgvector-tsvector": f"pg-vector top {depth} and pg-tsvector top {depth} as two queries, fused in "
        f"Python by sitegen.rankers.fusion (k {k:g})",
        "pg-hybrid-sql": "the same fusion in one SQL statement (PgCorpusIndex.hybrid_top)",
        "bm25": f"tokenize + bm25_scores over every row + top_k {depth} (postings built once beforehand)",
        "dense": f"exact cosine: float32 matrix @ query over every row + top_k {depth}",
        "rrf-dense-bm25": f"dense top {depth} and bm25 top {depth}, fused by sitegen.rankers.fusion (k {k:g})",
    }


def _result(
    settings: PgCostSettings, table: _Table, local: _InProcess, measured: _Measured, whole: _WholeRun
) -> dict[str, Any]:
    """The result file's data (``"kind": "sitegen-pg-cost"``), read by the Performance page."""
    rows, filler, queries = settings.rows, table.filler, table.corpus.queries
    timing = measured.timing
    return {
        "kind": KIND,
        "schema": SCHEMA,
        "label": LABEL,
        "measured_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "command": settings.command,
        "machine": _machine(measured.versions),
        "postgres_server": "private (pgserver)" if settings.pg_dsn is None else "external (--pg-dsn)",
        "corpus": table.corpus.name,
        "rows": rows,
        "corpus_rows": len(table.corpus.documents),
        "filler_rows": len(filler.documents),
        "filler_seed": settings.seed,
        "filler_text": FILLER_TEXT,
        "filler_vectors": FILLER_VECTORS,
        "filler_vocabulary": filler.vocabulary,
        "filler_note": f"the filler reuses the corpus's {filler.vocabulary:,} distinct words, so a question's words "
        f"occur in far more of the {rows:,} rows than they would in a real corpus of that size (see rows_matched). "
        "pg-tsvector scores every matching row with ts_rank_cd, so its latency follows the rows matched "
        "(see hybrid_by_kind); bm25 also reads every matching posting, but from arrays in memory",
        "questions": len(queries),
        "runs": settings.runs,
        "warmups": settings.warmups,
        "depth": settings.depth,
        **_build_figures(table, local, measured),
        "rows_matched": rows_matched_by_kind([q.kind for q in queries], measured.matched),
        "rows_matched_query": "count(*) WHERE tsv @@ plainto_tsquery('english', question) with AND rewritten to OR: "
        "the rows pg-tsvector scores with ts_rank_cd before taking its top rows",
        **_latency_figures(settings, table, local, measured),
        **_hnsw_figures(table, measured),
        "hybrid_by_kind": hybrid_by_kind(
            [q.kind for q in queries],
            measured.matched,
            measured.samples["rrf-pgvector-tsvector"],
            measured.samples["rrf-dense-bm25"],
        ),
        "sql_equals_two_query_hybrid": sum(
            a == b
            for a, b in zip(measured.answers["pg-hybrid-sql"], measured.answers["rrf-pgvector-tsvector"], strict=True)
        ),
        "seconds": round(whole.seconds, 1),
        "timing_seconds": round(timing["seconds"], 1),
        "other_processes_cpu_share": round(timing["other_cpu_share"], 4),
        "other_processes_cpu_share_whole_run": round(other_cpu_share(whole.busy, whole.own, whole.seconds), 4),
        "cpu_share_note": "share of all CPUs used by processes other than this one and its PostgreSQL server "
        "(0 = a quiet machine); 'other_processes_cpu_share' covers the timed passes"
        + ("" if settings.pg_dsn is None else "; an external server's CPU counts as other processes'"),
    }


def _build_figures(table: _Table, local: _InProcess, measured: _Measured) -> dict[str, Any]:
    """What loading the rows cost: PostgreSQL's steps and sizes, and the in-process indexes."""
    steps, sizes, bm25 = measured.steps, measured.sizes, local.bm25
    return {
        "build": {
            "copy_s": round(steps["copy"], 3),
            "hnsw_build_s": round(steps["hnsw"], 3),
            "gin_build_s": round(steps["gin"], 3),
            "analyze_s": round(steps["analyze"], 3),
            "table_bytes": sizes["table_bytes"],
            "hnsw_bytes": sizes["hnsw_bytes"],
            "gin_bytes": sizes["gin_bytes"],
            "primary_key_bytes": sizes.get("primary_key_bytes"),
            "indexes_bytes": sizes["indexes_bytes"],
            "hnsw_m": measured.index["m"],
            "hnsw_ef_construction": measured.index["ef_construction"],
            "ef_search": measured.ef_search,
            "notes": "copy_s includes formatting each vector as pgvector text in Python and computing the "
            "generated tsvector column; index builds are single-threaded (max_parallel_maintenance_workers = 0); "
            "table_bytes is pg_table_size (heap and TOAST, no indexes)",
        },
        "in_process_build": {
            "bm25_index_s": round(local.bm25_seconds, 3),
            "bm25_index_bytes": int(bm25.starts.nbytes + bm25.doc_indices.nbytes + bm25.weights.nbytes),
            "dense_matrix_bytes": int(table.matrix.nbytes),
        },
    }


def _latency_figures(settings: PgCostSettings, table: _Table, local: _InProcess, measured: _Measured) -> dict[str, Any]:
    """Each ranker's latency, interleaved and (in-process) alone, and the hybrids' ratio the target is about."""
    samples, alone = measured.samples, measured.alone
    what = _descriptions(settings.depth, measured.ef_search, local.rrf_k, measured.build_search.exact)
    latency = [
        latency_row(name, "postgres" if name in _PG_SIDES else "in-process", what[name], samples[name])
        for name in samples
    ]
    p50 = {row["ranker"]: row["p50_ms"] for row in latency}
    p95 = {row["ranker"]: row["p95_ms"] for row in latency}
    alone_latency = [latency_row(name, "in-process", what[name], alone[name]) for name in alone]
    alone_p50 = {row["ranker"]: row["p50_ms"] for row in alone_latency}
    paired = [a / b for a, b in zip(samples["rrf-pgvector-tsvector"], samples["rrf-dense-bm25"], strict=True)]
    return {
        "latency": latency,
        "latency_method": "time.perf_counter_ns around one call per ranker and question; "
        f"{settings.warmups} warm-up passes over all questions discarded, then {settings.runs} measured; rankers "
        "take turns per question, in an order shuffled for each question "
        f"(numpy.random.default_rng({ORDER_SEED})); garbage collector paused during a pass; question embedding "
        "excluded on every side (vectors computed once beforehand); percentiles linear between the two nearest "
        "ranks",
        "latency_in_process_alone": alone_latency,
        "latency_in_process_alone_note": "the in-process rankers timed again in passes of their own, after the "
        "interleaved ones, with no PostgreSQL query between calls: their arrays stay in the CPU caches. In the "
        "interleaved passes (latency) a PostgreSQL query that scores thousands of rows often ran just before and "
        "evicted them, which is why the two differ; the target uses the interleaved figures",
        "hybrid_ratio": {
            "in_process": "rrf-dense-bm25",
            "postgres": "rrf-pgvector-tsvector",
            "p50_ratio": round(p50["rrf-pgvector-tsvector"] / p50["rrf-dense-bm25"], 3),
            "p95_ratio": round(p95["rrf-pgvector-tsvector"] / p95["rrf-dense-bm25"], 3),
            "sql_p50_ratio": round(p50["pg-hybrid-sql"] / p50["rrf-dense-bm25"], 3),
            "paired_median_ratio": round(percentile(paired, 50), 3),
            "p50_ratio_in_process_alone": round(p50["rrf-pgvector-tsvector"] / alone_p50["rrf-dense-bm25"], 3),
            "target": TARGET_SPEEDUP,
            "met": p50["rrf-pgvector-tsvector"] / p50["rrf-dense-bm25"] >= TARGET_SPEEDUP,
            "definition": "p50 of PostgreSQL's hybrid (two queries + fusion in Python) over p50 of the in-process "
            "hybrid (dense + bm25 + the same fusion); the target is met when it is at least 5. paired_median_ratio: "
            "the median over (pass, question) of the two sides' ratio, each pair timed back to back",
        },
    }


def _hnsw_figures(table: _Table, measured: _Measured) -> dict[str, Any]:
    """How often the HNSW lists (at each ef_search) and the build's pg-vector give the exact top 10, as sets."""
    query_vectors, matrix = table.embeddings.query_vectors, table.matrix
    id_key = doc_id_order(table.doc_ids)
    exact = [
        {table.doc_ids[i] for i in dense_top_k(matrix, query_vectors[q], id_key, HNSW_AGREEMENT_DEPTH)[0]}
        for q in range(len(query_vectors))
    ]

    def same_top(lists: Sequence[Sequence[str]]) -> int:
        return sum(set(found[:HNSW_AGREEMENT_DEPTH]) == want for found, want in zip(lists, exact, strict=True))

    def recall(lists: Sequence[Sequence[str]]) -> float:
        """Mean share of the exact top 10 found in a list's top 10 (recall@10 against the exact scan)."""
        pairs = zip(lists, exact, strict=True)
        shares = [len(set(got[:HNSW_AGREEMENT_DEPTH]) & want) / max(len(want), 1) for got, want in pairs]
        return round(float(np.mean(shares)), 4)

    build_search, ef_search = measured.build_search, measured.ef_search
    pg_vector_p50 = round(percentile([s / 1e6 for s in measured.samples["pg-vector"]], 50), 4)
    return {
        "vector_search": build_search.params(),
        "hnsw_agreement": {
            "questions": len(query_vectors),
            "same_top10": same_top(measured.hnsw[ef_search][0]),
            "recall_at_10": recall(measured.hnsw[ef_search][0]),
            "ef_search": ef_search,
        },
        "hnsw_agreement_by_ef_search": [
            *(
                {
                    "ef_search": ef,
                    "same_top10": same_top(found),
                    "recall_at_10": recall(found),
                    "p50_ms": round(percentile([t / 1e6 for t in found_ns], 50), 4),
                    "timing": "HNSW index scan; one pass after the timed passes, not interleaved",
                }
                for ef, (found, found_ns) in sorted(measured.hnsw.items())
            ),
            {
                "search": "the build's pg-vector: " + ("exact scan" if build_search.exact else "hnsw"),
                "same_top10": same_top(measured.answers["pg-vector"]),
                "recall_at_10": recall(measured.answers["pg-vector"]),
                "p50_ms": pg_vector_p50,
            },
        ],
    }
