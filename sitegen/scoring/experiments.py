"""Experiments on top of the runs: RRF sweeps, held-out selection, paired significance,
the ablation table and the unanswerable-question view.

Everything here is a pure function of the runs, the qrels and a recorded seed, so the
audit can recompute it. The randomised tests are specified exactly (see
:func:`paired_permutation_test` and :func:`paired_bootstrap_ci`), so the same seed gives
the same p-values and intervals in any implementation that uses numpy's PCG64.

``evidence/<corpus>/experiments.json`` shape (a ``note`` is null or a code of :data:`sitegen.wording.NOTES`)::

    {"schema_version": 2, "metrics": [...], "one_question_points": float,
     "sweeps": {rrf_ranker: {sweep: {"parameter", "fixed", "rows": [{"value", "params", "overall"}]}}},
     "heldout": {"seed", "selection_metric", "folds": {"A": [qids], "B": [qids]},
                 "results": {rrf_ranker: {sweep: {"tuned_beats_default_in": n, "folds": [{"tune_on", "test_on",
                              "chosen", "default", "dense_ranker", "scores": {"tuned", "default", "dense"},
                              "tune_size", "too_small", "note",
                              "tuned_beats_default"}]}}}},
     "scored_questions": n,
     "significance": {"seed", "rounds", "alpha", "metrics", "min_differing", "correction", "correction_name",
                      "family": {"description", "tests", "excluded", "size"}, "significant_uncorrected",
                      "significant_adjusted", "pairs": [{"a", "b", "metric", "mean_a", "mean_b", "difference",
                      "differing", "tested", "method", "p_value", "p_adjusted", "ci_low", "ci_high",
                      "significant", "note", "wins", "ties", "losses", "effect_size", "tukey_p",
                      "tukey_significant"}],
                      "tukey": {"method", "rounds", "seed", "alpha", "controls", "effect_size",
                                "by_metric": {metric: {"method", "exact", "pairs", "significant",
                                                       "adjusted_significant"}}}},
     "ablation": {"source", "rows": [{"ranker", "baseline", "adds", "overall", "delta", "p_adjusted",
                                      "significant"}]},
     "unanswerable": {"questions": [qid], "rows": {ranker: {qid: {"hits", "top_score"}}},
                      "answerable_median_top_score": {ranker: float | None}}}
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
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

__all__ = [
    "CORRECTIONS",
    "DEFAULT_SEED",
    "ExperimentSettings",
    "RandomisationResult",
    "TukeyResult",
    "adjust_p_values",
    "experiment_inputs",
    "paired_bootstrap_ci",
    "paired_effect",
    "paired_permutation_test",
    "paired_randomisation_test",
    "randomised_tukey_hsd",
    "run_experiments",
    "stratified_two_fold_split",
]

DEFAULT_SEED = 20261129
RRF_SWEEP_METRICS = ("hit@1", "hit@5", "mrr@10")
SIGNIFICANCE_METRICS = ("hit@1", "hit@5", "mrr@10", "ndcg@10")
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


BLOCK_ROUNDS = 1_000
CORRECTIONS = {"holm": "Holm-Bonferroni", "bh": "Benjamini-Hochberg"}


@dataclass(frozen=True)
class RandomisationResult:
    """One paired randomisation test: the p-value and how it was obtained, for the evidence."""

    p_value: float
    differing: int
    exact: bool
    method: str


def _differences(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    return np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)


def paired_randomisation_test(a: Sequence[float], b: Sequence[float], seed: int, rounds: int) -> RandomisationResult:
    """Two-sided paired randomisation (sign-flip) test of mean(a - b) = 0.

    Questions where a and b agree contribute nothing to any sign pattern, so they are dropped: ``d`` holds the
    n nonzero differences and the statistic of a pattern ``s`` is ``|sum(s * d)|``, observed ``|sum(d)|``; a
    pattern counts as extreme when its statistic >= observed - 1e-12.

    - If 2**n <= rounds: every one of the 2**n sign patterns is enumerated and p = extreme / 2**n, exactly
      (n = 0 gives p = 1).
    - Otherwise Monte Carlo: ``rng = numpy.random.default_rng(seed)``; in blocks of 1,000 rounds (the last one
      shorter) ``signs = rng.integers(0, 2, size=(block, n)) * 2 - 1``; p = (b + 1) / (rounds + 1), b the
      extreme rounds.

    Memory is bounded by the block, not by rounds: one block holds a (1,000 x n) int64 draw and its float64
    signs, 16,000 * n bytes (about 1 MB for 60 questions), whatever ``rounds`` is.
    """
    d = _differences(a, b)
    d = d[d != 0]
    n = int(d.size)
    observed = abs(math.fsum(d.tolist()))
    if 2**n <= rounds:
        extreme = 0
        bits = np.arange(n, dtype=np.int64)
        for start in range(0, 2**n, BLOCK_ROUNDS):
            patterns = np.arange(start, min(start + BLOCK_ROUNDS, 2**n), dtype=np.int64)
            signs = 1.0 - 2.0 * ((patterns[:, None] >> bits) & 1)
            extreme += int(np.count_nonzero(np.abs(signs @ d) >= observed - _TIE))
        return RandomisationResult(extreme / 2**n, n, True, f"exact enumeration of 2^{n} = {2**n} sign patterns")
    rng = np.random.default_rng(seed)
    extreme = 0
    for start in range(0, rounds, BLOCK_ROUNDS):
        block = min(BLOCK_ROUNDS, rounds - start)
        signs = rng.integers(0, 2, size=(block, n)).astype(np.float64)
        signs *= 2.0  # in place: the same +-1 values as (bits * 2 - 1), without two more n x block temporaries
        signs -= 1.0
        extreme += int(np.count_nonzero(np.abs(signs @ d) >= observed - _TIE))
    return RandomisationResult(
        (extreme + 1) / (rounds + 1), n, False, f"Monte Carlo, {rounds} rounds, seed {seed} (2^{n} patterns)"
    )


def paired_permutation_test(a: Sequence[float], b: Sequence[float], seed: int, rounds: int) -> float:
    """The p-value of :func:`paired_randomisation_test`."""
    return paired_randomisation_test(a, b, seed, rounds).p_value


CACHED_BOOTSTRAP_VALUES = 1 << 24
"""Up to this many bootstrap indices (rounds x N) are drawn once per (seed, rounds, N) and reused by every pair
of rankers: 32 MB at most (uint16 up to 65,536 questions). A larger draw is made per call, as documented."""


@functools.lru_cache(maxsize=1)
def _bootstrap_indices(seed: int, rounds: int, size: int) -> tuple[np.ndarray, ...]:
    """The index blocks of :func:`paired_bootstrap_ci`, exactly as it documents them, read-only: every pair over
    the same questions draws the same ones, so one draw serves them all (the same gathered values, the same
    means)."""
    rng = np.random.default_rng(seed)
    dtype = np.uint16 if size <= 1 << 16 else np.int64
    blocks = []
    for start in range(0, rounds, BLOCK_ROUNDS):
        idx = rng.integers(0, size, size=(min(BLOCK_ROUNDS, rounds - start), size)).astype(dtype)
        idx.flags.writeable = False
        blocks.append(idx)
    return tuple(blocks)


def paired_bootstrap_ci(
    a: Sequence[float], b: Sequence[float], seed: int, rounds: int, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(a - b) over all N paired questions (ties included: they pull the
    mean toward 0).

    Exactly: ``rng = numpy.random.default_rng(seed)``; in blocks of 1,000 rounds (the last one shorter)
    ``idx = rng.integers(0, N, size=(block, N))`` and the block's means ``d[idx].mean(axis=1)``; bounds =
    ``numpy.quantile(means, [(1 - level) / 2, (1 + level) / 2])`` (linear interpolation). Memory: one block is
    16,000 * N bytes (indices and gathered differences) plus 8 bytes per round for the means.
    """
    d = _differences(a, b)
    if d.size == 0:
        return (0.0, 0.0)
    means = np.empty(rounds, dtype=np.float64)
    if rounds * d.size <= CACHED_BOOTSTRAP_VALUES:
        for start, idx in zip(range(0, rounds, BLOCK_ROUNDS), _bootstrap_indices(seed, rounds, d.size), strict=True):
            means[start : start + idx.shape[0]] = d[idx].mean(axis=1)
    else:
        rng = np.random.default_rng(seed)
        for start in range(0, rounds, BLOCK_ROUNDS):
            block = min(BLOCK_ROUNDS, rounds - start)
            means[start : start + block] = d[rng.integers(0, d.size, size=(block, d.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return (float(low), float(high))


def adjust_p_values(p_values: Sequence[float], correction: str) -> list[float]:
    """Multiplicity-adjusted p-values, in the input order, for one family of m tests.

    ``holm`` (Holm-Bonferroni, controls the family-wise error): sort ascending, adj_i = max_{j<=i} min(1,
    (m - j + 1) p_j). ``bh`` (Benjamini-Hochberg, controls the false discovery rate): adj_i = min_{j>=i}
    min(1, m p_j / j). Ties keep input order (stable sort), which does not change the values.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    if correction == "holm":
        running = 0.0
        for rank, i in enumerate(order, start=1):
            running = max(running, min(1.0, (m - rank + 1) * p_values[i]))
            adjusted[i] = running
    elif correction == "bh":
        running = 1.0
        for rank in range(m, 0, -1):
            i = order[rank - 1]
            running = min(running, min(1.0, m * p_values[i] / rank))
            adjusted[i] = running
    else:
        raise ValueError(f"unknown correction {correction!r}; known: {', '.join(CORRECTIONS)}")
    return adjusted


TUKEY_BLOCK_VALUES = 1_000_000
"""Scores permuted per Monte Carlo block of the Tukey HSD: the block holds this many float64 keys, their int64
argsort and the permuted float64 scores, about 24 MB whatever the questions, rankers or rounds."""


@dataclass(frozen=True)
class TukeyResult:
    """All-pairs randomised Tukey HSD for one metric: ``p_values[i, j]`` for rankers i and j (1 on the diagonal)."""

    p_values: np.ndarray
    exact: bool
    method: str


def _count_at_least(ranges: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """How many of ``ranges`` are >= each threshold (one sort per block instead of a k x k x block comparison)."""
    ordered = np.sort(ranges)
    return ordered.size - np.searchsorted(ordered, thresholds, side="left")


def randomised_tukey_hsd(scores: Any, seed: int, rounds: int) -> TukeyResult:
    """Randomised Tukey HSD (Carterette, TOIS 2012) over a questions x rankers score matrix.

    Under the null that the rankers are interchangeable, every question's row may be permuted across the rankers
    independently; each permutation's statistic is max - min of the column means. The pair (i, j) gets
    p = share of permutations whose range >= |mean_i - mean_j| - 1e-12. Comparing every pair with the *maximum*
    difference of the permuted means is what controls the family-wise error over all pairs of the metric.

    - If (k!)**n <= rounds (k rankers, n questions): every combination of row permutations is enumerated
      (pattern number t gives row q the permutation ``itertools.permutations(range(k))`` number
      ``(t // (k!)**q) % k!``) and p = extreme / (k!)**n, exactly.
    - Otherwise Monte Carlo: ``rng = numpy.random.default_rng(seed)``; round r draws ``keys = rng.random((n,
      k))`` (rounds drawn consecutively in C order, in blocks of rounds, so the block size does not change the
      stream) and row q is permuted by ``numpy.argsort(keys[q], kind="stable")``; p = (b + 1) / (rounds + 1).

    Memory is bounded by the block: at most :data:`TUKEY_BLOCK_VALUES` permuted scores (about 24 MB), plus the
    n x k matrix itself; 7,000 questions x 10 rankers stays under the 200 MiB that bench/run.py --sections stats
    measures for the whole significance machinery.
    """
    x = np.asarray(scores, dtype=np.float64)
    n, k = x.shape
    p_values = np.ones((k, k))
    if k < 2 or n == 0:
        return TukeyResult(p_values, True, "nothing to compare")
    means = x.mean(axis=0)
    thresholds = (np.abs(means[:, None] - means[None, :]) - _TIE).ravel()
    extreme = np.zeros(k * k, dtype=np.int64)
    per_row = math.factorial(k)
    if per_row**n <= rounds:
        perms = np.array(list(itertools.permutations(range(k))), dtype=np.int64)
        total = per_row**n
        for start in range(0, total, BLOCK_ROUNDS):
            patterns = np.arange(start, min(start + BLOCK_ROUNDS, total), dtype=np.int64)
            sums = np.zeros((patterns.size, k))
            for q in range(n):
                sums += x[q][perms[(patterns // per_row**q) % per_row]]
            block_means = sums / n
            extreme += _count_at_least(block_means.max(axis=1) - block_means.min(axis=1), thresholds)
        p_values = (extreme / total).reshape(k, k)
        np.fill_diagonal(p_values, 1.0)
        return TukeyResult(p_values, True, f"exact enumeration of ({k}!)^{n} = {total} row permutations")
    rng = np.random.default_rng(seed)
    block_rounds = max(1, TUKEY_BLOCK_VALUES // (n * k))
    for start in range(0, rounds, block_rounds):
        block = min(block_rounds, rounds - start)
        order = np.argsort(rng.random((block, n, k)), axis=2, kind="stable")
        block_means = np.take_along_axis(np.broadcast_to(x, (block, n, k)), order, axis=2).mean(axis=1)
        extreme += _count_at_least(block_means.max(axis=1) - block_means.min(axis=1), thresholds)
    p_values = ((extreme + 1) / (rounds + 1)).reshape(k, k)
    np.fill_diagonal(p_values, 1.0)
    return TukeyResult(p_values, False, f"Monte Carlo, {rounds} rounds, seed {seed} (({k}!)^{n} permutations)")


def paired_effect(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Wins, ties and losses of a over b per question (ties: equal floats, no tolerance) and Cohen's d_z.

    d_z = mean(a - b) / sd(a - b), sd the sample standard deviation (n - 1): the paired mean difference in units of
    its own spread, comparable across metrics. It is 0 when every difference is 0, and None (undefined) when all
    differences are equal but not 0 (sd 0) or there is a single question.
    """
    d = _differences(a, b)
    result: dict[str, Any] = {
        "wins": int(np.count_nonzero(d > 0)),
        "ties": int(np.count_nonzero(d == 0)),
        "losses": int(np.count_nonzero(d < 0)),
        "effect_size": None,
    }
    if d.size and d.min() == d.max():
        result["effect_size"] = 0.0 if d[0] == 0 else None
    elif d.size >= 2:
        mean = math.fsum(d.tolist()) / d.size
        sd = math.sqrt(math.fsum(((d - mean) ** 2).tolist()) / (d.size - 1))
        result["effect_size"] = mean / sd
    return result


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
                    }
                )
            heldout[fusion][sweep] = {
                "folds": results,
                "tuned_beats_default_in": sum(1 for r in results if r["tuned_beats_default"]),
            }

    rankers = list(rankings)
    significance = _significance(corpus, rankers, base_per_query, scored, settings)
    return {
        "schema_version": 2,
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
        "significance": significance,
        "ablation": _ablation(corpus, rankers, contracts, base_per_query, scored, significance["pairs"]),
        "unanswerable": _unanswerable(corpus, rankings, run_scores, scored),
    }


def _significance(
    corpus: Corpus, rankers: Sequence[str], per_query: Mapping, scored: Sequence[str], settings: ExperimentSettings
) -> dict[str, Any]:
    """Every pair of rankers on every significance metric, as one family per corpus corrected together.

    The family is all pairwise tests across the metrics shown on the page; a test with fewer than
    ``settings.min_differing`` questions where the two rankers differ is reported as "too few questions to
    test" and left out of the family (it is not in m), since it could not reject anyway and would only dilute
    the others. "significant" is decided on the adjusted p-value alone.
    """
    correction = str(corpus.config.get("significance", {}).get("correction", "holm"))
    alpha, minimum = settings.alpha, settings.min_differing
    pairs: list[dict[str, Any]] = []
    for i, a in enumerate(rankers if scored else ()):
        for b in rankers[i + 1 :]:
            for metric in SIGNIFICANCE_METRICS:
                xa = [per_query[a][q][metric] for q in scored]
                xb = [per_query[b][q][metric] for q in scored]
                test = paired_randomisation_test(xa, xb, settings.seed, settings.rounds)
                low, high = paired_bootstrap_ci(xa, xb, settings.seed, settings.rounds)
                tested = test.differing >= minimum
                pairs.append(
                    {
                        "a": a,
                        "b": b,
                        "metric": metric,
                        "mean_a": _mean(per_query[a], scored, metric),
                        "mean_b": _mean(per_query[b], scored, metric),
                        "difference": math.fsum(x - y for x, y in zip(xa, xb, strict=True)) / len(scored),
                        "differing": test.differing,
                        "tested": tested,
                        "method": test.method if tested else None,
                        "p_value": test.p_value if tested else None,
                        "p_adjusted": None,
                        "ci_low": low,
                        "ci_high": high,
                        "significant": None,
                        "note": None,
                        **paired_effect(xa, xb),
                        "tukey_p": None,
                        "tukey_significant": None,
                    }
                )
    family = [p for p in pairs if p["tested"]]
    for pair, adjusted in zip(family, adjust_p_values([p["p_value"] for p in family], correction), strict=True):
        pair["p_adjusted"] = adjusted
        pair["significant"] = adjusted < alpha
    m, name = len(family), CORRECTIONS[correction]
    for pair in pairs:
        excludes_zero = pair["ci_low"] > 0 or pair["ci_high"] < 0
        # codes of sitegen.wording.NOTES: the page says them, the audit recomputes them
        if not pair["tested"]:
            pair["note"] = "too_few_differing"
        elif excludes_zero and not pair["significant"]:
            pair["note"] = "interval_not_corrected"
        elif pair["significant"] and not excludes_zero:
            pair["note"] = "interval_includes_zero"
    tukey = _tukey(rankers, per_query, scored, settings, pairs)
    k, total = len(rankers), len(pairs)
    description = (
        f"{corpus.name}, all pairs of {k} rankers x {len(SIGNIFICANCE_METRICS)} metrics = {total} tests"
        if total
        else f"{corpus.name}: no tests ({'no question has a relevant passage' if not scored else 'one ranker'})"
    )
    if total - m:
        description += f"; {total - m} with fewer than {minimum} differing questions are left out, so m = {m}"
    return {
        "seed": settings.seed,
        "rounds": settings.rounds,
        "alpha": alpha,
        "metrics": list(SIGNIFICANCE_METRICS),
        "min_differing": minimum,
        "correction": correction,
        "correction_name": name,
        "family": {"description": description, "tests": total, "excluded": total - m, "size": m},
        "significant_uncorrected": sum(1 for p in family if p["p_value"] < alpha),
        "significant_adjusted": sum(1 for p in family if p["significant"]),
        "pairs": pairs,
        "tukey": tukey,
    }


TUKEY_CONTROLS = (
    "the family-wise error over all pairs of rankers on one metric (one family per metric), by construction: "
    "every pair is compared with the largest difference of means the shuffled scores produce"
)
EFFECT_SIZE = (
    "Cohen's d_z: the mean of the per-question differences (row minus column) over their sample standard "
    "deviation; 0 when every difference is 0, undefined when all are equal but not 0"
)


def _tukey(
    rankers: Sequence[str],
    per_query: Mapping,
    scored: Sequence[str],
    settings: ExperimentSettings,
    pairs: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """The randomised Tukey HSD per metric, written into each pair beside the Holm-adjusted test: a second,
    all-pairs view whose family is one metric's pairs, not the page's."""
    by_metric: dict[str, Any] = {}
    index = {r: i for i, r in enumerate(rankers)}
    for metric in SIGNIFICANCE_METRICS if scored and len(rankers) > 1 else ():
        matrix = np.array([[per_query[r][q][metric] for r in rankers] for q in scored], dtype=np.float64)
        result = randomised_tukey_hsd(matrix, settings.seed, settings.rounds)
        mine = [p for p in pairs if p["metric"] == metric]
        for pair in mine:
            pair["tukey_p"] = float(result.p_values[index[pair["a"]], index[pair["b"]]])
            pair["tukey_significant"] = pair["tukey_p"] < settings.alpha
        by_metric[metric] = {
            "method": result.method,
            "exact": result.exact,
            "pairs": len(mine),
            "significant": sum(1 for p in mine if p["tukey_significant"]),
            "adjusted_significant": sum(1 for p in mine if p["significant"]),
        }
    return {
        "method": "randomised Tukey HSD (Carterette, TOIS 2012): each question's scores shuffled across the "
        "rankers; p = share of rounds whose max - min of the ranker means >= the pair's |mean difference|",
        "rounds": settings.rounds,
        "seed": settings.seed,
        "alpha": settings.alpha,
        "controls": TUKEY_CONTROLS,
        "effect_size": EFFECT_SIZE,
        "by_metric": by_metric,
    }


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
    return pairs


def _ablation(
    corpus: Corpus,
    rankers: Sequence[str],
    contracts: Mapping[str, Contract],
    per_query: Mapping,
    scored: Sequence[str],
    pairs: Sequence[dict],
) -> dict[str, Any]:
    """Each row adds one technique to its baseline (the row above when configured; a ranker differing by one
    declared component by default), with the change's adjusted p-value from the family."""
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
        }
        if previous is not None:
            row["delta"] = {
                m: math.fsum(per_query[ranker][q][m] - per_query[previous][q][m] for q in scored) / len(scored)
                for m in SIGNIFICANCE_METRICS
            }
            found = {p["metric"]: p for p in pairs if {p["a"], p["b"]} == {ranker, previous}}
            row["p_adjusted"] = {m: found[m]["p_adjusted"] for m in SIGNIFICANCE_METRICS} if found else None
            row["significant"] = {m: found[m]["significant"] for m in SIGNIFICANCE_METRICS} if found else None
        rows.append(row)
    return {"source": source, "rows": rows}


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
