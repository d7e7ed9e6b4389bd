"""Reproduction measures: how closely bundle B (a rerun) reproduces bundle A (the original).

The measures follow Breuer, Ferro, Fuhr, Maistro, Sakai, Schaer and Soboroff, "How to Measure the
Reproducibility of System-oriented IR Experiments" (SIGIR 2020), at three levels, each a pure
function over plain dicts and lists (the readers in :mod:`sitegen.compare.diff` do the I/O):

Effectiveness, per (ranker, metric), over the questions scored on both sides (n of them)::

    RMSE  = sqrt( (1/n) * sum_q (a_q - b_q)^2 )
    nRMSE = RMSE / (max_q a_q - min_q a_q)

``a_q``/``b_q`` are the per-question scores in A's and B's ``metrics.json`` ``per_query``. The
normalisation is the *range of the original's (A's) per-question scores*, so nRMSE is in [0, 1] for
metrics bounded by that range; it is undefined (``None``, with the reason) when that range is 0.

Overall effect, for a baseline/advanced pair of rankers and one metric, over the questions each
bundle scores for both rankers::

    improvement_X = (1/n_X) * sum_q (adv_q - base_q)             (X = A or B)
    ER            = improvement_B / improvement_A                 effect ratio; 1 = effect reproduced
    RI_X          = (mean_q adv_q - mean_q base_q) / mean_q base_q   relative improvement
    ΔRI           = RI_A - RI_B                                   0 = effect reproduced

ER is undefined when improvement_A is 0 (or a side has no question scored for both rankers), RI
when the baseline's mean is 0; each undefined value is ``None`` with the reason.

Document order, per ranker and question: rank-biased overlap (Webber, Moffat and Zobel, "A
Similarity Measure for Indefinite Rankings", TOIS 2010) with persistence p = 0.9, evaluated to the
stored hits (each run's own depth; the lists may differ in length) and extrapolated with RBO_ext
(their equation 32), for the shorter list S (length s) and longer list L (length l)::

    X_d     = |S[:d] ∩ L[:d]| for d <= s,  |S ∩ L[:d]| for d > s
    RBO_ext = (1-p)/p * ( sum_{d=1..l} X_d/d * p^d + sum_{d=s+1..l} X_s*(d-s)/(s*d) * p^d )
              + ( (X_l - X_s)/l + X_s/s ) * p^l

Identical lists give 1, lists with no document in common 0, and a list that is a prefix of the
other 1 (the extrapolation assumes the shorter one continues as the agreement so far suggests).
Two empty lists count as 1, one empty list against a non-empty one as 0. RBO_ext depends only on
which ids are equal, never on how they sort. Per ranker the mean over the questions either run
holds is reported (a question missing on one side is an empty list there).

Kendall's tau union, as repro_eval computes it, is deliberately not reported: it replaces each id by
its position in the *sorted* union of both lists and correlates those numbers position by
position, so its value depends on how the document ids happen to sort; two lists with no document
in common (``[a, b, c]`` against ``[d, e, f]``) score 1.0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sitegen.compare.order import natural_key

__all__ = [
    "DEFAULT_PAIR",
    "KTU_NOTE",
    "NRMSE_NORMALISATION",
    "RBO_DEPTH",
    "RBO_P",
    "PairEffect",
    "RankingAgreement",
    "ScoreAgreement",
    "effect",
    "pair_effects",
    "parse_pair",
    "ranking_agreement",
    "rbo_ext",
    "rmse",
    "score_agreement",
]

RBO_P = 0.9
DEFAULT_PAIR = ("bm25", "rrf-dense-bm25")
NRMSE_NORMALISATION = "RMSE / (max - min) of A's per-question scores; undefined when that range is 0"
RBO_DEPTH = "the stored hits of each run (its own depth; lists of different lengths extrapolated, RBO_ext)"
KTU_NOTE = (
    "Kendall's tau union (repro_eval's KTU) is not reported: it numbers ids by their place in the sorted "
    "union of both lists, so its value depends on how ids sort, and two lists with no document in common "
    "can score 1.0"
)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


# ----------------------------------------------------------------------------------- effectiveness


def rmse(a: Sequence[float], b: Sequence[float]) -> float:
    """Root mean square error of two equally long score lists (question by question); 0.0 for none."""
    if len(a) != len(b):
        raise ValueError(f"score lists differ in length: {len(a)} vs {len(b)}")
    if not a:
        return 0.0
    return math.sqrt(math.fsum((x - y) ** 2 for x, y in zip(a, b, strict=True)) / len(a))


@dataclass(frozen=True)
class ScoreAgreement:
    """RMSE and nRMSE of one ranker's per-question scores for one metric, A (original) vs B (rerun)."""

    corpus: str
    ranker: str
    metric: str
    questions: int
    only_in_a: int
    only_in_b: int
    rmse: float | None
    nrmse: float | None
    undefined: str | None  # why rmse or nrmse is None


def _scores(per_query: Mapping[str, Mapping[str, Any]], metric: str) -> dict[str, float]:
    return {
        q: float(s[metric])
        for q, s in per_query.items()
        if isinstance(s.get(metric), int | float) and not isinstance(s.get(metric), bool)
    }


def score_agreement(
    corpus: str,
    ranker: str,
    per_query_a: Mapping[str, Mapping[str, Any]],
    per_query_b: Mapping[str, Mapping[str, Any]],
) -> tuple[ScoreAgreement, ...]:
    """One :class:`ScoreAgreement` per metric either side scores (``{qid: {metric: score}}``), over the
    questions both sides score for that metric (``None`` scores count as unscored)."""
    metrics = {m for s in per_query_a.values() for m in s} | {m for s in per_query_b.values() for m in s}
    out = []
    why: str | None
    for metric in sorted(metrics, key=natural_key):
        sa, sb = _scores(per_query_a, metric), _scores(per_query_b, metric)
        common = sorted(sa.keys() & sb.keys(), key=natural_key)
        only_a, only_b = len(sa.keys() - sb.keys()), len(sb.keys() - sa.keys())
        if not common:
            why = "no question scored in both"
            out.append(ScoreAgreement(corpus, ranker, metric, 0, only_a, only_b, None, None, why))
            continue
        a = [sa[q] for q in common]
        error = rmse(a, [sb[q] for q in common])
        spread = max(a) - min(a)
        normalised, why = (error / spread, None) if spread else (None, "A's per-question scores are all equal")
        out.append(ScoreAgreement(corpus, ranker, metric, len(common), only_a, only_b, error, normalised, why))
    return tuple(out)


# ---------------------------------------------------------------------------------- overall effect


@dataclass(frozen=True)
class PairEffect:
    """Effect ratio and ΔRI of an advanced ranker over a baseline for one metric (A original, B rerun)."""

    corpus: str
    baseline: str
    advanced: str
    metric: str
    questions_a: int
    questions_b: int
    improvement_a: float | None
    improvement_b: float | None
    er: float | None
    er_undefined: str | None
    ri_a: float | None
    ri_b: float | None
    delta_ri: float | None
    delta_ri_undefined: str | None


def _side(
    base: Mapping[str, float], adv: Mapping[str, float], side: str
) -> tuple[int, float | None, float | None, str]:
    """(questions, mean improvement, RI, why RI is undefined) of one bundle."""
    common = sorted(base.keys() & adv.keys(), key=natural_key)
    if not common:
        return 0, None, None, f"no question scored for both rankers in {side}"
    improvement = _mean([adv[q] - base[q] for q in common])
    mean_base = _mean([base[q] for q in common])
    if mean_base == 0:
        return len(common), improvement, None, f"the baseline's mean in {side} is 0"
    return len(common), improvement, (_mean([adv[q] for q in common]) - mean_base) / mean_base, ""


def effect(
    corpus: str,
    baseline: str,
    advanced: str,
    metric: str,
    a: tuple[Mapping[str, float], Mapping[str, float]],
    b: tuple[Mapping[str, float], Mapping[str, float]],
) -> PairEffect:
    """ER and ΔRI from per-question scores ``{qid: score}`` of the baseline and advanced ranker in A and B
    (``a`` and ``b``: the baseline's scores, then the advanced ranker's)."""
    n_a, imp_a, ri_a, why_a = _side(*a, "A")
    n_b, imp_b, ri_b, why_b = _side(*b, "B")
    er: float | None = None
    if imp_a is None or imp_b is None:
        er_why: str | None = f"no question scored for both rankers in {'A' if imp_a is None else 'B'}"
    elif imp_a == 0:
        er_why = "the mean improvement in A is 0"
    else:
        er, er_why = imp_b / imp_a, None
    delta = None if ri_a is None or ri_b is None else ri_a - ri_b
    return PairEffect(
        corpus,
        baseline,
        advanced,
        metric,
        n_a,
        n_b,
        imp_a,
        imp_b,
        er,
        er_why,
        ri_a,
        ri_b,
        delta,
        "; ".join(w for w in (why_a, why_b) if w) or None,
    )


def pair_effects(
    corpus: str,
    baseline: str,
    advanced: str,
    per_query_a: Mapping[str, Mapping[str, Mapping[str, Any]]],
    per_query_b: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> tuple[PairEffect, ...]:
    """:func:`effect` for every metric both rankers are scored on in both bundles
    (``per_query_X``: ``{ranker: {qid: {metric: score}}}``; the caller checks the rankers exist)."""
    sides = (per_query_a[baseline], per_query_a[advanced], per_query_b[baseline], per_query_b[advanced])
    names = [{m for s in side.values() for m in s} for side in sides]
    metrics = set.intersection(*names)
    return tuple(
        effect(
            corpus,
            baseline,
            advanced,
            m,
            (_scores(sides[0], m), _scores(sides[1], m)),
            (_scores(sides[2], m), _scores(sides[3], m)),
        )
        for m in sorted(metrics, key=natural_key)
    )


def parse_pair(text: str) -> tuple[str, str]:
    """``"BASELINE:ADVANCED"`` -> ``(baseline, advanced)``; ``ValueError`` unless both are non-empty and differ."""
    baseline, colon, advanced = text.partition(":")
    if not colon or not baseline or not advanced or ":" in advanced:
        raise ValueError(f"{text!r} is not BASELINE:ADVANCED (two ranker names joined by one colon)")
    if baseline == advanced:
        raise ValueError(f"{text!r}: the baseline and the advanced ranker are the same")
    return baseline, advanced


# ---------------------------------------------------------------------------------- document order


def _unique(ids: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    return [i for i in ids if not (i in seen or seen.add(i))]


def rbo_ext(first: Sequence[str], second: Sequence[str], p: float = RBO_P) -> float:
    """Extrapolated rank-biased overlap of two rankings (best first) of possibly different lengths, with
    persistence ``p`` in (0, 1): Webber et al.'s RBO_ext (formula in the module doc). A repeated id
    counts at its first place only; two empty lists give 1.0, one empty list 0.0."""
    if not 0 < p < 1:
        raise ValueError(f"persistence p must be in (0, 1), not {p!r}")
    a, b = _unique(first), _unique(second)
    if a == b:
        return 1.0
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    s, n = len(short), len(long)  # s and l in the formula
    if s == 0:
        return 0.0
    short_all = set(short)
    seen_short: set[str] = set()
    seen_long: set[str] = set()
    overlap = 0
    x_s = 0
    terms = []
    for d in range(1, n + 1):
        item = long[d - 1]
        if d <= s:
            other = short[d - 1]
            if item == other:
                overlap += 1
            else:
                overlap += (item in seen_short) + (other in seen_long)
            seen_short.add(other)
            seen_long.add(item)
            if d == s:
                x_s = overlap
            terms.append(overlap / d * p**d)
        else:
            overlap += item in short_all
            terms.append(overlap / d * p**d)
            terms.append(x_s * (d - s) / (s * d) * p**d)
    return (1 - p) / p * math.fsum(terms) + ((overlap - x_s) / n + x_s / s) * p**n


@dataclass(frozen=True)
class RankingAgreement:
    """Mean RBO_ext over questions between one ranker's rankings in A and in B."""

    corpus: str
    ranker: str
    questions: int
    depth: int  # the longest stored list on either side: the depth RBO is evaluated to
    mean_rbo: float | None  # None: neither run holds a question
    min_rbo: float | None
    min_at: str | None  # the first question (natural order) with the lowest value


def ranking_agreement(
    corpus: str,
    ranker: str,
    rankings_a: Mapping[str, Sequence[str]],
    rankings_b: Mapping[str, Sequence[str]],
    p: float = RBO_P,
) -> RankingAgreement:
    """RBO_ext per question over the union of both runs' questions (``{qid: [doc_id best first]}``)."""
    values: list[float] = []
    low: tuple[float, str] | None = None
    for qid in sorted(rankings_a.keys() | rankings_b.keys(), key=natural_key):
        value = rbo_ext(rankings_a.get(qid, ()), rankings_b.get(qid, ()), p)
        values.append(value)
        if low is None or value < low[0]:
            low = (value, qid)
    depth = max((len(r) for r in (*rankings_a.values(), *rankings_b.values())), default=0)
    if low is None:
        return RankingAgreement(corpus, ranker, 0, depth, None, None, None)
    return RankingAgreement(corpus, ranker, len(values), depth, _mean(values), low[0], low[1])
