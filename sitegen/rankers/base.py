"""The one interface every ranker implements, and the one ordering rule they share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from sitegen.corpus import Corpus

if TYPE_CHECKING:
    from sitegen.embeddings import CorpusEmbeddings

__all__ = ["Hit", "RankInputs", "Ranker", "Run", "doc_id_order", "top_k"]


@dataclass(frozen=True)
class Hit:
    """One ranked passage; ``components`` holds each fused list's rank (None: absent)."""

    doc_id: str
    rank: int
    score: float
    components: tuple[tuple[str, int | None], ...] = ()


@dataclass(frozen=True)
class Run:
    """A ranker's output: for every query id, its hits in rank order (rank 1 first)."""

    ranker: str
    params: Mapping[str, Any]
    hits: Mapping[str, tuple[Hit, ...]]


@dataclass(frozen=True)
class RankInputs:
    """What a ranker may read: the corpus, its embeddings, earlier rankers' runs and,
    for the PostgreSQL rankers, the corpus loaded into a live server."""

    corpus: Corpus
    embeddings: CorpusEmbeddings | None = None
    runs: Mapping[str, Run] = field(default_factory=dict)
    postgres: Any = None


class Ranker(Protocol):
    """A named, parameterised ranking method.

    ``requires`` names rankers whose runs must exist before this one runs (fusion);
    ``uses_embeddings`` asks the build to embed the corpus and queries first;
    ``uses_postgres`` asks it to start PostgreSQL and load the corpus into it.
    """

    name: str
    requires: tuple[str, ...]
    uses_embeddings: bool
    uses_postgres: bool

    def params(self) -> dict[str, Any]: ...

    def rank(self, inputs: RankInputs, depth: int) -> Run: ...


def doc_id_order(doc_ids: tuple[str, ...] | list[str]) -> np.ndarray:
    """Position of each document id in ascending id order, the tie-break key."""
    order = sorted(range(len(doc_ids)), key=doc_ids.__getitem__)
    key = np.empty(len(doc_ids), dtype=np.int64)
    key[order] = np.arange(len(doc_ids), dtype=np.int64)
    return key


def top_k(scores: np.ndarray, id_key: np.ndarray, depth: int, positive_only: bool) -> np.ndarray:
    """Indices of the best ``depth`` scores: higher score first, then document id ascending.

    Ties straddling the cut-off are resolved by id, never by array position, so the
    result does not depend on the order documents were loaded in.
    """
    candidates = np.flatnonzero(scores > 0) if positive_only else np.arange(scores.shape[0])
    if candidates.size > depth:
        cand_scores = scores[candidates]
        threshold = np.partition(cand_scores, cand_scores.size - depth)[cand_scores.size - depth]
        candidates = candidates[cand_scores >= threshold]
    order = np.lexsort((id_key[candidates], -scores[candidates]))
    return candidates[order][:depth]
