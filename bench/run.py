#!/usr/bin/env python
"""sitegen's benchmark suite: a script that measures, not a test that asserts.

    .venv/bin/python bench/run.py [--quick] [--million] [--out bench/results.json] [--sections bm25,dense,...]

Every comparison runs both sides in this process, alternating A B A B (one discarded
warm-up round, then --rounds rounds), and reports each side's median and the median
of the per-round ratios, because absolute times drift on a shared machine. Peak
memory of BM25 indexing is measured in a fresh subprocess per side. See bench/README.md.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("sitegen") is None:  # not installed: use the checkout this script is in
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from sitegen.bench.machine import cpu_ticks, machine, other_cpu_share  # noqa: E402
from sitegen.rankers.bm25 import BM25Search  # noqa: E402

SEED = 20240601
CRANFIELD = REPO.parent / "shared" / "collections" / "cranfield"
PG_CORPUS = REPO / "corpora" / "payments-support"
DEPTH = 20  # top-k everywhere in this benchmark

# Synthetic BM25 collections: a Zipf vocabulary sampled with numpy's default_rng(SEED).
SYNTH = {
    "vocabulary": 50_000,
    "zipf_exponent": 1.0,  # P(term of rank r) proportional to 1 / r**s over a finite vocabulary
    "passage_tokens": [50, 200],  # uniform, inclusive
    "query_tokens": [3, 10],  # uniform, inclusive, drawn from the same Zipf distribution
}
DENSE_DIM = 384
RANK_BM25_QUERIES = 200

TARGETS = {
    "bm25_throughput_vs_bm25s": ">= 1.0 (sitegen queries/s over bm25s queries/s, batched, every size)",
    "bm25_index_time_vs_bm25s": "<= 1.5 (sitegen index seconds over bm25s index seconds, every size)",
    "bm25_peak_memory_vs_bm25s": "<= 1.0 (sitegen peak RSS growth while indexing over bm25s's, every size)",
    "dense_single_query_bandwidth": ">= 0.70 (bytes of the matrix per single-query search over copy bandwidth)",
    "embedding_overhead": "<= 0.05 (sitegen Embedder.texts time over bare SentenceTransformer.encode, minus 1)",
    "warm_over_cold_build": "<= 0.15 (warm rebuild seconds over cold build seconds)",
    "one_passage_change_embeds": "== 1 (texts embedded after changing one passage)",
    "audit_over_warm_build": "<= 1.0 (python site/audit.py seconds over a warm `sitegen build`, both subprocesses)",
    "pg_hybrid_over_in_process_hybrid": ">= 5.0 (p50 of PostgreSQL's hybrid, two queries + fusion, over p50 of the "
    "in-process rrf-dense-bm25 on the same rows; 50,000 rows, 5,000 with --quick)",
    "scale_build_seconds": "<= 180 (a cold build of the scale corpus, audit included, in-process rankers, "
    "PostgreSQL off; section 7)",
    "scale_build_peak_memory": "<= 1.5e9 bytes (peak RSS of that build)",
    "scale_audit_over_rank": "<= 3.0 (the audit's recomputation of every run over the build's rank stage)",
    "significance_peak_memory": "<= 200 MiB (peak RSS growth of all paired tests and the Tukey HSD, 7,000 questions "
    "x 10 rankers x 4 metrics, 10,000 rounds)",
}


# --------------------------------------------------------------------------- helpers


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def alternate(sides: dict[str, Callable[[], Any]], rounds: int, warmup: int = 1) -> dict[str, list[Any]]:
    """Call every side once per round, in order (A B A B ...); warm-up rounds are discarded."""
    samples: dict[str, list[Any]] = {name: [] for name in sides}
    for r in range(warmup + rounds):
        for name, fn in sides.items():
            gc.collect()
            value = fn()
            if r >= warmup:
                samples[name].append(value)
    return samples


def ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """Per-round a/b: the two samples of a round ran back to back."""
    return [x / y for x, y in zip(a, b, strict=True)]


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 100:
            return f"{value:.1f}"
        return f"{value:.{digits}g}" if abs(value) < 1 else f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return str(value)


def print_table(title: str, headers: list[str], rows: list[list[Any]]) -> None:
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    print(f"\n## {title}")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    sys.stdout.flush()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rss_status() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


# --------------------------------------------------------------------------- BM25 data


def synthetic_collection(n_docs: int, n_queries: int) -> tuple[list[list[str]], list[list[str]], list[str]]:
    """Seeded Zipf passages and queries; the same (n_docs, n_queries) always gives the same tokens."""
    rng = np.random.default_rng(SEED)
    vocab = SYNTH["vocabulary"]
    words = np.array([f"t{i}" for i in range(vocab)], dtype=object)
    p = 1.0 / np.arange(1, vocab + 1, dtype=np.float64) ** SYNTH["zipf_exponent"]
    p /= p.sum()
    lo, hi = SYNTH["passage_tokens"]
    lengths = rng.integers(lo, hi + 1, size=n_docs)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    docs: list[list[str]] = []
    chunk = 20_000  # draw in chunks to bound the temporary arrays at the million-passage size
    for start in range(0, n_docs, chunk):
        stop = min(start + chunk, n_docs)
        flat = words[rng.choice(vocab, size=int(bounds[stop] - bounds[start]), p=p)]
        base = bounds[start]
        docs.extend(flat[bounds[i] - base : bounds[i + 1] - base].tolist() for i in range(start, stop))
    qlo, qhi = SYNTH["query_tokens"]
    qlengths = rng.integers(qlo, qhi + 1, size=n_queries)
    qflat = words[rng.choice(vocab, size=int(qlengths.sum()), p=p)]
    qbounds = np.concatenate([[0], np.cumsum(qlengths)])
    queries = [qflat[qbounds[i] : qbounds[i + 1]].tolist() for i in range(n_queries)]
    doc_ids = [f"d{i:07d}" for i in range(n_docs)]
    return docs, queries, doc_ids


def cranfield_collection() -> tuple[list[list[str]], list[list[str]], list[str]]:
    from sitegen.inputs.corpus import load_corpus, passage_text
    from sitegen.rankers.tokenize import tokenize

    corpus = load_corpus(CRANFIELD)
    docs = [tokenize(passage_text(d)) for d in corpus.documents]
    queries = [tokenize(q.text) for q in corpus.queries]
    return docs, queries, [d.doc_id for d in corpus.documents]


def load_dataset(name: str, n_queries: int) -> tuple[list[list[str]], list[list[str]], list[str]]:
    if name == "cranfield":
        return cranfield_collection()
    n_docs = int(name.split("-")[1])
    return synthetic_collection(n_docs, n_queries)


# --------------------------------------------------------------------------- BM25 sides


def sitegen_index(docs: list[list[str]]) -> Any:
    from sitegen.rankers.bm25 import build_bm25_index

    return build_bm25_index(docs, 1.2, 0.75)


def bm25s_index(docs: list[list[str]], dtype: str = "float32") -> Any:
    import bm25s

    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75, dtype=dtype)
    retriever.index(docs, show_progress=False)
    return retriever


def rank_bm25_index(docs: list[list[str]]) -> Any:
    from rank_bm25 import BM25Okapi

    return BM25Okapi(docs, k1=1.2, b=0.75)


def index_nbytes(side: str, index: Any) -> int:
    if side == "sitegen":
        arrays = ("starts", "doc_indices", "weights", "max_weights", "idf", "doc_norms", "dense_rows", "dense_tf")
        return int(sum(getattr(index, name).nbytes for name in arrays))
    if side == "bm25s":
        return int(sum(index.scores[k].nbytes for k in ("data", "indices", "indptr")))
    return 0


class Bm25Sides:
    """Single-query and batched top-20 for each implementation, timed from outside."""

    def __init__(self, indexes: dict[str, Any], id_key: np.ndarray, queries: dict[str, list[list[str]]]) -> None:
        self.indexes = indexes
        self.queries = queries
        self.search = BM25Search(indexes["sitegen"], id_key)  # what BM25Ranker.rank queries

    def one(self, side: str, query: list[str]) -> Any:
        index = self.indexes[side]
        if side == "sitegen":
            return self.search.top(query, DEPTH)
        if side == "bm25s":
            return index.retrieve([query], k=DEPTH, show_progress=False)
        scores = index.get_scores(query)  # rank-bm25: its own get_top_n order (argsort, descending)
        best = np.argsort(scores)[::-1][:DEPTH]
        return best, scores[best]

    def single_latencies(self, side: str) -> list[float]:
        out = []
        for q in self.queries[side]:
            t0 = time.perf_counter()
            self.one(side, q)
            out.append(time.perf_counter() - t0)
        return out

    def batch(self, side: str) -> tuple[float, Any]:
        index = self.indexes[side]
        queries = self.queries[side]
        t0 = time.perf_counter()
        if side == "bm25s":
            result = index.retrieve(queries, k=DEPTH, show_progress=False)
        else:
            result = [self.one(side, q) for q in queries]
        return time.perf_counter() - t0, result


def sitegen_hits(result: list[Any]) -> list[tuple[list[int], list[float]]]:
    return [([int(i) for i in best], [float(s) for s in scores]) for best, scores in result]


def compare_with_bm25s(
    ours: list[tuple[list[int], list[float]]], docs_b: np.ndarray, scores_b: np.ndarray, k1: float, tol: float
) -> dict[str, Any]:
    """sitegen's top-20 against bm25s's. bm25s's lucene score leaves out the constant (k1 + 1)
    factor, so sitegen's scores are divided by it; hits tied (within ``tol``) with the 20th
    score may be ordered or cut differently, so ids are compared strictly above that tie zone."""
    n = len(ours)
    identical_lists = set_agree = score_agree = count_mismatch = 0
    max_diff = 0.0
    for q in range(n):
        ids_a, sc_a = ours[q]
        sc_a = [s / (k1 + 1.0) for s in sc_a]
        keep = scores_b[q] > 0
        ids_b = [int(i) for i in docs_b[q][keep]]
        sc_b = [float(s) for s in scores_b[q][keep]]
        if ids_a == ids_b:
            identical_lists += 1
        if len(sc_a) == len(sc_b):
            diff = max((abs(x - y) for x, y in zip(sc_a, sc_b, strict=True)), default=0.0)
            max_diff = max(max_diff, diff)
            if diff <= tol:
                score_agree += 1
                cut = (sc_a[-1] if sc_a else 0.0) + tol
                above_a = {i for i, s in zip(ids_a, sc_a, strict=True) if s > cut}
                above_b = {i for i, s in zip(ids_b, sc_b, strict=True) if s > cut}
                if above_a == above_b and len(ids_a) == len(ids_b):
                    set_agree += 1
        else:
            count_mismatch += 1
    return {
        "queries": n,
        "tolerance": tol,
        "identical_id_lists": identical_lists,
        "scores_agree_within_tolerance": score_agree,
        "ids_agree_outside_ties": set_agree,
        "max_abs_score_difference": max_diff,
        "queries_with_a_different_number_of_positive_hits": count_mismatch,
        "agree": set_agree == n,
    }


def memory_child(side: str, dataset: str, n_queries: int) -> dict[str, Any]:
    """Run in a fresh interpreter: peak RSS growth of building one index over the same tokens."""
    if side == "bm25s":
        import bm25s  # noqa: F401
    elif side == "rank-bm25":
        import rank_bm25  # noqa: F401
    import sitegen.rankers.bm25  # noqa: F401

    docs, _, _ = load_dataset(dataset, n_queries)
    gc.collect()
    reset = True
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        reset = False
    before = rss_status()
    builder = {"sitegen": sitegen_index, "bm25s": bm25s_index, "rank-bm25": rank_bm25_index}[side]
    t0 = time.perf_counter()
    index = builder(docs)
    seconds = time.perf_counter() - t0
    after = rss_status()
    return {
        "side": side,
        "dataset": dataset,
        "rss_before_bytes": before["VmRSS"],
        "peak_growth_bytes": after["VmHWM"] - before["VmRSS"] if reset else None,
        "retained_growth_bytes": after["VmRSS"] - before["VmRSS"],
        "index_array_bytes": index_nbytes(side, index),
        "seconds": seconds,
        "peak_reset": reset,
    }


def run_memory_child(side: str, dataset: str, n_queries: int) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child-memory", side, dataset, str(n_queries)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"memory child {side} {dataset} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _bm25_in_process(dataset: str, n_queries: int, rounds: int, with_rank_bm25: bool) -> dict[str, Any]:
    from sitegen.rankers.base import doc_id_order

    t0 = time.perf_counter()
    docs, queries, doc_ids = load_dataset(dataset, n_queries)
    prep_seconds = time.perf_counter() - t0
    n_tokens = sum(map(len, docs))
    log(f"bm25 {dataset}: {len(docs):,} passages, {n_tokens:,} tokens, {len(queries)} queries ({prep_seconds:.1f}s)")
    out: dict[str, Any] = {
        "passages": len(docs),
        "tokens": n_tokens,
        "queries": len(queries),
        "query_terms_repeated": sum(len(set(q)) < len(q) for q in queries),
        "data_seconds": prep_seconds,
    }
    sides = ["sitegen", "bm25s"] + (["rank-bm25"] if with_rank_bm25 else [])
    builders = {"sitegen": sitegen_index, "bm25s": bm25s_index, "rank-bm25": rank_bm25_index}
    indexes: dict[str, Any] = {}

    def timed_build(side: str) -> Callable[[], float]:
        def run() -> float:
            indexes.pop(side, None)
            gc.collect()
            start = time.perf_counter()
            indexes[side] = builders[side](docs)
            return time.perf_counter() - start

        return run

    index_times = alternate({s: timed_build(s) for s in sides}, rounds)
    out["index_seconds"] = {s: median(v) for s, v in index_times.items()}
    out["index_seconds_samples"] = index_times
    out["index_ratio_vs_bm25s"] = median(ratios(index_times["sitegen"], index_times["bm25s"]))
    out["index_array_bytes"] = {s: index_nbytes(s, indexes[s]) for s in sides if s != "rank-bm25"}
    log(f"bm25 {dataset}: index seconds {out['index_seconds']}")

    # sitegen deduplicates query terms by definition (inside its timed path); bm25s and rank-bm25
    # count a repeated term again, so they get the deduplicated lists, prepared outside timing.
    unique = [list(dict.fromkeys(q)) for q in queries]
    # rank-bm25 scores every passage in Python for every term: it gets the first 200 queries.
    per_side = {"sitegen": queries, "bm25s": unique, "rank-bm25": unique[:RANK_BM25_QUERIES]}
    runner = Bm25Sides(indexes, doc_id_order(doc_ids), per_side)
    single = alternate({s: (lambda s=s: median(runner.single_latencies(s))) for s in sides}, rounds)
    out["single_query_latency_seconds"] = {s: median(v) for s, v in single.items()}
    out["single_query_latency_samples"] = single
    out["single_latency_ratio_vs_bm25s"] = median(ratios(single["sitegen"], single["bm25s"]))
    last: dict[str, Any] = {}

    def timed_batch(side: str) -> Callable[[], float]:
        def run() -> float:
            seconds, last[side] = runner.batch(side)
            return seconds

        return run

    batch = alternate({s: timed_batch(s) for s in sides}, rounds)
    out["batch_seconds"] = {s: median(v) for s, v in batch.items()}
    out["batch_queries_per_second"] = {s: len(per_side[s]) / median(v) for s, v in batch.items()}
    out["queries_per_side"] = {s: len(per_side[s]) for s in sides}
    out["batch_seconds_samples"] = batch
    # throughput ratio: sitegen queries/s over bm25s queries/s = bm25s seconds over sitegen seconds
    # (the two always run the same queries)
    out["throughput_ratio_vs_bm25s"] = median(ratios(batch["bm25s"], batch["sitegen"]))
    log(f"bm25 {dataset}: batch queries/s {out['batch_queries_per_second']}")

    ours = sitegen_hits(last["sitegen"])
    timed_b = last["bm25s"]
    out["agreement_with_bm25s_float32_as_timed"] = compare_with_bm25s(
        ours, timed_b.documents, timed_b.scores.astype(np.float64), 1.2, tol=1e-4
    )
    last.clear()
    indexes.clear()
    gc.collect()
    exact = bm25s_index(docs, dtype="float64")
    res = exact.retrieve(unique, k=DEPTH, show_progress=False)
    out["agreement_with_bm25s_float64"] = compare_with_bm25s(ours, res.documents, res.scores, 1.2, tol=1e-6)
    return out


def bench_bm25_dataset(dataset: str, n_queries: int, rounds: int, mem_rounds: int, with_rank_bm25: bool) -> dict:
    out = _bm25_in_process(dataset, n_queries, rounds, with_rank_bm25)
    gc.collect()
    mem_sides = ["sitegen", "bm25s"] + (["rank-bm25"] if with_rank_bm25 else [])
    mem = alternate({s: (lambda s=s: run_memory_child(s, dataset, n_queries)) for s in mem_sides}, mem_rounds, warmup=0)
    out["memory"] = {
        s: {
            "peak_growth_bytes": median([m["peak_growth_bytes"] for m in v]),
            "retained_growth_bytes": median([m["retained_growth_bytes"] for m in v]),
            "samples": v,
        }
        for s, v in mem.items()
    }
    out["peak_memory_ratio_vs_bm25s"] = median(
        ratios([m["peak_growth_bytes"] for m in mem["sitegen"]], [m["peak_growth_bytes"] for m in mem["bm25s"]])
    )
    log(f"bm25 {dataset}: peak memory ratio {out['peak_memory_ratio_vs_bm25s']:.3f}")
    return out


def section_bm25(args: argparse.Namespace) -> dict[str, Any]:
    plans: list[tuple[str, int, bool]] = [("cranfield", 0, True)]
    if args.quick:
        plans += [("synthetic-10000", 300, True)]
    else:
        plans += [("synthetic-10000", 1000, True), ("synthetic-100000", 1000, False)]
    if args.million:
        plans += [("synthetic-1000000", 300, False)]
    results: dict[str, Any] = {
        "synthetic": {"seed": SEED, "generator": "numpy.random.default_rng(seed).choice(p=zipf)", **SYNTH},
        "k1": 1.2,
        "b": 0.75,
        "depth": DEPTH,
        "bm25s_settings": "BM25(method='lucene', k1=1.2, b=0.75), default dtype float32, numpy backend, "
        "retrieve(k=20, n_threads=0)",
        "rank_bm25_settings": "BM25Okapi(k1=1.2, b=0.75, epsilon=0.25): different idf, timed only where it "
        "finishes in a minute or two",
        "datasets": {},
    }
    for dataset, n_queries, with_rank in plans:
        mem_rounds = 1 if dataset.endswith("1000000") else 2
        results["datasets"][dataset] = bench_bm25_dataset(dataset, n_queries, args.rounds, mem_rounds, with_rank)
    rows = []
    for dataset, r in results["datasets"].items():
        for side in ("sitegen", "bm25s", "rank-bm25"):
            if side not in r["index_seconds"]:
                continue
            mem = r["memory"].get(side, {})
            rows.append(
                [
                    f"{dataset} {side}",
                    r["index_seconds"][side],
                    (mem.get("peak_growth_bytes") or 0) / 1e6 if mem else None,
                    r["single_query_latency_seconds"][side] * 1e3,
                    r["batch_queries_per_second"][side],
                ]
            )
    print_table(
        "BM25: index, memory, latency, throughput (medians)",
        ["dataset side", "index s", "peak MB", "1-query ms", "batch q/s"],
        rows,
    )
    rows = []
    for dataset, r in results["datasets"].items():
        a64 = r["agreement_with_bm25s_float64"]
        a32 = r["agreement_with_bm25s_float32_as_timed"]
        rows.append(
            [
                dataset,
                r["throughput_ratio_vs_bm25s"],
                r["index_ratio_vs_bm25s"],
                r["peak_memory_ratio_vs_bm25s"],
                f"{a64['ids_agree_outside_ties']}/{a64['queries']}",
                f"{a64['identical_id_lists']}/{a64['queries']}",
                f"{a32['ids_agree_outside_ties']}/{a32['queries']}",
            ]
        )
    print_table(
        "BM25: sitegen vs bm25s (median per-round ratios; targets: throughput >= 1, index <= 1.5, memory <= 1)",
        ["dataset", "q/s ratio", "index ratio", "memory ratio", "agree f64", "same order f64", "agree f32"],
        rows,
    )
    return results


# --------------------------------------------------------------------------- dense


def _dense_size(n: int, rounds: int) -> dict[str, Any]:
    from sitegen.rankers.base import top_k
    from sitegen.rankers.dense import cosine_scores, dense_top_k

    rng = np.random.default_rng(SEED)
    matrix = rng.standard_normal((n, DENSE_DIM), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    n_queries = 50 if n >= 1_000_000 else 200
    queries = rng.standard_normal((n_queries, DENSE_DIM), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    id_key = np.arange(n, dtype=np.int64)
    target = np.empty_like(matrix)
    np.copyto(target, matrix)  # touch every page before timing
    chunk = 64
    log(f"dense {n:,} x {DENSE_DIM}: {matrix.nbytes / 1e6:.0f} MB")

    def copy() -> float:
        t0 = time.perf_counter()
        np.copyto(target, matrix)
        return time.perf_counter() - t0

    def read() -> float:
        t0 = time.perf_counter()
        matrix.max()  # a streaming read on one thread: a second, read-only yardstick
        return time.perf_counter() - t0

    def single() -> float:
        times = []
        for q in queries:
            t0 = time.perf_counter()
            dense_top_k(matrix, q, id_key, DEPTH)
            times.append(time.perf_counter() - t0)
        return median(times)

    def matvec_only() -> float:
        times = []
        for q in queries:
            t0 = time.perf_counter()
            cosine_scores(matrix, q)
            times.append(time.perf_counter() - t0)
        return median(times)

    def batched() -> float:
        t0 = time.perf_counter()
        for start in range(0, n_queries, chunk):
            block = queries[start : start + chunk] @ matrix.T
            for row in block:
                top_k(row, id_key, DEPTH, positive_only=False)
        return time.perf_counter() - t0

    samples = alternate(
        {"copy": copy, "read": read, "single": single, "matvec_only": matvec_only, "batched": batched}, rounds
    )
    nbytes = matrix.nbytes
    copy_bw = [2 * nbytes / t for t in samples["copy"]]
    single_fraction = [(nbytes / s) / c for s, c in zip(samples["single"], copy_bw, strict=True)]
    matvec_fraction = [(nbytes / s) / c for s, c in zip(samples["matvec_only"], copy_bw, strict=True)]
    read_fraction = [r / s for s, r in zip(samples["single"], samples["read"], strict=True)]
    first = queries[:chunk]
    block = first @ matrix.T
    same = sum(
        np.array_equal(dense_top_k(matrix, q, id_key, DEPTH)[0], top_k(row, id_key, DEPTH, False))
        for q, row in zip(first, block, strict=True)
    )
    return {
        "passages": n,
        "matrix_bytes": nbytes,
        "queries": n_queries,
        "copy_seconds": median(samples["copy"]),
        "copy_bandwidth_bytes_per_s": median(copy_bw),
        "single_query_seconds": median(samples["single"]),
        "single_query_bandwidth_bytes_per_s": nbytes / median(samples["single"]),
        "single_query_fraction_of_bandwidth": median(single_fraction),
        "read_seconds": median(samples["read"]),
        "read_bandwidth_bytes_per_s": nbytes / median(samples["read"]),
        "single_query_fraction_of_read_bandwidth": median(read_fraction),
        "matvec_only_seconds": median(samples["matvec_only"]),
        "matvec_only_fraction_of_bandwidth": median(matvec_fraction),
        "batched_seconds": median(samples["batched"]),
        "batched_queries_per_second": n_queries / median(samples["batched"]),
        "single_queries_per_second": 1.0 / median(samples["single"]),
        "batched_chunk": chunk,
        "batched_top20_equal_to_single": f"{same}/{len(first)}",
        "samples": samples,
    }


def section_dense(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [10_000] if args.quick else [50_000]
    if args.million:
        sizes.append(1_000_000)
    results: dict[str, Any] = {
        "dim": DENSE_DIM,
        "seed": SEED,
        "depth": DEPTH,
        "vectors": "standard normal float32 rows, normalised to unit length",
        "single_query": "sitegen.rankers.dense.dense_top_k: matrix @ query (BLAS) to bound the candidates, "
        "then their fixed-order float64 scores and top_k",
        "bandwidth": "copy: 2 x matrix bytes / np.copyto time (read + write); a search reads the matrix once; "
        "read (secondary yardstick): matrix bytes / matrix.max() time, one thread",
        "sizes": {},
    }
    for n in sizes:
        results["sizes"][str(n)] = _dense_size(n, args.rounds)
        gc.collect()
    rows = [
        [
            f"{int(k):,} x {DENSE_DIM}",
            r["copy_bandwidth_bytes_per_s"] / 1e9,
            r["read_bandwidth_bytes_per_s"] / 1e9,
            r["single_query_seconds"] * 1e3,
            r["single_query_fraction_of_bandwidth"],
            r["single_query_fraction_of_read_bandwidth"],
            r["matvec_only_fraction_of_bandwidth"],
            r["single_queries_per_second"],
            r["batched_queries_per_second"],
        ]
        for k, r in results["sizes"].items()
    ]
    print_table(
        "Dense exact top-20 (target: single query >= 0.70 of copy bandwidth)",
        [
            "matrix",
            "copy GB/s",
            "read GB/s",
            "1-query ms",
            "1-query/copy",
            "1-query/read",
            "matvec/copy",
            "1-query q/s",
            "batched q/s",
        ],
        rows,
    )
    return results


# --------------------------------------------------------------------------- embedding


def section_embedding(args: argparse.Namespace) -> dict[str, Any]:
    from sitegen.embedding.cache import Embedder, EmbeddingCache, cache_key
    from sitegen.embedding.model import EmbeddingModel
    from sitegen.inputs.corpus import load_corpus, passage_text

    corpus = load_corpus(REPO / "corpora" / "payments-support")
    texts = [passage_text(d) for d in corpus.documents]
    if args.quick:
        texts = texts[:24]
    model = EmbeddingModel()
    t0 = time.perf_counter()
    st = model._load()
    load_seconds = time.perf_counter() - t0
    import torch

    root = Path(tempfile.mkdtemp(prefix="sitegen-bench-embed-"))
    last: dict[str, Any] = {}

    def sitegen_side() -> float:
        folder = Path(tempfile.mkdtemp(dir=root))
        start = time.perf_counter()
        cache = EmbeddingCache(folder, cache_key(model.config))
        vectors, stats = Embedder(model, cache).texts(texts)
        cache.close()
        seconds = time.perf_counter() - start
        last["sitegen"] = (vectors, stats, folder)
        return seconds

    def bare_side() -> float:
        start = time.perf_counter()
        vectors = st.encode(
            texts,
            batch_size=model.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        seconds = time.perf_counter() - start
        last["bare"] = vectors
        return seconds

    rounds = max(args.rounds, 5) if not args.quick else args.rounds
    samples = alternate({"sitegen": sitegen_side, "bare": bare_side}, rounds)
    per_round = ratios(samples["sitegen"], samples["bare"])
    vectors, stats, folder = last["sitegen"]
    cache = EmbeddingCache(folder, cache_key(model.config))
    start = time.perf_counter()
    again, stats2 = Embedder(model, cache).texts(texts)
    cached_seconds = time.perf_counter() - start
    cache.close()
    bare = np.asarray(last["bare"], dtype=np.float32)
    shutil.rmtree(root, ignore_errors=True)
    result = {
        "texts": len(texts),
        "unique_texts": len(set(texts)),
        "source": "corpora/payments-support/corpus.jsonl, title + '\\n' + text (every passage)",
        "batch_size": model.batch_size,
        "torch_threads": torch.get_num_threads(),
        "model_load_seconds": load_seconds,
        "sitegen_seconds": median(samples["sitegen"]),
        "bare_encode_seconds": median(samples["bare"]),
        "texts_per_second_sitegen": len(texts) / median(samples["sitegen"]),
        "texts_per_second_bare": len(texts) / median(samples["bare"]),
        "overhead": median(per_round) - 1.0,
        "overhead_per_round": [r - 1.0 for r in per_round],
        "embedded_first_pass": stats.embedded,
        "second_pass_embedded": stats2.embedded,
        "second_pass_cached": stats2.cached,
        "second_pass_seconds": cached_seconds,
        "second_pass_vectors_identical": bool(np.array_equal(again, vectors)),
        "vectors_identical_to_bare": bool(np.array_equal(vectors, bare)),
        "max_abs_difference_to_bare": float(np.max(np.abs(vectors - bare))) if len(texts) else 0.0,
        "samples": samples,
    }
    print_table(
        "Embedding: sitegen Embedder.texts (empty cache) vs bare SentenceTransformer.encode (target overhead <= 5%)",
        ["texts", "batch", "sitegen s", "bare s", "overhead", "2nd pass embedded", "2nd pass s", "same vectors"],
        [
            [
                result["texts"],
                result["batch_size"],
                result["sitegen_seconds"],
                result["bare_encode_seconds"],
                f"{result['overhead'] * 100:+.1f}%",
                result["second_pass_embedded"],
                result["second_pass_seconds"],
                result["vectors_identical_to_bare"],
            ]
        ],
    )
    return result


# --------------------------------------------------------------------------- build


def _edit_one_passage(corpora: Path) -> str:
    """Append a sentence to the text of the first passage of payments-support; return its id."""
    path = corpora / "payments-support" / "corpus.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[0])
    record["text"] = record["text"].rstrip() + " This sentence was added by the benchmark."
    lines[0] = json.dumps(record, ensure_ascii=False) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    return str(record["_id"])


def _sitegen_command() -> list[str]:
    script = Path(sys.executable).parent / "sitegen"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from sitegen.cli import cli; sys.exit(cli())"]


def section_build(args: argparse.Namespace) -> dict[str, Any]:
    from sitegen.builder import BuildOptions, build_site

    root = Path(tempfile.mkdtemp(prefix="sitegen-bench-build-"))
    corpora = root / "corpora"
    shutil.copytree(REPO / "corpora", corpora)
    changed = root / "corpora-changed"
    shutil.copytree(REPO / "corpora", changed)
    changed_id = _edit_one_passage(changed)
    results: dict[str, Any] = {"corpora": sorted(p.name for p in corpora.iterdir() if p.is_dir())}

    def build(corpora_dir: Path, out: Path, cache: Path, only: tuple[str, ...] = ()) -> dict[str, Any]:
        start = time.perf_counter()
        res = build_site(BuildOptions(corpora_dir=corpora_dir, out_dir=out, cache_dir=cache, only=only))
        wall = time.perf_counter() - start
        return {
            "wall_seconds": wall,
            "stage_seconds": dict(res.seconds),
            "embedded": res.embed_stats.embedded,
            "cached": res.embed_stats.cached,
            "audit_verdict": res.audit_verdict,
            "rankers": list(res.rankers),
            "steps": res.steps,
        }

    # Warm-up: load the model, PostgreSQL and templates once, on the smallest corpus.
    log("build: warm-up on one small corpus")
    small = min(results["corpora"], key=lambda n: (corpora / n / "corpus.jsonl").stat().st_size)
    build(corpora, root / "site-warmup", root / "cache-warmup", (small,))
    build(corpora, root / "site-warmup", root / "cache-warmup", (small,))
    rounds = args.rounds
    samples: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": [], "changed": []}
    for r in range(rounds):
        cache = root / f"cache-{r}"
        log(f"build: round {r + 1}/{rounds}: cold")
        samples["cold"].append(build(corpora, root / "site", cache))
        log(f"build: round {r + 1}/{rounds}: warm")
        samples["warm"].append(build(corpora, root / "site", cache))
        log(f"build: round {r + 1}/{rounds}: one passage changed ({changed_id})")
        samples["changed"].append(build(changed, root / "site-changed", cache))
    warm_cache = root / "cache-0"

    def stage_medians(runs: list[dict[str, Any]]) -> dict[str, float]:
        keys = sorted({k for run in runs for k in run["stage_seconds"]})
        return {k: median([run["stage_seconds"].get(k, 0.0) for run in runs]) for k in keys}

    for kind, runs in samples.items():
        results[kind] = {
            "wall_seconds": median([run["wall_seconds"] for run in runs]),
            "stage_seconds": stage_medians(runs),
            "embedded": [run["embedded"] for run in runs],
            "cached": [run["cached"] for run in runs],
            "audit_verdicts": [run["audit_verdict"] for run in runs],
            "step_cache": runs[-1]["steps"],
        }
    results["rankers"] = samples["cold"][0]["rankers"]
    results["changed_passage"] = f"payments-support/{changed_id}"
    results["warm_over_cold"] = median(
        ratios([r["wall_seconds"] for r in samples["warm"]], [r["wall_seconds"] for r in samples["cold"]])
    )
    results["changed_over_cold"] = median(
        ratios([r["wall_seconds"] for r in samples["changed"]], [r["wall_seconds"] for r in samples["cold"]])
    )
    results["samples"] = samples

    # Standalone audit of the committed site vs a warm build, both as a user runs them: subprocesses.
    audit_cmd = [sys.executable, str(REPO / "site" / "audit.py"), str(REPO / "site")]
    build_cmd = [
        *_sitegen_command(),
        "build",
        "--corpora",
        str(corpora),
        "--out",
        str(root / "site-cli"),
        "--cache-dir",
        str(warm_cache),
        "--quiet",
    ]
    exits: dict[str, list[int]] = {"audit": [], "warm_build_cli": []}

    def timed(cmd: list[str], name: str) -> Callable[[], float]:
        def run() -> float:
            start = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=REPO)
            seconds = time.perf_counter() - start
            exits[name].append(proc.returncode)
            if proc.returncode != 0:
                log(f"{name} exited {proc.returncode}: {(proc.stderr or proc.stdout)[-500:]}")
            return seconds

        return run

    log("build: standalone audit vs warm CLI build")
    sub = alternate({"audit": timed(audit_cmd, "audit"), "warm_build_cli": timed(build_cmd, "warm_build_cli")}, rounds)
    committed = sorted(p.name for p in (REPO / "site" / "evidence").iterdir() if p.is_dir())
    results["audit_vs_warm_build"] = {
        "audit_command": "python site/audit.py site",
        "build_command": "sitegen build --corpora <copy of corpora/> --out <tmp> --cache-dir <warm cache> --quiet",
        "committed_site_corpora": committed,
        "audit_seconds": median(sub["audit"]),
        "warm_build_cli_seconds": median(sub["warm_build_cli"]),
        "audit_over_warm_build_cli": median(ratios(sub["audit"], sub["warm_build_cli"])),
        "audit_over_warm_build_in_process": median(sub["audit"]) / results["warm"]["wall_seconds"],
        "exit_codes": exits,
        "samples": sub,
    }
    shutil.rmtree(root, ignore_errors=True)

    stages = sorted(set(results["cold"]["stage_seconds"]) | set(results["warm"]["stage_seconds"]))
    rows = [
        [
            kind,
            results[kind]["wall_seconds"],
            *(results[kind]["stage_seconds"].get(s) for s in stages),
            ",".join(str(e) for e in results[kind]["embedded"]),
        ]
        for kind in ("cold", "warm", "changed")
    ]
    print_table(
        "Build (in-process build_site, medians; target warm/cold <= 0.15, one change embeds 1)",
        ["build", "total s", *stages, "embedded"],
        rows,
    )
    avw = results["audit_vs_warm_build"]
    print_table(
        "Standalone audit of the committed site vs warm build (subprocesses; target audit/build <= 1)",
        ["warm/cold", "changed/cold", "audit s", "warm CLI build s", "audit/build"],
        [
            [
                results["warm_over_cold"],
                results["changed_over_cold"],
                avw["audit_seconds"],
                avw["warm_build_cli_seconds"],
                avw["audit_over_warm_build_cli"],
            ]
        ],
    )
    return results


# --------------------------------------------------------------------------- PostgreSQL


def section_postgres(args: argparse.Namespace) -> dict[str, Any]:
    """sitegen.bench.pg_cost (the engine of `sitegen bench-pg`) at 50,000 rows with one warm-up and one measured
    pass, to stay near two minutes; `sitegen bench-pg` (3 measured passes) writes bench/results-pg.json."""
    from sitegen.bench.pg_cost import PgCostSettings, run_pg_cost
    from sitegen.bench.pg_report import format_report

    rows = 5_000 if args.quick else 50_000
    settings = PgCostSettings(
        rows=rows,
        runs=1,
        warmups=1,
        depth=DEPTH,
        pg_dsn=os.environ.get("SITEGEN_PG_DSN") or None,
        command=f"bench/run.py section postgres: run_pg_cost({PG_CORPUS.name}, rows={rows}, runs=1, warmups=1)",
    )
    result = run_pg_cost(PG_CORPUS, settings, progress=log)
    print("\n## PostgreSQL")
    print(format_report(result))
    return result


# --------------------------------------------------------------------------- significance memory

STATS_QUESTIONS, STATS_RANKERS = 7_000, 10
STATS_MEMORY_BOUND_BYTES = 200 * 2**20  # the bound stated in sitegen/scoring/statistics.py and docs/statistics.md


def stats_child(questions: int, rankers: int) -> dict[str, Any]:
    """Run in a fresh interpreter: peak RSS growth of the significance machinery on synthetic scores."""
    from sitegen.scoring.experiments import SIGNIFICANCE_METRICS, ExperimentSettings
    from sitegen.scoring.statistics import (
        paired_bootstrap_ci,
        paired_effect,
        paired_randomisation_test,
        randomised_tukey_hsd,
    )

    settings = ExperimentSettings()
    rng = np.random.default_rng(SEED)
    skill = np.linspace(0.3, 0.7, rankers)
    # per metric: hit-like 0/1 scores for hit@1 and hit@5, graded scores in [0, 1] for mrr@10 and ndcg@10
    scores = {
        m: (rng.random((questions, rankers)) < skill).astype(np.float64)
        if m.startswith("hit")
        else np.clip(rng.random((questions, rankers)) * skill * 1.5, 0, 1).round(3)
        for m in SIGNIFICANCE_METRICS
    }
    gc.collect()
    reset = True
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        reset = False
    before = rss_status()
    t0 = time.perf_counter()
    tests = 0
    for x in scores.values():
        for i in range(rankers):
            for j in range(i + 1, rankers):
                paired_randomisation_test(x[:, i], x[:, j], settings.seed, settings.rounds)
                paired_bootstrap_ci(x[:, i], x[:, j], settings.seed, settings.rounds)
                paired_effect(x[:, i], x[:, j])
                tests += 1
    paired_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    for x in scores.values():
        randomised_tukey_hsd(x, settings.seed, settings.rounds)
    tukey_seconds = time.perf_counter() - t1
    after = rss_status()
    return {
        "questions": questions,
        "rankers": rankers,
        "metrics": list(SIGNIFICANCE_METRICS),
        "rounds": settings.rounds,
        "paired_tests": tests,
        "rss_before_bytes": before["VmRSS"],
        "peak_growth_bytes": after["VmHWM"] - before["VmRSS"] if reset else None,
        "peak_reset": reset,
        "paired_seconds": paired_seconds,
        "tukey_seconds": tukey_seconds,
        "seconds": paired_seconds + tukey_seconds,
    }


def section_stats(args: argparse.Namespace) -> dict[str, Any]:
    """Paired tests (randomisation, bootstrap, wins/ties/losses) for all pairs x 4 metrics and the Tukey HSD per
    metric, on synthetic 7,000 questions x 10 rankers (700 with --quick), peak memory in a fresh subprocess."""
    questions = 700 if args.quick else STATS_QUESTIONS
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child-stats", str(questions), str(STATS_RANKERS)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"stats child failed:\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["memory_bound_bytes"] = STATS_MEMORY_BOUND_BYTES
    result["within_bound"] = result["peak_growth_bytes"] is not None and (
        result["peak_growth_bytes"] <= STATS_MEMORY_BOUND_BYTES
    )
    print_table(
        f"Significance machinery, {questions:,} questions x {STATS_RANKERS} rankers",
        ["paired tests", "paired s", "tukey s", "peak MiB", "bound MiB"],
        [
            [
                result["paired_tests"],
                result["paired_seconds"],
                result["tukey_seconds"],
                (result["peak_growth_bytes"] or 0) / 2**20,
                STATS_MEMORY_BOUND_BYTES / 2**20,
            ]
        ],
    )
    return result


# --------------------------------------------------------------------------- 7. scale

SCALE_SIZES = ((20_000, 200), (100_000, 1_000))  # passages x questions; --quick: (2,000, 20), (10,000, 100)
SCALE_RANKERS = ("bm25", "bm25-stem")  # the in-process lexical rankers; --scale-dense adds the supplied vectors'
SCALE_DENSE_RANKERS = ("dense", "rrf-dense-bm25", "rrf-dense-bm25-stem")
SCALE_WALL_SECONDS, SCALE_PEAK_BYTES, SCALE_AUDIT_OVER_RANK = 180.0, 1.5e9, 3.0


def _vm_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def scale_child(corpora: str, out: str, cache: str, rankers: str) -> dict[str, Any]:
    """Run in a fresh interpreter: one cold build (PostgreSQL off), then every audit check again, timed one by one."""
    import resource

    from sitegen import audit
    from sitegen.builder import BuildOptions, build_site

    start = time.perf_counter()
    options = BuildOptions(
        corpora_dir=Path(corpora), out_dir=Path(out), cache_dir=Path(cache), rankers=tuple(rankers.split(","))
    )
    res = build_site(options)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak = _vm_kib("VmHWM") * 1024
    bundle, checks = audit.Bundle(Path(out)), {}
    for corpus in sorted(p.name for p in Path(corpora).iterdir() if p.is_dir()):
        for prefix, fn in audit.CORPUS_CHECKS:
            t0 = time.perf_counter()
            audit._run_check(prefix, fn, bundle, corpus)
            checks[prefix] = checks.get(prefix, 0.0) + time.perf_counter() - t0
        for prefix, fn in audit.RANKER_CHECKS:
            for ranker in bundle.rankers(corpus):
                t0 = time.perf_counter()
                audit._run_check(prefix, fn, bundle, corpus, ranker)
                checks[f"{prefix}:{ranker}"] = time.perf_counter() - t0
    return {
        "wall_seconds": wall,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "stage_seconds": dict(res.seconds),
        "peak_rss_bytes": peak,
        "audit_verdict": res.audit_verdict,
        "rankers": list(res.rankers),
        "audit_check_seconds": checks,
    }


def section_scale(args: argparse.Namespace) -> dict[str, Any]:
    """Cold builds of two synthetic scale corpora (bench/scale_corpus.py), each in a fresh subprocess with
    PostgreSQL off: per-stage seconds, peak RSS, site size, median question page; the linear-growth ratios."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import scale_corpus

    sizes = ((2_000, 20), (10_000, 100)) if args.quick else SCALE_SIZES
    rankers = SCALE_RANKERS + (SCALE_DENSE_RANKERS if args.scale_dense else ())
    root = Path(tempfile.mkdtemp(prefix="sitegen-bench-scale-"))
    results: dict[str, Any] = {"seed": scale_corpus.SEED, "rankers": list(rankers), "sizes": {}}
    for passages, questions in sizes:
        corpora = root / f"corpora-{passages}" / "scale"
        t0 = time.perf_counter()
        scale_corpus.generate(corpora, passages, questions, vectors=args.scale_dense)
        generate_seconds = time.perf_counter() - t0
        out, cache = root / f"site-{passages}", root / f"cache-{passages}"
        log(f"scale: {passages:,} x {questions:,}: build ({','.join(rankers)})")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child-scale", str(corpora.parent), str(out)]
        proc = subprocess.run([*cmd, str(cache), ",".join(rankers)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"scale child failed:\n{proc.stderr[-3000:]}")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        pages = sorted(p.stat().st_size for p in (out / "corpora" / "scale" / "questions").rglob("*.html"))
        r |= {
            "generate_seconds": generate_seconds,
            "input_bytes": sum(p.stat().st_size for p in corpora.rglob("*") if p.is_file()),
            "site_bytes": sum(p.stat().st_size for p in out.rglob("*") if p.is_file()),
            "evidence_bytes": sum(p.stat().st_size for p in (out / "evidence").rglob("*") if p.is_file()),
            "question_pages": len(pages),
            "median_question_page_bytes": median(pages),
        }
        stages, checks = r["stage_seconds"], r["audit_check_seconds"]
        recompute = sum(v for k, v in checks.items() if k.startswith("run:"))
        r["audit_over_rank"] = stages.get("audit", 0.0) / max(stages.get("rank", 0.0), 1e-9)
        r["audit_run_checks_over_rank"] = recompute / max(stages.get("rank", 0.0), 1e-9)
        results["sizes"][f"{passages}x{questions}"] = r
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(corpora.parent, ignore_errors=True)
    small, large = (results["sizes"][f"{p}x{q}"] for p, q in sizes)
    work = (sizes[1][0] * sizes[1][1]) / (sizes[0][0] * sizes[0][1])
    results["work_ratio"] = work  # passages x questions, large over small
    results["stage_growth"] = {
        k: large["stage_seconds"][k] / small["stage_seconds"][k]
        for k in large["stage_seconds"]
        if k != "embed" and small["stage_seconds"].get(k, 0.0) > 0.05
    }
    results["stage_growth_over_work"] = {k: v / work for k, v in results["stage_growth"].items()}
    shutil.rmtree(root, ignore_errors=True)
    stage_names = sorted({k for r in results["sizes"].values() for k in r["stage_seconds"]})
    print_table(
        f"Scale builds ({', '.join(rankers)}; PostgreSQL off)",
        ["size", "wall s", "cpu s", *stage_names, "peak MB", "site MB", "median q page KB"],
        [
            [
                size,
                r["wall_seconds"],
                r["cpu_seconds"],
                *(r["stage_seconds"].get(k, 0.0) for k in stage_names),
                r["peak_rss_bytes"] / 1e6,
                r["site_bytes"] / 1e6,
                r["median_question_page_bytes"] / 1e3,
            ]
            for size, r in results["sizes"].items()
        ],
    )
    return results


# --------------------------------------------------------------------------- main

SECTIONS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "bm25": section_bm25,
    "dense": section_dense,
    "embedding": section_embedding,
    "build": section_build,
    "postgres": section_postgres,
    "stats": section_stats,
    "scale": section_scale,
}


def target_summary(sections: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(name: str, where: str, value: Any, met: bool) -> None:
        out.append({"target": name, "where": where, "value": value, "wanted": TARGETS[name], "met": bool(met)})

    bm25 = sections.get("bm25", {})
    for dataset, r in bm25.get("datasets", {}).items():
        throughput, index, memory = (
            r["throughput_ratio_vs_bm25s"],
            r["index_ratio_vs_bm25s"],
            r["peak_memory_ratio_vs_bm25s"],
        )
        add("bm25_throughput_vs_bm25s", dataset, throughput, throughput >= 1.0)
        add("bm25_index_time_vs_bm25s", dataset, index, index <= 1.5)
        add("bm25_peak_memory_vs_bm25s", dataset, memory, memory <= 1.0)
    for size, r in sections.get("dense", {}).get("sizes", {}).items():
        frac = r["single_query_fraction_of_bandwidth"]
        add("dense_single_query_bandwidth", f"{int(size):,} x {DENSE_DIM}", frac, frac >= 0.70)
    emb = sections.get("embedding", {})
    if "overhead" in emb:
        add("embedding_overhead", f"{emb['texts']} payments-support passages", emb["overhead"], emb["overhead"] <= 0.05)
    build = sections.get("build", {})
    if "warm_over_cold" in build:
        add("warm_over_cold_build", "all corpora, in-process", build["warm_over_cold"], build["warm_over_cold"] <= 0.15)
        embedded = build["changed"]["embedded"]
        add("one_passage_change_embeds", build["changed_passage"], embedded, all(e == 1 for e in embedded))
        ratio = build["audit_vs_warm_build"]["audit_over_warm_build_cli"]
        add("audit_over_warm_build", "committed site vs warm CLI build", ratio, ratio <= 1.0)
    pg = sections.get("postgres", {})
    if "hybrid_ratio" in pg:
        ratio = pg["hybrid_ratio"]["p50_ratio"]
        where = f"{pg['corpus']} + filler, {pg['rows']:,} rows"
        add("pg_hybrid_over_in_process_hybrid", where, ratio, ratio >= pg["hybrid_ratio"]["target"])
    for size, r in sections.get("scale", {}).get("sizes", {}).items():
        add("scale_build_seconds", size, r["wall_seconds"], r["wall_seconds"] <= SCALE_WALL_SECONDS)
        add("scale_build_peak_memory", size, r["peak_rss_bytes"], r["peak_rss_bytes"] <= SCALE_PEAK_BYTES)
        ratio = r["audit_run_checks_over_rank"]
        add("scale_audit_over_rank", size, ratio, ratio <= SCALE_AUDIT_OVER_RANK)
    stats = sections.get("stats", {})
    if "peak_growth_bytes" in stats:
        where = f"{stats['questions']:,} questions x {stats['rankers']} rankers"
        add("significance_peak_memory", where, stats["peak_growth_bytes"], stats["within_bound"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and one round: a smoke run, not a result")
    parser.add_argument("--million", action="store_true", help="add the 1,000,000-passage BM25 and dense cases")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results.json", help="where to write the JSON")
    parser.add_argument("--rounds", type=int, default=None, help="measured rounds after the warm-up (default 3)")
    parser.add_argument(
        "--sections",
        default=",".join(s for s in SECTIONS if s != "scale"),
        help=f"a comma-separated subset of {','.join(SECTIONS)} (default: all but scale)",
    )
    parser.add_argument("--child-memory", nargs=3, metavar=("SIDE", "DATASET", "QUERIES"), help=argparse.SUPPRESS)
    parser.add_argument("--child-stats", nargs=2, metavar=("QUESTIONS", "RANKERS"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--child-scale", nargs=4, metavar=("CORPORA", "OUT", "CACHE", "RANKERS"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--scale-dense", action="store_true", help="scale section: supplied vectors, with dense and the RRF fusions"
    )
    args = parser.parse_args(argv)
    if args.child_scale:
        print(json.dumps(scale_child(*args.child_scale)))
        return 0
    if args.child_stats:
        print(json.dumps(stats_child(*(int(v) for v in args.child_stats))))
        return 0
    if args.child_memory:
        side, dataset, n_queries = args.child_memory
        print(json.dumps(memory_child(side, dataset, int(n_queries))))
        return 0
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    chosen = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown sections: {', '.join(unknown)}")

    started = time.perf_counter()
    report: dict[str, Any] = {
        "schema": 1,
        "run_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "command": " ".join(["bench/run.py", *(argv if argv is not None else sys.argv[1:])]),
        "quick": args.quick,
        "million": args.million,
        "rounds": args.rounds,
        "warmup_rounds": 1,
        "method": "each comparison alternates its sides A B A B in one process; medians and the median of "
        "per-round ratios are reported; peak indexing memory is measured in a fresh subprocess per side",
        "machine": machine(),
        "targets_wanted": TARGETS,
        "sections": {},
    }
    for name in chosen:
        log(f"section {name}")
        t0 = time.perf_counter()
        busy0, own0 = cpu_ticks()
        try:
            report["sections"][name] = SECTIONS[name](args)
        except Exception as exc:  # a broken section is reported, the others still run
            traceback.print_exc()
            report["sections"][name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
            print(f"\n## {name}\nFAILED: {type(exc).__name__}: {exc}")
        elapsed = time.perf_counter() - t0
        busy1, own1 = cpu_ticks()
        report["sections"][name]["section_seconds"] = elapsed
        # CPU used by everything else on the machine while this section ran, as a share of all CPUs:
        # a number well above 0 means the timings were taken on a busy, shared machine.
        report["sections"][name]["other_processes_cpu_share"] = other_cpu_share(busy1 - busy0, own1 - own0, elapsed)
    report["targets"] = target_summary(report["sections"])
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    print_table(
        "CPU used by other processes while each section ran (share of all CPUs; 0 = quiet machine)",
        ["section", "seconds", "others' CPU share"],
        [[n, r["section_seconds"], r["other_processes_cpu_share"]] for n, r in report["sections"].items()],
    )
    report["total_seconds"] = time.perf_counter() - started
    print_table(
        "Targets",
        ["target", "where", "value", "met", "wanted"],
        [
            [
                t["target"],
                t["where"],
                t["value"] if not isinstance(t["value"], list) else str(t["value"]),
                t["met"],
                t["wanted"],
            ]
            for t in report["targets"]
        ],
    )
    print(f"\ntotal {report['total_seconds']:.0f}s; wrote {args.out}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, sort_keys=True, default=_json_default) + "\n")
    return 0


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


if __name__ == "__main__":
    sys.exit(main())
