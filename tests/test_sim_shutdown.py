"""A Simulation's shutdown(): the threaded Scheduler's ending, in virtual time.

What must hold (docs/decisions/simulation.md, "The simulation's shutdown"): the rows a store
outage left stale are written once more by the same ``StoreWrites.rewrite_stale`` the
threaded shutdown uses, or named in the same warning; the runs in flight finish, a
drain runs what was due by the call and nothing later; afterwards the verbs a shut-down
``Scheduler`` refuses are refused here too, with the same error, and those that move
virtual time as well.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    OneTime,
    RetryPolicy,
    Scheduler,
    SchedulerStateError,
    Simulation,
    SqliteTaskStore,
    StoreError,
    TaskEvent,
    ValidationError,
)
from lldsched.core.metrics import Metrics
from lldsched.model import Outcome, TaskStatus
from lldsched.runtime import REFUSED_AFTER_SHUTDOWN, Controls
from lldsched.sim import fixed
from tests import jobs
from tests.conftest import T0
from tests.runtimes import KINDS, Driven
from tests.test_store_disk_full import FullDisk
from tests.waits import wait_until


def test_a_one_off_whose_finish_met_a_full_disk_is_stored_as_it_finished_by_the_shutdown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The simulation had no shutdown: a one-off whose finish met a full disk stayed
    ``running`` in the file, and the next start (a second Simulation on it) ran it again."""
    path = tmp_path / "tasks.db"
    store = FullDisk(path, failing={3})  # the one-off's finish (register, begin, finish)
    with store:
        sim = Simulation(workers=1, start=T0, store=store)
        sim.schedule("once", OneTime(delay=10), action=jobs.noop, id="once", duration=5)
        sim.run(T0 + 100)
        assert sim.task("once").status is TaskStatus.SUCCEEDED
        before = store.get("once")
        assert before is not None and before.running  # stale: no transition follows
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            assert sim.shutdown() is True
        stored = store.get("once")
    assert stored is not None and stored.status is TaskStatus.SUCCEEDED
    assert (stored.run_count, stored.running) == (1, False)
    assert "recovered" in caplog.text and "written again" in caplog.text
    assert sim.metrics().store_ok
    with SqliteTaskStore(path) as reopened:  # the next start runs nothing again
        again = Simulation(workers=1, start=T0 + 200, store=reopened)
        again.run(T0 + 300)
        assert [r for r in again.records() if r.outcome.ran] == []


def test_a_disk_still_full_at_the_shutdown_leaves_the_rows_stale_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FullDisk(tmp_path / "tasks.db", failing=range(3, 1_000))  # full from the finish
    with store:
        sim = Simulation(workers=1, start=T0, store=store)
        sim.schedule("once", OneTime(delay=0), action=jobs.noop, id="once")
        sim.run(T0 + 10)
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            assert sim.shutdown() is True
        stored = store.get("once")
    assert stored is not None and stored.running  # what a crash leaves: run again
    (said,) = [r for r in caplog.records if "stale" in r.getMessage()]
    assert said.levelno == logging.WARNING and said.name == "lldsched.scheduler"
    assert "shutdown() leaves the rows of 1 task stale" in said.getMessage()
    assert "once" in said.getMessage()


def test_a_shutdown_leaving_many_rows_stale_names_twenty_and_counts_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # (mutation15, stalerows.py: `STALE_SHOWN` moved by one, 21 named, or 19.)
    ids = [f"once-{n:02}" for n in range(23)]
    store = FullDisk(tmp_path / "tasks.db", failing=range(len(ids) + 1, 10_000))
    with store:
        sim = Simulation(workers=1, start=T0, store=store)
        for task_id in ids:
            sim.schedule(task_id, OneTime(delay=0), action=jobs.noop, id=task_id)
        sim.run(T0 + 10)
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            assert sim.shutdown() is True
    (said,) = [r for r in caplog.records if "stale" in r.getMessage()]
    text = said.getMessage()
    assert "shutdown() leaves the rows of 23 tasks stale" in text
    named = [task_id for task_id in ids if task_id in text]
    assert len(named) == 20 and "and 3 more)" in text


def scenario() -> tuple[Simulation, str, str, str]:
    """One worker: a run in flight (long, 0 to 100 s), a one-off due at 10 s waiting for
    the worker, and a one-off due at 500 s; an intervention at 50 s."""
    sim = Simulation(workers=1, start=T0)
    long = sim.schedule("long", OneTime(delay=0), duration=fixed(100)).id
    waiting = sim.schedule("waiting", OneTime(delay=10), duration=fixed(5)).id
    later = sim.schedule("later", OneTime(delay=500), duration=fixed(5)).id
    sim.at(T0 + 50, lambda: sim.pause(later))
    sim.run(T0 + 20)
    assert sim.task(long).running and sim.busy == 1
    return sim, long, waiting, later


def test_a_drain_finishes_the_runs_in_flight_and_runs_what_was_due_by_the_call() -> None:
    sim, long, waiting, later = scenario()
    assert sim.shutdown(timeout=None) is True  # (a bound: tests below)
    assert sim.now == T0 + 105  # long finished at 100, waiting ran from 100 to 105
    assert sim.task(long).status is TaskStatus.SUCCEEDED
    assert sim.task(waiting).status is TaskStatus.SUCCEEDED
    assert sim.task(later).status is TaskStatus.SCHEDULED  # due after: not run, not paused
    assert sim.busy == 0 and sim.metrics().state == "stopped"


async def _co_noop() -> None:
    return None


@pytest.mark.parametrize("lane", ["thread", "thread beside a coroutine task", "coroutine"])
def test_a_drain_runs_what_is_due_at_the_very_instant_of_the_call(lane: str) -> None:
    """A drain runs what is due at or before the call's instant: also a run due at its
    very instant, waiting for its place (the one worker, or the one place on the
    coroutine lane), on either lane."""
    sim = Simulation(workers=1, start=T0, max_coroutines=1)
    action = _co_noop if lane == "coroutine" else None
    if lane == "thread beside a coroutine task":  # starts are then picked by lane
        sim.schedule("co", OneTime(delay=10_000), action=_co_noop, duration=0)
    long = sim.schedule("long", OneTime(delay=0), action=action, duration=fixed(100)).id
    due_now = sim.schedule("due now", OneTime(delay=20), action=action, duration=fixed(5)).id
    sim.run(T0 + 20)
    assert sim.task(long).running and sim.task(due_now).status is TaskStatus.SCHEDULED
    assert sim.shutdown(timeout=None) is True
    assert sim.task(due_now).status is TaskStatus.SUCCEEDED
    assert [(r.task_id, r.started - T0) for r in sim.records()] == [(long, 0), (due_now, 100)]


def test_without_a_drain_only_the_runs_in_flight_finish() -> None:
    sim, long, waiting, later = scenario()
    assert sim.shutdown(drain=False, timeout=None) is True
    assert sim.now == T0 + 100
    assert sim.task(long).status is TaskStatus.SUCCEEDED
    assert sim.task(waiting).status is TaskStatus.SCHEDULED  # due, never started
    assert sim.task(waiting).next_run_at == T0 + 10
    assert sim.task(later).status is TaskStatus.SCHEDULED
    assert sim.shutdown() is True and sim.now == T0 + 100  # idempotent: the first's drain
    assert sim.task(waiting).status is TaskStatus.SCHEDULED


def test_a_retry_due_after_the_shutdown_instant_is_left_for_the_next_start() -> None:
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("flaky", OneTime(delay=0), duration=fixed(10), fails=1.0,
                        retry=RetryPolicy(max_attempts=3, initial_backoff=0))  # fmt: skip
    sim.run(T0 + 5)
    sim.shutdown()
    assert sim.now == T0 + 10 and len(sim.records()) == 1  # its retry, due at 10, not run
    assert sim.task(task.id).status is TaskStatus.RETRYING


def test_the_block_of_with_shuts_the_simulation_down() -> None:
    with Simulation(workers=1, start=T0) as sim:
        sim.schedule("long", OneTime(delay=0), duration=fixed(30))
        sim.run(T0 + 10)
    assert sim.now == T0 + 30 and sim.metrics().state == "stopped"
    with pytest.raises(SchedulerStateError, match="the simulation is shut down"):
        sim.run_for(1)


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"drain": 1}, r"shutdown\(\) drain must be True or False, got 1"),
        ({"timeout": -1}, r"shutdown\(\) timeout .*got -1"),
        ({"timeout": "5"}, r"shutdown\(\) timeout .*got '5'"),
    ],
)
def test_bad_shutdown_arguments_are_refused_as_the_scheduler_refuses_them(
    arguments: dict[str, Any], words: str
) -> None:
    sim = Simulation(workers=1, start=T0)
    sim.schedule("rate", FixedRate(60))
    with pytest.raises(ValidationError, match=words) as simulated:
        sim.shutdown(**arguments)
    with pytest.raises(ValidationError) as threaded:
        Scheduler(workers=1).shutdown(**arguments)
    assert str(simulated.value) == str(threaded.value)
    assert sim.metrics().state == "running"  # nothing changed
    sim.run(T0 + 60)


def test_a_shutdown_while_a_running_scheduler_holds_the_store_is_refused(
    tmp_path: Path,
) -> None:
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        sim = Simulation(workers=1, start=T0, store=store)
        scheduler = Scheduler(workers=1, store=store).start()
        try:
            with pytest.raises(StoreError, match=r"cannot shutdown\(\) through it"):
                sim.shutdown()
        finally:
            assert scheduler.shutdown(timeout=5)
        assert sim.metrics().state == "running"  # nothing changed
        assert sim.shutdown()


Verb = Callable[[Driven, str], object]  # a verb called on a runtime with a task id
# Every verb that changes what is registered, with what each is given.  Those of
# REFUSED_AFTER_SHUTDOWN are refused after a shutdown; the others keep the books (a
# durable store keeps them for the next process).  Run in this order: the kept ones
# after the refused ones, `remove` last.
VERBS: dict[str, Verb] = {
    "schedule": lambda driven, task_id: driven.add("again", FixedRate(60)),
    "reschedule": lambda driven, task_id: driven.runtime.reschedule(task_id, FixedRate(30)),
    "run_now": lambda driven, task_id: driven.runtime.run_now(task_id),
    "resume": lambda driven, task_id: driven.runtime.resume(task_id),
    "redrive": lambda driven, task_id: driven.runtime.redrive(task_id),
    "pause": lambda driven, task_id: driven.runtime.pause(task_id),
    "modify": lambda driven, task_id: driven.runtime.modify(task_id, priority=1),
    "cancel": lambda driven, task_id: driven.runtime.cancel(task_id),
    "remove": lambda driven, task_id: driven.runtime.remove(task_id),
}


def end(runtime: Scheduler | Simulation, how: str) -> bool:
    """``runtime.shutdown()`` or ``await runtime.aclose()``, the scheduler's bounded."""
    timeout = 5 if isinstance(runtime, Scheduler) else None  # (simulated: to its end)
    if how == "aclose":
        return asyncio.run(runtime.aclose(timeout=timeout))
    return runtime.shutdown(timeout=timeout)


def test_every_verb_that_changes_a_registration_is_either_refused_or_kept() -> None:
    """A control verb added to the protocol fails here until it is put in
    REFUSED_AFTER_SHUTDOWN (and refused by both runtimes) or named kept."""
    controls = {name for name in dir(Controls) if not name.startswith("_")}
    assert set(VERBS) == controls | {"schedule"}
    assert set(VERBS) > REFUSED_AFTER_SHUTDOWN


@pytest.mark.parametrize("how", ["shutdown", "aclose"])
@pytest.mark.parametrize("kind", KINDS)
def test_after_shutdown_both_runtimes_refuse_and_keep_the_same_verbs(kind: str, how: str) -> None:
    driven = Driven(kind)
    task = driven.add("rate", FixedRate(60))
    driven.run_until(T0 + 30)
    runtime = driven.runtime
    assert end(runtime, how) is True
    who = "scheduler" if kind == "threaded" else "simulation"
    for verb, call in VERBS.items():
        if verb in REFUSED_AFTER_SHUTDOWN:
            subject = "again" if verb == "schedule" else task.id
            with pytest.raises(SchedulerStateError, match=f"cannot {verb} {subject!r}: the {who}"):
                call(driven, task.id)
            assert runtime.task(task.id).status is TaskStatus.SCHEDULED  # nothing changed
        else:
            call(driven, task.id)  # no error
    assert runtime.tasks() == [] and runtime.metrics().state == "stopped"


@pytest.mark.parametrize(
    ("first", "second"),
    [("shutdown", "aclose"), ("aclose", "aclose"), ("aclose", "shutdown")],
)
@pytest.mark.parametrize("kind", KINDS)
def test_a_second_end_by_either_verb_is_harmless_on_both_runtimes(
    kind: str, first: str, second: str
) -> None:
    """As a second ``shutdown()`` is: it returns True and changes nothing."""
    driven = Driven(kind)
    task = driven.add("rate", FixedRate(60))
    driven.run_until(T0 + 30)
    assert end(driven.runtime, first) is True
    assert end(driven.runtime, second) is True
    assert not driven.runtime.running and driven.runtime.metrics().state == "stopped"
    assert driven.runtime.task(task.id).status is TaskStatus.SCHEDULED


def test_async_with_ends_either_runtime_on_leaving_the_block() -> None:
    """The same ``async with`` over both runtimes: a scheduler's entry starts it, a
    simulation runs from construction; leaving the block is ``aclose()`` on both."""
    made: list[Scheduler | Simulation] = []

    async def use(runtime: Scheduler | Simulation) -> None:
        async with runtime as entered:
            assert entered is runtime and entered.running
            made.append(entered)

    asyncio.run(use(Scheduler(workers=1)))
    asyncio.run(use(Simulation(workers=1, start=T0)))
    for runtime in made:
        assert not runtime.running and runtime.metrics().state == "stopped"
        with pytest.raises(SchedulerStateError, match="is shut down"):
            runtime.run_now("any")


def test_a_simulation_s_aclose_drains_as_its_shutdown_does() -> None:
    """``drain`` means the same in both forms: with it, the run in flight and those due
    by the call; without it, the run in flight only."""
    for drain in (True, False):
        ended: list[list[tuple[str, float]]] = []
        for how in ("shutdown", "aclose"):
            sim = Simulation(workers=1, start=T0)
            sim.schedule("long", OneTime(delay=0), duration=fixed(100))
            sim.schedule("waits", OneTime(delay=10), duration=fixed(5))
            sim.run(T0 + 50)
            if how == "aclose":
                assert asyncio.run(sim.aclose(drain=drain, timeout=None)) is True
            else:
                assert sim.shutdown(drain=drain, timeout=None) is True
            ended.append([(r.name, r.finished - T0) for r in sim.records()])
        assert ended[0] == ended[1]
        assert ended[0] == ([("long", 100), ("waits", 105)] if drain else [("long", 100)])


def test_a_bad_aclose_argument_is_refused_as_the_scheduler_refuses_it() -> None:
    sim = Simulation(workers=1, start=T0)
    sim.schedule("rate", FixedRate(60))
    with pytest.raises(ValidationError) as simulated:
        asyncio.run(sim.aclose(timeout=-1))
    with pytest.raises(ValidationError) as threaded:
        asyncio.run(Scheduler(workers=1).aclose(timeout=-1))
    assert str(simulated.value) == str(threaded.value)
    assert sim.running  # nothing changed
    sim.run(T0 + 60)


@pytest.mark.parametrize("kind", KINDS)
def test_running_is_what_metrics_state_says_on_both_runtimes_and_false_after_shutdown(
    kind: str,
) -> None:
    """A simulation had no ``running``: code over either runtime read the scheduler's
    and met an AttributeError on a simulation.  It is True from construction (a
    simulation needs no start) until ``shutdown()``, as its ``metrics().state`` said."""
    driven = Driven(kind)
    runtime = driven.runtime
    driven.add("rate", FixedRate(60))
    driven.run_until(T0 + 30)
    assert runtime.running and runtime.metrics().state == "running"
    if isinstance(runtime, Scheduler):
        assert runtime.shutdown(timeout=5)
    else:
        assert runtime.shutdown()
    assert not runtime.running and runtime.metrics().state == "stopped"
    assert not runtime.running  # final: a second read, as a second shutdown, agrees


def test_a_simulation_is_running_from_construction_as_its_metrics_say() -> None:
    sim = Simulation(workers=1, start=T0)
    assert sim.running and sim.metrics().state == "running"
    with pytest.raises(AttributeError):
        sim.running = False  # type: ignore[misc]
    sim.shutdown(drain=False)
    assert not sim.running


def test_a_simulation_s_shutdown_takes_no_flag_by_position_and_changes_nothing() -> None:
    """``Scheduler.shutdown(False)`` still works for 0.1.x, with a DeprecationWarning; a
    simulation's ``shutdown`` came after that deprecation, keyword-only, so it has no
    old form to keep (docs/UPGRADING.md, "Deprecated call forms")."""
    sim = Simulation(workers=1, start=T0)
    sim.schedule("rate", FixedRate(60))
    with pytest.raises(TypeError, match=r"Simulation\.shutdown\(\) takes 1 positional"):
        sim.shutdown(False)  # type: ignore[call-arg]
    assert sim.running
    sim.run(T0 + 60)  # not shut down: it runs on


def test_after_shutdown_nothing_moves_virtual_time() -> None:
    sim = Simulation(workers=1, start=T0)
    sim.schedule("rate", FixedRate(60))
    sim.shutdown()
    refusals: dict[str, Callable[[], object]] = {
        f"run until {T0 + 60!r}": lambda: sim.run(T0 + 60),
        "run for 60": lambda: sim.run_for(60),
        "step": sim.step,
        f"register an intervention at {T0 + 60!r}": lambda: sim.at(T0 + 60, print),
    }
    for words, call in refusals.items():
        with pytest.raises(SchedulerStateError) as refused:
            call()
        assert str(refused.value) == f"cannot {words}: the simulation is shut down (at {T0!r})"
    assert sim.now == T0


# ------------------------------------------- the timeout: a bound on the simulated drain
#
# docs/decisions/simulation.md, "A simulation's shutdown timeout bounds its drain in simulated
# time".


@pytest.mark.parametrize(
    ("timeout", "finished", "waited"),
    [
        (5, False, TaskStatus.SCHEDULED),  # out of time at 25: "long" runs on to 100
        (80, False, TaskStatus.SUCCEEDED),  # at 100 "waiting" starts, runs past 100
        (85, True, TaskStatus.SUCCEEDED),  # all ended by 105
        (None, True, TaskStatus.SUCCEEDED),
    ],
)
def test_a_timeout_bounds_the_drain_in_simulated_time(
    timeout: float | None, finished: bool, waited: TaskStatus
) -> None:
    """It was checked and unused: every drain ran to its end and returned True. Now what
    has not started by ``timeout`` simulated seconds after the call does not start, and
    the result is False when a run goes on past it (a thread run is never cut)."""
    sim, long, waiting, later = scenario()  # at 20: "long" 0-100, "waiting" due at 10
    assert sim.shutdown(timeout=timeout) is finished
    assert sim.task(long).status is TaskStatus.SUCCEEDED  # a thread run always finishes
    assert sim.task(waiting).status is waited
    if waited is TaskStatus.SCHEDULED:
        assert sim.task(waiting).next_run_at == T0 + 10  # due, left for the next start
    assert sim.task(later).status is TaskStatus.SCHEDULED
    assert sim.busy == 0 and sim.now == T0 + (100 if waited is TaskStatus.SCHEDULED else 105)


async def returns_at_once() -> None:
    pass


def returns_an_awaitable() -> Any:
    return returns_at_once()


@pytest.mark.parametrize("action", [returns_at_once, returns_an_awaitable], ids=["async", "plain"])
@pytest.mark.parametrize("drain", [True, False])
def test_a_coroutine_run_in_flight_at_the_timeout_is_cancelled_then(
    action: Callable[[], Any], drain: bool
) -> None:
    """As the threaded shutdown cancels it: recorded ``CancelledError: scheduler shut
    down`` (cancelled) at the timeout, its task due at its slot again; one waiting for
    a place on the lane (a plain function's awaitable) ends then too, never begun
    there."""
    sim = Simulation(workers=2, start=T0, max_coroutines=1)
    retry = RetryPolicy(max_attempts=2, initial_backoff=1)
    first = sim.schedule("first", OneTime(delay=0), action=action, duration=fixed(100), retry=retry)
    second = sim.schedule("second", OneTime(delay=1), action=action, duration=fixed(5))
    sim.run(T0 + 20)
    assert sim.shutdown(drain=drain, timeout=5) is True  # nothing outlives the timeout
    expected = [("first", 0, 25, "CancelledError: scheduler shut down")]
    if action is returns_an_awaitable:  # handed over at 1, waiting for the lane's place
        expected.append(("second", 1, 25, "CancelledError: scheduler shut down"))
    records = [(r.name, r.started - T0, r.finished - T0, r.error) for r in sim.records()]
    assert records == expected
    # Due again at its slot, its attempt unspent (before: RETRYING, its retry due at 26)
    assert (sim.task(first.id).status, sim.task(first.id).next_run_at) == (
        TaskStatus.SCHEDULED, T0)  # fmt: skip
    assert sim.task(first.id).attempt == 0
    if action is returns_at_once:  # due at 1, waiting for the lane's place: left due
        assert (sim.task(second.id).status, sim.task(second.id).next_run_at) == (
            TaskStatus.SCHEDULED, T0 + 1)  # fmt: skip
    assert sim.now == T0 + 25 and sim.busy == 0


@pytest.mark.parametrize("what", ["thread", "coroutine"])
@pytest.mark.parametrize("kind", KINDS)
def test_both_runtimes_end_a_drain_out_of_time_alike(kind: str, what: str) -> None:
    """A run in flight that outlives the timeout, and a run of the same kind waiting for
    its worker (or its place on the coroutine lane): the waiting one is left due on
    both; a thread run goes on (the result is False), a coroutine run is cancelled."""
    released = threading.Event()
    started = threading.Event()

    def blocks() -> None:
        started.set()
        released.wait(30)

    async def awaits() -> None:
        started.set()
        await asyncio.sleep(3600)

    log = EventLog()
    simulated: dict[str, Any] = {"duration": fixed(100)} if kind == "simulated" else {}
    runtime: Scheduler | Simulation = (
        Simulation(workers=1, start=T0, listeners=[log], max_coroutines=1) if simulated
        else Scheduler(workers=1, listeners=[log], max_coroutines=1)
    )  # fmt: skip
    # The simulation calls its actions for real, at once: its runs take their duration.
    actions = {"threaded": {"thread": blocks, "coroutine": awaits},
               "simulated": {"thread": jobs.noop, "coroutine": returns_at_once}}  # fmt: skip
    once = RetryPolicy(max_attempts=1)
    try:
        for name in ("long", "waits"):
            runtime.schedule(name, schedule=OneTime(delay=0), action=actions[kind][what],
                             retry=once, **simulated)  # fmt: skip
        if isinstance(runtime, Scheduler):
            runtime.start()
            assert started.wait(10)
        else:
            runtime.run(T0 + 10)
        result = runtime.shutdown(timeout=0.5)
    finally:
        released.set()
    if isinstance(runtime, Scheduler):
        assert runtime.shutdown(timeout=10)  # the released run ends
    records = [(r.name, r.outcome.value, r.error) for r in (e.record for e in log.events) if r]
    statuses = sorted((task.name, task.status.value) for task in runtime.tasks())
    assert (result, records, statuses) == (
        (False, [("long", "ok", None)], [("long", "succeeded"), ("waits", "scheduled")])
        if what == "thread"
        # A cut coroutine run does not spend its attempt (before: "failed", dead-lettered)
        else (True, [("long", "cancelled", "CancelledError: scheduler shut down")],
              [("long", "scheduled"), ("waits", "scheduled")])
    )  # fmt: skip


def load(runtime: Scheduler | Simulation) -> tuple[int, int, int]:
    """``metrics()``'s busy workers, hand-off queue and coroutine count."""
    metrics = runtime.metrics()
    return metrics.busy, metrics.handoff, metrics.coroutines


@pytest.mark.parametrize("drain", [False, True], ids=["no drain", "drain out of time"])
@pytest.mark.parametrize("kind", KINDS)
def test_metrics_after_a_shutdown_that_left_work_due_read_as_the_scheduler_s(
    kind: str, drain: bool
) -> None:
    """One worker, one place on the coroutine lane: a thread run in flight past the
    timeout, a thread task and two coroutine tasks due behind it (one on the lane, one
    waiting for its place), a retry pending, a task paused.  The simulation went on
    counting the coroutine entries left due in ``coroutines`` after its shutdown, as
    waiting for the loop; the scheduler reads 0 there, its loop closed
    (docs/decisions/simulation.md, "What a simulation's metrics read after its shutdown")."""
    clock = FakeClock(T0)
    runtime: Scheduler | Simulation
    modelled: dict[str, dict[str, Any]] = {}  # the simulation's durations, by task
    if kind == "threaded":
        scheduler = Scheduler(workers=1, clock=clock, max_coroutines=1)

        def hold() -> None:  # until the shutdown closed the hand-off queue: nothing more
            wait_until(lambda: scheduler._pool._closed, timeout=10, what="the pool closed")

        async def on_the_lane() -> None:
            await asyncio.sleep(3600)

        runtime = scheduler
        actions: dict[str, Callable[[], Any]] = {"hold": hold, "coroutine": on_the_lane}
    else:  # the simulation calls its actions at once: its runs take their duration
        runtime = Simulation(workers=1, start=T0, max_coroutines=1)
        modelled = {"hold": {"duration": fixed(100)}, "c1": {"duration": fixed(3600)}}
        actions = {"hold": jobs.noop, "coroutine": returns_at_once}
    later = RetryPolicy(max_attempts=3, initial_backoff=1000, max_backoff=1000)
    registered: list[tuple[str, Callable[[], Any], int, dict[str, Any]]] = [
        ("flaky", jobs.broken, 0, {"retry": later}),
        ("hold", actions["hold"], 0, {}),
        ("t1", jobs.noop, 10, {}),
        ("c1", actions["coroutine"], 10, {}),
        ("c2", actions["coroutine"], 10, {}),
        ("paused", jobs.noop, 5, {}),
    ]
    for name, action, delay, options in registered:
        options = {**options, **modelled.get(name, {})}
        runtime.schedule(name, schedule=OneTime(delay=delay), action=action, id=name, **options)
    runtime.pause("paused")
    if isinstance(runtime, Scheduler):
        runtime.start()
        wait_until(lambda: runtime.task("flaky").status is TaskStatus.RETRYING, timeout=10,
                   what="flaky's failure")  # fmt: skip
        clock.set(T0 + 20)
        # c1 begun on the lane, not only handed to the loop (coroutines counts both): under
        # load it was still waiting there at the shutdown, and stayed scheduled.
        wait_until(lambda: load(runtime) == (1, 1, 2)
                   and runtime.task("c1").status is TaskStatus.RUNNING, timeout=10,
                   what="hold on the worker, t1 handed out, c1 and c2 on the loop")  # fmt: skip
    else:
        runtime.run(T0 + 20)
        assert load(runtime) == (1, 0, 2)  # (t1 waits in the heap: no hand-off queue)
    runtime.shutdown(drain=drain, timeout=0.5)
    if isinstance(runtime, Scheduler):
        assert runtime.shutdown(timeout=10)  # the hold, released by the close, ends
    statuses = {task.id: task.status for task in runtime.tasks()}
    assert statuses == {"flaky": TaskStatus.RETRYING, "hold": TaskStatus.SUCCEEDED,
                        "t1": TaskStatus.SCHEDULED, "c1": TaskStatus.SCHEDULED,
                        "c2": TaskStatus.SCHEDULED, "paused": TaskStatus.PAUSED}  # fmt: skip
    metrics = runtime.metrics()
    same = metrics._replace(at=0.0, timer_woke=None, queued=0, lag=0.0)  # read apart below
    assert same == Metrics(at=0.0, state="stopped", timer_alive=False, timer_woke=None,
                           workers=1, busy=0, handoff=0, coroutines=0, queued=0, lag=0.0,
                           tasks=6, dead_letter=0,
                           outcomes={**{o: 0 for o in Outcome}, Outcome.OK: 1, Outcome.FAILED: 1,
                                     Outcome.CANCELLED: 1},
                           dropped_events=0, store_ok=True)  # fmt: skip
    # One rule: every entry left due is in the heap after the shutdown, t1 and c2 (late
    # since 10) beside the retry.  The scheduler dropped those it had handed out (t1
    # to the hand-off queue, c2 to the loop) and read 2 queued, no lag, pending() without
    # them: a split the hand-off queue's size decided; the simulation has none.  c1, which
    # the shutdown cut, is due at its slot (10) again, its attempt unspent, and queued
    # there as it was cut, after t1 and c2 (core/runs.py, _due_again): due, so listed as
    # due.  Before, it was queued as a retry (RETRYING); then due but not queued (3).
    now = runtime.now if isinstance(runtime, Simulation) else clock.now()
    assert (metrics.queued, metrics.lag) == (4, now - (T0 + 10))
    assert runtime.queue_stats() == (4, 0)
    assert [task.id for task in runtime.pending()] == ["t1", "c2", "c1", "flaky"]
    assert (runtime.task("c1").next_run_at, runtime.task("c1").attempt) == (T0 + 10, 0)


@pytest.mark.parametrize("caller", ["intervention", "listener", "action"])
def test_a_shutdown_made_inside_run_ends_it_there_and_nothing_starts_after(caller: str) -> None:
    """``sim.at(t, sim.shutdown)`` (or a listener's, or an action's shutdown) drained and
    stopped the simulation, and then the ``run()`` it was made in went on with its loop:
    every slot up to ``until`` started and ran after the shutdown, the clock moved on to
    ``until``, and a run an action's shutdown was made in was left in flight for good."""
    T = T0
    stopped: list[bool] = []

    def stop() -> None:
        if not stopped:
            stopped.append(sim.shutdown(timeout=None))

    def on_event(event: TaskEvent) -> None:
        if event.record is not None:
            stop()

    listeners = [on_event] if caller == "listener" else []
    sim = Simulation(workers=2, start=T, listeners=listeners)
    if caller == "action":
        sim.schedule("stops", OneTime(delay=12), action=stop, duration=fixed(2))
    task = sim.schedule("rate", FixedRate(10), duration=fixed(3))
    if caller == "intervention":
        sim.at(T + 12, stop)
    sim.run(T + 100)
    assert stopped == [True] and not sim.running
    ends = {"intervention": 13, "listener": 3, "action": 14}[caller]
    assert sim.now == T + ends  # where the shutdown left it, not at until
    starts = [r.started - T for r in task.history]
    assert starts == ([0] if caller == "listener" else [0, 10])
    assert all(t.status is not TaskStatus.RUNNING for t in sim.tasks()) and sim.busy == 0
    with pytest.raises(SchedulerStateError):
        sim.run(T + 200)
