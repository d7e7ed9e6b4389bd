"""Load and validate a frozen corpus folder (BEIR layout plus optional fields).

Layout::

    <name>/corpus.jsonl     {"_id", "title", "text", "metadata": {...}}
    <name>/queries.jsonl    {"_id", "text", "kind", "answerable", "filter": {...}}
    <name>/qrels/test.tsv   query-id <TAB> corpus-id <TAB> score   (header line)
    <name>/README.md        optional, rendered on the site

Every problem is reported as a :class:`CorpusError` naming the file, the line and
what is wrong, so a user can fix a collection without reading sitegen's code.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sitegen.errors import CorpusError

__all__ = [
    "CITATIONS_FILE",
    "CONFIG_FILE",
    "CORPUS_FILE",
    "QRELS_FILE",
    "QUERIES_FILE",
    "README_FILE",
    "UNLABELLED_KIND",
    "Corpus",
    "Document",
    "Query",
    "Span",
    "discover_corpora",
    "load_corpus",
    "passage_text",
]

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_FILE = "qrels/test.tsv"
README_FILE = "README.md"
CONFIG_FILE = "sitegen.json"
CITATIONS_FILE = "citations.jsonl"
UNLABELLED_KIND = "unlabelled"

_QRELS_HEADER = ("query-id", "corpus-id", "score")


@dataclass(frozen=True)
class Document:
    """One passage of a corpus."""

    doc_id: str
    title: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Span:
    """An answer span: characters ``start:end`` of a document's ``text``, graded (2 complete, 1 partial)."""

    doc_id: str
    start: int
    end: int
    grade: int


@dataclass(frozen=True)
class Query:
    """One labelled question; ``answerable=False`` means no passage answers it."""

    query_id: str
    text: str
    kind: str = UNLABELLED_KIND
    answerable: bool = True
    filter: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    spans: tuple[Span, ...] = ()


@dataclass(frozen=True)
class Corpus:
    """A validated corpus: documents and queries in file order, graded qrels."""

    name: str
    root: Path
    documents: tuple[Document, ...]
    queries: tuple[Query, ...]
    qrels: Mapping[str, Mapping[str, int]]
    readme: str
    input_files: tuple[str, ...]
    config: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    citations: Mapping[str, tuple[Mapping[str, str], ...]] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def kinds(self) -> tuple[str, ...]:
        """Question kinds in order of first appearance."""
        return tuple(dict.fromkeys(q.kind for q in self.queries))

    def relevant(self, query_id: str) -> dict[str, int]:
        """Documents judged relevant (grade > 0) for a query."""
        return {d: g for d, g in self.qrels.get(query_id, {}).items() if g > 0}


def passage_text(doc: Document) -> str:
    """The text every ranker indexes: title and body, one line apart."""
    return f"{doc.title}\n{doc.text}" if doc.title else doc.text


def discover_corpora(root: Path) -> list[Path]:
    """Corpus folders under ``root``, sorted by name so builds are deterministic."""
    if not root.is_dir():
        raise CorpusError(root, "corpora folder does not exist")
    found = sorted(p for p in root.iterdir() if p.is_dir() and (p / CORPUS_FILE).exists())
    if not found:
        raise CorpusError(root, f"no corpus folders (a folder holding {CORPUS_FILE}) found")
    return found


def load_corpus(folder: Path) -> Corpus:
    """Read and validate one corpus folder; raise CorpusError on the first problem."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CorpusError(folder, "corpus folder does not exist")
    for required in (CORPUS_FILE, QUERIES_FILE, QRELS_FILE):
        if not (folder / required).is_file():
            raise CorpusError(folder / required, "required file is missing")

    documents = _load_documents(folder / CORPUS_FILE)
    queries, query_lines = _load_queries(folder / QUERIES_FILE)
    doc_ids = {d.doc_id for d in documents}
    qrels = _load_qrels(folder / QRELS_FILE, {q.query_id for q in queries}, doc_ids)
    _check_answerable(folder / QUERIES_FILE, queries, query_lines, qrels)

    readme_path = folder / README_FILE
    readme = _read_text(readme_path) if readme_path.is_file() else ""
    config_path = folder / CONFIG_FILE
    config = _load_config(config_path) if config_path.is_file() else {}
    _check_spans_and_filters(folder / QUERIES_FILE, queries, query_lines, documents, config)
    citations_path = folder / CITATIONS_FILE
    citations = _load_citations(citations_path, query_lines) if citations_path.is_file() else {}
    inputs = [CORPUS_FILE, QUERIES_FILE, QRELS_FILE]
    inputs += [name for name in (README_FILE, CONFIG_FILE, CITATIONS_FILE) if (folder / name).is_file()]
    return Corpus(
        name=folder.name,
        root=folder,
        documents=tuple(documents),
        queries=tuple(queries),
        qrels=MappingProxyType({q: MappingProxyType(d) for q, d in qrels.items()}),
        readme=readme,
        input_files=tuple(sorted(inputs)),
        config=MappingProxyType(config),
        citations=MappingProxyType(citations),
    )


def _load_config(path: Path) -> dict[str, Any]:
    """``sitegen.json``: per-corpus experiment settings::

    {"ablation": [{"ranker": "bm25", "adds": "what this row adds to the previous one"}, ...],
     "packing": {"budgets": [20, 200, 1000]}}
    """
    try:
        config = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise CorpusError(path, f"malformed JSON: {exc.msg}", exc.lineno) from None
    if not isinstance(config, dict):
        raise CorpusError(path, "expected a JSON object")
    unknown = sorted(set(config) - {"ablation", "packing", "filters", "chunking"})
    if unknown:
        raise CorpusError(path, f"unknown setting(s) {', '.join(unknown)}; known: ablation, chunking, filters, packing")
    if "chunking" in config:
        from sitegen.chunking import ChunkingError, parse_chunking

        try:
            parse_chunking(config["chunking"])
        except ChunkingError as exc:
            raise CorpusError(path, str(exc)) from None
    packing = config.get("packing", {})
    budgets = packing.get("budgets", []) if isinstance(packing, dict) else None
    if (
        not isinstance(packing, dict)
        or set(packing) - {"budgets"}
        or not isinstance(budgets, list)
        or not all(type(b) is int and b >= 0 for b in budgets)
    ):
        raise CorpusError(path, '"packing" must be {"budgets": [non-negative integers]} (characters)')
    steps = config.get("ablation", [])
    if not isinstance(steps, list) or not all(
        isinstance(s, dict) and set(s) == {"ranker", "adds"} and all(isinstance(v, str) and v for v in s.values())
        for s in steps
    ):
        raise CorpusError(path, '"ablation" must be a list of {"ranker": NAME, "adds": TEXT} objects')
    return config


def _load_citations(path: Path, query_lines: Mapping[str, int]) -> dict[str, tuple[Mapping[str, str], ...]]:
    """``citations.jsonl``: candidate citations per question, ``{"query_id", "citations": [{"kind",
    "doc_id", "quote"}]}``; the doc id may name no passage (that is one of the cases under test)."""
    citations: dict[str, tuple[Mapping[str, str], ...]] = {}
    for number, obj in _json_objects(path):
        query_id = obj.get("query_id")
        if query_id not in query_lines:
            raise CorpusError(path, f"unknown query_id {query_id!r} (not in {QUERIES_FILE})", number)
        if query_id in citations:
            raise CorpusError(path, f"query {query_id!r} is listed twice", number)
        items = obj.get("citations")
        if not isinstance(items, list) or not all(
            isinstance(c, dict) and all(isinstance(c.get(k), str) for k in ("kind", "doc_id", "quote")) for c in items
        ):
            raise CorpusError(path, '"citations" must be a list of {"kind", "doc_id", "quote"} strings', number)
        citations[query_id] = tuple(MappingProxyType(dict(c)) for c in items)
    return citations


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CorpusError(path, f"not valid UTF-8 (byte {exc.start} of the file)", line) from None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers."""
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if line.strip():
            yield number, line


def _json_objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in _lines(path):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(path, f"malformed JSON: {exc.msg} (column {exc.colno})", number) from None
        if not isinstance(obj, dict):
            raise CorpusError(path, f"expected a JSON object, got {type(obj).__name__}", number)
        yield number, obj


def _required_str(path: Path, line: int, obj: Mapping[str, Any], key: str, allow_empty: bool) -> str:
    if key not in obj:
        raise CorpusError(path, f'missing required field "{key}"', line)
    value = obj[key]
    if not isinstance(value, str):
        raise CorpusError(path, f'field "{key}" must be a string, got {type(value).__name__}', line)
    if not allow_empty and not value.strip():
        raise CorpusError(path, f'field "{key}" is empty', line)
    return value


def _optional_object(path: Path, line: int, obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key, {})
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise CorpusError(path, f'field "{key}" must be a JSON object, got {type(value).__name__}', line)
    return MappingProxyType(value)


def _load_documents(path: Path) -> list[Document]:
    documents: list[Document] = []
    first_line: dict[str, int] = {}
    for number, obj in _json_objects(path):
        doc_id = _required_str(path, number, obj, "_id", allow_empty=False)
        # BEIR collections contain documents whose body is empty but whose title is not.
        text = _required_str(path, number, obj, "text", allow_empty=True)
        title = obj.get("title", "") or ""
        if not isinstance(title, str):
            raise CorpusError(path, f'field "title" must be a string, got {type(title).__name__}', number)
        if doc_id in first_line:
            raise CorpusError(path, f'duplicate _id "{doc_id}" (first seen on line {first_line[doc_id]})', number)
        first_line[doc_id] = number
        metadata = _optional_object(path, number, obj, "metadata")
        documents.append(Document(doc_id=doc_id, title=title, text=text, metadata=metadata))
    if not documents:
        raise CorpusError(path, "corpus is empty: no documents")
    return documents


def _load_queries(path: Path) -> tuple[list[Query], dict[str, int]]:
    queries: list[Query] = []
    first_line: dict[str, int] = {}
    for number, obj in _json_objects(path):
        query_id = _required_str(path, number, obj, "_id", allow_empty=False)
        text = _required_str(path, number, obj, "text", allow_empty=False)
        if query_id in first_line:
            raise CorpusError(path, f'duplicate _id "{query_id}" (first seen on line {first_line[query_id]})', number)
        first_line[query_id] = number
        kind = obj.get("kind", UNLABELLED_KIND)
        if not isinstance(kind, str) or not kind.strip():
            raise CorpusError(path, 'field "kind" must be a nonempty string', number)
        answerable = obj.get("answerable", True)
        if not isinstance(answerable, bool):
            raise CorpusError(path, f'field "answerable" must be true or false, got {answerable!r}', number)
        query_filter = _optional_object(path, number, obj, "filter")
        spans = _spans(path, number, obj.get("spans", []))
        queries.append(
            Query(query_id=query_id, text=text, kind=kind, answerable=answerable, filter=query_filter, spans=spans)
        )
    if not queries:
        raise CorpusError(path, "no queries")
    return queries, first_line


def _spans(path: Path, line: int, raw: Any) -> tuple[Span, ...]:
    if not isinstance(raw, list):
        raise CorpusError(path, 'field "spans" must be a list', line)
    spans = []
    for item in raw:
        ok = isinstance(item, dict) and isinstance(item.get("doc_id"), str)
        ok = ok and all(type(item.get(k)) is int for k in ("start", "end", "grade"))
        if not ok or not 0 <= item["start"] < item["end"] or item["grade"] < 1:
            raise CorpusError(
                path, 'each span must be {"doc_id": str, "start": int, "end": int > start, "grade": int >= 1}', line
            )
        spans.append(Span(item["doc_id"], item["start"], item["end"], item["grade"]))
    return tuple(spans)


def _check_spans_and_filters(
    path: Path, queries: list[Query], lines: Mapping[str, int], documents: list[Document], config: Mapping[str, Any]
) -> None:
    """Spans must lie inside their document; filters must use the corpus's declared vocabulary."""
    from sitegen.filters import FilterError, compile_filter, parse_vocabulary

    texts = {d.doc_id: d.text for d in documents}
    try:
        vocabulary = parse_vocabulary(config.get("filters", {}))
    except FilterError as exc:
        raise CorpusError(path.with_name(CONFIG_FILE), str(exc)) from None
    for query in queries:
        for span in query.spans:
            if span.doc_id not in texts:
                raise CorpusError(path, f'span names unknown document "{span.doc_id}"', lines[query.query_id])
            if span.end > len(texts[span.doc_id]):
                raise CorpusError(
                    path,
                    f'span {span.start}:{span.end} runs past the end of "{span.doc_id}" '
                    f"({len(texts[span.doc_id])} characters)",
                    lines[query.query_id],
                )
        try:
            conditions = compile_filter(query.filter, vocabulary)
        except FilterError as exc:
            raise CorpusError(path, f'query "{query.query_id}": {exc}', lines[query.query_id]) from None
        for condition in conditions:
            if condition.op == "on-or-after":
                for doc in documents:
                    value = doc.metadata.get(condition.field)
                    if value is not None and not _is_iso_date(value):
                        raise CorpusError(
                            path.with_name(CORPUS_FILE),
                            f'document "{doc.doc_id}": metadata {condition.field!r} must be an ISO date, got {value!r}',
                        )


def _is_iso_date(value: Any) -> bool:
    from datetime import date

    try:
        date.fromisoformat(value)
    except (TypeError, ValueError):
        return False
    return True


def _load_qrels(path: Path, query_ids: set[str], doc_ids: set[str]) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    seen_header = False
    for number, line in _lines(path):
        columns = line.rstrip("\r").split("\t")
        if not seen_header:
            seen_header = True
            if tuple(c.strip() for c in columns) != _QRELS_HEADER:
                raise CorpusError(path, f"first line must be the header {'<TAB>'.join(_QRELS_HEADER)!r}", number)
            continue
        if len(columns) != 3:
            raise CorpusError(path, f"expected 3 tab-separated columns, found {len(columns)}", number)
        query_id, doc_id, grade_text = (c.strip() for c in columns)
        try:
            grade = int(grade_text)
        except ValueError:
            raise CorpusError(path, f"score {grade_text!r} is not an integer", number) from None
        if grade < 0:
            raise CorpusError(path, f"score {grade} is negative; grades are 0 (not relevant) or higher", number)
        if query_id not in query_ids:
            raise CorpusError(path, f'unknown query id "{query_id}" (not in {QUERIES_FILE})', number)
        if doc_id not in doc_ids:
            raise CorpusError(path, f'unknown corpus id "{doc_id}" (not in {CORPUS_FILE})', number)
        judged = qrels.setdefault(query_id, {})
        if doc_id in judged:
            raise CorpusError(path, f'pair ("{query_id}", "{doc_id}") is judged twice', number)
        judged[doc_id] = grade
    if not seen_header:
        raise CorpusError(path, "qrels file is empty (no header line)")
    return qrels


def _check_answerable(
    path: Path, queries: list[Query], lines: Mapping[str, int], qrels: Mapping[str, Mapping[str, int]]
) -> None:
    for query in queries:
        has_relevant = any(g > 0 for g in qrels.get(query.query_id, {}).values())
        if query.answerable and not has_relevant:
            raise CorpusError(
                path,
                f'query "{query.query_id}" has no relevant passage in {QRELS_FILE}; '
                'judge one or mark it "answerable": false',
                lines[query.query_id],
            )
        if not query.answerable and has_relevant:
            raise CorpusError(
                path,
                f'query "{query.query_id}" is marked "answerable": false but {QRELS_FILE} '
                "judges a passage relevant to it",
                lines[query.query_id],
            )
