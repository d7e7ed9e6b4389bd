"""The corpus page's cost table and quality-versus-cost plot.

Sizes come from the evidence (``cost.json``, every number sourced, the audit recomputes them); times from the
benchmark's timing file ``timings/results-cost.json`` (:mod:`sitegen.bench.cost`), which describes one machine on
one day: its numbers are printed as timings with the machine named, never as evidence, and the audit does not
check them. The plot puts each timed ranker at (its pipeline's p50 latency, log scale; its nDCG@10) and marks the
Pareto frontier: the rankers no other ranker beats on both at once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sitegen.publish.layout import COST_TIMINGS, timing_file
from sitegen.publish.plots import BLUE
from sitegen.publish.svg import (
    FONT,
    LEFT,
    LEGEND_GAP,
    MARGIN,
    SMALL_FONT,
    TOP,
    Scale,
    axes_corner,
    document,
    headings,
    legend_entry,
    legend_width,
    line_swatch,
    number,
    text_element,
    text_width,
    x_grid,
    y_grid,
    y_label,
)

__all__ = ["cost_timings", "pareto_frontier", "quality_cost_svg"]

XLABEL = "p50 latency per question, ms (log scale; timing, not evidence)"
#: The plot area, px: larger than the other plots', as every point carries its ranker's name.
AREA_WIDTH, AREA_HEIGHT = 420.0, 240.0


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


def _label_box(
    placed: list[tuple[float, float, float]], x: float, y: float, width: float
) -> tuple[float, float, float]:
    """Where a point's name goes: at (x, y), or a line below or above where a name placed before is in the way
    (two rankers with the same latency and score would print one name over the other); added to ``placed``."""
    line = SMALL_FONT + 1
    for shift in (0.0, line, -line, 2 * line, -2 * line):
        box = (x, y + shift, x + width)
        if not any(abs(b[1] - box[1]) < line and b[0] < box[2] and box[0] < b[2] for b in placed):
            break
    else:
        box = (x, y, x + width)
    placed.append(box)
    return box


def quality_cost_svg(points: Mapping[str, tuple[float, float]], frontier: Sequence[str], title: str) -> bytes:
    """nDCG@10 against p50 latency (ms, log scale), one labelled point per ranker, the frontier joined by a line and
    its points filled; as deterministic SVG bytes (:mod:`sitegen.publish.svg`)."""
    shown = {n: (x, y) for n, (x, y) in sorted(points.items()) if math.isfinite(x) and x > 0 and math.isfinite(y)}
    lows = [math.log10(x) for x, _ in shown.values()] or [0.0]
    spread = max(lows) - min(lows)
    pad = 0.05 * spread if spread > 0 else 0.3  # in decades
    right, bottom = LEFT + AREA_WIDTH, TOP + AREA_HEIGHT
    x = Scale(10 ** (min(lows) - pad), 10 ** (max(lows) + pad), LEFT, right, log=True)
    qualities = [q for _, q in shown.values()]
    low, high = min(qualities, default=0.0), max(qualities, default=1.0)
    margin = max(0.05 * (high - low), 0.02)
    y = Scale(low - margin, high + margin, bottom, TOP)
    line = [shown[n] for n in frontier if n in shown]
    legend = ["Pareto frontier (filled)"] if line else []
    height = bottom + 38 + FONT
    heading, foot, reach = headings(LEFT + AREA_WIDTH / 2, height, title, XLABEL)
    out = [heading, *y_grid(y, LEFT, right), *x_grid(x, TOP, bottom), axes_corner(LEFT, TOP, right, bottom)]
    if line:
        moves = "".join(f"{'L' if i else 'M'}{number(x(u))} {number(y(v))}" for i, (u, v) in enumerate(line))
        out.append(f'<path d="{moves}" stroke="{BLUE}" fill="none"/>')
    names_end, placed = right, []
    for name, (u, v) in shown.items():
        fill = BLUE if name in frontier else "#fff"
        out.append(f'<circle cx="{number(x(u))}" cy="{number(y(v))}" r="4" fill="{fill}" stroke="{BLUE}"/>')
        box = _label_box(placed, x(u) + 6, y(v) - 5, text_width(name, SMALL_FONT))
        out.append(text_element(box[0], box[1], name, "", SMALL_FONT))
        names_end = max(names_end, box[2])
    out += [foot, y_label(LEFT, TOP + AREA_HEIGHT / 2, "nDCG@10")]
    at = names_end + LEGEND_GAP
    for name in legend:
        dot = f'<circle cx="{number(at + 11)}" cy="{number(TOP + 6)}" r="4" fill="{BLUE}"/>'
        out.append(legend_entry(at, TOP + 6, line_swatch(at, TOP + 6, BLUE, "1") + dot, name))
    width = max(names_end + legend_width(legend) if legend else names_end + MARGIN, reach)
    return document(width, height, title, out)


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
