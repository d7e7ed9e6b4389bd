"""The statistics module against independent oracles: full enumeration in exact rational arithmetic, scipy's
permutation test and bootstrap-free paired t statistics, statsmodels' multiple-testing corrections and power
solvers; and the standalone audit's own versions of the same rules."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from sitegen import audit
from sitegen.scoring import statistics as st

# scipy and statsmodels are imported by the tests that use them: at collection, every worker paid 1.7 s for them.


def _enumerated_p(d: list[float]) -> Fraction:
    """Every sign pattern written out, in exact arithmetic: the differences as whole multiples of their common
    denominator, each pattern's sum an integer (a row of +1 and -1 per pattern, times those integers)."""
    exact = [Fraction(x) for x in d if x != 0]
    denominator = math.lcm(*(x.denominator for x in exact)) if exact else 1
    units = np.array([int(x * denominator) for x in exact], dtype=np.int64)
    patterns = 1 - 2 * ((np.arange(2 ** len(exact))[:, None] >> np.arange(len(exact))) & 1)
    extreme = int(np.count_nonzero(np.abs(patterns @ units) >= abs(int(units.sum()))))
    return Fraction(extreme, len(patterns))


MRR_VALUES = [0.0, 1.0, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 1 / 6, 1 / 7, 1 / 8, 1 / 9, 1 / 10]
NDCG_VALUES = [0.0] + [1 / math.log2(r + 1) for r in range(1, 11)]


@pytest.mark.parametrize("seed", range(5))
def test_lattice_p_of_reciprocal_ranks_equals_full_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ranks_a, ranks_b = rng.integers(0, 11, 14), rng.integers(0, 11, 14)  # 0: nothing relevant in the top 10
    exact = [Fraction(1, int(x)) if x else Fraction(0) for x in ranks_a]
    exact = [x - (Fraction(1, int(y)) if y else Fraction(0)) for x, y in zip(exact, ranks_b, strict=True)]
    a, b = np.array([MRR_VALUES[x] for x in ranks_a]), np.array([MRR_VALUES[x] for x in ranks_b])
    result = st.paired_randomisation_test(a, b, seed=1, rounds=10)
    assert result.kind == "lattice" and result.exact
    want = float(_enumerated_p(exact))
    assert result.p_value == pytest.approx(want, rel=1e-12, abs=1e-15)
    p, n, method, kind = audit._sign_test_p(a - b, 1, 10)
    assert (kind, n, method) == (result.kind, result.differing, result.method)
    assert p == pytest.approx(result.p_value, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_split_half_p_of_graded_values_equals_full_enumeration(seed: int) -> None:
    rng = np.random.default_rng(10 + seed)
    a, b = rng.choice(NDCG_VALUES, 13), rng.choice(NDCG_VALUES, 13)
    result = st.paired_randomisation_test(a, b, seed=1, rounds=10)
    assert result.kind == "split-half" and result.exact
    d = (a - b).tolist()
    observed = abs(math.fsum(x for x in d if x != 0))
    nonzero = [x for x in d if x != 0]
    extreme = sum(
        1
        for s in itertools.product((1, -1), repeat=len(nonzero))
        if abs(math.fsum(x * y for x, y in zip(s, nonzero, strict=True))) >= observed - 1e-12
    )
    assert result.p_value == extreme / 2 ** len(nonzero)
    assert audit._sign_test_p(a - b, 1, 10)[0] == result.p_value


def test_exact_p_equals_scipy_permutation_test_with_every_sign_pattern() -> None:
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(3)
    a, b = rng.choice(NDCG_VALUES, 12), rng.choice(NDCG_VALUES, 12)
    d = a - b
    d = d[d != 0]
    oracle = scipy_stats.permutation_test(
        (d,), lambda x: np.mean(x), permutation_type="samples", n_resamples=np.inf, alternative="two-sided"
    )
    ours = st.paired_randomisation_test(a, b, seed=1, rounds=10).p_value
    # scipy's two-sided p doubles the smaller tail; the sign-flip distribution is symmetric, so they agree
    assert ours == pytest.approx(oracle.pvalue, rel=1e-9)


def test_sixty_differing_wins_on_a_lattice_are_exact_not_monte_carlo() -> None:
    from scipy import stats as scipy_stats

    result = st.paired_randomisation_test([1.0] * 30 + [0.5] * 30, [0.0] * 60, seed=1, rounds=10_000)
    assert result.exact and result.kind == "lattice" and result.p_value == 2 / 2**60
    binomial = scipy_stats.binomtest(45, 60, 0.5).pvalue  # 45 wins, 15 losses of equal size: a sign test
    result = st.paired_randomisation_test([1.0] * 45 + [0.0] * 15, [0.0] * 45 + [1.0] * 15, seed=1, rounds=10)
    assert result.p_value == pytest.approx(binomial, rel=1e-12)


def test_monte_carlo_rounds_put_the_smallest_p_below_the_first_holm_threshold() -> None:
    for m in (1, 63, 203, 309, 5000):
        rounds = st.monte_carlo_rounds(m, 0.05, 10_000)
        assert rounds >= 10_000 and 1 / (rounds + 1) <= 0.05 / m / 20


@pytest.mark.parametrize("correction,method", [("holm", "holm"), ("bh", "fdr_bh")])
def test_corrections_equal_statsmodels_multipletests(correction: str, method: str) -> None:
    from statsmodels.stats import multitest

    rng = np.random.default_rng(4)
    p = np.concatenate([rng.random(40) ** 3, [0.01, 0.01, 1.0]])
    want = multitest.multipletests(p, alpha=0.05, method=method)[1]
    ours = st.adjust_p_values(p.tolist(), correction)
    np.testing.assert_allclose(ours, want, rtol=0, atol=1e-15)
    np.testing.assert_allclose(audit._adjusted(p.tolist(), correction), want, rtol=0, atol=1e-15)


def test_d_z_equals_the_paired_t_statistic_over_root_n() -> None:
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(6)
    a, b = rng.random(30), rng.random(30)
    t = scipy_stats.ttest_rel(a, b).statistic
    assert st.paired_effect(a, b)["effect_size"] == pytest.approx(t / math.sqrt(30), rel=1e-12)


def test_bootstrap_interval_covers_the_mean_and_matches_a_direct_resample() -> None:
    rng = np.random.default_rng(7)
    values = rng.random(25)
    low, high = st.bootstrap_mean_ci(values, seed=5, rounds=1500)
    draw = np.random.default_rng(5)
    means = np.concatenate([values[draw.integers(0, 25, size=(b, 25))].mean(axis=1) for b in (1000, 500)])
    assert (low, high) == tuple(np.quantile(means, [0.025, 0.975]))
    assert low < values.mean() < high


@pytest.mark.parametrize("n,sd,alpha", [(60, 0.3, 0.05 / 203), (12, 0.5, 0.05), (400, 0.2, 0.001)])
def test_minimum_detectable_effect_and_sample_size_equal_statsmodels_normal_power(n: int, sd: float, alpha: float):
    from statsmodels.stats import power

    solver = power.NormalIndPower()
    d = solver.solve_power(nobs1=n, alpha=alpha, power=0.8, ratio=0)  # ratio 0: a one-sample (paired) test
    # statsmodels also counts the far tail's rejections (power below 1e-6 here), which ours leaves out
    assert st.minimum_detectable_effect(sd, n, alpha) == pytest.approx(d * sd, rel=1e-5)
    for effect in (0.02, 0.05):
        nobs = solver.solve_power(effect_size=effect / sd, alpha=alpha, power=0.8, ratio=0)
        assert math.ceil(nobs) - 1 <= st.questions_needed(sd, effect, alpha) <= math.ceil(nobs)
    # the t-test needs a little more; the normal approximation is a lower bound, within 10% from 60 questions
    t = power.TTestPower().solve_power(nobs=n, alpha=alpha, power=0.8)
    assert d <= t and (n < 60 or t / d < 1.1)


def test_compact_letters_are_the_maximal_sets_no_significant_pair_splits() -> None:
    items = ["a", "b", "c", "d", "e"]
    separated = [("a", "c"), ("a", "d"), ("a", "e"), ("b", "e")]
    groups = st.compact_letter_display(items, separated)
    assert groups == [["a", "b"], ["b", "c", "d"], ["c", "d", "e"]]
    assert st.group_letters(items, groups) == {"a": "a", "b": "ab", "c": "bc", "d": "bc", "e": "c"}
    apart = {frozenset(p) for p in separated}
    assert audit._maximal_cliques(items, apart) == groups
    # brute force: every maximal subset with no separated pair inside
    cliques = [
        set(c)
        for r in range(1, 6)
        for c in itertools.combinations(items, r)
        if not any(frozenset(p) in apart for p in itertools.combinations(c, 2))
    ]
    maximal = [c for c in cliques if not any(c < o for o in cliques)]
    assert sorted(map(sorted, maximal)) == sorted(groups)


def test_no_separation_is_one_group_and_total_separation_one_group_each() -> None:
    assert st.compact_letter_display(["x", "y", "z"], []) == [["x", "y", "z"]]
    everything = [("x", "y"), ("x", "z"), ("y", "z")]
    assert st.compact_letter_display(["x", "y", "z"], everything) == [["x"], ["y"], ["z"]]


def test_identical_classes_keep_build_order_and_exact_equality() -> None:
    values = {"a": [1.0, 0.5], "b": [0.5, 1.0], "c": [1.0, 0.5], "d": [1.0, 0.5000000000000001]}
    assert st.identical_classes(values) == [["a", "c"], ["b"], ["d"]]  # no tolerance: d differs by one ulp


def _monte_carlo_extreme_drawn_block_by_block(d: np.ndarray, seed: int, rounds: int) -> int:
    """The Monte Carlo count exactly as paired_randomisation_test documents it, each block drawn afresh."""
    rng, extreme, observed = np.random.default_rng(seed), 0, abs(math.fsum(d.tolist()))
    for start in range(0, rounds, st.BLOCK_ROUNDS):
        signs = rng.integers(0, 2, size=(min(st.BLOCK_ROUNDS, rounds - start), d.size)) * 2.0 - 1.0
        extreme += int(np.count_nonzero(np.abs(signs @ d) >= observed - st.TIE))
    return extreme


@pytest.mark.parametrize("kept", [st.KEPT_SIGN_DRAWS, 100_000])
def test_monte_carlo_tests_reading_one_seeds_kept_draws_count_what_fresh_draws_count(
    kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests of one seed share its kept 0/1 draws, in any order of sizes, and a test too large to keep draws its own;
    each p is the one block-by-block draws give (n above the split-half limit and off the lattice: Monte Carlo)."""
    monkeypatch.setattr(st, "KEPT_SIGN_DRAWS", kept)
    st._sign_draws.cache_clear()
    rng = np.random.default_rng(4)
    for n, rounds, seed in [(50, 2_500, 7), (61, 1_000, 7), (47, 4_321, 7), (80, 2_000, 8), (50, 2_500, 7)]:
        a, b = rng.random(n), rng.random(n)
        result = st.paired_randomisation_test(a.tolist(), b.tolist(), seed, rounds)
        assert result.kind == "monte-carlo"
        extreme = _monte_carlo_extreme_drawn_block_by_block(a - b, seed, rounds)
        assert result.p_value == (extreme + 1) / (rounds + 1), (n, rounds, seed)
