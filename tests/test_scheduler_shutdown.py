"""Shutdown: stop timing first, then drain or drop; idempotent; final."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable
from types import CodeType, TracebackType

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    OneTime,
    Priority,
    RetryPolicy,
    Scheduler,
    SchedulerStateError,
    TaskEvent,
    TaskStatus,
)
from lldsched.threaded import stopping
from lldsched.threaded.deadline import Deadline, Flag, Hold
from lldsched.threaded.dispatcher import EventDispatcher
from lldsched.threaded.parts import STOPPED
from tests.conftest import T0, SchedulerFactory
from tests.waits import wait_until


def blocker() -> tuple[threading.Event, threading.Event, Callable[[], None]]:
    started, release = threading.Event(), threading.Event()

    def action() -> None:
        started.set()
        release.wait(5)

    return started, release, action


def test_shutdown_stops_the_timer_before_draining_the_pool(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    started, release, action = blocker()
    scheduler = make_scheduler(workers=1, clock=clock)
    busy = scheduler.schedule("busy", action, OneTime(delay=0))
    later = scheduler.schedule("later", lambda: None, OneTime(delay=10))
    assert started.wait(5)
    closing = threading.Thread(target=scheduler.shutdown, kwargs={"timeout": 10})
    closing.start()
    assert scheduler._timer is not None
    scheduler._timer.join(5)
    assert not scheduler._timer.is_alive()  # timing stopped while the pool is still busy
    clock.advance(10)  # "later" falls due during the drain: nobody dispatches it
    release.set()
    closing.join(5)
    assert busy.status is TaskStatus.SUCCEEDED
    assert later.status is TaskStatus.SCHEDULED and later.history == ()


def test_a_clock_that_moves_on_as_shutdown_lets_go_of_its_lock_adds_nothing_to_the_drain(
    make_scheduler: SchedulerFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The instant a drain goes up to is read as timing stops, in the same hold of the
    lock: a thread slow to go on once it let that lock go (the clock moved meanwhile)
    drains nothing that fell due after.  (Before, it read the clock after letting go:
    "later", due 10 s on, ran in the drain; seen in a CI run under load as a flake of
    the test above.  Here the clock moves at once as the lock is let go.)"""
    scheduler = make_scheduler(workers=1, clock=clock)
    later = scheduler.schedule("later", lambda: None, OneTime(delay=10))
    moved: list[float] = []

    class MovesOn(Hold):
        """The lock's hold, whose first let-go once timing stopped moves the clock 10 s."""

        def __exit__(
            self,
            kind: type[BaseException] | None,
            error: BaseException | None,
            trace: TracebackType | None,
        ) -> None:
            super().__exit__(kind, error, trace)
            if not moved and scheduler._state is STOPPED:
                moved.append(clock.now())
                clock.advance(10)

    class Holding(Deadline):
        def holding(self, lock: threading.Lock) -> Hold:
            return MovesOn(lock, self)

    monkeypatch.setattr(stopping, "Deadline", Holding)
    assert scheduler.shutdown(timeout=10) is True
    assert moved == [T0]
    assert later.status is TaskStatus.SCHEDULED and later.history == ()


class ParkingFakeClock(FakeClock):
    """A fake clock that tells the test when the timer parks with nothing due at an instant.

    Not each time it calls ``wait``: a timer woken by a registration calls it with the
    deadline it took before the test's ``advance``, and returns at once; a test told
    then would look before the timer handed out what the advance made due (a flake
    under ``sys.setswitchinterval(1e-6)``)."""

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self._parked = threading.Condition()
        self._parked_at: float | None = None  # the instant the timer last parked at

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        now = self.now()
        if deadline is None or deadline > now:  # it parks: nothing due at ``now`` left
            with self._parked:
                self._parked_at = now
                self._parked.notify_all()
        super().wait(condition, deadline)

    def parked_at(self, instant: float, timeout: float) -> bool:
        """Wait until the timer parked at ``instant`` or later; False after ``timeout``."""
        with self._parked:
            return self._parked.wait_for(
                lambda: self._parked_at is not None and self._parked_at >= instant, timeout
            )


def test_drain_runs_what_is_queued_and_drop_does_not_but_in_flight_work_finishes(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    outcomes = {}
    for drain in (True, False):
        started, release, action = blocker()
        parking = ParkingFakeClock(clock.now())
        scheduler = make_scheduler(workers=1, clock=parking)
        busy = scheduler.schedule("busy", action, OneTime(delay=0))
        assert started.wait(5)
        queued = [scheduler.schedule(f"q{i}", lambda: None, OneTime(delay=1)) for i in range(3)]
        # the timer moved all three to the hand-off queue, and parked
        assert parking.parked_at(parking.advance(1), timeout=5)
        assert scheduler.pending() == []
        if drain:
            closing = threading.Thread(target=scheduler.shutdown, kwargs={"drain": True})
            closing.start()
            release.set()
            closing.join(5)
        else:
            assert scheduler.shutdown(drain=False, timeout=0.05) is False  # busy still runs
            release.set()
            assert scheduler.shutdown(timeout=5) is True
        assert busy.status is TaskStatus.SUCCEEDED  # in flight: always finishes
        outcomes[drain] = [task.run_count for task in queued]
    assert outcomes == {True: [1, 1, 1], False: [0, 0, 0]}


def test_shutdown_is_idempotent_and_final(make_scheduler: SchedulerFactory) -> None:
    scheduler = make_scheduler()
    task = scheduler.schedule("x", lambda: None, OneTime(delay=3600))
    assert scheduler.shutdown() is True
    assert scheduler.shutdown() is True
    assert not scheduler.running
    with pytest.raises(SchedulerStateError, match="cannot schedule 'y'"):
        scheduler.schedule("y", lambda: None, OneTime(delay=0))
    with pytest.raises(SchedulerStateError, match="already stopped"):
        scheduler.start()
    scheduler.pause(task.id)
    with pytest.raises(SchedulerStateError, match=f"cannot resume '{task.id}'"):
        scheduler.resume(task.id)
    assert scheduler.cancel(task.id) is True  # stopping things is still allowed


def test_a_second_shutdown_out_of_time_leaves_the_first_s_drain_alone() -> None:
    # The first shutdown() drains on one worker with room for one entry: "a" waits for
    # the worker, "b" in the heap.  A second call on another thread, out of time while
    # the first goes on, returns False and closes nothing: the drain runs both.
    # (mutation15, stopping.py `_first_ended`'s `return False` as True: the second
    # closed the pool under the drain, which then handed "b" to no worker, and waited
    # for it until its own timeout.)
    started, release, action = blocker()
    scheduler = Scheduler(workers=1, handoff=1).start()
    scheduler.schedule("block", action, OneTime(delay=0), id="block")
    assert started.wait(5)
    for name in ("a", "b"):
        scheduler.schedule(name, lambda: None, OneTime(delay=0), id=name)
    second: list[bool] = []

    def out_of_time() -> None:
        wait_until(lambda: not scheduler.running, timeout=5, what="the first shutdown")
        second.append(scheduler.shutdown(timeout=0.1))
        release.set()

    helper = threading.Thread(target=out_of_time, name="second-shutdown")
    helper.start()
    try:
        assert scheduler.shutdown(timeout=5) is True
    finally:
        release.set()
        helper.join(5)
    assert second == [False]
    statuses = {name: scheduler.task(name).status for name in ("block", "a", "b")}
    assert statuses == dict.fromkeys(("block", "a", "b"), TaskStatus.SUCCEEDED)


def test_the_context_manager_starts_and_shuts_down(clock: FakeClock) -> None:
    log = EventLog()
    with Scheduler(workers=2, clock=clock, listeners=[log]) as scheduler:
        assert scheduler.running
        scheduler.schedule("x", lambda: None, OneTime(delay=0))
        assert log.wait_for(lambda e: e.record is not None, timeout=5) is not None
    assert not scheduler.running
    assert scheduler._pool.alive == 0


def spied(scheduler: Scheduler, verb: str, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What each later call of ``scheduler``'s ``verb`` (``shutdown``, ``aclose``) returned."""
    returned: list[object] = []
    real = getattr(scheduler, verb)

    if verb == "aclose":

        async def spy(**options: object) -> object:
            returned.append(await real(**options))
            return returned[-1]
    else:

        def spy(**options: object) -> object:  # type: ignore[misc]
            returned.append(real(**options))
            return returned[-1]

    monkeypatch.setattr(scheduler, verb, spy)
    return returned


@pytest.mark.parametrize("blocked", [True, False], ids=["out-of-time", "stopped"])
def test_the_end_of_a_with_block_adds_no_wait_to_a_shutdown_that_returned(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch, blocked: bool
) -> None:
    # A service bounds its stop with shutdown(timeout=2) inside the block; it returned
    # False (a run still going, said in a warning).  The block's end called shutdown()
    # again, whose default 5 s waited for that run: the process stopped after 7 s.
    started, release, action = blocker()
    if not blocked:
        release.set()
    with Scheduler(workers=1, clock=clock) as scheduler:
        scheduler.schedule("busy", action, OneTime(delay=0))
        assert started.wait(5)
        assert scheduler.shutdown(timeout=0.2 if blocked else 5) is not blocked
        later = spied(scheduler, "shutdown", monkeypatch)
    assert later == []  # the block's end shut nothing down again: nothing waited
    release.set()
    assert scheduler.shutdown(timeout=5) is True  # an explicit second call still waits


def test_the_end_of_an_async_with_block_adds_no_wait_to_an_aclose_that_returned(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release, action = blocker()

    async def serve() -> Scheduler:
        async with Scheduler(workers=1, clock=clock) as scheduler:
            scheduler.schedule("busy", action, OneTime(delay=0))
            assert await asyncio.to_thread(started.wait, 5)
            assert await scheduler.aclose(timeout=0.2) is False
            later.extend(
                [spied(scheduler, "aclose", monkeypatch), spied(scheduler, "shutdown", monkeypatch)]
            )
        return scheduler

    later: list[list[object]] = []
    scheduler = asyncio.run(serve())
    assert later == [[], []]
    release.set()
    assert scheduler.shutdown(timeout=5) is True


def test_the_end_of_a_with_block_still_shuts_down_after_a_shutdown_from_an_action(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shutdown() an action made returns False while its own run goes on, and says
    # nothing of it: its caller is that run.  The block's end waits for it, as before.
    returned: list[bool] = []
    done = threading.Event()
    with Scheduler(workers=2, clock=clock) as scheduler:

        def stop() -> None:
            returned.append(scheduler.shutdown(timeout=5))
            done.set()

        scheduler.schedule("stop", stop, OneTime(delay=0))
        assert done.wait(5)
        later = spied(scheduler, "shutdown", monkeypatch)
    assert returned == [False]
    assert later == [True]  # the block's end shut it down, and waited for that run


def test_a_scheduler_that_never_started_shuts_down_cleanly() -> None:
    scheduler = Scheduler()
    scheduler.schedule("x", lambda: None, OneTime(delay=0))
    assert scheduler.shutdown() is True
    with pytest.raises(SchedulerStateError):
        scheduler.start()


# -- the full drain ------------------------------------------------------------------------


def test_a_drain_runs_all_forty_tasks_due_on_one_worker_in_heap_order(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    order: list[str] = []
    scheduler = make_scheduler(workers=1, clock=clock, start=False)
    tasks = [
        scheduler.schedule(
            f"t{n:02}",
            order.append,
            OneTime(delay=2 - (n % 2)),  # odd ones are due a second earlier
            args=(f"t{n:02}",),
            priority=Priority.HIGH if n % 4 == 0 else Priority.NORMAL,
        )
        for n in range(40)
    ]
    clock.advance(2)
    scheduler.start()
    assert scheduler.shutdown(drain=True, timeout=5) is True
    assert all(task.status is TaskStatus.SUCCEEDED for task in tasks)
    odd, even = [f"t{n:02}" for n in range(1, 40, 2)], [f"t{n:02}" for n in range(0, 40, 2)]
    high = [name for name in even if int(name[1:]) % 4 == 0]
    normal = [name for name in even if int(name[1:]) % 4 != 0]
    # the timer may hand out a first batch before shutdown stops it; that batch keeps heap
    # order as well, so the whole sequence is (due, priority, arrival)
    assert order == odd + high + normal


def test_a_drain_does_not_run_what_falls_due_after_the_instant_and_it_stays_scheduled(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(workers=1, clock=clock)
    later = scheduler.schedule("later", lambda: None, OneTime(delay=10))
    failing = scheduler.schedule(
        "failing", lambda: 1 / 0, OneTime(delay=0), retry=RetryPolicy(initial_backoff=1)
    )
    assert scheduler.shutdown(drain=True, timeout=5) is True
    assert later.status is TaskStatus.SCHEDULED and later.next_run_at == clock.now() + 10
    assert failing.run_count == 1 and failing.status is TaskStatus.RETRYING  # its retry is later
    assert failing.next_run_at == clock.now() + 1


def test_a_drain_that_runs_out_of_time_leaves_what_did_not_start_scheduled_with_its_due_time(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    started, release, action = blocker()
    scheduler = make_scheduler(workers=1, clock=clock)
    busy = scheduler.schedule("busy", action, OneTime(delay=0))
    assert started.wait(5)
    waiting = [scheduler.schedule(f"w{n}", lambda: None, OneTime(delay=0)) for n in range(20)]
    later = scheduler.schedule("later", lambda: None, OneTime(delay=60))  # not due: not said
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        assert scheduler.shutdown(drain=True, timeout=0.1) is False  # busy holds the worker
    # The warning says what the docstring, GUIDE.md and DECISIONS.md say the drain left.
    (line,) = [r.getMessage() for r in caplog.records if r.name == "lldsched.scheduler"]
    assert line == (
        f"shutdown(timeout=0.1) returned with runs still going: {busy.id} 'busy' and 20 "
        "runs due by the shutdown not started (they stay SCHEDULED or RETRYING with their "
        "due time, for a durable store to recover); a thread cannot be stopped: each ends "
        "on its own, unless the process ends first"
    )
    release.set()
    assert scheduler.shutdown(timeout=5) is True
    assert busy.status is TaskStatus.SUCCEEDED
    assert all(t.run_count == 0 and t.status is TaskStatus.SCHEDULED for t in waiting)
    assert all(t.next_run_at == clock.now() for t in waiting)
    assert later.status is TaskStatus.SCHEDULED and later.next_run_at == clock.now() + 60


def test_a_drain_out_of_time_that_cut_every_run_still_says_what_it_did_not_start(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # A drain out of time cancels the coroutines still running (and kills isolated
    # runs) before it returns: every thread stopped, so it returns True.  The runs due
    # that it never started were then said nowhere (the warning came only with False),
    # and a SIGTERM's log read as if the drain had run everything.
    started = threading.Event()

    async def hangs() -> None:
        started.set()
        await asyncio.sleep(3600)

    scheduler = make_scheduler(workers=1, clock=clock, max_coroutines=1)
    first = scheduler.schedule("first", hangs, OneTime(delay=0))
    assert started.wait(5)
    second = scheduler.schedule("second", hangs, OneTime(delay=0))  # waits for the slot
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        assert scheduler.shutdown(drain=True, timeout=2.0) is True  # the coroutine cut
    lines = [r.getMessage() for r in caplog.records if r.name == "lldsched.scheduler"]
    # The cut run is due again too, and counted apart: it was started, and its own line
    # says it was stopped (before, "2 runs due by the shutdown not started" counted it
    # with the run that waited for the slot).
    assert lines == [
        "shutdown(timeout=2.0) ran out of time draining: 1 run due by the shutdown not "
        "started and 1 cut mid-run (they stay SCHEDULED or RETRYING with their due time, "
        "for a durable store to recover)"
    ]
    # cut: due at its slot again, its attempt unspent (before: RETRYING, down its retries)
    assert (first.status, first.attempt) == (TaskStatus.SCHEDULED, 0)
    assert (second.status, second.run_count) == (TaskStatus.SCHEDULED, 0)


def test_a_drain_out_of_time_cancels_its_coroutines_with_the_grace_left_to_end_them(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # The grace (1 s before the timeout) is for a cancelled coroutine to handle its
    # cancellation and be recorded.  A drain cancelled them only at the timeout, with
    # nothing left: the loop was stopped behind the cancellation, a clean-up that awaits
    # never ran, and the run was recorded as left behind.
    started, cleaned = threading.Event(), threading.Event()

    async def tidy() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            for _ in range(100):  # an awaiting clean-up: a buffer flushed, a connection closed
                await asyncio.sleep(0)
            cleaned.set()
            raise

    scheduler = make_scheduler(workers=1, clock=clock)
    task = scheduler.schedule("tidy", tidy, OneTime(delay=0))
    assert started.wait(5)
    assert scheduler.shutdown(drain=True, timeout=2.0) is True
    assert cleaned.is_set()  # within the shutdown, before it returned
    (record,) = scheduler.records()
    assert (record.outcome, record.error) == ("cancelled", "CancelledError: scheduler shut down")
    assert (task.status, task.attempt) == (TaskStatus.SCHEDULED, 0)


def test_a_drain_starts_nothing_in_the_grace_it_keeps_for_the_ends_of_its_runs(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # The grace's start cuts the coroutine; its cancellation frees the only worker,
    # before the deadline.  The thread task due behind it waited in the hand-off queue:
    # a drain that went on handing out until the deadline started it there, in the
    # second kept for ends (a SIGTERM's SIGKILL cuts such a run half-done).
    started, cut = threading.Event(), threading.Event()

    async def hangs() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            cut.set()

    ran: list[str] = []
    scheduler = make_scheduler(workers=1, clock=clock)
    hanging = scheduler.schedule("hangs", hangs, OneTime(delay=0))
    assert started.wait(5)
    busy = scheduler.schedule("busy", lambda: cut.wait(10), OneTime(delay=0))
    wait_until(lambda: busy.status is TaskStatus.RUNNING, timeout=5, what="busy on the worker")
    behind = scheduler.schedule("behind", lambda: ran.append("behind"), OneTime(delay=0))
    assert scheduler.shutdown(drain=True, timeout=2.0) is True
    assert cut.is_set() and busy.status is TaskStatus.SUCCEEDED
    assert ran == [] and (behind.status, behind.run_count) == (TaskStatus.SCHEDULED, 0)
    # back in the heap, and the cut one queued again at its slot, after it
    assert [task.id for task in scheduler.pending()] == [behind.id, hanging.id]


def test_a_drain_called_from_a_running_action_runs_the_rest_and_returns(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    returned: list[bool] = []
    scheduler = make_scheduler(workers=2, clock=clock, start=False)

    def stop() -> None:
        returned.append(scheduler.shutdown(drain=True, timeout=5))

    scheduler.schedule("stop", stop, OneTime(delay=0), priority=Priority.HIGH)
    rest = [scheduler.schedule(f"r{n}", lambda: None, OneTime(delay=0)) for n in range(30)]
    scheduler.start()
    assert scheduler.shutdown(timeout=5) is True  # waits for the worker that called it
    assert len(returned) == 1  # it returned (False: its own worker was still running)
    assert all(task.run_count == 1 for task in rest)


def test_a_drain_called_from_the_only_worker_returns_and_leaves_what_waits_for_a_worker_due(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # The drain handed the due runs to the workers and waited for them to settle, but
    # the one worker was the caller's: shutdown(timeout=None) hung for good (and with a
    # timeout it waited all of it for nothing).  Nothing can run them before this call
    # returns: they are left due, as a drain out of time leaves them, and said.
    returned: list[bool] = []
    done = threading.Event()
    scheduler = make_scheduler(workers=1, clock=clock, start=False)

    def stop() -> None:
        returned.append(scheduler.shutdown(drain=True, timeout=None))
        done.set()

    scheduler.schedule("stop", stop, OneTime(delay=0), priority=Priority.HIGH)
    rest = [scheduler.schedule(f"r{n}", lambda: None, OneTime(delay=0)) for n in range(3)]
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        scheduler.start()
        assert done.wait(5), "shutdown() from the only worker waited for itself"
    assert returned == [False]  # its own worker is still running: it cannot be True
    assert scheduler.shutdown(timeout=5) is True
    assert all(t.run_count == 0 and t.status is TaskStatus.SCHEDULED for t in rest)
    assert all(t.next_run_at == clock.now() for t in rest)
    assert "3 runs due by the shutdown not started" in caplog.text


def test_an_interrupt_while_the_drain_waits_leaves_the_lock_free_and_a_later_shutdown_stops(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # Ctrl-C on the main thread while shutdown() waits for the runs it drains (a second
    # Ctrl-C after the first began the shutdown): the KeyboardInterrupt came out of the
    # wait with the lock let go, and the drain's cleanup released it again, raising
    # "release unlocked lock" in its place (and, had another thread taken the lock
    # meanwhile, releasing that thread's hold).  The interrupt is raised as it is now,
    # the lock free, and a later shutdown() stops what the first left.
    class Interrupting(Flag):
        def wait(self, timeout: float | None = None) -> bool:
            raise KeyboardInterrupt

    started, release, action = blocker()
    scheduler = make_scheduler(workers=1, clock=clock)
    scheduler.schedule("busy", action, OneTime(delay=0))
    assert started.wait(5)
    scheduler._drain_settled = Interrupting()  # the event the drain waits on
    with pytest.raises(KeyboardInterrupt):
        scheduler.shutdown(timeout=5)
    assert not scheduler._lock.locked()
    release.set()
    assert scheduler.shutdown(timeout=5) is True


def called_from(thread: threading.Thread, callee: CodeType, caller: str) -> bool:
    """``thread`` is inside a call of ``callee`` made straight from a function named
    ``caller`` (read off its frames)."""
    frame = sys._current_frames().get(thread.ident or 0)
    while frame is not None and frame.f_back is not None:
        if frame.f_code is callee and frame.f_back.f_code.co_name == caller:
            return True
        frame = frame.f_back
    return False


def released_when(condition: Callable[[], bool], release: threading.Event) -> threading.Thread:
    """A thread that sets ``release`` once ``condition`` holds (5 s at most)."""

    def watch() -> None:
        try:
            wait_until(condition, timeout=5, what="the second shutdown's wait")
        finally:
            release.set()

    watcher = threading.Thread(target=watch, name="releaser")
    watcher.start()
    return watcher


def test_a_second_shutdown_waits_for_the_listener_the_first_left_busy() -> None:
    # The first shutdown() runs out of time with a listener busy: False.  A second waits
    # for the listeners' thread to deliver and stop (released only once it waits):
    # True.  (mutation15, stopping.py: `_join`'s `_dispatcher.close` dropped, the
    # second did not wait and returned False with the listener still busy.)
    inside, release = threading.Event(), threading.Event()

    def listener(event: TaskEvent) -> None:
        if event.record is not None:
            inside.set()
            release.wait(5)

    scheduler = Scheduler(workers=1, listeners=[listener]).start()
    try:
        scheduler.schedule("told", lambda: None, OneTime(delay=0))
        assert inside.wait(5)
        assert scheduler.shutdown(timeout=0.1) is False
        main = threading.current_thread()
        watcher = released_when(
            lambda: called_from(main, EventDispatcher.close.__code__, "_join"), release
        )
        assert scheduler.shutdown(timeout=5) is True
    finally:
        release.set()
    watcher.join(5)


def test_a_second_shutdown_waits_for_the_timer_the_first_left_running() -> None:
    # The first shutdown() runs out of time with the timer stuck in the clock's wait (a
    # clock whose wait outlives its wake, the scheduler's lock let go): False.  A second
    # waits for the timer to end (released only once it waits): True.  (mutation15,
    # stopping.py: `_join`'s `_timer.join` dropped, the second did not wait and
    # returned False with the timer still alive.)
    stuck, release = threading.Event(), threading.Event()
    armed = threading.Event()

    class StickingClock(FakeClock):
        def wait(self, condition: threading.Condition, deadline: float | None) -> None:
            if not armed.is_set():
                super().wait(condition, deadline)
                return
            stuck.set()
            condition.release()
            try:
                release.wait(5)
            finally:
                condition.acquire()

    clock = StickingClock(T0)
    scheduler = Scheduler(workers=1, clock=clock).start()
    try:
        armed.set()
        scheduler.schedule("wakes-the-timer", lambda: None, OneTime(delay=0))
        assert stuck.wait(5)
        assert scheduler.shutdown(timeout=0.1) is False
        main = threading.current_thread()
        watcher = released_when(
            lambda: called_from(main, threading.Thread.join.__code__, "_join"), release
        )
        assert scheduler.shutdown(timeout=5) is True
    finally:
        release.set()
    watcher.join(5)
