"""The regression gate on a built site: record then check, an injected regression, OK* and a missing ranker, and
a bundle failing its manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.compare.gate import (
    FORMAT_WITHOUT_INPUTS,
    OK,
    check_gate,
    load_gate,
    one_question_tolerance,
    record_gate,
    summary_line,
)
from sitegen.errors import BundleError
from sitegen.scoring.metrics import metric_names
from tests.helpers import build, copy_site, rehash_manifest, write_corpus


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gate")
    build(write_corpus(root / "corpora" / "tiny").parent, root / "site", rankers=("bm25",))
    return root / "site"


def test_record_then_check_passes_on_the_unchanged_site(site: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate.json"
    recorded = record_gate(site, gate)
    metrics = json.loads((site / "evidence" / "tiny" / "metrics.json").read_text())
    assert len(recorded.expectations) == len(metrics["bm25"]["overall"])
    assert {e.ranker for e in recorded.expectations} == {"bm25"}
    first = record_gate(site, tmp_path / "again.json")
    assert first == recorded and (tmp_path / "again.json").read_bytes() == gate.read_bytes()
    outcome = check_gate(gate, site)
    assert not outcome.failed and {r.status for r in outcome.results} == {OK} and outcome.unchecked == ()
    assert outcome.results == tuple(check_gate(gate, site / "evidence").results)  # an evidence folder works too


def _regressed_copy(site: Path, tmp_path: Path, metric: str, drop: float) -> Path:
    copy = copy_site(site, tmp_path / "regressed")
    path = copy / "evidence" / "tiny" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["bm25"]["overall"][metric] -= drop
    path.write_text(json.dumps(metrics, sort_keys=True, indent=2) + "\n")
    rehash_manifest(copy)
    return copy


def test_cli_check_of_an_injected_regression_exits_1_with_the_fail_line(site: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate.json"
    runner = CliRunner()
    recorded = runner.invoke(cli, ["gate", "record", str(site), "--out", str(gate), "--tolerance", "0.001"])
    assert recorded.exit_code == 0, recorded.output
    n = len(metric_names())
    assert recorded.output.startswith(f"wrote {gate}: {n} checks (tiny), precision 4, tolerance 0.001")
    assert json.loads(gate.read_text())["tolerance"] == {"rule": "fixed", "value": 0.001}
    expected = json.loads((site / "evidence" / "tiny" / "metrics.json").read_text())["bm25"]["overall"]["ndcg@10"]
    regressed = _regressed_copy(site, tmp_path, "ndcg@10", 0.05)

    result = runner.invoke(cli, ["gate", "check", str(gate), str(regressed)])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    want = (
        f"[FAIL] tiny/bm25 ndcg@10 expected {expected:.4f} actual {expected - 0.05:.4f} "
        "(delta 0.0500, tolerance 0.0010)"
    )
    assert want in lines
    assert sum(line.startswith("[OK] tiny/bm25 ") for line in lines) == n - 1
    assert lines[-1] == f"gate FAIL: {n} checks against {regressed}: {n - 1} OK, 0 OK*, 1 FAIL"

    listed = runner.invoke(cli, ["gate", "check", "--json", str(gate), str(regressed)])
    assert listed.exit_code == 1
    results = json.loads(listed.output)
    failed = [r for r in results if r["status"] == "FAIL"]
    assert [(r["corpus"], r["ranker"], r["metric"]) for r in failed] == [("tiny", "bm25", "ndcg@10")]
    assert failed[0]["delta"] == 0.05 and failed[0]["problem"] is None

    passed = runner.invoke(cli, ["gate", "check", str(gate), str(site)])
    assert passed.exit_code == 0 and passed.output.splitlines()[-1].startswith(f"gate PASS: {n} checks")


def test_check_reports_ok_star_and_a_missing_ranker(site: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate.json"
    record_gate(site, gate, tolerance=0.001)
    data = json.loads(gate.read_text())
    data["checks"].append({**data["checks"][0], "ranker": "dense"})
    gate.write_text(json.dumps(data))
    near = _regressed_copy(site, tmp_path, "hit@1", 0.0014)
    result = CliRunner().invoke(cli, ["gate", "check", str(gate), str(near)])
    assert result.exit_code == 1
    assert any(line.startswith("[OK*] tiny/bm25 hit@1 ") for line in result.output.splitlines())
    assert "[FAIL] tiny/dense hit@1 expected 1.0000 actual missing (corpus tiny has no ranker dense)" in result.output


def test_a_bundle_failing_its_manifest_is_refused(site: Path, tmp_path: Path) -> None:
    copy = copy_site(site, tmp_path / "tampered")
    path = copy / "evidence" / "tiny" / "metrics.json"
    path.write_text(path.read_text().replace("0.", "0.9", 1))
    with pytest.raises(BundleError, match="sha256 does not match"):
        record_gate(copy, tmp_path / "gate.json")
    assert not (tmp_path / "gate.json").exists()
    gate = tmp_path / "ok.json"
    record_gate(site, gate)
    result = CliRunner().invoke(cli, ["gate", "check", str(gate), str(copy)])
    assert result.exit_code == 1 and "gate check failed" in result.output and "refused" in result.output


def _site_from_other_questions(site: Path, tmp_path: Path) -> Path:
    """A copy of ``site`` whose corpus.json says it was built from another queries.jsonl (manifest rehashed)."""
    copy = tmp_path / "other-questions"
    copy_site(site, copy)
    path = copy / "evidence" / "tiny" / "corpus.json"
    summary = json.loads(path.read_text(encoding="utf-8"))
    summary["input_sha256"]["queries.jsonl"] = "0" * 64
    path.write_text(json.dumps(summary), encoding="utf-8")
    rehash_manifest(copy)
    return copy


def test_a_site_built_from_another_question_set_fails_the_gate_naming_the_file(site: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate.json"
    recorded = record_gate(site, gate)
    assert recorded.inputs is not None and set(recorded.inputs["tiny"]) == {"qrels/test.tsv", "queries.jsonl"}
    other = _site_from_other_questions(site, tmp_path)
    outcome = check_gate(gate, other)
    assert {r.status for r in outcome.results} == {OK}  # every metric is unchanged: only the inputs tell
    assert outcome.failed and outcome.changed_inputs == (
        f"tiny: queries.jsonl: sha256 {'0' * 64}, the gate recorded {recorded.inputs['tiny']['queries.jsonl']}",
    )
    result = CliRunner().invoke(cli, ["gate", "check", str(gate), str(other)])
    assert result.exit_code == 1 and "[FAIL] inputs tiny: queries.jsonl" in result.output
    assert "1 question-set file changed since the gate was recorded" in result.output
    allowed = CliRunner().invoke(cli, ["gate", "check", str(gate), str(other), "--allow-changed-inputs"])
    assert allowed.exit_code == 0 and "[CHANGED] inputs tiny: queries.jsonl" in allowed.output


def test_a_gate_file_of_the_first_format_still_checks_metrics_and_says_it_records_no_inputs(
    site: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate.json"
    record_gate(site, gate)
    data = json.loads(gate.read_text(encoding="utf-8"))
    del data["inputs"]
    data["format"] = FORMAT_WITHOUT_INPUTS
    gate.write_text(json.dumps(data), encoding="utf-8")
    outcome = check_gate(gate, _site_from_other_questions(site, tmp_path))
    assert not outcome.failed and outcome.inputs_unrecorded
    assert "records no question set" in summary_line(outcome, "x")


def test_a_recorded_gate_says_its_tolerance_follows_the_question_set(site: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate.json"
    recorded = record_gate(site, gate)
    data = json.loads(gate.read_text())
    assert data["tolerance"] == {"rule": "one-question", "questions": {"tiny": 3}}
    assert {e.tolerance for e in recorded.expectations} == {one_question_tolerance(3, 4)}
    assert load_gate(gate).tolerance == data["tolerance"]
    one = _regressed_copy(site, tmp_path, "hit@1", 1 / 3)  # one of the three questions lost
    assert {r.status for r in check_gate(gate, one).results} == {OK}
