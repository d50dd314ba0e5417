"""A shared SQLite store's verb hold whose transaction SQLite rolled back refuses the calls
after (lldsched/stores/sqlite/connection.py, ``_Using``; docs/decisions/persistence.md,
"Persistence").

SQLite rolls a whole transaction back when a statement inside fails with a full disk or
an I/O error.  Inside a verb's hold each later call then ran in a transaction of its own:
a write passed the write gate, which the hold held (``flock`` on a descriptor that holds
it succeeds), committed alone, outside the hold, and let the gate go at its end, so the
rest of the hold ran with the gate free (the other processes' writes passed it to wait in
SQLite's busy handler), and the hold's end said none of its writes was stored, that one
named with them, though it was.  Now a call inside a hold whose transaction is gone is
refused, as PostgreSQL's hold refuses a call once its connection is lost, and counted
after the call that ended it; the gate is the hold's to its end (and the gate itself
refuses a second take, ``tests/test_store_gate_taken_twice.py``).
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

import pytest

from lldsched import SqliteTaskStore, StoreError, TaskStatus
from lldsched.storecalls import HoldNotCommitted
from tests.test_store_hold_messages import filling, paused
from tests.test_store_hold_nested import gate_taken
from tests.test_store_sqlite import snapshot, task


def test_a_call_inside_an_sqlite_hold_sqlite_rolled_back_is_refused_and_the_gate_kept(
    tmp_path: Path,
) -> None:
    with filling(tmp_path / "tasks.db") as store:
        path = store.path
        store.save(snapshot(task(id="x")))
        refused: list[StoreError] = []  # (an error inside would be the hold's to swallow)
        store.failing = True
        with pytest.raises(HoldNotCommitted) as raised, store.verb_held("up", also=("d", "x")):
            store.save(paused("up"))
            with suppress(StoreError):
                store.save(paused("d"))  # fills the disk: SQLite rolls the hold back
            try:
                store.save(paused("x"))  # before: committed alone, and let the gate go
            except StoreError as exc:
                refused.append(exc)
            gate_kept = gate_taken(path)  # the hold's still, to its end
        store.failing = False
        assert gate_kept  # before: let go by x's own transaction
        assert [str(error) for error in refused] == [
            f"the SQLite store {path!r} failed to save task 'x': the verb's hold it was "
            "called in has no transaction any more (SQLite rolled it back when the call "
            "inside to save task 'd' failed: OperationalError: database or disk is full); "
            "nothing more is written inside it"
        ]
        assert str(raised.value) == (
            "a verb's hold was not committed, none of its writes is stored ('up'): the "
            f"SQLite store {path!r} failed to save task 'd' inside it, and SQLite "
            "rolled its transaction back: OperationalError: database or disk is full; "
            "1 later call inside it failed too"
        )
        assert not gate_taken(path)
        for task_id in ("up", "x"):  # none stored, as the hold says
            row = store.get(task_id)
            assert row is not None and row.status is TaskStatus.SCHEDULED, task_id
        store.save(paused("x"))  # the hold over, the store writes again
        row = store.get("x")
        assert row is not None and row.status is TaskStatus.PAUSED


def test_a_hold_rolled_back_by_no_call_of_the_stores_refuses_the_calls_after(
    tmp_path: Path,
) -> None:
    """A statement run on the store's connection directly (no call of the store's) that
    rolled the hold back: the calls after are refused all the same, saying so."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True) as store:
        store.save(snapshot(task(id="up")))
        connection = store._connection
        assert connection is not None
        refused: StoreError | None = None  # (an error inside would be the hold's to swallow)
        with pytest.raises(HoldNotCommitted) as raised, store.verb_held("up"):
            connection.execute("ROLLBACK")
            try:
                store.get("up")
            except StoreError as exc:
                refused = exc
            gate_kept = gate_taken(store.path)
        assert gate_kept
        assert str(refused) == (
            f"the SQLite store {store.path!r} failed to read task 'up': the verb's hold it "
            "was called in has no transaction any more (rolled back by no call of the "
            "store's that failed); nothing more is written inside it"
        )
        assert str(raised.value).endswith(
            "found its transaction rolled back at its end, by no call of the store's that failed"
        )
        assert not gate_taken(store.path)
