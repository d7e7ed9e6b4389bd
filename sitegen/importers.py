"""Import an existing test collection (BEIR, TREC, SMART) into a corpus folder in sitegen's layout.

Each importer streams its inputs line by line (plain or gzip, detected from the file's first bytes), writes
``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv`` and a ``README.md`` recording provenance into a
temporary sibling of ``<to>/<name>/``, checks the result with :func:`sitegen.corpus.load_corpus`, and only then
renames it into place, so a failed import leaves nothing behind.

Rules shared by every importer:

* ids are stripped; text and titles have their whitespace collapsed to single spaces;
* a query is kept only if the qrels judge at least one document relevant to it (grade > 0); the others are
  dropped and counted, and so are their qrels rows. With ``keep_unanswerable=True`` a query that is judged but has
  no relevant document is kept with ``"answerable": false``; a query the qrels never mention is always dropped
  (unjudged is not the same as unanswerable);
* a negative grade (TREC's "junk", Cranfield's "no relevance") is not a grade sitegen accepts: the row is dropped
  and counted; grade 0 rows (judged not relevant) are kept; a grade is ASCII digits with an optional leading ``-``
  (``+1``, ``1_0``, ``1.0`` are refused), at most :data:`sitegen.corpus.MAX_GRADE` either way;
* every input is read by :func:`sitegen.corpus.text_lines`, the reader ``load_corpus`` uses: lines end at
  ``\\n``, a UTF-8 byte-order mark on line 1 is skipped, NUL bytes are refused;
* the README records the command with each path relative to the current folder, or as its file name alone
  when it lies outside, so an import never publishes a home or workspace path;
* bad input is refused with a :class:`CorpusError` naming the file and line: a malformed qrels line, a SMART
  record without ``.I``, an unclosed SGML element, a duplicate id, a pair judged twice with different grades (an
  exact repeat is dropped and counted), an empty document file, a byte sequence that is not UTF-8, and (unless
  ``skip_unknown=True``, which drops and counts them) qrels rows naming a query or document that does not exist.
"""

from __future__ import annotations

import gzip
import html
import json
import re
import secrets
import shlex
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from sitegen.corpus import (
    CORPUS_FILE,
    QRELS_FILE,
    QUERIES_FILE,
    README_FILE,
    json_lines,
    load_corpus,
    parse_grade,
    text_lines,
)
from sitegen.errors import CorpusError, SitegenError
from sitegen.hashing import sha256_file
from sitegen.swap import TargetLock, swap_into_place

__all__ = [
    "DEFAULT_TO",
    "ImportResult",
    "SourceFile",
    "import_beir",
    "import_smart",
    "import_trec",
]

DEFAULT_TO = Path("corpora")
TopicField = Literal["title", "desc", "title+desc"]
QueryIds = Literal["number", "ordinal"]

_GZIP_MAGIC = b"\x1f\x8b"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_QRELS_HEADER = "query-id\tcorpus-id\tscore"


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
class _Doc:
    doc_id: str
    title: str
    text: str
    metadata: Mapping[str, Any]
    line: int


@dataclass(frozen=True)
class _Query:
    query_id: str
    text: str
    line: int


@dataclass(frozen=True)
class _Judgement:
    query_id: str
    doc_id: str
    grade: int
    line: int


@dataclass
class _Plan:
    """Everything one importer knows about its inputs; the shared pipeline does the rest."""

    kind: str
    name: str
    to: Path
    sources: list[tuple[str, Path]]
    documents: Callable[[], Iterable[_Doc]]
    documents_path: Path
    queries: Callable[[], Iterable[_Query]]
    queries_path: Path
    qrels: Callable[[], Iterable[_Judgement]]
    qrels_path: Path
    license_text: str
    command: str
    overwrite: bool
    skip_unknown: bool
    keep_unanswerable: bool
    invert_grades: bool = False
    notes: list[str] = field(default_factory=list)
    unknown_query_hint: str = ""


# --------------------------------------------------------------------------------------------- public API


def import_beir(
    src_dir: Path | str,
    name: str,
    split: str = "test",
    *,
    license_text: str,
    to: Path | str = DEFAULT_TO,
    command: str | None = None,
    overwrite: bool = False,
    skip_unknown: bool = False,
    keep_unanswerable: bool = False,
) -> ImportResult:
    """Import a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv`` with a header line).

    Documents keep ``title``, ``text`` and ``metadata`` (when it is a non-empty object). Only queries the split's
    qrels judge relevant to some document are kept, so the other splits' queries are dropped and counted.
    """
    src = Path(src_dir)
    if not src.is_dir():
        raise CorpusError(src, "BEIR folder does not exist")
    corpus_path, queries_path, qrels_path = src / "corpus.jsonl", src / "queries.jsonl", src / "qrels" / f"{split}.tsv"
    for path in (corpus_path, queries_path, qrels_path):
        if not path.is_file():
            raise CorpusError(path, "required file is missing")
    if command is None:
        command = _command_line(
            "beir",
            [src],
            {
                "--name": name,
                "--split": split,
                "--to": Path(to),
                "--license": license_text,
                "--skip-unknown": skip_unknown,
                "--keep-unanswerable": keep_unanswerable,
                "--overwrite": overwrite,
            },
        )
    plan = _Plan(
        kind="BEIR",
        name=name,
        to=Path(to),
        sources=[("corpus.jsonl", corpus_path), ("queries.jsonl", queries_path), (f"qrels/{split}.tsv", qrels_path)],
        documents=lambda: _jsonl_documents(corpus_path, ("_id",), ("text",), beir=True),
        documents_path=corpus_path,
        queries=lambda: _jsonl_queries(queries_path),
        queries_path=queries_path,
        qrels=lambda: _beir_qrels(qrels_path),
        qrels_path=qrels_path,
        license_text=license_text,
        command=command,
        overwrite=overwrite,
        skip_unknown=skip_unknown,
        keep_unanswerable=keep_unanswerable,
        notes=[f"Split: `{split}` (judgements from `qrels/{split}.tsv`)."],
    )
    return _run(plan)


def import_trec(
    docs: Path | str,
    topics: Path | str,
    qrels: Path | str,
    name: str,
    *,
    license_text: str,
    topic_field: TopicField = "title",
    to: Path | str = DEFAULT_TO,
    command: str | None = None,
    overwrite: bool = False,
    skip_unknown: bool = False,
    keep_unanswerable: bool = False,
) -> ImportResult:
    """Import a TREC-style collection.

    ``docs``: JSONL (``{"_id"|"docno"|"id", "title"?, "text"|"contents"|"body"}``) or TREC SGML
    (``<DOC><DOCNO>..</DOCNO> <HEADLINE>|<TITLE>..</..> <TEXT>..</TEXT></DOC>``, other tags stripped).
    ``topics``: ``qid<TAB>text`` lines or classic SGML ``<top> <num> <title> <desc> <narr> </top>``; the query
    text is the topic's title, description or both (``topic_field``).
    ``qrels``: ``qid iter docid grade``, whitespace separated.
    Formats are detected from each file's first non-blank character; gzip files are read transparently.
    Topic numbers made of digits lose their leading zeros, in the topics and in the qrels (``051`` = ``51``).
    """
    docs_path, topics_path, qrels_path = Path(docs), Path(topics), Path(qrels)
    for path in (docs_path, topics_path, qrels_path):
        if not path.is_file():
            raise CorpusError(path, "input file does not exist")
    if topic_field not in ("title", "desc", "title+desc"):
        raise CorpusError(topics_path, f"topic_field must be title, desc or title+desc, got {topic_field!r}")
    if command is None:
        command = _command_line(
            "trec",
            [docs_path, topics_path, qrels_path],
            {
                "--name": name,
                "--topic-field": topic_field,
                "--to": Path(to),
                "--license": license_text,
                "--skip-unknown": skip_unknown,
                "--keep-unanswerable": keep_unanswerable,
                "--overwrite": overwrite,
            },
        )
    doc_format = _detect(docs_path, {"{": "jsonl", "<": "sgml"}, "documents")
    topic_format = "sgml" if _first_char(topics_path) == "<" else "tsv"

    def documents() -> Iterable[_Doc]:
        if doc_format == "jsonl":
            return _jsonl_documents(docs_path, ("_id", "docno", "id"), ("text", "contents", "body"), beir=False)
        return _sgml_documents(docs_path)

    def queries() -> Iterable[_Query]:
        if topic_format == "sgml":
            return _sgml_topics(topics_path, topic_field)
        return _tsv_topics(topics_path)

    notes = [
        f"Documents: {'JSONL' if doc_format == 'jsonl' else 'TREC SGML'}. "
        f"Topics: {'SGML, query text = ' + topic_field if topic_format == 'sgml' else 'qid<TAB>text'}. "
        "Qrels: TREC `qid iter docid grade`.",
        "Topic numbers made only of digits lose their leading zeros (in the topics and in the qrels).",
    ]
    plan = _Plan(
        kind="TREC",
        name=name,
        to=Path(to),
        sources=[(docs_path.name, docs_path), (topics_path.name, topics_path), (qrels_path.name, qrels_path)],
        documents=documents,
        documents_path=docs_path,
        queries=queries,
        queries_path=topics_path,
        qrels=lambda: _trec_qrels(qrels_path, normalise_query_ids=True),
        qrels_path=qrels_path,
        license_text=license_text,
        command=command,
        overwrite=overwrite,
        skip_unknown=skip_unknown,
        keep_unanswerable=keep_unanswerable,
        notes=notes,
    )
    return _run(plan)


def import_smart(
    docs: Path | str,
    queries: Path | str,
    qrels: Path | str,
    name: str,
    invert_grades: bool = False,
    *,
    license_text: str,
    query_ids: QueryIds = "number",
    to: Path | str = DEFAULT_TO,
    command: str | None = None,
    overwrite: bool = False,
    skip_unknown: bool = False,
    keep_unanswerable: bool = False,
) -> ImportResult:
    """Import a collection in SMART format (Cranfield, CISI, MED, CACM, ...).

    Records start with ``.I <id>``; fields ``.T`` (title), ``.A`` (author, repeatable), ``.B`` (bibliographic),
    ``.W`` (text) run until the next dot-field line; other fields (``.X``, ``.N``, ``.K``, ...) are ignored.
    ``.A`` and ``.B`` go into ``metadata`` as ``author`` (repeated fields joined by ``"; "``) and
    ``bibliographic``. Queries are ``.I`` + ``.W``. Numeric ids lose their leading zeros (``.I 001`` = ``1``).

    ``query_ids="number"`` uses each query's ``.I`` number; ``"ordinal"`` numbers the queries 1..n in file order,
    which is what Cranfield's ``cranqrel`` refers to (the ``.I`` numbers in ``cran.qry`` skip values: 1, 2, 4, ...).

    ``qrels``: ``qid docid [grade]`` lines (grade 1 when absent) or TREC ``qid iter docid grade`` lines, detected
    from the first line's column count. ``invert_grades=True`` is for collections where 1 is the most relevant
    grade: with ``max`` the largest positive grade in the file, a positive grade ``g`` becomes ``max + 1 - g``
    (Cranfield: 1->4, 2->3, 3->2, 4->1) and grades <= 0 are dropped (Cranfield's -1 means "no relevance").
    """
    docs_path, queries_path, qrels_path = Path(docs), Path(queries), Path(qrels)
    for path in (docs_path, queries_path, qrels_path):
        if not path.is_file():
            raise CorpusError(path, "input file does not exist")
    if query_ids not in ("number", "ordinal"):
        raise CorpusError(queries_path, f"query_ids must be number or ordinal, got {query_ids!r}")
    if command is None:
        command = _command_line(
            "smart",
            [docs_path, queries_path, qrels_path],
            {
                "--name": name,
                "--query-ids": query_ids,
                "--invert-grades": invert_grades,
                "--to": Path(to),
                "--license": license_text,
                "--skip-unknown": skip_unknown,
                "--keep-unanswerable": keep_unanswerable,
                "--overwrite": overwrite,
            },
        )
    notes = [
        "Documents: SMART `.I` records; title = `.T`, text = `.W`, metadata `author` = `.A`, "
        "`bibliographic` = `.B`; numeric ids without leading zeros.",
        "Query ids: "
        + ("the position of each query in the file, 1..n." if query_ids == "ordinal" else "the `.I` numbers."),
    ]
    hint = (
        ""
        if query_ids == "ordinal"
        else " (if the qrels number the queries 1..n in file order, as Cranfield's do, use query_ids='ordinal'"
        " / --query-ids ordinal)"
    )
    plan = _Plan(
        kind="SMART",
        name=name,
        to=Path(to),
        sources=[(docs_path.name, docs_path), (queries_path.name, queries_path), (qrels_path.name, qrels_path)],
        documents=lambda: _smart_documents(docs_path),
        documents_path=docs_path,
        queries=lambda: _smart_queries(queries_path, ordinal=query_ids == "ordinal"),
        queries_path=queries_path,
        qrels=lambda: _smart_qrels(qrels_path),
        qrels_path=qrels_path,
        license_text=license_text,
        command=command,
        overwrite=overwrite,
        skip_unknown=skip_unknown,
        keep_unanswerable=keep_unanswerable,
        invert_grades=invert_grades,
        notes=notes,
        unknown_query_hint=hint,
    )
    return _run(plan)


# --------------------------------------------------------------------------------------------- pipeline


def _run(plan: _Plan) -> ImportResult:
    if not _NAME.fullmatch(plan.name):
        raise CorpusError(
            plan.to / plan.name,
            f"corpus name {plan.name!r} must start with a letter or digit and use only letters, digits, . _ -",
        )
    target = plan.to / plan.name
    if target.exists() and not plan.overwrite:
        raise CorpusError(target, "already exists; pass overwrite=True (--overwrite) to replace it")
    sources = [_source_file(label, path) for label, path in plan.sources]

    created_to = not plan.to.exists()
    plan.to.mkdir(parents=True, exist_ok=True)
    staging = _fresh_sibling(plan.to, f".{plan.name}.importing")
    staging.mkdir()
    try:
        result = _write(plan, staging, sources, target)
        try:
            load_corpus(staging)
        except SitegenError as exc:
            raise CorpusError(target, f"the imported folder does not validate: {exc}") from exc
        _swap_into_place(staging, target, plan.overwrite)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if created_to and plan.to.is_dir() and not any(plan.to.iterdir()):
            plan.to.rmdir()
        raise
    return result


def _write(plan: _Plan, staging: Path, sources: list[SourceFile], target: Path) -> ImportResult:
    # Documents: streamed straight into corpus.jsonl; only the ids stay in memory.
    doc_lines: dict[str, int] = {}
    with (staging / CORPUS_FILE).open("w", encoding="utf-8", newline="\n") as out:
        for doc in plan.documents():
            _check_id(plan.documents_path, doc.line, doc.doc_id, "document")
            if doc.doc_id in doc_lines:
                raise CorpusError(
                    plan.documents_path,
                    f'duplicate document id "{doc.doc_id}" (first seen on line {doc_lines[doc.doc_id]})',
                    doc.line,
                )
            doc_lines[doc.doc_id] = doc.line
            record: dict[str, Any] = {"_id": doc.doc_id, "title": doc.title, "text": doc.text}
            if doc.metadata:
                record["metadata"] = dict(doc.metadata)
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if not doc_lines:
        raise CorpusError(plan.documents_path, "empty document file: no documents")

    queries: dict[str, _Query] = {}
    for query in plan.queries():
        _check_id(plan.queries_path, query.line, query.query_id, "query")
        if query.query_id in queries:
            raise CorpusError(
                plan.queries_path,
                f'duplicate query id "{query.query_id}" (first seen on line {queries[query.query_id].line})',
                query.line,
            )
        if not query.text:
            raise CorpusError(plan.queries_path, f'query "{query.query_id}" has no text', query.line)
        queries[query.query_id] = query
    if not queries:
        raise CorpusError(plan.queries_path, "no queries")

    # Qrels: parsed whole (they are small next to the documents), checked, then graded.
    dropped: Counter[str] = Counter()
    judgements: list[_Judgement] = []
    for row in plan.qrels():
        if row.query_id not in queries:
            if plan.skip_unknown:
                dropped["name a query that is not in the queries file (skip_unknown)"] += 1
                continue
            raise CorpusError(
                plan.qrels_path,
                f'unknown query id "{row.query_id}" (not in {plan.queries_path.name}){plan.unknown_query_hint}; '
                "pass skip_unknown=True (--skip-unknown) to drop such rows",
                row.line,
            )
        if row.doc_id not in doc_lines:
            if plan.skip_unknown:
                dropped["name a document that is not in the documents file (skip_unknown)"] += 1
                continue
            raise CorpusError(
                plan.qrels_path,
                f'unknown document id "{row.doc_id}" (not in {plan.documents_path.name}); '
                "pass skip_unknown=True (--skip-unknown) to drop such rows",
                row.line,
            )
        judgements.append(row)

    grade_note, graded = _grade(judgements, plan.invert_grades, dropped)
    graded = _without_repeats(plan.qrels_path, graded, dropped)

    relevant = {row.query_id for row in graded if row.grade > 0}
    judged = {row.query_id for row in judgements}  # before grades <= 0 or negative are dropped
    kept: list[_Query] = []
    unanswerable: set[str] = set()
    dropped_judged = dropped_unjudged = 0
    for query in queries.values():
        if query.query_id in relevant:
            kept.append(query)
        elif query.query_id in judged and plan.keep_unanswerable:
            kept.append(query)
            unanswerable.add(query.query_id)
        elif query.query_id in judged:
            dropped_judged += 1
        else:
            dropped_unjudged += 1
    if not relevant:
        raise CorpusError(plan.qrels_path, "no query has a relevant document (grade > 0): nothing to evaluate")
    kept_ids = {q.query_id for q in kept}
    rows = [row for row in graded if row.query_id in kept_ids]
    if len(rows) < len(graded):
        dropped["belong to dropped queries (no relevant document)"] += len(graded) - len(rows)

    with (staging / QUERIES_FILE).open("w", encoding="utf-8", newline="\n") as out:
        for query in kept:
            record = {"_id": query.query_id, "text": query.text}
            if query.query_id in unanswerable:
                record["answerable"] = False
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    (staging / QRELS_FILE).parent.mkdir(parents=True, exist_ok=True)
    with (staging / QRELS_FILE).open("w", encoding="utf-8", newline="\n") as out:
        out.write(_QRELS_HEADER + "\n")
        for row in rows:
            out.write(f"{row.query_id}\t{row.doc_id}\t{row.grade}\n")

    result = ImportResult(
        name=plan.name,
        folder=target,
        documents=len(doc_lines),
        queries=len(kept),
        judged_pairs=len(rows),
        dropped_queries=dropped_judged + dropped_unjudged,
        dropped_qrels=sum(dropped.values()),
    )
    readme = _readme(
        plan,
        sources,
        result,
        relevant_pairs=sum(1 for row in rows if row.grade > 0),
        unanswerable=len(unanswerable),
        dropped_judged=dropped_judged,
        dropped_unjudged=dropped_unjudged,
        dropped_rows=dropped,
        grade_note=grade_note,
    )
    (staging / README_FILE).write_text(readme, encoding="utf-8", newline="\n")
    return result


def _without_repeats(path: Path, rows: list[_Judgement], dropped: Counter[str]) -> list[_Judgement]:
    """Drop exact repeats of a judgement (counted); a pair judged twice with different grades is an error.

    Runs after the grade rules, so a dropped row (say Cranfield's -1) never conflicts with a kept one.
    """
    first: dict[tuple[str, str], _Judgement] = {}
    kept = []
    for row in rows:
        earlier = first.setdefault((row.query_id, row.doc_id), row)
        if earlier is row:
            kept.append(row)
        elif earlier.grade == row.grade:
            dropped["repeat an earlier row exactly"] += 1
        else:
            raise CorpusError(
                path,
                f'pair ("{row.query_id}", "{row.doc_id}") is judged twice with different grades '
                f"(first on line {earlier.line})",
                row.line,
            )
    return kept


def _grade(rows: list[_Judgement], invert: bool, dropped: Counter[str]) -> tuple[str, list[_Judgement]]:
    """Apply the grade rules; return a README sentence describing them and the rows to keep."""
    if not invert:
        kept = [row for row in rows if row.grade >= 0]
        if len(kept) < len(rows):
            dropped["have a negative grade"] += len(rows) - len(kept)
        return "Grades are copied as they are (higher = more relevant); rows with a negative grade are dropped.", kept
    positive = sorted({row.grade for row in rows if row.grade > 0})
    top = positive[-1] if positive else 0
    kept = [_Judgement(row.query_id, row.doc_id, top + 1 - row.grade, row.line) for row in rows if row.grade > 0]
    if len(kept) < len(rows):
        dropped["have a grade <= 0 (inverted grades)"] += len(rows) - len(kept)
    mapping = ", ".join(f"{g}->{top + 1 - g}" for g in positive) or "none"
    return (
        f"Grades inverted (the source's 1 is the most relevant): with max = {top}, the largest positive grade, a "
        f"positive grade g becomes max + 1 - g ({mapping}); grades <= 0 are dropped.",
        kept,
    )


def _swap_into_place(staging: Path, target: Path, overwrite: bool) -> None:
    """The shared atomic swap; the overwrite check is repeated under its lock, as another import may have won."""
    with TargetLock(target) as lock:
        if (target.exists() or target.is_symlink()) and not overwrite:
            raise CorpusError(target, "already exists; pass overwrite=True (--overwrite) to replace it")
        swap_into_place(staging, target, lock)


def _fresh_sibling(parent: Path, prefix: str) -> Path:
    """A path in ``parent`` that does not exist yet (created by the caller, so the umask applies)."""
    while True:
        candidate = parent / f"{prefix}-{secrets.token_hex(4)}"
        if not candidate.exists():
            return candidate


def _readme(
    plan: _Plan,
    sources: list[SourceFile],
    result: ImportResult,
    *,
    relevant_pairs: int,
    unanswerable: int,
    dropped_judged: int,
    dropped_unjudged: int,
    dropped_rows: Mapping[str, int],
    grade_note: str,
) -> str:
    license_line = plan.license_text.strip() or "license: not stated"
    lines = [
        f"# {plan.name}",
        "",
        f"Imported from a {plan.kind} collection by sitegen's {plan.kind} importer. The text, queries and "
        "judgements are the source's, not this project's; the license below is the one stated by whoever ran the "
        "import.",
        "",
        "## License",
        "",
        license_line,
        "",
        "## Source files",
        "",
        "| file | bytes | sha256 |",
        "|---|---:|---|",
        *(f"| `{s.label}` | {s.size} | `{s.sha256}` |" for s in sources),
        "",
        "## Command",
        "",
        "```sh",
        plan.command,
        "```",
        "",
        "## Counts",
        "",
        f"- documents: {result.documents}",
        f"- queries: {result.queries}"
        + (
            f' ({unanswerable} judged with no relevant document, kept as `"answerable": false`)' if unanswerable else ""
        ),
        f"- judged pairs: {result.judged_pairs} ({relevant_pairs} relevant, grade > 0)",
        f"- queries dropped: {result.dropped_queries} ({dropped_judged} judged with no relevant document, "
        f"{dropped_unjudged} never judged)",
        f"- qrels rows dropped: {result.dropped_qrels}"
        + (" (" + "; ".join(f"{n} {why}" for why, n in sorted(dropped_rows.items())) + ")" if dropped_rows else ""),
        "",
        "## Conversion",
        "",
        *(f"- {note}" for note in plan.notes),
        f"- {grade_note}",
        "- Ids stripped; whitespace in titles and text collapsed to single spaces.",
        "- A query is kept only if some document is judged relevant to it (grade > 0).",
        "",
    ]
    return "\n".join(lines)


def _command_line(kind: str, positional: Sequence[Path | str], options: Mapping[str, Any]) -> str:
    """A ``sitegen import`` command equivalent to this call, options in a fixed order, shell-quoted.

    The README is published, so paths are shown relative to the current folder, or by name alone
    when they lie outside it: never a home or workspace path."""
    words = ["sitegen", "import", kind, *(_shown_path(Path(p)) for p in positional)]
    for option, value in options.items():
        if value is True:
            words.append(option)
        elif isinstance(value, Path):
            words += [option, _shown_path(value)]
        elif value is not False and value is not None:
            words += [option, str(value)]
    return shlex.join(words)


def _shown_path(path: Path) -> str:
    """``path`` relative to the current folder when it lies inside it, else its last component."""
    if not path.is_absolute() and ".." not in path.parts:
        return path.as_posix()
    here = Path.cwd().resolve()
    resolved = path.resolve()
    if resolved.is_relative_to(here) and resolved != here:
        return resolved.relative_to(here).as_posix()
    return resolved.name or "."


def _check_id(path: Path, line: int, value: str, what: str) -> None:
    if not value:
        raise CorpusError(path, f"{what} id is empty", line)
    if any(c in value for c in "\t\r\n"):
        raise CorpusError(path, f"{what} id {value!r} contains a tab or line break", line)


# --------------------------------------------------------------------------------------------- I/O edge


def _source_file(label: str, path: Path) -> SourceFile:
    return SourceFile(label=label, path=path, size=path.stat().st_size, sha256=sha256_file(path))


def _open_binary(path: Path) -> IO[bytes]:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rb")
    return path.open("rb")


def _read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Every line (1-based number, text without its line ending), streamed through the shared reader."""
    try:
        handle = _open_binary(path)
    except OSError as exc:
        raise CorpusError(path, f"cannot read the file: {exc.strerror or exc}") from None
    with handle:
        yield from text_lines(path, handle)


def _first_char(path: Path) -> str | None:
    """The first non-whitespace character of a file, or None if it has none."""
    for _, line in _read_lines(path):
        stripped = line.strip()
        if stripped:
            return stripped[0]
    return None


def _detect(path: Path, formats: Mapping[str, str], what: str) -> str:
    first = _first_char(path)
    if first is None:
        raise CorpusError(path, f"empty {what} file: no {what}")
    if first not in formats:
        known = " or ".join(repr(c) for c in formats)
        raise CorpusError(path, f"cannot tell the format of this {what} file: it should start with {known}")
    return formats[first]


def _collapse(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------- JSONL


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The shared JSONL reader over this file's lines (gzip too)."""
    return json_lines(path, _read_lines(path))


def _json_id(path: Path, line: int, obj: Mapping[str, Any], keys: Sequence[str]) -> str:
    for key in keys:
        if key in obj:
            value = obj[key]
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise CorpusError(path, f'field "{key}" must be a string, got {type(value).__name__}', line)
            return str(value).strip()
    raise CorpusError(path, f"missing id field ({' or '.join(repr(k) for k in keys)})", line)


def _json_text(path: Path, line: int, obj: Mapping[str, Any], keys: Sequence[str], required: bool) -> str:
    for key in keys:
        if key in obj:
            value = obj[key]
            if value is None:
                return ""
            if not isinstance(value, str):
                raise CorpusError(path, f'field "{key}" must be a string, got {type(value).__name__}', line)
            return _collapse(value)
    if required:
        raise CorpusError(path, f"missing text field ({' or '.join(repr(k) for k in keys)})", line)
    return ""


def _jsonl_documents(path: Path, id_keys: Sequence[str], text_keys: Sequence[str], beir: bool) -> Iterator[_Doc]:
    for number, obj in _json_lines(path):
        doc_id = _json_id(path, number, obj, id_keys)
        title = _json_text(path, number, obj, ("title",), required=False)
        text = _json_text(path, number, obj, text_keys, required=True)
        metadata = obj.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise CorpusError(path, f'field "metadata" must be a JSON object, got {type(metadata).__name__}', number)
        yield _Doc(doc_id, title, text, metadata, number)


def _jsonl_queries(path: Path) -> Iterator[_Query]:
    for number, obj in _json_lines(path):
        query_id = _json_id(path, number, obj, ("_id",))
        yield _Query(query_id, _json_text(path, number, obj, ("text",), required=True), number)


# --------------------------------------------------------------------------------------------- qrels


def _grade_value(path: Path, line: int, text: str) -> int:
    """Negative grades parse (they are dropped and counted later); anything but ``-?[0-9]+`` is refused."""
    return parse_grade(path, line, text, negative_ok=True)


def _beir_qrels(path: Path) -> Iterator[_Judgement]:
    header = True
    for number, line in _read_lines(path):
        if not line.strip():
            continue
        columns = [c.strip() for c in line.split("\t")]
        if len(columns) != 3:
            raise CorpusError(
                path, f"malformed qrels line: expected 3 tab-separated columns, found {len(columns)}", number
            )
        if header:
            header = False
            if any(c.isdigit() for c in columns[2]):  # a grade, however malformed: not a header
                raise CorpusError(path, f"first line must be a header such as {_QRELS_HEADER!r}", number)
            continue
        yield _Judgement(columns[0], columns[1], _grade_value(path, number, columns[2]), number)
    if header:
        raise CorpusError(path, "qrels file is empty")


def _trec_qrels(path: Path, normalise_query_ids: bool) -> Iterator[_Judgement]:
    seen = False
    for number, line in _read_lines(path):
        columns = line.split()
        if not columns:
            continue
        seen = True
        if len(columns) != 4:
            raise CorpusError(
                path, f"malformed qrels line: expected 4 columns (qid iter docid grade), found {len(columns)}", number
            )
        query_id = _number_id(columns[0]) if normalise_query_ids else columns[0]
        yield _Judgement(query_id, columns[2], _grade_value(path, number, columns[3]), number)
    if not seen:
        raise CorpusError(path, "qrels file is empty")


def _smart_qrels(path: Path) -> Iterator[_Judgement]:
    width: int | None = None
    for number, line in _read_lines(path):
        columns = line.split()
        if not columns:
            continue
        if width is None:
            if len(columns) not in (2, 3, 4):
                raise CorpusError(
                    path,
                    f"malformed qrels line: expected 'qid docid [grade]' or 'qid iter docid grade', "
                    f"found {len(columns)} columns",
                    number,
                )
            width = 4 if len(columns) == 4 else 3
        if width == 4:
            if len(columns) != 4:
                raise CorpusError(
                    path,
                    f"malformed qrels line: expected 4 columns (qid iter docid grade, as on the first line), "
                    f"found {len(columns)}",
                    number,
                )
            query_id, doc_id, grade = columns[0], columns[2], columns[3]
        else:
            if len(columns) not in (2, 3):
                raise CorpusError(
                    path,
                    f"malformed qrels line: expected 2 or 3 columns (qid docid [grade], as on the first line), "
                    f"found {len(columns)}",
                    number,
                )
            query_id, doc_id, grade = columns[0], columns[1], columns[2] if len(columns) == 3 else "1"
        yield _Judgement(_number_id(query_id), _number_id(doc_id), _grade_value(path, number, grade), number)
    if width is None:
        raise CorpusError(path, "qrels file is empty")


def _number_id(value: str) -> str:
    """``"007"`` -> ``"7"``; ids that are not plain ASCII digits are returned as they are.

    Zeros are stripped as text, not through ``int()``, which refuses more than 4,300 digits."""
    value = value.strip()
    return (value.lstrip("0") or "0") if value.isascii() and value.isdigit() else value


# --------------------------------------------------------------------------------------------- TREC SGML


def _element_stream(path: Path, tag: str) -> Iterator[tuple[int, str]]:
    """Yield (line of the opening tag, content) for every ``<tag>...</tag>`` element of an SGML file, streamed.

    Elements must not nest; anything but whitespace outside them is an error.
    """
    pattern = re.compile(rf"<(/?){tag}(?:\s[^>]*)?>", re.IGNORECASE)
    upper = tag.upper()
    open_line: int | None = None
    parts: list[str] = []
    number = 0
    for number, line in _read_lines(path):
        position = 0
        for match in pattern.finditer(line):
            segment = line[position : match.start()]
            position = match.end()
            if open_line is None:
                if segment.strip():
                    raise CorpusError(path, f"text outside a <{upper}> element", number)
            else:
                parts.append(segment)
            if match.group(1):
                if open_line is None:
                    raise CorpusError(path, f"</{upper}> without an opening <{upper}>", number)
                yield open_line, "".join(parts)
                open_line, parts = None, []
            else:
                if open_line is not None:
                    raise CorpusError(
                        path, f"<{upper}> is not closed before the next <{upper}> on line {number}", open_line
                    )
                open_line = number
        rest = line[position:]
        if open_line is None:
            if rest.strip():
                raise CorpusError(path, f"text outside a <{upper}> element", number)
        else:
            parts.append(rest + "\n")
    if open_line is not None:
        raise CorpusError(path, f"<{upper}> is not closed (the file ends at line {number})", open_line)


def _inner(path: Path, first_line: int, content: str, tag: str) -> list[tuple[int, int, str]]:
    """Every ``<tag>...</tag>`` inside an element's content: (start, end, inner text); unclosed ones are errors."""
    found = []
    opener = re.compile(rf"<{tag}(?:\s[^>]*)?>", re.IGNORECASE)
    closer = re.compile(rf"</{tag}\s*>", re.IGNORECASE)
    position = 0
    while True:
        start = opener.search(content, position)
        if start is None:
            return found
        end = closer.search(content, start.end())
        if end is None:
            line = first_line + content.count("\n", 0, start.start())
            raise CorpusError(path, f"<{tag.upper()}> is not closed", line)
        found.append((start.start(), end.end(), content[start.end() : end.start()]))
        position = end.end()


_TAG = re.compile(r"<[^>]*>")


def _plain(text: str) -> str:
    return _collapse(html.unescape(_TAG.sub(" ", text)))


def _sgml_documents(path: Path) -> Iterator[_Doc]:
    for line, content in _element_stream(path, "DOC"):
        docnos = _inner(path, line, content, "DOCNO")
        if not docnos:
            raise CorpusError(path, "document has no <DOCNO>", line)
        doc_id = _plain(docnos[0][2])
        titles = sorted(_inner(path, line, content, "HEADLINE") + _inner(path, line, content, "TITLE"))
        texts = _inner(path, line, content, "TEXT")
        if texts:
            body = " ".join(inner for _, _, inner in texts)
        else:  # no <TEXT>: everything but the id and title elements, tags stripped
            pieces, cut = [], 0
            for start, end, _ in sorted(docnos + titles):
                pieces.append(content[cut:start])
                cut = max(cut, end)
            body = " ".join([*pieces, content[cut:]])
        yield _Doc(doc_id, _plain(" ".join(inner for _, _, inner in titles)), _plain(body), {}, line)


_TOPIC_FIELD = re.compile(r"<([A-Za-z]+)(?:\s[^>]*)?>")
_PREFIXES = {"num": "number:", "title": "topic:", "desc": "description:", "narr": "narrative:"}


def _sgml_topics(path: Path, topic_field: TopicField) -> Iterator[_Query]:
    for line, content in _element_stream(path, "top"):
        content = re.sub(r"</[A-Za-z]+\s*>", " ", content)
        fields: dict[str, str] = {}
        matches = list(_TOPIC_FIELD.finditer(content))
        for i, match in enumerate(matches):
            name = match.group(1).lower()
            end = matches[i + 1].start() if i + 1 < len(matches) else len(content)
            value = _collapse(html.unescape(content[match.end() : end]))
            prefix = _PREFIXES.get(name)
            if prefix and value.lower().startswith(prefix):
                value = value[len(prefix) :].strip()
            fields.setdefault(name, value)
        if not fields.get("num"):
            raise CorpusError(path, "topic has no <num>", line)
        wanted = ("title", "desc") if topic_field == "title+desc" else (topic_field,)
        text = " ".join(fields[f] for f in wanted if fields.get(f))
        if not text:
            raise CorpusError(path, f"topic {fields['num']} has no <{'> or <'.join(wanted)}> text", line)
        yield _Query(_number_id(fields["num"]), text, line)


def _tsv_topics(path: Path) -> Iterator[_Query]:
    for number, line in _read_lines(path):
        if not line.strip():
            continue
        if "\t" not in line:
            raise CorpusError(path, "malformed topic line: expected qid<TAB>text", number)
        query_id, text = line.split("\t", 1)
        yield _Query(_number_id(query_id), _collapse(text), number)


# --------------------------------------------------------------------------------------------- SMART

_SMART_FIELD = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")


@dataclass
class _SmartRecord:
    record_id: str
    line: int
    fields: dict[str, list[list[str]]]


def _smart_records(path: Path) -> Iterator[_SmartRecord]:
    record: _SmartRecord | None = None
    current: list[str] | None = None
    for number, line in _read_lines(path):
        match = _SMART_FIELD.match(line.rstrip())
        if match and match.group(1) == "I":
            if record is not None:
                yield record
            record_id = _number_id(match.group(2) or "")
            if not record_id:
                raise CorpusError(path, ".I line without an id", number)
            record, current = _SmartRecord(record_id, number, {}), None
        elif record is None:
            if line.strip():
                raise CorpusError(path, "text before the first .I line: every SMART record starts with .I <id>", number)
        elif match:
            current = [match.group(2) or ""]
            record.fields.setdefault(match.group(1), []).append(current)
        elif current is not None:
            current.append(line)
        elif line.strip():
            raise CorpusError(path, "text after .I before any field (.T, .A, .B, .W)", number)
    if record is not None:
        yield record


def _smart_field(record: _SmartRecord, letter: str, separator: str = " ") -> str:
    values = [_collapse("\n".join(lines)) for lines in record.fields.get(letter, [])]
    return separator.join(v for v in values if v)


def _smart_documents(path: Path) -> Iterator[_Doc]:
    for record in _smart_records(path):
        metadata = {}
        author = _smart_field(record, "A", "; ")
        if author:
            metadata["author"] = author
        bibliographic = _smart_field(record, "B", "; ")
        if bibliographic:
            metadata["bibliographic"] = bibliographic
        title = _smart_field(record, "T")
        yield _Doc(record.record_id, title, _smart_field(record, "W"), metadata, record.line)


def _smart_queries(path: Path, ordinal: bool) -> Iterator[_Query]:
    for position, record in enumerate(_smart_records(path), start=1):
        query_id = str(position) if ordinal else record.record_id
        text = _smart_field(record, "W")
        if not text:
            raise CorpusError(path, f"query .I {record.record_id} has no .W text", record.line)
        yield _Query(query_id, text, record.line)
