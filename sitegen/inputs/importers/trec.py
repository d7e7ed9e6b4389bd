"""The TREC importer: JSONL or SGML documents, SGML or ``qid<TAB>text`` topics, ``qid iter docid grade`` qrels."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator, Mapping
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
    jsonl_documents,
    number_id,
    read_lines,
)
from sitegen.inputs.importers.readme import command_line
from sitegen.inputs.importers.writer import run

__all__ = ["TopicField", "import_trec"]

TopicField = Literal["title", "desc", "title+desc"]


def import_trec(
    docs: Path | str,
    topics: Path | str,
    qrels: Path | str,
    options: ImportOptions,
    topic_field: TopicField = "title",
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
    name, license_text, to, command = options.name, options.license_text, options.to, options.command
    overwrite, skip_unknown, keep_unanswerable = options.overwrite, options.skip_unknown, options.keep_unanswerable
    docs_path, topics_path, qrels_path = Path(docs), Path(topics), Path(qrels)
    for path in (docs_path, topics_path, qrels_path):
        if not path.is_file():
            raise CorpusError(path, "input file does not exist")
    if topic_field not in ("title", "desc", "title+desc"):
        raise CorpusError(topics_path, f"topic_field must be title, desc or title+desc, got {topic_field!r}")
    if command is None:
        command = command_line(
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

    def documents(problems: Problems) -> Iterable[Doc]:
        if doc_format == "jsonl":
            return jsonl_documents(docs_path, ("_id", "docno", "id"), ("text", "contents", "body"), problems)
        return _sgml_documents(docs_path, problems)

    def queries(problems: Problems) -> Iterable[Query]:
        if topic_format == "sgml":
            return _sgml_topics(topics_path, topic_field, problems)
        return _tsv_topics(topics_path, problems)

    notes = [
        f"Documents: {'JSONL' if doc_format == 'jsonl' else 'TREC SGML'}. "
        f"Topics: {'SGML, query text = ' + topic_field if topic_format == 'sgml' else 'qid<TAB>text'}. "
        "Qrels: TREC `qid iter docid grade`.",
        "Topic numbers made only of digits lose their leading zeros (in the topics and in the qrels).",
    ]
    plan = Plan(
        origin=[docs_path, topics_path, qrels_path],
        kind="TREC",
        name=name,
        to=Path(to),
        sources=[(docs_path.name, docs_path), (topics_path.name, topics_path), (qrels_path.name, qrels_path)],
        documents=documents,
        documents_path=docs_path,
        queries=queries,
        queries_path=topics_path,
        qrels=lambda problems: _trec_qrels(qrels_path, problems),
        qrels_path=qrels_path,
        license_text=license_text,
        command=command,
        overwrite=overwrite,
        skip_unknown=skip_unknown,
        keep_unanswerable=keep_unanswerable,
        notes=notes,
    )
    return run(plan)


def _first_char(path: Path) -> str | None:
    """The first non-whitespace character of a file, or None if it has none."""
    for _, line in read_lines(path):
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


def _trec_qrels(path: Path, problems: Problems) -> Iterator[Judgement]:
    """``qid iter docid grade`` lines; topic numbers lose their leading zeros, as in the topics."""
    seen = False
    for number, line in read_lines(path):
        columns = line.split()
        if not columns:
            continue
        seen = True
        try:
            if len(columns) != 4:
                problem = f"malformed qrels line: expected 4 columns (qid iter docid grade), found {len(columns)}"
                raise CorpusError(path, problem, number)
            yield Judgement(number_id(columns[0]), columns[2], grade_value(path, number, columns[3]), number)
        except CorpusError as exc:
            problems.add(exc)
    if not seen:
        raise CorpusError(path, "qrels file is empty")


def _element_stream(path: Path, tag: str) -> Iterator[tuple[int, str]]:
    """Yield (line of the opening tag, content) for every ``<tag>...</tag>`` element of an SGML file, streamed.

    Elements must not nest; anything but whitespace outside them is an error.
    """
    pattern = re.compile(rf"<(/?){tag}(?:\s[^>]*)?>", re.IGNORECASE)
    upper = tag.upper()
    open_line: int | None = None
    parts: list[str] = []
    number = 0
    for number, line in read_lines(path):
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
    return collapse(html.unescape(_TAG.sub(" ", text)))


def _sgml_documents(path: Path, problems: Problems) -> Iterator[Doc]:
    """Each ``<DOC>``; one whose parts cannot be read is left out (with its id when it has one) and the next read.
    A broken ``<DOC>`` element itself ends the file (:func:`_element_stream`)."""
    for line, content in _element_stream(path, "DOC"):
        doc_id = None
        try:
            docnos = _inner(path, line, content, "DOCNO")
            if not docnos:
                raise CorpusError(path, "document has no <DOCNO>", line)
            doc_id = _plain(docnos[0][2])
            titles = sorted(_inner(path, line, content, "HEADLINE") + _inner(path, line, content, "TITLE"))
            texts = _inner(path, line, content, "TEXT")
        except CorpusError as exc:
            problems.skipped(exc, doc_id)
            continue
        if texts:
            body = " ".join(inner for _, _, inner in texts)
        else:  # no <TEXT>: everything but the id and title elements, tags stripped
            pieces, cut = [], 0
            for start, end, _ in sorted(docnos + titles):
                pieces.append(content[cut:start])
                cut = max(cut, end)
            body = " ".join([*pieces, content[cut:]])
        yield Doc(doc_id, _plain(" ".join(inner for _, _, inner in titles)), _plain(body), {}, line)


_TOPIC_FIELD = re.compile(r"<([A-Za-z]+)(?:\s[^>]*)?>")
_PREFIXES = {"num": "number:", "title": "topic:", "desc": "description:", "narr": "narrative:"}


def _sgml_topics(path: Path, topic_field: TopicField, problems: Problems) -> Iterator[Query]:
    for line, content in _element_stream(path, "top"):
        content = re.sub(r"</[A-Za-z]+\s*>", " ", content)
        fields: dict[str, str] = {}
        matches = list(_TOPIC_FIELD.finditer(content))
        for i, match in enumerate(matches):
            name = match.group(1).lower()
            end = matches[i + 1].start() if i + 1 < len(matches) else len(content)
            value = collapse(html.unescape(content[match.end() : end]))
            prefix = _PREFIXES.get(name)
            if prefix and value.lower().startswith(prefix):
                value = value[len(prefix) :].strip()
            fields.setdefault(name, value)
        if not fields.get("num"):
            problems.skipped(CorpusError(path, "topic has no <num>", line), None)
            continue
        wanted = ("title", "desc") if topic_field == "title+desc" else (topic_field,)
        text = " ".join(fields[f] for f in wanted if fields.get(f))
        if not text:
            problem = CorpusError(path, f"topic {fields['num']} has no <{'> or <'.join(wanted)}> text", line)
            problems.skipped(problem, number_id(fields["num"]))
            continue
        yield Query(number_id(fields["num"]), text, line)


def _tsv_topics(path: Path, problems: Problems) -> Iterator[Query]:
    for number, line in read_lines(path):
        if not line.strip():
            continue
        if "\t" not in line:
            problems.skipped(CorpusError(path, "malformed topic line: expected qid<TAB>text", number), None)
            continue
        query_id, text = line.split("\t", 1)
        yield Query(number_id(query_id), collapse(text), number)
