"""A private server's data folder: initdb runs once per process and install, and each server gets a copy.

initdb takes about half a second, most of a private server's start; copying the folder it made takes a few
hundredths. Its WAL comes in 1 MB segments rather than 16 MB, which leaves 27 MB to copy rather than 38 for
each server a build starts (the segment size changes no query's result). Every copy is the same empty cluster
(the system identifier aside, which no query sees), so a build's runs do not depend on which it got. The first
initdb's folder stays in the temporary folder, named like a server's and holding this process's id, until the
process exits; a later start in another process removes it if this one died first
(:func:`sitegen.postgres.server` sweeps such folders).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sitegen.errors import SitegenError

__all__ = ["DIR_PREFIX", "OWNER_FILE", "TEMPLATE_PREFIX", "Initdb", "PostgresUnavailable", "make_cluster", "one_line"]

DIR_PREFIX = "sitegen-pg-"
TEMPLATE_PREFIX = DIR_PREFIX + "template-"  # the first initdb's folder: no server runs in it
OWNER_FILE = "sitegen-owner.pid"


class PostgresUnavailable(SitegenError):
    """PostgreSQL could not be started, reached or used; the message is one line saying why."""


def one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.splitlines()[0].split())


@dataclass(frozen=True)
class Initdb:
    """How initdb runs for a private server: which install (``source``, the binaries as installed), the
    ``initdb`` to run (perhaps the server's own copy of it), its environment and, as root, the server user."""

    source: Path
    initdb: Path
    env: Mapping[str, str]
    user: tuple[int, int] | None


_TEMPLATES: dict[tuple[Path, tuple[int, int] | None], Path] = {}
_LOCK = threading.Lock()


def make_cluster(how: Initdb, data_dir: Path) -> None:
    """A fresh, empty cluster in ``data_dir`` (which must not exist), owned by the server user where one is
    given: a copy of the cluster this process's first initdb of the same install and user made."""
    key = (how.source, how.user)
    with _LOCK:
        template = _TEMPLATES.get(key)
        if template is None or not (template / "data").is_dir():
            template = _TEMPLATES[key] = _run_initdb(how, data_dir.parent.parent)
    shutil.copytree(template / "data", data_dir, symlinks=True)  # modes kept: the folder stays 0700
    if how.user is not None:
        for folder, folders, files in os.walk(data_dir):
            for name in (folder, *(os.path.join(folder, n) for n in (*folders, *files))):
                os.chown(name, *how.user, follow_symlinks=False)


def _run_initdb(how: Initdb, base: Path) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=TEMPLATE_PREFIX, dir=base)).resolve()
    (folder / OWNER_FILE).write_text(f"{os.getpid()}\n")
    as_user: dict[str, object] = {}
    if how.user is not None:
        os.chown(folder, *how.user)
        as_user = {"user": how.user[0], "group": how.user[1], "extra_groups": []}
    command = [
        str(how.initdb),
        "-D",
        str(folder / "data"),
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
        "--username=postgres",
        "--no-sync",
        "--wal-segsize=1",
    ]
    try:
        subprocess.run(
            command, check=True, capture_output=True, text=True, cwd=folder, env=dict(how.env), timeout=120, **as_user
        )  # type: ignore[call-overload]
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        lines = (exc.stderr or exc.stdout or "").strip().splitlines() or [f"exit status {exc.returncode}"]
        raise PostgresUnavailable(f"initdb failed: {lines[-1]}") from None
    except (OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise PostgresUnavailable(f"initdb could not run: {one_line(exc)}") from None
    return folder


@atexit.register
def _remove_templates() -> None:
    with _LOCK:
        for folder in _TEMPLATES.values():
            shutil.rmtree(folder, ignore_errors=True)
        _TEMPLATES.clear()
