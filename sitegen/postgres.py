"""PostgreSQL for the ``pg-*`` rankers: a private server, one corpus loaded into it, its queries.

Server. :class:`PostgresServer` either starts a private PostgreSQL 16 from the binaries that
ship inside the PyPI package ``pgserver`` (initdb into a fresh temporary folder, Unix socket
only, no TCP port) or connects to a server named by a connection string (``--pg-dsn``, or
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

Index. :class:`PgCorpusIndex` loads one corpus into a temporary table (so it vanishes with its
connection and two builds sharing one external server never collide; names are derived from
the corpus name and always quoted with ``psycopg.sql.Identifier``)::

    id         text COLLATE "C" PRIMARY KEY    -- "C": id order is Python's string order
    title      text                            -- the passage title
    content    text                            -- the passage body
    metadata   jsonb
    embedding  vector(384)                     -- the build's normalised float32 vectors
    tsv        tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || content)) STORED

with an HNSW index (``vector_cosine_ops``, m = 16, ef_construction = 64, built single-threaded)
and a GIN index on ``tsv``. ``title || ' ' || content`` is :func:`sitegen.corpus.passage_text`
up to whitespace, which the text-search parser ignores. Every value (rows, vectors as pgvector
text ``'[x,y,...]'``, query text) travels as a bind parameter or through COPY; SQL text is
built only from this module's constants and quoted identifiers. NUL characters, which
PostgreSQL text cannot hold, are replaced by a space in titles, bodies and queries.

Queries run with ``enable_seqscan = off`` so each goes through the index its ranker is named
after even on small tables, where the planner would otherwise scan the table; keyword results
are the same either way, vector results are what the HNSW index returns (approximate; exact
whenever the corpus has at most ``ef_search`` passages, since the search then visits the whole
graph). pgvector assigns HNSW levels with the server's unseeded random generator, so on a
corpus larger than ``ef_search`` two builds may return different approximate neighbours.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import importlib.util
import json
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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sitegen.corpus import Corpus
from sitegen.errors import SitegenError

if TYPE_CHECKING:
    import psycopg

    from sitegen.embeddings import CorpusEmbeddings

__all__ = [
    "DSN_ENV",
    "EF_SEARCH",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_M",
    "TEXT_SEARCH_CONFIG",
    "HybridRow",
    "PgCorpusIndex",
    "PostgresServer",
    "PostgresUnavailable",
    "ScanNode",
    "format_vector",
]

DSN_ENV = "SITEGEN_PG_DSN"
TEXT_SEARCH_CONFIG = "english"
# pgvector's defaults, written out so the evidence names them.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
# Size of the HNSW search's candidate list. Before pgvector 0.8 an HNSW scan returns at most
# ef_search rows, so a query for n rows raises it to n (pgvector's ceiling is 1000).
EF_SEARCH = 100
EF_SEARCH_MAX = 1000
SYSTEM_USER = "pgserver"
STARTUP_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
_DIR_PREFIX = "sitegen-pg-"
_OWNER_FILE = "sitegen-owner.pid"
_INSTALL_DIR = "install"
_INSTALL_PARTS = ("bin", "lib", "share")
_PR_SET_PDEATHSIG = 1
# The server is private and throwaway: durability settings off; parallel index builds off so
# the HNSW graph does not depend on worker scheduling; JIT off (compile time dwarfs these queries).
_SERVER_SETTINGS = {
    "listen_addresses": "",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_parallel_maintenance_workers": "0",
    "maintenance_work_mem": "256MB",
    "jit": "off",
}


class PostgresUnavailable(SitegenError):
    """PostgreSQL could not be started, reached or used; the message is one line saying why."""


@dataclass(frozen=True)
class HybridRow:
    """One row of the SQL fusion: id, fused score, 1-based rank in each candidate list (None: absent)."""

    doc_id: str
    score: float
    vector_rank: int | None
    keyword_rank: int | None


@dataclass(frozen=True)
class ScanNode:
    """A scan node of an EXPLAIN plan: its type and the table and index it read."""

    node_type: str
    relation: str | None
    index: str | None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.splitlines()[0].split())


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise PostgresUnavailable("psycopg is not installed: pip install 'psycopg[binary]'") from None
    return psycopg


def format_vector(vector: np.ndarray) -> str:
    """pgvector's text form ``[x,y,...]``: each float32 as the shortest decimal that reads back
    as the same double, so the server's ``strtof`` recovers the exact float32."""
    values = np.asarray(vector, dtype=np.float32)
    if values.ndim != 1:
        raise ValueError(f"expected one vector, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("vector has a NaN or infinite component")
    return "[" + ",".join(repr(v) for v in values.tolist()) + "]"


def _clean(text: str) -> str:
    return text.replace("\x00", " ")


# --------------------------------------------------------------------------- server


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
    for folder in sorted(base.glob(_DIR_PREFIX + "*")):
        try:
            owner = int((folder / _OWNER_FILE).read_text().strip())
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
                f"and useradd failed: {_one_line(exc)}"
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
            f"in {root}: {_one_line(exc)}"
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
        bin_dir = _pgserver_bin()
        base = Path(tempfile.gettempdir())
        _sweep_stale(base)
        user = _system_user()
        with _LIVE_LOCK:
            _LIVE.append(self)
        _install_signal_net()
        self.folder = Path(tempfile.mkdtemp(prefix=_DIR_PREFIX, dir=base)).resolve()
        (self.folder / _OWNER_FILE).write_text(f"{os.getpid()}\n")
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
        initdb = [
            str(bin_dir / "initdb"),
            "-D",
            str(self.data_dir),
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--username=postgres",
            "--no-sync",
        ]
        try:
            subprocess.run(
                initdb, check=True, capture_output=True, text=True, cwd=self.folder, env=env, timeout=120, **as_user
            )
        except subprocess.CalledProcessError as exc:
            lines = (exc.stderr or exc.stdout or "").strip().splitlines() or [f"exit status {exc.returncode}"]
            raise PostgresUnavailable(f"initdb failed: {lines[-1]}") from None
        except (OSError, subprocess.SubprocessError) as exc:
            raise PostgresUnavailable(f"initdb could not run: {_one_line(exc)}") from None
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
            raise PostgresUnavailable(f"PostgreSQL could not start: {_one_line(exc)}") from None
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
                        f"PostgreSQL did not accept connections within {self.startup_timeout:g} s: {_one_line(exc)}"
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
            raise PostgresUnavailable(f"cannot connect to PostgreSQL at {where}: {_one_line(exc)}") from None
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
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
                encoding = conn.execute("SHOW server_encoding").fetchone()[0]
            except psycopg.Error as exc:
                raise PostgresUnavailable(
                    f"pgvector is not usable on PostgreSQL at {where}: {_one_line(exc)}"
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
            raise PostgresUnavailable(f"cannot connect to PostgreSQL: {_one_line(exc)}") from None
        self._connections.append(conn)
        return conn

    def load_corpus(self, corpus: Corpus, embeddings: CorpusEmbeddings) -> PgCorpusIndex:
        """Load a corpus over a new connection that the index owns and closes."""
        return PgCorpusIndex.load(self.connect(), corpus, embeddings, owns_connection=True)

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


# --------------------------------------------------------------------------- index

# plainto_tsquery ANDs its lexemes; the text form writes the operator as " & " between quoted
# lexemes. A lexeme can contain "&" (a URL such as a.com/x?a=1&b=2 stays one lexeme) but never a
# space, so replacing " & " by " | " turns exactly the operators into OR. The whole chain is
# immutable, so the planner folds it into one tsquery constant and the GIN index serves it.
_OR_QUERY = "replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery"

_VECTOR_SQL = """
SELECT id, distance FROM (
    SELECT id, embedding <=> %(vector)s::vector AS distance
    FROM {table}
    WHERE {where}
    ORDER BY embedding <=> %(vector)s::vector
    LIMIT %(ef_search)s
) AS nearest
ORDER BY distance, id
LIMIT %(n)s
"""

_KEYWORD_SQL = f"""
SELECT id, ts_rank_cd(tsv, {_OR_QUERY}) AS score
FROM {{table}}
WHERE tsv @@ {_OR_QUERY} AND {{where}}
ORDER BY score DESC, id
LIMIT %(n)s
"""

_MATCH_COUNT_SQL = f"SELECT count(*) FROM {{table}} WHERE tsv @@ {_OR_QUERY} AND {{where}}"

# Reciprocal Rank Fusion in one statement. The vector term is added first and both in double
# precision, as sitegen.rankers.fusion sums 1/(k + r) over the lists in their configured order,
# so scores agree to the last bit. Ties: items of the vector list by vector rank, then items
# found only by the keyword list by keyword rank: the order of first appearance that Python's
# stable sort keeps.
_HYBRID_SQL = f"""
WITH vector_list AS (
    SELECT id, row_number() OVER (ORDER BY distance, id) AS r
    FROM (
        SELECT id, embedding <=> %(vector)s::vector AS distance
        FROM {{table}}
        WHERE {{where}}
        ORDER BY embedding <=> %(vector)s::vector
        LIMIT %(ef_search)s
    ) AS nearest
    ORDER BY distance, id
    LIMIT %(candidates)s
), keyword_list AS (
    SELECT id, row_number() OVER (ORDER BY score DESC, id) AS r
    FROM (
        SELECT id, ts_rank_cd(tsv, {_OR_QUERY}) AS score
        FROM {{table}}
        WHERE tsv @@ {_OR_QUERY} AND {{where}}
    ) AS matches
    ORDER BY score DESC, id
    LIMIT %(candidates)s
)
SELECT coalesce(v.id, k.id) AS id,
       coalesce(%(w_vector)s::float8 / (%(k)s::float8 + v.r), 0::float8)
           + coalesce(%(w_keyword)s::float8 / (%(k)s::float8 + k.r), 0::float8) AS score,
       v.r AS vector_rank,
       k.r AS keyword_rank
FROM vector_list AS v FULL OUTER JOIN keyword_list AS k ON v.id = k.id
ORDER BY score DESC, vector_rank NULLS LAST, keyword_rank
LIMIT %(n)s
"""


def _where(conditions: Sequence[Any]) -> tuple[Any, dict[str, Any]]:
    """A metadata filter as SQL over the ``metadata`` jsonb column; field names and values are bind
    parameters, never spliced into the statement. Dates compare as dates."""
    from psycopg import sql

    if not conditions:
        return sql.SQL("TRUE"), {}
    parts, values = [], {}
    for n, condition in enumerate(conditions):
        field, value = f"filter_field_{n}", f"filter_value_{n}"
        values[field], values[value] = condition.field, condition.value
        if condition.op == "equals":
            parts.append(sql.SQL("metadata ->> {} = {}").format(sql.Placeholder(field), sql.Placeholder(value)))
        elif condition.op == "one-of":
            parts.append(sql.SQL("metadata ->> {} = ANY({})").format(sql.Placeholder(field), sql.Placeholder(value)))
        elif condition.op == "on-or-after":
            values[value] = condition.value.isoformat()
            parts.append(
                sql.SQL("(metadata ->> {})::date >= {}::date").format(sql.Placeholder(field), sql.Placeholder(value))
            )
        else:
            raise ValueError(f"unknown filter op {condition.op!r}")
    return sql.SQL("({})").format(sql.SQL(" AND ").join(parts)), values


def _table_name(corpus_name: str) -> str:
    """``corpus_<slug>_<10 hex of sha256(name)>``: readable, unique per name, under 63 bytes."""
    slug = re.sub(r"[^a-z0-9]+", "_", corpus_name.lower()).strip("_")[:30]
    digest = hashlib.sha256(corpus_name.encode("utf-8")).hexdigest()[:10]
    return f"corpus_{slug}_{digest}" if slug else f"corpus_{digest}"


def _scan_nodes(plan: dict[str, Any]) -> list[ScanNode]:
    nodes = []
    if plan.get("Node Type", "").endswith("Scan") and ("Relation Name" in plan or "Index Name" in plan):
        nodes.append(ScanNode(plan["Node Type"], plan.get("Relation Name"), plan.get("Index Name")))
    for child in plan.get("Plans", ()):
        nodes.extend(_scan_nodes(child))
    return nodes


class PgCorpusIndex:
    """One corpus in a temporary table with HNSW and GIN indexes, and the three queries on it.

    Build with :meth:`load`; :meth:`close` drops the table (and closes the connection if the
    index owns it). Query methods raise :class:`PostgresUnavailable` if the server fails.
    """

    def __init__(
        self,
        conn: psycopg.Connection,
        corpus_name: str,
        table: str,
        dim: int,
        rows: int,
        *,
        m: int,
        ef_construction: int,
        owns_connection: bool = False,
        load_seconds: float = 0.0,
        step_seconds: Mapping[str, float] | None = None,
    ) -> None:
        from psycopg import sql

        self.conn = conn
        self.corpus_name = corpus_name
        self.table = table
        self.hnsw_index = f"{table}_hnsw"
        self.gin_index = f"{table}_tsv_gin"
        self.dim = dim
        self.rows = rows
        self.m = m
        self.ef_construction = ef_construction
        self.owns_connection = owns_connection
        self.load_seconds = load_seconds
        # Seconds of each load step (copy, hnsw, gin, analyze), for the cost test.
        self.step_seconds = dict(step_seconds or {})
        self._table_sql = sql.Identifier("pg_temp", table)

    @classmethod
    def load(
        cls,
        conn: psycopg.Connection,
        corpus: Corpus,
        embeddings: CorpusEmbeddings,
        *,
        m: int = HNSW_M,
        ef_construction: int = HNSW_EF_CONSTRUCTION,
        owns_connection: bool = False,
    ) -> PgCorpusIndex:
        """Create the table, COPY the passages and their vectors in, build both indexes, ANALYZE."""
        psycopg = _import_psycopg()
        from psycopg import sql
        from psycopg.types.json import Jsonb

        clock = time.perf_counter()
        steps: dict[str, float] = {}
        row_of = {doc_id: row for row, doc_id in enumerate(embeddings.doc_ids)}
        missing = [d.doc_id for d in corpus.documents if d.doc_id not in row_of]
        if missing:
            raise SitegenError(f"{corpus.name}: no embedding for passage {missing[0]!r}")
        bad = [d.doc_id for d in corpus.documents if "\x00" in d.doc_id]
        if bad:
            raise PostgresUnavailable(
                f"{corpus.name}: passage id {bad[0]!r} has a NUL character PostgreSQL cannot store"
            )
        dim = int(embeddings.doc_vectors.shape[1])
        name = _table_name(corpus.name)
        table = sql.Identifier("pg_temp", name)

        def lap(step: str, since: float) -> float:
            now = time.perf_counter()
            steps[step] = now - since
            return now

        try:
            with conn.transaction():
                conn.execute("SET LOCAL max_parallel_maintenance_workers = 0")
                conn.execute("SET LOCAL client_min_messages = warning")
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
                conn.execute(
                    sql.SQL(
                        'CREATE TEMPORARY TABLE {} (id text COLLATE "C" PRIMARY KEY, title text NOT NULL, '
                        "content text NOT NULL, metadata jsonb NOT NULL, embedding vector({}) NOT NULL, "
                        "tsv tsvector GENERATED ALWAYS AS "
                        "(to_tsvector({}::regconfig, title || ' ' || content)) STORED)"
                    ).format(sql.Identifier(name), sql.Literal(dim), sql.Literal(TEXT_SEARCH_CONFIG))
                )
                mark = time.perf_counter()
                copy_sql = sql.SQL("COPY {} (id, title, content, metadata, embedding) FROM STDIN").format(table)
                with conn.cursor() as cur, cur.copy(copy_sql) as copy:
                    for doc in corpus.documents:
                        copy.write_row(
                            (
                                doc.doc_id,
                                _clean(doc.title),
                                _clean(doc.text),
                                Jsonb(dict(doc.metadata)),
                                format_vector(embeddings.doc_vectors[row_of[doc.doc_id]]),
                            )
                        )
                mark = lap("copy", mark)
                conn.execute(
                    sql.SQL(
                        "CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops) "
                        "WITH (m = {}, ef_construction = {})"
                    ).format(sql.Identifier(f"{name}_hnsw"), table, sql.Literal(m), sql.Literal(ef_construction))
                )
                mark = lap("hnsw", mark)
                conn.execute(
                    sql.SQL("CREATE INDEX {} ON {} USING gin (tsv)").format(sql.Identifier(f"{name}_tsv_gin"), table)
                )
                mark = lap("gin", mark)
                conn.execute(sql.SQL("ANALYZE {}").format(table))
                lap("analyze", mark)
        except psycopg.Error as exc:
            raise PostgresUnavailable(f"{corpus.name}: loading into PostgreSQL failed: {_one_line(exc)}") from None
        return cls(
            conn,
            corpus.name,
            name,
            dim,
            len(corpus.documents),
            m=m,
            ef_construction=ef_construction,
            owns_connection=owns_connection,
            load_seconds=time.perf_counter() - clock,
            step_seconds=steps,
        )

    def __enter__(self) -> PgCorpusIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Drop the table (a temporary table also goes with its connection)."""
        from psycopg import sql

        if not self.conn.closed:
            with contextlib.suppress(Exception):
                self.conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._table_sql))
            if self.owns_connection:
                self.conn.close()

    def sizes(self) -> dict[str, int]:
        """Bytes on disk: the table (``pg_table_size``: heap and TOAST), each index, and all indexes together."""
        psycopg = _import_psycopg()
        names = {"hnsw_bytes": self.hnsw_index, "gin_bytes": self.gin_index, "primary_key_bytes": f"{self.table}_pkey"}
        try:
            rows = self.conn.execute(
                "SELECT c.relname, pg_relation_size(c.oid), pg_table_size(c.oid), pg_indexes_size(c.oid) "
                "FROM pg_class AS c WHERE c.relnamespace = pg_my_temp_schema() AND c.relname = ANY(%s)",
                ([self.table, *names.values()],),
            ).fetchall()
        except psycopg.Error as exc:
            raise PostgresUnavailable(f"{self.corpus_name}: PostgreSQL query failed: {_one_line(exc)}") from None
        found = {relname: (relation, table, indexes) for relname, relation, table, indexes in rows}
        if self.table not in found:
            raise PostgresUnavailable(f"{self.corpus_name}: the table {self.table} is not loaded")
        sizes = {"table_bytes": int(found[self.table][1]), "indexes_bytes": int(found[self.table][2])}
        sizes.update({key: int(found[name][0]) for key, name in names.items() if name in found})
        return sizes

    def index_params(self) -> dict[str, Any]:
        return {
            "hnsw": {"opclass": "vector_cosine_ops", "m": self.m, "ef_construction": self.ef_construction},
            "gin": "tsv",
            "dimensions": self.dim,
            "rows": self.rows,
        }

    # -- queries

    @contextlib.contextmanager
    def _session(self, ef_search: int) -> Iterator[Any]:
        psycopg = _import_psycopg()
        try:
            with self.conn.transaction(), self.conn.cursor() as cur:
                cur.execute("SET LOCAL enable_seqscan = off")
                cur.execute("SET LOCAL jit = off")
                cur.execute("SET LOCAL client_min_messages = warning")  # empty tsquery NOTICEs
                cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
                yield cur
        except psycopg.Error as exc:
            raise PostgresUnavailable(f"{self.corpus_name}: PostgreSQL query failed: {_one_line(exc)}") from None

    def _ef(self, n: int, ef_search: int) -> int:
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        return min(max(ef_search, n), EF_SEARCH_MAX)

    def _query(
        self, template: str, params: dict[str, Any], ef: int, conditions: Sequence[Any] = ()
    ) -> list[tuple[Any, ...]]:
        from psycopg import sql

        where, values = _where(conditions)
        query = sql.SQL(template).format(table=self._table_sql, where=where)
        params = params | values
        with self._session(ef) as cur:
            cur.execute(query, params, prepare=False)
            return cur.fetchall()

    def match_count(self, text: str, conditions: Sequence[Any] = ()) -> int:
        """How many passages match at least one lexeme of the query: the rows pg-tsvector ranks."""
        rows = self._query(_MATCH_COUNT_SQL, {"text": _clean(text)}, EF_SEARCH, conditions)
        return int(rows[0][0])

    def vector_top(
        self, vector: np.ndarray, n: int, ef_search: int = EF_SEARCH, conditions: Sequence[Any] = ()
    ) -> list[tuple[str, float]]:
        """(id, cosine distance) of the n nearest passages the HNSW scan finds, distance ascending,
        ties by id; ``ef_search`` is raised to n (at most 1000). ``conditions`` (sitegen.filters)
        become a WHERE clause; pgvector 0.6 applies it to the ``ef_search`` rows the index returns."""
        ef = self._ef(n, ef_search)
        rows = self._query(_VECTOR_SQL, {"vector": format_vector(vector), "ef_search": ef, "n": n}, ef, conditions)
        return [(doc_id, float(distance)) for doc_id, distance in rows]

    def keyword_top(self, text: str, n: int, conditions: Sequence[Any] = ()) -> list[tuple[str, float]]:
        """(id, ts_rank_cd) of the n best passages matching any query lexeme, score descending, ties by id."""
        rows = self._query(_KEYWORD_SQL, {"text": _clean(text), "n": n}, self._ef(n, EF_SEARCH), conditions)
        return [(doc_id, float(score)) for doc_id, score in rows]

    def hybrid_top(
        self,
        vector: np.ndarray,
        text: str,
        n: int,
        *,
        k: float = 60.0,
        candidates: int = 20,
        weights: Sequence[float] = (1.0, 1.0),
        ef_search: int = EF_SEARCH,
        conditions: Sequence[Any] = (),
    ) -> list[HybridRow]:
        """RRF of the vector and keyword candidate lists, computed by the server in one statement."""
        if len(weights) != 2 or any(w <= 0 for w in weights):
            raise ValueError(f"need two positive weights (vector, keyword), got {list(weights)}")
        if candidates < 1 or k < 0:
            raise ValueError(f"candidates must be at least 1 and k non-negative, got {candidates} and {k}")
        ef = self._ef(max(n, candidates), ef_search)
        params = {
            "vector": format_vector(vector),
            "text": _clean(text),
            "ef_search": ef,
            "candidates": candidates,
            "k": float(k),
            "w_vector": float(weights[0]),
            "w_keyword": float(weights[1]),
            "n": n,
        }
        rows = self._query(_HYBRID_SQL, params, ef, conditions)
        return [HybridRow(doc_id, float(score), r1, r2) for doc_id, score, r1, r2 in rows]

    def explain_plans(self, vector: np.ndarray, text: str, n: int = 10) -> dict[str, list[ScanNode]]:
        """The scan nodes of ``EXPLAIN (ANALYZE, FORMAT JSON)`` for the vector, keyword and hybrid
        queries, run with the rankers' settings, so a reader sees which index each used."""
        ef = self._ef(max(n, 20), EF_SEARCH)
        plans = {}
        queries = {
            "vector": (_VECTOR_SQL, {"vector": format_vector(vector), "ef_search": ef, "n": n}),
            "keyword": (_KEYWORD_SQL, {"text": _clean(text), "n": n}),
            "hybrid": (
                _HYBRID_SQL,
                {
                    "vector": format_vector(vector),
                    "text": _clean(text),
                    "ef_search": ef,
                    "candidates": 20,
                    "k": 60.0,
                    "w_vector": 1.0,
                    "w_keyword": 1.0,
                    "n": n,
                },
            ),
        }
        for name, (template, params) in queries.items():
            rows = self._query("EXPLAIN (ANALYZE, FORMAT JSON) " + template, params, ef)
            document = rows[0][0]
            if isinstance(document, str):
                document = json.loads(document)
            plans[name] = _scan_nodes(document[0]["Plan"])
        return plans
