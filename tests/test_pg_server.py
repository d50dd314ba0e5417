"""The throwaway PostgreSQL server of the tests: a server whose test process was killed
before it could stop it is stopped, and its directory removed, by the next start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.pg_server import OWNER, PostgresServer, stop_orphans

CHILD = """
import sys, threading
from tests.pg_server import PostgresServer
server = PostgresServer().start()
print(server.data.parent, flush=True)
threading.Event().wait()
"""


def _postmaster(root: Path) -> int:
    return int((root / "data" / "postmaster.pid").read_text().split()[0])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


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
    assert _alive(postmaster) and root.exists()  # left behind, as before

    with PostgresServer() as server:  # the next start stops it first
        assert not root.exists() and not _alive(postmaster)
        assert (server.data.parent / OWNER).read_text() == str(os.getpid())
        assert stop_orphans(server.bin, None) == []  # a live owner's server is left alone
        assert server.data.exists()
