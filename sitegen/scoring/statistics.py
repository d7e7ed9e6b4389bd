"""The statistics behind every "better": paired sign-flip tests, bootstrap intervals, multiplicity corrections, the
randomised Tukey HSD, effect sizes, power and rank groups. Pure functions of numbers and a recorded seed.

Every randomised procedure is specified exactly (the numpy generator, the block sizes, the comparison tolerance),
so the same seed gives the same p-values and intervals in any implementation that uses numpy's PCG64; the audit
(``sitegen/audit.py``) writes each one again from these docstrings. The fixed rules (which exact method a test
uses, how many Monte Carlo rounds a family needs, the power target) are constants here and pinned in the audit,
so no publisher chooses them.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

__all__ = [
    "BLOCK_ROUNDS",
    "CORRECTIONS",
    "LATTICE",
    "MIN_INTERVAL_QUESTIONS",
    "POWER",
    "SPLIT_HALF_MAX",
    "RandomisationResult",
    "TukeyResult",
    "adjust_p_values",
    "bootstrap_mean_ci",
    "bootstrap_mean_cis",
    "compact_letter_display",
    "identical_classes",
    "minimum_detectable_effect",
    "monte_carlo_rounds",
    "paired_bootstrap_ci",
    "paired_effect",
    "paired_permutation_test",
    "paired_randomisation_test",
    "questions_needed",
    "randomised_tukey_hsd",
    "randomised_tukey_hsd_many",
]

BLOCK_ROUNDS = 1_000
CORRECTIONS = {"holm": "Holm-Bonferroni", "bh": "Benjamini-Hochberg"}
TIE = 1e-12

#: lcm(1, ..., 10): every difference of hit@k, of precision@k for k dividing it, and of mrr@k for k <= 10 is a
#: whole multiple of 1/LATTICE, so the sign-flip distribution of their sum is a convolution over integers.
LATTICE = 2520
#: The lattice convolution is used while (differing questions) x (sum of |difference| x LATTICE) stays within
#: this many cells: about 0.1 s of numpy work.
LATTICE_BUDGET = 1 << 26
#: Up to this many differing questions the 2^n sign patterns are enumerated exactly by splitting them in two
#: halves (2^22 sums each at most, met by a sorted search): any metric, any values.
SPLIT_HALF_MAX = 44
#: Half-sums of the split-half method are matched against the other half in blocks of this many.
_SPLIT_BLOCK = 1 << 16
#: Monte Carlo rounds per test: at least ``MC_FACTOR * m / alpha``, so the smallest attainable p, 1 / (R + 1), lies
#: a factor of 20 below Holm's first threshold alpha / m and no verdict hangs on the rounds drawn.
MC_FACTOR = 20
#: The power a minimum detectable effect is computed for.
POWER = 0.8
#: Below this many questions no bootstrap interval is shown: a percentile bootstrap over so few is overconfident.
MIN_INTERVAL_QUESTIONS = 20


@dataclass(frozen=True)
class RandomisationResult:
    """One paired randomisation test: the p-value and how it was obtained, for the evidence.

    ``kind`` is ``lattice``, ``split-half`` (both exact) or ``monte-carlo``; ``method`` says it in words."""

    p_value: float
    differing: int
    exact: bool
    method: str
    kind: str


def _differences(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    return np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)


def _lattice_units(d: np.ndarray) -> np.ndarray | None:
    """``d * LATTICE`` as integers when every one is within 1e-6 of a whole number, else None."""
    scaled = d * LATTICE
    units = np.rint(scaled)
    if d.size == 0 or np.any(np.abs(scaled - units) > 1e-6):
        return None
    return units.astype(np.int64)


def _lattice_p(units: np.ndarray) -> float:
    """Exact two-sided p from the sign-flip distribution of ``sum(s * units)``, built by convolving one
    question at a time: each moves half its probability up by |u| and half down (probabilities in float64, so
    exact up to rounding, about 1e-16 relative)."""
    if not units.any():
        return 1.0
    # On the grid of the units' greatest common divisor the same sums carry the same probabilities, the same
    # additions made in the same order (the points left out are never reached), so p is unchanged, bit for bit,
    # and a hit@k difference (a whole 2520) needs a distribution 2520 times shorter.
    units = units // int(np.gcd.reduce(units))
    total = int(np.abs(units).sum())
    observed = abs(int(units.sum()))
    if observed == 0:
        return 1.0
    # Two buffers in turn: a fresh array a step page-faulted on every 4 kB, ten times the arithmetic.
    dist, spare = np.zeros(2 * total + 1), np.zeros(2 * total + 1)
    dist[total], reach = 1.0, 0  # the sums so far lie in [-reach, reach]: each step adds zeros outside it nowhere
    for u in np.abs(units).tolist():
        if u == 0:  # a difference below 1e-6 / 2520 (float noise): it moves no sum, as in the full enumeration
            continue
        # new[j] = (seen[j] + seen[j - 2u]) / 2 where both lie in the old reach, else the one that does, halved
        seen = dist[total - reach : total + reach + 1]
        size, shift = seen.size, 2 * u
        new = spare[total - reach - u : total + reach + u + 1]
        new[size:shift] = 0.0  # reached by neither (only when 2u exceeds the old reach's width)
        np.multiply(seen[: min(shift, size)], 0.5, out=new[: min(shift, size)])
        np.multiply(seen[max(size - shift, 0) :], 0.5, out=new[max(size, shift) :])
        if shift < size:
            np.add(seen[shift:], seen[: size - shift], out=new[shift:size])
            new[shift:size] *= 0.5
        dist, spare = spare, dist
        reach += u
    values = np.arange(-total, total + 1)
    return float(math.fsum(dist[np.abs(values) >= observed].tolist()))


def _all_sums(d: np.ndarray) -> np.ndarray:
    """The 2^len(d) values of sum(s * d) over every sign pattern, each difference doubling them in one array."""
    sums = np.empty(1 << d.size)
    sums[0], filled = 0.0, 1
    for x in d.tolist():
        np.subtract(sums[:filled], x, out=sums[filled : 2 * filled])
        sums[:filled] += x
        filled *= 2
    return sums


def _split_half_p(d: np.ndarray, observed: float) -> float:
    """Exact two-sided p over all 2^n sign patterns without listing them: the sums of the first half's patterns
    (left) meet the sorted sums of the second half's (right); a pattern is extreme when
    |left + right| >= observed - 1e-12. Negating a pattern negates its sum exactly (IEEE rounding is symmetric),
    so the sums at or below -threshold mirror those at or above it: one binary search per left, counted twice."""
    threshold = observed - TIE
    if threshold <= 0:
        return 1.0
    half = d.size // 2
    # both halves sorted: the searches then walk the right half in order, which keeps them in the cache
    left, right = np.sort(_all_sums(d[:half])), np.sort(_all_sums(d[half:]))
    above = 0
    for start in range(0, left.size, _SPLIT_BLOCK):
        block = left[start : start + _SPLIT_BLOCK]
        above += int((right.size - np.searchsorted(right, threshold - block, side="left")).sum())
    return 2 * above / 2**d.size


def monte_carlo_rounds(family_size: int, alpha: float, minimum: int) -> int:
    """Rounds for a Monte Carlo test in a family of ``family_size``: ``max(minimum, ceil(20 m / alpha))``."""
    return max(minimum, math.ceil(MC_FACTOR * family_size / alpha))


KEPT_SIGN_DRAWS = 1 << 28
"""Up to this many 0/1 sign draws of one seed are kept, eight to a byte (32 MB), for every Monte Carlo test of that
seed."""
#: The kept draws are made this many at a time (8 MB of int64 before packing).
_SIGN_CHUNK = 1 << 20


class _SignDraws:
    """The 0/1 draws of ``numpy.random.default_rng(seed).integers(0, 2)``, kept packed as far as they were read.

    One call drawing (block, n) gives the same values as the next block * n draws of one long stream (the generator
    keeps the half of a 64-bit output a call leaves), so the tests of one seed, whatever their n, read prefixes of
    one stream instead of each drawing rounds x n values again."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self._packed = np.zeros(0, dtype=np.uint8)
        self._count = 0  # draws kept, a multiple of 8

    def reserve(self, count: int) -> None:
        """Keep at least ``count`` draws (at least doubling, so a family of tests draws about once)."""
        if count <= self._count:
            return
        target = -(-min(max(count, 2 * self._count), KEPT_SIGN_DRAWS) // 8) * 8
        parts = [self._packed]
        for start in range(self._count, target, _SIGN_CHUNK):
            drawn = self._rng.integers(0, 2, size=min(_SIGN_CHUNK, target - start))
            parts.append(np.packbits(drawn.astype(np.uint8)))
        self._packed, self._count = np.concatenate(parts), target

    def bits(self, start: int, count: int) -> np.ndarray:
        """Draws ``start`` to ``start + count`` of the stream, as uint8 0/1."""
        self.reserve(start + count)
        first, skip = divmod(start, 8)
        return np.unpackbits(self._packed[first : -(-(start + count) // 8)])[skip : skip + count]


@functools.lru_cache(maxsize=1)
def _sign_draws(seed: int) -> _SignDraws:
    return _SignDraws(seed)


def _sign_bits(seed: int, rounds: int, n: int) -> Iterator[np.ndarray]:
    """The 0/1 signs of :func:`paired_randomisation_test`'s Monte Carlo method, one (block, n) array per block of
    1,000 rounds: read from the kept draws up to :data:`KEPT_SIGN_DRAWS`, else drawn block by block."""
    kept = _sign_draws(seed) if rounds * n <= KEPT_SIGN_DRAWS else None
    if kept is not None:
        kept.reserve(rounds * n)
    rng = np.random.default_rng(seed) if kept is None else None
    for start in range(0, rounds, BLOCK_ROUNDS):
        block = min(BLOCK_ROUNDS, rounds - start)
        yield kept.bits(start * n, block * n).reshape(block, n) if rng is None else rng.integers(0, 2, (block, n))


#: Row b: the signs 2 * bit - 1 of byte b's eight bits, the high bit first (as numpy.packbits packs).
_BYTE_SIGNS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1) * 2.0 - 1.0


def _byte_sums(d: np.ndarray) -> np.ndarray:
    """Entry 256 g + b: the sum of d[8g : 8g + 8] times the signs of byte b (d padded with zeros)."""
    padded = np.zeros(-(-d.size // 8) * 8)
    padded[: d.size] = d
    padded = padded.reshape(-1, 8)
    sums = np.zeros((padded.shape[0], 256))
    for k in range(8):
        sums += padded[:, k : k + 1] * _BYTE_SIGNS[:, k]
    return sums.ravel()


def _extreme_rounds(d: np.ndarray, threshold: float, seed: int, rounds: int) -> int:
    """Rounds of the Monte Carlo method whose ``|signs @ d| >= threshold``, the float64 product's verdict, mostly
    reached without forming the product.

    With every d +-1, ``signs @ d`` is the whole number n - 2 * (signs disagreeing with d), which float64 additions in
    any order (any BLAS, any CPU) give exactly: it is counted from the draws. Otherwise a round's sum is estimated
    from :func:`_byte_sums` looked up by its packed draws: the product lies within (n - 1) 2^-53 sum|d| of the true
    sum in any order of additions, the estimate within (n / 8 + 8) 2^-53 sum|d|, so a round whose estimate is four
    times their sum or more from the threshold gets the product's verdict. A block with any round nearer is counted
    from ``signs @ d`` itself, the (block, n) product the method documents."""
    n = d.size
    if np.all(np.abs(d) == 1.0):
        agree = (d > 0).astype(np.uint8)  # draw 1 is sign +1
        return sum(
            int(np.count_nonzero(np.abs(n - 2 * np.count_nonzero(bits != agree, axis=1)) >= threshold))
            for bits in _sign_bits(seed, rounds, n)
        )
    sums, groups = _byte_sums(d), -(-n // 8)
    margin = 4 * (n + groups + 16) * 2.0**-53 * math.fsum(np.abs(d).tolist())
    offsets = np.arange(0, 256 * groups, 256)
    extreme = 0
    for bits in _sign_bits(seed, rounds, n):
        estimate = np.abs(np.take(sums, np.packbits(bits, axis=1) + offsets).sum(axis=1))
        if np.all((estimate >= threshold + margin) | (estimate <= threshold - margin)):
            extreme += int(np.count_nonzero(estimate >= threshold))
        else:
            signs = bits * 2.0
            signs -= 1.0  # in place: the same +-1 values as (bits * 2 - 1), one n x block temporary fewer
            extreme += int(np.count_nonzero(np.abs(signs @ d) >= threshold))
    return extreme


def paired_randomisation_test(a: Sequence[float], b: Sequence[float], seed: int, rounds: int) -> RandomisationResult:
    """Two-sided paired randomisation (sign-flip) test of mean(a - b) = 0.

    Questions where a and b agree contribute nothing to any sign pattern, so they are dropped: ``d`` holds the
    n nonzero differences and the statistic of a pattern ``s`` is ``|sum(s * d)|``, observed ``|sum(d)|``; a
    pattern counts as extreme when its statistic >= observed - 1e-12. The method is fixed by the data:

    1. ``lattice``: every ``d * 2520`` within 1e-6 of an integer u and n * sum(|u|) <= 2^26: the exact
       distribution of sum(s * u) by convolution, p = P(|sum| >= |sum(u)|) (n = 0 gives p = 1).
    2. ``split-half``: otherwise, n <= 44: all 2^n patterns, exactly, as the sums of the first floor(n/2)
       differences' patterns met with the sorted sums of the rest's; p = extreme / 2^n.
    3. ``monte-carlo``: otherwise ``rng = numpy.random.default_rng(seed)``; in blocks of 1,000 rounds (the last
       one shorter) ``signs = rng.integers(0, 2, size=(block, n)) * 2 - 1``; p = (b + 1) / (rounds + 1), b the
       extreme rounds. The caller sizes ``rounds`` by :func:`monte_carlo_rounds`.

    Memory is bounded: a Monte Carlo block holds a (1,000 x n) draw and its signs, 16,000 * n bytes, and up to
    2^28 of one seed's draws are kept, packed in 32 MB, for the next test (:data:`KEPT_SIGN_DRAWS`); the
    split-half method two arrays of at most 2^22 float64 (32 MB each); the lattice at most 2^26 cells over all
    steps.
    """
    d = _differences(a, b)
    d = d[d != 0]
    n = int(d.size)
    units = _lattice_units(d)
    if n == 0:
        return RandomisationResult(1.0, 0, True, "no question differs", "lattice")
    if units is not None and n * int(np.abs(units).sum()) <= LATTICE_BUDGET:
        return RandomisationResult(
            _lattice_p(units), n, True, f"exact: the sign-flip distribution over {n} questions (lattice)", "lattice"
        )
    observed = abs(math.fsum(d.tolist()))
    if n <= SPLIT_HALF_MAX:
        return RandomisationResult(
            _split_half_p(d, observed), n, True, f"exact: all 2^{n} sign patterns (split-half)", "split-half"
        )
    extreme = _extreme_rounds(d, observed - TIE, seed, rounds)
    return RandomisationResult(
        (extreme + 1) / (rounds + 1),
        n,
        False,
        f"Monte Carlo, {rounds} rounds, seed {seed} (2^{n} patterns)",
        "monte-carlo",
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


def bootstrap_mean_ci(values: Sequence[float], seed: int, rounds: int, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(values) over all N values.

    Exactly: ``rng = numpy.random.default_rng(seed)``; in blocks of 1,000 rounds (the last one shorter)
    ``idx = rng.integers(0, N, size=(block, N))`` and the block's means ``values[idx].mean(axis=1)``; bounds =
    ``numpy.quantile(means, [(1 - level) / 2, (1 + level) / 2])`` (linear interpolation). Memory: one block is
    16,000 * N bytes (indices and gathered values) plus 8 bytes per round for the means.
    """
    d = np.asarray(values, dtype=np.float64)
    if d.size == 0 or rounds * d.size > CACHED_BOOTSTRAP_VALUES:
        return bootstrap_mean_cis([d], seed, rounds, level)[0]
    means = np.empty(rounds, dtype=np.float64)
    for start, idx in zip(range(0, rounds, BLOCK_ROUNDS), _bootstrap_indices(seed, rounds, d.size), strict=True):
        means[start : start + idx.shape[0]] = d[idx].mean(axis=1)
    return _interval(means, level)


def _interval(means: np.ndarray, level: float) -> tuple[float, float]:
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return (float(low), float(high))


#: From this many whole-number columns on, :func:`bootstrap_mean_cis` sums them from each round's draw counts (one
#: count per block and a product) instead of gathering each.
COUNTED_COLUMNS = 3
#: Rounds whose draw counts are made at a time: three arrays of this many x N (int64 counts, their float64 copy and
#: the flat indices they are counted from).
_COUNT_ROUNDS = 125


def _whole_numbers(d: np.ndarray) -> bool:
    """Whether every value is a whole number and N * max|value| <= 2^53, so that every sum of resampled values,
    and every partial sum on the way in any order, is a whole number float64 holds exactly; and none is -0.0 (a sum
    of zeros alone would keep its sign, which a product of counts does not)."""
    if d.size == 0 or not np.all(np.isfinite(d)) or not np.all(d == np.rint(d)):
        return False
    return bool(d.size * np.abs(d).max() <= 2**53 and not np.any(np.signbit(d) & (d == 0)))


def _counted_sums(idx: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """Per round (row of ``idx``) the sum of each whole-number column's resampled values: the draw counts of the
    questions times the columns. Every product and partial sum is a whole number below 2^53 (:func:`_whole_numbers`),
    so the float64 product is exact on any CPU and equals the sum numpy's mean takes of the gathered values."""
    rows, size = idx.shape
    sums = np.empty((rows, whole.shape[1]))
    offsets = (np.arange(_COUNT_ROUNDS, dtype=np.intp) * size)[:, None]
    for start in range(0, rows, _COUNT_ROUNDS):
        part = idx[start : start + _COUNT_ROUNDS]
        counts = np.bincount((part + offsets[: part.shape[0]]).ravel(), minlength=part.size)
        sums[start : start + part.shape[0]] = counts.reshape(part.shape).astype(np.float64) @ whole
    return sums


def bootstrap_mean_cis(
    columns: Sequence[Sequence[float]], seed: int, rounds: int, level: float = 0.95
) -> list[tuple[float, float]]:
    """:func:`bootstrap_mean_ci` of each column, all of one length N: each block of indices is drawn once and
    resamples every column, so each interval is the one a call of its own gives, without drawing again. Whole-number
    columns (hit@k and their differences), from :data:`COUNTED_COLUMNS` of them on, are summed from draw counts,
    exactly the same sums. Memory: one block of indices and one of gathered values (16,000 * N bytes), counts of 125
    rounds (3,000 * N bytes) and 8 bytes per round per column."""
    data = [np.asarray(c, dtype=np.float64) for c in columns]
    size = data[0].size if data else 0
    if any(d.size != size for d in data):
        raise ValueError("bootstrap columns of different lengths")
    if size == 0:
        return [(0.0, 0.0)] * len(data)
    counted = [i for i, d in enumerate(data) if _whole_numbers(d)]
    counted = counted if len(counted) >= COUNTED_COLUMNS else []
    whole = np.column_stack([data[i] for i in counted]) if counted else None
    means = np.empty((len(data), rounds), dtype=np.float64)
    resampled = [(d, row) for i, (d, row) in enumerate(zip(data, means, strict=True)) if i not in counted]
    rng = np.random.default_rng(seed)
    gathered = np.empty((min(BLOCK_ROUNDS, rounds), size))
    for start in range(0, rounds, BLOCK_ROUNDS):
        idx = rng.integers(0, size, size=(min(BLOCK_ROUNDS, rounds - start), size))
        block = gathered[: idx.shape[0]]
        for d, row in resampled:
            # d[idx] into one kept buffer (mode "clip" clips none of these indices but lets take write in place)
            np.take(d, idx, out=block, mode="clip")
            row[start : start + idx.shape[0]] = block.mean(axis=1)
        if whole is not None:
            means[counted, start : start + idx.shape[0]] = (_counted_sums(idx, whole) / size).T
    return [_interval(row, level) for row in means]


def paired_bootstrap_ci(
    a: Sequence[float], b: Sequence[float], seed: int, rounds: int, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(a - b) over all N paired questions (ties included: they pull the
    mean toward 0): :func:`bootstrap_mean_ci` of the differences."""
    return bootstrap_mean_ci(_differences(a, b), seed, rounds, level)


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
"""Scores permuted per Monte Carlo block of the Tukey HSD: the block holds this many float64 keys, a transposed
copy of them, their flat int64 orders and the permuted float64 scores, about 33 MB whatever the questions, rankers,
rounds or number of matrices sharing the block."""
#: Up to this many rankers a Monte Carlo row order is looked up from the row's k(k-1)/2 key comparisons (a table of
#: 2^15 orders at k = 6, 1.5 MB); with more, numpy's stable argsort gives it.
TUKEY_TABLE_RANKERS = 6


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


@functools.lru_cache(maxsize=TUKEY_TABLE_RANKERS)
def _order_table(k: int) -> np.ndarray:
    """Row orders by comparison pattern: bit b of a pattern says, for the b-th pair i < j of
    ``itertools.combinations(range(k), 2)``, that keys[j] < keys[i], so j comes first in a stable sort; the entry is
    the stable order (patterns no order gives stay 0 and are never looked up)."""
    pairs = list(itertools.combinations(range(k), 2))
    table = np.zeros((1 << len(pairs), k), dtype=np.intp)
    for order in itertools.permutations(range(k)):
        place = [order.index(r) for r in range(k)]
        table[sum(1 << bit for bit, (i, j) in enumerate(pairs) if place[j] < place[i])] = order
    return table


def _flat_orders(keys: np.ndarray) -> np.ndarray:
    """For keys of shape (block, n, k): flat indices ``[q, b, p] = q * k + numpy.argsort(keys[b, q],
    kind="stable")[p]`` into a C-ordered n x k matrix. Questions outermost, so summing the permuted scores over the
    questions adds them one question at a time, in question order: the additions numpy's mean over the questions of
    a (block, n, k) array makes, so the same floats."""
    block, n, k = keys.shape
    if k <= TUKEY_TABLE_RANKERS:
        columns = np.ascontiguousarray(keys.transpose(2, 1, 0))  # (k, n, block)
        pattern = np.zeros((n, block), dtype=np.uint16)
        less = np.empty((n, block), dtype=bool)
        for bit, (i, j) in enumerate(itertools.combinations(range(k), 2)):
            np.less(columns[j], columns[i], out=less)
            pattern += less * np.uint16(1 << bit)
        flat = np.take(_order_table(k), pattern, axis=0)
    else:
        flat = np.ascontiguousarray(np.argsort(keys, axis=2, kind="stable").transpose(1, 0, 2))
    flat += (np.arange(n, dtype=np.intp) * k)[:, None, None]
    return flat


def _tukey_thresholds(x: np.ndarray) -> np.ndarray:
    means = x.mean(axis=0)
    return (np.abs(means[:, None] - means[None, :]) - TIE).ravel()


def _tukey_exact(x: np.ndarray) -> TukeyResult:
    """Every combination of row permutations, as :func:`randomised_tukey_hsd` documents it."""
    n, k = x.shape
    if k < 2 or n == 0:
        return TukeyResult(np.ones((k, k)), True, "nothing to compare")
    thresholds = _tukey_thresholds(x)
    extreme = np.zeros(k * k, dtype=np.int64)
    per_row = math.factorial(k)
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


def _tukey_monte_carlo(xs: Sequence[np.ndarray], seed: int, rounds: int) -> list[TukeyResult]:
    """The Monte Carlo method for matrices of one shape: they draw the same keys, so each block's keys are drawn
    and ordered once and permute every matrix."""
    n, k = xs[0].shape
    flats = [np.ascontiguousarray(x).ravel() for x in xs]
    thresholds = [_tukey_thresholds(x) for x in xs]
    extreme = [np.zeros(k * k, dtype=np.int64) for _ in xs]
    rng = np.random.default_rng(seed)
    block_rounds = max(1, TUKEY_BLOCK_VALUES // (n * k))
    buffer = np.empty(n * min(block_rounds, rounds) * k)  # permuted scores, one matrix at a time
    for start in range(0, rounds, block_rounds):
        flat = _flat_orders(rng.random((min(block_rounds, rounds - start), n, k)))
        permuted = buffer[: flat.size].reshape(flat.shape)
        for x, limit, count in zip(flats, thresholds, extreme, strict=True):
            np.take(x, flat, out=permuted, mode="clip")  # no index is clipped; the mode lets take write in place
            block_means = np.add.reduce(permuted, axis=0) / n
            count += _count_at_least(block_means.max(axis=1) - block_means.min(axis=1), limit)
    method = f"Monte Carlo, {rounds} rounds, seed {seed} (({k}!)^{n} permutations)"
    results = []
    for count in extreme:
        p_values = ((count + 1) / (rounds + 1)).reshape(k, k)
        np.fill_diagonal(p_values, 1.0)
        results.append(TukeyResult(p_values, False, method))
    return results


def randomised_tukey_hsd(scores: Any, seed: int, rounds: int) -> TukeyResult:
    """Randomised Tukey HSD (Carterette, TOIS 2012) over a questions x rankers score matrix.

    Under the null that the rankers are interchangeable, every question's row may be permuted across the rankers
    independently; each permutation's statistic is max - min of the column means. The pair (i, j) gets
    p = share of permutations whose range >= |mean_i - mean_j| - 1e-12. Comparing every pair with the *maximum*
    difference of the permuted means controls the family-wise error over the pairs of one metric in the weak
    sense: when every ranker is interchangeable. It is not a closed or step-down procedure, so it does not
    promise strong control when some rankers differ.

    - If (k!)**n <= rounds (k rankers, n questions): every combination of row permutations is enumerated
      (pattern number t gives row q the permutation ``itertools.permutations(range(k))`` number
      ``(t // (k!)**q) % k!``) and p = extreme / (k!)**n, exactly.
    - Otherwise Monte Carlo: ``rng = numpy.random.default_rng(seed)``; round r draws ``keys = rng.random((n,
      k))`` (rounds drawn consecutively in C order, in blocks of rounds, so the block size does not change the
      stream) and row q is permuted by ``numpy.argsort(keys[q], kind="stable")``; p = (b + 1) / (rounds + 1).

    Memory is bounded by the block: :data:`TUKEY_BLOCK_VALUES` keys, their orders and permuted scores (about
    33 MB), plus the n x k matrix itself; 7,000 questions x 10 rankers stays under the 200 MiB that
    bench/run.py --sections stats measures for the whole significance machinery.
    """
    return randomised_tukey_hsd_many([scores], seed, rounds)[0]


def randomised_tukey_hsd_many(matrices: Sequence[Any], seed: int, rounds: int) -> list[TukeyResult]:
    """:func:`randomised_tukey_hsd` of each matrix, in order. Monte Carlo matrices of one shape draw the same keys,
    so one draw and one ordering per block serve them all: each result is the one a call of its own gives."""
    xs = [np.asarray(m, dtype=np.float64) for m in matrices]
    results: list[TukeyResult | None] = [None] * len(xs)
    shapes: dict[tuple[int, ...], list[int]] = {}
    for i, x in enumerate(xs):
        n, k = x.shape
        if k < 2 or n == 0 or math.factorial(k) ** n <= rounds:
            results[i] = _tukey_exact(x)
        else:
            shapes.setdefault(x.shape, []).append(i)
    for members in shapes.values():
        for i, result in zip(members, _tukey_monte_carlo([xs[i] for i in members], seed, rounds), strict=True):
            results[i] = result
    return [r for r in results if r is not None]


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


# ------------------------------------------------------------------------------------------- power


def _z_sum(alpha: float, power: float) -> float:
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)


def minimum_detectable_effect(sd: float, questions: int, alpha: float, power: float = POWER) -> float | None:
    """The smallest true mean difference a two-sided paired test at level ``alpha`` detects with probability
    ``power`` over ``questions`` questions whose differences spread with standard deviation ``sd``, by the normal
    approximation: (z_{1 - alpha/2} + z_power) * sd / sqrt(questions). None without a question."""
    if questions < 1:
        return None
    return _z_sum(alpha, power) * sd / math.sqrt(questions)


def questions_needed(sd: float, effect: float, alpha: float, power: float = POWER) -> int:
    """How many questions the same test needs to detect a true difference ``effect`` (the inverse of
    :func:`minimum_detectable_effect`, rounded up; 1 when the differences do not spread)."""
    return max(1, math.ceil((_z_sum(alpha, power) * sd / effect) ** 2 - 1e-9))


# ------------------------------------------------------------------------------------- rank groups


def identical_classes(values: Mapping[str, Sequence[float]]) -> list[list[str]]:
    """Rankers whose per-question values are equal (as floats, question by question), in first-seen order:
    one test per distinct comparison, not one per name."""
    classes: dict[tuple[float, ...], list[str]] = {}
    for name, scores in values.items():
        classes.setdefault(tuple(float(v) for v in scores), []).append(name)
    return list(classes.values())


def _letter(n: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return alphabet[n] if n < len(alphabet) else f"g{n + 1}"


def compact_letter_display(items: Sequence[str], separated: Sequence[tuple[str, str]]) -> list[list[str]]:
    """Groups of items that no separated pair splits (Piepho's insert-and-absorb, 2004): start with every item in
    one group; for each separated pair, a group holding both becomes two, one without each; then any group
    contained in another is dropped. The groups are returned ordered by their members' positions in ``items``
    (the first group holds the first item); group i gets letter i (a, b, ...)."""
    position = {item: i for i, item in enumerate(items)}
    groups: list[frozenset[str]] = [frozenset(items)] if items else []
    for a, b in separated:
        split: list[frozenset[str]] = []
        for group in groups:
            if a in group and b in group:
                split += [group - {b}, group - {a}]
            else:
                split.append(group)
        kept: list[frozenset[str]] = []
        for i, group in enumerate(split):
            larger = any(group < other for other in split)
            repeated = any(group == other for other in split[:i])
            if group and not larger and not repeated:
                kept.append(group)
        groups = kept
    return sorted((sorted(g, key=position.__getitem__) for g in groups), key=lambda g: [position[m] for m in g])


def group_letters(items: Sequence[str], groups: Sequence[Sequence[str]]) -> dict[str, str]:
    """Each item's letters (one per group it belongs to, in group order)."""
    return {item: "".join(_letter(i) for i, g in enumerate(groups) if item in g) for item in items}
