"""A dependent's readiness check (its begin) when what it reads raises: a shared store's
``records()`` raising anything (a user's store's driver error, not a ``StoreError``) is
the store failing, as a ``StoreError`` is, not a broken begin that fails the task for
good; a clock that raises at the reading for the wait's end of a dependent whose upstream
is dead leaves the task failed, as a broken begin fails it, not BLOCKED with nothing
written (docs/decisions/store-failures.md, "A dependent's readiness check that raises")."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    OneTime,
    RetryPolicy,
    Scheduler,
    SqliteTaskStore,
    TaskStatus,
)
from lldsched.coordination import CoordinatedStore
from lldsched.model import ExecutionRecord, Outcome
from tests import jobs
from tests.cluster import StoreSpec, open_store
from tests.conftest import SchedulerFactory
from tests.store_doubles import HookedStore
from tests.test_clock_raises import T0, _GlitchingClock
from tests.test_cluster_broke import up_ran_down_due
from tests.waits import wait_until

LEASE = 30.0  # no claim expires within a test
POLL = 0.05
HOUR = 3600.0


class RecordsRaise(HookedStore):
    """A shared SQLite store whose first read of ``task_id``'s records from a worker (a
    dependent's readiness check) once ``armed`` is set raises what a user's store's
    driver may raise (not a StoreError)."""

    def __init__(self, path: Path, task_id: str) -> None:
        super().__init__(path, lease=LEASE, poll=POLL)
        self.task_id = task_id
        self.armed = threading.Event()
        self.raised = threading.Event()

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        worker = "worker" in threading.current_thread().name
        if task_id == self.task_id and worker and self.armed.is_set() and not self.raised.is_set():
            self.raised.set()
            raise RuntimeError("the driver's error")
        return super().records(task_id)


@pytest.mark.parametrize("read", ["down", "up"])
def test_a_records_read_that_raises_anything_is_the_store_failing_not_a_broken_begin(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, read: str
) -> None:
    """The dependent's (``down``) or its upstream's (``up``) records read at the begin
    raises a RuntimeError: counted as unreadable, as a StoreError is (the slot held, the
    claim given back, and read again at the next wake), and the slot runs.  Before, the
    begin raised and the task, stuck, was FAILED and dead-lettered for good."""
    path = tmp_path / "tasks.db"
    clock = FakeClock(T0)
    store = RecordsRaise(path, read)
    with store:
        scheduler = Scheduler(clock=clock, workers=1, store=store)
        try:
            down = up_ran_down_due(scheduler, store.armed)
            with caplog.at_level(logging.ERROR):
                clock.advance(10)
                wait_until(lambda: down.status is TaskStatus.SUCCEEDED, timeout=10,
                           what="down run")  # fmt: skip
            assert store.raised.is_set()
            assert "the scheduler raised beginning a run" not in caplog.text
            assert [label for label, _, _ in jobs.CALLS] == ["down"]
            assert scheduler.dead_letter() == []
        finally:
            scheduler.shutdown()


class _RaisesAtWaitEnd(_GlitchingClock):
    """Raises from ``now()`` once, at the first reading a worker's ``_end_wait`` (the end
    of a dependency wait, lldsched/core/waiting.py) takes after ``armed`` is set."""

    def _breaks_on(self, thread: str) -> bool:
        # frames: 0 this, 1 now(), 2 its caller
        return super()._breaks_on(thread) and sys._getframe(2).f_code.co_name == "_end_wait"


def _upstream_dead_then_clock_raises(
    scheduler: Scheduler, clock: _RaisesAtWaitEnd, caplog: pytest.LogCaptureFixture
) -> None:
    """``up`` fails for good at T0 while ``down`` (due T0 + 10) is SCHEDULED; at down's
    begin its readiness check finds up dead and the clock raises at the wait's end."""
    scheduler.schedule("up", jobs.broken, OneTime(at=T0), id="up", retry=RetryPolicy.never())
    scheduler.schedule("down", jobs.note, OneTime(at=T0 + 10), id="down", args=("down",),
                       depends_on=["up"])  # fmt: skip
    scheduler.start()
    assert scheduler.wait_idle(timeout=5)
    assert scheduler.task("up").status is TaskStatus.FAILED
    assert scheduler.task("down").status is TaskStatus.SCHEDULED
    clock.armed.set()
    with caplog.at_level(logging.ERROR):
        clock.advance(10)
        assert scheduler.wait_idle(timeout=5)
        wait_until(lambda: scheduler.task("down").status is TaskStatus.FAILED, timeout=10,
                   what="down failed")  # fmt: skip
    assert clock.raised.is_set()
    assert "task down: the scheduler raised beginning a run; the task fails" in caplog.text
    assert scheduler.dead_letter() == ["up", "down"]
    assert jobs.CALLS == []


def test_a_clock_raising_at_a_dead_upstreams_wait_end_fails_the_dependent(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """One process: before, the dependent was left BLOCKED on a dead upstream, its row
    SCHEDULED, failed by nothing (the upstream's strand had run already)."""
    clock = _RaisesAtWaitEnd(T0)
    jobs.CALLS.clear()
    scheduler = make_scheduler(clock=clock, workers=1, start=False)
    _upstream_dead_then_clock_raises(scheduler, clock, caplog)


def test_a_clock_raising_at_a_dead_upstreams_wait_end_fails_the_dependent_shared(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A shared store: the failure is written fenced by the claim, its lease dropped,
    so no process claims the slot again.  Before, the task was left BLOCKED here with
    nothing written (its row SCHEDULED), the claim released, and the process claimed
    the slot and gave it back at every wake."""
    path = tmp_path / "tasks.db"
    clock = _RaisesAtWaitEnd(T0)
    jobs.CALLS.clear()
    other = SqliteTaskStore(path, shared=True, lease=LEASE, poll=POLL)
    store = SqliteTaskStore(path, shared=True, lease=LEASE, poll=POLL)
    with other, store:
        scheduler = Scheduler(clock=clock, workers=1, store=store)
        try:
            _upstream_dead_then_clock_raises(scheduler, clock, caplog)
            rows = {s.task.id: s.status for s in other.load_all()}
            wait_until(lambda: {s.task.id: s.status for s in other.load_all()}["down"]
                       is TaskStatus.FAILED, timeout=10, what="down's row FAILED")  # fmt: skip
            assert rows["up"] is TaskStatus.FAILED
            assert not other.leases()
        finally:
            scheduler.shutdown()


def _load_after(scheduler: Scheduler, *upstreams: str) -> None:
    """Schedule each of ``upstreams`` hourly (its first run an hour on) and ``load``
    (every 0.2 s) that depends on them."""
    for upstream in upstreams:
        scheduler.schedule(upstream, jobs.noop, FixedRate(HOUR, start_delay=HOUR), id=upstream)
    scheduler.schedule("load", jobs.noop, FixedRate(0.2), id="load", depends_on=list(upstreams))


@contextlib.contextmanager
def restarted(
    store_spec: StoreSpec, of: str, when: Callable[[], bool], **options: Any
) -> Iterator[tuple[Scheduler, threading.Event, Callable[[str], list[ExecutionRecord]]]]:
    """A scheduler (``options``) started on a new connection to the store ``store_spec``,
    whose first read of ``of``'s records while ``when()`` is true raises
    (:func:`raises_once`); shut down and closed when the block ends."""
    store = open_store(store_spec, lease=LEASE, poll=POLL)
    raised, read = raises_once(store, of, when)
    with contextlib.closing(store):
        scheduler = Scheduler(store=store, **options)
        try:
            scheduler.start()
            yield scheduler, raised, read
        finally:
            scheduler.shutdown()


def _ran_once_on(scheduler: Scheduler, store: CoordinatedStore, *upstreams: str) -> None:
    """Start ``scheduler`` with ``load`` after ``upstreams`` (:func:`_load_after`), run each
    upstream once, and see load run once on them and wait (BLOCKED) again."""
    _load_after(scheduler, *upstreams)
    scheduler.start()
    for upstream in upstreams:
        scheduler.run_now(upstream)
    wait_until(lambda: sum(r.ok for r in store.records("load")) == 1, timeout=10,
               what="load's first run")  # fmt: skip
    wait_until(lambda: scheduler.task("load").status is TaskStatus.BLOCKED,
               timeout=10, what="load waiting again")  # fmt: skip


def raises_once(
    store: CoordinatedStore, of: str, when: Callable[[], bool]
) -> tuple[threading.Event, Callable[[str], list[ExecutionRecord]]]:
    """Make ``store``'s first read of ``of``'s records made while ``when()`` is true
    raise what a user's store's driver may raise (not a StoreError), on any engine.
    Returns the event set then, and the store's own read."""
    raised = threading.Event()
    read = store.records

    def records(task_id: str | None = None) -> list[ExecutionRecord]:
        if task_id == of and when() and not raised.is_set():
            raised.set()
            raise RuntimeError("the driver's error")
        return read(task_id)

    store.records = records  # type: ignore[method-assign]
    return raised, read


def on_a_worker() -> bool:
    """The condition: the call is made on a worker (a run's begin: its readiness check)."""
    return "worker" in threading.current_thread().name


def inside(function: str) -> Callable[[], bool]:
    """The condition: a call of ``function`` (by name) is on the stack."""
    return lambda: any(frame.name == function for frame in traceback.extract_stack())


class OwnRecordsRaiseAfterItsRun(HookedStore):
    """A shared SQLite store whose first read of ``load``'s records from a worker (its
    readiness check) once ``load`` has a success stored raises a driver's error."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, lease=LEASE, poll=POLL)
        self.raised = threading.Event()

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        found = super().records(task_id)
        worker = "worker" in threading.current_thread().name
        if task_id == "load" and worker and not self.raised.is_set() and any(r.ok for r in found):
            self.raised.set()
            raise RuntimeError("the driver's error")
        return found


def test_a_dependent_whose_own_records_are_unread_holds_its_slot_and_does_not_run_again(
    tmp_path: Path,
) -> None:
    """``load`` ran once on ``extract``'s one success; the readiness check of its next
    slot cannot read load's own records.  Read as none, load had never run, and the
    success it had used let it run a second time.  Now the check decides nothing: the
    claim is given back, the next wake reads the records, and load waits (BLOCKED) for
    extract's next success."""
    store = OwnRecordsRaiseAfterItsRun(tmp_path / "tasks.db")
    with store:
        scheduler = Scheduler(workers=2, store=store)
        try:
            _load_after(scheduler, "extract")
            scheduler.start()
            wait_until(lambda: scheduler.task("load").status is TaskStatus.BLOCKED,
                       timeout=10, what="load waiting for extract")  # fmt: skip
            scheduler.run_now("extract")
            wait_until(lambda: store.raised.is_set(), timeout=10, what="load's records unread")
            wait_until(lambda: scheduler.task("load").status is TaskStatus.BLOCKED,
                       timeout=10, what="load waiting again")  # fmt: skip
            assert sum(record.ok for record in store.records("load")) == 1
        finally:
            scheduler.shutdown()


class OwnRecordsRaiseAtRelease(HookedStore):
    """A shared SQLite store whose first read of ``load``'s records once ``armed`` is set
    made as an upstream's success is heard (``_upstream_moved``, deciding where load's
    wait ends) raises what a user's store's driver may raise."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, lease=LEASE, poll=POLL)
        self.armed = threading.Event()
        self.raised = threading.Event()

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        deciding = any(frame.name == "_upstream_moved" for frame in traceback.extract_stack())
        if task_id == "load" and deciding and self.armed.is_set() and not self.raised.is_set():
            self.raised.set()
            raise RuntimeError("the driver's error")
        return super().records(task_id)


def test_a_dependent_whose_own_records_are_unread_at_its_release_is_not_left_blocked(
    tmp_path: Path,
) -> None:
    """``load`` ran on ``extract``'s first success, in a process since restarted; the
    restarted process runs extract again, and cannot read load's records as it decides
    where load's wait ends.  Read as none, load had never run, so extract's first success
    (not run in this process) completed its wait, and no process released it: load stayed
    BLOCKED until extract's next success (an hour on).  Now it is released, and the
    readiness check at its begin, reading its records again, runs the slot once."""
    path = tmp_path / "tasks.db"
    with HookedStore(path, lease=LEASE, poll=POLL) as first:
        scheduler = Scheduler(workers=2, store=first)
        try:
            _ran_once_on(scheduler, first, "extract")
        finally:
            scheduler.shutdown()
    store = OwnRecordsRaiseAtRelease(path)
    with store:
        scheduler = Scheduler(workers=2, store=store)
        try:
            scheduler.start()
            assert scheduler.task("load").status is TaskStatus.BLOCKED
            store.armed.set()
            scheduler.run_now("extract")
            wait_until(lambda: store.raised.is_set(), timeout=10, what="load's records unread")
            wait_until(lambda: sum(r.ok for r in store.records("load")) == 2, timeout=10,
                       what="load run on extract's second success")  # fmt: skip
            wait_until(lambda: scheduler.task("load").status is TaskStatus.BLOCKED,
                       timeout=10, what="load waiting again")  # fmt: skip
            assert sum(record.ok for record in store.records("load")) == 2
        finally:
            scheduler.shutdown()


def test_a_dependent_released_on_unread_records_that_still_waits_does_not_run_again(
    tmp_path: Path,
) -> None:
    """``load`` waits for ``extract`` and ``clean`` and ran on one success of each; its
    records cannot be read as extract's second success is heard.  Counted as never run it
    waits for nothing, so it is released, and the readiness check at its begin, reading
    them again, blocks it again for clean's next success: it does not run a second time
    on clean's one success."""
    store = OwnRecordsRaiseAtRelease(tmp_path / "tasks.db")
    with store:
        scheduler = Scheduler(workers=2, store=store)
        try:
            _ran_once_on(scheduler, store, "extract", "clean")
            store.armed.set()
            scheduler.run_now("extract")
            wait_until(lambda: store.raised.is_set(), timeout=10, what="load's records unread")
            wait_until(lambda: sum(r.outcome is Outcome.BLOCKED for r in store.records("load")) > 1,
                       timeout=10, what="load released (its second wait's record)")  # fmt: skip
            wait_until(lambda: scheduler.task("load").status is TaskStatus.BLOCKED,
                       timeout=10, what="load waiting for clean")  # fmt: skip
            assert scheduler.wait_idle(timeout=5)
            assert sum(record.ok for record in store.records("load")) == 1
            assert scheduler.task("load").status is TaskStatus.BLOCKED
        finally:
            scheduler.shutdown()


def test_an_upstreams_records_unread_at_the_readiness_check_hold_the_slot_not_block_it(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """``load`` ran at T0 and ``extract`` succeeded after, in a process since shut down;
    ``load``'s readiness check for its next slot, in the next process, cannot read
    extract's records.  Read as none (this process ran no success of extract), load
    waited for extract: BLOCKED until extract's next success, an hour on, for a store's
    one-off error.  Now the read's failure is the store failing (counted into the
    outage, as the dependent's own read is): the check decides nothing, the claim is
    given back, and the next wake reads again and runs the slot."""
    clock = FakeClock(T0)
    with contextlib.closing(open_store(store_spec, lease=LEASE, poll=POLL)) as first:
        scheduler = Scheduler(workers=1, store=first, clock=clock)
        try:
            scheduler.schedule("extract", jobs.noop, FixedRate(HOUR, start_delay=HOUR),
                               id="extract")  # fmt: skip
            scheduler.start()
            scheduler.run_now("extract")
            wait_until(lambda: any(r.ok for r in first.records("extract")), timeout=10,
                       what="extract's first success")  # fmt: skip
            scheduler.schedule("load", jobs.noop, FixedRate(100), id="load",
                               depends_on=["extract"])  # fmt: skip
            wait_until(lambda: any(r.ok for r in first.records("load")), timeout=10,
                       what="load's first run")  # fmt: skip
            clock.advance(1)
            scheduler.run_now("extract")
            wait_until(lambda: sum(r.ok for r in first.records("extract")) == 2, timeout=10,
                       what="extract's success after load's run")  # fmt: skip
        finally:
            scheduler.shutdown()
    with restarted(store_spec, "extract", on_a_worker, workers=1, clock=clock) as (_, raised, read):
        with caplog.at_level(logging.ERROR):
            clock.advance(99)  # load's next slot, T0 + 100
            wait_until(lambda: sum(r.ok for r in read("load")) == 2, timeout=10,
                       what="load run on extract's success after its last run")  # fmt: skip
        assert raised.is_set()
        assert "read of the records of extract for a dependent's count" in caplog.text
        assert [r.outcome for r in read("load")] == [Outcome.OK, Outcome.OK]


def test_an_upstreams_records_unread_where_a_wait_ends_release_the_dependent(
    store_spec: StoreSpec,
) -> None:
    """``load`` waits for ``extract`` and ``clean``; it ran once on one success of each,
    and clean succeeded again since, in a process since shut down.  In the next one
    extract succeeds, and clean's records cannot be read as it decides where load's wait
    ends.  Read as none (this process ran no success of clean), load still waited for
    clean, and no process released it: BLOCKED until clean's next success.  Now clean
    unread decides nothing: load is released, and the readiness check at its begin,
    reading again, runs the slot."""
    with contextlib.closing(open_store(store_spec, lease=LEASE, poll=POLL)) as first:
        scheduler = Scheduler(workers=2, store=first)
        try:
            _ran_once_on(scheduler, first, "extract", "clean")
            scheduler.run_now("clean")
            wait_until(lambda: sum(r.ok for r in first.records("clean")) == 2, timeout=10,
                       what="clean's second success")  # fmt: skip
        finally:
            scheduler.shutdown()
    with restarted(store_spec, "clean", inside("_upstream_moved"), workers=2) as (
        scheduler,
        raised,
        read,
    ):
        assert scheduler.task("load").status is TaskStatus.BLOCKED
        scheduler.run_now("extract")
        wait_until(lambda: sum(r.ok for r in read("load")) == 2, timeout=10,
                   what="load run on extract's success and clean's second")  # fmt: skip
        assert raised.is_set()


def test_an_upstreams_records_unread_at_a_new_definition_release_the_dependent(
    store_spec: StoreSpec,
) -> None:
    """``load`` ran on ``extract``'s success and waits for its next; ``clean`` succeeded
    since, in a process since shut down.  In the next one load is redefined to depend on
    clean instead, and clean's records cannot be read as the new definition is counted.
    Read as none, load waited for clean: BLOCKED until clean's next success.  Now clean
    unread is not waited for: load is released, and the readiness check at its begin,
    reading again, runs the slot on clean's success."""
    with contextlib.closing(open_store(store_spec, lease=LEASE, poll=POLL)) as first:
        scheduler = Scheduler(workers=2, store=first)
        try:
            _ran_once_on(scheduler, first, "extract")
            scheduler.schedule("clean", jobs.noop, FixedRate(HOUR, start_delay=HOUR),
                               id="clean")  # fmt: skip
            scheduler.run_now("clean")
            wait_until(lambda: any(r.ok for r in first.records("clean")), timeout=10,
                       what="clean's success")  # fmt: skip
        finally:
            scheduler.shutdown()
    with restarted(store_spec, "clean", inside("relink"), workers=2) as (scheduler, raised, read):
        assert scheduler.task("load").status is TaskStatus.BLOCKED
        scheduler.schedule("load", jobs.noop, FixedRate(0.2), id="load",
                           depends_on=["clean"], replace_existing=True)  # fmt: skip
        assert raised.is_set()
        wait_until(lambda: sum(r.ok for r in read("load")) == 2, timeout=10,
                   what="load run on clean's success")  # fmt: skip
