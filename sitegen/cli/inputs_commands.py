"""The commands on corpus inputs: ``sitegen validate``, ``import`` (beir, trec, smart) and ``freeze``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from sitegen.cli.common import _os_problem
from sitegen.errors import CorpusError, CorpusProblems, SitegenError
from sitegen.wording import count

#: Problems listed per file by ``sitegen validate`` before "... and N more".
PROBLEMS_PER_FILE = 20


@click.command()
@click.argument("folders", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--corpora",
    "corpora_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also validate every corpus in this folder (each sub-folder holding corpus.jsonl).",
)
def validate(folders: tuple[Path, ...], corpora_dir: Path | None) -> None:
    """Check corpus folders and report every problem, with file and line (at most 20 per file).

    \b
    Example:
        sitegen validate corpora/payments-support
        sitegen validate --corpora corpora
    """
    from sitegen.inputs.corpus import discover_corpora, validate_corpus
    from sitegen.inputs.vectors import read_supplied_vectors
    from sitegen.rankers.selection import rerank_entries

    if not folders and corpora_dir is None:
        raise click.UsageError("name a corpus folder, or pass --corpora FOLDER")
    failed = False

    def error(message: str) -> None:
        nonlocal failed
        failed = True
        click.echo(f"error: {message}", err=True)

    targets = list(folders)
    if corpora_dir is not None:
        try:
            targets += discover_corpora(corpora_dir)
        except SitegenError as exc:
            error(str(exc))
    for folder in targets:
        if folder.is_file():
            error(f"{folder}: is a file; pass the corpus folder that holds corpus.jsonl")
            continue
        held = _corpora_inside(folder)
        if held:
            names = ", ".join(f"{p.relative_to(folder)}/" for p in held)
            error(
                f"{folder}: this folder holds corpora, not a corpus: validate one of {names} "
                f"(sitegen validate {held[0]}), or pass --corpora {held[0].parent}"
            )
            continue
        try:
            corpus, problems = validate_corpus(folder)
        except OSError as exc:
            error(_os_problem(exc))
            continue
        for line in problem_lines(problems, PROBLEMS_PER_FILE):
            error(line)
        if corpus is not None:
            try:  # supplied vectors (embeddings/) are checked against the corpus's ids; reranks for shape
                supplied = read_supplied_vectors(corpus)
                rerank_entries(corpus)
            except CorpusError as exc:
                error(str(exc))
                continue
            vectors = f"; supplied vectors: {supplied.describe()}" if supplied is not None else ""
            click.echo(
                f"{folder}: ok ({count(len(corpus.documents), 'passage')}, {count(len(corpus.queries), 'question')}"
                f", kinds: {', '.join(corpus.kinds)}{vectors})"
            )
    if failed:
        raise SystemExit(1)


def _corpora_inside(folder: Path) -> list[Path]:
    """Corpus folders one or two levels down, when ``folder`` itself is not one: the corpora folder, or the
    project folder that holds it, passed by mistake. The nearer level wins."""
    from sitegen.inputs.corpus import CORPUS_FILE

    if not folder.is_dir() or (folder / CORPUS_FILE).exists():
        return []
    for pattern in (f"*/{CORPUS_FILE}", f"*/*/{CORPUS_FILE}"):
        found = sorted(p.parent for p in folder.glob(pattern) if p.is_file())
        if found:
            return found
    return []


def problem_lines(problems: list[CorpusError], limit: int) -> list[str]:
    """One line per problem, at most ``limit`` per file, then "FILE: ... and N more problems"."""
    by_file: dict[Path, list[CorpusError]] = {}
    for problem in problems:
        by_file.setdefault(problem.path, []).append(problem)
    lines = []
    for path, found in by_file.items():
        lines += [str(p) for p in found[:limit]]
        if len(found) > limit:
            lines.append(f"{path}: ... and {count(len(found) - limit, 'more problem')}")
    return lines


# ----------------------------------------------------------------------------------- sitegen import


def _import_failed(exc: SitegenError) -> click.ClickException:
    """The error an import ends with; every problem it found is listed first, as ``sitegen validate`` lists them
    (at most PROBLEMS_PER_FILE per file)."""
    if not isinstance(exc, CorpusProblems):
        return click.ClickException(f"import failed: {exc}")
    for line in problem_lines(exc.problems, PROBLEMS_PER_FILE):
        click.echo(f"error: {line}", err=True)
    return click.ClickException(f"import failed: {count(len(exc.problems), 'problem')} in the inputs, listed above")


def _import_options(command: Any) -> Any:
    """The options every ``sitegen import`` subcommand shares."""
    options = [
        click.option(
            "--to",
            type=click.Path(file_okay=False, path_type=Path),
            default=Path("corpora"),
            show_default=True,
            help="Folder to write the corpus folder <to>/<name>/ into.",
        ),
        click.option(
            "--license",
            "license_text",
            required=True,
            metavar="TEXT",
            help='The collection\'s license as you know it, recorded in the corpus README; --license "" records '
            '"license: not stated".',
        ),
        click.option(
            "--skip-unknown",
            is_flag=True,
            help="Drop (and count) qrels rows that name an unknown query or document instead of failing.",
        ),
        click.option(
            "--keep-unanswerable",
            is_flag=True,
            help='Keep queries that are judged but have no relevant document, as "answerable": false '
            "(default: drop and count them).",
        ),
        click.option("--overwrite", is_flag=True, help="Replace <to>/<name>/ if it exists."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _echo_import(result: Any) -> None:
    click.echo(
        f"wrote {result.folder}: {count(result.documents, 'document')}, {count(result.queries, 'query', 'queries')}, "
        f"{count(result.judged_pairs, 'judged pair')}; dropped {count(result.dropped_queries, 'query', 'queries')} "
        f"without a relevant document and {count(result.dropped_qrels, 'qrels row')} "
        f"(details in {result.folder / 'README.md'})"
    )


@click.group("import")
def import_group() -> None:
    """Convert an existing test collection (BEIR, TREC, SMART) into a corpus folder.

    Each importer writes <to>/<name>/ (corpus.jsonl, queries.jsonl, qrels/test.tsv and a README recording the
    source files' sha256, the command and the license), validates it, and only then moves it into place.
    Queries without a relevant document are dropped and counted.
    """


@import_group.command("beir")
@click.argument("src_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--name", default=None, help="Corpus name [default: the source folder's name].")
@click.option("--split", default="test", show_default=True, help="Import the judgements of qrels/<split>.tsv.")
@_import_options
def import_beir_command(
    src_dir: Path,
    name: str | None,
    split: str,
    to: Path,
    license_text: str,
    skip_unknown: bool,
    keep_unanswerable: bool,
    overwrite: bool,
) -> None:
    """Import a BEIR folder.

    SRC_DIR holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv (with a header line).

    \b
    Example:
        sitegen import beir ~/data/cranfield --to /tmp/corpora --license "research use, per the distributor"
    """
    from sitegen.inputs.importers import ImportOptions, import_beir

    try:
        result = import_beir(
            src_dir,
            ImportOptions(
                name or src_dir.resolve().name,
                license_text,
                to=to,
                overwrite=overwrite,
                skip_unknown=skip_unknown,
                keep_unanswerable=keep_unanswerable,
            ),
            split,
        )
    except SitegenError as exc:
        raise _import_failed(exc) from exc
    _echo_import(result)


@import_group.command("trec")
@click.argument("docs", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("topics", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("qrels", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--name", required=True, help="Corpus name (the folder under --to).")
@click.option(
    "--topic-field",
    type=click.Choice(["title", "desc", "title+desc"]),
    default="title",
    show_default=True,
    help="Which part of an SGML topic is the query text.",
)
@_import_options
def import_trec_command(
    docs: Path,
    topics: Path,
    qrels: Path,
    name: str,
    topic_field: str,
    to: Path,
    license_text: str,
    skip_unknown: bool,
    keep_unanswerable: bool,
    overwrite: bool,
) -> None:
    """Import a TREC collection.

    DOCS is JSONL or <DOC> SGML, TOPICS is qid<TAB>text lines or <top> SGML, QRELS is 'qid iter docid grade'
    lines. Formats are detected from each file's first character; .gz files are read as they are.

    \b
    Example:
        sitegen import trec docs.sgml.gz topics.301-350.txt qrels.301-350.txt --name trec6-mini --license "..."
    """
    from sitegen.inputs.importers import ImportOptions, import_trec

    try:
        result = import_trec(
            docs,
            topics,
            qrels,
            ImportOptions(
                name,
                license_text,
                to=to,
                overwrite=overwrite,
                skip_unknown=skip_unknown,
                keep_unanswerable=keep_unanswerable,
            ),
            topic_field,
        )
    except SitegenError as exc:
        raise _import_failed(exc) from exc
    _echo_import(result)


@import_group.command("smart")
@click.argument("docs", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("queries", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("qrels", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--name", required=True, help="Corpus name (the folder under --to).")
@click.option(
    "--query-ids",
    type=click.Choice(["number", "ordinal"]),
    default="number",
    show_default=True,
    help="Query ids: the .I numbers, or positions 1..n in file order (Cranfield's qrels use positions).",
)
@click.option(
    "--invert-grades",
    is_flag=True,
    help="For collections where 1 is the most relevant grade: g becomes max + 1 - g over the positive grades; "
    "grades <= 0 are dropped.",
)
@_import_options
def import_smart_command(
    docs: Path,
    queries: Path,
    qrels: Path,
    name: str,
    query_ids: str,
    invert_grades: bool,
    to: Path,
    license_text: str,
    skip_unknown: bool,
    keep_unanswerable: bool,
    overwrite: bool,
) -> None:
    """Import a SMART-format collection (Cranfield, CISI, MED, ...).

    DOCS and QUERIES are .I/.T/.A/.B/.W records, QRELS is 'qid docid [grade]' or 'qid iter docid grade' lines.

    \b
    Example:
        sitegen import smart cran.all.1400 cran.qry cranqrel --name cranfield \\
            --query-ids ordinal --invert-grades --license "..."
    """
    from sitegen.inputs.importers import ImportOptions, import_smart

    try:
        result = import_smart(
            docs,
            queries,
            qrels,
            ImportOptions(
                name,
                license_text,
                to=to,
                overwrite=overwrite,
                skip_unknown=skip_unknown,
                keep_unanswerable=keep_unanswerable,
            ),
            invert_grades,
            query_ids,
        )
    except SitegenError as exc:
        raise _import_failed(exc) from exc
    _echo_import(result)


# ------------------------------------------------------------------------------------ sitegen freeze


@click.command("freeze")
@click.argument("corpus_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--date",
    "date",
    default=None,
    metavar="YYYY-MM-DD",
    help="The date the inputs are frozen on, recorded in FROZEN.json [default: today]. The file is the same "
    "bytes for the same inputs and date.",
)
def freeze_command(corpus_dir: Path, date: str | None) -> None:
    """Freeze a corpus's question set: record each input's sha256 and the date in CORPUS_DIR/FROZEN.json.

    The inputs are the files the build reads (corpus.jsonl, queries.jsonl, qrels/test.tsv, sitegen.json,
    citations.jsonl, runs/*.trec), not README.md. A later build refuses the corpus if any of them changed,
    was added or was removed, naming them; `sitegen build --allow-edited` builds it anyway and flags it as
    edited on its page and in corpus.json. Run it again to freeze the edited inputs.

    \b
    Example:
        sitegen freeze corpora/payments-support
        sitegen freeze corpora/payments-support --date 2026-12-01
    """
    from sitegen.inputs.freeze import check_date, freeze_corpus

    if date is not None:
        try:
            check_date(date)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--date") from None
    try:
        path, frozen = freeze_corpus(corpus_dir, date)
    except SitegenError as exc:
        raise click.ClickException(f"freeze failed: {exc}") from exc
    except OSError as exc:
        raise click.ClickException(f"freeze failed: {_os_problem(exc)}") from exc
    click.echo(f"wrote {path}: {len(frozen.files)} inputs frozen on {frozen.date} ({', '.join(frozen.files)})")
