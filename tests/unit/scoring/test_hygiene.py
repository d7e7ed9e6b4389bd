"""Question-set hygiene: each flag on hand-made inputs, the audit's own recomputation (which must agree with
sitegen's on any input), the chunk tokeniser, and runs of chunks searched in forked processes (which must give one
process's report). The build's hygiene.json, the corpus page and ``--strict-questions``: in
tests/integration/test_hygiene_in_a_build.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitegen import audit
from sitegen.inputs.corpus import Corpus, Document, Query
from sitegen.parallel import can_fork
from sitegen.rankers.tokenize import tokenize
from sitegen.scoring import hygiene
from sitegen.scoring.hygiene import FLAG_KINDS, RULES, hygiene_report
from tests.helpers import TINY_DOCS, TINY_QRELS, TINY_QUERIES, drawn_hygiene_inputs, examples

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


def test_a_question_holding_the_word_that_joins_the_passages_leaks_nowhere_it_is_not() -> None:
    docs = [("d1", "", "a b c d"), ("d2", "", "x y z"), ("d3", "", "q r s")]
    questions = [("joined", "sep0 a b"), ("whole", "x y z")]  # "sep0": the word put before each passage
    report = hygiene_report(_corpus(docs, questions, {}))
    assert _flags(report, "leakage") == [{"query_id": "whole", "doc_ids": ["d2"]}]
    assert report["flags"] == audit.hygiene_flags(docs, questions, {})["flags"]


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


@settings(max_examples=examples(60), deadline=None)
@given(
    passages=st.lists(st.tuples(st.lists(WORDS, max_size=3), st.lists(WORDS, max_size=14)), min_size=1, max_size=6),
    questions=st.lists(st.lists(WORDS, max_size=10), min_size=1, max_size=6),
    labels=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 2)), max_size=8),
    tenants=st.lists(st.sampled_from(["", "a", "b"]), min_size=6, max_size=6),
)
def test_the_audit_s_own_recomputation_agrees_with_sitegen_on_any_input(passages, questions, labels, tenants) -> None:
    docs, qs, qrels = drawn_hygiene_inputs(passages, questions, labels)
    filters = {q: {"tenant_id": t} for (q, _), t in zip(qs, tenants, strict=False) if t}
    mine = hygiene_report(_corpus(docs, qs, qrels, filters))
    theirs = audit.hygiene_flags(docs, qs, qrels, filters)
    assert mine["flags"] == theirs["flags"]
    assert mine["counts"] == theirs["counts"]


# ------------------------------------------------------------------- the tokeniser, runs of chunks in forked processes


ASCII_PIECES = ["a", "Zq", "09", "_", " ", ".", ",", "-", "'", "\n", "\t", "sep0", "SEP1", "sep"]
OTHER_PIECES = ["İ", "Σ", "ς", "ß", "é", "\u0301", "²", "٣", "\u00a0", "\u2028", "ǅ", "ﬁ", "\ud800"]


@settings(max_examples=examples(300), deadline=None)
@given(
    texts=st.lists(
        st.one_of(
            st.lists(st.sampled_from(ASCII_PIECES), max_size=12).map("".join),  # ASCII: the fast path
            st.lists(st.sampled_from(ASCII_PIECES + OTHER_PIECES), max_size=12).map("".join),
            st.text(max_size=30),  # any characters
        ),
        min_size=1,
        max_size=6,
    )
)
def test_a_chunk_s_words_are_each_passage_s_own_tokenize(texts: list[str]) -> None:
    passages = hygiene._Passages(texts)
    assert [passages.words(i) for i in range(len(texts))] == [tokenize(text) for text in texts]
    assert len(passages.starts) == len(texts)


def _corpus_to_split() -> Corpus:
    """Passages with every flag, in many chunks: leaks, titles and near-duplicates in different runs."""
    leak = "when does a card payment settle in the bank account"
    docs = []
    for i in range(120):
        words = [f"w{(i * 7 + j * 13) % 97}" for j in range(12 + i % 9)]
        title = "card expired" if i % 40 == 3 else ("" if i % 3 else f"t{i % 5}")
        text = " ".join(words) + (f" {leak}" if i % 37 == 5 else "")
        docs.append((f"d{i}", title, text))
    for copy, source in ((61, 2), (100, 11), (119, 64)):  # a near-duplicate of a labelled passage, another run
        docs[copy] = (f"d{copy}", "", docs[source][2] + " extra")
    questions = [("q1", leak), ("q2", "card expired"), ("q3", "Card EXPIRED?"), ("q4", "t2")]
    questions += [(f"p{i}", f"what is w{i} for") for i in range(6)]
    qrels = {"q1": {"d2": 1}, "q2": {"d11": 2, "d5": 1}, "q4": {"d64": 1}, "p1": {"d119": 1}}
    return _corpus(docs, questions, qrels)


def _split(monkeypatch: pytest.MonkeyPatch, parts: int) -> None:
    """Chunks of 7 passages, and a corpus of any size searched in ``parts`` runs (forked where they can be)."""
    monkeypatch.setattr(hygiene, "_CHUNK_PASSAGES", 7)
    monkeypatch.setattr(hygiene, "_FORK_MIN_PASSAGES", 0)
    monkeypatch.setattr(hygiene, "workers", lambda most: min(parts, most))


def _one_process(corpus: Corpus) -> dict:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hygiene, "_CHUNK_PASSAGES", 7)
        patch.setattr(hygiene, "_FORK_MIN_PASSAGES", 10**9)
        return hygiene_report(corpus)


@pytest.mark.skipif(not can_fork(), reason="forks only on Linux")
@pytest.mark.parametrize("parts", [2, 3, 4])
def test_runs_of_chunks_searched_in_forked_processes_give_one_process_s_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, parts: int
) -> None:
    corpus = _corpus_to_split()
    alone = _one_process(corpus)
    assert all(alone["counts"][kind] for kind in ("leakage", "title_questions", "unlabelled_near_duplicates"))
    assert len(alone["flags"]["unlabelled_near_duplicates"]) >= 3  # found in different runs
    scan = hygiene._Search.scan

    def scan_and_tell(search: hygiene._Search, passages: range) -> hygiene._Found:
        (tmp_path / f"{passages.start}.pid").write_text(str(os.getpid()))
        return scan(search, passages)

    _split(monkeypatch, parts)
    monkeypatch.setattr(hygiene._Search, "scan", scan_and_tell)
    report = hygiene_report(corpus)
    assert json.dumps(report, sort_keys=True) == json.dumps(alone, sort_keys=True)
    pids = [int(path.read_text()) for path in tmp_path.glob("*.pid")]
    assert len(set(pids)) == parts and os.getpid() in pids  # this process and parts - 1 children


@pytest.mark.skipif(not can_fork(), reason="forks only on Linux")
def test_a_run_whose_child_fails_is_searched_again_here(monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = _corpus_to_split()
    alone = _one_process(corpus)
    here, scan = os.getpid(), hygiene._Search.scan
    searched_here: list[int] = []

    def scan_or_fail(search: hygiene._Search, passages: range) -> hygiene._Found:
        if os.getpid() != here:  # runs from 42 and 84: the first child exits, the second raises
            if passages.start < 84:
                os._exit(1)
            raise MemoryError("in the child")
        searched_here.append(passages.start)
        return scan(search, passages)

    _split(monkeypatch, 3)
    monkeypatch.setattr(hygiene._Search, "scan", scan_or_fail)
    assert hygiene_report(corpus) == alone
    assert searched_here == [0, 42, 84]  # its own run, then each failed child's


@pytest.mark.skipif(not can_fork(), reason="forks only on Linux")
@settings(max_examples=examples(25), deadline=None)
@given(
    passages=st.lists(st.tuples(st.lists(WORDS, max_size=3), st.lists(WORDS, max_size=14)), min_size=1, max_size=30),
    questions=st.lists(st.lists(WORDS, max_size=10), min_size=1, max_size=6),
    labels=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 29), st.integers(0, 2)), max_size=12),
    chunk=st.integers(1, 5),
    parts=st.integers(2, 4),
)
def test_any_corpus_split_between_processes_gives_one_process_s_report(
    passages, questions, labels, chunk, parts
) -> None:
    docs, qs, qrels = drawn_hygiene_inputs(passages, questions, labels)
    corpus = _corpus(docs, qs, qrels)
    whole = hygiene_report(corpus)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hygiene, "_CHUNK_PASSAGES", chunk)
        patch.setattr(hygiene, "_FORK_MIN_PASSAGES", 0)
        patch.setattr(hygiene, "workers", lambda most: parts)
        assert json.dumps(hygiene_report(corpus), sort_keys=True) == json.dumps(whole, sort_keys=True)
