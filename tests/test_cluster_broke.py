"""A run whose begin or record raised (a clock read for the run's event) on a shared
store: the task it left stuck fails as it does in one process, and so do the BLOCKED
dependents waiting for it, written through the store (the task's row fenced by the
claim's token, its lease dropped), so another process hears it (docs/CLUSTER.md).  A
begin that raised and left its task as it was (nothing failed) gives its claim back at
once, and the slot is claimed again."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from lldsched import (
    FakeClock,
    OneTime,
    RetryPolicy,
    ScheduledTask,
    Scheduler,
    SqliteTaskStore,
    TaskStatus,
)
from lldsched.coordination import CoordinatedStore
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from tests import cluster_jobs, jobs
from tests.cluster import StoreSpec, open_store
from tests.store_doubles import HookedStore, StoreCall
from tests.test_clock_raises import T0, _GlitchPublishing, step_raises_while_blocked
from tests.waits import wait_until

LEASE = 30.0  # no claim expires within a test: a lapse is not what ends the wait
POLL = 0.05
FAILED = TaskStatus.FAILED


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Two connections to one shared store (once per engine): this process's, and the
    one a test reads the rows through, as another process does."""
    opened = [open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(2)]
    yield opened
    for store in opened:
        store.close()


def _row(store: CoordinatedStore, task_id: str) -> TaskStatus:
    return next(s.status for s in store.load_all() if s.task.id == task_id)


@pytest.mark.parametrize(
    ("step", "fails", "on"),
    [("begin", False, "worker"), ("begin", False, "loop"), ("record", True, "worker"),
     ("record", False, "worker")],
)  # fmt: skip
def test_a_runs_step_that_raised_on_a_shared_store_decides_as_in_one_process(
    stores: list[CoordinatedStore],
    caplog: pytest.LogCaptureFixture,
    step: str,
    fails: bool,
    on: str,
) -> None:
    """As tests/test_clock_raises.py's dependents test, on a shared store.  Before, the
    core left every task alone there: a begin that raised left the upstream RUNNING
    here with no run (each later claim of it given back: it never ran again), and its
    BLOCKED dependent waited for good, its row too."""
    mine, other = stores
    clock = _GlitchPublishing(T0, nth=1 if step == "begin" else 2, on=on, armed=False)
    scheduler = Scheduler(clock=clock, workers=1, store=mine, listeners=[lambda event: None])
    jobs.CALLS.clear()
    up_action: Callable[..., object] = jobs.note
    up_args: tuple[str, ...] = ("up",)
    if fails:
        up_action, up_args = jobs.broken, ()
    elif on == "loop":  # a coroutine: begun by the event loop (never run: its begin raises)
        up_action, up_args = cluster_jobs.token_of, ()

    def ran() -> list[str]:
        return [label for label, _, _ in jobs.CALLS]

    try:
        up = scheduler.schedule(
            "up", up_action, OneTime(at=T0 + 10), id="up", args=up_args,
            retry=RetryPolicy.never(),
        )  # fmt: skip
        down = scheduler.schedule(
            "down", jobs.note, OneTime(at=T0), id="down", args=("down",), depends_on=[up.id]
        )
        scheduler.start()
        step_raises_while_blocked(scheduler, clock, down, caplog)
        if step == "record" and not fails:  # a success recorded: the dependent runs
            wait_until(lambda: down.status is TaskStatus.SUCCEEDED, timeout=5, what="down ran")
            assert up.status is TaskStatus.SUCCEEDED and ran() == ["up", "down"]
            assert _row(other, "up") is TaskStatus.SUCCEEDED
            assert _row(other, "down") is TaskStatus.SUCCEEDED
            return
        assert up.status is FAILED and down.status is FAILED
        assert scheduler.dead_letter() == [up.id, down.id]
        assert (down.last_error or "").startswith(f"UpstreamFailed: upstream {up.id}")
        # written through the store: another process hears both, and no lease is left
        assert _row(other, "up") is FAILED and _row(other, "down") is FAILED
        assert sorted(other.dead_letter()) == ["down", "up"]
        assert not [lease for lease in other.leases() if lease.task_id == "up"]
        if step == "begin":
            assert ran() == [] and up.last_error == (
                "SchedulerError: raised beginning a run: RuntimeError: the clock broke"
            )
            assert scheduler.redrive(up.id)  # the dead letter's way back, as in one process
            wait_until(lambda: up.status is TaskStatus.SUCCEEDED, timeout=5,
                       what="the redriven upstream ran")  # fmt: skip
    finally:
        scheduler.shutdown()


class _DriverTimeout(BaseException):
    """What a driver may raise that is not an ``Exception`` (as gevent's ``Timeout``):
    not a store's failed call, so it reaches the begin (docs/decisions/store-failures.md, "A
    coordinated store's call that raises anything")."""


class StaleClaimRecordsFail(HookedStore):
    """A shared SQLite store whose next claim, once ``armed`` is set, finds ``task_id``'s
    row written by another process since this one read it (``other`` saves it just
    before: the claim is stale, and the feed read after it queues the task's entry
    here again), and whose first read of ``task_id``'s records from a worker (a
    dependent's readiness check, as its run begins) then raises a BaseException that is
    not an Exception (an Exception is the store failing: the records are read as none,
    tests/test_readiness_raises.py)."""

    def __init__(self, path: Path, other: CoordinatedStore, task_id: str) -> None:
        super().__init__(path, lease=LEASE, poll=POLL)
        self.other = other
        self.task_id = task_id
        self.armed = threading.Event()
        self.raised = threading.Event()  # set when the records' read raised

    def before(self, call: StoreCall) -> None:
        if call == "claim" and self.armed.is_set() and not self.by_the_test():
            self.armed.clear()
            (row,) = [s for s in self.other.load_all() if s.task.id == self.task_id]
            self.other.save(row)  # the same row, written by another process

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        worker = "worker" in threading.current_thread().name
        if task_id == self.task_id and worker and not self.raised.is_set():
            self.raised.set()
            raise _DriverTimeout("the driver's timeout")
        return super().records(task_id)


def up_ran_down_due(scheduler: Scheduler, armed: threading.Event) -> ScheduledTask:
    """Schedule ``up`` (due T0) and ``down`` (due T0 + 10, noting ``"down"`` in
    ``jobs.CALLS``, cleared first) that depends on it, start ``scheduler``, see ``up``
    succeed, then set ``armed`` (the store double's); returns ``down``, due next."""
    jobs.CALLS.clear()
    scheduler.schedule("up", jobs.noop, OneTime(at=T0), id="up")
    down = scheduler.schedule("down", jobs.note, OneTime(at=T0 + 10), id="down",
                              args=("down",), depends_on=["up"])  # fmt: skip
    scheduler.start()
    assert scheduler.wait_idle(timeout=5)
    assert scheduler.task("up").status is TaskStatus.SUCCEEDED
    armed.set()
    return down


def test_a_begin_that_raised_and_failed_nothing_gives_its_claim_back_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A dependent's begin raises in its readiness check (its store's records read, a
    driver's BaseException) while its entry is still queued here (the claim was stale: the feed
    read after it queued the task again): the task is not stuck, so nothing is failed,
    and the claim is given back at once (Coordinator.broke), not left to block the
    slot until its lease expires (30 s on, a clock that never gets there).  The next
    claim (at once: the worker went idle) takes the slot again, and the run is made."""
    path = tmp_path / "tasks.db"
    clock = FakeClock(T0)
    other = SqliteTaskStore(path, shared=True, lease=LEASE, poll=POLL)
    store = StaleClaimRecordsFail(path, other, "down")
    with other, store:
        scheduler = Scheduler(clock=clock, workers=1, store=store)
        try:
            down = up_ran_down_due(scheduler, store.armed)
            with caplog.at_level(logging.ERROR):
                clock.advance(10)
                assert scheduler.wait_idle(timeout=5)
            assert store.raised.is_set()
            assert "the scheduler raised beginning a run; the task is left as it is" in (
                caplog.text
            )
            # Given back at once, claimed again and run, the clock still at the slot:
            # a claim left to lapse would hold the slot until T0 + 10 + LEASE.
            wait_until(lambda: down.status is TaskStatus.SUCCEEDED, timeout=10,
                       what="down claimed again and run")  # fmt: skip
            assert [label for label, _, _ in jobs.CALLS] == ["down"]
            assert clock.now() == T0 + 10
            assert not [lease for lease in other.leases() if lease.task_id == "down"]
        finally:
            scheduler.shutdown()


def _expire(spec: StoreSpec, task_id: str) -> None:
    """Expire ``task_id``'s lease in the store ``spec`` names, as a stall past it would."""
    sql = "UPDATE leases SET expires_at = expires_at - 3600 WHERE task_id = "
    if spec.engine == "sqlite":
        with contextlib.closing(sqlite3.connect(spec.params["path"])) as connection:
            connection.execute(sql + "?", (task_id,))
            connection.commit()
    else:
        import psycopg

        with psycopg.connect(spec.params["dsn"], autocommit=True) as connection:
            connection.execute(sql + "%s", (task_id,))


def test_a_failure_whose_lease_was_lost_before_its_write_fails_no_dependent(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """``up``'s begin raises here and the core fails it; before that failure is written,
    its lease is taken over by another process (``theirs``, started then), which runs
    the slot: the write is refused (LeaseLost), and ``up`` is not dead.  Its dependent
    ``down`` was failed all the same (UpstreamFailed, its row FAILED in every process)
    and stayed so, up's success there notwithstanding, until a redrive.  Now the
    dependents are told once the failure is written: ``down`` waits, and up's success
    in the process that took the slot over releases it."""
    mine, theirs, reader = (open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(3))
    clock = _GlitchPublishing(T0, nth=1, on="mine-worker", armed=False)
    write = mine.misfired
    took_over = threading.Event()
    other = Scheduler(clock=FakeClock(T0 + 10), workers=1, store=theirs, name="theirs")

    def misfired(snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int,
                 release: bool) -> None:  # fmt: skip
        if snapshot.task.id == "up" and not took_over.is_set():
            took_over.set()
            _expire(store_spec, "up")  # a stall here past the lease: theirs takes it over
            other.start()
            wait_until(lambda: any(r.ok and (r.token or 0) > token for r in reader.records("up")),
                       timeout=10, what="up's slot taken over and run")  # fmt: skip
        write(snapshot, records, token=token, release=release)

    mine.misfired = misfired  # type: ignore[method-assign]
    jobs.CALLS.clear()
    scheduler = Scheduler(clock=clock, workers=1, store=mine, name="mine",
                          listeners=[lambda event: None])  # fmt: skip
    try:
        up = scheduler.schedule("up", jobs.note, OneTime(at=T0 + 10), id="up", args=("up",),
                                retry=RetryPolicy.never())  # fmt: skip
        down = scheduler.schedule("down", jobs.note, OneTime(at=T0), id="down", args=("down",),
                                  depends_on=[up.id])  # fmt: skip
        scheduler.start()
        assert scheduler.wait_idle(timeout=5)
        assert down.status is TaskStatus.BLOCKED
        clock.armed.set()
        with caplog.at_level(logging.ERROR):
            clock.advance(10)
            wait_until(lambda: _row(reader, "down") is TaskStatus.SUCCEEDED, timeout=20,
                       what="down released by up's success where it ran")  # fmt: skip
        assert clock.raised.is_set() and took_over.is_set()
        assert "task up: the scheduler raised beginning a run" in caplog.text
        assert _row(reader, "up") is TaskStatus.SUCCEEDED
        assert [label for label, _, _ in jobs.CALLS] == ["up", "down"]
        assert reader.dead_letter() == []
        clock.advance(1)  # this process's timer waits on its fake clock: a wake, its feed read
        wait_until(lambda: up.status is down.status is TaskStatus.SUCCEEDED, timeout=20,
                   what="this process following both rows")  # fmt: skip
        assert scheduler.dead_letter() == []
    finally:
        scheduler.shutdown()
        other.shutdown()
        for store in (mine, theirs, reader):
            store.close()


def test_a_readiness_failure_whose_lease_was_lost_before_its_write_fails_no_dependent(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """``mid``'s readiness check finds its upstream ``top`` dead (FAILED) and fails it,
    held for the claim's write; before that write, the lease is taken over by another
    process (a claim of ``theirs``): the write is refused (LeaseLost), the slot is
    theirs.  ``leaf``, BLOCKED on ``mid``, was failed all the same, before the claim's
    write (``_fail_waiting`` stranded it at once), its row FAILED for every process,
    though ``mid``'s failure was never written.  Now ``mid``'s dependents are told once
    its failure is written, as a run's whose begin raised are (the previous test): the
    one rule, ``RunTransitions.claim_written``.  ``leaf`` stays BLOCKED, here and in
    its row."""
    mine, theirs, reader = (open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(3))
    clock = FakeClock(T0)
    write = mine.misfired
    took_over = threading.Event()

    def misfired(snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int,
                 release: bool) -> None:  # fmt: skip
        if snapshot.task.id == "mid" and not took_over.is_set():
            took_over.set()
            _expire(store_spec, "mid")  # a stall here past the lease: theirs takes it over
            (claim,) = theirs.claim(now=T0 + 3600, limit=10)
            assert claim.task_id == "mid" and claim.token > token
        write(snapshot, records, token=token, release=release)

    mine.misfired = misfired  # type: ignore[method-assign]
    scheduler = Scheduler(clock=clock, workers=1, store=mine, name="mine")
    try:
        scheduler.schedule("top", jobs.broken, OneTime(at=T0), id="top",
                           retry=RetryPolicy.never())  # fmt: skip
        scheduler.schedule("mid", jobs.noop, OneTime(at=T0 + 10), id="mid",
                           depends_on=["top"])  # fmt: skip
        leaf = scheduler.schedule("leaf", jobs.noop, OneTime(at=T0), id="leaf",
                                  depends_on=["mid"])  # fmt: skip
        scheduler.start()
        assert scheduler.wait_idle(timeout=5)
        assert scheduler.task("top").status is FAILED and leaf.status is TaskStatus.BLOCKED
        assert _row(reader, "leaf") is TaskStatus.BLOCKED
        with caplog.at_level(logging.WARNING):
            clock.advance(10)
            said = "lost the lease of task mid (token "
            wait_until(lambda: said in caplog.text, timeout=10,
                       what="mid's write refused, said at the next wake")  # fmt: skip
        assert took_over.is_set()
        assert _row(reader, "mid") is TaskStatus.SCHEDULED  # the refused write: not written
        assert leaf.status is TaskStatus.BLOCKED and leaf.last_error is None
        assert _row(reader, "leaf") is TaskStatus.BLOCKED
        assert sorted(reader.dead_letter()) == ["top"]
    finally:
        scheduler.shutdown()
        for store in (mine, theirs, reader):
            store.close()
