"""One corpus's paired significance: the family of distinct comparisons, their corrected verdicts, the power of
the question set, the rank groups and the headline sentence's numbers. A pure function of per-question scores;
the tests themselves are :mod:`sitegen.scoring.statistics`.

``experiments.json``'s ``significance`` (schema 3)::

    {"seed", "rounds", "alpha", "metrics", "min_differing", "correction", "correction_name",
     "monte_carlo_rounds": R (max(rounds, ceil(20 m / alpha))), "power": 0.8, "min_interval_questions": 20,
     "intervals": bool (N >= 20: bootstrap intervals are shown),
     "methods": {"lattice": n, "split-half": n, "monte-carlo": n} (over the family),
     "identical": {metric: [[ranker, ...]]}: rankers with equal per-question values, merged into one row,
     "family": {"description", "tests", "excluded", "size"}: tests between distinct rows only,
     "significant_uncorrected", "significant_adjusted",
     "pairs": [{"a", "b", "metric", "mean_a", "mean_b", "difference", "differing", "tested", "method",
                "p_method", "p_value", "p_adjusted", "ci_low", "ci_high", "significant", "note", "wins", "ties",
                "losses", "effect_size", "tukey_p", "tukey_significant"}]   (a and b each first of their row),
     "detectable": {metric: {"sd", "alpha_per_test", "mde", "questions_for": {"0.02": n, "0.05": n}} | None},
     "groups": {metric: {"rows": [{"rankers": [...], "mean", "ci_low", "ci_high", "verified", "letters"}],
                         "groups": [[row index, ...]], "best_alone": bool}},
     "headline": {"metric", "leader": row, "runner_up": row | None, "difference", "ci_low", "ci_high",
                  "tested", "p_adjusted", "significant", "same_group", "mde"} | None,
     "tukey": {"method", "rounds", "seed", "alpha", "controls", "effect_size",
               "by_metric": {metric: {"method", "exact", "pairs", "significant", "adjusted_significant"}}}}

``groups`` is what a plot of the rank groups reads directly: per metric, the rows (merged rankers) in their
order (verified rows first, then by mean, highest first), each with its mean, the 95% bootstrap interval of that
mean (None below 20 questions) and its letters; ``groups`` lists, per letter a, b, ..., the rows sharing it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sitegen.scoring.statistics import (
    CORRECTIONS,
    MIN_INTERVAL_QUESTIONS,
    POWER,
    adjust_p_values,
    bootstrap_mean_cis,
    compact_letter_display,
    group_letters,
    identical_classes,
    minimum_detectable_effect,
    monte_carlo_rounds,
    paired_effect,
    paired_randomisation_test,
    questions_needed,
    randomised_tukey_hsd_many,
)

__all__ = [
    "DETECTABLE_EXAMPLES",
    "EFFECT_SIZE",
    "HEADLINE_METRIC",
    "SIGNIFICANCE_METRICS",
    "TUKEY_CONTROLS",
    "significance",
]

#: The metrics every pair of rows is tested on, one family per corpus.
SIGNIFICANCE_METRICS = ("hit@1", "hit@5", "mrr@10", "ndcg@10")
#: The metric of the headline sentence: graded, so it sees every relevant passage's grade and rank.
HEADLINE_METRIC = "ndcg@10"
#: The true differences for which the page says how many questions a test would need.
DETECTABLE_EXAMPLES = (0.02, 0.05)
TUKEY_CONTROLS = (
    "the family-wise error over all pairs of rows on one metric (one family per metric) in the weak sense only: "
    "when no ranker differs from any other; every pair is compared with the largest difference of means the "
    "shuffled scores produce, which is not a step-down or closed procedure, so with some real differences "
    "it promises no strong control"
)
EFFECT_SIZE = (
    "Cohen's d_z: the mean of the per-question differences (row minus column) over their sample standard "
    "deviation; 0 when every difference is 0, undefined when all are equal but not 0"
)

Scores = Mapping[str, Mapping[str, Sequence[float]]]
"""{ranker: {metric: per-question values over the scored questions, in one order}}."""
Intervals = Mapping[tuple[str, ...], tuple[float, float]]
"""Bootstrap intervals by (metric, a, b) for the paired difference a - b and (metric, row) for a row's mean."""


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if len(values) else 0.0


def _pair(a: str, b: str, metric: str, scores: Scores, settings: Any, intervals: Intervals) -> dict[str, Any]:
    """One distinct comparison before the family is known: its difference, interval and effect."""
    xa, xb = scores[a][metric], scores[b][metric]
    n = len(xa)
    interval = intervals.get((metric, a, b))
    differing = sum(1 for x, y in zip(xa, xb, strict=True) if x != y)
    return {
        "a": a,
        "b": b,
        "metric": metric,
        "mean_a": _mean(xa),
        "mean_b": _mean(xb),
        "difference": math.fsum(x - y for x, y in zip(xa, xb, strict=True)) / n,
        "differing": differing,
        "tested": differing >= settings.min_differing,
        "method": None,
        "p_method": None,
        "p_value": None,
        "p_adjusted": None,
        "ci_low": interval[0] if interval else None,
        "ci_high": interval[1] if interval else None,
        "significant": None,
        "note": None,
        **paired_effect(xa, xb),
        "tukey_p": None,
        "tukey_significant": None,
    }


def _note(pair: dict[str, Any]) -> str | None:
    """Why a cell's test and interval seem to disagree, or why there is no test, as a code of
    :data:`sitegen.wording.NOTES` (the page says it in words, the audit recomputes the code)."""
    if not pair["tested"]:
        return "too_few_differing"
    if pair["ci_low"] is None:
        return None
    excludes_zero = pair["ci_low"] > 0 or pair["ci_high"] < 0
    if excludes_zero and not pair["significant"]:
        return "interval_not_corrected"
    if pair["significant"] and not excludes_zero:
        return "interval_includes_zero"
    return None


def _detectable(
    classes: Sequence[Sequence[str]], metric: str, scores: Scores, alpha_test: float
) -> dict[str, Any] | None:
    """The question set's power on one metric: the paired standard deviation pooled over every pair of rows
    (root mean of their sample variances, n - 1, ties included), the minimum detectable effect at
    ``alpha_test`` and power 0.8, and the questions a true difference of 0.02 and 0.05 would need."""
    if len(classes) < 2:
        return None
    variances = []
    for i, a in enumerate(classes):
        for b in classes[i + 1 :]:
            d = np.asarray(scores[a[0]][metric], dtype=np.float64) - np.asarray(scores[b[0]][metric])
            if d.size < 2:
                return None
            mean = math.fsum(d.tolist()) / d.size
            variances.append(math.fsum(((d - mean) ** 2).tolist()) / (d.size - 1))
    sd = math.sqrt(math.fsum(variances) / len(variances))
    questions = len(scores[classes[0][0]][metric])
    return {
        "sd": sd,
        "alpha_per_test": alpha_test,
        "mde": minimum_detectable_effect(sd, questions, alpha_test),
        "questions_for": {f"{e:g}": questions_needed(sd, e, alpha_test) for e in DETECTABLE_EXAMPLES},
    }


def _row_order(
    classes: Sequence[Sequence[str]], metric: str, scores: Scores, unverified: Sequence[str]
) -> tuple[list[str], dict[str, float], dict[str, bool]]:
    """The rows of one metric (each by its first ranker) ordered verified first (a row is verified when any of its
    merged rankers is: their values are the same), then by mean, highest first, then build order; with the means
    and verified flags."""
    means = {c[0]: _mean(scores[c[0]][metric]) for c in classes}
    verified = {c[0]: any(r not in unverified for r in c) for c in classes}
    position = {c[0]: i for i, c in enumerate(classes)}
    return sorted((c[0] for c in classes), key=lambda r: (not verified[r], -means[r], position[r])), means, verified


def _difference(scores: Scores, metric: str, a: str, b: str) -> np.ndarray:
    return np.asarray(scores[a][metric], dtype=np.float64) - np.asarray(scores[b][metric], dtype=np.float64)


def _intervals(
    classes: Mapping[str, Sequence[Sequence[str]]], scores: Scores, settings: Any, unverified: Sequence[str]
) -> dict[tuple[str, ...], tuple[float, float]]:
    """Every bootstrap interval the page shows: each pair's difference, each row's mean and the headline's
    difference, resampled together (one draw for all, each the interval of a call of its own); none below 20
    questions."""
    columns: dict[tuple[str, ...], Any] = {}
    for metric, rows in classes.items():
        names = [c[0] for c in rows]
        if not names or len(scores[names[0]][metric]) < MIN_INTERVAL_QUESTIONS:
            continue
        for i, a in enumerate(names):
            columns.update({(metric, a, b): _difference(scores, metric, a, b) for b in names[i + 1 :]})
            columns[(metric, a)] = scores[a][metric]
        order = _row_order(rows, metric, scores, unverified)[0] if metric == HEADLINE_METRIC else []
        if len(order) > 1 and (metric, *order[:2]) not in columns:
            columns[(metric, *order[:2])] = _difference(scores, metric, *order[:2])
    found = bootstrap_mean_cis(list(columns.values()), settings.seed, settings.rounds)
    return dict(zip(columns, found, strict=True))


def _groups(
    classes: Sequence[Sequence[str]],
    metric: str,
    scores: Scores,
    separated: set[frozenset[str]],
    unverified: Sequence[str],
    intervals: Intervals,
) -> dict[str, Any]:
    """The rank groups of one metric: rows in :func:`_row_order`; rows no significant corrected test separates
    share a letter."""
    order, means, verified = _row_order(classes, metric, scores, unverified)
    pairs = [(a, b) for i, a in enumerate(order) for b in order[i + 1 :] if frozenset((a, b)) in separated]
    groups = compact_letter_display(order, pairs)
    letters = group_letters(order, groups)
    members = {c[0]: list(c) for c in classes}
    rows = []
    for r in order:
        ci = intervals.get((metric, r))
        rows.append(
            {
                "rankers": members[r],
                "mean": means[r],
                "ci_low": ci[0] if ci else None,
                "ci_high": ci[1] if ci else None,
                "verified": verified[r],
                "letters": letters[r],
            }
        )
    index = {r: i for i, r in enumerate(order)}
    group_rows = [[index[r] for r in g] for g in groups]
    alone = bool(order) and len(order) > 1 and all(len(g) == 1 for g in group_rows if 0 in g)
    return {"rows": rows, "groups": group_rows, "best_alone": alone}


def _headline(
    groups: Mapping[str, Any], pairs: Sequence[dict[str, Any]], scores: Scores, detectable: Any, intervals: Intervals
) -> dict[str, Any] | None:
    """The leading row of the headline metric against the next row, with their paired difference, its interval
    (None below 20 questions) and the corrected verdict of their test."""
    metric = HEADLINE_METRIC
    table = groups.get(metric)
    if table is None or len(table["rows"]) < 2:
        return None
    leader, runner = table["rows"][0]["rankers"][0], table["rows"][1]["rankers"][0]
    xa, xb = scores[leader][metric], scores[runner][metric]
    ci = intervals.get((metric, leader, runner))
    pair = next(p for p in pairs if p["metric"] == metric and {p["a"], p["b"]} == {leader, runner})
    return {
        "metric": metric,
        "leader": 0,
        "runner_up": 1,
        "difference": math.fsum(x - y for x, y in zip(xa, xb, strict=True)) / len(xa),
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
        "tested": pair["tested"],
        "p_adjusted": pair["p_adjusted"],
        "significant": pair["significant"],
        "same_group": any(0 in g and 1 in g for g in table["groups"]),
        "mde": detectable[metric]["mde"] if detectable.get(metric) else None,
    }


def _tukey(
    classes: Mapping[str, Sequence[Sequence[str]]], scores: Scores, settings: Any, pairs: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The randomised Tukey HSD per metric over the distinct rows, written into each pair beside the corrected
    test: a second, all-pairs view whose family is one metric's pairs, not the page's."""
    by_metric: dict[str, Any] = {}
    compared = {metric: [c[0] for c in rows] for metric, rows in classes.items() if len(rows) >= 2}
    matrices = [np.array([scores[r][metric] for r in names], dtype=np.float64).T for metric, names in compared.items()]
    # metrics with as many rows share each block's shuffles: the p-values of one call per metric
    results = randomised_tukey_hsd_many(matrices, settings.seed, settings.rounds)
    for (metric, names), result in zip(compared.items(), results, strict=True):
        mine = [p for p in pairs if p["metric"] == metric]
        for pair in mine:
            pair["tukey_p"] = float(result.p_values[names.index(pair["a"]), names.index(pair["b"])])
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
        "rows; p = share of rounds whose max - min of the row means >= the pair's |mean difference|",
        "rounds": settings.rounds,
        "seed": settings.seed,
        "alpha": settings.alpha,
        "controls": TUKEY_CONTROLS,
        "effect_size": EFFECT_SIZE,
        "by_metric": by_metric,
    }


def significance(
    corpus_name: str,
    rankers: Sequence[str],
    scores: Scores,
    settings: Any,
    correction: str,
    unverified: Sequence[str] = (),
) -> dict[str, Any]:
    """Every distinct pair of rows on every metric, as one family per corpus corrected together.

    Rankers with equal per-question values on a metric are one row of that metric (the first in build order
    stands for it). A pair with fewer than ``settings.min_differing`` differing questions is "too few questions
    to test" and left out of the family (not in m). Monte Carlo tests draw :func:`monte_carlo_rounds` rounds.
    "significant" is decided on the adjusted p-value alone. ``scores`` holds every :data:`SIGNIFICANCE_METRICS`."""
    metrics = SIGNIFICANCE_METRICS
    questions = len(scores[rankers[0]][metrics[0]]) if rankers and metrics else 0
    classes = {m: identical_classes({r: scores[r][m] for r in rankers}) if questions else [] for m in metrics}
    intervals = _intervals(classes, scores, settings, unverified)
    pairs = [
        _pair(a[0], b[0], m, scores, settings, intervals)
        for m in metrics
        for i, a in enumerate(classes[m])
        for b in classes[m][i + 1 :]
    ]
    family = [p for p in pairs if p["tested"]]
    m, name = len(family), CORRECTIONS[correction]
    rounds = monte_carlo_rounds(m, settings.alpha, settings.rounds)
    for pair in family:
        test = paired_randomisation_test(
            scores[pair["a"]][pair["metric"]], scores[pair["b"]][pair["metric"]], settings.seed, rounds
        )
        pair.update(method=test.method, p_method=test.kind, p_value=test.p_value)
    for pair, adjusted in zip(family, adjust_p_values([p["p_value"] for p in family], correction), strict=True):
        pair["p_adjusted"] = adjusted
        pair["significant"] = adjusted < settings.alpha
    for pair in pairs:
        pair["note"] = _note(pair)
    tukey = _tukey(classes, scores, settings, pairs)
    alpha_test = settings.alpha / max(1, m)
    detectable = {metric: _detectable(classes[metric], metric, scores, alpha_test) for metric in metrics}
    groups = {
        metric: _groups(classes[metric], metric, scores, _separated(pairs, metric), unverified, intervals)
        for metric in metrics
        if classes[metric]
    }
    total = len(pairs)
    merged = sum(len(c) - 1 for m_ in metrics for c in classes[m_])
    if total:
        description = f"{corpus_name}: every pair of distinct rows on each of {len(metrics)} metrics, {total} tests"
    else:
        reason = "no question has a relevant passage" if not questions else "fewer than two distinct rows"
        description = f"{corpus_name}: no tests ({reason})"
    if merged:
        description += f" ({merged} ranker-metric rows merged as identical)"
    if total - m:
        description += f"; {total - m} with fewer than {settings.min_differing} differing questions are left out"
    description += f", so m = {m}"
    methods = {
        kind: sum(1 for p in family if p["p_method"] == kind) for kind in ("lattice", "split-half", "monte-carlo")
    }
    return {
        "seed": settings.seed,
        "rounds": settings.rounds,
        "alpha": settings.alpha,
        "metrics": list(metrics),
        "min_differing": settings.min_differing,
        "correction": correction,
        "correction_name": name,
        "monte_carlo_rounds": rounds,
        "power": POWER,
        "min_interval_questions": MIN_INTERVAL_QUESTIONS,
        "intervals": questions >= MIN_INTERVAL_QUESTIONS,
        "methods": methods,
        "identical": {metric: [c for c in classes[metric] if len(c) > 1] for metric in metrics},
        "family": {"description": description, "tests": total, "excluded": total - m, "size": m},
        "significant_uncorrected": sum(1 for p in family if p["p_value"] < settings.alpha),
        "significant_adjusted": sum(1 for p in family if p["significant"]),
        "pairs": pairs,
        "detectable": detectable,
        "groups": groups,
        "headline": _headline(groups, pairs, scores, detectable, intervals),
        "tukey": tukey,
    }


def _separated(pairs: Sequence[dict[str, Any]], metric: str) -> set[frozenset[str]]:
    """The rows of one metric whose corrected test rejects."""
    return {frozenset((p["a"], p["b"])) for p in pairs if p["metric"] == metric and p["significant"]}
