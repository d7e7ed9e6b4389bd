"""The build writes a complete, checksummed, byte-reproducible bundle, and never half-replaces a site."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import FakeEmbeddingModel, assert_metrics_match_trec_eval, write_corpus

from sitegen import build as build_module
from sitegen.build import BuildOptions, build_site
from sitegen.cli import cli
from sitegen.errors import SitegenError
from sitegen.rankers import DEFAULT_RANKERS


def _build(corpora: Path, out: Path, model: FakeEmbeddingModel, cache: Path, **kwargs) -> None:
    build_site(BuildOptions(corpora_dir=corpora, out_dir=out, cache_dir=cache, **kwargs), model=model)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def built(tmp_path: Path, tiny_corpus: Path, fake_model: FakeEmbeddingModel) -> Path:
    _build(tiny_corpus.parent, tmp_path / "site", fake_model, tmp_path / "cache")
    return tmp_path / "site"


def test_build_writes_a_run_per_ranker_with_ranked_hits(built: Path) -> None:
    runs = built / "evidence" / "tiny" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == sorted(
        [f"{r}.json" for r in DEFAULT_RANKERS] + [f"{r}.trec" for r in DEFAULT_RANKERS]
    )
    fused = json.loads((runs / "rrf-dense-bm25.json").read_text())
    assert fused["ranker"] == "rrf-dense-bm25" and fused["params"]["k"] == 60
    assert fused["params"]["candidates_per_list"] == 20
    assert set(fused["queries"]) == {"q1", "q2", "q3", "q4"}
    first = fused["queries"]["q2"][0]
    assert set(first) == {"doc_id", "rank", "score", "components"}
    assert set(first["components"]) == {"dense", "bm25"}
    bm25 = json.loads((runs / "bm25.json").read_text())
    assert bm25["params"]["k1"] == 1.2 and bm25["params"]["b"] == 0.75
    assert [h["rank"] for h in bm25["queries"]["q1"]] == list(range(1, len(bm25["queries"]["q1"]) + 1))


def test_metrics_json_equals_trec_eval_on_the_trec_files(built: Path) -> None:
    assert assert_metrics_match_trec_eval(built, "tiny") > 0


def test_metrics_json_has_overall_by_kind_and_per_query(built: Path) -> None:
    metrics = json.loads((built / "evidence" / "tiny" / "metrics.json").read_text())
    assert set(metrics) == set(DEFAULT_RANKERS)
    bm25 = metrics["bm25"]
    assert set(bm25) == {"overall", "by_kind", "per_query"}
    assert set(bm25["by_kind"]) == {"paraphrase", "exact-code"}
    assert set(bm25["per_query"]) == {"q1", "q2", "q3"}
    assert {"hit@1", "recall@5", "precision@5", "mrr@10", "ndcg@10", "ndcg@20"} <= set(bm25["overall"])


def test_manifest_lists_every_evidence_file_with_its_sha256(built: Path) -> None:
    manifest = json.loads((built / "evidence" / "manifest.json").read_text())
    on_disk = {
        p.relative_to(built).as_posix()
        for p in (built / "evidence").rglob("*")
        if p.is_file() and p.name != "manifest.json"
    }
    assert set(manifest["files"]) == on_disk
    for path, entry in manifest["files"].items():
        assert hashlib.sha256((built / path).read_bytes()).hexdigest() == entry["sha256"]
    assert manifest["model"]["weights_sha256"] == FakeEmbeddingModel.weights_sha256
    assert manifest["libraries"]["numpy"] == np.__version__
    assert "evidence/tiny/inputs/corpus.jsonl" in manifest["files"]


def test_input_copies_and_embeddings_are_in_the_bundle(built: Path, tiny_corpus: Path) -> None:
    inputs = built / "evidence" / "tiny" / "inputs"
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "README.md"):
        assert (inputs / name).read_bytes() == (tiny_corpus / name).read_bytes()
    index = json.loads((built / "evidence" / "tiny" / "embeddings" / "index.json").read_text())
    vectors = np.load(built / "evidence" / "tiny" / "embeddings" / "passages.npy")
    assert vectors.dtype == np.float32 and vectors.shape == (4, 384)
    assert index["passages"] == ["d1", "d2", "d3", "d4"]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_second_build_embeds_nothing_and_is_byte_identical(
    tmp_path: Path, tiny_corpus: Path, fake_model: FakeEmbeddingModel
) -> None:
    _build(tiny_corpus.parent, tmp_path / "one", fake_model, tmp_path / "cache")
    assert len(fake_model.encoded) == 8
    _build(tiny_corpus.parent, tmp_path / "two", fake_model, tmp_path / "cache")
    assert len(fake_model.encoded) == 8
    assert _tree(tmp_path / "one") == _tree(tmp_path / "two")


def test_changing_one_passage_re_embeds_only_that_passage(
    tmp_path: Path, tiny_corpus: Path, fake_model: FakeEmbeddingModel
) -> None:
    _build(tiny_corpus.parent, tmp_path / "site", fake_model, tmp_path / "cache")
    lines = (tiny_corpus / "corpus.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace("two days", "three days")
    (tiny_corpus / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    fake_model.encoded.clear()
    _build(tiny_corpus.parent, tmp_path / "site", fake_model, tmp_path / "cache")
    assert fake_model.encoded == ["Payouts\nPayouts arrive in the bank account three days later."]


def test_failed_build_leaves_the_existing_site_untouched(
    tmp_path: Path, tiny_corpus: Path, fake_model: FakeEmbeddingModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    _build(tiny_corpus.parent, out, fake_model, tmp_path / "cache")
    before = _tree(out)

    def explode(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("sitegen.build.write_corpus_evidence", explode)
    with pytest.raises(RuntimeError):
        _build(tiny_corpus.parent, out, fake_model, tmp_path / "cache")
    assert _tree(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site")] == []


def test_ranker_failure_names_corpus_and_ranker(
    tmp_path: Path, tiny_corpus: Path, fake_model: FakeEmbeddingModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self, inputs, depth):
        raise ZeroDivisionError("oops")

    monkeypatch.setattr("sitegen.rankers.bm25.BM25Ranker.rank", broken)
    with pytest.raises(SitegenError, match="tiny: ranker bm25 failed"):
        _build(tiny_corpus.parent, tmp_path / "site", fake_model, tmp_path / "cache")
    assert not (tmp_path / "site").exists()


def test_cli_build_with_bad_corpus_exits_non_zero_and_keeps_old_output(tmp_path: Path, tiny_corpus: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("previous report")
    write_corpus(tiny_corpus.parent / "broken", qrels=[("q1", "ghost", 1)])
    result = CliRunner().invoke(cli, ["build", "--corpora", str(tiny_corpus.parent), "--out", str(out)])
    assert result.exit_code == 1
    assert "build failed:" in result.output and 'test.tsv:2: unknown corpus id "ghost"' in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert (out / "index.html").read_text() == "previous report"


def test_only_builds_the_named_corpus_and_rejects_unknown_names(
    tmp_path: Path, tiny_corpus: Path, fake_model: FakeEmbeddingModel
) -> None:
    write_corpus(tiny_corpus.parent / "other")
    _build(tiny_corpus.parent, tmp_path / "site", fake_model, tmp_path / "cache", only=("other",))
    assert sorted(p.name for p in (tmp_path / "site" / "evidence").iterdir()) == ["manifest.json", "other"]
    with pytest.raises(SitegenError, match="no corpus named nope; found: other, tiny"):
        _build(tiny_corpus.parent, tmp_path / "site", fake_model, tmp_path / "cache", only=("nope",))


def test_index_page_shows_the_overall_table_and_links_to_its_evidence(built: Path) -> None:
    page = (built / "index.html").read_text()
    metrics = json.loads((built / "evidence" / "tiny" / "metrics.json").read_text())
    assert 'href="evidence/tiny/metrics.json"' in page
    assert 'href="corpora/tiny/index.html"' in page
    assert f"{metrics['bm25']['overall']['mrr@10']:.3f}" in page
    corpus_page = (built / "corpora" / "tiny" / "index.html").read_text()
    for ranker in DEFAULT_RANKERS:
        assert f'href="../../evidence/tiny/runs/{ranker}.json"' in corpus_page
    assert (built / ".nojekyll").exists()


def test_build_whose_audit_fails_exits_non_zero_and_keeps_the_previous_site(
    tmp_path: Path, tiny_corpus: Path, fake_model: FakeEmbeddingModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    _build(tiny_corpus.parent, out, fake_model, tmp_path / "cache")
    before = _tree(out)
    real_writer = build_module.write_corpus_evidence

    def writer_with_a_wrong_metric(evidence_dir, corpus, runs, metrics, *args, **kwargs):
        wrong = json.loads(json.dumps(metrics))
        wrong["bm25"]["overall"]["mrr@10"] += 0.01  # what a scoring bug would publish
        real_writer(evidence_dir, corpus, runs, wrong, *args, **kwargs)

    monkeypatch.setattr(build_module, "write_corpus_evidence", writer_with_a_wrong_metric)
    with pytest.raises(SitegenError, match="audit of the new build failed") as info:
        _build(tiny_corpus.parent, out, fake_model, tmp_path / "cache")
    assert "bm25" in str(info.value)
    assert _tree(out) == before


def test_built_site_carries_the_audit_script_and_its_verdict(built: Path) -> None:
    assert (built / "audit.py").read_bytes() == (Path(build_module.__file__).parent / "audit.py").read_bytes()
    verdict = json.loads((built / "audit.json").read_text())
    assert verdict["verdict"] == "pass"
    assert "Audit: passed" in (built / "index.html").read_text()
    assert "Verdict: pass" in (built / "reproducibility.html").read_text()
