"""What a PostgreSQL store writes inside a verb's hold (:meth:`PostgresTaskStore.verb_held`)
besides the verb's own rows, when the hold is not stored: none of it may be reported
stored.

The hold is one transaction on the store's connection.  Four ways something written in
it escaped the hold's fate (``tests/test_cluster_verb_hold.py`` covers the verb's own
rows): a run's settle queued meanwhile was written inside it by the hold's next write,
its outcome reported and its lease forgotten before the hold's COMMIT, then rolled back
with the hold; a connection lost inside was replaced by a new one, on which the writes
after it were committed one by one, outside the hold and its row locks, while the hold
said none of its writes was stored; a RUNNING save of a run whose lease was lost
rewrote the definition inside the hold unnoted, so the store's cache kept it as written
after the rollback and the definition was never written again; and so did a take-over of
a row another release wrote.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg
import pytest

from lldsched import StoreError, TaskStatus
from lldsched.storecalls import HoldNotCommitted
from lldsched.stores.postgres import PostgresTaskStore
from tests.conftest import T0
from tests.jobs import noop
from tests.test_store_postgres_batches import expire, finished, hold_back
from tests.test_store_sqlite import record, snapshot, task

Opener = Callable[..., PostgresTaskStore]


def abort(store: PostgresTaskStore) -> None:
    """Fail a statement on ``store``'s connection outside a savepoint: its transaction is
    aborted (what a read inside a hold failing on a lock timeout leaves)."""
    assert store._connection is not None
    with pytest.raises(psycopg.errors.DivisionByZero):
        store._connection.execute("SELECT 1 / 0")


def terminate(store: PostgresTaskStore) -> None:
    """The server ends ``store``'s session (a restart, an administrator)."""
    assert store._connection is not None
    backend = store._connection.info.backend_pid
    with psycopg.connect(store._dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", (backend,))


def test_a_settle_queued_during_a_hold_not_stored_is_still_written(
    open_store: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, the hold's next write wrote the settle inside the hold: reported written
    (its lease forgotten, no failure logged), then rolled back with the hold, its record
    never stored and its run taken over and run again once its lease expired."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")
    store, other = open_store(lease=60), open_store(lease=60)
    store.save(snapshot(task(id="a")))
    store.save(snapshot(task(id="b")))
    (claim,) = store.claim(now=T0, limit=1)
    hold_back(store)  # the settle waits for the store's next statement
    with pytest.raises(HoldNotCommitted), store.verb_held("b"):
        store.save(finished("a"), record("a", 0)._replace(token=claim.token))  # a run ends
        store.save(snapshot(task(id="b"))._replace(status=TaskStatus.PAUSED))
        abort(store)
    store.flush()
    assert [r.token for r in other.records("a")] == [claim.token]
    row = other.get("a")
    assert row is not None and row.status is TaskStatus.SUCCEEDED
    assert other.leases() == [] and store.rejected == 0


def test_no_write_after_a_connection_lost_inside_a_hold_is_stored_outside_it(
    open_store: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, the write after the loss reconnected and was committed on its own, outside
    the hold (its rows no longer locked), while the hold said none of its writes was
    stored."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")
    store, other = open_store(), open_store()
    for task_id in ("a", "b", "c"):
        store.save(snapshot(task(id=task_id)))
    paused = TaskStatus.PAUSED
    failed: list[str] = []  # (pytest.raises inside would be the hold's to swallow)
    with pytest.raises(HoldNotCommitted) as raised, store.verb_held("a", also=("b", "c")):
        store.save(snapshot(task(id="a"))._replace(status=paused))
        terminate(store)
        for task_id in ("b", "c"):
            try:
                store.save(snapshot(task(id=task_id))._replace(status=paused))
            except StoreError as exc:
                failed.append(f"{task_id}: {exc}")
    assert [line[:2] for line in failed] == ["b:", "c:"]
    assert "hold was lost" in failed[1]
    assert set(raised.value.written) == {"a"}  # b's savepoint failed before its write
    assert [status(other, task_id) for task_id in ("a", "b", "c")] == [TaskStatus.SCHEDULED] * 3
    store.save(snapshot(task(id="c"))._replace(status=paused))  # the hold over: reconnects
    assert status(other, "c") is paused


def test_a_lost_runs_redefinition_inside_a_hold_not_stored_is_written_again(
    open_store: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, the store's cache kept the new definition as written: the hold named no such
    write, and the next RUNNING save of it wrote nothing, the old definition kept for
    good."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")
    store, other = open_store(lease=60), open_store(lease=60)
    store.save(snapshot(task(id="a")))
    (claim,) = store.claim(now=T0, limit=1)
    expire(store, "a")
    other.load_all()
    (taken,) = other.claim(now=T0, limit=1)
    assert store.renew(tokens={claim.token}, now=T0) == set()  # lost: taken over
    renamed = snapshot(task(id="a", name="renamed"), TaskStatus.RUNNING)
    with pytest.raises(HoldNotCommitted) as raised, store.verb_held("a"):
        store.save(renamed)
        abort(store)
    assert set(raised.value.written) == {"a"}
    row = other.get("a")
    assert row is not None and row.task.name == "t"  # rolled back
    store.save(renamed)  # written again, as the runtime does
    row = other.get("a")
    assert row is not None and row.task.name == "renamed"
    assert taken.token in {lease.token for lease in other.leases()}


def status(store: PostgresTaskStore, task_id: str) -> TaskStatus | None:
    row = store.get(task_id)
    return None if row is None else row.status


def test_a_take_over_inside_a_hold_not_stored_is_written_again(
    open_store: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    """A registration with ``replace_existing=True`` of a task this node left out (another
    release's definition) takes its row over inside the registration's hold.  Before,
    the hold not stored, the store's cache kept the new definition as written: the
    runtime's write again of the task (``resave``) wrote its state alone, and the row
    kept the definition this node cannot load."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")
    writer, store = open_store(), open_store()
    writer.save(snapshot(task(id="a")))
    with psycopg.connect(writer._dsn, autocommit=True) as admin:  # another release's
        admin.execute(
            "UPDATE tasks SET definition = replace(definition, %s, 'gone_module:noop')",
            (f"{noop.__module__}:noop",),
        )
    store.load_all(leave_out=True)
    store.changes()  # the feed reads past the row, as a started node's does
    assert store.unloaded() == ["a"]
    definition = task(id="a", name="renamed")
    with pytest.raises(HoldNotCommitted) as raised, store.verb_held("a"):
        assert store.take_over(definition) is not None
        abort(store)
    assert set(raised.value.written) == {"a"}
    assert store.resave(snapshot(definition))  # the runtime writes the task again
    with psycopg.connect(writer._dsn) as admin:
        (text,) = admin.execute("SELECT definition FROM tasks").fetchone() or ("",)
    assert "gone_module" not in text and '"renamed"' in text
