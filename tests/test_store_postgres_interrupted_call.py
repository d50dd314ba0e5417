"""A PostgreSQL store call interrupted inside psycopg leaves no connection that the next
call cannot use, nor a transaction open that no call owns.

An exception that is not psycopg's (one a signal handler raises, a ``KeyboardInterrupt``)
can stop psycopg between any two of its bytecodes.  Two such points left the store's
connection unfit, and the store reused it:

* between psycopg's end of a transaction block and the COMMIT it sends: the session was
  left inside the write's transaction, and every later statement ran in it, answered
  and never committed (a scheduler's writes all lost in silence, until the server ended
  the session idle in its transaction, a ``lease`` later);
* as a transaction block begins, before psycopg counts it: psycopg's count of open
  blocks went wrong for good, and every later write failed ("transaction rollback at
  the wrong nesting level").

A verb's hold whose end failed so, or whose connection a call inside left with its
command in flight, kept its transaction, and the row locks it holds, until the store's
next call.

A real signal cannot be made to land at one given bytecode, so the interruption is
raised where psycopg would let it out (``interrupt_*``): inside psycopg's code that ends a
transaction block, or in its wait for a round trip, before or after the command is
sent.  The server, and every other round trip, are real.  One case is all real: a
``SIGALRM`` whose handler raises, while a write waits for a row lock another session
holds (psycopg cancels the statement only for ``KeyboardInterrupt`` and ``SystemExit``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
import psycopg.transaction
import psycopg.waiting
import pytest

from lldsched import FakeClock, FixedRate, Priority, Scheduler, TaskStatus
from lldsched.storecalls import HoldNotCommitted
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.stores.postgres.connection import CANCEL_TIMEOUT
from tests import jobs
from tests.conftest import T0
from tests.pg_faults import fail_in_wait
from tests.pg_server import PostgresServer
from tests.tcp_proxy import TcpProxy
from tests.test_store_sqlite import record, snapshot, task


class Alarm(Exception):
    """What a program's own signal handler raises (a ``SIGALRM`` bounding a block)."""


@pytest.fixture
def alarm() -> Iterator[Callable[[], None]]:
    """``alarm()``: a ``SIGALRM`` in a moment, whose handler raises :class:`Alarm` on the
    main thread (the test's)."""

    def raising(signum: int, frame: object) -> None:
        raise Alarm("interrupted")

    def arm() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0.2)

    previous = signal.signal(signal.SIGALRM, raising)
    try:
        yield arm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def paused(task_id: str) -> Any:
    return snapshot(task(id=task_id))._replace(status=TaskStatus.PAUSED)


def interrupt_round_trip(monkeypatch: pytest.MonkeyPatch, *, nth: int, sent: bool) -> None:
    """The ``nth`` round trip made on this thread from now on raises :class:`Alarm` in
    psycopg's wait, its command ``sent`` or not yet; once."""
    fail_in_wait(monkeypatch, Alarm("interrupted"), nth=nth, sent=sent)


def interrupt_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next transaction block ended on this thread raises :class:`Alarm` once psycopg
    has counted it ended, before it sends the COMMIT; once."""
    commands: Callable[..., Any] = psycopg.transaction.BaseTransaction._get_commit_commands
    thread = threading.current_thread()
    fired = threading.Event()

    def ending(self: psycopg.transaction.BaseTransaction[Any]) -> Any:
        if threading.current_thread() is thread and not fired.is_set():
            fired.set()
            raise Alarm("interrupted")
        return commands(self)

    monkeypatch.setattr(psycopg.transaction.BaseTransaction, "_get_commit_commands", ending)


def test_writes_after_one_interrupted_before_its_commit_are_committed(
    open_store: Callable[..., PostgresTaskStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the session stayed inside the interrupted write's transaction: the writes
    after it were answered and never committed (another store saw none of them)."""
    store, other = open_store(), open_store()
    store.save(snapshot(task(id="a")))
    interrupt_commit(monkeypatch)
    with pytest.raises(Alarm):
        store.save(paused("a"), record("a", 0))
    store.save(snapshot(task(id="b")))
    store.save(paused("a"), record("a", 1))
    row = other.get("a")
    assert row is not None and row.status is TaskStatus.PAUSED
    assert other.get("b") is not None
    assert [r.attempt for r in other.records("a")] == [1]  # the interrupted one rolled back


def test_writes_after_one_interrupted_as_its_transaction_began_succeed(
    open_store: Callable[..., PostgresTaskStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, psycopg's count of transaction blocks was left wrong on the connection, and
    every later write on it failed ("transaction rollback at the wrong nesting level")."""
    store, other = open_store(), open_store()
    store.save(snapshot(task(id="a")))
    interrupt_round_trip(monkeypatch, nth=1, sent=False)  # the BEGIN, before it is counted
    with pytest.raises(Alarm):
        store.save(paused("a"), record("a", 0))
    for task_id in ("b", "c"):
        store.save(snapshot(task(id=task_id)))
    store.save(paused("a"), record("a", 1))
    assert [snapshot.task.id for snapshot in other.load_all()] == ["a", "b", "c"]
    assert [r.attempt for r in other.records("a")] == [1]


def test_a_hold_whose_end_failed_lets_its_row_locks_go_at_once(
    open_store: Callable[..., PostgresTaskStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write inside the hold interrupted once its command was sent: its reply unread,
    the hold's COMMIT fails.  Before, its transaction stayed open on the server, the rows
    locked, until the store's next call (or the server ended the session a ``lease``
    later): another node's write of the row waited for it.

    The interrupt leaves the block, and reaches the user of the store (no runtime here),
    the hold's ``HoldNotCommitted`` its ``__context__``.  Before, the hold raised
    ``HoldNotCommitted`` in its place, the interrupt not even in its chain."""
    store, other = open_store(lease=60), open_store(lease=60, timeout=30)
    store.save(snapshot(task(id="a")))
    store.save(snapshot(task(id="b")))
    with pytest.raises(Alarm) as raised, store.verb_held("a", also=("b",)):
        store.save(paused("b"))
        interrupt_round_trip(monkeypatch, nth=1, sent=True)
        store.save(paused("a"))
    monkeypatch.undo()
    ended = raised.value.__context__
    assert isinstance(ended, HoldNotCommitted) and list(ended.written) == ["b"]
    with psycopg.connect(store._dsn, autocommit=True) as admin:
        admin.execute("SET lock_timeout = '10s'")  # the hold's session kept them 60 s
        admin.execute("SELECT id FROM tasks WHERE id = 'a' FOR UPDATE")
    for task_id in ("a", "b"):
        row = other.get(task_id)
        assert row is not None and row.status is TaskStatus.SCHEDULED  # nothing of the hold
    store.save(paused("a"))
    row = other.get("a")
    assert row is not None and row.status is TaskStatus.PAUSED


def test_a_write_a_signal_cut_while_it_waited_for_a_row_lock_is_not_stored(
    open_store: Callable[..., PostgresTaskStore], alarm: Callable[[], None]
) -> None:
    """All real: the write waits for the row another session holds; the signal's
    exception comes out of psycopg's wait, the statement still running on the server.
    The next call is answered, and the cut write is not stored when the lock is let go
    (its transaction never committed)."""
    store, other = open_store(), open_store()
    store.save(snapshot(task(id="a")))
    with psycopg.connect(store._dsn) as holder:  # not autocommit: the lock is kept
        holder.execute("SELECT id FROM tasks WHERE id = 'a' FOR UPDATE")
        alarm()
        with pytest.raises(Alarm):
            store.save(paused("a"), record("a", 0))
        assert [snapshot.task.id for snapshot in store.load_all()] == ["a"]
    row = other.get("a")
    assert row is not None and row.status is TaskStatus.SCHEDULED
    assert other.records("a") == []
    store.save(paused("a"), record("a", 1))
    assert [r.attempt for r in other.records("a")] == [1]


def wait_until(done: Callable[[], bool], *, seconds: float, what: str) -> None:
    """Until ``done()``, checked again and again for ``seconds`` at most (a bounded
    deadline, not a pause): fails naming ``what`` otherwise."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"still, after {seconds:g} s: {what}")
        time.sleep(0.01)


def test_a_statement_a_signal_cut_while_it_waited_for_a_row_lock_stops_on_the_server(
    open_store: Callable[..., PostgresTaskStore], alarm: Callable[[], None]
) -> None:
    """All real, as above, the store's ``timeout`` long.  Before, closing the connection
    did not stop the statement: the server learns of a closed socket only as it next
    writes to it, and a statement waiting for a lock writes nothing, so it went on
    waiting (its session, and whatever locks its transaction held, kept) until the lock
    was let go or the store's ``statement_timeout`` (its ``timeout``) ended it."""
    store = open_store(timeout=120)
    store.save(snapshot(task(id="a")))
    assert store._connection is not None
    pid = store._connection.info.backend_pid
    with psycopg.connect(store._dsn) as holder:  # not autocommit: the lock is kept
        holder.execute("SELECT id FROM tasks WHERE id = 'a' FOR UPDATE")
        alarm()
        with pytest.raises(Alarm):
            store.save(paused("a"), record("a", 0))
        with psycopg.connect(store._dsn, autocommit=True) as admin:

            def gone() -> bool:
                sessions = "SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE pid = %s"
                return count(admin, sessions, pid) == 0

            wait_until(gone, seconds=10, what=f"the session {pid} of the cut statement")
            waits = "SELECT count(*) FROM pg_catalog.pg_locks WHERE NOT granted"
            assert count(admin, waits) == 0  # no one waits for the row the holder keeps


def test_a_statement_a_signal_cut_inside_a_verbs_hold_stops_on_the_server(
    open_store: Callable[..., PostgresTaskStore], alarm: Callable[[], None]
) -> None:
    """The same, inside a verb's hold on another task: the cut write's reply unread, the
    hold's COMMIT fails (HoldNotCommitted, nothing of it stored) and its connection is
    closed.  Before, the write went on waiting on the server, and the hold's session with
    it, its row locks (task ``a``'s) kept."""
    store = open_store(timeout=120, lease=120)
    store.save(snapshot(task(id="a")))
    store.save(snapshot(task(id="b")))
    assert store._connection is not None
    pid = store._connection.info.backend_pid
    with psycopg.connect(store._dsn) as holder:  # not autocommit: the lock is kept
        holder.execute("SELECT id FROM tasks WHERE id = 'b' FOR UPDATE")
        with pytest.raises(HoldNotCommitted), store.verb_held("a"):
            alarm()
            with pytest.raises(Alarm):
                store.save(paused("b"))
        with psycopg.connect(store._dsn, autocommit=True) as admin:

            def gone() -> bool:
                sessions = "SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE pid = %s"
                return count(admin, sessions, pid) == 0

            wait_until(gone, seconds=10, what=f"the session {pid} of the hold")
            admin.execute("SET lock_timeout = '10s'")  # the hold's row, let go
            admin.execute("SELECT id FROM tasks WHERE id = 'a' FOR UPDATE")


def count(connection: psycopg.Connection[Any], query: str, *parameters: object) -> int:
    """The count ``query`` (a ``SELECT count(*)``) gives with ``parameters``."""
    row = connection.execute(query, parameters).fetchone()
    assert row is not None
    return int(row[0])


def test_a_ctrl_c_as_a_verbs_write_begins_in_its_hold_reaches_the_user(
    open_store: Callable[..., PostgresTaskStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C as the pause's write begins its savepoint inside the verb's hold, before
    the ``SAVEPOINT`` is sent: psycopg undoes the block, and its undo fails ("transaction
    rollback at the wrong nesting level").  Before, that error replaced the Ctrl-C, the
    store said it as a StoreError, the runtime took it for a failed write (an outage,
    logged at ERROR), and ``pause()`` returned: the user's Ctrl-C was lost.  Now
    ``pause()`` raises it; the task is paused in the registry, its row a failed write
    written again (at ``shutdown()`` here)."""
    store, other = open_store(), open_store()
    scheduler = Scheduler(store=store, clock=FakeClock(T0))  # not started: the test acts
    try:
        scheduler.schedule("a", jobs.noop, FixedRate(60), id="a")
        save = store.save

        def cut_as_it_begins(*args: Any, **kwargs: Any) -> Any:
            fail_in_wait(monkeypatch, KeyboardInterrupt(), nth=1, sent=False)
            return save(*args, **kwargs)

        monkeypatch.setattr(store, "save", cut_as_it_begins)
        with pytest.raises(KeyboardInterrupt):
            scheduler.pause("a")
        monkeypatch.undo()
        assert scheduler.task("a").status is TaskStatus.PAUSED
    finally:
        scheduler.shutdown()
    row = other.get("a")
    assert row is not None and row.status is TaskStatus.PAUSED


def test_a_cancel_sent_into_a_silent_network_is_bounded_by_a_bound_of_its_own(
    postgres_server: PostgresServer,
    postgres_dsn: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A signal whose handler raises while a write waits on a row lock, the network gone
    silent as it lands (the proxy swallows everything, the cancel's new connection too):
    the cancel of the cut statement is given :data:`CANCEL_TIMEOUT`, not the store's
    ``timeout``, and the signal's exception reaches the caller once it gave up.  Before,
    the cancel was given the store's ``timeout`` (30 s here, 10 by default), which the
    user waited in full for their interrupt."""
    caplog.set_level(logging.DEBUG, logger="lldsched")
    cancels: list[tuple[float, BaseException | None]] = []  # each cancel's bound, and end
    cancel_safe = psycopg.Connection.cancel_safe

    def cancelling(self: psycopg.Connection[Any], *, timeout: float = 30.0) -> None:
        try:
            cancel_safe(self, timeout=timeout)
        except BaseException as exc:
            cancels.append((timeout, exc))
            raise
        cancels.append((timeout, None))

    monkeypatch.setattr(psycopg.Connection, "cancel_safe", cancelling)
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        store = PostgresTaskStore(proxy.dsn(postgres_dsn, port=postgres_server.port), timeout=30)
        try:
            store.save(snapshot(task(id="a")))

            def silenced(signum: int, frame: object) -> None:
                proxy.black_hole()
                raise Alarm("interrupted")

            previous = signal.signal(signal.SIGALRM, silenced)
            try:
                with psycopg.connect(postgres_dsn) as holder:  # direct: the lock is kept
                    holder.execute("SELECT id FROM tasks WHERE id = 'a' FOR UPDATE")
                    signal.setitimer(signal.ITIMER_REAL, 0.2)
                    with pytest.raises(Alarm):
                        store.save(paused("a"))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
            ((bound, ended),) = cancels
            assert bound == CANCEL_TIMEOUT < 30
            assert isinstance(ended, psycopg.errors.CancellationTimeout)  # met the silence
            assert "the cancel of a statement cut in flight failed" in caplog.text
            proxy.heal()
            store.save(snapshot(task(id="b")))  # a new connection: the store goes on
        finally:
            store.close()


@pytest.mark.parametrize("sent", [False, True], ids=["before-it-is-sent", "once-it-is-sent"])
def test_a_ctrl_c_in_a_verbs_commit_leaves_the_verb_whole_and_its_row_stored(
    open_store: Callable[..., PostgresTaskStore],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    sent: bool,
) -> None:
    """A Ctrl-C in the COMMIT of ``pause()``'s hold, in psycopg's wait for its round trip:
    before it is sent (not committed), or once it is (its reply unread: committed or not,
    unknown here).  ``pause()`` raises it, the task paused in the registry, and the
    scheduler takes the next verb; the row is paused on the server once a store call
    succeeds (the hold's rows written again, as after a failed COMMIT:
    ``HoldNotCommitted``), and a scheduler built again has the task paused.  Before, the
    hold raised the Ctrl-C alone: its caches not put back and its rows not written again
    (a COMMIT not sent lost the pause for good), and the runtime took the verb for one
    the Ctrl-C cut in the middle, refusing every later verb."""
    caplog.set_level(logging.CRITICAL, logger="lldsched")  # the outage is said at ERROR
    store, other = open_store(), open_store()
    scheduler = Scheduler(store=store, clock=FakeClock(T0))  # not started: the test acts
    held = store.verb_held
    armed = [True]

    @contextlib.contextmanager
    def cut_at_its_commit(task_id: str, also: Sequence[str] = ()) -> Iterator[None]:
        with held(task_id, also):
            yield
            if armed:  # the hold's COMMIT is the next round trip
                armed.clear()
                fail_in_wait(monkeypatch, KeyboardInterrupt(), nth=1, sent=sent)

    try:
        scheduler.schedule("r", jobs.noop, FixedRate(60), id="r")
        scheduler.schedule("x", jobs.noop, FixedRate(60), id="x")
        monkeypatch.setattr(store, "verb_held", cut_at_its_commit)
        with pytest.raises(KeyboardInterrupt):
            scheduler.pause("r")
        monkeypatch.undo()
        assert scheduler.task("r").status is TaskStatus.PAUSED
        scheduler.modify("x", priority=Priority.HIGH)  # the next verb, a store call
        row = other.get("r")
        assert row is not None and row.status is TaskStatus.PAUSED
    finally:
        scheduler.shutdown()
    again = Scheduler(store=open_store(), clock=FakeClock(T0))
    try:
        assert again.task("r").status is TaskStatus.PAUSED
    finally:
        again.shutdown()
