"""``sitegen diff`` on real bundles: the committed site against its copy, and edited copies of one corpus's committed
evidence against that evidence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sitegen.compare.diff import (
    diff_bundles,
)
from sitegen.compare.diff_format import format_diff
from sitegen.compare.diff_results import BundleDiff, RankMove
from sitegen.publish.evidence import canonical_json, read_run, write_run
from sitegen.publish.reader import qrels_grades
from tests.helpers import REPO, rehash_manifest, run_cli

# Slow: each diff reads every file of the committed site
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the committed site per module: the baseline the edited copies are compared with."""
    target = tmp_path_factory.mktemp("committed") / "site"
    shutil.copytree(REPO / "site", target)
    return target


EDITED_CORPUS = "payments-support"


@pytest.fixture(scope="module")
def payments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed evidence of payments-support alone (the other corpora's folders left out, the manifest
    rehashed): the baseline of the edits below, so that each diff reads one corpus rather than four."""
    target = tmp_path_factory.mktemp("payments") / "site"
    shutil.copytree(REPO / "site" / "evidence", target / "evidence")
    manifest_path = target / "evidence" / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for corpus in manifest["corpora"]:
        if corpus != EDITED_CORPUS:
            shutil.rmtree(target / "evidence" / corpus)
    manifest["corpora"] = [EDITED_CORPUS]
    manifest_path.write_bytes(canonical_json(manifest))
    rehash_manifest(target)
    return target


@pytest.fixture
def edited(payments: Path, tmp_path: Path) -> Path:
    """A fresh copy of that evidence to edit (a site folder holding only ``evidence/``)."""
    shutil.copytree(payments / "evidence", tmp_path / "edited" / "evidence")
    return tmp_path / "edited"


def _edit_json(path: Path, change: Any) -> None:
    """Change an evidence file; a run is edited as {"doc_id", "rank", "score"} hits (either schema) and
    written back compact, as a build writes it."""
    is_run = path.parent.name == "runs"
    doc = read_run(path) if is_run else json.loads(path.read_text(encoding="utf-8"))
    change(doc)
    if is_run:
        write_run(path, doc)
    else:
        path.write_bytes(canonical_json(doc))


@pytest.fixture(scope="module")
def committed_diff(site_copy: Path) -> BundleDiff:
    """The committed site against its copy: read once (ten seconds) for the tests below."""
    return diff_bundles(REPO / "site", site_copy, 0.0)


def test_committed_site_and_its_copy_are_identical_with_exit_0(committed_diff: BundleDiff, site_copy: Path) -> None:
    """What ``sitegen diff`` prints and its exit status (0 when equivalent; tests/unit/compare runs the command)."""
    assert committed_diff.equivalent
    text = format_diff(committed_diff)
    total = len(json.loads((site_copy / "evidence" / "manifest.json").read_text())["files"])
    assert text.startswith(f"identical rankings and metrics; {total} of {total} files identical; ")
    assert "largest score difference 0 within tolerance 0" in text.splitlines()[0]


def test_a_score_moved_by_1e7_passes_with_tolerance_1e6_and_fails_when_exact(payments: Path, edited: Path) -> None:
    run_path = edited / "evidence" / "payments-support" / "runs" / "dense.json"
    qid = next(iter(read_run(run_path)["queries"]))

    def nudge(doc: dict[str, Any]) -> None:
        doc["queries"][qid][0]["score"] += 1e-7

    _edit_json(run_path, nudge)
    rehash_manifest(edited)
    loose = run_cli("diff", "--tolerance", "1e-6", payments, edited)
    assert loose.exit_code == 0, loose.output
    assert f"(dense, payments-support {qid}) within tolerance 1e-06" in loose.output.splitlines()[0]
    exact = run_cli("diff", payments, edited)
    assert exact.exit_code == 1
    summary = exact.output.splitlines()[0]
    assert summary.startswith("identical rankings and metrics; ")
    assert f"(dense, payments-support {qid}) exceeds tolerance 0" in summary
    assert "differ     evidence/payments-support/runs/dense.json" in exact.output


def test_two_swapped_hits_are_different_rankings_naming_the_query(payments: Path, edited: Path) -> None:
    base = edited / "evidence" / "payments-support"
    grades = qrels_grades((base / "inputs" / "qrels" / "test.tsv").read_text(), "qrels/test.tsv")
    run_path = base / "runs" / "bm25.json"
    queries = read_run(run_path)["queries"]
    # A query whose rank-1 passage is relevant and rank-2 one is not: the swap moves it from 1 to 2.
    qid = next(
        q
        for q, hits in queries.items()
        if len(hits) > 1
        and grades.get(q, {}).get(hits[0]["doc_id"], 0) > 0
        and grades.get(q, {}).get(hits[1]["doc_id"], 0) == 0
    )

    def swap(doc: dict[str, Any]) -> None:
        first, second = doc["queries"][qid][0], doc["queries"][qid][1]
        first["doc_id"], second["doc_id"] = second["doc_id"], first["doc_id"]

    _edit_json(run_path, swap)
    rehash_manifest(edited)
    result = run_cli("diff", payments, edited)
    assert result.exit_code == 1
    assert result.output.startswith("rankings differ (1 query in 1 run); identical metrics; ")
    assert f"payments-support/bm25: 1 of 60 queries ranked differently ({qid})" in result.output
    diff = diff_bundles(payments, edited, 0.0)
    assert [r.differing_queries for r in diff.runs if not r.rankings_identical] == [(qid,)]
    assert diff.moves == (RankMove("payments-support", "bm25", qid, 1, 2),)


def test_a_changed_metric_is_reported_with_both_values(payments: Path, edited: Path) -> None:
    metrics_path = edited / "evidence" / "payments-support" / "metrics.json"
    before = json.loads(metrics_path.read_text())["bm25"]["overall"]["hit@1"]

    def bump(doc: dict[str, Any]) -> None:
        doc["bm25"]["overall"]["hit@1"] += 0.1

    _edit_json(metrics_path, bump)
    rehash_manifest(edited)
    result = run_cli("diff", payments, edited)
    assert result.exit_code == 1
    assert result.output.startswith("identical rankings; 1 metric value differs; ")
    assert f"payments-support/bm25 hit@1: {before:.6g} -> {before + 0.1:.6g} (+0.1)" in result.output


def test_a_file_not_matching_its_manifest_is_refused_with_one_line_and_exit_1(payments: Path, edited: Path) -> None:
    report = edited / "evidence" / "payments-support" / "report.json"
    report.write_bytes(report.read_bytes() + b" ")
    result = run_cli("diff", payments, edited)
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)
    assert result.output.startswith("error: cannot compare: ") and result.output.count("\n") == 1
    assert f"{report}: sha256 does not match" in result.output
    assert "Traceback" not in result.output


def test_exact_fails_on_a_vector_difference_that_the_default_lets_pass(payments: Path, edited: Path) -> None:
    """--exact guards a published bundle: a changed embedding file fails it, though rankings and metrics agree."""
    npy = edited / "evidence" / "payments-support" / "embeddings" / "queries.npy"
    vectors = np.load(npy)
    vectors[0, 0] = np.nextafter(vectors[0, 0], np.float32(2.0))
    npy.write_bytes(b"")
    np.save(npy, vectors)
    rehash_manifest(edited)
    assert run_cli("diff", payments, edited).exit_code == 0
    exact = run_cli("diff", "--exact", payments, edited)
    assert exact.exit_code == 1, exact.output
    assert "differ     evidence/payments-support/embeddings/queries.npy" in exact.output


def test_committed_site_against_its_copy_reproduces_exactly(committed_diff: BundleDiff) -> None:
    """The reproduction measures of a bundle against its own copy: RMSE 0, ER 1, ΔRI 0, RBO_ext 1."""
    diff = committed_diff
    rep = diff.reproduction
    assert rep.scores and all(s.rmse == 0.0 for s in rep.scores)
    assert rep.rankings and all(g.mean_rbo == 1.0 for g in rep.rankings)
    assert rep.effects and all(e.er in (None, 1.0) and e.delta_ri in (None, 0.0) for e in rep.effects)
    assert {(e.baseline, e.advanced) for e in rep.effects} == {("bm25", "rrf-dense-bm25")}
    text = format_diff(diff)
    assert f"RMSE of per-question scores: {len(rep.scores)} (ranker, metric) series, 0 above 0, largest 0;" in text
    assert f"mean over questions for {len(rep.rankings)} runs, {len(rep.rankings)} at 1" in text
