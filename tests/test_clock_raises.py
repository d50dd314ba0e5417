"""An injected clock whose ``now()`` raises while a worker reads it: the run is recorded
failed with the clock's error, its task is not left RUNNING, and the worker lives on."""

from __future__ import annotations

import logging
import sys
import threading

import pytest

from lldsched import FakeClock, OneTime, RunContext, ScheduledTask, Scheduler, TaskStatus
from tests.conftest import SchedulerFactory, collect_left_behind

T0 = 1_800_000_000.0


class _GlitchingClock(FakeClock):
    """Raises from ``now()`` once, at the first reading a thread ``on`` names takes after
    ``armed`` is set: a worker (``"worker"`` in its name), or the event loop's thread
    (``on="-loop"``, the end of its name).  The timer's readings are left alone: its
    death is another test's.  ``raised_in`` names the function whose reading raised,
    for a test to check it broke the reading it means."""

    def __init__(self, start: float, *, on: str = "worker") -> None:
        super().__init__(start)
        self.on = on
        self.armed = threading.Event()
        self.raised = threading.Event()
        self.raised_in: str | None = None

    def now(self) -> float:
        if (
            self.armed.is_set()
            and not self.raised.is_set()
            and self._breaks_on(threading.current_thread().name)
        ):
            self.raised_in = sys._getframe(1).f_code.co_name
            self.raised.set()
            raise RuntimeError("the clock broke")
        return super().now()

    def _breaks_on(self, thread: str) -> bool:
        return thread.endswith(self.on) if self.on.startswith("-") else self.on in thread


class _GlitchInModule(FakeClock):
    """Raises from ``now()`` once, at the first reading a function of ``module`` (a file
    name of lldsched's) takes itself."""

    def __init__(self, start: float, *, module: str) -> None:
        super().__init__(start)
        self.module = module
        self.raised = threading.Event()

    def now(self) -> float:
        caller = sys._getframe(1).f_code
        if caller.co_filename.endswith(self.module) and not self.raised.is_set():
            self.raised.set()
            raise RuntimeError("the clock broke")
        return super().now()


@pytest.mark.parametrize("where", ["start", "finish", "deadline"])
def test_a_clock_raising_in_a_worker_fails_the_run_and_settles_it(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    clock = _GlitchingClock(T0)
    scheduler = make_scheduler(clock=clock, workers=1)
    if where != "finish":
        clock.armed.set()  # the first reading in the worker: its start, or its deadline's
    ran = threading.Event()

    def job() -> None:
        ran.set()
        clock.armed.set()  # "finish": the reading after the action returned

    def job_with_context(ctx: RunContext) -> None:
        job()

    # A deadline is armed only for a run with a context (an action that takes ctx), from
    # the reading of the run's start as its worker begins it (_prepare): "deadline" is
    # that reading with a deadline to arm, "start" the same reading without one.
    action = job_with_context if where == "deadline" else job
    timeout = 60.0 if where == "deadline" else None
    task = scheduler.schedule("glitch", action, OneTime(at=T0), id="glitch", timeout=timeout)
    with caplog.at_level(logging.WARNING):
        assert scheduler.wait_idle(timeout=5)
    assert clock.raised.is_set()
    assert clock.raised_in == ("_execute" if where == "finish" else "_prepare")
    assert ran.is_set() is (where == "finish")  # a start or deadline raised: unrun
    assert scheduler.task(task.id).status is TaskStatus.RETRYING  # a failed run: not RUNNING
    (record,) = [r for r in scheduler.records() if r.task_id == task.id]
    assert not record.ok and record.error is not None
    assert "RuntimeError: the clock broke" in record.error and "clock" in record.error
    assert "could not s" not in caplog.text  # neither "could not start" nor "settle"
    # The worker lives on: the next run runs.
    after = threading.Event()
    scheduler.schedule("after", after.set, OneTime(at=T0), id="after")
    assert after.wait(5)
    assert scheduler.wait_idle(timeout=5)


@pytest.mark.parametrize("where", ["start", "finish"])
def test_a_clock_raising_on_the_loop_fails_the_coroutine_run_and_settles_it(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    """As a thread run's (above): recorded failed with the clock's error, its task not
    left RUNNING, nothing left in flight (wait_idle returns, shutdown completes), and the
    loop lives on for the next coroutine run."""
    clock = _GlitchingClock(T0, on="-loop")
    scheduler = make_scheduler(clock=clock, workers=1)
    if where == "start":
        clock.armed.set()  # the first reading on the loop: the run's start
    ran = threading.Event()

    async def job() -> None:
        ran.set()
        clock.armed.set()  # "finish": the reading once the coroutine returned

    task = scheduler.schedule("glitch", job, OneTime(at=T0), id="glitch")
    with caplog.at_level(logging.WARNING):
        assert scheduler.wait_idle(timeout=5)
    assert clock.raised.is_set()
    assert ran.is_set() is (where == "finish")  # a start that raised never ran the body
    assert scheduler.task(task.id).status is TaskStatus.RETRYING  # a failed run: not RUNNING
    (record,) = [r for r in scheduler.records() if r.task_id == task.id]
    assert not record.ok and record.error is not None
    assert record.error == (
        "RuntimeError: the clock broke (raised by the scheduler's clock, reading this run's time)"
    )
    assert "could not s" not in caplog.text  # neither "could not start" nor "settle"
    assert "Exception in callback" not in caplog.text  # nothing escaped to asyncio
    assert scheduler.metrics(timeout=5).coroutines == 0
    # The loop lives on: the next coroutine run runs.
    after = threading.Event()

    async def next_one() -> None:
        after.set()

    scheduler.schedule("after", next_one, OneTime(at=T0), id="after")
    assert scheduler.wait_idle(timeout=5) and after.is_set()


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_clock_raising_as_shutdown_records_a_deaf_coroutine_still_settles_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Shutdown records a coroutine that swallowed its cancellation itself, reading the
    clock for its end: a clock that raises then still has it recorded and settled, and
    shutdown completes (its loop closer raised, leaving the run in flight and the loop
    running until a second shutdown)."""
    import asyncio
    import contextlib

    from lldsched import RetryPolicy, Scheduler

    started = threading.Event()

    async def deaf() -> None:
        started.set()
        while True:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(3600)

    # The reading the loop's shutdown takes for the end of a run it records itself.
    clock = _GlitchInModule(T0, module="coroutines/shutdown.py")
    scheduler = Scheduler(workers=1, clock=clock).start()
    task = scheduler.schedule("deaf", deaf, OneTime(at=T0), retry=RetryPolicy(max_attempts=1))
    assert started.wait(5)
    with caplog.at_level(logging.WARNING):
        stopped = scheduler.shutdown(timeout=0.2)
        assert stopped or scheduler.shutdown(timeout=5)
    assert clock.raised.is_set() and not scheduler.running
    # The cancellation shutdown made is what the record says; its time the clock's rule's.
    assert [r.error for r in task.history] == ["CancelledError: scheduler shut down"]
    assert task.history[0].finished == T0  # the timer's last reading
    # Settled, not left RUNNING: due at its slot again, its one attempt unspent (a run
    # a shutdown cut; before, FAILED)
    assert (task.status, task.attempt, task.next_run_at) == (TaskStatus.SCHEDULED, 0, T0)
    assert scheduler.metrics(timeout=5).coroutines == 0
    collect_left_behind()  # its line said here, not in a later test


def test_a_clock_raising_at_shutdowns_own_reading_still_stops_everything(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """shutdown()'s own reading of the clock (the instant it drains up to) raising: the
    shutdown still completes (the drain waits for the run in flight, every thread ends)
    and the clock's error is logged with its traceback; it raised out of shutdown(),
    leaving the workers, the listeners' thread and the event loop running and the run in
    flight not waited for."""
    from lldsched import Scheduler

    clock = _GlitchInModule(T0, module="stopping.py")  # shutdown()'s own reading
    scheduler = Scheduler(workers=1, clock=clock, name="glitch-at-shutdown").start()
    began, release = threading.Event(), threading.Event()

    def job() -> None:
        began.set()
        release.wait(5)

    async def coroutine() -> None:
        pass

    scheduler.schedule("coro", coroutine, OneTime(at=T0), id="coro")  # the loop started
    task = scheduler.schedule("in flight", job, OneTime(at=T0), id="in-flight")
    assert began.wait(5)
    # The run ends once the clock raised: the drain must still be waiting for it then.

    def release_once_raised() -> None:
        clock.raised.wait(5)
        release.set()

    releaser = threading.Thread(target=release_once_raised)
    releaser.start()
    with caplog.at_level(logging.ERROR, logger="lldsched"):
        assert scheduler.shutdown(timeout=5)
    releaser.join()
    assert clock.raised.is_set() and not scheduler.running
    assert [r.ok for r in task.history] == [True]  # the drain waited for it
    assert not [t.name for t in threading.enumerate() if t.name.startswith("lldsched-glitch-at-")]
    assert "the clock broke" in caplog.text and "shutdown" in caplog.text
    assert scheduler.wait_idle(timeout=5)


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_clock_raising_in_shutdowns_lease_keeper_is_logged_and_the_leases_still_renewed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """On a shared store, shutdown() renews the leases of the runs it waits for on a
    thread of its own (``leases_kept``): a clock that raised there killed that thread
    (a traceback on stderr, past logging), and no lease was renewed again, so another
    process took over runs that were finishing.  Now the reading is logged, and the
    next renewal goes on."""
    from typing import Any, cast

    from lldsched.threaded.shared.leases import leases_kept

    renewed = threading.Event()

    class Store:
        lease = 0.03  # a renewal every 10 ms

    class Coordinator:
        store = Store()

        def looked(self) -> float:
            return 0.0

        def renew_held(self, now: float, looked: float) -> None:
            renewed.set()

    readings = iter([RuntimeError("the clock broke")])

    def now() -> float:
        failure = next(readings, None)
        if failure is not None:
            raise failure
        return T0

    keeper = cast(Any, Coordinator())
    with (
        caplog.at_level(logging.ERROR, logger="lldsched"),
        leases_kept(keeper, threading.Lock(), now, name="test-lease-keeper"),
    ):
        assert renewed.wait(5)
    assert "the clock broke" in caplog.text


class _GlitchPublishing(FakeClock):
    """Raises from ``now()`` once, at the ``nth`` reading the event an ``on`` thread
    publishes takes (``core/publishing.py``): a run's begin is the first, its record the
    second; counted once ``armed`` is set (at once, unless ``armed=False``)."""

    def __init__(self, start: float, *, nth: int, on: str, armed: bool = True) -> None:
        super().__init__(start)
        self.armed = threading.Event()
        if armed:
            self.armed.set()
        self.nth = nth
        self.on = on
        self.readings = 0
        self.raised = threading.Event()

    def now(self) -> float:
        caller = sys._getframe(1).f_code
        if (
            self.armed.is_set()
            and caller.co_filename.endswith("publishing.py")
            and self.on in threading.current_thread().name
        ):
            self.readings += 1
            if self.readings == self.nth:
                self.raised.set()
                raise RuntimeError("the clock broke")
        return super().now()


@pytest.mark.parametrize("on", ["worker", "loop"])
@pytest.mark.parametrize("step", ["begin", "record"])
def test_a_clock_raising_for_a_runs_event_settles_it_and_leaves_no_task_running(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture, step: str, on: str
) -> None:
    """The instant of the event a run's begin or record publishes (a listener is there)
    read off a clock that raises: the exception left the core's begin or finish half
    done.  A begin's left the task RUNNING with no run, for good; either left the entry
    unsettled (the worker's "could not start" / "could not settle"): wait_idle() false
    ever after, a drain waiting its whole timeout, and, on a shared store, no claim while
    the workers looked busy.  Now the entry is settled, and a task the step left stuck
    fails loudly (the dead letter: redrive() runs it again); one the record had moved on
    keeps its outcome."""
    clock = _GlitchPublishing(T0, nth=1 if step == "begin" else 2, on=on)
    scheduler = make_scheduler(clock=clock, workers=1, listeners=[lambda event: None])
    ran: list[int] = []

    def job() -> None:
        ran.append(1)

    async def coroutine() -> None:
        ran.append(1)

    action = job if on == "worker" else coroutine
    task = scheduler.schedule("glitch", action, OneTime(at=T0), id="glitch")
    with caplog.at_level(logging.ERROR):
        assert scheduler.wait_idle(timeout=5)
    assert clock.raised.is_set()
    assert "could not s" not in caplog.text  # neither "could not start" nor "settle"
    assert "the scheduler raised" in caplog.text and "the clock broke" in caplog.text
    if step == "begin":
        assert ran == [] and task.status is TaskStatus.FAILED
        assert scheduler.dead_letter() == [task.id] and task.runs == ()
        assert task.last_error == (
            "SchedulerError: raised beginning a run: RuntimeError: the clock broke"
        )
        assert scheduler.redrive(task.id)
        assert scheduler.wait_idle(timeout=5)
        assert ran == [1]
    else:
        assert ran == [1]
    assert task.status is TaskStatus.SUCCEEDED
    assert scheduler.shutdown(drain=True, timeout=5)


def step_raises_while_blocked(
    scheduler: Scheduler,
    clock: _GlitchPublishing,
    down: ScheduledTask,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Once ``down`` is BLOCKED on its upstream (due 10 s on), arm ``clock`` and let the
    upstream's step (its begin or its record) raise; the scheduler goes idle, and said
    it at ERROR."""
    assert scheduler.wait_idle(timeout=5)
    assert down.status is TaskStatus.BLOCKED
    clock.armed.set()
    with caplog.at_level(logging.ERROR):
        clock.advance(10)
        assert scheduler.wait_idle(timeout=5)
    assert clock.raised.is_set() and "the scheduler raised" in caplog.text


@pytest.mark.parametrize(("step", "fails"), [("begin", False), ("record", True), ("record", False)])
def test_a_runs_step_that_raised_tells_the_blocked_dependents_as_its_end_would(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture, step: str, fails: bool
) -> None:
    """A dependent BLOCKED on an upstream whose begin or record raised (the clock, read for
    the event): it hears what a normal end would tell it.  The upstream failed by the
    scheduler (begin), or by its run (record of a failed run with no retry left), is the
    dead letter, so the dependent fails (UpstreamFailed), as for a normal dead letter, and
    listeners hear the same events; an upstream whose success was recorded releases it.
    Before, the dependent stayed BLOCKED for good."""
    from lldsched import RetryPolicy

    clock = _GlitchPublishing(T0, nth=1 if step == "begin" else 2, on="worker", armed=False)
    events: list[tuple[str, TaskStatus, TaskStatus]] = []
    scheduler = make_scheduler(
        clock=clock,
        workers=1,
        listeners=[lambda e: events.append((e.task_id, e.previous, e.status))],
    )
    ran: list[str] = []

    def job() -> None:
        ran.append("up")
        if fails:
            raise ValueError("the upstream's own failure")

    up = scheduler.schedule("up", job, OneTime(at=T0 + 10), id="up", retry=RetryPolicy.never())
    down = scheduler.schedule(
        "down", lambda: ran.append("down"), OneTime(at=T0), id="down", depends_on=[up.id]
    )
    step_raises_while_blocked(scheduler, clock, down, caplog)
    if step == "record" and not fails:  # a success recorded: the dependent runs
        assert up.status is TaskStatus.SUCCEEDED
        assert down.status is TaskStatus.SUCCEEDED and ran == ["up", "down"]
        return
    assert up.status is TaskStatus.FAILED and down.status is TaskStatus.FAILED
    assert scheduler.dead_letter() == [up.id, down.id]
    assert (down.last_error or "").startswith(f"UpstreamFailed: upstream {up.id}")
    failed = [
        (task_id, previous) for task_id, previous, status in events if status is TaskStatus.FAILED
    ]
    assert failed[-1] == (down.id, TaskStatus.BLOCKED)
    if step == "begin":  # the upstream's own event: RUNNING -> FAILED, as a dead letter's
        assert failed == [(up.id, TaskStatus.RUNNING), (down.id, TaskStatus.BLOCKED)]
