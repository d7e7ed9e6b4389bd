"""The BEIR importer: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` (with a header line)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from sitegen.errors import CorpusError
from sitegen.inputs.corpus import README_FILE
from sitegen.inputs.importers.plan import (
    QRELS_HEADER,
    ImportOptions,
    ImportResult,
    Judgement,
    Plan,
    Problems,
    Query,
    grade_value,
    json_id,
    json_lines,
    json_text,
    jsonl_documents,
    read_lines,
)
from sitegen.inputs.importers.readme import command_line
from sitegen.inputs.importers.writer import run
from sitegen.inputs.problems import record_id

__all__ = ["import_beir"]


def import_beir(src_dir: Path | str, options: ImportOptions, split: str = "test") -> ImportResult:
    """Import a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv`` with a header line).

    The folder's ``README.md``, when it has one (the distributor's provenance and license note), is listed among
    the source files and quoted in the corpus README. Documents keep ``title``, ``text`` and ``metadata`` (when it
    is a non-empty object). Only queries the split's qrels judge relevant to some document are kept, so the other
    splits' queries are dropped and counted.
    """
    name, license_text, to, command = options.name, options.license_text, options.to, options.command
    overwrite, skip_unknown, keep_unanswerable = options.overwrite, options.skip_unknown, options.keep_unanswerable
    src = Path(src_dir)
    if not src.is_dir():
        raise CorpusError(src, "BEIR folder does not exist")
    corpus_path, queries_path, qrels_path = src / "corpus.jsonl", src / "queries.jsonl", src / "qrels" / f"{split}.tsv"
    for path in (corpus_path, queries_path, qrels_path):
        if not path.is_file():
            raise CorpusError(path, "required file is missing")
    readme_path = src / README_FILE
    sources = [("corpus.jsonl", corpus_path), ("queries.jsonl", queries_path), (f"qrels/{split}.tsv", qrels_path)]
    if readme_path.is_file():
        sources.append((README_FILE, readme_path))
    if command is None:
        command = command_line(
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
    plan = Plan(
        kind="BEIR",
        name=name,
        to=Path(to),
        sources=sources,
        origin=[src],
        documents=lambda problems: jsonl_documents(corpus_path, ("_id",), ("text",), problems),
        documents_path=corpus_path,
        queries=lambda problems: _jsonl_queries(queries_path, problems),
        queries_path=queries_path,
        qrels=lambda problems: _beir_qrels(qrels_path, problems),
        qrels_path=qrels_path,
        license_text=license_text,
        command=command,
        overwrite=overwrite,
        skip_unknown=skip_unknown,
        keep_unanswerable=keep_unanswerable,
        notes=[f"Split: `{split}` (judgements from `qrels/{split}.tsv`)."],
        source_readme=_source_readme(readme_path) if readme_path.is_file() else None,
    )
    return run(plan)


def _source_readme(path: Path) -> str:
    """The BEIR folder's README, read with the rules every input follows (UTF-8, a byte-order mark dropped)."""
    return "\n".join(line for _, line in read_lines(path))


def _jsonl_queries(path: Path, problems: Problems) -> Iterator[Query]:
    for number, obj in json_lines(path, problems):
        try:
            query_id = json_id(path, number, obj, ("_id",))
            text = json_text(path, number, obj, ("text",), required=True)
        except CorpusError as exc:
            problems.skipped(exc, record_id(obj))
            continue
        yield Query(query_id, text, number)


def _beir_qrels(path: Path, problems: Problems) -> Iterator[Judgement]:
    header = True
    for number, line in read_lines(path):
        if not line.strip():
            continue
        columns = [c.strip() for c in line.split("\t")]
        was_header, header = header, False
        try:
            if len(columns) != 3:
                raise CorpusError(
                    path, f"malformed qrels line: expected 3 tab-separated columns, found {len(columns)}", number
                )
            if was_header:
                if any(c.isdigit() for c in columns[2]):  # a grade, however malformed: not a header
                    raise CorpusError(path, f"first line must be a header such as {QRELS_HEADER!r}", number)
                continue
            yield Judgement(columns[0], columns[1], grade_value(path, number, columns[2]), number)
        except CorpusError as exc:
            problems.add(exc)
    if header:
        raise CorpusError(path, "qrels file is empty")
