"""A row holding a value no write of lldsched makes (edited by hand, written by another
tool or an older release, damaged) is refused where rows become values, by one rule for
both durable stores (``stores.rowvalues.snapshot_from``, ``record_from``): a ``StoreError``
naming the task, the column and the value, on SQLite (unshared and shared) and on a real
PostgreSQL server alike.

What happens to the other rows (docs/decisions/persistence.md, "A row holding a value no write of
lldsched makes"): an unshared load names every such row in one error and writes nothing;
a shared store's load leaves the row out (``unloaded()``), said once at WARNING, and loads
the others; the row itself is never written, so nothing of it is lost.

Before, a negative attempt or count, a failure count above the run count, an infinite,
NaN or absurd instant, or a definition's priority of ``true`` were loaded as they were
(a task restored with ``attempt = -1``, a Window told of -1 successful runs, a due instant
of ``inf`` no tick reaches); a record's unknown outcome raised a bare ``ValueError`` out of
PostgreSQL's ``records()``, and its NaN or infinite instants were read without a word."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from lldsched import SqliteTaskStore, StoreError
from lldsched.coordination import CoordinatedStore
from lldsched.stores.postgres import PostgresTaskStore
from tests.test_store_sqlite import record, snapshot, task

ENGINES = ("sqlite", "sqlite-shared", "postgres")


@dataclass
class Engine:
    """One store engine: how to open a store on the test's data, and to edit it past it."""

    name: str
    open: Callable[[], Any]
    sql: Callable[[str], list[tuple[Any, ...]]]

    @property
    def shared(self) -> bool:
        return self.name != "sqlite"

    def rows(self) -> list[tuple[Any, ...]]:
        """Every task row as text (a NaN equals itself so): what 'nothing written' compares."""
        if self.name == "postgres":
            return self.sql("SELECT t::text FROM tasks t ORDER BY id")
        return self.sql("SELECT * FROM tasks ORDER BY id")


def make_engine(
    request: pytest.FixtureRequest, tmp_path: Path, name: str, *, dsn: str | None = None
) -> Engine:
    """The engine ``name`` holding the tasks "a" (two records kept) and "b" (PostgreSQL:
    in the schema of ``dsn``, by default the test's ``postgres_dsn``)."""
    if name == "postgres":
        if dsn is None:
            dsn = request.getfixturevalue("postgres_dsn")

        def run_pg(statement: str) -> list[tuple[Any, ...]]:
            with psycopg.connect(dsn, autocommit=True) as connection:
                cursor = connection.execute(statement)
                return cursor.fetchall() if cursor.description else []

        def open_pg() -> PostgresTaskStore:
            return PostgresTaskStore(dsn)

        made = Engine(name, open_pg, run_pg)
    else:
        path = tmp_path / "tasks.db"
        shared = name == "sqlite-shared"

        def run_sqlite(statement: str) -> list[tuple[Any, ...]]:
            connection = sqlite3.connect(path, isolation_level=None)
            connection.text_factory = bytes  # every text as it is, UTF-8 or not
            try:
                return connection.execute(statement).fetchall()
            finally:
                connection.close()

        def open_sqlite() -> SqliteTaskStore:
            return SqliteTaskStore(path, shared=shared)

        made = Engine(name, open_sqlite, run_sqlite)
    with made.open() as store:
        store.save(snapshot(task(id="a")), record("a", 1))
        store.save(snapshot(task(id="a")), record("a", 2))
        store.save(snapshot(task(id="b")))
    return made


@dataclass(frozen=True)
class Bad:
    """A value set in a row: the SQL (per engine; None: the engine cannot hold it) and
    what the error says of it."""

    sqlite: str | None
    postgres: str | None
    said: str

    def on(self, engine: Engine) -> str | None:
        """The SQL that sets the value on ``engine``."""
        return self.postgres if engine.name == "postgres" else self.sqlite


def _cases(cases: dict[str, Bad]) -> list[Any]:
    """Each case on each engine that can hold it (a NaN is NULL to SQLite, a type error
    is refused by PostgreSQL's typed column as it is written)."""
    return [
        pytest.param(name, sql_engine, bad, id=f"{name}-{sql_engine}")
        for name, bad in cases.items()
        for sql_engine in ENGINES
        if (bad.postgres if sql_engine == "postgres" else bad.sqlite) is not None
    ]


PRIORITY_7 = {
    "sqlite": "definition = json_set(definition, '$.priority', 7)",
    "postgres": "definition = jsonb_set(definition::jsonb, '{priority}', '7')::text",
}
PRIORITY_TRUE = {
    "sqlite": "definition = json_set(definition, '$.priority', json('true'))",
    "postgres": "definition = jsonb_set(definition::jsonb, '{priority}', 'true')::text",
}

TASK_CASES = {
    "status-unknown": Bad(
        "status = 'exploded'", "status = 'exploded'", "status 'exploded' is none this release"
    ),
    "attempt-negative": Bad(
        "attempt = -1", "attempt = -1",
        "table tasks, row id='b', column attempt holds the integer -1, "
        "where the store writes an integer >= 0",
    ),
    "run_count-negative": Bad(
        "run_count = -3", "run_count = -3", "column run_count holds the integer -3"
    ),
    "failure_count-negative": Bad(
        "failure_count = -1", "failure_count = -1", "column failure_count holds the integer -1"
    ),
    "failure_count-above-runs": Bad(
        "run_count = 2, failure_count = 3", "run_count = 2, failure_count = 3",
        "column failure_count holds the integer 3, where the store writes an integer from 0 "
        "to the run count (2)",
    ),
    "next_run_at-inf": Bad(
        "next_run_at = 9e999", "next_run_at = 'Infinity'",
        "column next_run_at holds the real inf, where the store writes a finite real",
    ),
    "next_run_at-nan": Bad(None, "next_run_at = 'NaN'", "column next_run_at holds the real nan"),
    "next_run_at-absurd": Bad(
        "next_run_at = 1e300", "next_run_at = 1e300", "column next_run_at holds the real 1e+300"
    ),
    "waited-minus-inf": Bad(
        "waited = -9e999", "waited = '-Infinity'", "column waited holds the real -inf"
    ),
    "slot-nan": Bad(None, "slot = 'NaN', slot_due = next_run_at", "column slot holds the real nan"),
    "slot-inf": Bad(
        "slot = 9e999, slot_due = next_run_at", "slot = 'Infinity', slot_due = next_run_at",
        "column slot holds the real inf",
    ),
    "attempt-text": Bad(
        "attempt = 'three'", None,
        "column attempt holds the text 'three', where the store writes an integer >= 0",
    ),
    "attempt-real": Bad(
        "attempt = 2.5", None,
        "column attempt holds the real 2.5, where the store writes an integer >= 0",
    ),
    "run_count-text": Bad("run_count = '3 runs'", None, "column run_count holds the text '3 runs'"),
    "next_run_at-text": Bad(
        "next_run_at = '2027-01-15T08:00:00'", None,
        "column next_run_at holds the text '2027-01-15T08:00:00', where the store writes a "
        "finite real",
    ),
    "next_run_at-blob": Bad(
        "next_run_at = X'3132'", None, "column next_run_at holds the blob b'12'"
    ),
    "running-no": Bad(
        "running = 'no'", None,
        "column running holds the text 'no', where the store writes 0 or 1",
    ),
    "running-2": Bad("running = 2", None, "column running holds the integer 2"),
    "last_error-blob": Bad("last_error = x'00ff'", None, "column last_error holds the blob"),
    "last_error-not-utf8": Bad(  # another tool's Latin-1: failed every task's read, unnamed
        "last_error = CAST(X'61ff62' AS TEXT)", None,
        "column last_error holds the text that is not UTF-8, b'a\\xffb', where the store "
        "writes a text or NULL",
    ),
    "priority-7": Bad(PRIORITY_7["sqlite"], PRIORITY_7["postgres"], "priority must be one of"),
    "priority-true": Bad(
        PRIORITY_TRUE["sqlite"], PRIORITY_TRUE["postgres"], "priority must be one of [0, 1, 2]"
    ),
    # What a store keeps beside the state (rowvalues.check_kept): before, read without a word
    # (a claim ordered by a priority of 7, a dead letter by a negative place).
    "priority-column-7": Bad(
        "priority = 7", "priority = 7",
        "table tasks, row id='b', column priority holds the integer 7, where the store "
        "writes one of [0, 1, 2] (Priority)",
    ),
    "version-negative": Bad(
        "version = -1", "version = -1",
        "column version holds the integer -1, where the store writes an integer >= 0",
    ),
    "failed_seq-negative": Bad(
        "status = 'failed', next_run_at = NULL, failed_seq = -4",
        "status = 'failed', next_run_at = NULL, failed_seq = -4",
        "column failed_seq holds the integer -4, where the store writes an integer >= 0 or NULL",
    ),
    "slot_due-nan": Bad(None, "slot_due = 'NaN'", "column slot_due holds the real nan"),
    "slot_due-inf": Bad(
        "slot_due = 9e999", "slot_due = 'Infinity'", "column slot_due holds the real inf"
    ),
    # Values that do not go together (docs/decisions/persistence.md, "A row whose values do not go
    # together"): before, each was loaded; its task never ran again, or resume() raised an
    # AssertionError, or its retries were cut short or its grid moved.
    "scheduled-no-due": Bad(
        "next_run_at = NULL", "next_run_at = NULL",
        "column next_run_at holds the null None, where the store writes a due instant with "
        "the status 'scheduled' (without one the task never runs again)",
    ),
    "retrying-no-due": Bad(
        "status = 'retrying', attempt = 1, next_run_at = NULL",
        "status = 'retrying', attempt = 1, next_run_at = NULL",
        "column next_run_at holds the null None, where the store writes a due instant with "
        "the status 'retrying'",
    ),
    "running-no-due": Bad(
        "status = 'running', attempt = 1, running = 1, next_run_at = NULL",
        "status = 'running', attempt = 1, running = true, next_run_at = NULL",
        "column next_run_at holds the null None, where the store writes a due instant with "
        "the status 'running'",
    ),
    "paused-no-due": Bad(
        "status = 'paused', next_run_at = NULL", "status = 'paused', next_run_at = NULL",
        "column next_run_at holds the null None, where the store writes a due instant with "
        "the status 'paused'",
    ),
    "retrying-attempt-0": Bad(
        "status = 'retrying'", "status = 'retrying'",
        "column attempt holds the integer 0, where the store writes an integer >= 1 with the "
        "status 'retrying'",
    ),
    "scheduled-attempt-2": Bad(
        "attempt = 2", "attempt = 2",
        "column attempt holds the integer 2, where the store writes 0 with the status "
        "'scheduled'",
    ),
}  # fmt: skip


@pytest.mark.parametrize(("case", "engine_name", "bad"), _cases(TASK_CASES))
def test_a_task_row_holding_a_value_no_write_makes_is_refused_naming_it_and_the_others_load(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    case: str,
    engine_name: str,
    bad: Bad,
) -> None:
    engine = make_engine(request, tmp_path, engine_name)
    change = bad.on(engine)
    engine.sql(f"UPDATE tasks SET {change} WHERE id = 'b'")
    before = engine.rows()
    with engine.open() as store:
        with pytest.raises(StoreError) as caught:
            store.load_all()  # no process leaves a task out: one error names each, no write
        message = str(caught.value)
        assert "cannot load 1 of the 2 tasks" in message and "task b" in message
        assert bad.said in message
        with pytest.raises(StoreError, match="task b") as got:
            store.get("b")
        assert bad.said in str(got.value)
        kept = store.get("a")
        assert kept is not None and kept.task.id == "a"
        assert [r.attempt for r in store.records("a")] == [1, 1]
        if engine.shared:  # a shared store's start: the others load, the row is left out
            assert isinstance(store, CoordinatedStore)
            with caplog.at_level(logging.WARNING, logger="lldsched"):
                loaded = store.load_all(leave_out=True)
            assert [snap.task.id for snap in loaded] == ["a"]
            assert store.unloaded() == ["b"]
            (warned,) = [r.getMessage() for r in caplog.records if "cannot load" in r.getMessage()]
            assert "task b" in warned and bad.said in warned
    assert engine.rows() == before  # nothing written: the row is kept as it was


RECORD_CASES = {
    "due-inf": Bad(
        "due = 9e999", "due = 'Infinity'",
        "column due holds the real inf, where the store writes a finite real",
    ),
    "due-nan": Bad(None, "due = 'NaN'", "column due holds the real nan"),
    "finished-absurd": Bad("finished = -1e200", "finished = -1e200", "column finished holds"),
    "attempt-negative": Bad("attempt = -2", "attempt = -2", "column attempt holds the integer -2"),
    "worker-below-none": Bad(
        "worker = -5", "worker = -5",
        "column worker holds the integer -5, where the store writes an integer >= -1",
    ),
    "misfire-unknown": Bad(
        "misfire = 'exploded'", "misfire = 'exploded'",
        "column misfire holds the text 'exploded', where the store writes an outcome's name",
    ),
    "ok-2": Bad("ok = 2", None, "column ok holds the integer 2"),
    "error-not-utf8": Bad(
        "error = CAST(X'61ff62' AS TEXT)", None,
        "column error holds the text that is not UTF-8, b'a\\xffb'",
    ),
}  # fmt: skip


@pytest.mark.parametrize(("case", "engine_name", "bad"), _cases(RECORD_CASES))
def test_a_record_holding_a_value_no_write_makes_is_refused_as_it_is_read_naming_it(
    request: pytest.FixtureRequest, tmp_path: Path, case: str, engine_name: str, bad: Bad
) -> None:
    engine = make_engine(request, tmp_path, engine_name)
    change = bad.on(engine)
    (seq,) = engine.sql("SELECT max(seq) FROM records WHERE task_id = 'a'")[0]
    engine.sql(f"UPDATE records SET {change} WHERE task_id = 'a' AND seq = {seq}")
    with engine.open() as store:
        assert [snap.task.id for snap in store.load_all()] == ["a", "b"]
        with pytest.raises(StoreError) as caught:
            store.records("a")  # before: read as it was, or a bare ValueError (an outcome)
        message = str(caught.value)
        assert message.startswith("task a: its row holds a value the store cannot read")
        assert f"table records, row task_id='a' seq={seq}, {bad.said}" in message
        assert store.records("b") == []


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_load_names_every_bad_value_of_every_row_not_only_the_first(
    request: pytest.FixtureRequest, tmp_path: Path, engine_name: str
) -> None:
    engine = make_engine(request, tmp_path, engine_name)
    engine.sql("UPDATE tasks SET attempt = -1, run_count = -2")
    with engine.open() as store, pytest.raises(StoreError) as caught:
        store.load_all()
    message = str(caught.value)
    assert "cannot load 2 of the 2 tasks" in message
    for row in ("id='a'", "id='b'"):
        for column in ("attempt holds the integer -1", "run_count holds the integer -2"):
            assert f"table tasks, row {row}, column {column}" in message


# A task's lease (shared stores only), its values set past the store.  A NaN or infinite
# expiry is never past on either clock (PostgreSQL orders NaN above every number): the
# lease held its task for good, whoever held it.  Before, PostgreSQL read a row without its
# lease, so a shared start loaded the task (nothing ever claimed it, nothing said why), and
# neither engine's leases() checked a value.  A negative expiry is no bad value: it is past
# (the expired lease of an attempt owed is written with 0), and the next claim takes it.
LEASE_CASES = {
    "expires_at-nan": Bad(None, "expires_at = 'NaN'", "column expires_at holds the real nan"),
    "expires_at-inf": Bad(
        "expires_at = 9e999", "expires_at = 'Infinity'",
        "column expires_at holds the real inf, where the store writes a finite real",
    ),
    "expires_at-absurd": Bad(
        "expires_at = 1e300", "expires_at = 1e300", "column expires_at holds the real 1e+300"
    ),
    "expires_at-minus-inf": Bad(
        "expires_at = -9e999", "expires_at = '-Infinity'", "column expires_at holds the real -inf"
    ),
    "slot-nan": Bad(None, "slot = 'NaN'", "column slot holds the real nan"),
    "attempt-negative": Bad(
        "attempt = -1", "attempt = -1",
        "column attempt holds the integer -1, where the store writes an integer >= 0",
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("case", "engine_name", "bad"),
    [case for case in _cases(LEASE_CASES) if case.values[1] != "sqlite"],  # none unshared
)
def test_a_lease_holding_a_value_no_write_makes_is_refused_with_its_task_naming_it(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    case: str,
    engine_name: str,
    bad: Bad,
) -> None:
    engine = make_engine(request, tmp_path, engine_name)
    version = ", version" if engine.name == "postgres" else ""
    engine.sql(
        f"INSERT INTO leases (task_id, slot, attempt, token, holder, expires_at{version}) "
        f"SELECT id, next_run_at, 0, 7, 'elsewhere:1:ab', 2.0{version} FROM tasks WHERE id = 'b'"
    )
    change = bad.on(engine)
    engine.sql(f"UPDATE leases SET {change} WHERE task_id = 'b'")
    before = (engine.rows(), engine.sql("SELECT CAST(expires_at AS TEXT) FROM leases"))
    where = f"table leases, row task_id='b', {bad.said}"
    with engine.open() as store:
        shared = store
        assert isinstance(shared, CoordinatedStore)
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            loaded = shared.load_all(leave_out=True)  # a shared start: the others load
        assert [snap.task.id for snap in loaded] == ["a"]
        assert shared.unloaded() == ["b"]
        (warned,) = [r.getMessage() for r in caplog.records if "cannot load" in r.getMessage()]
        assert "task b" in warned and where in warned
        with pytest.raises(StoreError, match="task b") as got:
            store.get("b")
        assert where in str(got.value)
        with pytest.raises(StoreError) as listed:
            shared.leases()
        assert str(listed.value).startswith("task b: its row holds a value the store cannot")
        assert where in str(listed.value)
    assert (engine.rows(), engine.sql("SELECT CAST(expires_at AS TEXT) FROM leases")) == before
