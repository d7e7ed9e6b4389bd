"""The commands that compare built sites: ``sitegen diff`` and ``gate`` (record, check)."""

from __future__ import annotations

from pathlib import Path

import click

from sitegen.cli.common import _os_problem, _Tolerance
from sitegen.errors import SitegenError


@click.command("diff")
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
@click.option(
    "--pair",
    "pairs",
    multiple=True,
    metavar="BASELINE:ADVANCED",
    help="Rankers whose effect ratio and delta RI the reproduction section reports (repeatable); "
    "default bm25:rrf-dense-bm25 where both exist.",
)
def diff_command(
    a: Path, b: Path, tolerance: float, exact: bool, as_json: bool, quiet: bool, pairs: tuple[str, ...]
) -> None:
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
        sitegen diff --pair bm25:rrf-dense-bm25 original-site rerun-site
    """
    import json

    from sitegen.compare.diff import diff_bundles
    from sitegen.compare.diff_format import format_diff
    from sitegen.compare.repro import parse_pair

    try:
        parsed = [parse_pair(p) for p in pairs]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--pair") from None

    if as_json and quiet:
        raise click.UsageError("--json and --quiet exclude each other: --quiet prints nothing, --json prints JSON.")
    try:
        result = diff_bundles(a, b, tolerance, parsed)
    except SitegenError as exc:
        raise click.ClickException(f"cannot compare: {exc}") from exc
    if as_json:
        click.echo(json.dumps(result.to_json(), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False))
    elif not quiet:
        click.echo(format_diff(result))
    files_differ = bool(result.files.differ or result.files.only_in_a or result.files.only_in_b or result.manifest)
    if not result.equivalent or (exact and files_differ):
        raise SystemExit(1)


# -------------------------------------------------------------------------------------- sitegen gate


@click.group("gate")
def gate_group() -> None:
    """Regression gate: record a site's metric values, then check a later site against them.

    The gate file (JSON, one check per line: corpus, ranker, metric, expected value, precision, tolerance) is
    meant to be reviewed and committed beside the corpora. A check rounds both values to its precision: OK when
    equal, better (every metric is higher-is-better) or within the tolerance; OK* within 1.5 x the tolerance;
    FAIL otherwise, or when the site lacks the corpus, ranker or metric.
    """


@gate_group.command("record")
@click.argument("site", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Gate file to write (replaced atomically), e.g. corpora/gate.json.",
)
@click.option(
    "--precision",
    type=click.IntRange(0, 12),
    default=4,
    show_default=True,
    help="Decimals both values are rounded to before they are compared; expected values are recorded rounded.",
)
@click.option(
    "--tolerance",
    type=_Tolerance(),
    default=None,
    help="Largest drop (after rounding) that is still OK; up to 1.5 times it is OK* [default: one question's "
    "effect on each corpus's question set, 1/n rounded up, so a one-question change is OK].",
)
def gate_record(site: Path, out_file: Path, precision: int, tolerance: float | None) -> None:
    """Record the overall value of every corpus x ranker x metric in SITE as the expected values.

    SITE is a site folder (or its evidence folder); its bundle is checked against its manifest first and
    refused if a file does not match.

    \b
    Example:
        sitegen gate record site --out corpora/gate.json
        sitegen gate record site --out corpora/gate.json --precision 3 --tolerance 0.002
    """
    from sitegen.compare.gate import record_gate

    try:
        expectations = record_gate(site, out_file, precision, tolerance).expectations
    except SitegenError as exc:
        raise click.ClickException(f"gate record failed: {exc}") from exc
    except OSError as exc:
        raise click.ClickException(f"gate record failed: {_os_problem(exc)}") from exc
    corpora = sorted({e.corpus for e in expectations})
    rule = f"tolerance {tolerance:g}" if tolerance is not None else "tolerance: one question's effect per corpus"
    click.echo(f"wrote {out_file}: {len(expectations)} checks ({', '.join(corpora)}), precision {precision}, {rule}")


@gate_group.command("check")
@click.argument("gate_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("site", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--json", "as_json", is_flag=True, help="Print the results as a JSON list (sorted keys) instead of lines."
)
@click.option(
    "--allow-changed-inputs",
    is_flag=True,
    help="Report question sets (queries.jsonl, qrels/test.tsv) that differ from the recorded ones instead of "
    "failing: their scores are not the same measurement [default: a changed question set FAILs].",
)
def gate_check(gate_file: Path, site: Path, as_json: bool, allow_changed_inputs: bool) -> None:
    """Check SITE against the expected values in GATE_FILE; exit 1 on any FAIL.

    Prints one line per check, e.g.
    "[OK*] payments-support/bm25 ndcg@10 expected 0.4465 actual 0.4451 (delta 0.0014, tolerance 0.0010)",
    then a summary. SITE's bundle is checked against its manifest first and refused if a file does not match.

    \b
    Example:
        sitegen gate check corpora/gate.json site
        sitegen gate check corpora/gate.json /tmp/rebuilt --json > gate.json
    """
    import json

    from sitegen.compare.gate import check_gate, format_result, input_lines, result_json, summary_line

    try:
        outcome = check_gate(gate_file, site, allow_changed_inputs)
    except SitegenError as exc:
        raise click.ClickException(f"gate check failed: {exc}") from exc
    except OSError as exc:
        raise click.ClickException(f"gate check failed: {_os_problem(exc)}") from exc
    if as_json:
        results = [result_json(r) for r in outcome.results]
        click.echo(json.dumps(results, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False))
        for line in input_lines(outcome):  # the list holds the metric checks; the question sets go to stderr
            click.echo(line, err=True)
    else:
        for line in input_lines(outcome):
            click.echo(line)
        for result in outcome.results:
            click.echo(format_result(result))
        click.echo(summary_line(outcome, str(site)))
    if outcome.failed:
        raise SystemExit(1)


@click.command("pool")
@click.argument("site", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--depth", type=click.IntRange(1), default=10, show_default=True, help="How deep into each ranker's list to pool."
)
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The TSV to write: corpus, query_id, doc_id, rankers (ranker:rank), best_rank.",
)
@click.option("--corpus", "corpora", multiple=True, help="Pool only this corpus (repeatable) [default: every corpus].")
def pool_command(site: Path, depth: int, out_file: Path, corpora: tuple[str, ...]) -> None:
    """Write the unjudged pool: every passage a ranker put in its top DEPTH that no qrels line judges.

    Each row names the question, the passage and the rankers and ranks that surfaced it, ready for assessors;
    SITE's bundle is checked against its manifest first.

    \b
    Example:
        sitegen pool site --depth 10 --out to-judge.tsv
    """
    from sitegen.compare.pool import pool_tsv, unjudged_pool

    try:
        rows = unjudged_pool(site, depth, corpora)
        out_file.write_text(pool_tsv(rows), encoding="utf-8")
    except SitegenError as exc:
        raise click.ClickException(f"pool failed: {exc}") from exc
    except OSError as exc:
        raise click.ClickException(f"pool failed: {_os_problem(exc)}") from exc
    questions = len({(r.corpus, r.query_id) for r in rows})
    click.echo(f"wrote {out_file}: {len(rows)} unjudged passages for {questions} questions (top {depth})")
