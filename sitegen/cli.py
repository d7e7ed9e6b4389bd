"""Command line: ``sitegen build``, ``sitegen validate``, ``sitegen rankers``."""

from __future__ import annotations

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


class _Progress:
    """A click progress bar on stderr, or nothing when ``--quiet``."""

    def __init__(self, total: int, label: str, quiet: bool) -> None:
        self._bar: Any = None
        if not quiet:
            self._bar = click.progressbar(length=total, label=label, file=click.get_text_stream("stderr"))
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
    help="Site folder to write; replaced only when the build succeeds.",
)
@click.option("--only", multiple=True, metavar="NAME", help="Build only this corpus (repeatable).")
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
@click.option("--quiet", "-q", is_flag=True, help="Print only errors.")
def build(
    corpora_dir: Path,
    out_dir: Path,
    only: tuple[str, ...],
    cache_dir: Path | None,
    external_runs: tuple[tuple[str, str, Path], ...],
    pg_dsn: str | None,
    require_postgres: bool,
    quiet: bool,
) -> None:
    """Run every ranker over every corpus, score it, and write the evidence and pages.

    \b
    Example:
        sitegen build
        sitegen build --only payments-support --out /tmp/report
        sitegen build --run es-bm25=payments-support:runs/es.trec
    """
    from sitegen.build import BuildOptions, build_site

    def log(message: str) -> None:
        if not quiet:
            click.echo(message, err=True)

    def progress(total: int, label: str) -> _Progress:
        return _Progress(total, label, quiet)

    options = BuildOptions(
        corpora_dir=corpora_dir,
        out_dir=out_dir,
        only=tuple(only),
        cache_dir=cache_dir,
        external_runs=tuple(external_runs),
        pg_dsn=pg_dsn or None,
        require_postgres=require_postgres,
    )
    try:
        result = build_site(options, log=log, progress=progress)
    except SitegenError as exc:
        raise click.ClickException(f"build failed: {exc}") from exc
    stats = result.embed_stats
    if stats.embedded == 0 and stats.cached:
        log(f"embedded nothing: all {stats.cached} texts came from the cache")
    timing = ", ".join(f"{k} {v:.1f}s" for k, v in result.seconds.items())
    log(f"wrote {out_dir}: {len(result.corpora)} corpora x {len(result.rankers)} rankers ({timing})")


@cli.command()
@click.argument(
    "site", required=False, default=Path("site"), type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--reembed",
    is_flag=True,
    help="Also re-embed the bundled inputs with the packaged model and compare with the stored vectors.",
)
def audit(site: Path, reembed: bool) -> None:
    """Verify a built site independently: checksums, rankings, fusion, metrics, derived tables.

    Runs the same standalone verifier that ships as SITE/audit.py, writes SITE/audit.json,
    and exits 1 if any check fails.

    \b
    Example:
        sitegen audit site
        sitegen audit --reembed site
    """
    from sitegen.audit import run_audit

    report = run_audit(site, echo=click.echo)
    failed = report["verdict"] != "pass"
    if reembed:
        from sitegen.reembed import REEMBED_TOLERANCE, reembed_bundle

        try:
            results = reembed_bundle(site)
        except SitegenError as exc:
            raise click.ClickException(f"cannot re-embed: {exc}") from exc
        for result in results:
            status = "PASS" if result.ok else "FAIL"
            weights = "" if result.weights_match else ", stored weights sha256 differs from the installed model's"
            click.echo(
                f"{status} reembed:{result.corpus}: {result.vectors} vectors, largest component difference "
                f"{result.max_abs_diff:.2e} ({result.worst}), tolerance {REEMBED_TOLERANCE:.0e}{weights}"
            )
            failed = failed or not result.ok
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
    from sitegen.corpus import load_corpus

    failed = False
    for folder in folders:
        try:
            corpus = load_corpus(folder)
        except SitegenError as exc:
            click.echo(f"error: {exc}", err=True)
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
        click.echo(f"{name}: {json.dumps(ranker.params(), sort_keys=True)}")
