"""``BM25Search`` against a plain-Python BM25, bit for bit.

The reference scores one document at a time: ``score = 0.0``, then each distinct query term's weight
added in ascending term id (terms numbered by first appearance in the corpus), the weight written as
the formula ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))`` with
``idf = log1p((N - df + 0.5) / (df + 0.5))``. Ranked: positive scores, higher first, then document id
ascending. The search must return exactly those documents with exactly those float64 values, whichever
of its paths runs (every document scored, or postings skipped with bounds); each test first proves
which path ran.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitegen.rankers import bm25
from sitegen.rankers.base import doc_id_order, top_k
from sitegen.rankers.bm25 import BM25Search, bm25_scores, build_bm25_index
from tests.helpers import examples


def reference_top(
    docs: list[list[str]], ids: list[str], query: list[str], depth: int, k1: float, b: float, allowed=None
) -> list[tuple[str, float]]:
    """The definition, one document at a time, in plain Python floats."""
    term_id: dict[str, int] = {}
    for doc in docs:
        for token in doc:
            term_id.setdefault(token, len(term_id))
    n = len(docs)
    df = Counter(t for doc in docs for t in set(doc))
    avgdl = sum(map(len, docs)) / n if sum(map(len, docs)) else 1.0
    terms = sorted({t for t in query if t in term_id}, key=term_id.__getitem__)
    ranked = []
    for i, doc in enumerate(docs):
        if allowed is not None and not allowed[i]:
            continue
        tf = Counter(doc)
        score = 0.0
        for t in terms:
            if tf[t]:
                idf = math.log1p((n - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * tf[t] * (k1 + 1.0) / (tf[t] + k1 * (1.0 - b + b * len(doc) / avgdl))
        if score > 0:
            ranked.append((-score, ids[i]))
    return [(doc_id, -neg) for neg, doc_id in sorted(ranked)[:depth]]


class PathSpy:
    """Counts the queries answered by skipping postings and those that scored every document."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pruned = self.scored = 0
        pruned, scored = bm25._pruned, bm25._scores_of_terms

        def spy_pruned(*args):
            found = pruned(*args)
            self.pruned += found is not None
            return found

        def spy_scored(*args):
            self.scored += 1
            return scored(*args)

        monkeypatch.setattr(bm25, "_pruned", spy_pruned)
        monkeypatch.setattr(bm25, "_scores_of_terms", spy_scored)


def answer(search: BM25Search, ids: list[str], query: list[str], depth: int, allowed=None) -> list[tuple[str, float]]:
    best, scores = search.top(query, depth, allowed)
    return [(ids[i], s) for i, s in zip(best.tolist(), scores.tolist(), strict=True)]


# A skewed vocabulary (a few words in most passages, most words in few), as real text has: the search
# then has common terms to bound and rare ones to read.
WORDS = ["a"] * 12 + ["b"] * 6 + ["c"] * 4 + ["d"] * 3 + ["e", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o"]


#: Every id of one to four letters from "pqrs", to draw a collection's ids from.
IDS = ["".join(letters) for size in range(1, 5) for letters in itertools.product("pqrs", repeat=size)]


@st.composite
def collections(draw):
    """Hypothesis draws the sizes and settings; the texts, ids and filter come from a seeded generator it also
    draws, which is hundreds of times quicker than drawing every word (300 examples: 20 s down to 2 s)."""
    n = draw(st.integers(min_value=1, max_value=60))
    rng = np.random.default_rng(draw(st.integers(min_value=0, max_value=2**32 - 1)))
    docs = [rng.choice(WORDS, size=int(rng.integers(0, 15))).tolist() for _ in range(n)]
    ids = rng.choice(IDS, size=n, replace=False).tolist()
    asked = [*WORDS, "zz"]
    queries = [rng.choice(asked, size=int(rng.integers(1, 8))).tolist() for _ in range(int(rng.integers(1, 6)))]
    k1 = draw(st.sampled_from([0.0, 0.5, 1.2, 2.0]))
    b = draw(st.sampled_from([0.0, 0.3, 0.75, 1.0]))
    allowed = (rng.random(n) < rng.random()).tolist() if draw(st.booleans()) else None
    depth = draw(st.integers(min_value=1, max_value=n + 2))
    return docs, ids, queries, k1, b, allowed, depth


@settings(max_examples=examples(300), deadline=None)
@given(case=collections())
def test_skipping_postings_gives_the_reference_hits_and_scores_bit_for_bit(case) -> None:
    docs, ids, queries, k1, b, allowed, depth = case
    index = build_bm25_index(docs, k1, b)
    search = BM25Search(index, doc_id_order(ids))
    mask = None if allowed is None else np.array(allowed, dtype=bool)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25, "_PRUNING_FROM", 0)  # the bounded path even on small collections
        for query in queries:
            assert answer(search, ids, query, depth, mask) == reference_top(docs, ids, query, depth, k1, b, allowed)
    assert not search._partial.any()  # the scratch is all zeros between queries


def test_the_hypothesis_cases_do_take_the_bounded_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property above is about the bounded path: it must run on collections like those drawn."""
    rng = np.random.default_rng(3)
    docs = [list(rng.choice(WORDS, size=int(rng.integers(0, 15)))) for _ in range(50)]
    ids = [f"d{i:02d}" for i in range(50)]
    monkeypatch.setattr(bm25, "_PRUNING_FROM", 0)
    spy = PathSpy(monkeypatch)
    search = BM25Search(build_bm25_index(docs), doc_id_order(ids))
    for query in (["a", "e", "n"], ["b", "c", "o"], ["a", "b", "c", "d"], ["m"]):
        assert answer(search, ids, query, 5) == reference_top(docs, ids, query, 5, 1.2, 0.75)
    assert spy.pruned >= 3


@pytest.fixture(scope="module")
def zipf_collection() -> tuple[list[list[str]], list[str], list[list[str]]]:
    """200,000 short passages over a 3,000-word Zipf vocabulary: postings plus passages reach
    ``_PRUNING_FROM``, so the default thresholds choose the bounded path."""
    rng = np.random.default_rng(20261202)
    vocabulary = np.array([f"w{i}" for i in range(3000)], dtype=object)
    p = 1.0 / np.arange(1, 3001)
    p /= p.sum()
    lengths = rng.integers(2, 9, size=200_000)
    flat = vocabulary[rng.choice(3000, size=int(lengths.sum()), p=p)]
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    docs = [flat[bounds[i] : bounds[i + 1]].tolist() for i in range(lengths.size)]
    ids = [f"p{int(i):06d}" for i in rng.permutation(lengths.size)]  # id order unrelated to position
    queries = [vocabulary[rng.choice(3000, size=int(rng.integers(2, 9)), p=p)].tolist() for _ in range(30)]
    return docs, ids, queries


@pytest.mark.parametrize("depth", [10, 100])
def test_default_thresholds_skip_postings_and_rank_as_scoring_every_document(
    monkeypatch: pytest.MonkeyPatch, zipf_collection, depth: int
) -> None:
    docs, ids, queries = zipf_collection
    index = build_bm25_index(docs)
    key = doc_id_order(ids)
    spy = PathSpy(monkeypatch)
    search = BM25Search(index, key)
    for query in queries:
        best, scores = search.top(query, depth)
        everything = bm25_scores(index, query)
        want = top_k(everything, key, depth, positive_only=True)
        assert best.tolist() == want.tolist()
        assert scores.tobytes() == everything[want].tobytes()
    assert spy.pruned >= len(queries) // 2, "the bounded path was not taken for most queries"


def test_filtered_search_equals_scoring_every_document_with_the_mask(zipf_collection) -> None:
    docs, ids, queries = zipf_collection
    index = build_bm25_index(docs)
    key = doc_id_order(ids)
    search = BM25Search(index, key)
    allowed = np.random.default_rng(5).random(len(docs)) < 0.3
    for query in queries[:10]:
        best, scores = search.top(query, 20, allowed)
        everything = np.where(allowed, bm25_scores(index, query), 0.0)
        want = top_k(everything, key, 20, positive_only=True)
        assert best.tolist() == want.tolist()
        assert scores.tobytes() == everything[want].tobytes()


def test_weights_recomputed_from_dense_term_frequencies_equal_the_stored_weights(zipf_collection) -> None:
    index = build_bm25_index(zipf_collection[0])
    dense_terms = np.flatnonzero(index.dense_rows >= 0).tolist()
    assert dense_terms, "no term is common enough to be kept dense"
    everyone = np.arange(index.n_docs, dtype=index.doc_indices.dtype)
    recomputed = bm25._dense_weights(index, dense_terms, everyone)
    for row, term in enumerate(dense_terms):
        start, stop = index.starts[term], index.starts[term + 1]
        assert recomputed[row][index.doc_indices[start:stop]].tobytes() == index.weights[start:stop].tobytes()
        assert np.count_nonzero(recomputed[row]) == stop - start  # 0.0 exactly where the term is absent
