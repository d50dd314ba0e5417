"""Coroutine actions: awaited on the scheduler's event loop, never recorded unawaited, their
timeouts enforced and their runs cancelled by cancel and pause."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import gc
import logging
import re
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    OneTime,
    RetryPolicy,
    RunContext,
    Scheduler,
    Simulation,
    TaskStatus,
    ValidationError,
)
from lldsched.threaded.coroutines.loopthread import START_BATCH
from tests.conftest import SchedulerFactory, settle
from tests.waits import wait_until


def loop_threads() -> list[threading.Thread]:
    named = re.compile(r"lldsched-.+-loop")  # lldsched-<the scheduler's name>-loop
    return [thread for thread in threading.enumerate() if named.fullmatch(thread.name)]


async def double(n: int) -> int:
    await asyncio.sleep(0)
    return 2 * n


async def forever(started: threading.Event, stopped: threading.Event) -> None:
    started.set()
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        stopped.set()
        raise


def test_an_async_action_runs_to_completion_and_its_record_keeps_what_it_returned(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    body_ran = threading.Event()

    async def report(n: int) -> dict[str, int]:
        await asyncio.sleep(0.01)
        body_ran.set()
        return {"rows": n}

    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("report", report, OneTime(delay=0), args=(3,))
    settle(scheduler)
    assert body_ran.is_set()
    (record,) = task.history
    assert record.ok and record.result == "{'rows': 3}"
    assert task.status is TaskStatus.SUCCEEDED


def test_a_plain_function_that_returns_a_coroutine_is_awaited_too(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    def later(n: int) -> Awaitable[int]:
        return double(n)

    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("later", later, OneTime(delay=0), args=(21,))
    settle(scheduler)
    assert task.history[0].ok and task.history[0].result == "42"


async def forgets_await(n: int) -> Awaitable[int]:
    """``return double(n)`` where ``return await double(n)`` was meant."""
    return double(n)


def test_a_coroutine_that_returns_a_coroutine_has_it_awaited_too(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    """It was recorded a success with "<coroutine object double at 0x...>", the body it
    returned never run (asyncio warned of it only when it was collected)."""

    async def twice_forgotten(n: int) -> Awaitable[Awaitable[int]]:
        return forgets_await(n)

    scheduler = make_scheduler(clock=clock)
    once = scheduler.schedule("once", forgets_await, OneTime(delay=0), args=(21,))
    twice = scheduler.schedule("twice", twice_forgotten, OneTime(delay=0), args=(4,))
    handed = scheduler.schedule("handed", lambda: forgets_await(1), OneTime(delay=0))
    settle(scheduler)
    assert [(t.history[0].ok, t.history[0].result) for t in (once, twice, handed)] == [
        (True, "42"),
        (True, "8"),
        (True, "2"),
    ]


def test_a_coroutine_a_coroutine_returned_is_cancelled_at_the_timeout_and_its_errors_fail(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    started, stopped = threading.Event(), threading.Event()

    async def returns_forever() -> Awaitable[None]:
        return forever(started, stopped)

    async def raises() -> None:
        raise ConnectionError("refused")

    async def returns_raises() -> Awaitable[None]:
        return raises()

    scheduler = make_scheduler(clock=clock)
    hung = scheduler.schedule(
        "hung", returns_forever, OneTime(delay=0), timeout=0.05, retry=RetryPolicy(max_attempts=1)
    )
    failed = scheduler.schedule(
        "failed", returns_raises, OneTime(delay=0), retry=RetryPolicy(max_attempts=1)
    )
    settle(scheduler)
    assert stopped.is_set()
    assert (hung.history[0].timed_out, hung.history[0].error) == (
        True,
        "TimeoutError: cancelled at its 0.05 s timeout",
    )
    assert failed.history[0].error == "ConnectionError: refused"


def test_in_the_simulation_a_coroutine_that_returns_a_coroutine_has_it_awaited(
    clock: FakeClock,
) -> None:
    sim = Simulation(start=clock.now())
    task = sim.schedule("once", OneTime(delay=0), action=forgets_await, args=(21,))
    sim.run(clock.now() + 1)
    assert (task.history[0].ok, task.history[0].result) == (True, "42")

    async def drive() -> None:
        sim.schedule("in-loop", OneTime(delay=0), action=forgets_await, args=(2,))
        sim.run(clock.now() + 2)

    asyncio.run(drive())  # on the simulation's loop thread: the same
    assert [r.result for r in sim.records()] == ["42", "4"]
    sim.shutdown()


def test_an_unshared_scheduler_asks_no_lease_of_a_run_handed_to_the_loop(
    make_scheduler: SchedulerFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a shared store's lease can be lost: without one, the worker that hands an
    awaitable to the loop pays no call to ask (``RunExecution._complete``)."""
    from lldsched.threaded.running import RunExecution

    asked: list[str] = []
    monkeypatch.setattr(RunExecution, "_lease_gone", lambda _, run: asked.append(run.task.id))
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("later", lambda: double(21), OneTime(delay=0))
    settle(scheduler)
    assert task.history[0].result == "42" and asked == []


def test_an_awaitable_that_raises_fails_its_run_with_the_error_and_is_retried(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    async def broken() -> None:
        await asyncio.sleep(0)
        raise ConnectionError("database restarting")

    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("broken", broken, OneTime(delay=0), retry=RetryPolicy(max_attempts=2))
    settle(scheduler)
    assert task.status is TaskStatus.RETRYING
    assert task.history[0].error == "ConnectionError: database restarting"
    clock.advance(1)  # the first backoff
    settle(scheduler)
    assert [r.attempt for r in task.history] == [1, 2] and task.status is TaskStatus.FAILED


def test_a_coroutine_over_its_timeout_is_cancelled_recorded_timed_out_and_retried(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    started, stopped = threading.Event(), threading.Event()
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule(
        "slow",
        forever,
        OneTime(delay=0),
        args=(started, stopped),
        timeout=0.05,
        retry=RetryPolicy(max_attempts=2),
    )
    settle(scheduler)
    assert stopped.is_set()  # the coroutine saw its CancelledError
    (record,) = task.history
    assert record.timed_out and record.outcome == "timed_out"
    assert record.error == "TimeoutError: cancelled at its 0.05 s timeout"
    assert task.status is TaskStatus.RETRYING and task.next_run_at == clock.now() + 1


def test_a_run_that_raises_on_its_way_out_of_its_timeout_is_recorded_with_what_it_raised(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # What a run raised as its timeout stopped it is its error, on the loop as on a
    # thread: a rollback that failed is what the engineer on call needs to read.  The
    # coroutine's record said only "TimeoutError: cancelled at its 0.05 s timeout", and its
    # retry's WARNING line carries no traceback: the rollback's failure was nowhere.
    async def rolls_back() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise ValueError("could not roll back") from None

    started = threading.Event()

    def rolls_back_on_a_thread(ctx: RunContext) -> None:
        started.set()
        ctx.wait()
        raise ValueError("could not roll back")

    scheduler = make_scheduler(clock=clock, workers=1)
    retry = RetryPolicy(max_attempts=2, initial_backoff=60, max_backoff=60)
    loop_task = scheduler.schedule("loop", rolls_back, OneTime(delay=0), timeout=0.05, retry=retry)
    thread_task = scheduler.schedule(
        "thread", rolls_back_on_a_thread, OneTime(delay=0), timeout=5, retry=retry
    )
    assert started.wait(5)
    clock.advance(5)  # the thread run's deadline (the coroutine's is on the loop's clock)
    settle(scheduler)
    for task in (loop_task, thread_task):
        (record,) = task.history
        assert (record.error, record.timed_out, record.outcome) == (
            "ValueError: could not roll back",
            True,
            "timed_out",
        ), task.name
        assert task.status is TaskStatus.RETRYING  # a timed-out attempt, retried


def test_cancelling_a_task_cancels_its_running_coroutine(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    started, stopped = threading.Event(), threading.Event()
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("long", forever, OneTime(delay=0), args=(started, stopped))
    assert started.wait(5)
    assert scheduler.cancel(task.id) is True
    settle(scheduler)
    assert stopped.is_set()
    (record,) = task.history
    assert not record.ok and record.error == "CancelledError: task cancelled"
    assert task.status is TaskStatus.CANCELLED and task.next_run_at is None


def test_removing_a_task_cancels_its_running_coroutine(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    """remove() cancels the task first, as cancel() does: its coroutine run is cancelled,
    not left running for a task nothing holds any more."""
    started, stopped = threading.Event(), threading.Event()
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("long", forever, OneTime(delay=0), args=(started, stopped))
    assert started.wait(5)
    assert scheduler.remove(task.id) is task
    settle(scheduler)
    assert stopped.is_set() and scheduler.tasks() == []
    assert not scheduler._loop_ids  # nothing kept of it (a set that grew at each removal)


def test_pausing_a_task_cancels_its_running_coroutine_and_resume_runs_the_retry(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    started, stopped = threading.Event(), threading.Event()
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("long", forever, OneTime(delay=0), args=(started, stopped))
    assert started.wait(5)
    assert scheduler.pause(task.id) is True
    settle(scheduler)
    assert stopped.is_set() and task.status is TaskStatus.PAUSED
    assert task.history[0].error == "CancelledError: task paused"
    started.clear()
    clock.advance(1)
    settle(scheduler)
    assert not started.is_set()  # paused: the retry waits for resume
    assert scheduler.resume(task.id) is True
    assert started.wait(5)  # the retry runs
    assert scheduler.cancel(task.id) is True
    settle(scheduler)
    assert [r.attempt for r in task.history] == [1, 2]


def test_coroutine_runs_do_not_hold_a_worker_while_they_await(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    arrived: list[int] = []
    everyone = asyncio.Event()  # created outside the loop: bound to it at first use

    async def meet(n: int) -> int:
        arrived.append(n)
        if len(arrived) == 50:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), 5)
        return n

    scheduler = make_scheduler(workers=1, clock=clock)
    tasks = [scheduler.schedule(f"m{n}", meet, OneTime(delay=0), args=(n,)) for n in range(50)]
    settle(scheduler)
    assert all(t.history[0].ok for t in tasks)  # fifty in flight at once on one worker


class Doubles:
    """An async callable object: its class's ``__call__`` is an ``async def``."""

    async def __call__(self, n: int) -> int:
        await asyncio.sleep(0)
        return 2 * n


# The object, and a functools.partial of it (its arguments given there): a partial of
# an ``async def`` function went to the loop, a partial of such an object still to a
# worker thread (docs/decisions/threaded.md, "An async callable object is a coroutine
# action").
DOUBLES = pytest.mark.parametrize(
    ("action", "args"),
    [(Doubles(), (21,)), (functools.partial(Doubles(), 21), ())],
    ids=["object", "partial"],
)


@DOUBLES
def test_an_async_callable_object_is_a_coroutine_action_and_holds_no_worker(
    action: Callable[..., object], args: tuple[int, ...]
) -> None:
    """An object whose ``__call__`` is ``async def`` was a thread task whose action
    returned a coroutine: each run waited for a worker to call it, so a pool busy with
    thread runs held it (here, until the thread run ended), and its record named a
    thread's lane.  It now goes to the loop as an ``async def`` function does."""
    started, released = threading.Event(), threading.Event()

    def holds_the_worker() -> None:
        started.set()
        assert released.wait(10), "never released"

    with Scheduler(workers=1, name="callable-object") as scheduler:
        try:
            scheduler.schedule("holds", holds_the_worker, OneTime(delay=0))
            assert started.wait(10)
            task = scheduler.schedule("doubles", action, OneTime(delay=0), args=args)
            wait_until(lambda: bool(task.history), timeout=5, what="its run, the worker held")
        finally:
            released.set()
    (record,) = task.history
    assert (record.result, record.worker) == ("42", 1)  # the loop's lane, past the threads


@DOUBLES
def test_in_the_simulation_an_async_callable_object_runs_on_the_coroutine_lane(
    action: Callable[..., object], args: tuple[int, ...]
) -> None:
    with Simulation(workers=1) as sim:
        task = sim.schedule("doubles", OneTime(delay=0), action=action, args=args)
        sim.run_for(1)
    (record,) = task.history
    assert (record.result, record.worker) == ("42", 1)


def test_runs_due_at_once_beyond_one_start_batch_are_all_in_flight_together(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    """The loop starts what waits START_BATCH at a time; the next go follows the first
    one's steps, not its records: runs that all wait for each other still meet."""
    n = 2 * START_BATCH + 1
    arrived: list[int] = []
    everyone = asyncio.Event()  # created outside the loop: bound to it at first use

    async def meet(k: int) -> None:
        arrived.append(k)
        if len(arrived) == n:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), 5)

    scheduler = make_scheduler(clock=clock)
    tasks = [scheduler.schedule(f"m{k}", meet, OneTime(delay=0), args=(k,)) for k in range(n)]
    settle(scheduler)
    assert all(t.history[0].ok for t in tasks)
    assert sorted(arrived) == list(range(n))


def test_max_coroutines_bounds_the_coroutine_runs_in_flight(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    running, peak = [0], [0]
    release = threading.Event()

    async def hold() -> None:
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        while not release.is_set():
            await asyncio.sleep(0.005)
        running[0] -= 1

    scheduler = make_scheduler(workers=4, clock=clock, max_coroutines=2)
    tasks = [scheduler.schedule(f"h{n}", hold, OneTime(delay=0)) for n in range(6)]
    # All six handed to the loop (two running, four waiting for a slot): the loop decided
    # what to begin; two began, and no third beside them.
    wait_until(
        lambda: running[0] == 2 and scheduler.metrics().coroutines == 6,
        timeout=5,
        what="two coroutine runs in flight and four waiting for a slot",
    )
    assert sum(task.running for task in tasks) == 2  # a run waiting for a slot is not begun
    assert peak[0] == 2
    release.set()
    settle(scheduler)
    assert peak[0] == 2 and all(t.history[0].ok for t in tasks)


def test_shutdown_cancels_coroutines_still_running_at_its_timeout_and_they_stay_due(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    started, stopped = threading.Event(), threading.Event()
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("long", forever, OneTime(delay=0), args=(started, stopped))
    assert started.wait(5)
    scheduler.shutdown(timeout=0.1)  # the coroutine outlives the timeout: it is cancelled
    assert scheduler.shutdown(timeout=5) is True  # (a second call waits for the workers)
    assert stopped.is_set() and loop_threads() == []
    assert task.history[0].error == "CancelledError: scheduler shut down"
    assert task.history[0].outcome == "cancelled"
    # Due at its slot again, its attempt unspent (before: RETRYING, its attempt spent)
    assert task.status is TaskStatus.SCHEDULED and task.attempt == 0
    assert task.next_run_at == task.history[0].due


async def deaf(started: threading.Event) -> None:
    """Swallows every cancellation: it ends only when its coroutine is closed."""
    started.set()
    while True:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)


def test_a_coroutine_deaf_to_cancellation_is_recorded_at_shutdown_and_closed_quietly(
    make_scheduler: SchedulerFactory,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Shutdown records the run it could not cancel; when the collector later closes the
    coroutine (the loop is closed by then), nothing claims it failed again and nothing
    tries to reach the closed loop ("Event loop is closed", an unraisable error)."""
    unraisable: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda hook: unraisable.append(hook.exc_value))
    started = threading.Event()
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule(
        "deaf", deaf, OneTime(delay=0), args=(started,), retry=RetryPolicy(max_attempts=1)
    )
    assert started.wait(5)
    with caplog.at_level(logging.INFO, logger="lldsched.jobs"):
        # Cancelled at half the timeout, recorded at its end; the loop is then told to
        # stop and given LOCK_GRACE (0.1 s), which a loaded host may not give it: a
        # second shutdown waits for what the first left stopping (as in
        # tests/test_shutdown_bounded.py; this failed about one loaded full run in ten).
        assert scheduler.shutdown(timeout=0.1) or scheduler.shutdown(timeout=5)
        assert [r.error for r in task.history] == ["CancelledError: scheduler shut down"]
        gc.collect()  # the pending task and its coroutine go: GeneratorExit in the run
    # Said once, as a run the shutdown stopped (its task stays due: its one attempt is
    # not spent; before, the cut sent it to the dead letter, said at ERROR), and never
    # again when the coroutine is closed.
    assert [r.getMessage() for r in caplog.records if r.name == "lldsched.jobs"] == [
        f"task {task.id} 'deaf' attempt 1 stopped: CancelledError: scheduler shut down"
    ]
    assert unraisable == []
    assert [r.error for r in task.history] == ["CancelledError: scheduler shut down"]
    assert task.status is TaskStatus.SCHEDULED and task.attempt == 0


def test_the_event_loop_starts_at_the_first_coroutine_run_and_closes_at_shutdown(
    clock: FakeClock,
) -> None:
    log = EventLog()
    scheduler = Scheduler(clock=clock, listeners=[log]).start()
    try:
        scheduler.schedule("plain", lambda: None, OneTime(delay=0))
        settle(scheduler)
        assert loop_threads() == []  # no coroutine yet, no loop
        scheduler.schedule("async", double, OneTime(delay=0), args=(1,))
        settle(scheduler)
        assert len(loop_threads()) == 1
    finally:
        assert scheduler.shutdown(timeout=5) is True
    assert loop_threads() == []


def test_a_coroutine_object_is_not_an_action_and_nothing_registered_is_lost(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock, start=False)
    kept = scheduler.schedule("kept", double, OneTime(delay=60), args=(1,))
    coroutine = double(1)
    with pytest.raises(ValidationError, match=r"action must be callable, got <coroutine"):
        scheduler.schedule("bad", coroutine, OneTime(delay=0))  # type: ignore[arg-type]
    coroutine.close()
    assert scheduler.tasks() == [kept]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "100", None])
def test_a_bad_max_coroutines_is_refused_with_its_value(bad: object) -> None:
    with pytest.raises(ValidationError, match=f"max_coroutines .*got {bad!r}"):
        Scheduler(max_coroutines=bad)  # type: ignore[arg-type]


# -- in the simulation ----------------------------------------------------------------------


def test_in_the_simulation_an_async_action_runs_at_its_simulated_instant(clock: FakeClock) -> None:
    seen: list[int] = []

    async def work(n: int) -> int:
        await asyncio.sleep(0)
        seen.append(n)
        return 2 * n

    sim = Simulation(workers=1, start=clock.now())
    sim.schedule("work", OneTime(delay=10), action=work, args=(21,), duration=5)
    sim.schedule("later", OneTime(delay=12), action=lambda: double(1), duration=0)
    sim.run(clock.now() + 60)
    second, first = sim.records()  # "later" finished first, at once
    assert seen == [21]
    assert (first.started, first.finished) == (clock.now() + 10, clock.now() + 15)
    assert first.ok and first.result == "42"
    # "work" runs on the coroutine lane, as on threads: "later" takes the free worker
    assert second.name == "later" and second.started == clock.now() + 12
    assert second.result == "2"  # a plain function's coroutine is awaited too


def test_in_the_simulation_an_awaitable_that_raises_fails_its_run(clock: FakeClock) -> None:
    async def broken() -> None:
        raise ConnectionError("refused")

    sim = Simulation(start=clock.now())
    task = sim.schedule(
        "broken", OneTime(delay=0), action=broken, retry=RetryPolicy(max_attempts=1)
    )
    sim.run(clock.now() + 1)
    assert [r.error for r in sim.records()] == ["ConnectionError: refused"]
    assert task.status is TaskStatus.FAILED


def test_in_the_simulation_a_coroutine_over_its_timeout_is_cut_at_it_and_retried(
    clock: FakeClock,
) -> None:
    async def quick() -> str:
        return "done"

    started, stopped = threading.Event(), threading.Event()
    sim = Simulation(workers=2, start=clock.now())
    long = sim.schedule(
        "long", OneTime(delay=0), action=quick, duration=30, timeout=10,
        retry=RetryPolicy(max_attempts=2, initial_backoff=5),
    )  # fmt: skip
    hung = sim.schedule(
        "hung", OneTime(delay=0), action=forever, args=(started, stopped), timeout=0.05,
        retry=RetryPolicy(max_attempts=1),
    )  # fmt: skip
    sim.run(clock.now() + 12)
    by_name = {record.name: record for record in sim.records()}
    cut = by_name["long"]
    assert cut.timed_out and cut.finished - cut.started == 10  # its worker freed at the timeout
    assert cut.error == "TimeoutError: cancelled at its 10 s timeout"
    assert long.status is TaskStatus.RETRYING and long.next_run_at == clock.now() + 15
    assert stopped.is_set() and by_name["hung"].timed_out  # cancelled after 0.05 s of wall time
    assert hung.status is TaskStatus.FAILED


def test_a_drain_runs_every_coroutine_task_due_at_shutdown(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    ran: list[int] = []

    async def note(n: int) -> None:
        await asyncio.sleep(0)
        ran.append(n)

    scheduler = make_scheduler(workers=1, clock=clock, start=False, max_coroutines=3)
    tasks = [scheduler.schedule(f"c{n}", note, OneTime(delay=0), args=(n,)) for n in range(40)]
    later = scheduler.schedule("later", note, OneTime(delay=60), args=(99,))
    scheduler.start()
    assert scheduler.shutdown(drain=True, timeout=5) is True
    assert sorted(ran) == list(range(40)) and all(t.history[0].ok for t in tasks)
    assert later.status is TaskStatus.SCHEDULED and later.history == ()


def test_shutdown_without_a_drain_leaves_coroutine_tasks_waiting_for_a_slot_scheduled(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    started, stopped = threading.Event(), threading.Event()
    scheduler = make_scheduler(clock=clock, max_coroutines=1)
    busy = scheduler.schedule("busy", forever, OneTime(delay=0), args=(started, stopped))
    assert started.wait(5)
    waiting = [scheduler.schedule(f"w{n}", double, OneTime(delay=0), args=(n,)) for n in range(5)]
    wait_until(
        lambda: scheduler.metrics().coroutines == 6,
        timeout=5,
        what="the five waiting for the one slot",
    )
    scheduler.shutdown(drain=False, timeout=0.1)
    assert scheduler.shutdown(timeout=5) is True
    assert busy.history[0].error == "CancelledError: scheduler shut down"
    assert all(t.history == () and t.status is TaskStatus.SCHEDULED for t in waiting)
    assert all(t.next_run_at == clock.now() for t in waiting)


def test_context_variables_set_by_one_run_are_not_seen_by_another(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[tuple[str, str]] = []

    async def mark(name: str, suspend: bool) -> None:
        seen.append((name, var.get()))
        var.set(name)
        if suspend:
            await asyncio.sleep(0)
            assert var.get() == name  # its own context, across the suspension

    scheduler = make_scheduler(clock=clock)
    for n in range(6):
        scheduler.schedule(f"r{n}", mark, OneTime(delay=0), args=(f"r{n}", n % 2 == 0))
    settle(scheduler)
    assert sorted(seen) == [(f"r{n}", "unset") for n in range(6)]


def test_a_run_started_after_another_finished_does_not_inherit_its_context(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: dict[str, str] = {}

    async def sets(name: str) -> None:
        seen[name] = var.get()
        var.set(name)
        await asyncio.sleep(0)

    async def reads(name: str) -> None:
        seen[name] = var.get()

    # One slot: each run starts when the one before it is recorded, from that
    # run's task (its finish schedules the next start).
    scheduler = make_scheduler(clock=clock, max_coroutines=1, start=False)
    for name, action in [("a", sets), ("b", reads), ("c", sets), ("d", sets), ("e", reads)]:
        scheduler.schedule(name, action, OneTime(delay=0), args=(name,))
    scheduler.start()
    settle(scheduler)
    assert seen == dict.fromkeys("abcde", "unset")


@pytest.mark.parametrize("refused", ["selector", "thread"])
def test_an_event_loop_that_cannot_start_leaves_nothing_counted_in_flight(
    make_scheduler: SchedulerFactory, monkeypatch: pytest.MonkeyPatch, refused: str
) -> None:
    """The event loop of the first coroutine run could not be made (its selector's file
    descriptor refused: too many open files; or its thread): the timer dies of it, and
    says so.  Its batch was counted in flight and the loop's share put in its queue
    before the loop was asked to start, the workers' share never handed out: nothing
    would ever settle them, so ``shutdown(drain=True)`` waited its whole timeout (for
    ever without one), and ``metrics()`` counted a worker busy and a coroutine in hand
    that did not exist.  Now the workers get theirs first, and the loop's entries are
    settled unbegun."""
    if refused == "selector":

        def no_loop() -> asyncio.AbstractEventLoop:
            raise OSError(24, "Too many open files")

        monkeypatch.setattr(asyncio, "new_event_loop", no_loop)
    else:
        made: list[asyncio.AbstractEventLoop] = []
        new_event_loop = asyncio.new_event_loop

        def recorded_loop() -> asyncio.AbstractEventLoop:
            made.append(new_event_loop())
            return made[-1]

        monkeypatch.setattr(asyncio, "new_event_loop", recorded_loop)

        class NoLoopThread(threading.Thread):
            def start(self) -> None:
                if self.name.endswith("-loop"):
                    raise RuntimeError("can't start new thread")
                super().start()

        monkeypatch.setattr(threading, "Thread", NoLoopThread)  # the loop's, as it is made
    clock = FakeClock(1_800_000_000.0)
    scheduler = make_scheduler(clock=clock, workers=1, start=False)
    ran = threading.Event()

    async def coroutine() -> None:
        pass

    scheduler.schedule("coro", coroutine, OneTime(at=clock.now()), id="coro")
    scheduler.schedule("thread", ran.set, OneTime(at=clock.now()), id="thread")
    scheduler.start()  # both due: one batch
    dead = lambda: scheduler.metrics(timeout=5).state == "dead"  # noqa: E731
    wait_until(dead, timeout=5, what="the timer's death")
    assert ran.wait(5)  # the workers' share was handed out
    done = lambda: scheduler.task("thread").status is TaskStatus.SUCCEEDED  # noqa: E731
    wait_until(done, timeout=5, what="the thread run's record")
    metrics = scheduler.metrics(timeout=5)
    assert metrics.busy == 0 and metrics.coroutines == 0 and metrics.handoff == 0
    assert scheduler.task("coro").status is TaskStatus.SCHEDULED  # never begun
    assert scheduler.shutdown(drain=True, timeout=5)
    if refused == "thread":  # the loop made for the thread refused: closed, not leaked
        assert made and all(loop.is_closed() for loop in made)


def test_an_awaitable_whose_event_loop_cannot_start_fails_its_run(
    make_scheduler: SchedulerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread action returned a coroutine, and the event loop it needs could not be
    made (too many open files): the worker's record raised out to the pool ("could not
    settle"), the task left RUNNING for good and its entry unsettled.  Now the run is
    recorded failed with that error, its coroutine closed unrun, and the policy decides
    what follows."""

    def no_loop() -> asyncio.AbstractEventLoop:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(asyncio, "new_event_loop", no_loop)
    clock = FakeClock(1_800_000_000.0)
    scheduler = make_scheduler(clock=clock, workers=1)

    async def body() -> None:
        pass

    def slow_then_awaits() -> Coroutine[Any, Any, None]:
        clock.advance(5)  # the action's own part takes 5 s before it returns a coroutine
        return body()

    task = scheduler.schedule(
        "awaits", slow_then_awaits, OneTime(at=clock.now()), retry=RetryPolicy.never()
    )
    settle(scheduler)
    assert task.status is TaskStatus.FAILED and scheduler.dead_letter() == [task.id]
    (record,) = task.history
    assert record.error == (
        "SchedulerStateError: the event loop could not start: OSError: "
        "[Errno 24] Too many open files"
    )
    # Ended when the loop refused it, not at its start (mutation16, running.py: the
    # refusal's `finished = self._clock.now()` dropped: recorded as taking no time)
    assert record.finished - record.started == 5
    assert scheduler.metrics(timeout=5).coroutines == 0
