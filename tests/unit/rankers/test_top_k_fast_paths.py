"""The rankers' fast paths, at sizes where they run, against brute force.

``top_k`` narrows with a bound from group maxima only when ``n // 64 >= 2 * depth``; ``bm25_scores``
scatters with ``np.add.at`` only when the query terms average 800 postings or more; ``dense_top_k``
prunes candidates by BLAS only when there are more than ``depth`` passages. The hand-sized tests in
test_rankers.py never get there, so each test here first proves its path was taken.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from sitegen.embedding.vectors import CorpusEmbeddings
from sitegen.rankers import base, bm25, dense
from sitegen.rankers.base import RankInputs, doc_id_order, top_k
from sitegen.rankers.bm25 import bm25_scores, build_bm25_index
from sitegen.rankers.dense import dense_top_k, fixed_order_dot
from tests.helpers import make_corpus


def random_ids(rng: np.random.Generator, n: int) -> list[str]:
    """Distinct ids whose sorted order is unrelated to array position."""
    ids: dict[str, None] = {}
    while len(ids) < n:  # eight random lowercase letters an id, drawn for every id still missing at once
        letters = rng.integers(ord("a"), ord("z") + 1, size=(n - len(ids), 8), dtype=np.uint8)
        ids.update(dict.fromkeys(word.decode("ascii") for word in letters.view("S8").ravel()))
    return list(ids)[:n]


def brute_force_top(scores: list[float], ids: list[str], depth: int, positive_only: bool) -> list[str]:
    """Every score sorted by (-score, id): the definition ``top_k`` must reproduce."""
    ranked = sorted((-s, doc_id) for s, doc_id in zip(scores, ids, strict=True) if s > 0 or not positive_only)
    return [doc_id for _, doc_id in ranked[:depth]]


class PartitionSpy:
    """Wraps np.partition and records the length of every array partitioned."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self._partition = np.partition

    def __call__(self, a, kth, *args, **kwargs):
        self.sizes.append(np.asarray(a).shape[0])
        return self._partition(a, kth, *args, **kwargs)


# ----------------------------------------------------------------------------------------------- top_k


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("positive_only", [False, True])
@pytest.mark.parametrize("depth", [1, 10, 100])
def test_top_k_group_bound_path_equals_sorting_every_score_with_ties_at_the_cut_off(
    monkeypatch: pytest.MonkeyPatch, seed: int, positive_only: bool, depth: int
) -> None:
    rng = np.random.default_rng(seed)
    n = 128 * depth + int(rng.integers(0, 500))
    assert n // base._BLOCK >= 2 * depth  # the group-maxima branch of top_k
    ids = random_ids(rng, n)
    # Mostly distinct scores, a quarter of them <= 0, then the depth-th best given to three more passages
    # and the best one to another, so ties straddle the cut-off and sit above it.
    scores = rng.integers(-n // 4, n, size=n).astype(np.float64) / 8
    order = np.argsort(-scores, kind="stable")
    scores[order[-1]] = scores[order[0]]
    order = np.argsort(-scores, kind="stable")
    scores[order[-3:]] = scores[order[depth - 1]]
    spy = PartitionSpy()
    monkeypatch.setattr(np, "partition", spy)
    picked = top_k(scores, doc_id_order(ids), depth, positive_only)
    monkeypatch.undo()
    assert spy.sizes[0] == n // base._BLOCK, "the bound did not come from the group maxima"
    expected = brute_force_top(scores.tolist(), ids, depth, positive_only)
    assert [ids[i] for i in picked] == expected
    cut = scores[picked[-1]]
    assert np.count_nonzero(scores == cut) > np.count_nonzero(scores[picked] == cut), "no tie straddles the cut-off"


@pytest.mark.parametrize("depth", [1, 10])
def test_top_k_group_bound_path_keeps_only_positive_scores_when_few_are_positive(
    monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    """Fewer positive scores than ``depth``: the bound is not positive, and every positive one is returned."""
    rng = np.random.default_rng(7)
    n = 128 * depth + 37
    ids = random_ids(rng, n)
    scores = np.zeros(n)
    positives = rng.choice(n, size=max(depth - 1, 1), replace=False)
    scores[positives] = 0.5  # all tied
    scores[rng.choice(n, size=n // 3, replace=False)] -= 1.0
    spy = PartitionSpy()
    monkeypatch.setattr(np, "partition", spy)
    picked = top_k(scores, doc_id_order(ids), depth, positive_only=True)
    monkeypatch.undo()
    assert spy.sizes[0] == n // base._BLOCK
    assert [ids[i] for i in picked] == brute_force_top(scores.tolist(), ids, depth, positive_only=True)


def test_top_k_group_bound_path_with_the_best_scores_packed_into_one_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """All of the best scores in one group of 64: only one group maximum is high, so the bound must be low."""
    depth, n = 10, 128 * 10 + 64
    rows = n // base._BLOCK
    ids = [f"d{i:05d}" for i in range(n)][::-1]
    scores = np.full(n, 1.0)
    scores[3::rows][:depth] = 9.0  # column 3 of the (64, rows) reshape: one group
    spy = PartitionSpy()
    monkeypatch.setattr(np, "partition", spy)
    picked = top_k(scores, doc_id_order(ids), depth, positive_only=True)
    monkeypatch.undo()
    assert spy.sizes[0] == rows
    assert [ids[i] for i in picked] == brute_force_top(scores.tolist(), ids, depth, positive_only=True)


# ------------------------------------------------------------------------------------------------ BM25


def formula_bm25(docs: list[list[str]], query: list[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """sitegen/rankers/bm25.py's formula (the Lucene idf), one document at a time in plain Python."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    df = Counter(term for doc in docs for term in set(doc))
    scores = []
    for doc in docs:
        tf = Counter(doc)
        score = 0.0
        for term in dict.fromkeys(query):
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(score)
    return scores


@pytest.fixture(scope="module")
def large_collection() -> tuple[list[list[str]], list[str]]:
    """3,000 passages over a small vocabulary: common terms have thousands of postings."""
    rng = np.random.default_rng(19)
    vocabulary = [f"w{i}" for i in range(40)]
    weights = 1.0 / np.arange(1, 41)
    weights /= weights.sum()
    docs = [list(rng.choice(vocabulary, size=int(rng.integers(0, 30)), p=weights)) for _ in range(3000)]
    return docs, random_ids(rng, len(docs))


QUERIES = [["w0", "w1", "w2"], ["w3", "w0", "w0", "unknown"], ["w1", "w5", "w8"], ["w0"]]


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: "-".join(q))
def test_bm25_scatter_path_equals_the_formula_and_ranks_like_sorting(
    monkeypatch: pytest.MonkeyPatch, large_collection: tuple[list[list[str]], list[str]], query: list[str]
) -> None:
    docs, ids = large_collection
    index = build_bm25_index(docs)
    term_ids = {index.vocabulary[t] for t in query if t in index.vocabulary}
    postings = sum(int(index.starts[t + 1] - index.starts[t]) for t in term_ids)
    assert postings >= bm25._POSTINGS_PER_TERM_FOR_BINCOUNT * len(term_ids)
    scattered: list[int] = []
    add_at = np.add.at

    class AddSpy:
        def at(self, array, indices, values):
            scattered.append(len(indices))
            return add_at(array, indices, values)

    monkeypatch.setattr(bm25.np, "add", AddSpy())
    scores = bm25_scores(index, query)
    monkeypatch.undo()
    assert len(scattered) == len(term_ids), "np.add.at was not used once per query term"
    expected = formula_bm25(docs, query)
    np.testing.assert_allclose(scores, expected, rtol=1e-12, atol=1e-12)
    for depth in (10, 100):
        picked = top_k(scores, doc_id_order(ids), depth, positive_only=True)
        assert [ids[i] for i in picked] == brute_force_top(expected, ids, depth, positive_only=True)


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: "-".join(q))
def test_bm25_scatter_and_bincount_paths_give_identical_bits(
    monkeypatch: pytest.MonkeyPatch, large_collection: tuple[list[list[str]], list[str]], query: list[str]
) -> None:
    index = build_bm25_index(large_collection[0])
    scattered = bm25_scores(index, query)
    monkeypatch.setattr(bm25, "_POSTINGS_PER_TERM_FOR_BINCOUNT", 10**9)  # force np.bincount
    summed = bm25_scores(index, query)
    assert scattered.tobytes() == summed.tobytes()


# ----------------------------------------------------------------------------------------------- dense


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize("depth", [1, 10, 100])
@pytest.mark.parametrize("with_mask", [False, True])
def test_dense_top_k_with_blas_pruning_equals_exact_scores_sorted_by_id(
    monkeypatch: pytest.MonkeyPatch, depth: int, with_mask: bool
) -> None:
    rng = np.random.default_rng(depth)
    n, dim = 4000, 64
    doc_vectors = unit_rows(rng, n, dim)
    query = unit_rows(rng, 1, dim)[0]
    # Exact duplicates (ties that must go to the smaller id) and near-duplicates one float32 step apart,
    # whose exact scores differ by less than BLAS's rounding: both straddle the cut-off.
    best = np.argsort(-(doc_vectors.astype(np.float64) @ query.astype(np.float64)))
    for offset, source in enumerate(best[depth - 1 : depth + 3]):
        doc_vectors[-1 - 2 * offset] = doc_vectors[source]
        nudged = doc_vectors[source].copy()
        nudged[offset] = np.nextafter(nudged[offset], np.float32(np.inf))
        doc_vectors[-2 - 2 * offset] = nudged
    ids = random_ids(rng, n)
    allowed = rng.random(n) < 0.7 if with_mask else None
    scored_rows: list[int] = []

    def spy(vectors: np.ndarray, q: np.ndarray) -> np.ndarray:
        scored_rows.append(vectors.shape[0])
        return fixed_order_dot(vectors, q)

    monkeypatch.setattr(dense, "fixed_order_dot", spy)
    picked, scores = dense_top_k(doc_vectors, query, doc_id_order(ids), depth, allowed)
    monkeypatch.undo()
    usable = n if allowed is None else int(allowed.sum())
    assert scored_rows and scored_rows[0] < usable, "BLAS did not narrow the candidates"
    exact = fixed_order_dot(doc_vectors, query).tolist()
    if allowed is not None:
        exact = [s if ok else -math.inf for s, ok in zip(exact, allowed, strict=True)]
    expected = brute_force_top(exact, ids, depth, positive_only=False)
    assert [ids[i] for i in picked] == expected
    by_id = dict(zip(ids, exact, strict=True))
    assert scores.tolist() == [by_id[doc_id] for doc_id in expected]


@pytest.mark.parametrize("seed", range(3))
def test_the_dense_ranker_s_batched_blas_scores_rank_as_one_product_per_query(seed: int) -> None:
    """The batch's BLAS scores only narrow the candidates, so the hits are the per-query path's, bit for bit."""
    rng = np.random.default_rng(seed)
    docs = rng.standard_normal((400, 16)).astype(np.float32)
    docs[::7] = docs[0]  # exact ties, settled by document id
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = docs[rng.integers(0, 400, dense.QUERY_BATCH + 9)] + np.float32(0.01)
    doc_ids = tuple(f"d{i:03d}" for i in rng.permutation(400))
    query_ids = tuple(f"q{i}" for i in range(len(queries)))
    corpus = make_corpus([(d, "", "x") for d in doc_ids], [(q, "x") for q in query_ids], {})
    vectors = CorpusEmbeddings("m", None, doc_ids, docs, query_ids, queries)
    run = dense.DenseRanker().rank(RankInputs(corpus=corpus, embeddings=vectors), 10)
    key = doc_id_order(doc_ids)
    for row, qid in enumerate(query_ids):
        best, scores = dense.dense_top_k(docs, queries[row], key, 10)
        assert [(h.doc_id, h.score) for h in run.hits[qid]] == [
            (doc_ids[i], float(s)) for i, s in zip(best, scores, strict=True)
        ]
