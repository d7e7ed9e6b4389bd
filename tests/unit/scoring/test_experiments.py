"""Experiments: significance tests with known answers, a deterministic balanced split, sweeps and held-out choice."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import sitegen.scoring.experiments as experiments_module
import sitegen.scoring.statistics as statistics_module
from sitegen import audit
from sitegen.errors import CorpusError
from sitegen.inputs.corpus import load_corpus
from sitegen.rankers import RANKERS
from sitegen.scoring.experiments import ExperimentSettings, run_experiments, stratified_two_fold_split
from sitegen.scoring.statistics import (
    adjust_p_values,
    paired_bootstrap_ci,
    paired_effect,
    paired_permutation_test,
    paired_randomisation_test,
    randomised_tukey_hsd,
)
from tests.helpers import write_corpus


def test_identical_rankers_have_p_one_and_a_zero_width_interval() -> None:
    scores = [1.0, 0.0, 0.5, 1.0, 0.25] * 12
    assert paired_permutation_test(scores, scores, seed=1, rounds=2000) == 1.0
    assert paired_bootstrap_ci(scores, scores, seed=1, rounds=2000) == (0.0, 0.0)


def test_one_ranker_right_everywhere_and_the_other_nowhere_has_p_near_zero() -> None:
    p = paired_permutation_test([1.0] * 60, [0.0] * 60, seed=1, rounds=10_000)
    assert p == 2 / 2**60  # exact: only the observed pattern and its mirror image are as extreme
    assert paired_bootstrap_ci([1.0] * 60, [0.0] * 60, seed=1, rounds=1000) == (1.0, 1.0)


def test_permutation_test_matches_the_exact_sign_test_on_a_small_case() -> None:
    # Four questions won, none lost, 56 ties: exactly 2 of the 16 sign patterns are as extreme, p = 0.125.
    a = [1.0] * 4 + [0.0] * 56
    b = [0.0] * 60
    assert paired_permutation_test(a, b, seed=3, rounds=20_000) == pytest.approx(0.125, abs=0.01)


def test_permutation_and_bootstrap_are_reproducible_from_the_seed() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.random(40), rng.random(40)
    assert paired_permutation_test(a, b, 7, 500) == paired_permutation_test(a, b, 7, 500)
    assert paired_bootstrap_ci(a, b, 7, 500) == paired_bootstrap_ci(a, b, 7, 500)
    low, high = paired_bootstrap_ci(a, b, 7, 2000)
    assert low < float(np.mean(a - b)) < high


def test_stratified_split_is_deterministic_and_balanced_by_kind() -> None:
    ids_by_kind = {
        "x": [f"x{i}" for i in range(12)],
        "y": [f"y{i}" for i in range(7)],
        "z": [f"z{i}" for i in range(5)],
    }
    folds = stratified_two_fold_split(ids_by_kind, seed=42)
    assert folds == stratified_two_fold_split(ids_by_kind, seed=42)
    assert folds != stratified_two_fold_split(ids_by_kind, seed=43)
    assert sorted(folds["A"] + folds["B"]) == sorted(q for ids in ids_by_kind.values() for q in ids)
    for kind, ids in ids_by_kind.items():
        a = sum(1 for q in folds["A"] if q in ids)
        assert abs(a - (len(ids) - a)) <= 1, kind
    # Odd-sized kinds give their extra question to alternating folds.
    assert abs(len(folds["A"]) - len(folds["B"])) <= 1


def test_bad_ablation_config_is_a_clear_error(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "c")
    (folder / "sitegen.json").write_text('{"ablation": [{"ranker": "bm25"}]}')
    with pytest.raises(CorpusError, match="ablation"):
        load_corpus(folder)
    (folder / "sitegen.json").write_text('{"ablaton": []}')
    with pytest.raises(CorpusError, match="unknown setting"):
        load_corpus(folder)


def test_experiments_are_a_pure_function_of_runs_and_seed(tmp_path: Path) -> None:
    corpus = load_corpus(write_corpus(tmp_path / "c"))
    rankings = {
        "x": {"q1": ["d1", "d2"], "q2": ["d3"], "q3": ["d2"]},
        "y": {"q1": ["d2"], "q2": ["d4", "d3"], "q3": []},
    }
    scores = {r: {q: [1.0] * len(ids) for q, ids in run.items()} for r, run in rankings.items()}
    params = {"x": RANKERS["bm25"]().contract, "y": RANKERS["dense"]().contract}
    settings = ExperimentSettings(rounds=200)
    first = run_experiments(corpus, rankings, params, scores, settings)
    assert first == run_experiments(corpus, rankings, params, scores, settings)
    assert Counter(p["metric"] for p in first["significance"]["pairs"]) == {
        m: 1 for m in first["significance"]["metrics"]
    }


# --- issue 16: statistics you can defend ---------------------------------------------------------------------


def _brute_force_p(d: list[float]) -> Fraction:
    """The exact two-sided sign-flip p-value, over every pattern, in exact rational arithmetic."""
    exact = [Fraction(x) for x in d if x != 0]
    observed = abs(sum(exact))
    patterns = list(itertools.product((1, -1), repeat=len(exact)))
    extreme = sum(1 for s in patterns if abs(sum(si * x for si, x in zip(s, exact, strict=True))) >= observed)
    return Fraction(extreme, len(patterns))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_small_samples_get_the_exact_p_value_of_full_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.choice([0.0, 0.25, 0.5, 1.0], size=8)
    b = rng.choice([0.0, 0.5, 1.0], size=8)
    a[0], b[0] = 1.0, 1.0  # one tie: it must contribute nothing
    result = paired_randomisation_test(a, b, seed=9, rounds=10_000)
    d = (a - b).tolist()
    assert result.exact and result.differing == sum(1 for x in d if x != 0)
    assert result.p_value == float(_brute_force_p(d))
    assert result.kind == "lattice"  # quarters: whole multiples of 1/2520


def test_exact_p_counts_sign_patterns_not_random_rounds() -> None:
    # Four wins, 56 ties: 2 of 16 patterns are as extreme, p = 1/8 exactly, whatever the seed.
    a, b = [1.0] * 4 + [0.0] * 56, [0.0] * 60
    assert {paired_permutation_test(a, b, seed, 10_000) for seed in range(5)} == {0.125}


def test_monte_carlo_p_is_b_plus_one_over_r_plus_one_and_never_zero() -> None:
    a = [1.0 + q * 2**0.5 / 1000 for q in range(60)]  # off the lattice and more than 44 differing: Monte Carlo
    result = paired_randomisation_test(a, [0.0] * 60, seed=1, rounds=999)
    assert not result.exact and result.kind == "monte-carlo" and result.p_value == 1 / 1000
    assert result.method == "Monte Carlo, 999 rounds, seed 1 (2^60 patterns)"


def test_monte_carlo_with_a_partial_last_block_is_reproducible_from_the_seed() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.random(30), rng.random(30)
    # 2,500 rounds is two full blocks and a half one.
    first = paired_randomisation_test(a, b, seed=4, rounds=2_500)
    assert first == paired_randomisation_test(a, b, seed=4, rounds=2_500)
    assert 0 < first.p_value <= 1
    assert paired_bootstrap_ci(a, b, 4, 2_500) == paired_bootstrap_ci(a, b, 4, 2_500)


def test_holm_matches_a_hand_computed_example() -> None:
    # sorted: 0.01, 0.02, 0.03, 0.04 with m = 4: 0.04, 0.06, 0.06 (running max of 0.06), 0.06 (0.04 x 1)
    assert adjust_p_values([0.03, 0.01, 0.04, 0.02], "holm") == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert adjust_p_values([0.5, 0.6], "holm") == [1.0, 1.0]


def test_benjamini_hochberg_matches_a_hand_computed_example() -> None:
    # sorted 0.01, 0.02, 0.03, 0.04, m = 4: m p / j = 0.04, 0.04, 0.04, 0.04; running min from the top.
    assert adjust_p_values([0.03, 0.01, 0.04, 0.02], "bh") == pytest.approx([0.04, 0.04, 0.04, 0.04])
    # 0.01, 0.04, 0.045 with m = 3: 0.03, 0.06, 0.045 -> step-up minimum gives 0.03, 0.045, 0.045
    assert adjust_p_values([0.045, 0.01, 0.04], "bh") == pytest.approx([0.045, 0.03, 0.045])
    with pytest.raises(ValueError, match="unknown correction"):
        adjust_p_values([0.1], "bonferroni")


def _rankings_run(corpus_folder: Path, rankings: dict, settings: ExperimentSettings | None = None) -> dict:
    corpus = load_corpus(corpus_folder)
    scores = {r: {q: [1.0] * len(ids) for q, ids in run.items()} for r, run in rankings.items()}
    params = {r: RANKERS["bm25"]().contract for r in rankings}
    return run_experiments(corpus, rankings, params, scores, settings or ExperimentSettings(rounds=200))


def test_a_corpus_whose_questions_are_all_unanswerable_is_a_result_not_a_crash(tmp_path: Path) -> None:
    folder = write_corpus(
        tmp_path / "u", queries=[{"_id": "q1", "text": "weather", "kind": "u", "answerable": False}], qrels=[]
    )
    result = _rankings_run(folder, {"x": {"q1": ["d1"]}, "y": {"q1": ["d2"]}})
    assert result["scored_questions"] == 0
    assert result["significance"]["pairs"] == [] and result["ablation"]["rows"] == []
    assert "no question has a relevant passage" in result["significance"]["family"]["description"]
    assert result["unanswerable"]["questions"] == ["q1"]


@pytest.mark.parametrize(
    ("case", "rankings"),
    [
        ("single question", {"x": {"q1": ["d1"]}, "y": {"q1": ["d2"]}}),
    ],
)
def test_too_few_differing_questions_say_so_instead_of_a_p_value(tmp_path: Path, case: str, rankings: dict) -> None:
    queries = [{"_id": "q1", "text": "refund", "kind": "p"}, {"_id": "q2", "text": "E4012", "kind": "c"}]
    qrels = [("q1", "d1", 1), ("q2", "d3", 1)]
    if case == "single question":
        queries, qrels = queries[:1], qrels[:1]
    result = _rankings_run(write_corpus(tmp_path / "c", queries=queries, qrels=qrels), rankings)
    sig = result["significance"]
    assert sig["family"]["size"] == 0 and sig["family"]["excluded"] == len(sig["pairs"]) == 4
    for pair in sig["pairs"]:
        assert pair["p_value"] is None and pair["p_adjusted"] is None and pair["significant"] is None
        assert pair["note"] == "too_few_differing"
    for row in result["heldout"]["results"].values():
        for sweep in row.values():
            assert all(f["too_small"] and f["note"] == "fold_too_small" for f in sweep["folds"])


def test_identical_rankers_are_one_row_and_no_test(tmp_path: Path) -> None:
    queries = [{"_id": "q1", "text": "refund", "kind": "p"}, {"_id": "q2", "text": "E4012", "kind": "c"}]
    rankings = {"x": {"q1": ["d1"], "q2": ["d3"]}, "y": {"q1": ["d1"], "q2": ["d3"]}, "z": {"q1": ["d2"]}}
    folder = write_corpus(tmp_path / "c", queries=queries, qrels=[("q1", "d1", 1), ("q2", "d3", 1)])
    sig = _rankings_run(folder, rankings)["significance"]
    assert sig["identical"] == {m: [["x", "y"]] for m in sig["metrics"]}
    assert {(p["a"], p["b"]) for p in sig["pairs"]} == {("x", "z")}  # y is x's row: no x-y or y-z test
    assert sig["family"]["tests"] == 4 and "merged as identical" in sig["family"]["description"]
    assert [r["rankers"] for r in sig["groups"]["ndcg@10"]["rows"]] == [["x", "y"], ["z"]]


def _differing_runs(n: int, wins: int) -> tuple[list[dict], list[tuple[str, str, int]], dict]:
    queries = [{"_id": f"q{i}", "text": f"question {i}", "kind": "k"} for i in range(n)]
    qrels = [(f"q{i}", "d1", 1) for i in range(n)]
    x = {f"q{i}": ["d1"] for i in range(n)}
    y = {f"q{i}": ["d2"] if i < wins else ["d1"] for i in range(n)}  # x wins the first `wins`, the rest tie
    return queries, qrels, {"x": x, "y": y}


def test_significance_is_decided_on_adjusted_p_values_and_names_its_family(tmp_path: Path) -> None:
    queries, qrels, rankings = _differing_runs(14, 12)
    folder = write_corpus(tmp_path / "c", queries=queries, qrels=qrels)
    result = _rankings_run(folder, rankings, ExperimentSettings(rounds=10_000))
    sig = result["significance"]
    assert sig["correction"] == "holm" and sig["family"]["size"] == 4
    assert sig["family"]["description"] == "c: every pair of distinct rows on each of 4 metrics, 4 tests, so m = 4"
    tested = [p for p in sig["pairs"] if p["tested"]]
    assert [p["p_adjusted"] for p in tested] == adjust_p_values([p["p_value"] for p in tested], "holm")
    for pair in tested:
        assert pair["significant"] == (pair["p_adjusted"] < sig["alpha"])
        assert pair["method"] == "exact: the sign-flip distribution over 12 questions (lattice)"
        assert pair["p_value"] == 2 / 2**12


def test_interval_excluding_zero_without_a_corrected_rejection_is_explained(tmp_path: Path) -> None:
    # 24 questions, x wins 9 and loses 1: exact p = 22/1024 per metric, Holm over 4 tests 0.086, while the
    # bootstrap interval of the mean difference (8/24) excludes 0; the page must say why beside the interval.
    queries, qrels, rankings = _differing_runs(24, 9)
    rankings["x"]["q9"], rankings["y"]["q9"] = ["d2"], ["d1"]
    folder = write_corpus(tmp_path / "c", queries=queries, qrels=qrels)
    result = _rankings_run(folder, rankings, ExperimentSettings(rounds=10_000))
    pairs = result["significance"]["pairs"]
    assert [p["p_value"] for p in pairs] == [22 / 1024] * 4
    explained = [p for p in pairs if p["tested"] and (p["ci_low"] > 0 or p["ci_high"] < 0) and not p["significant"]]
    assert len(explained) == 4
    assert all(p["note"] == "interval_not_corrected" for p in explained)


def test_fewer_than_twenty_questions_get_no_bootstrap_interval(tmp_path: Path) -> None:
    queries, qrels, rankings = _differing_runs(19, 12)
    result = _rankings_run(write_corpus(tmp_path / "c", queries=queries, qrels=qrels), rankings)
    sig = result["significance"]
    assert not sig["intervals"] and all(p["ci_low"] is None and p["ci_high"] is None for p in sig["pairs"])
    assert all(row["ci_low"] is None for g in sig["groups"].values() for row in g["rows"])
    assert sig["headline"]["ci_low"] is None and sig["headline"]["significant"]


def test_benjamini_hochberg_is_chosen_in_sitegen_json(tmp_path: Path) -> None:
    queries, qrels, rankings = _differing_runs(12, 12)
    folder = write_corpus(tmp_path / "c", queries=queries, qrels=qrels)
    (folder / "sitegen.json").write_text('{"significance": {"correction": "bh"}}')
    sig = _rankings_run(folder, rankings)["significance"]
    assert sig["correction"] == "bh" and sig["correction_name"] == "Benjamini-Hochberg"


def test_an_unknown_correction_in_sitegen_json_is_a_located_error(tmp_path: Path) -> None:
    folder = write_corpus(tmp_path / "c")
    (folder / "sitegen.json").write_text('{\n  "significance": {"correction": "bonferroni"}\n}\n')
    with pytest.raises(CorpusError, match=r"sitegen\.json:2: \"significance\" must be"):
        load_corpus(folder)


def _brute_force_tukey(x: list[list[float]]) -> list[list[float]]:
    """Every combination of per-question permutations, written out: p[i][j] = share with range >= |diff|."""
    n, k = len(x), len(x[0])
    means = [sum(row[c] for row in x) / n for c in range(k)]
    ranges = []
    for combo in itertools.product(list(itertools.permutations(range(k))), repeat=n):
        cols = [sum(x[q][perm[c]] for q, perm in enumerate(combo)) / n for c in range(k)]
        ranges.append(max(cols) - min(cols))
    return [
        [1.0 if i == j else sum(r >= abs(means[i] - means[j]) - 1e-12 for r in ranges) / len(ranges) for j in range(k)]
        for i in range(k)
    ]


def test_tukey_with_two_rankers_equals_the_exact_paired_randomisation_test() -> None:
    """With two rankers a row permutation is a sign flip and max - min is |mean difference|: same exact p."""
    rng = np.random.default_rng(5)
    for _ in range(5):
        a = rng.integers(0, 3, 11) / 2
        b = rng.integers(0, 3, 11) / 2
        tukey = randomised_tukey_hsd(np.column_stack([a, b]), seed=1, rounds=10_000)
        paired = paired_randomisation_test(a, b, seed=1, rounds=10_000)
        assert tukey.exact and paired.exact
        assert tukey.p_values[0, 1] == tukey.p_values[1, 0] == paired.p_value


def test_tukey_exact_enumeration_matches_an_independent_brute_force() -> None:
    x = [[1.0, 0.0, 0.5], [0.25, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.5, 0.5]]
    result = randomised_tukey_hsd(np.array(x), seed=1, rounds=10_000)  # 6^4 = 1296 combinations
    assert result.exact
    np.testing.assert_allclose(result.p_values, _brute_force_tukey(x), rtol=0, atol=1e-15)


def test_tukey_of_identical_rankers_is_one_for_every_pair() -> None:
    column = np.random.default_rng(2).random(50)
    result = randomised_tukey_hsd(np.column_stack([column] * 4), seed=3, rounds=500)
    assert not result.exact
    assert (result.p_values == 1.0).all()


def test_tukey_monte_carlo_is_reproducible_from_the_seed_and_independent_of_the_block_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(4)
    x = (rng.random((40, 5)) < np.array([0.3, 0.5, 0.5, 0.6, 0.8])).astype(float)
    first = randomised_tukey_hsd(x, seed=9, rounds=700)
    assert not first.exact and "seed 9" in first.method
    assert (first.p_values == randomised_tukey_hsd(x, seed=9, rounds=700).p_values).all()
    monkeypatch.setattr(statistics_module, "TUKEY_BLOCK_VALUES", 7 * 40 * 5 + 3)  # 7-round blocks, a short last
    assert (first.p_values == randomised_tukey_hsd(x, seed=9, rounds=700).p_values).all()
    assert (first.p_values != randomised_tukey_hsd(x, seed=10, rounds=700).p_values).any()
    assert first.p_values.min() >= 1 / 701  # (b + 1) / (R + 1), never 0


def test_tukey_p_is_never_below_the_uncorrected_paired_test_on_the_widest_pair() -> None:
    """Each pair is compared with the largest shuffled range, so its p is at least the two-ranker p."""
    rng = np.random.default_rng(8)
    x = (rng.random((60, 4)) < np.array([0.3, 0.45, 0.55, 0.7])).astype(float)
    tukey = randomised_tukey_hsd(x, seed=1, rounds=4000)
    paired = paired_randomisation_test(x[:, 3], x[:, 0], seed=1, rounds=4000)
    assert tukey.p_values[0, 3] >= paired.p_value - 0.01


def test_wins_ties_losses_count_exact_ties_and_d_z_is_mean_over_sd() -> None:
    a = [1.0, 0.5, 0.3, 0.1 + 0.2, 0.0]
    b = [0.0, 0.5, 0.3, 0.3, 1.0]  # 0.1 + 0.2 != 0.3: a win by 5.6e-17, not a tie
    effect = paired_effect(a, b)
    assert (effect["wins"], effect["ties"], effect["losses"]) == (2, 2, 1)
    d = np.array(a) - np.array(b)
    assert effect["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1))
    assert paired_effect([0.5] * 4, [0.5] * 4) == {"wins": 0, "ties": 4, "losses": 0, "effect_size": 0.0}
    assert paired_effect([1.0] * 4, [0.0] * 4)["effect_size"] is None  # sd 0, mean not 0: undefined


def test_default_ablation_compares_only_rankers_that_differ_by_one_component() -> None:
    contracts = {name: RANKERS[name]().contract for name in ("bm25", "dense", "pg-tsvector", "rrf-dense-bm25")}
    pairs = experiments_module.default_ablation(["bm25", "dense", "pg-tsvector", "rrf-dense-bm25"], contracts)
    # the fusion against each list it fuses; pg-tsvector is unrelated to every other ranker, so it has no row
    assert pairs == [("dense", "rrf-dense-bm25", "bm25 fused in"), ("bm25", "rrf-dense-bm25", "dense fused in")]
    assert experiments_module.default_ablation(["bm25", "pg-tsvector"], contracts) == []


def test_default_ablation_rows_measure_each_ranker_against_its_baseline(tmp_path: Path) -> None:
    corpus = load_corpus(write_corpus(tmp_path / "c"))
    names = ("bm25", "dense", "rrf-dense-bm25")
    rankings = {
        r: {q.query_id: ["d1", "d2", "d3"] if r != "bm25" else ["d3", "d1"] for q in corpus.queries} for r in names
    }
    scores = {r: {q: [1.0] * len(ids) for q, ids in run.items()} for r, run in rankings.items()}
    contracts = {r: RANKERS[r]().contract for r in names}
    ablation = run_experiments(corpus, rankings, contracts, scores, ExperimentSettings(rounds=200))["ablation"]
    assert [(row["baseline"], row["ranker"]) for row in ablation["rows"]] == [
        ("dense", "rrf-dense-bm25"),
        ("bm25", "rrf-dense-bm25"),
    ]
    against_dense, against_bm25 = ablation["rows"]
    # rrf-dense-bm25 and dense were given the same lists here: no change; bm25's lists differ
    assert set(against_dense["delta"].values()) == {0.0}
    assert against_dense["overall"] == against_bm25["overall"] and any(against_bm25["delta"].values())
    assert ablation["source"].startswith("default: ")


def _reference_bootstrap(d: np.ndarray, seed: int, rounds: int, levels: list[float]) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = np.empty(rounds, dtype=np.float64)
    for start in range(0, rounds, 1000):
        block = min(1000, rounds - start)
        means[start : start + block] = d[rng.integers(0, d.size, size=(block, d.size))].mean(axis=1)
    low, high = np.quantile(means, levels)
    return (float(low), float(high))


SITEGEN_LEVELS = [(1 - 0.95) / 2, (1 + 0.95) / 2]  # paired_bootstrap_ci's, not exactly the audit's


AUDIT_LEVELS = [0.025, 0.975]


def _reference_sign_extreme(d: np.ndarray, seed: int, rounds: int) -> int:
    d = d[d != 0]
    observed = abs(math.fsum(d.tolist()))
    rng, extreme = np.random.default_rng(seed), 0
    for start in range(0, rounds, 1000):
        block = min(1000, rounds - start)
        signs = (rng.integers(0, 2, size=(block, d.size)) * 2 - 1).astype(np.float64)
        extreme += int(np.count_nonzero(np.abs(signs @ d) >= observed - 1e-12))
    return extreme


def _pairs(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Several pairs over the same questions (as the experiments test them): 0/1 and graded scores, many ties."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    out = []
    for _ in range(4):
        a = rng.integers(0, 2, n).astype(np.float64) if rng.random() < 0.5 else rng.random(n).round(2)
        b = a.copy()
        flip = rng.random(n) < rng.uniform(0.1, 0.9)
        b[flip] = rng.random(int(flip.sum())).round(2)
        out.append((a, b))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rounds", [999, 2_500])
def test_bootstrap_intervals_reusing_one_draw_equal_fresh_draws_the_audits_to_1e12(seed: int, rounds: int) -> None:
    for a, b in _pairs(seed):
        want = _reference_bootstrap(a - b, 42 + seed, rounds, SITEGEN_LEVELS)
        assert statistics_module.paired_bootstrap_ci(a, b, 42 + seed, rounds) == want
        want = _reference_bootstrap(a - b, 42 + seed, rounds, AUDIT_LEVELS)
        # the audit sums each round's mean from the draw counts: the same draws, other rounding in the last bits
        got = audit._bootstrap_interval(a - b, 42 + seed, rounds)
        assert got == pytest.approx(want, rel=0, abs=1e-12)
    with pytest.MonkeyPatch.context() as patch:  # too many indices to keep: drawn per call, the same values
        patch.setattr(statistics_module, "CACHED_BOOTSTRAP_VALUES", 0)
        assert statistics_module.paired_bootstrap_ci(a, b, 1, rounds) == _reference_bootstrap(
            a - b, 1, rounds, SITEGEN_LEVELS
        )
    # the audit resamples many columns with the same draws at once: each interval is its own, computed alone
    columns = [a - b for a, b in _pairs(seed)] + [a for a, _ in _pairs(seed)]
    together = audit._bootstrap_intervals(columns, 42 + seed, rounds)
    for column, got in zip(columns, together, strict=True):
        want = _reference_bootstrap(column, 42 + seed, rounds, AUDIT_LEVELS)
        assert got == pytest.approx(want, rel=0, abs=1e-12)


def test_reused_bootstrap_draws_cannot_be_changed_by_a_caller() -> None:
    drawn = statistics_module._bootstrap_indices(3, 1500, 40)
    assert [x.shape for x in drawn] == [(1000, 40), (500, 40)]
    with pytest.raises(ValueError):
        drawn[0][0, 0] = 1


@pytest.mark.parametrize("seed", range(6))
def test_sign_flip_tests_with_in_place_signs_equal_the_previous_ones(seed: int) -> None:
    for a, b in _pairs(seed):
        d = a - b
        extreme = _reference_sign_extreme(d, 7 + seed, 3_000)
        result = statistics_module.paired_randomisation_test(a, b, 7 + seed, 3_000)
        if result.exact:
            continue  # an exact method: not rewritten
        assert result.p_value == (extreme + 1) / 3_001
        assert audit._sign_test_p(d, 7 + seed, 3_000)[0] == (extreme + 1) / 3_001
