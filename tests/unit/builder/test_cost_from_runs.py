"""cost.json's BM25 index sizes: the size each ranker measured as it ranked, the same bytes as building the
postings again, which is what a run without a measured size still gets."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sitegen.builder.cost import corpus_cost
from sitegen.inputs.corpus import load_corpus
from sitegen.rankers import make_rankers
from sitegen.rankers.base import RankInputs
from sitegen.rankers.bm25 import passage_index


@pytest.mark.parametrize("name, stemmed", [("bm25", False), ("bm25-stem", True)])
def test_a_bm25_run_carries_its_postings_size_and_the_cost_table_uses_it(
    tiny_corpus: Path, name: str, stemmed: bool
) -> None:
    corpus = load_corpus(tiny_corpus)
    (ranker,) = make_rankers([name])
    run = ranker.rank(RankInputs(corpus=corpus), depth=10)
    built_again = passage_index(corpus.documents, stemmed).postings_bytes
    assert run.index_bytes == built_again > 0
    key = f"postings:{'stemmed' if stemmed else 'plain'}"
    measured = corpus_cost(RankInputs(corpus=corpus), {name: run})
    unmeasured = corpus_cost(RankInputs(corpus=corpus), {name: dataclasses.replace(run, index_bytes=None)})
    assert measured["indexes"][key] == unmeasured["indexes"][key] == built_again
    marked = corpus_cost(RankInputs(corpus=corpus), {name: dataclasses.replace(run, index_bytes=built_again + 1)})
    assert marked["indexes"][key] == built_again + 1  # read from the run, not measured again
