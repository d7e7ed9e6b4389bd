"""Replace a folder by a finished one in one step, under a lock: readers never see it half-written or gone.

DESIGN.md rule 5: a build (or an import) writes beside its target and swaps in only when complete. On Linux
the swap is one ``renameat2(RENAME_EXCHANGE)`` call, so the target's path names a complete tree at every
instant, and the old tree ends up at the staging name to be removed. Where the call is missing (not Linux,
an old C library, or a file system that answers ENOSYS or EINVAL) the target is renamed aside, the new tree
renamed in, and the old one renamed back if that second step fails, so no ``.previous`` folder is ever left
for the next writer to delete.

Writers into one target are serialised by :class:`TargetLock`, an ``flock`` on ``.<name>.lock`` beside it.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import secrets
import shutil
import sys
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any

from sitegen.errors import OutputFolderError

__all__ = ["TargetLock", "fresh_sibling", "swap_into_place"]

AT_FDCWD = -100  # <fcntl.h>: paths relative to the working directory
RENAME_EXCHANGE = 2  # <linux/fs.h>: swap the two paths atomically; both must exist


class TargetLock:
    """An exclusive, non-blocking ``flock`` on ``.<name>.lock`` beside ``target``; one writer at a time.

    Non-blocking because a second build into the same folder is almost always a mistake: it fails at once,
    naming the folder, instead of silently waiting. The lock file is removed on release while still locked;
    a writer that locked a file removed meanwhile sees that its inode is no longer at the path and retries,
    so the removal never lets two writers in at once.
    """

    def __init__(self, target: Path) -> None:
        self.target = Path(target)
        self.path = self.target.with_name(f".{self.target.name}.lock")
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> TargetLock:
        while True:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise OutputFolderError(f"cannot create the lock file {self.path}: {exc.strerror or exc}") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise OutputFolderError(
                    f"another build or import is writing {self.target} ({self.path} is locked); "
                    "wait for it to finish, or write somewhere else"
                ) from None
            except BaseException:
                os.close(fd)
                raise
            try:
                current = os.stat(self.path)
            except FileNotFoundError:
                current = None
            if current is not None and os.path.samestat(os.fstat(fd), current):
                self._fd = fd
                return self
            os.close(fd)  # the holder before us removed this file on release: lock the new one

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass  # e.g. another user's file in a sticky folder: a stale lock file is harmless
        finally:
            os.close(fd)


def fresh_sibling(target: Path, role: str) -> Path:
    """A path beside ``target`` that does not exist yet: ``.<name>.<role>-<8 hex>``."""
    while True:
        candidate = target.with_name(f".{target.name}.{role}-{secrets.token_hex(4)}")
        if not os.path.lexists(candidate):
            return candidate


def swap_into_place(staging: Path, target: Path, lock: TargetLock | None = None) -> None:
    """Make the finished tree at ``staging`` the one at ``target`` and remove the old one.

    ``lock``: the caller's held lock on ``target`` (a build holds it from its first check to the swap);
    without one, the lock is taken for the swap alone. On failure before the new tree is in place,
    ``target`` is as it was and ``staging`` still holds the new tree (the caller removes it).
    """
    if lock is None:
        with TargetLock(target) as own:
            swap_into_place(staging, target, own)
        return
    if not lock.held or lock.target != Path(target):
        raise ValueError(f"swap_into_place needs a held lock on {target}")
    if not os.path.lexists(target):
        try:
            _rename(staging, target)
        except OSError as exc:
            raise OutputFolderError(f"could not move {staging} to {target}: {exc.strerror or exc}") from exc
        return
    old = _replace(staging, target)
    try:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old)
        else:
            old.unlink()
    except OSError as exc:
        raise OutputFolderError(
            f"{target} was replaced, but its previous copy at {old} could not be removed: {exc.strerror or exc}"
        ) from exc


def _replace(staging: Path, target: Path) -> Path:
    """Put ``staging`` at ``target``; return where the old tree now is."""
    try:
        if _exchange(staging, target):
            return staging
    except OSError as exc:
        raise OutputFolderError(
            f"could not swap the new tree into {target}: {exc.strerror or exc}; {target} was left as it was"
        ) from exc
    aside = fresh_sibling(target, "replaced")
    try:
        _rename(target, aside)
    except OSError as exc:
        raise OutputFolderError(
            f"could not move {target} aside to replace it: {exc.strerror or exc}; it was left as it was"
        ) from exc
    try:
        _rename(staging, target)
    except BaseException as exc:
        try:
            _rename(aside, target)
        except OSError as back:
            raise OutputFolderError(
                f"could not move the new tree into {target} ({exc}), nor the previous one back from {aside} "
                f"({back.strerror or back}); rename {aside} to {target} by hand"
            ) from exc
        if isinstance(exc, OSError):
            raise OutputFolderError(
                f"could not move the new tree into {target}: {exc.strerror or exc}; the previous one was put back"
            ) from exc
        raise
    return aside


def _rename(source: Path, destination: Path) -> None:
    """``rename(2)``; a seam for tests that inject a failure at one step of the swap."""
    os.rename(source, destination)


def _exchange(first: Path, second: Path) -> bool:
    """Swap two existing paths atomically; False where the OS or file system cannot (use the fallback)."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    if renameat2(AT_FDCWD, os.fsencode(first), AT_FDCWD, os.fsencode(second), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL):  # no such call, or this file system does not support the flag
        return False
    raise OSError(code, os.strerror(code), str(first), None, str(second))


@cache
def _renameat2() -> Any:
    """glibc's ``renameat2`` (2.28+) through ctypes, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function
