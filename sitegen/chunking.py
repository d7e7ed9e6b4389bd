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
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from sitegen.corpus import Corpus, Document, Span

__all__ = [
    "RELEVANCE_RULE",
    "ChunkConfig",
    "ChunkSetting",
    "ChunkingError",
    "chunk_corpus",
    "chunk_grade",
    "chunk_offsets",
    "parse_chunking",
]

RELEVANCE_RULE = (
    "a chunk's grade is the highest grade among the question's spans in the same document that the chunk "
    "overlaps by at least half of the shorter of the two (span or chunk)"
)
_WORD = re.compile(r"\S+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


class ChunkingError(ValueError):
    """A chunking declaration that cannot be used."""


@dataclass(frozen=True)
class ChunkSetting:
    method: str
    size: int
    overlap: float = 0.0

    @property
    def label(self) -> str:
        return f"{self.method}-{self.size}w-{round(self.overlap * 100)}pct"

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "size": self.size, "overlap": self.overlap, "label": self.label}


@dataclass(frozen=True)
class ChunkConfig:
    default: ChunkSetting
    sweep: tuple[ChunkSetting, ...]


def _setting(raw: Any, where: str) -> ChunkSetting:
    if not isinstance(raw, dict) or not set(raw) <= {"method", "size", "overlap"}:
        raise ChunkingError(f'{where} must be {{"method": "fixed"|"paragraph", "size": WORDS, "overlap": FRACTION}}')
    method, size, overlap = raw.get("method"), raw.get("size"), raw.get("overlap", 0)
    if method not in ("fixed", "paragraph"):
        raise ChunkingError(f'{where}: method must be "fixed" or "paragraph", got {method!r}')
    if type(size) is not int or size < 1:
        raise ChunkingError(f"{where}: size must be a positive number of words, got {size!r}")
    if not isinstance(overlap, int | float) or not 0 <= overlap < 1:
        raise ChunkingError(f"{where}: overlap must be a fraction in [0, 1), got {overlap!r}")
    return ChunkSetting(method, size, float(overlap))


_SWEEP_DEFAULTS = (("methods", ["fixed"]), ("sizes", [50, 100, 200, 400]), ("overlaps", [0, 0.2]))


def parse_chunking(raw: Any) -> ChunkConfig:
    """``{"default": SETTING, "sweep": {"methods": [...], "sizes": [...], "overlaps": [...]}}``."""
    if not isinstance(raw, dict) or "default" not in raw or not set(raw) <= {"default", "sweep"}:
        raise ChunkingError('"chunking" must be {"default": {...}, "sweep": {"methods", "sizes", "overlaps"}}')
    default = _setting(raw["default"], "chunking.default")
    sweep_raw = raw.get("sweep", {"methods": ["fixed"], "sizes": [50, 100, 200, 400], "overlaps": [0, 0.2]})
    if not isinstance(sweep_raw, dict) or not set(sweep_raw) <= {"methods", "sizes", "overlaps"}:
        raise ChunkingError('chunking.sweep must be {"methods": [...], "sizes": [...], "overlaps": [...]}')
    methods, sizes, overlaps = (sweep_raw.get(k, d) for k, d in _SWEEP_DEFAULTS)
    if not all(isinstance(v, list) for v in (methods, sizes, overlaps)):
        raise ChunkingError("chunking.sweep: methods, sizes and overlaps must each be a list")
    sweep = []
    for method in methods:
        for size in sizes:
            for overlap in overlaps:
                sweep.append(_setting({"method": method, "size": size, "overlap": overlap}, "chunking.sweep"))
    return ChunkConfig(default, tuple(dict.fromkeys(sweep)))


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
