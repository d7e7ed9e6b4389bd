"""Okapi BM25 over a precomputed sparse term-by-document weight structure.

Score of document d for query q (query terms deduplicated)::

    sum over t in q:  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

This is the Lucene variant of idf (always positive; bm25s calls it ``lucene``).
Only documents with a positive score are ranked; ties go to the smaller document id.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain, count
from typing import Any

import numpy as np

from sitegen.inputs.corpus import Document, passage_text
from sitegen.rankers.base import Basis, Contract, Family, Hit, RankInputs, Run, doc_id_order, top_k
from sitegen.rankers.filtering import FILTER_NOTE, allowed_masks
from sitegen.rankers.tokenize import STOP_WORDS, strip_plural, tokenize, tokenize_stemmed

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
    """Index tokenised documents; term ids follow first appearance, never set order.

    Written for speed and memory (see bench/): tokens are mapped to ids without a
    Python list, and one in-place sort of int64 (term, document) keys groups the
    postings. Every weight is computed with the same float64 operations in the same
    order as the plain formula, so scores are bit-for-bit those of the definition.
    """
    words = _numbered(token_lists)
    return _index(words.vocabulary, words.ids.astype(np.int64), words.lengths, k1, b)


@dataclass(frozen=True)
class _Words:
    """Documents' tokens as ids numbered by first appearance: document i holds the next ``lengths[i]`` ids."""

    vocabulary: dict[str, int]
    ids: np.ndarray
    lengths: np.ndarray  # int64


def _numbered(token_lists: Sequence[Sequence[str]]) -> _Words:
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    # A defaultdict numbering keys as they first appear; map() keeps the loop in C.
    ids: defaultdict[str, int] = defaultdict(count().__next__)
    key = np.fromiter(map(ids.__getitem__, chain.from_iterable(token_lists)), dtype=np.int64, count=int(lengths.sum()))
    return _Words(dict(ids), key, lengths)


# The last corpus tokenised and the variants (stemmed or not) it has served: bm25 and bm25-stem tokenise the
# passages once between them, and the ids are released once both have them (40 MB at 100,000 passages).
_last_tokenised: list[tuple[tuple[Document, ...], _Words, set[bool]]] = []


def _passage_words(documents: tuple[Document, ...], stemmed: bool) -> _Words:
    """The plain tokens of ``documents``, kept for the other variant when the same tuple object comes back;
    a variant asking twice gets them tokenised again."""
    if not (_last_tokenised and _last_tokenised[0][0] is documents and stemmed not in _last_tokenised[0][2]):
        _last_tokenised.clear()  # the previous ids go before these are made
        words = _numbered([tokenize(passage_text(d)) for d in documents])
        _last_tokenised.append((documents, _Words(words.vocabulary, words.ids.astype(np.int32), words.lengths), set()))
    _, words, served = _last_tokenised[0]
    served.add(stemmed)
    if len(served) == 2:
        _last_tokenised.clear()
    return words


def _stemmed(words: _Words) -> _Words:
    """``words`` as :func:`tokenize_stemmed` gives them, each distinct word stemmed once: a stem's id is its
    first appearance in the stemmed stream, as :func:`_numbered` numbers that stream."""
    vocabulary: dict[str, int] = {}
    table = np.array(
        [-1 if w in STOP_WORDS else vocabulary.setdefault(strip_plural(w), len(vocabulary)) for w in words.vocabulary],
        dtype=np.int64,
    )
    mapped = table[words.ids]
    kept = mapped >= 0
    kept_before = np.zeros(kept.size + 1, dtype=np.int64)
    np.cumsum(kept, out=kept_before[1:])
    ends = np.cumsum(words.lengths)
    lengths = kept_before[ends] - kept_before[ends - words.lengths]
    return _Words(vocabulary, mapped[kept], lengths)


def _index(vocabulary: dict[str, int], key: np.ndarray, lengths: np.ndarray, k1: float, b: float) -> BM25Index:
    """The index of documents whose term ids, document after document, are ``key`` (int64, consumed)."""
    n_docs, n_tokens, n_terms = len(lengths), int(lengths.sum()), len(vocabulary)
    doc_dtype = np.int32 if n_docs < 2**31 else np.int64
    if n_tokens == 0:
        return BM25Index(
            vocabulary=vocabulary,
            starts=np.zeros(n_terms + 1, dtype=np.int64),
            doc_indices=np.zeros(0, dtype=doc_dtype),
            weights=np.zeros(0, dtype=np.float64),
            n_docs=n_docs,
            k1=k1,
            b=b,
        )
    # One key per token, term * n_docs + document, sorted in place: term-major, then document.
    key *= n_docs
    key += np.repeat(np.arange(n_docs, dtype=doc_dtype), lengths)
    key.sort()
    first = np.empty(n_tokens, dtype=bool)
    first[0] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    run_starts = np.flatnonzero(first)  # where each distinct (term, document) pair begins
    del first
    pairs = key[run_starts]
    del key
    tf = np.empty(run_starts.size, dtype=np.int32 if n_tokens < 2**31 else np.int64)
    np.subtract(run_starts[1:], run_starts[:-1], out=tf[:-1], casting="unsafe")
    tf[-1] = n_tokens - run_starts[-1]
    del run_starts
    starts = np.searchsorted(pairs, np.arange(n_terms + 1, dtype=np.int64) * n_docs)
    np.remainder(pairs, n_docs, out=pairs)
    doc_indices = pairs.astype(doc_dtype)
    del pairs
    df = np.diff(starts)
    # math.log1p (the C library) rather than numpy's, whose SIMD variant differs by CPU in the last bit.
    ratio = (n_docs - df + 0.5) / (df + 0.5)
    idf = np.fromiter((math.log1p(x) for x in ratio.tolist()), dtype=np.float64, count=ratio.size)
    avgdl = float(lengths.mean()) if n_docs and lengths.sum() else 1.0
    # weight = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)), evaluated left to right
    # exactly as written; the length norm depends only on the document, so it is computed per document.
    doc_norm = k1 * (1.0 - b + b * lengths / avgdl)
    weights = np.repeat(idf, df)
    weights *= tf
    weights *= k1 + 1.0
    denominator = doc_norm[doc_indices]
    denominator += tf
    weights /= denominator
    return BM25Index(
        vocabulary=vocabulary,
        starts=starts.astype(np.int64, copy=False),
        doc_indices=doc_indices,
        weights=weights,
        n_docs=n_docs,
        k1=k1,
        b=b,
    )


# Below this many postings per query term on average, one concatenation and bincount beat a
# call per term (measured in bench/: Cranfield-sized collections are on this side).
_POSTINGS_PER_TERM_FOR_BINCOUNT = 800


def bm25_scores(index: BM25Index, query_tokens: Sequence[str]) -> np.ndarray:
    """Score every document for one query; unknown and repeated terms add nothing.

    Each document's score is summed over the query's terms in ascending term id,
    starting from 0.0, whichever of the two equivalent paths runs: short postings are
    concatenated and summed by ``np.bincount`` (which adds in array order); long ones
    are added a term at a time with ``np.add.at`` (a term's postings hold each document
    once), which avoids copying them.
    """
    vocabulary = index.vocabulary
    term_ids = sorted({vocabulary[t] for t in query_tokens if t in vocabulary})
    if not term_ids:
        return np.zeros(index.n_docs)
    starts, doc_indices, weights = index.starts, index.doc_indices, index.weights
    slices = [slice(starts[t], starts[t + 1]) for t in term_ids]
    n_postings = sum(s.stop - s.start for s in slices)
    if n_postings < _POSTINGS_PER_TERM_FOR_BINCOUNT * len(slices):
        docs = np.concatenate([doc_indices[s] for s in slices])
        return np.bincount(docs, weights=np.concatenate([weights[s] for s in slices]), minlength=index.n_docs)
    scores = np.zeros(index.n_docs)
    for s in slices:
        np.add.at(scores, doc_indices[s], weights[s])
    return scores


class BM25Ranker:
    """``bm25`` (plain tokens) or ``bm25-stem`` (stop list and plural stripping)."""

    def __init__(
        self,
        name: str,
        stemmed: bool,
        k1: float = 1.2,
        b: float = 0.75,
        filtered: bool = False,
        unfiltered: str | None = None,
        chunking_sweep: bool = False,
    ) -> None:
        self.name = name
        self.stemmed = stemmed
        self.k1 = k1
        self.b = b
        self.contract = Contract(
            Family.LEXICAL,
            "okapi-bm25",
            filtered=filtered,
            unfiltered=unfiltered,
            chunking_sweep=chunking_sweep,
            basis=(Basis.INPUTS,),
        )

    @property
    def _tokenizer(self) -> Callable[[str], list[str]]:
        return tokenize_stemmed if self.stemmed else tokenize

    def params(self) -> dict[str, Any]:
        return {
            "method": self.contract.verifier,
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
        } | ({"filtered": True, "filter": FILTER_NOTE} if self.contract.filtered else {})

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        documents = inputs.corpus.documents
        tokenizer = self._tokenizer
        words = _passage_words(documents, self.stemmed)
        words = _stemmed(words) if self.stemmed else words
        index = _index(words.vocabulary, words.ids.astype(np.int64), words.lengths, self.k1, self.b)
        doc_ids = [d.doc_id for d in documents]
        id_key = doc_id_order(doc_ids)
        hits: dict[str, tuple[Hit, ...]] = {}
        masks = allowed_masks(inputs.corpus) if self.contract.filtered else {}
        for query in inputs.corpus.queries:
            scores = bm25_scores(index, tokenizer(query.text))
            mask = masks.get(query.query_id)
            if mask is not None:
                scores = np.where(mask, scores, 0.0)  # a filtered-out passage scores 0: never ranked
            best = top_k(scores, id_key, depth, positive_only=True)
            hits[query.query_id] = tuple(
                Hit(doc_id=doc_ids[i], rank=r, score=float(scores[i])) for r, i in enumerate(best, start=1)
            )
        return Run(ranker=self.name, contract=self.contract, params=self.params(), hits=hits)
