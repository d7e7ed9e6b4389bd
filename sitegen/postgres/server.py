"""PostgreSQL for the ``pg-*`` rankers, the process side: a private server, or a connection to one.

This module supervises the server process and nothing else; the table, indexes and queries
one corpus gets inside it are :mod:`sitegen.postgres.index`, which builds on this module
(never the other way round).

Server. :class:`PostgresServer` either starts a private PostgreSQL 16 from the binaries that
ship inside the PyPI package ``pgserver`` (a fresh temporary folder holding a copy of the
process's one initdb cluster, :mod:`sitegen.postgres.cluster`; Unix socket only, no TCP
port) or connects to a server named by a connection string (``--pg-dsn``, or
``$SITEGEN_PG_DSN``). It is a context manager: on exit, also after an exception or Ctrl-C,
the private server is shut down and its folder removed. PostgreSQL refuses to run as root, so
as root the server runs as the system user ``pgserver`` (created with ``useradd`` when missing,
the user the ``pgserver`` package itself uses). That user may be unable to reach the binaries
where they are installed (a virtual environment inside a mode-700 folder, as ``mktemp -d`` makes),
and no permission of the user's folders is loosened for it: the server gets its own copy of the
install in its temporary folder (``bin``, ``lib``, ``share`` and the ``pgserver.libs`` folder
their RPATH names, in the same relative layout, since PostgreSQL finds ``lib`` and ``share``
relative to its own executable), root-owned and readable by the server user, removed with the
folder. Files are hard links where the filesystem allows, else copies (symlinks stay symlinks);
this costs 15-25 ms linked, 60-140 ms copied, for 25 MB in 816 entries, so the copy is made
per server and no shared cache is kept. Safety nets for a crash of the Python process:
the postmaster is started with ``PR_SET_PDEATHSIG`` (Linux), so it shuts down when the thread
that started it dies, even on SIGKILL; SIGTERM and SIGHUP are turned into ``SystemExit`` while
a private server runs (only where no handler was installed), an ``atexit`` hook stops any
server still running, and a start first removes the folders of earlier servers whose owning
process is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sitegen.postgres.cluster import DIR_PREFIX, OWNER_FILE, Initdb, PostgresUnavailable, make_cluster, one_line

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "DSN_ENV",
    "STARTUP_TIMEOUT",
    "STOP_TIMEOUT",
    "SYSTEM_USER",
    "PostgresServer",
    "PostgresUnavailable",
]

DSN_ENV = "SITEGEN_PG_DSN"
SYSTEM_USER = "pgserver"
STARTUP_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
_INSTALL_DIR = "install"
_INSTALL_PARTS = ("bin", "lib", "share")
_PR_SET_PDEATHSIG = 1
# The server is private and throwaway: durability settings off; parallel index builds off so
# the HNSW graph does not depend on worker scheduling; JIT off (compile time dwarfs these queries).
# The corpus sits in a temporary table, which only temp_buffers caches (default 8 MB): a million
# rows would be read back through the kernel at every scan. Allocated only as a session uses it.
_SERVER_SETTINGS = {
    "listen_addresses": "",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_parallel_maintenance_workers": "0",
    "maintenance_work_mem": "256MB",
    "temp_buffers": "4GB",
    "jit": "off",
}


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise PostgresUnavailable("psycopg is not installed: pip install 'psycopg[binary]'") from None
    return psycopg


def _pgserver_bin() -> Path:
    # Found without importing pgserver: its import creates a runtime folder and a lock file.
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailable("the pgserver package is not installed: pip install pgserver")
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").is_file():
        raise PostgresUnavailable(f"pgserver is installed but has no PostgreSQL binaries in {bin_dir}")
    return bin_dir


def _package_version(name: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\x00", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _postmaster_pid(data_dir: Path) -> int | None:
    """The pid in ``postmaster.pid`` if that process is alive and is a postgres of this folder."""
    try:
        pid = int((data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None
    if not _pid_alive(pid):
        return None
    cmdline = _cmdline(pid)
    if cmdline and str(data_dir) not in cmdline:
        return None  # the pid was reused by an unrelated process
    return pid


def _child_pids(pid: int) -> list[int]:
    """Direct children of ``pid`` (Linux /proc; empty elsewhere)."""
    children = []
    for entry in sorted(Path("/proc").glob("[0-9]*")):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            children.append(int(entry.name))
    return children


def _sweep_stale(base: Path) -> None:
    """Remove folders of earlier private servers whose owning Python process is gone,
    stopping a postmaster that outlived its owner (only one whose command line names the folder)."""
    for folder in sorted(base.glob(DIR_PREFIX + "*")):
        try:
            owner = int((folder / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue
        if owner == os.getpid() or _pid_alive(owner):
            continue
        postmaster = _postmaster_pid(folder / "data")
        if postmaster is not None:
            with contextlib.suppress(OSError):
                os.kill(postmaster, signal.SIGQUIT)
            for _ in range(50):
                if not _pid_alive(postmaster):
                    break
                time.sleep(0.1)
        shutil.rmtree(folder, ignore_errors=True)


def _system_user() -> tuple[int, int] | None:
    """(uid, gid) to run PostgreSQL as when we are root; None when we are not."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        entry = pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        try:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER],
                check=True,
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise PostgresUnavailable(
                f"running as root, PostgreSQL needs an unprivileged user {SYSTEM_USER!r}, "
                f"and useradd failed: {one_line(exc)}"
            ) from None
        entry = pwd.getpwnam(SYSTEM_USER)
    return entry.pw_uid, entry.pw_gid


def _install_sources(bin_dir: Path) -> list[tuple[Path, Path]]:
    """(folder, path relative to the copy's root) of what a private server runs from: pginstall's
    ``bin``, ``lib`` and ``share`` and, beside the package, the wheel's ``<package>.libs`` (initdb
    loads libpq from there through RPATH ``$ORIGIN/../../../pgserver.libs``). Keeping the layout
    keeps every ``$ORIGIN`` path and PostgreSQL's own bin-relative lookup of lib and share valid."""
    pginstall = bin_dir.parent
    package = pginstall.parent
    parts = [
        (pginstall / part, Path(package.name) / pginstall.name / part)
        for part in _INSTALL_PARTS
        if part == "bin" or (pginstall / part).is_dir()
    ]
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        parts.append((libs, Path(libs.name)))
    return parts


def _readable_mode(mode: int) -> int:
    """The mode a file needs so any user can read it (and run it, if its owner can), with no
    group or other write: what the server user needs and no more."""
    return (mode & 0o755) | 0o444 | (0o111 if mode & 0o100 else 0)


def _place_file(source: str, target: Path, mode: int, linking: list[bool]) -> None:
    """Hard-link ``source`` at ``target`` when the link gives the server user what it needs
    (a link shares the source's inode, so its mode and owner; the link is never chmod-ed);
    otherwise, or when linking fails (another filesystem, links not permitted), copy it with
    :func:`_readable_mode`. ``linking`` is cleared after a failed link so later files copy at once."""
    if linking[0] and _readable_mode(mode) == stat.S_IMODE(mode):
        try:
            os.link(source, target, follow_symlinks=False)
            return
        except OSError:
            linking[0] = False
    shutil.copyfile(source, target, follow_symlinks=False)
    os.chmod(target, _readable_mode(mode))


def _mirror_tree(source: Path, target: Path, redirects: Sequence[tuple[Path, Path]], linking: list[bool]) -> None:
    """Recreate ``source`` at ``target``: folders 755, files via :func:`_place_file`, symlinks as
    symlinks (an absolute one into a copied folder is pointed at the copy, as the original is
    what the server user cannot reach). Other file types (sockets, fifos) are not needed and skipped."""
    target.mkdir()
    os.chmod(target, 0o755)  # explicit: mkdir's mode is cut by the umask
    with os.scandir(source) as entries:
        for entry in entries:
            destination = target / entry.name
            if entry.is_symlink():
                pointed = os.readlink(entry.path)
                if os.path.isabs(pointed):
                    for origin, copy in redirects:
                        if Path(pointed).is_relative_to(origin):
                            pointed = str(copy / Path(pointed).relative_to(origin))
                            break
                os.symlink(pointed, destination)
            elif entry.is_dir(follow_symlinks=False):
                _mirror_tree(Path(entry.path), destination, redirects, linking)
            elif entry.is_file(follow_symlinks=False):
                _place_file(entry.path, destination, entry.stat(follow_symlinks=False).st_mode, linking)


def _private_install(bin_dir: Path, root: Path) -> Path:
    """Copy pgserver's PostgreSQL to ``root`` (a new folder) and return the copy's ``bin``.

    For a server that runs as another user. It is made every time rather than only when the
    original looks unreachable: ancestors' mode bits cannot tell for sure (ACLs, security labels,
    the RPATH'd ``.libs`` folder), a wrong guess brings back a failing initdb, and the copy costs
    15-25 ms linked, at most ~0.15 s copied, against about a second for initdb and start-up.
    """
    sources = _install_sources(bin_dir)
    redirects = [(src, root / rel) for src, rel in sources]
    noexec = getattr(os, "ST_NOEXEC", 0)
    try:
        root.mkdir()
        os.chmod(root, 0o755)
        if noexec and os.statvfs(root).f_flag & noexec:
            raise PostgresUnavailable(
                f"{root} is on a filesystem mounted noexec, so the PostgreSQL server user {SYSTEM_USER!r} "
                "cannot run its copy of the binaries there; set TMPDIR to a folder on another filesystem"
            )
        linking = [True]
        for src, rel in sources:
            parent = root
            for name in rel.parts[:-1]:  # pgserver/, pgserver/pginstall/
                parent = parent / name
                if not parent.is_dir():
                    parent.mkdir()
                    os.chmod(parent, 0o755)
            _mirror_tree(src, root / rel, redirects, linking)
    except OSError as exc:
        raise PostgresUnavailable(
            f"could not give the PostgreSQL server user {SYSTEM_USER!r} its own copy of {bin_dir.parent} "
            f"in {root}: {one_line(exc)}"
        ) from None
    return root / sources[0][1]


def _die_with_parent(parent: int) -> Any:
    """A preexec_fn: the child gets SIGINT (PostgreSQL's fast shutdown) when the thread that
    started it dies. It runs after the uid change, which would otherwise clear the setting."""

    def set_death_signal() -> None:
        if sys.platform.startswith("linux"):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGINT, 0, 0, 0)
            if os.getppid() != parent:  # the parent died before prctl took effect
                os._exit(1)

    return set_death_signal


_LIVE: list[PostgresServer] = []
_LIVE_LOCK = threading.Lock()
_SAVED_HANDLERS: dict[int, Any] = {}


def _exit_on_signal(signum: int, frame: Any) -> None:
    # SystemExit unwinds every ``with PostgresServer()`` block, which stops its server.
    raise SystemExit(128 + signum)


def _install_signal_net() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signum not in _SAVED_HANDLERS and signal.getsignal(signum) == signal.SIG_DFL:
            _SAVED_HANDLERS[signum] = signal.signal(signum, _exit_on_signal)


def _remove_signal_net() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in list(_SAVED_HANDLERS):
        if signal.getsignal(signum) is _exit_on_signal:
            signal.signal(signum, _SAVED_HANDLERS[signum])
        del _SAVED_HANDLERS[signum]


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop()


def _password(dsn: str) -> str | None:
    """The password a connection string carries (key=value or URL form), or None."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        return conninfo_to_dict(dsn).get("password") or None
    except Exception:
        found = re.search(r"://[^:/@\s]*:([^@\s]+)@", dsn) or re.search(r"password\s*=\s*'?([^'\s]+)", dsn)
        return found.group(1) if found else None


def _masked(message: str, dsn: str | None) -> str:
    """``message`` with the connection string's password, wherever it appears, replaced by ``***``."""
    secret = _password(dsn) if dsn else None
    return message.replace(secret, "***") if secret else message


def _describe_dsn(dsn: str) -> str:
    """The connection string without its password, for messages."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(dsn)
    except Exception:
        return "the given connection string"
    host = params.get("host") or params.get("hostaddr") or "localhost"
    port = params.get("port") or "5432"
    where = f"{host}:{port}" if not str(host).startswith("/") else f"socket {host}"
    database = params.get("dbname")
    return f"{where}/{database}" if database else str(where)


class PostgresServer:
    """A PostgreSQL server for the duration of a ``with`` block.

    ``PostgresServer()`` starts a private server from ``pgserver``'s binaries in a fresh
    temporary folder; ``PostgresServer(dsn)`` uses an existing server. Either way, entering
    checks that pgvector (0.5 or newer, for HNSW) is available, creating the extension if
    needed, and raises :class:`PostgresUnavailable` with a one-line reason otherwise.
    """

    def __init__(self, dsn: str | None = None, *, startup_timeout: float = STARTUP_TIMEOUT) -> None:
        self.dsn = dsn
        self.startup_timeout = startup_timeout
        self.folder: Path | None = None
        self.data_dir: Path | None = None
        # The bin/ folder the private server runs from: a copy inside ``folder`` as root.
        self.bin_dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._conninfo: str | None = None
        self._connections: list[Any] = []
        self._versions: dict[str, str] = {}
        self._log: Any = None

    # -- lifecycle

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def private(self) -> bool:
        return self.dsn is None

    @property
    def pid(self) -> int | None:
        """The private postmaster's process id (None for an external server)."""
        return self.process.pid if self.process is not None else None

    @property
    def conninfo(self) -> str:
        if self._conninfo is None:
            raise PostgresUnavailable("the PostgreSQL server is not running")
        return self._conninfo

    def start(self) -> None:
        if self._conninfo is not None:
            return
        psycopg = _import_psycopg()
        try:
            if self.private:
                self._start_private(psycopg)
            else:
                self._conninfo = self.dsn
            self._prepare_database(psycopg)
        except BaseException:
            self.stop()
            raise

    def _start_private(self, psycopg: Any) -> None:
        if os.name != "posix":
            raise PostgresUnavailable("a private PostgreSQL needs Linux or macOS; pass a connection string instead")
        bin_dir = source = _pgserver_bin()
        base = Path(tempfile.gettempdir())
        _sweep_stale(base)
        user = _system_user()
        with _LIVE_LOCK:
            _LIVE.append(self)
        _install_signal_net()
        self.folder = Path(tempfile.mkdtemp(prefix=DIR_PREFIX, dir=base)).resolve()
        (self.folder / OWNER_FILE).write_text(f"{os.getpid()}\n")
        if len(str(self.folder / ".s.PGSQL.5432")) > 100:
            raise PostgresUnavailable(f"the temporary folder {self.folder} is too long a path for a Unix socket")
        self.data_dir = self.folder / "data"
        as_user: dict[str, Any] = {}
        if user is not None:
            os.chown(self.folder, *user)
            as_user = {"user": user[0], "group": user[1], "extra_groups": []}
            # The server user may not reach the installed binaries; it runs a copy in its folder.
            bin_dir = _private_install(bin_dir, self.folder / _INSTALL_DIR)
        self.bin_dir = bin_dir
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}
        make_cluster(Initdb(source, bin_dir / "initdb", env, user), self.data_dir)
        command = [str(bin_dir / "postgres"), "-D", str(self.data_dir), "-k", str(self.folder)]
        for name, value in _SERVER_SETTINGS.items():
            command += ["-c", f"{name}={value}"]
        self._log = (self.folder / "server.log").open("wb")
        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                cwd=self.folder,
                env=env,
                # Its own session: a terminal's Ctrl-C reaches Python, which stops the server in order.
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()),
                **as_user,
            )
        except OSError as exc:
            raise PostgresUnavailable(f"PostgreSQL could not start: {one_line(exc)}") from None
        conninfo = psycopg.conninfo.make_conninfo(host=str(self.folder), dbname="postgres", user="postgres")
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.process.poll() is not None:
                raise PostgresUnavailable(
                    f"PostgreSQL exited during start-up (status {self.process.returncode}): {self._log_tail()}"
                )
            try:
                psycopg.connect(conninfo, connect_timeout=2).close()
                break
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise PostgresUnavailable(
                        f"PostgreSQL did not accept connections within {self.startup_timeout:g} s: {one_line(exc)}"
                    ) from None
                time.sleep(0.05)
        self._conninfo = conninfo

    def _log_tail(self) -> str:
        try:
            lines = (self.folder / "server.log").read_text(errors="replace").strip().splitlines()  # type: ignore[operator]
        except OSError:
            return "no server log"
        interesting = [line for line in lines if "FATAL" in line or "ERROR" in line] or lines or ["empty server log"]
        return " ".join(interesting[-1].split())

    def _prepare_database(self, psycopg: Any) -> None:
        where = "the private server" if self.private else _describe_dsn(self.conninfo)
        try:
            conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise PostgresUnavailable(
                _masked(f"cannot connect to PostgreSQL at {where}: {one_line(exc)}", self.dsn)
            ) from None
        with conn:
            try:
                version_num = int(conn.execute("SHOW server_version_num").fetchone()[0])
                server_version = conn.execute("SHOW server_version").fetchone()[0]
                if version_num < 120000:
                    raise PostgresUnavailable(
                        f"PostgreSQL at {where} is version {server_version}; generated columns need 12 or newer"
                    )
                row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
                if row is None:
                    try:
                        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                    except psycopg.Error as exc:
                        raise PostgresUnavailable(
                            _masked(
                                f"pgvector is not usable on PostgreSQL at {where}: the database has no vector "
                                f"extension and creating it failed ({one_line(exc)}); install pgvector on that "
                                "server and run CREATE EXTENSION vector as a role allowed to, or pick another database",
                                self.dsn,
                            )
                        ) from None
                    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
                encoding = conn.execute("SHOW server_encoding").fetchone()[0]
            except psycopg.Error as exc:
                raise PostgresUnavailable(
                    _masked(f"pgvector is not usable on PostgreSQL at {where}: {one_line(exc)}", self.dsn)
                ) from None
        pgvector = row[0]
        if tuple(int(p) for p in re.findall(r"\d+", pgvector)[:2]) < (0, 5):
            raise PostgresUnavailable(f"pgvector {pgvector} at {where} has no HNSW index; 0.5.0 or newer is needed")
        if encoding.upper() not in ("UTF8", "UTF-8"):
            raise PostgresUnavailable(f"PostgreSQL at {where} uses encoding {encoding}; sitegen needs UTF8")
        self._versions = {"postgresql": server_version, "pgvector": pgvector}
        if self.private:
            self._versions["pgserver"] = _package_version("pgserver") or "unknown"
        self._versions["psycopg"] = _package_version("psycopg") or "unknown"

    def versions(self) -> dict[str, str]:
        """PostgreSQL, pgvector, psycopg (and pgserver, for a private server) versions."""
        return dict(self._versions)

    def describe(self) -> str:
        """One line for the build log."""
        versions = f"PostgreSQL {self._versions.get('postgresql', '?')}, pgvector {self._versions.get('pgvector', '?')}"
        if self.private:
            return f"private {versions} (pgserver {self._versions.get('pgserver', '?')}) in {self.folder}"
        return f"{versions} at {_describe_dsn(self.conninfo)}"

    def connect(self) -> psycopg.Connection:
        """A new autocommit connection; closed by :meth:`stop` if still open."""
        psycopg = _import_psycopg()
        try:
            conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise PostgresUnavailable(_masked(f"cannot connect to PostgreSQL: {one_line(exc)}", self.dsn)) from None
        self._connections.append(conn)
        return conn

    def stop(self) -> None:
        """Close connections; shut a private server down and remove its folder. Idempotent."""
        for conn in self._connections:
            with contextlib.suppress(Exception):
                conn.close()
        self._connections.clear()
        self._conninfo = None
        if self.process is not None:
            _shutdown(self.process)
            self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.folder is not None:
            _remove_folder(self.folder)  # with it the server's copy of the binaries
            self.folder = None
            self.bin_dir = None
        with _LIVE_LOCK:
            if self in _LIVE:
                _LIVE.remove(self)
            if not _LIVE:
                _remove_signal_net()


def _shutdown(process: subprocess.Popen[bytes]) -> None:
    """Fast shutdown (SIGINT), then immediate (SIGQUIT), then SIGKILL for the postmaster and
    any backend it leaves behind."""
    children = _child_pids(process.pid) if process.poll() is None else []
    for signum, wait in ((signal.SIGINT, STOP_TIMEOUT), (signal.SIGQUIT, 5.0)):
        if process.poll() is not None:
            break
        with contextlib.suppress(OSError):
            process.send_signal(signum)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(wait)
    if process.poll() is None:
        process.kill()
        process.wait()
    for pid in children:
        if _pid_alive(pid) and "postgres" in _cmdline(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _remove_folder(folder: Path) -> None:
    for attempt in range(5):
        try:
            shutil.rmtree(folder)
            return
        except FileNotFoundError:
            return
        except OSError:
            if attempt == 4:
                raise
            time.sleep(0.1)
