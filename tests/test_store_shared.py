"""SqliteTaskStore(shared=True): claims with fencing tokens, renewal, fenced settles, the
change feed, and the arguments and openers it refuses (store-level, in one process:
two stores on one file stand for two processes)."""

from __future__ import annotations

import contextlib
import gc
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from lldsched import (
    ExecutionRecord,
    FakeClock,
    FixedRate,
    OneTime,
    RetryPolicy,
    Scheduler,
    SqliteTaskStore,
    StoreError,
    TaskStatus,
)
from lldsched.coordination import CoordinatedStore
from lldsched.errors import LeaseLost, ValidationError
from lldsched.model import Outcome
from lldsched.persistence import Task, TaskSnapshot
from lldsched.stores import removals as removals_rule
from lldsched.stores.sqlite import SCHEMA_VERSION
from lldsched.stores.sqlite import shared as sqlite_shared
from lldsched.stores.sqlite.gate import WriteGate
from lldsched.stores.sqlite.shared import SharedState
from lldsched.testing import Stepper
from tests import jobs
from tests.waits import wait_until

T0 = 1_800_000_000.0


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "tasks.db")


@pytest.fixture
def pair(path: str) -> Iterator[tuple[SqliteTaskStore, SqliteTaskStore]]:
    """Two shared stores on one file, with three tasks due at T0 registered through the first."""
    first = SqliteTaskStore(path, shared=True, lease=10)
    seeder = Scheduler(store=first)
    for n in range(3):
        seeder.schedule(f"job-{n}", jobs.noop, OneTime(T0 + n), id=f"job-{n}")
    second = SqliteTaskStore(path, shared=True, lease=10)
    yield first, second
    seeder.shutdown()
    first.close()
    second.close()


def _finished(
    store: SqliteTaskStore, task_id: str, token: int
) -> tuple[TaskSnapshot, ExecutionRecord]:
    snapshot = store.get(task_id)
    assert snapshot is not None
    done = snapshot._replace(status=TaskStatus.SUCCEEDED, next_run_at=None, run_count=1)
    record = ExecutionRecord.of(
        task_id=task_id, name=snapshot.task.name, attempt=1, due=T0, slot=T0, worker=0,
        started=T0, finished=T0 + 1, ok=True, token=token,
    )  # fmt: skip
    return done, record


# -- arguments and openers ------------------------------------------------------------------


@pytest.mark.parametrize("shared", [1, "yes", None])
def test_shared_must_be_a_bool_and_the_error_names_the_value(path: str, shared: object) -> None:
    with pytest.raises(ValidationError, match=f"shared must be True or False, got {shared!r}"):
        SqliteTaskStore(path, shared=shared)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "value"), [("lease", 0), ("lease", -1.0), ("poll", "1")])
def test_lease_and_poll_must_be_positive_seconds(path: str, name: str, value: object) -> None:
    with pytest.raises(ValidationError, match=name):
        SqliteTaskStore(path, shared=True, **{name: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "value"), [("lease", 10.0), ("poll", 0.5), ("lease", 30.0)])
def test_a_shared_only_option_without_shared_is_refused_naming_it(
    path: str, name: str, value: float
) -> None:
    # An unshared store holds no leases and polls nothing: the option would be ignored.
    with pytest.raises(ValidationError, match=rf"{name}={value!r} .*shared=True"):
        SqliteTaskStore(path, **{name: value})  # type: ignore[arg-type]
    SqliteTaskStore(path).close()  # nothing was left claimed by the refused opener


def test_a_poll_longer_than_the_lease_is_accepted(path: str) -> None:
    # Renewal is a deadline of its own (every lease / 3), not the poll's: docs/DECISIONS.md.
    with SqliteTaskStore(path, shared=True, lease=3.0, poll=60.0) as store:
        assert (store.lease, store.poll) == (3.0, 60.0)


def test_a_private_in_memory_database_cannot_be_shared() -> None:
    with pytest.raises(ValidationError, match=r"shared=True needs a file.*':memory:'"):
        SqliteTaskStore(":memory:", shared=True)


def test_shared_stores_open_together_and_refuse_an_unshared_opener(path: str) -> None:
    first, second = SqliteTaskStore(path, shared=True), SqliteTaskStore(path, shared=True)
    with pytest.raises(StoreError, match="already open by shared=True schedulers"):
        SqliteTaskStore(path)
    first.close()
    second.close()
    SqliteTaskStore(path).close()  # once they are closed, it opens


def test_an_unshared_store_refuses_a_shared_opener(path: str) -> None:
    with SqliteTaskStore(path), pytest.raises(StoreError, match="without shared=True"):
        SqliteTaskStore(path, shared=True)


def test_the_coordination_methods_of_an_unshared_store_say_it_shares_nothing(path: str) -> None:
    with SqliteTaskStore(path) as store:
        assert store.shared is False
        with pytest.raises(StoreError, match="opened without shared=True"):
            store.claim(now=T0, limit=1)


def test_a_shared_store_is_a_coordinated_store(path: str) -> None:
    with SqliteTaskStore(path, shared=True) as store:
        assert isinstance(store, CoordinatedStore)
        assert store.shared is True


# -- claims, tokens, settles -----------------------------------------------------------------


def test_a_due_task_is_claimed_by_one_store_only_until_its_lease_expires(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    first, second = pair
    claims = first.claim(now=T0 + 10, limit=10)
    assert [claim.task_id for claim in claims] == ["job-0", "job-1", "job-2"]
    assert second.claim(now=T0 + 10, limit=10) == []  # all leased
    taken = second.claim(now=claims[0].expires_at, limit=1)  # the first lease expired
    assert [claim.task_id for claim in taken] == ["job-0"]
    assert taken[0].token > max(claim.token for claim in claims)


def test_only_due_tasks_are_claimed_in_due_order_up_to_the_limit(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    first, _ = pair
    assert first.claim(now=T0 - 1, limit=10) == []
    assert [claim.task_id for claim in first.claim(now=T0 + 1, limit=1)] == ["job-0"]
    assert first.claim(now=T0 + 1, limit=0) == []


def test_a_settle_with_the_held_token_writes_the_record_and_frees_the_task(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    first, second = pair
    (claim,) = first.claim(now=T0, limit=1)
    snapshot, record = _finished(first, "job-0", claim.token)
    first.settle(snapshot, record, token=claim.token)
    assert [r.token for r in second.records("job-0")] == [claim.token]
    settled = second.get("job-0")
    assert settled is not None and settled.status is TaskStatus.SUCCEEDED
    assert second.leases() == []


def test_a_settle_after_a_takeover_is_refused_and_writes_nothing(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    first, second = pair
    (old,) = first.claim(now=T0, limit=1)
    (new,) = second.claim(now=old.expires_at, limit=1)
    snapshot, record = _finished(first, "job-0", old.token)
    with pytest.raises(LeaseLost, match=f"'job-0' with fencing token {old.token}"):
        first.settle(snapshot, record, token=old.token)
    assert second.records("job-0") == []
    assert [(lease.token, lease.holder) for lease in second.leases()] == [(new.token, second.node)]


def test_a_stale_save_through_the_core_is_counted_as_rejected_not_raised(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    first, second = pair
    (old,) = first.claim(now=T0, limit=1)
    second.claim(now=old.expires_at, limit=1)
    first.save(*_finished(first, "job-0", old.token))  # what SchedulerCore.finish calls
    assert first.rejected == 1
    assert second.records("job-0") == []


def test_renewal_keeps_held_leases_and_reports_lost_ones(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    first, second = pair
    zero, one = first.claim(now=T0 + 1, limit=2)
    second.claim(now=zero.expires_at, limit=1)  # takes job-0 over (its lease ran out)
    assert first.renew(tokens={zero.token, one.token}, now=T0 + 2) == {one.token}
    expiry = {lease.task_id: lease.expires_at for lease in second.leases()}
    assert expiry["job-1"] == T0 + 2 + first.lease


def test_a_released_claim_is_free_for_another_store_at_once(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    first, second = pair
    (claim,) = first.claim(now=T0, limit=1)
    first.release(task_id="job-0", token=claim.token)
    assert [c.task_id for c in second.claim(now=T0, limit=1)] == ["job-0"]


# -- the change feed -----------------------------------------------------------------------


def test_the_feed_shows_the_other_stores_writes_and_removals_not_its_own(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    first, second = pair
    assert second.changes() == []  # the rows at open are what load_all gives
    paused = second.get("job-1")
    assert paused is not None
    first.save(paused._replace(status=TaskStatus.PAUSED))
    first.delete("job-2")
    assert second.changed()
    changes = second.changes()
    assert [(c.task_id, c.snapshot is None) for c in changes] == [("job-1", False), ("job-2", True)]
    assert changes[0].snapshot is not None and changes[0].snapshot.status is TaskStatus.PAUSED
    assert [c.leased for c in changes] == [False, False]  # no lease on either row
    assert first.changes() == []  # its own writes
    assert not second.changed()


def test_removals_are_trimmed_once_behind_a_cursor_read_long_enough_ago(
    pair: tuple[SqliteTaskStore, SqliteTaskStore], path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(removals_rule, "REMOVALS_KEPT", 0.2)  # a day, in production
    monkeypatch.setattr(removals_rule, "SAMPLE_EVERY", 3600.0)  # one sample: the first read's
    first, late = pair

    def removed() -> list[str]:
        with contextlib.closing(sqlite3.connect(path)) as connection:
            return [r[0] for r in connection.execute("SELECT task_id FROM removed ORDER BY 1")]

    first.delete("job-0")
    trimmer = SqliteTaskStore(path, shared=True)
    try:
        assert trimmer.changes() == []  # its cursor now is past job-0's removal
        first.delete("job-1")
        assert removed() == ["job-0", "job-1"]

        def trimmed() -> bool:
            trimmer.changes()
            return removed() == ["job-1"]

        wait_until(trimmed, timeout=10, what="the removal of job-0 to be trimmed")
    finally:
        trimmer.close()
    # job-1's removal came after the cursor sampled: kept for a feed that has not read it.
    # job-0's is gone for one that read no feed for longer than REMOVALS_KEPT: the cost.
    assert [(c.task_id, c.snapshot) for c in late.changes()] == [("job-1", None)]


def test_muted_saves_write_nothing(pair: tuple[SqliteTaskStore, SqliteTaskStore]) -> None:
    first, second = pair
    snapshot = first.get("job-0")
    assert snapshot is not None
    with first.muted():
        first.save(snapshot._replace(status=TaskStatus.CANCELLED))
        first.delete("job-1")
    assert second.changes() == []
    assert len(second) == 3


# -- the schema --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6, 7])
def test_an_older_file_is_migrated_with_its_tasks_and_then_opens_shared(
    path: str, version: int
) -> None:
    with SqliteTaskStore(path) as store:
        Scheduler(store=store).schedule("job", jobs.noop, OneTime(T0), id="job")
    if version == 7:
        _downgrade_to_7(path)
    elif version == 6:
        _downgrade_to_6(path)
    elif version == 5:
        _downgrade_to_5(path)
    elif version == 4:
        _downgrade_to_4(path)
    elif version == 3:
        _downgrade_to_3(path)
    else:
        _downgrade_to_2(path)
    if version == 1:
        connection = sqlite3.connect(path, isolation_level=None)
        connection.executescript("ALTER TABLE records DROP COLUMN result; PRAGMA user_version = 1;")
        connection.close()
    with SqliteTaskStore(path, shared=True) as store:
        (loaded,) = store.load_all()
        assert (loaded.task.id, loaded.slot, loaded.resumes) == ("job", None, False)
        assert [claim.task_id for claim in store.claim(now=T0, limit=1)] == ["job"]
        store.save(loaded._replace(next_run_at=T0 + 9, slot=T0, waited=T0 + 60, resumes=True))
        again = store.get("job")  # the newest columns written
        assert again is not None
        assert (again.next_run_at, again.slot, again.resumes) == (T0 + 9, T0, True)
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    connection.close()


def test_a_file_of_version_6_keeps_its_records_and_then_the_node_of_each(path: str) -> None:
    """Version 7 keeps the process that ran each record (``ExecutionRecord.node``): a file
    of version 6 gains the column, its records read no node, and those written since keep
    theirs."""
    with SqliteTaskStore(path, shared=True) as store:
        scheduler = Scheduler(store=store)
        scheduler.schedule("old", jobs.noop, OneTime(T0), id="old")
        scheduler.schedule("new", jobs.noop, OneTime(T0 + 1), id="new")
        (claim,) = store.claim(now=T0, limit=1)
        store.settle(*_finished(store, "old", claim.token), token=claim.token)
    _downgrade_to_6(path)
    with SqliteTaskStore(path, shared=True) as store:
        (old,) = store.records("old")
        assert old.ok and old.token == claim.token and old.node is None
        (again,) = store.claim(now=T0 + 1, limit=1)
        snapshot, ran = _finished(store, "new", again.token)
        store.settle(snapshot, ran._replace(node=store.node), token=again.token)
        assert [r.node for r in store.records()] == [None, store.node]
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    connection.close()


def test_the_slot_of_a_resumed_run_stands_only_while_its_due_instant_does(path: str) -> None:
    """A process of an older release (a rolling upgrade: the file's columns are additive)
    writes rows without ``slot``.  Its pause leaves the due instant, and the slot with it;
    its settle or reschedule moves the due instant, and the slot left behind is not read
    (a later run would record it, and a fixed rate count its grid from it)."""
    _saved_job(path, next_run_at=T0 + 9, slot=T0)  # a resume put the run off
    older = sqlite3.connect(path, isolation_level=None)
    try:
        older.execute("UPDATE tasks SET status = 'paused' WHERE id = 'job'")  # its pause
        row = _loaded_job(path)
        assert (row.status, row.next_run_at, row.slot) == (TaskStatus.PAUSED, T0 + 9, T0)
        older.execute("UPDATE tasks SET status = 'scheduled', next_run_at = ? WHERE id = 'job'",
                      (T0 + 60,))  # fmt: skip
        assert _loaded_job(path).slot is None
        with SqliteTaskStore(path, shared=True) as store:
            again = store.get("job")
            assert again is not None and (again.next_run_at, again.slot) == (T0 + 60, None)
    finally:
        older.close()


def _saved_job(path: str, **state: Any) -> None:
    """A shared store on ``path`` registers ``job`` (one run at 09:00), then saves its row
    with ``state`` (what a process of this release writes)."""
    with SqliteTaskStore(path, shared=True) as store:
        Scheduler(store=store).schedule("job", jobs.noop, OneTime(T0), id="job")
        (row,) = store.load_all()
        store.save(row._replace(**state))


def _loaded_job(path: str) -> TaskSnapshot:
    """The row of ``job`` as a store opened on ``path`` now reads it."""
    with SqliteTaskStore(path, shared=True) as store:
        (row,) = store.load_all()
    return row


def test_a_file_of_version_7_reads_no_slot_to_resume_at_and_then_keeps_it(path: str) -> None:
    """Version 8 keeps whether a plan's ``waited`` is the slot it resumes at
    (``TaskSnapshot.resumes``): a file of version 7 gains the column, a plan's row written
    before reads as a slot decided to run (as that release read it), and a write since
    keeps it."""
    _saved_job(path, waited=T0 + 60)
    _downgrade_to_7(path)
    with SqliteTaskStore(path, shared=True) as store:
        (row,) = store.load_all()
        assert (row.waited, row.resumes) == (T0 + 60, False)
        store.save(row._replace(resumes=True))
        again = store.get("job")
        assert again is not None and (again.waited, again.resumes) == (T0 + 60, True)
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    connection.close()


def test_a_file_of_version_9_reads_no_slot_found_blocked_and_then_keeps_it(path: str) -> None:
    """Version 10 keeps the slot a BLOCKED task's wait was found blocked at, when a
    reschedule moved its next slot (``TaskSnapshot.blocked_due``, ``blocked_slot``): a
    file of version 9 gains the columns, a row written before reads none (its wait is of
    the slot it is due at, as that release read it), and a write since keeps them."""
    _saved_job(path, status=TaskStatus.BLOCKED)
    _downgrade_to_9(path)
    with SqliteTaskStore(path, shared=True) as store:
        (row,) = store.load_all()
        assert (row.status, row.blocked_due, row.blocked_slot) == (TaskStatus.BLOCKED, None, None)
        store.save(row._replace(next_run_at=T0 + 1800, blocked_due=T0 + 1, blocked_slot=T0))
        again = store.get("job")
        assert again is not None and (again.blocked_due, again.blocked_slot) == (T0 + 1, T0)
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    connection.close()


def test_a_slot_found_blocked_stands_only_while_the_row_is_the_write_that_kept_it(
    path: str,
) -> None:
    """A process of an older release (a rolling upgrade) writes a BLOCKED row without
    the slot its wait was found blocked at: its reschedule of the wait, or a later wait it
    found blocked, and the slot an earlier write kept is not read for it (its record would
    name a slot that did not wait then, started before that wait ended).  A later wait at
    the very due instant too: it released the wait before that instant came (a success
    ran there), and a run it added then (``run_now``) left the slot BLOCKED again.  Before,
    the slot was read while the row was still due when it was written: that wait read the
    earlier wait's slot.  Each write of an older process makes a new version, as every
    shared write does (``sqlite/shared.bump``)."""
    _saved_job(
        path, status=TaskStatus.BLOCKED, next_run_at=T0 + 1800, blocked_due=T0, blocked_slot=T0
    )
    older = sqlite3.connect(path, isolation_level=None)

    def older_writes(status: str, next_run_at: float) -> None:
        older.execute("BEGIN IMMEDIATE")
        version = sqlite_shared.bump(older, "change")
        older.execute(
            "UPDATE tasks SET status = ?, next_run_at = ?, version = ? WHERE id = 'job'",
            (status, next_run_at, version),
        )
        older.execute("COMMIT")

    try:
        row = _loaded_job(path)
        assert (row.next_run_at, row.blocked_due, row.blocked_slot) == (T0 + 1800, T0, T0)
        older_writes("scheduled", T0 + 1800)  # its release, before the new due instant
        older_writes("blocked", T0 + 1800)  # that slot found blocked, after a run_now's run
        row = _loaded_job(path)
        assert (row.status, row.blocked_due, row.blocked_slot) == (TaskStatus.BLOCKED, None, None)
        with SqliteTaskStore(path, shared=True) as store:  # this release's write again
            (row,) = store.load_all()
            store.save(row._replace(blocked_due=T0, blocked_slot=T0))
        assert _loaded_job(path).blocked_slot == T0
        older_writes("blocked", T0 + 5400)  # its next slot found blocked
        row = _loaded_job(path)
        assert (row.status, row.blocked_due, row.blocked_slot) == (TaskStatus.BLOCKED, None, None)
    finally:
        older.close()


def test_a_slot_to_resume_at_stands_only_while_it_is_the_waited_one(path: str) -> None:
    """A process of an older release (a rolling upgrade: the file's columns are additive)
    writes ``waited`` without ``resume_at``: a slot of its own there (a ``run_now``'s put in
    front, a plan of its own) is not read as the slot to resume at the row kept before,
    and a plan it ended reads none."""
    _saved_job(path, waited=T0 + 60, resumes=True)
    older = sqlite3.connect(path, isolation_level=None)
    try:
        older.execute("UPDATE tasks SET status = 'paused' WHERE id = 'job'")  # its pause
        row = _loaded_job(path)
        assert (row.status, row.waited, row.resumes) == (TaskStatus.PAUSED, T0 + 60, True)
        older.execute("UPDATE tasks SET waited = ? WHERE id = 'job'", (T0 + 30,))  # a run_now
        row = _loaded_job(path)
        assert (row.waited, row.resumes) == (T0 + 30, False)
        older.execute("UPDATE tasks SET waited = NULL WHERE id = 'job'")  # its plan spent
        row = _loaded_job(path)
        assert (row.waited, row.resumes) == (None, False)
    finally:
        older.close()


def test_a_plans_end_is_kept_in_the_slot_to_resume_at_and_read_with_waited(path: str) -> None:
    """Where a plan's runs end (``TaskSnapshot.until``) is kept in ``resume_at``, the
    column that keeps the slot to resume at (no schema step: it is always after
    ``waited``, which that slot is).  A process of an older release reads such a row as
    one that resumes nowhere, as it read every plan's, and writes ``resume_at`` with
    ``waited``: its pause keeps the end, its plan spent reads none, and so does a plan of
    its own past it."""
    _saved_job(path, waited=T0 + 60, until=T0 + 600)
    older = sqlite3.connect(path, isolation_level=None)
    try:
        assert older.execute("SELECT waited, resume_at FROM tasks").fetchone() == (
            T0 + 60,
            T0 + 600,
        )
        assert older.execute("SELECT coalesce(resume_at = waited, 0) FROM tasks").fetchone() == (
            0,
        )  # the schema 8 release's reading of resumes: False
        row = _loaded_job(path)
        assert (row.waited, row.resumes, row.until) == (T0 + 60, False, T0 + 600)
        older.execute("UPDATE tasks SET status = 'paused' WHERE id = 'job'")  # its pause
        row = _loaded_job(path)
        assert (row.status, row.waited, row.until) == (TaskStatus.PAUSED, T0 + 60, T0 + 600)
        older.execute("UPDATE tasks SET waited = ? WHERE id = 'job'", (T0 + 660,))  # its plan
        row = _loaded_job(path)
        assert (row.waited, row.resumes, row.until) == (T0 + 660, False, None)
        older.execute("UPDATE tasks SET waited = NULL WHERE id = 'job'")  # its plan spent
        row = _loaded_job(path)
        assert (row.waited, row.resumes, row.until) == (None, False, None)
    finally:
        older.close()


def _downgrade_to_9(path: str) -> None:
    """Make the file what lldsched wrote at schema version 9 (no slot a moved wait was
    found blocked at kept)."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(
        "BEGIN; ALTER TABLE tasks DROP COLUMN blocked_due;"
        " ALTER TABLE tasks DROP COLUMN blocked_slot; ALTER TABLE tasks DROP COLUMN blocked_next;"
        " PRAGMA user_version = 9; COMMIT;"
    )
    connection.close()


def _downgrade_to_8(path: str) -> None:
    """Make the file what lldsched wrote at schema version 8 (no grid origin kept)."""
    _downgrade_to_9(path)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(
        "BEGIN; ALTER TABLE tasks DROP COLUMN grid; PRAGMA user_version = 8; COMMIT;"
    )
    connection.close()


def _downgrade_to_7(path: str) -> None:
    """Make the file what lldsched wrote at schema version 7 (no slot to resume at kept)."""
    _downgrade_to_8(path)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(
        "BEGIN; ALTER TABLE tasks DROP COLUMN resume_at; PRAGMA user_version = 7; COMMIT;"
    )
    connection.close()


def _downgrade_to_6(path: str) -> None:
    """Make the file what lldsched wrote at schema version 6 (no node kept by a record)."""
    _downgrade_to_7(path)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(
        "BEGIN; ALTER TABLE records DROP COLUMN node; PRAGMA user_version = 6; COMMIT;"
    )
    connection.close()


def _downgrade_to_5(path: str) -> None:
    """Make the file what lldsched wrote at schema version 5 (no slot kept for a resumed
    plan's run)."""
    _downgrade_to_6(path)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(
        "BEGIN; ALTER TABLE tasks DROP COLUMN slot; ALTER TABLE tasks DROP COLUMN slot_due;"
        " PRAGMA user_version = 5; COMMIT;"
    )
    connection.close()


def _downgrade_to_4(path: str) -> None:
    """Make the file what lldsched wrote at schema version 4 (no name kept by a record)."""
    _downgrade_to_5(path)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(
        "BEGIN; ALTER TABLE records DROP COLUMN name; PRAGMA user_version = 4; COMMIT;"
    )
    connection.close()


def _downgrade_to_3(path: str) -> None:
    """Make the file what lldsched wrote at schema version 3 (no run_now slot kept)."""
    _downgrade_to_4(path)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(
        "BEGIN; ALTER TABLE tasks DROP COLUMN waited; PRAGMA user_version = 3; COMMIT;"
    )
    connection.close()


def _downgrade_to_2(path: str) -> None:
    """Make the file what lldsched wrote at schema version 2 (no leases, no versions)."""
    _downgrade_to_3(path)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(
        "BEGIN; DROP TABLE leases; DROP TABLE counters; DROP TABLE removed;"
        "DROP INDEX tasks_due; DROP INDEX tasks_version;"
        "ALTER TABLE tasks DROP COLUMN priority; ALTER TABLE tasks DROP COLUMN version;"
        "ALTER TABLE records DROP COLUMN token; PRAGMA user_version = 2; COMMIT;"
    )
    connection.close()


def test_a_pause_written_by_another_store_during_a_run_wins_over_its_settle(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    first, second = pair
    (claim,) = first.claim(now=T0, limit=1)
    second.load_all()
    _paused_mid_run_then_settled(settler=first, pauser=second, token=claim.token)
    assert [r.token for r in second.records("job-0")] == [claim.token]


def _paused_mid_run_then_settled(
    *, settler: SqliteTaskStore, pauser: SqliteTaskStore, token: int
) -> None:
    """``pauser`` pauses job-0 while ``settler``'s run of it (``token``) goes on; the run
    settles SCHEDULED: the pause wins, and the settler's feed brings it the row."""
    running = pauser.get("job-0")
    assert running is not None
    pauser.save(running._replace(status=TaskStatus.PAUSED))  # a pause from the other process
    done, record = _finished(settler, "job-0", token)
    settler.settle(done._replace(status=TaskStatus.SCHEDULED, next_run_at=T0 + 60), record,
                   token=token)  # fmt: skip
    settled = pauser.get("job-0")
    assert settled is not None
    assert (settled.status, settled.next_run_at) == (TaskStatus.PAUSED, T0 + 60)
    (change,) = settler.changes()  # the settler must follow the row, not its own outcome
    assert change.snapshot is not None and change.snapshot.status is TaskStatus.PAUSED


@pytest.fixture
def running(path: str) -> Iterator[tuple[Scheduler, SqliteTaskStore]]:
    """A started scheduler on a shared store whose task "kept" (jobs.gated, FixedRate(60))
    is running; the gate is opened and the scheduler stopped afterwards."""
    jobs.GATE.clear()
    store = SqliteTaskStore(path, shared=True)
    scheduler = Scheduler(clock=FakeClock(T0), store=store)
    scheduler.start()
    try:
        kept = scheduler.schedule("kept", jobs.gated, FixedRate(60), id="kept")
        wait_until(lambda: kept.status is TaskStatus.RUNNING, timeout=5, what="the run")
        yield scheduler, store
    finally:
        jobs.GATE.set()
        assert scheduler.shutdown(timeout=5)
        store.close()
        jobs.GATE.clear()


def test_a_redefinition_during_a_run_reaches_the_file_with_its_settle(
    running: tuple[Scheduler, SqliteTaskStore],
) -> None:
    """The RUNNING save of a run this process holds writes nothing, and the settle wrote
    the state only: a replacement made during a run never reached the file (the other
    processes, and this one restarted, kept the old name and schedule) until some later
    write that was not a run's.  PostgreSQL's settle writes it; so does this one now."""
    scheduler, store = running
    scheduler.schedule("renamed", jobs.gated, FixedRate(30), id="kept", replace_existing=True)
    jobs.GATE.set()
    assert scheduler.wait_idle(timeout=5)
    assert [(s.task.name, s.task.schedule) for s in store.load_all()] == [
        ("renamed", FixedRate(30))
    ]
    with SqliteTaskStore(store.path, shared=True) as other:  # another process's view
        assert [(s.task.name, s.task.schedule) for s in other.load_all()] == [
            ("renamed", FixedRate(30))
        ]


def test_a_redefinition_during_a_run_the_file_cannot_keep_is_refused_when_made(
    running: tuple[Scheduler, SqliteTaskStore],
) -> None:
    scheduler, store = running
    kept = scheduler.task("kept")
    with pytest.raises(ValidationError, match=r"task 'kept': .*lambda"):
        scheduler.schedule("kept", lambda: None, FixedRate(30), id="kept", replace_existing=True)
    assert kept.action is jobs.gated and kept.schedule == FixedRate(60)
    jobs.GATE.set()
    assert scheduler.wait_idle(timeout=5)
    assert [(s.task.name, s.task.schedule, s.run_count) for s in store.load_all()] == [
        ("kept", FixedRate(60), 1)
    ]


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_store_whose_file_was_removed_or_replaced_refuses_to_claim(
    pair: tuple[SqliteTaskStore, SqliteTaskStore], path: str, how: str
) -> None:
    """Processes left on an unlinked file would run every slot again beside those that
    open the path anew: they claim nothing, and say why."""
    first, _ = pair
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(path + suffix).unlink()
    if how == "replaced":
        with SqliteTaskStore(path, shared=True) as newcomer:
            Scheduler(store=newcomer).schedule("job-0", jobs.noop, OneTime(T0), id="job-0")
    with pytest.raises(StoreError, match="was removed or replaced since this process opened it"):
        first.claim(now=T0 + 10, limit=10)
    assert first.leases() == []  # nothing claimed on the unlinked file


def sqlite_copy(source: str, target: str) -> None:
    """``source`` written into ``target`` through SQLite's backup API, as the online
    backup and ``sqlite3 tasks.db ".restore backup.db"`` do: into an existing file, it
    keeps its device and inode (no "replaced" file to find)."""
    reading, writing = sqlite3.connect(source), sqlite3.connect(target, timeout=10)
    try:
        reading.backup(writing)
    finally:
        reading.close()
        writing.close()


@pytest.mark.parametrize("reader", ["claims", "reads the feed"])
def test_a_store_whose_file_was_restored_in_place_refuses_to_claim(
    pair: tuple[SqliteTaskStore, SqliteTaskStore], path: str, tmp_path: Path, reader: str
) -> None:
    """A backup written into the open file (same inode, so not "replaced") rewinds its
    fencing tokens and its change feed under the processes still on it: tokens they were
    given are handed out again, and a slot they ran runs again. The store that sees the
    counters behind what it was given claims nothing more, and says why."""
    first, second = pair
    backup = str(tmp_path / "backup.db")
    sqlite_copy(path, backup)
    (zero,) = second.claim(now=T0, limit=1)
    second.settle(*_finished(second, "job-0", zero.token), token=zero.token)
    assert first.changes()  # the first follows the run settled by the second
    (one,) = first.claim(now=T0 + 1, limit=1)
    first.settle(*_finished(first, "job-1", one.token), token=one.token)
    sqlite_copy(backup, path)  # job-0 and job-1 due again, the tokens rewound
    rewound = "restored or rewound in place since this process opened it"
    if reader == "claims":
        with pytest.raises(StoreError, match=rewound):
            first.claim(now=T0 + 10, limit=10)
    else:
        with pytest.raises(StoreError, match=rewound):
            second.changes()
        with pytest.raises(StoreError, match=rewound):
            second.claim(now=T0 + 10, limit=10)
    assert first.leases() == []  # nothing claimed again on the rewound file


def test_a_store_whose_file_was_rewound_to_before_its_claims_refuses_to_claim(
    pair: tuple[SqliteTaskStore, SqliteTaskStore], path: str, tmp_path: Path
) -> None:
    """Claims move no row's version: a copy taken before a claim and written back into
    the file before its settle leaves the change counter where it was, but the tokens
    rewound. The store that was given a token the file would give again refuses."""
    first, _ = pair
    backup = str(tmp_path / "backup.db")
    sqlite_copy(path, backup)
    (zero,) = first.claim(now=T0, limit=1)
    sqlite_copy(backup, path)  # the lease gone, job-0 claimable with the same token
    with pytest.raises(StoreError, match=f"restart at {zero.token}, and this process was given"):
        first.claim(now=T0 + 10, limit=10)
    assert first.leases() == []


def _another_opener_first(monkeypatch: pytest.MonkeyPatch, path: str) -> list[SqliteTaskStore]:
    """Make the next store opened on ``path`` read the file as it is, then let another
    shared store open (create or migrate) it before the first goes on: the race of
    workers started together.  Returns the list the other store is put in."""
    others: list[SqliteTaskStore] = []
    check = SqliteTaskStore._check
    raced: list[bool] = []  # once: the other opener's own checks are not raced

    def check_then_lose_the_race(store: SqliteTaskStore, connection: sqlite3.Connection) -> object:
        found = check(store, connection)
        if not raced:
            raced.append(True)
            others.append(SqliteTaskStore(path, shared=True))
        return found

    monkeypatch.setattr(SqliteTaskStore, "_check", check_then_lose_the_race)
    return others


def test_two_shared_stores_creating_one_new_file_together_both_open_it(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    others = _another_opener_first(monkeypatch, path)
    with SqliteTaskStore(path, shared=True) as late:  # read the file empty, then lost the race
        (first,) = others
        Scheduler(store=first).schedule("job", jobs.noop, OneTime(T0), id="job")
        assert [snapshot.task.id for snapshot in late.load_all()] == ["job"]
        assert [claim.task_id for claim in late.claim(now=T0, limit=1)] == ["job"]
    first.close()


def test_two_shared_stores_migrating_one_file_together_both_open_it(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqliteTaskStore(path) as store:
        Scheduler(store=store).schedule("job", jobs.noop, OneTime(T0), id="job")
    _downgrade_to_2(path)
    others = _another_opener_first(monkeypatch, path)
    with SqliteTaskStore(path, shared=True) as late:  # read version 2, then lost the race
        assert [claim.task_id for claim in late.claim(now=T0, limit=1)] == ["job"]
    others[0].close()


# -- what a shared store remembers per task ----------------------------------------------


def held_definitions(name: str) -> int:
    """Task definitions named ``name`` alive in this process (the store's cache included)."""
    gc.collect()
    return sum(isinstance(thing, Task) and thing.name == name for thing in gc.get_objects())


@pytest.mark.parametrize("wait", ["wait_idle", "wait_drained"])
def test_the_waits_on_a_shared_store_wait_for_a_due_task_no_claim_took_yet(
    path: str, monkeypatch: pytest.MonkeyPatch, wait: str
) -> None:
    # The store is the queue: the heap holds hints, dropped once due (claims come in
    # batches of the room free).  Before, both waits saw an empty heap and returned
    # True between two batches while registered tasks were still due.
    with SqliteTaskStore(path, shared=True, poll=0.05) as store:
        claim = store.claim
        claims_taken = [False]
        monkeypatch.setattr(
            store,
            "claim",
            lambda now, limit: claim(now=now, limit=limit) if claims_taken[0] else [],
        )
        with Scheduler(store=store) as scheduler:
            task = scheduler.schedule("reminder", jobs.noop, OneTime(delay=0))
            assert not getattr(scheduler, wait)(timeout=0.3)  # due, and not yet claimed
            assert task.status is TaskStatus.SCHEDULED
            claims_taken[0] = True
            assert getattr(scheduler, wait)(timeout=30)
            assert task.status is TaskStatus.SUCCEEDED


def test_wait_drained_on_a_shared_store_waits_for_a_run_another_process_claimed(
    path: str,
) -> None:
    # The other process's claim leaves the row due until it settles: work left here too.
    jobs.GATE.clear()
    with (
        SqliteTaskStore(path, shared=True, poll=0.05) as here,
        SqliteTaskStore(path, shared=True, poll=0.05) as there,
        Scheduler(store=there) as other,
    ):
        task = other.schedule("slow", jobs.gated, OneTime(delay=0))
        wait_until(lambda: task.running, timeout=10, what="the other process's run")
        with Scheduler(store=here) as scheduler:
            wait_until(
                lambda: any(t.name == "slow" for t in scheduler.tasks()),
                timeout=10,
                what="the task in this process's registry",
            )
            try:
                assert not scheduler.wait_drained(timeout=0.3)  # it runs over there
            finally:
                jobs.GATE.set()
            assert scheduler.wait_drained(timeout=30)
            assert scheduler.task(task.id).status is TaskStatus.SUCCEEDED


def test_a_shared_store_keeps_no_finished_task_in_memory_only_in_its_file(path: str) -> None:
    with SqliteTaskStore(path, shared=True, poll=0.05) as store:
        scheduler = Scheduler(store=store, retain_finished=10)
        with scheduler:
            for _ in range(200):  # "send the reminder now", all day
                scheduler.schedule("reminder", jobs.noop, OneTime(delay=0))
            assert scheduler.wait_idle(timeout=30)
            assert len(scheduler.tasks()) <= 11  # the scheduler retired the rest...
            # ...and so did the store (before: 200 of each, ~600 bytes a task in all)
            shared = store._shared
            assert shared is not None
            assert (store._defined, store._counts, shared.seen, shared.settled) == ({}, {}, {}, {})
            assert held_definitions("reminder") <= 11
            # Another process writes: the feed still tells its rows from this one's,
            # and none of this process's finished (forgotten) tasks comes back.
            with SqliteTaskStore(path, shared=True) as other:
                Scheduler(store=other).schedule("elsewhere", jobs.noop, OneTime(delay=3600))
                wait_until(
                    lambda: any(t.name == "elsewhere" for t in scheduler.tasks()),
                    timeout=10,
                    what="the other process's task",
                )
            assert sum(t.name == "reminder" for t in scheduler.tasks()) <= 11
        assert len(store.load_all()) == 201  # every row stays in the file


def test_a_shared_store_that_purges_alone_keeps_nothing_of_the_rows_it_deleted(path: str) -> None:
    # One process on a shared file, nobody writing beside it (so its feed is never read):
    # one-off tasks all day, purge_retired.  Before: the cursor stopped at the first
    # removal, so no later write moved it, and seen, settled and removals kept an entry
    # for every task deleted (55 each here; 1,995 after 2,000 one-off tasks).
    with SqliteTaskStore(path, shared=True) as store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store, retain_finished=5,
                              purge_retired=True)  # fmt: skip
        with Stepper(scheduler) as steps:
            for _ in range(60):
                scheduler.schedule("reminder", jobs.noop, OneTime(delay=10))
                steps.advance(60)
            registered = len(scheduler.tasks())
            assert registered <= 6 and len(store.load_all()) == registered
            shared = store._shared
            assert shared is not None
            assert len(shared.seen) + len(shared.settled) + len(shared.removals) <= registered
            # Another process still hears of none of them (its feed starts at its open),
            # and of this one's next removal.
            with SqliteTaskStore(path, shared=True) as other:
                assert other.changes() == []
                scheduler.remove(scheduler.tasks()[0].id)
                assert [c.snapshot for c in other.changes()] == [None]


@pytest.fixture
def instant(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The monotonic clock the removals' rule reads (lldsched.stores.removals), set by hand."""
    now = [0.0]
    monkeypatch.setattr(removals_rule, "time", SimpleNamespace(monotonic=lambda: now[0]))
    return now


def test_removals_are_trimmed_by_a_process_whose_feed_nothing_changes(
    instant: list[float], pair: tuple[SqliteTaskStore, SqliteTaskStore], path: str
) -> None:
    # The feed's read trims the removals a day behind the cursor; a process alone on the
    # file never reads it (changed() is False), so its own removals are trimmed there.
    # Before: never, one row in the file for every task it deleted (purge_retired).
    first, _ = pair

    def removed() -> list[str]:
        with contextlib.closing(sqlite3.connect(path)) as connection:
            return [r[0] for r in connection.execute("SELECT task_id FROM removed ORDER BY 1")]

    first.delete("job-0")
    instant[0] = removals_rule.SAMPLE_EVERY  # a sample of the cursor is due
    assert not first.changed()  # the cursor, past job-0's removal, sampled
    instant[0] += removals_rule.REMOVALS_KEPT
    first.delete("job-1")
    assert removed() == ["job-0", "job-1"]
    assert not first.changed()
    assert removed() == ["job-1"]  # behind the cursor sampled a day ago: trimmed


def test_a_finished_write_is_forgotten_once_the_feed_is_past_it_and_theirs_still_seen(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    first, second = pair
    shared = first._shared
    assert shared is not None
    second.load_all()  # another process that knows the rows, as its scheduler would
    zero, one = first.claim(now=T0 + 1, limit=2)
    paused = second.get("job-2")
    assert paused is not None
    second.save(paused._replace(status=TaskStatus.PAUSED))  # another process writes between
    first.settle(*_finished(first, "job-0", zero.token), token=zero.token)
    assert "job-0" in shared.seen  # the feed has not passed it: it must skip it as its own
    assert [c.task_id for c in first.changes()] == ["job-2"]  # theirs only
    assert "job-0" not in shared.seen and "job-0" not in shared.settled  # passed: forgotten
    first.settle(*_finished(first, "job-1", one.token), token=one.token)  # right after
    assert "job-1" not in shared.seen and "job-0" not in first._defined
    assert not first.changed() and first.changes() == []
    # Another process registers a forgotten id again: its write is theirs, and seen.
    again = second.get("job-0")
    assert again is not None
    second.save(again._replace(status=TaskStatus.SCHEDULED, next_run_at=T0 + 60))
    (change,) = first.changes()
    assert change.task_id == "job-0" and change.snapshot is not None
    assert change.snapshot.status is TaskStatus.SCHEDULED


def test_a_retired_task_registered_again_by_id_on_a_reopened_shared_store_is_replaced(
    path: str,
) -> None:
    for _ in range(2):  # a service that registers its one-off job by id at every start
        with SqliteTaskStore(path, shared=True) as store:
            scheduler = Scheduler(store=store, retain_finished=0)
            with scheduler:
                scheduler.schedule(
                    "once", jobs.noop, OneTime(delay=0), id="once", replace_existing=True
                )
                assert scheduler.wait_idle(timeout=10)
    with SqliteTaskStore(path) as store:
        stored = store.get("once")
        assert stored is not None and stored.status is TaskStatus.SUCCEEDED
        assert len(store.records("once")) == 1  # ran once, not again at the second start


def test_a_retry_pending_when_a_process_opens_the_store_keeps_the_slot_it_retries(
    path: str,
) -> None:
    # The first process ran the slot at +60 s of a fixed rate, which failed, and stopped
    # with its retry due at +65 s; the next one runs the retry as that slot's, on its grid.
    clock = FakeClock(T0)
    with SqliteTaskStore(path, shared=True) as store:
        first = Scheduler(clock=clock, store=store)
        first.schedule("job", jobs.flaky, FixedRate(60, start_delay=60), args=(True,), id="job",
                       retry=RetryPolicy(max_attempts=2, initial_backoff=5))  # fmt: skip
        with Stepper(first) as steps:
            steps.advance(60)
        assert [(r.slot - T0, r.attempt, r.ok) for r in first.task("job").history] == [
            (60.0, 1, False)
        ]
    with SqliteTaskStore(path, shared=True) as store:
        second = Scheduler(clock=clock, store=store)
        with Stepper(second) as steps:
            steps.advance(5)
        task = second.task("job")
        assert [(r.slot - T0, r.attempt) for r in store.records("job")] == [(60.0, 1), (60.0, 2)]
        assert task.next_run_at == T0 + 120  # the grid, not the retry's due plus a minute


def skip(run: ExecutionRecord, slot: float) -> ExecutionRecord:
    """The record of ``slot``, which ``run`` skipped (its token with it)."""
    return run._replace(attempt=0, due=slot, slot=slot, worker=-1, ok=False,
                        misfire=Outcome.SKIPPED)  # fmt: skip


def test_a_run_and_the_slots_it_skipped_are_one_fenced_settle(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    """``save_all`` of a run's record and its SKIPPED slots (all carrying its token) is
    its settle: written in its one transaction while its lease is held, and none of
    them once the lease was taken over."""
    first, second = pair
    (claim,) = first.claim(now=T0, limit=1)
    done, record = _finished(first, "job-0", claim.token)
    skipped = [skip(record, slot) for slot in (T0 + 60, T0 + 120)]
    first.save_all(done, [record, *skipped])
    assert second.records("job-0") == [record, *skipped]
    assert first.leases() == []  # settled: its lease dropped
    (lost,) = first.claim(now=T0 + 1, limit=1)  # job-1, whose lease is then taken over
    (taken,) = second.claim(now=lost.expires_at, limit=1)
    done, record = _finished(first, "job-1", lost.token)
    first.save_all(done, [record, *(r._replace(task_id="job-1") for r in skipped)])
    assert first.rejected == 1 and second.records("job-1") == []
    assert [lease.token for lease in second.leases()] == [taken.token]


def test_a_retry_pending_when_a_process_first_follows_its_task_keeps_the_slot_it_retries(
    path: str,
) -> None:
    # As above, but the second process was there before the task was registered, and
    # learns it from the change feed, already waiting for its retry: the same rule.
    clock = FakeClock(T0)
    with SqliteTaskStore(path, shared=True) as store, SqliteTaskStore(path, shared=True) as late:
        second = Scheduler(clock=clock, store=late)  # the store is empty yet
        first = Scheduler(clock=clock, store=store)
        first.schedule("job", jobs.flaky, FixedRate(60, start_delay=60), args=(True,), id="job",
                       retry=RetryPolicy(max_attempts=2, initial_backoff=5))  # fmt: skip
        with Stepper(first) as steps:
            steps.advance(60)
        first.shutdown()
        assert [task.id for task in second.tasks()] == []  # not followed yet
        with Stepper(second) as steps:  # started: its timer reads the feed at its first wake
            wait_until(
                lambda: [task.id for task in second.tasks()] == ["job"],
                timeout=10,
                what="the task learnt from the change feed",
            )
            steps.advance(5)
        task = second.task("job")
        assert [(r.slot - T0, r.attempt) for r in late.records("job")] == [(60.0, 1), (60.0, 2)]
        assert task.next_run_at == T0 + 120  # the grid, not the retry's due plus a minute


class _CommitsBetween:
    """A connection whose first read of the feed's rows is followed, before its next
    statement, by ``between()``: another process committing at that instant."""

    def __init__(self, connection: sqlite3.Connection, between: Callable[[], None]) -> None:
        self._connection = connection
        self._between: Callable[[], None] | None = between

    def execute(self, statement: str, *parameters: Any) -> sqlite3.Cursor:
        cursor = self._connection.execute(statement, *parameters)
        if self._between is not None and "WHERE t.version > :cursor" in statement:
            rows = cursor.fetchall()  # the statement's own reads are done
            between, self._between = self._between, None
            between()
            return _Rows(rows)  # type: ignore[return-value]
        return cursor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


class _Rows:
    def __init__(self, rows: list[Any]) -> None:
        self._rows = rows

    def fetchall(self) -> list[Any]:
        return self._rows


def test_a_write_committed_while_the_feed_reads_is_given_by_a_later_read_not_skipped(
    pair: tuple[SqliteTaskStore, SqliteTaskStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The feed's rows and its removals are one snapshot: a pause then a removal committed
    by another process between the two reads once moved the cursor past the pause (the
    removal's version was read, the pause's row was not), so this process never applied
    the pause and ran the paused task."""
    first, second = pair
    assert second.changes() == []
    paused = second.get("job-1")
    assert paused is not None

    def elsewhere() -> None:
        first.save(paused._replace(status=TaskStatus.PAUSED))
        first.delete("job-2")

    reading = SharedState.changed_rows

    def interleaved(state: SharedState, connection: sqlite3.Connection) -> Any:
        return reading(state, _CommitsBetween(connection, elsewhere))  # type: ignore[arg-type]

    monkeypatch.setattr(SharedState, "changed_rows", interleaved)
    seen = second.changes()
    monkeypatch.setattr(SharedState, "changed_rows", reading)
    seen += second.changes()
    assert [(c.task_id, c.snapshot is None) for c in seen] == [("job-1", False), ("job-2", True)]
    assert seen[0].snapshot is not None and seen[0].snapshot.status is TaskStatus.PAUSED


def test_a_pause_elsewhere_wins_over_the_settle_of_a_process_that_only_loaded_the_row(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    """The claimer read the row at its start (``load_all``) and never wrote it: its settle
    once took a pause written elsewhere during the run for its own state (the row's
    version was compared with one this process wrote or read from the feed, and it had
    none), so the task ran on, paused in the other process's registry alone."""
    first, second = pair
    second.load_all()  # a process started after the task was registered: it loads it
    (claim,) = second.claim(now=T0, limit=1)
    _paused_mid_run_then_settled(settler=second, pauser=first, token=claim.token)


def test_a_redefinition_during_a_run_whose_lease_was_lost_leaves_the_row_claimable(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    """A run here whose lease another process took over (and settled) is still RUNNING in
    this process's registry: a redefinition made here during it (``modify``, a
    replacement) saves a RUNNING snapshot.  Its lease no longer held, that save once wrote
    the row ``running``, over the new holder's state: no claim picks such a row, so the
    task never ran again in any process.  Only the definition is written now."""
    first, second = pair
    (old,) = first.claim(now=T0, limit=1)
    (new,) = second.claim(now=old.expires_at, limit=1)  # taken over: first stalled
    done, record = _finished(second, "job-0", new.token)
    second.settle(done._replace(status=TaskStatus.SCHEDULED, next_run_at=T0 + 60), record,
                  token=new.token)  # fmt: skip
    assert first.renew(tokens={old.token}, now=old.expires_at) == set()  # found lost
    running = first.get("job-0")
    assert running is not None
    renamed = running.task._replace(name="renamed")
    first.save(running._replace(task=renamed, status=TaskStatus.RUNNING, next_run_at=T0))
    row = second.get("job-0")
    assert row is not None
    assert (row.status, row.next_run_at, row.task.name) == (
        TaskStatus.SCHEDULED, T0 + 60, "renamed",
    )  # fmt: skip
    assert "job-0" in [c.task_id for c in second.claim(now=T0 + 60, limit=3)]  # runs again


class _CommitFails:
    """A connection whose next COMMIT fails as a full disk's does (SQLite rolls it back)."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection
        self.armed = True

    def execute(self, statement: str, *parameters: Any) -> sqlite3.Cursor:
        if self.armed and statement == "COMMIT":
            self.armed = False
            raise sqlite3.OperationalError("database or disk is full")
        return self._connection.execute(statement, *parameters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


def test_a_removal_whose_commit_failed_leaves_its_version_to_the_next_writer(
    pair: tuple[SqliteTaskStore, SqliteTaskStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A removal that SQLite rolled back took no version: the next writer's change has it.
    The store once counted it among its own removals before the commit, so another
    process's removal numbered alike was left out of its feed as its own: that task
    stayed in its registry for good, with no row to run."""
    first, second = pair
    assert first.changes() == []
    failing = _CommitFails(first._open())
    monkeypatch.setattr(first, "_open", lambda: failing)
    with pytest.raises(StoreError, match="disk is full"):
        first.delete("job-0")
    monkeypatch.undo()
    second.delete("job-1")  # takes the version the rolled-back removal had
    assert [(c.task_id, c.snapshot) for c in first.changes()] == [("job-1", None)]


def test_a_resume_elsewhere_after_a_pause_here_during_a_run_leaves_the_task_runnable(
    pair: tuple[SqliteTaskStore, SqliteTaskStore],
) -> None:
    """Paused here during its run, resumed elsewhere before its settle, whose process had
    not read the resume: the task is runnable from the run's next slot, as one process
    returns a task resumed mid-run to its run, and as PostgreSQL's settle decides
    (``postgres/lease_sql._AS_RESUMED``).  The settle once wrote its own PAUSED over the
    resume: the task stayed paused, though the last verb said run."""
    first, second = pair
    second.load_all()
    (claim,) = first.claim(now=T0, limit=1)
    running = first.get("job-0")
    assert running is not None
    first.save(running._replace(status=TaskStatus.PAUSED))  # paused here, mid-run
    paused = second.get("job-0")
    assert paused is not None
    second.save(paused._replace(status=TaskStatus.SCHEDULED))  # resumed elsewhere
    done, record = _finished(first, "job-0", claim.token)
    first.settle(done._replace(status=TaskStatus.PAUSED, next_run_at=T0 + 60), record,
                 token=claim.token)  # fmt: skip
    settled = second.get("job-0")
    assert settled is not None
    assert (settled.status, settled.next_run_at) == (TaskStatus.SCHEDULED, T0 + 60)
    (change,) = first.changes()  # the settler follows the row, not its own PAUSED
    assert change.snapshot is not None and change.snapshot.status is TaskStatus.SCHEDULED


# -- a file used unshared, then shared -------------------------------------------------


def test_a_file_used_unshared_then_shared_and_back_keeps_every_record_in_order(
    path: str,
) -> None:
    """One process's file moved to several (docs/CLUSTER.md), and back for a while:
    the records an unshared store wrote never moved the shared mode's record counter,
    so the first shared settle took a number already used and failed ("UNIQUE
    constraint failed: records.task_id, records.seq").  A shared open raises the
    counter past every record kept."""
    clock = FakeClock(T0)
    with SqliteTaskStore(path) as store:
        Scheduler(clock=clock, store=store).schedule(
            "job", jobs.noop, FixedRate(60, start_delay=60), id="job"
        )
    for n, shared in enumerate((False, True, False, True), start=1):
        with SqliteTaskStore(path, shared=shared) as store:
            with Stepper(Scheduler(clock=clock, store=store)) as steps:
                steps.advance(60)  # one run, its record written by this store
            assert [(r.slot - T0, r.ok) for r in store.records("job")] == [
                (60.0 * k, True) for k in range(1, n + 1)
            ]  # every record kept, in the order they were written
            stored = store.get("job")
            assert stored is not None and stored.run_count == n


def test_shared_openers_racing_on_a_file_written_unshared_number_records_after_it(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers started at once on a file an unshared store wrote: one opener found the
    record counter behind, and before it takes the write lock another opens, catches
    the counter up and settles a run.  The first one's catch-up, in its own write
    transaction, leaves the counter past that record: its settle follows it."""
    with SqliteTaskStore(path) as store:
        seeder = Scheduler(store=store)
        for n in range(3):
            seeder.schedule(f"job-{n}", jobs.noop, OneTime(T0 + n), id=f"job-{n}")
        store.save(*_finished(store, "job-0", 0))  # its one process ran job-0
    count = sqlite_shared.count_records
    others: list[SqliteTaskStore] = []

    def another_opens_and_settles() -> None:
        if not raced:
            raced.append(True)
            other = SqliteTaskStore(path, shared=True)
            others.append(other)
            (claim,) = other.claim(now=T0 + 1, limit=1)  # job-1
            other.settle(*_finished(other, claim.task_id, claim.token), token=claim.token)

    raced: list[bool] = []

    class Racing:
        """The first opener's gate: the other goes first as it reaches it (the catch-up
        transaction passes the gate, so the other's cannot come after that)."""

        def __init__(self, gate: WriteGate) -> None:
            self.gate, self.timeout, self.busy = gate, gate.timeout, gate.busy

        def acquire(self) -> float:
            another_opens_and_settles()
            return self.gate.acquire()

        def release(self) -> None:
            self.gate.release()

    def count_while_another_settles(
        connection: sqlite3.Connection, *, last: int, gate: WriteGate | None
    ) -> None:
        assert gate is not None
        count(connection, last=last, gate=cast(WriteGate, Racing(gate)))

    monkeypatch.setattr(sqlite_shared, "count_records", count_while_another_settles)
    with SqliteTaskStore(path, shared=True) as first:
        (other,) = others
        (claim,) = first.claim(now=T0 + 2, limit=1)  # job-2
        first.settle(*_finished(first, claim.task_id, claim.token), token=claim.token)
        assert first.rejected == 0
        assert [r.task_id for r in first.records()] == ["job-0", "job-1", "job-2"]
    other.close()
    connection = sqlite3.connect(path)  # one number each, in the order they were written
    assert connection.execute("SELECT task_id, seq FROM records ORDER BY seq").fetchall() == [
        ("job-0", 1), ("job-1", 2), ("job-2", 3)
    ]  # fmt: skip
    connection.close()
