"""The committed site/ is exactly what a fresh build of corpora/ produces, on any CPU.

The build reuses the vectors stored in the committed bundle as frozen inputs (the model's own
float output differs in the last bits between CPUs; `sitegen build --reembed` measures that),
so with an empty embedding cache nothing is embedded and every byte must match.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sitegen.build import BuildResult
from tests.helpers import REPO

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
