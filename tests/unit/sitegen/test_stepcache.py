"""Experiments and plots are reused from the step cache only when their inputs are the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitegen.stepcache import StepCache


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
