"""The throwaway PostgreSQL server of the tests: a server whose test process was killed
before it could stop it is stopped, and its directory removed, by the next start.

"Stopped" is judged by :func:`tests.pg_server.running`, which counts a zombie as gone:
the stopped postmaster of an orphan is PID 1's to reap, and PID 1 here reaps lazily (1.5 s
measured), while ``os.kill(pid, 0)`` still finds a zombie.  The first version of this test
checked ``os.kill`` after the next start and failed whenever that start was quicker than
the reaping (fresh-clone CI, two pytest workers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.pg_server import OWNER, PostgresServer, running, stop_orphans
from tests.waits import wait_until

CHILD = """
import sys, threading
from tests.pg_server import PostgresServer
server = PostgresServer().start()
print(server.data.parent, flush=True)
threading.Event().wait()
"""


def _postmaster(root: Path) -> int:
    return int((root / "data" / "postmaster.pid").read_text().split()[0])


def _state(pid: int) -> str:
    """The process's state letter in ``/proc`` (``Z``: a zombie)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_zombie_is_not_running_though_os_kill_still_finds_it() -> None:
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        wait_until(lambda: _state(exited.pid) == "Z", timeout=10, what="the child to exit")
        os.kill(exited.pid, 0)  # no error: the pid is still there, unreaped
        assert not running(exited.pid)
        assert running(os.getpid())
    finally:
        exited.wait()
    assert not running(exited.pid)  # reaped: gone


def test_a_server_whose_test_process_was_killed_is_stopped_by_the_next_start() -> None:
    repo = Path(__file__).resolve().parent.parent
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], cwd=repo, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        root = Path(child.stdout.readline().strip())  # '' if the child failed to start it
        assert (root / OWNER).read_text() == str(child.pid)
        postmaster = _postmaster(root)
    finally:
        child.send_signal(signal.SIGKILL)  # as a CI step's timeout kills: no clean-up ran
        child.wait()
    assert running(postmaster)  # left behind, as before (another pytest worker's start
    # may stop it from now on: it is an orphan)

    server = PostgresServer()
    stop_orphans(server.bin, server._user)  # what every start does first
    assert not root.exists() and not running(postmaster)  # at once, reaped or not
    with server:
        assert (server.data.parent / OWNER).read_text() == str(os.getpid())
        assert stop_orphans(server.bin, None) == []  # a live owner's server is left alone
        assert server.data.exists()
