"""The edges of a verb's hold of a shared store (SQLite and PostgreSQL): what happens to
the rows a verb wrote inside when the hold itself is not stored.

A verb reads the change feed and writes its rows inside one transaction
(:func:`lldsched.storecalls.verb_held`); every write inside is a savepoint of it.  When
the hold's end fails (PostgreSQL: the connection lost at the COMMIT; SQLite: the
transaction rolled back under it by a statement that failed inside, a full disk), none
of those writes is stored.  Before, only the verb's own task was written again: a
``cancel``'s dependents stayed as they were in the store, a replacement's new
definition was never written (the store's cache said it was), a shared SQLite store's
feed skipped another process's next write (its cursor had moved past the rolled-back
version), and on SQLite the hold's end did not even notice a transaction rolled back
under it.  And a COMMIT sent into a silent network waited for ever.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import psycopg
import pytest

from lldsched import (
    ExecutionRecord,
    FakeClock,
    FixedRate,
    Priority,
    Scheduler,
    SqliteTaskStore,
    TaskStatus,
)
from lldsched.persistence import TaskSnapshot
from lldsched.stores.postgres import PostgresTaskStore
from tests import jobs
from tests.pg_server import PostgresServer
from tests.tcp_proxy import TcpProxy

Shared = SqliteTaskStore | PostgresTaskStore

T0 = 1_800_000_000.0


class RolledBackSqlite(SqliteTaskStore):
    """A shared SQLite store whose verb's hold, once ``failing`` is set, finds its
    transaction rolled back at its end, as SQLite leaves it after a statement inside
    failed with a full disk or an I/O error (``test_a_full_disk_inside_a_hold...`` shows
    SQLite doing so)."""

    failing = False

    @contextlib.contextmanager
    def verb_held(self, task_id: str, also: Sequence[str] = ()) -> Iterator[None]:
        with super().verb_held(task_id, also):
            yield
            if self.failing:
                assert self._connection is not None
                self._connection.execute("ROLLBACK")


class CutPostgres(PostgresTaskStore):
    """A PostgreSQL store whose verb's hold, once ``failing`` is set, loses its connection
    (the server ends its session) just before its COMMIT, or, if ``cut_at`` names a task,
    just before that task's row is written inside it."""

    failing = False
    cut_at: str | None = None

    def _cut(self) -> None:
        assert self._connection is not None
        backend = self._connection.info.backend_pid
        with psycopg.connect(self._dsn, autocommit=True) as admin:  # waits for its end
            admin.execute("SELECT pg_terminate_backend(%s, 10000)", (backend,))

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        if self.failing and snapshot.task.id == self.cut_at:
            self._cut()
        super().save(snapshot, record)

    @contextlib.contextmanager
    def verb_held(self, task_id: str, also: Sequence[str] = ()) -> Iterator[None]:
        with super().verb_held(task_id, also):
            yield
            if self.failing and self.cut_at is None:
                self._cut()


@pytest.fixture(params=["sqlite", "postgres"])
def stores(
    request: pytest.FixtureRequest, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> Iterator[Callable[[], tuple[RolledBackSqlite | CutPostgres, Shared]]]:
    """``opened()``: a store whose hold's end fails once told to, and another process's
    store on the same database, opened then (it knows the rows written before)."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")  # the outage is said at ERROR
    opened: list[Shared] = []

    def opened_pair() -> tuple[RolledBackSqlite | CutPostgres, Shared]:
        if request.param == "sqlite":
            path = tmp_path / "tasks.db"
            failing: RolledBackSqlite | CutPostgres = RolledBackSqlite(path, shared=True)
            other: Shared = SqliteTaskStore(path, shared=True)
        else:
            dsn = request.getfixturevalue("postgres_dsn")
            failing = CutPostgres(dsn)
            other = PostgresTaskStore(dsn)
        opened.extend((failing, other))
        return failing, other

    yield opened_pair
    for store in opened:
        store.close()


def blocked(other: Shared, task_id: str) -> None:
    """``other``'s process (started: it loaded the rows) claims ``task_id``'s slot and
    finds it blocked on its upstream."""
    other.load_all()
    claims = other.claim(now=T0 + 61, limit=10)
    for claim in claims:
        if claim.task_id != task_id:
            other.release(task_id=claim.task_id, token=claim.token)
            continue
        row = other.get(task_id)
        assert row is not None
        waiting = row._replace(status=TaskStatus.BLOCKED)
        other.misfired(waiting, (), token=claim.token, release=True)
    assert [claim.task_id for claim in claims].count(task_id) == 1


def status(store: Shared, task_id: str) -> TaskStatus | None:
    row = store.get(task_id)
    return None if row is None else row.status


def test_a_cancel_whose_hold_is_not_stored_has_its_dependents_written_again(
    stores: Callable[[], tuple[RolledBackSqlite | CutPostgres, Shared]],
) -> None:
    """The dependents a ``cancel`` failed inside its hold are failed writes too, written
    again with the task's own row once the store answers: before, the dependent stayed
    BLOCKED in the store (FAILED here), and the other processes waited on it for good."""
    store, _ = stores()
    scheduler = Scheduler(store=store, clock=FakeClock(T0))  # not started: the test acts
    try:
        scheduler.schedule("up", jobs.noop, FixedRate(60), id="up")
        scheduler.schedule("d", jobs.noop, FixedRate(60), id="d", depends_on=["up"])
        scheduler.schedule("x", jobs.noop, FixedRate(60), id="x")
        _, other = stores()
        blocked(other, "d")
        store.failing = True
        assert scheduler.cancel("up")  # its feed read follows d BLOCKED, then fails it
        store.failing = False
        assert scheduler.task("d").status is TaskStatus.FAILED
        assert (status(other, "up"), status(other, "d")) == (
            TaskStatus.SCHEDULED,
            TaskStatus.BLOCKED,
        )  # nothing of the hold stored
        writes = scheduler._core.store_writes
        assert writes is not None and writes.outage is not None
        assert set(writes.outage.stale) == {"up", "d"}
        scheduler.modify("x", priority=Priority.HIGH)  # a store call that succeeds
        assert writes.outage is None
        assert (status(other, "up"), status(other, "d")) == (
            TaskStatus.CANCELLED,
            TaskStatus.FAILED,
        )
    finally:
        scheduler.shutdown()


def test_a_replacement_whose_hold_is_not_stored_is_written_again_with_its_definition(
    stores: Callable[[], tuple[RolledBackSqlite | CutPostgres, Shared]],
) -> None:
    """A registration that replaces a task is held as a verb; its hold not stored, the
    row is written again with the new definition: before, the store's cache said the
    definition was written, the row was written again without it, and every process
    ran the old one for good (its priority here)."""
    store, other = stores()
    scheduler = Scheduler(store=store, clock=FakeClock(T0))
    try:
        scheduler.schedule("r", jobs.noop, FixedRate(60), id="r")
        scheduler.schedule("x", jobs.noop, FixedRate(60), id="x")
        store.failing = True
        scheduler.schedule(
            "r", jobs.noop, FixedRate(60), id="r", replace_existing=True, priority=Priority.HIGH
        )
        store.failing = False
        scheduler.modify("x", priority=Priority.HIGH)  # a store call that succeeds
        writes = scheduler._core.store_writes
        assert writes is not None and writes.outage is None
        row = other.get("r")
        assert row is not None and row.task.priority is Priority.HIGH
    finally:
        scheduler.shutdown()


def test_a_hold_not_stored_leaves_the_feed_to_read_the_next_writes_of_the_others(
    stores: Callable[[], tuple[RolledBackSqlite | CutPostgres, Shared]],
) -> None:
    """A shared SQLite store moves its feed's cursor past the versions it writes; a
    version rolled back with the hold is the next one another process's write takes.
    Before, the cursor stayed past it and this process never read that write (here
    another process's pause of ``q``: its run went on here)."""
    store, _ = stores()
    scheduler = Scheduler(store=store, clock=FakeClock(T0))
    _, other = stores()
    elsewhere = Scheduler(store=other, clock=FakeClock(T0))
    try:
        scheduler.schedule("r", jobs.noop, FixedRate(60), id="r")
        scheduler.schedule("q", jobs.noop, FixedRate(60), id="q")
        scheduler.schedule("x", jobs.noop, FixedRate(60), id="x")
        store.failing = True
        assert scheduler.pause("r")
        store.failing = False
        assert elsewhere.pause("q")  # its write takes the version the hold rolled back
        scheduler.modify("x", priority=Priority.HIGH)  # reads the feed
        assert scheduler.task("q").status is TaskStatus.PAUSED
        assert status(other, "r") is TaskStatus.PAUSED  # and the pause written again
    finally:
        elsewhere.shutdown()
        scheduler.shutdown()


def test_a_removal_not_stored_hides_no_removal_made_elsewhere(tmp_path: Path) -> None:
    """A shared SQLite store counts the versions of its own removals, which its feed then
    leaves out; a removal rolled back with its hold left its version counted, and another
    process's next removal took that version.  Before, this process never read that
    removal (``q`` stayed registered and ran here); now the hold's removals are undone
    with it, and the removal not stored is made again."""
    path = tmp_path / "tasks.db"
    store = RolledBackSqlite(path, shared=True)
    other = SqliteTaskStore(path, shared=True)
    scheduler = Scheduler(store=store, clock=FakeClock(T0))
    try:
        for task_id in ("r", "q", "x"):
            scheduler.schedule(task_id, jobs.noop, FixedRate(60), id=task_id)
        elsewhere = Scheduler(store=other, clock=FakeClock(T0))
        store.failing = True
        scheduler.remove("r")
        store.failing = False
        elsewhere.remove("q")  # its removal takes the version the hold rolled back
        scheduler.modify("x", priority=Priority.HIGH)  # reads the feed
        assert [task.id for task in scheduler.tasks()] == ["x"]
        assert (status(other, "r"), status(other, "q")) == (None, None)
        elsewhere.shutdown()
    finally:
        scheduler.shutdown()
        other.close()
        store.close()


class FillingSqlite(SqliteTaskStore):
    """A shared SQLite store whose disk fills up as task ``full``'s row is written, once
    ``failing`` is set: SQLite then rolls back the whole transaction it is in."""

    failing = False
    full = "d"

    def _write_state(
        self,
        connection: sqlite3.Connection,
        snapshot: TaskSnapshot,
        *,
        status: str,
        definition: str | None = None,
    ) -> int:
        if self.failing and snapshot.task.id == self.full:
            (pages,) = connection.execute("PRAGMA page_count").fetchone()
            connection.execute(f"PRAGMA max_page_count = {pages}")
            try:
                connection.execute("INSERT INTO filler VALUES (zeroblob(1000000))")
            finally:
                connection.execute("PRAGMA max_page_count = 1073741823")
        return super()._write_state(connection, snapshot, status=status, definition=definition)


def test_a_full_disk_inside_a_hold_loses_none_of_the_rows_written_before_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite rolls a whole transaction back when a statement inside fails with a full
    disk: the rows a hold wrote before that statement are gone, though each said it was
    written.  Before, the hold's end saw no transaction, committed nothing and said
    nothing: the cancelled task's row stayed SCHEDULED in the store for good.  Now those
    rows are failed writes too, written again once the store answers."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")
    path = tmp_path / "tasks.db"
    store = FillingSqlite(path, shared=True)
    with sqlite3.connect(path) as setup:
        setup.execute("CREATE TABLE filler (x)")
    scheduler = Scheduler(store=store, clock=FakeClock(T0))
    other = SqliteTaskStore(path, shared=True)
    try:
        scheduler.schedule("up", jobs.noop, FixedRate(60), id="up")
        scheduler.schedule("d", jobs.noop, FixedRate(60), id="d", depends_on=["up"])
        scheduler.schedule("x", jobs.noop, FixedRate(60), id="x")
        blocked(other, "d")
        store.failing = True
        assert scheduler.cancel("up")  # up written, then d's write fills the disk
        store.failing = False
        assert status(other, "up") is TaskStatus.SCHEDULED  # rolled back with d's
        scheduler.modify("x", priority=Priority.HIGH)  # a store call that succeeds
        assert (status(other, "up"), status(other, "d")) == (
            TaskStatus.CANCELLED,
            TaskStatus.FAILED,
        )
    finally:
        scheduler.shutdown()
        other.close()
        store.close()


def test_a_connection_lost_inside_a_hold_loses_none_of_the_rows_written_before_it(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A write inside a hold that loses the connection (a restart, a reset, the deadline)
    ends the hold's transaction with every row written before it; psycopg then ends the
    transaction block without a word.  Before, the hold's end raised nothing: the
    cancelled task's row stayed SCHEDULED in the store, and no process ever knew.  Now
    those rows are failed writes too, written again once the store answers."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")
    store = CutPostgres(postgres_dsn)
    other = PostgresTaskStore(postgres_dsn)
    scheduler = Scheduler(store=store, clock=FakeClock(T0))
    try:
        scheduler.schedule("up", jobs.noop, FixedRate(60), id="up")
        scheduler.schedule("d", jobs.noop, FixedRate(60), id="d", depends_on=["up"])
        scheduler.schedule("x", jobs.noop, FixedRate(60), id="x")
        blocked(other, "d")
        store.failing, store.cut_at = True, "d"
        assert scheduler.cancel("up")  # up written, then the connection lost at d's write
        store.failing = False
        assert status(other, "up") is TaskStatus.SCHEDULED  # gone with the transaction
        scheduler.modify("x", priority=Priority.HIGH)  # connects again: a call that succeeds
        assert (status(other, "up"), status(other, "d")) == (
            TaskStatus.CANCELLED,
            TaskStatus.FAILED,
        )
    finally:
        scheduler.shutdown()
        store.close()
        other.close()


def test_a_read_failing_inside_a_hold_leaves_the_rows_written_before_it_failed_writes(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A statement that fails inside a PostgreSQL hold outside a savepoint of its own (here
    the records a replacement's new upstreams are counted from, read on a lock timeout)
    aborts the hold's transaction: its COMMIT rolls back every write inside, and psycopg
    says it committed.  Before, the replacement's new definition was gone from the store
    for good (no failed write named it: every later registration of the same definition
    wrote nothing); now the hold sees its transaction aborted, and the row is written
    again with it once the store answers."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")
    store = PostgresTaskStore(postgres_dsn)
    other = PostgresTaskStore(postgres_dsn)
    scheduler = Scheduler(store=store, clock=FakeClock(T0))
    try:
        for task_id in ("u1", "u2", "x"):
            scheduler.schedule(task_id, jobs.noop, FixedRate(60), id=task_id)
        scheduler.schedule("r", jobs.noop, FixedRate(60), id="r", depends_on=["u1"])
        store._open().execute("SET lock_timeout = '10ms'")
        with psycopg.connect(postgres_dsn) as admin:  # the records read waits, then fails
            admin.execute("LOCK TABLE records IN ACCESS EXCLUSIVE MODE")
            scheduler.schedule(
                "r", jobs.noop, FixedRate(60), id="r", depends_on=["u1", "u2"],
                replace_existing=True,
            )  # fmt: skip
        row = other.get("r")
        assert row is not None and row.task.depends_on == ("u1",)  # rolled back
        scheduler.modify("x", priority=Priority.HIGH)  # a store call that succeeds
        row = other.get("r")
        assert row is not None and row.task.depends_on == ("u1", "u2")
    finally:
        scheduler.shutdown()
        store.close()
        other.close()


def test_a_hold_whose_commit_meets_a_silent_network_ends_at_the_stores_timeout(
    postgres_server: PostgresServer, postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The hold's COMMIT is bounded by the store's ``timeout`` as every call is: before,
    the writes inside disarmed the deadline as each ended, and a COMMIT sent into a
    network that answers nothing waited for ever, the scheduler's lock held.  Now the
    verb returns, its row a failed write, written again once the network is back."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        store = PostgresTaskStore(proxy.dsn(postgres_dsn, port=postgres_server.port), timeout=1)
        other = PostgresTaskStore(postgres_dsn)
        scheduler = Scheduler(store=store, clock=FakeClock(T0))
        held = store.verb_held
        sessions: list[int] = []

        @contextlib.contextmanager
        def cut_at_the_end(task_id: str, also: Sequence[str] = ()) -> Iterator[None]:
            with held(task_id, also):
                yield
                assert store._connection is not None
                sessions.append(store._connection.info.backend_pid)
                proxy.black_hole()

        try:
            scheduler.schedule("r", jobs.noop, FixedRate(60), id="r")
            scheduler.schedule("x", jobs.noop, FixedRate(60), id="x")
            store.verb_held = cut_at_the_end  # type: ignore[method-assign]
            assert scheduler.pause("r")  # returns: the COMMIT ended by the deadline
            store.verb_held = held  # type: ignore[method-assign]
            proxy.heal()
            writes = scheduler._core.store_writes
            assert writes is not None and writes.outage is not None
            assert "r" in writes.outage.stale
            # The server still holds the cut session's row lock until it ends the session
            # (idle_in_transaction_session_timeout: the lease); ended now, as it would be.
            with psycopg.connect(postgres_dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 10000)", (sessions[0],))
            scheduler.modify("x", priority=Priority.HIGH)  # connects again, writes r again
            assert status(other, "r") is TaskStatus.PAUSED
        finally:
            scheduler.shutdown()
            store.close()
            other.close()


class Paused(PostgresTaskStore):
    """A PostgreSQL store whose verb, once ``pause`` is set, stops after the first row it
    fails (a cancel's first dependent) until the test lets it go (``go``)."""

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.pause = False
        self.first = threading.Event()
        self.go = threading.Event()

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot, record)
        if self.pause and snapshot.status is TaskStatus.FAILED:
            self.pause = False
            self.first.set()
            self.go.wait()


def test_two_cancels_failing_the_same_dependents_learnt_in_other_orders_never_deadlock(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Two processes cancel two upstreams of the same two dependents at once, each failing
    them in the order it learnt them: here X ``d2, d1`` (it re-registered ``d1``) and Y,
    which started after, ``d1, d2`` (the order first saved).  Before, each hold locked a
    dependent's row as it wrote it: X held ``d2`` and waited for ``d1``, Y held ``d1``
    and waited for ``d2``; PostgreSQL broke the deadlock after a second by failing one
    of the writes (``deadlock detected``: an outage said at ERROR, the row written again
    later).  Now each hold locks its task's row and its dependents' at once, in the order
    of their ids: Y waits for X's commit, then goes on, and no write fails.

    X is stopped after its first dependent's write until Y waits for a lock (its first
    dependent's row before, its hold's rows now), so the two interleave as they did."""
    caplog.set_level(logging.WARNING, logger="lldsched")
    x_store = Paused(postgres_dsn)
    sx = Scheduler(store=x_store, clock=FakeClock(T0))
    y_store: Paused | None = None
    sy: Scheduler | None = None
    other = PostgresTaskStore(postgres_dsn)
    try:
        for upstream in ("a", "b"):
            sx.schedule(upstream, jobs.noop, FixedRate(60), id=upstream)
        for dependent in ("d1", "d2"):
            sx.schedule(dependent, jobs.noop, FixedRate(60), id=dependent, depends_on=["a", "b"])
        sx.schedule(  # a new definition: X's registry relinks d1 (learnt last here now)
            "d1", jobs.noop, FixedRate(60), id="d1", depends_on=["b", "a"], replace_existing=True
        )
        y_store = Paused(postgres_dsn)  # Y starts: it loads them in the order first saved
        sy = both = Scheduler(store=y_store, clock=FakeClock(T0))
        assert (sx._core.downstream("a"), both._core.downstream("b")) == (
            ["d2", "d1"],
            ["d1", "d2"],
        )
        blocked(other, "d1")
        blocked(other, "d2")
        x_store.pause = True
        y_backend = y_store._open().info.backend_pid
        x = threading.Thread(target=sx.cancel, args=("a",))
        y = threading.Thread(target=both.cancel, args=("b",))
        x.start()
        x_store.first.wait()  # X's hold wrote d2 (and holds what it holds)
        y.start()
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            while not admin.execute(  # Y waits for a lock X holds
                "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
                (y_backend,),
            ).fetchone():
                pass
        x_store.go.set()
        x.join()
        y.join()
        for scheduler in (sx, both):
            assert scheduler.metrics().store_ok  # no write failed
            assert [scheduler.task(d).status for d in ("d1", "d2")] == [TaskStatus.FAILED] * 2
        assert [status(other, t) for t in ("a", "b", "d1", "d2")] == [
            TaskStatus.CANCELLED,
            TaskStatus.CANCELLED,
            TaskStatus.FAILED,
            TaskStatus.FAILED,
        ]
        assert "deadlock" not in caplog.text
    finally:
        x_store.go.set()
        for made in (sx, sy):
            if made is not None:
                made.shutdown()
        for store in (x_store, y_store, other):
            if store is not None:
                store.close()
