"""The regression gate: Anserini's rule at its boundaries, the gate file's format, the committed gate file."""

from __future__ import annotations

import json

import pytest

from sitegen.compare.gate import (
    FAIL,
    OK,
    OK_NEAR,
    Expectation,
    GateError,
    GateFile,
    compare,
    dump_gate,
    expectations_from_metrics,
    format_result,
    judge,
    one_question_tolerance,
    parse_gate,
)
from tests.helpers import REPO

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


def test_committed_gate_file_is_well_formed_and_covers_the_committed_corpora() -> None:
    gate = parse_gate((REPO / "corpora" / "gate.json").read_text(encoding="utf-8"), "corpora/gate.json")
    corpora = sorted(p.name for p in (REPO / "corpora").iterdir() if (p / "corpus.jsonl").is_file())
    assert sorted({e.corpus for e in gate.expectations}) == corpora
    assert gate.tolerance is not None and gate.tolerance["rule"] == "one-question"
    questions = gate.tolerance["questions"]
    assert all(e.tolerance == one_question_tolerance(questions[e.corpus], e.precision) for e in gate.expectations)
    assert gate.inputs is not None and sorted(gate.inputs) == corpora
    manifest = json.loads((REPO / "site" / "evidence" / "manifest.json").read_text(encoding="utf-8"))["files"]
    for corpus, files in gate.inputs.items():  # the question sets and stored vectors the site was built from
        summary = json.loads((REPO / "site" / "evidence" / corpus / "corpus.json").read_text(encoding="utf-8"))
        question_set = {name: summary["input_sha256"][name] for name in ("qrels/test.tsv", "queries.jsonl")}
        assert {n: h for n, h in files.items() if n in question_set} == question_set
        vectors = {n: h for n, h in files.items() if n not in question_set}
        assert {"embeddings/index.json", "embeddings/dense-mpnet/index.json"} <= set(vectors)
        assert vectors == {n: manifest[f"evidence/{corpus}/{n}"]["sha256"] for n in vectors}


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
