"""report.json's best marks: only rankers the audit recomputes from the bundle compete."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from sitegen.inputs.corpus import Corpus, Document, Query
from sitegen.rankers.base import Basis, Contract, Family
from sitegen.scoring.metrics import evaluate, metric_names
from sitegen.scoring.report import derive_report, unverified_rankers, verification_basis

LEXICAL = Contract(Family.LEXICAL, "okapi-bm25", basis=(Basis.INPUTS,))
TSVECTOR = Contract(Family.POSTGRES, "postgres-tsvector", basis=(Basis.POSTGRES,))
EXTERNAL = Contract(Family.EXTERNAL, "external trec run", basis=(Basis.EXTERNAL,))


def _corpus() -> Corpus:
    docs = tuple(Document(f"d{i}", "", f"passage {i}") for i in range(4))
    queries = tuple(Query(f"q{i}", f"question {i}", "k") for i in range(4))
    qrels = {f"q{i}": MappingProxyType({f"d{i}": 1}) for i in range(4)}
    return Corpus("c", Path("c"), docs, queries, MappingProxyType(qrels), "", ())


def test_a_fusion_over_an_unverifiable_run_is_unverified_through_it() -> None:
    contracts = {
        "bm25": LEXICAL,
        "pg-tsvector": TSVECTOR,
        "fused": Contract(Family.FUSION, "reciprocal rank fusion", components=("bm25", "pg-tsvector")),
        "mine": EXTERNAL,
        "twice": Contract(Family.FUSION, "reciprocal rank fusion", components=("fused", "mine")),
    }
    assert unverified_rankers(contracts) == {
        "pg-tsvector": ["pg-tsvector"],
        "fused": ["pg-tsvector"],
        "mine": ["mine"],
        "twice": ["pg-tsvector", "mine"],
    }
    assert verification_basis(contracts) == {
        "bm25": ["inputs"],
        "pg-tsvector": ["postgres"],
        "fused": ["inputs", "postgres"],
        "mine": ["external"],
        "twice": ["inputs", "postgres", "external"],
    }


def test_a_perfect_external_run_never_takes_the_best_mark_from_a_verified_ranker() -> None:
    corpus = _corpus()
    rankings = {
        "bm25": {"q0": ["d0"], "q1": ["d2", "d1"], "q2": ["d3"], "q3": ["d3"]},  # right on 2 of 4 at rank 1
        "perfect": {q.query_id: [f"d{q.query_id[1]}"] for q in corpus.queries},  # reads the qrels
    }
    kinds = {q.query_id: q.kind for q in corpus.queries}
    metrics = {r: evaluate(lists, corpus.qrels, kinds, metric_names()) for r, lists in rankings.items()}
    report = derive_report(corpus, rankings, metrics, {"bm25": LEXICAL, "perfect": EXTERNAL})
    assert metrics["perfect"]["overall"]["hit@1"] == 1.0 > metrics["bm25"]["overall"]["hit@1"]
    assert report["unverified"] == {"perfect": ["perfect"]}
    assert report["best"]["overall"]["hit@1"] == ["bm25"]
    assert report["best_clear"]["overall"]["hit@1"] is False  # no other verified ranker to lead
    alone = derive_report(corpus, {"perfect": rankings["perfect"]}, metrics, {"perfect": EXTERNAL})
    assert alone["best"]["overall"]["hit@1"] == ["perfect"]  # with no verified row, the mark is its own
