"""Chunking, span-derived relevance at the edges, and metadata filters applied before ranking."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sitegen.errors import CorpusError
from sitegen.inputs.chunk_settings import ChunkSetting, parse_chunking
from sitegen.inputs.chunking import chunk_corpus, chunk_grade, chunk_offsets
from sitegen.inputs.corpus import Span, load_corpus
from sitegen.inputs.filters import FilterError, compile_filter, parse_vocabulary, passes
from sitegen.rankers import RANKERS, RankInputs
from sitegen.rankers.filtering import allowed_masks
from tests.helpers import TENANT_DOCS, TENANT_FILTERS, TENANT_QUERIES, FakeEmbeddingModel, write_corpus

WORDS = " ".join(f"w{i}" for i in range(10))  # w0 .. w9, each word 2-3 characters


def test_fixed_windows_cover_the_text_with_the_stated_overlap() -> None:
    ranges = chunk_offsets(WORDS, ChunkSetting("fixed", 4, 0.5))
    texts = [WORDS[a:b] for a, b in ranges]
    assert texts == ["w0 w1 w2 w3", "w2 w3 w4 w5", "w4 w5 w6 w7", "w6 w7 w8 w9"]
    assert [WORDS[a:b] for a, b in chunk_offsets(WORDS, ChunkSetting("fixed", 4, 0))] == [
        "w0 w1 w2 w3",
        "w4 w5 w6 w7",
        "w8 w9",
    ]


def test_paragraph_chunks_keep_paragraphs_whole_and_cut_only_oversized_ones() -> None:
    text = "a b c\n\nd e\n\nf g h i j k\n\nl"
    texts = [text[a:b] for a, b in chunk_offsets(text, ChunkSetting("paragraph", 5, 0))]
    assert texts == ["a b c\n\nd e", "f g h i j", "k", "l"]


def test_a_span_split_across_two_chunks_is_credited_to_the_chunk_holding_most_of_it() -> None:
    span = [Span("d", 10, 30, 2)]  # 20 characters
    assert chunk_grade(0, 22, span) == 2  # holds 12 of 20
    assert chunk_grade(22, 60, span) == 0  # holds 8 of 20, and the chunk is longer than the span
    assert chunk_grade(20, 60, span) == 2  # holds exactly half


def test_a_span_inside_an_overlap_credits_both_chunks_and_a_chunk_inside_a_long_span_is_relevant() -> None:
    span = [Span("d", 40, 50, 1)]
    assert chunk_grade(0, 60, span) == 1 and chunk_grade(30, 90, span) == 1
    long_span = [Span("d", 0, 1000, 2)]
    assert chunk_grade(100, 160, long_span) == 2
    assert chunk_grade(0, 60, [Span("d", 40, 50, 1), Span("d", 45, 58, 2)]) == 2


def test_chunked_corpus_derives_labels_from_spans_without_rewriting_them(tmp_path: Path) -> None:
    docs = [{"_id": "p", "title": "Policy", "text": "Intro words here.\n\nThe limit is 75 dollars.\n\nOther text."}]
    start = docs[0]["text"].index("The limit")
    queries = [
        {"_id": "q", "text": "limit?", "spans": [{"doc_id": "p", "start": start, "end": start + 24, "grade": 2}]}
    ]
    corpus = load_corpus(write_corpus(tmp_path / "c", docs=docs, queries=queries, qrels=[("q", "p", 2)]))
    for size in (2, 4, 50):
        chunked = chunk_corpus(corpus, ChunkSetting("paragraph", size, 0))
        relevant = chunked.relevant("q")
        assert relevant and all(g == 2 for g in relevant.values())
        for chunk_id in relevant:  # ids carry the offsets: every labelled chunk overlaps the span
            begin, end = (int(x) for x in chunk_id.split("@")[1].split(":"))
            assert begin < start + 24 and end > start


def test_dates_compare_as_dates_not_strings() -> None:
    vocabulary = parse_vocabulary({"after": {"field": "published_date", "op": "on-or-after"}})
    conditions = compile_filter({"after": "2025-02-01"}, vocabulary)
    assert passes({"published_date": "2025-02-01"}, conditions)
    assert passes({"published_date": "2025-10-01"}, conditions)  # "2025-10-01" < "2025-2-..." as strings
    assert not passes({"published_date": "2025-01-31"}, conditions)
    with pytest.raises(FilterError, match="ISO date"):
        compile_filter({"after": "01/02/2025"}, vocabulary)


def test_unknown_filter_fields_and_wrong_types_are_clear_errors(tmp_path: Path) -> None:
    vocabulary = parse_vocabulary({"tenant_id": {"field": "tenant_id", "op": "equals"}})
    with pytest.raises(FilterError, match="unknown filter field 'tenant'"):
        compile_filter({"tenant": "a"}, vocabulary)
    with pytest.raises(FilterError, match="takes a string"):
        compile_filter({"tenant_id": ["a"]}, vocabulary)
    folder = write_corpus(
        tmp_path / "c",
        queries=[
            {"_id": "q1", "text": "x", "filter": {"tenant": "a"}},
            {"_id": "q2", "text": "y"},
            {"_id": "q3", "text": "z"},
        ],
        qrels=[("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 1)],
    )
    (folder / "sitegen.json").write_text(json.dumps({"filters": {"tenant_id": {"field": "tenant_id", "op": "equals"}}}))
    with pytest.raises(CorpusError) as info:
        load_corpus(folder)
    assert info.value.line == 1 and "unknown filter field 'tenant'" in info.value.problem


@pytest.fixture
def tenant_corpus(tmp_path: Path):
    qrels = [("t1", "acme-5", 1), ("t2", "zeta-5", 1)]
    folder = write_corpus(tmp_path / "c", docs=TENANT_DOCS, queries=TENANT_QUERIES, qrels=qrels)
    (folder / "sitegen.json").write_text(json.dumps(TENANT_FILTERS))
    return load_corpus(folder)


@pytest.mark.parametrize("name", ["bm25-filtered", "dense-filtered", "rrf-dense-bm25-filtered"])
def test_filtered_rankers_never_return_a_passage_that_fails_the_filter(tenant_corpus, name: str) -> None:
    from sitegen.embedding.vectors import CorpusEmbeddings
    from sitegen.inputs.corpus import passage_text

    model = FakeEmbeddingModel()
    embeddings = CorpusEmbeddings(
        "fake",
        model.weights_sha256,
        tuple(d.doc_id for d in tenant_corpus.documents),
        model.encode([passage_text(d) for d in tenant_corpus.documents]),
        tuple(q.query_id for q in tenant_corpus.queries),
        model.encode([q.text for q in tenant_corpus.queries]),
    )
    runs = {}
    for component in ("bm25-filtered", "dense-filtered", name):
        if component not in runs:
            runs[component] = RANKERS[component]().rank(RankInputs(tenant_corpus, embeddings, runs), 100)
    masks = allowed_masks(tenant_corpus)
    ids = [d.doc_id for d in tenant_corpus.documents]
    for query_id, hits in runs[name].hits.items():
        assert hits, query_id
        assert all(masks[query_id][ids.index(h.doc_id)] for h in hits), (query_id, [h.doc_id for h in hits])
    assert {h.doc_id for h in runs[name].hits["t2"]} == {"zeta-4", "zeta-5"}
    assert isinstance(masks["t1"], np.ndarray)


def test_chunking_config_is_validated() -> None:
    config = parse_chunking({"default": {"method": "paragraph", "size": 200}, "sweep": {"sizes": [50, 100]}})
    assert config.default.label == "paragraph-200w-0pct" and len(config.sweep) == 4
    with pytest.raises(ValueError, match="method"):
        parse_chunking({"default": {"method": "sentences", "size": 20}})
