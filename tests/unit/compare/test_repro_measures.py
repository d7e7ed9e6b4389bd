"""Reproduction measures (Breuer et al., SIGIR 2020) against values computed by hand from their
definitions, and the ``reproduction`` section of ``sitegen diff``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.compare.diff import compare_pairs, diff_bundles
from sitegen.compare.diff_format import format_diff
from sitegen.compare.diff_results import PairSkipped
from sitegen.compare.repro import effect, parse_pair, ranking_agreement, rbo_ext, rmse, score_agreement
from sitegen.publish.evidence import canonical_json
from tests.helpers import rehash_manifest

# ------------------------------------------------------------------------------------ RMSE, nRMSE


def test_rmse_and_nrmse_by_hand() -> None:
    # Differences 0.5, 0, 0 over the 3 shared questions: RMSE = sqrt(0.25 / 3) = 0.288675...;
    # A's scores range over [0, 0.5], so nRMSE = RMSE / 0.5 = 0.577350...; q4 is scored in B only.
    a = {"q1": {"ndcg@10": 0.5}, "q2": {"ndcg@10": 0.0}, "q3": {"ndcg@10": 0.25}}
    b = {"q1": {"ndcg@10": 0.0}, "q2": {"ndcg@10": 0.0}, "q3": {"ndcg@10": 0.25}, "q4": {"ndcg@10": 1.0}}
    (row,) = score_agreement("c", "bm25", a, b)
    assert (row.metric, row.questions, row.only_in_a, row.only_in_b) == ("ndcg@10", 3, 0, 1)
    assert row.rmse == pytest.approx(math.sqrt(1 / 12))
    assert row.nrmse == pytest.approx(math.sqrt(1 / 12) / 0.5)
    assert row.undefined is None
    assert rmse([1.0, 2.0], [1.0, 2.0]) == 0.0
    assert rmse([0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]) == 1.0
    with pytest.raises(ValueError, match="differ in length"):
        rmse([1.0], [])


def test_nrmse_is_undefined_when_the_originals_scores_do_not_vary() -> None:
    a = {"q1": {"hit@1": 1.0}, "q2": {"hit@1": 1.0}}
    b = {"q1": {"hit@1": 0.0}, "q2": {"hit@1": 1.0}}
    (row,) = score_agreement("c", "bm25", a, b)
    assert row.rmse == pytest.approx(math.sqrt(0.5))
    assert (row.nrmse, row.undefined) == (None, "A's per-question scores are all equal")
    (none,) = score_agreement("c", "bm25", {"q1": {"hit@1": 1.0}}, {"q2": {"hit@1": 1.0}})
    assert (none.questions, none.rmse, none.undefined) == (0, None, "no question scored in both")


# -------------------------------------------------------------------------------------- ER, ΔRI


def test_effect_ratio_and_delta_ri_by_hand() -> None:
    # A: baseline (0.2, 0.4), advanced (0.6, 0.4): improvement (0.4 + 0) / 2 = 0.2, RI = (0.5 - 0.3) / 0.3 = 2/3.
    # B: baseline (0.2, 0.4), advanced (0.4, 0.4): improvement 0.1, RI = 0.1 / 0.3 = 1/3.
    # ER = 0.1 / 0.2 = 0.5; ΔRI = 2/3 - 1/3 = 1/3.
    base = {"q1": 0.2, "q2": 0.4}
    e = effect("c", "bm25", "rrf", "ndcg@10", (base, {"q1": 0.6, "q2": 0.4}), (base, {"q1": 0.4, "q2": 0.4}))
    assert (e.questions_a, e.questions_b) == (2, 2)
    assert e.improvement_a == pytest.approx(0.2) and e.improvement_b == pytest.approx(0.1)
    assert e.er == pytest.approx(0.5) and e.er_undefined is None
    assert e.ri_a == pytest.approx(2 / 3) and e.ri_b == pytest.approx(1 / 3)
    assert e.delta_ri == pytest.approx(1 / 3) and e.delta_ri_undefined is None
    same = effect("c", "bm25", "rrf", "m", (base, {"q1": 0.6, "q2": 0.4}), (base, {"q1": 0.6, "q2": 0.4}))
    assert (same.er, same.delta_ri) == (1.0, 0.0)


def test_zero_denominators_give_null_with_the_reason() -> None:
    # No improvement in A: ER = x / 0 is undefined; RI is still defined (0 in A, 0.5 in B).
    flat = effect("c", "b", "a", "m", ({"q1": 0.5}, {"q1": 0.5}), ({"q1": 0.5}, {"q1": 0.75}))
    assert (flat.er, flat.er_undefined) == (None, "the mean improvement in A is 0")
    assert flat.delta_ri == pytest.approx(-0.5)
    # A baseline averaging 0: RI_A = x / 0 is undefined, so is ΔRI; ER is fine (1.0 / 0.5 = 2).
    zero = effect("c", "b", "a", "m", ({"q1": 0.0}, {"q1": 0.5}), ({"q1": 0.0}, {"q1": 1.0}))
    assert zero.er == pytest.approx(2.0)
    assert (zero.ri_a, zero.ri_b, zero.delta_ri) == (None, None, None)
    assert zero.delta_ri_undefined == "the baseline's mean in A is 0; the baseline's mean in B is 0"
    # No question scored for both rankers in B.
    empty = effect("c", "b", "a", "m", ({"q1": 0.25}, {"q1": 0.5}), ({"q1": 0.0}, {"q2": 1.0}))
    assert (empty.er, empty.er_undefined) == (None, "no question scored for both rankers in B")
    assert empty.delta_ri_undefined == "no question scored for both rankers in B"
    # Both sides undefined: both reasons.
    both = effect("c", "b", "a", "m", ({"q1": 0.0}, {"q1": 0.5}), ({"q1": 0.0}, {"q2": 1.0}))
    assert both.delta_ri_undefined == "the baseline's mean in A is 0; no question scored for both rankers in B"


def test_pairs_default_to_bm25_and_rrf_and_a_requested_missing_pair_is_listed_with_the_reason() -> None:
    scored = {r: {"q1": {"m": v}} for r, v in (("bm25", 0.25), ("rrf-dense-bm25", 0.5), ("dense", 0.5))}
    effects, skipped = compare_pairs("c", scored, scored)
    assert [(e.baseline, e.advanced, e.metric, e.er) for e in effects] == [("bm25", "rrf-dense-bm25", "m", 1.0)]
    assert skipped == ()
    effects, skipped = compare_pairs("c", {"bm25": scored["bm25"]}, scored)
    assert effects == () and skipped == ()  # the default pair is skipped silently where it does not exist
    effects, skipped = compare_pairs("c", scored, {"bm25": scored["bm25"]}, [("bm25", "dense")])
    assert effects == ()
    assert skipped == (PairSkipped("c", "bm25", "dense", "dense has no per-question scores in B"),)


def test_parse_pair() -> None:
    assert parse_pair("bm25:rrf-dense-bm25") == ("bm25", "rrf-dense-bm25")
    for bad in ("bm25", "bm25:", ":dense", "a:b:c", "bm25:bm25"):
        with pytest.raises(ValueError):
            parse_pair(bad)


# ------------------------------------------------------------------------------------------- RBO


def test_rbo_ext_of_identical_and_disjoint_lists() -> None:
    assert rbo_ext(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert rbo_ext(["a", "b", "c"], ["d", "e", "f"]) == 0.0
    assert rbo_ext(["a"], ["b", "c", "d"]) == 0.0
    assert rbo_ext([], []) == 1.0 and rbo_ext([], ["a"]) == 0.0
    # The shorter list a prefix of the longer: the extrapolation assumes it goes on agreeing.
    assert rbo_ext(["a", "b"], ["a", "b", "c", "d"]) == pytest.approx(1.0)


def test_rbo_ext_equal_lengths_by_hand() -> None:
    # S = (a, b, c), L = (b, a, d), p = 0.9: X_1 = 0, X_2 = 2, X_3 = 2.
    # RBO_ext = X_3/3 p^3 + (1-p)/p (X_1/1 p + X_2/2 p^2 + X_3/3 p^3)
    #         = 2/3 * 0.729 + (1/9)(0 + 0.81 + 0.486) = 0.486 + 0.144 = 0.63
    assert rbo_ext(["a", "b", "c"], ["b", "a", "d"], 0.9) == pytest.approx(0.63)


def test_rbo_ext_uneven_lengths_by_hand() -> None:
    # S = (a, b), s = 2; L = (c, a, d), l = 3; p = 0.9. X_1 = 0, X_2 = |{a,b} & {c,a}| = 1, X_3 = |S & L| = 1.
    # sum_{d<=3} X_d/d p^d = 0.81/2 + 0.729/3 = 0.648; sum_{d=3} X_2 (d-2)/(2d) p^d = 0.729/6 = 0.1215
    # RBO_ext = (1/9)(0.648 + 0.1215) + ((X_3 - X_2)/3 + X_2/2) p^3 = 0.0855 + 0.3645 = 0.45
    assert rbo_ext(["a", "b"], ["c", "a", "d"], 0.9) == pytest.approx(0.45)
    assert rbo_ext(["c", "a", "d"], ["a", "b"], 0.9) == pytest.approx(0.45)  # symmetric


def test_rbo_does_not_depend_on_how_ids_sort() -> None:
    first, second = ["d1", "d2", "d3", "d4", "d5"], ["d3", "d1", "d6", "d2"]
    # A consistent renaming that reverses the ids' sort order (d1 -> z9, ..., d6 -> z4).
    rename = {f"d{i}": f"z{10 - i}" for i in range(1, 7)}
    renamed = rbo_ext([rename[d] for d in first], [rename[d] for d in second])
    assert renamed == pytest.approx(rbo_ext(first, second))
    # Lists with no document in common score 0 however their ids sort (repro_eval's KTU gives 1.0 here).
    assert rbo_ext(["a", "b", "c"], ["d", "e", "f"]) == 0.0 == rbo_ext(["d", "e", "f"], ["a", "b", "c"])


def test_ranking_agreement_averages_over_the_union_of_questions() -> None:
    a = {"q1": ["a", "b", "c"], "q2": ["x"]}
    b = {"q1": ["b", "a", "d"], "q2": ["x"], "q3": ["y"]}  # q3 missing in A: an empty list there, RBO 0
    agreement = ranking_agreement("c", "bm25", a, b)
    assert agreement.questions == 3 and agreement.depth == 3
    assert agreement.mean_rbo == pytest.approx((0.63 + 1.0 + 0.0) / 3)
    assert (agreement.min_rbo, agreement.min_at) == (0.0, "q3")


# ----------------------------------------------------------------------------------- sitegen diff


def write_site(site: Path, runs: Mapping[str, Mapping[str, list[str]]], per_query: Mapping[str, Any]) -> Path:
    """A one-corpus bundle (``tiny``) with runs and per-question scores, its manifest hashed."""
    base = site / "evidence" / "tiny"
    (base / "runs").mkdir(parents=True)
    for ranker, queries in runs.items():
        hits = {
            q: [{"doc_id": d, "rank": r, "score": 10.0 - r} for r, d in enumerate(docs, 1)]
            for q, docs in queries.items()
        }
        run = {"schema_version": 1, "corpus": "tiny", "ranker": ranker, "params": {}, "depth": 100, "queries": hits}
        (base / "runs" / f"{ranker}.json").write_bytes(canonical_json(run))
    metrics = {}
    for ranker, scores in per_query.items():
        overall = {m: math.fsum(s[m] for s in scores.values()) / len(scores) for m in next(iter(scores.values()))}
        metrics[ranker] = {"overall": overall, "by_kind": {}, "per_query": scores}
    (base / "metrics.json").write_bytes(canonical_json(metrics))
    manifest = {"schema_version": 1, "corpora": ["tiny"], "files": {}}
    (site / "evidence" / "manifest.json").write_bytes(canonical_json(manifest))
    rehash_manifest(site)
    return site


RUNS = {"bm25": {"q1": ["d1", "d2", "d3"], "q2": ["d2", "d4"]}, "rrf-dense-bm25": {"q1": ["d3", "d1"], "q2": ["d4"]}}
PER_QUERY = {
    "bm25": {"q1": {"ndcg@10": 0.5, "hit@1": 0.0}, "q2": {"ndcg@10": 0.25, "hit@1": 0.0}},
    "rrf-dense-bm25": {"q1": {"ndcg@10": 1.0, "hit@1": 1.0}, "q2": {"ndcg@10": 0.5, "hit@1": 1.0}},
}


def test_a_site_against_itself_reports_rmse_0_rbo_1_and_er_1(tmp_path: Path) -> None:
    site = write_site(tmp_path / "site", RUNS, PER_QUERY)
    diff = diff_bundles(site, site)
    rep = diff.reproduction
    assert len(rep.scores) == 4 and all(s.rmse == 0.0 for s in rep.scores)
    assert [g.mean_rbo for g in rep.rankings] == [1.0, 1.0]
    # hit@1: bm25 scores 0 on every question, so RI (and ΔRI) divide by 0; ER is 1.
    assert [(e.metric, e.er, e.delta_ri, e.delta_ri_undefined) for e in rep.effects] == [
        ("hit@1", 1.0, None, "the baseline's mean in A is 0; the baseline's mean in B is 0"),
        ("ndcg@10", 1.0, 0.0, None),
    ]
    result = CliRunner().invoke(cli, ["diff", str(site), str(site)])
    assert result.exit_code == 0, result.output
    section = result.output.split("reproduction: ", 1)[1]
    assert "RMSE of per-question scores: 4 (ranker, metric) series, 0 above 0, largest 0;" in section
    assert "RBO_ext of rankings (p = 0.9, to the stored hits, at most 3;" in section
    assert "mean over questions for 2 runs, 2 at 1" in section
    assert "sorted union" in section  # why Kendall's tau union is not reported
    doc = json.loads(CliRunner().invoke(cli, ["diff", "--json", str(site), str(site)]).output)["reproduction"]
    assert {s["rmse"] for s in doc["scores"]} == {0.0}
    assert [r["mean_rbo_ext"] for r in doc["rankings"]] == [1.0, 1.0]
    assert doc["rbo"]["p"] == 0.9 and "range" in doc["nrmse_normalisation"]


def test_a_rerun_that_moved_is_measured(tmp_path: Path) -> None:
    a = write_site(tmp_path / "a", RUNS, PER_QUERY)
    rerun = {**RUNS, "rrf-dense-bm25": {"q1": ["d1", "d3"], "q2": ["d4"]}}  # q1's top two swapped
    scores = {
        **PER_QUERY,
        "rrf-dense-bm25": {"q1": {"ndcg@10": 0.75, "hit@1": 1.0}, "q2": PER_QUERY["rrf-dense-bm25"]["q2"]},
    }
    b = write_site(tmp_path / "b", rerun, scores)
    rep = diff_bundles(a, b).reproduction
    ndcg = next(s for s in rep.scores if s.ranker == "rrf-dense-bm25" and s.metric == "ndcg@10")
    # Differences 0.25 and 0: RMSE = sqrt(0.0625 / 2); A's ndcg@10 ranges over [0.5, 1.0].
    assert ndcg.rmse == pytest.approx(math.sqrt(0.03125)) and ndcg.nrmse == pytest.approx(math.sqrt(0.03125) / 0.5)
    # Improvement over bm25: A (0.5 + 0.25) / 2 = 0.375, B (0.25 + 0.25) / 2 = 0.25: ER = 2/3.
    (effect_ndcg,) = [e for e in rep.effects if e.metric == "ndcg@10"]
    assert effect_ndcg.er == pytest.approx(2 / 3)
    rrf = next(g for g in rep.rankings if g.ranker == "rrf-dense-bm25")
    # q1: (d3, d1) vs (d1, d3): X_1 = 0, X_2 = 2: (2/2) p^2 + (1/9)(0.81) = 0.81 + 0.09 = 0.9; q2 identical.
    assert rrf.mean_rbo == pytest.approx((0.9 + 1.0) / 2) and rrf.min_at == "q1"
    text = format_diff(diff_bundles(a, b))
    assert "tiny/rrf-dense-bm25: 0.95 over 2 questions, lowest 0.9 at q1" in text
    assert "tiny bm25 -> rrf-dense-bm25 ndcg@10: ER 0.6667, ΔRI +" in text
    skipped = diff_bundles(a, b, pairs=[("bm25", "dense")]).reproduction
    assert skipped.effects == ()
    assert (
        skipped.pairs_not_compared[0].reason
        == "dense has no per-question scores in A; dense has no per-question scores in B"
    )
