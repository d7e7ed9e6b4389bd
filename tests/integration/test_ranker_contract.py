"""The ranker contract: a ranker added in one module plus one registry line is built and audited.

Also the closed world: the audit decides how a run is checked from its own table of the rankers
sitegen ships and from the inputs, never from what the run says about itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sitegen import audit
from sitegen.errors import BuildError
from sitegen.inputs.corpus import passage_text
from sitegen.publish.evidence import read_run, write_run
from sitegen.rankers import RANKERS, RRFRanker, make_rankers
from sitegen.rankers.base import Contract, Family, Hit, RankInputs, Run
from sitegen.rankers.bm25 import bm25_scores, build_bm25_index
from sitegen.rankers.tokenize import tokenize
from tests.helpers import build, rehash_manifest, write_corpus

# ------------------------------------------------------------- the "one module": a ranker a team adds


class SortedBM25:
    """A lexical ranker written the way a team might add one: BM25 with its own k1 and b, every passage
    scored and sorted in Python. ``misrank`` reverses its lists, to prove the audit recomputes it."""

    def __init__(self, name: str, k1: float, b: float, family: Family = Family.LEXICAL, misrank: bool = False) -> None:
        self.name = name
        self.k1, self.b, self.misrank = k1, b, misrank
        self.contract = Contract(family, "okapi-bm25")

    def params(self) -> dict[str, Any]:
        return {"method": self.contract.verifier, "k1": self.k1, "b": self.b, "stemmed": False, "stop_words": []}

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        documents = inputs.corpus.documents
        index = build_bm25_index([tokenize(passage_text(d)) for d in documents], self.k1, self.b)
        hits: dict[str, tuple[Hit, ...]] = {}
        for query in inputs.corpus.queries:
            scores = bm25_scores(index, tokenize(query.text))
            order = sorted(
                (i for i in range(len(documents)) if scores[i] > 0), key=lambda i: (-scores[i], documents[i].doc_id)
            )
            chosen = order[:depth][::-1] if self.misrank else order[:depth]
            hits[query.query_id] = tuple(
                Hit(documents[i].doc_id, rank, float(scores[i])) for rank, i in enumerate(chosen, start=1)
            )
        return Run(ranker=self.name, contract=self.contract, params=self.params(), hits=hits)


def _build_and_audit(tmp_path: Path, names: tuple[str, ...]) -> tuple[Path, dict[str, Any]]:
    corpora = tmp_path / "corpora"
    write_corpus(corpora / "tiny")
    site = tmp_path / "site"
    build(corpora, site, rankers=names)
    return site, audit.run_audit(site, echo=lambda line: None)


def _check(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["name"] == name)


def test_a_ranker_added_by_one_registry_line_is_built_and_audited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(RANKERS, "bm25-k09-b04", lambda: SortedBM25("bm25-k09-b04", k1=0.9, b=0.4))
    monkeypatch.setitem(  # a fusion of two lexical lists: nothing assumes a fusion's first list is dense
        RANKERS, "rrf-bm25-k09-bm25-stem", lambda: RRFRanker("rrf-bm25-k09-bm25-stem", ("bm25-k09-b04", "bm25-stem"))
    )
    site, report = _build_and_audit(tmp_path, ("bm25", "rrf-bm25-k09-bm25-stem"))
    assert report["verdict"] == "pass", [c for c in report["checks"] if c["status"] == "fail"]
    run = read_run(site / "evidence" / "tiny" / "runs" / "bm25-k09-b04.json")
    assert run["contract"]["family"] == "lexical" and run["params"]["k1"] == 0.9
    assert any(run["queries"].values())
    detail = _check(report, "run:tiny/bm25-k09-b04")["detail"]
    assert "lexical: okapi-bm25" in detail and "k1=0.9 b=0.4" in detail
    assert "reciprocal rank fusion" in _check(report, "run:tiny/rrf-bm25-k09-bm25-stem")["detail"]
    folds = json.loads((site / "evidence" / "tiny" / "experiments.json").read_text())["heldout"]["results"]
    assert folds["rrf-bm25-k09-bm25-stem"]["k"]["folds"][0]["dense_ranker"] == "bm25-k09-b04"
    assert _check(report, "metrics:tiny/bm25-k09-b04")["status"] == "pass"


def test_an_added_ranker_that_ranks_against_its_declared_family_fails_the_audit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(RANKERS, "bm25-wrong", lambda: SortedBM25("bm25-wrong", k1=0.9, b=0.4, misrank=True))
    with pytest.raises(BuildError, match=r"FAIL run:tiny/bm25-wrong: .*break the order score, doc id"):
        _build_and_audit(tmp_path, ("bm25-wrong",))
    assert not (tmp_path / "site").exists()  # the build that failed its audit published nothing


def test_an_added_ranker_may_not_choose_a_weaker_verifier(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(RANKERS, "pg-like", lambda: SortedBM25("pg-like", k1=0.9, b=0.4, family=Family.POSTGRES))
    with pytest.raises(BuildError, match=r"FAIL run:tiny/pg-like: .*not one sitegen ships"):
        _build_and_audit(tmp_path, ("pg-like",))


def test_a_registry_name_must_match_the_ranker_it_makes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(RANKERS, "bm25-alias", RANKERS["bm25"])
    with pytest.raises(Exception, match="registered as 'bm25-alias' calls itself 'bm25'"):
        make_rankers(["bm25-alias"])


def test_the_audits_table_of_shipped_rankers_is_the_registry() -> None:
    rankers = make_rankers(RANKERS)
    assert audit.SHIPPED_RANKERS == {r.name: (r.contract.family.value, r.contract.verifier) for r in rankers}
    claims = {r.name: r.contract.reproduces for r in rankers if r.contract.reproduces is not None}
    assert audit.REPRODUCTIONS == {name: (c.ranker, c.top) for name, c in claims.items()}
    assert set(audit.RECOMPUTED_FAMILIES) == {"lexical", "dense", "fusion"}
    assert set(audit.VERIFIERS) >= {r.contract.verifier for r in rankers}


def test_relabelling_a_bm25_run_as_a_postgres_run_fails_the_run_check(tmp_path: Path) -> None:
    corpora = tmp_path / "corpora"
    write_corpus(corpora / "tiny")
    site = tmp_path / "site"
    build(corpora, site, rankers=("bm25",))
    path = site / "evidence" / "tiny" / "runs" / "bm25.json"
    run = read_run(path)
    run["params"]["method"] = run["contract"]["verifier"] = "postgres-tsvector"
    run["contract"]["family"] = "postgres"
    first = run["queries"]["q1"][0]
    first["doc_id"] = next(d for d in ("d1", "d2", "d3", "d4") if d != first["doc_id"])  # then lie about a hit
    write_run(path, run)
    rehash_manifest(site)
    report = audit.run_audit(site, echo=lambda line: None)
    check = _check(report, "run:tiny/bm25")
    assert report["verdict"] == "fail" and check["status"] == "fail"
    assert "family is 'postgres', expected 'lexical'" in json.dumps(check["mismatches"])
