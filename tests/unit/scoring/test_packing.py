"""Packing rules, citation verdicts, and the prompt view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitegen.errors import CorpusError
from sitegen.inputs.corpus import load_corpus
from sitegen.scoring.packing import (
    BUDGET_MULTIPLES,
    Packed,
    check_citation,
    derived_budgets,
    pack,
    packing_report,
)
from tests.helpers import write_corpus

HITS = [("a", "x" * 50), ("b", "y" * 300), ("c", "z" * 30), ("d", "w" * 25)]


def test_pack_keeps_whole_passages_in_rank_order_and_records_the_budget_used() -> None:
    packed = pack(HITS, 100)
    assert packed.included == ("a", "c")
    assert packed.used == 80 and packed.budget == 100


def test_an_oversized_passage_is_skipped_and_a_later_smaller_one_is_still_included() -> None:
    packed = pack(HITS, 110)
    assert packed.skipped == ("b",)
    assert packed.included == ("a", "c", "d") and packed.used == 105
    assert pack(HITS, 104).included == ("a", "c")


def test_budget_counts_unicode_code_points_not_bytes() -> None:
    text = "Ünïcode ✓"  # 9 code points, 14 UTF-8 bytes
    assert pack([("u", text)], 9).included == ("u",)
    assert pack([("u", text)], 8).included == ()


def test_no_budget_packs_everything_and_a_zero_budget_nothing() -> None:
    assert pack(HITS, None).included == ("a", "b", "c", "d")
    assert pack(HITS, 0).included == ()
    with pytest.raises(ValueError):
        pack(HITS, -1)


PASSAGES = {"a": "The timeout is thirty seconds.", "b": "Retries back off exponentially."}


@pytest.mark.parametrize(
    ("doc_id", "quote", "verdict"),
    [
        ("a", "thirty seconds", "valid"),
        ("zz", "thirty seconds", "unknown-id"),
        ("a", "forty seconds", "quote-not-found"),
        ("b", "back off", "not-in-evidence"),
        ("a", "back off", "quote-not-found"),
        ("a", "", "empty-quote"),
    ],
)
def test_each_citation_verdict(doc_id: str, quote: str, verdict: str) -> None:
    packed = Packed(included=("a",), skipped=("b",), used=30, budget=40)
    assert check_citation(doc_id, quote, packed, PASSAGES) == verdict


def test_a_twenty_character_budget_excludes_the_passage_so_citing_it_is_rejected(tmp_path: Path) -> None:
    corpus = load_corpus(write_corpus(tmp_path / "c"))
    (tmp_path / "c" / "citations.jsonl").write_text(
        json.dumps({"query_id": "q2", "citations": [{"kind": "valid", "doc_id": "d3", "quote": "card has expired"}]})
        + "\n"
    )
    corpus = load_corpus(tmp_path / "c")
    report = packing_report(corpus, {"bm25": {"q2": ["d3", "d4"]}}, corpus.citations, budgets=(20, 1000))
    verdicts = report["citations"]["q2"][0]["verdicts"]["bm25"]
    assert verdicts == {"top3": "valid", "20": "not-in-evidence", "1000": "valid"}
    assert report["packs"]["bm25"]["q2"]["20"] == {"ranks": [], "used": 0}  # nothing fits: d3 and d4 skipped
    assert report["packs"]["bm25"]["q2"]["1000"]["ranks"] == [1, 2]  # stored as run ranks, not ids
    assert report["results"]["bm25"]["by_kind"]["exact-code"]["answer_included"] == {"top3": 1, "20": 0, "1000": 1}


def test_citation_fixture_naming_an_unknown_question_is_rejected_with_its_line(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "c")
    (folder / "citations.jsonl").write_text(
        '{"query_id": "q1", "citations": []}\n{"query_id": "nope", "citations": []}\n'
    )
    with pytest.raises(CorpusError) as info:
        load_corpus(folder)
    assert info.value.line == 2 and "unknown query_id 'nope'" in info.value.problem


def test_unconfigured_budgets_are_the_median_passage_length_times_the_multiples(tmp_path: Path) -> None:
    lengths = [10, 30, 50, 70]  # lower median of the indexed texts (no titles): 30
    docs = [{"_id": f"d{n}", "title": "", "text": "x" * n} for n in lengths]
    folder = write_corpus(tmp_path / "c", docs=docs, queries=[{"_id": "q1", "text": "x"}], qrels=[("q1", "d30", 1)])
    corpus = load_corpus(folder)
    median, budgets = derived_budgets(corpus)
    assert median == 30 and budgets == tuple(30 * k for k in BUDGET_MULTIPLES)
    report = packing_report(corpus, {"bm25": {q.query_id: ["d30", "d10"] for q in corpus.queries}})
    assert report["budgets"] == list(budgets)
    assert report["budgets_from"] == {"median_characters": 30, "multiples": list(BUDGET_MULTIPLES)}
    # the smallest budget holds one median passage: the first hit fits whole
    assert report["packs"]["bm25"][corpus.queries[0].query_id]["30"]["ranks"] == [1]  # d30
    configured = packing_report(corpus, {"bm25": {}}, budgets=(5,))
    assert configured["budgets"] == [5] and configured["budgets_from"] == "sitegen.json"
