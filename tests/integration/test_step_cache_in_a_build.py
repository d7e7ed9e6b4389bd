"""A warm build reuses the experiments from the step cache and writes the same site; a changed input computes them
again; a corrupted cached experiment fails the build's audit and keeps the site."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitegen.builder import corpus as build_module
from sitegen.builder.site import STEP_CACHE_FOLDER
from sitegen.errors import SitegenError
from tests.helpers import DENSE_RANKERS, SharedBuild, build, copy_site, file_tree


def test_warm_build_reuses_experiments_and_writes_the_same_site(
    dense_site: Path, dense_build: SharedBuild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = copy_site(dense_build.cache, tmp_path / "cache")  # the cache the dense build filled
    counted: list[str] = []
    real_experiments = build_module.run_experiments

    def counting_experiments(*args, **kwargs):
        counted.append("experiments")
        return real_experiments(*args, **kwargs)

    monkeypatch.setattr(build_module, "run_experiments", counting_experiments)
    warm = build(dense_build.corpora, tmp_path / "two", cache=cache, rankers=DENSE_RANKERS)
    assert counted == []
    assert warm.steps == {"experiments": {"computed": 0, "reused": 1}}
    assert file_tree(dense_site) == file_tree(tmp_path / "two")

    corpora = copy_site(dense_build.corpora, tmp_path / "corpora")
    qrels = corpora / "tiny" / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text().replace("q2\td3\t1", "q2\td4\t1"))  # changes hit@1
    changed = build(corpora, tmp_path / "three", cache=cache, rankers=DENSE_RANKERS)
    assert counted == ["experiments"]
    assert changed.steps["experiments"] == {"computed": 1, "reused": 0}


def test_a_corrupted_cached_experiment_fails_the_audit_and_keeps_the_site(
    dense_site: Path, dense_build: SharedBuild, tmp_path: Path
) -> None:
    cache = copy_site(dense_build.cache, tmp_path / "cache")
    site = copy_site(dense_site, tmp_path / "site")
    before = file_tree(site)
    changed = 0
    for path in (cache / STEP_CACHE_FOLDER).glob("*.bin"):
        try:
            value = json.loads(path.read_bytes())
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(value, dict) and "significance" in value:
            value["significance"]["pairs"][0]["p_value"] = 0.0001
            path.write_text(json.dumps(value))
            changed += 1
    assert changed == 1
    with pytest.raises(SitegenError, match="audit of the new build failed"):
        build(dense_build.corpora, site, cache=cache, rankers=DENSE_RANKERS)
    assert file_tree(site) == before
