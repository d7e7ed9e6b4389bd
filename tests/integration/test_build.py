"""The build writes a complete, checksummed, byte-reproducible bundle, and never half-replaces a site."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sitegen import audit
from sitegen.builder import corpus as build_module
from sitegen.cli import cli
from sitegen.errors import SitegenError
from sitegen.publish.evidence import read_run
from tests.helpers import (
    UNFILTERED_RANKERS,
    FakeEmbeddingModel,
    SharedBuild,
    assert_metrics_match_trec_eval,
    build,
    copy_site,
    file_tree,
    own_postgres_processes,
    write_corpus,
)

UNFILTERED_PG = ("pg-vector", "pg-tsvector", "rrf-pgvector-tsvector", "pg-hybrid-sql")


def test_build_writes_a_run_per_ranker_with_ranked_hits(default_site: Path) -> None:
    runs = default_site / "evidence" / "tiny" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == sorted(
        [f"{r}.json" for r in UNFILTERED_RANKERS] + [f"{r}.trec" for r in UNFILTERED_RANKERS]
    )
    fused = read_run(runs / "rrf-dense-bm25.json")
    assert fused["ranker"] == "rrf-dense-bm25" and fused["params"]["k"] == 60
    assert fused["params"]["candidates_per_list"] == 20
    assert set(fused["queries"]) == {"q1", "q2", "q3", "q4"}
    first = fused["queries"]["q2"][0]
    assert set(first) == {"doc_id", "rank", "score", "components"}
    assert set(first["components"]) == {"dense", "bm25"}
    bm25 = read_run(runs / "bm25.json")
    assert bm25["params"]["k1"] == 1.2 and bm25["params"]["b"] == 0.75
    assert [h["rank"] for h in bm25["queries"]["q1"]] == list(range(1, len(bm25["queries"]["q1"]) + 1))


def test_metrics_json_equals_trec_eval_on_the_trec_files(default_site: Path) -> None:
    assert assert_metrics_match_trec_eval(default_site, "tiny") > 0
    assert assert_metrics_match_trec_eval(default_site, "rich") > 0


def test_metrics_json_has_overall_by_kind_and_per_query(default_site: Path) -> None:
    metrics = json.loads((default_site / "evidence" / "tiny" / "metrics.json").read_text())
    assert set(metrics) == set(UNFILTERED_RANKERS)
    bm25 = metrics["bm25"]
    assert set(bm25) == {"overall", "by_kind", "per_query"}
    assert set(bm25["by_kind"]) == {"paraphrase", "exact-code"}
    assert set(bm25["per_query"]) == {"q1", "q2", "q3"}
    assert {"hit@1", "recall@5", "precision@5", "mrr@10", "ndcg@10", "ndcg@20"} <= set(bm25["overall"])


def test_manifest_lists_every_evidence_file_with_its_sha256(default_site: Path) -> None:
    manifest = json.loads((default_site / "evidence" / "manifest.json").read_text())
    on_disk = {
        p.relative_to(default_site).as_posix()
        for p in (default_site / "evidence").rglob("*")
        if p.is_file() and p.name != "manifest.json"
    }
    assert set(manifest["files"]) == on_disk
    for path, entry in manifest["files"].items():
        assert hashlib.sha256((default_site / path).read_bytes()).hexdigest() == entry["sha256"]
    assert manifest["model"]["weights_sha256"] == FakeEmbeddingModel.weights_sha256
    assert manifest["libraries"]["numpy"] == np.__version__
    assert "evidence/tiny/inputs/corpus.jsonl" in manifest["files"]


def test_input_copies_and_embeddings_are_in_the_bundle(default_site: Path, default_build: SharedBuild) -> None:
    inputs = default_site / "evidence" / "tiny" / "inputs"
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "README.md", "sitegen.json"):
        assert (inputs / name).read_bytes() == (default_build.corpora / "tiny" / name).read_bytes()
    index = json.loads((default_site / "evidence" / "tiny" / "embeddings" / "index.json").read_text())
    vectors = np.load(default_site / "evidence" / "tiny" / "embeddings" / "passages.npy")
    assert vectors.dtype == np.float32 and vectors.shape == (4, 384)
    assert index["passages"] == ["d1", "d2", "d3", "d4"]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_second_build_embeds_nothing_and_is_byte_identical(
    default_site: Path, default_build: SharedBuild, tmp_path: Path, fake_model: FakeEmbeddingModel
) -> None:
    # the first build embedded each distinct text of tiny (8) and rich (11, a0 and a3 being one text) once
    assert len(default_build.embedded) == len(set(default_build.embedded)) == 8 + 10
    cache = copy_site(default_build.cache, tmp_path / "cache")
    build(default_build.corpora, tmp_path / "two", cache=cache, model=fake_model)
    assert fake_model.encoded == []
    assert file_tree(default_site) == file_tree(tmp_path / "two")


def test_changing_one_passage_re_embeds_only_that_passage(
    tmp_path: Path, tiny_corpus: Path, fake_model: FakeEmbeddingModel
) -> None:
    build(tiny_corpus.parent, tmp_path / "site", model=fake_model, rankers=("dense",))
    lines = (tiny_corpus / "corpus.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace("two days", "three days")
    (tiny_corpus / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    fake_model.encoded.clear()
    build(tiny_corpus.parent, tmp_path / "site", model=fake_model, rankers=("dense",))
    assert fake_model.encoded == ["Payouts\nPayouts arrive in the bank account three days later."]


def test_failed_build_leaves_the_existing_site_untouched(
    default_site: Path, default_build: SharedBuild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = copy_site(default_site, tmp_path / "site")
    before = file_tree(out)

    def explode(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("sitegen.builder.corpus.write_corpus_evidence", explode)
    with pytest.raises(RuntimeError):
        build(default_build.corpora, out, rankers=("bm25",))
    assert file_tree(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site")] == []


def test_ranker_failure_names_corpus_and_ranker(
    tmp_path: Path, tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self, inputs, depth):
        raise ZeroDivisionError("oops")

    monkeypatch.setattr("sitegen.rankers.bm25.BM25Ranker.rank", broken)
    with pytest.raises(SitegenError, match="tiny: ranker bm25 failed"):
        build(tiny_corpus.parent, tmp_path / "site")
    assert not (tmp_path / "site").exists()


def test_cli_build_with_bad_corpus_exits_non_zero_and_keeps_old_output(tmp_path: Path, tiny_corpus: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("previous report")
    write_corpus(tiny_corpus.parent / "broken", qrels=[("q1", "ghost", 1)])
    # --force: the folder holds a file but no sitegen site, which is refused without it.
    result = CliRunner().invoke(cli, ["build", "--corpora", str(tiny_corpus.parent), "--out", str(out), "--force"])
    assert result.exit_code == 1
    assert "build failed:" in result.output and 'test.tsv:2: unknown corpus id "ghost"' in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert (out / "index.html").read_text() == "previous report"


def test_only_builds_the_named_corpus_and_rejects_unknown_names(tmp_path: Path, tiny_corpus: Path) -> None:
    write_corpus(tiny_corpus.parent / "other")
    build(tiny_corpus.parent, tmp_path / "site", only=("other",), rankers=("bm25",))
    assert sorted(p.name for p in (tmp_path / "site" / "evidence").iterdir()) == ["manifest.json", "other"]
    with pytest.raises(SitegenError, match="no corpus named nope; found: other, tiny"):
        build(tiny_corpus.parent, tmp_path / "site", only=("nope",), rankers=("bm25",))


def test_index_page_shows_the_overall_table_and_links_to_its_evidence(default_site: Path) -> None:
    built = default_site
    page = (built / "index.html").read_text()
    metrics = json.loads((built / "evidence" / "tiny" / "metrics.json").read_text())
    assert 'href="evidence/tiny/metrics.json"' in page
    assert 'href="corpora/tiny/index.html"' in page
    assert f"{metrics['bm25']['overall']['mrr@10']:.3f}" in page
    corpus_page = (built / "corpora" / "tiny" / "index.html").read_text()
    for ranker in UNFILTERED_RANKERS:
        assert f'href="../../evidence/tiny/runs/{ranker}.json"' in corpus_page
    assert (built / ".nojekyll").exists()


def test_build_whose_audit_fails_exits_non_zero_and_keeps_the_previous_site(
    default_site: Path, default_build: SharedBuild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = copy_site(default_site, tmp_path / "site")
    before = file_tree(out)
    real_writer = build_module.write_corpus_evidence

    def writer_with_a_wrong_metric(site_dir, results):
        wrong = json.loads(json.dumps(results.metrics))
        wrong["bm25"]["overall"]["mrr@10"] += 0.01  # what a scoring bug would publish
        real_writer(site_dir, dataclasses.replace(results, metrics=wrong))

    monkeypatch.setattr(build_module, "write_corpus_evidence", writer_with_a_wrong_metric)
    with pytest.raises(SitegenError, match="audit of the new build failed") as info:
        build(default_build.corpora, out, rankers=("bm25",))
    assert "bm25" in str(info.value)
    assert file_tree(out) == before


def test_built_site_carries_the_audit_script_and_its_verdict(default_site: Path) -> None:
    built = default_site
    assert (built / "audit.py").read_bytes() == Path(audit.__file__).read_bytes()
    verdict = json.loads((built / "audit.json").read_text())
    assert verdict["verdict"] == "pass"
    assert "Audit: passed" in (built / "index.html").read_text()
    assert "Verdict: pass" in (built / "reproducibility.html").read_text()


def test_an_external_trec_run_is_scored_shown_and_audited_with_unknown_ids_reported(
    tmp_path: Path, tiny_corpus: Path
) -> None:
    run_file = tmp_path / "vendor.trec"
    run_file.write_text(
        "q1 Q0 d2 1 3.0 vendor\n"
        "q1 Q0 d1 2 3.0 vendor\n"  # a tie: trec_eval puts d2 first (ids descending)
        "q1 Q0 ghost 3 2.5 vendor\n"
        "q2 Q0 d3 1 9.0 vendor\n"
        "q9 Q0 d1 1 1.0 vendor\n"
    )
    out = tmp_path / "site"
    build(tiny_corpus.parent, out, rankers=("bm25", "dense"), external_runs=(("vendor", "tiny", run_file),))
    run = read_run(out / "evidence" / "tiny" / "runs" / "vendor.json")
    assert [h["doc_id"] for h in run["queries"]["q1"]] == ["d2", "d1", "ghost"]
    assert run["queries"]["q3"] == []
    assert run["params"]["unknown_documents"] == ["ghost"] and run["params"]["unknown_queries"] == ["q9"]
    assert (out / "evidence" / "tiny" / "inputs" / "runs" / "vendor.trec").read_bytes() == run_file.read_bytes()
    assert_metrics_match_trec_eval(out, "tiny")
    metrics = json.loads((out / "evidence" / "tiny" / "metrics.json").read_text())
    assert metrics["vendor"]["per_query"]["q2"]["hit@1"] == 1.0
    assert metrics["vendor"]["per_query"]["q3"]["hit@20"] == 0.0
    audit_report = json.loads((out / "audit.json").read_text())
    assert any(c["name"] == "run:tiny/vendor" and "not reproducible" in c["detail"] for c in audit_report["checks"])
    assert "(ranking not reproducible from the bundle)" in (out / "corpora" / "tiny" / "index.html").read_text()


def test_external_run_with_a_malformed_line_or_a_clashing_name_is_refused(tmp_path: Path, tiny_corpus: Path) -> None:
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 x\n")
    with pytest.raises(SitegenError, match=r"bad\.trec:2: expected 6 columns"):
        build(tiny_corpus.parent, tmp_path / "s", external_runs=(("v", "tiny", bad),))
    good = tmp_path / "good.trec"
    good.write_text("q1 Q0 d1 1 2.0 x\n")
    with pytest.raises(SitegenError, match="already a built-in ranker"):
        build(tiny_corpus.parent, tmp_path / "s", external_runs=(("bm25", "tiny", good),))


def test_cli_run_option_rejects_a_value_without_corpus_and_path(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["build", "--run", "just-a-name"])
    assert result.exit_code == 2
    assert "is not NAME=CORPUS:PATH" in result.output


@pytest.mark.postgres
def test_postgres_rankers_run_beside_the_others_and_leave_no_server_behind(
    default_site: Path, default_build: SharedBuild
) -> None:
    built = default_site
    postgres = json.loads((built / "evidence" / "tiny" / "postgres.json").read_text())
    summary = json.loads((built / "evidence" / "tiny" / "corpus.json").read_text())
    assert {"pg-vector", "pg-tsvector", "rrf-pgvector-tsvector", "pg-hybrid-sql"} <= set(summary["rankers"])
    assert postgres["not_run"] == {}
    agreement = {(a["ranker"], a["reproduces"], a["top"]): a["identical"] for a in postgres["agreement"]}
    assert agreement[("pg-hybrid-sql", "rrf-pgvector-tsvector", 5)] == postgres["questions"] == 4
    assert ("pg-vector", "dense", 10) in agreement
    assert {n["node_type"] for n in postgres["plans"]["scans"]["vector"]} == {"Index Scan"}
    assert any(n["index"] and n["index"].endswith("_tsv_gin") for n in postgres["plans"]["scans"]["keyword"])
    page = (built / "corpora" / "tiny" / "index.html").read_text()
    assert (
        "ts_rank_cd is not BM25" in page and "the fusion as one SQL statement against the same fusion in Python" in page
    )
    assert default_build.postgres_after == frozenset()


def test_unreachable_postgres_marks_the_rows_not_run_unless_required(tmp_path: Path, tiny_corpus: Path) -> None:
    dsn = "postgresql://sitegen@127.0.0.1:9/none?connect_timeout=2"
    build(tiny_corpus.parent, tmp_path / "site", pg_dsn=dsn, rankers=("bm25", *UNFILTERED_PG))
    postgres = json.loads((tmp_path / "site" / "evidence" / "tiny" / "postgres.json").read_text())
    assert set(postgres["not_run"]) == set(UNFILTERED_PG)
    assert not (tmp_path / "site" / "evidence" / "tiny" / "runs" / "pg-vector.json").exists()
    assert "Not run on this build" in (tmp_path / "site" / "corpora" / "tiny" / "index.html").read_text()
    with pytest.raises(SitegenError):
        build(tiny_corpus.parent, tmp_path / "s2", pg_dsn=dsn, require_postgres=True, rankers=("bm25", *UNFILTERED_PG))
    assert not (tmp_path / "s2").exists()


@pytest.mark.postgres
def test_a_failed_build_stops_its_postgres_server(
    tmp_path: Path, tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*args, **kwargs):
        assert own_postgres_processes(), "the server should be running while ranking"
        raise RuntimeError("crash while ranking")

    monkeypatch.setattr("sitegen.rankers.pg.PgTsvectorRanker.rank", explode)
    with pytest.raises(SitegenError, match="crash while ranking"):
        build(tiny_corpus.parent, tmp_path / "site", rankers=("pg-tsvector",))
    assert own_postgres_processes() == set()


def test_reembed_matches_the_stored_vectors_and_catches_a_changed_one(default_site: Path, tmp_path: Path) -> None:
    from sitegen.publish.bundle import REEMBED_TOLERANCE
    from sitegen.verify.reembed import reembed_bundle

    results = {r.corpus: r for r in reembed_bundle(default_site, model=FakeEmbeddingModel())}
    assert results["tiny"].ok and results["tiny"].vectors == 8 and results["tiny"].max_abs_diff == 0.0
    assert results["rich"].ok and results["rich"].vectors == 11 and results["rich"].max_abs_diff == 0.0
    copy = copy_site(default_site, tmp_path / "copy")
    path = copy / "evidence" / "tiny" / "embeddings" / "passages.npy"
    vectors = np.load(path)
    vectors[2, 0] += 10 * REEMBED_TOLERANCE
    np.save(path, vectors)
    changed = next(r for r in reembed_bundle(copy, model=FakeEmbeddingModel()) if r.corpus == "tiny")
    assert not changed.ok and changed.worst == "passages d3"
