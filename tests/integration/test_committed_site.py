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
    assert assert_metrics_match_trec_eval(site, "payments-support") == len(UNFILTERED_RANKERS) * 60 * 25
