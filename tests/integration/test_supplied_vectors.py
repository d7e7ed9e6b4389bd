"""Vectors a corpus brings in ``embeddings/`` (sitegen.inputs.vectors): used by dense and the fusions without
embedding anything, recorded and checked by the audit, refused with a clear error when they do not fit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sitegen import audit
from sitegen.cli import cli
from sitegen.errors import CorpusError
from sitegen.inputs.corpus import load_corpus
from sitegen.inputs.freeze import check_frozen, freeze_corpus
from sitegen.inputs.vectors import read_supplied_vectors, unit_rows
from sitegen.publish.evidence import read_run
from tests.helpers import DENSE_RANKERS as RANKERS
from tests.helpers import (
    FROZEN_ON,
    TINY_DOCS,
    TINY_QUERIES,
    FakeEmbeddingModel,
    build,
    copy_site,
    evidence_failures,
    rehash_manifest,
    write_corpus,
)

DIM = 16
PROVENANCE = "hosted embedding API 'acme-embed-2', called 2026-11-30, dimensions 16"


def _random_unit(rows: int, seed: int) -> np.ndarray:
    return unit_rows(np.random.default_rng(seed).standard_normal((rows, DIM)).astype(np.float32))


def write_vectors(
    folder: Path,
    doc_ids: list[str] | None = None,
    query_ids: list[str] | None = None,
    docs: np.ndarray | None = None,
    queries: np.ndarray | None = None,
    **index: object,
) -> dict:
    """A supplied ``embeddings/`` folder, rows in reverse corpus order (so the build must reorder them)."""
    doc_ids = doc_ids if doc_ids is not None else [d["_id"] for d in TINY_DOCS][::-1]
    query_ids = query_ids if query_ids is not None else [q["_id"] for q in TINY_QUERIES][::-1]
    docs = docs if docs is not None else _random_unit(len(doc_ids), 1)
    queries = queries if queries is not None else _random_unit(len(query_ids), 2)
    target = folder / "embeddings"
    target.mkdir(parents=True, exist_ok=True)
    np.save(target / "passages.npy", docs, allow_pickle=False)
    np.save(target / "queries.npy", queries, allow_pickle=False)
    record = {
        "model": "acme-embed-2",
        "provenance": PROVENANCE,
        "dimensions": DIM,
        "dtype": "float32",
        "normalised": True,
        "passages": doc_ids,
        "queries": query_ids,
    } | index
    (target / "index.json").write_text(json.dumps(record), encoding="utf-8")
    return record


@pytest.fixture(scope="module")
def supplied_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("supplied")
    corpus = write_corpus(root / "corpora" / "tiny")
    write_vectors(corpus)
    model = FakeEmbeddingModel(dim=DIM)
    result = build(root / "corpora", root / "site", model=model, rankers=RANKERS)
    assert model.encoded == []  # nothing embedded
    assert result.audit_verdict == "pass"
    return root / "site"


def test_dense_and_fusion_rank_by_the_supplied_vectors_and_the_audit_passes(supplied_site: Path) -> None:
    base = supplied_site / "evidence" / "tiny"
    corpus = load_corpus(supplied_site.parent / "corpora" / "tiny")
    supplied = read_supplied_vectors(corpus)
    assert supplied is not None
    stored = np.load(base / "embeddings" / "passages.npy")
    # copied in corpus order (the supplied file holds them reversed)
    assert np.array_equal(stored, np.load(supplied_site.parent / "corpora/tiny/embeddings/passages.npy")[::-1])
    dense = read_run(base / "runs" / "dense.json")
    for row, query in enumerate(supplied.query_ids):
        best = supplied.doc_ids[int(np.argmax(supplied.doc_vectors @ supplied.query_vectors[row]))]
        assert dense["queries"][query][0]["doc_id"] == best
    assert (base / "runs" / "rrf-dense-bm25.json").is_file()
    report = audit.run_audit(supplied_site, echo=lambda _: None)
    assert report["verdict"] == "pass"


def test_the_evidence_and_pages_state_where_the_vectors_came_from(supplied_site: Path) -> None:
    index = json.loads((supplied_site / "evidence/tiny/embeddings/index.json").read_text())
    corpus_dir = supplied_site.parent / "corpora" / "tiny"
    assert index["model"] == "acme-embed-2" and index["config_sha256"] is None
    assert index["supplied"]["provenance"] == PROVENANCE
    assert index["supplied"]["normalised_by_sitegen"] is False
    assert set(index["supplied"]["files_sha256"]) == {
        "embeddings/index.json",
        "embeddings/passages.npy",
        "embeddings/queries.npy",
    }
    from sitegen.hashing import sha256_file

    assert index["supplied"]["files_sha256"]["embeddings/queries.npy"] == sha256_file(
        corpus_dir / "embeddings" / "queries.npy"
    )
    manifest = json.loads((supplied_site / "evidence/manifest.json").read_text())
    assert manifest["model"] is None  # the packaged model made nothing here
    for page in ("corpora/tiny/index.html", "reproducibility.html"):
        text = (supplied_site / page).read_text(encoding="utf-8")
        assert "supplied by the corpus" in text and "acme-embed-2" in text and PROVENANCE in text.replace("&#39;", "'")


def test_supplied_vectors_are_pinned_by_their_files_not_by_a_hash_per_text(
    supplied_site: Path, dense_site: Path
) -> None:
    # text hashes are what a later build reuses packaged-model rows by; supplied rows are never reused from a
    # bundle (config_sha256 null), so their index carries the supplied files' sha256 instead of 64 hex per row
    index = json.loads((supplied_site / "evidence/tiny/embeddings/index.json").read_text())
    assert "text_sha256" not in index and index["supplied"]["files_sha256"]
    assert json.loads((dense_site / "audit.json").read_text())["verdict"] == "pass"  # the same corpus, embedded
    index = json.loads((dense_site / "evidence/tiny/embeddings/index.json").read_text())
    assert "supplied" not in index and len(index["text_sha256"]["passages"]) == len(index["passages"])


def test_a_tampered_supplied_vector_in_the_evidence_fails_the_audit(supplied_site: Path, tmp_path: Path) -> None:
    site = copy_site(supplied_site, tmp_path / "site")
    path = site / "evidence" / "tiny" / "embeddings" / "passages.npy"
    index = json.loads((site / "evidence/tiny/embeddings/index.json").read_text())
    queries = np.load(site / "evidence/tiny/embeddings/queries.npy")
    top = read_run(site / "evidence/tiny/runs/dense.json")["queries"]["q1"][0]["doc_id"]
    vectors = np.load(path)
    vectors[index["passages"].index(top)] = -queries[index["queries"].index("q1")]  # still unit length
    np.save(path, vectors, allow_pickle=False)
    rehash_manifest(site)
    report = audit.run_audit(site, echo=lambda _: None)
    assert report["verdict"] == "fail"
    failed = evidence_failures(report)
    assert any("runs/dense.json: query q1" in line for lines in failed.values() for line in lines), failed


def _refused(tmp_path: Path, expected: str, **kwargs: object) -> str:
    """Build a tiny corpus with the given supplied vectors: the error names the file and ``expected``, the
    output folder stays as it was, and ``sitegen validate`` reports the same problem and exits 1."""
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    write_vectors(corpus, **kwargs)
    out = tmp_path / "site"
    with pytest.raises(CorpusError) as caught:
        build(tmp_path / "corpora", out, model=FakeEmbeddingModel(dim=DIM), rankers=RANKERS)
    message = str(caught.value)
    assert "embeddings" in str(caught.value.path) and expected in message, message
    assert not out.exists()
    result = CliRunner().invoke(cli, ["validate", str(corpus)])
    assert result.exit_code == 1 and expected in result.output, result.output
    return message


def test_vectors_missing_a_passage_are_refused_naming_it(tmp_path: Path) -> None:
    message = _refused(tmp_path, "have no vector", doc_ids=["d1", "d2", "d3"], docs=_random_unit(3, 1))
    assert "'d4'" in message and "index.json" in message


def test_vectors_of_unknown_questions_are_refused_naming_them(tmp_path: Path) -> None:
    message = _refused(tmp_path, "are not queries of the corpus", query_ids=["q1", "q2", "q3", "q9"])
    assert "'q9'" in message and "'q4'" in message


def test_a_matrix_whose_shape_differs_from_the_index_is_refused(tmp_path: Path) -> None:
    message = _refused(tmp_path, "shape (4, 15)", docs=_random_unit(4, 1)[:, :15].copy())
    assert "passages.npy" in message


def test_a_matrix_with_more_rows_than_ids_is_refused(tmp_path: Path) -> None:
    _refused(tmp_path, "shape (5, 16)", docs=_random_unit(5, 1))


def test_float64_vectors_are_refused(tmp_path: Path) -> None:
    _refused(tmp_path, "expected float32", queries=_random_unit(4, 2).astype(np.float64))


def test_vectors_with_nan_are_refused(tmp_path: Path) -> None:
    docs = _random_unit(4, 1)
    docs[1, 3] = np.nan
    _refused(tmp_path, "NaN or infinity", docs=docs)


def test_vectors_declared_normalised_but_not_of_unit_length_are_refused(tmp_path: Path) -> None:
    message = _refused(tmp_path, "not of unit length", docs=_random_unit(4, 1) * np.float32(1.01))
    assert '"normalised": false' in message


def test_an_index_without_weights_or_provenance_is_refused(tmp_path: Path) -> None:
    _refused(tmp_path, '"provenance"', provenance=None)


def test_unnormalised_vectors_are_scaled_to_unit_length_and_the_evidence_says_so(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    write_vectors(corpus, docs=_random_unit(4, 1) * np.float32(3.0), normalised=False)
    result = build(tmp_path / "corpora", tmp_path / "site", model=FakeEmbeddingModel(dim=DIM), rankers=RANKERS)
    assert result.audit_verdict == "pass"
    index = json.loads((tmp_path / "site/evidence/tiny/embeddings/index.json").read_text())
    assert index["supplied"]["normalised_by_sitegen"] is True
    stored = np.load(tmp_path / "site/evidence/tiny/embeddings/passages.npy").astype(np.float64)
    assert np.allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-6)


def test_a_chunked_corpus_with_supplied_vectors_is_refused(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    write_vectors(corpus)
    chunking = {"default": {"method": "paragraph", "size": 200, "overlap": 0}}
    (corpus / "sitegen.json").write_text(json.dumps({"chunking": chunking}))
    with pytest.raises(CorpusError, match="supplied vectors cover whole passages"):
        read_supplied_vectors(load_corpus(corpus))


def test_supplied_vectors_are_frozen_inputs(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    write_vectors(corpus)
    _, frozen = freeze_corpus(corpus, FROZEN_ON)
    assert "embeddings/passages.npy" in frozen.files
    write_vectors(corpus, queries=_random_unit(4, 3))
    with pytest.raises(CorpusError, match=r"embeddings/queries\.npy changed"):
        check_frozen([load_corpus(corpus)], allow_edited=False)


def test_reembed_says_supplied_vectors_cannot_be_rederived(supplied_site: Path) -> None:
    from sitegen.verify.reembed import reembed_bundle

    (result,) = reembed_bundle(supplied_site, model=FakeEmbeddingModel(dim=DIM))
    assert result.not_checked is not None and result.ok
    assert "supplied by the corpus" in result.not_checked and "acme-embed-2" in result.not_checked
    assert PROVENANCE in result.not_checked and "all-MiniLM-L6-v2" in result.not_checked


def test_supplied_vectors_naming_the_packaged_model_and_weights_are_reembedded(tmp_path: Path) -> None:
    from sitegen.embedding.model import MODEL_NAME
    from sitegen.verify.reembed import reembed_bundle

    corpus = write_corpus(tmp_path / "corpora" / "tiny")
    model = FakeEmbeddingModel(dim=DIM)
    write_vectors(corpus, model=MODEL_NAME, weights_sha256=model.weights_sha256, provenance=None)
    build(tmp_path / "corpora", tmp_path / "site", model=model, rankers=RANKERS)
    (result,) = reembed_bundle(tmp_path / "site", model=model)
    assert result.not_checked is None and result.vectors == 8
    assert not result.ok  # random vectors are not what the (fake) model gives for these texts


@pytest.mark.slow
def test_device_cuda_without_a_gpu_is_a_clear_error(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    write_corpus(tmp_path / "corpora" / "tiny")
    args = ["build", "--corpora", str(tmp_path / "corpora"), "--out", str(tmp_path / "site"), "--device", "cuda"]
    result = CliRunner().invoke(cli, [*args, "--ranker", "dense", "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 1
    assert "--device cuda: no CUDA device is available here" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "site").exists()
