"""sitegen's metrics equal trec_eval's (through ir_measures/pytrec_eval and ranx) and hand-computed values."""

from __future__ import annotations

import math

import ir_measures
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitegen.scoring.metrics import (
    CUTOFFS,
    evaluate,
    metric_names,
    ndcg,
    parse_metric,
    precision,
    reciprocal_rank,
    score_query,
)

TREC_NAMES = {
    "hit": "Success",
    "recall": "R",
    "precision": "P",
    "mrr": "RR",
    "ndcg": "nDCG",
    "map": "AP",
    "rprec": "Rprec",
}
UNCUT = ("mrr", "map", "rprec")  # trec_eval cuts these with -M k only: the oracle gets the run cut to k


def _random_collection(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    """Graded qrels with judged non-relevant documents, runs of every length, some relevant never retrieved."""
    rng = np.random.default_rng(seed)
    docs = [f"doc{i:03d}" for i in range(60)]
    qrels: dict[str, dict[str, int]] = {}
    runs: dict[str, list[str]] = {}
    for q in range(40):
        qid = f"q{q:02d}"
        judged = rng.choice(docs, size=int(rng.integers(1, 8)), replace=False)
        grades = {str(d): int(rng.integers(0, 4)) for d in judged}
        if not any(g > 0 for g in grades.values()):
            grades[str(judged[0])] = 1
        qrels[qid] = grades
        length = int(rng.integers(1, 35))
        runs[qid] = [str(d) for d in rng.choice(docs, size=length, replace=False)]
    # A relevant document never retrieved, and a query whose run holds only unjudged documents.
    qrels["q00"]["never"] = 3
    runs["q01"] = [d for d in runs["q01"] if d not in qrels["q01"]] or ["doc059x"]
    return qrels, runs


def _trec_eval(qrels, runs, name: str) -> dict[str, float]:
    family, k = name.split("@")
    measure = ir_measures.parse_measure(TREC_NAMES[family] if family in UNCUT else f"{TREC_NAMES[family]}@{k}")
    # trec_eval reads the score column only: derive strictly decreasing scores from sitegen's ranks.
    # RR, AP and Rprec take no cut-off here (trec_eval -M k cuts them), so cut the run to k first.
    depth = int(k) if family in UNCUT else None
    run = {q: {d: float(len(ids) - r) for r, d in enumerate(ids[:depth])} for q, ids in runs.items()}
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", metric_names())
def test_every_metric_equals_trec_eval_per_query(seed: int, name: str) -> None:
    qrels, runs = _random_collection(seed)
    kinds = {q: "all" for q in qrels}
    ours = evaluate(runs, qrels, kinds, [name])["per_query"]
    theirs = _trec_eval(qrels, runs, name)
    assert set(theirs) == set(ours)
    for qid, value in theirs.items():
        assert ours[qid][name] == pytest.approx(value, abs=1e-9), (qid, name)


# ranx's metrics, run in a child process with numba's JIT off: the same Python source, interpreted, on a
# collection this small; compiling them first would take about 40 s in a fresh environment.
_RANX = """
import json, sys
from ranx import Qrels, Run, evaluate
job = json.load(sys.stdin)
run, qrels = Run(job["run"]), Qrels(job["qrels"])
print(json.dumps({m: evaluate(qrels, run, m, make_comparable=True) for m in job["metrics"]}))
"""


@pytest.mark.slow  # a child process that imports ranx and numba (4 s); ir_measures checks the same quickly
def test_every_metric_equals_ranx_on_average() -> None:
    import json
    import os
    import subprocess
    import sys

    qrels, runs = _random_collection(7)
    ranx_names = {"hit": "hit_rate", "recall": "recall", "precision": "precision", "mrr": "mrr", "ndcg": "ndcg"}
    names = metric_names(measures=tuple(ranx_names))
    theirs_of = {name: f"{ranx_names[name.split('@')[0]]}@{name.split('@')[1]}" for name in names}
    job = {
        "run": {q: {d: float(len(ids) - r) for r, d in enumerate(ids)} for q, ids in runs.items()},
        "qrels": {q: {d: g for d, g in grades.items() if g > 0} for q, grades in qrels.items()},
        "metrics": sorted(set(theirs_of.values())),
    }
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _RANX], input=json.dumps(job), capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)
    ours = evaluate(runs, qrels, {q: "all" for q in qrels})["overall"]
    assert names
    for name in names:
        assert ours[name] == pytest.approx(theirs[theirs_of[name]], abs=1e-9), name


def test_query_with_relevant_passage_but_no_hits_scores_zero_and_is_averaged() -> None:
    qrels = {"a": {"x": 1}, "b": {"y": 2}}
    result = evaluate({"a": ["x"]}, qrels, {"a": "k1", "b": "k2"})
    assert result["per_query"]["b"] == {name: 0.0 for name in metric_names()}
    assert result["overall"]["hit@1"] == 0.5
    assert result["by_kind"] == {"k1": result["per_query"]["a"], "k2": result["per_query"]["b"]}


def test_unanswerable_queries_are_not_scored_or_averaged() -> None:
    result = evaluate({"a": ["x"], "u": ["x"]}, {"a": {"x": 1}}, {"a": "k", "u": "none"})
    assert set(result["per_query"]) == {"a"}
    assert "none" not in result["by_kind"]
    assert result["overall"]["mrr@10"] == 1.0


def test_hand_computed_graded_ndcg() -> None:
    grades = {"a": 2, "b": 1, "c": 0}
    # DCG: rank 1 "c" (0), rank 2 "b" (1/log2 3), rank 3 "a" (2/log2 4 = 1); ideal: 2 + 1/log2 3.
    expected = (1 / math.log2(3) + 1.0) / (2 + 1 / math.log2(3))
    assert ndcg(["c", "b", "a"], grades, 3) == pytest.approx(expected)
    assert ndcg(["c", "b", "a"], grades, 1) == 0.0


def test_precision_divides_by_k_even_when_fewer_hits_are_retrieved() -> None:
    assert precision(["a"], {"a": 1}, 5) == 0.2


def test_reciprocal_rank_respects_the_cutoff() -> None:
    ranking = [f"n{i}" for i in range(10)] + ["rel"]
    assert reciprocal_rank(ranking, {"rel": 1}, 10) == 0.0
    assert reciprocal_rank(ranking, {"rel": 1}, 20) == pytest.approx(1 / 11)


def test_unknown_metric_names_are_rejected_with_the_known_families() -> None:
    with pytest.raises(ValueError, match="hit, recall, precision, mrr, ndcg, map, rprec"):
        parse_metric("bpref@10")
    with pytest.raises(ValueError):
        parse_metric("ndcg@0")


rankings = st.lists(st.sampled_from([f"d{i}" for i in range(12)]), max_size=12, unique=True)
grade_maps = st.dictionaries(st.sampled_from([f"d{i}" for i in range(12)]), st.integers(0, 3), min_size=1).filter(
    lambda g: any(v > 0 for v in g.values())
)


@given(rankings, grade_maps)
def test_metrics_lie_in_unit_interval_and_recall_grows_with_k(ranking: list[str], grades: dict[str, int]) -> None:
    scores = score_query(ranking, grades, metric_names())
    assert all(0.0 <= v <= 1.0 + 1e-12 for v in scores.values())
    for family in ("hit", "recall", "mrr"):
        values = [scores[f"{family}@{k}"] for k in CUTOFFS]
        assert values == sorted(values)


def test_map_and_r_precision_by_hand_on_46_relevant_documents() -> None:
    """A classic-collection question: 46 relevant documents, 10 found in the top 10 and 30 in the top 100."""
    relevant = [f"r{i}" for i in range(46)]
    grades = dict.fromkeys(relevant, 1)
    ranking = relevant[:10] + [f"n{i}" for i in range(40)] + relevant[10:30] + [f"m{i}" for i in range(30)]
    assert score_query(ranking, grades, ["recall@10", "recall@100"]) == {"recall@10": 10 / 46, "recall@100": 30 / 46}
    want_ap = (10 + sum((11 + i) / (51 + i) for i in range(20))) / 46
    assert score_query(ranking, grades, ["map@100"])["map@100"] == pytest.approx(want_ap, abs=1e-15)
    assert score_query(ranking, grades, ["rprec@100"])["rprec@100"] == 10 / 46  # 10 of the top 46 are relevant
    assert score_query(ranking, grades, ["rprec@20"])["rprec@20"] == 10 / 46  # cut at 20: still divided by R


def test_metric_settings_choose_the_cutoffs_and_measures() -> None:
    from sitegen.inputs.metric_settings import MetricSettingsError
    from sitegen.scoring.metrics import REQUIRED_METRICS, configured_metric_names

    assert configured_metric_names({}) == metric_names()
    assert "recall@100" in metric_names() and "map@100" in metric_names() and "rprec@100" in metric_names()
    chosen = configured_metric_names({"metrics": {"cutoffs": [100, 10], "measures": ["rprec", "map"]}})
    assert chosen == [*REQUIRED_METRICS[:6], "mrr@10", "ndcg@10", "map@10", "map@100", "rprec@10", "rprec@100"]
    with pytest.raises(MetricSettingsError, match="measures"):
        configured_metric_names({"metrics": {"measures": ["bpref"]}})


def test_a_bad_metrics_setting_is_a_located_error(tmp_path) -> None:
    from sitegen.errors import CorpusError
    from sitegen.inputs.corpus import load_corpus
    from tests.helpers import write_corpus

    folder = write_corpus(tmp_path / "c")
    (folder / "sitegen.json").write_text('{\n  "metrics": {"cutoffs": [0, 10]}\n}\n')
    with pytest.raises(CorpusError, match=r"sitegen.json:2: .*cutoffs"):
        load_corpus(folder)
