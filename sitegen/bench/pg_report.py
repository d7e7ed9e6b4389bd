"""The PostgreSQL cost test's summaries and its result as readable tables: percentiles, rows matched and the
hybrids per question kind, each ranker's latency, and the terminal report (:func:`format_report`)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "HNSW_AGREEMENT_DEPTH",
    "format_report",
    "hybrid_by_kind",
    "latency_row",
    "percentile",
    "rows_matched_by_kind",
    "write_json_atomic",
]

#: HNSW agreement: how many of the top vector hits must equal the exact ones (as sets).
HNSW_AGREEMENT_DEPTH = 10


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile, linear between the two nearest ranks (numpy's default; q = 50 is the median)."""
    if len(values) == 0:
        raise ValueError("no values")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def rows_matched_by_kind(kinds: Sequence[str], counts: Sequence[int]) -> list[dict[str, Any]]:
    """Per question kind, in order of first appearance: questions, median, p95 and max of the rows matched."""
    if len(kinds) != len(counts):
        raise ValueError(f"{len(kinds)} kinds for {len(counts)} counts")
    by_kind: dict[str, list[int]] = {}
    for kind, count in zip(kinds, counts, strict=True):
        by_kind.setdefault(kind, []).append(int(count))
    return [
        {"kind": kind, "questions": len(c), "median": percentile(c, 50), "p95": percentile(c, 95), "max": max(c)}
        for kind, c in by_kind.items()
    ]


def hybrid_by_kind(
    kinds: Sequence[str], matched: Sequence[int], postgres_ns: Sequence[int], local_ns: Sequence[int]
) -> list[dict[str, Any]]:
    """Per question kind: rows matched and both hybrids' p50. Sample j is question j mod len(kinds)
    (passes one after another, questions in order within a pass)."""
    postgres: dict[str, list[float]] = {}
    local: dict[str, list[float]] = {}
    for j, (pg, ours) in enumerate(zip(postgres_ns, local_ns, strict=True)):
        kind = kinds[j % len(kinds)]
        postgres.setdefault(kind, []).append(pg / 1e6)
        local.setdefault(kind, []).append(ours / 1e6)
    rows = []
    for kind in dict.fromkeys(kinds):
        counts = [c for k, c in zip(kinds, matched, strict=True) if k == kind]
        pg_p50, local_p50 = percentile(postgres[kind], 50), percentile(local[kind], 50)
        rows.append(
            {
                "kind": kind,
                "questions": len(counts),
                "rows_matched_median": percentile(counts, 50),
                "postgres_p50_ms": round(pg_p50, 4),
                "in_process_p50_ms": round(local_p50, 4),
                "p50_ratio": round(pg_p50 / local_p50, 3),
            }
        )
    return rows


def latency_row(ranker: str, where: str, what: str, samples_ns: Sequence[int]) -> dict[str, Any]:
    """One ranker's latency: p50 and p95 in milliseconds over its samples (nanoseconds), with where it ran and
    what one call does."""
    ms = [s / 1e6 for s in samples_ns]
    return {
        "ranker": ranker,
        "where": where,
        "what": what,
        "p50_ms": round(percentile(ms, 50), 4),
        "p95_ms": round(percentile(ms, 95), 4),
        "samples": len(ms),
    }


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Write JSON to a temporary file beside ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    cells = [
        [f"{c:,}" if isinstance(c, int) else (f"{c:.2f}" if isinstance(c, float) else str(c)) for c in r] for r in rows
    ]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = [
        "  "
        + "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True)))
    ]
    lines += [
        "  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in cells
    ]
    return lines


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def format_report(result: Mapping[str, Any]) -> str:
    """The result as a few readable tables, for the terminal."""
    m, b, h = result["machine"], result["build"], result["hybrid_ratio"]
    agreement = result["hnsw_agreement"]
    lines = [
        f"PostgreSQL cost test: {result['corpus']}, {result['rows']:,} rows ({result['corpus_rows']:,} passages + "
        f"{result['filler_rows']:,} filler, seed {result['filler_seed']}), {result['questions']} questions x "
        f"{result['runs']} runs after {result['warmups']} warm-up passes, top {result['depth']}",
        f"machine: {m['cpu_model']}, {m['logical_cpus']} logical CPUs, {m['memory_gb']} GB; Python {m['python']}, "
        f"numpy {m['numpy']}, PostgreSQL {m['postgres']}, pgvector {m['pgvector']}; other processes used "
        f"{result['other_processes_cpu_share']:.0%} of the CPUs while timing",
        f"build: COPY {b['copy_s']:.1f} s, HNSW {b['hnsw_build_s']:.1f} s (m {b['hnsw_m']}, ef_construction "
        f"{b['hnsw_ef_construction']}), GIN {b['gin_build_s']:.1f} s, ANALYZE {b['analyze_s']:.1f} s; "
        f"table {_mb(b['table_bytes'])}, HNSW {_mb(b['hnsw_bytes'])}, GIN {_mb(b['gin_bytes'])}",
        "",
        "rows matched by the OR query, per question kind:",
        *_table(
            ["kind", "questions", "median", "p95", "max"],
            [[r["kind"], r["questions"], r["median"], r["p95"], r["max"]] for r in result["rows_matched"]],
        ),
        "",
        "latency per question, ms:",
        *_table(
            ["ranker", "where", "p50", "p95", "samples"],
            [[r["ranker"], r["where"], r["p50_ms"], r["p95_ms"], r["samples"]] for r in result["latency"]],
        ),
        "in-process rankers timed alone, no PostgreSQL query between calls (p50 / p95 ms): "
        + ", ".join(f"{r['ranker']} {r['p50_ms']:.2f} / {r['p95_ms']:.2f}" for r in result["latency_in_process_alone"]),
        "",
        "hybrid p50 per question kind, ms:",
        *_table(
            ["kind", "rows matched (median)", "postgres", "in-process", "ratio"],
            [
                [r["kind"], r["rows_matched_median"], r["postgres_p50_ms"], r["in_process_p50_ms"], r["p50_ratio"]]
                for r in result["hybrid_by_kind"]
            ],
        ),
        "",
        f"hybrid: PostgreSQL two queries + fusion / in-process = {h['p50_ratio']:.1f}x at p50 "
        f"({h['p95_ratio']:.1f}x at p95; one SQL statement {h['sql_p50_ratio']:.1f}x; against the in-process hybrid "
        f"timed alone {h['p50_ratio_in_process_alone']:.1f}x); target >= "
        f"{h['target']:g}x: {'met' if h['met'] else 'NOT met'}",
        f"HNSW top {HNSW_AGREEMENT_DEPTH} = exact top {HNSW_AGREEMENT_DEPTH} (as sets): {agreement['same_top10']} "
        f"of {agreement['questions']} questions at ef_search {agreement['ef_search']}"
        + (f", recall@10 {agreement['recall_at_10']:.4f}" if "recall_at_10" in agreement else ""),
        "vector search p50 (ms, top 10 = exact as sets, recall@10): "
        + "; ".join(
            f"{row.get('search') or 'HNSW ef_search ' + str(row['ef_search'])} {row['p50_ms']:.2f} "
            f"({row['same_top10']} of {agreement['questions']}"
            + (f", {row['recall_at_10']:.4f})" if "recall_at_10" in row else ")")
            for row in result.get("hnsw_agreement_by_ef_search", ())
        ),
        result["label"],
    ]
    return "\n".join(lines)
