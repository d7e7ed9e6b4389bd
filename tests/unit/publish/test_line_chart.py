"""The sweep and chunking line charts, written as SVG text: well-formed, the same bytes for the same data, every
text escaped, a missing value breaking its line, ticks at round values, and a long legend or long labels kept on
the canvas."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from sitegen.publish.line_chart import line_svg, nice_ticks
from sitegen.publish.svg import text_width

SVG = "{http://www.w3.org/2000/svg}"


def _chart(**series: list[float]) -> bytes:
    return line_svg(["1", "10", "60"], series or {"hit@1": [0.2, 0.4, 0.3]}, "fusion: k sweep", "k", "score")


def test_the_same_data_gives_the_same_bytes_and_well_formed_svg() -> None:
    first, second = _chart(), _chart()
    assert first == second
    root = ET.fromstring(first)
    assert root.tag == f"{SVG}svg" and root.find(f"{SVG}title").text == "fusion: k sweep"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"] == texts[1:7]  # after the title: the y ticks
    assert {"1", "10", "60", "k", "score", "hit@1"} <= set(texts)


def test_each_value_is_a_dot_at_its_height_and_a_missing_value_breaks_the_line() -> None:
    root = ET.fromstring(_chart(mrr=[0.5, math.nan, 0.25]))
    group = root.find(f"{SVG}g")
    dots = group.findall(f"{SVG}circle")
    assert len(dots) == 2  # no dot where the value is missing
    heights = [float(dot.get("cy")) for dot in dots]
    line = group.find(f"{SVG}path").get("d")
    assert line.count("M") == 2 and "L" not in line  # two pieces, neither joined across the gap
    grid = [p.get("d") for p in root.findall(f"{SVG}path") if p.get("stroke") == "#e4e4e4"]  # at 0.0, 0.2 ... 1.0
    zero, one = (float(d.split()[1].split("H")[0]) for d in (grid[0], grid[-1]))
    assert heights[0] == pytest.approx((zero + one) / 2) and heights[1] == pytest.approx(zero + (one - zero) / 4)
    assert heights[0] < heights[1]  # 0.5 above 0.25: svg y grows downwards


def test_names_and_labels_are_escaped_text() -> None:
    svg = line_svg(["<b>", "a&b"], {'<script>"x"</script>': [0.1, 0.2]}, "t <i>", "x & y", "s").decode()
    assert "<script>" not in svg and "<b>" not in svg and "<i>" not in svg
    root = ET.fromstring(svg)
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {'<script>"x"</script>', "<b>", "a&b", "t <i>", "x & y"} <= texts


def test_labels_wider_than_their_slot_are_turned_and_the_legend_widens_the_chart() -> None:
    short = ET.fromstring(line_svg(["a", "b"], {"n": [0.1, 0.2]}, "t", "x", "y"))
    long = ET.fromstring(line_svg(["a" * 40, "b" * 40], {"n" * 60: [0.1, 0.2]}, "t", "x", "y"))
    assert not any("rotate(-30" in (t.get("transform") or "") for t in short.iter(f"{SVG}text"))
    assert sum("rotate(-30" in (t.get("transform") or "") for t in long.iter(f"{SVG}text")) == 2
    assert float(long.get("width")) > float(short.get("width")) + 300
    assert float(long.get("height")) > float(short.get("height"))


@pytest.mark.parametrize(
    ("low", "high", "ticks"),
    [
        (0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (0.4, 0.9, [0.4, 0.5, 0.6, 0.7, 0.8, 0.9]),
        (0.0, 250.0, [0.0, 50.0, 100.0, 150.0, 200.0, 250.0]),
        (-1.0, 1.0, [-1.0, -0.5, 0.0, 0.5, 1.0]),
        (0.0, 0.01, [0.0, 0.002, 0.004, 0.006, 0.008, 0.01]),
        (3.0, 3.0, [3.0]),
    ],
)
def test_ticks_fall_on_round_values_within_the_range(low: float, high: float, ticks: list[float]) -> None:
    assert nice_ticks(low, high) == ticks


def test_a_legend_taller_than_the_plot_and_long_turned_labels_stay_on_the_canvas() -> None:
    series = {f"series {n}": [0.1, 0.2] for n in range(20)}
    root = ET.fromstring(line_svg(["a" * 40, "b" * 40], series, "t", "x", "y"))
    height, texts = float(root.get("height")), list(root.iter(f"{SVG}text"))
    names = [float(t.get("y")) for t in texts if t.text in series]
    assert len(names) == 20 and max(names) < height - 38  # every entry above the x labels and the x label
    turned = [t for t in texts if "rotate(-30" in (t.get("transform") or "")]
    starts = [float(t.get("x")) - text_width(t.text) * math.cos(math.radians(30)) for t in turned]
    assert len(starts) == 2 and min(starts) >= 0
