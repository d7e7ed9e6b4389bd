"""The SMART importer (Cranfield, CISI, MED, CACM, ...): ``.I`` records for documents and queries, and qrels as
``qid docid [grade]`` or TREC ``qid iter docid grade`` lines."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sitegen.errors import CorpusError
from sitegen.inputs.importers.plan import (
    Doc,
    ImportOptions,
    ImportResult,
    Judgement,
    Plan,
    Problems,
    Query,
    collapse,
    grade_value,
    number_id,
    read_lines,
)
from sitegen.inputs.importers.readme import command_line
from sitegen.inputs.importers.writer import run

__all__ = ["QueryIds", "import_smart"]

QueryIds = Literal["number", "ordinal"]


def import_smart(
    docs: Path | str,
    queries: Path | str,
    qrels: Path | str,
    options: ImportOptions,
    invert_grades: bool = False,
    query_ids: QueryIds = "number",
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
    name, license_text, to, command = options.name, options.license_text, options.to, options.command
    overwrite, skip_unknown, keep_unanswerable = options.overwrite, options.skip_unknown, options.keep_unanswerable
    docs_path, queries_path, qrels_path = Path(docs), Path(queries), Path(qrels)
    for path in (docs_path, queries_path, qrels_path):
        if not path.is_file():
            raise CorpusError(path, "input file does not exist")
    if query_ids not in ("number", "ordinal"):
        raise CorpusError(queries_path, f"query_ids must be number or ordinal, got {query_ids!r}")
    if command is None:
        command = command_line(
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
    plan = Plan(
        origin=[docs_path, queries_path, qrels_path],
        kind="SMART",
        name=name,
        to=Path(to),
        sources=[(docs_path.name, docs_path), (queries_path.name, queries_path), (qrels_path.name, qrels_path)],
        documents=lambda problems: _smart_documents(docs_path, problems),
        documents_path=docs_path,
        queries=lambda problems: _smart_queries(queries_path, query_ids == "ordinal", problems),
        queries_path=queries_path,
        qrels=lambda problems: _smart_qrels(qrels_path, problems),
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
    return run(plan)


def _smart_qrels(path: Path, problems: Problems) -> Iterator[Judgement]:
    width: int | None = None
    seen = False
    for number, line in read_lines(path):
        columns = line.split()
        if not columns:
            continue
        seen = True
        try:
            yield _smart_judgement(path, number, columns, width)
        except CorpusError as exc:
            problems.add(exc)
        if width is None and len(columns) in (2, 3, 4):  # the first readable line sets the layout
            width = 4 if len(columns) == 4 else 3
    if not seen:
        raise CorpusError(path, "qrels file is empty")


def _smart_judgement(path: Path, number: int, columns: list[str], width: int | None) -> Judgement:
    """One qrels line in the layout the first line set (``width`` 4: TREC's, 3: ``qid docid [grade]``)."""
    if width is None and len(columns) not in (2, 3, 4):
        raise CorpusError(
            path,
            "malformed qrels line: expected 'qid docid [grade]' or 'qid iter docid grade', "
            f"found {len(columns)} columns",
            number,
        )
    if (width or len(columns)) == 4:
        if len(columns) != 4:
            raise CorpusError(
                path,
                "malformed qrels line: expected 4 columns (qid iter docid grade, as on the first line), "
                f"found {len(columns)}",
                number,
            )
        query_id, doc_id, grade = columns[0], columns[2], columns[3]
    else:
        if len(columns) not in (2, 3):
            raise CorpusError(
                path,
                "malformed qrels line: expected 2 or 3 columns (qid docid [grade], as on the first line), "
                f"found {len(columns)}",
                number,
            )
        query_id, doc_id, grade = columns[0], columns[1], columns[2] if len(columns) == 3 else "1"
    return Judgement(number_id(query_id), number_id(doc_id), grade_value(path, number, grade), number)


_SMART_FIELD = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")


@dataclass
class _SmartRecord:
    record_id: str
    line: int
    fields: dict[str, list[list[str]]]


def _smart_records(path: Path, problems: Problems) -> Iterator[_SmartRecord]:
    """Each ``.I`` record. A problem is reported once and its lines skipped: text before the first ``.I`` (or
    after an ``.I`` without an id) up to the next ``.I``, a loose line after ``.I`` on its own."""
    record: _SmartRecord | None = None
    current: list[str] | None = None
    lost = False  # inside lines already reported, until the next .I
    for number, line in read_lines(path):
        match = _SMART_FIELD.match(line.rstrip())
        if match and match.group(1) == "I":
            if record is not None:
                yield record
            record, current, lost = None, None, False
            record_id = number_id(match.group(2) or "")
            if not record_id:
                problems.skipped(CorpusError(path, ".I line without an id", number), None)
                lost = True
                continue
            record = _SmartRecord(record_id, number, {})
        elif lost:
            continue
        elif record is None:
            if line.strip():
                problem = "text before the first .I line: every SMART record starts with .I <id>"
                problems.add(CorpusError(path, problem, number))
                lost = True
        elif match:
            current = [match.group(2) or ""]
            record.fields.setdefault(match.group(1), []).append(current)
        elif current is not None:
            current.append(line)
        elif line.strip():
            problems.add(CorpusError(path, "text after .I before any field (.T, .A, .B, .W)", number))
    if record is not None:
        yield record


def _smart_field(record: _SmartRecord, letter: str, separator: str = " ") -> str:
    values = [collapse("\n".join(lines)) for lines in record.fields.get(letter, [])]
    return separator.join(v for v in values if v)


def _smart_documents(path: Path, problems: Problems) -> Iterator[Doc]:
    for record in _smart_records(path, problems):
        metadata = {}
        author = _smart_field(record, "A", "; ")
        if author:
            metadata["author"] = author
        bibliographic = _smart_field(record, "B", "; ")
        if bibliographic:
            metadata["bibliographic"] = bibliographic
        title = _smart_field(record, "T")
        yield Doc(record.record_id, title, _smart_field(record, "W"), metadata, record.line)


def _smart_queries(path: Path, ordinal: bool, problems: Problems) -> Iterator[Query]:
    for position, record in enumerate(_smart_records(path, problems), start=1):
        query_id = str(position) if ordinal else record.record_id
        text = _smart_field(record, "W")
        if not text:
            problems.skipped(CorpusError(path, f"query .I {record.record_id} has no .W text", record.line), query_id)
            continue
        yield Query(query_id, text, record.line)
