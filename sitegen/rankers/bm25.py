"""Okapi BM25 over a precomputed sparse term-by-document weight structure.

Score of document d for query q (query terms deduplicated)::

    sum over t in q:  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

This is the Lucene variant of idf (always positive; bm25s calls it ``lucene``).
Only documents with a positive score are ranked; ties go to the smaller document id.

A document's score is its terms' weights added one at a time in ascending term id, starting
from 0.0: elementwise IEEE float64 operations in a fixed order, so the bits are the same on
every CPU. :class:`BM25Search` finds the top of that ranking while reading only the postings
that can change it, and computes every score it returns in that same order.
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

__all__ = [
    "SHIPPED_BM25",
    "BM25Index",
    "BM25Params",
    "BM25Ranker",
    "BM25Search",
    "bm25_scores",
    "build_bm25_index",
    "passage_index",
]


@dataclass(frozen=True)
class BM25Index:
    """Postings in compressed-column form: term t's documents are
    ``doc_indices[starts[t]:starts[t + 1]]`` (ascending) with precomputed BM25 ``weights``.

    For :class:`BM25Search`: ``max_weights[t]``, the largest of term t's weights, bounds what the term
    can add to a score; a term in many documents (``dense_rows[t] >= 0``) also has its term frequency
    in every document, one byte each, in row ``dense_rows[t]`` of ``dense_tf``, so its weight in any
    document is computed again from ``idf`` and ``doc_norms`` (the same operations, so the same bits)
    instead of searched for.
    """

    vocabulary: dict[str, int]
    starts: np.ndarray
    doc_indices: np.ndarray
    weights: np.ndarray
    max_weights: np.ndarray
    idf: np.ndarray
    doc_norms: np.ndarray
    dense_rows: np.ndarray
    dense_tf: np.ndarray
    n_docs: int
    k1: float
    b: float

    @property
    def postings_bytes(self) -> int:
        """The bytes of the postings (``starts``, ``doc_indices``, ``weights``): what ``cost.json`` counts as a
        BM25 index's size, the audit's count from the tokens included."""
        return int(self.starts.nbytes + self.doc_indices.nbytes + self.weights.nbytes)


def build_bm25_index(token_lists: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> BM25Index:
    """Index tokenised documents; term ids follow first appearance, never set order.

    Written for speed and memory (see bench/): tokens are mapped to ids without a
    Python list, and one in-place sort of int64 (term, document) keys groups the
    postings. Every weight is computed with the same float64 operations in the same
    order as the plain formula, so scores are bit-for-bit those of the definition.
    """
    words = _numbered(token_lists)
    vocabulary, lengths, ids = words.vocabulary, words.lengths, [words.ids]  # int64 already, and ours alone
    del words  # so that _index frees the ids (8 bytes a token, 100 MB at 100,000 passages) once it has the keys
    return _index(vocabulary, ids, lengths, k1, b)


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
        _last_tokenised.append((documents, _numbered_documents(documents), set()))
    _, words, served = _last_tokenised[0]
    served.add(stemmed)
    if len(served) == 2:
        _last_tokenised.clear()
    return words


#: Passages tokenised at a time: only one block's tokens are ever Python strings (at 1,000,000 passages all of them
#: at once took about 4 GB), the ids are kept as int32.
_TOKENISE_BLOCK = 10_000


def _numbered_documents(documents: tuple[Document, ...]) -> _Words:
    """:func:`_numbered` of the documents' plain tokens, tokenised a block at a time: the same vocabulary, ids
    (as int32) and lengths, since ids are numbered by first appearance in the same stream of tokens."""
    ids: defaultdict[str, int] = defaultdict(count().__next__)
    lengths = np.empty(len(documents), dtype=np.int64)
    parts = []
    for start in range(0, len(documents), _TOKENISE_BLOCK):
        block = [tokenize(passage_text(d)) for d in documents[start : start + _TOKENISE_BLOCK]]
        lengths[start : start + len(block)] = [len(tokens) for tokens in block]
        numbered = np.fromiter(map(ids.__getitem__, chain.from_iterable(block)), dtype=np.int64)
        if len(ids) > np.iinfo(np.int32).max:
            raise ValueError(f"more than {np.iinfo(np.int32).max:,} distinct words: too many for int32 ids")
        parts.append(numbered.astype(np.int32))
    key = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    return _Words(dict(ids), key, lengths)


def passage_index(documents: tuple[Document, ...], stemmed: bool, k1: float = 1.2, b: float = 0.75) -> BM25Index:
    """The index :class:`BM25Ranker` ranks ``documents`` by: the postings of :func:`build_bm25_index` over each
    passage's tokens (stemmed or not), made from the passages tokenised a block at a time, so a million passages'
    tokens are never Python strings at once."""
    words = _passage_words(documents, stemmed)
    words = _stemmed(words) if stemmed else words
    return _index(words.vocabulary, [words.ids.astype(np.int64)], words.lengths, k1, b)


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


# Terms in at least this share of the documents keep their term frequencies as one byte per document too,
# so a search finds their weight in any document in one step. A posting takes 12 bytes (4 for the
# document, 8 for the weight) and such a term has at least N / 8 of them, so these rows add at most 2/3
# of the postings' bytes (7% on the benchmark's Zipf collections).
_DENSE_SHARE = 1 / 8


def _index(vocabulary: dict[str, int], ids: list[np.ndarray], lengths: np.ndarray, k1: float, b: float) -> BM25Index:
    """The index of documents whose term ids, document after document, are ``ids``' one int64 array: taken
    out of the list, used as the sort keys in place and freed once the postings are grouped (the caller
    keeps no other reference, so the peak holds it only that long)."""
    key = ids.pop()
    n_docs, n_tokens, n_terms = len(lengths), int(lengths.sum()), len(vocabulary)
    doc_dtype = np.int32 if n_docs < 2**31 else np.int64
    if n_tokens == 0:
        return BM25Index(
            vocabulary=vocabulary,
            starts=np.zeros(n_terms + 1, dtype=np.int64),
            doc_indices=np.zeros(0, dtype=doc_dtype),
            weights=np.zeros(0, dtype=np.float64),
            max_weights=np.zeros(n_terms, dtype=np.float64),
            idf=np.zeros(n_terms, dtype=np.float64),
            doc_norms=np.zeros(n_docs, dtype=np.float64),
            dense_rows=np.full(n_terms, -1, dtype=np.int64),
            dense_tf=np.zeros((0, n_docs), dtype=np.uint8),
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
    del denominator
    max_weights, dense_rows, dense_tf = _search_tables(starts, doc_indices, weights, tf, n_docs)
    return BM25Index(
        vocabulary=vocabulary,
        starts=starts.astype(np.int64, copy=False),
        doc_indices=doc_indices,
        weights=weights,
        max_weights=max_weights,
        idf=idf,
        doc_norms=doc_norm,
        dense_rows=dense_rows,
        dense_tf=dense_tf,
        n_docs=n_docs,
        k1=k1,
        b=b,
    )


def _search_tables(
    starts: np.ndarray, doc_indices: np.ndarray, weights: np.ndarray, tf: np.ndarray, n_docs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What :class:`BM25Search` reads besides the postings: each term's largest weight, and the dense
    rows (``dense_rows``, ``dense_tf``) of the terms in at least ``_DENSE_SHARE`` of the documents whose
    term frequencies fit in a byte."""
    df = np.diff(starts)
    present = df > 0
    max_weights = np.zeros(df.size, dtype=np.float64)
    max_weights[present] = np.maximum.reduceat(weights, starts[:-1][present])
    max_tf = np.zeros(df.size, dtype=tf.dtype)
    max_tf[present] = np.maximum.reduceat(tf, starts[:-1][present])
    dense = np.flatnonzero((df >= n_docs * _DENSE_SHARE) & (max_tf <= np.iinfo(np.uint8).max))
    dense_rows = np.full(df.size, -1, dtype=np.int64)
    dense_rows[dense] = np.arange(dense.size)
    dense_tf = np.zeros((dense.size, n_docs), dtype=np.uint8)
    for row, term in enumerate(dense.tolist()):
        dense_tf[row, doc_indices[starts[term] : starts[term + 1]]] = tf[starts[term] : starts[term + 1]]
    return max_weights, dense_rows, dense_tf


# Below this many postings per query term on average, one concatenation and bincount beat a
# call per term (measured in bench/: Cranfield-sized collections are on this side).
_POSTINGS_PER_TERM_FOR_BINCOUNT = 800


def _query_term_ids(index: BM25Index, query_tokens: Sequence[str]) -> list[int]:
    """The distinct known terms of a query, in ascending id: the order every score is summed in."""
    vocabulary = index.vocabulary
    return sorted({vocabulary[t] for t in query_tokens if t in vocabulary})


def bm25_scores(index: BM25Index, query_tokens: Sequence[str]) -> np.ndarray:
    """Score every document for one query; unknown and repeated terms add nothing."""
    return _scores_of_terms(index, _query_term_ids(index, query_tokens))


def _scores_of_terms(index: BM25Index, term_ids: list[int]) -> np.ndarray:
    """Every document's score for the terms ``term_ids`` (ascending).

    Each document's score is summed over the query's terms in ascending term id,
    starting from 0.0, whichever of the two equivalent paths runs: short postings are
    concatenated and summed by ``np.bincount`` (which adds in array order); long ones
    are added a term at a time with ``np.add.at`` (a term's postings hold each document
    once), which avoids copying them.
    """
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


# Scoring every document costs about 2 ns a posting plus 1 ns a document (the score array and its top);
# skipping postings has about 100 us of bookkeeping that grows with the rare terms' postings. Below this
# many postings plus documents, scoring every document is the cheaper (measured in bench/: at 10,000
# passages it always is, at 100,000 from about 80,000 postings on, at 1,000,000 skipping always pays).
_PRUNING_FROM = 180_000
# Queries with more distinct known terms than this are scored in full: their bounds take m * m additions.
_TERMS_FOR_PRUNING = 64


class BM25Search:
    """The best ``depth`` documents for query after query over one index (higher score first, then
    document id ascending, positive scores only), and their scores, bit for bit those of
    :func:`bm25_scores`.

    Queries with many postings are answered MaxScore-style (Turtle and Flood, 1995): the postings of
    the query's rarer terms are read in full, the common terms' weights (``BM25Index.dense_tf``) only
    for the documents that can still reach the top. The bounds hold after rounding (see
    :func:`_pruned`), and every score returned is summed as :func:`bm25_scores` sums it. Holds one
    float64 array per document, all zeros between queries.
    """

    def __init__(self, index: BM25Index, id_key: np.ndarray) -> None:
        self.index = index
        self.id_key = id_key
        self._partial = np.zeros(index.n_docs)
        # Every weight is then positive and finite, and one recomputed for a document without the term is
        # 0.0 (a document with a term has a positive length norm): the bounds rely on both.
        self._prunable = index.k1 > 0.0 and 0.0 <= index.b <= 1.0

    def top(
        self, query_tokens: Sequence[str], depth: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(document indices, float64 scores) of the best ``depth``; ``allowed`` (a boolean mask) keeps
        only those documents, as if every other scored 0."""
        index = self.index
        term_ids = _query_term_ids(index, query_tokens)
        if self._worth_pruning(term_ids, depth):
            found = _pruned(index, term_ids, depth, allowed, self._partial)
            if found is not None:
                docs, scores = found
                best = top_k(scores, self.id_key[docs], depth, positive_only=True)
                return docs[best], scores[best]
        scores = _scores_of_terms(index, term_ids)
        if allowed is not None:
            scores = np.where(allowed, scores, 0.0)
        best = top_k(scores, self.id_key, depth, positive_only=True)
        return best, scores[best]

    def _worth_pruning(self, term_ids: list[int], depth: int) -> bool:
        """Whether skipping postings pays for this query (m x N bounds its postings unread)."""
        m, n = len(term_ids), self.index.n_docs
        if not (self._prunable and depth > 0 and 0 < m <= _TERMS_FOR_PRUNING) or (m + 1) * n < _PRUNING_FROM:
            return False
        ids = np.array(term_ids, dtype=np.int64)
        return int((self.index.starts[ids + 1] - self.index.starts[ids]).sum()) + n >= _PRUNING_FROM


def _pruned(
    index: BM25Index, term_ids: list[int], depth: int, allowed: np.ndarray | None, partial: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """A set of documents holding every document of the query's top ``depth``, with their exact scores;
    None when all the postings read hold fewer than ``depth`` documents (the caller then scores every
    document).

    The rare terms' postings are read in full and summed in ``partial`` (zeros on entry and again on
    return), then the common terms' too, by descending largest weight, while needed: ``theta``
    (:func:`_theta`) is at most the ``depth``-th best exact score, and a sum of non-negative floats in a
    fixed order does not decrease when an addend grows, so ``rest[k]``, the largest weights of the
    common terms not read (from the k-th on) added in the scoring order (ascending id, from 0.0),
    bounds the exact score of a document in none of the postings read. Once ``rest[k] < theta`` only
    documents read can reach the top: those whose partial sum plus ``rest[k]`` reaches ``theta`` get
    the other common terms' weights added (from :func:`_dense_weights`), and those whose total reaches
    ``theta`` get their exact score. These sums are in another order than the exact one, so ``theta``
    is shrunk by a relative ``slack`` of (m + 2) * 2**-50 before a sum is held against it: over 8x the
    rounding error of two sums of m terms in any order (2 m u with u = 2**-53, Higham's bound), plus
    the roundings of the comparison itself.
    """
    dense = (index.dense_rows[term_ids] >= 0).tolist()
    common, rest = _common_terms(index, term_ids, dense)
    slack = (len(term_ids) + 2) * 2.0**-50
    new = [t for t, is_common in zip(term_ids, dense, strict=True) if not is_common]
    k = 0
    if not new:
        new, k = common[:1], 1
    n_read = len(new)
    parts: list[np.ndarray] = []
    try:
        while True:
            fresh, values = _postings(index, new, allowed)
            parts.append(fresh)
            np.add.at(partial, fresh, values)
            touched = np.concatenate(parts) if len(parts) > 1 else fresh
            parts[:] = [touched]
            sums = partial[touched]
            theta = _theta(index, (touched, sums), depth, n_read, common[k:]) * (1.0 - slack)
            if rest[k] < theta or k == len(common):
                break
            new, k, n_read = common[k : k + 1], k + 1, n_read + 1
    finally:
        for part in parts:
            partial[part] = 0.0  # zeros again for the next query
    if not theta > 0.0:
        return None
    floor = theta * (1.0 - slack)  # a total below it cannot reach theta (two roundings, inside the slack)
    keep = sums >= floor - rest[k]
    touched, sums = touched[keep], sums[keep]  # a document once per term read
    for group in (common[k : k + 1], common[k + 1 :]):  # the largest weight alone first: it drops the most
        if group:
            sums = sums + _dense_weights(index, group, touched).sum(axis=0)
            k += len(group)
            keep = sums >= floor - rest[k]
            touched, sums = touched[keep], sums[keep]
    docs, sums = _distinct(touched, sums)
    if sums.size > depth:  # the depth-th best total, shrunk, is a tighter theta
        floor = max(floor, float(np.partition(sums, sums.size - depth)[sums.size - depth]) * (1.0 - slack) ** 2)
        docs = docs[sums >= floor]
    return docs, _exact_scores(index, term_ids, dense, docs)


def _postings(index: BM25Index, terms: list[int], allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The documents and weights of ``terms``' postings, one after the other, only ``allowed`` ones."""
    starts, doc_indices, weights = index.starts, index.doc_indices, index.weights
    docs = np.concatenate([doc_indices[starts[t] : starts[t + 1]] for t in terms])
    values = np.concatenate([weights[starts[t] : starts[t + 1]] for t in terms])
    if allowed is not None:
        keep = allowed[docs]
        docs, values = docs[keep], values[keep]
    return docs, values


def _theta(index: BM25Index, read: tuple[np.ndarray, np.ndarray], depth: int, terms: int, others: list[int]) -> float:
    """At most the ``depth``-th best exact score (before the slack), or 0.0 when fewer than ``depth``
    documents are read. ``read`` is the documents and partial sums of ``terms`` terms' postings, a
    document at most once per term, so the ``depth * terms`` largest entries hold at least ``depth``
    documents; to the partial sums of those documents the weights of the common terms not read
    (``others``) are added, and the ``depth``-th largest total is taken."""
    touched, sums = read
    ranked = depth * terms
    top = np.argpartition(sums, sums.size - ranked)[sums.size - ranked :] if sums.size > ranked else slice(None)
    docs, best = _distinct(touched[top], sums[top])
    if docs.size < depth:
        return 0.0
    if others:
        best = best + _dense_weights(index, others, docs).sum(axis=0)
    return float(np.partition(best, best.size - depth)[best.size - depth])


def _distinct(docs: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``docs`` sorted with repeats dropped, and ``values`` at one occurrence of each (a document's
    occurrences carry the same value). np.unique is 4x slower on a few thousand."""
    order = np.argsort(docs)
    docs, values = docs[order], values[order]
    first = np.empty(docs.size, dtype=bool)
    first[:1] = True
    np.not_equal(docs[1:], docs[:-1], out=first[1:])
    return docs[first], values[first]


def _common_terms(index: BM25Index, term_ids: list[int], dense: list[bool]) -> tuple[list[int], list[float]]:
    """The query's common terms by descending largest weight (then ascending id), and ``rest``: ``rest[k]``
    is the largest weights of the common terms from the k-th on, added from 0.0 in ascending id (the
    scoring order), ``rest[-1]`` is 0.0."""
    bounds = index.max_weights[term_ids].tolist()
    common = sorted((i for i, is_common in enumerate(dense) if is_common), key=lambda i: (-bounds[i], i))
    rest = []
    for k in range(len(common) + 1):
        later = set(common[k:])
        total = 0.0
        for i in range(len(term_ids)):
            if i in later:
                total += bounds[i]
        rest.append(total)
    return [term_ids[i] for i in common], rest


def _exact_scores(index: BM25Index, term_ids: list[int], dense: list[bool], docs: np.ndarray) -> np.ndarray:
    """The scores of ``docs`` (sorted) exactly as :func:`bm25_scores` sums them: from 0.0, one term at a
    time in ascending id (a term a document lacks adds 0.0, which changes nothing)."""
    weights = np.empty((len(term_ids), docs.size))
    rows = [i for i, is_common in enumerate(dense) if is_common]
    if rows:
        weights[rows] = _dense_weights(index, [term_ids[i] for i in rows], docs)
    for i, is_common in enumerate(dense):
        if not is_common:
            weights[i] = _lookup(index, term_ids[i], docs)
    scores = np.zeros(docs.size)
    for row in weights:
        scores += row
    return scores


def _dense_weights(index: BM25Index, terms: list[int], docs: np.ndarray) -> np.ndarray:
    """The weights of common ``terms`` (rows) in ``docs`` (columns), 0.0 where absent, computed from the
    dense term frequencies with the operations and order the index used for its ``weights``."""
    tf = index.dense_tf[index.dense_rows[terms][:, None], docs[None, :]].astype(np.float64)
    return index.idf[terms][:, None] * tf * (index.k1 + 1.0) / (index.doc_norms[docs][None, :] + tf)


def _lookup(index: BM25Index, term: int, docs: np.ndarray) -> np.ndarray:
    """Term ``term``'s weight in each of ``docs`` (sorted, the postings' dtype), 0.0 where it is absent."""
    start, stop = index.starts[term], index.starts[term + 1]
    postings = index.doc_indices[start:stop]
    at = postings.searchsorted(docs)
    return np.where(postings.take(at, mode="clip") == docs, index.weights[start:stop].take(at, mode="clip"), 0.0)


@dataclass(frozen=True)
class BM25Params:
    """Okapi BM25's term-frequency saturation ``k1`` and length normalisation ``b``: the shipped 1.2 and 0.75."""

    k1: float = 1.2
    b: float = 0.75


SHIPPED_BM25 = BM25Params()


class BM25Ranker:
    """``bm25`` (plain tokens) or ``bm25-stem`` (stop list and plural stripping)."""

    def __init__(
        self,
        name: str,
        stemmed: bool,
        bm25: BM25Params = SHIPPED_BM25,
        filtered: bool = False,
        unfiltered: str | None = None,
        chunking_sweep: bool = False,
    ) -> None:
        self.name = name
        self.stemmed = stemmed
        self.k1 = bm25.k1
        self.b = bm25.b
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
        index = passage_index(documents, self.stemmed, self.k1, self.b)
        doc_ids = [d.doc_id for d in documents]
        id_key = doc_id_order(doc_ids)
        hits: dict[str, tuple[Hit, ...]] = {}
        masks = allowed_masks(inputs.corpus) if self.contract.filtered else {}
        search = BM25Search(index, id_key)
        for query in inputs.corpus.queries:
            # a filtered-out passage counts as scoring 0: never ranked
            best, scores = search.top(tokenizer(query.text), depth, masks.get(query.query_id))
            hits[query.query_id] = tuple(
                Hit(doc_id=doc_ids[i], rank=r, score=s)
                for r, (i, s) in enumerate(zip(best.tolist(), scores.tolist(), strict=True), start=1)
            )
        return Run(
            ranker=self.name, contract=self.contract, params=self.params(), hits=hits, index_bytes=index.postings_bytes
        )
