"""The failure taxonomy and judged depth on fixtures whose answers are known, a brute-force recount, and
ir_measures / pytrec_eval (trec_eval's code) as the oracles for judged@10 and the condensed nDCG@10."""

from __future__ import annotations

import numpy as np
import pytest

from sitegen.inputs.corpus import load_corpus
from sitegen.rankers import RANKERS
from sitegen.scoring.diagnostics import FAILURE_CLASSES, failure_taxonomy, judged_depth, signal
from tests.helpers import write_corpus

DOCS = [{"_id": f"d{i}", "title": f"t{i}", "text": f"passage {i}"} for i in range(1, 13)]
QUERIES = [{"_id": f"q{i}", "text": f"question {i}", "kind": "a" if i <= 3 else "b"} for i in range(1, 7)]
# q1: d1; q2: d2; q3: d3; q4: d4; q5: d5; q6: d6 (grade 2) and d7 judged not relevant (grade 0)
QRELS = [(f"q{i}", f"d{i}", 1) for i in range(1, 6)] + [("q6", "d6", 2), ("q6", "d7", 0)]
NAMES = ("bm25", "dense", "rrf-dense-bm25", "pg-vector", "pg-tsvector")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    return load_corpus(write_corpus(tmp_path_factory.mktemp("diag") / "c", DOCS, QUERIES, QRELS))


def _contracts() -> dict:
    return {name: RANKERS[name]().contract for name in NAMES}


def _filler(exclude: str) -> list[str]:
    return [f"d{i}" for i in range(8, 13) if f"d{i}" != exclude]


# who has the relevant passage in its top 10, by design:
#   q1 nobody; q2 bm25 only; q3 dense only; q4 both; q5 the fusion only (rescued); q6 bm25 only, the fusion lost it
RANKINGS = {
    "bm25": {"q1": _filler(""), "q2": ["d2"], "q3": _filler(""), "q4": ["d4"], "q5": [], "q6": ["d6", "d7"]},
    "dense": {"q1": ["d8"], "q2": [], "q3": ["d9", "d3"], "q4": ["d4"], "q5": [], "q6": []},
    "rrf-dense-bm25": {"q1": [], "q2": ["d2"], "q3": ["d3"], "q4": ["d4"], "q5": ["d5"], "q6": ["d8"]},
    "pg-vector": {"q1": [], "q2": [], "q3": [], "q4": [], "q5": [], "q6": []},
    "pg-tsvector": {"q1": [], "q2": [], "q3": [], "q4": [], "q5": [], "q6": []},
}


def test_declared_contracts_give_each_ranker_its_signal() -> None:
    contracts = _contracts()
    assert {n: signal(contracts[n]) for n in NAMES} == {
        "bm25": "lexical",
        "dense": "dense",
        "rrf-dense-bm25": "fusion",
        "pg-vector": "dense",
        "pg-tsvector": "lexical",  # PostgreSQL's text search
    }


def test_each_question_gets_the_class_its_rankings_were_built_for(corpus) -> None:
    result = failure_taxonomy(corpus, RANKINGS, _contracts())
    assert result["questions"] == {
        "q1": "all-miss",
        "q2": "only-lexical",
        "q3": "only-dense",
        "q4": "every-family",
        "q5": "only-fusion",
        "q6": "only-lexical",
    }
    assert result["fusion_lost"] == {"rrf-dense-bm25": ["q6"]}
    assert result["fusion_rescued"] == {"rrf-dense-bm25": ["q5"]}
    assert result["counts"]["by_kind"]["a"] == {
        "all-miss": 1,
        "only-lexical": 1,
        "only-dense": 1,
        "every-family": 0,
        "only-fusion": 0,
        "other": 0,
    }


def _recount(rankings: dict, corpus, contracts: dict) -> dict[str, int]:
    """The classes by another route: the set of signals that reach a relevant passage, looked up in a table."""
    table = {
        frozenset(): "all-miss",
        frozenset({"fusion"}): "only-fusion",
        frozenset({"other"}): "other",
        frozenset({"fusion", "other"}): "only-fusion",
    }
    counts = dict.fromkeys(FAILURE_CLASSES, 0)
    for query in corpus.queries:
        relevant = corpus.relevant(query.query_id)
        reached = frozenset(
            signal(contracts[r])
            for r, lists in rankings.items()
            if set(lists.get(query.query_id, [])[:10]) & set(relevant)
        )
        if reached in table:
            counts[table[reached]] += 1
        elif {"lexical", "dense"} <= reached:
            counts["every-family"] += 1
        else:
            counts["only-lexical" if "lexical" in reached else "only-dense"] += 1
    return counts


@pytest.mark.parametrize("seed", range(8))
def test_class_counts_equal_a_brute_force_recount(corpus, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = [d["_id"] for d in DOCS]
    rankings = {
        name: {q["_id"]: list(rng.permutation(ids)[: int(rng.integers(0, 13))]) for q in QUERIES} for name in NAMES
    }
    result = failure_taxonomy(corpus, rankings, _contracts())
    assert result["counts"]["overall"] == _recount(rankings, corpus, _contracts())
    assert sum(result["counts"]["overall"].values()) == len(QUERIES)
    for kind, counts in result["counts"]["by_kind"].items():
        assert sum(counts.values()) == sum(1 for q in QUERIES if q["kind"] == kind)


def test_judged_depth_counts_grade_zero_as_judged_and_condenses_unjudged_away(corpus) -> None:
    rankings = {
        "bm25": {"q6": ["d8", "d7", "d9", "d6"]},
        "dense": {q["_id"]: [q["_id"].replace("q", "d")] for q in QUERIES},
    }
    result = judged_depth(corpus, rankings)
    # bm25 on q6: d7 (grade 0) and d6 judged = 2/10; every other question: nothing returned
    assert result["rankers"]["bm25"]["judged"] == pytest.approx(2 / 10 / 6)
    # condensed: d7, d6 -> d6 at rank 2: nDCG = (2 / log2(3)) / 2
    assert result["rankers"]["bm25"]["ndcg_condensed"] == pytest.approx((1 / np.log2(3)) / 6)
    assert result["rankers"]["bm25"]["ndcg"] == pytest.approx((2 / np.log2(5)) / 2 / 6)
    assert result["rankers"]["dense"]["judged"] == pytest.approx(1 / 10)
    assert result["rankers"]["bm25"]["low"] is False and result["rankers"]["dense"]["low"] is False
    assert result["per_question"] == {"mean": pytest.approx(7 / 6), "min": 1, "max": 2}
    assert result["relevant"] == {f"q{i}": 1 for i in range(1, 7)}


def test_judged_and_condensed_ndcg_equal_ir_measures_and_trec_eval_minus_j(corpus) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(3)
    ids = [d["_id"] for d in DOCS]
    rankings = {"x": {q["_id"]: list(rng.permutation(ids)[:10]) for q in QUERIES}}
    result = judged_depth(corpus, rankings)["rankers"]["x"]
    qrels = {q: {d: g for d, g in grades.items()} for q, grades in corpus.qrels.items()}
    run = {q: {d: float(100 - rank) for rank, d in enumerate(docs)} for q, docs in rankings["x"].items()}
    judged = ir_measures.calc_aggregate([ir_measures.Judged @ 10], qrels, run)[ir_measures.Judged @ 10]
    assert result["judged"] == pytest.approx(judged, abs=1e-12)
    condensed = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}, judged_docs_only_flag=True).evaluate(run)
    want = sum(v["ndcg_cut_10"] for v in condensed.values()) / len(QUERIES)
    assert result["ndcg_condensed"] == pytest.approx(want, abs=1e-9)


def test_a_ranker_far_below_the_others_in_judged_depth_is_flagged(corpus) -> None:
    full = {q["_id"]: [q["_id"].replace("q", "d")] for q in QUERIES}
    rankings = {"good": full, "poor": {q: ["d9", "d10"] for q in full}}
    rows = judged_depth(corpus, rankings)["rankers"]
    assert rows["good"]["low"] is False and rows["poor"]["low"] is False  # 0.1 vs 0: not more than the 0.1 gap
    deep = {q["_id"]: [f"d{i}" for i in range(1, 8)] for q in QUERIES}  # every judged passage in every top 10
    rows = judged_depth(corpus, {"deep": deep, "poor": rankings["poor"]})["rankers"]
    assert rows["poor"]["low"] is True and rows["deep"]["low"] is False
