"""Experiments: significance tests with known answers, a deterministic balanced split, sweeps and held-out choice."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeEmbeddingModel, write_corpus

from sitegen.build import BuildOptions, build_site
from sitegen.corpus import load_corpus
from sitegen.errors import CorpusError
from sitegen.experiments import (
    ExperimentSettings,
    paired_bootstrap_ci,
    paired_permutation_test,
    run_experiments,
    stratified_two_fold_split,
)


def test_identical_rankers_have_p_one_and_a_zero_width_interval() -> None:
    scores = [1.0, 0.0, 0.5, 1.0, 0.25] * 12
    assert paired_permutation_test(scores, scores, seed=1, rounds=2000) == 1.0
    assert paired_bootstrap_ci(scores, scores, seed=1, rounds=2000) == (0.0, 0.0)


def test_one_ranker_right_everywhere_and_the_other_nowhere_has_p_near_zero() -> None:
    p = paired_permutation_test([1.0] * 60, [0.0] * 60, seed=1, rounds=10_000)
    assert p == pytest.approx(1 / 10_001)
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


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("exp")
    folder = write_corpus(root / "corpora" / "tiny")
    (folder / "sitegen.json").write_text(
        json.dumps(
            {"ablation": [{"ranker": "bm25", "adds": "baseline"}, {"ranker": "rrf-dense-bm25", "adds": "dense"}]}
        )
    )
    build_site(
        BuildOptions(corpora_dir=root / "corpora", out_dir=root / "site", cache_dir=root / "c"),
        model=FakeEmbeddingModel(),
    )
    return root / "site"


def test_default_sweep_setting_reproduces_the_shipped_fusion(built: Path) -> None:
    experiments = json.loads((built / "evidence" / "tiny" / "experiments.json").read_text())
    metrics = json.loads((built / "evidence" / "tiny" / "metrics.json").read_text())
    for fusion, sweeps in experiments["sweeps"].items():
        for sweep in sweeps.values():
            row = next(
                r
                for r in sweep["rows"]
                if (r["params"]["k"], r["params"]["candidates"], r["params"]["weights"]) == (60, 20, [1, 1])
            )
            for metric, value in row["overall"].items():
                assert value == pytest.approx(metrics[fusion]["overall"][metric], abs=1e-12)


def test_held_out_choice_is_the_best_setting_on_the_tuning_fold(built: Path) -> None:
    experiments = json.loads((built / "evidence" / "tiny" / "experiments.json").read_text())
    folds = experiments["heldout"]["folds"]
    assert sorted(folds["A"] + folds["B"]) == ["q1", "q2", "q3"]
    for by_sweep in experiments["heldout"]["results"].values():
        for result in by_sweep.values():
            assert result["tuned_beats_default_in"] == sum(f["tuned_beats_default"] for f in result["folds"])
            for fold in result["folds"]:
                assert fold["tune_on"] != fold["test_on"]
                if fold["chosen"] == fold["default"]:
                    assert fold["scores"]["tuned"] == fold["scores"]["default"]
                    assert not fold["tuned_beats_default"]


def test_ablation_follows_the_corpus_config_and_reports_changes(built: Path) -> None:
    ablation = json.loads((built / "evidence" / "tiny" / "experiments.json").read_text())["ablation"]
    assert [r["ranker"] for r in ablation["rows"]] == ["bm25", "rrf-dense-bm25"]
    first, second = ablation["rows"]
    assert first["delta"] is None
    for metric, change in second["delta"].items():
        assert change == pytest.approx(second["overall"][metric] - first["overall"][metric], abs=1e-12)
    assert set(second["p_value"]) == set(second["delta"])


def test_unanswerable_questions_are_shown_with_their_candidates(built: Path) -> None:
    view = json.loads((built / "evidence" / "tiny" / "experiments.json").read_text())["unanswerable"]
    assert view["questions"] == ["q4"]
    run = json.loads((built / "evidence" / "tiny" / "runs" / "dense.json").read_text())
    assert view["rows"]["dense"]["q4"] == {
        "hits": len(run["queries"]["q4"]),
        "top_score": run["queries"]["q4"][0]["score"],
    }
    page = (built / "corpora" / "tiny" / "index.html").read_text()
    assert "a nonempty list or a positive score is not a sign that an answer exists" in page


def test_corpus_page_shows_sweeps_heldout_significance_and_ablation(built: Path) -> None:
    page = (built / "corpora" / "tiny" / "index.html").read_text()
    for anchor in ('id="significance"', 'id="ablation"', 'id="sweeps"', "Held-out selection"):
        assert anchor in page
    assert "33.3 points of hit@1 is one question" in page
    assert (built / "corpora" / "tiny" / "sweep-rrf-dense-bm25-k.svg").is_file()


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
    params = {"x": {"method": "okapi-bm25"}, "y": {"method": "exact cosine"}}
    settings = ExperimentSettings(rounds=200)
    first = run_experiments(corpus, rankings, params, scores, settings)
    assert first == run_experiments(corpus, rankings, params, scores, settings)
    assert Counter(p["metric"] for p in first["significance"]["pairs"]) == {
        m: 1 for m in first["significance"]["metrics"]
    }
