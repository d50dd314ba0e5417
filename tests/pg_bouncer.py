"""A throwaway PgBouncer in transaction pooling mode in front of a throwaway PostgreSQL
server (:mod:`tests.pg_server`), for the tests of the PostgreSQL store behind a pooler.

PgBouncer is Debian's package (``pgbouncer``, on ``PATH``).  When it is missing and this
process is root (as CI is, on a clean machine) it is installed here, as ``make test``
installs ``postgresql``; otherwise :class:`~tests.pg_server.ServerError` says what to
install.  Nothing is skipped.  PgBouncer refuses to run as root: it then runs as the
unprivileged ``postgres`` user, as the server does.

It listens on 127.0.0.1, a free port, ``pool_mode = transaction`` (a server connection is
a client's only for one transaction), and reaches the server through the server's Unix
socket (trusted there).  Clients log in with SCRAM-SHA-256, their secrets read from
``pg_shadow`` by ``auth_query``: each test gets a role of its own
(:meth:`PgBouncer.create_schema`) whose ``search_path`` is a schema of its own, set on
the role (``ALTER ROLE ... SET``), the way a pooled deployment sets it: PgBouncer refuses
a connection string's ``options``.  A role is a pool of its own, so one test's server
connections are never another's.

A killed test run never reaches :meth:`PgBouncer.stop`: as for the server, a watchdog of
its own session waits for the end of a pipe only the starting process holds, then ends
PgBouncer and removes its directory.
"""

from __future__ import annotations

import itertools
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType

from tests.pg_server import (
    SUPERUSER,
    UNPRIVILEGED,
    PostgresServer,
    ServerError,
    scram_secret,
)
from tests.pg_server import _free_port as free_port

__all__ = ["PgBouncer", "pgbouncer_binary"]


def pgbouncer_binary() -> str:
    """PgBouncer's path, installing Debian's package first when it is missing and this
    process may (root); ServerError saying what to install otherwise."""
    found = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")
    if found is None and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "pgbouncer"],
        ):
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise ServerError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
        found = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")
    if found is None:
        raise ServerError(
            "no pgbouncer on PATH: run `make test` as root (it installs Debian's pgbouncer) "
            "or `apt-get install pgbouncer`"
        )
    return found


class PgBouncer:
    """PgBouncer, transaction pooling, in front of ``server``; a context manager (or
    :meth:`start` / :meth:`stop`).  ``settings``: more ``[pgbouncer]`` settings."""

    def __init__(self, server: PostgresServer, *, settings: dict[str, str] | None = None) -> None:
        self.server = server
        self.binary = pgbouncer_binary()
        self.port = 0
        self.settings = settings or {}
        self._root: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._roles = itertools.count(1)
        self._prefix = f"pgb{secrets.token_hex(3)}_"  # one run's roles apart from another's
        self._user = pwd.getpwnam(UNPRIVILEGED) if os.geteuid() == 0 else None

    def start(self) -> PgBouncer:
        root = self._root = Path(tempfile.mkdtemp(prefix="lldsched-pgbouncer-"))
        self.port = free_port()
        settings = {
            "listen_addr": "127.0.0.1",
            "listen_port": str(self.port),
            "unix_socket_dir": "",
            "auth_type": "scram-sha-256",
            "auth_file": str(root / "users.txt"),
            "auth_user": SUPERUSER,
            "auth_query": "SELECT usename, passwd FROM pg_catalog.pg_shadow WHERE usename = $1",
            "pool_mode": "transaction",
            "default_pool_size": "10",
            "max_client_conn": "2000",
            "max_db_connections": "40",  # the server's 100, shared with the direct tests
            "server_idle_timeout": "1",  # a finished test's pool gives its connections back
            "logfile": str(root / "pgbouncer.log"),
            "pidfile": str(root / "pgbouncer.pid"),
            **self.settings,
        }
        database = f"* = host={self.server.data.parent} port={self.server.port}"
        lines = ["[databases]", database, "[pgbouncer]"]
        lines += [f"{name} = {value}" for name, value in settings.items()]
        (root / "pgbouncer.ini").write_text("\n".join(lines) + "\n")
        # auth_query's own log-in, as the superuser; the server trusts its Unix socket.
        (root / "users.txt").write_text(f'"{SUPERUSER}" "{self.server.password}"\n')
        if self._user is not None:
            for path in (root, root / "pgbouncer.ini", root / "users.txt"):
                os.chown(path, self._user.pw_uid, self._user.pw_gid)
        self._process = subprocess.Popen(
            [self.binary, str(root / "pgbouncer.ini")],
            user=None if self._user is None else self._user.pw_uid,
            group=None if self._user is None else self._user.pw_gid,
            extra_groups=None if self._user is None else [],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._watchdog = subprocess.Popen(
            [sys.executable, "-I", "-c", _WATCH, str(self._process.pid), str(root)],
            stdin=subprocess.PIPE,
            start_new_session=True,  # out of the test run's process group
        )
        self._wait_listening()
        return self

    def _wait_listening(self) -> None:
        """Until PgBouncer answers a log-in (ServerError with its log if it ends first)."""
        import psycopg

        from tests.waits import wait_until

        assert self._process is not None

        def answers() -> bool:
            if self._process is not None and self._process.poll() is not None:
                raise ServerError(f"pgbouncer ended ({self._process.returncode}):\n{self.log()}")
            try:
                psycopg.connect(
                    self.dsn_of(SUPERUSER, self.server.password), connect_timeout=2
                ).close()
            except psycopg.OperationalError:
                return False
            return True

        wait_until(answers, timeout=30, what=f"pgbouncer on port {self.port}", every=0.05)

    def dsn_of(self, user: str, password: str, database: str = "postgres") -> str:
        """A libpq URI through PgBouncer, as ``user``."""
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{database}"

    def create_schema(self, **role_settings: str) -> str:
        """A new role, a pool of its own, whose ``search_path`` is a new empty schema of
        its own (and ``role_settings``, each ``ALTER ROLE ... SET name = value``); returns
        a dsn through PgBouncer that logs in as it."""
        name = f"{self._prefix}{next(self._roles)}"
        password = secrets.token_hex(8)
        statements = [
            f"CREATE ROLE {name} LOGIN SUPERUSER PASSWORD '{scram_secret(password, 1)}'",
            f"CREATE SCHEMA {name} AUTHORIZATION {name}",
            f"ALTER ROLE {name} SET search_path = {name}",
        ]
        statements += [
            f"ALTER ROLE {name} SET {key} = '{value}'" for key, value in role_settings.items()
        ]
        self.server.sql("; ".join(statements))
        return self.dsn_of(name, password)

    def log(self) -> str:
        """What PgBouncer logged so far."""
        if self._root is None or not (self._root / "pgbouncer.log").exists():
            return ""
        return (self._root / "pgbouncer.log").read_text(errors="replace")

    def stop(self) -> None:
        """End PgBouncer and remove its directory (idempotent)."""
        if self._process is not None:
            self._process.terminate()
            self._process.wait()
            self._process = None
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
        if self._watchdog is not None:
            self._watchdog.communicate()  # the end of its pipe: nothing left to do
            self._watchdog = None

    def __enter__(self) -> PgBouncer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


# The watchdog (module docstring), run by ``python -I -c``: it imports nothing of the tests.
# A root already removed means stop() ran: the pid may be another process's by then.
_WATCH = """
import os, shutil, signal, sys
sys.stdin.buffer.read()  # returns at the end of the pipe: the starter stopped or died
if os.path.exists(sys.argv[2]):
    try:
        os.kill(int(sys.argv[1]), signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    shutil.rmtree(sys.argv[2], ignore_errors=True)
"""
