"""One corpus as its pages see it: the evidence read back typed (:class:`sitegen.publish.reader.CorpusEvidence`),
with where its pages lie and its README as HTML, and the tables more than one page family prints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from markupsafe import Markup

from sitegen.publish.layout import CorpusPages
from sitegen.publish.pages.base import readme_lead, render_markdown, snippet, with_sources
from sitegen.publish.reader import CorpusEvidence, CorpusReader, SiteFolder

__all__ = [
    "HEADLINE_METRICS",
    "TABLE_METRICS",
    "TOP_N",
    "CorpusView",
    "basis_badge",
    "hits",
    "metric_table",
    "rank_letters",
    "read_view",
    "row_label",
    "withheld",
]

HEADLINE_METRICS = ("hit@1", "hit@5", "mrr@10", "ndcg@10")
TABLE_METRICS = ("hit@1", "hit@3", "hit@5", "hit@10", "recall@10", "precision@5", "mrr@10", "ndcg@10")
TOP_N = 10


@dataclass(frozen=True)
class CorpusView(CorpusEvidence):
    """A corpus's evidence, every number carrying its source (``with_sources``) and each run cut to each question's
    first TOP_N hits (no page prints more), plus what its pages add."""

    pages: CorpusPages
    readme_html: Markup
    readme_lead: Markup
    #: A packing setting's column title, on the corpus page and each question page.
    setting_titles: Mapping[str, str]
    #: The rankers the audit cannot recompute from the bundle, each with its :func:`basis_badge` code.
    badges: Mapping[str, str]
    #: Each passage's snippet by id, made when a page first asks for it (:meth:`snippet`).
    snippets: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def snippet(self, doc_id: str) -> str:
        """:func:`passage_snippet` of one of the corpus's passages, made once however many pages show it."""
        made = self.snippets.get(doc_id)
        if made is None:
            made = self.snippets[doc_id] = passage_snippet(self.passages[doc_id])
        return made


def _setting_title(setting: str, top_n: int) -> str:
    return f"top {top_n} passages, no budget" if setting.startswith("top") else f"{setting} characters"


def read_view(site_dir: Path, name: str) -> CorpusView:
    """Everything the corpus's pages show, read from the bundle at ``site_dir``."""
    evidence = CorpusReader(SiteFolder(site_dir), name, with_sources, top=TOP_N).read()
    readme = render_markdown(evidence.readme)
    packing = evidence.packing
    badges = {r: code for r in evidence.rankers if (code := basis_badge(evidence, r)) is not None}
    return CorpusView(
        **{f.name: getattr(evidence, f.name) for f in fields(CorpusEvidence)},
        pages=CorpusPages(name),
        readme_html=readme,
        readme_lead=readme_lead(readme),
        setting_titles={s: _setting_title(s, packing["top_n"]) for s in packing["settings"]} if packing else {},
        badges=badges,
    )


def basis_badge(c: CorpusEvidence, ranker: str) -> str | None:
    """Which note a page prints beside a ranker whose lists the audit cannot recompute from the bundle:
    ``external`` (another system's run, or a fusion over one), ``postgres`` (PostgreSQL's text search, or a fusion
    over it), None for a verified ranker. From report.json's ``basis``, which the audit recomputes; the words
    are the templates' (partials/ranker.html)."""
    basis = c.report.get("basis", {}).get(ranker, ())
    if "external" in basis or ranker in c.external:
        return "external"
    if "model" in basis:
        return "model"
    return "postgres" if "postgres" in basis else None


def withheld(record: Mapping[str, Any]) -> str | None:
    """What a page shows for a text a redacted bundle withholds: its sha256, cut to 16 hex digits (the
    evidence has all 64); for a text held by reference for its size, that it is; None for a passage or question
    whose text is published."""
    if "text" in record:
        return None
    if "text_sha256" not in record:  # a corpus too large to copy: its texts are held by reference, not hashed
        return "text held by reference (not in the bundle)"
    return f"text withheld, sha256 {record['text_sha256'][:16]}…"


def passage_title(doc: Mapping[str, Any]) -> str:
    return withheld(doc) or doc.get("title") or doc["text"][:80]


def passage_snippet(doc: Mapping[str, Any]) -> str:
    if (hidden := withheld(doc)) is not None:
        return hidden
    title = doc.get("title") or ""
    return snippet(f"{title}: {doc['text']}" if title else doc["text"])


def hits(c: CorpusView, ranker: str, query_id: str, top: int) -> list[dict[str, Any]]:
    """A ranker's first ``top`` hits (at most TOP_N, all the view keeps) for one question, each with its passage's
    title, snippet and grade."""
    if top > TOP_N:
        raise ValueError(f"the view keeps {TOP_N} hits a question, not {top}")
    grades = c.grades.get(query_id, {})
    rows = []
    for hit in c.runs[ranker]["queries"].get(query_id, [])[:top]:
        doc = c.passages.get(hit["doc_id"])
        rows.append(
            {
                "rank": hit["rank"],
                "doc_id": hit["doc_id"],
                "title": passage_title(doc) if doc else "(not a passage of this corpus; named by an external run)",
                "snippet": c.snippet(hit["doc_id"]) if doc else None,
                "score": hit["score"],
                "grade": grades.get(hit["doc_id"], 0),
                "judged": hit["doc_id"] in grades,
                "components": hit.get("components"),
            }
        )
    return rows


def rank_letters(c: CorpusEvidence) -> dict[str, dict[str, Any]]:
    """Per tested metric: each ranker's group letters, and the rankers of the leading row when its group holds
    no other row (the only cells a table puts in bold). From experiments.json's ``significance.groups``."""
    groups = (c.experiments or {}).get("significance", {}).get("groups") or {}
    found: dict[str, dict[str, Any]] = {}
    for metric, table in groups.items():
        letters = {r: row["letters"] for row in table["rows"] for r in row["rankers"]}
        best = set(table["rows"][0]["rankers"]) if table["best_alone"] else set()
        found[metric] = {"letters": letters, "best": best}
    return found


def row_label(rankers: Sequence[str]) -> str:
    """Rankers merged as identical, named once: ``dense ≡ pg-vector``."""
    return " \u2261 ".join(rankers)


def metric_table(c: CorpusView, kind: str | None, metrics: tuple[str, ...]) -> dict[str, Any]:
    """A ranker x metric table (overall, or for one question kind) with counts for hit@k. Overall, each tested
    metric's cell carries the ranker's rank-group letters, and the leading value is bold only when its group
    holds no other row; every other column (and every per-kind table, which has no tests) marks its highest
    verified value with a dagger only: highest, not shown to be better."""
    report = c.report
    if kind is None:
        n, counts, best = report["questions"]["overall"], report["hit_counts"]["overall"], report["best"]["overall"]
    else:
        n = report["questions"]["by_kind"][kind]
        counts, best = report["hit_counts"]["by_kind"][kind], report["best"]["by_kind"][kind]
    groups = rank_letters(c) if kind is None else {}
    rows = []
    for ranker, members in _table_rows(c, metrics):
        values = c.metrics[ranker]["overall"] if kind is None else c.metrics[ranker]["by_kind"][kind]
        cells = []
        for m in metrics:
            count = counts[ranker].get(m)
            tested = groups.get(m)
            cells.append(
                {
                    "value": values[m],
                    "count": Markup("{}/{}").format(count, n) if count is not None else None,
                    "letters": tested["letters"].get(ranker) if tested else None,
                    "best": bool(tested) and ranker in tested["best"],
                    "close": not tested and ranker in best[m] and len(best[m]) < len(c.rankers),
                }
            )
        named = [{"name": r, "badge": basis_badge(c, r)} for r in members]
        rows.append({"ranker": row_label(members), "names": named, "cells": cells, "badge": basis_badge(c, ranker)})
    merged = any(len(row["names"]) > 1 for row in rows)
    return {"metrics": metrics, "rows": rows, "n": n, "kind": kind, "grouped": bool(groups), "merged": merged}


def _table_rows(c: CorpusView, metrics: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """Each table row's ranker and the rankers it stands for: a ranker identical to an earlier one on every tested
    metric (one row of the significance family for each) and equal on every value the table shows, overall and in
    every kind, is shown once, named with it ("dense ≡ pg-vector")."""
    identical = (c.experiments or {}).get("significance", {}).get("identical") or {}
    if not identical:
        return [(r, [r]) for r in c.rankers]

    def same(a: str, b: str) -> bool:
        together = all(any(a in cls and b in cls for cls in classes) for classes in identical.values())
        scopes = [c.metrics[a]["overall"], *c.metrics[a]["by_kind"].values()]
        others = [c.metrics[b]["overall"], *c.metrics[b]["by_kind"].values()]
        return together and all(x[m] == y[m] for x, y in zip(scopes, others, strict=True) for m in metrics)

    rows: list[tuple[str, list[str]]] = []
    for ranker in c.rankers:
        home = next((members for first, members in rows if same(first, ranker)), None)
        if home is None:
            rows.append((ranker, [ranker]))
        else:
            home.append(ranker)
    return rows
