"""Benchmark timing files for the site's Performance page.

Timings describe one machine on one day, so they are kept apart from the evidence: the build
copies the committed ``bench/results*.json`` files to ``timings/`` on the site, outside the
manifest and the audit, and this module turns them into the rows the page shows. Three kinds are
read: the benchmark suite's results (``bench/run.py``), the PostgreSQL cost test
(``sitegen bench-pg``, ``"kind": "sitegen-pg-cost"``) and each ranker's latency (``bench/cost.py``,
``"kind": "sitegen-cost"``, shown on the corpus pages), and a fourth the build writes itself: each
``--retriever``'s call latency (``timings/retrievers-NAME.json``, ``"kind": "sitegen-retriever-latency"``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitegen.errors import BuildError
from sitegen.publish.layout import RETRIEVER_TIMINGS, TIMING_DEFAULT, TIMING_RESULTS, TIMINGS_DIR, timing_file
from sitegen.timer import BUILD_STAGES

__all__ = ["TimingFile", "copy_timing_files", "load_timing_files", "performance_view"]

PG_COST_KIND = "sitegen-pg-cost"
RETRIEVER_LATENCY_KIND = "sitegen-retriever-latency"  # sitegen.rankers.retriever.LATENCY_KIND
RANKER_COST_KIND = "sitegen-cost"  # sitegen.bench.cost.COST_KIND: shown on each corpus page, not here
_COST_KEYS = {"machine": dict, "corpora": list, "run_at": str}
_RETRIEVER_KEYS = {"retriever": str, "target": str, "k": int, "machine": dict, "corpora": list, "overall": dict}
_SUITE_KEYS = {"machine": dict, "targets": list, "sections": dict, "run_at": str}
_PG_KEYS = {
    "machine": dict,
    "build": dict,
    "rows_matched": list,
    "latency": list,
    "hybrid_ratio": dict,
    "rows": int,
    "corpus": str,
}
_LISTS_OF_OBJECTS = ("targets", "rows_matched", "latency", "corpora")
_JSON_NAMES = {dict: "object", list: "array", str: "string", int: "integer"}


@dataclass(frozen=True)
class TimingFile:
    """One benchmark results file: its name on the site and its parsed content."""

    name: str
    kind: str
    data: Mapping[str, Any]


def _require(path: Path, data: Mapping[str, Any], keys: Mapping[str, type]) -> None:
    """The keys the page reads, with the JSON types it reads them as."""
    missing = [k for k in keys if k not in data]
    if missing:
        raise BuildError(f"{path}: not a sitegen benchmark results file: missing {', '.join(map(repr, missing))}")
    for key, kind in keys.items():
        value = data[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise BuildError(f"{path}: {key!r} should be a JSON {_JSON_NAMES[kind]}")
        if key in _LISTS_OF_OBJECTS and not all(isinstance(item, dict) for item in value):
            raise BuildError(f"{path}: every entry of {key!r} should be a JSON object")


def _result_paths(folder: Path) -> list[Path]:
    """``results.json`` (the default benchmark run) first, then the others by name, then retriever latencies."""
    if not folder.is_dir():
        return []
    results = sorted(folder.glob(TIMING_RESULTS), key=lambda p: (p.name != TIMING_DEFAULT, p.name))
    return results + sorted(folder.glob(RETRIEVER_TIMINGS))


def load_timing_files(folder: Path) -> list[TimingFile]:
    """Every ``results*.json`` in ``folder`` (none if the folder is absent), checked for the keys the page reads."""
    files = []
    for path in _result_paths(folder):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise BuildError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise BuildError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg}") from None
        if not isinstance(data, dict):
            raise BuildError(f"{path}: expected a JSON object")
        kinds = {PG_COST_KIND: "pg-cost", RETRIEVER_LATENCY_KIND: "retriever", RANKER_COST_KIND: "cost"}
        kind = kinds.get(data.get("kind"), "suite")
        keys = {"pg-cost": _PG_KEYS, "retriever": _RETRIEVER_KEYS, "suite": _SUITE_KEYS, "cost": _COST_KEYS}
        _require(path, data, keys[kind])
        files.append(TimingFile(path.name, kind, data))
    return files


def copy_timing_files(folder: Path, site_dir: Path) -> None:
    """Copy the files byte for byte to ``site_dir/timings/`` so readers can download what the page shows."""
    target = site_dir / TIMINGS_DIR
    for path in _result_paths(folder):
        target.mkdir(exist_ok=True)
        shutil.copyfile(path, target / path.name)


def _number(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or value is None:
        return "yes" if value is True else ("no" if value is False else "-")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != 0 and abs(value) < 0.01:
            return f"{value:.2e}"
        return f"{value:,.{digits}f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, list):
        return ", ".join(_number(v, digits) for v in value)
    return str(value)


def _seconds(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _machine(machine: Mapping[str, Any]) -> str:
    memory = machine.get("memory_total_bytes")
    memory = memory / 2**30 if isinstance(memory, int) else machine.get("memory_gb")
    unit = "GiB" if isinstance(machine.get("memory_total_bytes"), int) else "GB"
    libraries = machine.get("libraries") or {}
    parts = [
        f"{machine.get('logical_cpus', '?')} logical CPUs",
        f"{memory:.1f} {unit} memory" if isinstance(memory, (int, float)) else "memory not recorded",
        str(machine.get("cpu_model", "CPU not recorded")),
        f"Python {machine.get('python', '?')}",
        f"numpy {machine.get('numpy') or libraries.get('numpy', '?')}",
    ]
    for name in ("postgres", "pgvector"):
        if machine.get(name):
            parts.append(f"{name} {machine[name]}")
    return ", ".join(parts)


def _suite_view(file: TimingFile) -> dict[str, Any]:
    data = file.data
    targets = [
        {
            "target": t.get("target", "?").replace("_", " "),
            "where": t.get("where", ""),
            "measured": _number(t.get("value")),
            "wanted": t.get("wanted", ""),
            "met": t.get("met"),
        }
        for t in data["targets"]
    ]
    build = data["sections"].get("build") or {}
    builds = [
        {
            "name": name,
            "wall": _number(build[name].get("wall_seconds"), 1),
            "stages": [_seconds((build[name].get("stage_seconds") or {}).get(s)) for s in BUILD_STAGES],
            "embedded": _number(build[name].get("embedded")),
            "recomputed": "; ".join(
                f"{family}: {n.get('computed', 0)} computed, {n.get('reused', 0)} reused"
                for family, n in (build[name].get("step_cache") or {}).items()
            )
            or "-",
        }
        for name in ("cold", "warm", "changed")
        if isinstance(build.get(name), dict)
    ]
    bm25 = []
    for dataset, numbers in ((data["sections"].get("bm25") or {}).get("datasets") or {}).items():
        index = numbers.get("index_seconds") or {}
        batch = numbers.get("batch_queries_per_second") or {}
        for system in ("sitegen", "bm25s", "rank-bm25"):
            if system in index:
                bm25.append(
                    {
                        "dataset": dataset,
                        "system": system,
                        "index_s": _number(index.get(system)),
                        "queries_per_s": _number(batch.get(system), 1),
                    }
                )
    return {
        "file": file.name,
        "href": timing_file(file.name),
        "run_at": data["run_at"],
        "command": data.get("command", ""),
        "machine": _machine(data["machine"]),
        "targets": targets,
        "met": sum(1 for t in targets if t["met"] is True),
        "stages": list(BUILD_STAGES),
        "builds": builds,
        "bm25": bm25,
    }


def _pg_view(file: TimingFile) -> dict[str, Any]:
    data = file.data
    build = data["build"]
    ratio = data["hybrid_ratio"]
    return {
        "file": file.name,
        "href": timing_file(file.name),
        "run_at": data.get("measured_at", ""),
        "command": data.get("command", ""),
        "machine": _machine(data["machine"]),
        "label": data.get("label", ""),
        "corpus": data["corpus"],
        "rows": _number(data["rows"]),
        "corpus_rows": _number(data.get("corpus_rows")),
        "filler_rows": _number(data.get("filler_rows")),
        "filler_seed": data.get("filler_seed"),
        "filler_vectors": data.get("filler_vectors", ""),
        "questions": _number(data.get("questions")),
        "runs": data.get("runs"),
        "warmups": data.get("warmups"),
        "depth": data.get("depth"),
        "build": [
            ("rows copied in", f"{_number(build.get('copy_s'), 2)} s"),
            ("HNSW index build", f"{_number(build.get('hnsw_build_s'), 2)} s"),
            ("GIN index build", f"{_number(build.get('gin_build_s'), 2)} s"),
            ("ANALYZE", f"{_number(build.get('analyze_s'), 2)} s"),
            ("table size", _megabytes(build.get("table_bytes"))),
            ("HNSW index size", _megabytes(build.get("hnsw_bytes"))),
            ("GIN index size", _megabytes(build.get("gin_bytes"))),
            (
                "HNSW parameters",
                f"m = {build.get('hnsw_m')}, ef_construction = {build.get('hnsw_ef_construction')}, "
                f"ef_search = {build.get('ef_search')}",
            ),
        ],
        "rows_matched": [
            {k: _number(row.get(k), 0) if k != "kind" else row.get(k) for k in ("kind", "questions", "median", "p95")}
            | {"max": _number(row.get("max"))}
            for row in data["rows_matched"]
        ],
        "filler_note": data.get("filler_note", ""),
        "latency_method": data.get("latency_method", ""),
        "latency": _latency_rows(data["latency"]),
        "latency_alone": _latency_rows(data.get("latency_in_process_alone") or []),
        "latency_alone_note": data.get("latency_in_process_alone_note", ""),
        "by_kind": [
            {
                "kind": row.get("kind"),
                "questions": _number(row.get("questions")),
                "rows_matched": _number(row.get("rows_matched_median"), 0),
                "postgres": _number(row.get("postgres_p50_ms"), 2),
                "in_process": _number(row.get("in_process_p50_ms"), 2),
                "ratio": _number(row.get("p50_ratio"), 1),
            }
            for row in data.get("hybrid_by_kind") or []
        ],
        "ratio": {
            "in_process": ratio.get("in_process"),
            "postgres": ratio.get("postgres"),
            "p50": _number(ratio.get("p50_ratio"), 1),
            "p95": _number(ratio.get("p95_ratio"), 1),
            "sql_p50": _number(ratio.get("sql_p50_ratio"), 1),
            "target": _number(ratio.get("target"), 1),
            "met": ratio.get("met"),
        },
        "hnsw": data.get("hnsw_agreement"),
        "hnsw_by_ef_search": [
            {
                "search": row.get("search") or f"HNSW, ef_search {row.get('ef_search')}",
                "same_top10": _number(row.get("same_top10")),
                "recall": _number(row.get("recall_at_10"), 4),
                "p50": _number(row.get("p50_ms"), 2),
            }
            for row in data.get("hnsw_agreement_by_ef_search") or []
            if "recall_at_10" in row
        ],
    }


def _latency_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "ranker": row.get("ranker"),
            "where": row.get("where"),
            "what": row.get("what", ""),
            "p50": _number(row.get("p50_ms"), 2),
            "p95": _number(row.get("p95_ms"), 2),
            "samples": _number(row.get("samples")),
        }
        for row in rows
    ]


def _retriever_view(file: TimingFile) -> dict[str, Any]:
    """One ``--retriever``'s call latency per corpus and over all corpora, in milliseconds."""
    data = file.data
    rows = [*data["corpora"], data["overall"] | {"corpus": "all corpora"}]
    return {
        "file": file.name,
        "href": timing_file(file.name),
        "retriever": data["retriever"],
        "target": data["target"],
        "k": data["k"],
        "run_at": data.get("measured_at", ""),
        "method": data.get("method", ""),
        "machine": ", ".join(
            f"{label}{data['machine'][key]}"
            for key, label in (("logical_cpus", "logical CPUs: "), ("platform", ""), ("python", "Python "))
            if data["machine"].get(key) is not None
        ),
        "rows": [
            {
                "corpus": row.get("corpus"),
                "questions": _number(row.get("questions")),
                "p50": _number(row.get("p50_ms"), 2),
                "p95": _number(row.get("p95_ms"), 2),
                "max": _number(row.get("max_ms"), 2),
                "total": _number(row.get("total_s"), 2),
            }
            for row in rows
        ],
    }


def _megabytes(value: Any) -> str:
    return f"{value / 2**20:,.1f} MiB" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def performance_view(files: Sequence[TimingFile]) -> dict[str, Any]:
    """The Performance page's rows, numbers already formatted: templates only place them."""
    return {
        "suites": [_suite_view(f) for f in files if f.kind == "suite"],
        "pg_costs": [_pg_view(f) for f in files if f.kind == "pg-cost"],
        "retrievers": [_retriever_view(f) for f in files if f.kind == "retriever"],
    }
