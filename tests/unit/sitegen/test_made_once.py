"""``made_once``: a value the pytest-xdist workers of one run share is made by one of them, whichever asks first."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from tests.helpers import made_once


class Factory:
    """The part of ``pytest.TempPathFactory`` that ``made_once`` uses, for worker ``name`` of a run in ``run``."""

    def __init__(self, run: Path, name: str) -> None:
        self.base = run / name

    def getbasetemp(self) -> Path:
        self.base.mkdir(parents=True, exist_ok=True)
        return self.base

    def mktemp(self, name: str) -> Path:
        folder = self.getbasetemp() / name
        folder.mkdir()
        return folder


def _make_and_count(folder: Path) -> str:
    """Writes into its folder, counts the makes in the run's log, and is slow enough for the workers to overlap."""
    with open(folder.parent / "makes.log", "a") as log:
        log.write(f"{folder}\n")
    time.sleep(0.3)
    (folder / "made.txt").write_text("made")
    return str(folder)


def _worker(run: Path, name: str) -> None:
    import os

    os.environ["PYTEST_XDIST_WORKER"] = name
    value = made_once(Factory(run, name), "thing", _make_and_count)  # type: ignore[arg-type]
    (run / f"{name}.value").write_text(value)


def test_workers_of_one_run_make_the_value_once_and_all_read_it(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_worker, args=(tmp_path, f"gw{i}")) for i in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
        assert worker.exitcode == 0
    assert len((tmp_path / "makes.log").read_text().splitlines()) == 1
    values = {(tmp_path / f"gw{i}.value").read_text() for i in range(3)}
    assert len(values) == 1
    assert (Path(values.pop()) / "made.txt").read_text() == "made"


def test_without_xdist_each_session_makes_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    first = made_once(Factory(tmp_path, "a"), "thing", _make_and_count)  # type: ignore[arg-type]
    second = made_once(Factory(tmp_path, "b"), "thing", _make_and_count)  # type: ignore[arg-type]
    assert first != second
    assert len((tmp_path / "a" / "makes.log").read_text().splitlines()) == 1


def test_a_folder_left_by_a_worker_that_died_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    left = tmp_path / "made-once-thing"
    left.mkdir()
    (left / "half-written").write_text("x")
    value = made_once(Factory(tmp_path, "gw0"), "thing", _make_and_count)  # type: ignore[arg-type]
    assert value == str(left)
    assert sorted(p.name for p in left.iterdir()) == ["made.txt"]
