"""Independent parts of a build stage computed side by side in forked processes, with one process's result.

:func:`in_forks` returns ``[work(part) for part in parts]``: the first part is computed in this process and each
other in a child forked from it (Linux), which sends its result back pickled through a pipe. This is safe for
work that only computes from what this process already holds:

- a forked child is a copy of this process: the same objects, the same string hash seed (so ``hash()`` agrees
  with this process's), and only the thread that forked it (so ``work`` must not wait on a lock another thread
  may hold);
- it computes, writes its result and ends with ``os._exit``: no atexit handler, no flush of this process's
  buffered output, no cleanup of state it shares with this process;
- the results come back in the parts' order, so they are the ones one process gives, whatever the number of CPUs;
- a child that fails (an error, a kill, an unpicklable result) has its part computed again in this process, where
  an error is raised as it would be without children; an error here kills and reaps every child before it is
  raised, so none is left running.

Before forking, :func:`gc.freeze` moves this process's objects out of the collector's reach until the children are
done, so no collection, in a child or here, writes to (and copies) the memory pages they share. Reading an object
still writes its reference count: each process copies the pages of the objects it reads.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["SPLIT_FROM_HITS", "can_fork", "in_forks", "processes_for", "workers"]

#: Hits in a corpus's runs from which the stages after ranking split their work between processes: a million
#: (10,000 questions x 100 hits), where each part takes seconds and forking a large process pays for itself.
SPLIT_FROM_HITS = 1_000_000

T = TypeVar("T")
R = TypeVar("R")


def can_fork() -> bool:
    """Whether work can be split between forked processes here: Linux only (a forked child there is a plain copy
    of this process; elsewhere forking is unsupported or unsafe)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def workers(most: int) -> int:
    """How many processes may share a stage: the CPUs this process may use, at most ``most``; 1 where processes
    cannot be forked."""
    if not can_fork() or not hasattr(os, "sched_getaffinity"):
        return 1
    return max(1, min(most, len(os.sched_getaffinity(0))))


def processes_for(hits: int, most: int = 2) -> int:
    """How many processes a build stage over a corpus of ``hits`` run hits shares its work between: 1 below
    :data:`SPLIT_FROM_HITS`, else :func:`workers`."""
    return workers(most) if hits >= SPLIT_FROM_HITS else 1


_Child = tuple[int, int]  # pid, read end of its pipe (-1 once handed to a reader)


def _fork(work: Callable[[T], R], part: T, inherited: Sequence[int]) -> _Child | None:
    """A child computing ``work(part)`` into a pipe; None when no child can be forked."""
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid:
        os.close(write)
        return pid, read
    status = 1
    try:
        os.close(read)
        for fd in inherited:  # the pipes of the children forked before this one are not this child's
            os.close(fd)
        with os.fdopen(write, "wb") as out:
            pickle.dump(work(part), out, protocol=pickle.HIGHEST_PROTOCOL)
        status = 0
    finally:
        os._exit(status)  # on an error too: the parent computes this part again


def _collect(children: list[_Child | None], index: int) -> tuple[bool, object]:
    """Waits for child ``index``: (whether it succeeded, its result); it is then no longer in ``children``."""
    child = children[index]
    if child is None:
        return False, None
    pid, read = child
    with os.fdopen(read, "rb") as pipe:
        children[index] = (pid, -1)  # the pipe closes the read end, whatever happens
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    children[index] = None
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        return False, None
    try:
        return True, pickle.loads(data)
    except Exception:
        return False, None


def _end(children: list[_Child | None]) -> None:
    """Kills and reaps the children not collected yet."""
    for index, child in enumerate(children):
        if child is None:
            continue
        pid, read = child
        if read >= 0:
            with contextlib.suppress(OSError):
                os.close(read)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        children[index] = None


def in_forks(work: Callable[[T], R], parts: Sequence[T]) -> list[R]:
    """``[work(part) for part in parts]``, the first part here and each other in a forked child (the module's
    docstring says why the result is one process's); where processes cannot be forked, all here. ``work`` must
    only compute, and return a picklable value."""
    if len(parts) < 2 or not can_fork():
        return [work(part) for part in parts]
    children: list[_Child | None] = []
    freeze = gc.get_freeze_count() == 0  # objects frozen already are the caller's to unfreeze, with these
    if freeze:
        gc.freeze()  # until the children are done: no collector, here or there, writes to the pages now shared
    try:
        for part in parts[1:]:
            children.append(_fork(work, part, [child[1] for child in children if child is not None]))
        results = [work(parts[0])]
        for index, part in enumerate(parts[1:]):
            ok, value = _collect(children, index)
            results.append(value if ok else work(part))  # type: ignore[arg-type]
    finally:
        _end(children)  # after an error here: no child is left running or unreaped
        if freeze:
            gc.unfreeze()
    return results
