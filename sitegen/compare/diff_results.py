"""What :func:`sitegen.compare.diff.diff_bundles` returns: small frozen dataclasses, and
:meth:`BundleDiff.to_json` (its shape is in :mod:`sitegen.compare.diff`'s module doc)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sitegen.compare.repro import (
    KTU_NOTE,
    NRMSE_NORMALISATION,
    RBO_DEPTH,
    RBO_P,
    PairEffect,
    RankingAgreement,
    ScoreAgreement,
)

__all__ = [
    "DIFF_SCHEMA_VERSION",
    "BundleDiff",
    "EmbeddingDiff",
    "FieldChange",
    "FileDiff",
    "HitRef",
    "MetricChange",
    "PairSkipped",
    "RankMove",
    "Reproduction",
    "RunDiff",
]

DIFF_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class FileDiff:
    """Evidence files by manifest sha256: equal, different, or listed on one side only."""

    identical: tuple[str, ...]
    differ: tuple[str, ...]
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]

    @property
    def total(self) -> int:
        return len(self.identical) + len(self.differ) + len(self.only_in_a) + len(self.only_in_b)


@dataclass(frozen=True)
class HitRef:
    """Where in a run a value sits: the hit the largest score difference was found at."""

    query_id: str
    doc_id: str
    rank: int


@dataclass(frozen=True)
class RunDiff:
    """One (corpus, ranker) run present in both bundles.

    Scores are compared only where both runs hold the same document at the same rank, so a
    ranking change is never reported twice (once as ids, once as a huge "score difference").
    """

    corpus: str
    ranker: str
    queries: int
    differing_queries: tuple[str, ...]
    compared_hits: int
    max_score_diff: float
    max_score_at: HitRef | None
    params_differ: bool

    @property
    def rankings_identical(self) -> bool:
        return not self.differing_queries


@dataclass(frozen=True)
class MetricChange:
    """One overall metric value of one ranker on one corpus in A and B (``None``: absent there)."""

    corpus: str
    ranker: str
    metric: str
    a: float | None
    b: float | None

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def changed(self) -> bool:
        # Exact on purpose: the same rankings give bit-identical metrics, so any change is news.
        return self.a != self.b


@dataclass(frozen=True)
class RankMove:
    """A question whose first relevant passage moved: its 1-based rank before (A) and after (B),
    ``None`` when no relevant passage is in that run."""

    corpus: str
    ranker: str
    query_id: str
    before: int | None
    after: int | None


@dataclass(frozen=True)
class EmbeddingDiff:
    """One stored vector array in both bundles; compared component by component only when its row
    ids and shape match (otherwise ``max_abs_diff`` is ``None``: the rows are different vectors)."""

    corpus: str
    file: str
    ids_match: bool
    shape_a: tuple[int, ...]
    shape_b: tuple[int, ...]
    max_abs_diff: float | None
    at_id: str | None
    at_component: int | None


@dataclass(frozen=True)
class FieldChange:
    """A manifest field outside ``files`` (dotted for nested ones, e.g. ``libraries.numpy``) that differs."""

    field: str
    a: Any
    b: Any


@dataclass(frozen=True)
class PairSkipped:
    """A requested baseline/advanced pair that could not be compared on a corpus, and why."""

    corpus: str
    baseline: str
    advanced: str
    reason: str


@dataclass(frozen=True)
class Reproduction:
    """How closely B (the rerun) reproduces A (the original); measures of :mod:`sitegen.compare.repro`."""

    scores: tuple[ScoreAgreement, ...] = ()
    effects: tuple[PairEffect, ...] = ()
    pairs_not_compared: tuple[PairSkipped, ...] = ()
    rankings: tuple[RankingAgreement, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "nrmse_normalisation": NRMSE_NORMALISATION,
            "rbo": {"p": RBO_P, "depth": RBO_DEPTH},
            "kendall_tau_union": KTU_NOTE,
            "scores": [
                {
                    "corpus": s.corpus,
                    "ranker": s.ranker,
                    "metric": s.metric,
                    "questions": s.questions,
                    "questions_only_in_a": s.only_in_a,
                    "questions_only_in_b": s.only_in_b,
                    "rmse": s.rmse,
                    "nrmse": s.nrmse,
                    "undefined": s.undefined,
                }
                for s in self.scores
            ],
            "effects": [
                {
                    "corpus": e.corpus,
                    "baseline": e.baseline,
                    "advanced": e.advanced,
                    "metric": e.metric,
                    "questions_a": e.questions_a,
                    "questions_b": e.questions_b,
                    "improvement_a": e.improvement_a,
                    "improvement_b": e.improvement_b,
                    "er": e.er,
                    "er_undefined": e.er_undefined,
                    "ri_a": e.ri_a,
                    "ri_b": e.ri_b,
                    "delta_ri": e.delta_ri,
                    "delta_ri_undefined": e.delta_ri_undefined,
                }
                for e in self.effects
            ],
            "pairs_not_compared": [
                {"corpus": p.corpus, "baseline": p.baseline, "advanced": p.advanced, "reason": p.reason}
                for p in self.pairs_not_compared
            ],
            "rankings": [
                {
                    "corpus": r.corpus,
                    "ranker": r.ranker,
                    "questions": r.questions,
                    "depth": r.depth,
                    "mean_rbo_ext": r.mean_rbo,
                    "min_rbo_ext": r.min_rbo,
                    "min_at": r.min_at,
                }
                for r in self.rankings
            ],
        }


@dataclass(frozen=True)
class BundleDiff:
    """Everything :func:`diff_bundles` found; :attr:`equivalent` is the CLI's exit-0 condition."""

    a: str
    b: str
    tolerance: float
    files: FileDiff
    runs: tuple[RunDiff, ...]
    runs_only_in_a: tuple[str, ...]
    runs_only_in_b: tuple[str, ...]
    metrics: tuple[MetricChange, ...]
    moves: tuple[RankMove, ...]
    embeddings: tuple[EmbeddingDiff, ...]
    manifest: tuple[FieldChange, ...]
    reproduction: Reproduction = field(default_factory=Reproduction)

    @property
    def rankings_identical(self) -> bool:
        """Same runs on both sides, and the same ids in the same order for every query."""
        return not self.runs_only_in_a and not self.runs_only_in_b and all(r.rankings_identical for r in self.runs)

    @property
    def metrics_identical(self) -> bool:
        return not any(m.changed for m in self.metrics)

    @property
    def largest_score_diff(self) -> RunDiff | None:
        """The run holding the largest score difference (the first such run in corpus/ranker order),
        ``None`` when no run shares a single hit with its counterpart."""
        best: RunDiff | None = None
        for run in self.runs:
            if run.compared_hits and (best is None or run.max_score_diff > best.max_score_diff):
                best = run
        return best

    @property
    def within_tolerance(self) -> bool:
        worst = self.largest_score_diff
        return worst is None or worst.max_score_diff <= self.tolerance

    @property
    def equivalent(self) -> bool:
        """Rankings and metrics identical and every score within tolerance. File, vector and version
        differences are reported but do not count: what a regression gate guards is the results."""
        return self.rankings_identical and self.metrics_identical and self.within_tolerance

    def to_json(self) -> dict[str, Any]:
        """The whole comparison as JSON-able data with keys sorted at every level (shape in the module doc)."""
        worst = self.largest_score_diff
        largest: dict[str, Any] = {"value": None if worst is None else worst.max_score_diff}
        if worst is not None and worst.max_score_at is not None:
            largest = {
                "value": worst.max_score_diff,
                "corpus": worst.corpus,
                "ranker": worst.ranker,
                "query_id": worst.max_score_at.query_id,
                "doc_id": worst.max_score_at.doc_id,
                "rank": worst.max_score_at.rank,
            }
        doc = {
            "schema_version": DIFF_SCHEMA_VERSION,
            "a": self.a,
            "b": self.b,
            "tolerance": self.tolerance,
            "summary": {
                "equivalent": self.equivalent,
                "rankings_identical": self.rankings_identical,
                "metrics_identical": self.metrics_identical,
                "within_tolerance": self.within_tolerance,
                "files_identical": len(self.files.identical),
                "files_total": self.files.total,
                "runs_compared": len(self.runs),
                "runs_with_different_rankings": sum(1 for r in self.runs if not r.rankings_identical),
                "metric_values_differing": sum(1 for m in self.metrics if m.changed),
                "questions_moved": len(self.moves),
                "largest_score_difference": largest,
            },
            "files": {
                "identical": list(self.files.identical),
                "differ": list(self.files.differ),
                "only_in_a": list(self.files.only_in_a),
                "only_in_b": list(self.files.only_in_b),
            },
            "runs": {
                "compared": [
                    {
                        "corpus": r.corpus,
                        "ranker": r.ranker,
                        "queries": r.queries,
                        "differing_queries": list(r.differing_queries),
                        "compared_hits": r.compared_hits,
                        "max_score_diff": r.max_score_diff,
                        "max_score_at": None
                        if r.max_score_at is None
                        else {
                            "query_id": r.max_score_at.query_id,
                            "doc_id": r.max_score_at.doc_id,
                            "rank": r.max_score_at.rank,
                        },
                        "params_differ": r.params_differ,
                    }
                    for r in self.runs
                ],
                "only_in_a": list(self.runs_only_in_a),
                "only_in_b": list(self.runs_only_in_b),
            },
            "metrics": [
                {
                    "corpus": m.corpus,
                    "ranker": m.ranker,
                    "metric": m.metric,
                    "a": m.a,
                    "b": m.b,
                    "delta": m.delta,
                    "changed": m.changed,
                }
                for m in self.metrics
            ],
            "first_relevant_rank": [
                {"corpus": m.corpus, "ranker": m.ranker, "query_id": m.query_id, "before": m.before, "after": m.after}
                for m in self.moves
            ],
            "embeddings": [
                {
                    "corpus": e.corpus,
                    "file": e.file,
                    "ids_match": e.ids_match,
                    "shape_a": list(e.shape_a),
                    "shape_b": list(e.shape_b),
                    "max_abs_diff": e.max_abs_diff,
                    "at": None if e.at_id is None else {"id": e.at_id, "component": e.at_component},
                }
                for e in self.embeddings
            ],
            "manifest": [{"field": f.field, "a": f.a, "b": f.b} for f in self.manifest],
            "reproduction": self.reproduction.to_json(),
        }
        return _sorted_keys(doc)


def _sorted_keys(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {k: _sorted_keys(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list | tuple):
        return [_sorted_keys(v) for v in obj]
    return obj
