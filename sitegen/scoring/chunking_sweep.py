"""The chunking sweep of a chunked corpus: every setting of its ``chunking.sweep`` chunked, embedded,
ranked and scored, for the ``sweep`` section of ``chunking.json`` and ``embeddings/sweep-*``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from sitegen.inputs.chunk_settings import ChunkConfig
from sitegen.inputs.chunking import chunk_corpus
from sitegen.inputs.corpus import Corpus, passage_text
from sitegen.rankers import RankInputs, Run, chunking_sweep_rankers, make_rankers
from sitegen.rankers.embeddings import (
    EmbeddingCache,
    EmbeddingModel,
    EmbedStats,
    ProgressFactory,
    embed_corpus,
    text_sha256,
)
from sitegen.scoring.metrics import evaluate

__all__ = ["CHUNKING_SWEEP_METRICS", "chunking_sweep"]

Log = Callable[[str], None]


CHUNKING_SWEEP_METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr@10")


def chunking_sweep(
    corpus: Corpus,
    chunking: ChunkConfig,
    model: EmbeddingModel,
    cache: EmbeddingCache,
    progress: ProgressFactory | None,
    log: Log,
    frozen: Mapping[str, np.ndarray] | None,
    reembed: bool,
    depth: int,
) -> dict[str, Any]:
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
        embeddings, setting_stats = embed_corpus(chunked, model, cache, progress, frozen, reembed)
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
    return {
        "rankers": list(sweep_rankers),
        "metrics": list(CHUNKING_SWEEP_METRICS),
        "rows": rows,
        "best_recall@10": best,
        "vectors": {
            "ids": ids,
            "hashes": [hashes[i] for i in ids],
            "matrix": np.stack([vectors[i] for i in ids]) if ids else None,
            "config_sha256": model.config.sha256(),
        },
        "stats": stats,
    }
