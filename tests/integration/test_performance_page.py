"""Benchmark timings reach the Performance page of a build and stay out of the evidence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.errors import SitegenError
from tests.helpers import PG_COST, REPO, FakeEmbeddingModel, SharedBuild, build, file_tree


def test_performance_page_shows_every_target_and_the_postgres_cost_table(
    default_site: Path, default_build: SharedBuild
) -> None:
    page = (default_site / "performance.html").read_text(encoding="utf-8")
    suite = json.loads((default_build.root / "bench" / "results.json").read_text())
    unmet = [t for t in suite["targets"] if not t["met"]]
    assert page.count('<td class="text verdict-fail">no</td>') == len(unmet)
    assert page.count('<td class="text verdict-pass">yes</td>') == len(suite["targets"]) - len(unmet)
    assert "PostgreSQL at 50,000 rows" in page
    assert "9.0x faster at p50" in page and "31.25 s" in page and "128.0 MiB" in page and "12,345" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert "Performance</a>" in (default_site / "index.html").read_text(encoding="utf-8")


def test_timing_files_are_copied_verbatim_outside_the_manifest_and_the_audit_passes(
    default_site: Path, default_build: SharedBuild
) -> None:
    for name in ("results.json", "results-pg.json"):
        assert (default_site / "timings" / name).read_bytes() == (default_build.root / "bench" / name).read_bytes()
    manifest = (default_site / "evidence" / "manifest.json").read_text(encoding="utf-8")
    assert "timings" not in manifest and "results-pg" not in manifest
    assert json.loads((default_site / "audit.json").read_text())["verdict"] == "pass"


def test_without_a_bench_folder_there_is_no_performance_page_or_link(tiny_corpus: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    build(tiny_corpus.parent, site, rankers=("bm25",))
    assert not (site / "performance.html").exists() and not (site / "timings").exists()
    assert "performance.html" not in (site / "index.html").read_text(encoding="utf-8")


def test_a_malformed_timing_file_names_file_and_line_and_keeps_the_old_site(tiny_corpus: Path, tmp_path: Path) -> None:
    bench = tiny_corpus.parent.parent / "bench"
    bench.mkdir()
    shutil.copyfile(REPO / "bench" / "results.json", bench / "results.json")
    (bench / "results-pg.json").write_text(json.dumps(PG_COST), encoding="utf-8")
    site = tmp_path / "site"
    build(tiny_corpus.parent, site, rankers=("bm25",))
    before = file_tree(site)
    (bench / "results-pg.json").write_text('{\n  "kind": "sitegen-pg-cost",\n  "rows": 5,,\n}\n', encoding="utf-8")
    with pytest.raises(SitegenError, match=r"results-pg\.json:3: malformed JSON"):
        build(tiny_corpus.parent, site, rankers=("bm25",))
    assert file_tree(site) == before
    args = ["build", "--corpora", str(tiny_corpus.parent), "--out", str(site), "--cache-dir", str(tmp_path / "c")]
    result = CliRunner().invoke(cli, [*args, "--ranker", "bm25"])
    assert result.exit_code != 0 and "results-pg.json:3" in result.output
    assert file_tree(site) == before


def test_cli_timings_option_points_the_page_at_another_folder(
    tiny_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sitegen.builder.site.EmbeddingModel", FakeEmbeddingModel)
    elsewhere = tmp_path / "measured-elsewhere"
    elsewhere.mkdir()
    (elsewhere / "results-pg.json").write_text(json.dumps(PG_COST), encoding="utf-8")
    site = tmp_path / "site"
    args = ["build", "--corpora", str(tiny_corpus.parent), "--out", str(site), "--cache-dir", str(tmp_path / "c")]
    result = CliRunner().invoke(cli, [*args, "-q", "--ranker", "bm25", "--timings", str(elsewhere)])
    assert result.exit_code == 0, result.output
    assert "PostgreSQL at 50,000 rows" in (site / "performance.html").read_text(encoding="utf-8")
    assert sorted(p.name for p in (site / "timings").iterdir()) == ["results-pg.json"]
