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
    # one Tukey family per metric with at least two distinct rows (identical rankers are one row)
    assert set(tukey["by_metric"]) == {m for m in significance["metrics"] if len(significance["groups"][m]["rows"]) > 1}
    for pair in significance["pairs"]:
        assert 0 < pair["tukey_p"] <= 1 and pair["tukey_significant"] == (pair["tukey_p"] < 0.05)
        assert pair["wins"] + pair["ties"] + pair["losses"] == significance_questions(built)
    page = (built / "corpora" / "tiny" / "index.html").read_text()
    assert "randomised Tukey HSD" in page and "W/T/L" in page and "d_z" in page
    assert "in the weak sense only" in page


def significance_questions(built: Path) -> int:
    return json.loads((built / "evidence" / "tiny" / "experiments.json").read_text())["scored_questions"]


def test_pages_show_the_failure_classes_judged_depth_headline_and_detectable_effects(default_site: Path) -> None:
    report = json.loads((default_site / "evidence" / "tiny" / "report.json").read_text())
    page = (default_site / "corpora" / "tiny" / "index.html").read_text()
    assert page.index('class="headline"') < page.index('id="overall"')  # the page opens with the headline
    assert 'id="failures"' in page and 'id="judged"' in page and "Smallest true difference" in page
    assert "report.json#/failures/counts/overall/all-miss" in page
    assert "report.json#/judged/rankers/bm25/judged" in page
    for qid, found in report["failures"]["questions"].items():
        question = (default_site / "corpora" / "tiny" / "questions" / f"{qid}.html").read_text()
        assert f"<strong>{found}</strong>" in question
        assert 'class="unjudged"' in question  # d4 is in every top 10 and has no qrels line
    index = (default_site / "index.html").read_text()
    assert 'class="headline"' in index and "Smallest true difference" in index
    assert "not a finding of no difference" in page or "cannot separate them" in page or "significant" in page
    assert "cannot be told apart" not in page and "within what a few questions' luck" not in page
