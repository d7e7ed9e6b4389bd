"""Deterministic SVG plots: same data, same bytes (fixed hash salt, no date metadata)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

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

_STYLE = {
    "svg.hashsalt": "sitegen",
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def _svg(fig: Any) -> bytes:
    fig.tight_layout()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    _pyplot().close(fig)
    return buffer.getvalue().encode("utf-8")


def _label(ax: Any, title: str, xlabel: str, ylabel: str, ylim: tuple[float, float]) -> None:
    ax.set_ylim(*ylim)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def grouped_bar_svg(
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    title: str,
    xlabel: str,
    ylabel: str,
    ylim: tuple[float, float] = (0.0, 1.0),
) -> bytes:
    """One group of bars per category, one bar per series, as SVG bytes."""
    plt = _pyplot()
    import matplotlib

    with matplotlib.rc_context(_STYLE):
        names = list(series)
        width = 0.8 / max(len(names), 1)
        fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(categories) + 2.5), 3.6))
        for i, name in enumerate(names):
            offsets = [c + (i - (len(names) - 1) / 2) * width for c in range(len(categories))]
            ax.bar(offsets, series[name], width=width, label=name)
        ax.set_xticks(range(len(categories)), list(categories))
        _label(ax, title, xlabel, ylabel, ylim)
        ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        return _svg(fig)


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
    plt = _pyplot()
    import matplotlib

    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(5.2, 3.2))
        ax.axhspan(band.low, band.high, color="#c9daf8", alpha=0.6, label="95% interval of the mean difference")
        ax.axhline(0.0, color="#888888", linewidth=0.8)
        from sitegen.publish.pages.base import format_delta  # here: the pages import this module

        label = f"mean difference {format_delta(band.mean)}"
        ax.axhline(band.mean, color="#1f5fbf", linewidth=1.2, label=label)
        ax.scatter(list(means), list(differences), s=14, color="#333333", alpha=0.7)
        ax.set_xlim(-0.05, 1.05)
        _label(ax, title, xlabel, ylabel, (-1.05, 1.05))
        ax.legend(fontsize=7, frameon=False, loc="lower right")
        return _svg(fig)


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


def forest_svg(rows: Sequence[ForestRow], title: str, xlabel: str) -> bytes:
    """A forest plot, one row per ranker from the top: the difference as a dot on its interval, filled where the
    corrected test finds it significant, hollow where not, grey where too few questions differ to test; a line at
    zero; each row's numbers printed at its right, in an element with id ``row-N`` (N from 1, top down) that the
    audit reads and compares with the page's sourced numbers; as SVG bytes."""
    plt = _pyplot()
    import matplotlib

    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(7.2, 1.1 + 0.3 * len(rows)))
        ys = list(range(len(rows), 0, -1))
        for y, row in zip(ys, rows, strict=True):
            colour = "#1f5fbf" if row.tested else "#8a8a8a"
            ax.plot([row.low, row.high], [y, y], color=colour, linewidth=1.6, solid_capstyle="butt")
            face = colour if row.significant else "white"
            ax.plot([row.difference], [y], marker="o", markersize=5.5, color=colour, markerfacecolor=face)
        ax.axvline(0.0, color="#444444", linewidth=0.8)
        ax.set_ylim(0.4, len(rows) + 0.6)
        ax.set_yticks(ys, [row.name for row in rows])
        numbers = ax.twinx()  # the right-hand labels: laid out with the axes, so tight_layout makes room
        numbers.set_ylim(ax.get_ylim())
        numbers.set_yticks(ys, [row.label for row in rows])
        numbers.tick_params(axis="y", length=0)
        numbers.spines["right"].set_visible(False)
        for n, label in enumerate(numbers.get_yticklabels(), start=1):
            label.set_gid(f"row-{n}")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        return _svg(fig)


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


#: Where the group brackets start right of the axes, and the room each takes, in points.
_BRACKET_START = 8.0
_BRACKET_STEP = 11.0


def groups_svg(rows: Sequence[GroupRow], groups: Sequence[RankGroup], title: str, xlabel: str) -> bytes:
    """Each row's mean as a dot on its 95% interval, top down in the order given (the rank groups' order); a
    bracket per rank group right of the axes, joining the rows that share its letter, the letter above it; each
    row's numbers printed at the far right in an element with id ``row-N`` (N from 1, top down) that the audit
    reads and compares with the page's sourced numbers; rows the audit cannot recompute are grey; as SVG bytes."""
    plt = _pyplot()
    import matplotlib
    from matplotlib.transforms import ScaledTranslation, blended_transform_factory

    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(7.2, 1.3 + 0.3 * len(rows)))
        ys = list(range(len(rows), 0, -1))
        for y, row in zip(ys, rows, strict=True):
            colour = "#1f5fbf" if row.verified else "#8a8a8a"
            if row.low is not None and row.high is not None:
                ax.plot([row.low, row.high], [y, y], color=colour, linewidth=1.6, solid_capstyle="butt")
            ax.plot([row.mean], [y], marker="o", markersize=5.5, color=colour, clip_on=False)  # 1.0 at the edge
        ends = [v for row in rows for v in (row.mean, row.low, row.high) if v is not None]
        low, high = min(ends, default=0.0), max(ends, default=1.0)
        pad = max(0.05, 0.1 * (high - low))
        ax.set_xlim(max(0.0, low - pad), min(1.0, high + pad))
        ax.set_ylim(0.4, len(rows) + 0.6)
        ax.set_yticks(ys, [row.name for row in rows])
        right = blended_transform_factory(ax.transAxes, ax.transData)
        for n, group in enumerate(groups):
            shift = right + ScaledTranslation((_BRACKET_START + _BRACKET_STEP * n) / 72, 0, fig.dpi_scale_trans)
            at = [ys[i] for i in group.rows]
            ax.plot(
                [1.0, 1.0],
                [min(at) - 0.2, max(at) + 0.2],
                transform=shift,
                color="#333333",
                linewidth=1.0,
                clip_on=False,
            )
            for y in at:
                ax.plot([1.0], [y], transform=shift, marker="_", markersize=5, color="#333333", clip_on=False)
            ax.text(
                1.0, max(at) + 0.25, group.letter, transform=shift, ha="center", va="bottom", fontsize=8, clip_on=False
            )
        numbers = ax.twinx()  # the right-hand labels: laid out with the axes, so tight_layout makes room
        numbers.set_ylim(ax.get_ylim())
        numbers.set_yticks(ys, [row.label for row in rows])
        numbers.tick_params(axis="y", length=0, pad=_BRACKET_START + _BRACKET_STEP * len(groups))
        numbers.spines["right"].set_visible(False)
        for n, label in enumerate(numbers.get_yticklabels(), start=1):
            label.set_gid(f"row-{n}")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        return _svg(fig)
