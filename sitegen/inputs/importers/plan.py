"""What every importer shares: the plan a format hands to the writer, the record types, and the input readers.

A format module turns its files into a :class:`Plan`: callables yielding :class:`Doc`, :class:`Query` and
:class:`Judgement` records, plus what the README should say. The readers here are the ones more than one format
uses: :func:`read_lines` (plain or gzip, detected from the file's first bytes, through the shared
:func:`sitegen.inputs.corpus.text_lines`), the JSONL document reader, the grade parser and numeric id folding.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sitegen.errors import CorpusError
from sitegen.inputs.corpus import checked_lines, parse_grade, text_lines
from sitegen.inputs.problems import Problems, json_type, record_id

__all__ = [
    "DEFAULT_TO",
    "QRELS_HEADER",
    "Doc",
    "ImportOptions",
    "ImportResult",
    "Judgement",
    "Plan",
    "Problems",
    "Query",
    "SourceFile",
    "collapse",
    "grade_value",
    "json_id",
    "json_lines",
    "json_text",
    "jsonl_documents",
    "number_id",
    "read_lines",
]

DEFAULT_TO = Path("corpora")
QRELS_HEADER = "query-id\tcorpus-id\tscore"

_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class ImportOptions:
    """What every importer is told besides its source files: the corpus's ``name`` (its folder under ``to``), the
    license as whoever runs the import states it, the command the README records (None: the ``sitegen import``
    command equivalent to the call), whether to replace an existing corpus, whether to drop and count qrels rows
    naming an unknown query or document (else they are problems), and whether to keep queries judged with no
    relevant document as unanswerable."""

    name: str
    license_text: str
    to: Path | str = DEFAULT_TO
    command: str | None = None
    overwrite: bool = False
    skip_unknown: bool = False
    keep_unanswerable: bool = False


@dataclass(frozen=True)
class ImportResult:
    """What an import wrote, for the CLI to print."""

    name: str
    folder: Path
    documents: int
    queries: int
    judged_pairs: int
    dropped_queries: int
    dropped_qrels: int


@dataclass(frozen=True)
class SourceFile:
    """One input file as recorded in the corpus README."""

    label: str
    path: Path
    size: int
    sha256: str


# --------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Doc:
    doc_id: str
    title: str
    text: str
    metadata: Mapping[str, Any]
    line: int


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    line: int


@dataclass(frozen=True)
class Judgement:
    query_id: str
    doc_id: str
    grade: int
    line: int


@dataclass
class Plan:
    """Everything one importer knows about its inputs; the shared pipeline does the rest.

    ``documents``, ``queries`` and ``qrels`` read their file, handing each record they must leave out to the
    :class:`~sitegen.inputs.corpus.Problems` they are given and going on with the next, so one import lists every
    problem; a problem that leaves the rest of a file unreadable is raised and ends that file."""

    kind: str
    name: str
    to: Path
    sources: list[tuple[str, Path]]
    documents: Callable[[Problems], Iterable[Doc]]
    documents_path: Path
    queries: Callable[[Problems], Iterable[Query]]
    queries_path: Path
    qrels: Callable[[Problems], Iterable[Judgement]]
    qrels_path: Path
    license_text: str
    command: str
    overwrite: bool
    skip_unknown: bool
    keep_unanswerable: bool
    invert_grades: bool = False
    notes: list[str] = field(default_factory=list)
    unknown_query_hint: str = ""
    #: What the command line named as the source (a BEIR folder, or a format's files): the README's first
    #: sentence names them.
    origin: list[Path] = field(default_factory=list)
    #: The source's own README (a BEIR folder's README.md), quoted in the corpus README; None when it has none.
    source_readme: str | None = None


def _open_binary(path: Path) -> IO[bytes]:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rb")
    return path.open("rb")


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Every line (1-based number, text without its line ending), streamed through the shared reader."""
    try:
        handle = _open_binary(path)
    except OSError as exc:
        raise CorpusError(path, f"cannot read the file: {exc.strerror or exc}") from None
    with handle:
        yield from text_lines(path, handle)


def collapse(text: str) -> str:
    return " ".join(text.split())


def json_lines(
    path: Path, problems: Problems, id_keys: Sequence[str] = ("_id",)
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The shared JSONL reader over this file's lines (gzip too); a line that is not a JSON object goes to
    ``problems`` with the id it names by ``id_keys``."""
    return checked_lines(path, problems, read_lines(path), id_keys)


def json_id(path: Path, line: int, obj: Mapping[str, Any], keys: Sequence[str]) -> str:
    for key in keys:
        if key in obj:
            value = obj[key]
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise CorpusError(path, f'field "{key}" must be a string, got {json_type(value)}', line)
            return str(value).strip()
    raise CorpusError(path, f"missing id field ({' or '.join(repr(k) for k in keys)})", line)


def json_text(path: Path, line: int, obj: Mapping[str, Any], keys: Sequence[str], required: bool) -> str:
    for key in keys:
        if key in obj:
            value = obj[key]
            if value is None:
                return ""
            if not isinstance(value, str):
                raise CorpusError(path, f'field "{key}" must be a string, got {json_type(value)}', line)
            return collapse(value)
    if required:
        raise CorpusError(path, f"missing text field ({' or '.join(repr(k) for k in keys)})", line)
    return ""


def jsonl_documents(path: Path, id_keys: Sequence[str], text_keys: Sequence[str], problems: Problems) -> Iterator[Doc]:
    for number, obj in json_lines(path, problems, id_keys):
        try:
            doc_id = json_id(path, number, obj, id_keys)
            title = json_text(path, number, obj, ("title",), required=False)
            text = json_text(path, number, obj, text_keys, required=True)
            metadata = obj.get("metadata") or {}
            if not isinstance(metadata, dict):
                raise CorpusError(path, f'field "metadata" must be a JSON object, got {json_type(metadata)}', number)
        except CorpusError as exc:
            problems.skipped(exc, record_id(obj, id_keys))
            continue
        yield Doc(doc_id, title, text, metadata, number)


def grade_value(path: Path, line: int, text: str) -> int:
    """Negative grades parse (they are dropped and counted later); anything but ``-?[0-9]+`` is refused."""
    return parse_grade(path, line, text, negative_ok=True)


def number_id(value: str) -> str:
    """``"007"`` -> ``"7"``; ids that are not plain ASCII digits are returned as they are.

    Zeros are stripped as text, not through ``int()``, which refuses more than 4,300 digits."""
    value = value.strip()
    return (value.lstrip("0") or "0") if value.isascii() and value.isdigit() else value
