"""The audit's numpy BM25 gives the plain dictionary loop's scores bit for bit, agrees with the
build's ranker, and its ranking check still catches a tampered score or hit."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitegen import audit
from sitegen.rankers.bm25 import bm25_scores as build_bm25_scores
from sitegen.rankers.bm25 import build_bm25_index
from sitegen.rankers.tokenize import STOP_WORDS
from tests.helpers import TEXTS, examples

WORDS = ["alpha", "beta", "gamma", "delta", "boxes", "box", "über", "e4012", "x", "policies"]


def reference_bm25(docs: dict[str, list[str]], queries: dict[str, list[str]], k1: float, b: float) -> Iterator:
    """The audit's earlier pure-Python definition, kept as the reference."""
    postings: dict[str, dict[str, int]] = {}
    for doc, toks in docs.items():
        for t in toks:
            postings.setdefault(t, {})[doc] = postings.get(t, {}).get(doc, 0) + 1
    n = len(docs)
    avgdl = (sum(len(t) for t in docs.values()) / n) or 1.0
    for qid, query in queries.items():
        scores: dict[str, float] = {}
        for term in sorted(set(query)):
            having = postings.get(term, {})
            idf = math.log(1.0 + (n - len(having) + 0.5) / (len(having) + 0.5))
            for d, tf in having.items():
                norm = k1 * (1.0 - b + b * len(docs[d]) / avgdl)
                scores[d] = scores.get(d, 0.0) + idf * tf * (k1 + 1.0) / (tf + norm)
        yield qid, {d: s for d, s in scores.items() if s > 0}


def random_collection(seed: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Small corpora with empty passages, repeated words, shared passages and unknown query words."""
    rng = np.random.default_rng(seed)
    vocab = WORDS[: int(rng.integers(1, len(WORDS) + 1))]
    docs = {
        f"d{int(i):03d}": [vocab[int(j)] for j in rng.integers(0, len(vocab), size=int(rng.integers(0, 12)))]
        for i in rng.permutation(int(rng.integers(1, 40)))
    }
    queries = {
        f"q{i}": [[*vocab, "unseen"][int(j)] for j in rng.integers(0, len(vocab) + 1, size=int(rng.integers(0, 6)))]
        for i in range(8)
    }
    return docs, queries


@pytest.mark.parametrize("seed", range(60))
def test_numpy_bm25_equals_the_dictionary_loop_bit_for_bit(seed: int) -> None:
    docs, queries = random_collection(seed)
    rng = np.random.default_rng(seed + 1000)
    k1, b = float(rng.uniform(0.5, 2.0)), float(rng.uniform(0.0, 1.0))
    ids = list(docs)
    got = {
        q: {ids[i]: float(v) for i, v in enumerate(values) if v > 0}
        for q, values in audit.bm25_scores(docs.values(), queries, k1, b)
    }
    assert got == dict(reference_bm25(docs, queries, k1, b))


@pytest.mark.parametrize("block", [1, 7, 64])
@pytest.mark.parametrize("seed", range(12))
def test_postings_built_a_block_of_words_at_a_time_give_the_same_scores_bit_for_bit(
    seed: int, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A million passages' postings are built in blocks (one passage each at least); any block size gives the
    dictionary loop's scores."""
    docs, queries = random_collection(seed)
    monkeypatch.setattr(audit, "POSTINGS_BLOCK", block)
    ids = list(docs)
    got = {
        q: {ids[i]: float(v) for i, v in enumerate(values) if v > 0}
        for q, values in audit.bm25_scores(docs.values(), queries, 1.2, 0.75)
    }
    assert got == dict(reference_bm25(docs, queries, 1.2, 0.75))


@pytest.mark.parametrize("seed", range(20))
def test_numpy_bm25_agrees_with_the_build_ranker(seed: int) -> None:
    docs, queries = random_collection(seed)
    index = build_bm25_index(list(docs.values()), k1=1.2, b=0.75)
    for qid, values in audit.bm25_scores(docs.values(), queries, 1.2, 0.75):
        theirs = build_bm25_scores(index, queries[qid])
        np.testing.assert_allclose(values, theirs, rtol=audit.TOLERANCES["bm25_score_relative"], atol=0.0)


@pytest.mark.parametrize("seed", range(30))
def test_top_scores_holds_the_full_sort_top(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    values = rng.integers(0, 5, size=n).astype(np.float64) / 4  # many exact ties
    keep = rng.random(n) < 0.8
    ids = [f"d{int(i):02d}" for i in rng.permutation(n)]
    full = {ids[i]: float(values[i]) for i in range(n) if keep[i]}
    for depth in (1, 3, n, n + 2):
        top = audit.top_scores(values, ids, keep, depth, [0, n - 1])
        assert set(top) <= set(full)
        assert {ids[i] for i in (0, n - 1) if keep[i]} <= set(top)
        assert top == {d: full[d] for d in top}
        assert sorted(top, key=lambda d: (-top[d], d))[:depth] == sorted(full, key=lambda d: (-full[d], d))[:depth]


def bm25_case(depth: int = 5) -> tuple[Any, dict[str, Any]]:
    """A fake bundle (inputs only) and a run written from the reference scores."""
    rng = np.random.default_rng(7)
    text = {f"d{i:02d}": " ".join(rng.choice(WORDS, size=int(rng.integers(3, 9)))) for i in range(30)}
    questions = {"q1": {"text": "alpha boxes gamma"}, "q2": {"text": "beta delta x"}}
    inputs = SimpleNamespace(doc_text=text, queries=questions, texts=True)
    bundle = SimpleNamespace(inputs=lambda corpus: inputs, words=lambda corpus: audit.words_of(text.values()))
    docs = {d: audit.tokens(t) for d, t in text.items()}
    queries = {q: audit.tokens(v["text"]) for q, v in questions.items()}
    run_queries = {}
    for q, scores in reference_bm25(docs, queries, 1.2, 0.75):
        ranked = sorted(scores, key=lambda d: (-scores[d], d))[:depth]
        run_queries[q] = [{"doc_id": d, "rank": r, "score": scores[d]} for r, d in enumerate(ranked, start=1)]
    params = {"k1": 1.2, "b": 0.75, "stemmed": False, "stop_words": []}
    return bundle, {"params": params, "queries": run_queries, "depth": depth}


def verify(bundle: Any, run: dict[str, Any]) -> list[str]:
    check = audit.Check("run")
    audit._verify_bm25(check, bundle, "c", run, "runs/bm25.json")
    return check.mismatches


def test_a_true_run_passes() -> None:
    assert verify(*bm25_case()) == []


def test_a_tampered_score_is_caught() -> None:
    bundle, run = bm25_case()
    hit = run["queries"]["q1"][2]
    true_score = hit["score"]
    hit["score"] = true_score * (1 + 1e-6)
    assert verify(bundle, run) == [
        f"runs/bm25.json: query q1: rank 3 doc {hit['doc_id']}: score {hit['score']!r}, recomputed {true_score!r}"
    ]


def test_a_lower_passage_swapped_into_the_ranking_is_caught() -> None:
    bundle, run = bm25_case()
    docs = {d: audit.tokens(t) for d, t in bundle.inputs("c").doc_text.items()}
    scores = dict(reference_bm25(docs, {"q1": audit.tokens("alpha boxes gamma")}, 1.2, 0.75))["q1"]
    ranked = sorted(scores, key=lambda d: (-scores[d], d))
    deep = next(d for d in ranked[5:] if scores[d] < scores[ranked[4]])  # scored, but outside the top 5
    last = run["queries"]["q1"][4]
    want = last["doc_id"]
    last["doc_id"], last["score"] = deep, scores[deep]
    assert verify(bundle, run) == [f"runs/bm25.json: query q1: rank 5 is doc {deep}, recomputed {want}"]


def test_a_passage_sharing_no_word_is_caught() -> None:
    bundle, run = bm25_case()
    docs = {d: audit.tokens(t) for d, t in bundle.inputs("c").doc_text.items()}
    scores = dict(reference_bm25(docs, {"q2": audit.tokens("beta delta x")}, 1.2, 0.75))["q2"]
    unmatched = next(d for d in sorted(docs) if d not in scores)
    last = run["queries"]["q2"][4]
    want = last["doc_id"]
    last["doc_id"], last["score"] = unmatched, last["score"] / 2  # still in stored order
    assert verify(bundle, run) == [
        f"runs/bm25.json: query q2: rank 5 is doc {unmatched}, which recomputes to no score; recomputed {want}"
    ]


@settings(max_examples=examples(150), deadline=None)
@given(texts=TEXTS, stem=st.booleans(), stop=st.booleans())
def test_the_audit_s_shared_word_ids_give_each_text_s_tokens(texts: list[str], stem: bool, stop: bool) -> None:
    stop_words = frozenset(STOP_WORDS) if stop else frozenset()
    words = audit.filtered_words(audit.words_of(texts), stop_words, stem)
    got = [[words.vocab[i] for i in words.ids[a:b].tolist()] for a, b in itertools.pairwise(words.starts.tolist())]
    assert got == [audit.tokens(t, stop_words, stem) for t in texts]


@settings(max_examples=examples(100), deadline=None)
@given(texts=TEXTS, queries=TEXTS, stem=st.booleans())
def test_the_audit_s_bm25_over_shared_word_ids_equals_bm25_over_token_lists(
    texts: list[str], queries: list[str], stem: bool
) -> None:
    stop_words = frozenset(STOP_WORDS) if stem else frozenset()
    qs = {f"q{i}": audit.tokens(t, stop_words, stem) for i, t in enumerate(queries)}
    ids = audit.filtered_words(audit.words_of(texts), stop_words, stem)
    lists = [audit.tokens(t, stop_words, stem) for t in texts]
    pairs = zip(audit.bm25_scores(ids, qs, 1.2, 0.75), audit.bm25_scores(lists, qs, 1.2, 0.75), strict=True)
    for (q1, got), (q2, want) in pairs:
        assert q1 == q2 and got.tobytes() == want.tobytes()


def zipf_collection(seed: int) -> tuple[list[list[str]], list[list[str]]]:
    """Passages and questions over Zipf-distributed words: a few words in most passages, many in a few, and
    duplicated passages so that scores tie; what the set-aside terms of the top-k search are for."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(int(rng.integers(50, 400)))]
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    docs = [[vocab[j] for j in rng.choice(len(vocab), size=int(rng.integers(0, 30)), p=p)] for _ in range(600)]
    docs += [list(docs[int(i)]) for i in rng.integers(0, len(docs), size=60)]
    queries = [[vocab[j] for j in rng.choice(len(vocab), size=int(rng.integers(0, 6)), p=p)] for _ in range(40)]
    queries += [[vocab[0], vocab[-1]], [vocab[-1]], ["unseen", vocab[0]]]
    return docs, queries


@pytest.mark.parametrize("seed", range(25))
def test_the_audit_s_top_k_search_keeps_what_scoring_every_passage_keeps(seed: int) -> None:
    docs, queries = zipf_collection(seed)
    rng = np.random.default_rng(seed + 1000)
    postings = audit.BM25Postings(docs, 1.2, 0.75)
    ids = [f"d{i:04d}" for i in range(len(docs))]
    pruned = 0
    for query in queries:
        for depth in (0, 1, 3, 10, 20, 100):
            also = sorted({int(i) for i in rng.integers(0, len(docs), size=int(rng.integers(0, 8)))})
            values = postings.scores(query)
            want = audit.top_scores(values, ids, values > 0, depth, also)
            found = postings.top(query, depth, also)
            if found is None:
                continue
            pruned += 1
            got = {ids[i]: score for i, score in found.items()}
            assert got == want, (query, depth, also)
            assert all(type(score) is float for score in got.values())
    assert pruned > 0  # the collection has terms rare and common enough to set some aside


def test_the_top_k_search_sets_aside_common_terms_and_still_finds_ties_at_the_cut() -> None:
    # 400 passages hold only the common word; 30 hold the rare word once, identical, so all 30 tie.
    docs = [["common"] * 3 for _ in range(400)] + [["rare", "common"] for _ in range(30)]
    postings = audit.BM25Postings(docs, 1.2, 0.75)
    found = postings.top(["common", "rare"], 10, [0])
    assert found is not None
    assert sorted(found) == [0, *range(400, 430)]  # every tie at the cut, and the asked-for passage 0
    values = postings.scores(["common", "rare"])
    assert found == {i: float(values[i]) for i in found}


def test_the_top_k_search_skips_a_known_word_no_passage_keeps() -> None:
    # Stemming and stop words can leave a word in the vocabulary with no passage: it adds nothing.
    # 400 passages "common common common", then 40 passages "rare common"; "ghost" is in none.
    ids = np.array([0] * 1200 + [2, 0] * 40, dtype=np.int32)
    starts = np.concatenate([np.arange(0, 1200, 3), np.arange(1200, 1281, 2)]).astype(np.int64)
    postings = audit.BM25Postings(audit.Words(vocab=["common", "ghost", "rare"], ids=ids, starts=starts), 1.2, 0.75)
    values = postings.scores(["ghost", "common", "rare"])
    found = postings.top(["ghost", "common", "rare"], 5, [])
    assert found is not None
    names = [str(i) for i in range(len(values))]
    assert {names[i]: s for i, s in found.items()} == audit.top_scores(values, names, values > 0, 5, [])
