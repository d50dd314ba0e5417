"""A modify (or a replace) that changes a task's timeout while its run is in flight
re-arms that run's deadline from its begin, on both runtimes alike
(docs/decisions/changing-a-task.md, "A run in flight is held to its task's timeout now"): raised or
dropped, the run gets the new budget; lowered, it is stopped at the new deadline, at once if that
passed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    ExecutionRecord,
    FakeClock,
    OneTime,
    RetryPolicy,
    RunContext,
    Scheduler,
    Simulation,
)
from lldsched.sim import fixed
from tests.conftest import T0, SchedulerFactory, settle
from tests.processes import killed_at

# name: (the timeout the run begins with, seconds into the run of the modify, the new
# timeout); every run lasts 10 s.
CASES: dict[str, tuple[float | None, float, float | None]] = {
    # begun without one: counted from the modify (nothing kept its begin), 7 s in
    "given": (None, 2.0, 5.0),
    "raised": (5.0, 2.0, 20.0),
    "lowered": (20.0, 2.0, 5.0),
    "lowered-past": (20.0, 8.0, 5.0),  # its new deadline passed at the modify
    "dropped": (5.0, 2.0, None),
}
OVER = "TimeoutError: ran 10 s, over its 5 s budget"
THREAD_RECORDS = {  # (outcome, error) both runtimes give a thread run of 10 s
    "given": ("timed_out", OVER),
    "raised": ("ok", None),
    "lowered": ("timed_out", OVER),
    "lowered-past": ("timed_out", OVER),
    "dropped": ("ok", None),
}


def simulated_thread_run(case: str) -> ExecutionRecord:
    before, at, after = CASES[case]
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule(
        "stubborn", OneTime(delay=0), duration=fixed(10), timeout=before, retry=RetryPolicy.never()
    )
    sim.at(T0 + at, lambda: sim.modify(task.id, timeout=after))
    sim.run(T0 + 30)
    (record,) = task.history
    return record


class Stubborn:
    """A thread action that ignores its flag and runs until released (its 10 s, as
    simulated): ``started`` once called, ``context`` its run's."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        self.contexts: list[RunContext] = []

    def __call__(self, ctx: RunContext) -> None:
        self.contexts.append(ctx)
        self.started.set()
        assert self.release.wait(5)

    @property
    def context(self) -> RunContext:
        assert self.started.wait(5)
        (context,) = self.contexts
        return context


def advance_past_deadlines(scheduler: Scheduler, clock: FakeClock, seconds: float) -> None:
    """Advance ``clock`` by ``seconds`` and wait until the timer has raised every flag
    whose deadline fell by then: it flags before it hands out, and a task due then ran."""
    reached = threading.Event()
    scheduler.schedule("marker", reached.set, OneTime(delay=seconds))
    clock.advance(seconds)
    assert reached.wait(5)


@pytest.mark.parametrize("case", list(CASES))
def test_a_thread_runs_flag_is_re_armed_from_its_begin_and_both_runtimes_record_alike(
    make_scheduler: SchedulerFactory, case: str
) -> None:
    # Before, the deadline armed at the run's begin stood: a raised or dropped timeout
    # still raised the flag at the old one, and the run was recorded timed_out where the
    # simulation recorded a success; a lowered one raised it at the old one, late.
    before, at, after = CASES[case]
    clock = FakeClock(T0)
    stubborn = Stubborn()
    scheduler = make_scheduler(clock=clock, workers=2)
    task = scheduler.schedule(
        "stubborn", stubborn, OneTime(delay=0), timeout=before, retry=RetryPolicy.never()
    )
    context = stubborn.context
    clock.advance(at)
    scheduler.modify(task.id, timeout=after)
    if case == "lowered-past":
        assert context.reason == "timeout"  # at once, under the modify
    advance_past_deadlines(scheduler, clock, 10 - at)  # the run is 10 s in
    timed_out = THREAD_RECORDS[case][0] == "timed_out"
    assert context.cancelled is timed_out
    assert context.reason == ("timeout" if timed_out else None)
    stubborn.release.set()
    settle(scheduler)
    (record,) = task.history
    assert (record.outcome, record.error) == THREAD_RECORDS[case]
    simulated = simulated_thread_run(case)
    assert (record.outcome, record.error, record.duration) == (
        simulated.outcome,
        simulated.error,
        simulated.duration,
    )


def test_a_flag_raised_at_once_says_the_budget_it_was_re_armed_with_whatever_came_after(
    make_scheduler: SchedulerFactory,
) -> None:
    # Lowered past its deadline the flag goes up at once; a timeout raised again after
    # that judges the run by the budget that stopped it (3 s), not the one it began with.
    clock = FakeClock(T0)
    started = threading.Event()
    contexts: list[RunContext] = []

    def patient(ctx: RunContext) -> None:
        contexts.append(ctx)
        started.set()
        assert ctx.wait(5)  # stops on its flag

    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule(
        "patient", patient, OneTime(delay=0), timeout=20, retry=RetryPolicy.never()
    )
    assert started.wait(5)
    clock.advance(3)
    scheduler.modify(task.id, timeout=3)  # its deadline is now: the flag goes up
    scheduler.modify(task.id, timeout=60)  # raised again: the flag stays up
    settle(scheduler)
    (record,) = task.history
    assert contexts[0].reason == "timeout"
    assert record.timed_out and record.error == "TimeoutError: stopped at its 3 s timeout"


def test_a_replace_that_changes_the_timeout_re_arms_the_run_in_flight(
    make_scheduler: SchedulerFactory,
) -> None:
    # The run keeps the action and arguments it began with; its deadline, like the
    # judgement at its finish, follows the definition in force.
    clock = FakeClock(T0)
    stubborn = Stubborn()
    scheduler = make_scheduler(clock=clock, workers=2)
    never = RetryPolicy.never()
    scheduler.schedule("job", stubborn, OneTime(delay=0), id="job", timeout=5, retry=never)
    context = stubborn.context
    clock.advance(2)
    task = scheduler.schedule(
        "job", stubborn, OneTime(delay=0), id="job", timeout=20, retry=never, replace_existing=True
    )
    advance_past_deadlines(scheduler, clock, 8)
    assert not context.cancelled  # its old deadline (5 s in) passed: void
    stubborn.release.set()
    settle(scheduler)
    assert [record.outcome for record in task.history] == ["ok"]


# -- coroutine runs ---------------------------------------------------------------------


def test_a_coroutine_whose_timeout_is_lowered_is_cancelled_at_the_new_one(
    make_scheduler: SchedulerFactory,
) -> None:
    # Before, its cancellation stayed armed an hour on: the run went on sleeping.
    started = threading.Event()

    async def sleeps() -> None:
        started.set()
        await asyncio.sleep(3600)

    scheduler = make_scheduler()
    task = scheduler.schedule(
        "sleeps", sleeps, OneTime(delay=0), timeout=3600, retry=RetryPolicy.never()
    )
    assert started.wait(5)
    scheduler.modify(task.id, timeout=0.001)  # passed, or about to: it is cut
    settle(scheduler)
    (record,) = task.history
    assert record.timed_out and record.error == "TimeoutError: cancelled at its 0.001 s timeout"


@pytest.mark.parametrize("after", [3600.0, None], ids=["raised", "dropped"])
def test_a_coroutine_whose_timeout_is_raised_or_dropped_runs_on_past_the_old_one(
    make_scheduler: SchedulerFactory, after: float | None
) -> None:
    # The coroutine holds the loop (a blocking wait) while the test modifies its task, so
    # its old cancellation cannot fire before the modify, then lets the loop's clock pass
    # its old deadline and yields: before, the old timer cancelled it there.
    started, release = threading.Event(), threading.Event()

    async def blocks() -> str:
        loop = asyncio.get_running_loop()
        begun = loop.time()  # after its timer was armed
        started.set()
        assert release.wait(5)  # holds the loop: no timer fires meanwhile
        while loop.time() <= begun + 0.001:  # its old deadline passes
            pass
        for _ in range(3):  # steps in which a due timer runs
            await asyncio.sleep(0)
        return "done"

    scheduler = make_scheduler()
    task = scheduler.schedule(
        "blocks", blocks, OneTime(delay=0), timeout=0.001, retry=RetryPolicy.never()
    )
    assert started.wait(5)
    scheduler.modify(task.id, timeout=after)
    release.set()
    settle(scheduler)
    (record,) = task.history
    assert (record.outcome, record.result) == ("ok", "'done'")


SIM_COROUTINE_RECORDS = {  # (outcome, error, finished - T0) of a 10 s coroutine run
    "given": ("timed_out", "TimeoutError: cancelled at its 5 s timeout", 7.0),
    "raised": ("ok", None, 10.0),
    "lowered": ("timed_out", "TimeoutError: cancelled at its 5 s timeout", 5.0),
    "lowered-past": ("timed_out", "TimeoutError: cancelled at its 5 s timeout", 8.0),
    "dropped": ("ok", None, 10.0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_in_the_simulation_a_coroutine_run_is_re_armed_as_on_threads(case: str) -> None:
    # Before, the run was cut at the timeout it started with (raised, dropped), or ran
    # its 10 s and was judged over the new one at its finish (lowered, given), where the
    # threaded runtime cancels it at its new deadline.
    before, at, after = CASES[case]

    async def job() -> None:
        return None

    sim = Simulation(workers=1, start=T0)
    task = sim.schedule(
        "job",
        OneTime(delay=0),
        action=job,
        duration=fixed(10),
        timeout=before,
        retry=RetryPolicy.never(),
    )
    sim.at(T0 + at, lambda: sim.modify(task.id, timeout=after))
    sim.run(T0 + 30)
    (record,) = task.history
    assert (record.outcome, record.error, record.finished - T0) == SIM_COROUTINE_RECORDS[case]


KILLED = "(its worker process was killed)"
SIM_PROCESS_RECORDS = {  # (outcome, error, finished - T0) of a 10 s process-isolated run
    # counted from the child's start, as the pool counts a deadline given later
    "given": ("timed_out", f"TimeoutError: stopped at its 5 s timeout {KILLED}", 5.0),
    "raised": ("ok", None, 10.0),
    "lowered": ("timed_out", f"TimeoutError: stopped at its 5 s timeout {KILLED}", 5.0),
    "lowered-past": ("timed_out", f"TimeoutError: ran 8 s, over its 5 s budget {KILLED}", 8.0),
    "dropped": ("ok", None, 10.0),
}


def simulated_process_run(case: str) -> ExecutionRecord:
    before, at, after = CASES[case]
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule(
        "held", OneTime(delay=0), isolation="process", duration=fixed(10), timeout=before,
        retry=RetryPolicy.never(),
    )  # fmt: skip
    sim.at(T0 + at, lambda: sim.modify(task.id, timeout=after))
    sim.run(T0 + 30)
    (record,) = task.history
    return record


@pytest.mark.parametrize("case", list(CASES))
def test_in_the_simulation_a_process_run_is_re_armed_from_its_start_as_its_pool_does(
    case: str,
) -> None:
    # Before, the simulation ran a process-isolated run as a thread's: to its modelled
    # end, judged by the timeout in force then, where the pool kills its child at the
    # re-armed deadline (counted from the child's start, a timeout given later too).
    record = simulated_process_run(case)
    assert (record.outcome, record.error, record.finished - T0) == SIM_PROCESS_RECORDS[case]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (5.0, 20.0, ("ok", None, 20.0)),
        (None, 5.0, ("timed_out", "TimeoutError: cancelled at its 5 s timeout", 15.0)),
    ],
    ids=["raised", "given"],
)
def test_in_the_simulation_an_awaitable_waiting_for_the_lane_is_re_armed_from_its_place(
    before: float | None, after: float, expected: tuple[str, str | None, float]
) -> None:
    # A plain function's awaitable waits for a place on the full coroutine lane (a 10 s
    # coroutine holds it); a modify meanwhile holds it to the new timeout from its place.
    async def nothing() -> None:
        return None

    sim = Simulation(workers=1, max_coroutines=1, start=T0)
    sim.schedule("hog", OneTime(delay=0), action=nothing, duration=fixed(10))
    task = sim.schedule(
        "job",
        OneTime(delay=1),  # handed over at T0 + 1: the hog holds the lane until T0 + 10
        action=lambda: nothing(),
        duration=fixed(10),
        timeout=before,
        retry=RetryPolicy.never(),
    )
    sim.at(T0 + 2, lambda: sim.modify(task.id, timeout=after))
    sim.run(T0 + 30)
    (record,) = task.history
    assert (record.outcome, record.error, record.finished - T0) == expected


# -- process-isolated runs ----------------------------------------------------------------

JOBS = "tests.process_jobs"


def until(condition: Callable[[], bool]) -> bool:
    """Poll ``condition`` (bounded, 20 s) until it holds: a child's file appears."""
    deadline = time.monotonic() + 20
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)  # the polling interval of a bounded wait, not a fixed sleep
    return True


@pytest.mark.parametrize("after", [None, 1800.0], ids=["dropped-then-lowered", "lowered-twice"])
def test_a_process_runs_child_is_killed_at_its_lowered_deadline_and_both_runtimes_say_timed_out(
    make_scheduler: SchedulerFactory, tmp_path: Path, after: float | None
) -> None:
    # Before, the worker waited on the child's pipe with the timeout it was sent with
    # (an hour): the run went on for that hour, where the simulation judged it by the
    # new timeout. Each modify wakes the wait: the last one's deadline has passed.
    marker, release = tmp_path / "pid", tmp_path / "release"
    scheduler = make_scheduler(clock=FakeClock(T0))
    task = scheduler.schedule(
        "held", f"{JOBS}:held", OneTime(delay=0), isolation="process",
        args=[str(marker), str(release)], timeout=3600, retry=RetryPolicy.never(),
    )  # fmt: skip
    assert until(marker.exists)
    scheduler.modify(task.id, timeout=after)  # the wait goes on, re-armed
    scheduler.modify(task.id, timeout=0.001)  # passed, or about to: killed
    assert until(lambda: len(task.history) == 1), "the child ran on past its new deadline"
    release.touch()  # (a failing run's child does not linger)
    (record,) = task.history
    assert record.timed_out
    assert killed_at("0.001", record.error), record.error
    assert record.outcome == simulated_process_run("lowered-past").outcome
    settle(scheduler)


@pytest.mark.parametrize("after", [3600.0, None], ids=["raised", "dropped"])
def test_a_timeout_raised_before_the_child_took_the_run_lets_it_run_on(
    make_scheduler: SchedulerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    after: float | None,
) -> None:
    # The modify comes between the run's begin and its child (no child to re-arm yet):
    # the worker holds the child to the timeout in force once it has one. Before, the
    # child was killed at the 1 ms it was begun with, and the run recorded timed_out
    # where the simulation recorded a success.
    marker, release = tmp_path / "pid", tmp_path / "release"
    scheduler = make_scheduler(clock=FakeClock(T0))
    taking, go = threading.Event(), threading.Event()
    pool = scheduler._processes
    take = pool._take

    def held(task_id: str) -> Any:  # the worker, between the run's begin and its child
        taking.set()
        assert go.wait(20)
        return take(task_id)

    monkeypatch.setattr(pool, "_take", held)
    task = scheduler.schedule(
        "held", f"{JOBS}:held", OneTime(delay=0), isolation="process",
        args=[str(marker), str(release)], timeout=0.001, retry=RetryPolicy.never(),
    )  # fmt: skip
    assert taking.wait(20)
    scheduler.modify(task.id, timeout=after)
    go.set()
    assert until(marker.exists)
    release.touch()
    assert until(lambda: len(task.history) == 1)
    (record,) = task.history
    assert (record.outcome, record.result) == ("ok", "'released'"), record.error
    case = "raised" if after else "dropped"
    simulated = simulated_process_run(case)
    assert (record.outcome, record.error) == (simulated.outcome, simulated.error)
    settle(scheduler)


def test_a_contexts_re_arm_is_read_and_written_through_its_typed_accessors() -> None:
    """The threaded timer's ``_retime`` and a run's record read what a re-arm set through
    ``RunContext._rearmed`` (None before any: the slots stay unset, nothing assigned per
    run) and write it through ``_rearm``; before, each reached into the slots with
    ``getattr`` and a default of its own."""
    context = RunContext("t", "t", 1, T0, 0)
    assert context._rearmed() is None
    context._rearm(T0 + 1, 5.0)
    assert context._rearmed() == (T0 + 1, 5.0)
    context._rearm(T0 + 1, None)  # the timeout dropped: no deadline, the begin kept
    rearmed = context._rearmed()
    assert rearmed is not None and rearmed.begun == T0 + 1 and rearmed.budget is None
