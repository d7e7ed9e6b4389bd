"""``sitegen pool``: the unjudged passages of every ranker's top k, on a tiny site whose answers are known."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.compare.pool import pool_tsv, unjudged_pool
from tests.helpers import TINY_DOCS, TINY_QRELS, TINY_QUERIES, build, write_corpus


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pool")
    write_corpus(root / "corpora" / "tiny")
    build(root / "corpora", root / "site", rankers=("bm25", "dense"))
    return root / "site"


def test_the_pool_is_every_unjudged_passage_dense_ranks_for_every_question(site: Path) -> None:
    """Dense ranks all four passages for every question, so its pool is each question's unjudged passages."""
    rows = unjudged_pool(site, depth=10)
    judged = {(q, d) for q, d, _ in TINY_QRELS}
    want = {(q["_id"], d["_id"]) for q in TINY_QUERIES for d in TINY_DOCS if (q["_id"], d["_id"]) not in judged}
    by_dense = {(r.query_id, r.doc_id) for r in rows if "dense" in dict(r.surfaced)}
    assert by_dense == want
    assert all((r.query_id, r.doc_id) not in judged for r in rows)
    assert len({(r.query_id, r.doc_id) for r in rows}) == len(rows)  # one row per question and passage


def test_depth_cuts_the_pool_and_rows_are_ordered_by_question_then_best_rank(site: Path) -> None:
    shallow = unjudged_pool(site, depth=1)
    assert all(r.best_rank == 1 for r in shallow)
    rows = unjudged_pool(site, depth=10)
    order = [q["_id"] for q in TINY_QUERIES]
    keys = [(order.index(r.query_id), r.best_rank, r.doc_id) for r in rows]
    assert keys == sorted(keys)
    assert {(r.query_id, r.doc_id) for r in shallow} <= {(r.query_id, r.doc_id) for r in rows}


def test_sitegen_pool_writes_the_tsv_for_assessors(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "to-judge.tsv"
    result = CliRunner().invoke(cli, ["pool", str(site), "--depth", "10", "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text == pool_tsv(unjudged_pool(site, 10))
    header, first = text.splitlines()[:2]
    assert header == "corpus\tquery_id\tdoc_id\trankers\tbest_rank"
    corpus, qid, _, surfaced, best = first.split("\t")
    assert corpus == "tiny" and qid == "q1" and ":" in surfaced and int(best) >= 1
    bad = CliRunner().invoke(cli, ["pool", str(site), "--depth", "0", "--out", str(out)])
    assert bad.exit_code == 2
