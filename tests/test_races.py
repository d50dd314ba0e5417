"""Races the concurrency torture test (tests/test_torture.py) and the concurrency reviews
found, each pinned by a focused test that forces its interleaving and failed before its
fix.  To look for more, run the threaded tests many times with ``--switch-interval=1e-6``
(tests/conftest.py: threads switch between nearly every bytecode), one file or two at a
time, with ``-x``."""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from types import FrameType
from typing import Any

import pytest

from lldsched import (
    ExecutionRecord,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Overlap,
    Priority,
    RetryPolicy,
    Scheduler,
    TaskEvent,
    TaskStatus,
)
from lldsched.core import packedstats
from lldsched.core.definition import DefinitionVerbs
from lldsched.core.packedstats import BATCH, PackedRunStats
from lldsched.threaded.dispatcher import EventDispatcher
from lldsched.threaded.pool import WorkerPool
from tests.waits import wait_until

WAIT = 10.0  # bound of every wait below: a failing test fails, it never hangs


def test_a_second_shutdown_waits_for_the_first_drain_instead_of_cutting_it_short() -> None:
    # Before: the second call found the scheduler stopped and closed the worker pool
    # while the first was still draining, so the drain could hand out nothing more:
    # the first call burned its whole timeout (for ever with timeout=None) and the
    # tasks due at shutdown were never run, though drain=True promises them.
    gate, running = threading.Event(), threading.Event()
    ran: list[int] = []
    scheduler = Scheduler(workers=1, handoff=1).start()

    def block() -> None:
        running.set()
        gate.wait(WAIT)

    scheduler.schedule("block", block, OneTime(delay=0))
    assert running.wait(WAIT)
    for n in range(4):  # due now, behind the blocked run: the hand-off queue holds one
        scheduler.schedule(f"t{n}", ran.append, OneTime(delay=0), args=(n,))
    first: list[bool] = []
    draining = threading.Thread(target=lambda: first.append(scheduler.shutdown(timeout=WAIT)))
    draining.start()
    wait_until(
        lambda: not scheduler.running,
        timeout=WAIT,
        what="the first shutdown to stop it",
        every=0.001,
    )  # the first call stopped it and is draining
    assert scheduler.shutdown(timeout=0.2) is False  # waits for the first, then gives up
    gate.set()
    draining.join(WAIT)
    assert first == [True]
    assert sorted(ran) == [0, 1, 2, 3]
    assert all(task.status is TaskStatus.SUCCEEDED for task in scheduler.tasks())
    assert scheduler.shutdown(timeout=WAIT) is True  # and a third, later, has nothing to do


def test_shutdown_from_an_action_while_another_shutdown_drains_returns_at_once() -> None:
    # The first shutdown waits for this very run: a second call from it must not wait
    # for the first (a deadlock until both timeouts) nor close the pool under its drain.
    gate, running = threading.Event(), threading.Event()
    answers: list[bool] = []
    scheduler = Scheduler(workers=2, handoff=1).start()

    def shut_down_too() -> None:
        running.set()
        gate.wait(WAIT)
        answers.append(scheduler.shutdown(timeout=WAIT))

    scheduler.schedule("inner", shut_down_too, OneTime(delay=0))
    assert running.wait(WAIT)
    first: list[bool] = []
    outer = threading.Thread(target=lambda: first.append(scheduler.shutdown(timeout=WAIT)))
    outer.start()
    wait_until(
        lambda: not scheduler.running,
        timeout=WAIT,
        what="the first shutdown to stop it",
        every=0.001,
    )
    gate.set()
    outer.join(WAIT)
    assert answers == [False]  # its own run was still going
    assert first == [True]


def test_a_task_removed_mid_run_stays_out_of_the_store() -> None:
    # Before: the run's end wrote the removed task back into the store (CANCELLED, with
    # its record): a ghost row that a restart restored.
    store = InMemoryTaskStore()
    events: list[TaskEvent] = []
    gate, running = threading.Event(), threading.Event()

    def block() -> None:
        running.set()
        gate.wait(WAIT)

    with Scheduler(workers=1, store=store, listeners=[events.append]) as scheduler:
        scheduler.schedule("block", block, FixedRate(60), id="x")
        assert running.wait(WAIT)
        scheduler.remove("x")
        gate.set()
        assert scheduler.wait_idle(WAIT)
        assert store.get("x") is None and store.records("x") == []
        assert [task.id for task in scheduler.tasks()] == []
    last = events[-1]  # the listeners still hear the run's record
    assert (last.task_id, last.previous, last.status) == (
        "x",
        TaskStatus.CANCELLED,
        TaskStatus.CANCELLED,
    )
    assert last.record is not None and last.record.ok


def test_a_removed_run_ending_leaves_the_task_registered_again_under_its_id_alone() -> None:
    # Before: the old run's end overwrote the new task's row with the removed task's
    # (CANCELLED), and its success released the new task's dependents.
    store = InMemoryTaskStore()
    gate, running = threading.Event(), threading.Event()

    def block() -> None:
        running.set()
        gate.wait(WAIT)

    with Scheduler(workers=2, store=store) as scheduler:
        scheduler.schedule("old", block, FixedRate(60), id="x")
        assert running.wait(WAIT)
        scheduler.remove("x")
        scheduler.schedule("new", print, FixedRate(3600), id="x", paused=True)
        dependent = scheduler.schedule("after", print, OneTime(delay=0), depends_on=["x"])
        gate.set()
        assert scheduler.wait_idle(WAIT)
        snapshot = store.get("x")
        assert snapshot is not None
        assert (snapshot.task.name, snapshot.status) == ("new", TaskStatus.PAUSED)
        assert scheduler.task("x").status is TaskStatus.PAUSED
        assert scheduler.task(dependent.id).status is TaskStatus.BLOCKED  # "new" never ran


def test_a_dependent_stranded_twice_in_one_cascade_fails_once() -> None:
    # B waits for U and for A, which waits for U.  Cancelling U fails A, whose own
    # strand fails B; then U's list of stranded dependents, taken before, failed B a
    # second time: two BLOCKED -> FAILED events, two wait records, a chain a listener
    # could not follow.
    clock = FakeClock(1_800_000_000.0)
    events: list[TaskEvent] = []
    with Scheduler(clock=clock, listeners=[events.append]) as scheduler:
        upstream = scheduler.schedule("u", print, OneTime(delay=60))
        a = scheduler.schedule("a", print, OneTime(delay=0), depends_on=[upstream.id])
        b = scheduler.schedule("b", print, OneTime(delay=0), depends_on=[upstream.id, a.id])
        assert scheduler.wait_idle(WAIT)
        assert (a.status, b.status) == (TaskStatus.BLOCKED, TaskStatus.BLOCKED)
        scheduler.cancel(upstream.id)
        assert scheduler.wait_idle(WAIT)
    assert [(e.previous, e.status) for e in events if e.task_id == b.id] == [
        (None, TaskStatus.SCHEDULED),
        (TaskStatus.SCHEDULED, TaskStatus.BLOCKED),
        (TaskStatus.BLOCKED, TaskStatus.FAILED),
    ]
    assert len(b.history) == 1 and scheduler.dead_letter() == [a.id, b.id]


def _a_run_outliving_a_shutdown(heard: list[TaskEvent]) -> tuple[Scheduler, threading.Event]:
    """A started scheduler whose one worker runs task ``block`` until the returned gate
    is set: a run the caller's short ``shutdown`` leaves going."""
    gate, running = threading.Event(), threading.Event()

    def block() -> None:
        running.set()
        gate.wait(WAIT)

    scheduler = Scheduler(workers=1, listeners=[heard.append]).start()
    scheduler.schedule("block", block, OneTime(delay=0), id="block")
    assert running.wait(WAIT)
    return scheduler, gate


def test_a_later_shutdown_delivers_the_events_of_a_run_that_outlived_the_first() -> None:
    # Before: the first shutdown's timeout ran out with a run going and closed the
    # listeners' thread; the run's end (RUNNING -> SUCCEEDED, with its record) was
    # queued for a thread that had stopped, and a second shutdown(), which waited for
    # that run and returned True, delivered nothing: an audit listener never heard it.
    heard: list[TaskEvent] = []
    scheduler, gate = _a_run_outliving_a_shutdown(heard)
    assert scheduler.shutdown(timeout=0.05) is False
    gate.set()
    assert scheduler.shutdown(timeout=WAIT) is True
    assert [(event.previous, event.status) for event in heard] == [
        (None, TaskStatus.SCHEDULED),
        (TaskStatus.SCHEDULED, TaskStatus.RUNNING),
        (TaskStatus.RUNNING, TaskStatus.SUCCEEDED),
    ]
    assert heard[-1].record is not None and heard[-1].record.ok
    prefix = f"lldsched-{scheduler.name}-"  # the delivery thread started for it ended
    assert not any(thread.name.startswith(prefix) for thread in threading.enumerate())


def test_wait_idle_after_a_shutdown_delivers_what_was_published_since() -> None:
    # Before: a run that outlived a shutdown's timeout, or a verb allowed after it
    # (pause), published its event for the listeners' thread the shutdown had stopped;
    # wait_idle() then waited for that delivery until its timeout and returned False,
    # every time, though nothing was due or running and nothing ever would be.
    heard: list[TaskEvent] = []
    scheduler, gate = _a_run_outliving_a_shutdown(heard)
    later = scheduler.schedule("later", lambda: None, FixedRate(60, start_delay=60), id="later")
    assert scheduler.shutdown(timeout=0.05) is False
    gate.set()
    assert scheduler.pause(later.id)  # allowed after a shutdown: its event is published
    assert scheduler.wait_idle(WAIT), "wait_idle() waited for a delivery thread that ended"
    assert sorted((event.task_id, event.status) for event in heard[-2:]) == [
        ("block", TaskStatus.SUCCEEDED),  # the run's end and the pause, in either order
        ("later", TaskStatus.PAUSED),
    ]
    assert scheduler.shutdown(timeout=WAIT) is True


def test_a_coroutine_timed_out_after_modify_dropped_its_timeout_is_still_recorded() -> None:
    # Before: the record of a coroutine its timer cancelled read the task's timeout
    # again; a modify() that set it to None between the cut and the record made the
    # record's text raise (a None formatted with :g) and the run was never recorded: the
    # task stayed RUNNING, wait_idle() never returned, and shutdown() cut it.  The modify
    # lands in the cut run's finally block, after the cut and before the record.  (A
    # modify before the cut re-arms the run instead: tests/test_rearm_in_flight.py.)
    clock = FakeClock(0.0)
    scheduler = Scheduler(workers=1, clock=clock).start()
    modified = threading.Event()

    async def hangs() -> None:
        try:
            await asyncio.Event().wait()  # until its timeout cancels it
        finally:
            scheduler.modify("hangs", timeout=None)  # cut, not yet recorded
            modified.set()

    try:
        task = scheduler.schedule(
            "hangs",
            hangs,
            OneTime(delay=0),
            id="hangs",
            timeout=0.05,
            retry=RetryPolicy(max_attempts=1),
        )
        assert modified.wait(WAIT)
        assert scheduler.wait_idle(timeout=WAIT), "the timed-out run was never recorded"
        (record,) = task.history
        assert record.timed_out
        assert record.error == "TimeoutError: cancelled at its 0.05 s timeout"  # as cut
        assert task.status is TaskStatus.FAILED and task.timeout is None
    finally:
        assert scheduler.shutdown(timeout=WAIT)


@pytest.mark.parametrize("verb", ["cancel", "pause"])
def test_a_coroutine_a_thread_action_returned_after_a_cancel_or_pause_never_runs(
    verb: str,
) -> None:
    # Before: cancel() and pause() cancel a task's coroutine runs, but the awaitable a
    # plain function returns reaches the event loop only once the function returned on
    # its worker; a verb between the run's begin and that hand-over found no coroutine
    # to cancel, and the coroutine then ran to its end.
    scheduler = Scheduler(workers=1, clock=FakeClock(0.0)).start()
    began, go, body_ran = threading.Event(), threading.Event(), threading.Event()

    async def body() -> None:
        body_ran.set()
        await asyncio.Event().wait()  # for ever, unless cancelled

    def makes_a_coroutine() -> Coroutine[Any, Any, None]:
        began.set()
        assert go.wait(WAIT)  # the verb lands here, before the coroutine is handed over
        return body()

    try:
        task = scheduler.schedule("maker", makes_a_coroutine, OneTime(delay=0))
        assert began.wait(WAIT)
        assert getattr(scheduler, verb)(task.id)
        go.set()
        assert scheduler.wait_idle(timeout=WAIT), "the coroutine ran on after the verb"
        (record,) = task.history
        past = "cancelled" if verb == "cancel" else "paused"
        assert record.error == f"CancelledError: task {past}"
        assert task.status is TaskStatus(past)
        assert not body_ran.is_set()
    finally:
        assert scheduler.shutdown(timeout=WAIT)


def test_a_shutdown_while_start_is_starting_the_threads_leaves_none_behind() -> None:
    # Before: start() marked the scheduler running under the lock, then started the
    # workers, the events thread and the timer without it.  A shutdown() in between
    # (a service's signal handler, a test's teardown on another thread) closed a pool
    # that had no thread yet; start() then started worker threads that waited for ever
    # on the closed pool, and no later shutdown() could end them.
    starting, go = threading.Event(), threading.Event()

    class HeldPool(WorkerPool[Any, Any, Any]):
        def start(self) -> None:  # start() is here: marked running, no thread started
            starting.set()
            assert go.wait(WAIT)
            super().start()

    class HeldScheduler(Scheduler):
        pool_type = HeldPool

    scheduler = HeldScheduler(workers=2, clock=FakeClock(0.0), name="held-start")
    starter = threading.Thread(target=scheduler.start)
    starter.start()
    try:
        assert starting.wait(WAIT)
        # start() holds the lock until its threads are started: this shutdown cannot
        # take it within its timeout, and stops nothing (it said it changed nothing)
        assert scheduler.shutdown(timeout=0.2) is False
    finally:
        go.set()
        starter.join(WAIT)
    assert scheduler.shutdown(timeout=WAIT) is True
    assert not [t for t in threading.enumerate() if t.name.startswith("lldsched-held-start-")]


def test_wait_idle_is_not_true_while_an_event_of_a_run_is_still_being_delivered() -> None:
    # Before: wait_idle() waited for quiet, then for every event to be delivered, then
    # tested quiet once more, but not the delivery: a run a listener's verb made due in
    # the last delivery could start and end between the two, and wait_idle() returned
    # True with that run's event undelivered (a Stepper then settled while a listener
    # still had a verb to call: test_testing's endless run_now, under
    # --switch-interval=1e-6).
    recorded_twice, release = threading.Event(), threading.Event()
    runs = 0

    class Dispatcher(EventDispatcher):
        held = True  # the first flush only: then the run of the listener's verb ends

        def publish(self, event: TaskEvent) -> None:
            super().publish(event)
            if event.record is not None and event.record.attempt and runs == 2:
                recorded_twice.set()

        def flush(self, timeout: float | None = None) -> bool:
            delivered = super().flush(timeout)
            if Dispatcher.held:
                Dispatcher.held = False
                assert recorded_twice.wait(WAIT)  # that run ended, its event published
            return delivered

    class HeldScheduler(Scheduler):
        dispatcher_type = Dispatcher

    def count() -> None:
        nonlocal runs
        runs += 1

    def listener(event: TaskEvent) -> None:
        if event.record is None:
            return
        if runs == 1:
            scheduler.run_now("t")  # one more run, due at once
        else:
            assert release.wait(WAIT)  # the second run's event: still being delivered

    scheduler = HeldScheduler(clock=FakeClock(0.0), listeners=[listener])
    scheduler.schedule("t", count, FixedRate(3600), id="t")
    scheduler.start()
    try:
        assert scheduler.wait_idle(timeout=0.5) is False  # a listener is still busy
        release.set()
        assert scheduler.wait_idle(timeout=WAIT)
        assert runs == 2
    finally:
        release.set()
        assert scheduler.shutdown(timeout=WAIT)


def test_a_coroutine_a_thread_action_returned_after_a_newer_run_cancelled_it_never_runs() -> None:
    # Before: Overlap.CANCEL_OTHER cancels the older run's coroutine, but the awaitable a
    # plain function returns reaches the event loop only once the function returned on
    # its worker; a newer run that began in between found no coroutine to cancel, and
    # the older one then ran to its end beside it.
    clock = FakeClock(0.0)
    scheduler = Scheduler(workers=2, clock=clock).start()
    began, go, older_ran = threading.Event(), threading.Event(), threading.Event()
    calls = iter(range(2))

    async def older() -> None:
        older_ran.set()
        await asyncio.Event().wait()  # for ever, unless cancelled

    async def newer() -> None:
        pass

    def makes_a_coroutine() -> Coroutine[Any, Any, None]:
        if next(calls) == 1:
            return newer()
        began.set()
        assert go.wait(WAIT)  # the newer run begins here, before the hand-over
        return older()

    try:
        task = scheduler.schedule(
            "maker", makes_a_coroutine, FixedRate(10), overlap=Overlap.CANCEL_OTHER
        )
        assert began.wait(WAIT)
        clock.advance(10)  # the next slot: a newer run begins and cancels the older
        wait_until(lambda: len(task.history) == 1, timeout=WAIT, what="the newer run")
        go.set()
        assert scheduler.wait_idle(timeout=WAIT), "the older coroutine ran on"
        first, second = sorted(task.history, key=lambda record: record.slot)
        # and its record says it never started (before: "... came due while it ran")
        assert first.error == (
            "OverlapCancelled: Overlap.CANCEL_OTHER, slot 1970-01-01T00:00:10.000+00:00 came "
            "due before it started"
        )
        assert second.ok
        assert not older_ran.is_set()
    finally:
        assert scheduler.shutdown(timeout=WAIT)


def test_a_history_read_while_its_task_records_runs_is_one_the_task_had() -> None:
    # Before: ``task.history`` (read by any thread, without the lock: core/task.py says
    # so) unpacked the packed blocks while iterating the deque that holds them; a run
    # recorded on a worker meanwhile packed a batch into that deque, and the read raised
    # ``RuntimeError: deque mutated during iteration`` (a dashboard thread reading a
    # recurring task's history on a store-less scheduler met it about once in 5 ms
    # under --switch-interval=1e-6).  Here the core's adds happen inside the read, at
    # its first unpack, as the worker's would.
    stats = PackedRunStats(None)
    added = [_record(n) for n in range(BATCH + 4)]
    for record in added:
        stats.add(record)
    later = [_record(n) for n in range(len(added), len(added) + BATCH)]
    real_unpack = packedstats.unpack
    adds = iter([later])

    def unpack_while_the_core_adds(block: packedstats.Block) -> Iterator[ExecutionRecord]:
        for record in next(adds, []):  # the first unpack only
            stats.add(record)  # a whole batch: a block packed, the tail cleared
        return real_unpack(block)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(packedstats, "unpack", unpack_while_the_core_adds)
        history = stats.records()
    assert history in (tuple(added), tuple(added + later))


def test_a_history_read_from_another_thread_never_raises_nor_goes_back() -> None:
    # The same race through a running scheduler: a reader thread reads a fast recurring
    # task's history while workers record its runs; each read must be a prefix of the
    # final history (history_limit=None: nothing falls off), in order, without an error.
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between nearly every bytecode
    scheduler = Scheduler(workers=2, history_limit=None).start()
    reads: list[tuple[ExecutionRecord, ...]] = []
    errors: list[BaseException] = []
    try:
        task = scheduler.schedule("tick", _none, FixedRate(0.0002))
        for _ in range(20_000):
            try:
                reads.append(task.history)
            except Exception as exc:  # what the test reports
                errors.append(exc)
            if len(reads) > 200 and len(reads[-1]) >= 4 * BATCH * 8:
                break
        scheduler.cancel(task.id)
        assert scheduler.wait_idle(timeout=WAIT)
    finally:
        sys.setswitchinterval(switch)
        assert scheduler.shutdown(timeout=WAIT)
    assert errors == []
    final = task.history
    for read in reads:
        assert read == final[: len(read)]


def _none() -> None:
    return None


def _record(index: int) -> ExecutionRecord:
    return ExecutionRecord.of(
        task_id="t", name="t", attempt=1, due=float(index), slot=float(index), worker=0,
        started=index + 0.25, finished=index + 0.5, ok=True,
    )  # fmt: skip


@pytest.mark.parametrize("verb", ["cancel", "pause"])
def test_a_coroutine_cancelled_between_its_start_and_its_first_step_never_runs(verb: str) -> None:
    # Before: the loop made the coroutine's asyncio task (its first step queued on the
    # loop) and a cancel or pause that came before that step found the task made, so it
    # queued the cancellation behind the step: the body ran after cancel() returned True
    # (all of it, for a coroutine that does not await: recorded ok, its task CANCELLED).
    # A loop busy with other coroutines' steps widens that window.  Found by
    # tests/test_concurrent_verbs.py.  Here the loop is held just after the task is made.
    made, verb_returned = threading.Event(), threading.Event()
    ran: list[str] = []

    async def job() -> str:
        ran.append("body")
        return "done"

    async def warm_up() -> None:
        pass

    scheduler = Scheduler(workers=1, clock=FakeClock(0.0)).start()
    try:
        scheduler.schedule("warm-up", warm_up, OneTime(delay=0))  # starts the loop
        assert scheduler.wait_idle(timeout=WAIT)
        runner = scheduler._coroutines
        task_class = runner._task_class
        assert task_class is not None

        class HeldTask(task_class):  # type: ignore[misc,valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)  # its first step is queued now
                made.set()
                assert verb_returned.wait(WAIT)  # the loop is held until the verb returned

        runner._task_class = HeldTask
        task = scheduler.schedule("job", job, OneTime(delay=0))
        assert made.wait(WAIT)
        assert getattr(scheduler, verb)(task.id) is True
        verb_returned.set()
        assert scheduler.wait_idle(timeout=WAIT)
        assert ran == []  # the body never started
        (record,) = task.history
        said = {"cancel": "cancelled", "pause": "paused"}[verb]
        assert record.error == f"CancelledError: task {said}"
    finally:
        verb_returned.set()
        assert scheduler.shutdown(timeout=WAIT)


class _HeldTimerClock(FakeClock):
    """A FakeClock whose timer does not look while ``held``: what the timer would do at
    a new instant waits until ``let_go()``, so a test can change things first."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self.held = False
        self.parked = threading.Event()  # the timer is held

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        if not self.held:
            super().wait(condition, deadline)
        while self.held:  # read under `condition`: the scheduler's lock
            self.parked.set()
            super().wait(condition, None)

    def hold(self) -> None:
        """Return once the timer is parked: it reads the time no more until let_go()."""
        self.held = True
        self._notify_all()
        assert self.parked.wait(WAIT)

    def let_go(self) -> None:
        self.held = False
        self._notify_all()


def _reschedule_later(scheduler: Scheduler, task_id: str) -> None:
    scheduler.reschedule(task_id, OneTime(at=100))


def _replace_later(scheduler: Scheduler, task_id: str) -> None:
    scheduler.schedule("due", _none, OneTime(at=100), id=task_id, replace_existing=True)


def _pause(scheduler: Scheduler, task_id: str) -> None:
    assert scheduler.pause(task_id)


def _cancel(scheduler: Scheduler, task_id: str) -> None:
    assert scheduler.cancel(task_id)


def _remove(scheduler: Scheduler, task_id: str) -> None:
    scheduler.remove(task_id)


@pytest.mark.parametrize(
    "verb",
    [_reschedule_later, _replace_later, _pause, _cancel, _remove],
    ids=["reschedule", "replace_existing", "pause", "cancel", "remove"],
)
def test_a_wait_idle_returns_when_a_verb_moves_or_stops_the_only_due_task(
    verb: Callable[[Scheduler, str], None],
) -> None:
    # Before: reschedule() and schedule(..., replace_existing=True) woke no wait_idle()
    # caller, so one waiting for the only due task, now moved to later, woke only at the
    # timer's next look (here held back: for ever, until its timeout).  A pause, a
    # cancel or a remove of it wakes the caller as well (mutation14: each one's wake
    # dropped, no test told).
    clock = _HeldTimerClock()
    scheduler = Scheduler(clock=clock).start()
    try:
        task = scheduler.schedule("due", _none, OneTime(at=10))
        clock.hold()
        clock.advance(10)  # due now, and the timer does not look
        answers: list[bool] = []
        # Its own timeout far past the join's: a waiter nothing woke looks again when its
        # time runs out and answers True then (the task is no longer due), which a wait as
        # long as the join's let pass for a wake (mutation14: reschedule's wake dropped).
        waiter = threading.Thread(target=lambda: answers.append(scheduler.wait_idle(6 * WAIT)))
        waiter.start()
        wait_until(lambda: len(scheduler._idle_waiters) == 1, timeout=WAIT, what="the waiter")
        verb(scheduler, task.id)
        waiter.join(WAIT)
        assert answers == [True]
        assert clock.held  # the waiter was woken by the verb, not by the timer
        assert not task.history  # it never ran
        if verb in (_reschedule_later, _replace_later):
            assert task.next_run_at == 100
    finally:
        clock.let_go()
        scheduler.shutdown(timeout=WAIT)


def _first(n: int) -> None:
    pass


def _second(n: int) -> None:
    pass


def _definitions() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two registrations of one id that differ in every part of a definition."""
    return (
        {"name": "first", "action": _first, "schedule": OneTime(at=100), "args": (1,)},
        {
            "name": "second",
            "action": _second,
            "schedule": OneTime(at=200),
            "args": (2,),
            "priority": Priority.HIGH,
            "timeout": 5.0,
            "retry": RetryPolicy(max_attempts=3),
        },
    )


def _line_of(function: Callable[..., Any], text: str) -> int:
    """The number of the line of ``function``'s source that holds ``text``."""
    lines, start = inspect.getsourcelines(function)
    (offset,) = [n for n, line in enumerate(lines) if text in line]
    return start + offset


def test_a_definition_read_during_a_replace_is_the_old_one_or_the_new_one_never_a_mix() -> None:
    # Before: `definition` read the task's fields one by one without the lock, so a
    # read while `schedule(..., replace_existing=True)` assigned them gave the new name
    # beside the old action, priority and options.  The replace is held (a trace on its
    # thread) right after it assigned the name, and the definition read there.
    old, new = _definitions()
    scheduler = Scheduler(clock=FakeClock())  # not started: nothing runs
    task = scheduler.schedule(id="job", **old)
    before = task.definition
    midway, go_on = threading.Event(), threading.Event()
    code = DefinitionVerbs._replace.__code__
    line = _line_of(DefinitionVerbs._replace, "task.action = action")

    def held(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line" and frame.f_lineno == line:
            midway.set()
            assert go_on.wait(WAIT)
        return held

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        return held if frame.f_code is code else None

    def replace() -> None:
        sys.settrace(tracer)
        try:
            scheduler.schedule(id="job", replace_existing=True, **new)
        finally:
            sys.settrace(None)

    writer = threading.Thread(target=replace)
    writer.start()
    try:
        assert midway.wait(WAIT)
        assert task.name == "second"  # the replace is under way: the name is new
        assert task.definition == before  # the read: the old definition, whole
    finally:
        go_on.set()
        writer.join(WAIT)
    after = task.definition
    assert (after.name, after.action, after.priority, after.args, after.timeout) == (
        "second",
        _second,
        Priority.HIGH,
        (2,),
        5.0,
    )
    assert after.retry == RetryPolicy(max_attempts=3) and after.schedule == OneTime(at=200)
    scheduler.shutdown(timeout=WAIT)
