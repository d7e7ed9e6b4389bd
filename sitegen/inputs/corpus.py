"""Load and validate a frozen corpus folder (BEIR layout plus optional fields).

Layout::

    <name>/corpus.jsonl     {"_id", "title", "text", "metadata": {...}}
    <name>/queries.jsonl    {"_id", "text", "kind", "answerable", "filter": {...}}
    <name>/qrels/test.tsv   query-id <TAB> corpus-id <TAB> score   (header line)
    <name>/README.md        optional, rendered on the site

Every problem is reported as a :class:`CorpusError` naming the file, the line and
what is wrong, so a user can fix a collection without reading sitegen's code.

Inputs stay inside their folder: a named file that is a symbolic link (or sits under
one) is refused, since the build copies inputs into the published bundle and a link
could publish any file the builder can read. Every line-based input (JSONL here and in
the importers, qrels, TREC runs) goes through one reader, :func:`text_lines`, so line
numbers, the byte-order-mark rule and the encoding errors are the same everywhere.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any

from sitegen.errors import CorpusError
from sitegen.inputs.corpus_settings import PUBLISH_MODES, check_settings
from sitegen.inputs.problems import Problems, json_type, record_id, salvaged_id

__all__ = [
    "CITATIONS_FILE",
    "CONFIG_FILE",
    "CORPUS_FILE",
    "MAX_GRADE",
    "PUBLISH_MODES",
    "QRELS_FILE",
    "QUERIES_FILE",
    "README_FILE",
    "RUNS_DIR",
    "UNLABELLED_KIND",
    "Corpus",
    "Document",
    "Query",
    "Span",
    "discover_corpora",
    "input_path",
    "json_lines",
    "load_corpus",
    "parse_grade",
    "passage_text",
    "text_lines",
    "validate_corpus",
]

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_FILE = "qrels/test.tsv"
README_FILE = "README.md"
CONFIG_FILE = "sitegen.json"
CITATIONS_FILE = "citations.jsonl"
UNLABELLED_KIND = "unlabelled"
RUNS_DIR = "runs"
#: What a corpus's ``sitegen.json`` may say under ``"publish"``: every text (the default), or none of them.
# The largest grade accepted: trec_eval, pytrec_eval and numpy readers all hold a grade in a 32-bit int.
MAX_GRADE = 2**31 - 1

_QRELS_HEADER = ("query-id", "corpus-id", "score")
_UTF8_BOM = b"\xef\xbb\xbf"
_DIGITS = re.compile(r"[0-9]+")
# A \uD800-\uDFFF escape: json decodes a lone one into a str that cannot be written back as UTF-8.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


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
    return _load(Path(folder), Problems(collect=False))


def validate_corpus(folder: Path) -> tuple[Corpus | None, list[CorpusError]]:
    """Every problem in one corpus folder, in the order found (file by file, line by line), so one run of
    ``sitegen validate`` lists them all; the corpus when there is none. A problem that makes the rest of a
    file unreadable (a missing file, bytes that are not UTF-8) ends that file's checks."""
    problems = Problems(collect=True)
    try:
        corpus = _load(Path(folder), problems)
    except CorpusError as exc:
        problems.add(exc)
        corpus = None
    return (corpus if not problems.found else None), problems.found


def _load(folder: Path, problems: Problems) -> Corpus:
    if not folder.is_dir():
        raise CorpusError(folder, "corpus folder does not exist")
    # Every file the format names is checked before any is read: none may be a link.
    present = {name: input_path(folder, name) for name in (*_REQUIRED, *_OPTIONAL)}
    missing = [CorpusError(folder / name, "required file is missing") for name in _REQUIRED if present[name] is None]
    if missing:
        for problem in missing[:-1]:
            problems.add(problem)
        raise missing[-1]
    _check_runs(folder)

    documents = _load_documents(folder / CORPUS_FILE, problems)
    queries, query_lines = _load_queries(folder / QUERIES_FILE, problems)
    doc_ids = {d.doc_id for d in documents}
    qrels = _load_qrels(folder, {q.query_id for q in queries}, doc_ids, problems)
    _check_answerable(folder / QUERIES_FILE, queries, query_lines, qrels, problems)

    readme = _read_text(folder / README_FILE) if present[README_FILE] else ""
    config = _load_config(folder / CONFIG_FILE) if present[CONFIG_FILE] else {}
    _check_spans_and_filters(folder, queries, query_lines, documents, config, problems)
    citations = _load_citations(folder / CITATIONS_FILE, query_lines) if present[CITATIONS_FILE] else {}
    if problems.found:  # the corpus is not built from a folder with problems
        raise problems.found.pop()
    # Only the files the format names are inputs (and copied into the bundle); anything else in the
    # folder (notes, a .env) stays out.
    inputs = [name for name, path in present.items() if path is not None]
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


_REQUIRED = (CORPUS_FILE, QUERIES_FILE, QRELS_FILE)
_OPTIONAL = (README_FILE, CONFIG_FILE, CITATIONS_FILE)


def input_path(folder: Path, name: str) -> Path | None:
    """``folder/name`` if it exists as a regular file, None if absent; links are refused (see below)."""
    _refuse_links(folder, name)
    path = folder / name
    if not os.path.lexists(path):
        return None
    if not path.is_file():
        raise CorpusError(path, "is not a regular file")
    return path


def _refuse_links(folder: Path, name: str) -> None:
    """Refuse a symbolic link anywhere below ``folder`` on the way to ``name`` (the file, or a folder
    such as ``qrels/``), even one that stays inside: inputs are copied into the published bundle, and
    a rule without exceptions cannot be talked around. The folder itself may be reached through links."""
    current = folder
    for part in Path(name).parts:
        current = current / part
        if current.is_symlink():
            if not current.resolve().is_relative_to(folder.resolve()):
                raise CorpusError(folder / name, "links outside the corpus")
            raise CorpusError(
                folder / name, "is a symbolic link; corpus files must be regular files inside the corpus folder"
            )


def _check_runs(folder: Path) -> None:
    """External runs in ``runs/*.trec`` are inputs too: the build copies them into the bundle."""
    _refuse_links(folder, RUNS_DIR)
    runs = folder / RUNS_DIR
    if not runs.is_dir():
        return
    for entry in sorted(runs.iterdir()):
        if entry.name.endswith(".trec"):
            input_path(folder, f"{RUNS_DIR}/{entry.name}")


def _load_config(path: Path) -> dict[str, Any]:
    """``sitegen.json``: per-corpus experiment settings (``"metrics"``: :mod:`sitegen.inputs.metric_settings`)::

    {"ablation": [{"ranker": "bm25", "adds": "what this row adds to the previous one"}, ...],
     "packing": {"budgets": [20, 200, 1000]},
     "significance": {"correction": "holm" | "bh"},
     "fusions": [{"name": NAME, "components": [NAME, ...], "k": 60, "candidates": 20}],
     "models": [{"name": NAME, "model": PROVIDER | HUB_ID | FOLDER, ...}],  (sitegen.embedding.models)
     "reranks": [{"name": NAME, "first_stage": NAME, "candidates": 50, "scorer": {"kind": ...}}],
     "publish": "full" | "redacted"}

    ``"publish": "redacted"`` publishes the report without a passage's or question's text (see
    :mod:`sitegen.publish.redaction`).
    """
    text = _read_text(path)
    config = _parse_json(path, None, text)
    if not isinstance(config, dict):
        raise CorpusError(path, "expected a JSON object")
    check_settings(path, text, config)
    return config


def _load_citations(path: Path, query_lines: Mapping[str, int]) -> dict[str, tuple[Mapping[str, str], ...]]:
    """``citations.jsonl``: candidate citations per question, ``{"query_id", "citations": [{"kind",
    "doc_id", "quote"}]}``; the doc id may name no passage (that is one of the cases under test)."""
    citations: dict[str, tuple[Mapping[str, str], ...]] = {}
    for number, obj in json_lines(path):
        query_id = obj.get("query_id")
        if not isinstance(query_id, str) or query_id not in query_lines:
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
    with _open_input(path) as handle:
        data = handle.read()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")  # the one BOM rule, as in text_lines
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CorpusError(path, f"not valid UTF-8 (byte {column} of the line)", line) from None


def _open_input(path: Path) -> IO[bytes]:
    """Open for reading without following a final symbolic link (a link swapped in after the checks)."""
    try:
        return os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb")
    except OSError as exc:
        raise CorpusError(path, f"cannot read the file: {exc.strerror or exc}") from None


def text_lines(path: Path, source: Iterable[bytes] | None = None) -> Iterator[tuple[int, str]]:
    """Every line of a UTF-8 text file as ``(number, text)``: the one line reader for every input.

    Lines end at ``\\n`` only (a ``\\r`` before it is dropped), so U+2028, U+2029, U+0085 and form feeds
    inside a line are text, as they are to JSON, and line numbers are an editor's (1-based). One
    byte-order-mark rule: a UTF-8 BOM at the start of line 1 is skipped, as Windows editors write one.
    A NUL byte, or bytes that are not UTF-8, are errors naming the line and the byte.
    ``source`` is an open binary stream (say, gzip) or any iterable of ``\\n``-terminated byte lines;
    without it the file at ``path`` is read. ``path`` is what errors name.
    """
    number = 0
    try:
        with _open_input(path) if source is None else _NoClose(source) as lines:
            for number, raw in enumerate(lines, start=1):
                yield number, _decode_line(path, number, raw)
    except (OSError, EOFError, zlib.error) as exc:  # unreadable, or a damaged gzip stream
        raise CorpusError(path, f"cannot read the file: {exc}", number + 1) from None


class _NoClose:
    """A context manager around a caller's stream: the caller closes it."""

    def __init__(self, source: Iterable[bytes]) -> None:
        self.source = source

    def __enter__(self) -> Iterable[bytes]:
        return self.source

    def __exit__(self, *_: object) -> None:
        return None


def _decode_line(path: Path, number: int, raw: bytes) -> str:
    raw = raw.removesuffix(b"\n").removesuffix(b"\r")
    skipped = 0
    if number == 1 and raw.startswith(_UTF8_BOM):
        raw, skipped = raw[len(_UTF8_BOM) :], len(_UTF8_BOM)
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise CorpusError(path, f"NUL byte (byte {nul + skipped + 1} of the line)", number)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(path, f"not valid UTF-8 (byte {exc.start + skipped + 1} of the line)", number) from None


def json_lines(path: Path, lines: Iterable[tuple[int, str]] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSONL file with their line numbers; blank lines are skipped.

    ``lines`` are numbered lines from :func:`text_lines` (the importers pass a gzip stream's); without
    them the file at ``path`` is read. Anything but one JSON object per line is an error naming the line.
    """
    return checked_lines(path, Problems(collect=False), lines)


def checked_lines(
    path: Path, problems: Problems, lines: Iterable[tuple[int, str]] | None = None, id_keys: Sequence[str] = ("_id",)
) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`json_lines`, handing a line that is not a JSON object to ``problems`` (raised, or kept with the id
    the line names, by ``id_keys``, while the next line is read)."""
    for number, line in text_lines(path) if lines is None else lines:
        if not line.strip(" \t\r"):
            continue
        try:
            obj = _parse_json(path, number, line)
            if not isinstance(obj, dict):
                raise CorpusError(path, f"expected a JSON object, got {json_type(obj)}", number)
        except CorpusError as exc:
            problems.skipped(exc, salvaged_id(line, id_keys))
            continue
        yield number, obj


def _parse_json(path: Path, line: int | None, text: str) -> Any:
    """``json.loads`` that refuses what cannot be written back as standard JSON in UTF-8.

    ``line`` is the line ``text`` is (JSONL), or None when ``text`` is a whole file.
    """
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        where = exc.lineno if line is None else line
        column = f" (column {exc.colno})" if line is not None else ""
        raise CorpusError(path, f"malformed JSON: {exc.msg}{column}", where) from None
    except RecursionError:
        raise CorpusError(path, "malformed JSON: nested too deeply", line) from None
    except ValueError as exc:  # NaN, Infinity, 1e999, or an integer longer than Python converts
        problem = str(exc)
        if problem.startswith("Exceeds the limit"):
            problem = f"a number longer than {sys.get_int_max_str_digits()} digits"
        raise CorpusError(path, f"unsupported JSON: {problem}", line) from None
    if _SURROGATE_ESCAPE.search(text) and not _encodable(value):
        raise CorpusError(path, "unsupported JSON: a \\uD800-\\uDFFF escape that is not a surrogate pair", line)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range for a double")
    return value


def _encodable(value: Any) -> bool:
    """True when every string in ``value`` (keys too) can be written as UTF-8."""
    stack = [value]
    while stack:
        item = stack.pop()
        strings: list[Any] = []
        if isinstance(item, str):
            strings = [item]
        elif isinstance(item, dict):
            strings = list(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        for text in strings:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True


def parse_grade(path: Path, line: int, text: str, negative_ok: bool = False) -> int:
    """A relevance grade written as ASCII digits (``^[0-9]+$``), with a ``-`` where ``negative_ok``.

    Stricter than ``int()``, which also takes ``+1``, ``1_0``, `` 1`` and other scripts' digits: a
    grade means one thing in every tool that reads the qrels (trec_eval reads it with ``atol``).
    """
    digits = text[1:] if negative_ok and text.startswith("-") else text
    shown = text if len(text) <= 24 else f"{text[:12]}... ({len(text)} characters)"
    if not _DIGITS.fullmatch(digits):
        if not negative_ok and text.startswith("-") and _DIGITS.fullmatch(text[1:]):
            raise CorpusError(path, f"grade {shown} is negative; grades are 0 (not relevant) or higher", line)
        raise CorpusError(path, f"grade {shown!r} is not an integer (digits 0-9 only)", line)
    # Length first: int() refuses strings of more than 4,300 digits.
    if len(digits.lstrip("0")) > len(str(MAX_GRADE)) or int(digits) > MAX_GRADE:
        raise CorpusError(path, f"grade {shown} is out of range (at most {MAX_GRADE} either way)", line)
    return int(text)


def _required_str(path: Path, line: int, obj: Mapping[str, Any], key: str, allow_empty: bool) -> str:
    if key not in obj:
        raise CorpusError(path, f'missing required field "{key}"', line)
    value = obj[key]
    if not isinstance(value, str):
        raise CorpusError(path, f'field "{key}" must be a string, got {json_type(value)}', line)
    if not allow_empty and not value.strip():
        raise CorpusError(path, f'field "{key}" is empty', line)
    return value


def _optional_object(path: Path, line: int, obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key, {})
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise CorpusError(path, f'field "{key}" must be a JSON object, got {json_type(value)}', line)
    return MappingProxyType(value)


def _load_documents(path: Path, problems: Problems) -> list[Document]:
    documents: list[Document] = []
    first_line: dict[str, int] = {}
    for number, obj in checked_lines(path, problems):
        try:
            doc_id = _required_str(path, number, obj, "_id", allow_empty=False)
            # BEIR collections contain documents whose body is empty but whose title is not.
            text = _required_str(path, number, obj, "text", allow_empty=True)
            title = obj.get("title", "") or ""
            if not isinstance(title, str):
                raise CorpusError(path, f'field "title" must be a string, got {json_type(title)}', number)
            if doc_id in first_line:
                raise CorpusError(path, f'duplicate _id "{doc_id}" (first seen on line {first_line[doc_id]})', number)
            first_line[doc_id] = number
            metadata = _optional_object(path, number, obj, "metadata")
            documents.append(Document(doc_id=doc_id, title=title, text=text, metadata=metadata))
        except CorpusError as exc:
            problems.skipped(exc, record_id(obj))
    if not documents and not problems.found:
        raise CorpusError(path, "corpus is empty: no documents")
    return documents


def _load_queries(path: Path, problems: Problems) -> tuple[list[Query], dict[str, int]]:
    queries: list[Query] = []
    first_line: dict[str, int] = {}
    for number, obj in checked_lines(path, problems):
        try:
            query_id = _required_str(path, number, obj, "_id", allow_empty=False)
            text = _required_str(path, number, obj, "text", allow_empty=False)
            if query_id in first_line:
                raise CorpusError(
                    path, f'duplicate _id "{query_id}" (first seen on line {first_line[query_id]})', number
                )
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
        except CorpusError as exc:
            problems.skipped(exc, record_id(obj))
    if not queries and not problems.found:
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
    folder: Path,
    queries: list[Query],
    lines: Mapping[str, int],
    documents: list[Document],
    config: Mapping[str, Any],
    problems: Problems,
) -> None:
    """Spans must lie inside their document (a document left out for a problem already reported is not named
    again); filters must use the corpus's declared vocabulary."""
    from sitegen.inputs.filters import FilterError, compile_filter, parse_vocabulary

    path = folder / QUERIES_FILE
    texts = {d.doc_id: d.text for d in documents}
    try:
        vocabulary = parse_vocabulary(config.get("filters", {}))
    except FilterError as exc:
        raise CorpusError(path.with_name(CONFIG_FILE), str(exc)) from None
    for query in queries:
        for span in query.spans:
            if span.doc_id not in texts and problems.follows(folder / CORPUS_FILE, span.doc_id):
                continue
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


def _load_qrels(folder: Path, query_ids: set[str], doc_ids: set[str], problems: Problems) -> dict[str, dict[str, int]]:
    """The labels; a row naming a question or passage whose line was left out for a problem already reported is
    kept without a second report (the corpus is not built while any problem stands)."""
    path = folder / QRELS_FILE
    qrels: dict[str, dict[str, int]] = {}
    seen_header = False
    for number, line in text_lines(path):
        try:
            if not line.strip(" \t"):
                continue
            columns = line.split("\t")
            if not seen_header:
                seen_header = True
                if tuple(c.strip() for c in columns) != _QRELS_HEADER:
                    raise CorpusError(path, f"first line must be the header {'<TAB>'.join(_QRELS_HEADER)!r}", number)
                continue
            if len(columns) != 3:
                raise CorpusError(path, f"expected 3 tab-separated columns, found {len(columns)}", number)
            query_id, doc_id, grade_text = (c.strip() for c in columns)
            grade = parse_grade(path, number, grade_text)
            if query_id not in query_ids and problems.follows(folder / QUERIES_FILE, query_id):
                continue  # its question was left out: reported there
            if query_id not in query_ids:
                raise CorpusError(path, f'unknown query id "{query_id}" (not in {QUERIES_FILE})', number)
            if doc_id not in doc_ids and not problems.follows(folder / CORPUS_FILE, doc_id):
                raise CorpusError(path, f'unknown corpus id "{doc_id}" (not in {CORPUS_FILE})', number)
            judged = qrels.setdefault(query_id, {})
            if doc_id in judged:
                raise CorpusError(path, f'pair ("{query_id}", "{doc_id}") is judged twice', number)
            judged[doc_id] = grade
        except CorpusError as exc:
            problems.add(exc)
    if not seen_header:
        raise CorpusError(path, "qrels file is empty (no header line)")
    return qrels


def _check_answerable(
    path: Path,
    queries: list[Query],
    lines: Mapping[str, int],
    qrels: Mapping[str, Mapping[str, int]],
    problems: Problems,
) -> None:
    for query in queries:
        try:
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
        except CorpusError as exc:
            problems.add(exc)
