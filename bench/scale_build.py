"""One whole build of a scale corpus, then the standalone audit with --inputs: seconds per stage, peak RSS, site size.

Usage (the corpus from ``bench/scale_corpus.py ... --vectors``, its folder named ``scale``)::

    python bench/scale_build.py CORPORA OUT [--cache DIR] [--rankers bm25,bm25-stem,dense,...] [--json FILE]

``CORPORA`` holds ``scale/`` (``bench/scale_corpus.py CORPORA/scale --passages N --questions Q --vectors``).
The build runs in this process (``build_site``, PostgreSQL off, nothing embedded: dense ranks by the corpus's
supplied vectors), with every in-process ranker by default: bm25, bm25-stem, dense, the RRF fusions and the
rerank stage (``rerank-dense``: rrf-dense-bm25's top 50 rescored by the cosine of the supplied vectors). Its
audit stage is the one every build runs; a file held by reference is then not recomputed, so the standalone
``audit.py OUT --inputs CORPORA`` runs after it in a fresh interpreter, reading the input files back, and its
seconds and peak RSS are recorded beside the build's. The machine's load average (``os.getloadavg``) is taken
before and after each part: the project machine is shared, and a load above its 2 cores means other work ran.

Prints one JSON object (and writes it to ``--json``): wall and CPU seconds, seconds per stage, peak memory,
the site's bytes, its largest file, the audit's verdicts and the loads. The audit forks workers on Linux for its
largest checks, so the peak is the larger of the process's own (``VmHWM``) and the most the process and its
workers used together (their proportional set sizes summed, sampled twice a second while a worker runs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

RANKERS = ("bm25", "bm25-stem", "dense", "rrf-dense-bm25", "rrf-dense-bm25-stem", "rerank-dense")


def _vm_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _hwm_kib(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)


def _pss_kib(pid: int) -> int:
    """A process's proportional set size: its private pages plus its share of those it shares (a forked worker's
    pages inherited from its parent count once between them)."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)


def _children(pid: int) -> list[int]:
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(c) for c in found]


class TreeMemory:
    """The largest memory a process and the workers it forks use together (the sum of their proportional set
    sizes, sampled every ``interval`` seconds while a worker runs), beside the process's own exact peak
    (``VmHWM``): the audit forks workers on Linux, and their memory counts too."""

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        self.pid, self.interval, self.peak_kib = pid, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            workers = _children(self.pid)
            if workers:
                self.peak_kib = max(self.peak_kib, _pss_kib(self.pid) + sum(_pss_kib(w) for w in workers))

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _site_sizes(site: Path) -> dict[str, Any]:
    files = [(p.stat().st_size, p.relative_to(site).as_posix()) for p in site.rglob("*") if p.is_file()]
    evidence = sum(size for size, rel in files if rel.startswith("evidence/"))
    largest = max(files) if files else (0, "")
    return {
        "site_bytes": sum(size for size, _ in files),
        "evidence_bytes": evidence,
        "files": len(files),
        "largest_file": {"path": largest[1], "bytes": largest[0]},
    }


def build(corpora: Path, out: Path, cache: Path, rankers: tuple[str, ...]) -> dict[str, Any]:
    from sitegen.builder import BuildOptions, build_site

    load_before = _load()
    start = time.perf_counter()
    options = BuildOptions(corpora_dir=corpora, out_dir=out, cache_dir=cache, rankers=rankers, force=True)
    with TreeMemory(os.getpid()) as tree:
        result = build_site(options, log=lambda line: print(f"[build] {line}", file=sys.stderr, flush=True))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "wall_seconds": time.perf_counter() - start,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "stage_seconds": dict(result.seconds),
        "peak_rss_bytes": max(_vm_kib("VmHWM"), tree.peak_kib) * 1024,
        "own_peak_rss_bytes": _vm_kib("VmHWM") * 1024,
        "with_workers_peak_bytes": tree.peak_kib * 1024,
        "audit_verdict": result.audit_verdict,
        "rankers": list(result.rankers),
        "load_before": load_before,
        "load_after": _load(),
    }


def standalone_audit(out: Path, corpora: Path) -> dict[str, Any]:
    """``python OUT/audit.py OUT --inputs CORPORA`` in a fresh interpreter: seconds, peak RSS, verdict."""
    load_before = _load()
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        proc = subprocess.Popen(
            [sys.executable, str(out / "audit.py"), str(out), "--inputs", str(corpora)], stdout=stdout, stderr=stderr
        )
        peak = 0
        # A forked child's ru_maxrss starts at the parent's (a large build), so its peak is read from /proc instead.
        with TreeMemory(proc.pid) as tree:
            while proc.poll() is None:
                peak = max(peak, _hwm_kib(proc.pid))
                time.sleep(0.2)
        stdout.seek(0)
        stderr.seek(0)
        output, errors = stdout.read(), stderr.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = output.strip().splitlines()
    failed = [line for line in lines if line.startswith("FAIL")]
    return {
        "wall_seconds": time.perf_counter() - start,
        "cpu_seconds": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "peak_rss_bytes": max(peak, tree.peak_kib) * 1024,
        "own_peak_rss_bytes": peak * 1024,
        "with_workers_peak_bytes": tree.peak_kib * 1024,
        "exit_status": proc.returncode,
        "last_line": lines[-1] if lines else errors.strip()[-500:],
        "failed": failed[:20],
        "not_recomputed": [line for line in lines if line.startswith("NOT RECOMPUTED")],
        "held_checks": sum(1 for line in lines if " held:" in line),
        "load_before": load_before,
        "load_after": _load(),
    }


TARGET_SECONDS, TARGET_PEAK_BYTES = 1200.0, 6e9  # issue #34 at 1,000,000 x 5,000: 20 minutes and 6 GB, audit included
SITE_LIMIT, FILE_LIMIT = 1_000_000_000, 100_000_000  # GitHub Pages and git
AUDIT_TO_RANK = 3.0  # issue #34: the audit at most three times the build's ranking stage


def collect(results: list[Path], command: str) -> dict[str, Any]:
    """The per-size JSON files of earlier runs as one benchmark results file (``machine``, ``targets``,
    ``sections``, ``run_at``: the shape the site's Performance page reads): the whole build and the standalone audit
    together against 20 minutes and 6 GB, the site against GitHub's limits."""
    from sitegen.bench.machine import machine

    sizes, targets = {}, []
    for path in results:
        r = json.loads(path.read_text(encoding="utf-8"))
        where = f"{r['passages']}x{r['questions']}"
        sizes[where] = r
        build, audit = r["build"], r.get("standalone_audit") or {}
        seconds = build["wall_seconds"] + audit.get("wall_seconds", 0.0)
        peak = max(build["peak_rss_bytes"], audit.get("peak_rss_bytes", 0))
        load = f"load {build['load_before'][0]}-{audit.get('load_after', build['load_after'])[0]} on 2 cores"
        targets += [
            {
                "target": "whole_build_and_audit_seconds",
                "where": where,
                "value": seconds,
                "wanted": f"<= {TARGET_SECONDS:.0f} at 1,000,000 x 5,000 (build + audit.py --inputs; {load})",
                "met": seconds <= TARGET_SECONDS,
            },
            {
                "target": "whole_build_and_audit_peak_rss",
                "where": where,
                "value": peak,
                "wanted": f"<= {TARGET_PEAK_BYTES:.0e} bytes (the larger of the two peaks)",
                "met": peak <= TARGET_PEAK_BYTES,
            },
            {
                "target": "standalone_audit_vs_rank_stage",
                "where": where,
                "value": round(audit.get("wall_seconds", 0.0) / build["stage_seconds"]["rank"], 2),
                "wanted": f"<= {AUDIT_TO_RANK} (audit.py --inputs wall seconds / the build's rank stage seconds)",
                "met": audit.get("wall_seconds", 0.0) <= AUDIT_TO_RANK * build["stage_seconds"]["rank"],
            },
            {
                "target": "site_fits_github_pages",
                "where": where,
                "value": r["site"]["site_bytes"],
                "wanted": f"<= {SITE_LIMIT} bytes in all, no file over {FILE_LIMIT} "
                f"(largest: {r['site']['largest_file']['path']}, {r['site']['largest_file']['bytes']} bytes)",
                "met": r["site"]["site_bytes"] <= SITE_LIMIT and r["site"]["largest_file"]["bytes"] <= FILE_LIMIT,
            },
        ]
    return {
        "schema": "sitegen-bench-scale-build",
        "command": command,
        "machine": machine(),
        "run_at": max(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(p.stat().st_mtime)) for p in results),
        "targets": targets,
        "sections": {"scale_build": {"sizes": sizes}},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", type=Path, help="the folder holding scale/")
    parser.add_argument("out", type=Path, help="the site folder to write")
    parser.add_argument("--cache", type=Path, default=None, help="cache folder (default: OUT.cache)")
    parser.add_argument("--rankers", default=",".join(RANKERS), help="comma-separated rankers")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    parser.add_argument("--no-audit", action="store_true", help="skip the standalone audit with --inputs")
    parser.add_argument("--collect", type=Path, nargs="+", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.collect:  # bench/scale_build.py - OUT.json --collect SIZE.json ...: one results file of the sizes run
        report = collect(args.collect, f"python bench/scale_build.py CORPORA/<size> SITE (sizes: {len(args.collect)})")
        args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return 0
    cache = args.cache or args.out.with_name(args.out.name + ".cache")
    passages = sum(1 for _ in (args.corpora / "scale" / "corpus.jsonl").open("rb"))
    questions = sum(1 for _ in (args.corpora / "scale" / "queries.jsonl").open("rb"))
    result: dict[str, Any] = {
        "passages": passages,
        "questions": questions,
        "cores": os.cpu_count(),
        "build": build(args.corpora, args.out, cache, tuple(args.rankers.split(","))),
    }
    result["site"] = _site_sizes(args.out)
    if not args.no_audit:
        result["standalone_audit"] = standalone_audit(args.out, args.corpora)
    text = json.dumps(result, indent=2, sort_keys=True)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
