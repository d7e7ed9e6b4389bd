"""Exact cosine ranking over normalised sentence embeddings.

A BLAS dot product sums in an order chosen for the CPU it runs on, so its last bits differ
between machines. The scores a run stores are therefore computed a second way, identical on
every IEEE machine: each float32 component product is formed exactly in float64 and the
products are added in one fixed pairwise tree (:func:`fixed_order_dot`). BLAS only narrows the
candidates: a passage whose BLAS score is more than :func:`blas_margin` below the depth-th best
cannot be in the top ``depth`` by the exact score, since each BLAS score is within half that
margin of the exact one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sitegen.embedding.models import ModelSpec
from sitegen.errors import SitegenError
from sitegen.rankers.base import Basis, Contract, Family, Hit, RankInputs, Run, doc_id_order, top_k
from sitegen.rankers.filtering import FILTER_NOTE, allowed_masks

__all__ = ["DenseRanker", "blas_margin", "cosine_scores", "dense_top_k", "fixed_order_dot"]


QUERY_BATCH = 64  # queries whose BLAS scores one matrix product gives (64 x 100,000 float32: 25 MB)


def cosine_scores(doc_vectors: np.ndarray, query_vector: np.ndarray) -> np.ndarray:
    """BLAS dot products in float32 (fast; the last bits depend on the CPU): cosine for unit vectors."""
    return doc_vectors @ query_vector


def fixed_order_dot(doc_vectors: np.ndarray, query_vector: np.ndarray) -> np.ndarray:
    """Dot products as float64, bit-identical on every machine.

    float32 x float32 products are exact in float64; they are summed by halving the columns
    (column j plus column j + half, zero-padded to a power of two) until one is left. Every
    step is an elementwise IEEE addition, so no library or CPU can reorder it.
    """
    products = doc_vectors.astype(np.float64) * query_vector.astype(np.float64)
    width = products.shape[1] if products.ndim == 2 else 0
    size = 1
    while size < width:
        size *= 2
    if size != width:
        products = np.pad(products, ((0, 0), (0, size - width)))
    while size > 1:
        size //= 2
        products = products[:, :size] + products[:, size:]
    return products[:, 0] if width else np.zeros(products.shape[0])


def blas_margin(dimensions: int) -> float:
    """Twice the worst-case gap between two float32 dot products of unit vectors summed in any
    order (each is within dimensions * 2**-24 of the exact value), so candidates are never lost."""
    return 2.0 * dimensions * float(np.finfo(np.float32).eps)


def dense_top_k(
    doc_vectors: np.ndarray,
    query_vector: np.ndarray,
    id_key: np.ndarray,
    depth: int,
    allowed: np.ndarray | None = None,
    approx: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The best ``depth`` passages by :func:`fixed_order_dot` (ties: document id ascending),
    restricted to ``allowed`` when given: (indices, float64 scores), in rank order. ``approx``: this
    query's BLAS scores when already computed (any summation order: they only narrow the candidates)."""
    approx = cosine_scores(doc_vectors, query_vector) if approx is None else approx
    if allowed is not None:
        approx = np.where(allowed, approx, -np.inf)
    usable = np.flatnonzero(approx > -np.inf)
    if usable.size > depth > 0:
        bound = np.partition(approx[usable], usable.size - depth)[usable.size - depth]
        usable = usable[approx[usable] >= bound - blas_margin(doc_vectors.shape[1])]
    exact = fixed_order_dot(doc_vectors[usable], query_vector)
    best = top_k(exact, id_key[usable], depth, positive_only=False)
    return usable[best], exact[best]


class DenseRanker:
    """``dense``: every passage scored by exact cosine; ties by document id. ``model``: the model entry whose
    vectors it ranks by (None: ``dense``'s, or those a corpus supplies)."""

    def __init__(
        self,
        name: str = "dense",
        filtered: bool = False,
        unfiltered: str | None = None,
        chunking_sweep: bool = False,
        model: ModelSpec | None = None,
    ) -> None:
        self.name = name
        self.contract = Contract(
            Family.DENSE,
            "exact cosine",
            filtered=filtered,
            unfiltered=unfiltered,
            uses_embeddings=True,
            chunking_sweep=chunking_sweep,
            basis=(Basis.VECTORS,),
            model=model,
        )

    def params(self) -> dict[str, Any]:
        return {
            "method": self.contract.verifier,
            "vectors": "normalised float32",
            "score": "float64 sum of the exact float32 component products in a fixed pairwise order",
            "ties": "document id ascending",
        } | ({"filtered": True, "filter": FILTER_NOTE} if self.contract.filtered else {})

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        embeddings = inputs.embeddings_for(self.contract.model)
        if embeddings is None:
            raise SitegenError(f"ranker {self.name!r} needs embeddings, but none were computed")
        params = self.params() | {"model": embeddings.model, "weights_sha256": embeddings.weights_sha256}
        id_key = doc_id_order(embeddings.doc_ids)
        hits: dict[str, tuple[Hit, ...]] = {}
        masks = allowed_masks(inputs.corpus) if self.contract.filtered else {}
        for row, query_id in enumerate(embeddings.query_ids):
            if row % QUERY_BATCH == 0:  # one matrix product per batch of queries, not a BLAS call each
                batch = embeddings.query_vectors[row : row + QUERY_BATCH] @ embeddings.doc_vectors.T
            best, scores = dense_top_k(
                embeddings.doc_vectors,
                embeddings.query_vectors[row],
                id_key,
                depth,
                masks.get(query_id),
                batch[row % QUERY_BATCH],
            )
            hits[query_id] = tuple(
                Hit(doc_id=embeddings.doc_ids[i], rank=r, score=float(score))
                for r, (i, score) in enumerate(zip(best, scores, strict=True), start=1)
            )
        return Run(ranker=self.name, contract=self.contract, params=params, hits=hits)
