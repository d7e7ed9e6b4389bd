"""Command line: ``sitegen build``, ``audit``, ``validate``, ``rankers``, ``bench-pg``, ``diff``, ``import``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from sitegen import __version__
from sitegen.errors import SitegenError

__all__ = ["cli"]


class _ExternalRun(click.ParamType):
    """``NAME=CORPUS:PATH``: a TREC run file to score beside the built-in rankers."""

    name = "NAME=CORPUS:PATH"

    def convert(self, value: Any, param: Any, ctx: Any) -> tuple[str, str, Path]:
        if isinstance(value, tuple):
            return value
        name, eq, rest = str(value).partition("=")
        corpus, colon, path = rest.partition(":")
        if not (eq and colon and name and corpus and path):
            self.fail(f"{value!r} is not NAME=CORPUS:PATH (e.g. es-bm25=payments-support:runs/es.trec)", param, ctx)
        return (name, corpus, Path(path))


def _os_problem(exc: OSError) -> str:
    """An operating-system failure (a file where a folder should be, no permission, a full disk) as
    one line naming the path, instead of a traceback."""
    where = f"{exc.filename}: " if exc.filename is not None else ""
    return f"{where}{exc.strerror or exc}"


def _site_folder(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    """A folder without ``evidence/`` is the wrong folder, not a site whose audit failed."""
    if not (value / "evidence").is_dir():
        raise click.BadParameter(f"{value} has no evidence/ folder; pass a built site folder", ctx, param)
    return value


class _Progress:
    """A click progress bar on stderr, or nothing when ``--quiet``."""

    def __init__(self, total: int, label: str, quiet: bool) -> None:
        self._bar: Any = None
        if not quiet:
            self._bar = click.progressbar(length=total, label=label, file=sys.stderr)
            self._bar.__enter__()

    def update(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


@click.group()
@click.version_option(__version__, prog_name="sitegen")
def cli() -> None:
    """Turn frozen retrieval test collections into a verifiable evaluation report."""


@cli.command()
@click.option(
    "--corpora",
    "corpora_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("corpora"),
    show_default=True,
    help="Folder holding one sub-folder per corpus.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("site"),
    show_default=True,
    help="Site folder to write; replaced only when the build succeeds. Refused when it is, holds or sits in "
    "the corpora folder, and when it holds files but no earlier sitegen site (see --force).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an --out folder that holds files but is not a sitegen site (the corpora folder is always refused).",
)
@click.option(
    "--only",
    multiple=True,
    metavar="NAME",
    help="Build only this corpus (repeatable). The build replaces the whole --out folder, so it is refused "
    "when --out holds a site with other corpora: choose another --out.",
)
@click.option(
    "--ranker",
    "ranker_names",
    multiple=True,
    metavar="NAME",
    help="Run only this ranker, plus what it fuses (repeatable) [default: every ranker; see `sitegen rankers`].",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Embedding cache folder [default: $SITEGEN_CACHE or ~/.cache/sitegen].",
)
@click.option(
    "--run",
    "external_runs",
    multiple=True,
    type=_ExternalRun(),
    help="Score a TREC run file as ranker NAME on CORPUS (repeatable); files in CORPUS/runs/*.trec are added too.",
)
@click.option(
    "--pg-dsn",
    envvar="SITEGEN_PG_DSN",
    default=None,
    help="Connection string of a PostgreSQL server with pgvector for the pg-* rankers "
    "[default: $SITEGEN_PG_DSN, else a private server started from the pgserver package].",
)
@click.option(
    "--require-postgres",
    is_flag=True,
    help="Fail the build if PostgreSQL cannot be used, instead of marking the pg-* rows as not run.",
)
@click.option(
    "--allow-missing-postgres",
    is_flag=True,
    help="When PostgreSQL fails, publish the pg-* rows as not run even where the --out site has them "
    "[default: such a build fails, so no published row vanishes by accident].",
)
@click.option(
    "--timings",
    "timings_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder of benchmark results*.json for the Performance page (timings, kept out of the evidence) "
    "[default: bench/ beside the corpora folder; no page if it is absent].",
)
@click.option(
    "--vectors-from",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Site or bundle whose stored vectors are reused as frozen inputs when the model configuration "
    "and the text match [default: the --out site].",
)
@click.option(
    "--reembed",
    is_flag=True,
    help="Embed every text again instead of reusing stored vectors; report how far the vectors moved "
    "and whether any ranking or metric changed.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only errors.")
def build(
    corpora_dir: Path,
    out_dir: Path,
    force: bool,
    only: tuple[str, ...],
    ranker_names: tuple[str, ...],
    cache_dir: Path | None,
    external_runs: tuple[tuple[str, str, Path], ...],
    pg_dsn: str | None,
    require_postgres: bool,
    allow_missing_postgres: bool,
    timings_dir: Path | None,
    vectors_from: Path | None,
    reembed: bool,
    quiet: bool,
) -> None:
    """Run every ranker over every corpus, score it, and write the evidence and pages.

    Embeddings are frozen inputs: a text's vector is taken from the output site's bundle (or
    --vectors-from) when it was embedded with the same model configuration, so a rebuild on
    another CPU gives the same bytes; only new or changed texts are embedded.

    The --out folder is replaced in one atomic step when the build succeeds, and locked while it runs: a
    second build into the same folder fails at once. It is refused, before anything is loaded, when it is
    or holds the corpora folder, holds files but no sitegen site (--force overrides this one), or holds
    corpora that --only would drop; a build fails rather than drop pg-* rows the --out site has when
    PostgreSQL fails (--allow-missing-postgres publishes them as not run).

    \b
    Example:
        sitegen build
        sitegen build --only payments-support --out /tmp/report
        sitegen build --run es-bm25=payments-support:runs/es.trec
        sitegen build --reembed --out /tmp/reembedded --vectors-from site
    """
    from sitegen.build import BuildOptions, build_site
    from sitegen.rankers import DEFAULT_RANKERS

    def log(message: str) -> None:
        if not quiet:
            click.echo(message, err=True)

    def progress(total: int, label: str) -> _Progress:
        return _Progress(total, label, quiet)

    options = BuildOptions(
        corpora_dir=corpora_dir,
        out_dir=out_dir,
        only=tuple(only),
        rankers=tuple(ranker_names) or DEFAULT_RANKERS,
        cache_dir=cache_dir,
        external_runs=tuple(external_runs),
        pg_dsn=pg_dsn or None,
        require_postgres=require_postgres,
        allow_missing_postgres=allow_missing_postgres,
        force=force,
        timings_dir=timings_dir,
        vectors_from=vectors_from,
        reembed=reembed,
    )
    try:
        result = build_site(options, log=log, progress=progress)
    except SitegenError as exc:
        raise click.ClickException(f"build failed: {exc}") from exc
    except OSError as exc:
        raise click.ClickException(f"build failed: {_os_problem(exc)}") from exc
    stats = result.embed_stats
    if stats.embedded == 0 and (stats.cached or stats.frozen):
        log(f"embedded nothing: {stats.frozen} vectors reused from the bundle, {stats.cached} from the cache")
    if result.drift is not None:
        drift = result.drift
        click.echo(
            f"re-embedded {drift.compared} texts that {drift.source} stores: largest component difference "
            f"{drift.max_abs_diff:.3g}" + (f" ({drift.worst})" if drift.max_abs_diff else "")
        )
        if drift.comparison:
            click.echo(f"against {drift.source}: {drift.comparison}")
    timing = ", ".join(f"{k} {v:.1f}s" for k, v in result.seconds.items())
    log(f"wrote {out_dir}: {len(result.corpora)} corpora x {len(result.rankers)} rankers ({timing})")


@cli.command()
@click.argument(
    "site",
    required=False,
    default=Path("site"),
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    callback=_site_folder,
)
@click.option(
    "--reembed",
    is_flag=True,
    help="Also re-embed the bundled inputs with the packaged model and compare with the stored vectors.",
)
@click.option(
    "--pages",
    is_flag=True,
    help="Also re-render the pages and plots from the evidence with this sitegen's templates and compare "
    "them byte for byte with the site's.",
)
@click.option(
    "--postgres",
    is_flag=True,
    help="Also rerun the pg-* rankers on PostgreSQL from the bundled inputs and vectors and compare with "
    "the stored runs (same ids in the same order, scores within 1e-6).",
)
@click.option(
    "--pg-dsn",
    envvar="SITEGEN_PG_DSN",
    default=None,
    help="Connection string of a PostgreSQL server with pgvector for --postgres "
    "[default: $SITEGEN_PG_DSN, else a private server started from the pgserver package].",
)
def audit(site: Path, reembed: bool, pages: bool, postgres: bool, pg_dsn: str | None) -> None:
    """Verify a built site independently: checksums, rankings, fusion, metrics, derived tables.

    Runs the same standalone verifier that ships as SITE/audit.py, writes SITE/audit.json,
    and exits 1 if any check fails.

    \b
    Example:
        sitegen audit site
        sitegen audit --reembed site
        sitegen audit --pages site
        sitegen audit --postgres site
        sitegen audit --postgres --pg-dsn postgresql://localhost/scratch site
    """
    from sitegen.audit import run_audit

    report = run_audit(site, echo=click.echo)
    failed = report["verdict"] != "pass"
    if reembed:
        from sitegen.publish.bundle import REEMBED_TOLERANCE
        from sitegen.verify.reembed import reembed_bundle

        if any(c["name"] == "manifest" and c["status"] == "fail" for c in report["checks"]):
            raise click.ClickException(
                "cannot re-embed: the bundle failed its manifest check, so its vectors are not trusted"
            )
        try:
            results = reembed_bundle(site)
        except SitegenError as exc:
            raise click.ClickException(f"cannot re-embed: {exc}") from exc
        except OSError as exc:
            raise click.ClickException(f"cannot re-embed: {_os_problem(exc)}") from exc
        for result in results:
            status = "PASS" if result.ok else "FAIL"
            weights = "" if result.weights_match else ", stored weights sha256 differs from the installed model's"
            click.echo(
                f"{status} reembed:{result.corpus}: {result.vectors} vectors, largest component difference "
                f"{result.max_abs_diff:.2e} ({result.worst or 'all identical'}), "
                f"tolerance {REEMBED_TOLERANCE:.0e}{weights}"
            )
            failed = failed or not result.ok
    if pages:
        from sitegen.verify.pages import compare_pages

        if any(c["name"] == "manifest" and c["status"] == "fail" for c in report["checks"]):
            raise click.ClickException(
                "cannot compare pages: the bundle failed its manifest check, so its evidence is not trusted"
            )
        try:
            comparison = compare_pages(site)
        except SitegenError as exc:
            raise click.ClickException(f"cannot compare pages: {exc}") from exc
        except OSError as exc:
            raise click.ClickException(f"cannot compare pages: {_os_problem(exc)}") from exc
        if comparison.ok:
            click.echo(f"PASS re-render: {comparison.identical} files identical to a re-render from the evidence")
        else:
            click.echo(f"FAIL re-render: {comparison.summary()}")
            for line in comparison.details():
                click.echo(f"    {line}")
            failed = True
    if postgres:
        from sitegen.verify.postgres import SCORE_TOLERANCE, rerun_postgres

        if any(c["name"] == "manifest" and c["status"] == "fail" for c in report["checks"]):
            raise click.ClickException(
                "cannot rerun PostgreSQL: the bundle failed its manifest check, so its runs are not trusted"
            )
        try:
            reruns = rerun_postgres(site, pg_dsn or None)
        except SitegenError as exc:
            raise click.ClickException(f"cannot rerun PostgreSQL: {exc}") from exc
        except OSError as exc:
            raise click.ClickException(f"cannot rerun PostgreSQL: {_os_problem(exc)}") from exc
        if not reruns:
            click.echo("PASS postgres: no PostgreSQL runs in this bundle")
        for rerun in reruns:
            click.echo(
                f"{'PASS' if rerun.ok else 'FAIL'} postgres:{rerun.corpus}/{rerun.ranker}: {rerun.questions} "
                f"questions rerun, {rerun.ids_differ} with other ids or order, largest score difference "
                f"{rerun.max_score_diff:.1e} (tolerance {SCORE_TOLERANCE:.0e})"
                + (f"; first: {rerun.first_difference}" if rerun.first_difference else "")
            )
            failed = failed or not rerun.ok
    if failed:
        raise SystemExit(1)


@cli.command()
@click.argument("folders", nargs=-1, required=True, type=click.Path(path_type=Path))
def validate(folders: tuple[Path, ...]) -> None:
    """Check corpus folders and report the first problem in each, with file and line.

    \b
    Example:
        sitegen validate corpora/payments-support
    """
    from sitegen.inputs.corpus import load_corpus

    failed = False
    for folder in folders:
        if folder.is_file():
            click.echo(f"error: {folder}: is a file; pass the corpus folder that holds corpus.jsonl", err=True)
            failed = True
            continue
        try:
            corpus = load_corpus(folder)
        except SitegenError as exc:
            click.echo(f"error: {exc}", err=True)
            failed = True
            continue
        except OSError as exc:
            click.echo(f"error: {_os_problem(exc)}", err=True)
            failed = True
            continue
        click.echo(
            f"{folder}: ok ({len(corpus.documents)} passages, {len(corpus.queries)} questions, "
            f"kinds: {', '.join(corpus.kinds)})"
        )
    if failed:
        raise SystemExit(1)


@cli.command()
def rankers() -> None:
    """List the rankers a build runs, with their parameters.

    \b
    Example:
        sitegen rankers
    """
    import json

    from sitegen.rankers import RANKERS

    for name, factory in RANKERS.items():
        ranker = factory()
        click.echo(
            f"{name}: {json.dumps({'contract': ranker.contract.as_dict(), 'params': ranker.params()}, sort_keys=True)}"
        )


@cli.command("bench-pg")
@click.option(
    "--corpus",
    "corpus_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("corpora/payments-support"),
    show_default=True,
    help="Corpus folder whose passages and questions are loaded, with filler rows after them.",
)
@click.option(
    "--rows",
    type=click.IntRange(min=1),
    default=50_000,
    show_default=True,
    help="Rows in the table: the corpus's passages plus deterministic filler rows built from its words.",
)
@click.option(
    "--runs", type=click.IntRange(min=1), default=3, show_default=True, help="Measured passes over all questions."
)
@click.option(
    "--warmups",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Passes over all questions run first and not counted.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("bench/results-pg.json"),
    show_default=True,
    help="Timing file to write (JSON, atomically); left untouched when the run fails.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Embedding cache folder [default: $SITEGEN_CACHE or ~/.cache/sitegen].",
)
@click.option(
    "--pg-dsn",
    envvar="SITEGEN_PG_DSN",
    default=None,
    help="Connection string of a PostgreSQL server with pgvector "
    "[default: $SITEGEN_PG_DSN, else a private server started from the pgserver package].",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr; the result table is still printed.")
def bench_pg(
    corpus_dir: Path,
    rows: int,
    runs: int,
    warmups: int,
    out: Path,
    cache_dir: Path | None,
    pg_dsn: str | None,
    quiet: bool,
) -> None:
    """Measure what PostgreSQL costs at scale against the in-process rankers on the same rows.

    Loads the corpus plus deterministic filler rows into PostgreSQL, then records the HNSW and
    GIN build times, table and index sizes, the rows each question's OR query matches, and
    p50/p95 latency per ranker. Timings depend on the machine: they go to their own labelled
    file, never into the checksummed evidence. Not part of `sitegen build`.

    \b
    Example:
        sitegen bench-pg
        sitegen bench-pg --rows 5000 --runs 1 --out /tmp/pg.json
    """
    from sitegen.bench.pg_cost import format_report, run_pg_cost, write_json_atomic

    def log(message: str) -> None:
        if not quiet:
            click.echo(f"[{time.strftime('%H:%M:%S')}] {message}", err=True)

    command = f"sitegen bench-pg --corpus {corpus_dir} --rows {rows} --runs {runs} --warmups {warmups}"
    try:
        result = run_pg_cost(
            corpus_dir,
            rows=rows,
            runs=runs,
            warmups=warmups,
            pg_dsn=pg_dsn or None,
            cache_dir=cache_dir,
            command=command,
            progress=log,
        )
        write_json_atomic(out, result)
    except SitegenError as exc:
        raise click.ClickException(f"bench-pg failed: {exc}") from exc
    except OSError as exc:
        raise click.ClickException(f"bench-pg failed: cannot write {out}: {exc.strerror or exc}") from exc
    click.echo(format_report(result))
    log(f"wrote {out}")


class _Tolerance(click.ParamType):
    """A finite number >= 0: NaN would make every comparison false, infinity would accept anything."""

    name = "FLOAT"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        import math

        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number (e.g. 1e-6)", param, ctx)
        if not (math.isfinite(number) and number >= 0):
            self.fail(f"{value!r} is not a finite number >= 0 (e.g. 1e-6)", param, ctx)
        return number


@cli.command("diff")
@click.argument("a", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("b", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--tolerance",
    type=_Tolerance(),
    default=0.0,
    show_default=True,
    help="Largest absolute score difference on the same hit (same document at the same rank) that still "
    "counts as equal; 0 means exact.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the whole comparison as JSON (sorted keys) instead of text."
)
@click.option(
    "--exact",
    is_flag=True,
    help="Also exit 1 unless every evidence file is byte-identical, vectors and versions included "
    "(a rebuild that must reproduce a published bundle).",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="Print nothing but errors; the exit status alone says whether the bundles agree.",
)
def diff_command(a: Path, b: Path, tolerance: float, exact: bool, as_json: bool, quiet: bool) -> None:
    """Compare two built sites or evidence bundles.

    A and B are site folders (holding evidence/manifest.json) or evidence folders. Each bundle is
    first checked against its own manifest and refused if a file does not match. Reports the files
    that differ, the queries ranked differently, the largest score difference on the same hit, the
    overall metrics that changed, the questions whose first relevant passage moved, the largest
    embedding component difference and the manifest fields (versions) that differ. Exit 0 when
    rankings and metrics are identical and every score difference is within --tolerance (with
    --exact: and every file is identical), 1 when they differ or a bundle is refused, 2 on a usage
    error.

    \b
    Example:
        sitegen diff site /tmp/rebuilt-site
        sitegen diff --tolerance 1e-6 site /tmp/rebuilt-site/evidence
        sitegen diff --exact site /tmp/rebuilt-site
        sitegen diff --json old-site site > changes.json
    """
    import json

    from sitegen.diff import diff_bundles, format_diff

    if as_json and quiet:
        raise click.UsageError("--json and --quiet exclude each other: --quiet prints nothing, --json prints JSON.")
    try:
        result = diff_bundles(a, b, tolerance)
    except SitegenError as exc:
        raise click.ClickException(f"cannot compare: {exc}") from exc
    if as_json:
        click.echo(json.dumps(result.to_json(), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False))
    elif not quiet:
        click.echo(format_diff(result))
    files_differ = bool(result.files.differ or result.files.only_in_a or result.files.only_in_b or result.manifest)
    if not result.equivalent or (exact and files_differ):
        raise SystemExit(1)


# ----------------------------------------------------------------------------------- sitegen import


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
        f"wrote {result.folder}: {result.documents} documents, {result.queries} queries, "
        f"{result.judged_pairs} judged pairs; dropped {result.dropped_queries} queries without a relevant "
        f"document and {result.dropped_qrels} qrels rows (details in {result.folder / 'README.md'})"
    )


@cli.group("import")
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
    from sitegen.inputs.importers import import_beir

    try:
        result = import_beir(
            src_dir,
            name or src_dir.resolve().name,
            split,
            license_text=license_text,
            to=to,
            overwrite=overwrite,
            skip_unknown=skip_unknown,
            keep_unanswerable=keep_unanswerable,
        )
    except SitegenError as exc:
        raise click.ClickException(f"import failed: {exc}") from exc
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
    from sitegen.inputs.importers import import_trec

    try:
        result = import_trec(
            docs,
            topics,
            qrels,
            name,
            license_text=license_text,
            topic_field=topic_field,
            to=to,
            overwrite=overwrite,
            skip_unknown=skip_unknown,
            keep_unanswerable=keep_unanswerable,
        )
    except SitegenError as exc:
        raise click.ClickException(f"import failed: {exc}") from exc
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
    from sitegen.inputs.importers import import_smart

    try:
        result = import_smart(
            docs,
            queries,
            qrels,
            name,
            invert_grades,
            license_text=license_text,
            query_ids=query_ids,
            to=to,
            overwrite=overwrite,
            skip_unknown=skip_unknown,
            keep_unanswerable=keep_unanswerable,
        )
    except SitegenError as exc:
        raise click.ClickException(f"import failed: {exc}") from exc
    _echo_import(result)
