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
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from sitegen import wording
from sitegen.bench.machine import LIBRARIES, cpu_ticks, machine, other_cpu_share, process_tree_cpu_seconds
from sitegen.embedding.cache import Embedder, EmbeddingCache, cache_key, default_cache_dir
from sitegen.embedding.model import EmbeddingModel
from sitegen.embedding.vectors import CorpusEmbeddings
from sitegen.errors import SitegenError
from sitegen.inputs.corpus import Corpus, Document, load_corpus, passage_text
from sitegen.inputs.vectors import embed_corpus
from sitegen.rankers.base import doc_id_order, top_k
from sitegen.rankers.bm25 import bm25_scores, build_bm25_index
from sitegen.rankers.dense import dense_top_k
from sitegen.rankers.fusion import reciprocal_rank_fusion
from sitegen.rankers.tokenize import tokenize

__all__ = [
    "FILLER_SEED",
    "KIND",
    "LABEL",
    "TARGET_SPEEDUP",
    "FillerRows",
    "format_report",
    "hybrid_by_kind",
    "make_filler",
    "percentile",
    "rows_matched_by_kind",
    "run_pg_cost",
    "write_json_atomic",
]

KIND = "sitegen-pg-cost"
SCHEMA = 1
LABEL = "Timings measured on one machine; absolute times vary between machines. Not part of the checksummed evidence."
FILLER_SEED = 20261129
FILLER_PREFIX = "filler-"
FILLER_SOURCES = 3
FILLER_NOISE = 0.75
_FILLER_BLOCK = 1000
TARGET_SPEEDUP = 5.0
ORDER_SEED = 1
HNSW_AGREEMENT_DEPTH = 10

FILLER_TEXT = (
    f"filler row i: {FILLER_SOURCES} passages of the corpus picked with replacement by "
    f"numpy.random.default_rng([seed, i // {_FILLER_BLOCK}]); as many words as the first has, each drawn uniformly "
    "from the picked passages' tokens (sitegen.rankers.tokenize.tokenize of title and text); no title, no metadata"
)
FILLER_VECTORS = (
    "synthetic, not embedded by the model (50,000 texts would take about 15 minutes here): the picked passages' "
    f"real embeddings mixed with Dirichlet(1, ..., 1) weights and normalised, plus Gaussian noise of norm about "
    f"{FILLER_NOISE} (N(0, 1) per component times {FILLER_NOISE}/sqrt(dimensions)), normalised again, float32. "
    "The corpus's passages and questions keep their real embeddings."
)

Progress = Callable[[str], None]

# The rankers timed on the PostgreSQL side; the others run in this process.
_PG_SIDES = ("pg-vector", "pg-tsvector", "rrf-pgvector-tsvector", "pg-hybrid-sql")


def _quiet(_: str) -> None:
    return None


# --------------------------------------------------------------------------- filler rows


@dataclass(frozen=True)
class FillerRows:
    """Filler passages, their synthetic vectors (float32, one row per passage, unit length) and
    how many distinct words they were drawn from."""

    documents: tuple[Document, ...]
    vectors: np.ndarray
    vocabulary: int = 0


def _filler_ids(n: int, taken: set[str]) -> list[str]:
    """``filler-000001``, ``filler-000002``, ...; a number whose id the corpus already uses is skipped."""
    ids: list[str] = []
    number = 0
    while len(ids) < n:
        number += 1
        doc_id = f"{FILLER_PREFIX}{number:06d}"
        if doc_id not in taken:
            ids.append(doc_id)
    return ids


def make_filler(documents: Sequence[Document], doc_vectors: np.ndarray, n: int, seed: int = FILLER_SEED) -> FillerRows:
    """``n`` deterministic filler passages built from ``documents``' words and vectors (module docstring)."""
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    dim = int(doc_vectors.shape[1])
    if n == 0:
        return FillerRows((), np.zeros((0, dim), dtype=np.float32))
    token_lists = [tokenize(passage_text(d)) for d in documents]
    lengths = np.array([len(tokens) for tokens in token_lists], dtype=np.int64)
    sources = np.flatnonzero(lengths)
    if not sources.size:
        raise SitegenError("cannot make filler rows: no passage of the corpus has a word")
    vocabulary: dict[str, int] = {}
    flat = np.fromiter(
        (vocabulary.setdefault(t, len(vocabulary)) for tokens in token_lists for t in tokens),
        dtype=np.int64,
        count=int(lengths.sum()),
    )
    words = np.array(list(vocabulary), dtype=object)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    vectors = np.asarray(doc_vectors, dtype=np.float64)
    ids = _filler_ids(n, {d.doc_id for d in documents})
    texts: list[str] = []
    blocks: list[np.ndarray] = []
    for block in range(-(-n // _FILLER_BLOCK)):
        rng = np.random.default_rng([seed, block])
        picked = sources[rng.integers(0, sources.size, size=(_FILLER_BLOCK, FILLER_SOURCES))]
        weights = rng.dirichlet(np.ones(FILLER_SOURCES), size=_FILLER_BLOCK)
        row_lengths = lengths[picked[:, 0]]
        pool = lengths[picked]
        ends = np.cumsum(pool, axis=1)
        row = np.repeat(np.arange(_FILLER_BLOCK), row_lengths)
        position = np.minimum((rng.random(row.size) * ends[row, -1]).astype(np.int64), ends[row, -1] - 1)
        which = (position[:, None] >= ends[row]).sum(axis=1)
        offset = position - (ends[row, which] - pool[row, which])
        drawn = words[flat[starts[picked[row, which]] + offset]].tolist()
        bounds = np.concatenate([[0], np.cumsum(row_lengths)]).tolist()
        texts.extend(" ".join(drawn[bounds[i] : bounds[i + 1]]) for i in range(_FILLER_BLOCK))
        mix = np.zeros((_FILLER_BLOCK, dim))
        for j in range(FILLER_SOURCES):
            mix += weights[:, j, None] * vectors[picked[:, j]]
        mix /= np.maximum(np.sqrt((mix * mix).sum(axis=1, keepdims=True)), 1e-12)
        mix += rng.standard_normal((_FILLER_BLOCK, dim)) * (FILLER_NOISE / np.sqrt(dim))
        mix /= np.sqrt((mix * mix).sum(axis=1, keepdims=True))
        blocks.append(mix.astype(np.float32))
    filler = tuple(Document(doc_id=doc_id, title="", text=text) for doc_id, text in zip(ids, texts, strict=False))
    return FillerRows(filler, np.ascontiguousarray(np.concatenate(blocks)[:n]), len(vocabulary))


# --------------------------------------------------------------------------- summaries


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile, linear between the two nearest ranks (numpy's default; q = 50 is the median)."""
    if len(values) == 0:
        raise ValueError("no values")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def rows_matched_by_kind(kinds: Sequence[str], counts: Sequence[int]) -> list[dict[str, Any]]:
    """Per question kind, in order of first appearance: questions, median, p95 and max of the rows matched."""
    if len(kinds) != len(counts):
        raise ValueError(f"{len(kinds)} kinds for {len(counts)} counts")
    by_kind: dict[str, list[int]] = {}
    for kind, count in zip(kinds, counts, strict=True):
        by_kind.setdefault(kind, []).append(int(count))
    return [
        {"kind": kind, "questions": len(c), "median": percentile(c, 50), "p95": percentile(c, 95), "max": max(c)}
        for kind, c in by_kind.items()
    ]


def hybrid_by_kind(
    kinds: Sequence[str], matched: Sequence[int], postgres_ns: Sequence[int], local_ns: Sequence[int]
) -> list[dict[str, Any]]:
    """Per question kind: rows matched and both hybrids' p50. Sample j is question j mod len(kinds)
    (passes one after another, questions in order within a pass)."""
    postgres: dict[str, list[float]] = {}
    local: dict[str, list[float]] = {}
    for j, (pg, ours) in enumerate(zip(postgres_ns, local_ns, strict=True)):
        kind = kinds[j % len(kinds)]
        postgres.setdefault(kind, []).append(pg / 1e6)
        local.setdefault(kind, []).append(ours / 1e6)
    rows = []
    for kind in dict.fromkeys(kinds):
        counts = [c for k, c in zip(kinds, matched, strict=True) if k == kind]
        pg_p50, local_p50 = percentile(postgres[kind], 50), percentile(local[kind], 50)
        rows.append(
            {
                "kind": kind,
                "questions": len(counts),
                "rows_matched_median": percentile(counts, 50),
                "postgres_p50_ms": round(pg_p50, 4),
                "in_process_p50_ms": round(local_p50, 4),
                "p50_ratio": round(pg_p50 / local_p50, 3),
            }
        )
    return rows


def _latency(ranker: str, where: str, what: str, samples_ns: Sequence[int]) -> dict[str, Any]:
    ms = [s / 1e6 for s in samples_ns]
    return {
        "ranker": ranker,
        "where": where,
        "what": what,
        "p50_ms": round(percentile(ms, 50), 4),
        "p95_ms": round(percentile(ms, 95), 4),
        "samples": len(ms),
    }


# --------------------------------------------------------------------------- the run


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


def run_pg_cost(
    corpus_dir: Path,
    rows: int = 50_000,
    runs: int = 3,
    warmups: int = 2,
    depth: int = 20,
    *,
    seed: int = FILLER_SEED,
    pg_dsn: str | None = None,
    cache_dir: Path | None = None,
    model: Any = None,
    command: str = "sitegen bench-pg",
    progress: Progress = _quiet,
) -> dict[str, Any]:
    """Load the corpus plus filler rows into PostgreSQL and time every ranker; the result as JSON data.

    Raises SitegenError (CorpusError, PostgresUnavailable) with a one-line reason; no PostgreSQL
    server started here outlives the call.
    """
    from sitegen.postgres.index import EF_SEARCH, PgCorpusIndex
    from sitegen.postgres.server import PostgresServer
    from sitegen.rankers import RANKERS

    if runs < 1 or warmups < 0 or depth < 1:
        raise SitegenError(f"need runs >= 1, warmups >= 0 and depth >= 1, got {runs}, {warmups} and {depth}")
    clock = time.perf_counter()
    busy0, own0 = cpu_ticks()
    corpus = _load(Path(corpus_dir))
    if rows < len(corpus.documents):
        raise SitegenError(f"rows ({rows:,}) must be at least the corpus's {len(corpus.documents):,} passages")
    embeddings = _embed(corpus, cache_dir, model, progress)
    progress(f"making {rows - len(corpus.documents):,} filler rows (seed {seed})")
    filler = make_filler(corpus.documents, embeddings.doc_vectors, rows - len(corpus.documents), seed)
    table = replace(corpus, documents=corpus.documents + filler.documents)
    doc_ids = tuple(d.doc_id for d in table.documents)
    table_embeddings = replace(
        embeddings, doc_ids=doc_ids, doc_vectors=np.concatenate([embeddings.doc_vectors, filler.vectors])
    )
    queries = corpus.queries
    query_vectors = embeddings.query_vectors
    matrix = table_embeddings.doc_vectors

    # The build's rankers, for their settings: ef_search, RRF k, candidates and weights.
    pg_vector: Any = RANKERS["pg-vector"]()
    pg_hybrid: Any = RANKERS["pg-hybrid-sql"]()
    rrf_pg: Any = RANKERS["rrf-pgvector-tsvector"]()
    rrf_local: Any = RANKERS["rrf-dense-bm25"]()
    ef_search = pg_vector.ef_search

    progress("indexing the same rows in-process (BM25 postings; the dense matrix is the vectors themselves)")
    mark = time.perf_counter()
    bm25 = build_bm25_index([tokenize(passage_text(d)) for d in table.documents])
    bm25_seconds = time.perf_counter() - mark
    id_key = doc_id_order(doc_ids)

    def bm25_ids(q: int) -> list[str]:
        scores = bm25_scores(bm25, tokenize(queries[q].text))
        return [doc_ids[i] for i in top_k(scores, id_key, depth, positive_only=True)]

    def dense_ids(q: int) -> list[str]:
        best, _ = dense_top_k(matrix, query_vectors[q], id_key, depth)
        return [doc_ids[i] for i in best]

    def fuse(ranker: Any, lists: list[list[str]]) -> list[str]:
        fused = reciprocal_rank_fusion(lists, ranker.k, ranker.weights, ranker.candidates)[:depth]
        return [item.doc_id for item in fused]

    with PostgresServer(pg_dsn) as server:
        versions = server.versions()
        progress(f"postgres: {server.describe()}")
        progress(f"loading {rows:,} rows (COPY, then HNSW and GIN builds, single-threaded; minutes at 50,000)")
        index = PgCorpusIndex.load(server.connect(), table, table_embeddings)
        steps = index.step_seconds
        progress(
            f"loaded: COPY {steps['copy']:.1f} s, HNSW {steps['hnsw']:.1f} s, GIN {steps['gin']:.1f} s, "
            f"ANALYZE {steps['analyze']:.1f} s"
        )
        sizes = index.sizes()
        matched = [index.match_count(q.text) for q in queries]

        def pg_vector_ids(q: int) -> list[str]:
            return [d for d, _ in index.vector_top(query_vectors[q], depth, ef_search=ef_search)]

        def pg_keyword_ids(q: int) -> list[str]:
            return [d for d, _ in index.keyword_top(queries[q].text, depth)]

        def pg_hybrid_ids(q: int) -> list[str]:
            found = index.hybrid_top(
                query_vectors[q],
                queries[q].text,
                depth,
                k=pg_hybrid.k,
                candidates=pg_hybrid.candidates,
                weights=pg_hybrid.weights,
                ef_search=pg_hybrid.ef_search,
            )
            return [row.doc_id for row in found]

        sides: dict[str, Callable[[int], list[str]]] = {
            "pg-vector": pg_vector_ids,
            "pg-tsvector": pg_keyword_ids,
            "rrf-pgvector-tsvector": lambda q: fuse(rrf_pg, [pg_vector_ids(q), pg_keyword_ids(q)]),
            "pg-hybrid-sql": pg_hybrid_ids,
            "bm25": bm25_ids,
            "dense": dense_ids,
            "rrf-dense-bm25": lambda q: fuse(rrf_local, [dense_ids(q), bm25_ids(q)]),
        }
        samples, answers, timing = _time_sides(sides, len(queries), runs, warmups, server.pid, progress)
        progress("timing the in-process rankers again, alone")
        local = {name: sides[name] for name in sides if name not in _PG_SIDES}
        alone, _, _ = _time_sides(local, len(queries), runs, min(warmups, 1), None, _quiet)
        # The HNSW index at pgvector's default and at the build's ef_search, also above the ceiling of 1000
        # rows, where the build's pg-vector runs an exact scan instead: what that exactness costs.
        build_search = index.vector_search(depth, ef_search)
        hnsw_lists: dict[int, tuple[list[list[str]], list[int]]] = {}
        for ef in sorted({EF_SEARCH, ef_search}):
            hnsw = replace(index.vector_search(depth, ef), exact=False)
            found, found_ns = [], []
            for q in range(len(queries)):
                start = time.perf_counter_ns()
                found.append([d for d, _ in index.vector_top(query_vectors[q], depth, search=hnsw)])
                found_ns.append(time.perf_counter_ns() - start)
            hnsw_lists[ef] = (found, found_ns)
        index.close()
    busy1, own1 = cpu_ticks()
    elapsed = time.perf_counter() - clock

    exact = [
        {doc_ids[i] for i in dense_top_k(matrix, query_vectors[q], id_key, HNSW_AGREEMENT_DEPTH)[0]}
        for q in range(len(queries))
    ]

    def same_top(lists: Sequence[Sequence[str]]) -> int:
        return sum(set(found[:HNSW_AGREEMENT_DEPTH]) == want for found, want in zip(lists, exact, strict=True))

    what = _descriptions(depth, ef_search, rrf_local.k, build_search.exact)
    latency = [
        _latency(name, "postgres" if name in _PG_SIDES else "in-process", what[name], samples[name]) for name in sides
    ]
    p50 = {row["ranker"]: row["p50_ms"] for row in latency}
    p95 = {row["ranker"]: row["p95_ms"] for row in latency}
    alone_latency = [_latency(name, "in-process", what[name], alone[name]) for name in alone]
    alone_p50 = {row["ranker"]: row["p50_ms"] for row in alone_latency}
    paired = [a / b for a, b in zip(samples["rrf-pgvector-tsvector"], samples["rrf-dense-bm25"], strict=True)]
    hybrid_ratio = {
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
    }
    return {
        "kind": KIND,
        "schema": SCHEMA,
        "label": LABEL,
        "measured_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "command": command,
        "machine": _machine(versions),
        "postgres_server": "private (pgserver)" if pg_dsn is None else "external (--pg-dsn)",
        "corpus": corpus.name,
        "rows": rows,
        "corpus_rows": len(corpus.documents),
        "filler_rows": len(filler.documents),
        "filler_seed": seed,
        "filler_text": FILLER_TEXT,
        "filler_vectors": FILLER_VECTORS,
        "filler_vocabulary": filler.vocabulary,
        "filler_note": f"the filler reuses the corpus's {filler.vocabulary:,} distinct words, so a question's words "
        f"occur in far more of the {rows:,} rows than they would in a real corpus of that size (see rows_matched). "
        "pg-tsvector scores every matching row with ts_rank_cd, so its latency follows the rows matched "
        "(see hybrid_by_kind); bm25 also reads every matching posting, but from arrays in memory",
        "questions": len(queries),
        "runs": runs,
        "warmups": warmups,
        "depth": depth,
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
            "hnsw_m": index.m,
            "hnsw_ef_construction": index.ef_construction,
            "ef_search": ef_search,
            "notes": "copy_s includes formatting each vector as pgvector text in Python and computing the "
            "generated tsvector column; index builds are single-threaded (max_parallel_maintenance_workers = 0); "
            "table_bytes is pg_table_size (heap and TOAST, no indexes)",
        },
        "in_process_build": {
            "bm25_index_s": round(bm25_seconds, 3),
            "bm25_index_bytes": int(bm25.starts.nbytes + bm25.doc_indices.nbytes + bm25.weights.nbytes),
            "dense_matrix_bytes": int(matrix.nbytes),
        },
        "rows_matched": rows_matched_by_kind([q.kind for q in queries], matched),
        "rows_matched_query": "count(*) WHERE tsv @@ plainto_tsquery('english', question) with AND rewritten to OR: "
        "the rows pg-tsvector scores with ts_rank_cd before taking its top rows",
        "latency": latency,
        "latency_method": "time.perf_counter_ns around one call per ranker and question; "
        f"{warmups} warm-up passes over all questions discarded, then {runs} measured; rankers take turns per "
        f"question, in an order shuffled for each question (numpy.random.default_rng({ORDER_SEED})); garbage "
        "collector paused during a pass; question embedding excluded on every side (vectors computed once "
        "beforehand); percentiles linear between the two nearest ranks",
        "latency_in_process_alone": alone_latency,
        "latency_in_process_alone_note": "the in-process rankers timed again in passes of their own, after the "
        "interleaved ones, with no PostgreSQL query between calls: their arrays stay in the CPU caches. In the "
        "interleaved passes (latency) a PostgreSQL query that scores thousands of rows often ran just before and "
        "evicted them, which is why the two differ; the target uses the interleaved figures",
        "hybrid_ratio": hybrid_ratio,
        "vector_search": build_search.params(),
        "hnsw_agreement": {
            "questions": len(queries),
            "same_top10": same_top(hnsw_lists[ef_search][0]),
            "ef_search": ef_search,
        },
        "hnsw_agreement_by_ef_search": [
            *(
                {
                    "ef_search": ef,
                    "same_top10": same_top(found),
                    "p50_ms": round(percentile([t / 1e6 for t in found_ns], 50), 4),
                    "timing": "HNSW index scan; one pass after the timed passes, not interleaved",
                }
                for ef, (found, found_ns) in sorted(hnsw_lists.items())
            ),
            {
                "search": "the build's pg-vector: " + ("exact scan" if build_search.exact else "hnsw"),
                "same_top10": same_top(answers["pg-vector"]),
                "p50_ms": p50["pg-vector"],
            },
        ],
        "hybrid_by_kind": hybrid_by_kind(
            [q.kind for q in queries], matched, samples["rrf-pgvector-tsvector"], samples["rrf-dense-bm25"]
        ),
        "sql_equals_two_query_hybrid": sum(
            a == b for a, b in zip(answers["pg-hybrid-sql"], answers["rrf-pgvector-tsvector"], strict=True)
        ),
        "seconds": round(elapsed, 1),
        "timing_seconds": round(timing["seconds"], 1),
        "other_processes_cpu_share": round(timing["other_cpu_share"], 4),
        "other_processes_cpu_share_whole_run": round(other_cpu_share(busy1 - busy0, own1 - own0, elapsed), 4),
        "cpu_share_note": "share of all CPUs used by processes other than this one and its PostgreSQL server "
        "(0 = a quiet machine); 'other_processes_cpu_share' covers the timed passes"
        + ("" if pg_dsn is None else "; an external server's CPU counts as other processes'"),
    }


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


def _time_sides(
    sides: Mapping[str, Callable[[int], list[str]]],
    questions: int,
    runs: int,
    warmups: int,
    server_pid: int | None,
    progress: Progress,
) -> tuple[dict[str, list[int]], dict[str, list[list[str]]], dict[str, float]]:
    """Nanoseconds per measured call, each side's answers from the first measured pass, and how
    busy the rest of the machine was meanwhile."""
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


# --------------------------------------------------------------------------- output


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Write JSON to a temporary file beside ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    cells = [
        [f"{c:,}" if isinstance(c, int) else (f"{c:.2f}" if isinstance(c, float) else str(c)) for c in r] for r in rows
    ]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = [
        "  "
        + "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True)))
    ]
    lines += [
        "  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in cells
    ]
    return lines


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def format_report(result: Mapping[str, Any]) -> str:
    """The result as a few readable tables, for the terminal."""
    m, b, h = result["machine"], result["build"], result["hybrid_ratio"]
    agreement = result["hnsw_agreement"]
    lines = [
        f"PostgreSQL cost test: {result['corpus']}, {result['rows']:,} rows ({result['corpus_rows']:,} passages + "
        f"{result['filler_rows']:,} filler, seed {result['filler_seed']}), {result['questions']} questions x "
        f"{result['runs']} runs after {result['warmups']} warm-up passes, top {result['depth']}",
        f"machine: {m['cpu_model']}, {m['logical_cpus']} logical CPUs, {m['memory_gb']} GB; Python {m['python']}, "
        f"numpy {m['numpy']}, PostgreSQL {m['postgres']}, pgvector {m['pgvector']}; other processes used "
        f"{result['other_processes_cpu_share']:.0%} of the CPUs while timing",
        f"build: COPY {b['copy_s']:.1f} s, HNSW {b['hnsw_build_s']:.1f} s (m {b['hnsw_m']}, ef_construction "
        f"{b['hnsw_ef_construction']}), GIN {b['gin_build_s']:.1f} s, ANALYZE {b['analyze_s']:.1f} s; "
        f"table {_mb(b['table_bytes'])}, HNSW {_mb(b['hnsw_bytes'])}, GIN {_mb(b['gin_bytes'])}",
        "",
        "rows matched by the OR query, per question kind:",
        *_table(
            ["kind", "questions", "median", "p95", "max"],
            [[r["kind"], r["questions"], r["median"], r["p95"], r["max"]] for r in result["rows_matched"]],
        ),
        "",
        "latency per question, ms:",
        *_table(
            ["ranker", "where", "p50", "p95", "samples"],
            [[r["ranker"], r["where"], r["p50_ms"], r["p95_ms"], r["samples"]] for r in result["latency"]],
        ),
        "in-process rankers timed alone, no PostgreSQL query between calls (p50 / p95 ms): "
        + ", ".join(f"{r['ranker']} {r['p50_ms']:.2f} / {r['p95_ms']:.2f}" for r in result["latency_in_process_alone"]),
        "",
        "hybrid p50 per question kind, ms:",
        *_table(
            ["kind", "rows matched (median)", "postgres", "in-process", "ratio"],
            [
                [r["kind"], r["rows_matched_median"], r["postgres_p50_ms"], r["in_process_p50_ms"], r["p50_ratio"]]
                for r in result["hybrid_by_kind"]
            ],
        ),
        "",
        f"hybrid: PostgreSQL two queries + fusion / in-process = {h['p50_ratio']:.1f}x at p50 "
        f"({h['p95_ratio']:.1f}x at p95; one SQL statement {h['sql_p50_ratio']:.1f}x; against the in-process hybrid "
        f"timed alone {h['p50_ratio_in_process_alone']:.1f}x); target >= "
        f"{h['target']:g}x: {'met' if h['met'] else 'NOT met'}",
        f"HNSW top {HNSW_AGREEMENT_DEPTH} = exact top {HNSW_AGREEMENT_DEPTH} (as sets): {agreement['same_top10']} "
        f"of {agreement['questions']} questions at ef_search {agreement['ef_search']}",
        "vector search p50 (ms, top 10 = exact as sets): "
        + "; ".join(
            f"{row.get('search') or 'HNSW ef_search ' + str(row['ef_search'])} {row['p50_ms']:.2f} "
            f"({row['same_top10']} of {agreement['questions']})"
            for row in result.get("hnsw_agreement_by_ef_search", ())
        ),
        result["label"],
    ]
    return "\n".join(lines)
