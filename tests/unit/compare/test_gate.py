"""The regression gate: Anserini's rule at its boundaries, record -> check on a built site, a regression."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.build import BuildOptions, build_site
from sitegen.cli import cli
from sitegen.compare.gate import (
    FAIL,
    FORMAT_WITHOUT_INPUTS,
    OK,
    OK_NEAR,
    Expectation,
    GateError,
    GateFile,
    check_gate,
    compare,
    dump_gate,
    expectations_from_metrics,
    format_result,
    judge,
    load_gate,
    one_question_tolerance,
    parse_gate,
    record_gate,
    summary_line,
)
from sitegen.errors import BundleError
from sitegen.scoring.metrics import metric_names
from tests.helpers import REPO, FakeEmbeddingModel, rehash_manifest

# ------------------------------------------------------------------------------------------ the rule


@pytest.mark.parametrize(
    ("expected", "actual", "status", "better"),
    [
        (0.4465, 0.4465, OK, False),  # equal
        (0.44651, 0.44649, OK, False),  # equal after rounding to 4 decimals
        (0.4465, 0.4500, OK, True),  # better, however far
        (0.4465, 0.9, OK, True),
        (0.4465, 0.4455, OK, False),  # a drop of exactly the tolerance
        (0.4465, 0.44545, OK, False),  # 0.4455 after rounding: still exactly the tolerance
        (0.4465, 0.4454, OK_NEAR, False),  # just past the tolerance
        (0.4465, 0.4451, OK_NEAR, False),  # the example
        (0.4465, 0.4450, OK_NEAR, False),  # exactly 1.5 x the tolerance
        (0.4465, 0.4449, FAIL, False),  # just past 1.5 x
        (0.4465, 0.0, FAIL, False),
    ],
)
def test_judge_applies_anserinis_rule_at_the_boundaries(
    expected: float, actual: float, status: str, better: bool
) -> None:
    verdict = judge(expected, actual, precision=4, tolerance=0.001)
    assert (verdict.status, verdict.better) == (status, better)


def test_judge_with_zero_tolerance_fails_any_drop_and_rounds_first() -> None:
    assert judge(0.5, 0.49999, precision=4, tolerance=0.0).status == OK  # both 0.5000
    assert judge(0.5, 0.4999, precision=4, tolerance=0.0).status == FAIL
    assert judge(0.5, 0.44, precision=1, tolerance=0.1).status == OK  # 0.5 vs 0.4: exactly the tolerance


def _exp(metric: str = "ndcg@10", expected: float = 0.4465) -> Expectation:
    return Expectation("payments-support", "bm25", metric, expected, 4, 0.001)


def test_compare_fails_what_the_site_lacks_and_formats_the_lines() -> None:
    observed = {"payments-support": {"bm25": {"ndcg@10": 0.4451, "hit@1": 0.5, "mrr@10": float("nan")}}}
    expectations = [
        _exp(),
        _exp("hit@1", 0.4),
        _exp("recall@5"),
        _exp("mrr@10"),
        Expectation("payments-support", "dense", "hit@1", 0.5, 4, 0.001),
        Expectation("other", "bm25", "hit@1", 0.5, 4, 0.001),
    ]
    lines = [format_result(r) for r in compare(expectations, observed)]
    assert lines == [
        "[OK*] payments-support/bm25 ndcg@10 expected 0.4465 actual 0.4451 (delta 0.0014, tolerance 0.0010)",
        "[OK] payments-support/bm25 hit@1 expected 0.4000 actual 0.5000 (delta 0.1000, tolerance 0.0010, better)",
        "[FAIL] payments-support/bm25 recall@5 expected 0.4465 actual missing "
        "(payments-support/bm25 has no metric recall@5)",
        "[FAIL] payments-support/bm25 mrr@10 expected 0.4465 actual missing "
        "(payments-support/bm25 mrr@10 is nan, not a finite number)",
        "[FAIL] payments-support/dense hit@1 expected 0.5000 actual missing "
        "(corpus payments-support has no ranker dense)",
        "[FAIL] other/bm25 hit@1 expected 0.5000 actual missing (the site has no corpus other)",
    ]


def test_gate_file_round_trips_one_check_per_line_and_refuses_bad_entries() -> None:
    observed = {"b": {"bm25": {"hit@1": 0.123456}}, "a": {"dense": {"ndcg@10": 0.5, "hit@1": 1.0}}}
    expectations = expectations_from_metrics(observed, precision=4, tolerance=0.002)
    text = dump_gate(GateFile(tuple(expectations), {"a": {"queries.jsonl": "1" * 64}}))
    assert text.splitlines()[2] == (
        '    {"corpus": "a", "expected": 1.0, "metric": "hit@1", "precision": 4, "ranker": "dense", '
        '"tolerance": 0.002},'
    )
    assert len(text.splitlines()) == 3 + 3 + 5
    assert [e.key for e in expectations] == [("a", "dense", "hit@1"), ("a", "dense", "ndcg@10"), ("b", "bm25", "hit@1")]
    assert expectations[2].expected == 0.1235
    assert parse_gate(text, "gate.json") == GateFile(tuple(expectations), {"a": {"queries.jsonl": "1" * 64}})
    data = json.loads(text)
    data["checks"].append(dict(data["checks"][0]))
    with pytest.raises(GateError, match="check 4: a/dense hit@1 is checked twice"):
        parse_gate(json.dumps(data), "gate.json")
    data["checks"][3] = {**data["checks"][0], "tolerance": -1}
    with pytest.raises(GateError, match="check 4: tolerance -1 is not a finite number >= 0"):
        parse_gate(json.dumps(data), "gate.json")
    with pytest.raises(GateError, match="not a gate file"):
        parse_gate("{}", "gate.json")


# -------------------------------------------------------------------------------- on a built site


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.helpers import write_corpus

    root = tmp_path_factory.mktemp("gate")
    write_corpus(root / "corpora" / "tiny")
    options = BuildOptions(
        corpora_dir=root / "corpora", out_dir=root / "site", cache_dir=root / "cache", rankers=("bm25",)
    )
    build_site(options, model=FakeEmbeddingModel())
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
    import shutil

    copy = tmp_path / "regressed"
    shutil.copytree(site, copy)
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
    import shutil

    copy = tmp_path / "tampered"
    shutil.copytree(site, copy)
    path = copy / "evidence" / "tiny" / "metrics.json"
    path.write_text(path.read_text().replace("0.", "0.9", 1))
    with pytest.raises(BundleError, match="sha256 does not match"):
        record_gate(copy, tmp_path / "gate.json")
    assert not (tmp_path / "gate.json").exists()
    gate = tmp_path / "ok.json"
    record_gate(site, gate)
    result = CliRunner().invoke(cli, ["gate", "check", str(gate), str(copy)])
    assert result.exit_code == 1 and "gate check failed" in result.output and "refused" in result.output


def test_committed_gate_file_is_well_formed_and_covers_the_committed_corpora() -> None:
    gate = parse_gate((REPO / "corpora" / "gate.json").read_text(encoding="utf-8"), "corpora/gate.json")
    corpora = sorted(p.name for p in (REPO / "corpora").iterdir() if (p / "corpus.jsonl").is_file())
    assert sorted({e.corpus for e in gate.expectations}) == corpora
    assert gate.tolerance is not None and gate.tolerance["rule"] == "one-question"
    questions = gate.tolerance["questions"]
    assert all(e.tolerance == one_question_tolerance(questions[e.corpus], e.precision) for e in gate.expectations)
    assert gate.inputs is not None and sorted(gate.inputs) == corpora
    for corpus, files in gate.inputs.items():  # the question sets the committed site was built from
        summary = json.loads((REPO / "site" / "evidence" / corpus / "corpus.json").read_text(encoding="utf-8"))
        assert files == {name: summary["input_sha256"][name] for name in ("qrels/test.tsv", "queries.jsonl")}


def _site_from_other_questions(site: Path, tmp_path: Path) -> Path:
    """A copy of ``site`` whose corpus.json says it was built from another queries.jsonl (manifest rehashed)."""
    copy = tmp_path / "other-questions"
    shutil.copytree(site, copy)
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


def test_default_tolerance_is_one_questions_effect_so_one_question_is_ok_and_two_are_not() -> None:
    assert one_question_tolerance(76, 4) == 0.0133  # 1/76 = 0.01316 plus one unit for rounding, rounded up
    assert one_question_tolerance(3, 4) == 0.3335 and one_question_tolerance(0, 4) == 0.0
    expected = 0.5
    for moved in (1, 2):
        actual = expected - moved / 76
        status = judge(expected, actual, precision=4, tolerance=one_question_tolerance(76, 4)).status
        assert status == (OK if moved == 1 else FAIL), moved
    # the old fixed default called the same one-question change OK* or worse
    assert judge(expected, expected - 1 / 76, precision=4, tolerance=0.001).status == FAIL


def test_a_recorded_gate_says_its_tolerance_follows_the_question_set(site: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate.json"
    recorded = record_gate(site, gate)
    data = json.loads(gate.read_text())
    assert data["tolerance"] == {"rule": "one-question", "questions": {"tiny": 3}}
    assert {e.tolerance for e in recorded.expectations} == {one_question_tolerance(3, 4)}
    assert load_gate(gate).tolerance == data["tolerance"]
    one = _regressed_copy(site, tmp_path, "hit@1", 1 / 3)  # one of the three questions lost
    assert {r.status for r in check_gate(gate, one).results} == {OK}
