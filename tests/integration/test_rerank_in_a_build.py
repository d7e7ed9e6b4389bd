"""Rerank stages in a build: a tiny local cross-encoder passes the audit and ``audit --rescore``; a reordered run
fails the standalone audit; a changed stored score fails ``--rescore``; the bi-encoder rerank of bm25's top 100
equals an independent exact-cosine rerank; the ablation and the depth sweep show the rerank."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sitegen.audit import run_audit
from sitegen.inputs.corpus import load_corpus
from tests.helpers import REPO, build, copy_site, read_evidence, rehash_manifest, run_cli, write_corpus
from tests.reference_vectors import CRANFIELD, CommittedVectors, checked_vectors

SITE = REPO / "site"
WORDS = "the a of and to in is card cards refund refunds payment policy batch box boxes class analysis first".split()


def tiny_cross_encoder(folder: Path) -> Path:
    """A one-layer BERT with one output, seeded weights and a hand-written WordPiece vocabulary, saved as a
    sentence-transformers CrossEncoder folder: nothing is downloaded."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    torch.manual_seed(20261202)
    config = BertConfig(
        vocab_size=5 + len(WORDS),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=1,
        initializer_range=0.5,  # wide weights, so the scores of different passages lie well apart
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def cross_encoder_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cross-encoder")
    model = tiny_cross_encoder(root / "model")
    tiny = write_corpus(root / "corpora" / "tiny")
    reranks = [
        {
            "name": "rerank-ce",
            "first_stage": "bm25",
            "candidates": 3,
            "scorer": {"kind": "cross-encoder", "model": str(model)},
        }
    ]
    (tiny / "sitegen.json").write_text(json.dumps({"reranks": reranks}), encoding="utf-8")
    build(root / "corpora", root / "site", rankers=("bm25",))
    return root / "site"


def _checks(site: Path) -> dict[str, dict]:
    return {c["name"]: c for c in run_audit(site, echo=lambda _: None)["checks"]}


def test_a_build_with_a_local_cross_encoder_passes_the_audit_and_rescore(cross_encoder_site: Path) -> None:
    run = read_evidence(cross_encoder_site, "evidence/tiny/runs/rerank-ce.json")
    assert run["contract"]["family"] == "rerank" and run["params"]["method"] == "cross-encoder rerank"
    assert run["params"]["model_sha256"] and run["params"]["first_stage"] == "bm25"
    report = run_audit(cross_encoder_site, echo=lambda _: None)
    assert report["verdict"] == "pass"
    result = run_cli("audit", "--rescore", cross_encoder_site)
    assert result.exit_code == 0, result.output
    assert "PASS rescore:tiny/rerank-ce" in result.output


def test_a_reordered_cross_encoder_run_fails_the_standalone_audit(cross_encoder_site: Path, tmp_path: Path) -> None:
    site = copy_site(cross_encoder_site, tmp_path / "site")
    path = site / "evidence" / "tiny" / "runs" / "rerank-ce.json"
    run = json.loads(path.read_text(encoding="utf-8"))
    qid = next(q for q, hits in run["queries"].items() if len(hits) >= 2)
    hits = run["queries"][qid]
    hits[0], hits[1] = hits[1], hits[0]
    path.write_text(json.dumps(run), encoding="utf-8")
    rehash_manifest(site)
    failed = _checks(site)["run:tiny/rerank-ce"]
    assert failed["status"] == "fail"
    assert any("break the order score, doc id" in m for m in failed["mismatches"])


def test_a_changed_stored_score_fails_rescore_only(cross_encoder_site: Path, tmp_path: Path) -> None:
    site = copy_site(cross_encoder_site, tmp_path / "site")
    path = site / "evidence" / "tiny" / "runs" / "rerank-ce.json"
    run = json.loads(path.read_text(encoding="utf-8"))
    qid = next(q for q, hits in run["queries"].items() if hits)
    run["queries"][qid][0][1] += 0.25  # the top hit scored higher: the order still holds
    path.write_text(json.dumps(run), encoding="utf-8")
    rehash_manifest(site)
    assert _checks(site)["run:tiny/rerank-ce"]["status"] == "pass"  # the standalone audit cannot tell
    result = run_cli("audit", "--rescore", site)
    assert result.exit_code == 1
    assert "FAIL rescore:tiny/rerank-ce" in result.output and f"question {qid} rank 1" in result.output


def test_the_default_ablation_ends_with_the_rerank_row_and_the_sweep_covers_each_depth(tmp_path: Path) -> None:
    write_corpus(tmp_path / "corpora" / "tiny")
    build(tmp_path / "corpora", tmp_path / "site", rankers=("rerank-dense",))
    rows = read_evidence(tmp_path / "site", "evidence/tiny/experiments.json")["ablation"]["rows"]
    assert (rows[-1]["baseline"], rows[-1]["ranker"]) == ("rrf-dense-bm25", "rerank-dense")
    assert rows[-1]["adds"].startswith("+ rerank")
    sweep = read_evidence(tmp_path / "site", "evidence/tiny/rerank.json")
    assert [r["candidates"] for r in sweep["stages"]["rerank-dense"]["rows"]] == [10, 20, 50, 100]
    metrics = read_evidence(tmp_path / "site", "evidence/tiny/metrics.json")
    fifty = sweep["stages"]["rerank-dense"]["rows"][2]
    assert fifty["reranked"]["ndcg@10"] == pytest.approx(metrics["rerank-dense"]["overall"]["ndcg@10"], abs=1e-12)
    assert fifty["first_stage"]["ndcg@10"] == pytest.approx(metrics["rrf-dense-bm25"]["overall"]["ndcg@10"], abs=1e-12)


def test_a_tampered_sweep_fails_the_audit(tmp_path: Path) -> None:
    write_corpus(tmp_path / "corpora" / "tiny")
    build(tmp_path / "corpora", tmp_path / "site", rankers=("rerank-dense",))
    path = tmp_path / "site" / "evidence" / "tiny" / "rerank.json"
    sweep = json.loads(path.read_text(encoding="utf-8"))
    sweep["stages"]["rerank-dense"]["rows"][0]["reranked"]["ndcg@10"] += 0.01
    path.write_text(json.dumps(sweep), encoding="utf-8")
    rehash_manifest(tmp_path / "site")
    assert _checks(tmp_path / "site")["rerank:tiny"]["status"] == "fail"


def _independent_ndcg(corpus: Path, vectors: CommittedVectors, first: dict[str, list[str]]) -> float:
    """nDCG@10 of bm25's top 100 reranked by exact float64 cosine of the committed Cranfield vectors of the same
    texts (checked against SentenceTransformer.encode on a sample), scored by ir_measures (trec_eval's
    definition): nothing of sitegen's ranking or metrics."""
    import ir_measures

    docs = [json.loads(line) for line in (corpus / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = [json.loads(line) for line in (corpus / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    cranfield = {d.doc_id: d for d in load_corpus(CRANFIELD).documents}
    same = [(cranfield[d["_id"]].title, cranfield[d["_id"]].text) == (d.get("title", ""), d["text"]) for d in docs]
    assert all(same)  # the fixture's texts are Cranfield's, so the committed vectors are theirs
    question_row = {q: i for i, q in enumerate(vectors.question_ids)}
    run = []
    for query in queries:
        ids = first.get(query["_id"], [])
        vector = vectors.questions[question_row[query["_id"]]]
        scores = {d: float(np.dot(vectors.passage(d), vector)) for d in ids}
        ordered = sorted(ids, key=lambda d: (-scores[d], d))
        run += [ir_measures.ScoredDoc(query["_id"], d, float(len(ordered) - r)) for r, d in enumerate(ordered)]
    lines = (corpus / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    qrels = [ir_measures.Qrel(q, d, int(g)) for q, d, g in (line.split("\t") for line in lines)]
    judged = {q.query_id for q in qrels if q.relevance > 0}
    per_query = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nDCG @ 10], qrels, run)}
    return float(np.mean([per_query.get(q, 0.0) for q in judged]))


@pytest.mark.slow  # the samples (conftest.py) are fixtures by name here, so their marker is not added by itself
@pytest.mark.parametrize(("embedding", "sample"), [("dense", "minilm_sample"), ("dense-mpnet", "mpnet_sample")])
def test_bi_encoder_rerank_of_bm25_top_100_equals_an_independent_exact_cosine_rerank(
    tmp_path: Path, embedding: str, sample: str, request: pytest.FixtureRequest
) -> None:
    """On the graded Cranfield fixture, for each packaged model: the build's bi-encoder rerank of bm25's top 100
    (from the vectors sitegen made and froze) against exact cosine of the committed vectors, which
    SentenceTransformer.encode gives for a seeded sample of their texts, and ir_measures, to 4 decimals."""
    vectors = checked_vectors(embedding, request.getfixturevalue(sample))
    corpus = shutil.copytree(REPO / "tests" / "fixtures" / "cranfield-graded", tmp_path / "corpora" / "cranfield")
    scorer = {"kind": "bi-encoder", "embedding": embedding}
    reranks = [{"name": "rerank-bm25", "first_stage": "bm25", "candidates": 100, "scorer": scorer}]
    (corpus / "sitegen.json").write_text(json.dumps({"reranks": reranks}), encoding="utf-8")
    # The fixture's texts are Cranfield's, so the committed site's frozen vectors serve: nothing is embedded.
    result = build(tmp_path / "corpora", tmp_path / "site", model={}, rankers=("bm25", embedding), vectors_from=SITE)
    assert result.embed_stats.embedded == 0
    site = tmp_path / "site"
    bm25 = read_evidence(site, "evidence/cranfield/runs/bm25.json")["queries"]
    first = {q: [hit["doc_id"] for hit in hits[:100]] for q, hits in bm25.items()}
    got = read_evidence(site, "evidence/cranfield/metrics.json")["rerank-bm25"]["overall"]["ndcg@10"]
    assert round(got, 4) == round(_independent_ndcg(corpus, vectors, first), 4)


def test_a_hook_declared_in_sitegen_json_reranks_from_the_project_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "proj_rerank.py").write_text(
        "def score(question, candidates, *, corpus, query_id):\n"
        "    return [float(c.rank) for c in candidates] if corpus == 'tiny' else []\n",
        encoding="utf-8",
    )
    tiny = write_corpus(tmp_path / "corpora" / "tiny")
    scorer = {"kind": "hook", "hook": "proj_rerank:score"}
    reranks = [{"name": "rerank-mine", "first_stage": "bm25", "candidates": 2, "scorer": scorer}]
    (tiny / "sitegen.json").write_text(json.dumps({"reranks": reranks}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    build(Path("corpora"), Path("site"), rankers=("bm25",))
    run = read_evidence(tmp_path / "site", "evidence/tiny/runs/rerank-mine.json")
    bm25 = read_evidence(tmp_path / "site", "evidence/tiny/runs/bm25.json")
    for qid, hits in run["queries"].items():
        # the hook scores a candidate by its first-stage rank, so it turns the first stage's top 2 around
        assert [h["doc_id"] for h in hits] == [h["doc_id"] for h in bm25["queries"][qid][:2]][::-1]
    assert run["params"]["method"] == "hook rerank" and run["params"]["hook"] == "proj_rerank:score"
