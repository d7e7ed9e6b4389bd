"""The experiments of a build in experiments.json and on the corpus page: sweeps, held-out choice, ablation,
unanswerable questions, significance with Tukey; the default build's tiny corpus configures its ablation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitegen.publish.evidence import read_run
from tests.helpers import build, write_corpus


def test_default_sweep_setting_reproduces_the_shipped_fusion(default_site: Path) -> None:
    built = default_site
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


def test_held_out_choice_is_the_best_setting_on_the_tuning_fold(default_site: Path) -> None:
    built = default_site
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


def test_ablation_follows_the_corpus_config_and_reports_changes(default_site: Path) -> None:
    built = default_site
    ablation = json.loads((built / "evidence" / "tiny" / "experiments.json").read_text())["ablation"]
    assert [r["ranker"] for r in ablation["rows"]] == ["bm25", "rrf-dense-bm25"]
    first, second = ablation["rows"]
    assert first["delta"] is None
    for metric, change in second["delta"].items():
        assert change == pytest.approx(second["overall"][metric] - first["overall"][metric], abs=1e-12)
    assert set(second["p_adjusted"]) == set(second["delta"])


def test_unanswerable_questions_are_shown_with_their_candidates(default_site: Path) -> None:
    built = default_site
    view = json.loads((built / "evidence" / "tiny" / "experiments.json").read_text())["unanswerable"]
    assert view["questions"] == ["q4"]
    run = read_run(built / "evidence" / "tiny" / "runs" / "dense.json")
    assert view["rows"]["dense"]["q4"] == {
        "hits": len(run["queries"]["q4"]),
        "top_score": run["queries"]["q4"][0]["score"],
    }
    page = (built / "corpora" / "tiny" / "index.html").read_text()
    assert "a nonempty list or a positive score is not a sign that an answer exists" in page


def test_corpus_page_shows_sweeps_heldout_significance_and_ablation(default_site: Path) -> None:
    built = default_site
    page = (built / "corpora" / "tiny" / "index.html").read_text()
    for anchor in ('id="significance"', 'id="ablation"', 'id="sweeps"', "Held-out selection"):
        assert anchor in page
    assert "33.3 points of hit@1 is one question" in page
    assert (built / "corpora" / "tiny" / "sweep-rrf-dense-bm25-k.svg").is_file()


@pytest.mark.parametrize("qrels", [[("q1", "d1", 0)], []], ids=["judged-only-with-grade-0", "not-judged-at-all"])
def test_a_build_of_a_corpus_whose_questions_are_all_unanswerable_passes_its_audit(
    tmp_path: Path, qrels: list[tuple[str, str, int]]
) -> None:
    """No question has a relevant passage: the build still publishes (counts at 0, an empty qrels.trec) and
    its own audit agrees, instead of dividing by zero."""
    queries = [
        {"_id": "q1", "text": "weather tomorrow", "answerable": False},
        {"_id": "q2", "text": "football scores", "answerable": False},
    ]
    write_corpus(tmp_path / "corpora" / "u", queries=queries, qrels=qrels)
    build(tmp_path / "corpora", tmp_path / "site", rankers=("bm25", "dense", "rrf-dense-bm25"))
    assert json.loads((tmp_path / "site" / "audit.json").read_text())["verdict"] == "pass"
    report = json.loads((tmp_path / "site" / "evidence" / "u" / "report.json").read_text())
    assert report["hit_counts"]["overall"]["bm25"]["hit@1"] == 0


def test_experiments_json_records_tukey_beside_the_corrected_tests_and_the_page_shows_both(default_site: Path) -> None:
    built = default_site
    significance = json.loads((built / "evidence" / "tiny" / "experiments.json").read_text())["significance"]
    tukey = significance["tukey"]
    assert (tukey["rounds"], tukey["seed"]) == (significance["rounds"], significance["seed"])
    assert set(tukey["by_metric"]) == set(significance["metrics"])
    for pair in significance["pairs"]:
        assert 0 < pair["tukey_p"] <= 1 and pair["tukey_significant"] == (pair["tukey_p"] < 0.05)
        assert pair["wins"] + pair["ties"] + pair["losses"] == significance_questions(built)
    page = (built / "corpora" / "tiny" / "index.html").read_text()
    assert "randomised Tukey HSD" in page and "W/T/L" in page and "d_z" in page
    assert "family-wise error over all pairs of rankers on one metric" in page


def significance_questions(built: Path) -> int:
    return json.loads((built / "evidence" / "tiny" / "experiments.json").read_text())["scored_questions"]
