"""The committed site/ is exactly what a fresh build of corpora/ produces, on any CPU; and that build of the shipped
payments-support corpus publishes every ranker for all sixty questions, scored as trec_eval scores them.

The build reuses the vectors stored in the committed bundle as frozen inputs (the model's own
float output differs in the last bits between CPUs; `sitegen build --reembed` measures that),
so with an empty embedding cache nothing is embedded and every byte must match. One build, made once per
session, serves every test here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitegen.builder import BuildResult
from sitegen.scoring.metrics import metric_names
from tests.helpers import REPO, UNFILTERED_RANKERS, assert_metrics_match_trec_eval

# Slow: a build of every shipped corpus
pytestmark = pytest.mark.slow

SITE = REPO / "site"


def test_committed_site_equals_a_fresh_build_from_its_frozen_vectors(committed_build: tuple[BuildResult, Path]) -> None:
    if not (SITE / "evidence" / "manifest.json").is_file():
        pytest.fail("site/ is not committed: run `sitegen build` and commit site/")
    result, fresh = committed_build
    assert result.embed_stats.embedded == 0, "every vector should come from the committed bundle"
    assert result.embed_stats.frozen > 0
    committed = sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*") if p.is_file())
    rebuilt = sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file())
    assert committed == rebuilt
    stale = [rel for rel in committed if (SITE / rel).read_bytes() != (fresh / rel).read_bytes()]
    assert stale == [], f"site/ is stale, rebuild and commit it: {stale[:10]}"


def test_the_committed_site_passes_its_own_audit(committed_build: tuple[BuildResult, Path]) -> None:
    """The fresh build, which the test above proves byte-identical to site/, ran the audit.py it ships on every file
    and failed unless it passed; audit.py imports only numpy (tests/unit/audit/test_audit_script.py) and passes as a
    numpy-only subprocess (tests/integration/test_audit.py)."""
    result, fresh = committed_build
    assert result.audit_verdict == "pass"
    report = json.loads((fresh / "audit.json").read_text(encoding="utf-8"))
    assert report["verdict"] == "pass" and report["counts"]["failed"] == 0 and report["counts"]["checks"] > 200
    assert (fresh / "audit.py").read_bytes() == (SITE / "audit.py").read_bytes()


def test_build_writes_every_ranker_for_all_sixty_questions(committed_build: tuple[BuildResult, Path]) -> None:
    _, site = committed_build
    for ranker in UNFILTERED_RANKERS:
        run = json.loads((site / "evidence" / "payments-support" / "runs" / f"{ranker}.json").read_text())
        assert len(run["queries"]) == 60
        trec_queries = {
            line.split()[0]
            for line in (site / "evidence" / "payments-support" / "runs" / f"{ranker}.trec").read_text().splitlines()
        }
        assert trec_queries == {q for q, hits in run["queries"].items() if hits}


def test_payments_metrics_equal_trec_eval(committed_build: tuple[BuildResult, Path]) -> None:
    _, site = committed_build
    names = metric_names()  # MAP, R-precision and recall@100 among them
    assert assert_metrics_match_trec_eval(site, "payments-support") == len(UNFILTERED_RANKERS) * 60 * len(names)


def _committed_corpora() -> list[str]:
    if not (SITE / "evidence" / "manifest.json").is_file():
        pytest.skip("no committed site")
    return sorted(p.name for p in (SITE / "evidence").iterdir() if (p / "experiments.json").is_file())


def test_no_committed_verdict_depends_on_monte_carlo_noise() -> None:
    """Every tested p is exact, or its Monte Carlo rounds put the smallest attainable p 20 times below Holm's first
    threshold; identical rankers are one row, so m counts distinct comparisons."""
    import json

    for corpus in _committed_corpora():
        sig = json.loads((SITE / "evidence" / corpus / "experiments.json").read_text())["significance"]
        m, alpha = sig["family"]["size"], sig["alpha"]
        for pair in sig["pairs"]:
            if pair["tested"]:
                assert pair["p_method"] in ("lattice", "split-half") or 1 / (sig["monte_carlo_rounds"] + 1) <= (
                    alpha / m / 20
                ), (corpus, pair)
            merged = [row for row in sig["identical"][pair["metric"]] if pair["b"] in row[1:] or pair["a"] in row[1:]]
            assert not merged, (corpus, pair)  # a merged ranker never appears in a test of its own


def test_committed_pages_open_with_the_headline_and_show_what_the_questions_can_detect() -> None:
    for corpus in _committed_corpora():
        page = (SITE / "corpora" / corpus / "index.html").read_text()
        assert page.index('class="headline"') < page.index('id="overall"'), corpus
        assert "Smallest true difference this question set detects" in page, corpus
        assert 'id="failures"' in page and 'id="judged"' in page, corpus
    home = (SITE / "index.html").read_text()
    assert home.count('class="headline"') == len(_committed_corpora())
    small = (SITE / "corpora" / "llm-reliability" / "index.html").read_text()
    assert 'class="best"' not in small and "no interval: fewer than 20 questions" in small
