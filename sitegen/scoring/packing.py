"""From ranked hits to what a model would receive: evidence packing and citation checks.

The budget unit is characters, counted as Unicode code points (Python ``len``) of each
passage's indexed text (title, newline, body). Fences and ids added around a passage in
a prompt are not counted: the budget measures evidence, not prompt formatting.

``pack`` keeps whole passages in rank order; a passage that does not fit the budget
left is skipped, and later, smaller passages are still tried.

A citation (an id plus a quote) is valid only if the id was packed into the evidence
and the quote is a nonempty exact substring of that passage. An exact quote proves
provenance, not that the claim citing it follows from the passage.

``evidence/<corpus>/packing.json`` shape::

    {"schema_version": 2, "unit", "candidates", "top_n", "budgets": [..], "settings": ["top3", "20", ...],
     "budgets_from": "sitegen.json" | {"median_characters": m, "multiples": [1, 3, 5, 10]},
     "packs": {ranker: {qid: {setting: {"ranks": [run ranks sent, in prompt order], "used": n}}}},
     "results": {ranker: {"overall": row, "by_kind": {kind: row}}}
         row = {"questions", "rank1", "top3", "answer_included": {setting: count},
                "unanswerable", "unanswerable_with_candidates"},
     "citations": {qid: [{"kind", "doc_id", "quote", "verdicts": {ranker: {setting: verdict}}}]},
     "citation_summary": {ranker: {setting: {verdict: count}}}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sitegen.inputs.corpus import Corpus, passage_text

__all__ = [
    "BUDGET_MULTIPLES",
    "BUDGET_UNIT",
    "PACKING_SCHEMA_VERSION",
    "PACK_CANDIDATES",
    "TOP_N",
    "VERDICTS",
    "Packed",
    "check_citation",
    "derived_budgets",
    "pack",
    "packing_report",
]

BUDGET_UNIT = "characters (Unicode code points) of each passage's title, newline and text"
#: Budgets of a corpus whose sitegen.json sets none: room for about 1, 3, 5 and 10 of its median-length passages,
#: so the budgets suit the corpus (fixed budgets of 20 and 200 characters fit no passage of most corpora).
BUDGET_MULTIPLES: tuple[int, ...] = (1, 3, 5, 10)
PACK_CANDIDATES = 10
TOP_N = 3
#: packing.json: 2 stores each pack as the run ranks it sends (1: the ids sent and skipped)
PACKING_SCHEMA_VERSION = 2
VERDICTS = {
    "valid": "the id was packed and the quote is an exact substring of that passage",
    "unknown-id": "no passage in the corpus has this id",
    "not-in-evidence": "the passage exists but was not packed (not retrieved, or left out by the budget)",
    "quote-not-found": "the id was packed but the quote is not an exact substring of that passage",
    "empty-quote": "the quote is empty",
}


@dataclass(frozen=True)
class Packed:
    """Which passages went into the evidence, which were skipped, and the budget used."""

    included: tuple[str, ...]
    skipped: tuple[str, ...]
    used: int
    budget: int | None


def pack(hits: Sequence[tuple[str, str]], budget: int | None) -> Packed:
    """Pack ``(doc_id, text)`` hits in rank order into ``budget`` characters (None: no limit)."""
    if budget is not None and budget < 0:
        raise ValueError(f"budget must be non-negative, got {budget}")
    included: list[str] = []
    skipped: list[str] = []
    used = 0
    for doc_id, text in hits:
        if budget is None or used + len(text) <= budget:
            included.append(doc_id)
            used += len(text)
        else:
            skipped.append(doc_id)
    return Packed(tuple(included), tuple(skipped), used, budget)


def check_citation(doc_id: str, quote: str, packed: Packed, passages: Mapping[str, str]) -> str:
    """One of :data:`VERDICTS`' keys."""
    if not quote:
        return "empty-quote"
    if doc_id not in passages:
        return "unknown-id"
    if doc_id not in packed.included:
        return "not-in-evidence"
    return "valid" if quote in passages[doc_id] else "quote-not-found"


def derived_budgets(corpus: Corpus) -> tuple[int, tuple[int, ...]]:
    """The median passage length in characters (the lower median, an integer, so every machine agrees) and the
    budgets it gives: that length times each of :data:`BUDGET_MULTIPLES`; at least 1 character."""
    lengths = sorted(len(passage_text(d)) for d in corpus.documents)
    median = max(1, lengths[(len(lengths) - 1) // 2]) if lengths else 1
    return median, tuple(median * k for k in BUDGET_MULTIPLES)


def _settings(budgets: Sequence[int]) -> list[str]:
    return [f"top{TOP_N}"] + [str(b) for b in budgets]


def packing_report(
    corpus: Corpus,
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    citations: Mapping[str, Sequence[Mapping[str, str]]] | None = None,
    budgets: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Packs per ranker, question and setting, the answer-reached-the-prompt counts, and citation verdicts.

    ``budgets`` are the corpus's configured ones (sitegen.json ``packing.budgets``); None derives them from its
    passage lengths (:func:`derived_budgets`), and the evidence records which."""
    budgets_from: str | dict[str, Any] = "sitegen.json"
    if budgets is None:
        median, budgets = derived_budgets(corpus)
        budgets_from = {"median_characters": median, "multiples": list(BUDGET_MULTIPLES)}
    passages = {d.doc_id: passage_text(d) for d in corpus.documents}
    settings = _settings(budgets)
    packs: dict[str, dict[str, dict[str, Any]]] = {}
    results: dict[str, Any] = {}
    for ranker, by_query in rankings.items():
        packs[ranker] = {}
        for query in corpus.queries:
            # An external run may name passages the corpus lacks: they have no text to pack.
            top = [(d, passages[d]) for d in list(by_query.get(query.query_id, ()))[:PACK_CANDIDATES] if d in passages]
            chosen = {f"top{TOP_N}": pack(top[:TOP_N], None)} | {str(b): pack(top, b) for b in budgets}
            packs[ranker][query.query_id] = {
                s: {"included": list(p.included), "skipped": list(p.skipped), "used": p.used} for s, p in chosen.items()
            }
        results[ranker] = _results(corpus, by_query, packs[ranker], settings)
    verdicts: dict[str, list[dict[str, Any]]] = {}
    for query_id, candidates in (citations or {}).items():
        verdicts[query_id] = [
            {
                "kind": c["kind"],
                "doc_id": c["doc_id"],
                "quote": c["quote"],
                "verdicts": {
                    r: {
                        s: check_citation(c["doc_id"], c["quote"], _as_packed(packs[r][query_id][s]), passages)
                        for s in settings
                    }
                    for r in rankings
                },
            }
            for c in candidates
        ]
    summary = {
        r: {
            s: {v: sum(1 for items in verdicts.values() for c in items if c["verdicts"][r][s] == v) for v in VERDICTS}
            for s in settings
        }
        for r in rankings
    }
    return {
        "schema_version": PACKING_SCHEMA_VERSION,
        "unit": BUDGET_UNIT,
        "candidates": PACK_CANDIDATES,
        "top_n": TOP_N,
        "budgets": list(budgets),
        "budgets_from": budgets_from,
        "settings": settings,
        "verdict_meanings": VERDICTS,
        "packs": {r: _stored_packs(packs[r], rankings[r]) for r in packs},
        "results": results,
        "citations": verdicts,
        "citation_summary": summary,
    }


def _stored_packs(
    packs: Mapping[str, Mapping[str, Mapping[str, Any]]], by_query: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """A ranker's packs as ``packing.json`` stores them: the run ranks of the passages sent, not their ids, and
    no skipped list (the candidates are the run's top PACK_CANDIDATES passages, so the skipped ones are the
    rest): schema 1's ids, each candidate listed at every budget, were 2.5 of its 3.2 MB at 1,000 questions."""
    stored: dict[str, dict[str, dict[str, Any]]] = {}
    for query_id, by_setting in packs.items():
        rank = {d: n for n, d in enumerate(by_query.get(query_id, ()), start=1)}
        stored[query_id] = {
            s: {"ranks": [rank[d] for d in p["included"]], "used": p["used"]} for s, p in by_setting.items()
        }
    return stored


def _as_packed(entry: Mapping[str, Any]) -> Packed:
    return Packed(tuple(entry["included"]), tuple(entry["skipped"]), entry["used"], None)


def _results(
    corpus: Corpus, by_query: Mapping[str, Sequence[str]], packs: Mapping[str, Mapping[str, Any]], settings: list[str]
) -> dict[str, Any]:
    def row(queries: list) -> dict[str, Any]:
        answerable = [q for q in queries if corpus.relevant(q.query_id)]
        unanswerable = [q for q in queries if not corpus.relevant(q.query_id)]

        def first_rank(q) -> int | None:
            relevant = corpus.relevant(q.query_id)
            return next((r for r, d in enumerate(by_query.get(q.query_id, ()), 1) if d in relevant), None)

        ranks = [first_rank(q) for q in answerable]
        return {
            "questions": len(answerable),
            "rank1": sum(1 for r in ranks if r == 1),
            "top3": sum(1 for r in ranks if r is not None and r <= 3),
            "answer_included": {
                s: sum(
                    1 for q in answerable if set(packs[q.query_id][s]["included"]) & set(corpus.relevant(q.query_id))
                )
                for s in settings
            },
            "unanswerable": len(unanswerable),
            "unanswerable_with_candidates": sum(1 for q in unanswerable if by_query.get(q.query_id)),
        }

    kinds = list(dict.fromkeys(q.kind for q in corpus.queries))
    return {
        "overall": row(list(corpus.queries)),
        "by_kind": {k: row([q for q in corpus.queries if q.kind == k]) for k in kinds},
    }
