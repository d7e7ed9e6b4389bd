"""The shared and shortcut paths of the statistics give exactly the floats of the documented one-call-at-a-time
computations: Tukey HSD matrices sharing each block's row orders, bootstrap columns sharing each block's indices
(whole-number columns summed from draw counts), and Monte Carlo sign tests decided from per-byte estimates or whole
numbers instead of the float64 product. Each reference below is the method as its docstring states it."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from sitegen.scoring import statistics as st
from sitegen.scoring.experiments import ExperimentSettings
from sitegen.scoring.significance import SIGNIFICANCE_METRICS, significance

MRR_VALUES = [0.0, 1.0, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 1 / 6, 1 / 7, 1 / 8, 1 / 9, 1 / 10]
NDCG_VALUES = [0.0] + [1 / math.log2(r + 1) for r in range(1, 11)]


# ------------------------------------------------------------------------------------------- Tukey HSD


def _tukey_one_call(x: np.ndarray, seed: int, rounds: int) -> np.ndarray:
    """The Monte Carlo Tukey HSD as documented, one matrix alone: keys, stable argsort, mean over the questions."""
    n, k = x.shape
    means = x.mean(axis=0)
    thresholds = (np.abs(means[:, None] - means[None, :]) - st.TIE).ravel()
    extreme = np.zeros(k * k, dtype=np.int64)
    rng = np.random.default_rng(seed)
    for start in range(0, rounds, 50):
        block = min(50, rounds - start)
        order = np.argsort(rng.random((block, n, k)), axis=2, kind="stable")
        block_means = np.take_along_axis(np.broadcast_to(x, (block, n, k)), order, axis=2).mean(axis=1)
        ranges = block_means.max(axis=1) - block_means.min(axis=1)
        extreme += (ranges[None, :] >= thresholds[:, None]).sum(axis=1)
    p = ((extreme + 1) / (rounds + 1)).reshape(k, k)
    np.fill_diagonal(p, 1.0)
    return p


@pytest.mark.parametrize("k", range(2, 9))
def test_row_orders_are_numpy_stable_argsort_even_with_tied_keys(k: int) -> None:
    rng = np.random.default_rng(k)
    for keys in (rng.random((7, 30, k)), rng.integers(0, 3, size=(7, 30, k)) / 4.0):  # the second: many ties
        want = np.argsort(keys, axis=2, kind="stable").transpose(1, 0, 2) + (np.arange(30) * k)[:, None, None]
        assert np.array_equal(st._flat_orders(keys), want)


def test_question_order_sums_are_numpy_means_over_the_questions_bit_for_bit() -> None:
    rng = np.random.default_rng(5)
    n, k, block = 3000, 5, 20
    x = np.column_stack([rng.choice(NDCG_VALUES, n), rng.choice(MRR_VALUES, n), rng.random((n, k - 2))])
    keys = rng.random((block, n, k))
    want = np.take_along_axis(np.broadcast_to(x, (block, n, k)), np.argsort(keys, axis=2, kind="stable"), axis=2)
    got = np.add.reduce(np.take(x.ravel(), st._flat_orders(keys)), axis=0) / n
    assert np.array_equal(got, want.mean(axis=1))
    # the order matters: summing each column pairwise (numpy's sum along a contiguous axis) rounds otherwise
    assert not np.array_equal(np.ascontiguousarray(want.transpose(0, 2, 1)).sum(axis=2) / n, want.mean(axis=1))


@pytest.mark.parametrize("table_rankers", [st.TUKEY_TABLE_RANKERS, 0])
@pytest.mark.parametrize("block_values", [st.TUKEY_BLOCK_VALUES, 7 * 90 * 5 + 3])
def test_tukey_matrices_sharing_row_orders_get_the_p_values_of_one_call_each(
    table_rankers: int, block_values: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(st, "TUKEY_TABLE_RANKERS", table_rankers)
    monkeypatch.setattr(st, "TUKEY_BLOCK_VALUES", block_values)
    rng = np.random.default_rng(8)
    skill = np.linspace(0.3, 0.6, 5)
    matrices = [
        (rng.random((90, 5)) < skill).astype(np.float64),  # hit@k: 0/1
        rng.choice(MRR_VALUES, size=(90, 5)),
        rng.choice(NDCG_VALUES, size=(90, 5)),
        np.asfortranarray(rng.random((90, 5)) * skill),  # as significance builds them: a transposed array
        rng.choice(MRR_VALUES, size=(90, 7)),  # another shape, more rankers than the order table serves
        rng.random((90, 2)),
        np.array([[0.0, 1.0], [1.0, 0.5]]),  # (2!)^2 = 4 <= rounds: exact
    ]
    results = st.randomised_tukey_hsd_many(matrices, 11, 700)
    for x, result in zip(matrices, results, strict=True):
        alone = st.randomised_tukey_hsd(x, 11, 700)
        assert (result.exact, result.method) == (alone.exact, alone.method)
        assert np.array_equal(result.p_values, alone.p_values)
        if x.shape == (2, 2):
            assert result.exact and result.method.startswith("exact enumeration")
            continue
        assert (
            not result.exact and result.method == f"Monte Carlo, 700 rounds, seed 11 (({x.shape[1]}!)^90 permutations)"
        )
        assert np.array_equal(result.p_values, _tukey_one_call(x, 11, 700))


# ------------------------------------------------------------------------------------------- bootstrap


def _bootstrap_one_call(values: np.ndarray, seed: int, rounds: int) -> tuple[float, float]:
    """bootstrap_mean_ci as documented: fresh index blocks, gathered values, numpy's mean and quantile."""
    rng = np.random.default_rng(seed)
    means = np.concatenate(
        [
            values[rng.integers(0, values.size, size=(min(1000, rounds - s), values.size))].mean(axis=1)
            for s in range(0, rounds, 1000)
        ]
    )
    low, high = np.quantile(means, [(1 - 0.95) / 2, (1 + 0.95) / 2])
    return (float(low), float(high))


def _columns(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    hits = [(rng.random(n) < p).astype(np.float64) for p in (0.3, 0.5, 0.55)]
    mrr = [rng.choice(MRR_VALUES, n) for _ in range(2)]
    return [
        *hits,
        hits[0] - hits[1],  # whole numbers -1, 0, 1
        hits[1] - hits[2],
        *mrr,
        mrr[0] - mrr[1],
        rng.choice(NDCG_VALUES, n),
        np.where(rng.random(n) < 0.5, -0.0, 2.0),  # whole numbers with -0.0: not counted
        np.full(n, 0.5),
        rng.integers(-3, 4, n) * 1e9,  # large whole numbers, exact in float64
    ]


@pytest.mark.parametrize("counted", [st.COUNTED_COLUMNS, 10**9])
def test_bootstrap_columns_resampled_together_get_the_intervals_of_one_call_each(
    counted: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(st, "COUNTED_COLUMNS", counted)
    rng = np.random.default_rng(12)
    columns = _columns(rng, 137)
    together = st.bootstrap_mean_cis(columns, 21, 2_345)
    for column, got in zip(columns, together, strict=True):
        assert got == _bootstrap_one_call(column, 21, 2_345)
        assert got == st.bootstrap_mean_ci(column, 21, 2_345)  # one call: the kept indices
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(st, "CACHED_BOOTSTRAP_VALUES", 0)  # one call, drawn afresh
        assert [st.bootstrap_mean_ci(c, 21, 2_345) for c in columns] == together
    assert st.bootstrap_mean_cis([], 1, 100) == [] and st.bootstrap_mean_cis([[]], 1, 100) == [(0.0, 0.0)]
    with pytest.raises(ValueError):
        st.bootstrap_mean_cis([[1.0], [1.0, 2.0]], 1, 100)


def test_sums_from_draw_counts_are_the_gathered_sums_for_whole_numbers_only() -> None:
    rng = np.random.default_rng(13)
    n = 4000
    idx = rng.integers(0, n, size=(300, n))
    whole = np.column_stack([rng.integers(0, 2, n), rng.integers(-1, 2, n), rng.integers(-50, 51, n)]).astype(float)
    assert all(st._whole_numbers(c) for c in whole.T)
    counted = st._counted_sums(idx, whole)
    for j, column in enumerate(whole.T):
        assert np.array_equal(counted[:, j], column[idx].sum(axis=1))
    # reciprocal ranks are not whole numbers: counting would round otherwise than the gathered sum does
    mrr = rng.choice(MRR_VALUES, n)
    assert not st._whole_numbers(mrr)
    assert not np.array_equal(st._counted_sums(idx, mrr[:, None])[:, 0], mrr[idx].sum(axis=1))
    for column in ([1.0, -0.0], [1.0, math.inf], [1.0, math.nan], [0.5, 1.0], [2.0**53, 1.0]):
        assert not st._whole_numbers(np.array(column))


# ------------------------------------------------------------------------------------- sign-flip tests


def _extreme_one_block_at_a_time(d: np.ndarray, seed: int, rounds: int) -> int:
    """The Monte Carlo count as documented: each block's signs drawn afresh and the float64 product taken."""
    rng, extreme, observed = np.random.default_rng(seed), 0, abs(math.fsum(d.tolist()))
    for start in range(0, rounds, st.BLOCK_ROUNDS):
        signs = rng.integers(0, 2, size=(min(st.BLOCK_ROUNDS, rounds - start), d.size)) * 2 - 1
        extreme += int(np.count_nonzero(np.abs(signs.astype(np.float64) @ d) >= observed - st.TIE))
    return extreme


def _sign_cases() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(14)
    hits = (rng.random((2, 500)) < 0.5).astype(np.float64)  # about 250 differences +-1: off the lattice's budget
    gain = NDCG_VALUES[2]
    tied = rng.choice([0.0, gain], size=(2, 120))  # differences +-gain: many rounds tie with the observed sum
    # large values: a round tying with the observed sum is an ulp (1e-8) above or below it as the additions round,
    # so estimates alone would count some of them otherwise than the product does
    large = rng.choice([gain, -gain, NDCG_VALUES[4], -NDCG_VALUES[4]], 61) * 1e8
    return [(hits[0], hits[1]), (tied[0], tied[1]), (large, np.zeros(61)), (rng.random(90), rng.random(90))]


@pytest.mark.parametrize("kept", [st.KEPT_SIGN_DRAWS, 50_000])
@pytest.mark.parametrize("tables", ["byte sums", "never decide"])
def test_monte_carlo_counts_decided_without_the_product_equal_the_product_s(
    kept: int, tables: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole-number and estimated counts equal the float64 product's; with estimates that decide nothing
    (NaN tables) every block takes the product, the same counts again."""
    monkeypatch.setattr(st, "KEPT_SIGN_DRAWS", kept)
    if tables == "never decide":
        monkeypatch.setattr(st, "_byte_sums", lambda d: np.full(256 * -(-d.size // 8), math.nan))
    st._sign_draws.cache_clear()
    for a, b in _sign_cases():
        result = st.paired_randomisation_test(a, b, 9, 2_500)
        assert result.kind == "monte-carlo"
        d = (a - b)[a != b]
        assert result.p_value == (_extreme_one_block_at_a_time(d, 9, 2_500) + 1) / 2_501


def test_wrong_byte_sums_change_the_count_so_the_estimates_decide(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _sign_cases()[3]
    d = a - b
    right = st._extreme_rounds(d, abs(math.fsum(d.tolist())) - st.TIE, 9, 2_500)
    assert right == _extreme_one_block_at_a_time(d, 9, 2_500) > 0
    monkeypatch.setattr(st, "_byte_sums", lambda d: np.zeros(256 * -(-d.size // 8)))
    assert st._extreme_rounds(d, abs(math.fsum(d.tolist())) - st.TIE, 9, 2_500) == 0


def test_kept_sign_draws_read_at_any_offset_are_the_stream_s() -> None:
    stream = np.random.default_rng(3).integers(0, 2, size=5_000)
    draws = st._SignDraws(3)
    for start, count in [(0, 13), (5, 100), (999, 1_001), (8, 8), (4_321, 679)]:
        assert np.array_equal(draws.bits(start, count), stream[start : start + count])


# ------------------------------------------------------------------------------------------ significance


def test_significance_gets_the_intervals_and_tukey_p_values_of_one_call_each() -> None:
    rng = np.random.default_rng(15)
    n = 40
    scores: dict[str, dict[str, list[float]]] = {}
    for i, name in enumerate(["a", "b", "c", "d"]):
        hits = (rng.random((2, n)) < 0.3 + 0.1 * i).astype(np.float64)
        scores[name] = {
            "hit@1": hits[0].tolist(),
            "hit@5": np.maximum(hits[0], hits[1]).tolist(),
            "mrr@10": rng.choice(MRR_VALUES, n).tolist(),
            "ndcg@10": rng.choice(NDCG_VALUES, n).tolist(),
        }
    scores["e"] = {m: list(v) for m, v in scores["b"].items()}  # identical to b: one row
    scores["e"]["ndcg@10"] = rng.choice(NDCG_VALUES, n).tolist()
    settings = dataclasses.replace(ExperimentSettings(), rounds=1_500)
    family = significance("t", list(scores), scores, settings, "holm", unverified=["d"])
    for pair in family["pairs"]:
        xa, xb = scores[pair["a"]][pair["metric"]], scores[pair["b"]][pair["metric"]]
        assert (pair["ci_low"], pair["ci_high"]) == st.paired_bootstrap_ci(xa, xb, settings.seed, settings.rounds)
    for metric in SIGNIFICANCE_METRICS:
        rows = family["groups"][metric]["rows"]
        for row in rows:
            values = scores[row["rankers"][0]][metric]
            assert (row["ci_low"], row["ci_high"]) == st.bootstrap_mean_ci(values, settings.seed, settings.rounds)
        names = [c[0] for c in st.identical_classes({r: scores[r][metric] for r in scores})]
        matrix = np.array([scores[r][metric] for r in names]).T
        p = st.randomised_tukey_hsd(matrix, settings.seed, settings.rounds).p_values
        for pair in (p for p in family["pairs"] if p["metric"] == metric):
            assert pair["tukey_p"] == p[names.index(pair["a"]), names.index(pair["b"])]
    head = family["headline"]
    leader, runner = (family["groups"]["ndcg@10"]["rows"][i]["rankers"][0] for i in (0, 1))
    want = st.paired_bootstrap_ci(scores[leader]["ndcg@10"], scores[runner]["ndcg@10"], settings.seed, 1_500)
    assert (head["ci_low"], head["ci_high"]) == want
