"""PostgresTaskStore as a TaskStore: rows, retention, the dead letter, opening, errors,
and a database restart, on a real server (the session's throwaway cluster)."""

from __future__ import annotations

import importlib
import logging
import re
import socket
import sys
import threading
from typing import Any

import psycopg
import pytest
from psycopg import conninfo

from lldsched import (
    CronSchedule,
    FakeClock,
    FixedDelay,
    FixedRate,
    Misfire,
    MisfirePolicy,
    OneTime,
    OverrunPolicy,
    Priority,
    RetryPolicy,
    Scheduler,
    StoreError,
    TaskStatus,
    ValidationError,
)
from lldsched.coordination import CoordinatedStore
from lldsched.persistence import HistoryStore
from lldsched.stores.codec import encode_task
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.stores.postgres.listen import Listener, with_timeouts
from lldsched.stores.postgres.redact import redact
from lldsched.stores.postgres.tables import SCHEMA_VERSION
from tests import jobs
from tests.conftest import T0, SchedulerFactory, settle
from tests.pg_server import PostgresServer
from tests.test_store_sqlite import Job, record, snapshot, task
from tests.waits import wait_until


def test_a_new_database_gets_the_schema_and_the_store_follows_every_protocol(
    postgres_dsn: str,
) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        assert isinstance(store, HistoryStore) and isinstance(store, CoordinatedStore)
        assert len(store) == 0 and store.load_all() == [] and store.records() == []
        with pytest.raises(ValidationError, match=r"or None, got \['a'\]"):
            store.records(["a"])  # type: ignore[arg-type]  # refused, not a failed read
    with psycopg.connect(postgres_dsn) as connection:
        assert connection.execute("SELECT value FROM lldsched_meta").fetchone() == (
            str(SCHEMA_VERSION),
        )


def test_every_schedule_and_option_round_trips_through_the_database(postgres_dsn: str) -> None:
    definitions = [
        task(id="a", schedule=OneTime(T0 + 5)),
        task(id="b", schedule=OneTime(delay=2.5)),
        task(id="c", schedule=FixedDelay(30, start_delay=1)),
        task(id="d", schedule=FixedRate(60, OverrunPolicy.CATCH_UP, 0.5)),
        task(id="e", schedule=CronSchedule("*/15 9-17 * * 1-5")),
        task(
            id="f",
            action=jobs.note,
            priority=Priority.HIGH,
            retry=RetryPolicy(
                5, initial_backoff=0.5, multiplier=3.0, max_backoff=10.0, jitter=0.25
            ),
            timeout=2.0,
            args=("label",),
            kwargs={"nested": {"list": [1, 2.5, None, True]}},
            misfire=MisfirePolicy(Misfire.RUN_ALL, grace=5, max_catch_up=7),
        ),
        task(id="g", action=None),
        task(id="h", action=Job.build),
    ]
    with PostgresTaskStore(postgres_dsn) as store:
        for definition in definitions:
            store.save(snapshot(definition))
    with PostgresTaskStore(postgres_dsn) as store:
        assert [s.task for s in store.load_all()] == definitions


def test_records_are_kept_per_task_up_to_the_retention_bound(postgres_dsn: str) -> None:
    with PostgresTaskStore(postgres_dsn, retention=5) as store:
        for task_id in ("a", "b"):
            store.save(snapshot(task(id=task_id)))
        for n in range(40):
            store.save(snapshot(task(id="a")), record("a", n))
        store.save(snapshot(task(id="b")), record("b", 0))
        assert [r.due - T0 for r in store.records("a")] == [35, 36, 37, 38, 39]
        assert [r.task_id for r in store.records()] == ["a"] * 5 + ["b"]
        assert store.records("a")[-1] == record("a", 39)
    with psycopg.connect(postgres_dsn) as connection:
        (kept,) = connection.execute("SELECT count(*) FROM records").fetchone() or (0,)
    assert kept <= 5 + 1 + 1  # at most 10% (here: one) over the bound between trims


def test_the_dead_letter_is_the_failed_tasks_in_the_order_they_failed(postgres_dsn: str) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        for task_id in ("a", "b", "c"):
            store.save(snapshot(task(id=task_id)))
        store.save(snapshot(task(id="c"), TaskStatus.FAILED))
        store.save(snapshot(task(id="a"), TaskStatus.FAILED))
        store.save(snapshot(task(id="c"), TaskStatus.FAILED))  # still failed: keeps its place
        assert store.dead_letter() == ["c", "a"]
        store.save(snapshot(task(id="c"), TaskStatus.SCHEDULED))  # redriven
        assert store.dead_letter() == ["a"]
        store.delete("a")
        assert store.dead_letter() == [] and store.get("a") is None


def test_the_store_is_safe_to_write_from_many_threads(postgres_dsn: str) -> None:
    with PostgresTaskStore(postgres_dsn, retention=None) as store:

        def write(n: int) -> None:
            for i in range(25):
                store.save(snapshot(task(id=f"t{n}")), record(f"t{n}", i))

        threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(store) == 4 and len(store.records()) == 100


def test_a_scheduler_writes_every_transition_and_a_new_one_restores_it(
    make_scheduler: SchedulerFactory, clock: FakeClock, postgres_dsn: str
) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        scheduler = make_scheduler(clock=clock, store=store)
        tick = scheduler.schedule("tick", jobs.noop, FixedRate(10))
        doomed = scheduler.schedule(
            "doomed", jobs.broken, OneTime(delay=0), retry=RetryPolicy(max_attempts=1)
        )
        settle(scheduler)
        clock.advance(10)
        settle(scheduler)
        stored = store.get(tick.id)
        assert stored is not None and stored.status is TaskStatus.SCHEDULED
        assert stored.next_run_at == clock.now() + 10 and stored.run_count == 2
        assert [r.slot for r in store.records(tick.id)] == [r.slot for r in tick.history]
        assert store.dead_letter() == [doomed.id]
        assert scheduler.shutdown(timeout=5)
    with PostgresTaskStore(postgres_dsn) as store:
        again = make_scheduler(clock=clock, store=store, start=False)
        restored = {t.name: t for t in again.tasks()}
        assert restored["tick"].run_count == 2 and restored["doomed"].status is TaskStatus.FAILED


def test_an_action_without_an_import_path_is_rejected_and_nothing_is_written(
    make_scheduler: SchedulerFactory, clock: FakeClock, postgres_dsn: str
) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        scheduler = make_scheduler(clock=clock, store=store)
        scheduler.schedule("kept", jobs.noop, FixedRate(60))
        with pytest.raises(ValidationError, match="has none"):
            scheduler.schedule("job", lambda: None, FixedRate(60))
        assert [s.task.name for s in store.load_all()] == ["kept"]


def test_an_unimportable_callable_fails_the_load_naming_the_task(postgres_dsn: str) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="gone")))
    with psycopg.connect(postgres_dsn) as connection:
        connection.execute("UPDATE tasks SET definition = replace(definition, 'noop', 'nothing')")
    with PostgresTaskStore(postgres_dsn) as store, pytest.raises(StoreError, match="gone"):
        store.load_all()


# -- opening, and every way it can go wrong ----------------------------------------------


def test_a_database_of_another_application_is_refused_and_left_untouched(
    postgres_dsn: str,
) -> None:
    with psycopg.connect(postgres_dsn) as connection:
        connection.execute("CREATE TABLE tasks (id int)")
    with pytest.raises(StoreError, match="not an lldsched store"):
        PostgresTaskStore(postgres_dsn)
    with psycopg.connect(postgres_dsn) as connection:
        rows = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
    assert rows == [("tasks",)]


def test_a_schema_from_the_future_is_refused(postgres_dsn: str) -> None:
    PostgresTaskStore(postgres_dsn).close()
    with psycopg.connect(postgres_dsn) as connection:
        connection.execute("UPDATE lldsched_meta SET value = '99'")
    with pytest.raises(StoreError, match="schema version 99"):
        PostgresTaskStore(postgres_dsn)


# What schema 10 added, undone: a database as version 9 left it; what 9 and 10 added, one
# as version 8 left it; and so on down to BEFORE_3, a database as version 2 left it.
BEFORE_10 = (
    "ALTER TABLE tasks DROP COLUMN blocked_due, DROP COLUMN blocked_slot, DROP COLUMN blocked_next"
)
BEFORE_9 = f"{BEFORE_10}; ALTER TABLE tasks DROP COLUMN grid"
BEFORE_8 = f"{BEFORE_9}; ALTER TABLE tasks DROP COLUMN resume_at"
BEFORE_7 = f"{BEFORE_8}; ALTER TABLE records DROP COLUMN node"
BEFORE_6 = f"{BEFORE_7}; DROP TRIGGER tasks_first_version ON tasks; " + (
    "DROP FUNCTION lldsched_first_version()"
)
BEFORE_5 = f"{BEFORE_6}; DROP INDEX removals_task"
BEFORE_4 = f"{BEFORE_5}; ALTER TABLE tasks DROP COLUMN slot, DROP COLUMN slot_due"
BEFORE_3 = f"{BEFORE_4}; ALTER TABLE records DROP COLUMN name"


def schema_of(dsn: str) -> str:
    """The schema version the database at ``dsn`` says it has."""
    with psycopg.connect(dsn) as connection:
        ((version,),) = connection.execute("SELECT value FROM lldsched_meta").fetchall()
    return str(version)


def test_a_schema_of_version_1_is_upgraded_in_place_keeping_its_tasks(postgres_dsn: str) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept")))
    with psycopg.connect(postgres_dsn) as connection:  # as version 1 left it
        connection.execute(
            "ALTER TABLE tasks DROP COLUMN resumed, DROP COLUMN waited, DROP COLUMN slot,"
            " DROP COLUMN slot_due"
        )
        connection.execute("ALTER TABLE records DROP COLUMN name")
        connection.execute("DROP INDEX removals_task")
        connection.execute(BEFORE_6)
        connection.execute("UPDATE lldsched_meta SET value = '1'")
    with PostgresTaskStore(postgres_dsn) as store:
        assert [stored.task.id for stored in store.load_all()] == ["kept"]
        store.save(snapshot(task(id="kept"), TaskStatus.PAUSED))  # writes the new column
        stored = store.get("kept")
        assert stored is not None and stored.status is TaskStatus.PAUSED
    assert schema_of(postgres_dsn) == str(SCHEMA_VERSION)


def test_a_schema_of_version_2_is_upgraded_in_place_its_records_reading_their_tasks_name(
    postgres_dsn: str,
) -> None:
    """The one older version no test started from: version 3 keeps the name each run had
    (``records.name``); a record written before reads its task's name, and those written
    since keep their own (each later step too: a resumed run's slot, the node)."""
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept", name="before")), record("kept", 0))
    with psycopg.connect(postgres_dsn) as connection:  # as version 2 left it
        connection.execute(BEFORE_3)
        connection.execute("UPDATE lldsched_meta SET value = '2'")
    with PostgresTaskStore(postgres_dsn) as store:
        (kept,) = store.load_all()
        assert (kept.task.id, kept.task.name, kept.slot) == ("kept", "before", None)
        renamed = snapshot(task(id="kept", name="after"))
        store.save(renamed._replace(slot=T0 - 5), record("kept", 1)._replace(node="web-1:7:a"))
        assert [(r.name, r.node) for r in store.records("kept")] == [
            ("after", None),  # written before version 3: its task's name, as it is now
            ("t", "web-1:7:a"),
        ]
        stored = store.get("kept")
        assert stored is not None and stored.slot == T0 - 5
    assert schema_of(postgres_dsn) == str(SCHEMA_VERSION)


def test_a_schema_of_version_3_gains_the_slot_of_a_resumed_plans_run(postgres_dsn: str) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept"))._replace(next_run_at=T0 + 5))
    with psycopg.connect(postgres_dsn) as connection:  # as version 3 left it
        connection.execute(BEFORE_4)
        connection.execute("UPDATE lldsched_meta SET value = '3'")
    with PostgresTaskStore(postgres_dsn) as store:
        (kept,) = store.load_all()
        assert (kept.task.id, kept.next_run_at, kept.slot) == ("kept", T0 + 5, None)
        store.save(kept._replace(next_run_at=T0 + 9, slot=T0 + 5))  # writes the new column
        stored = store.get("kept")
        assert stored is not None and (stored.next_run_at, stored.slot) == (T0 + 9, T0 + 5)
    assert schema_of(postgres_dsn) == str(SCHEMA_VERSION)


def test_a_schema_of_version_4_gains_the_index_a_new_rows_first_version_reads(
    postgres_dsn: str,
) -> None:
    """Version 5 indexes the removals by task: a row registered again starts one past its
    id's removals (``postgres/tables.FIRST_VERSION``), looked up at every registration.  A
    database of version 4 gains the index, and keeps its tasks and removals."""
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept")))
        store.save(snapshot(task(id="gone")))
        store.delete("gone")
    with psycopg.connect(postgres_dsn) as connection:  # as version 4 left it
        connection.execute("DROP INDEX removals_task")
        connection.execute(BEFORE_6)
        connection.execute("UPDATE lldsched_meta SET value = '4'")
    with PostgresTaskStore(postgres_dsn) as store:
        assert [stored.task.id for stored in store.load_all()] == ["kept"]
        store.save(snapshot(task(id="gone")))  # registered again: past its removal
    assert schema_of(postgres_dsn) == str(SCHEMA_VERSION)
    with psycopg.connect(postgres_dsn) as connection:
        indexes = "SELECT indexname FROM pg_indexes WHERE tablename = 'removals'"
        assert "removals_task" in {name for (name,) in connection.execute(indexes)}
        versions = "SELECT version FROM tasks WHERE id = 'gone' UNION ALL "
        versions += "SELECT version FROM removals WHERE task_id = 'gone'"
        assert [v for (v,) in connection.execute(versions)] == [3, 2]


def insert_row(connection: psycopg.Connection[Any], task_id: str, *, name: str) -> None:
    """Insert a row of ``task_id`` on ``connection`` as a writer with no lock of the id and
    its own version, 1, writes it (a process of an older release, schema 4 or 5 code,
    still running in a rolling upgrade)."""
    connection.execute(
        "INSERT INTO tasks (id, name, definition, priority, status, next_run_at, attempt,"
        " run_count, failure_count, running, version, writer)"
        " VALUES (%s, %s, %s, 2, 'scheduled', %s, 0, 0, 0, false, 1, 'older')",
        (task_id, name, encode_task(task(id=task_id, name=name)), T0),
    )


def older_release_registers(dsn: str, task_id: str, *, name: str) -> None:
    """A registration as a process of an older release writes it (:func:`insert_row`)."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        insert_row(connection, task_id, name=name)


def test_a_schema_of_version_5_gains_the_trigger_that_numbers_every_new_row(
    postgres_dsn: str,
) -> None:
    """Version 6 numbers a new row past its id's removals in the database (a trigger),
    whoever inserts it: a process of an older release still running after the upgrade (it
    checked the schema when it opened, and never again) registers an id it removed at
    version 1, below the removal another node's feed remembers while a transaction holds
    the feed's horizon back.  That feed skipped the row for good; now the row is past the
    removal, and every feed reads it."""
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="gone")))
    with psycopg.connect(postgres_dsn) as connection:  # as version 5 left it
        connection.execute(BEFORE_6)
        connection.execute("UPDATE lldsched_meta SET value = '5'")
    with (
        PostgresTaskStore(postgres_dsn) as remover,
        PostgresTaskStore(postgres_dsn) as reader,
        psycopg.connect(postgres_dsn) as long,  # holds every feed's horizon back
    ):
        long.execute("SELECT pg_catalog.pg_current_xact_id()")
        remover.delete("gone")
        assert [(c.task_id, c.snapshot) for c in reader.changes()] == [("gone", None)]
        older_release_registers(postgres_dsn, "gone", name="again")
        (change,) = reader.changes()
        assert change.snapshot is not None and change.snapshot.task.name == "again"
        long.rollback()
    assert schema_of(postgres_dsn) == str(SCHEMA_VERSION)
    with psycopg.connect(postgres_dsn) as connection:
        versions = "SELECT version FROM tasks WHERE id = 'gone' UNION ALL "
        versions += "SELECT version FROM removals WHERE task_id = 'gone'"
        assert [v for (v,) in connection.execute(versions)] == [3, 2]


def test_a_schema_of_version_6_gains_the_node_of_each_record(postgres_dsn: str) -> None:
    """Version 7 keeps the process that ran each record (``ExecutionRecord.node``): a
    database of version 6 gains the column, its records read no node, and the records
    written since keep theirs."""
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept")), record("kept", 0))
    with psycopg.connect(postgres_dsn) as connection:  # as version 6 left it
        connection.execute(BEFORE_7)
        connection.execute("UPDATE lldsched_meta SET value = '6'")
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="new")), record("new", 1)._replace(node="web-1:7:abc123"))
        assert [r.node for r in store.records()] == [None, "web-1:7:abc123"]
    assert schema_of(postgres_dsn) == str(SCHEMA_VERSION)


def test_a_schema_of_version_7_gains_the_slot_to_resume_at(postgres_dsn: str) -> None:
    """Version 8 keeps whether a plan's ``waited`` is the slot it resumes at
    (``TaskSnapshot.resumes``): a plan's row written before reads as a slot decided to
    run, as that release read it, and a write since keeps it, a settle's too."""
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept"))._replace(next_run_at=T0 + 5, waited=T0 + 60))
    with psycopg.connect(postgres_dsn) as connection:  # as version 7 left it
        connection.execute(BEFORE_8)
        connection.execute("UPDATE lldsched_meta SET value = '7'")
    with PostgresTaskStore(postgres_dsn) as store:
        (kept,) = store.load_all()
        assert (kept.waited, kept.resumes) == (T0 + 60, False)
        (claim,) = store.claim(now=T0 + 5, limit=1)
        settled = kept._replace(next_run_at=T0 + 6, run_count=1, resumes=True)
        store.settle(settled, record("kept", 0)._replace(token=claim.token), token=claim.token)
        stored = store.get("kept")
        assert stored is not None and (stored.waited, stored.resumes) == (T0 + 60, True)
    assert schema_of(postgres_dsn) == str(SCHEMA_VERSION)


def test_a_schema_of_version_8_gains_the_grid_origin(postgres_dsn: str) -> None:
    """Version 9 keeps a fixed rate's grid origin (``TaskSnapshot.grid``): a row written
    before reads none (a restart counts the grid from its slot, as that release did), and
    a write since keeps it, a settle's too, to the last bit."""
    origin = T0 + 0.1
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept"))._replace(next_run_at=T0 + 5, grid=origin))
    with psycopg.connect(postgres_dsn) as connection:  # as version 8 left it
        connection.execute(BEFORE_9)
        connection.execute("UPDATE lldsched_meta SET value = '8'")
    with PostgresTaskStore(postgres_dsn) as store:
        (kept,) = store.load_all()
        assert (kept.next_run_at, kept.grid) == (T0 + 5, None)
        (claim,) = store.claim(now=T0 + 5, limit=1)
        settled = kept._replace(next_run_at=T0 + 6, run_count=1, grid=origin)
        store.settle(settled, record("kept", 0)._replace(token=claim.token), token=claim.token)
        stored = store.get("kept")
        assert stored is not None and stored.grid == origin
    assert schema_of(postgres_dsn) == str(SCHEMA_VERSION)


def test_a_schema_of_version_9_gains_the_slot_found_blocked(postgres_dsn: str) -> None:
    """Version 10 keeps the slot a BLOCKED task's wait was found blocked at, when a
    reschedule moved its next slot (``TaskSnapshot.blocked_due``, ``blocked_slot``): a row
    written before reads none (its wait is of the slot it is due at, as that release read
    it), and a write since keeps it, to the last bit.  A node of an older release (a
    rolling upgrade, before it notices the newer schema) that writes the row leaves it
    unread: a later wait it found blocked, at the very due instant too (it released the
    wait before that instant, and found that slot blocked again), is no wait of that slot
    (before, the slot was read while the row was still due when it was written)."""
    found = T0 + 0.1
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept"), TaskStatus.BLOCKED))
    with psycopg.connect(postgres_dsn) as connection:  # as version 9 left it
        connection.execute(BEFORE_10)
        connection.execute("UPDATE lldsched_meta SET value = '9'")
    with PostgresTaskStore(postgres_dsn) as store:
        (kept,) = store.load_all()
        assert (kept.status, kept.blocked_due, kept.blocked_slot) == (
            TaskStatus.BLOCKED, None, None,
        )  # fmt: skip
        moved = kept._replace(next_run_at=T0 + 1800, blocked_due=found, blocked_slot=found)
        store.save(moved)
        stored = store.get("kept")
        assert stored is not None and (stored.blocked_due, stored.blocked_slot) == (found, found)
    assert schema_of(postgres_dsn) == str(SCHEMA_VERSION)
    for due in (T0 + 1800, T0 + 5400):
        with PostgresTaskStore(postgres_dsn) as store:  # this release's write of the wait
            store.load_all()
            store.save(moved)
            again = store.get("kept")
            assert again is not None and (again.blocked_due, again.blocked_slot) == (found, found)
        with psycopg.connect(postgres_dsn) as older:  # its release, then that slot blocked
            older.execute(  # again; or its next slot found blocked: each a write of its own
                "UPDATE tasks SET status = 'scheduled', version = version + 1 WHERE id = 'kept'"
            )
            older.execute(
                "UPDATE tasks SET status = 'blocked', next_run_at = %s, version = version + 1"
                " WHERE id = 'kept'",
                (due,),
            )
        with PostgresTaskStore(postgres_dsn) as store:
            stored = store.get("kept")
            assert stored is not None and (stored.blocked_due, stored.blocked_slot) == (None, None)


def test_a_slot_to_resume_at_stands_only_while_it_is_the_waited_one(postgres_dsn: str) -> None:
    """A node of an older release (a rolling upgrade, before it notices the newer schema)
    writes ``waited`` without ``resume_at``: a slot of its own there is not read as the
    slot to resume at the row kept before."""
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept"))._replace(waited=T0 + 60, resumes=True))
        again = store.get("kept")
        assert again is not None and again.resumes
    with psycopg.connect(postgres_dsn) as connection:  # the older node's run_now
        connection.execute("UPDATE tasks SET waited = %s WHERE id = 'kept'", (T0 + 30,))
    with PostgresTaskStore(postgres_dsn) as store:
        stored = store.get("kept")
        assert stored is not None and (stored.waited, stored.resumes) == (T0 + 30, False)


def test_a_plans_end_is_kept_in_the_slot_to_resume_at_and_read_with_waited(
    postgres_dsn: str,
) -> None:
    """Where a plan's runs end (``TaskSnapshot.until``) is kept in ``resume_at`` (always
    after ``waited``, which the slot to resume at is: no schema step).  A node of an older
    release reads it as no slot to resume at, and its write of another ``waited`` past it,
    or of none, leaves no end read."""
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept"))._replace(waited=T0 + 60, until=T0 + 600))
        again = store.get("kept")
        assert again is not None and (again.resumes, again.until) == (False, T0 + 600)
    with psycopg.connect(postgres_dsn) as connection:
        read = "SELECT resume_at, coalesce(resume_at = waited, false) FROM tasks"
        assert connection.execute(read).fetchone() == (T0 + 600, False)
        connection.execute("UPDATE tasks SET waited = %s WHERE id = 'kept'", (T0 + 660,))
    with PostgresTaskStore(postgres_dsn) as store:
        (row,) = store.load_all()
        assert (row.waited, row.resumes, row.until) == (T0 + 660, False, None)
    with psycopg.connect(postgres_dsn) as connection:
        connection.execute("UPDATE tasks SET waited = NULL WHERE id = 'kept'")
    with PostgresTaskStore(postgres_dsn) as store:
        stored = store.get("kept")
        assert stored is not None and (stored.waited, stored.until) == (None, None)


def test_the_slot_of_a_resumed_run_stands_only_while_its_due_instant_does(
    postgres_dsn: str,
) -> None:
    """A node of an older release (a rolling upgrade) writes rows without ``slot``: its
    pause leaves the due instant and the slot with it, its settle or reschedule moves the
    due instant, and the slot left behind is not read."""
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept"))._replace(next_run_at=T0 + 9, slot=T0))
    with psycopg.connect(postgres_dsn) as connection:  # the older node's pause
        connection.execute("UPDATE tasks SET status = 'paused' WHERE id = 'kept'")
    with PostgresTaskStore(postgres_dsn) as store:
        (row,) = store.load_all()
        assert (row.status, row.next_run_at, row.slot) == (TaskStatus.PAUSED, T0 + 9, T0)
    with psycopg.connect(postgres_dsn) as connection:  # its settle: the next slot
        connection.execute(
            "UPDATE tasks SET status = 'scheduled', next_run_at = %s WHERE id = 'kept'",
            (T0 + 60,),
        )
    with PostgresTaskStore(postgres_dsn) as store:
        (row,) = store.load_all()
        assert (row.next_run_at, row.slot) == (T0 + 60, None)
        again = store.get("kept")
        assert again is not None and again.slot is None


def test_an_upgrade_that_fails_leaves_the_database_as_it_was(postgres_dsn: str) -> None:
    PostgresTaskStore(postgres_dsn).close()
    with psycopg.connect(postgres_dsn) as connection:  # version 1, but the column is there
        connection.execute("UPDATE lldsched_meta SET value = '1'")
    with pytest.raises(StoreError, match="resumed"):
        PostgresTaskStore(postgres_dsn)
    with psycopg.connect(postgres_dsn) as connection:
        assert connection.execute("SELECT value FROM lldsched_meta").fetchall() == [("1",)]


def test_a_refused_password_names_the_dsn_without_the_password(
    postgres_server: PostgresServer,
) -> None:
    dsn = postgres_server.dsn(password="hunter2-secret")
    with pytest.raises(StoreError) as caught:
        PostgresTaskStore(dsn)
    message = str(caught.value)
    assert "hunter2-secret" not in message and "password=***" in message
    assert "password authentication failed" in message and str(postgres_server.port) in message


def test_an_unreachable_server_and_a_malformed_dsn_are_store_errors_without_the_password() -> None:
    with pytest.raises(StoreError, match="cannot connect") as caught:
        PostgresTaskStore("postgresql://me:s3cret-pw@127.0.0.1:1/db", timeout=2)
    assert "s3cret-pw" not in str(caught.value) and "127.0.0.1" in str(caught.value)
    with pytest.raises(StoreError) as caught:
        PostgresTaskStore("host=nowhere password=s3cret-pw = oops")
    assert "s3cret-pw" not in str(caught.value)
    assert redact("postgresql://me:pw@h/db") == "user=me password=*** dbname=db host=h"


@pytest.mark.parametrize(
    "dsn",
    [
        "host=127.0.0.1 port=1 user=me pasword=s3cret-pw dbname=db",  # a misspelled key
        "postgresql://me@127.0.0.1:1/db?passwrd=s3cret-pw",  # the same in a URI's query
        "host=127.0.0.1 port=1 user=me sslpassword=s3cret-pw dbname=db",  # libpq's secrets
        "postgresql://me@127.0.0.1:1/db?sslpassword=s3cret-pw&sslmode=disable",
        "host=127.0.0.1 port=1 oauth_client_secret=s3cret-pw dbname=db",
    ],
    ids=["key-typo", "query-typo", "sslpassword", "query-sslpassword", "oauth-secret"],
)
def test_a_dsn_shows_no_value_of_a_secret_or_unknown_key(dsn: str) -> None:
    """A key libpq does not know (``pasword=``, a typo of the password's key) kept its
    value in the message, and so did libpq's other secrets (``sslpassword``, which
    libpq itself never displays): only the values of the keys libpq displays are shown;
    the key stays, so a typo is still seen."""
    with pytest.raises(StoreError, match="cannot connect") as caught:
        PostgresTaskStore(dsn, timeout=2)
    message = str(caught.value)
    assert "s3cret-pw" not in message and "=***" in message
    assert "s3cret-pw" not in redact(dsn) and "127.0.0.1" in redact(dsn)


def test_the_listener_logs_a_connection_failure_without_the_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    said = threading.Event()

    class Said(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.set()

    handler = Said(level=logging.WARNING)
    logging.getLogger("lldsched").addHandler(handler)
    caplog.set_level(logging.WARNING, logger="lldsched")
    # libpq quotes the part of a dsn it cannot parse: here the password
    listener = Listener("postgresql://me:s3cret pw@h/db", channel="c", node="n", wake=lambda: None)
    try:
        assert said.wait(20.0)
    finally:
        listener.stop()
        logging.getLogger("lldsched").removeHandler(handler)
    assert "lost its connection" in caplog.text and "unexpected spaces" in caplog.text
    assert "s3cret" not in caplog.text


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        (5432, "got 5432"),
        (None, "got None"),
        (b"postgresql://me:s3cret-pw@h/db", "got bytes 'user=me password=*** dbname=db host=h'"),
        ({"host": "h", "password": "s3cret-pw"}, "got {'host': 'h', 'password': '***'}"),
        ({"host": "h", "sslpassword": "s3cret-pw"}, "got {'host': 'h', 'sslpassword': '***'}"),
    ],
    ids=["int", "none", "bytes", "mapping", "mapping-sslpassword"],
)
def test_a_dsn_of_the_wrong_type_is_named_with_any_password_hidden(dsn: object, shown: str) -> None:
    with pytest.raises(ValidationError, match="dsn must be a libpq connection string") as caught:
        PostgresTaskStore(dsn)  # type: ignore[arg-type]
    assert shown in str(caught.value) and "s3cret" not in str(caught.value)


@pytest.mark.parametrize(
    "dsn",
    ["postgresql://me:s3cret-pw@[::1/db", "postgresql://me:s3cret-pw%zz@h/db"],
    ids=["the-whole-uri", "the-password-token"],
)
def test_a_malformed_uri_that_libpq_quotes_back_is_redacted_in_the_reason(dsn: str) -> None:
    with pytest.raises(StoreError, match="cannot connect") as caught:
        PostgresTaskStore(dsn, timeout=2)
    assert "s3cret" not in str(caught.value) and "me:***@" in str(caught.value)


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://me:p@ss-s3cret@127.0.0.1:1/db",  # an '@' of the password
        "postgresql://me:p@ss@s3cret@127.0.0.1:1/db?sslmode=disable",  # two of them
        "postgresql://m@e:s3cret@127.0.0.1:1/db",  # an '@' of the user
        "postgresql://me:s3/cret-pw@127.0.0.1:1/db",  # a '/': 's3' was taken for a port
    ],
    ids=["password", "password-twice", "user", "slash"],
)
def test_a_uri_whose_password_holds_an_unencoded_at_sign_or_slash_is_refused_hiding_it(
    dsn: str,
) -> None:
    """libpq ends a URI's user part at its first '@': the rest of a password that holds
    one was taken as the host, and the error ("failed to resolve host 'ss-s3cret@...'")
    showed it (a '/' in it: the rest was taken for the port and the database).  Such a
    dsn can never connect as meant: it is refused before connecting, saying to write the
    '@' as %40 (the '/' as %2F), the password hidden whole."""
    with pytest.raises(ValidationError, match=r"not percent-encoded.*%40") as caught:
        PostgresTaskStore(dsn, timeout=2)
    message = str(caught.value)
    assert "s3cret" not in message and "p@ss" not in message and ":***@127.0.0.1:1/db" in message


@pytest.mark.parametrize(
    "dsn",
    [
        "host=127.0.0.1 port=1 pasword=s3cret-pw\x00",
        "host=127.0.0.1 port=1 pasword=s3cret-pw \udcff",
        "host=127.0.0.1\x00pasword=s3cret-pw",  # a NUL ends the host's value, as a blank
        "host=127.0.0.1 pasword=s3c\udcffret-pw",
        "host=127.0.0.1 pasword='s3cret pw'\x00",
        "postgresql://me:pw@127.0.0.1:1/db?pasword=s3cret-pw&x=\x00",
        "postgresql://me:s3cret-pw@h/db?a=1\udcff",
        "postgresql://me:s3c\x00ret-pw@h/db",
        "postgresql://me:pw@127.0.0.1:1/d@b?pasword=s3cret-pw",
        "postgresql://me:s3@cret-pw@127.0.0.1:1/db",  # not shown as the host libpq reads
    ],
    ids=["nul-after-typo", "surrogate-after-typo", "nul-before-typo", "surrogate-in-typo",
         "nul-after-quoted-typo", "uri-query-nul", "uri-surrogate", "uri-password-nul",
         "uri-at-and-typo", "uri-at-in-password"],
)  # fmt: skip
def test_a_dsn_libpq_cannot_be_given_is_refused_naming_the_bad_part_not_a_secret(
    dsn: str,
) -> None:
    """A NUL, a lone surrogate (an undecodable byte of an environment variable) or an
    '@' of a URI's password, with a misspelt key: the refusal showed the dsn with the
    password key's value and the URI's password hidden alone, and ``pasword=s3cret-pw``
    whole.  Every value but those libpq displays is hidden, as in every other message
    that names a dsn, and the bad part is named by its place."""
    with pytest.raises(ValidationError) as caught:
        PostgresTaskStore(dsn, timeout=2)
    message = str(caught.value)
    ungiven = re.search(r"[\x00\ud800-\udfff]", dsn)
    if ungiven is None:
        bad_part = "an '@' or a '/'"
    else:
        what = "a NUL" if ungiven.group() == "\x00" else "a lone surrogate"
        bad_part = f"{what} (character {ungiven.start() + 1} of {len(dsn)})"
    assert f"holds {bad_part}" in message
    assert "s3c" not in message and "cret" not in message, message
    assert "=***" in message or ":***@" in message


@pytest.mark.parametrize(
    ("dsn", "reason"),
    [
        ("host=127.0.0.1 port=1 password s3cret-pw", 'missing "=" after "password"'),
        ("host=127.0.0.1 port=1 passwords3cret-pw", 'missing "=" after "***"'),
        ("host=127.0.0.1 port=1 password=s3cret-pw s3cret-pw2", 'missing "=" after "***"'),
    ],
    ids=["key-without-its-equals", "key-and-value-run-together", "a-word-after-the-password"],
)
def test_a_word_libpq_quotes_back_from_a_dsn_it_cannot_parse_is_hidden_unless_a_key(
    dsn: str, reason: str
) -> None:
    """libpq's own parser (no server): a key that lost its ``=`` is named, as libpq
    names it; any other word may be a password (``password s3cret``, or both run
    together), and was shown in the dsn and in libpq's reason."""
    with pytest.raises(StoreError, match="cannot connect") as caught:
        PostgresTaskStore(dsn, timeout=2)
    message = str(caught.value)
    assert reason in message and "127.0.0.1" in message
    assert "s3cret" not in message, message
    assert "s3cret" not in redact(dsn)


def test_a_short_secret_is_hidden_where_it_stands_alone_not_inside_libpqs_words() -> None:
    """``pasword=a``: its value, ``a``, was replaced inside every word of libpq's reason
    (``inv***lid connection option "p***sword"``); the key's name is what says the typo."""
    with pytest.raises(StoreError) as caught:
        PostgresTaskStore("host=127.0.0.1 port=1 pasword=a", timeout=2)
    assert str(caught.value) == (
        "cannot connect to the PostgreSQL store 'host=127.0.0.1 port=1 pasword=***': "
        'invalid connection option "pasword"'
    )


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("lease", 0, "lease must be"), ("poll", -1, "poll must be"), ("retention", 0, "retention")],
)
def test_bad_options_are_rejected_before_connecting(
    option: str, value: float, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        options: dict[str, Any] = {option: value}
        PostgresTaskStore("postgresql://nowhere:1/db", **options)


def test_a_closed_store_says_so(postgres_dsn: str) -> None:
    store = PostgresTaskStore(postgres_dsn)
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.save(snapshot(task()))
    assert "closed" in repr(store) and "***" in repr(store)


def forget_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """The PostgreSQL store's package and every module of it taken out of ``sys.modules``
    (put back after the test), so that importing the package runs it, as a process that
    never imported it does: its ``__init__`` imports the store, which imports psycopg."""
    for name in [name for name in sys.modules if name.startswith("lldsched.stores.postgres")]:
        monkeypatch.delitem(sys.modules, name)


def test_without_psycopg_importing_the_store_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    forget_the_store(monkeypatch)
    with pytest.raises(ImportError, match=r"lldsched\[postgres\]"):
        importlib.import_module("lldsched.stores.postgres")


@pytest.mark.parametrize("version", ["3.1.18", "3.2.13"])
def test_with_a_psycopg_older_than_3_3_importing_the_store_names_the_version_and_the_extra(
    monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    """The LISTEN thread calls notifies(timeout=...), new in psycopg 3.2, and a verb's
    hold reads its transaction's ``status``, new in 3.3: an older one is refused at
    import, not a TypeError in that thread at the first notification, nor an
    AttributeError at the end of every verb's hold (what psycopg 3.2 gave)."""
    monkeypatch.setattr(psycopg, "__version__", version)
    forget_the_store(monkeypatch)
    found = re.escape(version)
    with pytest.raises(
        ImportError, match=rf"psycopg 3\.3 or newer, found {found}.*lldsched\[postgres\]"
    ):
        importlib.import_module("lldsched.stores.postgres")


# -- outages ------------------------------------------------------------------------------


def test_after_a_database_restart_the_failed_call_is_a_store_error_and_the_next_reconnects(
    postgres_server: PostgresServer, postgres_dsn: str
) -> None:
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="a")))
        postgres_server.restart()
        with pytest.raises(StoreError, match=r"PostgreSQL store .*password=\*\*\*.* failed"):
            store.get("a")
        stored = store.get("a")
        assert stored is not None and stored.task.id == "a"


def test_connections_get_bounded_timeouts_unless_the_dsn_sets_its_own() -> None:
    bounded = conninfo.conninfo_to_dict(with_timeouts("host=h dbname=d", timeout=10))
    assert bounded["tcp_user_timeout"] == "10000" and bounded["connect_timeout"] == "10"
    assert bounded["keepalives"] == "1"
    own = conninfo.conninfo_to_dict(with_timeouts("host=h connect_timeout=3", timeout=10))
    assert own["connect_timeout"] == "3"


def test_a_store_keeps_no_finished_task_in_memory_and_its_feed_still_reads_the_others(
    postgres_dsn: str,
) -> None:
    with PostgresTaskStore(postgres_dsn) as store, PostgresTaskStore(postgres_dsn) as other:
        scheduler = Scheduler(store=store, retain_finished=10)
        with scheduler:
            for _ in range(100):  # "send the reminder now", all day
                scheduler.schedule("reminder", jobs.noop, OneTime(delay=0))
            assert scheduler.wait_idle(timeout=30)
            store.flush()
            assert len(scheduler.tasks()) <= 11  # the scheduler retired the rest...
            assert (store._defined, store._added) == ({}, {})  # ...and so did the store
        # Another node's task, registered then finished: read once, then forgotten once
        # the feed's horizon is past its write (no later read can give it again).
        elsewhere = task(id="elsewhere")
        other.save(snapshot(elsewhere))
        other.save(snapshot(elsewhere, TaskStatus.CANCELLED)._replace(next_run_at=None))
        changes = store.changes()
        assert [(c.task_id, c.snapshot is not None) for c in changes] == [("elsewhere", True)]
        assert store.changes() == []
        assert "elsewhere" not in store._seen and "elsewhere" not in store._defined
        assert "elsewhere" not in store._decoded
        # A later write of that id by the other node (a replacement) is still read.
        renamed = task(id="elsewhere", name="renamed")
        other.save(snapshot(renamed, TaskStatus.CANCELLED)._replace(next_run_at=None))
        (change,) = store.changes()
        assert change.snapshot is not None and change.snapshot.task.name == "renamed"


def test_a_retired_task_registered_again_by_id_on_a_reopened_store_is_replaced(
    postgres_dsn: str,
) -> None:
    for _ in range(2):  # a service that registers its one-off job by id at every start
        with PostgresTaskStore(postgres_dsn) as store:
            scheduler = Scheduler(store=store, retain_finished=0)
            with scheduler:
                scheduler.schedule(
                    "once", jobs.noop, OneTime(delay=0), id="once", replace_existing=True
                )
                assert scheduler.wait_idle(timeout=10)
                store.flush()
    with PostgresTaskStore(postgres_dsn) as store:
        stored = store.get("once")
        assert stored is not None and stored.status is TaskStatus.SUCCEEDED
        assert len(store.records("once")) == 1  # ran once, not again at the second start


def test_a_listener_whose_server_is_away_says_it_once_and_when_it_listens_again(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lldsched.stores.postgres import listen as postgres_listen

    monkeypatch.setattr(postgres_listen, "_RECONNECT", 0.01)
    with socket.socket() as probe:  # a port nothing listens on: every attempt is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    away = f"host=127.0.0.1 port={port} dbname=postgres user=nobody connect_timeout=1"
    lines: list[logging.LogRecord] = []
    changed = threading.Condition()  # guards lines; notified at each record

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            with changed:
                lines.append(record)
                changed.notify_all()

    def count(level: int, text: str) -> int:
        return sum(r.levelno == level and text in r.getMessage() for r in lines)

    logger, watch = logging.getLogger("lldsched"), Watch(logging.DEBUG)
    level = logger.level
    logger.addHandler(watch)
    logger.setLevel(logging.DEBUG)  # setLevel: it clears the logger's enabled-for cache
    listener = postgres_listen.Listener(away, channel="lldsched", node="n", wake=lambda: None)
    try:
        with changed:
            assert changed.wait_for(lambda: count(logging.DEBUG, "still cannot") >= 5, 10)
            listener._dsn = postgres_dsn  # the server is back
            assert changed.wait_for(lambda: count(logging.WARNING, "listens again, after") == 1, 10)
    finally:
        listener.stop()
        logger.removeHandler(watch)
        logger.setLevel(level)
    (lost,) = [r for r in lines if "lost its connection" in r.getMessage()]
    # Which store's listener (a process may have several), its dsn as every line names it.
    assert lost.getMessage().startswith(
        f"PostgreSQL listener on {redact(away)!r} lost its connection ("
    )
    (back,) = [r for r in lines if "listens again, after" in r.getMessage()]
    failed = count(logging.DEBUG, "still cannot") + 1
    assert back.getMessage() == (
        f"PostgreSQL listener on {redact(postgres_dsn)!r} listens again, after {failed} "
        "failed attempts"
    )


# Functions of the store's SQL, each shadowed by one that raises naming itself.  In a
# schema put before pg_catalog in the path, an exact match wins; in the store's own
# schema (a user's ``public.now()``), pg_catalog (implicitly first) keeps the exact
# matches, but a better match wins: ``nextval(text)`` over ``nextval(regclass)`` for a
# quoted name, ``pg_advisory_xact_lock(integer)`` over ``(bigint)`` for a small key,
# ``unnest(text[])`` over ``unnest(anyarray)`` (a settle's arrays).
BEFORE_CATALOG = (
    "clock_timestamp()", "pg_current_xact_id()", "pg_current_snapshot()",
    "pg_snapshot_xmin(pg_snapshot)", "pg_notify(text, text)", "current_schema()",
    "set_config(text, text, boolean)", "pg_advisory_xact_lock(bigint)", "nextval(regclass)",
)  # fmt: skip
IN_OWN_SCHEMA = ("nextval(text)", "pg_advisory_xact_lock(integer)", "unnest(text[])")


def shadow(server: PostgresServer, schema: str, signature: str) -> None:
    """Create ``schema.signature``: a function that raises naming itself, whatever its
    declared return type (it never returns)."""
    name = signature.split("(")[0]
    returns = {
        "clock_timestamp": "timestamptz", "pg_current_xact_id": "xid8",
        "pg_current_snapshot": "pg_snapshot", "pg_snapshot_xmin": "xid8",
        "pg_notify": "void", "current_schema": "name", "set_config": "text",
        "pg_advisory_xact_lock": "void", "nextval": "bigint", "unnest": "SETOF text",
    }[name]  # fmt: skip
    server.sql(
        f"CREATE FUNCTION {schema}.{signature} RETURNS {returns} LANGUAGE plpgsql AS "
        f"$$ BEGIN RAISE EXCEPTION 'shadowed {schema}.{name} ran'; END $$"
    )


def test_functions_shadowed_in_the_search_path_are_never_called(
    postgres_server: PostgresServer, make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    """A ``search_path`` that names a schema before ``pg_catalog``, or functions a user
    created in the store's own schema, cannot change what the store runs: it calls
    ``pg_catalog``'s functions by their qualified names, and its sessions search the
    store's schema alone (``pg_catalog`` implicitly first)."""
    own = postgres_server.create_schema()
    schema = str(conninfo.conninfo_to_dict(own)["options"]).split("=")[1]
    postgres_server.sql(f"CREATE SCHEMA {schema}_shadow")
    for signature in BEFORE_CATALOG:
        shadow(postgres_server, f"{schema}_shadow", signature)
    for signature in IN_OWN_SCHEMA:
        shadow(postgres_server, schema, signature)
    dsn = own.replace(
        f"search_path%3D{schema}", f"search_path%3D{schema},{schema}_shadow,pg_catalog"
    )
    with psycopg.connect(dsn) as connection, pytest.raises(psycopg.Error, match="shadowed"):
        connection.execute("SELECT clock_timestamp()")  # the path does shadow it
    with PostgresTaskStore(dsn) as store, PostgresTaskStore(dsn) as other:
        scheduler = make_scheduler(clock=clock, store=store)
        tick = scheduler.schedule("tick", jobs.noop, FixedRate(10))  # claims, settles
        doomed = scheduler.schedule(
            "doomed", jobs.broken, OneTime(delay=0), retry=RetryPolicy(max_attempts=1)
        )
        settle(scheduler)
        clock.advance(10)
        settle(scheduler)
        store.flush()
        assert store.rejected == 0 and scheduler.metrics().store_ok
        assert [r.slot for r in store.records(tick.id)] == [T0, T0 + 10]
        assert store.dead_letter() == [doomed.id]  # its sequence
        assert scheduler.shutdown(timeout=5)  # its timer reads the change feed no more
        other.save(snapshot(task(id="elsewhere")))  # a change, notified
        assert [c.task_id for c in store.changes()] == ["elsewhere"]


def test_a_search_path_naming_no_schema_that_exists_is_said_at_open(
    postgres_server: PostgresServer,
) -> None:
    """PostgreSQL's own words ("no schema has been selected to create in") named neither
    the schema the dsn asks for nor what to do: the docs' own dsn for a schema of the
    store's own (``?options=-csearch_path%3Dlldsched``) meets it until that schema is
    created."""
    dsn = postgres_server.create_schema().replace("search_path%3D", "search_path%3Dnowhere_")
    with pytest.raises(StoreError, match="no schema has been selected to create in") as refused:
        PostgresTaskStore(dsn)
    message = str(refused.value)
    assert "search_path 'nowhere_test_" in message and "(CREATE SCHEMA nowhere_test_" in message


@pytest.mark.parametrize(
    ("grant", "says"),
    [
        (
            "",  # the schema exists, but the user may not even look into it
            "its search_path 'locked_N' names schema locked_N, which user weak_N may not "
            "use (no USAGE privilege): GRANT USAGE, CREATE ON SCHEMA locked_N TO weak_N",
        ),
        (
            "GRANT USAGE ON SCHEMA locked_N TO weak_N",
            "user weak_N may not create tables in schema locked_N (no CREATE privilege): "
            "GRANT CREATE ON SCHEMA locked_N TO weak_N",
        ),
    ],
    ids=["no-usage", "no-create"],
)
def test_a_schema_the_user_may_not_create_in_is_said_at_open_with_the_grant_to_run(
    postgres_server: PostgresServer, grant: str, says: str
) -> None:
    """A schema that exists, where the dsn's user may not create the store's tables, was
    said to exist not at all ("create the first (CREATE SCHEMA ...)", which fails), or
    came as PostgreSQL's "permission denied for schema ..." with a line of the schema's
    SQL: the message names the schema, the user, the privilege missing and the GRANT."""
    suffix = postgres_server.create_schema().rsplit("_", 1)[1]
    names = {"locked_N": f"locked_{suffix}", "weak_N": f"weak_{suffix}"}
    for stand_in, name in names.items():
        grant, says = grant.replace(stand_in, name), says.replace(stand_in, name)
    postgres_server.sql(f"CREATE ROLE {names['weak_N']} LOGIN PASSWORD 'weak-pw'")
    postgres_server.sql(f"CREATE SCHEMA {names['locked_N']}")
    if grant:
        postgres_server.sql(grant)
    dsn = (
        f"postgresql://{names['weak_N']}:weak-pw@127.0.0.1:{postgres_server.port}/postgres"
        f"?options=-csearch_path%3D{names['locked_N']}"
    )
    with pytest.raises(StoreError) as refused:
        PostgresTaskStore(dsn)
    message = str(refused.value)
    assert says in message and message.endswith("nothing was written")
    assert "weak-pw" not in message and "LINE" not in message


@pytest.mark.parametrize(
    ("task_id", "name", "says"),
    [
        # an id's NUL is refused before the store sees it, as every unprintable id is
        ("report\x00eu", "report", r"a task id must be printable.*got 'report\\x00eu'"),
        ("report", "report\x00eu", r"task name 'report\\x00eu' holds a NUL"),
        (
            "r" + "é" * 1500,
            "report",
            r"task id 'réé[^']*'\.\.\. \(3001 bytes in UTF-8\) is longer than the 2000",
        ),
    ],
    ids=["nul-id", "nul-name", "long-id"],
)
def test_an_id_or_name_postgresql_cannot_keep_is_refused_naming_it_and_nothing_is_lost(
    make_scheduler: SchedulerFactory, clock: FakeClock, postgres_dsn: str, task_id: str,
    name: str, says: str,
) -> None:  # fmt: skip
    """PostgreSQL text holds no NUL, and a task's id is an index key (at most 2,704
    bytes a key): both were a StoreError quoting psycopg ("PostgreSQL text fields cannot
    contain NUL (0x00) bytes", "index row requires 10016 bytes") that named neither the
    task nor the value."""
    with PostgresTaskStore(postgres_dsn) as store:
        scheduler = make_scheduler(clock=clock, store=store)
        scheduler.schedule("kept", jobs.noop, FixedRate(60), id="kept")
        with pytest.raises(ValidationError, match=says):
            scheduler.schedule(name, jobs.noop, FixedRate(60), id=task_id)
        assert [t.id for t in scheduler.tasks()] == ["kept"]
        assert [s.task.id for s in store.load_all()] == ["kept"]


def test_the_longest_id_every_store_takes_is_kept_by_every_index_of_the_database(
    postgres_dsn: str,
) -> None:
    """MAX_ID_BYTES is under PostgreSQL's own bound for the ids that compress least
    (random letters: over 2,689 bytes the records' key is refused), in every index an id
    is a key of: the tasks', a record's, a lease's and a removal's.  Direct to the store,
    an id over it is refused with the registration's words, nothing written."""
    import random
    import string

    from lldsched.storechecks import MAX_ID_BYTES

    rng = random.Random(7)
    task_id = "".join(rng.choice(string.ascii_letters) for _ in range(MAX_ID_BYTES))
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id=task_id)), record(task_id, 1))
        assert [row.task.id for row in store.load_all()] == [task_id]
        (claim,) = store.claim(now=T0, limit=1)  # its lease
        assert claim.task_id == task_id
        assert [r.task_id for r in store.records(task_id)] == [task_id]
        store.delete(task_id)  # its removal
        assert len(store) == 0
        with pytest.raises(ValidationError, match=r"\(2001 bytes in UTF-8\) is longer than"):
            store.save(snapshot(task(id=task_id + "x")))
        assert len(store) == 0 and store.records() == []


def test_a_rename_to_a_name_postgresql_cannot_keep_is_refused_and_the_task_keeps_its_own(
    make_scheduler: SchedulerFactory, clock: FakeClock, postgres_dsn: str
) -> None:
    """Before any run (the scheduler is not started: its first run, due at once, would
    race the rename; a rename during a run is the next test's)."""
    with PostgresTaskStore(postgres_dsn) as store:
        scheduler = make_scheduler(clock=clock, store=store, start=False)
        kept = scheduler.schedule("kept", jobs.noop, FixedRate(60), id="kept")
        with pytest.raises(ValidationError, match=r"task name 'kept\\x00' holds a NUL"):
            scheduler.schedule("kept\x00", jobs.noop, FixedRate(30), id="kept",
                               replace_existing=True)  # fmt: skip
        assert kept.name == "kept" and kept.schedule == FixedRate(60)
        assert [(s.task.name, s.task.schedule) for s in store.load_all()] == [
            ("kept", FixedRate(60))
        ]


@pytest.mark.parametrize(
    ("name", "action", "says"),
    [
        ("kept\x00", jobs.gated, r"task name 'kept\\x00' holds a NUL"),
        ("kept", lambda: None, r"task 'kept': .*lambda"),
    ],
    ids=["nul-name", "lambda"],
)
def test_a_redefinition_during_a_run_the_store_cannot_keep_is_refused_and_the_run_settles(
    make_scheduler: SchedulerFactory, clock: FakeClock, postgres_dsn: str, name: str,
    action: Any, says: str,
) -> None:  # fmt: skip
    """While this node runs a task, its RUNNING save writes nothing (the lease says so)
    and the run's settle writes a new definition: a rename to a name with a NUL was
    taken, the task ran as 'kept\\x00', and its settle failed on the server ("PostgreSQL
    text fields cannot contain NUL"), an outage logged, the run's record lost and its
    lease left to expire; a lambda was taken too, on a store that keeps none.  Seen as
    the previous test failing now and then: its first run, due at once, raced the
    rename."""
    jobs.GATE.clear()
    with PostgresTaskStore(postgres_dsn) as store:
        scheduler = make_scheduler(clock=clock, store=store)
        kept = scheduler.schedule("kept", jobs.gated, FixedRate(60), id="kept")
        try:
            wait_until(lambda: kept.status is TaskStatus.RUNNING, timeout=5, what="the run")
            with pytest.raises(ValidationError, match=says):
                scheduler.schedule(name, action, FixedRate(30), id="kept", replace_existing=True)
            assert kept.name == "kept" and kept.schedule == FixedRate(60)
        finally:
            jobs.GATE.set()
        settle(scheduler)
        jobs.GATE.clear()
        assert store.rejected == 0
        assert [(s.task.name, s.task.schedule, s.run_count) for s in store.load_all()] == [
            ("kept", FixedRate(60), 1)
        ]


def test_a_read_only_database_is_refused_at_open_naming_it(postgres_dsn: str) -> None:
    """A dsn naming a standby (or a session that is read-only by default) opened a store
    that held its tasks: a service restarted on it registered them again unchanged (no
    write), logged one claim failure and then ran nothing, its later failures at debug
    level."""
    with PostgresTaskStore(postgres_dsn) as store:
        store.save(snapshot(task(id="kept")))
    read_only = postgres_dsn.replace(
        "?options=", "?options=-cdefault_transaction_read_only%3Don%20"
    )
    with pytest.raises(StoreError, match=r"is read-only .*a standby.*left untouched") as refused:
        PostgresTaskStore(read_only)
    assert redact(read_only) in str(refused.value)
    with PostgresTaskStore(postgres_dsn) as store:  # left as it was
        assert [s.task.id for s in store.load_all()] == ["kept"]


def test_a_database_restored_under_a_node_refuses_its_claims_from_then_on(
    postgres_dsn: str,
) -> None:
    """A dump restored into the schema under running nodes brings its sequence back: the
    tokens given since would be given again.  A node given a token at or below one it was
    given (by a claim, or the sequence's at its open) gives the claim back and refuses
    every call after it; before, it ran the slot again with a token already given."""
    with PostgresTaskStore(postgres_dsn, lease=30) as first:
        first.save(snapshot(task(id="beat")))
        for _ in range(5):  # tokens 1 to 5 given
            (claim,) = first.claim(now=T0, limit=1)
            first.release(task_id="beat", token=claim.token)
        with PostgresTaskStore(postgres_dsn, lease=30) as later:  # opened past that token
            with psycopg.connect(postgres_dsn, autocommit=True) as connection:
                connection.execute("SELECT setval('fencing_token', 1, false)")  # as restored
            for store in (first, later):
                with pytest.raises(StoreError, match="restored or rewound since this process"):
                    store.claim(now=T0, limit=1)
                with pytest.raises(StoreError, match="restored or rewound"):
                    store.changes()  # every call from then on
    with PostgresTaskStore(postgres_dsn, lease=30) as reader:
        assert reader.leases() == []  # the claims refused were given back
