"""Benchmark timings reach the Performance page and stay out of the evidence."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.builder import BuildOptions, build_site
from sitegen.cli import cli
from sitegen.errors import SitegenError
from sitegen.publish.timings import load_timing_files, performance_view
from tests.helpers import REPO, FakeEmbeddingModel, file_tree

PG_COST = {
    "kind": "sitegen-pg-cost",
    "schema": 1,
    "label": "Timings measured on one machine; absolute times vary between machines.",
    "measured_at": "2026-11-29T22:00:00+00:00",
    "command": "sitegen bench-pg <script>alert(1)</script>",
    "machine": {"cpu_model": "Test CPU", "logical_cpus": 2, "memory_gb": 23.5, "python": "3.11.7", "numpy": "2.4"},
    "corpus": "payments-support",
    "rows": 50000,
    "corpus_rows": 94,
    "filler_rows": 49906,
    "filler_seed": 7,
    "filler_vectors": "synthetic",
    "questions": 60,
    "runs": 3,
    "warmups": 2,
    "depth": 20,
    "build": {"copy_s": 4.5, "hnsw_build_s": 31.25, "gin_build_s": 2.5, "analyze_s": 0.25, "table_bytes": 2**27},
    "rows_matched": [{"kind": "paraphrase", "questions": 24, "median": 2210.0, "p95": 9000.0, "max": 12345}],
    "latency": [
        {"ranker": "rrf-pgvector-tsvector", "where": "postgres", "what": "two queries", "p50_ms": 13.5, "p95_ms": 30.0},
        {"ranker": "rrf-dense-bm25", "where": "in-process", "what": "both + fusion", "p50_ms": 1.5, "p95_ms": 2.0},
    ],
    "hybrid_ratio": {
        "in_process": "rrf-dense-bm25",
        "postgres": "rrf-pgvector-tsvector",
        "p50_ratio": 9.0,
        "p95_ratio": 15.0,
        "sql_p50_ratio": 7.5,
        "target": 5.0,
        "met": True,
    },
}


@pytest.fixture
def bench(tiny_corpus: Path) -> Path:
    folder = tiny_corpus.parent.parent / "bench"
    folder.mkdir()
    shutil.copyfile(REPO / "bench" / "results.json", folder / "results.json")
    (folder / "results-pg.json").write_text(json.dumps(PG_COST), encoding="utf-8")
    return folder


def _build(tiny_corpus: Path, tmp_path: Path, model: FakeEmbeddingModel) -> Path:
    options = BuildOptions(corpora_dir=tiny_corpus.parent, out_dir=tmp_path / "site", cache_dir=tmp_path / "cache")
    build_site(options, model=model)
    return tmp_path / "site"


def test_performance_page_shows_every_target_and_the_postgres_cost_table(
    bench: Path, tiny_corpus: Path, tmp_path: Path, fake_model: FakeEmbeddingModel
) -> None:
    site = _build(tiny_corpus, tmp_path, fake_model)
    page = (site / "performance.html").read_text(encoding="utf-8")
    suite = json.loads((bench / "results.json").read_text())
    unmet = [t for t in suite["targets"] if not t["met"]]
    assert page.count('<td class="text verdict-fail">no</td>') == len(unmet)
    assert page.count('<td class="text verdict-pass">yes</td>') == len(suite["targets"]) - len(unmet)
    assert "PostgreSQL at 50,000 rows" in page
    assert "9.0x faster at p50" in page and "31.25 s" in page and "128.0 MiB" in page and "12,345" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert "Performance</a>" in (site / "index.html").read_text(encoding="utf-8")


def test_timing_files_are_copied_verbatim_outside_the_manifest_and_the_audit_passes(
    bench: Path, tiny_corpus: Path, tmp_path: Path, fake_model: FakeEmbeddingModel
) -> None:
    site = _build(tiny_corpus, tmp_path, fake_model)
    for name in ("results.json", "results-pg.json"):
        assert (site / "timings" / name).read_bytes() == (bench / name).read_bytes()
    manifest = (site / "evidence" / "manifest.json").read_text(encoding="utf-8")
    assert "timings" not in manifest and "results-pg" not in manifest
    assert json.loads((site / "audit.json").read_text())["verdict"] == "pass"


def test_without_a_bench_folder_there_is_no_performance_page_or_link(
    tiny_corpus: Path, tmp_path: Path, fake_model: FakeEmbeddingModel
) -> None:
    site = _build(tiny_corpus, tmp_path, fake_model)
    assert not (site / "performance.html").exists() and not (site / "timings").exists()
    assert "performance.html" not in (site / "index.html").read_text(encoding="utf-8")


def test_a_malformed_timing_file_names_file_and_line_and_keeps_the_old_site(
    bench: Path, tiny_corpus: Path, tmp_path: Path, fake_model: FakeEmbeddingModel
) -> None:
    site = _build(tiny_corpus, tmp_path, fake_model)
    before = file_tree(site)
    (bench / "results-pg.json").write_text('{\n  "kind": "sitegen-pg-cost",\n  "rows": 5,,\n}\n', encoding="utf-8")
    with pytest.raises(SitegenError, match=r"results-pg\.json:3: malformed JSON"):
        _build(tiny_corpus, tmp_path, fake_model)
    assert file_tree(site) == before
    result = CliRunner().invoke(
        cli, ["build", "--corpora", str(tiny_corpus.parent), "--out", str(site), "--cache-dir", str(tmp_path / "c")]
    )
    assert result.exit_code != 0 and "results-pg.json:3" in result.output
    assert file_tree(site) == before


def test_a_timing_file_missing_what_the_page_reads_is_refused_by_name(bench: Path) -> None:
    broken = {k: v for k, v in PG_COST.items() if k != "latency"}
    (bench / "results-pg.json").write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(SitegenError, match=r"results-pg\.json: .*missing 'latency'"):
        load_timing_files(bench)


def test_the_default_run_comes_first_and_numbers_are_formatted_in_python(bench: Path) -> None:
    files = load_timing_files(bench)
    assert [f.name for f in files] == ["results.json", "results-pg.json"]
    view = performance_view(files)
    assert [s["file"] for s in view["suites"]] == ["results.json"]
    pg = view["pg_costs"][0]
    assert pg["latency"][0]["p50"] == "13.50" and pg["ratio"]["p50"] == "9.0"
    assert "23.5 GB memory" in pg["machine"] and "2 logical CPUs" in pg["machine"]


def test_cli_timings_option_points_the_page_at_another_folder(
    tiny_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sitegen.builder.site.EmbeddingModel", FakeEmbeddingModel)
    elsewhere = tmp_path / "measured-elsewhere"
    elsewhere.mkdir()
    (elsewhere / "results-pg.json").write_text(json.dumps(PG_COST), encoding="utf-8")
    site = tmp_path / "site"
    args = ["build", "--corpora", str(tiny_corpus.parent), "--out", str(site), "--cache-dir", str(tmp_path / "c")]
    result = CliRunner().invoke(cli, [*args, "-q", "--timings", str(elsewhere)])
    assert result.exit_code == 0, result.output
    assert "PostgreSQL at 50,000 rows" in (site / "performance.html").read_text(encoding="utf-8")
    assert sorted(p.name for p in (site / "timings").iterdir()) == ["results-pg.json"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"latency": {"p50_ms": 1}}, "'latency' should be a JSON array"),
        ({"latency": [1, 2]}, "every entry of 'latency' should be a JSON object"),
        ({"rows": "50000"}, "'rows' should be a JSON integer"),
        ({"hybrid_ratio": None}, "'hybrid_ratio' should be a JSON object"),
    ],
)
def test_a_timing_file_of_the_wrong_shape_is_refused_before_rendering(bench: Path, change: dict, message: str) -> None:
    (bench / "results-pg.json").write_text(json.dumps(PG_COST | change), encoding="utf-8")
    with pytest.raises(SitegenError, match=re.escape(message)):
        load_timing_files(bench)
