"""An SQLite store's write interrupted between its statements leaves no transaction open
and no write lock held: the next call writes, and so do the other processes.

An exception from outside SQLite (a signal handler's, a ``KeyboardInterrupt``) can be
raised between any two bytecodes of a write: just after its ``BEGIN IMMEDIATE``, before
the ``try`` that would roll it back, or inside that rollback; a shared store's, just
after it took the write gate, before the ``try`` that lets it go.  Before, the
connection stayed inside that transaction: every later write of the store ran as a
savepoint of it, answered and never committed, and SQLite's write lock kept every other
process from writing, for good; a gate left held failed every later write of the store
("taken twice").

A real signal cannot be made to land at one given bytecode, so the interruption is
raised at the sqlite3 seam (the store's connection is made by a ``sqlite3.connect``
whose connection raises once its ``BEGIN IMMEDIATE`` has run) or as the gate is taken;
the file, its locks and the other connections are real.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lldsched import TaskStatus
from lldsched.stores.sqlite import SqliteTaskStore
from lldsched.stores.sqlite_gate import WriteGate
from tests.test_store_sqlite import record, snapshot, task


class Interrupting(sqlite3.Connection):
    """Raises ``KeyboardInterrupt`` once a ``BEGIN IMMEDIATE`` it ran returns, while
    ``armed``."""

    armed = False

    def execute(self, sql: str, *parameters: Any) -> sqlite3.Cursor:
        cursor = super().execute(sql, *parameters)
        if sql == "BEGIN IMMEDIATE" and Interrupting.armed:
            Interrupting.armed = False
            raise KeyboardInterrupt
        return cursor


@pytest.fixture
def interrupting(monkeypatch: pytest.MonkeyPatch) -> type[Interrupting]:
    connect = sqlite3.connect
    monkeypatch.setattr(Interrupting, "armed", False)
    monkeypatch.setattr(
        sqlite3, "connect", lambda *args, **kwargs: connect(*args, factory=Interrupting, **kwargs)
    )
    return Interrupting


def writable(path: Path) -> bool:
    """Whether another connection can take the file's write lock now."""
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:  # database is locked
        return False
    finally:
        other.close()


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_writes_after_one_interrupted_after_its_begin_are_committed(
    tmp_path: Path, interrupting: type[Interrupting], shared: bool
) -> None:
    """Before, the writes after it were savepoints of its transaction, never committed,
    and the file's write lock was held until the store was closed."""
    path = tmp_path / "store.db"
    with SqliteTaskStore(path, shared=shared) as store:
        store.save(snapshot(task(id="a")))
        interrupting.armed = True
        with pytest.raises(KeyboardInterrupt):
            store.save(snapshot(task(id="a"), TaskStatus.PAUSED), record("a", 0))
        assert writable(path)
        store.save(snapshot(task(id="b")))
        store.save(snapshot(task(id="a"), TaskStatus.PAUSED), record("a", 1))
    with SqliteTaskStore(path, shared=shared) as again:  # what the file holds
        row = again.get("a")
        assert row is not None and row.status is TaskStatus.PAUSED
        assert again.get("b") is not None
        assert [r.attempt for r in again.records("a")] == [1]  # the interrupted one undone


def test_a_shared_write_interrupted_once_it_took_the_gate_lets_it_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the gate stayed held: every later write of the store failed ("taken
    twice"), and the other processes' writes waited for it."""
    path = tmp_path / "store.db"
    acquire = WriteGate.acquire
    armed = [True]

    def taking(gate: WriteGate) -> float:
        left = acquire(gate)
        if armed:
            armed.clear()
            raise KeyboardInterrupt
        return left

    with SqliteTaskStore(path, shared=True) as store, SqliteTaskStore(path, shared=True) as other:
        store.save(snapshot(task(id="a")))
        monkeypatch.setattr(WriteGate, "acquire", taking)
        with pytest.raises(KeyboardInterrupt):
            store.save(snapshot(task(id="a"), TaskStatus.PAUSED))
        other.save(snapshot(task(id="b")))
        store.save(snapshot(task(id="a"), TaskStatus.PAUSED))
        row = other.get("a")
        assert row is not None and row.status is TaskStatus.PAUSED
