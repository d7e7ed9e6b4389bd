"""The home page's cards: each corpus's headline table, opened by a picture of its rank groups."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sitegen.publish.pages.base import Site, format_score
from sitegen.publish.pages.view import HEADLINE_METRICS, CorpusView, metric_table, row_label
from sitegen.publish.plots import GroupRow, RankGroup, groups_svg

__all__ = ["GROUPS_METRIC", "home_cards"]

#: The metric of a card's picture when the significance tests cover it (the headline sentence's); else the last
#: metric they test.
GROUPS_METRIC = "ndcg@10"
#: One group's letter in a row's letters: a to Z, then g53, g54, ... (sitegen.scoring.statistics names them so).
_LETTER = re.compile(r"g\d+|[A-Za-z]")


def _rank_groups(table: Mapping[str, Any]) -> list[RankGroup]:
    """Each group's letter and rows: a row's letters name, in group order, the groups it belongs to."""
    found = []
    for n, members in enumerate(table["groups"]):
        first = members[0]
        belongs = [g for g, rows in enumerate(table["groups"]) if first in rows]
        letters = _LETTER.findall(table["rows"][first]["letters"])
        if len(letters) != len(belongs):
            raise ValueError(f"row {first}'s letters {table['rows'][first]['letters']!r} do not name its groups")
        found.append(RankGroup(letters[belongs.index(n)], tuple(members)))
    return found


def _groups_picture(c: CorpusView, site: Site) -> dict[str, Any] | None:
    """The picture a card opens with: each row of the significance family (rankers identical on every question
    merged) with its mean on one metric, the 95% bootstrap interval of that mean and its rank-group letters, in
    the groups' order (verified rows first, then by mean, highest first), all read from experiments.json's
    ``significance.groups``. None where nothing was tested."""
    significance = (c.experiments or {}).get("significance") or {}
    groups = significance.get("groups") or {}
    if not groups:
        return None
    metric = GROUPS_METRIC if GROUPS_METRIC in groups else significance["metrics"][-1]
    table = groups[metric]
    if not table["rows"]:
        return None
    rows = []
    for row in table["rows"]:
        interval = row["ci_low"] is not None
        numbers = f"[{format_score(row['ci_low'])}, {format_score(row['ci_high'])}] " if interval else ""
        plotted = GroupRow(
            row_label(row["rankers"]),
            float(row["mean"]),
            float(row["ci_low"]) if interval else None,
            float(row["ci_high"]) if interval else None,
            bool(row["verified"]),
            f"{format_score(row['mean'])} {numbers}{row['letters']}",
        )
        rows.append({"row": row, "name": plotted.name, "plot": plotted})
    path = c.pages.groups_plot(metric)
    site.plot(
        path,
        groups_svg,
        [r["plot"] for r in rows],
        _rank_groups(table),
        f"{c.name}: {metric}, each ranker's mean",
        f"{metric} (dot: mean; line: its 95% interval)" if significance["intervals"] else f"{metric} (mean)",
    )
    alt = f"Dot plot of each ranker's {metric} with its 95% interval, rank groups as letters: " + "; ".join(
        f"{r['name']} {r['plot'].label}" for r in rows
    )
    return {"metric": metric, "rows": rows, "plot": path, "alt": alt, "significance": significance}


def home_cards(corpora: list[CorpusView], site: Site) -> list[dict[str, Any]]:
    """One card per corpus: its picture of the rank groups, its headline table and its page."""
    return [
        {
            "corpus": c,
            "table": metric_table(c, None, HEADLINE_METRICS),
            "href": c.pages.index,
            "groups": _groups_picture(c, site),
        }
        for c in corpora
    ]
