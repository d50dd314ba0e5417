"""A throwaway PostgreSQL server for the tests and the benchmarks: initdb in a temporary
directory, pg_ctl on a free port, removed afterwards.

The server binaries are Debian's (``/usr/lib/postgresql/<version>/bin``, not on
``PATH``; ``make test`` installs the ``postgresql`` package when they are missing).
``initdb`` refuses to run as root, so when this process is root the server runs as
the unprivileged ``postgres`` user that the package creates, and its directory is
given to that user.  Nothing is skipped when a piece is missing: :class:`PostgresServer`
raises :class:`ServerError` saying what to install.

The cluster listens on 127.0.0.1 only, with password authentication over TCP (so a
test can check that a refused password never shows in an error) and its Unix socket
inside the temporary directory.  Durability is off (``fsync``): it is thrown away.
What this process runs on it itself (:meth:`PostgresServer.sql`: each test's schema)
goes through one session of its own on that socket, not a ``psql`` each time.

A killed test run (a CI step's timeout, SIGKILL, ``kill`` of its process group) never
reaches :meth:`PostgresServer.stop`, and a server left running holds its memory and its
port for good.  So each server has a watchdog: a small process of its own session (a
signal to the test run's process group does not reach it) that waits for the end of a
pipe only the starting process holds, and then stops the server and removes its
directory if :meth:`~PostgresServer.stop` has not already.  The end of the pipe comes
however the starter ends, SIGKILL included: no polling, no pid files.
"""

from __future__ import annotations

import base64
import contextlib
import glob
import hashlib
import hmac
import itertools
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

__all__ = [
    "PostgresServer",
    "ServerError",
    "log_sections",
    "remove",
    "scram_secret",
    "server_binaries",
]

SUPERUSER = "lldsched"
UNPRIVILEGED = "postgres"  # the account Debian's postgresql package creates


class ServerError(RuntimeError):
    """The throwaway server could not be started (what is missing, and its log)."""


MEMORY = "/dev/shm"
"""A memory file system (tmpfs) on Linux: a directory there never touches the disk."""

MEMORY_ROOM = 2 << 30
"""Bytes :data:`MEMORY` must have free for an ``in_memory`` server to go there: a whole
test run's cluster (a schema for each of thousands of tests) grew to about 200 MB, and a
container's ``/dev/shm`` can be as small as 64 MB (Docker's default), where it would
fill up in the middle of a run."""


def server_binaries() -> Path:
    """The bin directory of the newest PostgreSQL installed the Debian way."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda path: int(Path(path).parts[-3]) if Path(path).parts[-3].isdigit() else 0,
    )
    if not found:
        raise ServerError(
            "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin: run `make test` "
            "(it installs Debian's postgresql) or `apt-get install postgresql`"
        )
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """One PostgreSQL cluster of its own; :meth:`dsn` names a fresh database in it.

    Use it as a context manager (or :meth:`start` / :meth:`stop`).  ``settings`` are
    passed to the server as ``-c name=value``.  ``scram_iterations``: the superuser's
    password is kept with its key derived that many times (:func:`scram_secret`), not
    PostgreSQL's 4096, which client and server both repeat at every log-in over TCP
    (about 3 ms of CPU each); None keeps PostgreSQL's.  Its log is ``server.log`` in its
    directory, removed with it: a failed test's report carries what the log said during
    the test (:func:`log_sections`, from the test suite's conftest).

    ``in_memory``: its directory is on a memory file system (:data:`MEMORY`) when that
    has room (:data:`MEMORY_ROOM`), else in the temporary directory as by default.  For
    a cluster that is thrown away and has durability off anyway (the test session's,
    tests/conftest.py): no disk is written, and its removal is a matter of memory.  On
    disk the session's cluster, some 12,000 files and 180 MB once the suite had run on
    it, took 8 to 36 s to remove at the end of each pytest-xdist worker on a loaded
    machine, in the teardown of the worker's last test (docs/decisions/parallel-tests.md, "The test
    suite in parallel workers").  Not for a benchmark that measures a durable server
    (``DURABLE`` in benchmarks/bench_cluster.py).
    """

    running: ClassVar[list[PostgresServer]] = []
    """The servers this process started and has not stopped, oldest first."""

    def __init__(
        self,
        *,
        settings: dict[str, str] | None = None,
        scram_iterations: int | None = None,
        in_memory: bool = False,
    ) -> None:
        self.bin = server_binaries()
        self.in_memory = in_memory
        self.password = secrets.token_hex(8)
        self.port = 0
        # Durability off: the cluster is thrown away with its directory, so a commit that a
        # crash of the machine would lose (fsync, synchronous_commit) or a page it would
        # tear (full_page_writes) costs nothing, and no statement waits for the disk.
        self.settings = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        self.settings.update(settings or {})
        self.scram_iterations = scram_iterations
        self._admin: Any = None  # the session sql() runs on (a psycopg connection), or None
        self._admin_pid = 0  # the process that opened it (a forked child opens its own)
        self._admin_lock = threading.Lock()
        self._root: Path | None = None
        self._databases = itertools.count(1)
        self._user: pwd.struct_passwd | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        if os.geteuid() == 0:
            try:
                self._user = pwd.getpwnam(UNPRIVILEGED)
            except KeyError:
                raise ServerError(
                    f"running as root, and there is no {UNPRIVILEGED!r} user to run "
                    "PostgreSQL as (initdb refuses root): install Debian's postgresql, "
                    f"which creates it, or `useradd --system {UNPRIVILEGED}`"
                ) from None

    @property
    def data(self) -> Path:
        if self._root is None:
            raise ServerError("the server is not started")
        return self._root / "data"

    def _run(self, *command: str) -> None:
        """Run a server tool as the server's user; ServerError with its output if it fails."""
        assert self._root is not None
        _run_as(self._user, self._root, *command)

    def start(self) -> PostgresServer:
        """initdb and start the server (waits until it accepts connections)."""
        self._root = Path(tempfile.mkdtemp(prefix="lldsched-pg-", dir=self._parent()))
        self._watchdog = subprocess.Popen(
            [sys.executable, "-I", __file__, "watch", str(self.bin), str(self._root)],
            stdin=subprocess.PIPE,
            start_new_session=True,  # out of the test run's process group (module docstring)
        )
        if self._user is not None:
            os.chown(self._root, self._user.pw_uid, self._user.pw_gid)
        pwfile = self._root / "pw"
        pwfile.write_text(self.password + "\n")
        if self._user is not None:
            os.chown(pwfile, self._user.pw_uid, self._user.pw_gid)
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER,
            "--pwfile", str(pwfile), "--auth-local=trust", "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C", "--no-sync",
        )  # fmt: skip
        pwfile.unlink()
        self.port = _free_port()
        self._pg_ctl_start()
        PostgresServer.running.append(self)
        if self.scram_iterations is not None:
            # The same password, its key derived this many times instead of PostgreSQL's
            # 4096: both ends of every TCP session repeat the derivation as it logs in.
            secret = scram_secret(self.password, self.scram_iterations)
            self.sql(f"ALTER ROLE {SUPERUSER} PASSWORD '{secret}'")
        return self

    def _parent(self) -> str | None:
        """Where its directory goes: :data:`MEMORY` if ``in_memory`` and it has
        :data:`MEMORY_ROOM` free, else (None) the temporary directory."""
        if self.in_memory and os.path.isdir(MEMORY):
            free = os.statvfs(MEMORY)
            if free.f_bavail * free.f_frsize >= MEMORY_ROOM:
                return MEMORY
        return None

    def _pg_ctl_start(self) -> None:
        assert self._root is not None
        options = " ".join(
            [f"-p {self.port}", "-c listen_addresses=127.0.0.1", f"-k {self._root}"]
            + [f"-c {name}={value}" for name, value in self.settings.items()]
        )
        self._run(
            str(self.bin / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(self.data),
            "-l", str(self._root / "server.log"), "-o", options,
        )  # fmt: skip

    def dsn(self, database: str = "postgres", *, password: str | None = None) -> str:
        """A libpq URI for ``database`` (the superuser's own password unless given)."""
        secret = self.password if password is None else password
        return f"postgresql://{SUPERUSER}:{secret}@127.0.0.1:{self.port}/{database}"

    def create_database(self, *, template: str | None = None) -> str:
        """A new database, empty or a copy of the database ``template`` (a dsn of this
        server, with no session open on it); returns its dsn."""
        name = f"test_{next(self._databases)}"
        copy = "" if template is None else f" TEMPLATE {template.rsplit('/', 1)[1]}"
        self.sql(f"CREATE DATABASE {name}{copy}")
        return self.dsn(name)

    def create_schema(self) -> str:
        """A new empty schema in the database ``postgres``; returns a dsn whose sessions
        use it (``search_path``).  Instant, where a database costs a checkpoint (about a
        second here): what each test gets."""
        name = f"test_{next(self._databases)}"
        self.sql(f"CREATE SCHEMA {name}")
        return f"{self.dsn()}?options=-csearch_path%3D{name}"

    def sql(self, statement: str) -> None:
        """Run ``statement`` (one or more, as ``psql -c`` runs them) as the superuser, on
        this process's session on the Unix socket (opened at the first call, and again
        after a restart or in a forked child): a round trip, where a ``psql`` process
        and its session took about 35 ms.  ServerError with PostgreSQL's words if it fails."""
        import psycopg  # here: the watchdog imports this module too, and needs no driver

        with self._admin_lock:
            if self._admin is None or self._admin.closed or self._admin_pid != os.getpid():
                self._admin = psycopg.connect(
                    host=str(self.data.parent), port=self.port, user=SUPERUSER,
                    dbname="postgres", autocommit=True,
                )  # fmt: skip
                self._admin_pid = os.getpid()
            try:
                self._admin.execute(statement)
            except psycopg.Error as exc:
                raise ServerError(f"{statement} failed: {exc}") from exc

    def _close_admin(self) -> None:
        """Close this process's session of :meth:`sql`, if it has one (a forked child's
        copy is its parent's: left alone)."""
        with self._admin_lock:
            if self._admin is not None and self._admin_pid == os.getpid():
                self._admin.close()
            self._admin = None

    def restart(self) -> None:
        """Stop the server (fast: every session is cut) and start it again, same port."""
        self.halt()
        self.resume()

    def halt(self, *, mode: str = "fast") -> None:
        """Stop the server, leaving its directory for :meth:`resume`: ``mode`` is
        ``pg_ctl``'s, ``"fast"`` (every session told and cut, a checkpoint written) or
        ``"immediate"`` (every server process killed at once, as a crash: the next start
        recovers from the write-ahead log)."""
        self._close_admin()
        self._run(str(self.bin / "pg_ctl"), "stop", "-w", "-m", mode, "-D", str(self.data))

    def resume(self) -> None:
        """Start the server :meth:`halt` stopped again, same port (waits until it accepts
        connections)."""
        self._pg_ctl_start()

    def log_size(self) -> int:
        """How many bytes the server has logged so far (0 when it is not running)."""
        try:
            return (self.data.parent / "server.log").stat().st_size
        except (ServerError, FileNotFoundError):
            return 0

    def log_since(self, offset: int) -> str:
        """What the server logged from byte ``offset`` on ("" when it is not running)."""
        try:
            with (self.data.parent / "server.log").open("rb") as log:
                log.seek(offset)
                return log.read().decode("utf-8", errors="replace")
        except (ServerError, FileNotFoundError):
            return ""

    def stop(self) -> None:
        """Stop the server at once and remove its directory (idempotent)."""
        if self in PostgresServer.running:
            PostgresServer.running.remove(self)
        self._close_admin()
        if self._root is not None:
            remove(self.bin, self._root)
            self._root = None
        if self._watchdog is not None:
            self._watchdog.communicate()  # the end of its pipe: it finds nothing left to do
            self._watchdog = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


LOG_SECTION_CHARS = 20_000
"""The most of a server's log one failed test's report carries (its end)."""


def log_sections(offsets: dict[int, int]) -> list[tuple[str, str]]:
    """A report section for each running server that logged something since ``offsets``
    (``id(server)`` -> :meth:`PostgresServer.log_size` at the test's start; a server
    started since counts from 0): a backend ended by a signal, a timeout or an
    administrator, said where the failure is read (the log is removed with the server,
    at the end of the session)."""
    sections = []
    for server in PostgresServer.running:
        text = server.log_since(offsets.get(id(server), 0))
        if text:
            title = f"PostgreSQL server log (port {server.port}) during the test"
            sections.append((title, text[-LOG_SECTION_CHARS:]))
    return sections


def scram_secret(password: str, iterations: int) -> str:
    """The SCRAM-SHA-256 secret PostgreSQL keeps for ``password`` (RFC 7677, in the form
    ``ALTER ROLE ... PASSWORD`` takes as it is), its key derived ``iterations`` times."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    stored = hashlib.sha256(hmac.digest(salted, b"Client Key", "sha256")).digest()
    server = hmac.digest(salted, b"Server Key", "sha256")
    text = [base64.b64encode(part).decode("ascii") for part in (salt, stored, server)]
    return f"SCRAM-SHA-256${iterations}:{text[0]}${text[1]}:{text[2]}"


def _run_as(user: pwd.struct_passwd | None, root: Path, *command: str) -> None:
    """Run a server tool in ``root`` as ``user`` (None: as this process); ServerError with
    its output and the server log's tail if it fails."""
    done = subprocess.run(
        command,
        user=None if user is None else user.pw_uid,
        group=None if user is None else user.pw_gid,
        extra_groups=None if user is None else [],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        log = root / "server.log"
        tail = log.read_text()[-2000:] if log.exists() else ""
        raise ServerError(
            f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}\n"
            f"server log:\n{tail}"
        )


def remove(bin_dir: Path, root: Path) -> None:
    """Stop the server in ``root`` at once, if one runs there, and remove ``root`` (its
    owner is the server's user: this process's, or the unprivileged one's)."""
    if not root.exists():
        return
    owner = root.stat().st_uid
    user = None if owner == os.geteuid() else pwd.getpwuid(owner)
    if (root / "data" / "postmaster.pid").exists():
        with contextlib.suppress(ServerError):
            _run_as(user, root, str(bin_dir / "pg_ctl"), "stop", "-w", "-m", "immediate",
                    "-D", str(root / "data"))  # fmt: skip
    shutil.rmtree(root, ignore_errors=True)


def _watch(bin_dir: Path, root: Path) -> None:
    """The watchdog (module docstring): wait for the starter's end, then clean up."""
    sys.stdin.buffer.read()  # returns at the end of the pipe: the starter stopped or died
    remove(bin_dir, root)


if __name__ == "__main__" and sys.argv[1:2] == ["watch"]:
    _watch(Path(sys.argv[2]), Path(sys.argv[3]))
