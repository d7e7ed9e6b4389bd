"""The standalone audit passes on a real build, fails with a message naming file, ranker and query
on every tamper, and runs with nothing but Python and numpy."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sitegen import audit
from sitegen.publish.evidence import write_run
from sitegen.publish.pages import write_page_listing
from tests.helpers import (
    AUDIT_SOURCE,
    TINY_DOCS,
    build,
    clean_env,
    copy_site,
    evidence_failures,
    read_evidence,
    run_python,
    write_corpus,
)

# Slow: each test audits a whole tampered copy of a build (the quick run keeps the audits of smaller builds:
# test_build, test_evidence_schemas, test_hygiene_in_a_build, test_supplied_vectors, ...)
pytestmark = pytest.mark.slow


@pytest.fixture
def site(audit_site: Path, tmp_path: Path) -> Path:
    """A private copy of the audit build, free to tamper with."""
    return copy_site(audit_site, tmp_path / "site")


def run(site: Path) -> tuple[dict, list[str]]:
    lines: list[str] = []
    return audit.run_audit(site, echo=lines.append), lines


def failures(site: Path) -> dict[str, list[str]]:
    """The failed evidence checks of a tampered copy (whose pages check fails too: see evidence_failures)."""
    report, _ = run(site)
    assert report["verdict"] == "fail"
    assert any(c["name"] == "pages" and c["status"] == "fail" for c in report["checks"])
    return evidence_failures(report)


def save(site: Path, rel: str, obj: dict, rehash: bool = True) -> None:
    if "/runs/" in rel and rel.endswith(".json"):
        write_run(site / rel, obj)  # stored compact again, as a build writes it
    else:
        (site / rel).write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if rehash:
        update_manifest(site, rel)


def update_manifest(site: Path, rel: str) -> None:
    """Give a tampered file its new checksum, so that only the recomputation can catch it."""
    manifest = read_evidence(site, "evidence/manifest.json")
    data = (site / rel).read_bytes()
    manifest["files"][rel] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (site / "evidence/manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def two_distinct_scores(site: Path, corpus: str, ranker: str) -> tuple[str, int]:
    """A query and a rank r whose hits at r and r + 1 differ in score by far more than any tolerance."""
    queries = read_evidence(site, f"evidence/{corpus}/runs/{ranker}.json")["queries"]
    return next(
        (q, r) for q, h in queries.items() for r in range(1, len(h)) if h[r - 1]["score"] - h[r]["score"] > 1e-4
    )


def test_audit_passes_on_an_untouched_build(site: Path) -> None:
    report, lines = run(site)
    assert report["verdict"] == "pass", [line for line in lines if line.startswith("FAIL")]
    names = [c["name"] for c in report["checks"]]
    for expected in ("manifest", "inputs:tiny", "corpus:rich", "embeddings:tiny", "trec:rich/bm25-stem"):
        assert expected in names
    for ranker in ("bm25", "bm25-stem", "dense", "rrf-dense-bm25", "rrf-dense-bm25-stem"):
        assert f"run:tiny/{ranker}" in names and f"metrics:rich/{ranker}" in names
    assert report["counts"] == {"checks": len(names), "passed": len(names), "failed": 0}
    assert lines[0].startswith("audit.py sha256 ") and names[-1] == "pages"  # its own sha256 first, pages last
    assert len(lines) == len(names) + 2 and lines[-1].startswith("AUDIT PASS")
    assert all(line.startswith("PASS ") for line in lines[1:-1])
    assert set(report["tolerances"]) >= {"bm25_score_relative", "dense_score_absolute", "metric_absolute"}
    assert json.loads((site / "audit.json").read_text()) == report
    assert audit.main([str(site)]) == 0


def test_audit_json_is_deterministic_and_has_no_absolute_paths(audit_site: Path, tmp_path: Path) -> None:
    one = copy_site(audit_site, tmp_path / "one")
    two = copy_site(audit_site, tmp_path / "two")
    run(one)
    run(two)
    assert (one / "audit.json").read_bytes() == (two / "audit.json").read_bytes()
    assert str(tmp_path) not in (one / "audit.json").read_text()


def test_a_changed_score_is_caught(site: Path) -> None:
    rel = "evidence/tiny/runs/bm25.json"
    run_doc = read_evidence(site, rel)
    hit = run_doc["queries"]["q1"][0]
    hit["score"] += 0.5
    save(site, rel, run_doc)
    failed = failures(site)
    assert list(failed) == ["run:tiny/bm25"]
    assert failed["run:tiny/bm25"] == [f"{rel}: query q1: rank 1 doc {hit['doc_id']}: score {hit['score']!r}, "
                                       f"recomputed {hit['score'] - 0.5!r}"]  # fmt: skip


@pytest.mark.parametrize(
    ("corpus", "ranker"), [("tiny", "bm25"), ("rich", "bm25-stem"), ("tiny", "dense"), ("tiny", "rrf-dense-bm25")]
)
def test_two_swapped_ranks_are_caught(site: Path, corpus: str, ranker: str) -> None:
    rel = f"evidence/{corpus}/runs/{ranker}.json"
    run_doc = read_evidence(site, rel)
    qid, rank = two_distinct_scores(site, corpus, ranker)
    first, second = run_doc["queries"][qid][rank - 1 : rank + 1]
    first["doc_id"], second["doc_id"] = second["doc_id"], first["doc_id"]
    save(site, rel, run_doc)
    messages = failures(site)[f"run:{corpus}/{ranker}"]
    assert f"{rel}: query {qid}: rank {rank} is doc {first['doc_id']}, recomputed {second['doc_id']}" in messages


def test_an_exact_tie_out_of_doc_id_order_is_caught(site: Path) -> None:
    rel = "evidence/tiny/runs/dense.json"
    run_doc = read_evidence(site, rel)
    qid, rank = next(
        (q, r) for q, h in run_doc["queries"].items() for r in range(1, len(h)) if h[r - 1]["score"] == h[r]["score"]
    )
    first, second = run_doc["queries"][qid][rank - 1 : rank + 1]
    first["doc_id"], second["doc_id"] = second["doc_id"], first["doc_id"]
    save(site, rel, run_doc)
    assert failures(site)["run:tiny/dense"] == [
        f"{rel}: query {qid}: ranks {rank}, {rank + 1} ({first['doc_id']}, {second['doc_id']}) break the order "
        "score, doc id"
    ]


def test_a_changed_metric_value_is_caught(site: Path) -> None:
    rel = "evidence/tiny/metrics.json"
    metrics = read_evidence(site, rel)
    metrics["dense"]["per_query"]["q2"]["ndcg@10"] += 0.01
    metrics["bm25"]["by_kind"]["paraphrase"]["recall@5"] = 0.123
    metrics["bm25"]["overall"].pop("mrr@3")
    save(site, rel, metrics)
    failed = failures(site)
    assert sorted(failed) == ["metrics:tiny/bm25", "metrics:tiny/dense"]
    assert failed["metrics:tiny/dense"][0].startswith(f"{rel}: ranker dense: query q2: ndcg@10 is ")
    assert f"{rel}: ranker bm25: kind paraphrase: recall@5 is 0.123, recomputed" in failed["metrics:tiny/bm25"][0]
    assert failed["metrics:tiny/bm25"][1].startswith(f"{rel}: ranker bm25: overall: metric names")


def test_one_byte_of_an_input_copy_is_caught_by_the_checksum(site: Path) -> None:
    rel = "evidence/tiny/inputs/qrels/test.tsv"
    data = bytearray((site / rel).read_bytes())
    data[-2] ^= 1  # the last grade, "1" -> "0"
    (site / rel).write_bytes(bytes(data))
    assert any(m.startswith(f"{rel}: sha256 ") for m in failures(site)["manifest"])


def test_a_changed_word_in_the_corpus_is_caught_by_the_recomputation(site: Path) -> None:
    rel = "evidence/tiny/inputs/corpus.jsonl"
    text = (site / rel).read_text()
    (site / rel).write_text(text.replace("How to refund a card payment", "How to reverse a card payment"))
    update_manifest(site, rel)
    failed = failures(site)
    assert "manifest" not in failed
    assert any(m.startswith("evidence/tiny/runs/bm25.json: query q1: ") for m in failed["run:tiny/bm25"])
    assert "run:tiny/bm25-stem" in failed


def test_a_changed_grade_is_caught_by_the_recomputation(site: Path) -> None:
    rel = "evidence/rich/inputs/qrels/test.tsv"
    (site / rel).write_text((site / rel).read_text().replace("r3\ta5 100%\t1", "r3\ta5 100%\t0"))
    update_manifest(site, rel)
    failed = failures(site)
    assert any(m.startswith("evidence/rich/metrics.json: ranker bm25: query r3: ") for m in failed["metrics:rich/bm25"])


@pytest.mark.parametrize("position", [-1, 0])
def test_a_deleted_hit_is_caught(site: Path, position: int) -> None:
    rel = "evidence/tiny/runs/bm25.json"
    run_doc = read_evidence(site, rel)
    qid, hits = max(run_doc["queries"].items(), key=lambda item: len(item[1]))
    n = len(hits)
    assert n >= 3
    del hits[position]
    save(site, rel, run_doc)
    failed = failures(site)
    assert f"{rel}: query {qid}: {n - 1} hits, recomputed {n}" in failed["run:tiny/bm25"]
    # a compact run has no rank fields to contradict (rank = position + 1): the recount catches it
    assert any(m.startswith(f"evidence/tiny/runs/bm25.trec: query {qid}: rank ") for m in failed["trec:tiny/bm25"])


def test_a_deleted_evidence_file_is_caught(site: Path) -> None:
    (site / "evidence/tiny/runs/dense.trec").unlink()
    failed = failures(site)
    assert failed["manifest"] == ["evidence/tiny/runs/dense.trec: listed in evidence/manifest.json but missing"]
    assert failed["trec:tiny/dense"] == ["evidence/tiny/runs/dense.trec: file is missing"]


def test_a_stray_evidence_file_is_caught(site: Path) -> None:
    (site / "evidence/tiny/runs/notes.txt").write_text("who put this here?")
    failed = failures(site)
    assert failed == {"manifest": ["evidence/tiny/runs/notes.txt: file under evidence/ is not listed in "
                                   "evidence/manifest.json"]}  # fmt: skip


def test_an_unknown_file_listed_in_the_manifest_only_needs_its_checksum(site: Path) -> None:
    (site / "evidence/tiny/experiments").mkdir()
    (site / "evidence/tiny/experiments/sweep.json").write_text('{"future": true}\n')
    update_manifest(site, "evidence/tiny/experiments/sweep.json")
    assert failures(site) == {}  # only the pages, rendered from the manifest before the change, disagree


def _nudge(site: Path, rel: str, row: int, renormalise: bool) -> None:
    matrix = np.load(site / rel)
    column = int(np.flatnonzero(matrix[row])[0])
    matrix[row, column] += 0.2
    if renormalise:
        matrix[row] /= np.linalg.norm(matrix[row])
    np.save(site / rel, matrix)
    update_manifest(site, rel)


def test_a_nudged_embedding_fails_the_unit_norm_check(site: Path) -> None:
    rel = "evidence/tiny/embeddings/passages.npy"
    _nudge(site, rel, row=2, renormalise=False)
    failed = failures(site)
    assert failed["embeddings:tiny"][0].startswith(f"{rel}: row 2 (id d3): norm ")


def test_a_nudged_and_renormalised_embedding_fails_the_dense_recomputation(site: Path) -> None:
    _nudge(site, "evidence/tiny/embeddings/passages.npy", row=2, renormalise=True)
    failed = failures(site)
    # pg-vector's scores are cosines of the same stored vectors, so it is caught too
    assert sorted(failed) == ["run:tiny/dense", "run:tiny/pg-vector"]
    assert any(
        m.startswith("evidence/tiny/runs/dense.json: query q2: ") and "d3" in m for m in failed["run:tiny/dense"]
    )


def test_wrong_component_ranks_in_a_fusion_run_are_caught(site: Path) -> None:
    rel = "evidence/tiny/runs/rrf-dense-bm25.json"
    run_doc = read_evidence(site, rel)
    top = run_doc["queries"]["q2"][0]
    top["components"]["bm25"] = 7
    save(site, rel, run_doc)
    messages = failures(site)["run:tiny/rrf-dense-bm25"]
    assert messages[0].startswith(f"{rel}: query q2: rank 1 doc {top['doc_id']}: components ")


def test_a_trec_file_that_disagrees_with_its_json_run_is_caught(site: Path) -> None:
    rel = "evidence/rich/runs/bm25.trec"
    lines = (site / rel).read_text().splitlines(keepends=True)
    lines[0], lines[1] = lines[1], lines[0]
    (site / rel).write_text("".join(lines))
    update_manifest(site, rel)
    qid = lines[0].split()[0]
    assert failures(site)["trec:rich/bm25"][0].startswith(f"{rel}: query {qid}: rank 1 is doc ")


def test_corpus_summary_counts_are_checked(site: Path) -> None:
    rel = "evidence/rich/corpus.json"
    summary = read_evidence(site, rel)
    summary["answerable_queries"] += 1
    save(site, rel, summary)
    assert failures(site)["corpus:rich"] == [f"{rel}: answerable_queries is 5, the inputs give 4"]


def test_a_changed_hit_count_on_the_pages_is_caught(site: Path) -> None:
    rel = "evidence/tiny/report.json"
    report = read_evidence(site, rel)
    report["hit_counts"]["overall"]["dense"]["hit@1"] += 1
    save(site, rel, report)
    (message,) = failures(site)["report:tiny"]
    assert message.startswith(f"{rel}: hit_counts.overall: stored") and "dense" in message


def test_a_changed_tie_aware_value_is_caught(site: Path) -> None:
    rel = "evidence/tiny/ties.json"
    ties = read_evidence(site, rel)
    ties["rankers"]["bm25"]["metrics"]["mrr@10"]["expected_mean"] += 0.01
    ties["rankers"]["dense"]["metrics"]["ndcg@10"]["depending"] += 1
    save(site, rel, ties)
    messages = failures(site)["ties:tiny"]
    assert any("bm25: mrr@10 expected_mean" in m for m in messages)
    assert any("dense: ndcg@10 depending" in m for m in messages)


def test_a_changed_rank_of_the_right_passage_is_caught(site: Path) -> None:
    rel = "evidence/tiny/report.json"
    report = read_evidence(site, rel)
    report["first_relevant_rank"]["q2"]["bm25"] = 7
    save(site, rel, report)
    (message,) = failures(site)["report:tiny"]
    assert message.startswith(f"{rel}: first_relevant_rank.q2: stored") and "'bm25': 7" in message


@pytest.mark.parametrize(
    ("where", "value", "label"),
    [
        (("failures", "counts", "overall", "all-miss"), 7, "failures.counts"),
        (("failures", "questions", "q1"), "only-dense", "failures.questions"),
        (("judged", "rankers", "bm25", "judged"), 0.75, "judged: stored"),
        (("judged", "rankers", "dense", "ndcg_condensed"), 0.5, "judged: stored"),
    ],
)
def test_a_changed_failure_class_count_or_judged_depth_is_caught(site: Path, where: tuple, value, label: str) -> None:
    rel = "evidence/tiny/report.json"
    report = read_evidence(site, rel)
    node = report
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    save(site, rel, report)
    messages = failures(site)["report:tiny"]
    assert any(m.startswith(f"{rel}: {label}") for m in messages), messages


@pytest.mark.parametrize(
    ("where", "label"),
    [
        (("sweeps", "rrf-dense-bm25", "k", "rows", 0, "overall", "mrr@10"), "sweeps.rrf-dense-bm25.k.rows[0].overall"),
        (("significance", "pairs", 0, "difference"), "significance.pairs[0]"),
        (("significance", "methods", "lattice"), "significance.methods"),
        (("significance", "detectable", "ndcg@10", "mde"), "significance.detectable"),
        (("significance", "groups", "ndcg@10", "rows", 0, "letters"), "significance.groups"),
        (("significance", "headline", "difference"), "significance.headline"),
        (("heldout", "results", "rrf-dense-bm25", "k", "folds", 0, "p_method"), "heldout.rrf-dense-bm25.k.folds[0]"),
        (("significance", "pairs", 0, "tukey_p"), "significance.pairs[0]"),
        (("significance", "pairs", 0, "wins"), "significance.pairs[0]"),
        (("significance", "tukey", "by_metric", "ndcg@10", "significant"), "significance.tukey.by_metric"),
        (("heldout", "results", "rrf-dense-bm25", "candidates", "folds", 1, "chosen"), "heldout.rrf-dense-bm25."),
        (("ablation", "rows", 1, "overall", "hit@1"), "ablation.rows"),
        (("unanswerable", "rows", "bm25", "q4", "hits"), "unanswerable"),
    ],
)
def test_a_changed_experiment_value_is_caught(site: Path, where: tuple, label: str) -> None:
    rel = "evidence/tiny/experiments.json"
    experiments = read_evidence(site, rel)
    node = experiments
    for key in where[:-1]:
        node = node[key]
    value = node[where[-1]]
    node[where[-1]] = [9, 9] if isinstance(value, list) else f"{value}x" if isinstance(value, str) else value + 1
    save(site, rel, experiments)
    messages = failures(site)["experiments:tiny"]
    assert any(m.startswith(f"{rel}: {label}") for m in messages), messages


def test_a_changed_pack_or_answer_count_is_caught(site: Path) -> None:
    rel = "evidence/tiny/packing.json"
    packing = read_evidence(site, rel)
    smallest = packing["settings"][1]  # the smallest budget, derived from the passage lengths
    packing["packs"]["dense"]["q1"][smallest]["ranks"] = [1, 2, 3]
    packing["results"]["bm25"]["overall"]["answer_included"]["top3"] += 1
    save(site, rel, packing)
    messages = failures(site)["packing:tiny"]
    assert any(m.startswith(f"{rel}: packs.dense.q1: stored") for m in messages)
    assert any(m.startswith(f"{rel}: results.bm25: stored") for m in messages)


def test_budgets_that_do_not_follow_from_the_passage_lengths_are_caught(site: Path) -> None:
    rel = "evidence/tiny/packing.json"
    packing = read_evidence(site, rel)
    median = packing["budgets_from"]["median_characters"]
    packing["budgets_from"]["median_characters"] = median + 1
    save(site, rel, packing)
    messages = failures(site)["packing:tiny"]
    assert any(m.startswith(f"{rel}: budgets ") and f"a median of {median}," in m for m in messages), messages


def test_a_best_value_marked_clear_that_leads_by_one_question_or_less_is_caught(site: Path) -> None:
    rel = "evidence/tiny/report.json"
    report = read_evidence(site, rel)
    report["best_clear"]["overall"]["hit@1"] = not report["best_clear"]["overall"]["hit@1"]
    save(site, rel, report)
    (message,) = failures(site)["report:tiny"]
    assert message.startswith(f"{rel}: best_clear.overall: stored")


def test_a_changed_citation_verdict_is_caught(site: Path) -> None:
    rel = "evidence/rich/packing.json"
    packing = read_evidence(site, rel)
    assert packing["citations"]["r3"][1]["verdicts"]["bm25"]["top3"] == "unknown-id"
    packing["citations"]["r3"][1]["verdicts"]["bm25"]["top3"] = "valid"
    save(site, rel, packing)
    (message,) = failures(site)["packing:rich"]
    assert (
        message == f"{rel}: citations.r3[1] (invented-id): ranker bm25, top3: stored 'valid', recomputed 'unknown-id'"
    )


def test_a_shipped_ranker_is_checked_by_its_own_verifier_whatever_its_run_declares(site: Path) -> None:
    rel = "evidence/tiny/runs/bm25.json"
    run_doc = read_evidence(site, rel)
    run_doc["params"]["method"] = "magic"
    save(site, rel, run_doc)
    assert failures(site)["run:tiny/bm25"] == [
        f"{rel}: ranker bm25: params.method is 'magic', expected 'okapi-bm25'; checked as lexical: okapi-bm25"
    ]


def test_the_script_in_the_site_runs_as_a_subprocess_with_only_numpy(site: Path, numpy_only_python: Path) -> None:
    """A test build passes `python audit.py` in a fresh virtualenv that has only numpy (audit.py imports nothing else:
    tests/unit/audit/test_audit_script.py), printing its own sha256 first, and fails once tampered."""
    assert (site / "audit.py").read_bytes() == AUDIT_SOURCE.read_bytes()
    python = str(numpy_only_python)
    good = subprocess.run(
        [python, str(site / "audit.py")], capture_output=True, text=True, check=False, env=clean_env()
    )
    assert good.returncode == 0, good.stdout + good.stderr
    lines = good.stdout.splitlines()
    assert lines[0].startswith(f"audit.py sha256 {audit._sha256(AUDIT_SOURCE)}")  # its own sha256 first
    assert lines[-1].startswith("AUDIT PASS")
    (site / "evidence/tiny/metrics.json").write_text("{}\n")
    bad = run_python(numpy_only_python, "audit.py", cwd=site)
    assert bad.returncode == 1 and "FAIL metrics:tiny/bm25" in bad.stdout


def test_the_audit_reads_jsonl_as_the_loader_does_line_separators_in_strings_and_a_bom(tmp_path: Path) -> None:
    """A raw U+2028 inside a JSON string is not a line break and a BOM may open line 1: the corpus loader
    accepts both, so the build's own audit must read the bundled copies the same way and pass."""
    docs = [dict(d) for d in TINY_DOCS]
    docs[0]["text"] = "How to refund\u2028a card payment\u0085in full or in part."
    folder = write_corpus(tmp_path / "corpora" / "tiny", docs=docs)
    corpus = folder / "corpus.jsonl"
    corpus.write_bytes(b"\xef\xbb\xbf" + corpus.read_bytes().replace(b"\\u2028", "\u2028".encode()))
    assert "\u2028".encode() in corpus.read_bytes()
    out = tmp_path / "site"
    build(tmp_path / "corpora", out, rankers=("bm25",))
    report = json.loads((out / "audit.json").read_text())
    assert report["verdict"] == "pass"


def test_a_badge_that_claims_another_result_fails_even_with_pages_json_recomputed(site: Path) -> None:
    page = site / "index.html"
    text = page.read_text(encoding="utf-8")
    assert "Audit: passed (" in text
    page.write_text(text.replace("Audit: passed (", "Audit: passed (1", 1), encoding="utf-8")
    write_page_listing(site)
    report = audit.run_audit(site, echo=lambda line: None)
    pages = next(c for c in report["checks"] if c["name"] == "pages")
    assert report["verdict"] == "fail" and pages["status"] == "fail"
    assert "index.html: the audit badge reads" in pages["detail"]
