"""Deterministic SVG plots: same data, same bytes (fixed hash salt, no date metadata)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

__all__ = ["grouped_bar_svg"]

_SALT = "sitegen"


def grouped_bar_svg(
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    title: str,
    xlabel: str,
    ylabel: str,
    ylim: tuple[float, float] = (0.0, 1.0),
) -> bytes:
    """One group of bars per category, one bar per series, as SVG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    with matplotlib.rc_context(
        {
            "svg.hashsalt": _SALT,
            "svg.fonttype": "none",
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    ):
        names = list(series)
        width = 0.8 / max(len(names), 1)
        fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(categories) + 2.5), 3.6))
        for i, name in enumerate(names):
            offsets = [c + (i - (len(names) - 1) / 2) * width for c in range(len(categories))]
            ax.bar(offsets, series[name], width=width, label=name)
        ax.set_xticks(range(len(categories)), list(categories))
        ax.set_ylim(*ylim)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
        plt.close(fig)
    return buffer.getvalue().encode("utf-8")
