"""A real collection end to end: Cranfield imported from ../shared, built, and scored like trec_eval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SHARED, FakeEmbeddingModel, assert_metrics_match_trec_eval

from sitegen.build import BuildOptions, build_site
from sitegen.cli import cli

CRANFIELD = SHARED / "collections" / "cranfield"
RANKERS = ("bm25", "bm25-stem", "dense", "rrf-dense-bm25", "rrf-dense-bm25-stem")


@pytest.fixture(scope="module")
def cranfield_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not CRANFIELD.is_dir():
        pytest.skip("../shared/collections/cranfield is not present")
    root = tmp_path_factory.mktemp("cranfield")
    result = CliRunner().invoke(
        cli, ["import", "beir", str(CRANFIELD), "--to", str(root / "corpora"), "--license", "research use (test)"]
    )
    assert result.exit_code == 0, result.output
    assert "1400 documents, 225 queries, 1612 judged pairs" in result.output
    build_site(
        BuildOptions(corpora_dir=root / "corpora", out_dir=root / "site", cache_dir=root / "cache", rankers=RANKERS),
        model=FakeEmbeddingModel(),
    )
    return root / "site"


def test_every_cranfield_metric_equals_trec_eval(cranfield_site: Path) -> None:
    compared = assert_metrics_match_trec_eval(cranfield_site, "cranfield")
    assert compared == len(RANKERS) * 225 * 25


def test_many_questions_are_split_into_pages_of_one_hundred(cranfield_site: Path) -> None:
    corpus_dir = cranfield_site / "corpora" / "cranfield"
    assert sorted(p.name for p in corpus_dir.glob("ranks*.html")) == ["ranks-2.html", "ranks-3.html", "ranks.html"]
    assert (corpus_dir / "ranks-3.html").read_text().count('<tr><td><a href="questions/') == 25
    assert len(list((corpus_dir / "questions").glob("*.html"))) == 225


def test_cranfield_audit_passes(cranfield_site: Path) -> None:
    verdict = json.loads((cranfield_site / "audit.json").read_text())
    assert verdict["verdict"] == "pass", [c for c in verdict["checks"] if c["status"] != "pass"]
