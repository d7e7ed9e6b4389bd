"""Experiments and plots are reused from the step cache only when their inputs are the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitegen import build as build_module
from sitegen.build import BuildOptions, build_site
from sitegen.errors import SitegenError
from sitegen.publish import render as render_module
from sitegen.stepcache import StepCache
from tests.helpers import FakeEmbeddingModel, file_tree


def test_a_step_is_computed_once_per_input_and_then_served_from_the_folder(tmp_path: Path) -> None:
    cache = StepCache(tmp_path / "steps")
    calls: list[str] = []

    def compute(value: str) -> bytes:
        calls.append(value)
        return value.encode()

    assert cache.bytes("step", {"x": 1}, lambda: compute("a")) == b"a"
    assert cache.bytes("step", {"x": 1}, lambda: compute("b")) == b"a"
    assert cache.bytes("step", {"x": 2}, lambda: compute("c")) == b"c"
    assert cache.bytes("other-step", {"x": 1}, lambda: compute("d")) == b"d"
    assert calls == ["a", "c", "d"]
    assert not list((tmp_path / "steps").glob("*.partial"))


def test_no_folder_computes_every_time(tmp_path: Path) -> None:
    calls = []
    cache = StepCache(None)
    for _ in range(2):
        cache.json("step", [1], lambda: calls.append(1) or {"n": len(calls)})
    assert calls == [1, 1]


def test_json_results_keep_every_float_exactly(tmp_path: Path) -> None:
    value = {"third": 1 / 3, "tiny": 5e-324, "big": 1.7976931348623157e308, "list": [0.1, 0.2 + 0.1], "ok": True}
    cache = StepCache(tmp_path)
    cache.json("floats", "k", lambda: value)
    assert cache.json("floats", "k", lambda: pytest.fail("recomputed")) == value


def test_key_depends_on_the_code_as_well_as_the_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = StepCache(None)
    before = cache.key("experiments", {"a": [1, 2]})
    assert cache.key("experiments", {"a": [1, 3]}) != before
    monkeypatch.setattr("sitegen.stepcache.code_sha256", lambda: "0" * 64)
    assert cache.key("experiments", {"a": [1, 2]}) != before


def test_warm_build_reuses_experiments_and_plots_and_writes_the_same_site(
    tmp_path: Path, tiny_corpus: Path, fake_model: FakeEmbeddingModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = BuildOptions(corpora_dir=tiny_corpus.parent, out_dir=tmp_path / "one", cache_dir=tmp_path / "cache")
    build_site(options, model=fake_model)
    counted: list[str] = []
    real_experiments, real_bars = build_module.run_experiments, render_module.grouped_bar_svg

    def counting_experiments(*args, **kwargs):
        counted.append("experiments")
        return real_experiments(*args, **kwargs)

    def counting_bars(*args, **kwargs):
        counted.append("plot")
        return real_bars(*args, **kwargs)

    counting_bars.__name__ = real_bars.__name__
    monkeypatch.setattr(build_module, "run_experiments", counting_experiments)
    monkeypatch.setattr(render_module, "grouped_bar_svg", counting_bars)
    warm = build_site(BuildOptions(**{**options.__dict__, "out_dir": tmp_path / "two"}), model=fake_model)
    assert counted == []
    assert warm.steps["experiments"] == {"computed": 0, "reused": 1}
    assert warm.steps["plot"]["computed"] == 0 and warm.steps["plot"]["reused"] > 0
    assert file_tree(tmp_path / "one") == file_tree(tmp_path / "two")

    qrels = tiny_corpus / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text().replace("q2\td3\t1", "q2\td4\t1"))  # changes hit@1
    changed = build_site(BuildOptions(**{**options.__dict__, "out_dir": tmp_path / "three"}), model=fake_model)
    assert counted == ["experiments", "plot"]
    assert changed.steps["experiments"] == {"computed": 1, "reused": 0}


def test_a_corrupted_cached_experiment_fails_the_audit_and_keeps_the_site(
    tmp_path: Path, tiny_corpus: Path, fake_model: FakeEmbeddingModel
) -> None:
    options = BuildOptions(corpora_dir=tiny_corpus.parent, out_dir=tmp_path / "site", cache_dir=tmp_path / "cache")
    build_site(options, model=fake_model)
    before = file_tree(tmp_path / "site")
    changed = 0
    for path in (tmp_path / "cache" / build_module.STEP_CACHE_FOLDER).glob("*.bin"):
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
        build_site(options, model=fake_model)
    assert file_tree(tmp_path / "site") == before
