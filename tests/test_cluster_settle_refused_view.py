"""A process whose run's settle the store refused (its lease was taken over while it
stalled) answers ``task()`` and ``tasks()`` from the store's row, not from what its refused
run decided (docs/CLUSTER.md, "Late writes are refused").

The refused run decided the task's next state (its next slot, one more run counted; for
a run that ended its task, SUCCEEDED or FAILED and in the dead letter), and the store kept
none of it: its row is the state the run that took the slot over found, and stays so until
that run settles, which may be long after (it runs the action again).  Before, the process
answered from its refused run all that time, and a verb made there acted on it (a
``redrive`` of a task it held failed).  Now the refused settle has the task's row read
again at once: the next read of the change feed gives it whatever versions were read
(SQLite's refetch, PostgreSQL's ``REREAD``), and the timer reads the feed at once (the
worker that saw ``rejected`` move, or PostgreSQL's settle writer).

A run that ended its task whose settle was refused retires the task all the same; with
``purge_retired=True`` its purge leaves the row the take-over's lease holds.

The runner's ``poll`` is far longer than the waits here, and no lease is renewed within
them: the runner reads the row again because its settle was refused, or not in time.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator

import pytest

from lldsched import FixedRate, OneTime, RunContext, Scheduler, TaskStatus
from lldsched.coordination import CoordinatedStore
from lldsched.persistence import TaskSnapshot
from tests import jobs
from tests.cluster import StoreSpec, open_store
from tests.waits import wait_until

HEARD = 10.0  # how long the runner may take to read the row: far below its poll
POLL = 60.0  # the runner's: no wake by its poll within a test
LEASE = 90.0  # renewed every 30 s: no renewal within a test

let_first_go = threading.Event()  # the stalled run (the first here) ends
let_second_go = threading.Event()  # the run that took it over ends
_lock = threading.Lock()
_started: list[int | None] = []  # the tokens of the runs begun, in order


def stalled_then_taken_over(ctx: RunContext) -> None:
    """The first run waits for :data:`let_first_go`, every later one (the take-over) for
    :data:`let_second_go`: up to 20 s each."""
    with _lock:
        first = not _started
        _started.append(ctx.fencing_token)
    (let_first_go if first else let_second_go).wait(20)


def _expire(spec: StoreSpec) -> None:
    """Expire every lease in the store ``spec`` names, as a stall past it would."""
    sql = "UPDATE leases SET expires_at = expires_at - 3600"
    if spec.engine == "sqlite":
        with contextlib.closing(sqlite3.connect(spec.params["path"], timeout=10)) as connection:
            connection.execute(sql)
            connection.commit()
    else:
        import psycopg

        with psycopg.connect(spec.params["dsn"], autocommit=True) as connection:
            connection.execute(sql)


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """The stalled runner's store (a long poll), the one that takes over (a short one),
    and one to read the store with."""
    opened = [
        open_store(store_spec, lease=LEASE, poll=POLL),
        open_store(store_spec, lease=LEASE, poll=0.05),
        open_store(store_spec, lease=LEASE, poll=POLL),
    ]
    yield opened
    let_first_go.set()
    let_second_go.set()
    for store in opened:
        store.close()


def test_a_refused_settle_reads_the_row_again_at_once(
    store_spec: StoreSpec, stores: list[CoordinatedStore]
) -> None:
    runner_store, other_store, reader = stores
    let_first_go.clear()
    let_second_go.clear()
    _started.clear()
    # A worker to spare: one that goes idle wakes no timer that had claims to hold back.
    runner = Scheduler(workers=2, store=runner_store).start()
    other = Scheduler(workers=1, store=other_store)
    try:
        # Due before the refused run's next slot: that slot, queued as the run ends, is no
        # new head of the runner's queue, which would have woken its timer anyway.
        runner.schedule("later", jobs.noop, OneTime(runner.now + 1800), id="later")
        runner.schedule("t", stalled_then_taken_over, FixedRate(3600), id="t")
        wait_until(lambda: len(_started) == 1, timeout=HEARD, what="the first run")
        (claim,) = reader.leases()
        other.start()
        _expire(store_spec)  # the runner stalled past its lease
        wait_until(lambda: len(_started) == 2, timeout=HEARD, what="the take-over's run")
        assert _started == [claim.token, reader.leases()[0].token]
        assert runner.task("t").running
        let_first_go.set()  # the stalled run ends: its settle is refused
        wait_until(lambda: runner_store.rejected == 1, timeout=HEARD, what="the refusal")
        # The runner answers from the row, as the store holds it during the take-over's
        # run: due at the slot taken over, no run counted; not from its refused run (the
        # next slot, one run).
        wait_until(
            lambda: (runner.task("t").next_run_at, runner.task("t").run_count) == (claim.slot, 0),
            timeout=HEARD,
            what="the runner to read the row again",
        )
        task = runner.task("t")
        assert task.status is TaskStatus.SCHEDULED and not task.running
        assert [record.token for record in runner.records()] == [claim.token]  # its own
    finally:
        let_first_go.set()
        let_second_go.set()
        other.shutdown()
        runner.shutdown()
    records = reader.records("t")
    assert [record.token for record in records] == [_started[1]]  # the take-over's alone


def test_a_one_off_run_whose_settle_was_refused_purges_not_the_row_taken_over(
    store_spec: StoreSpec, stores: list[CoordinatedStore]
) -> None:
    """A run that ended its task (a one-off) in a process with ``purge_retired=True``
    whose lease was taken over while it stalled: its settle is refused, and the purge of
    the task it retires must leave the row the take-over's lease holds, whose run goes on
    in the other process and settles there."""
    runner_store, other_store, reader = stores
    let_first_go.clear()
    let_second_go.clear()
    _started.clear()
    purged: list[bool] = []
    purge = runner_store.purge  # type: ignore[attr-defined]

    def noted(task_id: str) -> bool:
        gone = bool(purge(task_id))
        purged.append(gone)
        return gone

    runner_store.purge = noted  # type: ignore[attr-defined]
    runner = Scheduler(workers=2, store=runner_store, retain_finished=0, purge_retired=True)
    other = Scheduler(workers=1, store=other_store)
    try:
        runner.start()
        runner.schedule("t", stalled_then_taken_over, OneTime(runner.now), id="t")
        wait_until(lambda: len(_started) == 1, timeout=HEARD, what="the first run")
        (claim,) = reader.leases()
        other.start()
        _expire(store_spec)  # the runner stalled past its lease
        wait_until(lambda: len(_started) == 2, timeout=HEARD, what="the take-over's run")
        (taken,) = reader.leases()
        assert taken.token == _started[1] != claim.token
        let_first_go.set()  # the stalled run ends: its settle is refused, the task retires
        wait_until(lambda: len(purged) == 1, timeout=HEARD, what="the runner's purge")
        assert purged == [False]
        assert [(lease.task_id, lease.token) for lease in reader.leases()] == [("t", taken.token)]
        row = _row(reader, "t")
        assert row is not None and row.status is TaskStatus.SCHEDULED
        let_second_go.set()  # the take-over's run ends and settles
        wait_until(
            lambda: (row := _row(reader, "t")) is not None and row.status is TaskStatus.SUCCEEDED,
            timeout=HEARD,
            what="the take-over's settle",
        )
        assert other_store.rejected == 0
    finally:
        let_first_go.set()
        let_second_go.set()
        other.shutdown()
        runner.shutdown()
    assert runner_store.rejected == 1
    assert [record.token for record in reader.records("t")] == [taken.token]


def _row(store: CoordinatedStore, task_id: str) -> TaskSnapshot | None:
    """The store's row of ``task_id`` (both shared stores answer ``get``)."""
    row: TaskSnapshot | None = store.get(task_id)  # type: ignore[attr-defined]
    return row
