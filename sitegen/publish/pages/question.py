"""A page per question (each ranker's top 10 as letters, the ranks each pack sends, every passage of the page
once) and the shards of passage texts those pages link to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitegen.publish.pages.base import Page, pointer_part
from sitegen.publish.pages.view import TABLE_METRICS, TOP_N, CorpusView, basis_badge, hits

__all__ = ["PASSAGES_PER_SHARD", "legend", "letter", "question_pages", "question_ties"]

PASSAGES_PER_SHARD = 50


def question_ties(ties: Mapping[str, Any] | None, ranker: str, query_id: str) -> tuple[list[dict[str, Any]], bool]:
    """The metrics of TABLE_METRICS (the corpus page's ties table) on which one ranker's value on one question
    depends on the tie order, with their range; and whether a metric at another cutoff does too (``ties``, the
    corpus's ties.json, lists it; the page says so rather than print a row per cutoff, up to 25 per ranker)."""
    entry = (ties or {}).get("rankers", {}).get(ranker)
    if entry is None:
        return [], False
    depending = {m for m, values in entry["metrics"].items() if query_id in values["questions"]}
    shown = [{"metric": m, **entry["metrics"][m]["questions"][query_id]} for m in TABLE_METRICS if m in depending]
    return shown, bool(depending - set(TABLE_METRICS))


def _anchors(c: CorpusView) -> dict[str, str]:
    """A fragment id per passage: ``p`` and its 1-based position in the corpus. Safe in HTML and URLs whatever
    the passage id holds, unique, and short (a long chunk id would otherwise be printed twice per link)."""
    return {doc_id: f"p{n}" for n, doc_id in enumerate(c.passages, start=1)}


def _passage_shards(c: CorpusView, linked: set[str]) -> tuple[dict[str, str], list[Page]]:
    """Where each passage's full text lives: ``passages/<n>.html#p<position>`` (see :func:`_anchors`), shards of up to
    PASSAGES_PER_SHARD passages, in corpus order, holding only the passages some page links to.

    Why shards: a page per passage repeats the ~3 KB page frame per passage (about 300 MB of frames alone for
    100,000 passages) and writes one file each; one file per corpus would make a reader download every text
    to read one. Shards of 50 bound both: the frame is paid once per 50 texts, a link fetches at most 50
    texts, and a passage that no question page or label names is not published twice (its
    text stays in ``evidence/<corpus>/inputs``)."""
    if c.summary.redacted:
        return {}, []  # no text to show: the question pages give each passage's id, grade and sha256
    anchors = _anchors(c)
    # A passage held by reference for its size (its record has no text) has no text to show: no shard, no link.
    ordered = [doc_id for doc_id in c.passages if doc_id in linked and "text" in c.passages[doc_id]]
    hrefs: dict[str, str] = {}
    pages = []
    count = -(-len(ordered) // PASSAGES_PER_SHARD)
    for n in range(1, count + 1):
        ids = ordered[(n - 1) * PASSAGES_PER_SHARD : n * PASSAGES_PER_SHARD]
        path = c.pages.passages(n)
        hrefs.update({doc_id: f"{path}#{anchors[doc_id]}" for doc_id in ids})
        passages = [{"doc_id": d, "anchor": anchors[d], "doc": c.passages[d]} for d in ids]
        pages.append(Page(path, "passages.html", {"corpus": c, "passages": passages, "shard": n, "shards": count}))
    return hrefs, pages


def _rank_ranges(ranks: list[int]) -> str:
    """Ascending ranks as runs: ``[1, 2, 3, 4, 7, 9, 10]`` is ``1-4, 7, 9-10``."""
    runs: list[list[int]] = []
    for rank in ranks:
        if runs and rank == runs[-1][-1] + 1:
            runs[-1].append(rank)
        else:
            runs.append([rank])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _prompt_context(c: CorpusView, query_id: str) -> dict[str, Any] | None:
    """What a model would receive for one question, as a table on its question page: for each ranker and packing
    setting, the ranks of the ranker's list the pack sends (in that order) and the characters used. The passages
    behind those ranks are the page's top-10 tables and passage list; the preamble and the fence every sent
    passage is wrapped in are shown once, on the corpus page. A page of its own per question, listing each
    ranker's candidates again, cost 6.9 MB at 1,000 questions; printing every sent text on it cost 28 MB."""
    packing = c.packing
    if packing is None:
        return None
    packs = [
        {
            "ranker": ranker,
            "blocks": [
                {"entry": entry, "ranks": _rank_ranges(entry["ranks"])}
                for entry in (packing["packs"][ranker][query_id][setting] for setting in packing["settings"])
            ],
        }
        for ranker in c.rankers
    ]
    return {"packs": packs, "pack_table": {"base": f"{c.files.packing}#/packs", "fmt": "raw"}}


def letter(n: int) -> str:
    """The ``n``-th (0-based) passage letter of a page: A to Z, then AA, AB and so on. A letter is shorter than
    most passage ids and cannot be mistaken for a rank or a score."""
    label = ""
    n += 1
    while n:
        n, rest = divmod(n - 1, 26)
        label = chr(ord("A") + rest) + label
    return label


def legend(
    rankers: list[dict[str, Any]], labelled: list[dict[str, Any]], grades: Mapping[str, int]
) -> list[dict[str, Any]]:
    """Each passage of a question page once, with its letter: the hits in order of first appearance (ranker
    order, then rank), then the labelled passages no ranker put in its top 10. Gives each hit its ``label``, so
    the rankers' tables print a letter per hit and the long id and snippet are printed once, here."""
    found: dict[str, dict[str, Any]] = {}

    def item(doc_id: str, grade: int | None, text: str) -> dict[str, Any]:
        label = letter(len(found))  # the next letter, used only if the passage is new
        return found.setdefault(doc_id, {"label": label, "doc_id": doc_id, "grade": grade, "text": text})

    for ranker in rankers:
        for hit in ranker["hits"]:
            text = hit["snippet"] if hit["snippet"] is not None else hit["title"]
            hit["label"] = item(hit["doc_id"], grades.get(hit["doc_id"]), text)["label"]
    for entry in labelled:
        item(entry["doc_id"], entry["grade"], entry["snippet"])
    return list(found.values())


def _rankers(c: CorpusView, query_id: str) -> list[dict[str, Any]]:
    """Each ranker's part of a question page: its top 10, where its numbers come from, its first relevant rank,
    its metric values and the metrics that depend on its tie order."""
    rankers = []
    for r in c.rankers:
        params = c.runs[r]["params"]
        shown, elsewhere = question_ties(c.ties, r, query_id)
        rankers.append(
            {
                "name": r,
                "badge": basis_badge(c, r),
                "hits": hits(c, r, query_id, TOP_N),
                "run_href": c.run_files[r],
                # the table names the run file and question once; each span gives only ``<index>/1`` (a score, in
                # the "short" format with its six decimals in the title) or ``<index>/2/<n>`` (a fusion's rank in
                # its n-th component, the format most of its spans use)
                "table": {
                    "base": f"{c.run_files[r]}#/queries/{pointer_part(query_id)}",
                    "fmt": "raw" if params.get("components") else "short",
                },
                "components": sorted(params.get("components") or []),
                "first_rank": (c.report["first_relevant_rank"].get(query_id) or {}).get(r),
                "per_query": c.metrics[r]["per_query"].get(query_id),
                "ties": shown,
                "ties_elsewhere": elsewhere,
            }
        )
    return rankers


def _failure(c: CorpusView, query_id: str) -> dict[str, Any] | None:
    """The question's failure class at k = 10, the fusions that lost or rescued it, and its relevant passages'
    count, from report.json; None for a question that is not scored (no relevant passage)."""
    failures, judged = c.report.get("failures"), c.report.get("judged")
    if not failures or query_id not in failures["questions"]:
        return None
    return {
        "class": failures["questions"][query_id],
        "k": failures["k"],
        "lost_by": [f for f, qids in failures["fusion_lost"].items() if query_id in qids],
        "rescued_by": [f for f, qids in failures["fusion_rescued"].items() if query_id in qids],
        "relevant": judged["relevant"][query_id],
    }


def question_pages(c: CorpusView) -> list[Page]:
    """Per question: the page (the rankers' summary, each ranker's top 10 as a compact table of letters and
    scores, the ranks each pack sends, then each passage of the page once with its id, grade and snippet, linked
    to its shard), and the passage shards those pages link to."""
    views = []
    linked: set[str] = set()
    for q in c.queries:
        qid = q["_id"]
        grades = c.grades.get(qid, {})
        labelled = [
            {"doc_id": d, "grade": g, "snippet": c.snippet(d)}
            for d, g in sorted(grades.items(), key=lambda item: (-item[1], item[0]))
            if d in c.passages
        ]
        rankers = _rankers(c, qid)
        shown = legend(rankers, labelled, grades)
        linked.update(item["doc_id"] for item in labelled)
        linked.update(hit["doc_id"] for r in rankers for hit in r["hits"] if hit["doc_id"] in c.passages)
        views.append((q, labelled, rankers, shown))
    hrefs, pages = _passage_shards(c, linked)
    common = {
        "corpus": c,
        "passage_href": hrefs,
        # the summary and ties tables name their evidence file once (see ev_in); the summary's first
        # relevant ranks, from report.json, carry their whole source
        "summary_table": {"base": f"{c.files.metrics}#", "fmt": "score"},
        "ties_table": {"base": f"{c.files.ties}#/rankers", "fmt": "score"},
    }
    for q, labelled, rankers, shown in views:
        path = c.pages.question(q["_id"])
        context = {
            "query": q,
            "question_href": path,
            "labelled": labelled,
            "rankers": rankers,
            "legend": shown,
            "prompt": _prompt_context(c, q["_id"]),
            "failure": _failure(c, q["_id"]),
        }
        pages.append(Page(path, "question.html", common | context))
    return pages
