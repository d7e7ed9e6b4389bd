"""The vectors a build ranks with and a bundle stores: their types, the key a text's vector is stored under,
and what a stored vector must be to be used again."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["UNIT_NORM_TOLERANCE", "CorpusEmbeddings", "EmbedStats", "text_sha256", "usable_vector"]

#: A stored vector whose length differs from 1 by more than this is not a normalised embedding.
UNIT_NORM_TOLERANCE = 1e-4


@dataclass(frozen=True)
class CorpusEmbeddings:
    """Normalised float32 vectors for a corpus's passages and queries, in corpus order."""

    model: str
    #: sha256 of the weights that made the vectors; None for supplied vectors that give a provenance instead.
    weights_sha256: str | None
    doc_ids: tuple[str, ...]
    doc_vectors: np.ndarray
    query_ids: tuple[str, ...]
    query_vectors: np.ndarray
    #: :meth:`sitegen.embedding.model.EmbeddingConfig.sha256` of the model that made the vectors; None when unknown.
    config_sha256: str | None = None
    #: Where supplied vectors came from (:meth:`sitegen.inputs.vectors.SuppliedVectors.source`); None: embedded here.
    supplied: Mapping[str, Any] | None = None
    #: What the model saw before each passage and question (a model entry's prefixes): a row's text sha256 is
    #: that of the prefixed text, the string the vector is of.
    passage_prefix: str = ""
    query_prefix: str = ""


@dataclass(frozen=True)
class EmbedStats:
    """Where a call's distinct texts got their vectors: an earlier bundle, the cache or the model;
    ``rejected`` counts cache rows dropped as corrupt (and embedded again)."""

    embedded: int
    cached: int
    frozen: int = 0
    rejected: int = 0

    def __add__(self, other: EmbedStats) -> EmbedStats:
        return EmbedStats(
            self.embedded + other.embedded,
            self.cached + other.cached,
            self.frozen + other.frozen,
            self.rejected + other.rejected,
        )


def text_sha256(text: str) -> str:
    """The key a text's vector is stored under, in the cache and in a bundle's index."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def usable_vector(vector: np.ndarray, dimensions: int) -> bool:
    """A stored vector may be used: the right length, finite, of unit length."""
    if vector.shape != (dimensions,) or not np.all(np.isfinite(vector)):
        return False
    norm = float(np.sqrt(np.dot(vector.astype(np.float64), vector.astype(np.float64))))
    return abs(norm - 1.0) <= UNIT_NORM_TOLERANCE
