"""Question-set hygiene: each flag on hand-made inputs, the build's hygiene.json, the corpus page, the
``--strict-questions`` error, and the audit's own recomputation (which must agree with sitegen's on any input)."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from sitegen import audit
from sitegen.builder import BuildOptions, build_site
from sitegen.cli import cli
from sitegen.errors import SitegenError
from sitegen.inputs.corpus import Corpus, Document, Query
from sitegen.scoring.hygiene import FLAG_KINDS, RULES, hygiene_report
from tests.helpers import TINY_DOCS, TINY_QRELS, TINY_QUERIES, FakeEmbeddingModel, evidence_failures, rehash_manifest

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

LEAKED = {"_id": "q5", "text": "Error E4012 means the card", "kind": "exact-code"}


def _write(folder: Path, queries: list[dict]) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in TINY_DOCS), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    rows = "".join(f"{q}\t{d}\t{g}\n" for q, d, g in [*TINY_QRELS, ("q5", "d3", 1)])
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows, encoding="utf-8")
    return folder


def _build(corpora: Path, out: Path, log: list[str], **kwargs) -> None:
    options = BuildOptions(
        corpora_dir=corpora, out_dir=out, cache_dir=out.parent / "cache", rankers=("bm25",), **kwargs
    )
    build_site(options, log=log.append, model=FakeEmbeddingModel())


@pytest.fixture
def leaky(tmp_path: Path) -> Path:
    return _write(tmp_path / "corpora" / "tiny", [*TINY_QUERIES, LEAKED])


def test_a_planted_leaked_question_is_flagged_in_hygiene_json_on_the_corpus_page_and_as_a_warning(
    tmp_path: Path, leaky: Path
) -> None:
    log: list[str] = []
    site = tmp_path / "site"
    _build(leaky.parent, site, log)
    hygiene = json.loads((site / "evidence" / "tiny" / "hygiene.json").read_text())
    assert hygiene["flags"]["leakage"] == [{"query_id": "q5", "doc_ids": ["d3"]}]
    assert "evidence/tiny/hygiene.json" in json.loads((site / "evidence" / "manifest.json").read_text())["files"]
    page = (site / "corpora" / "tiny" / "index.html").read_text()
    assert '<a href="#hygiene">Question-set hygiene</a>' in page
    section = page[page.index('id="hygiene"') :]
    assert '<span class="id">q5</span> (in d3)' in section
    assert 'data-ev="evidence/tiny/hygiene.json#/counts/leakage">1</span>' in section
    assert 'data-ev="evidence/tiny/hygiene.json#/rules/leakage/ngram_words">8</span>' in section
    assert any(line.startswith("warning: tiny: question text found verbatim") and "q5" in line for line in log)
    report = audit.run_audit(site, echo=lambda _: None)
    assert report["verdict"] == "pass", evidence_failures(report)
    assert any(c["name"] == "hygiene:tiny" for c in report["checks"])


def test_strict_questions_fails_the_build_naming_corpus_flag_and_question(tmp_path: Path, leaky: Path) -> None:
    with pytest.raises(
        SitegenError, match=r"tiny: question text found verbatim in a passage \(leakage\): questions q5"
    ):
        _build(leaky.parent, tmp_path / "site", [], strict_questions=True)
    assert not (tmp_path / "site").exists()
    result = CliRunner().invoke(
        cli,
        [
            *("build", "--corpora", str(leaky.parent), "--out", str(tmp_path / "cli"), "--ranker", "bm25"),
            *("--quiet", "--cache-dir", str(tmp_path / "cache"), "--strict-questions"),
        ],
    )
    assert result.exit_code == 1 and "leakage" in result.output and "q5" in result.output


def test_the_audit_fails_a_tampered_hygiene_json(tmp_path: Path, leaky: Path) -> None:
    site = tmp_path / "site"
    _build(leaky.parent, site, [])
    path = site / "evidence" / "tiny" / "hygiene.json"
    data = json.loads(path.read_text())
    data["flags"]["leakage"] = []
    data["counts"]["leakage"] = 0
    path.write_text(json.dumps(data), encoding="utf-8")
    rehash_manifest(site)
    failures = evidence_failures(audit.run_audit(site, echo=lambda _: None))
    assert any("flags.leakage differ" in line for line in failures["hygiene:tiny"])
    assert any("counts" in line for line in failures["hygiene:tiny"])
