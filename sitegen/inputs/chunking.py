"""Chunking long documents into passages, and chunk relevance derived from answer spans.

Methods (sizes and overlaps in words, a word being a maximal run of non-space characters):

- ``fixed``: windows of ``size`` words starting every ``size - overlap`` words, where
  ``overlap = round(size * overlap_fraction)``; the last window ends at the document's end.
- ``paragraph``: whole paragraphs (separated by a blank line) are packed greedily into a
  chunk while it stays within ``size`` words; a paragraph longer than ``size`` is cut with
  ``fixed`` windows of the same size and overlap. Paragraph chunks never split a paragraph
  they can keep whole, and do not overlap.

A chunk keeps its document id, its character offsets ``start:end`` into the document's
``text``, the document's title and metadata. Its id is ``<doc id>@<start>:<end>``.

Relevance rule: a chunk's grade for a question is the highest grade among the question's
spans in the same document that the chunk overlaps by at least half of the shorter of the
two (span or chunk). So a span split across two chunks is credited to the chunk holding
most of it, a span inside an overlap credits both chunks, and a chunk lying wholly inside a
long span is relevant. Labels never need rewriting when the chunk size changes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from sitegen.inputs.chunk_settings import ChunkSetting
from sitegen.inputs.corpus import Corpus, Document, Span

__all__ = ["RELEVANCE_RULE", "chunk_corpus", "chunk_grade", "chunk_offsets"]

RELEVANCE_RULE = (
    "a chunk's grade is the highest grade among the question's spans in the same document that the chunk "
    "overlaps by at least half of the shorter of the two (span or chunk)"
)
_WORD = re.compile(r"\S+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def _windows(words: Sequence[tuple[int, int]], size: int, overlap_words: int) -> list[tuple[int, int]]:
    """Character ranges of word windows over ``words`` (each a (start, end) pair)."""
    if not words:
        return []
    step = max(size - overlap_words, 1)
    ranges = []
    first = 0
    while True:
        last = min(first + size, len(words))
        ranges.append((words[first][0], words[last - 1][1]))
        if last == len(words):
            return ranges
        first += step


def chunk_offsets(text: str, setting: ChunkSetting) -> list[tuple[int, int]]:
    """The ``(start, end)`` character ranges of one document's chunks, in order."""
    overlap_words = round(setting.size * setting.overlap)
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    if setting.method == "fixed":
        return _windows(words, setting.size, overlap_words)
    breaks = [m.end() for m in _PARAGRAPH_BREAK.finditer(text)]
    paragraphs: list[list[tuple[int, int]]] = [[]]
    position = 0
    for word in words:  # one pass: a word starting past the next break opens a new paragraph
        while position < len(breaks) and word[0] >= breaks[position]:
            position += 1
            paragraphs.append([])
        paragraphs[-1].append(word)
    paragraphs = [p for p in paragraphs if p]
    chunks: list[tuple[int, int]] = []
    current: list[tuple[int, int]] = []
    for paragraph in paragraphs:
        if len(paragraph) > setting.size:
            if current:
                chunks.append((current[0][0], current[-1][1]))
                current = []
            chunks.extend(_windows(paragraph, setting.size, overlap_words))
        elif len(current) + len(paragraph) > setting.size:
            chunks.append((current[0][0], current[-1][1]))
            current = list(paragraph)
        else:
            current.extend(paragraph)
    if current:
        chunks.append((current[0][0], current[-1][1]))
    return chunks


def chunk_grade(start: int, end: int, spans: Sequence[Span]) -> int:
    """The chunk's grade under the module's relevance rule (0: not relevant)."""
    grade = 0
    for span in spans:
        overlap = min(end, span.end) - max(start, span.start)
        if overlap > 0 and 2 * overlap >= min(end - start, span.end - span.start):
            grade = max(grade, span.grade)
    return grade


def chunk_corpus(corpus: Corpus, setting: ChunkSetting) -> Corpus:
    """The corpus with every document replaced by its chunks and qrels derived from the spans."""
    documents = []
    spans_by_doc: dict[str, list[tuple[str, Span]]] = {}
    for query in corpus.queries:
        for span in query.spans:
            spans_by_doc.setdefault(span.doc_id, []).append((query.query_id, span))
    qrels: dict[str, dict[str, int]] = {}
    for doc in corpus.documents:
        for start, end in chunk_offsets(doc.text, setting):
            chunk_id = f"{doc.doc_id}@{start}:{end}"
            metadata: Mapping[str, Any] = MappingProxyType(
                {**doc.metadata, "doc_id": doc.doc_id, "start": start, "end": end}
            )
            documents.append(Document(doc_id=chunk_id, title=doc.title, text=doc.text[start:end], metadata=metadata))
            by_query: dict[str, list[Span]] = {}
            for query_id, span in spans_by_doc.get(doc.doc_id, []):
                by_query.setdefault(query_id, []).append(span)
            for query_id, spans in by_query.items():
                grade = chunk_grade(start, end, spans)
                if grade:
                    qrels.setdefault(query_id, {})[chunk_id] = grade
    return replace(
        corpus,
        documents=tuple(documents),
        qrels=MappingProxyType({q: MappingProxyType(g) for q, g in qrels.items()}),
    )
