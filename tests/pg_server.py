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

A test process killed before it could stop its server (a CI step's ``timeout``, a
SIGKILL) left the server running and its directory behind, for ever.  Each directory
now names the process that started it (``owner.pid``), and every start first stops the
servers of owners that are gone (:func:`stop_orphans`); a live owner's server (another
pytest worker's) is left alone.  "Gone" includes a zombie (:func:`running`): a killed
owner and a stopped postmaster may wait a while for PID 1 to reap them.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

__all__ = ["PostgresServer", "ServerError", "running", "server_binaries", "stop_orphans"]

SUPERUSER = "lldsched"
UNPRIVILEGED = "postgres"  # the account Debian's postgresql package creates


class ServerError(RuntimeError):
    """The throwaway server could not be started (what is missing, and its log)."""


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


OWNER = "owner.pid"  # in a server's directory: the pid of the process that started it
PREFIX = "lldsched-pg-"


def running(pid: int) -> bool:
    """Whether process ``pid`` runs: it exists and is not a zombie.

    A process that exited stays a zombie until its parent reaps it, and ``os.kill(pid,
    0)`` still finds it.  An orphan's postmaster (its ``pg_ctl`` exited long ago) and a
    killed test run's workers are PID 1's to reap, and PID 1 here (a microVM's agent, not
    an init) reaps them lazily: 1.5 to 2 s after a postmaster stopped by
    :func:`stop_orphans` it was still one, which the clean-up's test, checking
    ``os.kill`` after the next start, counted as alive (when that start took less).  Read
    from ``/proc`` where there is one; elsewhere ``os.kill`` (a zombie counts)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]  # after the command's name
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel whether the pid exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's process: it runs
            return True
        return True
    return state not in ("Z", "X")  # zombie, or dead being reaped


def stop_orphans(bin_dir: Path, user: pwd.struct_passwd | None) -> list[Path]:
    """Stop the servers whose starting process is gone, remove their directories, and
    return those directories.  A directory with no ``owner.pid`` (an older one, or one
    being made) is left alone."""
    stopped = []
    for root in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            owner = int((root / OWNER).read_text())
        except (OSError, ValueError):
            continue
        if running(owner):
            continue
        if (root / "data" / "postmaster.pid").exists():
            subprocess.run(
                [
                    str(bin_dir / "pg_ctl"),
                    "stop",
                    "-w",
                    "-m",
                    "immediate",
                    "-D",
                    str(root / "data"),
                ],
                user=None if user is None else user.pw_uid,
                group=None if user is None else user.pw_gid,
                extra_groups=None if user is None else [],
                cwd=root,
                capture_output=True,
                check=False,
            )
        shutil.rmtree(root, ignore_errors=True)
        stopped.append(root)
    return stopped


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """One PostgreSQL cluster of its own; :meth:`dsn` names a fresh database in it.

    Use it as a context manager (or :meth:`start` / :meth:`stop`).  ``settings`` are
    passed to the server as ``-c name=value``.
    """

    def __init__(self, *, settings: dict[str, str] | None = None) -> None:
        self.bin = server_binaries()
        self.password = secrets.token_hex(8)
        self.port = 0
        self.settings = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        self.settings.update(settings or {})
        self._root: Path | None = None
        self._databases = itertools.count(1)
        self._user: pwd.struct_passwd | None = None
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
        user = None if self._user is None else self._user.pw_uid
        group = None if self._user is None else self._user.pw_gid
        done = subprocess.run(
            command,
            user=user,
            group=group,
            extra_groups=None if self._user is None else [],
            cwd=self._root,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            log = self._root / "server.log" if self._root else None
            tail = log.read_text()[-2000:] if log is not None and log.exists() else ""
            raise ServerError(
                f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}\n"
                f"server log:\n{tail}"
            )

    def start(self) -> PostgresServer:
        """initdb and start the server (waits until it accepts connections)."""
        stop_orphans(self.bin, self._user)
        self._root = Path(tempfile.mkdtemp(prefix=PREFIX))
        (self._root / OWNER).write_text(str(os.getpid()))
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
        return self

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
        """Run one statement as the superuser, through psql on the Unix socket."""
        self._run(
            str(self.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(self._root),
            "-p", str(self.port), "-U", SUPERUSER, "-d", "postgres", "-c", statement,
        )  # fmt: skip

    def restart(self) -> None:
        """Stop the server (fast: every session is cut) and start it again, same port."""
        self._run(str(self.bin / "pg_ctl"), "stop", "-w", "-m", "fast", "-D", str(self.data))
        self._pg_ctl_start()

    def stop(self) -> None:
        """Stop the server at once and remove its directory (idempotent)."""
        if self._root is None:
            return
        with contextlib.suppress(ServerError):
            self._run(
                str(self.bin / "pg_ctl"), "stop", "-w", "-m", "immediate", "-D", str(self.data)
            )
        shutil.rmtree(self._root, ignore_errors=True)
        self._root = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
