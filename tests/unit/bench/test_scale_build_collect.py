"""bench/scale_build.py --collect: the whole build and the standalone audit held against #34's targets, the
audit's seconds against three times the build's rank stage included."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import REPO


@pytest.fixture(scope="module")
def scale_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scale_build", REPO / "bench" / "scale_build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def size_result(build_seconds: float, rank_seconds: float, audit_seconds: float) -> dict:
    return {
        "passages": 1000,
        "questions": 10,
        "build": {
            "wall_seconds": build_seconds,
            "peak_rss_bytes": 1e9,
            "stage_seconds": {"rank": rank_seconds},
            "load_before": [0.1, 0.1, 0.1],
            "load_after": [1.0, 1.0, 1.0],
        },
        "standalone_audit": {"wall_seconds": audit_seconds, "peak_rss_bytes": 2e9, "load_after": [1.0, 1.0, 1.0]},
        "site": {"site_bytes": 10, "largest_file": {"path": "x", "bytes": 5}},
    }


@pytest.mark.parametrize("audit_seconds, met", [(299.0, True), (300.0, True), (301.0, False)])
def test_the_audit_is_held_to_three_times_the_rank_stage(
    scale_build: ModuleType, tmp_path: Path, audit_seconds: float, met: bool
) -> None:
    path = tmp_path / "size.json"
    path.write_text(json.dumps(size_result(500.0, 100.0, audit_seconds)))
    targets = {t["target"]: t for t in scale_build.collect([path], "cmd")["targets"]}
    ratio = targets["standalone_audit_vs_rank_stage"]
    assert ratio["met"] is met and ratio["value"] == round(audit_seconds / 100.0, 2)
    whole = targets["whole_build_and_audit_seconds"]
    assert whole["value"] == 500.0 + audit_seconds and whole["met"] is True
