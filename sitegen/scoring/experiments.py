"""Experiments on top of the runs: RRF sweeps, held-out selection, paired significance,
the ablation table and the unanswerable-question view.

Everything here is a pure function of the runs, the qrels and a recorded seed, so the
audit can recompute it. The tests themselves are :mod:`sitegen.scoring.statistics`; the family of paired
tests, the power and the rank groups are :mod:`sitegen.scoring.significance`, which documents the
``significance`` shape.

``evidence/<corpus>/experiments.json`` shape (a ``note`` is null or a code of :data:`sitegen.wording.NOTES`)::

    {"schema_version": 3, "metrics": [...], "one_question_points": float,
     "sweeps": {rrf_ranker: {sweep: {"parameter", "fixed", "rows": [{"value", "params", "overall"}]}}},
     "heldout": {"seed", "selection_metric", "folds": {"A": [qids], "B": [qids]},
                 "results": {rrf_ranker: {sweep: {"tuned_beats_default_in": n, "significant_in": n,
                              "folds": [{"tune_on", "test_on", "chosen", "default", "dense_ranker",
                              "scores": {"tuned", "default", "dense"}, "tune_size", "test_size", "too_small",
                              "note", "tuned_beats_default", "p_value", "p_method", "significant"}]}}}},
     "scored_questions": n,
     "significance": {...} (sitegen.scoring.significance),
     "ablation": {"source", "rows": [{"ranker", "baseline", "adds", "overall", "delta", "p_adjusted",
                                      "significant", "identical"}]},
     "unanswerable": {"questions": [qid], "rows": {ranker: {qid: {"hits", "top_score"}}},
                      "answerable_median_top_score": {ranker: float | None}}}
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sitegen.inputs.corpus import Corpus
from sitegen.rankers.base import Contract, Family
from sitegen.rankers.fusion import reciprocal_rank_fusion
from sitegen.scoring.metrics import evaluate
from sitegen.scoring.report import unverified_rankers
from sitegen.scoring.significance import SIGNIFICANCE_METRICS, significance
from sitegen.scoring.statistics import monte_carlo_rounds, paired_randomisation_test

__all__ = [
    "DEFAULT_SEED",
    "SIGNIFICANCE_METRICS",
    "ExperimentSettings",
    "experiment_inputs",
    "run_experiments",
    "stratified_two_fold_split",
]

DEFAULT_SEED = 20261129
RRF_SWEEP_METRICS = ("hit@1", "hit@5", "mrr@10")
SELECTION_METRIC = "mrr@10"
_TIE = 1e-12

Rankings = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class ExperimentSettings:
    """The grids and the randomness, all written into the evidence."""

    k_values: tuple[float, ...] = (1, 10, 60, 200, 1000)
    candidate_values: tuple[int, ...] = (3, 5, 10, 20, 50)
    weight_values: tuple[tuple[float, float], ...] = ((1, 0), (1, 0.5), (1, 1), (0.5, 1), (0, 1))
    default_k: float = 60
    default_candidates: int = 20
    default_weights: tuple[float, float] = (1, 1)
    seed: int = DEFAULT_SEED
    rounds: int = 10_000
    alpha: float = 0.05
    min_differing: int = 10


def stratified_two_fold_split(ids_by_kind: Mapping[str, Sequence[str]], seed: int) -> dict[str, list[str]]:
    """Two folds balanced by kind: within each kind (in the given order of kinds and of ids),
    ``numpy.random.default_rng([seed, i])`` (i = the kind's position) permutes the ids; the first
    ceil(n/2) go to fold A for even i and to fold B for odd i, so odd-sized kinds do not all favour A."""
    folds: dict[str, list[str]] = {"A": [], "B": []}
    for i, (_, ids) in enumerate(ids_by_kind.items()):
        order = np.random.default_rng([seed, i]).permutation(len(ids))
        shuffled = [ids[j] for j in order]
        half = math.ceil(len(shuffled) / 2)
        first, second = ("A", "B") if i % 2 == 0 else ("B", "A")
        folds[first].extend(shuffled[:half])
        folds[second].extend(shuffled[half:])
    position = {q: n for ids in ids_by_kind.values() for n, q in enumerate(ids)}
    return {name: sorted(ids, key=lambda q: (position[q], q)) for name, ids in folds.items()}


def _fuse(
    component_rankings: Sequence[Rankings],
    query_ids: Sequence[str],
    k: float,
    candidates: int,
    weights: Sequence[float],
) -> dict[str, list[str]]:
    return {
        q: [
            item.doc_id
            for item in reciprocal_rank_fusion([r.get(q, ()) for r in component_rankings], k, weights, candidates)
        ]
        for q in query_ids
    }


def _per_query(rankings: Rankings, corpus: Corpus, metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    kinds = {q.query_id: q.kind for q in corpus.queries}
    return evaluate(rankings, corpus.qrels, kinds, metrics)["per_query"]


def _mean(per_query: Mapping[str, Mapping[str, float]], qids: Sequence[str], metric: str) -> float:
    return math.fsum(per_query[q][metric] for q in qids) / len(qids) if qids else 0.0


def _sweep_grid(settings: ExperimentSettings) -> dict[str, dict[str, Any]]:
    k, c, w = settings.default_k, settings.default_candidates, list(settings.default_weights)
    return {
        "k": {
            "parameter": "k",
            "fixed": {"candidates": c, "weights": w},
            "values": [{"k": v, "candidates": c, "weights": w} for v in settings.k_values],
        },
        "candidates": {
            "parameter": "candidates",
            "fixed": {"k": k, "weights": w},
            "values": [{"k": k, "candidates": v, "weights": w} for v in settings.candidate_values],
        },
        "weights": {
            "parameter": "weights",
            "fixed": {"k": k, "candidates": c},
            "values": [{"k": k, "candidates": c, "weights": list(v)} for v in settings.weight_values],
        },
    }


def _choose(rows: Sequence[dict[str, Any]], per_query: Sequence[Mapping], qids: Sequence[str], default: int) -> int:
    """Index of the best setting on ``qids`` by the selection metric; ties go to the default, then grid order."""
    scores = [_mean(pq, qids, SELECTION_METRIC) for pq in per_query]
    best = max(scores)
    tied = [i for i, s in enumerate(scores) if best - s <= _TIE]
    return default if default in tied else tied[0]


def experiment_inputs(
    corpus: Corpus,
    rankings: Mapping[str, Rankings],
    contracts: Mapping[str, Contract],
    run_scores: Mapping[str, Mapping[str, Sequence[float]]],
    settings: ExperimentSettings = ExperimentSettings(),
) -> dict[str, Any]:
    """Everything :func:`run_experiments` reads, as JSON: the key under which its result may be cached."""
    return {
        "queries": [[q.query_id, q.kind, q.answerable] for q in corpus.queries],
        "qrels": {q: dict(grades) for q, grades in corpus.qrels.items()},
        "config": dict(corpus.config),
        "rankings": rankings,
        "contracts": {r: c.as_dict() for r, c in contracts.items()},
        "run_scores": run_scores,
        "settings": dataclasses.asdict(settings),
    }


def run_experiments(
    corpus: Corpus,
    rankings: Mapping[str, Rankings],
    contracts: Mapping[str, Contract],
    run_scores: Mapping[str, Mapping[str, Sequence[float]]],
    settings: ExperimentSettings = ExperimentSettings(),
) -> dict[str, Any]:
    """All experiments for one corpus. ``rankings``: {ranker: {qid: [doc ids]}};
    ``contracts``: each run's ranker contract; ``run_scores``: {ranker: {qid: [scores in rank order]}}."""
    scored = [q.query_id for q in corpus.queries if corpus.relevant(q.query_id)]
    metric_names = list(dict.fromkeys(RRF_SWEEP_METRICS + SIGNIFICANCE_METRICS))
    base_per_query = {r: _per_query(rankings[r], corpus, metric_names) for r in rankings}
    fusions = [r for r, c in contracts.items() if c.family is Family.FUSION and len(c.components) == 2]

    ids_by_kind: dict[str, list[str]] = {}
    for query in corpus.queries:
        if query.query_id in scored:
            ids_by_kind.setdefault(query.kind, []).append(query.query_id)
    folds = stratified_two_fold_split(ids_by_kind, settings.seed)

    sweeps: dict[str, Any] = {}
    heldout: dict[str, Any] = {}
    for fusion in fusions if scored else ():
        components = list(contracts[fusion].components)
        component_rankings = [rankings[c] for c in components]
        # "alone": the fusion's dense component on its own, or its first component when none is dense.
        dense = next((c for c in components if contracts[c].family is Family.DENSE), components[0])
        sweeps[fusion], heldout[fusion] = {}, {}
        for sweep, grid in _sweep_grid(settings).items():
            per_query = []
            rows = []
            for params in grid["values"]:
                fused = _fuse(component_rankings, scored, params["k"], params["candidates"], params["weights"])
                pq = _per_query(fused, corpus, RRF_SWEEP_METRICS)
                per_query.append(pq)
                rows.append(
                    {
                        "value": params[grid["parameter"]],
                        "params": params,
                        "overall": {m: _mean(pq, scored, m) for m in RRF_SWEEP_METRICS},
                    }
                )
            sweeps[fusion][sweep] = {"parameter": grid["parameter"], "fixed": grid["fixed"], "rows": rows}
            default = next(
                i
                for i, p in enumerate(grid["values"])
                if (p["k"], p["candidates"], list(p["weights"]))
                == (settings.default_k, settings.default_candidates, list(settings.default_weights))
            )
            results = []
            for tune_on, test_on in (("A", "B"), ("B", "A")):
                chosen = _choose(rows, per_query, folds[tune_on], default)
                tuned = {m: _mean(per_query[chosen], folds[test_on], m) for m in RRF_SWEEP_METRICS}
                kept = {m: _mean(per_query[default], folds[test_on], m) for m in RRF_SWEEP_METRICS}
                alone = {m: _mean(base_per_query[dense], folds[test_on], m) for m in RRF_SWEEP_METRICS}
                size, settings_count = len(folds[tune_on]), len(grid["values"])
                results.append(
                    {
                        "tune_size": size,
                        "too_small": size < settings_count,
                        "note": "fold_too_small" if size < settings_count else None,
                        "tune_on": tune_on,
                        "test_on": test_on,
                        "chosen": rows[chosen]["value"],
                        "default": rows[default]["value"],
                        "dense_ranker": dense,
                        "scores": {"tuned": tuned, "default": kept, "dense": alone},
                        "tuned_beats_default": tuned[SELECTION_METRIC] - kept[SELECTION_METRIC] > _TIE,
                        **_heldout_test(per_query[chosen], per_query[default], folds[test_on], settings),
                    }
                )
            heldout[fusion][sweep] = {
                "folds": results,
                "tuned_beats_default_in": sum(1 for r in results if r["tuned_beats_default"]),
                "significant_in": sum(1 for r in results if r["significant"]),
            }

    rankers = list(rankings)
    correction = str(corpus.config.get("significance", {}).get("correction", "holm"))
    scores = {r: {m: [base_per_query[r][q][m] for q in scored] for m in SIGNIFICANCE_METRICS} for r in rankers}
    unverified = list(unverified_rankers({r: contracts[r] for r in rankers if r in contracts}))
    family = significance(corpus.name, rankers, scores, settings, correction, unverified)
    return {
        "schema_version": 3,
        "metrics": list(RRF_SWEEP_METRICS),
        "one_question_points": 100.0 / len(scored) if scored else None,
        "sweeps": sweeps,
        "heldout": {
            "seed": settings.seed,
            "selection_metric": SELECTION_METRIC,
            "folds": folds,
            "results": heldout,
        },
        "scored_questions": len(scored),
        "significance": family,
        "ablation": _ablation(corpus, rankers, contracts, base_per_query, scored, family),
        "unanswerable": _unanswerable(corpus, rankings, run_scores, scored),
    }


RERANK_ADDS = "+ rerank: the first stage's top candidates scored again"
ABLATION_CONFIGURED = "corpus config (sitegen.json): each row against the row above"
ABLATION_DEFAULT = "default: each fusion against each list it fuses, each filtered ranker against its unfiltered twin"


def default_ablation(rankers: Sequence[str], contracts: Mapping[str, Contract]) -> list[tuple[str, str, str]]:
    """``(baseline, ranker, what ranker adds)`` for every pair of rankers that differ by one declared component,
    in build order: comparing unrelated rankers (a tsvector ranker "adding" a vector one) says nothing."""
    present = set(rankers)
    pairs = []
    for ranker in rankers:
        contract = contracts.get(ranker)
        if contract is None:
            continue
        for component in contract.components:
            others = [c for c in contract.components if c != component]
            if component in present and others:
                pairs.append((component, ranker, f"{', '.join(others)} fused in"))
        if contract.unfiltered in present:
            pairs.append((contract.unfiltered, ranker, "the question's metadata filter"))
        if contract.family is Family.RERANK and contract.components[0] in present:
            pairs.append((contract.components[0], ranker, RERANK_ADDS))
    return pairs


def _ablation(
    corpus: Corpus,
    rankers: Sequence[str],
    contracts: Mapping[str, Contract],
    per_query: Mapping,
    scored: Sequence[str],
    family: Mapping[str, Any],
) -> dict[str, Any]:
    """Each row adds one technique to its baseline (the row above when configured; a ranker differing by one
    declared component by default), with the change's adjusted p-value from the family: the test between the
    two rankers' rows, none where they are one row (identical per-question values on that metric)."""
    configured = corpus.config.get("ablation")
    if configured:
        source = ABLATION_CONFIGURED
        chain = [s for s in configured if s["ranker"] in per_query]
        steps = [(chain[n - 1]["ranker"] if n else None, s["ranker"], s["adds"]) for n, s in enumerate(chain)]
    else:
        source = ABLATION_DEFAULT
        steps = default_ablation(rankers, contracts)
    steps = steps if scored else []
    rows = []
    for previous, ranker, adds in steps:
        overall = {m: _mean(per_query[ranker], scored, m) for m in SIGNIFICANCE_METRICS}
        row: dict[str, Any] = {
            "ranker": ranker,
            "baseline": previous,
            "adds": adds,
            "overall": overall,
            "delta": None,
            "p_adjusted": None,
            "significant": None,
            "identical": None,
        }
        if previous is not None:
            row["delta"] = {
                m: math.fsum(per_query[ranker][q][m] - per_query[previous][q][m] for q in scored) / len(scored)
                for m in SIGNIFICANCE_METRICS
            }
            rows_of = {m: (_row_of(family, m, ranker), _row_of(family, m, previous)) for m in SIGNIFICANCE_METRICS}
            found = {
                m: next((p for p in family["pairs"] if p["metric"] == m and {p["a"], p["b"]} == set(pair)), None)
                for m, pair in rows_of.items()
            }
            row["identical"] = {m: a == b for m, (a, b) in rows_of.items()}
            row["p_adjusted"] = {m: f["p_adjusted"] if f else None for m, f in found.items()}
            row["significant"] = {m: f["significant"] if f else None for m, f in found.items()}
        rows.append(row)
    return {"source": source, "rows": rows}


def _row_of(family: Mapping[str, Any], metric: str, ranker: str) -> str:
    """The ranker that stands for ``ranker``'s row of the family on ``metric``: the first of its identical ones."""
    return next((c[0] for c in family["identical"][metric] if ranker in c), ranker)


def _heldout_test(
    tuned: Mapping[str, Mapping[str, float]],
    default: Mapping[str, Mapping[str, float]],
    qids: Sequence[str],
    settings: ExperimentSettings,
) -> dict[str, Any]:
    """The tuned setting against the default on the held-out questions: the paired randomisation test of their
    selection-metric values, one uncorrected test per fold, at the family's alpha."""
    if not qids:
        return {"test_size": 0, "p_value": None, "p_method": None, "significant": None}
    a = [tuned[q][SELECTION_METRIC] for q in qids]
    b = [default[q][SELECTION_METRIC] for q in qids]
    test = paired_randomisation_test(a, b, settings.seed, monte_carlo_rounds(1, settings.alpha, settings.rounds))
    return {
        "test_size": len(qids),
        "p_value": test.p_value,
        "p_method": test.kind,
        "significant": test.p_value < settings.alpha,
    }


def _unanswerable(
    corpus: Corpus,
    rankings: Mapping[str, Rankings],
    run_scores: Mapping[str, Mapping[str, Sequence[float]]],
    scored: Sequence[str],
) -> dict[str, Any]:
    questions = [q.query_id for q in corpus.queries if not q.answerable]
    rows = {
        r: {
            q: {"hits": len(rankings[r].get(q, ())), "top_score": (run_scores[r].get(q) or [None])[0]}
            for q in questions
        }
        for r in rankings
    }
    medians = {}
    for r in rankings:
        tops = [run_scores[r][q][0] for q in scored if run_scores[r].get(q)]
        medians[r] = statistics.median(tops) if tops else None
    return {"questions": questions, "rows": rows, "answerable_median_top_score": medians}
