"""A verb's hold inside another on the same store (SQLite and PostgreSQL) is the outer one's.

A hold is one transaction (:func:`lldsched.storecalls.verb_held`); one opened while
another is under way on the store joins it: its writes are the outer transaction's,
stored or not with them and said once, by the outer hold, and nothing the outer hold
holds is let go at the inner one's end.  PostgreSQL did so already
(``PostgresTaskStore._hold_inside``).  On SQLite the inner hold's ``BEGIN IMMEDIATE``
failed ("cannot start a transaction within a transaction"), taken for a write lock not
had within ``timeout``: the block ran in the outer transaction all the same, but the
failed begin let the write gate go (:mod:`lldsched.stores.sqlite.gate`), which the outer
hold held, so the other processes' writes passed it and waited in SQLite's busy handler;
and an error raised inside the inner hold came chained to SQLite's.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from lldsched import SqliteTaskStore, TaskStatus
from lldsched.storecalls import HoldNotCommitted
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.stores.sqlite.gate import WRITE
from tests.test_store_hold_messages import filling, paused
from tests.test_store_sqlite import snapshot, task

Store = SqliteTaskStore | PostgresTaskStore
Held = Callable[[], bool]  # True while another writer of the database would have to wait


def gate_taken(path: str) -> bool:
    """The SQLite store's write gate at ``path`` is taken: another writer would wait."""
    sidecar = os.open(os.path.realpath(path) + WRITE, os.O_RDWR)
    try:
        fcntl.flock(sidecar, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(sidecar)  # a lock taken here goes with the descriptor
    return False


def rows_locked(dsn: str, ids: list[str]) -> bool:
    """Every row of ``ids`` is locked: another session's write of it would wait."""
    with psycopg.connect(dsn) as other:
        for task_id in ids:
            try:
                with other.transaction():
                    other.execute(
                        "SELECT id FROM tasks WHERE id = %s FOR UPDATE NOWAIT", (task_id,)
                    )
            except psycopg.errors.LockNotAvailable:
                continue
            return False
    return True


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store, Held]]:
    """A shared store, another on its database (to read what was stored), and whether
    the rows of tasks ``a`` and ``b`` are held from other writers."""
    if request.param == "sqlite":
        path = str(tmp_path / "tasks.db")
        with (
            SqliteTaskStore(path, shared=True) as store,
            SqliteTaskStore(path, shared=True) as other,
        ):
            yield store, other, lambda: gate_taken(path)
        return
    open_store = request.getfixturevalue("open_store")
    store = open_store()
    yield store, open_store(), lambda: rows_locked(store._dsn, ["a", "b"])


def test_a_hold_inside_a_hold_is_the_outer_ones_and_lets_nothing_go(
    stores: tuple[Store, Store, Held],
) -> None:
    """Before, on SQLite, the inner hold's end left the write gate free while the outer
    hold was still under way, and its block's error came chained to SQLite's "cannot
    start a transaction within a transaction"."""
    store, other, held = stores
    for task_id in ("a", "b"):
        store.save(snapshot(task(id=task_id)))
    assert not held()
    with store.verb_held("a"):
        store.save(paused("a"))
        with pytest.raises(ValueError, match="the verb's own") as raised, store.verb_held("b"):
            store.save(paused("b"))
            raise ValueError("the verb's own")
        assert held()  # still, until the outer hold's end
        assert raised.value.__context__ is None
        row = other.get("b")
        assert row is not None and row.status is TaskStatus.SCHEDULED  # not stored yet
    assert not held()
    for task_id in ("a", "b"):
        row = other.get(task_id)
        assert row is not None and row.status is TaskStatus.PAUSED, task_id


def test_an_sqlite_hold_inside_a_hold_is_not_stored_when_the_outer_one_is_not(
    tmp_path: Path,
) -> None:
    """The inner hold's writes are the outer transaction's: a full disk that rolls it back
    after the inner hold ended takes them too, and the outer hold names them, to be
    written again (PostgreSQL: ``tests/test_store_hold_messages.py``)."""
    with filling(tmp_path / "tasks.db") as store:
        store.save(snapshot(task(id="b")))
        store.failing = True
        with pytest.raises(HoldNotCommitted) as raised, store.verb_held("up"):
            store.save(paused("up"))
            with store.verb_held("b"):
                store.save(paused("b"))
            store.save(paused("d"))  # fills the disk: SQLite rolls the whole hold back
        store.failing = False
        assert set(raised.value.written) == {"up", "b"}
        assert "failed to save task 'd' inside it" in str(raised.value)
        for task_id in ("up", "b"):
            row = store.get(task_id)
            assert row is not None and row.status is TaskStatus.SCHEDULED, task_id
