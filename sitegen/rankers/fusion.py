"""Reciprocal Rank Fusion (Cormack, Clarke and Buettcher, SIGIR 2009).

fused score of d = sum over lists L with d among L's first ``candidates`` items of
``weight_L / (k + rank_L(d))``.

Tie order (written on the report and reproduced by the audit and the SQL fusion):
a stable sort by fused score, descending, over the order of first appearance when
the lists are read one after another in their configured order, each from rank 1
down. So among equal scores, an item of the first list beats any item found only
in a later list, and within one list the better-ranked item wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sitegen.errors import SitegenError
from sitegen.rankers.base import Contract, Family, Hit, RankInputs, Run

__all__ = ["DEFAULT_RRF", "FusedItem", "RRFRanker", "RRFSettings", "reciprocal_rank_fusion"]

TIE_RULE = (
    "stable sort by fused score, descending; equal scores keep the order of first appearance "
    "when the component lists are read in their configured order, each from rank 1 down"
)


@dataclass(frozen=True)
class FusedItem:
    """A fused item with its score and its 1-based rank in each list (None: absent)."""

    doc_id: str
    score: float
    component_ranks: tuple[int | None, ...]


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[str]],
    k: float = 60.0,
    weights: Sequence[float] | None = None,
    candidates: int | None = 20,
) -> list[FusedItem]:
    """Fuse ranked id lists; ``candidates=None`` reads every list to its end.

    A list whose weight is 0 contributes nothing, not even candidates.
    """
    if weights is None:
        weights = [1.0] * len(ranked_lists)
    if len(weights) != len(ranked_lists):
        raise ValueError(f"{len(weights)} weights given for {len(ranked_lists)} lists")
    if any(w < 0 for w in weights):
        raise ValueError(f"weights must be non-negative, got {list(weights)}")
    if k < 0:
        raise ValueError(f"k must be non-negative, got {k}")
    if candidates is not None and candidates < 1:
        raise ValueError(f"candidates must be at least 1, got {candidates}")
    scores: dict[str, float] = {}
    ranks: dict[str, list[int | None]] = {}
    for position, (items, weight) in enumerate(zip(ranked_lists, weights, strict=True)):
        if weight == 0:
            continue
        for rank, doc_id in enumerate(items[:candidates] if candidates else items, start=1):
            if doc_id in ranks and ranks[doc_id][position] is not None:
                raise ValueError(f"list {position} names {doc_id!r} twice")
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
            ranks.setdefault(doc_id, [None] * len(ranked_lists))[position] = rank
    ordered = sorted(scores, key=lambda d: -scores[d])
    return [FusedItem(d, scores[d], tuple(ranks[d])) for d in ordered]


@dataclass(frozen=True)
class RRFSettings:
    """RRF's ``k``, the candidates taken from each list, and one weight per list (None: 1.0 each)."""

    k: float = 60.0
    candidates: int = 20
    weights: Sequence[float] | None = None


DEFAULT_RRF = RRFSettings()


class RRFRanker:
    """Fusion of named component rankers' runs."""

    def __init__(
        self,
        name: str,
        components: Sequence[str],
        fusion: RRFSettings = DEFAULT_RRF,
        filtered: bool = False,
        unfiltered: str | None = None,
        chunking_sweep: bool = False,
    ) -> None:
        k, candidates, weights = fusion.k, fusion.candidates, fusion.weights
        self.name = name
        self.contract = Contract(
            Family.FUSION,
            "reciprocal rank fusion",
            components=tuple(components),
            filtered=filtered,
            unfiltered=unfiltered,
            chunking_sweep=chunking_sweep,
        )
        self.k = k
        self.candidates = candidates
        self.weights = tuple(weights) if weights is not None else (1.0,) * len(self.contract.components)

    def params(self) -> dict[str, Any]:
        return {
            "method": self.contract.verifier,
            "components": list(self.contract.components),
            "k": self.k,
            "candidates_per_list": self.candidates,
            "weights": dict(zip(self.contract.components, self.weights, strict=True)),
            "ties": TIE_RULE,
        } | (
            {"filtered": True, "filter": "every fused list is filtered by the question's metadata filter"}
            if self.contract.filtered
            else {}
        )

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        missing = [c for c in self.contract.components if c not in inputs.runs]
        if missing:
            raise SitegenError(f"ranker {self.name!r} needs the runs of {missing} first")
        runs = [inputs.runs[c] for c in self.contract.components]
        hits: dict[str, tuple[Hit, ...]] = {}
        for query in inputs.corpus.queries:
            lists = [[h.doc_id for h in run.hits.get(query.query_id, ())] for run in runs]
            fused = reciprocal_rank_fusion(lists, self.k, self.weights, self.candidates)[:depth]
            hits[query.query_id] = tuple(
                Hit(
                    doc_id=item.doc_id,
                    rank=rank,
                    score=item.score,
                    components=tuple(zip(self.contract.components, item.component_ranks, strict=True)),
                )
                for rank, item in enumerate(fused, start=1)
            )
        return Run(ranker=self.name, contract=self.contract, params=self.params(), hits=hits)
