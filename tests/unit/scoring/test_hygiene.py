"""Question-set hygiene: each flag on hand-made inputs, the build's hygiene.json, the corpus page, the
``--strict-questions`` error, and the audit's own recomputation (which must agree with sitegen's on any input)."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from hypothesis import given, settings
from hypothesis import strategies as st

from sitegen import audit
from sitegen.inputs.corpus import Corpus, Document, Query
from sitegen.scoring.hygiene import FLAG_KINDS, RULES, hygiene_report
from tests.helpers import TINY_DOCS, TINY_QRELS, TINY_QUERIES

BODY = "card payments settle in three working days unless the bank holds them for review first"


def _corpus(
    docs: list[tuple[str, str, str]], questions: list[tuple[str, str]], qrels: dict, filters: dict | None = None
) -> Corpus:
    return Corpus(
        name="hand",
        root=Path("hand"),
        documents=tuple(Document(d, title, text) for d, title, text in docs),
        queries=tuple(Query(q, text, filter=MappingProxyType((filters or {}).get(q, {}))) for q, text in questions),
        qrels=MappingProxyType(qrels),
        readme="",
        input_files=(),
    )


def _flags(report: dict, kind: str) -> list:
    return report["flags"][kind]


def test_a_question_whose_8_word_ngram_is_in_a_passage_leaks_and_a_7_word_overlap_does_not() -> None:
    eight = " ".join(BODY.split()[2:10])  # 8 consecutive words of the passage
    seven = " ".join(BODY.split()[2:9])
    report = hygiene_report(
        _corpus(
            [("d1", "", BODY), ("d2", "", "unrelated words only")],
            [("long", f"why do {eight} so often"), ("near", f"why do {seven} so often today")],
            {},
        )
    )
    assert RULES.leak_ngram == 8
    assert _flags(report, "leakage") == [{"query_id": "long", "doc_ids": ["d1"]}]


def test_a_short_question_leaks_only_when_its_whole_text_is_in_a_passage() -> None:
    report = hygiene_report(
        _corpus(
            [("d1", "Settlement", BODY)],
            [("whole", "Three working DAYS?"), ("split", "three days working"), ("tiny", "card payments")],
            {},
        )
    )
    assert _flags(report, "leakage") == [{"query_id": "whole", "doc_ids": ["d1"]}]  # "tiny": under 3 words


def test_exact_and_near_duplicate_questions_are_flagged() -> None:
    report = hygiene_report(
        _corpus(
            [("d1", "", "x")],
            [
                ("a", "When do payouts reach my bank account in Europe?"),
                ("b", "when do payouts reach my bank account in europe"),
                ("c", "When do payouts reach the bank account in Europe?"),  # 8 shared of 10 words: 0.8
                ("d", "When do refunds reach the card used in Asia?"),
            ],
            {},
        )
    )
    assert _flags(report, "duplicate_questions") == [
        {"query_ids": ["a", "b"], "text": "when do payouts reach my bank account in europe"}
    ]
    pairs = [p["query_ids"] for p in _flags(report, "near_duplicate_questions")]
    assert pairs == [["a", "c"], ["b", "c"]]
    assert _flags(report, "near_duplicate_questions")[0] | {"query_ids": None} == {
        "query_ids": None,
        "shared_words": 8,
        "union_words": 10,
    }


def test_the_same_question_under_different_filters_is_not_a_duplicate() -> None:
    text = "How often are work laptops replaced at the office?"
    near = "How often are work laptops replaced at our office?"
    questions = [("t1", text), ("t2", text), ("t3", text), ("t4", near)]
    filters = {"t1": {"tenant_id": "a"}, "t2": {"tenant_id": "b"}, "t3": {"tenant_id": "a"}, "t4": {"tenant_id": "b"}}
    report = hygiene_report(_corpus([("d1", "", "x")], questions, {}, filters))
    assert [d["query_ids"] for d in _flags(report, "duplicate_questions")] == [["t1", "t3"]]
    assert [d["query_ids"] for d in _flags(report, "near_duplicate_questions")] == [["t2", "t4"]]


def test_a_question_equal_to_a_passage_title_is_flagged() -> None:
    report = hygiene_report(
        _corpus(
            [("d1", "E4012: card expired", "Error E4012 means the card has expired."), ("d2", "Other", "text")],
            [("q1", "e4012 card expired"), ("q2", "is e4012 card expired")],
            {},
        )
    )
    assert _flags(report, "title_questions") == [{"query_id": "q1", "doc_ids": ["d1"]}]


def test_a_labelled_passage_with_an_unlabelled_near_duplicate_is_flagged() -> None:
    copy = BODY + " again"  # one five-word shingle more than the original: Jaccard 11/12
    other = "a different passage about payouts to the bank and nothing else at all here"
    report = hygiene_report(
        _corpus(
            [("d1", "", BODY), ("d2", "", copy), ("d3", "", other)],
            [("q1", "settlement time"), ("q2", "settlement delay"), ("q3", "payouts")],
            {"q1": {"d1": 1}, "q2": {"d1": 1, "d2": 0}, "q3": {"d3": 1}},
        )
    )
    # q2 judged d2 (grade 0), so only q1 is flagged; d3 has no near-duplicate.
    assert _flags(report, "unlabelled_near_duplicates") == [
        {"query_id": "q1", "doc_id": "d1", "near_duplicates": ["d2"]}
    ]
    assert report["counts"]["labelled_passages"] == 2


def test_a_clean_question_set_raises_no_flag() -> None:
    docs = [(d["_id"], d["title"], d["text"]) for d in TINY_DOCS]
    qrels: dict = {}
    for q, d, g in TINY_QRELS:
        qrels.setdefault(q, {})[d] = g
    report = hygiene_report(_corpus(docs, [(q["_id"], q["text"]) for q in TINY_QUERIES], qrels))
    assert report["counts"] == dict.fromkeys(FLAG_KINDS, 0) | {"flagged_questions": 0, "labelled_passages": 3}


WORDS = st.sampled_from(["a", "b", "c", "d", "e", "card", "bank", "E4012"])


@settings(max_examples=60, deadline=None)
@given(
    passages=st.lists(st.tuples(st.lists(WORDS, max_size=3), st.lists(WORDS, max_size=14)), min_size=1, max_size=6),
    questions=st.lists(st.lists(WORDS, max_size=10), min_size=1, max_size=6),
    labels=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 2)), max_size=8),
    tenants=st.lists(st.sampled_from(["", "a", "b"]), min_size=6, max_size=6),
)
def test_the_audit_s_own_recomputation_agrees_with_sitegen_on_any_input(passages, questions, labels, tenants) -> None:
    docs = [(f"d{i}", " ".join(title), " ".join(text)) for i, (title, text) in enumerate(passages)]
    qs = [(f"q{i}", " ".join(words)) for i, words in enumerate(questions)]
    qrels: dict[str, dict[str, int]] = {}
    for q, d, g in labels:
        if q < len(qs) and d < len(docs):
            qrels.setdefault(qs[q][0], {})[docs[d][0]] = g
    filters = {q: {"tenant_id": t} for (q, _), t in zip(qs, tenants, strict=False) if t}
    mine = hygiene_report(_corpus(docs, qs, qrels, filters))
    theirs = audit.hygiene_flags(docs, qs, qrels, filters)
    assert mine["flags"] == theirs["flags"]
    assert mine["counts"] == theirs["counts"]


# ------------------------------------------------------------------- the build, the page, the audit
