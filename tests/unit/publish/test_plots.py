"""The bar, difference, forest and quality-versus-cost plots, written as SVG text: the same bytes for the same data
and well-formed; each forest row's numbers where the audit reads them; every text escaped; dots filled or hollow
as the verdicts say; bars, points, the band and log positions where the values put them; no text off the canvas."""

from __future__ import annotations

import html
import math
import xml.etree.ElementTree as ET
from collections.abc import Callable

import pytest

from sitegen.audit import _PLOT_ROW
from sitegen.publish.cost_view import pareto_frontier, quality_cost_svg
from sitegen.publish.plots import (
    DifferenceBand,
    ForestRow,
    GroupRow,
    RankGroup,
    difference_svg,
    forest_svg,
    grouped_bar_svg,
    groups_svg,
)
from sitegen.publish.svg import PLOT_HEIGHT, text_width

SVG = "{http://www.w3.org/2000/svg}"
BLUE, GREY = "#1f5fbf", "#8a8a8a"

FOREST = [
    ForestRow("dense", -0.012, -0.040, 0.015, True, False, "-0.012 [-0.040, +0.015] n.s."),
    ForestRow("pg-tsvector", -0.150, -0.210, -0.090, True, True, "-0.150 [-0.210, -0.090] significant"),
    ForestRow("bm25-stem", -0.004, -0.004, -0.004, False, False, "-0.004 not tested"),
]
POINTS = {"bm25": (1.0, 0.50), "dense": (10.0, 0.60), "fusion": (100.0, 0.70), "slow-and-poor": (50.0, 0.30)}

PLOTS: dict[str, Callable[[], bytes]] = {
    "bars": lambda: grouped_bar_svg(["factoid", "list"], {"bm25": [0.5, 0.25], "dense": [1.0, 0.75]}, "t", "k", "h"),
    "difference": lambda: difference_svg(
        [0.1, 0.5, 0.9], [0.2, -0.1, 0.0], DifferenceBand(0.033, -0.05, 0.12), "t", "mean", "now - baseline"
    ),
    "forest": lambda: forest_svg(FOREST, "tiny: ndcg@10, each ranker minus bm25", "difference"),
    "groups": lambda: groups_svg(
        [GroupRow("bm25", 0.55, 0.43, 0.67, True, "0.550 a"), GroupRow("dense", 0.41, None, None, False, "0.410 b")],
        [RankGroup("a", (0,)), RankGroup("b", (1,))],
        "t",
        "ndcg@10",
    ),
    "cost": lambda: quality_cost_svg(POINTS, pareto_frontier(POINTS), "tiny: nDCG@10 against p50 latency"),
}


def _root(svg: bytes) -> ET.Element:
    return ET.fromstring(svg)


def _floats(element: ET.Element, *names: str) -> list[float]:
    return [float(element.get(name)) for name in names]


@pytest.mark.parametrize("plot", sorted(PLOTS))
def test_each_plot_is_the_same_bytes_for_the_same_input_and_well_formed_svg_with_a_title(plot: str) -> None:
    first, second = PLOTS[plot](), PLOTS[plot]()
    assert first == second
    root = _root(first)
    assert root.tag == f"{SVG}svg" and root.find(f"{SVG}title").text
    numbers = [
        float(value)
        for element in root.iter()
        for name, value in element.attrib.items()
        if name in ("x", "y", "cx", "cy", "r", "width", "height")
    ]
    assert numbers and all(math.isfinite(n) for n in numbers)


def test_forest_prints_each_rows_numbers_in_the_element_the_audit_reads_top_down() -> None:
    svg = forest_svg(FOREST, "t", "x").decode()
    assert _PLOT_ROW.findall(svg) == [(str(n), row.label) for n, row in enumerate(FOREST, start=1)]
    assert svg.count('id="row-') == len(FOREST)
    rows = [g.find(f"{SVG}text") for g in _root(svg.encode()).iter(f"{SVG}g") if g.get("id", "").startswith("row-")]
    heights = [float(text.get("y")) for text in rows]
    assert heights == sorted(heights) and len(set(heights)) == len(FOREST)  # one line each, first at the top


@pytest.mark.parametrize("draw", ["forest", "groups"])
def test_a_name_or_label_with_markup_is_escaped_and_reads_back_unchanged(draw: str) -> None:
    name, label = "<script>a & b</script>", "+0.100 [<0.2 & >0.0] <b>"
    if draw == "forest":
        svg = forest_svg([ForestRow(name, 0.1, 0.0, 0.2, True, True, label)], "t <i>", "x & y").decode()
    else:
        svg = groups_svg([GroupRow(name, 0.5, 0.4, 0.6, True, label)], [RankGroup("a", (0,))], "t <i>", "x").decode()
    assert "<script>" not in svg and "<b>" not in svg and "<i>" not in svg
    assert [html.unescape(text) for _, text in _PLOT_ROW.findall(svg)] == [label]
    texts = {t.text for t in _root(svg.encode()).iter(f"{SVG}text")}
    assert {name, label, "t <i>"} <= texts


def test_forest_dots_are_filled_where_significant_hollow_where_not_and_grey_where_not_tested() -> None:
    dots = list(_root(forest_svg(FOREST, "t", "x")).iter(f"{SVG}circle"))
    assert [(dot.get("fill"), dot.get("stroke")) for dot in dots] == [
        ("#fff", BLUE),  # tested, not significant: hollow
        (BLUE, BLUE),  # tested and significant: filled
        ("#fff", GREY),  # not tested: grey
    ]
    xs = [float(dot.get("cx")) for dot in dots]
    assert xs[1] < xs[0] and xs[1] < xs[2]  # -0.150 left of -0.012 and -0.004


def _bars(svg: bytes) -> list[list[ET.Element]]:
    """Each series's bars, in series order."""
    return [list(g.iter(f"{SVG}rect")) for g in _root(svg).iter(f"{SVG}g") if g.get("fill")]


def test_grouped_bars_draw_one_rect_per_value_with_heights_proportional_to_the_values_within_ylim() -> None:
    series = {"bm25": [0.5, 0.25, math.nan], "dense": [1.0, 0.75, 0.1]}
    bars = _bars(grouped_bar_svg(["a", "b", "c"], series, "t", "x", "y"))
    assert [len(b) for b in bars] == [2, 3]  # no bar for a missing value
    heights = [[float(r.get("height")) for r in b] for b in bars]
    assert heights == [[PLOT_HEIGHT * 0.5, PLOT_HEIGHT * 0.25], [PLOT_HEIGHT * 1.0, PLOT_HEIGHT * 0.75, 18.0]]
    bottoms = {float(r.get("y")) + float(r.get("height")) for b in bars for r in b}
    assert len(bottoms) == 1  # every bar stands on the axis
    lefts = [float(r.get("x")) for r in bars[0]] + [float(r.get("x")) for r in bars[1]]
    assert lefts[0] < lefts[2] < lefts[1] < lefts[3]  # category a's two bars, then b's
    halved = _bars(grouped_bar_svg(["a"], {"s": [0.25, 0.9]}, "t", "x", "y", ylim=(0.0, 0.5)))
    assert [float(r.get("height")) for r in halved[0]] == [PLOT_HEIGHT * 0.5, PLOT_HEIGHT]  # 0.9 held at 0.5


def test_the_difference_plot_draws_one_point_per_question_the_band_and_both_lines_named() -> None:
    band = DifferenceBand(0.033, -0.05, 0.12)
    svg = difference_svg([0.1, 0.5, math.nan, 0.9], [0.2, -0.1, 0.3, 0.0], band, "t", "x", "y")
    root = _root(svg)
    points = [c for g in root.iter(f"{SVG}g") if g.get("fill") == "#333333" for c in g.iter(f"{SVG}circle")]
    assert len(points) == 3  # the question with no mean is not drawn
    assert [float(p.get("cx")) for p in points] == sorted(float(p.get("cx")) for p in points)
    (strip,) = [r for r in root.iter(f"{SVG}rect") if r.get("fill") == "#c9daf8" and r.get("height") != "10"]
    assert float(strip.get("height")) == pytest.approx(PLOT_HEIGHT * 0.17 / 2.1, abs=0.01)
    ys = [float(p.get("cy")) for p in points]
    assert ys[0] < float(strip.get("y")) < ys[1]  # +0.2 above the band's top, -0.1 below it
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {"mean difference +0.033", "95% interval of the mean difference"} <= texts


def test_quality_cost_fills_the_frontiers_points_and_spaces_latencies_on_a_log_scale() -> None:
    frontier = pareto_frontier(POINTS)
    assert frontier == ["bm25", "dense", "fusion"]
    root = _root(quality_cost_svg(POINTS, frontier, "t"))
    dots = [c for c in root.iter(f"{SVG}circle") if c.get("stroke") == BLUE]  # the legend's dot has no stroke
    assert [d.get("fill") for d in dots] == [BLUE, BLUE, BLUE, "#fff"]  # in name order; slow-and-poor is hollow
    x = {name: float(d.get("cx")) for name, d in zip(sorted(POINTS), dots, strict=True)}
    assert x["bm25"] < x["dense"] < x["slow-and-poor"] < x["fusion"]
    assert x["dense"] - x["bm25"] == pytest.approx(x["fusion"] - x["dense"], abs=0.02)  # a decade, a decade
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {"1", "10", "100", "Pareto frontier (filled)", "nDCG@10"} <= texts
    assert "p50 latency per question, ms (log scale; timing, not evidence)" in texts


def test_latencies_within_one_decade_still_get_several_ticks() -> None:
    points = {"a": (3.0, 0.4), "b": (7.0, 0.5)}
    texts = [t.text for t in _root(quality_cost_svg(points, ["a", "b"], "t")).iter(f"{SVG}text")]
    assert {"4", "6"} <= set(texts)


def _text_extents(svg: bytes) -> tuple[float, list[tuple[str, float, float]]]:
    """The canvas width and each unturned text's estimated left and right ends."""
    root = _root(svg)
    ends = []
    for text in root.iter(f"{SVG}text"):
        if text.get("transform"):
            continue
        x, width = float(text.get("x")), text_width(text.text or "", float(text.get("font-size")))
        anchor = text.get("text-anchor", "start")
        left = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
        ends.append((text.text or "", left, left + width))
    return float(root.get("width")), ends


@pytest.mark.parametrize("draw", ["forest", "groups", "bars", "cost", "difference"])
def test_long_names_labels_and_titles_stay_on_the_canvas(draw: str) -> None:
    name, label, title = "n" * 60, "+0.123 [+0.001, +0.245] " + "x" * 60, "a long title " * 8
    if draw == "forest":
        svg = forest_svg([ForestRow(name, 0.1, 0.0, 0.2, True, True, label)], title, "x")
    elif draw == "groups":
        svg = groups_svg([GroupRow(name, 0.5, 0.4, 0.6, True, label)], [RankGroup("g12", (0,))], title, "x")
    elif draw == "bars":
        svg = grouped_bar_svg([name, "b"], {label: [0.1, 0.2]}, title, "x", "y")
    elif draw == "cost":
        svg = quality_cost_svg({name: (1000.0, 0.5), "b": (1.0, 0.2)}, [name, "b"], title)
    else:
        svg = difference_svg([0.5], [0.1], DifferenceBand(0.1, 0.0, 0.2), title, "x" * 90, "y")
    width, ends = _text_extents(svg)
    off = [(text[:20], round(left), round(right)) for text, left, right in ends if left < 0 or right > width]
    assert off == []
    assert any(text in (name, label, title) for text, _, _ in ends)
