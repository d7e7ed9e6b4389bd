"""``sitegen build``."""

from __future__ import annotations

from pathlib import Path

import click

from sitegen.cli.common import _ExternalRun, _os_problem, _Progress, _Retriever
from sitegen.errors import SitegenError


@click.command()
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
    "--retriever",
    "retrievers",
    multiple=True,
    type=_Retriever(),
    help="Call module:callable(question, k, filter) -> [(doc_id, score)] for every question of every corpus and "
    "score its answers as external run NAME (repeatable); imported from the current folder, as python -m does.",
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
@click.option(
    "--allow-edited",
    is_flag=True,
    help="Build a frozen corpus (one with FROZEN.json, see `sitegen freeze`) whose inputs changed since it was "
    "frozen, and flag it on its page and in corpus.json [default: such a build fails, naming the files].",
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
    retrievers: tuple[tuple[str, str], ...],
    pg_dsn: str | None,
    require_postgres: bool,
    allow_missing_postgres: bool,
    timings_dir: Path | None,
    vectors_from: Path | None,
    reembed: bool,
    allow_edited: bool,
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
        sitegen build --retriever mine=my_project.search:retrieve
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
        retrievers=tuple(retrievers),
        pg_dsn=pg_dsn or None,
        require_postgres=require_postgres,
        allow_missing_postgres=allow_missing_postgres,
        force=force,
        timings_dir=timings_dir,
        vectors_from=vectors_from,
        reembed=reembed,
        allow_edited=allow_edited,
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
