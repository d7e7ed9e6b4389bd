"""Derived tables the site shows, computed once at build time and stored as evidence.

The pages only format what this module writes to ``evidence/<corpus>/report.json``;
the audit recomputes every value here from the runs, the metrics and the qrels.

Shape::

    {"schema_version": 1,
     "questions": {"overall": n, "by_kind": {kind: n}},
     "hit_counts": {"overall": {ranker: {"hit@k": count}}, "by_kind": {kind: {ranker: {...}}}},
     "basis": {ranker: ["inputs"|"vectors"|"postgres"|"external", ...]} (sitegen.rankers.base.Basis),
     "unverified": {ranker: [the rankers not recomputable from the bundle that its lists rest on]},
     "best": {"overall": {metric: [rankers]}, "by_kind": {kind: {metric: [rankers]}}},
     "best_clear": {"overall": {metric: bool}, "by_kind": {kind: {metric: bool}}},
     "first_relevant_rank": {query_id: {ranker: rank or null}},
     "rank1_disagreements": [{"query_id", "kind", "right_at_1": [...], "wrong_at_1": [...]}],
     "wins_losses": {ranker: {"right_at_1", "only_right_at_1", "only_wrong_at_1"}},
     "samples": [{"kind", "query_id"}], "sample_rule": str, "best_rule": str,
     "failures": {...}, "judged": {...}} (sitegen.scoring.diagnostics)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sitegen.inputs.corpus import Corpus
from sitegen.rankers.base import Basis, Contract, Family
from sitegen.scoring.diagnostics import failure_taxonomy, judged_depth

__all__ = [
    "BEST_RULE",
    "SAMPLE_RULE",
    "derive_report",
    "filtering_report",
    "first_relevant_rank",
    "unverified_rankers",
    "verification_basis",
]

SAMPLE_RULE = (
    "for each question kind, the first question of that kind (in queries.jsonl order) on which the "
    "rankers disagree about rank 1; if they agree on every question of the kind, its first question"
)
BEST_RULE = (
    "the letters after hit@1, hit@5, mrr@10 and nDCG@10 in the overall table are rank groups: rankers sharing a "
    "letter cannot be separated by the corrected paired tests, and the leading value is in bold only when its "
    "group holds no other ranker; every other column, and every per-kind table, has no test behind it, so its "
    "highest value is marked \u2020 only (highest, not shown to be better); only rankers the audit recomputes "
    "from the bundle lead, so an external run, a retriever, PostgreSQL's text search and any fusion over them are "
    "never marked best over a verified row and never lead a rank group over one"
)
_EQUAL = 1e-12


def first_relevant_rank(ranking: Sequence[str], grades: Mapping[str, int]) -> int | None:
    """1-based rank of the first passage with a grade above 0, or None if none was returned."""
    for rank, doc_id in enumerate(ranking, start=1):
        if grades.get(doc_id, 0) > 0:
            return rank
    return None


def _best(values: Mapping[str, float]) -> list[str]:
    top = max(values.values())
    return [r for r, v in values.items() if top - v <= _EQUAL]


def _clear_lead(values: Mapping[str, float], questions: int) -> bool:
    """Whether the highest value leads the next one by more than one question can move a mean of per-question
    values in [0, 1] (1/n): false when every ranker ties, or with one ranker or no question."""
    top = max(values.values(), default=0.0)
    rest = [v for v in values.values() if top - v > _EQUAL]
    return bool(rest) and questions > 0 and top - max(rest) > 1 / questions + _EQUAL


def _hit_counts(
    per_query: Mapping[str, Mapping[str, float]], members: Sequence[str], metric_list: Sequence[str]
) -> dict[str, int]:
    """Questions with a hit at each hit@k; every hit@k is listed, at 0, even when no question is scored."""
    names = [m for m in metric_list if m.startswith("hit@")]
    return {m: sum(1 for q in members if per_query[q][m] > 0) for m in names}


#: The basis of a ranker whose contract declares none, by family: the audit checks such a ranker (a plugin) with
#: its family's verifier.
FAMILY_BASIS = {Family.LEXICAL: (Basis.INPUTS,), Family.DENSE: (Basis.VECTORS,), Family.EXTERNAL: (Basis.EXTERNAL,)}


def _own_basis(contract: Contract) -> tuple[Basis, ...]:
    return contract.basis or FAMILY_BASIS.get(contract.family, ())


def verification_basis(contracts: Mapping[str, Contract]) -> dict[str, list[str]]:
    """What the audit's check of each ranker's lists rests on (:class:`Basis` values, in that order): its own
    basis and, through a fusion, its components'."""

    def rests_on(name: str) -> set[Basis]:
        contract = contracts.get(name)
        if contract is None:
            return set()
        return set(_own_basis(contract)).union(*(rests_on(c) for c in contract.components))

    return {name: [b.value for b in Basis if b in rests_on(name)] for name in contracts}


def unverified_rankers(contracts: Mapping[str, Contract]) -> dict[str, list[str]]:
    """Each ranker whose lists the audit cannot recompute from the bundle, with the rankers (itself or its
    components, in order) that make it so: those whose own basis is not recomputable (an external run or
    retriever, PostgreSQL's text search), and through them any fusion over them."""
    found: dict[str, list[str]] = {}

    def rests_on(name: str) -> list[str]:
        contract = contracts.get(name)
        if contract is None:
            return []
        own = [] if all(b.recomputable for b in _own_basis(contract)) else [name]
        return list(dict.fromkeys([*own, *(r for c in contract.components for r in rests_on(c))]))

    for name in contracts:
        if reasons := rests_on(name):
            found[name] = reasons
    return found


def derive_report(
    corpus: Corpus,
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    metrics: Mapping[str, Mapping[str, Any]],
    contracts: Mapping[str, Contract],
) -> dict[str, Any]:
    """Every derived table for one corpus; ``rankings`` is ``{ranker: {query_id: [doc ids]}}``. Best marks go
    to the verified rankers (see :func:`unverified_rankers`) whenever there is one."""
    rankers = list(rankings)
    unverified = unverified_rankers({r: contracts[r] for r in rankers})
    competing = [r for r in rankers if r not in unverified] or rankers
    scored = [q for q in corpus.queries if corpus.relevant(q.query_id)]
    kinds = list(dict.fromkeys(q.kind for q in scored))
    members = {k: [q.query_id for q in scored if q.kind == k] for k in kinds}
    all_ids = [q.query_id for q in scored]

    best: dict[str, Any] = {"overall": {}, "by_kind": {k: {} for k in kinds}}
    clear: dict[str, Any] = {"overall": {}, "by_kind": {k: {} for k in kinds}}
    metric_list = list(metrics[rankers[0]]["overall"]) if rankers else []
    for metric in metric_list:
        values = {r: metrics[r]["overall"][metric] for r in competing}
        best["overall"][metric] = _best(values)
        clear["overall"][metric] = _clear_lead(values, len(all_ids))
        for kind in kinds:
            values = {r: metrics[r]["by_kind"][kind][metric] for r in competing}
            best["by_kind"][kind][metric] = _best(values)
            clear["by_kind"][kind][metric] = _clear_lead(values, len(members[kind]))

    first = {
        q.query_id: {
            r: first_relevant_rank(rankings[r].get(q.query_id, ()), corpus.relevant(q.query_id)) for r in rankers
        }
        for q in scored
    }
    disagreements = []
    for query in scored:
        right = [r for r in rankers if first[query.query_id][r] == 1]
        if 0 < len(right) < len(rankers):
            wrong = [r for r in rankers if r not in right]
            disagreements.append(
                {"query_id": query.query_id, "kind": query.kind, "right_at_1": right, "wrong_at_1": wrong}
            )
    wins_losses = {
        r: {
            "right_at_1": sum(1 for q in all_ids if first[q][r] == 1),
            "only_right_at_1": sum(1 for d in disagreements if d["right_at_1"] == [r]),
            "only_wrong_at_1": sum(1 for d in disagreements if d["wrong_at_1"] == [r]),
        }
        for r in rankers
    }
    disputed = {d["query_id"] for d in disagreements}
    samples = []
    for kind in kinds:
        chosen = next((q for q in members[kind] if q in disputed), members[kind][0])
        samples.append({"kind": kind, "query_id": chosen})

    return {
        "schema_version": 1,
        "questions": {"overall": len(all_ids), "by_kind": {k: len(v) for k, v in members.items()}},
        "hit_counts": {
            "overall": {r: _hit_counts(metrics[r]["per_query"], all_ids, metric_list) for r in rankers},
            "by_kind": {
                k: {r: _hit_counts(metrics[r]["per_query"], members[k], metric_list) for r in rankers} for k in kinds
            },
        },
        "basis": verification_basis({r: contracts[r] for r in rankers}),
        "unverified": unverified,
        "best": best,
        "best_clear": clear,
        "first_relevant_rank": first,
        "rank1_disagreements": disagreements,
        "wins_losses": wins_losses,
        "samples": samples,
        "failures": failure_taxonomy(corpus, rankings, {r: contracts[r] for r in rankers}),
        "judged": judged_depth(corpus, rankings),
        "sample_rule": SAMPLE_RULE,
        "best_rule": BEST_RULE,
    }


def filtering_report(
    corpus: Corpus,
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    metrics: Mapping[str, Mapping[str, Any]],
    contracts: Mapping[str, Contract],
    top: int = 5,
) -> dict[str, Any]:
    """Filtered next to unfiltered: precision@5 and, in each top 5, passages that fail the
    question's filter (another tenant, type, date or access level) or are superseded revisions.

    Shape: ``{"top": 5, "questions": n, "pairs": [[unfiltered, filtered]],
    "rows": {ranker: {"filtered", "precision@5", "failing_filter", "superseded", "slots"}}}``.
    """
    from sitegen.rankers.filtering import allowed_masks

    masks = allowed_masks(corpus)
    position = {d.doc_id: i for i, d in enumerate(corpus.documents)}
    superseded = {d.doc_id for d in corpus.documents if d.metadata.get("superseded_by")}
    filtered_questions = [q.query_id for q in corpus.queries if masks.get(q.query_id) is not None]
    rows = {}
    for ranker, by_query in rankings.items():
        failing = stale = slots = 0
        for query_id in filtered_questions:
            mask = masks[query_id]
            for doc_id in list(by_query.get(query_id, ()))[:top]:
                slots += 1
                failing += doc_id in position and not mask[position[doc_id]]
                stale += doc_id in superseded
        rows[ranker] = {
            "filtered": contracts[ranker].filtered,
            "precision@5": metrics[ranker]["overall"]["precision@5"],
            "failing_filter": int(failing),
            "superseded": int(stale),
            "slots": slots,
        }
    pairs = [[twin, r] for r in rankings if (twin := contracts[r].unfiltered) is not None and twin in rankings]
    return {"schema_version": 1, "top": top, "questions": len(filtered_questions), "pairs": pairs, "rows": rows}
