"""The home cards' picture of the rank groups: the same rows give the same bytes, each row prints its numbers in
the element the audit reads, every group's bracket joins its rows between the plot and the numbers and is named
by its letter, the x range pads the rows' ends within 0 and 1, and a group's letter is read from the letters of
the rows that share it."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from sitegen.publish.pages.home import _rank_groups
from sitegen.publish.plots import GroupRow, RankGroup, groups_svg

ROWS = [
    GroupRow("bm25", 0.554, 0.434, 0.671, True, "0.554 [0.434, 0.671] a"),
    GroupRow("dense \u2261 pg-vector", 0.502, 0.388, 0.616, True, "0.502 [0.388, 0.616] ab"),
    GroupRow("pg-tsvector", 0.412, None, None, False, "0.412 b"),
]
GROUPS = [RankGroup("a", (0, 1)), RankGroup("b", (1, 2))]
SVG = "{http://www.w3.org/2000/svg}"


def _parts(svg: bytes) -> tuple[ET.Element, list[str], float]:
    """The parsed plot, the brackets (paths in ink with a tick per row) and the plot area's right (where the
    axes' corner ends)."""
    root = ET.fromstring(svg)
    inked = [p.get("d") for p in root.iter(f"{SVG}path") if p.get("stroke") == "#333" and p.get("fill") == "none"]
    (corner,) = [d for d in inked if "h6" not in d]
    return root, [d for d in inked if "h6" in d], float(corner.rpartition("H")[2])


def test_the_rank_group_plot_is_the_same_bytes_for_the_same_rows_and_prints_each_rows_numbers() -> None:
    first = groups_svg(ROWS, GROUPS, "tiny: ndcg@10", "ndcg@10")
    assert first == groups_svg(ROWS, GROUPS, "tiny: ndcg@10", "ndcg@10")
    svg = first.decode("utf-8")
    labels = re.findall(r'<g id="row-(\d+)">\s*<text[^>]*>([^<]*)</text>', svg)
    assert labels == [(str(n), row.label) for n, row in enumerate(ROWS, start=1)]
    assert ">a</text>" in svg and ">b</text>" in svg
    assert groups_svg(ROWS[:2], GROUPS[:1], "tiny: ndcg@10", "ndcg@10") != first


def test_each_groups_bracket_joins_its_rows_between_the_plot_and_the_numbers_under_its_letter() -> None:
    root, inked, right = _parts(groups_svg(ROWS, GROUPS, "t", "x"))
    rows = [g.find(f"{SVG}text") for g in root.iter(f"{SVG}g") if g.get("id", "").startswith("row-")]
    numbers_at, row_ys = float(rows[0].get("x")), [float(t.get("y")) - 12 * 0.35 for t in rows]
    brackets = inked
    assert len(brackets) == len(GROUPS)
    letters = {t.text: t for t in root.iter(f"{SVG}text") if t.text in ("a", "b")}
    for group, d in zip(GROUPS, brackets, strict=True):
        x, top, foot = (float(v) for v in re.match(r"M([\d.]+) ([\d.]+)V([\d.]+)", d).groups())
        assert right < x < numbers_at
        ys = [row_ys[i] for i in group.rows]
        assert top < min(ys) and max(ys) < foot  # it reaches past its first and last rows
        assert [float(v) for v in re.findall(r"M[\d.]+ ([\d.]+)h6", d)] == pytest.approx(ys, abs=0.01)
        letter = letters[group.letter]
        assert float(letter.get("x")) == pytest.approx(x) and float(letter.get("y")) < top


def test_the_x_range_pads_the_rows_ends_held_within_0_and_1_and_unverified_rows_are_grey() -> None:
    rows = [GroupRow("a", 0.9, 0.8, 1.0, True, "0.900 a"), GroupRow("b", 0.5, 0.4, 0.6, False, "0.500 b")]
    root, _, right = _parts(groups_svg(rows, [RankGroup("a", (0,)), RankGroup("b", (1,))], "t", "x"))
    lines = [p for p in root.iter(f"{SVG}path") if p.get("stroke-width") == "2"]
    ends = [[float(v) for v in re.match(r"M([\d.]+) [\d.]+H([\d.]+)", p.get("d")).groups()] for p in lines]
    assert ends[0][1] == pytest.approx(right)  # 1.0 is the right edge: pad 0.06 held at 1
    left = right - 300
    assert ends[1][0] == pytest.approx(left + 300 * (0.4 - 0.34) / 0.66, abs=0.01)  # 0.4 - 0.06 at the left edge
    assert [p.get("stroke") for p in lines] == ["#1f5fbf", "#8a8a8a"]
    ticks = [t.text for t in root.iter(f"{SVG}text") if re.fullmatch(r"\d\.\d", t.text)]
    assert ticks == ["0.4", "0.6", "0.8", "1.0"]  # within the range, none beyond 1


def test_a_groups_letter_is_read_from_the_letters_of_its_rows() -> None:
    table = {
        "rows": [{"letters": "a"}, {"letters": "ab"}, {"letters": "bc"}, {"letters": "c"}],
        "groups": [[0, 1], [1, 2], [2, 3]],
    }
    assert _rank_groups(table) == [RankGroup("a", (0, 1)), RankGroup("b", (1, 2)), RankGroup("c", (2, 3))]
    with pytest.raises(ValueError, match="do not name its groups"):
        _rank_groups({**table, "rows": [{"letters": "a"}, {"letters": "a"}, {"letters": "bc"}, {"letters": "c"}]})
