"""The throwaway PostgreSQL server of the tests (tests/pg_server.py): a server whose test
process was killed before it could stop it is stopped, and its directory removed, by its
watchdog; one stopped the usual way is gone at once, and its watchdog with it; the test
session's keeps its files in memory where there is room."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests import pg_server
from tests.pg_server import PostgresServer, log_sections, remove, server_binaries

CHILD = """
import threading
from tests.pg_server import PostgresServer
server = PostgresServer().start()
print(server.data.parent, (server.data / "postmaster.pid").read_text().split()[0], flush=True)
threading.Event().wait()
"""


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_server_whose_test_process_was_killed_is_stopped_by_its_watchdog() -> None:
    repo = Path(__file__).resolve().parent.parent
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], cwd=repo, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    started = child.stdout.readline().split()  # [] if the child failed to start it
    root, postmaster = Path(started[0]), int(started[1])
    try:
        assert _running(postmaster)
        child.send_signal(signal.SIGKILL)  # as a CI step's timeout kills: no clean-up runs
        child.wait()
        # The watchdog shares the child's stdout: its end is the watchdog's end.
        assert child.stdout.read() == ""
        assert not root.exists()
        assert not _running(postmaster)
    finally:
        child.stdout.close()
        remove(server_binaries(), root)  # had the watchdog failed: not left to the machine


def test_a_server_stopped_the_usual_way_is_gone_with_its_watchdog() -> None:
    server = PostgresServer().start()
    root, watchdog = server.data.parent, server._watchdog
    assert watchdog is not None and watchdog.poll() is None  # watching while it runs
    server.stop()
    assert not root.exists()
    assert watchdog.returncode == 0  # it ended, and found nothing wrong to clean up
    server.stop()  # idempotent


def test_a_failed_tests_report_gets_what_the_server_logged_during_the_test() -> None:
    """The log is removed with the server: what it said of a connection it closed (here
    an administrator's, as a signal's or a timeout's) is put in the failed test's report
    (conftest's pytest_runtest_makereport, through log_sections)."""
    import psycopg

    with PostgresServer() as server:
        assert server in PostgresServer.running
        title = f"PostgreSQL server log (port {server.port}) during the test"
        # Another server of this process (the session's) has a section of its own.
        at = {id(other): other.log_size() for other in PostgresServer.running}
        assert title not in dict(log_sections(at))  # nothing logged since: no section
        with (
            psycopg.connect(server.dsn()) as victim,
            psycopg.connect(server.dsn(), autocommit=True) as admin,
        ):
            pid = victim.info.backend_pid
            admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))
        text = dict(log_sections(at))[title]
        assert f"[{pid}] FATAL:  terminating connection due to administrator command" in text
    assert server not in PostgresServer.running
    assert title not in dict(log_sections(at))


def _file_system(path: Path) -> str:
    """The type of the file system ``path`` is on: its innermost mount's (/proc/mounts)."""
    mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines()]
    return max((m for m in mounts if path.is_relative_to(m[0])), key=lambda m: len(m[0]))[1]


def _memory_has_room() -> bool:
    if not os.path.isdir("/dev/shm"):
        return False
    free = os.statvfs("/dev/shm")
    return free.f_bavail * free.f_frsize >= pg_server.MEMORY_ROOM


def test_the_sessions_server_keeps_its_files_in_memory_where_there_is_room(
    postgres_server: PostgresServer,
) -> None:
    """Its cluster is thrown away with durability off: on disk, the removal of its some
    12,000 files at the end of a worker's session took 8 to 36 s on a loaded machine."""
    if _memory_has_room():
        assert _file_system(postgres_server.data) == "tmpfs"
    else:
        assert postgres_server.data.is_relative_to(tempfile.gettempdir())


def test_a_server_in_memory_without_room_there_goes_to_the_temporary_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pg_server, "MEMORY_ROOM", 1 << 62)  # more than any machine has
    with PostgresServer(in_memory=True) as server:
        assert server.data.is_relative_to(tempfile.gettempdir())
        assert not server.data.is_relative_to(pg_server.MEMORY)
