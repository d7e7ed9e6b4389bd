"""Rerank stages: the tie rule, the candidates, the bi-encoder's scores, a hook's context and the settings."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sitegen.embedding.vectors import CorpusEmbeddings
from sitegen.errors import SitegenError
from sitegen.rankers import RANKERS, make_rankers
from sitegen.rankers.base import Contract, Family, Hit, RankInputs, Run
from sitegen.rankers.rerank import (
    BiEncoderScorer,
    Candidate,
    CrossEncoderScorer,
    HookScorer,
    RerankRanker,
    rerank_order,
)
from sitegen.rankers.rerank_settings import RerankSettingsError, parse_reranks
from tests.helpers import make_corpus

DOCS = [("d1", "", "alpha"), ("d2", "", "beta"), ("d3", "", "gamma"), ("d4", "", "delta")]
QUERIES = [("q1", "first question"), ("q2", "second question")]


def _first_stage() -> Run:
    """A first stage that ranks d1 > d2 > d3 > d4 for q1 and gives q2 nothing."""
    hits = tuple(Hit(d, r, 1.0 / r) for r, d in enumerate(["d1", "d2", "d3", "d4"], start=1))
    return Run("first", Contract(Family.LEXICAL, "okapi-bm25"), {}, {"q1": hits, "q2": ()})


def _embeddings() -> CorpusEmbeddings:
    """Unit vectors in 2-D: q1 points at d3, then d4 (d1 and d2 tie below them)."""
    docs = np.array([[1, 0], [1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
    queries = np.array([[0, 1], [1, 0]], dtype=np.float32)
    return CorpusEmbeddings("fake", "f" * 64, ("d1", "d2", "d3", "d4"), docs, ("q1", "q2"), queries)


def _inputs() -> RankInputs:
    return RankInputs(make_corpus(DOCS, QUERIES, {"q1": {"d3": 1}}), _embeddings(), {"first": _first_stage()})


def test_rerank_order_is_higher_score_first_then_doc_id_ascending() -> None:
    assert rerank_order(["b", "a", "c"], [0.5, 0.5, 0.9]) == [2, 1, 0]


def test_bi_encoder_rerank_reorders_only_the_first_stages_top_n_by_cosine() -> None:
    run = RerankRanker("re", "first", 3, BiEncoderScorer()).rank(_inputs(), depth=100)
    hits = run.hits["q1"]
    # d4 is outside the top 3, so it is never a candidate; d1 and d2 tie at cosine 0 and go by id.
    assert [h.doc_id for h in hits] == ["d3", "d1", "d2"]
    assert [h.score for h in hits] == [1.0, 0.0, 0.0]
    assert [h.components for h in hits] == [(("first", 3),), (("first", 1),), (("first", 2),)]
    assert run.hits["q2"] == ()
    assert run.params["candidates"] == 3 and run.params["components"] == ["first"]
    assert run.contract.family is Family.RERANK and run.contract.components == ("first",)


def test_candidates_are_capped_at_the_build_depth() -> None:
    run = RerankRanker("re", "first", 50, BiEncoderScorer()).rank(_inputs(), depth=2)
    assert sorted(h.doc_id for h in run.hits["q1"]) == ["d1", "d2"]


def test_a_rerank_without_its_first_stage_run_is_refused() -> None:
    inputs = RankInputs(_inputs().corpus, _embeddings(), {})
    with pytest.raises(SitegenError, match="needs the run of 'first'"):
        RerankRanker("re", "first", 3, BiEncoderScorer()).rank(inputs, depth=10)


def test_a_bi_encoder_of_an_unknown_embedding_says_which_it_can_use() -> None:
    with pytest.raises(SitegenError, match="can use 'dense' or a model entry's dense ranker"):
        RerankRanker("re", "first", 3, BiEncoderScorer("dense-mpnet")).rank(_inputs(), depth=10)


def test_a_bi_encoder_of_a_model_entry_without_its_vectors_names_the_corpus() -> None:
    from sitegen.embedding.models import MPNET_SPEC

    with pytest.raises(SitegenError, match="no vectors were computed for corpus"):
        RerankRanker("re", "first", 3, BiEncoderScorer("dense-mpnet", MPNET_SPEC)).rank(_inputs(), depth=10)


def test_a_hook_gets_the_corpus_question_id_and_candidates_with_first_stage_scores() -> None:
    seen: list[tuple[str, str, str, list[Candidate]]] = []

    def hook(question: str, candidates: list[Candidate], *, corpus: str, query_id: str) -> list[float]:
        seen.append((question, corpus, query_id, candidates))
        return [float(len(c.doc_id) + c.rank) for c in candidates]  # reverses the first stage

    run = RerankRanker("re", "first", 2, HookScorer("mine:hook", hook)).rank(_inputs(), depth=10)
    assert [h.doc_id for h in run.hits["q1"]] == ["d2", "d1"]
    question, corpus, query_id, candidates = seen[0]
    assert (question, corpus, query_id) == ("first question", "hand", "q1")
    assert candidates == [Candidate("d1", "alpha", 1, 1.0), Candidate("d2", "beta", 2, 0.5)]
    assert run.contract.basis and not run.contract.basis[0].recomputable


@pytest.mark.parametrize(
    ("answer", "problem"),
    [([1.0], "returned 1 scores for 2 candidates"), ([1.0, float("nan")], "score 2 is nan"), (["x", 1], "score 1")],
)
def test_a_hook_answering_wrongly_is_one_error_naming_the_question(answer: list[Any], problem: str) -> None:
    scorer = HookScorer("mine:hook", lambda *_, **__: answer)
    with pytest.raises(SitegenError, match=f"corpus hand: question q1: {problem}"):
        RerankRanker("re", "first", 2, scorer).rank(_inputs(), depth=10)


def test_the_shipped_rerank_runs_after_the_fusion_it_reranks() -> None:
    names = [r.name for r in make_rankers(["rerank-dense"])]
    assert names == ["dense", "bm25", "rrf-dense-bm25", "rerank-dense"]
    shipped = RANKERS["rerank-dense"]()
    assert (shipped.first_stage, shipped.candidates, shipped.scorer) == ("rrf-dense-bm25", 50, BiEncoderScorer("dense"))


def test_reranks_in_sitegen_json_become_their_scorer_classes() -> None:
    found = parse_reranks(
        [
            {"name": "a", "first_stage": "bm25", "scorer": {"kind": "bi-encoder"}},
            {"name": "b", "first_stage": "a", "candidates": 7, "scorer": {"kind": "cross-encoder", "model": "m"}},
            {"name": "c", "first_stage": "bm25", "scorer": {"kind": "hook", "hook": "pkg.mod:fn"}},
        ]
    )
    assert [(r.name, r.candidates, r.scorer) for r in found] == [
        ("a", 50, BiEncoderScorer("dense")),
        ("b", 7, CrossEncoderScorer("m")),
        ("c", 50, HookScorer("pkg.mod:fn")),
    ]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"name": "a", "first_stage": "bm25"}, "needs name, first_stage and scorer"),
        ({"name": "a", "first_stage": "a", "scorer": {"kind": "bi-encoder"}}, "another ranker"),
        ({"name": "a", "first_stage": "b", "candidates": 0, "scorer": {"kind": "bi-encoder"}}, "positive integer"),
        ({"name": "a", "first_stage": "b", "scorer": {"kind": "colbert"}}, "'colbert' is not"),
        ({"name": "a", "first_stage": "b", "scorer": {"kind": "cross-encoder"}}, 'needs "model"'),
        ({"name": "a", "first_stage": "b", "scorer": {"kind": "hook", "hook": "nocolon"}}, "module:callable"),
    ],
)
def test_a_bad_rerank_entry_is_refused_naming_it(entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(RerankSettingsError, match=problem):
        parse_reranks([entry])
