"""Vectors are frozen inputs of a build: reused from a bundle (so another CPU gives the same bytes), embedded again
only where a text changed or --reembed asks, refused where a bundle's vectors do not match its manifest, and a
corrupted cache is caught."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from sitegen.embedding.cache import EmbeddingCache, cache_key
from sitegen.errors import BundleError, SitegenError
from sitegen.publish.bundle import stored_vectors
from tests.helpers import DENSE_RANKERS as RANKERS
from tests.helpers import FakeEmbeddingModel, SharedBuild, build, copy_site, file_tree, rehash_manifest


def test_a_rebuild_on_another_cpu_reuses_the_bundle_vectors_and_gives_the_same_bytes(
    dense_site: Path, dense_build: SharedBuild, tmp_path: Path
) -> None:
    other_cpu = FakeEmbeddingModel(noise=3e-7)
    result = build(dense_build.corpora, tmp_path / "again", model=other_cpu, rankers=RANKERS, vectors_from=dense_site)
    assert other_cpu.encoded == [] and result.embed_stats.frozen == 8  # 4 passages + 4 questions
    assert file_tree(dense_site) == file_tree(tmp_path / "again")


def test_without_frozen_vectors_another_cpu_changes_the_bundle(
    dense_site: Path, dense_build: SharedBuild, tmp_path: Path
) -> None:
    """The control for the test above: the noise is large enough to show in the bytes."""
    build(dense_build.corpora, tmp_path / "again", model=FakeEmbeddingModel(noise=3e-7), rankers=RANKERS)
    assert file_tree(dense_site) != file_tree(tmp_path / "again")


def test_only_new_or_changed_texts_are_embedded_when_a_passage_changes(
    dense_site: Path, dense_build: SharedBuild, tmp_path: Path
) -> None:
    corpora = copy_site(dense_build.corpora, tmp_path / "corpora")
    site = copy_site(dense_site, tmp_path / "site")
    corpus = corpora / "tiny" / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("in full or in part", "in full"), encoding="utf-8")
    model = FakeEmbeddingModel()
    result = build(corpora, site, cache=tmp_path / "cache-b", model=model, rankers=RANKERS)
    assert model.encoded == ["Refunds\nHow to refund a card payment in full."]
    assert result.embed_stats.frozen == 7


def test_reembed_reports_the_drift_and_that_rankings_and_metrics_are_unchanged(
    dense_site: Path, dense_build: SharedBuild, tmp_path: Path
) -> None:
    other_cpu = FakeEmbeddingModel(noise=3e-7)
    options = {"vectors_from": dense_site, "reembed": True, "rankers": RANKERS}
    result = build(dense_build.corpora, tmp_path / "out", model=other_cpu, **options)
    drift = result.drift
    assert len(other_cpu.encoded) == 8 and drift is not None and drift.compared == 8
    assert 2e-7 < drift.max_abs_diff < 4e-7
    assert drift.rankings_identical is True and drift.metrics_identical is True
    assert drift.comparison.startswith("identical rankings and metrics")


def test_vectors_of_another_model_configuration_are_not_reused(dense_site: Path) -> None:
    stored = stored_vectors(dense_site, "0" * 64, 384)
    assert stored.vectors == {} and stored.skipped == 8
    assert len(stored_vectors(dense_site, FakeEmbeddingModel().config.sha256(), 384).vectors) == 8


def test_a_bundle_whose_vectors_do_not_match_its_manifest_is_refused(
    dense_site: Path, dense_build: SharedBuild, tmp_path: Path
) -> None:
    site = copy_site(dense_site, tmp_path / "site")
    npy = site / "evidence" / "tiny" / "embeddings" / "passages.npy"
    matrix = np.load(npy)
    np.save(npy, matrix[::-1])
    with pytest.raises(BundleError, match=r"passages\.npy: sha256 does not match"):
        stored_vectors(site, FakeEmbeddingModel().config.sha256(), 384)
    before = file_tree(site)
    with pytest.raises(SitegenError, match="the stored vectors cannot be trusted"):
        build(dense_build.corpora, site, rankers=RANKERS)
    assert file_tree(site) == before


def test_stored_vectors_of_the_wrong_dtype_are_refused_even_with_a_matching_manifest(
    dense_site: Path, tmp_path: Path
) -> None:
    site = copy_site(dense_site, tmp_path / "site")
    npy = site / "evidence" / "tiny" / "embeddings" / "queries.npy"
    np.save(npy, np.load(npy).astype(np.float64))
    rehash_manifest(site)
    with pytest.raises(BundleError, match=r"queries\.npy: holds float64 rows"):
        stored_vectors(site, FakeEmbeddingModel().config.sha256(), 384)


def test_a_corrupted_cache_gives_the_same_evidence_as_a_clean_one_plus_a_warning(
    dense_site: Path, dense_build: SharedBuild, tmp_path: Path
) -> None:
    """Swapped rows and an infinity in the cache: both rows are dropped, embedded again, and the build says so."""
    model = FakeEmbeddingModel()
    cache = EmbeddingCache(copy_site(dense_build.cache, tmp_path / "cache"), cache_key(model.config), model.dim)
    with sqlite3.connect(cache.path) as db:
        rows = db.execute("select text_sha256, vector from vectors order by text_sha256 limit 3").fetchall()
        (key_a, blob_a), (key_b, blob_b), (key_c, blob_c) = rows
        db.execute("update vectors set vector = ? where text_sha256 = ?", (blob_b, key_a))
        db.execute("update vectors set vector = ? where text_sha256 = ?", (blob_a, key_b))
    broken = np.frombuffer(blob_c, dtype="<f4").copy()
    broken[0] = np.inf
    cache.put_many([(key_c, broken)])  # a valid checksum over an infinite component
    cache.close()
    messages: list[str] = []
    result = build(dense_build.corpora, tmp_path / "again", cache=tmp_path / "cache", log=messages, rankers=RANKERS)
    assert result.embed_stats.rejected == 3 and result.embed_stats.embedded == 3
    assert any(m.startswith("warning: tiny: 3 cache rows failed") for m in messages), messages
    assert file_tree(dense_site / "evidence") == file_tree(tmp_path / "again" / "evidence")
