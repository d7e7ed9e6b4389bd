"""The terminal report of ``sitegen diff``: :func:`format_diff` presents a
:class:`~sitegen.compare.diff_results.BundleDiff` (from :func:`sitegen.compare.diff.diff_bundles`);
it computes nothing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sitegen.compare.diff_results import BundleDiff, Reproduction
from sitegen.compare.repro import DEFAULT_PAIR, KTU_NOTE, RBO_P, PairEffect
from sitegen.publish.reader import is_finite_number
from sitegen.wording import count

__all__ = ["format_diff"]

_CAP = 10  # lines per terminal section
_QUERY_EXAMPLES = 5  # differing query ids named per run in the terminal


def _capped(lines: Sequence[str], cap: int = _CAP) -> list[str]:
    shown = [f"  {line}" for line in lines[:cap]]
    if len(lines) > cap:
        shown.append(f"  and {len(lines) - cap} more")
    return shown


def _differ(n: int) -> str:
    return "differs" if n == 1 else "differ"


def _rank(rank: int | None) -> str:
    return "not retrieved" if rank is None else str(rank)


def _value(value: Any) -> str:
    if value is None:
        return "absent"
    if is_finite_number(value):
        return f"{value:.6g}"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _summary(d: BundleDiff) -> str:
    parts = []
    if d.rankings_identical and d.metrics_identical:
        parts.append("identical rankings and metrics")
    else:
        if d.rankings_identical:
            parts.append("identical rankings")
        else:
            differing = [r for r in d.runs if not r.rankings_identical]
            queries = sum(len(r.differing_queries) for r in differing)
            text = f"rankings differ ({count(queries, 'query', 'queries')} in {count(len(differing), 'run')}"
            one_side = len(d.runs_only_in_a) + len(d.runs_only_in_b)
            parts.append(text + (f", {count(one_side, 'run')} in one bundle only)" if one_side else ")"))
        changed = sum(1 for m in d.metrics if m.changed)
        parts.append(
            "identical metrics" if d.metrics_identical else f"{count(changed, 'metric value')} {_differ(changed)}"
        )
    parts.append(f"{len(d.files.identical)} of {d.files.total} files identical")
    worst = d.largest_score_diff
    verdict = "within" if d.within_tolerance else "exceeds"
    if worst is None:
        parts.append(f"no shared hits to compare scores on, tolerance {d.tolerance:g}")
    else:
        at = worst.max_score_at
        where = f" ({worst.ranker}, {worst.corpus} {at.query_id})" if at is not None else ""
        parts.append(f"largest score difference {worst.max_score_diff:g}{where} {verdict} tolerance {d.tolerance:g}")
    return "; ".join(parts)


def format_diff(d: BundleDiff) -> str:
    """A short terminal report: the summary line, then one section per aspect, each capped at 10 lines."""
    out = [_summary(d), ""]

    f = d.files
    out.append(
        f"files: {len(f.identical)} of {f.total} identical, {len(f.differ)} {_differ(len(f.differ))}, "
        f"{len(f.only_in_a)} only in A, {len(f.only_in_b)} only in B"
    )
    out += _capped(
        [f"differ     {p}" for p in f.differ]
        + [f"only in A  {p}" for p in f.only_in_a]
        + [f"only in B  {p}" for p in f.only_in_b]
    )

    changed_runs = [r for r in d.runs if not r.rankings_identical or r.max_score_diff > 0 or r.params_differ]
    ranking_changes = sum(1 for r in d.runs if not r.rankings_identical)
    out.append(
        f"runs: {len(d.runs)} compared, {ranking_changes} with different rankings, "
        f"{len(d.runs_only_in_a)} only in A, {len(d.runs_only_in_b)} only in B"
    )
    lines = []
    for r in changed_runs:
        notes = []
        if r.differing_queries:
            shown = ", ".join(r.differing_queries[:_QUERY_EXAMPLES])
            more = len(r.differing_queries) - _QUERY_EXAMPLES
            notes.append(
                f"{len(r.differing_queries)} of {r.queries} queries ranked differently ({shown}"
                + (f" and {more} more)" if more > 0 else ")")
            )
        if r.max_score_diff > 0 and r.max_score_at is not None:
            at = r.max_score_at
            notes.append(f"largest score difference {r.max_score_diff:g} at {at.query_id} rank {at.rank} ({at.doc_id})")
        if r.params_differ:
            notes.append("parameters differ")
        lines.append(f"{r.corpus}/{r.ranker}: " + "; ".join(notes))
    lines += [f"only in A  {name}" for name in d.runs_only_in_a]
    lines += [f"only in B  {name}" for name in d.runs_only_in_b]
    out += _capped(lines)

    changed_metrics = [m for m in d.metrics if m.changed]
    out.append(
        f"metrics: {count(len(d.metrics), 'overall value')} compared, "
        f"{len(changed_metrics)} {_differ(len(changed_metrics))}"
    )
    out += _capped(
        [
            f"{m.corpus}/{m.ranker} {m.metric}: {_value(m.a)} -> {_value(m.b)}"
            + (f" ({m.delta:+.3g})" if m.delta is not None else "")
            for m in changed_metrics
        ]
    )

    out.append(f"first relevant rank: {count(len(d.moves), 'question')} moved")
    out += _capped([f"{m.corpus}/{m.ranker} {m.query_id}: {_rank(m.before)} -> {_rank(m.after)}" for m in d.moves])

    comparable = [e for e in d.embeddings if e.max_abs_diff is not None]
    largest = max((e.max_abs_diff for e in comparable if e.max_abs_diff is not None), default=0.0)
    out.append(
        f"embeddings: {count(len(d.embeddings), 'array')}, {len(comparable)} comparable, "
        f"largest component difference {largest:g}"
    )
    lines = []
    for e in d.embeddings:
        if e.max_abs_diff is None:
            why = "row ids differ" if not e.ids_match else f"shape {list(e.shape_a)} vs {list(e.shape_b)}"
            lines.append(f"{e.corpus}/{e.file}: not compared, {why}")
        elif e.max_abs_diff > 0:
            lines.append(f"{e.corpus}/{e.file}: {e.max_abs_diff:g} at {e.at_id}, component {e.at_component}")
    out += _capped(lines)

    out.append(f"manifest: {count(len(d.manifest), 'field')} {_differ(len(d.manifest))}")
    out += _capped([f"{c.field}: {_value(c.a)} -> {_value(c.b)}" for c in d.manifest])
    out += _reproduction_lines(d.reproduction)
    return "\n".join(out)


def _g(value: float) -> str:
    return f"{value:.4g}"


def _signed(value: float) -> str:
    return "0" if value == 0 else f"{value:+.4g}"


def _reproduction_lines(r: Reproduction) -> list[str]:
    """The reproduction section: RMSE/nRMSE, ER/ΔRI and RBO_ext, each a header and capped details."""
    out = [
        "reproduction: B as a rerun of A (measures after Breuer et al., SIGIR 2020)",
        f"  {KTU_NOTE}",
    ]

    defined = [s for s in r.scores if s.rmse is not None]
    moved = sorted((s for s in defined if s.rmse), key=lambda s: -(s.rmse or 0.0))
    largest = max((s.rmse or 0.0 for s in defined), default=0.0)
    flat = sum(1 for s in defined if s.nrmse is None)
    out.append(
        f"RMSE of per-question scores: {count(len(r.scores), '(ranker, metric) series', '(ranker, metric) series')}, "
        f"{len(moved)} above 0, largest {_g(largest)}; nRMSE = RMSE / (max - min) of A's per-question scores, "
        f"undefined for {flat} (range 0)"
    )
    lines = [
        f"{s.corpus}/{s.ranker} {s.metric}: RMSE {_g(s.rmse or 0.0)}, "
        + (f"nRMSE {_g(s.nrmse)}" if s.nrmse is not None else "nRMSE undefined")
        + f" over {count(s.questions, 'question')}"
        for s in moved
    ]
    lines += [f"{s.corpus}/{s.ranker} {s.metric}: {s.undefined}" for s in r.scores if s.rmse is None]
    out += _capped(lines)

    named = sorted({(e.baseline, e.advanced) for e in r.effects})
    corpora = len({e.corpus for e in r.effects})
    ers = [e.er for e in r.effects if e.er is not None]
    deltas = [e.delta_ri for e in r.effects if e.delta_ri is not None]
    undefined = sum(1 for e in r.effects if e.er is None or e.delta_ri is None)
    if r.effects:
        pairs = ", ".join(f"{base} -> {adv}" for base, adv in named)
        ranges = [f"ER {_g(min(ers))} to {_g(max(ers))}" if ers else "ER undefined"]
        ranges.append(f"ΔRI {_signed(min(deltas))} to {_signed(max(deltas))}" if deltas else "ΔRI undefined")
        out.append(
            f"effect ratio and ΔRI ({pairs}) on {count(corpora, 'corpus', 'corpora')}: "
            f"{count(len(r.effects), 'metric value')}, {', '.join(ranges)}, {undefined} undefined; "
            "ER = mean improvement in B / in A (1: reproduced), ΔRI = RI_A - RI_B (0: reproduced)"
        )
    else:
        out.append(
            "effect ratio and ΔRI: no ranker pair compared "
            f"(default {DEFAULT_PAIR[0]} -> {DEFAULT_PAIR[1]} needs per-question scores of both in both bundles)"
        )

    def effect_line(e: PairEffect) -> str:
        er = _g(e.er) if e.er is not None else f"undefined ({e.er_undefined})"
        delta = _signed(e.delta_ri) if e.delta_ri is not None else f"undefined ({e.delta_ri_undefined})"
        return f"{e.corpus} {e.baseline} -> {e.advanced} {e.metric}: ER {er}, ΔRI {delta}"

    off = [e for e in r.effects if e.er is not None and e.delta_ri is not None and (e.er != 1 or e.delta_ri != 0)]
    off.sort(key=lambda e: -abs((e.er or 0.0) - 1))
    lines = [effect_line(e) for e in off]
    lines += [effect_line(e) for e in r.effects if e.er is None or e.delta_ri is None]
    lines += [f"{p.corpus} {p.baseline} -> {p.advanced}: not compared, {p.reason}" for p in r.pairs_not_compared]
    out += _capped(lines)

    scored = [g for g in r.rankings if g.mean_rbo is not None]
    below = sorted((g for g in scored if g.mean_rbo != 1), key=lambda g: g.mean_rbo or 0.0)
    depth = max((g.depth for g in r.rankings), default=0)
    header = (
        f"RBO_ext of rankings (p = {RBO_P:g}, to the stored hits, at most {depth}; lists of different lengths "
        f"extrapolated): mean over questions for {count(len(r.rankings), 'run')}, {len(scored) - len(below)} at 1"
    )
    if below:
        header += f", lowest {_g(below[0].mean_rbo or 0.0)} ({below[0].corpus}/{below[0].ranker})"
    out.append(header)
    out += _capped(
        [
            f"{g.corpus}/{g.ranker}: {_g(g.mean_rbo or 0.0)} over {count(g.questions, 'question')}, "
            f"lowest {_g(g.min_rbo or 0.0)} at {g.min_at}"
            for g in below
        ]
    )
    return out
