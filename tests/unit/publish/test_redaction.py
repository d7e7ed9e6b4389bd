"""The records of a redacted bundle, and the README check, on hand-written inputs."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from sitegen import audit
from sitegen.inputs.corpus import load_corpus
from sitegen.publish.redaction import Publication, hashed_record, publication, quoted_texts
from tests.helpers import write_corpus


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_passage_record_keeps_its_id_and_metadata_and_stands_for_each_text_by_its_sha256() -> None:
    line = {"_id": "d1", "title": "Refunds", "text": "Refund a card.", "metadata": {"text": "kept", "year": 2024}}
    assert hashed_record("corpus.jsonl", line) == {
        "_id": "d1",
        "title_sha256": _sha("Refunds"),
        "text_sha256": _sha("Refund a card."),
        "metadata": {"text": "kept", "year": 2024},  # only the record's own text fields are texts
    }


def test_a_citation_record_stands_for_each_quote_by_its_sha256() -> None:
    line = {"query_id": "q1", "citations": [{"kind": "exact", "doc_id": "d1", "quote": "a card"}]}
    assert hashed_record("citations.jsonl", line) == {
        "query_id": "q1",
        "citations": [{"kind": "exact", "doc_id": "d1", "quote_sha256": _sha("a card")}],
    }


texts = st.text(max_size=20)
records = st.fixed_dictionaries(
    {"_id": st.text(min_size=1, max_size=5)},
    optional={
        "title": st.one_of(texts, st.none()),
        "text": texts,
        "kind": texts,
        "metadata": st.dictionaries(st.sampled_from(["text", "title", "tenant"]), texts, max_size=2),
    },
)


@given(records)
def test_the_audit_writes_the_record_rule_again_and_agrees(record: dict) -> None:
    """The standalone audit rebuilds a record from the file --inputs brings: its rule must be sitegen's."""
    assert audit._records_of("inputs/corpus.jsonl", record) == hashed_record("corpus.jsonl", record)
    assert audit._records_of("inputs/queries.jsonl", record) == hashed_record("queries.jsonl", record)


def test_a_corpus_is_redacted_by_its_sitegen_json_or_by_name(tmp_path: Path) -> None:
    plain = load_corpus(write_corpus(tmp_path / "plain"))
    configured = write_corpus(tmp_path / "configured")
    (configured / "sitegen.json").write_text('{"publish": "redacted"}')
    assert publication(plain, (), publish_vectors=False) == Publication(redacted=False, vectors=True)
    assert publication(plain, ("plain",), publish_vectors=False) == Publication(redacted=True, vectors=False)
    assert publication(load_corpus(configured), (), publish_vectors=True) == Publication(redacted=True, vectors=True)


def test_a_readme_quoting_30_characters_of_a_text_is_found_whatever_its_case_and_line_breaks(tmp_path: Path) -> None:
    quoting = "# tiny\n\nIt says: how to REFUND a card payment\nin full or in part, and more.\n"
    corpus = load_corpus(write_corpus(tmp_path / "quoting", readme=quoting))
    assert quoted_texts(corpus) == ["passage d1"]
    # 28 characters of d1's text ("how to refund a card payment") are not a quote
    short = load_corpus(write_corpus(tmp_path / "short", readme="# tiny\n\nhow to refund a card payment.\n"))
    assert quoted_texts(short) == []
    question = load_corpus(write_corpus(tmp_path / "question", readme="Asked: when do payouts reach the bank?\n"))
    assert quoted_texts(question) == ["question q3"]
