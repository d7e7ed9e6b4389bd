"""Exact cosine ranking over normalised sentence embeddings."""

from __future__ import annotations

from typing import Any

import numpy as np

from sitegen.errors import SitegenError
from sitegen.rankers.base import Hit, RankInputs, Run, doc_id_order, top_k
from sitegen.rankers.filtering import FILTER_NOTE, allowed_masks

__all__ = ["DenseRanker", "cosine_scores"]


def cosine_scores(doc_vectors: np.ndarray, query_vector: np.ndarray) -> np.ndarray:
    """Dot products in float32; equal to cosine because every vector has unit length."""
    return doc_vectors @ query_vector


class DenseRanker:
    """``dense``: every passage scored by exact cosine; ties by document id."""

    requires: tuple[str, ...] = ()
    uses_embeddings = True
    uses_postgres = False

    def __init__(self, name: str = "dense", filtered: bool = False) -> None:
        self.name = name
        self.filtered = filtered

    def params(self) -> dict[str, Any]:
        return {
            "method": "exact cosine",
            "vectors": "normalised float32",
            "score": "float32 dot product",
            "ties": "document id ascending",
        } | ({"filtered": True, "filter": FILTER_NOTE} if self.filtered else {})

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        embeddings = inputs.embeddings
        if embeddings is None:
            raise SitegenError(f"ranker {self.name!r} needs embeddings, but none were computed")
        params = self.params() | {"model": embeddings.model, "weights_sha256": embeddings.weights_sha256}
        id_key = doc_id_order(embeddings.doc_ids)
        hits: dict[str, tuple[Hit, ...]] = {}
        masks = allowed_masks(inputs.corpus) if self.filtered else {}
        for row, query_id in enumerate(embeddings.query_ids):
            scores = cosine_scores(embeddings.doc_vectors, embeddings.query_vectors[row])
            mask = masks.get(query_id)
            if mask is not None:
                scores = np.where(mask, scores, -np.inf).astype(scores.dtype)
            best = top_k(scores, id_key, depth, positive_only=False)
            if mask is not None:
                best = best[mask[best]]
            hits[query_id] = tuple(
                Hit(doc_id=embeddings.doc_ids[i], rank=r, score=float(scores[i])) for r, i in enumerate(best, start=1)
            )
        return Run(ranker=self.name, params=params, hits=hits)
