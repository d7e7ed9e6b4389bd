"""``sitegen build``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sitegen.cli.common import CommandError, _ExternalRun, _ModelEntry, _os_problem, _Progress, _Retriever
from sitegen.cli.config import CONFIG_FILE, apply_config, load_config
from sitegen.errors import SitegenError
from sitegen.publish.redaction import REFERENCE_ABOVE
from sitegen.publish.size_guard import SiteLimits
from sitegen.wording import count

if TYPE_CHECKING:
    from sitegen.embedding.vectors import EmbedStats


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
    "--model",
    "models",
    multiple=True,
    type=_ModelEntry(),
    help="Add a dense ranker NAME ranking with MODEL's vectors (repeatable): a packaged model (minilm, mpnet), a "
    'folder, or a Hugging Face hub id read from the local cache; or a JSON entry {"name", "model", "query_prefix", '
    '"passage_prefix", "max_seq_length", "batch_size"}, as sitegen.toml\'s [[models]] gives it.',
)
@click.option(
    "--depth",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Hits kept per question for every ranker; the recorded command states it when it is not the default, "
    "and the audit holds every run to it.",
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
@click.option(
    "--strict-questions",
    is_flag=True,
    help="Fail the build when a question-set hygiene check flags a question (leaked into a passage, duplicated, "
    "equal to a title, labelled passage with an unlabelled near-duplicate) [default: a warning].",
)
@click.option(
    "--redact",
    multiple=True,
    metavar="NAME",
    help='Publish corpus NAME without its texts (repeatable), as "publish": "redacted" in its sitegen.json '
    "does: each passage, question and quote by its id and sha256, its vectors withheld; the audit verifies the "
    "rest, and audit.py --inputs DIR the texts.",
)
@click.option(
    "--publish-vectors",
    is_flag=True,
    help="Publish the vectors of redacted corpora all the same [default: withheld, as an embedding leaks its text].",
)
@click.option(
    "--reference",
    multiple=True,
    metavar="NAME",
    help="Hold corpus NAME's texts (corpus.jsonl, queries.jsonl, citations.jsonl, chunks) and vectors by reference "
    "(repeatable): the bundle keeps each file's sha256, size and source, its pages show passages by id, and "
    "audit.py --inputs DIR recomputes from the files [default: only files above --reference-above].",
)
@click.option(
    "--reference-above",
    type=click.IntRange(min=0),
    default=REFERENCE_ABOVE,
    show_default=True,
    metavar="BYTES",
    help="Hold any text input, chunk file or matrix of vectors larger than this by reference instead of copying it "
    "(the default keeps every copy under half of git's 100 MB file limit).",
)
@click.option(
    "--allow-oversize",
    is_flag=True,
    help="Publish a site over GitHub Pages' 1 GB or with a file over git's 100 MB, with a warning "
    "[default: such a build fails with the sizes, and the --out site stays as it was].",
)
@click.option(
    "--baseline",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="An earlier site or bundle to compare with: each corpus in both gets a Changes page (inputs, metrics "
    "with paired tests, questions that moved). Refused, before anything is written, unless every file matches "
    "its manifest's sha256.",
)
@click.option(
    "--device",
    type=click.Choice(["cpu", "cuda"]),
    default="cpu",
    show_default=True,
    help="Where the packaged model embeds texts: cuda needs an NVIDIA GPU and a CUDA build of torch. A GPU "
    "changes only a vector's last bits, like another CPU; vectors stored in the --out site (or --vectors-from) "
    "are reused as they are, so a rebuild gives the same bytes whichever device embedded new texts.",
)
@click.option(
    "--title",
    default=None,
    metavar="TEXT",
    help="The report's title on every page [default: sitegen.toml's title, else 'Retrieval evaluation report'].",
)
@click.option(
    "--description",
    default=None,
    metavar="TEXT",
    help="One paragraph under the title on the home page [default: sitegen.toml's description, else none].",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only errors.")
def build(
    corpora_dir: Path,
    out_dir: Path,
    force: bool,
    only: tuple[str, ...],
    ranker_names: tuple[str, ...],
    models: tuple[Any, ...],
    depth: int,
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
    strict_questions: bool,
    redact: tuple[str, ...],
    publish_vectors: bool,
    reference: tuple[str, ...],
    reference_above: int,
    allow_oversize: bool,
    baseline: Path | None,
    device: str,
    title: str | None,
    description: str | None,
    quiet: bool,
) -> None:
    """Run every ranker over every corpus, score it, and write the evidence and pages.

    Settings not given on the command line are read from sitegen.toml in the current folder when it exists
    (title, description, corpora, out, only, rankers, runs, retrievers, models; see `sitegen init`); flags override it.

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
        sitegen build --redact support-tickets --out /tmp/report
        sitegen build --reference msmarco --out /tmp/report
    """
    from sitegen.builder import BuildOptions, build_site
    from sitegen.publish.evidence import DEFAULT_TITLE
    from sitegen.rankers import DEFAULT_RANKERS

    def log(message: str) -> None:
        if not quiet:
            click.echo(message, err=True)

    def progress(total: int, label: str) -> _Progress:
        return _Progress(total, label, quiet)

    config_path = Path(CONFIG_FILE)
    if config_path.is_file():
        try:
            config = load_config(config_path)
        except SitegenError as exc:
            raise CommandError(f"build failed: {exc}") from exc
        log(f"settings from {config_path} (flags override them)")
        settings = apply_config(
            config,
            click.get_current_context(),
            {
                "corpora_dir": corpora_dir,
                "out_dir": out_dir,
                "only": only,
                "ranker_names": ranker_names,
                "models": models,
                "external_runs": external_runs,
                "retrievers": retrievers,
                "title": title,
                "description": description,
            },
        )
        corpora_dir, out_dir, only = settings["corpora_dir"], settings["out_dir"], settings["only"]
        ranker_names, external_runs = settings["ranker_names"], settings["external_runs"]
        models = settings["models"]
        retrievers, title, description = settings["retrievers"], settings["title"], settings["description"]
    options = BuildOptions(
        corpora_dir=corpora_dir,
        out_dir=out_dir,
        only=tuple(only),
        rankers=tuple(ranker_names) or DEFAULT_RANKERS,
        models=tuple(models),
        depth=depth,
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
        strict_questions=strict_questions,
        title=title or DEFAULT_TITLE,
        description=description or "",
        baseline=baseline,
        device=device,
        redact=tuple(redact),
        publish_vectors=publish_vectors,
        reference=tuple(reference),
        reference_above=reference_above,
        size_limits=SiteLimits(warn_only=allow_oversize),
    )
    try:
        result = build_site(options, log=log, progress=progress)
    except SitegenError as exc:
        raise click.ClickException(f"build failed: {exc}") from exc
    except OSError as exc:
        raise click.ClickException(f"build failed: {_os_problem(exc)}") from exc
    summary = embed_summary(result.embed_stats)
    if summary:
        log(summary)
    if result.drift is not None:
        drift = result.drift
        click.echo(
            f"re-embedded {count(drift.compared, 'text')} that {drift.source} stores: largest component difference "
            f"{drift.max_abs_diff:.3g}" + (f" ({drift.worst})" if drift.max_abs_diff else "")
        )
        if drift.comparison:
            click.echo(f"against {drift.source}: {drift.comparison}")
    timing = ", ".join(f"{k} {v:.1f}s" for k, v in result.seconds.items())
    log(
        f"wrote {out_dir}: {count(len(result.corpora), 'corpus', 'corpora')} x "
        f"{count(len(result.rankers), 'ranker')} run ({timing})"
    )


def embed_summary(stats: EmbedStats) -> str:
    """One line for the whole build: what was embedded and what was reused, or nothing when no ranker
    needed embeddings."""
    if not (stats.embedded or stats.cached or stats.frozen):
        return ""
    reused = [
        f"{count(n, 'vector')} {where}"
        for n, where in ((stats.frozen, "reused from the bundle"), (stats.cached, "from the cache"))
        if n
    ]
    embedded = f"embedded {count(stats.embedded, 'text')}" if stats.embedded else "embedded nothing"
    return f"{embedded}: " + ", ".join(reused) if reused else embedded
