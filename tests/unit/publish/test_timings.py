"""Benchmark timing files: read, checked by name and shape, and formatted for the Performance page."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from sitegen.errors import SitegenError
from sitegen.publish.timings import load_timing_files, performance_view
from tests.helpers import PG_COST, REPO


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    folder = tmp_path / "bench"
    folder.mkdir()
    shutil.copyfile(REPO / "bench" / "results.json", folder / "results.json")
    (folder / "results-pg.json").write_text(json.dumps(PG_COST), encoding="utf-8")
    return folder


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
