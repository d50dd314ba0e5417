"""A definition replaced (``schedule(..., id=..., replace_existing=True)``) or modified
while one of its runs is on its way: the run uses the definition in force when its
attempt began, whole (docs/decisions/changing-a-task.md, "Changing a task"), and begins where that
definition runs (a worker, a child process, the event loop).  Each test forces its
interleaving and failed before its fix."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from typing import Any

from lldsched import FakeClock, OneTime, RunContext, Scheduler, TaskStatus
from tests.waits import wait_until

WAIT = 10.0  # bound of every wait below: a failing test fails, it never hangs


class HeldBeforeTheCall(FakeClock):
    """A fake clock that holds a run between its begin (under the lock) and the action's
    call (without it): a worker reads the clock there, in ``_execute``, and the event
    loop in ``_start_waiting``; the one named ``where`` waits for the test once
    :meth:`arm` was called."""

    def __init__(self, start: float, where: str = "_execute") -> None:
        super().__init__(start)
        self._where = where
        self.reached = threading.Event()  # a worker is between begin and call
        self.go = threading.Event()  # the test let it call the action
        self._armed = False

    def arm(self) -> None:
        self._armed = True

    def now(self) -> float:
        if self._armed and sys._getframe(1).f_code.co_name == self._where:
            self._armed = False
            self.reached.set()
            assert self.go.wait(WAIT)
        return super().now()


def test_a_run_begun_before_a_replace_calls_the_old_action_with_its_old_arguments() -> None:
    # Before: the worker read the action and its arguments when it called it, after the
    # lock was let go: the replaced definition's action ran in a run begun for the old
    # one, and a replace landing between the two reads paired one's action with the
    # other's arguments.
    clock = HeldBeforeTheCall(1_000.0)
    calls: list[tuple[Any, ...]] = []

    def old(x: str) -> None:
        calls.append(("old", x))

    def new(y: int, z: int) -> None:
        calls.append(("new", y, z))

    scheduler = Scheduler(workers=1, clock=clock)
    try:
        clock.arm()
        scheduler.schedule("job", old, OneTime(delay=5), id="job", args=("x",))
        scheduler.start()
        clock.advance(5)
        assert clock.reached.wait(WAIT)  # begun: the worker is on its way to the call
        scheduler.schedule(
            "job", new, OneTime(delay=5), id="job", replace_existing=True, args=(1, 2)
        )
        clock.go.set()
        assert scheduler.wait_idle(WAIT)
        assert calls == [("old", "x")]
        task = scheduler.task("job")
        assert task.action is new and task.args == (1, 2)  # the next run's definition
    finally:
        clock.go.set()
        scheduler.shutdown(timeout=WAIT)


def test_a_replace_that_takes_a_context_is_not_called_with_the_old_runs_none() -> None:
    # Before: the run began without a context (the old action declares no ``ctx``) and
    # the new action, which declares one, was called with ``ctx=None``.
    clock = HeldBeforeTheCall(1_000.0)
    seen: list[object] = []

    def old() -> None:
        seen.append("old")

    def new(ctx: RunContext) -> None:
        seen.append(ctx)

    scheduler = Scheduler(workers=1, clock=clock)
    try:
        clock.arm()
        scheduler.schedule("job", old, OneTime(delay=5), id="job")
        scheduler.start()
        clock.advance(5)
        assert clock.reached.wait(WAIT)
        scheduler.schedule("job", new, OneTime(delay=5), id="job", replace_existing=True)
        clock.go.set()
        assert scheduler.wait_idle(WAIT)
        assert seen == ["old"]
    finally:
        clock.go.set()
        scheduler.shutdown(timeout=WAIT)


def _loop_held(scheduler: Scheduler, gate: threading.Event) -> None:
    """Take the loop's only slot (``max_coroutines=1``) until ``gate`` is set."""

    async def hog() -> None:
        await asyncio.to_thread(gate.wait, WAIT)

    held = scheduler.schedule("hog", hog, OneTime(delay=0))
    wait_until(lambda: held.running, timeout=WAIT, what="the hog to hold the slot")


def test_a_loop_tasks_entry_replaced_by_a_plain_function_runs_on_a_worker() -> None:
    # Before: the entry waiting for a loop slot began there and called the new, plain
    # action on the loop thread, blocking every coroutine run for as long as it ran.
    gate = threading.Event()
    threads: list[str] = []
    scheduler = Scheduler(name="swap", workers=1, max_coroutines=1).start()
    try:
        _loop_held(scheduler, gate)

        async def old() -> None:
            threads.append("old")

        scheduler.schedule("job", old, OneTime(delay=0), id="job")
        wait_until(
            lambda: scheduler.metrics().coroutines == 2, timeout=WAIT, what="job to wait"
        )  # the hog and the job's entry, waiting for the slot
        scheduler.schedule(
            "job",
            lambda: threads.append(threading.current_thread().name),
            OneTime(delay=0),
            id="job",
            replace_existing=True,
        )
        gate.set()
        assert scheduler.wait_idle(WAIT)
        assert threads == ["lldsched-swap-worker-0"]
        task = scheduler.task("job")
        assert task.status is TaskStatus.SUCCEEDED and task.history[0].worker == 0
    finally:
        gate.set()
        scheduler.shutdown(timeout=WAIT)


def test_a_loop_tasks_entry_replaced_by_a_process_isolated_one_runs_in_a_child() -> None:
    # Before: the loop thread called the isolated action itself, in this process.
    gate = threading.Event()
    scheduler = Scheduler(workers=1, max_coroutines=1).start()
    try:
        _loop_held(scheduler, gate)

        async def old() -> None:
            pass

        scheduler.schedule("job", old, OneTime(delay=0), id="job")
        wait_until(lambda: scheduler.metrics().coroutines == 2, timeout=WAIT, what="job to wait")
        scheduler.schedule(
            "job",
            "tests.process_jobs:pid",
            OneTime(delay=0),
            id="job",
            replace_existing=True,
            isolation="process",
        )
        gate.set()
        assert scheduler.wait_idle(WAIT)
        (record,) = scheduler.task("job").history
        assert record.ok and record.result is not None
        assert int(record.result) != os.getpid()  # a child ran it
    finally:
        gate.set()
        scheduler.shutdown(timeout=WAIT)


def test_a_thread_tasks_entry_replaced_by_an_async_def_begins_on_the_loop() -> None:
    # Before: the worker that took the entry began the attempt and called the async def
    # there: the run held a worker's number (a loop task's runs carry the loop's lane,
    # one past the workers) and its attempt began before a loop slot was free.
    gate, running = threading.Event(), threading.Event()
    scheduler = Scheduler(workers=1).start()
    try:

        def block() -> None:
            running.set()
            gate.wait(WAIT)

        scheduler.schedule("block", block, OneTime(delay=0))
        assert running.wait(WAIT)  # the only worker is busy
        scheduler.schedule("job", lambda: None, OneTime(delay=0), id="job")
        wait_until(
            lambda: scheduler.metrics().handoff == 1, timeout=WAIT, what="job to be handed off"
        )

        async def new() -> str:
            await asyncio.sleep(0)
            return "new"

        scheduler.schedule("job", new, OneTime(delay=0), id="job", replace_existing=True)
        gate.set()
        assert scheduler.wait_idle(WAIT)
        (record,) = scheduler.task("job").history
        assert record.result == "'new'"
        assert record.worker == 1  # the loop's lane: workers=1
    finally:
        gate.set()
        scheduler.shutdown(timeout=WAIT)


def test_a_coroutine_begun_before_a_modify_is_armed_with_the_timeout_the_modify_gave() -> None:
    # A modify between the run's begin and its call holds the run to the new timeout
    # (docs/decisions/changing-a-task.md, "A run in flight is held to its task's timeout now"), as
    # one after its call re-arms it.  Once, the loop read the task's timeout after the call,
    # without the lock, and a modify there went unseen by no rule; then the run was armed
    # with the timeout it began with, and a coroutine that never ends ran on an hour past
    # the 0.05 s a modify had given it.
    clock = HeldBeforeTheCall(1_000.0, where="_start_waiting")
    gate = threading.Event()

    async def stuck() -> None:
        await asyncio.to_thread(gate.wait, WAIT)

    scheduler = Scheduler(clock=clock)
    try:
        clock.arm()
        scheduler.schedule("job", stuck, OneTime(delay=5), id="job", timeout=3600)
        scheduler.start()
        clock.advance(5)
        assert clock.reached.wait(WAIT)  # begun on the loop, not called yet
        scheduler.modify("job", timeout=0.05)
        clock.go.set()
        wait_until(
            lambda: bool(scheduler.task("job").history),
            timeout=WAIT,
            what="the run to be cut at its timeout",
        )
        (record,) = scheduler.task("job").history
        assert record.timed_out and record.error is not None
        assert "0.05 s timeout" in record.error
    finally:
        clock.go.set()
        gate.set()
        scheduler.shutdown(timeout=WAIT)
