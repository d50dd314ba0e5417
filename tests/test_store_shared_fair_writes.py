"""Shared SQLite writers take the write lock in turn (lldsched/stores/sqlite/gate.py;
docs/decisions/persistence.md, "Shared SQLite writers take the write lock in turn").

SQLite's busy handler sleeps and tries again: a writer whose transactions come back to
back finds the lock free at each of its own tries, a waiter almost never, and the
waiter's write failed with ``StoreError`` ("database is locked") past its ``timeout``
while the other went on writing.  Every write of a shared store now passes the store's
gate first, an ``flock`` lock: a write tries for it for 50 ms, then blocks for it, and
the kernel wakes it as soon as the lock is let go.

The other writer here is another process (a thread of this one would take turns with
the test's thread for the interpreter's lock as well, which decides who writes when):
each of its transactions holds the lock for a moment of computation, and it begins the
next one at once, through a gate of its own as any shared store's writes do.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import SqliteTaskStore, StoreError
from lldsched.stores.sqlite.gate import THREAD, WRITE, WriteLockTimeout, gate_for
from lldsched.stores.sqlite.rows import immediate
from tests.forking import in_child

ROOT = Path(__file__).resolve().parent.parent

HANG_GUARD = 60.0
"""Seconds a thread or process may take to end before the test says it hangs (at once
when fixed)."""

# Holds the write lock for a moment of work (no sleep): some 30 ms (a batch of writes on a
# slow disk may), against the 1 to 100 ms SQLite's busy handler sleeps between tries.
_HOLD = """
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000)
SELECT count(*) FROM c
"""


def back_to_back(path: str) -> None:
    """The other process: write transactions back to back on ``path`` until its standard
    input ends; says ``writing`` once it wrote a few."""
    connection = sqlite3.connect(path, isolation_level=None)
    gate = gate_for(path, HANG_GUARD)
    writes = 0
    while not select.select([sys.stdin], [], [], 0)[0]:  # readable: ended
        with immediate(connection, gate):
            connection.execute(_HOLD).fetchone()
        writes += 1
        if writes == 3:
            print("writing", flush=True)


class BackToBack:
    """:func:`back_to_back` in a process of its own, on ``path``, while inside."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> BackToBack:
        found = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.test_store_shared_fair_writes", str(self.path)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": found},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == "writing\n"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        assert self.process.wait(HANG_GUARD) == 0
        self.process.stdout.close()  # unclosed, a ResourceWarning (under -X dev)


def writing(store: SqliteTaskStore) -> tuple[threading.Thread, list[BaseException]]:
    """A thread making one write of ``store`` (a ``release``), started; what it raised."""
    failed: list[BaseException] = []

    def write() -> None:
        try:
            store.release(task_id="a", token=1)
        except BaseException as exc:  # for the test's thread to raise
            failed.append(exc)

    thread = threading.Thread(target=write)
    thread.start()
    return thread, failed


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteTaskStore]:
    with SqliteTaskStore(tmp_path / "tasks.db", shared=True, timeout=2.0) as opened:
        yield opened


def test_a_writer_kept_out_by_back_to_back_writes_gets_the_lock(store: SqliteTaskStore) -> None:
    # Each time against another process just begun: a waiter that got in once is the one
    # writing back to back then (SQLite's busy handler favours whoever wrote last).
    for _ in range(5):  # each is one write transaction; before, most failed past 2 s
        with BackToBack(Path(store.path)) as other:
            store.release(task_id="a", token=1)
            assert other.process.poll() is None  # it went on writing all along


def test_a_write_that_cannot_pass_the_gate_within_the_timeout_names_the_file_and_the_wait(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True, timeout=0.1) as store:
        holder = gate_for(str(path), HANG_GUARD)  # another process's, in its write
        assert holder is not None
        holder.acquire()
        with pytest.raises(StoreError) as raised:
            store.release(task_id="a", token=1)
        said = str(raised.value)
        assert repr(store.path) in said
        assert "release the claim of task 'a'" in said
        assert "not obtained within the store's timeout=0.1 s" in said
        assert repr(str(path.resolve()) + WRITE) in said
        assert "timeout" in said and "waited" in said
        holder.release()  # the gate's thread, still waiting, lets it go: the next write gets in
        store.release(task_id="a", token=1)
        holder.close()


def test_a_store_closed_while_its_write_waits_for_the_lock_lets_it_go(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    store = SqliteTaskStore(path, shared=True, timeout=0.1)
    holder = gate_for(str(path), HANG_GUARD)
    assert holder is not None
    holder.acquire()
    with pytest.raises(StoreError, match="timeout"):
        store.release(task_id="a", token=1)
    gate = store._gate
    assert gate is not None and gate._thread is not None
    store.close()  # its gate's thread still waits for the lock
    holder.release()
    gate._thread.join(HANG_GUARD)
    assert not gate._thread.is_alive()
    with SqliteTaskStore(path, shared=True, timeout=0.1) as again:  # nobody holds the line
        again.release(task_id="a", token=1)
    holder.close()


def test_a_lock_that_fails_otherwise_fails_the_write_naming_it_and_the_next_one_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True, timeout=HANG_GUARD) as store:
        gate = store._gate
        assert gate is not None
        holder = gate_for(str(path), HANG_GUARD)  # another process's, in its write
        assert holder is not None
        holder.acquire()
        taken = gate._flock

        def failing(fd: int, operation: int) -> None:
            if operation == fcntl.LOCK_EX:  # the gate's thread, blocking
                raise OSError(errno.ENOLCK, "No locks available")
            taken(fd, operation)

        monkeypatch.setattr(gate, "_flock", failing)
        with pytest.raises(StoreError) as raised:  # before: the timeout, 60 s later
            store.release(task_id="a", token=1)
        assert "No locks available" in str(raised.value)
        assert repr(str(path.resolve()) + WRITE) in str(raised.value)
        monkeypatch.setattr(gate, "_flock", taken)
        holder.release()
        holder.close()
        store.release(task_id="a", token=1)  # before: its thread was gone, still "busy"
        holder = gate_for(str(path), HANG_GUARD)
        assert holder is not None
        holder.acquire()
        release, failed = writing(store)  # blocks: a new thread of the gate's takes the lock
        while gate._thread is None or not gate._busy:
            assert release.is_alive()
        holder.release()
        release.join(HANG_GUARD)
        assert not release.is_alive() and not failed
        assert gate._thread is not None and gate._thread.name == THREAD
        holder.close()


def test_a_child_forked_during_a_write_closing_the_store_leaves_the_parents_lock(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True, timeout=0) as store:
        gate = store._gate
        assert gate is not None
        gate.acquire()  # a write under way in another thread as the server forks
        assert in_child(store.close) == "None"  # the fork's copy closed, at its exit say
        other = gate_for(str(path), 0)  # another process's store
        assert other is not None
        with pytest.raises(WriteLockTimeout):  # still the parent's: before, let go
            other.acquire()
        gate.release()
        other.acquire()
        other.release()
        other.close()


def one_write(path: str) -> None:
    """A process with one write to make on the shared store at ``path``: says ``open``,
    makes it once its standard input gives a line, then says ``written``."""
    with SqliteTaskStore(path, shared=True, timeout=HANG_GUARD) as opened:
        print("open", flush=True)
        sys.stdin.readline()
        opened.release(task_id="a", token=1)
        print("written", flush=True)


def blocked_on(sidecar: Path, pid: int) -> bool:
    """Whether process ``pid`` waits, blocked, for the ``flock`` lock of ``sidecar``
    (``/proc/locks`` lists a blocked waiter with ``->``)."""
    inode = f":{os.stat(sidecar).st_ino} "
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and f" {pid} " in line and inode in line:
            return True
    return False


def stopped(pid: int) -> bool:
    """Whether every thread of process ``pid`` is stopped (a signal's stop is taken by
    each thread as it next runs: one woken by the lock let go first may have taken it)."""
    tasks = Path(f"/proc/{pid}/task").iterdir()
    return all((task / "stat").read_text().rsplit(")", 1)[1].split()[0] == "T" for task in tasks)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads Linux's /proc/locks")
def test_a_process_stalled_while_it_waits_for_the_write_lock_holds_no_one_up(
    tmp_path: Path,
) -> None:
    # A flock waiter that is stopped holds nothing: the others' writes go on (the lease
    # takeover that runs its tasks included), where a turnstile lock it held while in line
    # kept every other writer behind it for the whole stall.
    path = tmp_path / "tasks.db"
    SqliteTaskStore(path, shared=True).close()
    found = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    stalled = subprocess.Popen(
        [sys.executable, "-m", "tests.test_store_shared_fair_writes", "--one", str(path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": found},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert stalled.stdin is not None and stalled.stdout is not None
    try:
        assert stalled.stdout.readline() == "open\n"
        holder = gate_for(str(path), HANG_GUARD)  # another process's, in its write
        assert holder is not None
        holder.acquire()
        stalled.stdin.write("go\n")
        stalled.stdin.flush()
        sidecar = Path(str(path.resolve()) + WRITE)
        deadline = time.monotonic() + HANG_GUARD
        while not blocked_on(sidecar, stalled.pid):  # it waited its patience, now blocked
            assert time.monotonic() < deadline, "the write never waited for the lock"
            assert stalled.poll() is None
        stalled.send_signal(signal.SIGSTOP)
        while not stopped(stalled.pid):  # each thread left its wait, holding nothing
            assert time.monotonic() < deadline, "the process never stopped"
        holder.release()
        with SqliteTaskStore(path, shared=True, timeout=2.0) as other:
            other.release(task_id="a", token=1)  # before: "not obtained within" 2 s
            other.release(task_id="a", token=1)
        holder.close()
    finally:
        stalled.send_signal(signal.SIGCONT)  # not once reaped: its pid is free
    assert stalled.stdout.readline() == "written\n"  # resumed, it wrote in its turn
    stalled.stdin.close()
    assert stalled.wait(HANG_GUARD) == 0
    stalled.stdout.close()  # unclosed, a ResourceWarning (under -X dev)


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        one_write(sys.argv[2])
    else:
        back_to_back(sys.argv[1])
