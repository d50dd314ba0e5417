"""A value of the wrong type in an SQLite store's row (a row edited by hand, or written by
another tool: SQLite's type affinity keeps text it cannot read as a number in an
``INTEGER`` or ``REAL`` column) is refused, naming the table, the row, the column and the
value: in a column the store uses without decoding it (a task's priority, version,
dead-letter order, a lease, a counter) at open, the file left untouched, in both modes;
in a task's state or a record as the row is read, by the rule both stores' rows follow
(``stores.codec``; ``tests/test_store_bad_rows.py`` has those cases, its ranges too).  A
row another process writes wrong after the open is the same ``StoreError``, and a shared
store's feed leaves it out.

Before, such a file opened; the value failed at its first use, deep inside (a
``TypeError`` from ``run_count - failure_count`` at the scheduler's start, from a
comparison of a ``next_run_at`` at its first tick, a dead-letter counter read as text),
or was silently misread (``running = 'no'`` is true: the task restored as interrupted).
A numeric text SQLite reads as a number (``'2'``, ``' 1800000060 '``) is stored as that
number by SQLite itself, and read as it (docs/decisions/persistence.md, "A value of the wrong type
in an SQLite row is refused at open", and "A row holding a value no write of lldsched
makes")."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from lldsched import SqliteTaskStore, StoreError, TaskSnapshot, TaskStatus
from lldsched.stores.sqlite import SCHEMA_VERSION
from tests.test_store_shared import _downgrade_to_5
from tests.test_store_sqlite import digest, record, snapshot, task

both_modes = pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])


def stored(path: Path) -> None:
    """A store at ``path`` with tasks "a" (one record kept) and "b"."""
    with SqliteTaskStore(path) as store:
        store.save(snapshot(task(id="a")), record("a", 1))
        store.save(snapshot(task(id="b")))


def edit(path: Path, sql: str) -> None:
    """Run ``sql`` on the file as another program would, past the store."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute(sql)
    finally:
        connection.close()


LEASE = "INSERT INTO leases VALUES ('b', {slot}, {attempt}, {token}, 'elsewhere:1:ab', {expires})"
"""A lease of task b, as another process's claim writes it (its values set as given)."""
LEASED = {"slot": 1.0, "attempt": 0, "token": 7, "expires": 2.0}

KEPT_CASES = {
    "failed_seq": (
        "UPDATE tasks SET status = 'failed', failed_seq = 'first', next_run_at = NULL "
        "WHERE id = 'b'",
        "table tasks, row id='b', column failed_seq holds the text 'first', where the store "
        "writes an integer",
    ),
    "priority": (
        "UPDATE tasks SET priority = 'high' WHERE id = 'b'",
        "table tasks, row id='b', column priority holds the text 'high', where the store writes ",
    ),
    "version": (
        "UPDATE tasks SET version = 2.5 WHERE id = 'b'",
        "column version holds the real 2.5, where the store writes an integer",
    ),
    "slot_due": (
        "UPDATE tasks SET slot_due = '2027-01-15T08:00:00' WHERE id = 'b'",
        "column slot_due holds the text '2027-01-15T08:00:00', where the store writes a ",
    ),
    "lease-expires_at": (
        LEASE.format(**{**LEASED, "expires": "'never'"}),
        "table leases, row task_id='b', column expires_at holds the text 'never', "
        "where the store writes a ",
    ),
    "lease-token": (
        LEASE.format(**{**LEASED, "token": "'seven'"}),
        "table leases, row task_id='b', column token holds the text 'seven', "
        "where the store writes an integer",
    ),
}
"""A value of a task's row or its lease the store uses without decoding it, of another
type than it writes there, and how it is named."""


@pytest.mark.parametrize(("sql", "said"), KEPT_CASES.values(), ids=KEPT_CASES)
def test_an_unshared_open_refuses_such_a_value_naming_where_and_touches_nothing(
    tmp_path: Path, sql: str, said: str
) -> None:
    """No other process runs the task: the start is refused (docs/DECISIONS.md)."""
    path = tmp_path / "tasks.db"
    stored(path)
    edit(path, sql)
    before = digest(path)
    with pytest.raises(StoreError) as caught:
        SqliteTaskStore(path)  # before: opened; failed later, or misread
    message = str(caught.value)
    assert message.startswith(f"{str(path)!r} holds a value the store cannot read: ")
    assert said.split(", where")[0] in message
    assert "the file was left untouched" in message
    assert digest(path) == before
    edit(path, "UPDATE tasks SET priority = 1, version = 0, slot_due = NULL")
    edit(path, "UPDATE tasks SET status = 'scheduled', failed_seq = NULL, next_run_at = 1.0")
    edit(path, "DELETE FROM leases")
    with SqliteTaskStore(path) as store:  # set right, it opens
        assert [row.task.id for row in store.load_all()] == ["a", "b"]


@pytest.mark.parametrize(("sql", "said"), KEPT_CASES.values(), ids=KEPT_CASES)
def test_a_shared_open_leaves_out_the_task_holding_one_and_runs_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, sql: str, said: str
) -> None:
    """A production service on a shared file: one row set wrong by hand stopped every
    process of it at its next start (the file refused whole); now its task is left out,
    named once at WARNING, never claimed here, and the other tasks run."""
    path = tmp_path / "tasks.db"
    stored(path)
    edit(path, sql)
    before = rows_of_b(path)
    with SqliteTaskStore(path, shared=True) as store:  # before: refused, the file whole
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            loaded = store.load_all(leave_out=True)
        assert [row.task.id for row in loaded] == ["a"]
        assert store.unloaded() == ["b"]
        (warned,) = [r.getMessage() for r in caplog.records if "cannot load" in r.getMessage()]
        assert "task b" in warned and said in warned
        with pytest.raises(StoreError, match="task b: its row holds a value the store cannot"):
            store.get("b")
        assert [claim.task_id for claim in store.claim(now=2e9, limit=10)] == ["a"]
        assert store.changes() == []
    assert rows_of_b(path) == before  # nothing of b written: its row and lease as set


def rows_of_b(path: Path) -> list[tuple[object, ...]]:
    """Task b's row and its lease, as the file holds them."""
    with sqlite3.connect(path) as connection:
        return [
            *connection.execute("SELECT * FROM tasks WHERE id = 'b'"),
            *connection.execute("SELECT * FROM leases WHERE task_id = 'b'"),
        ]


@both_modes
def test_a_counter_of_the_wrong_type_is_refused_at_open_in_both_modes(
    tmp_path: Path, shared: bool
) -> None:
    """The counters are no task's: every claim and write of every process numbers from
    them (a text token read as 0 gave a takeover a token already used)."""
    path = tmp_path / "tasks.db"
    stored(path)
    edit(path, "UPDATE counters SET value = 'many' WHERE name = 'token'")
    before = digest(path)
    with pytest.raises(StoreError) as caught:
        SqliteTaskStore(path, shared=shared)
    assert "table counters, row name='token', column value holds the text 'many'" in str(
        caught.value
    )
    assert digest(path) == before


def test_every_wrong_value_is_named_not_only_the_first(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    stored(path)
    edit(path, "UPDATE tasks SET priority = 'x', slot_due = 'y'")
    with pytest.raises(StoreError) as caught:
        SqliteTaskStore(path)
    message = str(caught.value)
    for row in ("id='a'", "id='b'"):
        for column in ("priority holds the text 'x'", "slot_due holds the text 'y'"):
            assert f"table tasks, row {row}, column {column}" in message


@both_modes
@pytest.mark.parametrize(
    ("sql", "said"),
    [
        ("UPDATE records SET due = 'yesterday'", "column due holds the text 'yesterday'"),
        ("UPDATE records SET ok = 'yes'", "column ok holds the text 'yes', where the store"),
        ("UPDATE records SET token = 'x'", "column token holds the text 'x', where the store"),
        ("UPDATE records SET node = x'07'", "column node holds the blob"),
    ],
    ids=["due", "ok", "token", "node"],
)
def test_a_record_holding_one_is_refused_as_it_is_read_naming_where(
    tmp_path: Path, shared: bool, sql: str, said: str
) -> None:
    """Records are checked as they are read, not at open: a store keeps up to
    ``retention`` of them per task (a scan of millions of rows)."""
    path = tmp_path / "tasks.db"
    stored(path)
    edit(path, sql)
    with SqliteTaskStore(path, shared=shared) as store:
        assert [row.task.id for row in store.load_all()] == ["a", "b"]
        with pytest.raises(StoreError) as caught:
            store.records("a")  # before: a record whose due instant was a text
        assert str(caught.value).startswith("task a: its row holds a value the store cannot read")
        assert f"table records, row task_id='a' seq=1, {said}" in str(caught.value)


def test_an_older_file_holding_one_is_refused_before_its_migration_is_committed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    stored(path)
    _downgrade_to_5(str(path))
    edit(path, "UPDATE tasks SET priority = 'three' WHERE id = 'a'")
    before = digest(path)
    with pytest.raises(StoreError, match="row id='a', column priority holds the text 'three'"):
        SqliteTaskStore(path)
    assert digest(path) == before  # still version 5: the migration rolled back
    with SqliteTaskStore(path, shared=True) as store:  # shared: migrated, the task left out
        assert [row.task.id for row in store.load_all(leave_out=True)] == ["b"]
        assert store.unloaded() == ["a"]
    edit(path, "UPDATE tasks SET priority = 2 WHERE id = 'a'")
    with SqliteTaskStore(path) as store:
        got = store.get("a")
    assert got is not None and got.task.id == "a"
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


@both_modes
def test_a_numeric_text_sqlite_reads_as_a_number_is_read_as_that_number(
    tmp_path: Path, shared: bool
) -> None:
    """SQLite's affinity stores well-formed numeric text as the number: nothing to refuse."""
    path = tmp_path / "tasks.db"
    stored(path)
    edit(path, "UPDATE tasks SET status = 'retrying', attempt = '2', next_run_at = ' 1800000060 ' "
         "WHERE id = 'b'")  # fmt: skip
    with SqliteTaskStore(path, shared=shared) as store:
        got = store.get("b")
    assert got is not None and got.attempt == 2 and got.next_run_at == 1_800_000_060.0


@both_modes
def test_a_wrong_value_written_after_the_open_is_a_store_error_naming_it(
    tmp_path: Path, shared: bool
) -> None:
    path = tmp_path / "tasks.db"
    stored(path)
    with SqliteTaskStore(path, shared=shared) as store:
        edit(path, "UPDATE tasks SET failure_count = 'none' WHERE id = 'b'")
        with pytest.raises(StoreError, match="task b: its row holds a value the store cannot"):
            store.get("b")  # before: TypeError, int - str
        with pytest.raises(StoreError, match=r"(?s)1 of the 2 tasks.*column failure_count"):
            store.load_all()


def test_a_long_wrong_value_is_quoted_by_its_start(tmp_path: Path) -> None:
    """Found by tools/fuzz/fuzz_codec.py: a value was quoted whole (``repr``), so a text
    of 100,000 characters in a due instant's column made a message of as many, in the
    error and at WARNING; it is quoted as every bad value is (``errors.shown``)."""
    path = tmp_path / "tasks.db"
    stored(path)
    with SqliteTaskStore(path, shared=True) as store:
        edit(path, "UPDATE tasks SET next_run_at = printf('%.100000c', 'z') WHERE id = 'b'")
        with pytest.raises(StoreError, match="column next_run_at holds the text 'zzz") as caught:
            store.get("b")
    assert "(100,000 characters, cut)" in str(caught.value)
    assert len(str(caught.value)) < 2_000


VERSION = "version = (SELECT value FROM counters WHERE name = 'change')"
"""The SQL that gives a row edited past the store the next version, as a write of it."""


def a_set_elsewhere(
    path: Path, reader: SqliteTaskStore, writer: SqliteTaskStore, change: str
) -> dict[str, TaskSnapshot | None]:
    """Both shared stores loaded; task a's row set as ``change`` says by another tool (its
    version moved on, as a write moves it) while ``writer`` pauses b: what the feed of
    ``reader`` gives, by task."""
    reader.load_all(leave_out=True)
    writer.load_all(leave_out=True)
    edit(path, "UPDATE counters SET value = value + 1 WHERE name = 'change'")
    edit(path, f"UPDATE tasks SET {change}, {VERSION} WHERE id = 'a'")
    writer.save(snapshot(task(id="b"), TaskStatus.PAUSED))
    return {change.task_id: change.snapshot for change in reader.changes()}


def test_a_shared_feed_leaves_out_a_row_written_wrong_and_reads_it_once_set_right(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tasks.db"
    stored(path)
    with SqliteTaskStore(path, shared=True) as reader, SqliteTaskStore(path, shared=True) as writer:
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            changes = a_set_elsewhere(path, reader, writer, "run_count = '3 runs'")
        # Before: TypeError out of changes(), b's pause with it.
        assert changes["a"] is None and reader.unloaded() == ["a"]
        paused = changes["b"]
        assert paused is not None and paused.status is TaskStatus.PAUSED
        said = [r.getMessage() for r in caplog.records if "cannot load" in r.getMessage()]
        assert len(said) == 1 and "column run_count holds the text '3 runs'" in said[0]
        with sqlite3.connect(path) as connection:
            definition = "SELECT definition FROM tasks WHERE id = 'a'"
            (before,) = connection.execute(definition).fetchone()
            with pytest.raises(StoreError, match="task a: its row holds a value the store"):
                reader.take_over(task(id="a", name="renamed"))  # nothing written
            assert connection.execute(definition).fetchone() == (before,)
        edit(path, "UPDATE counters SET value = value + 1 WHERE name = 'change'")
        edit(path, f"UPDATE tasks SET run_count = 3, {VERSION} WHERE id = 'a'")
        (change,) = reader.changes()
        assert change.snapshot is not None and change.snapshot.run_count == 3
        assert reader.unloaded() == []


def test_a_shared_feed_reads_the_other_rows_past_a_text_that_is_not_utf8(
    tmp_path: Path,
) -> None:
    """A text that is not UTF-8 (another tool's Latin-1) failed the feed's whole read in
    the driver: every change with it lost to this process, every later read failing
    again; the row is left out, named, and the others read."""
    path = tmp_path / "tasks.db"
    stored(path)
    with SqliteTaskStore(path, shared=True) as reader, SqliteTaskStore(path, shared=True) as writer:
        changes = a_set_elsewhere(path, reader, writer, "last_error = CAST(X'61ff62' AS TEXT)")
        assert changes["a"] is None and reader.unloaded() == ["a"]  # before: OperationalError
        paused = changes["b"]
        assert paused is not None and paused.status is TaskStatus.PAUSED


def test_a_shared_feed_leaves_out_a_row_whose_kept_values_were_set_wrong(tmp_path: Path) -> None:
    """A priority or a version set wrong after the open is the row's alone, as at the
    start: before, the feed read the priority without a word, and a version of text (which
    SQLite sorts past every number) raised a TypeError out of every later read of the feed
    (the cursor is the versions' ``max``), every change lost to this process."""
    path = tmp_path / "tasks.db"
    stored(path)
    with SqliteTaskStore(path, shared=True) as reader, SqliteTaskStore(path, shared=True) as writer:
        changes = a_set_elsewhere(path, reader, writer, "priority = 'high'")
        assert changes["a"] is None and reader.unloaded() == ["a"]
        paused = changes["b"]
        assert paused is not None and paused.status is TaskStatus.PAUSED
        edit(path, "UPDATE tasks SET version = 'x' WHERE id = 'a'")
        writer.save(snapshot(task(id="b")))  # resumed: the feed must still give it
        (change,) = reader.changes()
        assert change.task_id == "b" and change.snapshot is not None
        assert change.snapshot.status is TaskStatus.SCHEDULED
        assert reader.changes() == [] and reader.unloaded() == ["a"]
