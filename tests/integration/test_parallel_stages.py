"""A large corpus's build stages split between forked processes: the bundle is the one a single process writes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from sitegen import parallel
from sitegen.builder import corpus as corpus_stage
from sitegen.publish import writer
from tests.helpers import build, file_tree, write_corpus

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the build forks workers on Linux only")

RANKERS = ("bm25", "bm25-stem", "dense", "rrf-dense-bm25")


def test_tables_and_runs_made_by_two_processes_are_the_bytes_one_process_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpora = tmp_path / "corpora"
    write_corpus(corpora / "tiny")
    build(corpora, tmp_path / "one", rankers=RANKERS)
    splits: dict[str, list[int]] = {"writer": [], "derive": []}
    for name, module in (("writer", writer), ("derive", corpus_stage)):

        def recorded(work: Any, parts: list[Any], name: str = name, in_forks: Any = module.in_forks) -> list[Any]:
            splits[name].append(len(parts))
            return in_forks(work, parts)

        monkeypatch.setattr(module, "in_forks", recorded)
    monkeypatch.setattr(parallel, "SPLIT_FROM_HITS", 0)
    monkeypatch.setattr(parallel, "workers", lambda most: 2)
    build(corpora, tmp_path / "two", rankers=RANKERS, cache=tmp_path / "cache-two")

    # the runs shared out between two processes; the experiments here, the ties and packing in a child
    assert splits == {"writer": [2], "derive": [2]}
    one, two = file_tree(tmp_path / "one" / "evidence"), file_tree(tmp_path / "two" / "evidence")
    assert [p for p in one if "/runs/" in p] and one == two
