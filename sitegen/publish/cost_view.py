"""The corpus page's cost table and quality-versus-cost plot.

Sizes come from the evidence (``cost.json``, every number sourced, the audit recomputes them); times from the
benchmark's timing file ``timings/results-cost.json`` (:mod:`sitegen.bench.cost`), which describes one machine on
one day: its numbers are printed as timings with the machine named, never as evidence, and the audit does not
check them. The plot puts each timed ranker at (its pipeline's p50 latency, log scale; its nDCG@10) and marks the
Pareto frontier: the rankers no other ranker beats on both at once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sitegen.publish.layout import COST_TIMINGS, timing_file
from sitegen.publish.plots import _STYLE, _pyplot, _svg

__all__ = ["cost_timings", "pareto_frontier", "quality_cost_svg"]


def cost_timings(site_root: Path, corpus: str) -> dict[str, Any] | None:
    """This corpus's entry of the site's ``timings/results-cost.json``, with the file's machine and date; None
    when the site has no such file or it did not time this corpus."""
    path = site_root / timing_file(COST_TIMINGS)
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    found = next((c for c in data.get("corpora", []) if c.get("corpus") == corpus), None)
    if found is None:
        return None
    return {**found, "machine": data.get("machine") or {}, "run_at": data.get("run_at"), "method": data.get("method")}


def pareto_frontier(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """Names of the points (latency, quality) that no other point matches or beats on both with one strictly
    better; in order of latency, then name."""
    front = [
        name
        for name, (x, y) in points.items()
        if not any((u <= x and v >= y) and (u < x or v > y) for other, (u, v) in points.items() if other != name)
    ]
    return sorted(front, key=lambda n: (points[n][0], n))


def quality_cost_svg(points: Mapping[str, tuple[float, float]], frontier: Sequence[str], title: str) -> bytes:
    """nDCG@10 against p50 latency (ms, log scale), one labelled point per ranker, the frontier joined by a line and
    its points filled; as deterministic SVG bytes."""
    plt = _pyplot()
    import matplotlib

    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 3.8))
        for name, (x, y) in sorted(points.items()):
            on = name in frontier
            ax.plot([x], [y], marker="o", markersize=6, color="#1f5fbf", markerfacecolor="#1f5fbf" if on else "white")
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7)
        if frontier:
            ax.plot(
                [points[n][0] for n in frontier],
                [points[n][1] for n in frontier],
                color="#1f5fbf",
                linewidth=1.0,
                label="Pareto frontier (filled)",
            )
            ax.legend(fontsize=7, frameon=False, loc="lower right")
        ax.set_xscale("log")
        ax.set_title(title)
        ax.set_xlabel("p50 latency per question, ms (log scale; timing, not evidence)")
        ax.set_ylabel("nDCG@10")
        return _svg(fig)


def _ms(value: Any) -> str:
    return "n/a" if not isinstance(value, (int, float)) or value != value else f"{value:.2f}"


def cost_context(c: Any, site: Any) -> dict[str, Any] | None:
    """The corpus page's cost section: one row per ranker (sizes sourced from cost.json, nDCG@10 from
    metrics.json, times as plain timing text), the plot and its text alternative; None without cost.json."""
    if c.cost is None:
        return None
    timings = cost_timings(site.root, c.name)
    timed = (timings or {}).get("rankers", {})
    rows, points = [], {}
    for name, entry in c.cost["rankers"].items():
        ndcg = c.metrics.get(name, {}).get("overall", {}).get("ndcg@10")
        t = timed.get(name)
        rows.append(
            {
                "name": name,
                "ndcg": ndcg,
                "index_bytes": entry["index_bytes"],
                "indexes": entry["indexes"],
                "models": [(m, c.cost["models"][m]) for m in entry["models"]],
                "timing": None
                if t is None
                else {k: _ms(t.get(k)) for k in ("p50_ms", "p95_ms", "pipeline_p50_ms", "pipeline_p95_ms")}
                | {"index_s": _ms(t.get("index_s"))},
            }
        )
        if t is not None and ndcg is not None and isinstance(t.get("pipeline_p50_ms"), (int, float)):
            points[name] = (max(float(t["pipeline_p50_ms"]), 1e-3), float(ndcg))
    plot = alt = None
    frontier = pareto_frontier(points)
    if points:
        plot = c.pages.at("quality-cost.svg")
        site.plot(plot, quality_cost_svg, points, frontier, f"{c.name}: nDCG@10 against p50 latency")
        alt = "Scatter plot of nDCG@10 against each ranker's pipeline p50 latency (log scale): " + "; ".join(
            f"{n} {_ms(x)} ms, nDCG@10 {y:.3f}{' (Pareto frontier)' if n in frontier else ''}"
            for n, (x, y) in sorted(points.items())
        )
    machine = None
    if timings is not None:
        from sitegen.publish.timings import _machine

        machine = _machine(timings["machine"])
    return {
        "rows": rows,
        "timings": timings,
        "timings_href": timing_file(COST_TIMINGS),
        "machine": machine,
        # each model's embedding summary; a timing file from before model entries has the packaged model's only
        "embeddings": (timings or {}).get("embeddings") or {"dense": (timings or {}).get("embedding")},
        "plot": plot,
        "alt": alt,
        "frontier": frontier,
    }
