"""Okapi BM25 over a precomputed sparse term-by-document weight structure.

Score of document d for query q (query terms deduplicated)::

    sum over t in q:  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

This is the Lucene variant of idf (always positive; bm25s calls it ``lucene``).
Only documents with a positive score are ranked; ties go to the smaller document id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sitegen.corpus import passage_text
from sitegen.rankers.base import Hit, RankInputs, Run, doc_id_order, top_k
from sitegen.tokenize import STOP_WORDS, tokenize, tokenize_stemmed

__all__ = ["BM25Index", "BM25Ranker", "bm25_scores", "build_bm25_index"]


@dataclass(frozen=True)
class BM25Index:
    """Postings in compressed-column form: term t's documents are
    ``doc_indices[starts[t]:starts[t + 1]]`` with precomputed BM25 ``weights``."""

    vocabulary: dict[str, int]
    starts: np.ndarray
    doc_indices: np.ndarray
    weights: np.ndarray
    n_docs: int
    k1: float
    b: float


def build_bm25_index(token_lists: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> BM25Index:
    """Index tokenised documents; term ids follow first appearance, never set order."""
    vocabulary: dict[str, int] = {}
    term_ids: list[int] = []
    lengths = np.empty(len(token_lists), dtype=np.int64)
    for i, tokens in enumerate(token_lists):
        lengths[i] = len(tokens)
        term_ids.extend(vocabulary.setdefault(t, len(vocabulary)) for t in tokens)
    n_docs = len(token_lists)
    n_terms = len(vocabulary)
    terms = np.asarray(term_ids, dtype=np.int64)
    docs = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    # One key per (term, document) pair: unique() sorts by term, then document, and counts tf.
    pairs, tf = np.unique(terms * n_docs + docs, return_counts=True)
    pair_terms = pairs // n_docs if n_docs else pairs
    pair_docs = pairs - pair_terms * n_docs
    df = np.bincount(pair_terms, minlength=n_terms)
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    avgdl = float(lengths.mean()) if n_docs and lengths.sum() else 1.0
    norm = k1 * (1.0 - b + b * lengths[pair_docs] / avgdl)
    weights = idf[pair_terms] * tf * (k1 + 1.0) / (tf + norm)
    starts = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=starts[1:])
    return BM25Index(
        vocabulary=vocabulary,
        starts=starts,
        doc_indices=pair_docs.astype(np.int32 if n_docs < 2**31 else np.int64),
        weights=weights,
        n_docs=n_docs,
        k1=k1,
        b=b,
    )


def bm25_scores(index: BM25Index, query_tokens: Sequence[str]) -> np.ndarray:
    """Score every document for one query; unknown and repeated terms add nothing."""
    term_ids = sorted({index.vocabulary[t] for t in query_tokens if t in index.vocabulary})
    if not term_ids:
        return np.zeros(index.n_docs)
    slices = [slice(index.starts[t], index.starts[t + 1]) for t in term_ids]
    docs = np.concatenate([index.doc_indices[s] for s in slices])
    weights = np.concatenate([index.weights[s] for s in slices])
    return np.bincount(docs, weights=weights, minlength=index.n_docs)


class BM25Ranker:
    """``bm25`` (plain tokens) or ``bm25-stem`` (stop list and plural stripping)."""

    requires: tuple[str, ...] = ()
    uses_embeddings = False
    uses_postgres = False

    def __init__(self, name: str, stemmed: bool, k1: float = 1.2, b: float = 0.75) -> None:
        self.name = name
        self.stemmed = stemmed
        self.k1 = k1
        self.b = b

    @property
    def _tokenizer(self) -> Callable[[str], list[str]]:
        return tokenize_stemmed if self.stemmed else tokenize

    def params(self) -> dict[str, Any]:
        return {
            "method": "okapi-bm25",
            "idf": "ln(1 + (N - df + 0.5) / (df + 0.5))",
            "k1": self.k1,
            "b": self.b,
            "tokenizer": "lowercase, split on non-alphanumerics"
            + (", stop list removed, plurals stripped" if self.stemmed else ""),
            "query_terms": "deduplicated",
            "ranked": "positive scores only",
            "ties": "document id ascending",
            "stemmed": self.stemmed,
            "stop_words": sorted(STOP_WORDS) if self.stemmed else [],
        }

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        documents = inputs.corpus.documents
        tokenizer = self._tokenizer
        index = build_bm25_index([tokenizer(passage_text(d)) for d in documents], self.k1, self.b)
        doc_ids = [d.doc_id for d in documents]
        id_key = doc_id_order(doc_ids)
        hits: dict[str, tuple[Hit, ...]] = {}
        for query in inputs.corpus.queries:
            scores = bm25_scores(index, tokenizer(query.text))
            best = top_k(scores, id_key, depth, positive_only=True)
            hits[query.query_id] = tuple(
                Hit(doc_id=doc_ids[i], rank=r, score=float(scores[i])) for r, i in enumerate(best, start=1)
            )
        return Run(ranker=self.name, params=self.params(), hits=hits)
