"""SVG written as text: the pieces every plot of the site is made of. Same data, same bytes, in under a millisecond.

matplotlib took 0.2 to 0.7 s to draw each plot and about a second to import in every process, so the plots are
written directly. Text widths are estimated from the number of characters, with room to spare, since no font is
measured; the canvas is sized from those estimates so no text runs off it. Every coordinate is printed with two
decimals (:func:`number`), so the same data gives the same bytes on every machine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

__all__ = [
    "CHAR_WIDTH",
    "ENTRY",
    "FONT",
    "INK",
    "LEFT",
    "LEGEND_GAP",
    "MARGIN",
    "PALETTE",
    "PLOT_HEIGHT",
    "PLOT_WIDTH",
    "SMALL_FONT",
    "TITLE_FONT",
    "TOP",
    "CategoryFrame",
    "Scale",
    "axes_corner",
    "box_swatch",
    "category_axes",
    "clip_area",
    "document",
    "headings",
    "legend_entry",
    "legend_width",
    "line_swatch",
    "nice_ticks",
    "number",
    "text_element",
    "text_width",
    "tick_label",
    "x_grid",
    "y_grid",
    "y_label",
]

#: matplotlib's default colour cycle ("tab10"), the colours the site's plots have always had.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
CHAR_WIDTH = 0.62  # a character's width as a share of the font size: generous for sans-serif
FONT, TITLE_FONT, SMALL_FONT = 12.0, 13.0, 10.0  # px
PLOT_WIDTH, PLOT_HEIGHT = 300.0, 180.0  # the plot area, where the data's size does not decide it
LEFT, TOP = 62.0, 30.0  # room for the y tick labels and the y label; for the title
ENTRY = 18.0  # height of a legend entry
LEGEND_GAP, SWATCH_ROOM = 16.0, 30.0  # from the plot area to a legend's swatches; from a swatch to its name
MARGIN = 8.0  # kept free at the canvas's edges
TILT = 30  # degrees: category labels wider than their slot are turned
INK, GRID = "#333", "#e4e4e4"  # axes and tick marks; grid lines


def text_width(text: str, size: float = FONT) -> float:
    """The room ``text`` takes, estimated from its length: no font is measured, so the same text, the same size."""
    return len(text) * size * CHAR_WIDTH


def number(value: float) -> str:
    """A coordinate with two decimals and no trailing zeros: the same text for the same value on every machine."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def text_element(x: float, y: float, content: str, extra: str = "", size: float = FONT) -> str:
    """A ``<text>`` at (x, y), its content escaped (``&``, ``<``, ``>``), ``extra`` attributes as written."""
    return f'<text x="{number(x)}" y="{number(y)}" font-size="{number(size)}"{extra}>{escape(content)}</text>'


def nice_ticks(low: float, high: float, most: int = 6) -> list[float]:
    """At most ``most`` tick values from ``low`` to ``high``, a step of 1, 2, 2.5 or 5 times a power of ten apart."""
    if not high > low:
        return [low]
    rough = (high - low) / (most - 1)
    power = 10.0 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= rough * (1 - 1e-9))
    first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)]


def tick_label(value: float, ticks: Sequence[float]) -> str:
    """The value with as many decimals as the finest tick needs, at least one (0.0, 0.2, ... 1.0)."""
    decimals = max(len(f"{t:.6f}".rstrip("0").partition(".")[2]) for t in ticks)
    return f"{value:.{max(decimals, 1)}f}"


def _decade_ticks(low: float, high: float) -> list[float]:
    """Powers of ten from ``low`` to ``high``; where fewer than two fall in the range, round values from
    :func:`nice_ticks`, so a range within one decade still has ticks to read."""
    decades = [10.0**k for k in range(math.ceil(math.log10(low) - 1e-9), math.floor(math.log10(high) + 1e-9) + 1)]
    return decades if len(decades) >= 2 else [t for t in nice_ticks(low, high) if t > 0]


@dataclass(frozen=True)
class Scale:
    """An axis: values from ``low`` to ``high`` drawn from pixel ``start`` to pixel ``end`` (``end`` above
    ``start`` for a y axis, as SVG's y grows downwards), linearly or on a log scale."""

    low: float
    high: float
    start: float
    end: float
    log: bool = False

    def __call__(self, value: float) -> float:
        if self.log:
            low, high = math.log10(self.low), math.log10(self.high)
            return self.start + (self.end - self.start) * (math.log10(value) - low) / (high - low)
        return self.start + (self.end - self.start) * (value - self.low) / (self.high - self.low)

    def ticks(self) -> list[float]:
        return _decade_ticks(self.low, self.high) if self.log else nice_ticks(self.low, self.high)

    def label(self, value: float, ticks: Sequence[float]) -> str:
        """A log axis's values as written (1, 10, 100, 0.5); a linear one's with the decimals its ticks need."""
        if self.log:
            return f"{value:.0f}" if value >= 1e5 else f"{value:g}"
        return tick_label(value, ticks)


def y_grid(scale: Scale, left: float, right: float) -> list[str]:
    """A light line across the plot area at each y tick, the tick's value at its left."""
    out = []
    ticks = scale.ticks()
    for tick in ticks:
        y = scale(tick)
        out.append(f'<path d="M{number(left)} {number(y)}H{number(right)}" stroke="{GRID}"/>')
        out.append(text_element(left - 6, y + FONT * 0.35, scale.label(tick, ticks), ' text-anchor="end"'))
    return out


def x_grid(scale: Scale, top: float, bottom: float) -> list[str]:
    """A light line up the plot area at each x tick, a tick mark below it and the tick's value under that."""
    out = []
    ticks = scale.ticks()
    for tick in ticks:
        x = scale(tick)
        out.append(f'<path d="M{number(x)} {number(top)}V{number(bottom)}" stroke="{GRID}"/>')
        out.append(f'<path d="M{number(x)} {number(bottom)}v4" stroke="{INK}"/>')
        out.append(text_element(x, bottom + 8 + FONT, scale.label(tick, ticks), ' text-anchor="middle"'))
    return out


def axes_corner(left: float, top: float, right: float, bottom: float) -> str:
    """The left and bottom axes lines of a plot area (no top or right ones)."""
    return f'<path d="M{number(left)} {number(top)}V{number(bottom)}H{number(right)}" stroke="{INK}" fill="none"/>'


def y_label(left: float, middle: float, text: str) -> str:
    """The y axis's label, turned to read upwards, 46 px left of a plot area starting at ``left`` (left of its
    tick labels), centred on ``middle``."""
    x = left - 46
    return text_element(x, middle, text, f' text-anchor="middle" transform="rotate(-90 {number(x)} {number(middle)})"')


def headings(centre: float, height: float, title: str, xlabel: str) -> tuple[str, str, float]:
    """The title above the plot area and the x label at the canvas's foot (``height``), each centred on
    ``centre`` or, where it would start left of the margin, moved right just enough; and the canvas width the
    two need, so neither runs off either side."""
    placed, reach = [], 0.0
    for text, y, size in ((title, TOP - 12, TITLE_FONT), (xlabel, height - 8, FONT)):
        half = text_width(text, size) / 2
        x = max(centre, MARGIN + half)
        placed.append(text_element(x, y, text, ' text-anchor="middle"', size))
        reach = max(reach, x + half + MARGIN)
    return placed[0], placed[1], reach


def clip_area(left: float, top: float, width: float, height: float) -> str:
    """``<clipPath id="area">``: the plot area and 5 px around it, so dots at the edges show whole."""
    area = f'x="{number(left - 5)}" y="{number(top - 5)}" width="{number(width + 10)}" height="{number(height + 10)}"'
    return f'<clipPath id="area"><rect {area}/></clipPath>'


def legend_width(names: Sequence[str]) -> float:
    """The room a legend takes right of the plot area: the gap, the swatches, the widest name and the margin."""
    return LEGEND_GAP + SWATCH_ROOM + max((text_width(name) for name in names), default=0.0) + MARGIN


def legend_entry(x: float, y: float, swatch: str, name: str) -> str:
    """A legend entry: its swatch (drawn at (x, y), 22 px wide) and its name after it."""
    return swatch + text_element(x + SWATCH_ROOM, y + FONT * 0.35, name)


def line_swatch(x: float, y: float, colour: str, stroke_width: str = "1.8") -> str:
    """A line's legend swatch: 22 px of the line."""
    return f'<path d="M{number(x)} {number(y)}h22" stroke="{colour}" stroke-width="{stroke_width}"/>'


def box_swatch(x: float, y: float, colour: str, extra: str = "") -> str:
    """A bar's or a band's legend swatch: a 22 by 10 px box of its colour."""
    return f'<rect x="{number(x)}" y="{number(y - 5)}" width="22" height="10" fill="{colour}"{extra}/>'


def document(width: float, height: float, title: str, parts: Sequence[str]) -> bytes:
    """The SVG file: ``width`` by ``height`` px, its ``<title>`` (what a screen reader names it by), a white
    background (dark text on white, whatever the page around it) and ``parts`` in order, one a line; UTF-8."""
    w, h = number(width), number(height)
    head = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        'font-family="DejaVu Sans, Arial, sans-serif" fill="#222">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{w}" height="{h}" fill="#fff"/>',
    ]
    return ("\n".join([*head, *parts, "</svg>"]) + "\n").encode("utf-8")


@dataclass(frozen=True)
class CategoryFrame:
    """Where a plot over categories (the line and bar charts) puts the plot area, the category labels (turned
    where wider than their slot) and the legend at its right (one entry per series from the top), from the
    data's sizes."""

    x_count: int
    ylim: tuple[float, float]
    left: float  # of the plot area
    plot_width: float
    plot_height: float
    tilted: bool
    width: float
    height: float

    @classmethod
    def of(
        cls, x_labels: Sequence[str], names: Sequence[str], ylim: tuple[float, float], plot_width: float = PLOT_WIDTH
    ) -> CategoryFrame:
        slot = plot_width / max(len(x_labels), 1)
        widest = max((text_width(label) for label in x_labels), default=0.0)
        tilted = widest > slot - 6
        labels_height = widest * math.sin(math.radians(TILT)) + FONT if tilted else FONT
        # a turned label ends under its tick and reaches left: the first one must not start left of the margin
        left = max(LEFT, widest * math.cos(math.radians(TILT)) - slot / 2 + MARGIN if tilted else 0.0)
        plot_height = max(PLOT_HEIGHT, ENTRY * len(names))  # as tall as the legend beside it
        width = left + plot_width + legend_width(names)
        height = TOP + plot_height + 38 + labels_height
        return cls(len(x_labels), ylim, left, plot_width, plot_height, tilted, width, height)

    @property
    def top(self) -> float:
        return TOP

    @property
    def bottom(self) -> float:
        return TOP + self.plot_height

    @property
    def right(self) -> float:
        return self.left + self.plot_width

    @property
    def y(self) -> Scale:
        return Scale(self.ylim[0], self.ylim[1], self.bottom, self.top)

    def x(self, i: int) -> float:
        """The middle of category ``i``'s slot."""
        return self.left + self.plot_width * (i + 0.5) / max(self.x_count, 1)

    def legend(self, n: int) -> tuple[float, float]:
        """Where legend entry ``n`` (from 0) draws its swatch."""
        return self.right + LEGEND_GAP, self.top + 6 + ENTRY * n


def category_axes(
    frame: CategoryFrame, x_labels: Sequence[str], title: str, xlabel: str, ylabel: str
) -> tuple[list[str], float]:
    """The title, grid lines and labels of the y ticks, ticks and labels of the categories, the two axes and
    their labels; and the canvas width: the frame's, or more where the title or x label needs it."""
    heading, foot, reach = headings(frame.left + frame.plot_width / 2, frame.height, title, xlabel)
    out = [heading, *y_grid(frame.y, frame.left, frame.right)]
    for i, label in enumerate(x_labels):
        x, y = frame.x(i), frame.bottom + 8 + FONT
        out.append(f'<path d="M{number(x)} {number(frame.bottom)}v4" stroke="{INK}"/>')
        turn = f' text-anchor="end" transform="rotate(-{TILT} {number(x)} {number(y)})"'
        out.append(text_element(x, y, label, turn if frame.tilted else ' text-anchor="middle"'))
    out += [axes_corner(frame.left, frame.top, frame.right, frame.bottom), foot]
    out.append(y_label(frame.left, frame.top + frame.plot_height / 2, ylabel))
    return out, max(frame.width, reach)
