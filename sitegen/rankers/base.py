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


_BLOCK = 64


def top_k(scores: np.ndarray, id_key: np.ndarray, depth: int, positive_only: bool) -> np.ndarray:
    """Indices of the best ``depth`` scores: higher score first, then document id ascending.

    Ties straddling the cut-off are resolved by id, never by array position, so the
    result does not depend on the order documents were loaded in.

    For speed, only scores at or above a lower bound on the ``depth``-th best are looked
    at again; the result is exactly that of selecting among all scores. On large arrays
    the bound is the ``depth``-th largest of the maxima of ``n // _BLOCK`` disjoint groups
    (at least ``depth`` scores reach it); on smaller ones it is the ``depth``-th best itself.
    """
    n = scores.shape[0]
    if depth <= 0 or n <= depth:
        candidates = np.flatnonzero(scores > 0) if positive_only else np.arange(n)
    else:
        rows = n // _BLOCK
        if rows >= 2 * depth:
            # Row i of the reshape holds scores[i * rows:(i + 1) * rows]; the column maxima are
            # the maxima of ``rows`` disjoint groups of _BLOCK scores each.
            group_max = scores[: rows * _BLOCK].reshape(_BLOCK, rows).max(axis=0)
            bound = np.partition(group_max, rows - depth)[rows - depth]
        else:
            bound = np.partition(scores, n - depth)[n - depth]
        if positive_only and not bound > 0:
            candidates = np.flatnonzero(scores > 0)
        else:
            candidates = np.flatnonzero(scores >= bound)
    if candidates.size > depth:
        cand_scores = scores[candidates]
        threshold = np.partition(cand_scores, cand_scores.size - depth)[cand_scores.size - depth]
        candidates = candidates[cand_scores >= threshold]
    order = np.lexsort((id_key[candidates], -scores[candidates]))
    return candidates[order][:depth]
