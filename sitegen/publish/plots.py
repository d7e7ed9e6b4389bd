"""The bar, difference, forest and rank-group plots, written as SVG text (:mod:`sitegen.publish.svg`): same data,
same bytes, in under a millisecond.

The forest and rank-group plots print each row's numbers at its right in ``<g id="row-N"><text>...</text></g>``
(N from 1, top down), which the audit reads (``sitegen/audit.py``, ``_PLOT_ROW``) and compares with the page's
sourced numbers; no other element has those ids.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from sitegen.publish.svg import (
    ENTRY,
    FONT,
    INK,
    LEFT,
    LEGEND_GAP,
    MARGIN,
    PALETTE,
    PLOT_HEIGHT,
    PLOT_WIDTH,
    SMALL_FONT,
    TOP,
    CategoryFrame,
    Scale,
    axes_corner,
    box_swatch,
    category_axes,
    clip_area,
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

__all__ = [
    "DifferenceBand",
    "ForestRow",
    "GroupRow",
    "RankGroup",
    "difference_svg",
    "forest_svg",
    "grouped_bar_svg",
    "groups_svg",
]

BLUE, GREY = "#1f5fbf", "#8a8a8a"  # tested (verified) rows; rows too few questions differ to test (not verified)
BAR = 5.0  # px: the narrowest bar wanted, which widens the plot area for many series
MIN_SLOT = 60.0  # px: the narrowest slot for a category's group of bars


def _finite(*values: float | None) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def _dot(x: float, y: float, colour: str, filled: bool = True, r: float = 3.8) -> str:
    fill = colour if filled else "#fff"
    return f'<circle cx="{number(x)}" cy="{number(y)}" r="{number(r)}" fill="{fill}" stroke="{colour}"/>'


def _segment(x0: float, x1: float, y: float, colour: str) -> str:
    """A row's interval: a horizontal line from x0 to x1."""
    return f'<path d="M{number(x0)} {number(y)}H{number(x1)}" stroke="{colour}" stroke-width="2"/>'


def grouped_bar_svg(
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    title: str,
    xlabel: str,
    ylabel: str,
    ylim: tuple[float, float] = (0.0, 1.0),
) -> bytes:
    """One group of bars per category, one bar per series (from 0, or the nearer end of ``ylim``, to its value,
    held within ``ylim``; a missing value, NaN, has no bar), a legend at the right; as SVG bytes."""
    names = list(series)
    slot = max(MIN_SLOT, BAR * len(names) / 0.8)  # the bars fill 0.8 of their slot
    frame = CategoryFrame.of(categories, names, ylim, max(PLOT_WIDTH, slot * len(categories)))
    out, width = category_axes(frame, categories, title, xlabel, ylabel)
    low, high = ylim
    y, bar = frame.y, 0.8 * frame.plot_width / max(len(categories), 1) / max(len(names), 1)
    base = y(min(max(0.0, low), high))
    for n, name in enumerate(names):
        colour = PALETTE[n % len(PALETTE)]
        bars = [f'<g fill="{colour}">']
        for i, value in enumerate(series[name]):
            if not _finite(value):
                continue
            top = y(min(max(value, low), high))
            x = frame.x(i) + (n - (len(names) - 1) / 2) * bar - bar / 2
            bars.append(
                f'<rect x="{number(x)}" y="{number(min(top, base))}" width="{number(bar)}" '
                f'height="{number(abs(base - top))}"/>'
            )
        out.append("".join([*bars, "</g>"]))
        at_x, at_y = frame.legend(n)
        out.append(legend_entry(at_x, at_y, box_swatch(at_x, at_y, colour), name))
    return document(width, frame.height, title, out)


class DifferenceBand(NamedTuple):
    """The mean of paired differences and the ends of its 95% interval."""

    mean: float
    low: float
    high: float


def difference_svg(
    means: Sequence[float],
    differences: Sequence[float],
    band: DifferenceBand,
    title: str,
    xlabel: str,
    ylabel: str,
) -> bytes:
    """One point per question at (mean of the two scores, their difference), a Bland-Altman view, with the mean
    difference drawn as a line and its interval as a band; as SVG bytes."""
    from sitegen.publish.pages.base import format_delta  # here: the pages import this module

    right, bottom = LEFT + PLOT_WIDTH, TOP + PLOT_HEIGHT
    x, y = Scale(-0.05, 1.05, LEFT, right), Scale(-1.05, 1.05, bottom, TOP)
    legend = [f"mean difference {format_delta(band.mean)}", "95% interval of the mean difference"]
    height = bottom + 38 + FONT
    heading, foot, reach = headings(LEFT + PLOT_WIDTH / 2, height, title, xlabel)
    out = [clip_area(LEFT, TOP, PLOT_WIDTH, PLOT_HEIGHT), heading, *y_grid(y, LEFT, right), *x_grid(x, TOP, bottom)]
    out.append('<g clip-path="url(#area)">')
    if _finite(band.low, band.high):
        ends = sorted(min(max(v, -1.1), 1.1) for v in (band.low, band.high))  # beyond the area: clipped anyway
        top, foot_of_band = y(ends[1]), y(ends[0])
        out.append(
            f'<rect x="{number(LEFT)}" y="{number(top)}" width="{number(PLOT_WIDTH)}" '
            f'height="{number(foot_of_band - top)}" fill="#c9daf8" fill-opacity="0.6"/>'
        )
    out.append(f'<path d="M{number(LEFT)} {number(y(0.0))}H{number(right)}" stroke="#888888"/>')
    if _finite(band.mean):
        out.append(
            f'<path d="M{number(LEFT)} {number(y(band.mean))}H{number(right)}" stroke="{BLUE}" stroke-width="1.6"/>'
        )
    out.append('<g fill="#333333" fill-opacity="0.7">')
    out += [
        f'<circle cx="{number(x(m))}" cy="{number(y(d))}" r="2.5"/>'
        for m, d in zip(means, differences, strict=True)
        if _finite(m, d)
    ]
    out += ["</g>", "</g>", axes_corner(LEFT, TOP, right, bottom), foot, y_label(LEFT, TOP + PLOT_HEIGHT / 2, ylabel)]
    at = right + LEGEND_GAP
    swatches = [
        line_swatch(at, TOP + 6, BLUE, "1.6"),
        box_swatch(at, TOP + 6 + ENTRY, "#c9daf8", ' fill-opacity="0.6"'),
    ]
    out += [
        legend_entry(at, TOP + 6 + ENTRY * n, swatch, name)
        for n, (swatch, name) in enumerate(zip(swatches, legend, strict=True))
    ]
    return document(max(right + legend_width(legend), reach), height, title, out)


class ForestRow(NamedTuple):
    """One row of a forest plot: a difference with its interval, whether it was tested and found significant, and
    the numbers printed beside it (the page's sourced texts of the same values, so the audit can compare them)."""

    name: str
    difference: float
    low: float
    high: float
    tested: bool
    significant: bool
    label: str


class GroupRow(NamedTuple):
    """One row of a rank-group plot: a row of rankers (merged when identical), its mean with the 95% interval of
    that mean (None where there is none), whether the audit recomputes it, its rank-group letters, and the numbers
    printed beside it (the page's sourced texts of the same values, so the audit can compare them)."""

    name: str
    mean: float
    low: float | None
    high: float | None
    verified: bool
    label: str


class RankGroup(NamedTuple):
    """One rank group: its letter and the rows (0-based, top down) that share it."""

    letter: str
    rows: tuple[int, ...]


ROW = 22.0  # px from one row to the next
#: Where the group brackets start right of the plot area, and the least room each takes, in px.
_BRACKET_START = 10.0
_BRACKET_STEP = 14.0


@dataclass(frozen=True)
class _RowFrame:
    """Where a plot with one row per ranker puts things: the rows' names right-aligned at the left, the plot area,
    ``gap`` px right of it (the rank groups' brackets), then the rows' numbers; sized from the texts' widths."""

    names: Sequence[str]
    labels: Sequence[str]
    xlim: tuple[float, float]
    gap: float
    left: float  # of the plot area: right of the widest name

    @classmethod
    def of(cls, names: Sequence[str], labels: Sequence[str], xlim: tuple[float, float], gap: float) -> _RowFrame:
        widest = max((text_width(name) for name in names), default=0.0)
        return cls(names, labels, xlim, gap, max(LEFT, MARGIN + widest + 6))

    @property
    def right(self) -> float:
        return self.left + PLOT_WIDTH

    @property
    def bottom(self) -> float:
        return TOP + ROW * (len(self.names) + 0.2)

    @property
    def height(self) -> float:
        return self.bottom + 38 + FONT

    @property
    def x(self) -> Scale:
        return Scale(self.xlim[0], self.xlim[1], self.left, self.right)

    def y(self, i: int) -> float:
        """Row ``i``'s line (from 0, top down)."""
        return TOP + ROW * (i + 0.6)


def _rows_plot(frame: _RowFrame, draw: Callable[[], list[str]], title: str, xlabel: str) -> bytes:
    """The plot around the rows ``draw`` returns: the title, the x grid and axis, each row's name at the left and
    its numbers at the right in ``<g id="row-N">`` (N from 1, top down), for the audit to read."""
    heading, foot, reach = headings(frame.left + PLOT_WIDTH / 2, frame.height, title, xlabel)
    out = [heading, *x_grid(frame.x, TOP, frame.bottom)]
    numbers_at = frame.right + frame.gap
    for i, (name, label) in enumerate(zip(frame.names, frame.labels, strict=True)):
        y = frame.y(i) + FONT * 0.35
        out.append(text_element(frame.left - 6, y, name, ' text-anchor="end"'))
        out.append(f'<g id="row-{i + 1}">{text_element(numbers_at, y, label)}</g>')
    out += [*draw(), axes_corner(frame.left, TOP, frame.right, frame.bottom), foot]
    widest = max((text_width(label) for label in frame.labels), default=0.0)
    return document(max(numbers_at + widest + MARGIN, reach), frame.height, title, out)


def _ends(values: Sequence[float | None]) -> tuple[float, float]:
    """The least and the greatest of the finite values (0 and 1 where there are none)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return min(finite, default=0.0), max(finite, default=1.0)


def forest_svg(rows: Sequence[ForestRow], title: str, xlabel: str) -> bytes:
    """A forest plot, one row per ranker from the top: the difference as a dot on its interval, filled where the
    corrected test finds it significant, hollow where not, grey where too few questions differ to test; a line at
    zero; each row's numbers printed at its right, in an element with id ``row-N`` (N from 1, top down) that the
    audit reads and compares with the page's sourced numbers; as SVG bytes."""
    low, high = _ends([0.0, *(v for row in rows for v in (row.difference, row.low, row.high))])
    pad = 0.05 * (high - low) if high > low else 0.05
    frame = _RowFrame.of(
        [row.name for row in rows], [row.label for row in rows], (low - pad, high + pad), _BRACKET_START
    )

    def draw() -> list[str]:
        x, out = frame.x, []
        out.append(f'<path d="M{number(x(0.0))} {number(TOP)}V{number(frame.bottom)}" stroke="#444444"/>')
        for i, row in enumerate(rows):
            colour, y = BLUE if row.tested else GREY, frame.y(i)
            if _finite(row.low, row.high):
                out.append(_segment(x(row.low), x(row.high), y, colour))
            if _finite(row.difference):
                out.append(_dot(x(row.difference), y, colour, row.significant))
        return out

    return _rows_plot(frame, draw, title, xlabel)


def groups_svg(rows: Sequence[GroupRow], groups: Sequence[RankGroup], title: str, xlabel: str) -> bytes:
    """Each row's mean as a dot on its 95% interval, top down in the order given (the rank groups' order); a
    bracket per rank group right of the axes, joining the rows that share its letter, the letter above it; each
    row's numbers printed at the far right in an element with id ``row-N`` (N from 1, top down) that the audit
    reads and compares with the page's sourced numbers; rows the audit cannot recompute are grey; as SVG bytes."""
    low, high = _ends([v for row in rows for v in (row.mean, row.low, row.high)])
    pad = max(0.05, 0.1 * (high - low))
    xlim = (max(0.0, low - pad), min(1.0, high + pad))
    if not xlim[1] > xlim[0]:  # values beyond 0 to 1: no metric's, but drawn unclamped rather than not at all
        xlim = (low - pad, high + pad)
    step = max([_BRACKET_STEP, *(text_width(g.letter, SMALL_FONT) + 4 for g in groups)])
    frame = _RowFrame.of(
        [row.name for row in rows], [row.label for row in rows], xlim, _BRACKET_START + step * len(groups)
    )

    def draw() -> list[str]:
        x, out = frame.x, []
        for i, row in enumerate(rows):
            colour, y = BLUE if row.verified else GREY, frame.y(i)
            if row.low is not None and row.high is not None and _finite(row.low, row.high):
                out.append(_segment(x(row.low), x(row.high), y, colour))
            if _finite(row.mean):
                out.append(_dot(x(row.mean), y, colour))  # not clipped: a mean of 1.0 sits on the edge
        for n, group in enumerate(groups):
            if not group.rows:
                continue
            at, ys = frame.right + _BRACKET_START + step * n, [frame.y(i) for i in group.rows]
            top, foot = min(ys) - 0.2 * ROW, max(ys) + 0.2 * ROW
            ticks = "".join(f"M{number(at - 3)} {number(y)}h6" for y in ys)
            out.append(f'<path d="M{number(at)} {number(top)}V{number(foot)}{ticks}" stroke="{INK}" fill="none"/>')
            out.append(text_element(at, top - 3, group.letter, ' text-anchor="middle"', SMALL_FONT))
        return out

    return _rows_plot(frame, draw, title, xlabel)
