"""A build with the packaged model (all-MiniLM-L6-v2): a cold build embeds every text once, a warm rebuild embeds
nothing and gives the same bytes, the manifest records the weights' sha256, and a vector does not depend on the
texts embedded with it. The model is slow to load and embeds one text at a time, so the tiny corpus proves it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitegen.inputs.corpus import load_corpus, passage_text
from tests.helpers import DENSE_RANKERS, REPO, run_cli, write_corpus

# Slow: the packaged model is loaded (torch, sentence-transformers) and embeds one text at a time
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, str]:
    """A cold build and a warm rebuild with the real packaged model, sharing one fresh cache."""
    root = tmp_path_factory.mktemp("packaged-model")
    corpora = write_corpus(root / "corpora" / "tiny").parent
    outputs = []
    for name in ("cold", "warm"):
        args = ["build", "--corpora", corpora, "--out", root / name, "--cache-dir", root / "cache"]
        result = run_cli(*args, *(a for r in DENSE_RANKERS for a in ("--ranker", r)))  # the rankers it feeds
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    return root / "cold", root / "warm", outputs[0], outputs[1]


def test_a_cold_build_embeds_every_text_once(two_builds) -> None:
    _, _, output, _ = two_builds
    assert "0 from the cache, 8 texts embedded" in output  # four passages and four questions


def test_rebuild_embeds_nothing_and_gives_identical_evidence(two_builds) -> None:
    cold, warm, _, output = two_builds
    assert "embedded nothing: 8 vectors from the cache" in output and "embedded 0" not in output
    files = sorted(p.relative_to(cold) for p in cold.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(warm) for p in warm.rglob("*") if p.is_file())
    for rel in files:
        assert (cold / rel).read_bytes() == (warm / rel).read_bytes(), rel


def test_model_weights_sha256_is_recorded(two_builds) -> None:
    from sitegen.embedding.model import model_folder
    from sitegen.hashing import sha256_file

    manifest = json.loads((two_builds[0] / "evidence" / "manifest.json").read_text())
    assert manifest["model"]["weights_sha256"] == sha256_file(model_folder() / "model.safetensors")


def test_a_vector_does_not_depend_on_the_texts_embedded_with_it(tmp_path: Path) -> None:
    """An incremental rebuild must give the same bytes as a cold one: passages of different lengths, embedded
    together and one alone."""
    from sitegen.embedding.cache import Embedder, EmbeddingCache, cache_key
    from sitegen.embedding.model import EmbeddingModel

    corpus = load_corpus(REPO / "corpora" / "payments-support")
    texts = [passage_text(d) for d in corpus.documents[:6]]
    assert len({len(t) for t in texts}) > 1
    model = EmbeddingModel()
    together, _ = Embedder(model, EmbeddingCache(tmp_path / "a", cache_key(model.config))).texts(texts)
    alone, _ = Embedder(model, EmbeddingCache(tmp_path / "b", cache_key(model.config))).texts(texts[5:6])
    assert together[5].tobytes() == alone[0].tobytes()
