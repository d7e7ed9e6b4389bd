"""The one writer every importer ends in: checks a :class:`Plan`'s records, applies the grading rules, writes the
corpus into a temporary sibling of ``<to>/<name>/``, validates it with :func:`sitegen.inputs.corpus.load_corpus`
and only then swaps it into place, so a failed import leaves nothing behind.

Like ``sitegen validate``, an import reads every input to the end and reports every problem at once
(:class:`~sitegen.errors.CorpusProblems`), not only the first; a reference to a record already reported (a qrels
row naming a document whose line is broken) is not reported again.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from sitegen.errors import CorpusError, CorpusProblems, SitegenError
from sitegen.hashing import sha256_file
from sitegen.inputs.corpus import CORPUS_FILE, QRELS_FILE, QUERIES_FILE, README_FILE, load_corpus
from sitegen.inputs.importers.plan import QRELS_HEADER, ImportResult, Judgement, Plan, Problems, Query, SourceFile
from sitegen.inputs.importers.readme import ReadmeCounts, readme
from sitegen.swap import TargetLock, swap_into_place

__all__ = ["run"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_Record = TypeVar("_Record")


def run(plan: Plan) -> ImportResult:
    if not _NAME.fullmatch(plan.name):
        raise CorpusError(
            plan.to / plan.name,
            f"corpus name {plan.name!r} must start with a letter or digit and use only letters, digits, . _ -",
        )
    target = plan.to / plan.name
    if target.exists() and not plan.overwrite:
        raise CorpusError(target, "already exists; rerun with --overwrite to replace it")
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


def _each(read: Callable[[Problems], Iterable[_Record]], problems: Problems) -> Iterator[_Record]:
    """The records ``read`` yields; a problem that ends its file is kept, and excuses every reference to that
    file's ids (its later records were never read)."""
    try:
        yield from read(problems)
    except CorpusError as exc:
        problems.skipped(exc, None)


def _write(plan: Plan, staging: Path, sources: list[SourceFile], target: Path) -> ImportResult:
    problems = Problems(collect=True)
    # Documents: streamed straight into corpus.jsonl; only the ids stay in memory.
    doc_lines: dict[str, int] = {}
    with (staging / CORPUS_FILE).open("w", encoding="utf-8", newline="\n") as out:
        for doc in _each(plan.documents, problems):
            try:
                _check_id(plan.documents_path, doc.line, doc.doc_id, "document")
                if doc.doc_id in doc_lines:
                    raise CorpusError(
                        plan.documents_path,
                        f'duplicate document id "{doc.doc_id}" (first seen on line {doc_lines[doc.doc_id]})',
                        doc.line,
                    )
            except CorpusError as exc:
                problems.add(exc)
                continue
            doc_lines[doc.doc_id] = doc.line
            record: dict[str, Any] = {"_id": doc.doc_id, "title": doc.title, "text": doc.text}
            if doc.metadata:
                record["metadata"] = dict(doc.metadata)
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if not doc_lines and not problems.found:
        raise CorpusError(plan.documents_path, "empty document file: no documents")

    queries: dict[str, Query] = {}
    for query in _each(plan.queries, problems):
        try:
            _check_id(plan.queries_path, query.line, query.query_id, "query")
            if query.query_id in queries:
                raise CorpusError(
                    plan.queries_path,
                    f'duplicate query id "{query.query_id}" (first seen on line {queries[query.query_id].line})',
                    query.line,
                )
            if not query.text:
                problems.skipped(
                    CorpusError(plan.queries_path, f'query "{query.query_id}" has no text', query.line), query.query_id
                )
                continue
        except CorpusError as exc:
            problems.add(exc)
            continue
        queries[query.query_id] = query
    if not queries and not problems.found:
        raise CorpusError(plan.queries_path, "no queries")

    dropped: Counter[str] = Counter()
    judgements = _checked_qrels(plan, queries, doc_lines, problems, dropped)
    grade_note, graded = _grade(judgements, plan.invert_grades, dropped)
    graded = _without_repeats(plan.qrels_path, graded, dropped, problems)
    if problems.found:
        raise CorpusProblems(problems.found)

    relevant = {row.query_id for row in graded if row.grade > 0}
    judged = {row.query_id for row in judgements}  # before grades <= 0 or negative are dropped
    kept: list[Query] = []
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
        out.write(QRELS_HEADER + "\n")
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
    text = readme(
        plan,
        sources,
        result,
        ReadmeCounts(
            relevant_pairs=sum(1 for row in rows if row.grade > 0),
            unanswerable=len(unanswerable),
            dropped_judged=dropped_judged,
            dropped_unjudged=dropped_unjudged,
            dropped_rows=dropped,
            grade_note=grade_note,
        ),
    )
    (staging / README_FILE).write_text(text, encoding="utf-8", newline="\n")
    return result


def _checked_qrels(
    plan: Plan, queries: dict[str, Query], doc_lines: dict[str, int], problems: Problems, dropped: Counter[str]
) -> list[Judgement]:
    """The qrels rows that name a known query and document (parsed whole: they are small next to the documents).
    A row naming an unknown one is a problem, or with ``skip_unknown`` dropped and counted; a row naming a record
    left out for a problem already reported is dropped without a second report."""
    judgements = []
    for row in _each(plan.qrels, problems):
        for value, known, path, what, listing in (
            (row.query_id, queries, plan.queries_path, "query", "queries"),
            (row.doc_id, doc_lines, plan.documents_path, "document", "documents"),
        ):
            if value in known:
                continue
            if problems.follows(path, value):
                break
            if plan.skip_unknown:
                dropped[f"name a {what} that is not in the {listing} file (skip_unknown)"] += 1
                break
            hint = plan.unknown_query_hint if what == "query" else ""
            problems.add(
                CorpusError(
                    plan.qrels_path,
                    f'unknown {what} id "{value}" (not in {path.name}){hint}; '
                    "rerun with --skip-unknown to drop and count such rows",
                    row.line,
                )
            )
            break
        else:
            judgements.append(row)
    return judgements


def _without_repeats(path: Path, rows: list[Judgement], dropped: Counter[str], problems: Problems) -> list[Judgement]:
    """Drop exact repeats of a judgement (counted); a pair judged twice with different grades is an error.

    Runs after the grade rules, so a dropped row (say Cranfield's -1) never conflicts with a kept one.
    """
    first: dict[tuple[str, str], Judgement] = {}
    kept = []
    for row in rows:
        earlier = first.setdefault((row.query_id, row.doc_id), row)
        if earlier is row:
            kept.append(row)
        elif earlier.grade == row.grade:
            dropped["repeat an earlier row exactly"] += 1
        else:
            problems.add(
                CorpusError(
                    path,
                    f'pair ("{row.query_id}", "{row.doc_id}") is judged twice with different grades '
                    f"(first on line {earlier.line})",
                    row.line,
                )
            )
    return kept


def _grade(rows: list[Judgement], invert: bool, dropped: Counter[str]) -> tuple[str, list[Judgement]]:
    """Apply the grade rules; return a README sentence describing them and the rows to keep."""
    if not invert:
        kept = [row for row in rows if row.grade >= 0]
        if len(kept) < len(rows):
            dropped["have a negative grade"] += len(rows) - len(kept)
        return "Grades are copied as they are (higher = more relevant); rows with a negative grade are dropped.", kept
    positive = sorted({row.grade for row in rows if row.grade > 0})
    top = positive[-1] if positive else 0
    kept = [Judgement(row.query_id, row.doc_id, top + 1 - row.grade, row.line) for row in rows if row.grade > 0]
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
            raise CorpusError(target, "already exists; rerun with --overwrite to replace it")
        swap_into_place(staging, target, lock)


def _fresh_sibling(parent: Path, prefix: str) -> Path:
    """A path in ``parent`` that does not exist yet (created by the caller, so the umask applies)."""
    while True:
        candidate = parent / f"{prefix}-{secrets.token_hex(4)}"
        if not candidate.exists():
            return candidate


def _check_id(path: Path, line: int, value: str, what: str) -> None:
    if not value:
        raise CorpusError(path, f"{what} id is empty", line)
    if any(c in value for c in "\t\r\n"):
        raise CorpusError(path, f"{what} id {value!r} contains a tab or line break", line)


def _source_file(label: str, path: Path) -> SourceFile:
    return SourceFile(label=label, path=path, size=path.stat().st_size, sha256=sha256_file(path))
