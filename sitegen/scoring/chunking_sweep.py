"""The chunking sweep of a chunked corpus: every setting of its ``chunking.sweep`` chunked, embedded,
ranked and scored, for the ``sweep`` section of ``chunking.json`` and ``embeddings/sweep-*``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sitegen.embedding.cache import Embedder
from sitegen.embedding.vectors import EmbedStats, text_sha256
from sitegen.inputs.chunk_settings import ChunkConfig
from sitegen.inputs.chunking import chunk_corpus
from sitegen.inputs.corpus import Corpus, passage_text
from sitegen.inputs.vectors import embed_corpus
from sitegen.rankers import RankInputs, Run, chunking_sweep_rankers, make_rankers
from sitegen.scoring.metrics import evaluate

__all__ = ["CHUNKING_SWEEP_METRICS", "ChunkingSweep", "SweepVectors", "chunking_sweep"]

Log = Callable[[str], None]


CHUNKING_SWEEP_METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr@10")


@dataclass(frozen=True)
class SweepVectors:
    """The vector of every chunk the sweep ranked, rows in id order, each with its text's sha256 (what a
    later build reuses a row by, with ``config_sha256``)."""

    ids: tuple[str, ...]
    hashes: tuple[str, ...]
    #: float32 rows, one per id; None when the sweep ranked no chunk
    matrix: np.ndarray | None
    config_sha256: str


@dataclass(frozen=True)
class ChunkingSweep:
    """What the sweep gives: the ``sweep`` table of ``chunking.json``, the vectors it ranked, and where they
    came from (for the build's log, never the evidence)."""

    table: Mapping[str, Any]
    vectors: SweepVectors
    stats: EmbedStats


def chunking_sweep(
    corpus: Corpus,
    chunking: ChunkConfig,
    embedder: Embedder,
    log: Log,
    depth: int,
) -> ChunkingSweep:
    """Each sweep setting: chunk the source documents, embed (frozen, cached or fresh), rank with
    bm25, dense and their RRF to ``depth``, and score."""
    kinds = {q.query_id: q.kind for q in corpus.queries}
    rows = []
    vectors: dict[str, Any] = {}
    hashes: dict[str, str] = {}
    stats = EmbedStats(embedded=0, cached=0)
    sweep_rankers = chunking_sweep_rankers()
    for setting in chunking.sweep:
        chunked = chunk_corpus(corpus, setting)
        # Where the vectors came from is logged, never written: evidence depends on inputs only.
        embeddings, setting_stats = embed_corpus(chunked, embedder)
        stats += setting_stats
        vectors.update(zip(embeddings.doc_ids, embeddings.doc_vectors, strict=True))
        hashes.update((d.doc_id, text_sha256(passage_text(d))) for d in chunked.documents)
        runs: dict[str, Run] = {}
        for ranker in make_rankers(sweep_rankers):
            runs[ranker.name] = ranker.rank(RankInputs(corpus=chunked, embeddings=embeddings, runs=runs), depth)
        scores = {
            name: evaluate(
                {q: [h.doc_id for h in hits] for q, hits in run.hits.items()},
                chunked.qrels,
                kinds,
                CHUNKING_SWEEP_METRICS,
            )["overall"]
            for name, run in runs.items()
        }
        rows.append(
            {
                "setting": setting.as_dict(),
                "passages": len(chunked.documents),
                "characters_embedded": sum(len(passage_text(d)) for d in chunked.documents),
                "scores": scores,
            }
        )
        log(
            f"{corpus.name}: chunking {setting.label}: {len(chunked.documents)} chunks, "
            f"recall@10 " + ", ".join(f"{r} {scores[r]['recall@10']:.3f}" for r in sweep_rankers)
        )
    best = {}
    for ranker in sweep_rankers:  # first setting in sweep order wins a tie
        top = max(row["scores"][ranker]["recall@10"] for row in rows)
        chosen = next(row for row in rows if row["scores"][ranker]["recall@10"] == top)
        best[ranker] = {"label": chosen["setting"]["label"], "recall@10": top}
    ids = sorted(vectors)
    table = {
        "rankers": list(sweep_rankers),
        "metrics": list(CHUNKING_SWEEP_METRICS),
        "rows": rows,
        "best_recall@10": best,
    }
    matrix = np.stack([vectors[i] for i in ids]) if ids else None
    swept = SweepVectors(tuple(ids), tuple(hashes[i] for i in ids), matrix, embedder.model.config.sha256())
    return ChunkingSweep(table, swept, stats)
