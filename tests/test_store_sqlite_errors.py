"""SQLite's own errors reach the user as a StoreError naming the file and the operation.

A registration on a full disk, a read-only database or a database locked by another
connection used to raise SQLite's ``sqlite3.OperationalError``, which names neither
the store's file nor what was being done, while the PostgreSQL store raises
:class:`~lldsched.errors.StoreError`.  Now ``SqliteTaskStore._using`` is the one place
that turns them into a StoreError chained from SQLite's (``__cause__`` kept), and the
scheduler refuses the registration (nothing registered) or, for a write after the
fact, says the outage once (``lldsched/core/store/outage.py``).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lldsched import FakeClock, FixedRate, Scheduler, SqliteTaskStore, StoreError
from lldsched.errors import StoreClosedError
from lldsched.stores.sqlite import file as sqlite_file
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import T0

FULL = "database or disk is full"


class FullAt:
    """Stands for a store's connection: the writes numbered in ``failing`` (1 for the
    first ``INSERT``, ``UPDATE`` or ``DELETE`` statement), and every write while ``full``
    is set, raise what SQLite raises on a full disk, inside the store (as a real full
    disk does); the rest go through.  ``refused`` counts the writes that raised."""

    def __init__(self, connection: sqlite3.Connection, *, failing: set[int]) -> None:
        self._connection = connection
        self.failing = failing
        self.full = False
        self.writes = 0
        self.refused = 0

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.lstrip().startswith(("INSERT", "UPDATE", "DELETE")):
            self.writes += 1
            if self.full or self.writes in self.failing:
                self.refused += 1
                raise sqlite3.OperationalError(FULL)
        return self._connection.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteTaskStore]:
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        yield store


def fill_disk(store: SqliteTaskStore, *, failing: set[int]) -> FullAt:
    full = FullAt(store._connection, failing=failing)  # type: ignore[arg-type]
    store._connection = full  # type: ignore[assignment]
    return full


def test_a_registration_on_a_full_disk_is_refused_naming_the_file_and_registers_nothing(
    store: SqliteTaskStore,
) -> None:
    scheduler = Scheduler(clock=FakeClock(T0), store=store)
    fill_disk(store, failing={1})
    with pytest.raises(StoreError) as caught:
        scheduler.schedule("tick", jobs.note, FixedRate(60), args=("tick",), id="tick")
    assert str(caught.value) == (
        f"the SQLite store {store.path!r} failed to save task 'tick': OperationalError: {FULL}"
    )
    cause = caught.value.__cause__
    assert isinstance(cause, sqlite3.OperationalError) and str(cause) == FULL
    assert scheduler.tasks() == [] and store.get("tick") is None and len(store) == 0
    # The disk has room again: the same registration goes through.
    scheduler.schedule("tick", jobs.note, FixedRate(60), args=("tick",), id="tick")
    assert [snapshot.task.id for snapshot in store.load_all()] == ["tick"]


def test_a_read_only_database_refuses_a_registration_with_a_store_error(
    store: SqliteTaskStore,
) -> None:
    """``PRAGMA query_only`` makes SQLite refuse writes as it does on a read-only file
    (the tests run as root, whom a file mode does not stop)."""
    scheduler = Scheduler(clock=FakeClock(T0), store=store)
    assert store._connection is not None
    store._connection.execute("PRAGMA query_only = ON")
    with pytest.raises(StoreError, match="readonly database") as caught:
        scheduler.schedule("tick", jobs.note, FixedRate(60), args=("tick",), id="tick")
    assert store.path in str(caught.value) and "save task 'tick'" in str(caught.value)
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    assert scheduler.tasks() == []


def test_a_database_locked_past_the_timeout_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, timeout=0) as store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        scheduler.schedule("tick", jobs.note, FixedRate(60), args=("tick",), id="tick")
        other = sqlite3.connect(path, isolation_level=None)  # another program holds the lock
        try:
            other.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreError, match="database is locked") as caught:
                store.delete("tick")
            assert f"{store.path!r} failed to delete task 'tick'" in str(caught.value)
        finally:
            other.close()
        assert [snapshot.task.id for snapshot in store.load_all()] == ["tick"]


_HOLDER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")  # another program's transaction, left open
print("held", flush=True)
sys.stdin.readline()
connection.execute("ROLLBACK")
print("let go", flush=True)
"""


def _busy_timeout(store: SqliteTaskStore) -> int:
    assert store._connection is not None
    with store._lock:
        (waits,) = store._connection.execute("PRAGMA busy_timeout").fetchone()
    return int(waits)


def test_a_lock_another_program_holds_past_the_timeout_is_waited_for_once(
    tmp_path: Path,
) -> None:
    # Every save waits under the scheduler's lock: while another program's transaction
    # held the file, each waited the whole timeout, and the scheduler with it (measured
    # at the default 5 s: a pause 14.9 s, metrics() 10 s, 3 runs of a 0.1 s task in 10 s).
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, timeout=1) as store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        scheduler.schedule("tick", jobs.note, FixedRate(60), args=("tick",), id="tick")
        with subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        ) as holder:  # fmt: skip
            assert holder.stdin is not None and holder.stdout is not None
            assert holder.stdout.readline() == "held\n"
            with pytest.raises(StoreError) as refused:
                scheduler.schedule("late", jobs.noop, FixedRate(60), id="late")
            assert str(refused.value) == (
                f"the SQLite store {str(path)!r} failed to save task 'late' (another program "
                "holds its write lock past the 1 s timeout: a transaction left open (`fuser` "
                "names the process); until a write gets through, the store's calls do not "
                "wait for it): OperationalError: database is locked"
            )
            assert _busy_timeout(store) == 0  # the next calls fail at once
            with pytest.raises(StoreError, match="database is locked"):
                store.delete("tick")
            assert [s.task.id for s in store.load_all()] == ["tick"]  # a read gets through
            assert _busy_timeout(store) == 0  # and is no write
            holder.stdin.write("\n")
            holder.stdin.flush()
            assert holder.stdout.readline() == "let go\n"
        scheduler.schedule("later", jobs.noop, FixedRate(60), id="later")
        assert _busy_timeout(store) == 1000  # a write got through: waits as before
        assert sorted(s.task.id for s in store.load_all()) == ["later", "tick"]
        scheduler.shutdown()


def test_a_failed_read_names_what_was_read(store: SqliteTaskStore) -> None:
    assert store._connection is not None
    store._connection.execute("DROP TABLE records")  # a file damaged under the store
    with pytest.raises(StoreError, match="failed to read the records: OperationalError"):
        store.records()


def test_a_full_disk_after_the_fact_is_an_outage_said_once_and_not_a_closed_store(
    store: SqliteTaskStore, caplog: pytest.LogCaptureFixture
) -> None:
    jobs.CALLS.clear()
    scheduler = Scheduler(clock=FakeClock(T0), store=store)
    scheduler.schedule("tick", jobs.note, FixedRate(60, start_delay=60), args=("tick",),
                       id="tick")  # fmt: skip
    # Full for the first run, by a switch: numbered, the writes it failed came to be
    # that run's finish and the second run's begin once the runs wrote otherwise.
    full = fill_disk(store, failing=set())
    with (
        caplog.at_level(logging.WARNING, logger="lldsched"),
        Stepper(scheduler, timeout=10) as steps,
    ):
        full.full = True
        steps.advance(60)
        full.full = False
        assert full.refused == 2  # the first run's begin and finish
        assert scheduler.metrics().store_ok is False  # an outage, not a closed store
        steps.advance(60)  # the second run writes: the outage ends
        assert scheduler.metrics().store_ok is True
    assert full.writes >= 4 and len(jobs.CALLS) == 2
    (error,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert error.exc_info is not None
    raised = error.exc_info[1]
    assert isinstance(raised, StoreError) and not isinstance(raised, StoreClosedError)
    assert f"{store.path!r} failed to save task 'tick'" in str(raised)
    assert isinstance(raised.__cause__, sqlite3.OperationalError)
    assert [r for r in caplog.records if "recovered" in r.getMessage()] != []
    stored = store.get("tick")
    assert stored is not None and stored.run_count == 2


def test_a_shared_store_names_the_file_and_the_write_too(tmp_path: Path) -> None:
    with SqliteTaskStore(tmp_path / "shared.db", shared=True) as store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        fill_disk(store, failing={1})
        with pytest.raises(
            StoreError, match=f"failed to save task 'tick': OperationalError: {FULL}"
        ):
            scheduler.schedule("tick", jobs.note, FixedRate(60), args=("tick",), id="tick")
        assert scheduler.tasks() == [] and store.get("tick") is None


def test_an_open_that_meets_a_lock_is_a_store_error_and_leaves_the_file_free(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    other = sqlite3.connect(path, isolation_level=None)  # another program, writing
    try:
        other.execute("BEGIN IMMEDIATE")  # the new file's creation cannot take its lock
        with pytest.raises(StoreError, match="database is locked") as caught:
            SqliteTaskStore(path, timeout=0)
        assert str(caught.value).startswith(f"the SQLite store {str(path)!r} failed to open")
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    finally:
        other.close()
    with SqliteTaskStore(path) as store:  # the refused open kept no claim on it
        assert len(store) == 0


def test_a_store_file_locked_by_another_program_is_said_locked_not_unreadable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path):
        pass
    other = sqlite3.connect(path, isolation_level=None)  # another program, holding it all
    try:
        other.execute("PRAGMA locking_mode = EXCLUSIVE")
        other.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreError, match="database is locked") as caught:
            SqliteTaskStore(path, timeout=0)
        assert str(caught.value).startswith(
            f"the SQLite store {str(path)!r} failed to read its header"
        )
        assert "not a readable" not in str(caught.value)
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    finally:
        other.close()
    with SqliteTaskStore(path) as store:  # the refused open kept no claim on it
        assert len(store) == 0


# -- a path that cannot be opened: the path and the likely cause, not SQLite's bare words --


@pytest.mark.parametrize("shared", [False, True], ids=["own", "shared"])
def test_a_store_in_a_folder_that_does_not_exist_says_which_folder(
    tmp_path: Path, shared: bool
) -> None:
    path = tmp_path / "not-made" / "deeper" / "tasks.db"
    with pytest.raises(StoreError) as raised:
        SqliteTaskStore(path, shared=shared)
    message = str(raised.value)
    assert repr(str(path)) in message
    assert f"the folder {str(tmp_path / 'not-made')!r} does not exist" in message
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)  # SQLite's kept
    assert not (tmp_path / "not-made").exists()  # nothing made on the way


def test_a_store_whose_folder_is_a_file_says_which_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a folder")
    path = tmp_path / "notes.txt" / "tasks.db"
    with pytest.raises(StoreError) as raised:
        SqliteTaskStore(path)
    message = str(raised.value)
    assert repr(str(path)) in message
    assert f"{str(tmp_path / 'notes.txt')!r} is a file, not a folder" in message
    assert (tmp_path / "notes.txt").read_text() == "not a folder"  # left as it was


def test_a_store_whose_path_is_a_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a folder, not a database file"):
        SqliteTaskStore(tmp_path)


def test_a_folder_this_process_may_not_write_is_named_with_its_permissions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As root every folder is writable: the permission check is stood in for (the
    # rest of the open is real, and fails as it does in a folder without write access).
    monkeypatch.setattr(os, "access", lambda path, mode, **_: os.fspath(path) != str(tmp_path))
    path = tmp_path / "tasks.db"
    assert sqlite_file.unopenable(str(path)) == (
        f"this process may not create files in the folder {str(tmp_path)!r} (its permissions)"
    )
