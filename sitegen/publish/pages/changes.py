"""The Changes page of a corpus built with ``--baseline``: what changed since the baseline and whether it
helped, with a per-question difference plot for each ranker whose scores moved."""

from __future__ import annotations

from sitegen.publish.pages.base import Page, Site, format_delta
from sitegen.publish.pages.view import CorpusView
from sitegen.publish.plots import DifferenceBand, difference_svg

__all__ = ["changes_pages"]


def changes_pages(c: CorpusView, site: Site) -> list[Page]:
    """The Changes page and its difference plots; nothing for a corpus without ``changes.json``."""
    changes = c.changes
    if changes is None:
        return []
    current = {q["_id"] for q in c.queries}

    def href(qid: str) -> str | None:
        return c.pages.question(qid) if qid in current else None

    plots = []
    for row in changes["agreement"]:
        if not any(p["difference"] for p in row["points"]):
            continue
        path = c.pages.changes_plot(row["ranker"])
        site.plot(
            path,
            difference_svg,
            [float(p["mean"]) for p in row["points"]],
            [float(p["difference"]) for p in row["points"]],
            DifferenceBand(float(row["mean_difference"]), float(row["ci_low"]), float(row["ci_high"])),
            f"{c.name}: {row['ranker']}, {row['metric']} now vs baseline",
            f"mean of the two {row['metric']} values",
            "now - baseline",
        )
        alt = (
            f"Scatter plot of {row['questions']} questions: mean of the two {row['metric']} values against their "
            f"difference for {row['ranker']}; mean difference {format_delta(row['mean_difference'])}, "
            f"95% interval {format_delta(row['ci_low'])} to {format_delta(row['ci_high'])}"
        )
        plots.append({"row": row, "path": path, "alt": alt})
    moved = [{**m, "href": href(m["query_id"])} for m in changes["moved"]]
    questions = [{"query_id": q, "href": href(q)} for q in changes["moved_questions"]]
    context = {"corpus": c, "changes": changes, "moved": moved, "moved_questions": questions, "plots": plots}
    return [Page(c.pages.changes, "changes.html", context)]
