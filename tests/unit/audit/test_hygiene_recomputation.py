"""The audit's question-set hygiene equals a plain reference implementation kept here (every passage's words in
one list), on random and planted inputs: streamed over the passages, computed from word ids shared with the BM25
checks; and sitegen's own hygiene, computed in chunks of passages, equals one chunk and the audit's flags. The
committed evidence must stay byte-identical, so every comparison is exact equality."""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitegen import audit
from sitegen.scoring import hygiene
from tests.helpers import drawn_hygiene_inputs, examples, make_corpus


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
    docs, qs, qrels = drawn_hygiene_inputs(passages, questions, labels)
    docs = [(d, *docs[i // 2][1:]) if i % 2 and i % 4 == 1 else (d, t, x) for i, (d, t, x) in enumerate(docs)]
    return docs, qs, qrels


@settings(max_examples=examples(150), deadline=None)
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


@settings(max_examples=examples(80), deadline=None)
@given(passages=PASSAGES, questions=QUESTIONS, labels=LABELS, chunk=st.integers(1, 4))
def test_sitegen_s_hygiene_in_chunks_of_passages_equals_one_chunk(
    passages: list, questions: list, labels: list, chunk: int
) -> None:
    corpus = make_corpus(*_inputs(passages, questions, labels))
    whole = hygiene.hygiene_report(corpus)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hygiene, "_CHUNK_PASSAGES", chunk)
        assert hygiene.hygiene_report(corpus) == whole
    assert whole["flags"] == audit.hygiene_flags(*_inputs(passages, questions, labels))["flags"]


@settings(max_examples=examples(100), deadline=None)
@given(passages=PASSAGES, questions=QUESTIONS, labels=LABELS)
def test_the_audit_s_hygiene_flags_from_shared_word_ids_equal_its_own_tokenising(
    passages: list, questions: list, labels: list
) -> None:
    docs, qs, qrels = _inputs(passages, questions, labels)
    words = audit.words_of(audit._passage_text(title, text) for _, title, text in docs)
    assert audit.hygiene_flags(docs, qs, qrels, None, words) == _reference_hygiene_flags(docs, qs, qrels)
