"""The audit's faster forms of its paired tests and metrics give the very floats of their direct forms: the lattice
convolution over the reachable sums only, the Monte Carlo signs read from one kept stream, Tukey's row orders kept
across metrics, and every metric of a ranking computed at once."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from sitegen import audit


def full_range_lattice_p(units: list[int]) -> float:
    """The sign-flip distribution convolved over every integer from -total to total, magnitude by magnitude."""
    step = math.gcd(*units)
    magnitudes = Counter(abs(u) // step for u in units if u)
    units = [u // step for u in units] if step else units
    total = sum(v * c for v, c in magnitudes.items())
    observed = abs(sum(units))
    if observed == 0:
        return 1.0
    dist = np.zeros(2 * total + 1)
    dist[total] = 1.0
    for v, c in sorted(magnitudes.items()):
        mixed = np.zeros_like(dist)
        for j in range(c + 1):
            shift = v * (c - 2 * j)
            weight = math.comb(c, j) / 2.0**c
            if shift >= 0:
                mixed[shift:] += weight * dist[: dist.size - shift]
            else:
                mixed[:shift] += weight * dist[-shift:]
        dist = mixed
    outside = np.abs(np.arange(dist.size) - total) >= observed
    return math.fsum(dist[outside].tolist())


@pytest.mark.parametrize("seed", range(12))
def test_the_lattice_p_is_the_full_range_convolution_s_float(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    units = (rng.integers(-12, 13, size=n) * rng.choice([1, 7, 2520], size=n)).tolist()
    assert audit._lattice_sign_p(units) == full_range_lattice_p(units)


def test_the_lattice_p_of_all_distinct_magnitudes_and_of_none() -> None:
    for units in ([1, -2, 3, 5, -8, 13], [4, 4, -4, 4], [0, 0, 3], [0, 0]):
        assert audit._lattice_sign_p(units) == full_range_lattice_p(units)


@pytest.mark.parametrize(("rounds", "n"), [(2500, 7), (1999, 13), (3001, 64)])
def test_kept_signs_are_the_draws_made_block_by_block(rounds: int, n: int) -> None:
    rng, blocks = np.random.default_rng(99), []
    for done in range(0, rounds, 1000):
        blocks.append(rng.integers(0, 2, size=(min(1000, rounds - done), n)))
    audit._sign_stream.cache_clear()
    audit._sign_stream(99).first(5)  # a shorter prefix read first: the stream is extended, not drawn again
    kept = list(audit._sign_blocks(99, rounds, n))
    assert len(kept) == len(blocks)
    assert all(np.array_equal(k, b) for k, b in zip(kept, blocks, strict=True))


def test_signs_beyond_the_kept_size_are_drawn_block_by_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit, "_SIGNS_KEPT", 100)
    rng = np.random.default_rng(5)
    blocks = [rng.integers(0, 2, size=(1000, 3)), rng.integers(0, 2, size=(500, 3))]
    kept = list(audit._sign_blocks(5, 1500, 3))
    assert all(np.array_equal(k, b) for k, b in zip(kept, blocks, strict=True))


def direct_tukey_extreme(x: np.ndarray, seed: int, rounds: int) -> np.ndarray:
    """Each round's keys drawn and argsorted, the scores gathered with take_along_axis."""
    n, k = x.shape
    means = x.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :]) - 1e-12
    rng, done, extreme = np.random.default_rng(seed), 0, np.zeros((k, k), dtype=np.int64)
    step = max(1, 400_000 // (n * k))
    while done < rounds:
        block = min(step, rounds - done)
        keys = rng.random((block, n, k))
        shuffled = np.take_along_axis(np.broadcast_to(x, keys.shape), np.argsort(keys, axis=2, kind="stable"), 2)
        col = shuffled.mean(axis=1)
        r = col.max(axis=1) - col.min(axis=1)
        extreme += (r[None, None, :] >= observed[:, :, None]).sum(axis=2)
        done += block
    p = (extreme + 1) / (rounds + 1)
    np.fill_diagonal(p, 1.0)
    return p


def test_tukey_p_is_the_direct_shuffle_s_for_matrices_sharing_their_orders() -> None:
    rng = np.random.default_rng(3)
    scores = [rng.integers(0, 4, size=(40, 5)) / 3.0, rng.random((40, 5)), np.round(rng.random((40, 5)), 1)]
    scores += [rng.random((30, 4)), np.array([[0.0, 1.0], [1.0, 0.5]])]  # another shape, and an exact one
    scores = [np.asfortranarray(x) for x in scores]  # as the audit builds them: transposed arrays
    together = audit._tukey_ps(scores, 11, 3000)
    for x, (p, _, exact) in zip(scores, together, strict=True):
        assert np.array_equal(p, audit._tukey_p(x, 11, 3000)[0])
        if exact:
            assert x.shape == (2, 2)
            continue
        assert np.array_equal(p, direct_tukey_extreme(x, 11, 3000))
    assert [exact for _, _, exact in together] == [False, False, False, False, True]


def direct_metric(name: str, ranking: list[str], grades: dict[str, int]) -> float:
    family, _, cut = name.partition("@")
    k = int(cut)
    relevant = {d for d, g in grades.items() if g > 0}
    top = ranking[:k]
    found = [r for r, d in enumerate(top, start=1) if d in relevant]
    if family == "map":
        return math.fsum((n + 1) / r for n, r in enumerate(found)) / len(relevant)
    if family == "rprec":
        return len([r for r in found if r <= len(relevant)]) / len(relevant)
    if family == "hit":
        return 1.0 if found else 0.0
    if family == "recall":
        return len(found) / len(relevant)
    if family == "precision":
        return len(found) / k
    if family == "mrr":
        return 1.0 / found[0] if found else 0.0
    dcg = sum(grades[top[r - 1]] / math.log2(r + 1) for r in found)
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    return dcg / sum(g / math.log2(r + 1) for r, g in enumerate(ideal, start=1))


NAMES = [f"{m}@{k}" for m, k in itertools.product(audit.MEASURES, (1, 3, 5, 10, 20, 100))]


@pytest.mark.parametrize("seed", range(20))
def test_every_metric_at_once_is_each_metric_alone(seed: int) -> None:
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(150)]
    ranking = [str(d) for d in rng.permutation(docs)[: int(rng.integers(0, 120))]]
    judged = rng.choice(docs, size=int(rng.integers(1, 30)), replace=False)
    grades = {str(d): int(g) for d, g in zip(judged, rng.integers(0, 4, size=len(judged)), strict=True)}
    grades[str(judged[0])] = max(1, grades[str(judged[0])])  # one relevant passage at least
    names = list(rng.permutation(NAMES))
    measures = [audit._measure(n) for n in names]
    assert audit.metrics_of(measures, ranking, grades) == [direct_metric(n, ranking, grades) for n in names]
    assert [audit.metric(n, ranking, grades) for n in names] == [direct_metric(n, ranking, grades) for n in names]


def test_an_unknown_metric_name_is_refused() -> None:
    with pytest.raises(audit.AuditError, match="unknown name"):
        audit.metric("hit@0", ["a"], {"a": 1})
