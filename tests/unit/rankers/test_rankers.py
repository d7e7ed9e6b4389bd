"""Rankers: BM25 against a plain-Python oracle and rank_bm25-style hand values, dense ties, RRF ties."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitegen.embedding.vectors import CorpusEmbeddings
from sitegen.errors import SitegenError
from sitegen.inputs.corpus import Document, load_corpus, passage_text
from sitegen.rankers import RANKERS, RankInputs, bm25, make_rankers, reciprocal_rank_fusion, top_k
from sitegen.rankers.bm25 import bm25_scores, build_bm25_index
from sitegen.rankers.fusion import RRFRanker
from sitegen.rankers.tokenize import strip_plural, tokenize, tokenize_stemmed
from tests.helpers import TEXTS, FakeEmbeddingModel, examples


def oracle_bm25(docs: list[list[str]], query: list[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """The DESIGN.md formula, one document at a time."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    scores = []
    for doc in docs:
        tf = Counter(doc)
        score = 0.0
        for term in dict.fromkeys(query):
            df = sum(1 for d in docs if term in d)
            if tf[term] == 0:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(score)
    return scores


def test_tokenizer_lowercases_and_splits_on_non_alphanumerics() -> None:
    assert tokenize("E4012: payouts.schedule.delay_days, Ünïcode—T-410") == [
        "e4012",
        "payouts",
        "schedule",
        "delay",
        "days",
        "ünïcode",
        "t",
        "410",
    ]


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("payouts", "payout"),
        ("policies", "policy"),
        ("boxes", "box"),
        ("matches", "match"),
        ("status", "status"),
        ("address", "address"),
        ("analysis", "analysis"),
        ("bus", "bus"),
        ("e4012s", "e4012s"),
        ("days", "day"),
    ],
)
def test_plural_stripping_rules(word: str, stem: str) -> None:
    assert strip_plural(word) == stem


def test_stemmed_tokenizer_drops_stop_words() -> None:
    assert tokenize_stemmed("How do I change the payouts for my accounts?") == ["change", "payout", "account"]


@given(
    st.lists(st.lists(st.sampled_from("abcdefgh"), min_size=0, max_size=12), min_size=1, max_size=15),
    st.lists(st.sampled_from("abcdefghz"), min_size=1, max_size=6),
)
def test_bm25_matches_the_formula_document_by_document(docs: list[list[str]], query: list[str]) -> None:
    index = build_bm25_index(docs)
    expected = oracle_bm25(docs, query) if any(docs) else [0.0] * len(docs)
    np.testing.assert_allclose(bm25_scores(index, query), expected, rtol=1e-12, atol=1e-12)


def test_bm25_deduplicates_query_terms_and_ignores_unknown_ones() -> None:
    index = build_bm25_index([["a", "b"], ["b", "c"], ["c"]])
    np.testing.assert_array_equal(bm25_scores(index, ["a", "a", "zzz"]), bm25_scores(index, ["a"]))
    assert not bm25_scores(index, ["zzz"]).any()


def test_top_k_orders_ties_by_document_id_and_drops_non_positive_scores() -> None:
    ids = ["d9", "d1", "d5", "d3"]
    from sitegen.rankers.base import doc_id_order

    scores = np.array([1.0, 0.0, 1.0, 2.0])
    picked = top_k(scores, doc_id_order(ids), depth=10, positive_only=True)
    assert [ids[i] for i in picked] == ["d3", "d5", "d9"]
    # A tie straddling the cut-off goes to the smaller id, whatever the array order.
    picked = top_k(scores, doc_id_order(ids), depth=2, positive_only=True)
    assert [ids[i] for i in picked] == ["d3", "d5"]


def test_bm25_ranker_ranks_only_matching_passages(tiny_corpus: Path) -> None:
    corpus = load_corpus(tiny_corpus)
    run = RANKERS["bm25"]().rank(RankInputs(corpus=corpus), depth=100)
    query_terms = set(tokenize("what is E4012"))
    matching = {d.doc_id for d in corpus.documents if query_terms & set(tokenize(passage_text(d)))}
    assert next(h.doc_id for h in run.hits["q2"]) == "d3"
    assert {h.doc_id for h in run.hits["q2"]} == matching == {"d3", "d4"}
    assert run.hits["q4"] == ()
    assert [h.rank for h in run.hits["q1"]] == list(range(1, len(run.hits["q1"]) + 1))
    scores = [h.score for h in run.hits["q1"]]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    docs = [tokenize(passage_text(d)) for d in corpus.documents]
    expected = oracle_bm25(docs, tokenize("refund a payment"))
    assert run.hits["q1"][0].score == pytest.approx(max(expected), rel=1e-12)


def test_rrf_scores_and_component_ranks_follow_the_formula() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=60)
    by_id = {f.doc_id: f for f in fused}
    assert by_id["a"].score == pytest.approx(1 / 61 + 1 / 62)
    assert by_id["c"].score == pytest.approx(1 / 63 + 1 / 61)
    assert by_id["b"].component_ranks == (2, None)
    assert [f.doc_id for f in fused] == ["a", "c", "b"]


def test_rrf_ties_keep_first_appearance_order_across_lists() -> None:
    # x: rank 1 in list one only; y: rank 1 in list two only -> equal scores, x first (first list read first).
    fused = reciprocal_rank_fusion([["x"], ["y"]], k=60)
    assert [f.doc_id for f in fused] == ["x", "y"]
    assert fused[0].score == fused[1].score
    assert [f.doc_id for f in reciprocal_rank_fusion([["y"], ["x"]], k=60)] == ["y", "x"]
    # Swapped ranks give an exact tie too: p (1, 2) vs q (2, 1); p appears first.
    fused = reciprocal_rank_fusion([["p", "q"], ["q", "p"]], k=60)
    assert [f.doc_id for f in fused] == ["p", "q"] and fused[0].score == fused[1].score


def test_rrf_reads_only_the_candidates_and_honours_weights() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "b", "a"]], k=1, candidates=1, weights=[1.0, 0.5])
    assert [(f.doc_id, f.score) for f in fused] == [("a", 0.5), ("c", 0.25)]
    assert [f.doc_id for f in reciprocal_rank_fusion([["a"], ["b"]], weights=[0.0, 1.0])] == ["b"]
    with pytest.raises(ValueError, match="non-negative"):
        reciprocal_rank_fusion([["a"]], weights=[-1.0])
    with pytest.raises(ValueError, match="2 weights given for 1 lists"):
        reciprocal_rank_fusion([["a"]], weights=[1.0, 1.0])


@given(st.lists(st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10), min_size=1, max_size=4))
def test_rrf_scores_do_not_depend_on_the_order_of_the_lists(lists: list[list[str]]) -> None:
    forward = {f.doc_id: f.score for f in reciprocal_rank_fusion(lists)}
    backward = {f.doc_id: f.score for f in reciprocal_rank_fusion(lists[::-1])}
    assert forward.keys() == backward.keys()
    for doc_id, score in forward.items():
        assert backward[doc_id] == pytest.approx(score, rel=1e-12)


def _embeddings(corpus, model: FakeEmbeddingModel) -> CorpusEmbeddings:
    return CorpusEmbeddings(
        model="fake",
        weights_sha256=model.weights_sha256,
        doc_ids=tuple(d.doc_id for d in corpus.documents),
        doc_vectors=model.encode([passage_text(d) for d in corpus.documents]),
        query_ids=tuple(q.query_id for q in corpus.queries),
        query_vectors=model.encode([q.text for q in corpus.queries]),
    )


def test_dense_ranks_every_passage_by_cosine_with_ties_by_id(tiny_corpus: Path) -> None:
    corpus = load_corpus(tiny_corpus)
    embeddings = _embeddings(corpus, FakeEmbeddingModel())
    run = RANKERS["dense"]().rank(RankInputs(corpus=corpus, embeddings=embeddings), depth=100)
    for row, qid in enumerate(embeddings.query_ids):
        hits = run.hits[qid]
        assert len(hits) == len(corpus.documents)
        cosines = embeddings.doc_vectors @ embeddings.query_vectors[row]
        expected = sorted(range(len(cosines)), key=lambda i: (-cosines[i], embeddings.doc_ids[i]))
        assert [h.doc_id for h in hits] == [embeddings.doc_ids[i] for i in expected]


def test_dense_without_embeddings_is_a_clear_error(tiny_corpus: Path) -> None:
    with pytest.raises(SitegenError, match="needs embeddings"):
        RANKERS["dense"]().rank(RankInputs(corpus=load_corpus(tiny_corpus)), depth=10)


def test_rrf_ranker_fuses_the_component_runs_and_records_their_ranks(tiny_corpus: Path) -> None:
    corpus = load_corpus(tiny_corpus)
    embeddings = _embeddings(corpus, FakeEmbeddingModel())
    runs = {}
    for ranker in make_rankers(["rrf-dense-bm25"]):
        runs[ranker.name] = ranker.rank(RankInputs(corpus=corpus, embeddings=embeddings, runs=runs), depth=100)
    assert list(runs) == ["dense", "bm25", "rrf-dense-bm25"]
    for qid, hits in runs["rrf-dense-bm25"].hits.items():
        lists = [[h.doc_id for h in runs[c].hits[qid]] for c in ("dense", "bm25")]
        expected = reciprocal_rank_fusion(lists, k=60, candidates=20)
        assert [h.doc_id for h in hits] == [f.doc_id for f in expected]
        for hit in hits:
            dense_rank, bm25_rank = dict(hit.components)["dense"], dict(hit.components)["bm25"]
            assert dense_rank is None or lists[0][dense_rank - 1] == hit.doc_id
            assert bm25_rank is None or lists[1][bm25_rank - 1] == hit.doc_id


def test_rrf_ranker_refuses_to_run_before_its_components(tiny_corpus: Path) -> None:
    ranker = RRFRanker("rrf-x", ("dense", "bm25"))
    with pytest.raises(SitegenError, match="needs the runs of"):
        ranker.rank(RankInputs(corpus=load_corpus(tiny_corpus)), depth=10)


def test_unknown_ranker_error_lists_every_registered_name() -> None:
    with pytest.raises(SitegenError) as info:
        make_rankers(["bm26"])
    for name in RANKERS:
        assert name in str(info.value)


@settings(max_examples=examples(100), deadline=None)
@given(texts=TEXTS, titles=st.lists(st.sampled_from(["", "Cards", "the boxes"]), min_size=12, max_size=12))
def test_sitegen_s_bm25_indexes_from_one_tokenising_equal_indexes_of_token_lists(
    texts: list[str], titles: list[str]
) -> None:
    documents = tuple(
        Document(f"d{i}", title, text) for i, (title, text) in enumerate(zip(titles, texts, strict=False))
    )
    for stemmed, tokenizer in ((False, tokenize), (True, tokenize_stemmed)):
        words = bm25._passage_words(documents, stemmed)
        words = bm25._stemmed(words) if stemmed else words
        got = bm25._index(words.vocabulary, [words.ids.astype(np.int64)], words.lengths, 1.2, 0.75)
        want = bm25.build_bm25_index([tokenizer(passage_text(d)) for d in documents], 1.2, 0.75)
        assert list(got.vocabulary.items()) == list(want.vocabulary.items())  # term ids: first appearance
        for name in ("starts", "doc_indices", "weights"):
            mine, theirs = getattr(got, name), getattr(want, name)
            assert mine.dtype == theirs.dtype and mine.tobytes() == theirs.tobytes(), name


def test_sitegen_tokenises_a_corpus_once_for_both_lexical_rankers_then_lets_it_go() -> None:
    documents = (Document("d1", "", "cards and boxes"), Document("d2", "T", "a card"))
    first = bm25._passage_words(documents, False)
    assert bm25._passage_words(documents, True) is first  # the other variant, the same tuple object
    assert not bm25._last_tokenised  # both served: released
    again = bm25._passage_words(documents, True)
    assert again is not first
    assert bm25._passage_words(documents, True) is not again  # a variant asking twice: tokenised again
    assert bm25._passage_words((*documents, Document("d3", "", "x")), False) is not first
