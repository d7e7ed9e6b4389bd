"""``sitegen.parallel.in_forks``: the results of one process, in order, whichever part fails where; no child left
behind."""

from __future__ import annotations

import gc
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from sitegen import parallel

pytestmark = pytest.mark.skipif(not parallel.can_fork(), reason="forks only on Linux")


def _gone(pid: int) -> bool:
    """Whether ``pid`` is neither running nor waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_each_part_s_result_comes_back_in_order_the_others_from_children() -> None:
    here = os.getpid()
    results = parallel.in_forks(lambda part: (part, [n * n for n in part], os.getpid()), [[1, 2], [3], [], [4, 5]])
    assert [(part, squares) for part, squares, _ in results] == [
        ([1, 2], [1, 4]),
        ([3], [9]),
        ([], []),
        ([4, 5], [16, 25]),
    ]
    assert gc.get_freeze_count() == 0  # unfrozen again
    pids = [pid for _, _, pid in results]
    assert pids[0] == here
    assert here not in pids[1:] and len(set(pids[1:])) == 3  # one child per other part


def test_with_one_part_or_no_fork_every_part_is_computed_here(monkeypatch: pytest.MonkeyPatch) -> None:
    here = os.getpid()
    assert parallel.in_forks(lambda part: (part, os.getpid()), ["a"]) == [("a", here)]
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not parallel.can_fork()
    assert parallel.workers(4) == 1
    assert parallel.in_forks(lambda part: (part, os.getpid()), ["a", "b", "c"]) == [
        ("a", here),
        ("b", here),
        ("c", here),
    ]


def test_workers_are_the_cpus_this_process_may_use_at_most_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0})
    assert parallel.workers(4) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(16)))
    assert parallel.workers(4) == 4
    assert parallel.workers(32) == 16


def test_a_part_whose_child_fails_is_computed_again_here() -> None:
    here = os.getpid()

    def work(part: str) -> tuple[str, int]:
        if os.getpid() != here:
            if part == "exits":
                os._exit(3)
            if part == "raises":
                raise RuntimeError("only in the child")
            if part == "killed":
                os.kill(os.getpid(), signal.SIGKILL)
            if part == "unpicklable":
                return lambda: None  # type: ignore[return-value]
        return part.upper(), os.getpid()

    parts = ["first", "exits", "fine", "raises", "killed", "unpicklable"]
    results = parallel.in_forks(work, parts)
    assert [text for text, _ in results] == [part.upper() for part in parts]
    assert [pid == here for _, pid in results] == [True, True, False, True, True, True]


def test_an_error_in_this_process_s_part_is_raised_and_no_child_is_left(tmp_path: Path) -> None:
    def work(part: int) -> int:
        if part:  # a child: says it started, then would run for a minute
            (tmp_path / f"{part}.pid").write_text(str(os.getpid()))
            time.sleep(60)
            return part
        deadline = time.monotonic() + 30
        while len(list(tmp_path.glob("*.pid"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        raise ValueError("this process's part")

    started = time.monotonic()
    with pytest.raises(ValueError, match="this process's part"):
        parallel.in_forks(work, [0, 1, 2, 3])
    pids = [int(path.read_text()) for path in sorted(tmp_path.glob("*.pid"))]
    assert len(pids) == 3
    assert all(_gone(pid) for pid in pids)  # killed and reaped, not left sleeping
    assert gc.get_freeze_count() == 0
    assert time.monotonic() - started < 30
