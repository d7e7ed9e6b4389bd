"""``sitegen audit``."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from sitegen.cli.common import _os_problem, _site_folder
from sitegen.errors import SitegenError
from sitegen.wording import count


@click.command()
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
    "--sample",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="With --reembed: re-embed only N texts, drawn with a seed derived from the manifest's sha256, so the "
    "publisher cannot predict which [default: every text].",
)
@click.option(
    "--corpora",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="A trusted checkout's corpora folder: every input the bundle copied must equal its file there "
    "(FROZEN.json included) and the bundle must hold exactly its corpora; names each file that differs.",
)
@click.option(
    "--inputs",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="The files a redacted bundle withholds, in DIR/<corpus>/ as a corpus folder holds them (a checkout's "
    "corpora folder will do): each is checked against its sha256 (naming any passage or question that differs) "
    "and every ranking recomputed from them; withheld vectors not in DIR/<corpus>/embeddings/ are re-embedded "
    "from the texts with the packaged model.",
)
@click.option(
    "--record",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Write what this run verified (verdicts, tolerances, the sha256 of every file checked) to FILE; a "
    "build shows verification/last.json beside the corpora on its Reproducibility page.",
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
    "--rescore",
    is_flag=True,
    help="Also run every cross-encoder rerank stage's model again (a local folder, or a hub id from the local "
    "Hugging Face cache) on its stored (question, passage) pairs and compare with the stored scores (within 1e-5) "
    "and order.",
)
@click.option(
    "--pg-dsn",
    envvar="SITEGEN_PG_DSN",
    default=None,
    help="Connection string of a PostgreSQL server with pgvector for --postgres "
    "[default: $SITEGEN_PG_DSN, else a private server started from the pgserver package].",
)
def audit(
    site: Path,
    reembed: bool,
    sample: int | None,
    corpora: Path | None,
    inputs: Path | None,
    record: Path | None,
    pages: bool,
    postgres: bool,
    rescore: bool,
    pg_dsn: str | None,
) -> None:
    """Verify a built site independently: checksums, rankings, fusion, metrics, derived tables.

    Runs the same standalone verifier that ships as SITE/audit.py, writes SITE/audit.json,
    and exits 1 if any check fails.

    \b
    Example:
        sitegen audit site
        sitegen audit --reembed site
        sitegen audit --reembed --sample 200 site
        sitegen audit --corpora corpora site
        sitegen audit --inputs ~/private/corpora site
        sitegen audit --reembed --postgres --record verification/last.json site
        sitegen audit --pages site
        sitegen audit --postgres site
        sitegen audit --postgres --pg-dsn postgresql://localhost/scratch site
        sitegen audit --rescore site
    """
    from sitegen.audit import run_audit

    if sample is not None and not reembed:
        raise click.UsageError("--sample N chooses which texts --reembed re-embeds; add --reembed")
    with tempfile.TemporaryDirectory(prefix="sitegen-inputs-") as brought:
        if inputs is not None:
            from sitegen.verify.held import prepare_inputs

            try:
                made = prepare_inputs(site, inputs, Path(brought), log=lambda line: click.echo(line, err=True))
            except SitegenError as exc:
                raise click.ClickException(f"cannot prepare --inputs {inputs}: {exc}") from exc
            for corpus in made:
                click.echo(
                    f"re-embedded {corpus.corpus}'s withheld vectors from the texts in {inputs}: "
                    f"{count(corpus.passages, 'passage')}, {count(corpus.queries, 'question')}"
                )
        report = run_audit(site, echo=click.echo, corpora=corpora, inputs=Path(brought) if inputs else None)
    reembedded, reran = None, None
    failed = report["verdict"] != "pass"
    manifest_failed = any(c["name"] == "manifest" and c["status"] == "fail" for c in report["checks"])

    def extension(what: str, trusted: str, run: Callable[[], Any]) -> Any:
        """Run one check that needs sitegen installed, on a bundle whose files match its manifest."""
        if manifest_failed:
            raise click.ClickException(f"cannot {what}: the bundle failed its manifest check, so its {trusted}")
        try:
            return run()
        except SitegenError as exc:
            raise click.ClickException(f"cannot {what}: {exc}") from exc
        except OSError as exc:
            raise click.ClickException(f"cannot {what}: {_os_problem(exc)}") from exc

    if reembed:
        from sitegen.hashing import sha256_file
        from sitegen.publish.bundle import REEMBED_TOLERANCE
        from sitegen.publish.layout import MANIFEST
        from sitegen.verify.reembed import reembed_bundle, sample_seed

        results = extension("re-embed", "vectors are not trusted", lambda: reembed_bundle(site, sample=sample))
        seed = sample_seed(sha256_file(site / MANIFEST)) if sample is not None else None
        if sample is not None:
            click.echo(f"re-embedding a sample of {count(sample, 'text')}, drawn with seed {seed} (from the manifest)")
        reembedded = (results, sample, seed)
        for result in results:
            if result.not_checked is not None:
                vectors = count(result.vectors, "vector")
                click.echo(f"SKIP reembed:{result.label}: {vectors} not re-embedded: {result.not_checked}")
                continue
            status = "PASS" if result.ok else "FAIL"
            weights = "" if result.weights_match else ", stored weights sha256 differs from the installed model's"
            click.echo(
                f"{status} reembed:{result.label}: {count(result.vectors, 'vector')}, largest component difference "
                f"{result.max_abs_diff:.2e} ({result.worst or 'all identical'}), "
                f"tolerance {REEMBED_TOLERANCE:.0e}{weights}"
            )
            failed = failed or not result.ok
    if pages:
        from sitegen.verify.pages import compare_pages

        comparison = extension("compare pages", "evidence is not trusted", lambda: compare_pages(site))
        if comparison.ok:
            identical = count(comparison.identical, "file")
            click.echo(f"PASS re-render: {identical} identical to a re-render from the evidence")
        else:
            click.echo(f"FAIL re-render: {comparison.summary()}")
            for line in comparison.details():
                click.echo(f"    {line}")
            failed = True
    if postgres:
        from sitegen.verify.postgres import SCORE_TOLERANCE, rerun_postgres

        reruns = extension("rerun PostgreSQL", "runs are not trusted", lambda: rerun_postgres(site, pg_dsn or None))
        reran = reruns
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
    if rescore:
        from sitegen.verify.rescore import RESCORE_TOLERANCE, rescore_bundle

        rescored = extension("rescore", "runs are not trusted", lambda: rescore_bundle(site))
        if not rescored:
            click.echo("PASS rescore: no cross-encoder rerank in this bundle")
        for result in rescored:
            weights = "" if result.weights_match else ", the model folder's weights sha256 differs from the run's"
            verdict = "PASS" if result.ok else "FAIL"
            click.echo(
                f"{verdict} rescore:{result.corpus}/{result.ranker}: {count(result.pairs, 'pair')}"
                f" scored again with {result.model}, largest score difference {result.max_score_diff:.1e} (tolerance "
                f"{RESCORE_TOLERANCE:.0e}), {result.order_differs} questions in another order{weights}"
                + (f"; first: {result.first_difference}" if result.first_difference else "")
            )
            failed = failed or not result.ok
    if record is not None:
        from sitegen.verify.record import verification_record, write_verification

        written = verification_record(site, report, reembedded, reran)
        extension("write the record", "files are not trusted", lambda: write_verification(record, written))
        click.echo(f"recorded in {record}: {written['verdict']}")
    if failed:
        raise SystemExit(1)
