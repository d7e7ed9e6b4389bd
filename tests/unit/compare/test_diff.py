"""``sitegen diff``: two bundles compared by files, rankings, scores, metrics, first relevant ranks,
vectors and manifest fields; exit 0 only when the results agree."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sitegen.compare.diff import (
    compare_first_relevant,
    compare_manifest_fields,
    compare_metrics,
    compare_runs,
    compare_vectors,
    diff_bundles,
    first_relevant_ranks,
)
from sitegen.compare.diff_format import format_diff
from sitegen.compare.diff_results import HitRef, MetricChange, RankMove
from sitegen.errors import BundleError
from sitegen.publish.evidence import canonical_json
from sitegen.publish.reader import qrels_grades
from tests.helpers import REPO, rehash_manifest, run_cli

MANIFEST_FIELDS: dict[str, Any] = {
    "schema_version": 1,
    "tool": {"name": "sitegen", "version": "0.1.0"},
    "python": "3.11.7",
    "libraries": {"numpy": "2.4.6", "click": "8.5.1"},
    "model": {"name": "fake", "weights_sha256": "f" * 64},
    "postgres": None,
}


# --------------------------------------------------------------------------------------------- helpers


def write_bundle(site: Path, corpora: Mapping[str, Mapping[str, Any]], **fields: Any) -> Path:
    """Write ``site/evidence/`` from small specs, with a manifest whose sha256s are right.

    Per corpus: ``runs`` {ranker: {qid: [doc_id | (doc_id, score)]}} (ranks 1..n, default score 100 - rank),
    ``metrics`` {ranker: {metric: value}}, ``qrels`` [(qid, doc_id, grade)], ``chunk_qrels``
    {qid: {chunk_id: grade}} (written as chunking.json), ``vectors`` {name: (ids, rows)}.
    """
    evidence = site / "evidence"
    for corpus, spec in corpora.items():
        base = evidence / corpus
        for ranker, queries in spec.get("runs", {}).items():
            hits: dict[str, list[dict[str, Any]]] = {}
            for qid, docs in queries.items():
                rows = []
                for rank, doc in enumerate(docs, start=1):
                    doc_id, score = doc if isinstance(doc, tuple) else (doc, 100.0 - rank)
                    rows.append({"doc_id": doc_id, "rank": rank, "score": score})
                hits[qid] = rows
            run = {"schema_version": 1, "corpus": corpus, "ranker": ranker, "params": {}, "depth": 100}
            (base / "runs").mkdir(parents=True, exist_ok=True)
            (base / "runs" / f"{ranker}.json").write_bytes(canonical_json({**run, "queries": hits}))
        if "metrics" in spec:
            scored = {r: {"overall": o, "by_kind": {}, "per_query": {}} for r, o in spec["metrics"].items()}
            base.mkdir(parents=True, exist_ok=True)
            (base / "metrics.json").write_bytes(canonical_json(scored))
        if "qrels" in spec:
            (base / "inputs" / "qrels").mkdir(parents=True, exist_ok=True)
            rows = "".join(f"{q}\t{d}\t{g}\n" for q, d, g in spec["qrels"])
            (base / "inputs" / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
        if "chunk_qrels" in spec:
            (base / "chunking.json").write_bytes(canonical_json({"schema_version": 1, "qrels": spec["chunk_qrels"]}))
        if "vectors" in spec:
            (base / "embeddings").mkdir(parents=True, exist_ok=True)
            index: dict[str, Any] = {}
            for name, (ids, rows) in spec["vectors"].items():
                np.save(base / "embeddings" / f"{name}.npy", np.asarray(rows, dtype="<f4"), allow_pickle=False)
                index[name] = list(ids)
            (base / "embeddings" / "index.json").write_bytes(canonical_json(index))
    evidence.mkdir(parents=True, exist_ok=True)
    manifest = {**MANIFEST_FIELDS, "corpora": sorted(corpora), **fields, "files": {}}
    (evidence / "manifest.json").write_bytes(canonical_json(manifest))
    rehash_manifest(site)
    return site


# Relevance: q1 d1 (d9 judged 0), q2 d3, q3 d2, q4 none, q5 d5, q6 d6.
QRELS = [("q1", "d1", 2), ("q1", "d9", 0), ("q2", "d3", 1), ("q3", "d2", 1), ("q4", "d4", 0), ("q5", "d5", 1)]
QRELS += [("q6", "d6", 1)]
RUN_A = {"q1": ["d9", "d2", "d1"], "q2": ["d3", "d4"], "q3": ["d2"], "q4": ["d1"], "q5": ["d5"], "q6": ["d1"]}
RUN_B = {"q1": ["d1", "d9"], "q2": ["d4", "d2"], "q3": ["d2"], "q4": ["d4"], "q6": ["d1", "d6"]}
METRICS = {"bm25": {"hit@1": 0.5, "mrr@10": 0.625}}


def small_pair(tmp_path: Path) -> tuple[Path, Path]:
    a = write_bundle(tmp_path / "a", {"tiny": {"runs": {"bm25": RUN_A}, "metrics": METRICS, "qrels": QRELS}})
    b = write_bundle(tmp_path / "b", {"tiny": {"runs": {"bm25": RUN_B}, "metrics": METRICS, "qrels": QRELS}})
    return a, b


# ------------------------------------------------------------------------------ hand-made bundles


def test_first_relevant_rank_moves_are_listed_per_question_including_one_that_drops_out(tmp_path: Path) -> None:
    a, b = small_pair(tmp_path)
    diff = diff_bundles(a, b, 0.0)
    # q1: 3 -> 1 (d9 at rank 1 is judged 0, not relevant); q2: d3 drops out of the run; q3 and q4 do not
    # move (q4 has no relevant passage); q5 is missing from B's run; q6 enters at rank 2.
    assert diff.moves == (
        RankMove("tiny", "bm25", "q1", 3, 1),
        RankMove("tiny", "bm25", "q2", 1, None),
        RankMove("tiny", "bm25", "q5", 1, None),
        RankMove("tiny", "bm25", "q6", None, 2),
    )
    result = run_cli("diff", a, b)
    assert result.exit_code == 1
    assert "tiny/bm25 q2: 1 -> not retrieved" in result.output
    assert "tiny/bm25 q6: not retrieved -> 2" in result.output


def test_first_relevant_ranks_follow_the_bundle_qrels_grade_above_zero() -> None:
    grades = qrels_grades("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td9\t0\nq2\td3\t1\n", "qrels/test.tsv")
    run = {"queries": {"q1": [{"doc_id": d, "rank": r, "score": 1.0} for r, d in enumerate(["d9", "d1"], 1)]}}
    assert first_relevant_ranks(run, grades) == {"q1": 2, "q2": None}
    assert compare_first_relevant("c", "r", {"q1": 2, "q2": None}, {"q1": 2, "q2": 4}) == (
        RankMove("c", "r", "q2", None, 4),
    )


def test_chunked_corpus_takes_its_labels_from_chunking_json_not_the_document_qrels(tmp_path: Path) -> None:
    spec = {"qrels": [("t1", "doc-a", 1), ("t2", "doc-b", 2)], "chunk_qrels": {"t1": {"doc-a@0:10": 1}}}
    a = write_bundle(tmp_path / "a", {"handbook": {**spec, "runs": {"dense": {"t1": ["doc-a@10:20", "doc-a@0:10"]}}}})
    b = write_bundle(tmp_path / "b", {"handbook": {**spec, "runs": {"dense": {"t1": ["doc-a@0:10"]}}}})
    # With the document-level TSV no chunk id is relevant and nothing would move.
    assert diff_bundles(a, b, 0.0).moves == (RankMove("handbook", "dense", "t1", 2, 1),)


def test_score_difference_is_measured_only_on_the_same_document_at_the_same_rank() -> None:
    def run(hits: list[tuple[str, float]]) -> dict[str, Any]:
        return {"queries": {"q1": [{"doc_id": d, "rank": r, "score": s} for r, (d, s) in enumerate(hits, 1)]}}

    a = run([("x", 0.9), ("y", 0.5), ("z", 0.3)])
    b = run([("y", 0.1), ("x", 0.05), ("z", 0.3000002)])
    diff = compare_runs("c", "dense", a, b)
    assert diff.differing_queries == ("q1",)
    assert diff.compared_hits == 1  # only z sits at the same rank on both sides
    assert diff.max_score_diff == pytest.approx(2e-7)
    assert diff.max_score_at == HitRef("q1", "z", 3)


def test_identical_scores_have_no_largest_difference_location() -> None:
    a = {"queries": {"q1": [{"doc_id": "x", "rank": 1, "score": 0.5}]}}
    diff = compare_runs("c", "dense", a, a)
    assert (diff.max_score_diff, diff.max_score_at, diff.compared_hits) == (0.0, None, 1)
    assert diff.rankings_identical


def test_metric_comparison_lists_every_value_and_marks_a_missing_one_as_none() -> None:
    a = {"bm25": {"overall": {"hit@1": 0.5, "hit@10": 1.0, "hit@5": 0.75}}}
    b = {"bm25": {"overall": {"hit@1": 0.5, "hit@10": 0.9}}, "dense": {"overall": {"hit@1": 0.25}}}
    changes = compare_metrics("c", a, b)
    # Natural order: hit@5 before hit@10.
    assert [(m.ranker, m.metric, m.a, m.b, m.changed) for m in changes] == [
        ("bm25", "hit@1", 0.5, 0.5, False),
        ("bm25", "hit@5", 0.75, None, True),
        ("bm25", "hit@10", 1.0, 0.9, True),
        ("dense", "hit@1", None, 0.25, True),
    ]
    assert changes[2].delta == pytest.approx(-0.1)
    assert MetricChange("c", "r", "m", None, 0.25).delta is None


def test_manifest_field_differences_are_named_down_to_the_library() -> None:
    a = {**MANIFEST_FIELDS, "files": {"evidence/x": {"sha256": "1"}}}
    b = {**MANIFEST_FIELDS, "libraries": {"numpy": "2.5.0", "click": "8.5.1"}, "python": "3.12.1", "files": {}}
    changes = compare_manifest_fields(a, b)
    assert [(c.field, c.a, c.b) for c in changes] == [
        ("libraries.numpy", "2.4.6", "2.5.0"),
        ("python", "3.11.7", "3.12.1"),
    ]


def test_vectors_are_compared_component_by_component_only_when_row_ids_match() -> None:
    a = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    b = a.copy()
    b[1, 0] = 0.9999
    diff = compare_vectors("c", "passages.npy", ["d1", "d2"], a, ["d1", "d2"], b)
    assert diff.max_abs_diff == pytest.approx(1e-4, rel=1e-2)
    assert (diff.at_id, diff.at_component) == ("d2", 0)
    other = compare_vectors("c", "passages.npy", ["d1", "d2"], a, ["d2", "d1"], b)
    assert (other.ids_match, other.max_abs_diff) == (False, None)


def test_embedding_and_version_differences_are_reported_but_do_not_fail(tmp_path: Path) -> None:
    ids = ["d1", "d2"]
    spec = {"runs": {"bm25": RUN_A}, "metrics": METRICS, "qrels": QRELS}
    a = write_bundle(tmp_path / "a", {"tiny": {**spec, "vectors": {"passages": (ids, [[0.6, 0.8], [1.0, 0.0]])}}})
    b = write_bundle(
        tmp_path / "b",
        {"tiny": {**spec, "vectors": {"passages": (ids, [[0.6, 0.8], [1.0, 0.5]])}}},
        python="3.12.1",
    )
    result = run_cli("diff", a, b)
    assert result.exit_code == 0, result.output
    assert "tiny/passages.npy: 0.5 at d2, component 1" in result.output
    assert "manifest: 1 field differs\n  python: 3.11.7 -> 3.12.1" in result.output
    assert "evidence/tiny/embeddings/passages.npy" in result.output  # listed as a differing file


def test_run_only_in_one_bundle_is_listed_and_fails(tmp_path: Path) -> None:
    a = write_bundle(tmp_path / "a", {"tiny": {"runs": {"bm25": RUN_A}, "qrels": QRELS}})
    b = write_bundle(tmp_path / "b", {"tiny": {"runs": {"bm25": RUN_A, "dense": RUN_A}, "qrels": QRELS}})
    diff = diff_bundles(a, b, 0.0)
    assert diff.runs_only_in_b == ("tiny/dense",) and not diff.rankings_identical
    result = run_cli("diff", a, b)
    assert result.exit_code == 1
    assert "only in B  tiny/dense" in result.output


def test_an_evidence_folder_is_accepted_in_place_of_a_site_folder(tmp_path: Path) -> None:
    a, _ = small_pair(tmp_path)
    result = run_cli("diff", a, a / "evidence")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("identical rankings and metrics; 3 of 3 files identical;")


def test_a_folder_without_a_manifest_is_a_one_line_error_with_exit_1(tmp_path: Path) -> None:
    a, _ = small_pair(tmp_path)
    (tmp_path / "empty").mkdir()
    result = run_cli("diff", a, tmp_path / "empty")
    assert result.exit_code == 1
    assert result.output.startswith("error: cannot compare: ") and "not a site or evidence folder" in result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_a_listed_file_that_is_missing_refuses_the_bundle(tmp_path: Path) -> None:
    a, b = small_pair(tmp_path)
    (b / "evidence" / "tiny" / "metrics.json").unlink()
    with pytest.raises(BundleError, match=r"metrics\.json: listed in .*manifest\.json but missing"):
        diff_bundles(a, b, 0.0)


def test_a_manifest_path_outside_the_evidence_folder_is_refused(tmp_path: Path) -> None:
    a, _ = small_pair(tmp_path)
    manifest_path = a / "evidence" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"]["evidence/../outside.txt"] = {"sha256": "0" * 64, "bytes": 0}
    manifest_path.write_bytes(canonical_json(manifest))
    result = run_cli("diff", a, a)
    assert result.exit_code == 1 and "is not a path under evidence/" in result.output


def test_a_malformed_run_whose_hash_matches_is_a_clean_error_not_a_traceback(tmp_path: Path) -> None:
    a, b = small_pair(tmp_path)
    run = b / "evidence" / "tiny" / "runs" / "bm25.json"
    run.write_text('{"schema_version": 1, "queries": {"q1": [{"doc_id": "d1"}]}}')
    rehash_manifest(b)
    result = run_cli("diff", a, b)
    assert result.exit_code == 1 and result.output.count("\n") == 1
    want = "query 'q1': hit 1 is not an object with a string doc_id, integer rank and finite score"
    assert f"{run}: {want}" in result.output
    run.write_text("{not json")
    rehash_manifest(b)
    result = run_cli("diff", a, b)
    assert result.exit_code == 1 and f"{run}:1: not valid JSON" in result.output and "Traceback" not in result.output


def test_json_and_quiet_together_are_a_usage_error(tmp_path: Path) -> None:
    a, b = small_pair(tmp_path)
    result = run_cli("diff", "--json", "--quiet", a, b)
    assert result.exit_code == 2 and "exclude each other" in result.output


def test_bad_tolerance_is_a_usage_error() -> None:
    for value in ("-1", "nan", "inf", "abc"):
        result = run_cli("diff", "--tolerance", value, REPO / "site", REPO / "site")
        assert result.exit_code == 2, value
        assert "--tolerance" in result.output


def test_quiet_prints_nothing_and_the_exit_status_still_says_they_differ(tmp_path: Path) -> None:
    a, b = small_pair(tmp_path)
    result = run_cli("diff", "--quiet", a, b)
    assert (result.exit_code, result.output) == (1, "")
    assert run_cli("diff", "--quiet", a, a).exit_code == 0


def test_json_output_parses_and_has_sorted_keys_at_every_level(tmp_path: Path) -> None:
    a, b = small_pair(tmp_path)
    result = run_cli("diff", "--json", a, b)
    assert result.exit_code == 1
    parsed = json.loads(result.output)
    assert result.output == json.dumps(parsed, sort_keys=True, indent=2, ensure_ascii=False) + "\n"

    def keys_sorted(obj: Any) -> bool:
        if isinstance(obj, dict):
            return list(obj) == sorted(obj) and all(keys_sorted(v) for v in obj.values())
        if isinstance(obj, list):
            return all(keys_sorted(v) for v in obj)
        return True

    assert keys_sorted(diff_bundles(a, b, 0.0).to_json())
    assert parsed["schema_version"] == 1
    assert parsed["summary"]["equivalent"] is False
    assert parsed["runs"]["compared"][0]["differing_queries"] == ["q1", "q2", "q4", "q5", "q6"]
    assert {"before": 1, "after": None, "corpus": "tiny", "query_id": "q2", "ranker": "bm25"} in parsed[
        "first_relevant_rank"
    ]
    assert parsed["files"]["differ"] == ["evidence/tiny/runs/bm25.json"]


def test_terminal_sections_are_capped_at_ten_lines_with_a_count_of_the_rest(tmp_path: Path) -> None:
    metrics_a = {"bm25": {f"hit@{k}": 0.0 for k in range(1, 13)}}
    metrics_b = {"bm25": {f"hit@{k}": 1.0 for k in range(1, 13)}}
    a = write_bundle(tmp_path / "a", {"tiny": {"metrics": metrics_a}})
    b = write_bundle(tmp_path / "b", {"tiny": {"metrics": metrics_b}})
    text = format_diff(diff_bundles(a, b, 0.0))
    section = text.split("metrics: ", 1)[1].split("first relevant rank:", 1)[0]
    assert "12 overall values compared, 12 differ" in section
    assert section.count("tiny/bm25 hit@") == 10 and "  and 2 more" in section
    assert text.splitlines()[0].startswith("identical rankings; 12 metric values differ;")


# ----------------------------------------------------------------------------- the committed site
