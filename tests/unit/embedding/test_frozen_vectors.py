"""The embedding cache keeps checksummed rows per model configuration, and dense scores are the same on any CPU."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from sitegen.embedding import cache as embeddings_module
from sitegen.embedding.cache import Embedder, EmbeddingCache, cache_key
from sitegen.embedding.vectors import text_sha256
from sitegen.rankers.base import doc_id_order
from sitegen.rankers.dense import dense_top_k, fixed_order_dot
from tests.helpers import FakeEmbeddingModel

TEXTS = ["refund a card payment", "payouts reach the bank", "error E4012 card expired"]


def _cache(tmp_path: Path, model: FakeEmbeddingModel) -> EmbeddingCache:
    return EmbeddingCache(tmp_path / "cache", cache_key(model.config), model.dim)


# ----------------------------------------------------------------------------- the cache


def test_cache_rows_with_swapped_vectors_fail_their_checksums_and_are_embedded_again(tmp_path: Path) -> None:
    model = FakeEmbeddingModel()
    cache = _cache(tmp_path, model)
    clean, _ = Embedder(model, cache).texts(TEXTS)
    keys = [text_sha256(t) for t in TEXTS[:2]]
    with sqlite3.connect(cache.path) as db:  # swap two rows' vectors: each still a unit vector
        blobs = {k: db.execute("select vector from vectors where text_sha256 = ?", (k,)).fetchone()[0] for k in keys}
        db.execute("update vectors set vector = ? where text_sha256 = ?", (blobs[keys[1]], keys[0]))
        db.execute("update vectors set vector = ? where text_sha256 = ?", (blobs[keys[0]], keys[1]))
    model.encoded.clear()
    again, stats = Embedder(model, cache).texts(TEXTS)
    assert stats.rejected == 2 and stats.embedded == 2 and stats.cached == 1
    assert model.encoded == TEXTS[:2]
    assert np.array_equal(again, clean)
    _, healed = Embedder(model, cache).texts(TEXTS)
    assert healed.rejected == 0 and healed.embedded == 0


@pytest.mark.parametrize("bad", [np.inf, np.nan, 2.0])
def test_cache_rows_that_are_not_finite_unit_vectors_are_dropped(tmp_path: Path, bad: float) -> None:
    model = FakeEmbeddingModel()
    cache = _cache(tmp_path, model)
    clean, _ = Embedder(model, cache).texts(TEXTS)
    corrupt = clean[1].copy()
    corrupt[3] = bad
    cache.put_many([(text_sha256(TEXTS[1]), corrupt)])  # a valid checksum over a bad vector
    again, stats = Embedder(model, cache).texts(TEXTS)
    assert stats.rejected == 1 and stats.embedded == 1
    assert np.array_equal(again, clean)


def test_cache_key_changes_with_the_model_configuration_and_library_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    model = FakeEmbeddingModel()
    base = cache_key(model.config)
    assert cache_key(FakeEmbeddingModel(dim=8).config) != base
    monkeypatch.setattr(embeddings_module, "_library_version", lambda name: "9.9" if name == "torch" else "1.0")
    assert cache_key(model.config) != base


def test_frozen_vectors_come_first_and_reembed_ignores_frozen_and_cached(tmp_path: Path) -> None:
    model = FakeEmbeddingModel()
    cache = _cache(tmp_path, model)
    Embedder(model, cache).texts(TEXTS)
    frozen_vector = np.zeros(model.dim, dtype=np.float32)
    frozen_vector[7] = 1.0
    frozen = {text_sha256(TEXTS[0]): frozen_vector}
    model.encoded.clear()
    matrix, stats = Embedder(model, cache, frozen=frozen).texts(TEXTS)
    assert (stats.frozen, stats.cached, stats.embedded) == (1, 2, 0) and model.encoded == []
    assert np.array_equal(matrix[0], frozen_vector)
    matrix, stats = Embedder(model, cache, frozen=frozen, reembed=True).texts(TEXTS)
    assert (stats.frozen, stats.cached, stats.embedded) == (0, 0, 3) and model.encoded == TEXTS
    assert not np.array_equal(matrix[0], frozen_vector)


# ----------------------------------------------------------------------------- fixed-order scores


def _tree_sum(values: list[float]) -> float:
    """The documented order, in plain Python floats: halve the zero-padded list until one value is left."""
    size = 1
    while size < len(values):
        size *= 2
    values = values + [0.0] * (size - len(values))
    while len(values) > 1:
        half = len(values) // 2
        values = [values[i] + values[i + half] for i in range(half)]
    return values[0]


def test_fixed_order_dot_is_the_documented_pairwise_tree_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    docs = rng.standard_normal((5, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    got = fixed_order_dot(docs, query)
    for row in range(5):
        products = [float(a) * float(b) for a, b in zip(docs[row].tolist(), query.tolist(), strict=True)]
        assert got[row] == _tree_sum(products)  # exact: the same additions in the same order
        assert math.isclose(got[row], math.fsum(products), rel_tol=0, abs_tol=1e-12)


def test_a_passage_score_does_not_depend_on_which_other_passages_are_scored_with_it() -> None:
    rng = np.random.default_rng(11)
    docs = rng.standard_normal((50, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    alone = np.array([fixed_order_dot(docs[i : i + 1], query)[0] for i in range(50)])
    assert np.array_equal(fixed_order_dot(docs, query), alone)
    order = rng.permutation(50)
    assert np.array_equal(fixed_order_dot(docs[order], query), alone[order])


def test_dense_top_k_equals_brute_force_over_exact_scores_with_ties_and_a_filter() -> None:
    rng = np.random.default_rng(3)
    docs = rng.standard_normal((400, 384)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    docs[100:110] = docs[5]  # ten exact ties with passage 5
    ids = [f"d{i:03d}" for i in rng.permutation(400)]
    id_key = doc_id_order(ids)
    allowed = rng.random(400) < 0.7
    for q in range(20):
        query = docs[5] if q == 0 else rng.standard_normal(384).astype(np.float32)
        query = (query / np.linalg.norm(query)).astype(np.float32)
        for mask in (None, allowed):
            exact = fixed_order_dot(docs, query)
            pool = range(400) if mask is None else np.flatnonzero(mask)
            want = sorted(pool, key=lambda i: (-exact[i], ids[i]))[:30]
            got, scores = dense_top_k(docs, query, id_key, 30, mask)
            assert got.tolist() == want
            assert scores.tolist() == [exact[i] for i in want]
