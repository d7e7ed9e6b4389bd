"""A private server started as root from a pgserver install the server user cannot reach.

As root, PostgreSQL runs as the system user ``pgserver``. A virtual environment inside a folder
only root may enter (``mktemp -d`` makes mode 700) used to make ``initdb`` fail with "Permission
denied", and every pg-* ranker was then "not run".
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
from pathlib import Path

import pytest

from sitegen.postgres import server as pg_server
from sitegen.postgres.server import PostgresServer

psycopg = pytest.importorskip("psycopg")
# Slow: private servers started as root
pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _skip_unless_possible() -> None:
    """Skip where the scenario cannot exist; in CI (root, pgserver installed) refuse to skip,
    so the test that guards this bug cannot silently stop running."""
    reasons = []
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        reasons.append("the server runs as another user only when sitegen runs as root")
    if importlib.util.find_spec("pgserver") is None:
        reasons.append("the pgserver package (PostgreSQL binaries) is not installed")
    if reasons:
        if os.environ.get("CI"):
            pytest.fail("CI must run this test, but: " + "; ".join(reasons))
        pytest.skip("; ".join(reasons))


def _installed_site_packages() -> Path:
    """The folder holding the installed ``pgserver`` package (and its ``pgserver.libs``)."""
    spec = importlib.util.find_spec("pgserver")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))).parent


@pytest.fixture
def locked_install(tmp_path: Path) -> Path:
    """``bin/`` of a copy of pgserver's PostgreSQL inside a venv-like layout under a folder of
    mode 700 owned by root: ``<locked>/site-packages/{pgserver/pginstall/{bin,lib,share}, pgserver.libs}``.
    ``pgserver.libs`` holds the libpq that initdb loads through its RPATH ``$ORIGIN/../../../pgserver.libs``."""
    _skip_unless_possible()
    source = _installed_site_packages()
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o700)
    site = locked / "site-packages"
    for part in ("bin", "lib", "share"):
        shutil.copytree(source / "pgserver" / "pginstall" / part, site / "pgserver" / "pginstall" / part, symlinks=True)
    if (source / "pgserver.libs").is_dir():
        shutil.copytree(source / "pgserver.libs", site / "pgserver.libs", symlinks=True)
    info = locked.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o700)
    return site / "pgserver" / "pginstall" / "bin"


def test_root_starts_pgvector_server_from_an_install_the_server_user_cannot_reach(
    locked_install: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_server, "_pgserver_bin", lambda: locked_install)
    locked = locked_install.parents[3]
    with PostgresServer() as server:  # start-up runs CREATE EXTENSION vector (_prepare_database)
        folder, pid = server.folder, server.pid
        assert folder is not None and pid is not None
        # The server runs from a copy inside its own folder, not from the unreachable original.
        assert Path(os.readlink(f"/proc/{pid}/exe")).is_relative_to(folder)
        assert server.versions()["pgvector"]
        with server.connect() as conn:
            distance = conn.execute("SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector").fetchone()[0]
            assert distance == pytest.approx(1.0)
            assert conn.execute("SELECT 1 + 1").fetchone()[0] == 2
    # Nothing about the user's folder was loosened, and the per-server copy went with the server.
    assert stat.S_IMODE(locked.stat().st_mode) == 0o700
    assert not folder.exists()


# ----------------------------------------------------------------- the copy itself (no root needed)


def _fake_install(site: Path) -> Path:
    """A small pgserver-like layout: an executable, a private (0600) and a world-writable file,
    a relative and an absolute symlink, and the wheel's ``.libs`` folder beside the package."""
    pginstall = site / "pgserver" / "pginstall"
    for part in ("bin", "lib/postgresql", "share/extension", "include"):
        (pginstall / part).mkdir(parents=True)
    tool = pginstall / "bin" / "postgres"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    (pginstall / "lib" / "libpq.so.5.16").write_text("lib")
    (pginstall / "lib" / "libpq.so.5.16").chmod(0o644)
    (pginstall / "lib" / "libpq.so.5").symlink_to("libpq.so.5.16")
    (pginstall / "lib" / "absolute.so").symlink_to(pginstall / "lib" / "libpq.so.5.16")
    (pginstall / "lib" / "postgresql" / "vector.so").write_text("vector")
    (pginstall / "lib" / "postgresql" / "vector.so").chmod(0o700)
    (pginstall / "share" / "extension" / "vector.control").write_text("control")
    (pginstall / "share" / "extension" / "vector.control").chmod(0o666)
    (pginstall / "share" / "extension").chmod(0o700)
    (site / "pgserver.libs").mkdir()
    (site / "pgserver.libs" / "libpq-1.so").write_text("libpq")
    return pginstall / "bin"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_server_copy_links_readable_files_copies_private_ones_readable_and_keeps_symlinks(tmp_path: Path) -> None:
    source_bin = _fake_install(tmp_path / "site-packages")
    source = source_bin.parent
    root = tmp_path / "server" / "install"
    root.parent.mkdir()
    copy_bin = pg_server._private_install(source_bin, root)
    copy = copy_bin.parent
    assert copy_bin == root / "pgserver" / "pginstall" / "bin"
    # Same filesystem: a file the server user may already read and run is a hard link.
    assert (copy_bin / "postgres").stat().st_ino == (source_bin / "postgres").stat().st_ino
    assert (copy / "lib" / "libpq.so.5.16").stat().st_ino == (source / "lib" / "libpq.so.5.16").stat().st_ino
    # A private or writable file is copied, readable (runnable if its owner may run it), not writable;
    # the original keeps its mode.
    vector = copy / "lib" / "postgresql" / "vector.so"
    assert vector.stat().st_ino != (source / "lib" / "postgresql" / "vector.so").stat().st_ino
    assert (_mode(vector), vector.read_text()) == (0o755, "vector")
    assert _mode(source / "lib" / "postgresql" / "vector.so") == 0o700
    assert _mode(copy / "share" / "extension" / "vector.control") == 0o644
    assert _mode(source / "share" / "extension" / "vector.control") == 0o666
    # Folders are enterable by anyone (the original 0700 one stays 0700); symlinks stay symlinks,
    # an absolute one is pointed at the copy.
    assert _mode(copy / "share" / "extension") == 0o755 and _mode(source / "share" / "extension") == 0o700
    assert all(_mode(folder) == 0o755 for folder in (root, root / "pgserver", copy))
    assert os.readlink(copy / "lib" / "libpq.so.5") == "libpq.so.5.16"
    assert Path(os.readlink(copy / "lib" / "absolute.so")) == copy / "lib" / "libpq.so.5.16"
    # What the binaries need comes along, in the same layout (RPATH $ORIGIN/../../../pgserver.libs).
    assert (copy_bin / "../../../pgserver.libs/libpq-1.so").resolve() == root / "pgserver.libs" / "libpq-1.so"
    assert not (copy / "include").exists()


def test_server_copy_failure_is_one_line_naming_the_server_user(tmp_path: Path) -> None:
    source_bin = _fake_install(tmp_path / "site-packages")
    taken = tmp_path / "install"
    taken.mkdir()
    with pytest.raises(pg_server.PostgresUnavailable) as raised:
        pg_server._private_install(source_bin, taken)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("could not give the PostgreSQL server user 'pgserver' its own copy of ")
    assert "File exists" in message


@pytest.mark.skipif(not hasattr(os, "ST_NOEXEC"), reason="os.ST_NOEXEC exists on Linux only")
def test_server_copy_on_a_noexec_temporary_folder_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source_bin = _fake_install(tmp_path / "site-packages")

    class NoExec:
        f_flag = os.ST_NOEXEC

    monkeypatch.setattr(pg_server.os, "statvfs", lambda path: NoExec())
    with pytest.raises(pg_server.PostgresUnavailable, match=r"mounted noexec.*set TMPDIR") as raised:
        pg_server._private_install(source_bin, tmp_path / "install")
    assert "\n" not in str(raised.value)
