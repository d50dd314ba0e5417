"""PostgresTaskStore's batched settles on a real server: a batch mixing current and stale
tokens writes the current ones and refuses the stale ones, each counted; what waits is
written before the store's next write, by ``flush()``, at shutdown and in ``wait_idle()``;
a settle still waiting when its process dies is run again once its lease expires.

A test that needs settles to *wait* stops the store's writer thread from being started
(``hold_back``): the batch is then exactly what the test queued, and only ``flush()`` (or
the store's next statement) writes it.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from lldsched import OneTime, Scheduler, StoreError, TaskStatus
from lldsched.coordination import Claim
from lldsched.stores.postgres import PostgresTaskStore, lease_sql, sql
from lldsched.stores.postgres import batch as postgres_batch
from lldsched.stores.postgres.batch import Pending, SettleQueue
from tests import jobs
from tests.conftest import T0
from tests.exitthreads import refusing_threads
from tests.pg_server import PostgresServer
from tests.tcp_proxy import TcpProxy
from tests.test_store_postgres_claims import notified_before_a_marker
from tests.test_store_sqlite import record, snapshot, task
from tests.waits import wait_until

Opener = Callable[..., PostgresTaskStore]


class _FlushOnly(SettleQueue):
    """A queue that tells the store nothing waits, so that only ``flush()`` writes it (not
    the store's next statement, e.g. the timer's next claim)."""

    @property
    def waiting(self) -> bool:
        return False


def hold_back(store: PostgresTaskStore, *, only_flush: bool = False) -> list[list[int]]:
    """Keep ``store``'s settles queued until something writes them (with ``only_flush``,
    until ``flush()``), and log each batch written (its tokens): the writer thread is
    never started."""
    queue = _FlushOnly if only_flush else SettleQueue
    store._settles = queue(store.flush, store=store.dsn, writer=False)
    batches: list[list[int]] = []
    write = store._settle_batch

    def logged(batch: list[Pending]) -> set[int]:
        batches.append([pending.token for pending in batch])
        return write(batch)

    store._settle_batch = logged  # type: ignore[method-assign]
    return batches


def expire(store: PostgresTaskStore, task_id: str) -> None:
    """Expire ``task_id``'s lease on the server's clock."""
    with psycopg.connect(store._dsn, autocommit=True) as connection:
        connection.execute(
            "UPDATE leases SET expires_at = expires_at - 3600 WHERE task_id = %s", (task_id,)
        )


def finished(task_id: str) -> Any:
    return snapshot(task(id=task_id), TaskStatus.SUCCEEDED)._replace(next_run_at=None, run_count=1)


def test_one_batch_writes_the_current_tokens_and_refuses_the_stale_one(
    open_store: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    holder, other = open_store(lease=60), open_store(lease=60)
    for task_id in ("a", "b", "c"):
        holder.save(snapshot(task(id=task_id)))
    claims = {claim.task_id: claim for claim in holder.claim(now=T0, limit=3)}
    expire(holder, "b")
    (taken,) = other.claim(now=T0, limit=1)  # b is taken over: holder's token is stale
    assert taken.task_id == "b" and taken.token > claims["b"].token
    batches = hold_back(holder)

    for n, task_id in enumerate(("a", "b", "c")):
        token = claims[task_id].token
        holder.save(finished(task_id), record(task_id, n)._replace(token=token))
    assert other.records() == []  # queued: nothing written yet
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        holder.flush()

    assert batches == [[claims[task_id].token for task_id in ("a", "b", "c")]]  # one batch
    assert holder.rejected == 1
    assert [r.task_id for r in other.records()] == ["a", "c"]
    assert [r.token for r in other.records()] == [claims["a"].token, claims["c"].token]
    assert {s.task.id: s.status for s in other.load_all()} == {
        "a": TaskStatus.SUCCEEDED,
        "b": TaskStatus.SCHEDULED,  # untouched by the stale settle: the new holder runs it
        "c": TaskStatus.SUCCEEDED,
    }
    assert [(lease.task_id, lease.token) for lease in other.leases()] == [("b", taken.token)]
    refused = [r.getMessage() for r in caplog.records if "lease" in r.getMessage().lower()]
    assert len(refused) == 1 and f"token {claims['b'].token}" in refused[0]
    # What became of the run's record, as the SQLite store says it (LeaseLost.settle_refused).
    attempt = record("b", 1).attempt
    assert refused[0].endswith(
        f"the write was refused; the record of attempt {attempt} was not stored (this "
        "process's own history keeps it: the run ran here, and the store keeps the run that "
        "took it over)"
    )


def test_the_records_a_run_decides_after_its_own_join_its_settle_in_the_batch(
    open_store: Opener,
) -> None:
    store = open_store(lease=60)
    store.save(snapshot(task(id="a")))
    (claim,) = store.claim(now=T0, limit=1)
    batches = hold_back(store)
    done = snapshot(task(id="a"))._replace(next_run_at=T0 + 120, run_count=1)
    store.save(done, record("a", 0)._replace(token=claim.token))
    store.save(done, record("a", 1)._replace(token=claim.token))  # a SKIPPED slot, say
    store.flush()
    assert batches == [[claim.token]]
    assert [(r.started, r.token) for r in store.records("a")] == [
        (T0, claim.token),
        (T0 + 1, claim.token),
    ]
    # One more under the same token once the settle was written: written as well.
    store.save(done, record("a", 2)._replace(token=claim.token))
    assert len(store.records("a")) == 3 and store.rejected == 0


def test_a_control_verb_written_after_a_settle_waits_for_it_so_the_verb_wins(
    open_store: Opener,
) -> None:
    store = open_store(lease=60)
    store.save(snapshot(task(id="a")))
    (claim,) = store.claim(now=T0, limit=1)
    batches = hold_back(store)
    after_run = snapshot(task(id="a"))._replace(next_run_at=T0 + 60, run_count=1)
    store.save(after_run, record("a", 0)._replace(token=claim.token))
    # Paused here once the run finished: written after the settle, so it is what stays
    # (the other way round, the settle, this node's own write, would put back SCHEDULED).
    store.save(after_run._replace(status=TaskStatus.PAUSED))
    assert batches == [[claim.token]]
    (row,) = open_store().load_all()
    assert row.status is TaskStatus.PAUSED and row.run_count == 1
    assert [r.token for r in store.records("a")] == [claim.token]


def test_a_settle_held_back_when_its_process_dies_runs_again_after_its_lease_expires(
    open_store: Opener,
) -> None:
    dying, survivor = open_store(lease=0.5), open_store(lease=60)
    dying.save(snapshot(task(id="a")))
    (old,) = dying.claim(now=T0, limit=1)
    hold_back(dying)
    dying.save(finished("a"), record("a", 0)._replace(token=old.token))  # ran; not written
    taken: list[Claim] = []

    def take_over() -> bool:
        taken.extend(survivor.claim(now=T0, limit=1))
        return bool(taken)

    wait_until(take_over, timeout=20, what="the lease (0.5 s, server's clock) to expire")
    assert taken[0].token > old.token  # run again: at-least-once
    new = taken[0].token
    survivor.settle(finished("a"), record("a", 1)._replace(token=new), token=new)
    dying.flush()  # the process comes back after all: its late batch is refused
    assert dying.rejected == 1
    assert [r.token for r in survivor.records("a")] == [taken[0].token]


def calls() -> int:
    with jobs.CALLS_LOCK:
        return len(jobs.CALLS)


@pytest.fixture
def quiet_scheduler(open_store: Opener) -> Iterator[tuple[Scheduler, PostgresTaskStore]]:
    """A scheduler on a store whose settles wait until flush() writes them (``hold_back``
    with ``only_flush``)."""
    jobs.CALLS.clear()
    store = open_store(lease=60, poll=3600)
    scheduler = Scheduler(store=store, workers=2, max_wait=None)
    yield scheduler, store
    scheduler.shutdown(timeout=10)
    jobs.CALLS.clear()


def test_wait_idle_writes_every_settle_held_back(
    quiet_scheduler: tuple[Scheduler, PostgresTaskStore], open_store: Opener
) -> None:
    scheduler, store = quiet_scheduler
    batches = hold_back(store, only_flush=True)
    for n in range(6):
        scheduler.schedule(f"job-{n}", jobs.note, OneTime(delay=0), args=(n,), id=f"job-{n}")
    scheduler.start()
    wait_until(lambda: calls() == 6, timeout=10, what="the six actions to run")
    assert scheduler.wait_idle(timeout=10)
    reader = open_store()
    assert sorted(r.task_id for r in reader.records()) == [f"job-{n}" for n in range(6)]
    assert reader.leases() == [] and sum(map(len, batches)) == 6


def test_shutdown_writes_every_settle_held_back(
    quiet_scheduler: tuple[Scheduler, PostgresTaskStore], open_store: Opener
) -> None:
    scheduler, store = quiet_scheduler
    batches = hold_back(store, only_flush=True)
    scheduler.schedule("job", jobs.note, OneTime(delay=0), args=("job",), id="job")
    scheduler.start()
    wait_until(lambda: calls() == 1, timeout=10, what="the action to run")
    wait_until(lambda: bool(store._settles._pending), timeout=10, what="its settle queued")
    assert open_store().records() == [] and batches == []  # ran, not written yet
    assert scheduler.shutdown(timeout=10)
    assert [r.task_id for r in open_store().records()] == ["job"]
    assert open_store().leases() == [] and len(batches) == 1


def test_the_change_feed_decodes_a_definition_once_and_a_new_one_again(
    open_store: Opener,
) -> None:
    writer, reader = open_store(), open_store()
    reader.changes()  # the cursor starts here
    writer.save(snapshot(task(id="a")))
    (first,) = reader.changes()
    writer.save(snapshot(task(id="a"), TaskStatus.PAUSED))
    (second,) = reader.changes()
    assert second.snapshot is not None and first.snapshot is not None
    assert second.snapshot.status is TaskStatus.PAUSED
    assert second.snapshot.task is first.snapshot.task  # the same text: not decoded again
    writer.save(snapshot(task(id="a", name="renamed")))
    (third,) = reader.changes()
    assert third.snapshot is not None and third.snapshot.task.name == "renamed"


def test_a_settle_after_close_is_refused_with_a_store_error_not_queued(open_store: Opener) -> None:
    store = open_store(lease=60)
    store.save(snapshot(task(id="a")))
    (claim,) = store.claim(now=T0, limit=1)
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.save(finished("a"), record("a", 0)._replace(token=claim.token))
    assert not store._settles.waiting


def test_a_batch_that_makes_a_task_the_earliest_due_notifies_the_others_once(
    open_store: Opener,
) -> None:
    listener, runner = open_store(poll=3600), open_store(lease=60)
    runner.save(snapshot(task(id="other"))._replace(next_run_at=T0 + 50))
    for task_id in ("a", "b"):
        runner.save(snapshot(task(id=task_id)))
    claims = {claim.task_id: claim for claim in runner.claim(now=T0, limit=2)}
    woke = threading.Event()
    listener.subscribe(woke.set)
    assert woke.wait(10)  # once when it starts listening
    woke.clear()
    batches = hold_back(runner)
    later = snapshot(task(id="a"))._replace(next_run_at=T0 + 60, run_count=1)  # after "other"
    with psycopg.connect(runner._dsn, autocommit=True) as session:
        session.execute(sql.listen(runner._channel))
        runner.save(later, record("a", 0)._replace(token=claims["a"].token))
        runner.flush()
        assert notified_before_a_marker(session, runner._channel) == []  # not the earliest
    sooner = snapshot(task(id="b"))._replace(next_run_at=T0 + 10, run_count=1)
    runner.save(sooner, record("b", 0)._replace(token=claims["b"].token))
    runner.flush()
    assert woke.wait(10)
    assert len(batches) == 2


def test_settles_in_a_batch_write_failures_in_dead_letter_order_and_a_new_definition(
    open_store: Opener,
) -> None:
    store = open_store(lease=60)
    for task_id in ("a", "b", "c"):
        store.save(snapshot(task(id=task_id)))
    claims = {claim.task_id: claim for claim in store.claim(now=T0, limit=3)}
    hold_back(store)
    for task_id in ("b", "a"):
        failed = snapshot(task(id=task_id), TaskStatus.FAILED)._replace(
            next_run_at=None, run_count=1, failure_count=1, last_error="boom"
        )
        failure = record(task_id, 0)._replace(ok=False, error="boom")
        store.save(failed, failure._replace(token=claims[task_id].token))
        store.flush()  # one batch each: their order is the order they failed
    renamed = snapshot(task(id="c", name="renamed"))._replace(next_run_at=T0 + 60)
    store.save(renamed, record("c", 0)._replace(token=claims["c"].token))
    store.flush()
    reader = open_store()
    assert reader.dead_letter() == ["b", "a"]
    assert {s.task.id: (s.task.name, s.last_error) for s in reader.load_all()} == {
        "a": ("t", "boom"),
        "b": ("t", "boom"),
        "c": ("renamed", None),
    }


def test_a_server_away_is_said_once_for_every_batch_it_fails_and_its_end_once(
    postgres_server: PostgresServer,
    postgres_dsn: str,
    open_store: Opener,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The batches a server away fails are said once, held, and written before the next
    batch once it is back, in order: each run's record stored once, its lease dropped
    (before, a failed batch was never tried again: its records were lost and its runs ran
    again once their leases expired)."""
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        store = PostgresTaskStore(proxy.dsn(postgres_dsn, port=postgres_server.port), lease=60)
        try:
            for task_id in ("a", "b", "c", "d"):
                store.save(snapshot(task(id=task_id)))
            claims = {claim.task_id: claim for claim in store.claim(now=T0, limit=4)}
            hold_back(store)
            written = []

            def settle(*task_ids: str) -> None:
                for n, task_id in enumerate(task_ids):
                    token = claims[task_id].token
                    written.append(record(task_id, n)._replace(token=token, node=store.node))
                    store.save(finished(task_id), written[-1])
                store.flush()

            with caplog.at_level(logging.DEBUG, logger="lldsched"):
                proxy.cut()  # the server is away: the live connection and any new one
                settle("a")  # the batch's statement fails, then connecting again fails
                settle("b", "c")  # connecting fails: a's settle held, tried again with them
                (error,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
                assert error.levelno == logging.ERROR and error.exc_info is not None
                assert error.getMessage().startswith(
                    f"store {store!r} failed (a write of 1 settles: held, and written again "
                    "at the store's next statement (a run whose lease expires first is taken "
                    "over)):"
                )
                (still,) = [r for r in caplog.records if "still failing" in r.getMessage()]
                assert still.levelno == logging.DEBUG and still.exc_info is None
                assert "write of 3 settles" in still.getMessage()
                assert store._settles.waiting and not store._settles._flying

                proxy.restore()
                settle("d")
                recovered = [r for r in caplog.records if r.levelno >= logging.WARNING][1:]
                # How long it lasted is real time here: its figure is not compared.
                lasted = r" after \d+\.\d s: "
                assert [(r.levelno, re.sub(lasted, ": ", r.getMessage())) for r in recovered] == [
                    (
                        logging.WARNING,
                        f"store {store!r} recovered (a settle batch succeeded): 2 calls "
                        "failed during the outage, 3 task writes not stored (the rows they "
                        "left stale were written again (3 rows); the records of 3 runs they "
                        "carried were written late, in order)",
                    )
                ]
                assert re.search(lasted, recovered[0].getMessage())
            # The held settles first, then d's, each once; no lease left to expire.
            assert open_store().records() == written
            assert open_store().leases() == []
            outcomes = [store._settles.outcome(claims[t].token) for t in "abcd"]
            assert outcomes == [True] * 4 and not store._settles._flying
        finally:
            store.close()


def test_settles_held_past_the_bound_drop_the_oldest_counted(
    open_store: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``HELD_SETTLES`` the oldest settles held are dropped (their runs taken over once
    their leases expire, as before), counted in the outage; the rest are written."""
    monkeypatch.setattr(postgres_batch, "HELD_SETTLES", 2)
    store = open_store(lease=60)
    for task_id in ("a", "b", "c"):
        store.save(snapshot(task(id=task_id)))
    claims = {claim.task_id: claim for claim in store.claim(now=T0, limit=3)}
    hold_back(store)
    failing = [True]
    write = store._settle_batch

    def away(batch: list[Pending]) -> set[int]:
        if failing[0]:
            store._settles.done((pending.token, False) for pending in batch)
            raise StoreError("the server is away")
        return write(batch)

    store._settle_batch = away  # type: ignore[method-assign]
    for n, task_id in enumerate("abc"):
        token = claims[task_id].token
        store.save(finished(task_id), record(task_id, n)._replace(token=token))
        store.flush()
    outage = store._batches.outage
    assert outage is not None and outage.dropped == 1  # a's record
    failing[0] = False
    store.flush()
    assert [r.task_id for r in open_store().records()] == ["b", "c"]
    assert [lease.task_id for lease in open_store().leases()] == ["a"]  # taken over later
    assert store._settles.outcome(claims["a"].token) is False


class _TrimFails:
    """A store's connection whose trims of records fail as if the server went away just
    after the batch's statement (every other statement goes through)."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection = connection

    def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        if query is sql.TRIM_RECORDS:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return self._connection.execute(query, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


def test_a_trim_that_fails_after_its_batch_was_written_reports_the_batch_and_trims_later(
    open_store: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(lease=60, retention=2)  # a trim is due every second record
    for task_id in ("a", "b"):
        store.save(snapshot(task(id=task_id)))
    claims = {claim.task_id: claim for claim in store.claim(now=T0, limit=2)}
    hold_back(store)
    live = store._open
    failing = True

    def opened() -> Any:
        return _TrimFails(live()) if failing else live()

    store._open = opened  # type: ignore[method-assign]
    again = snapshot(task(id="a"))._replace(next_run_at=T0 + 60, run_count=1)
    for n in range(3):
        store.save(again, record("a", n)._replace(token=claims["a"].token))
    for n in range(2):
        store.save(finished("b"), record("b", n)._replace(token=claims["b"].token))

    with caplog.at_level(logging.DEBUG, logger="lldsched"):
        store.flush()  # written; then the trim fails
        (error,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert error.levelno == logging.ERROR and error.exc_info is not None
        assert error.getMessage().startswith(f"store {store!r} failed (a trim of '")
        assert "oldest records: tried again at its next record)" in error.getMessage()
        # The batch's outcomes are known: nothing is left in flight.
        outcomes = [store._settles.outcome(claims[t].token) for t in "ab"]
        assert outcomes == [True, True] and not store._settles._flying
        reader = open_store()
        assert len(reader.records("a")) == 3  # not trimmed
        assert store._added.get("a") == 3 and "b" not in store._added  # b is forgotten

        failing = False
        (claim,) = store.claim(now=T0 + 60, limit=1)
        later = again._replace(next_run_at=T0 + 120, run_count=2)
        store.save(later, record("a", 3)._replace(token=claim.token))
        store.flush()  # the next batch of a's records trims them
        assert store._settles.outcome(claim.token) is True
        assert [r.started for r in reader.records("a")] == [T0 + 2, T0 + 3]
        assert store._added.get("a") == 0 and "b" not in store._added
        (recovered,) = [r for r in caplog.records if r.levelno >= logging.WARNING][1:]
        assert recovered.levelno == logging.WARNING
        assert "recovered (a records trim succeeded)" in recovered.getMessage()


class ReplyLost:
    """A store's connection whose first ``statement`` (a batch of settles unless told) is
    written and committed on the server, then the network drops the connection
    (``proxy``'s reset) before the reply comes: the client sees the connection die, as
    when the reply is lost on the way.  New connections pass again at once (``heal``), or
    stay refused until the test heals the proxy: the store's retry fails too."""

    def __init__(
        self,
        connection: psycopg.Connection[Any],
        proxy: TcpProxy,
        *,
        statement: str = lease_sql.SETTLE,
        heal: bool = True,
    ) -> None:
        self._connection = connection
        self._proxy = proxy
        self._statement = statement
        self._heal = heal

    def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        cursor = self._connection.execute(query, *args, **kwargs)
        if query is self._statement:  # committed (autocommit): now the connection goes
            self._proxy.reset()
            if self._heal:
                self._proxy.heal()  # new connections pass: the store connects again
            self._connection.execute("SELECT 1")  # raises: the reply never came
        return cursor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


def test_a_batch_whose_reply_was_lost_after_its_commit_is_reported_written_not_refused(
    postgres_server: PostgresServer,
    postgres_dsn: str,
    open_store: Opener,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The batch's statement committed on the server, and the connection died before its
    reply: the store tries the batch again on a new connection, which finds the leases
    gone (the settle dropped them).  Before, each settle was then reported refused as if
    its lease had been taken over: a "lost the lease" WARNING, counted in ``rejected``,
    and the records its run decided after its own (SKIPPED slots, queued once the batch
    was taken) dropped.  Now a refused token whose run's record the store holds (its
    token, attempt, start and finish) is known written; a lease really taken over is
    still refused."""
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        store = PostgresTaskStore(proxy.dsn(postgres_dsn, port=postgres_server.port), lease=60)
        other = open_store(lease=60)
        try:
            for task_id in ("a", "b"):
                store.save(snapshot(task(id=task_id)))
            claims = {claim.task_id: claim for claim in store.claim(now=T0, limit=2)}
            expire(store, "b")
            (taken,) = other.claim(now=T0, limit=1)  # b is taken over: a stale token here
            assert taken.task_id == "b"
            hold_back(store)
            live = store._open
            lossy = [True]

            def opened() -> Any:
                if lossy:
                    lossy.pop()
                    return ReplyLost(live(), proxy)
                return live()

            store._open = opened  # type: ignore[method-assign]
            again = snapshot(task(id="a"))._replace(next_run_at=T0 + 60, run_count=1)
            for task_id in ("a", "b"):
                token = claims[task_id].token
                store.save(again._replace(task=task(id=task_id)),
                           record(task_id, 0)._replace(token=token))  # fmt: skip
            with caplog.at_level(logging.WARNING, logger="lldsched"):
                store.flush()
                assert not lossy  # the reply was lost, and the batch tried again
                assert store._settles.outcome(claims["a"].token) is True
                assert store._settles.outcome(claims["b"].token) is False
                assert store.rejected == 1  # b's alone
                # a record the run decided after its own, under its token: written too
                store.save(again, record("a", 1)._replace(token=claims["a"].token))
            warned = [r.getMessage() for r in caplog.records if "lease" in r.getMessage()]
            assert len(warned) == 1 and f"token {claims['b'].token}" in warned[0]
            reader = open_store()
            assert [(r.started, r.token) for r in reader.records("a")] == [
                (T0, claims["a"].token),
                (T0 + 1, claims["a"].token),
            ]
            assert reader.records("b") == []
        finally:
            store.close()


def test_a_settle_the_exit_refuses_a_writer_thread_for_is_written_by_its_caller(
    open_store: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the interpreter's exit on Python 3.12.0 to 3.12.2 no thread starts
    (lldsched/threadstarts.py): a store's first settle, queued by a run that ended as the
    process exited (a shutdown a Ctrl-C cut short leaves its runs going), raised that
    ``RuntimeError`` at its writer thread's start: a failed write, said as an outage, the
    settle left queued with no thread to write it (written only if another statement of
    the store came before the process ended, else its lease expired and its run ran
    again), and the store's ``close()`` raised, joining a thread never started.  Now the
    caller writes the batch itself, without waking the scheduler, whose lock the caller
    holds (a worker settling under it) and the wake takes: the next ``flush()`` wakes it."""
    holder, other = open_store(lease=60), open_store(lease=60)
    for task_id in ("a", "b"):
        holder.save(snapshot(task(id=task_id)))
    claims = {claim.task_id: claim for claim in holder.claim(now=T0, limit=2)}
    expire(holder, "b")
    assert [claim.task_id for claim in other.claim(now=T0, limit=1)] == ["b"]  # taken over
    woken: list[bool] = []
    holder._wake = lambda: woken.append(True)  # subscribe()'s, without its listener
    refused = refusing_threads(monkeypatch)
    for n, task_id in enumerate(("a", "b")):  # before: RuntimeError
        holder.save(finished(task_id), record(task_id, n)._replace(token=claims[task_id].token))
    assert refused == ["lldsched-pg-settle", "lldsched-pg-settle"]
    assert not holder._settles.waiting and holder.rejected == 1
    assert woken == []
    monkeypatch.undo()
    assert [r.task_id for r in other.records()] == ["a"]
    assert {s.task.id: s.status for s in other.load_all()} == {
        "a": TaskStatus.SUCCEEDED,
        "b": TaskStatus.SCHEDULED,  # the new holder's
    }
    holder.flush()  # the wake the refused settle owes
    assert woken == [True]


def test_the_settle_writer_names_its_store_when_it_fails(
    open_store: Opener,
    postgres_server: PostgresServer,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "the settle writer failed" (a bug of lldsched's, its traceback says where) named no
    # store, where a process may have several: now its dsn, the password hidden, as the
    # store's other lines.
    store = open_store(lease=60)
    store.save(snapshot(task(id="a")))
    (claim,) = store.claim(now=T0, limit=1)
    write, failed = store._write_settles, threading.Event()

    def once() -> None:  # fails the first time, as a bug in the writer would
        if not failed.is_set():
            failed.set()
            raise RuntimeError("a bug in the writer")
        write()

    monkeypatch.setattr(store, "_write_settles", once)
    done = snapshot(task(id="a"))._replace(next_run_at=T0 + 120, run_count=1)
    with caplog.at_level(logging.ERROR, logger="lldsched.store"):
        store.save(done, record("a", 0)._replace(token=claim.token))
        wait_until(
            lambda: any("settle writer" in r.getMessage() for r in caplog.records),
            timeout=10, what="the writer's failure logged",
        )  # fmt: skip
        store.flush()
    (line,) = [r for r in caplog.records if "settle writer" in r.getMessage()]
    assert line.getMessage() == f"the settle writer of the PostgreSQL store {store.dsn!r} failed"
    assert "password=***" in line.getMessage()
    assert postgres_server.password not in line.getMessage()
    assert line.exc_info is not None and "a bug in the writer" in str(line.exc_info[1])
    assert [r.started for r in store.records("a")] == [T0]  # written on the next try


def test_a_settle_writer_whose_write_raises_tries_again_at_the_next_settle_not_at_once() -> None:
    # A write that raised (a bug of lldsched's: the store logs and holds its own
    # failures) was tried again at once, for ever: a core spent and a traceback logged
    # at each turn for as long as the bug lasted.  Now the next try waits for news.
    tries: list[int] = []
    tried = threading.Condition()

    def failing() -> None:
        with tried:
            tries.append(len(tries) + 1)
            tried.notify_all()
        raise RuntimeError("a bug in the writer")

    def reached(count: int) -> None:
        with tried:
            assert tried.wait_for(lambda: len(tries) >= count, timeout=10), tries

    queue = SettleQueue(failing, store="the store")
    queue.add(snapshot(task(id="a")), [], token=1)
    reached(1)
    queue.add(snapshot(task(id="b")), [], token=2)  # news: one more try
    reached(2)
    queue.stop()  # joins the writer: every try it made is counted
    assert tries == [1, 2]
