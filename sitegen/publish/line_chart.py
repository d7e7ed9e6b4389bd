"""Line charts written as SVG text: same data, same bytes, in under a millisecond.

The sweep plots are most of a site's plots, and matplotlib took about 0.2 s to draw each one (0.27 ms here), so
they are written directly. Text widths are estimated from the number of characters, with room to spare, since no
font is measured. The colours are matplotlib's default cycle, as in the site's other plots.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

__all__ = ["line_svg", "nice_ticks"]

#: matplotlib's default colour cycle ("tab10").
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
CHAR_WIDTH = 0.62  # a character's width as a share of the font size: generous for sans-serif
FONT, TITLE_FONT = 12.0, 13.0  # px
PLOT_WIDTH, PLOT_HEIGHT = 300.0, 180.0
LEFT, TOP = 62.0, 30.0  # room for the y tick labels and the y label; for the title
ENTRY = 18.0  # height of a legend entry
TILT = 30  # degrees: x labels wider than their slot are turned


def _width(text: str, size: float = FONT) -> float:
    return len(text) * size * CHAR_WIDTH


def _n(value: float) -> str:
    """A coordinate with two decimals and no trailing zeros: the same text for the same value on every machine."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _text(x: float, y: float, content: str, extra: str = "", size: float = FONT) -> str:
    return f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}"{extra}>{escape(content)}</text>'


def nice_ticks(low: float, high: float, most: int = 6) -> list[float]:
    """At most ``most`` tick values from ``low`` to ``high``, a step of 1, 2, 2.5 or 5 times a power of ten apart."""
    if not high > low:
        return [low]
    rough = (high - low) / (most - 1)
    power = 10.0 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= rough * (1 - 1e-9))
    first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)]


def _tick_label(value: float, ticks: Sequence[float]) -> str:
    """The value with as many decimals as the finest tick needs, at least one (0.0, 0.2, ... 1.0)."""
    decimals = max(len(f"{t:.6f}".rstrip("0").partition(".")[2]) for t in ticks)
    return f"{value:.{max(decimals, 1)}f}"


@dataclass(frozen=True)
class _Frame:
    """Where the plot area, the labels and the legend go, from the data's sizes."""

    x_count: int
    ylim: tuple[float, float]
    bottom: float  # of the plot area
    tilted: bool
    width: float
    height: float

    @classmethod
    def of(cls, x_labels: Sequence[str], names: Sequence[str], ylim: tuple[float, float]) -> _Frame:
        slot = PLOT_WIDTH / max(len(x_labels), 1)
        widest = max((_width(label) for label in x_labels), default=0.0)
        tilted = widest > slot - 6
        labels_height = widest * math.sin(math.radians(TILT)) + FONT if tilted else FONT
        bottom = TOP + max(PLOT_HEIGHT, ENTRY * len(names))
        width = LEFT + PLOT_WIDTH + 16 + 30 + max((_width(name) for name in names), default=0.0) + 8
        return cls(len(x_labels), ylim, bottom, tilted, width, bottom + 38 + labels_height)

    @property
    def top(self) -> float:
        return self.bottom - PLOT_HEIGHT

    def x(self, i: int) -> float:
        return LEFT + PLOT_WIDTH * (i + 0.5) / max(self.x_count, 1)

    def y(self, value: float) -> float:
        low, high = self.ylim
        return self.bottom - PLOT_HEIGHT * (value - low) / (high - low)


def _axes(frame: _Frame, x_labels: Sequence[str], xlabel: str, ylabel: str) -> list[str]:
    """Grid lines and labels of the y ticks, ticks and labels of the x positions, the two axes and their labels."""
    out = []
    ticks = nice_ticks(*frame.ylim)
    for tick in ticks:
        y = frame.y(tick)
        out.append(f'<path d="M{_n(LEFT)} {_n(y)}H{_n(LEFT + PLOT_WIDTH)}" stroke="#e4e4e4"/>')
        out.append(_text(LEFT - 6, y + FONT * 0.35, _tick_label(tick, ticks), ' text-anchor="end"'))
    for i, label in enumerate(x_labels):
        x, y = frame.x(i), frame.bottom + 8 + FONT
        out.append(f'<path d="M{_n(x)} {_n(frame.bottom)}v4" stroke="#333"/>')
        turn = f' text-anchor="end" transform="rotate(-{TILT} {_n(x)} {_n(y)})"'
        out.append(_text(x, y, label, turn if frame.tilted else ' text-anchor="middle"'))
    corner = f"M{_n(LEFT)} {_n(frame.top)}V{_n(frame.bottom)}H{_n(LEFT + PLOT_WIDTH)}"
    out.append(f'<path d="{corner}" stroke="#333" fill="none"/>')
    out.append(_text(LEFT + PLOT_WIDTH / 2, frame.height - 8, xlabel, ' text-anchor="middle"'))
    middle = frame.top + PLOT_HEIGHT / 2
    out.append(_text(16, middle, ylabel, f' text-anchor="middle" transform="rotate(-90 16 {_n(middle)})"'))
    return out


def _line(frame: _Frame, values: Sequence[float], colour: str) -> str:
    """One series: its line, broken where a value is missing (NaN), and a dot on each value, clipped to the area."""
    points = [(frame.x(i), frame.y(v)) if math.isfinite(v) else None for i, v in enumerate(values)]
    moves, pen_down = [], False
    for point in points:
        if point is not None:
            moves.append(f"{'L' if pen_down else 'M'}{_n(point[0])} {_n(point[1])}")
        pen_down = point is not None
    parts = [f'<g clip-path="url(#area)" stroke="{colour}" fill="{colour}">']
    if moves:
        parts.append(f'<path d="{"".join(moves)}" fill="none" stroke-width="1.8"/>')
    parts += [f'<circle cx="{_n(x)}" cy="{_n(y)}" r="3.2"/>' for x, y in filter(None, points)]
    return "".join(parts) + "</g>"


def _legend_entry(frame: _Frame, n: int, name: str, colour: str) -> str:
    x, y = LEFT + PLOT_WIDTH + 16, frame.top + 6 + ENTRY * n
    mark = f'<path d="M{_n(x)} {_n(y)}h22" stroke="{colour}" stroke-width="1.8"/>'
    dot = f'<circle cx="{_n(x + 11)}" cy="{_n(y)}" r="3.2" fill="{colour}"/>'
    return mark + dot + _text(x + 30, y + FONT * 0.35, name)


def line_svg(
    x_labels: Sequence[str],
    series: Mapping[str, Sequence[float]],
    title: str,
    xlabel: str,
    ylabel: str,
    ylim: tuple[float, float] = (0.0, 1.0),
) -> bytes:
    """One line per series over categorical x positions, with a legend at the right, as SVG bytes."""
    frame = _Frame.of(x_labels, list(series), ylim)
    w, h = _n(frame.width), _n(frame.height)
    area = f'x="{_n(LEFT - 5)}" y="{_n(frame.top - 5)}" width="{_n(PLOT_WIDTH + 10)}" height="{_n(PLOT_HEIGHT + 10)}"'
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        'font-family="DejaVu Sans, Arial, sans-serif" fill="#222">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{w}" height="{h}" fill="#fff"/>',
        f'<clipPath id="area"><rect {area}/></clipPath>',
        _text(LEFT + PLOT_WIDTH / 2, TOP - 12, title, ' text-anchor="middle"', TITLE_FONT),
        *_axes(frame, x_labels, xlabel, ylabel),
    ]
    for n, (name, values) in enumerate(series.items()):
        colour = PALETTE[n % len(PALETTE)]
        out += [_line(frame, values, colour), _legend_entry(frame, n, name, colour)]
    return ("\n".join([*out, "</svg>"]) + "\n").encode("utf-8")
