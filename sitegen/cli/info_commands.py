"""``sitegen rankers`` (what a build runs) and ``bench-pg`` (what PostgreSQL costs)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from sitegen.errors import SitegenError


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per ranker: name, contract and every parameter.")
def rankers(as_json: bool) -> None:
    """List the rankers a build runs: family, what they are made of, their key parameters.

    \b
    Example:
        sitegen rankers
        sitegen rankers --json
    """
    import json

    from sitegen.embedding.models import DEFAULT_SPEC, model_name
    from sitegen.rankers import RANKERS
    from sitegen.rankers.base import Family

    rows = []
    for name, factory in RANKERS.items():
        ranker = factory()
        contract, params = ranker.contract, ranker.params()
        if as_json:
            click.echo(json.dumps({"name": name, "contract": contract.as_dict(), "params": params}, sort_keys=True))
            continue
        keys = [f"{k}={params[k]}" for k in ("k1", "b", "k", "candidates_per_list", "ef_search") if k in params]
        if params.get("stemmed"):
            keys.append(f"stop list ({len(params.get('stop_words', []))} words), plurals stripped")
        if contract.family.value == "dense" or "ef_search" in params or "vector_list" in params:  # ranks by vectors
            keys.append(f"vectors of {model_name(contract.model or DEFAULT_SPEC)}")
        if contract.family is Family.RERANK:
            vectors = f" of {params['embedding']}'s vectors" if "embedding" in params else ""
            scorer = f"{params.get('scorer')}{vectors}"
            keys.append(f"reranks the top {params.get('candidates')} of {contract.components[0]} by {scorer}")
        elif contract.components:
            keys.append("fuses " + " + ".join(contract.components))
        if contract.filtered:
            keys.append("question's filter applied")
        rows.append((name, contract.family.value, "; ".join(keys)))
    if not as_json:
        width = max(len(r[0]) for r in rows)
        click.echo(f"{'ranker':<{width}}  {'family':<8}  key parameters")
        for name, family, keys in rows:
            click.echo(f"{name:<{width}}  {family:<8}  {keys}")


@click.command("bench-pg")
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
    from sitegen.bench.pg_cost import PgCostSettings, run_pg_cost
    from sitegen.bench.pg_report import format_report, write_json_atomic

    def log(message: str) -> None:
        if not quiet:
            click.echo(f"[{time.strftime('%H:%M:%S')}] {message}", err=True)

    command = f"sitegen bench-pg --corpus {corpus_dir} --rows {rows} --runs {runs} --warmups {warmups}"
    try:
        settings = PgCostSettings(
            rows=rows, runs=runs, warmups=warmups, pg_dsn=pg_dsn or None, cache_dir=cache_dir, command=command
        )
        result = run_pg_cost(corpus_dir, settings, progress=log)
        write_json_atomic(out, result)
    except SitegenError as exc:
        raise click.ClickException(f"bench-pg failed: {exc}") from exc
    except OSError as exc:
        raise click.ClickException(f"bench-pg failed: cannot write {out}: {exc.strerror or exc}") from exc
    click.echo(format_report(result))
    log(f"wrote {out}")
