"""The rewrites made for the 100,000 x 1,000 scale build (issue 17) compute what the code before them did.

Each rewritten function is compared, on random inputs, with the previous implementation kept here as a reference:
the audit's hygiene flags (now streamed over the passages, then over word ids shared with the BM25 checks),
sitegen's hygiene (now in chunks of passages), the bootstrap intervals and sign-flip tests of both (now reusing one
draw of bootstrap indices across pairs), the BM25 indexes and scores of both built from one tokenising of the
passages, and the audit's tie expectation. The committed evidence must stay byte-identical, so every comparison is
exact equality."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitegen import audit
from sitegen.inputs.corpus import Corpus, Document, Query, passage_text
from sitegen.rankers import bm25, dense
from sitegen.rankers.base import RankInputs, doc_id_order
from sitegen.rankers.embeddings import CorpusEmbeddings
from sitegen.rankers.tokenize import STOP_WORDS, tokenize, tokenize_stemmed
from sitegen.scoring import experiments, hygiene


def _reference_shingles(words: list[str]) -> set[tuple[str, ...]]:
    if len(words) < audit.HYGIENE_SHINGLE:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + audit.HYGIENE_SHINGLE]) for i in range(len(words) - audit.HYGIENE_SHINGLE + 1)}


def _reference_hygiene_flags(
    passages: list[tuple[str, str, str]],
    questions: list[tuple[str, str]],
    qrels: dict[str, dict[str, int]],
    filters: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The audit's hygiene_flags before it streamed the passages: every passage's words kept in one list."""
    q_words = [(qid, audit.tokens(text)) for qid, text in questions]
    p_words = [audit.tokens(f"{title}\n{text}" if title else text) for _, title, text in passages]
    ids = [doc_id for doc_id, _, _ in passages]
    grams: dict[int, dict[tuple[str, ...], set[str]]] = {}
    for qid, words in q_words:
        if len(words) >= audit.HYGIENE_LEAK_NGRAM:
            for i in range(len(words) - audit.HYGIENE_LEAK_NGRAM + 1):
                grams.setdefault(audit.HYGIENE_LEAK_NGRAM, {}).setdefault(
                    tuple(words[i : i + audit.HYGIENE_LEAK_NGRAM]), set()
                )
                grams[audit.HYGIENE_LEAK_NGRAM][tuple(words[i : i + audit.HYGIENE_LEAK_NGRAM])].add(qid)
        elif len(words) >= audit.HYGIENE_LEAK_MIN:
            grams.setdefault(len(words), {}).setdefault(tuple(words), set()).add(qid)
    leaked: dict[str, list[str]] = {}
    for doc_id, words in zip(ids, p_words, strict=True):
        found: set[str] = set()
        for length, table in grams.items():
            for i in range(len(words) - length + 1):
                if hit := table.get(tuple(words[i : i + length])):
                    found |= hit
        for qid in found:
            leaked.setdefault(qid, []).append(doc_id)
    leakage = [{"query_id": qid, "doc_ids": leaked[qid]} for qid, _ in q_words if qid in leaked]
    scope = {qid: json.dumps((filters or {}).get(qid) or {}, sort_keys=True) for qid, _ in q_words}
    texts: dict[tuple[str, str], list[str]] = {}
    for qid, words in q_words:
        if words:
            texts.setdefault((scope[qid], " ".join(words)), []).append(qid)
    duplicates = [{"query_ids": group, "text": key[1]} for key, group in texts.items() if len(group) > 1]
    near_questions = []
    nonempty = [(qid, words) for qid, words in q_words if words]
    for (a, wa), (b, wb) in itertools.combinations(nonempty, 2):
        sa, sb = set(wa), set(wb)
        same_scope = scope[a] == scope[b]
        if (
            same_scope
            and wa != wb
            and audit._jaccard_at_least(len(sa & sb), len(sa | sb), audit.HYGIENE_QUESTION_JACCARD)
        ):
            near_questions.append({"query_ids": [a, b], "shared_words": len(sa & sb), "union_words": len(sa | sb)})
    titles: dict[str, list[str]] = {}
    for doc_id, title, _ in passages:
        if audit.tokens(title):
            titles.setdefault(" ".join(audit.tokens(title)), []).append(doc_id)
    title_questions = [
        {"query_id": qid, "doc_ids": titles[" ".join(words)]} for qid, words in q_words if " ".join(words) in titles
    ]
    order = {doc_id: i for i, doc_id in enumerate(ids)}
    labelled = sorted(
        {d for grades in qrels.values() for d, g in grades.items() if g > 0 and d in order}, key=order.get
    )
    shingles = {d: _reference_shingles(p_words[order[d]]) for d in labelled}
    holders: dict[tuple[str, ...], set[str]] = {}
    for d in labelled:
        for shingle in shingles[d]:
            holders.setdefault(shingle, set()).add(d)
    near_passages: dict[str, list[str]] = {d: [] for d in labelled}
    for doc_id, words in zip(ids, p_words, strict=True):
        mine = _reference_shingles(words)
        sharing = {d for shingle in mine if shingle in holders for d in holders[shingle]} - {doc_id}
        for d in sharing:
            shared = len(mine & shingles[d])
            if audit._jaccard_at_least(shared, len(mine) + len(shingles[d]) - shared, audit.HYGIENE_PASSAGE_JACCARD):
                near_passages[d].append(doc_id)
    unlabelled = []
    for qid, _ in q_words:
        grades = qrels.get(qid, {})
        for d in sorted((d for d, g in grades.items() if g > 0 and d in order), key=order.get):
            missed = [other for other in near_passages[d] if other not in grades]
            if missed:
                unlabelled.append({"query_id": qid, "doc_id": d, "near_duplicates": missed})
    flags = {
        "leakage": leakage,
        "duplicate_questions": duplicates,
        "near_duplicate_questions": near_questions,
        "title_questions": title_questions,
        "unlabelled_near_duplicates": unlabelled,
    }
    flagged = {q for entries in flags.values() for e in entries for q in e.get("query_ids", [e.get("query_id")])}
    counts = {kind: len(entries) for kind, entries in flags.items()}
    return {"flags": flags, "counts": counts | {"flagged_questions": len(flagged), "labelled_passages": len(labelled)}}


WORDS = st.sampled_from(["a", "b", "c", "d", "e", "card", "bank", "E4012"])
PASSAGES = st.lists(st.tuples(st.lists(WORDS, max_size=3), st.lists(WORDS, max_size=14)), min_size=1, max_size=8)
QUESTIONS = st.lists(st.lists(WORDS, max_size=10), min_size=1, max_size=6)
LABELS = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(0, 2)), max_size=10)


def _inputs(passages: list, questions: list, labels: list) -> tuple[list, list, dict]:
    # Every other passage repeats an earlier one, so near-duplicates are common.
    docs = [(f"d{i}", " ".join(title), " ".join(text)) for i, (title, text) in enumerate(passages)]
    docs = [(d, *docs[i // 2][1:]) if i % 2 and i % 4 == 1 else (d, t, x) for i, (d, t, x) in enumerate(docs)]
    qs = [(f"q{i}", " ".join(words)) for i, words in enumerate(questions)]
    qrels: dict[str, dict[str, int]] = {}
    for q, d, g in labels:
        if q < len(qs) and d < len(docs):
            qrels.setdefault(qs[q][0], {})[docs[d][0]] = g
    return docs, qs, qrels


@settings(max_examples=150, deadline=None)
@given(passages=PASSAGES, questions=QUESTIONS, labels=LABELS, tenants=st.lists(st.sampled_from(["", "a"]), max_size=6))
def test_the_audit_s_streamed_hygiene_flags_equal_the_word_list_implementation(
    passages: list, questions: list, labels: list, tenants: list
) -> None:
    docs, qs, qrels = _inputs(passages, questions, labels)
    filters = {q: {"tenant_id": t} for (q, _), t in zip(qs, tenants, strict=False) if t}
    assert audit.hygiene_flags(docs, qs, qrels, filters) == _reference_hygiene_flags(docs, qs, qrels, filters)


def test_the_audit_s_hygiene_flags_equal_the_reference_on_a_planted_corpus() -> None:
    """Every flag raised at least once, on longer texts than the random ones."""
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(40)]
    texts = [" ".join(rng.choice(vocab, size=int(rng.integers(1, 30)))) for _ in range(60)]
    texts[5] = texts[4] + " w1"  # a near-duplicate of a labelled passage
    docs = [(f"d{i}", "title words here" if i % 9 == 0 else "", t) for i, t in enumerate(texts)]
    qs = [(f"q{i}", " ".join(texts[i].split()[:9]) if i % 3 else " ".join(rng.choice(vocab, 5))) for i in range(30)]
    qs += [("t1", "title words here"), ("dup", qs[1][1])]
    qrels = {q: {f"d{i}": 1} for i, (q, _) in enumerate(qs)}
    mine = audit.hygiene_flags(docs, qs, qrels)
    assert mine == _reference_hygiene_flags(docs, qs, qrels)
    assert all(mine["counts"][kind] for kind in ("leakage", "duplicate_questions", "title_questions"))
    assert mine["counts"]["unlabelled_near_duplicates"]


def _corpus(docs: list, qs: list, qrels: dict) -> Corpus:
    return Corpus(
        name="hand",
        root=Path("hand"),
        documents=tuple(Document(d, title, text) for d, title, text in docs),
        queries=tuple(Query(q, text, filter=MappingProxyType({})) for q, text in qs),
        qrels=MappingProxyType(qrels),
        readme="",
        input_files=(),
    )


@settings(max_examples=80, deadline=None)
@given(passages=PASSAGES, questions=QUESTIONS, labels=LABELS, chunk=st.integers(1, 4))
def test_sitegen_s_hygiene_in_chunks_of_passages_equals_one_chunk(
    passages: list, questions: list, labels: list, chunk: int
) -> None:
    corpus = _corpus(*_inputs(passages, questions, labels))
    whole = hygiene.hygiene_report(corpus)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hygiene, "_CHUNK_PASSAGES", chunk)
        assert hygiene.hygiene_report(corpus) == whole
    assert whole["flags"] == audit.hygiene_flags(*_inputs(passages, questions, labels))["flags"]


# ----------------------------------------------------------------------------- statistics: the previous code


def _reference_bootstrap(d: np.ndarray, seed: int, rounds: int, levels: list[float]) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = np.empty(rounds, dtype=np.float64)
    for start in range(0, rounds, 1000):
        block = min(1000, rounds - start)
        means[start : start + block] = d[rng.integers(0, d.size, size=(block, d.size))].mean(axis=1)
    low, high = np.quantile(means, levels)
    return (float(low), float(high))


SITEGEN_LEVELS = [(1 - 0.95) / 2, (1 + 0.95) / 2]  # paired_bootstrap_ci's, not exactly the audit's
AUDIT_LEVELS = [0.025, 0.975]


def _reference_sign_extreme(d: np.ndarray, seed: int, rounds: int) -> int:
    d = d[d != 0]
    observed = abs(math.fsum(d.tolist()))
    rng, extreme = np.random.default_rng(seed), 0
    for start in range(0, rounds, 1000):
        block = min(1000, rounds - start)
        signs = (rng.integers(0, 2, size=(block, d.size)) * 2 - 1).astype(np.float64)
        extreme += int(np.count_nonzero(np.abs(signs @ d) >= observed - 1e-12))
    return extreme


def _pairs(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Several pairs over the same questions (as the experiments test them): 0/1 and graded scores, many ties."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    out = []
    for _ in range(4):
        a = rng.integers(0, 2, n).astype(np.float64) if rng.random() < 0.5 else rng.random(n).round(2)
        b = a.copy()
        flip = rng.random(n) < rng.uniform(0.1, 0.9)
        b[flip] = rng.random(int(flip.sum())).round(2)
        out.append((a, b))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rounds", [999, 2_500])
def test_bootstrap_intervals_reusing_one_draw_equal_fresh_draws(seed: int, rounds: int) -> None:
    for a, b in _pairs(seed):
        want = _reference_bootstrap(a - b, 42 + seed, rounds, SITEGEN_LEVELS)
        assert experiments.paired_bootstrap_ci(a, b, 42 + seed, rounds) == want
        want = _reference_bootstrap(a - b, 42 + seed, rounds, AUDIT_LEVELS)
        assert audit._bootstrap_interval(a - b, 42 + seed, rounds) == want
    with pytest.MonkeyPatch.context() as patch:  # too many indices to keep: drawn per call, the same values
        patch.setattr(experiments, "CACHED_BOOTSTRAP_VALUES", 0)
        patch.setattr(audit, "_DRAWS_KEPT", 0)
        assert experiments.paired_bootstrap_ci(a, b, 1, rounds) == _reference_bootstrap(
            a - b, 1, rounds, SITEGEN_LEVELS
        )
        assert audit._bootstrap_interval(a - b, 1, rounds) == _reference_bootstrap(a - b, 1, rounds, AUDIT_LEVELS)


def test_reused_bootstrap_draws_cannot_be_changed_by_a_caller() -> None:
    drawn = experiments._bootstrap_indices(3, 1500, 40)
    assert [x.shape for x in drawn] == [(1000, 40), (500, 40)]
    with pytest.raises(ValueError):
        drawn[0][0, 0] = 1
    with pytest.raises(ValueError):
        audit._bootstrap_draws(3, 1500, 40)[0][0, 0] = 1


@pytest.mark.parametrize("seed", range(6))
def test_sign_flip_tests_with_in_place_signs_equal_the_previous_ones(seed: int) -> None:
    for a, b in _pairs(seed):
        d = a - b
        extreme = _reference_sign_extreme(d, 7 + seed, 3_000)
        n = int(np.count_nonzero(d))
        if 2**n <= 3_000:
            continue  # exact enumeration: not rewritten
        result = experiments.paired_randomisation_test(a, b, 7 + seed, 3_000)
        assert result.p_value == (extreme + 1) / 3_001
        assert audit._sign_test_p(d, 7 + seed, 3_000)[0] == (extreme + 1) / 3_001


# ----------------------------------------------------------------------------- the pages check's tokenizer


def _html_parser_numbers(text: str) -> list[tuple[str, str, str]]:
    parser = audit._SourcedNumbers()
    parser.feed(text)
    return parser.numbers


SPAN = '<span data-ev="evidence/c/metrics.json#/a/0" data-fmt="score">0.500</span>'
PAGES = [
    f"<!DOCTYPE html><html><head><title>t</title><style>p > a {{ x: 1 }}</style></head><body>{SPAN}</body></html>",
    f"<p>{SPAN}<!-- {SPAN.replace('0.500', '9')} --></p>",  # a comment: html.parser's
    f"<script>let s = '{SPAN.replace('0.500', '9')}';</script>{SPAN}",  # script content is text
    "<SCRIPT>x</SCRIPT ><SPAN DATA-EV='evidence/x.json#/b' data-fmt=raw>1</SPAN>",
    '<table data-ev-base="evidence/c/runs/bm25.json#/queries" data-ev-fmt="score6"><tr><td>'
    '<span data-ev="q1/0/score">1.250000</span></td><td><span data-ev="evidence/o.json#/x">2</span></td></tr></table>'
    '<span data-ev="q1/0/score">3</span>',
    '<span data-ev="evidence/a.json#/x" data-fmt="raw">1 &amp; 2 &lt;3&gt; &#x41;&ampx</span>',
    '<span data-ev="evidence/a.json#/x&amp;y">1</span><span data-ev="">2</span><span data-ev>3</span>',
    '<span data-ev="evidence/a.json#/x"><b>1</b>2</span>',  # a tag inside a number
    '<span data-ev="evidence/a.json#/x"><span data-ev="evidence/b.json#/y">1</span>2</span>',
    '<span data-ev="evidence/a.json#/x"/>after</span><table data-ev-base="evidence/t.json#"/>'
    '<span data-ev="z">4</span>',
    '<details open class="x"><summary>s</summary><span data-ev="evidence/a.json#/x">5</span></details>',
    '<title><span data-ev="evidence/a.json#/x">6</span></title>',
    f"<p>a < b {SPAN}</p>",
    f'<a href="x?a=1&b=2" title="a > b">{SPAN}</a>',
    f"<style>{SPAN}",  # unclosed style: html.parser waits for its end and sees nothing
    f"{SPAN}<span data-ev='evidence/a.json#/q' data-fmt=\"raw\">7",
    f'<div\nclass="a"\n>{SPAN}</div\n><br/><img src="x" />',
]


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_check_finds_the_numbers_html_parser_finds(page: str) -> None:
    assert audit._sourced_numbers(page) == _html_parser_numbers(page)


def test_the_pages_check_finds_the_numbers_html_parser_finds_on_built_pages(built_site_pages: list[Path]) -> None:
    for path in built_site_pages:
        text = path.read_text(encoding="utf-8")
        numbers = audit._sourced_numbers(text)
        assert numbers == _html_parser_numbers(text), path
        mangled = text.replace('data-fmt="score"', 'data-fmt="raw"', 1)
        assert audit._sourced_numbers(mangled) == _html_parser_numbers(mangled), path


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*PAGES, SPAN, "<p>", "</p>", "&amp;", "<", "<!-- x -->", "</span>", "<b>"]), max_size=8)
)
def test_the_pages_check_finds_the_numbers_html_parser_finds_in_any_mix(parts: list[str]) -> None:
    page = "".join(parts)
    assert audit._sourced_numbers(page) == _html_parser_numbers(page)


@pytest.fixture(scope="module")
def built_site_pages() -> list[Path]:
    """The committed site's pages (what sitegen writes), read only."""
    pages = sorted((Path(__file__).resolve().parent.parent / "site").rglob("*.html"))
    assert pages
    return pages


# ----------------------------------------------------------------------------- tokenise once: BM25 and hygiene

TEXTS = st.lists(
    st.lists(st.sampled_from(["The", "cards", "card", "boxes", "is", "ÉTÉS", "a_b", "x1", "", "  ", "\n", "?"])).map(
        " ".join
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(texts=TEXTS, stem=st.booleans(), stop=st.booleans())
def test_the_audit_s_shared_word_ids_give_each_text_s_tokens(texts: list[str], stem: bool, stop: bool) -> None:
    stop_words = frozenset(STOP_WORDS) if stop else frozenset()
    words = audit.filtered_words(audit.words_of(texts), stop_words, stem)
    got = [[words.vocab[i] for i in words.ids[a:b].tolist()] for a, b in itertools.pairwise(words.starts.tolist())]
    assert got == [audit.tokens(t, stop_words, stem) for t in texts]


@settings(max_examples=100, deadline=None)
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


@settings(max_examples=100, deadline=None)
@given(passages=PASSAGES, questions=QUESTIONS, labels=LABELS)
def test_the_audit_s_hygiene_flags_from_shared_word_ids_equal_its_own_tokenising(
    passages: list, questions: list, labels: list
) -> None:
    docs, qs, qrels = _inputs(passages, questions, labels)
    words = audit.words_of(audit._passage_text(title, text) for _, title, text in docs)
    assert audit.hygiene_flags(docs, qs, qrels, None, words) == _reference_hygiene_flags(docs, qs, qrels)


@settings(max_examples=100, deadline=None)
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


# ----------------------------------------------------------------------------- ties: the previous expectation


def _reference_tie_expected(name: str, blocks: list[list[str]], grades: dict[str, int]) -> float:
    """audit.tie_expected before it visited only the blocks holding slots."""
    family, _, cut = name.partition("@")
    k = int(cut)
    where = [(b, i) for b, block in enumerate(blocks) for i in range(len(block))][:k]
    share = [sum(1 for d in block if grades.get(d, 0) > 0) for block in blocks]

    def none_in_first(t: int) -> float:
        p = 1.0
        for b, block in enumerate(blocks):
            slots = sum(1 for bb, _ in where[:t] if bb == b)
            p *= math.comb(len(block) - share[b], slots) / math.comb(len(block), slots)
        return p

    if family == "hit":
        return 1.0 - none_in_first(len(where))
    return math.fsum((none_in_first(t) - none_in_first(t + 1)) / (t + 1) for t in range(len(where)))


@pytest.mark.parametrize("seed", range(40))
def test_the_audit_s_tie_expectation_equals_the_previous_one_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, size=int(rng.integers(0, 30)))
    blocks = [[f"d{b}_{i}" for i in range(int(s))] for b, s in enumerate(sizes)]
    grades = {d: int(rng.integers(0, 3)) for block in blocks for d in block if rng.random() < 0.3}
    for name in ("hit@1", "hit@5", "hit@10", "mrr@1", "mrr@10", "mrr@100"):
        assert audit.tie_expected(name, blocks, grades) == _reference_tie_expected(name, blocks, grades), name


# ----------------------------------------------------------------------------- dense: BLAS scores in batches


@pytest.mark.parametrize("seed", range(3))
def test_the_dense_ranker_s_batched_blas_scores_rank_as_one_product_per_query(seed: int) -> None:
    """The batch's BLAS scores only narrow the candidates, so the hits are the per-query path's, bit for bit."""
    rng = np.random.default_rng(seed)
    docs = rng.standard_normal((400, 16)).astype(np.float32)
    docs[::7] = docs[0]  # exact ties, settled by document id
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = docs[rng.integers(0, 400, dense.QUERY_BATCH + 9)] + np.float32(0.01)
    doc_ids = tuple(f"d{i:03d}" for i in rng.permutation(400))
    query_ids = tuple(f"q{i}" for i in range(len(queries)))
    corpus = _corpus([(d, "", "x") for d in doc_ids], [(q, "x") for q in query_ids], {})
    vectors = CorpusEmbeddings("m", None, doc_ids, docs, query_ids, queries)
    run = dense.DenseRanker().rank(RankInputs(corpus=corpus, embeddings=vectors), 10)
    key = doc_id_order(doc_ids)
    for row, qid in enumerate(query_ids):
        best, scores = dense.dense_top_k(docs, queries[row], key, 10)
        assert [(h.doc_id, h.score) for h in run.hits[qid]] == [
            (doc_ids[i], float(s)) for i, s in zip(best, scores, strict=True)
        ]
