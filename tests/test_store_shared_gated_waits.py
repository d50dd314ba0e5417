"""A shared SQLite store's writes at open pass its gate, and a gated write waits within
the store's ``timeout`` in all (lldsched/stores/sqlite/gate.py; docs/decisions/persistence.md,
"Shared SQLite writers take the write lock in turn").

Writes at open (creating the file, migrating it, catching the record counter up) took
SQLite's lock without the gate, under its busy handler alone: a store opened while the
others wrote back to back could be kept out past its ``timeout``, its open failing.
Now they pass the gate as every other shared write does: with the lock held by another
process's write and ``timeout=0`` (one try, no wait) the open fails naming the lock,
where before it wrote past it.

A gated write then waited in SQLite's busy handler for a writer that takes no gate (an
older release, the ``sqlite3`` shell) up to ``timeout`` again, twice the timeout in all.
Now SQLite's wait is given what the gate left of it.

Where the interpreter's exit starts no thread (Python 3.12.0 to 3.12.2), a write that
waited its patience tries for the lock on its own thread, within the same timeout.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lldsched import SqliteTaskStore, StoreError
from lldsched.stores.sqlite import SCHEMA_VERSION
from lldsched.stores.sqlite.gate import PATIENCE, THREAD, WRITE, WriteGate, gate_for
from tests.exitthreads import refusing_threads
from tests.test_store_shared_fair_writes import writing
from tests.waits import wait_until

HANG_GUARD = 60.0
"""Seconds a thread may take to end before the test says it hangs (at once when fixed)."""


def held(path: Path) -> WriteGate:
    """Another process's gate on ``path``, in its write: the lock taken."""
    holder = gate_for(str(path), HANG_GUARD)
    assert holder is not None
    holder.acquire()
    return holder


def refused_open(path: Path) -> str:
    """What opening ``path`` shared with ``timeout=0`` (one try for the lock) raised."""
    with pytest.raises(StoreError) as raised:  # before: opened, the write past the gate
        SqliteTaskStore(path, shared=True, timeout=0)
    said = str(raised.value)
    assert repr(str(path.resolve()) + WRITE) in said and "not obtained within" in said
    return said


def test_creating_a_shared_store_passes_the_gate(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    holder = held(path)
    refused_open(path)
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)
    connection.close()  # nothing written: the next opener creates it whole
    holder.release()
    with SqliteTaskStore(path, shared=True, timeout=0) as store:
        assert store.load_all() == []
    holder.close()


def test_migrating_a_shared_store_passes_the_gate(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    SqliteTaskStore(path, shared=True).close()
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(
        "BEGIN; ALTER TABLE tasks DROP COLUMN blocked_due;"
        " ALTER TABLE tasks DROP COLUMN blocked_slot; ALTER TABLE tasks DROP COLUMN blocked_next;"
        " ALTER TABLE tasks DROP COLUMN grid; ALTER TABLE tasks DROP COLUMN resume_at;"
        " PRAGMA user_version = 7; COMMIT;"
    )
    holder = held(path)
    assert "cannot migrate" in refused_open(path)
    assert connection.execute("PRAGMA user_version").fetchone() == (7,)  # left as it was
    holder.release()
    SqliteTaskStore(path, shared=True, timeout=0).close()
    assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    connection.close()
    holder.close()


def test_catching_the_record_counter_up_at_a_shared_open_passes_the_gate(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    SqliteTaskStore(path, shared=True).close()
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute(  # a record an unshared store wrote: it never moves the counter
        "INSERT INTO records (task_id, seq, attempt, due, slot, worker, started, finished,"
        " ok, timed_out) VALUES ('a', 1, 1, 0, 0, 0, 0, 0, 1, 0)"
    )
    counter = "SELECT value FROM counters WHERE name = 'record'"
    holder = held(path)
    refused_open(path)
    assert connection.execute(counter).fetchone() == (0,)
    holder.release()
    SqliteTaskStore(path, shared=True, timeout=0).close()
    assert connection.execute(counter).fetchone() == (1,)
    connection.close()
    holder.close()


@pytest.mark.parametrize("timeout", [HANG_GUARD, 0.06, 0])
def test_sqlites_own_wait_in_a_shared_store_leaves_the_gate_its_patience(
    tmp_path: Path, timeout: float
) -> None:
    # A write that got the gate within its patience waits for SQLite's lock (held by a
    # writer that takes no gate) at most the rest of the timeout, with no statement more.
    with SqliteTaskStore(tmp_path / "tasks.db", shared=True, timeout=timeout) as store:
        gate, connection = store._gate, store._connection
        assert gate is not None and connection is not None
        assert gate.busy + min(PATIENCE, timeout / 2) == timeout
        (busy,) = connection.execute("PRAGMA busy_timeout").fetchone()
        assert busy == int(gate.busy * 1000)  # before: the whole timeout


def test_a_write_that_got_the_gate_at_once_leaves_sqlites_wait_as_it_is(
    tmp_path: Path,
) -> None:
    with SqliteTaskStore(tmp_path / "tasks.db", shared=True, timeout=HANG_GUARD) as store:
        said: list[str] = []
        connection = store._connection
        assert connection is not None
        connection.set_trace_callback(said.append)
        store.release(task_id="a", token=1)
        connection.set_trace_callback(None)
        assert not [statement for statement in said if "busy_timeout" in statement]


def test_a_gated_write_waits_for_a_writer_without_the_gate_only_what_its_timeout_left(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True, timeout=HANG_GUARD) as store:
        gate, connection = store._gate, store._connection
        assert gate is not None and connection is not None
        said: list[str] = []
        connection.set_trace_callback(said.append)
        holder = held(path)  # another process's gated write
        thread, failed = writing(store)
        wait_until(lambda: gate._busy, timeout=HANG_GUARD, what="the write to wait its patience")
        ungated = sqlite3.connect(path, isolation_level=None)  # an older release's writer
        ungated.execute("BEGIN IMMEDIATE")
        holder.release()  # the write gets the gate, then waits for SQLite's lock
        wait_until(lambda: "BEGIN IMMEDIATE" in said, timeout=HANG_GUARD, what="the write's BEGIN")
        ungated.execute("ROLLBACK")
        thread.join(HANG_GUARD)
        assert not thread.is_alive() and not failed
        connection.set_trace_callback(None)
        pragmas = [s for s in said if s.startswith("PRAGMA busy_timeout")]
        assert len(pragmas) == 2, said  # before: none, SQLite's wait the whole 60 s again
        given = int(pragmas[0].rsplit(" ", 1)[1])
        # It waited its patience for the gate, then blocked: SQLite's wait is given the
        # rest, then the connection's own again.
        assert 0 <= given < (HANG_GUARD - PATIENCE) * 1000
        assert pragmas[1] == f"PRAGMA busy_timeout = {int(gate.busy * 1000)}"
        begun = said.index("BEGIN IMMEDIATE")
        assert said[begun - 1] == pragmas[0] and said[begun + 1] == pragmas[1]
        assert connection.execute("PRAGMA busy_timeout").fetchone() == (int(gate.busy * 1000),)
        ungated.close()
        holder.close()


def test_a_write_at_the_exit_that_refuses_the_gates_thread_waits_within_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the interpreter's exit on Python 3.12.0 to 3.12.2 no thread starts
    (lldsched/threadstarts.py): a write that waited its patience for the lock another
    process held (the exit's rewrite of the rows an outage left stale, a run's settle as
    the process exits) raised that ``RuntimeError`` from the gate, and the gate stayed
    "busy", its thread never started: every later write of the store waited its whole
    timeout.  Now it goes on trying for the lock on its own thread, within the timeout."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True, timeout=0.1) as store:
        holder = held(path)
        refused = refusing_threads(monkeypatch)
        with pytest.raises(StoreError, match=r"not obtained within the store's timeout=0\.1 s"):
            store.release(task_id="a", token=1)  # before: RuntimeError
        assert refused == [THREAD]
        holder.release()
        store.release(task_id="a", token=1)  # before: the timeout, the gate "busy" for good
        holder.close()


def test_a_write_at_the_exit_gets_the_lock_let_go_past_its_patience(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True, timeout=HANG_GUARD) as store:
        gate = store._gate
        assert gate is not None
        holder = held(path)
        refused = refusing_threads(monkeypatch)
        tried = gate._try

        def trying() -> bool:  # the other process ends its write once the thread was refused
            if refused and holder._holder is not None:
                holder.release()
            return tried()

        monkeypatch.setattr(gate, "_try", trying)
        store.release(task_id="a", token=1)  # got on this thread, past the patience
        assert refused == [THREAD]
        assert holder._holder is None
        holder.close()
