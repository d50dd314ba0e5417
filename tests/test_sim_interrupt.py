"""Ctrl-C in a simulation: a ``KeyboardInterrupt`` raised from an action, a listener or an
intervention while ``run()``, ``step()`` or ``shutdown()`` processes events.

What must hold (docs/decisions/simulation.md, "Ctrl-C in a simulation"): it reaches the caller once
the event it was raised in is whole, from the call that processed that event; the
simulation is left at that event's instant, every read consistent (no run begun and never
to finish, no worker held); and the caller can go on (``run`` again, the interrupted
attempt recorded failed and retried by its policy) or shut it down cleanly.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable
from typing import Any

import pytest

from lldsched import (
    ExecutionRecord,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    RetryPolicy,
    TaskEvent,
    TaskSnapshot,
)
from lldsched.model import TaskStatus
from lldsched.sim import Simulation, fixed

T = 1_000_000.0
CTRL_C = "KeyboardInterrupt: Ctrl-C"


def interrupts() -> None:
    raise KeyboardInterrupt("Ctrl-C")


async def interrupts_awaited() -> None:
    raise KeyboardInterrupt("Ctrl-C")


def hands_over_an_interrupt() -> Any:
    return interrupts_awaited()


ACTIONS: dict[str, Callable[[], Any]] = {
    "function": interrupts,
    "coroutine": interrupts_awaited,
    "plain function's awaitable": hands_over_an_interrupt,
}


def interrupting_once(on: str) -> tuple[list[TaskEvent], Callable[[TaskEvent], None]]:
    """A listener that raises Ctrl-C the first time it hears ``on`` ("running": a run's
    start; "finished": its record), and the events it raised it on."""
    heard: list[TaskEvent] = []

    def listener(event: TaskEvent) -> None:
        kind = "finished" if event.record is not None else event.status.value
        if kind == on and not heard:
            heard.append(event)
            raise KeyboardInterrupt("Ctrl-C")

    return heard, listener


def seen(sim: Simulation) -> list[tuple[str, float, float, str | None]]:
    return [(r.name, r.started - T, r.finished - T, r.error) for r in sim.records()]


@pytest.mark.parametrize("then", ["run on", "shut down"])
@pytest.mark.parametrize("kind", list(ACTIONS))
def test_an_actions_ctrl_c_leaves_a_simulation_to_read_then_run_on_or_shut_down(
    kind: str, then: str
) -> None:
    sim = Simulation(workers=1, start=T)
    retry = RetryPolicy(max_attempts=2, initial_backoff=10)
    task = sim.schedule("stops", OneTime(delay=5), action=ACTIONS[kind], retry=retry)
    other = sim.schedule("other", FixedRate(20), duration=fixed(3))
    with pytest.raises(KeyboardInterrupt, match="Ctrl-C"):
        sim.run(T + 100)
    # Read: at the instant it was raised, the attempt recorded failed, nothing held.
    assert sim.now == T + 5 and sim.busy == 0 and sim.running
    assert seen(sim) == [("other", 0, 3, None), ("stops", 5, 5, CTRL_C)]
    assert sim.task(task.id).status is TaskStatus.RETRYING
    assert sim.task(task.id).next_run_at == T + 15
    metrics = sim.metrics()
    assert (metrics.busy, metrics.coroutines, metrics.state) == (0, 0, "running")
    if then == "run on":  # its retry is interrupted again; then the rest goes on as due
        with pytest.raises(KeyboardInterrupt):
            sim.run(T + 100)
        assert sim.now == T + 15 and sim.task(task.id).status is TaskStatus.FAILED
        sim.run(T + 100)
        assert [r.started - T for r in sim.task(other.id).history] == [0, 20, 40, 60, 80]
    else:
        assert sim.shutdown(timeout=None) is True
        assert sim.now == T + 5 and sim.task(task.id).status is TaskStatus.RETRYING
        assert seen(sim) == [("other", 0, 3, None), ("stops", 5, 5, CTRL_C)]


def test_an_interventions_ctrl_c_stops_run_at_its_instant_and_run_goes_on() -> None:
    sim = Simulation(workers=1, start=T)
    task = sim.schedule("rate", FixedRate(10), duration=fixed(4))
    sim.at(T + 12, interrupts)
    with pytest.raises(KeyboardInterrupt):
        sim.run(T + 100)
    assert sim.now == T + 12 and sim.busy == 1 and sim.task(task.id).running
    sim.run(T + 35)  # the run in flight finishes at 14: nothing half done
    assert [(r.started - T, r.finished - T) for r in task.history] == [
        (0, 4), (10, 14), (20, 24), (30, 34),
    ]  # fmt: skip
    assert sim.shutdown() is True


@pytest.mark.parametrize("on", ["running", "finished"])
def test_a_listeners_ctrl_c_is_raised_by_the_step_that_heard_it(on: str) -> None:
    """It was raised by the next call instead: ``step()`` returned as if nothing had
    happened, and a caller that then shut the simulation down never saw it (the shutdown
    dropped it with the interventions)."""
    heard, listener = interrupting_once(on)
    sim = Simulation(workers=1, start=T, listeners=[listener])
    task = sim.schedule("rate", FixedRate(10), duration=fixed(4))
    if on == "finished":
        step = sim.step()
        assert step is not None and step.kind == "start"
    with pytest.raises(KeyboardInterrupt):
        sim.step()  # the start at 0, or the finish at 4, whole
    assert len(heard) == 1 and sim.task(task.id).running is (on == "running")
    assert sim.now == T + (0 if on == "running" else 4)
    # Nothing left to raise it again: the next step is the next event.
    step = sim.step()
    assert step is not None and step.kind == ("finish" if on == "running" else "start")
    sim.run(T + 25)
    assert [(r.started - T, r.finished - T) for r in task.history] == [(0, 4), (10, 14), (20, 24)]
    assert sim.shutdown() is True


def test_a_listeners_ctrl_c_in_a_drain_stops_the_shutdown_and_a_second_one_finishes_it() -> None:
    calls: list[str] = []

    def listener(event: TaskEvent) -> None:
        if event.record is not None and event.record.name == "long" and not calls:
            calls.append("interrupted")
            raise KeyboardInterrupt("Ctrl-C")

    sim = Simulation(workers=1, start=T, listeners=[listener])
    sim.schedule("long", OneTime(delay=0), duration=fixed(10))
    waits = sim.schedule("waits", OneTime(delay=1), duration=fixed(5))
    sim.run(T + 2)
    with pytest.raises(KeyboardInterrupt):
        sim.shutdown(timeout=None)
    assert sim.now == T + 10 and not sim.running and sim.busy == 0
    assert sim.task(waits.id).status is TaskStatus.SCHEDULED  # not started yet
    assert sim.shutdown(timeout=None) is True  # finishes the drain the first began
    assert sim.task(waits.id).status is TaskStatus.SUCCEEDED and sim.now == T + 15


def test_a_ctrl_c_while_a_coroutine_awaits_cancels_it_and_the_next_run_is_clean() -> None:
    """A Ctrl-C that arrives while the private loop runs a coroutine (here a callback on
    that loop raises it, as a signal would land in the loop's wait) left the coroutine
    pending on the loop: the next coroutine run resumed it, and its body ran on after
    the attempt had been recorded failed."""
    went_on: list[str] = []

    async def long_wait() -> None:
        asyncio.get_running_loop().call_soon(interrupts)
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            went_on.append("cancelled")
            raise
        went_on.append("went on")

    async def waits_longer() -> None:
        await asyncio.sleep(0.2)

    sim = Simulation(workers=1, start=T)
    sim.schedule("stops", OneTime(delay=0), action=long_wait, retry=RetryPolicy(max_attempts=1))
    sim.schedule("later", OneTime(delay=10), action=waits_longer)
    with pytest.raises(KeyboardInterrupt):
        sim.run(T + 100)
    assert seen(sim) == [("stops", 0, 0, CTRL_C)]
    assert went_on == ["cancelled"]  # cancelled there and then
    sim.run(T + 100)
    assert went_on == ["cancelled"]
    assert sim.shutdown() is True


def busy_instant(sim: Simulation, calls: list[str]) -> tuple[str, str]:
    """Two tasks on two workers both finishing at 4, where an intervention is due too
    and a third task (due at 4) waits to start: the ids of the two that finish."""
    first = sim.schedule("first", OneTime(delay=0), duration=fixed(4), id="first")
    second = sim.schedule("second", OneTime(delay=0), duration=fixed(4), id="second")
    sim.schedule("third", OneTime(delay=4), duration=fixed(1), id="third")
    sim.schedule("rate", FixedRate(2), duration=fixed(1), id="rate")
    sim.at(T + 4, lambda: calls.append("intervention"))
    return first.id, second.id


def replay(heard: list[TaskEvent]) -> list[tuple[str, str, float]]:
    return [(e.task_id, e.status.value, e.at - T) for e in heard]


def test_a_listeners_ctrl_c_stops_run_after_its_event_not_after_the_instant() -> None:
    """It waited for the other finishes and the interventions at its instant (it was
    raised by an intervention pushed there); and the listeners after the one that raised
    did not hear the event.  Now the event it heard is made whole (every listener hears
    it), nothing more happens, and a second ``run()`` gives what an uninterrupted one
    gives."""
    calls: list[str] = []
    heard, interrupting = interrupting_once("finished")
    after: list[TaskEvent] = []
    sim = Simulation(workers=2, start=T, listeners=[interrupting, after.append])
    busy_instant(sim, calls)
    with pytest.raises(KeyboardInterrupt, match="Ctrl-C"):
        sim.run(T + 20)
    assert len(heard) == 1 and sim.now == T + 4
    assert after[-1] == heard[0]  # the listener after it heard that event too
    assert [(r.name, r.finished - T) for r in sim.records()][-1] == (heard[0].name, 4)
    assert ("first", 4) in [(r.name, r.finished - T) for r in sim.records()]
    finished_at_4 = [r.name for r in sim.records() if r.finished == T + 4]
    assert finished_at_4 == [heard[0].name]  # the other finish at 4 waits
    assert calls == []  # so does the intervention at 4
    sim.run(T + 20)

    whole_calls: list[str] = []
    whole_heard: list[TaskEvent] = []
    whole = Simulation(workers=2, start=T, listeners=[whole_heard.append])
    busy_instant(whole, whole_calls)
    whole.run(T + 20)
    assert sim.records() == whole.records() and calls == whole_calls == ["intervention"]
    assert replay(after) == replay(whole_heard)


class InterruptingStore(InMemoryTaskStore):
    """Raises ``KeyboardInterrupt`` from ``save`` for a snapshot whose status ``armed``
    holds, as a Ctrl-C landing in a store call does."""

    def __init__(self) -> None:
        super().__init__()
        self.armed: set[TaskStatus] = set()

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        if snapshot.status in self.armed:
            raise KeyboardInterrupt("raised inside save")
        super().save(snapshot, record)


@pytest.mark.parametrize("armed", [TaskStatus.RUNNING, TaskStatus.SCHEDULED])
def test_a_stores_ctrl_c_in_a_save_inside_run_leaves_the_event_whole(
    armed: TaskStatus,
) -> None:
    """A store's ``save`` that raises ``KeyboardInterrupt`` on the main thread (a Ctrl-C
    landing in it) is raised to the user once logged (core/store/interrupts.py).  Raised at
    once inside ``run()``, it came out of the core's begin (or finish) with the loop's
    part of the event undone: the worker taken and never given back, the task
    ``running`` for good, nothing ever starting again.  Now it is raised as a listener's
    is, after its event."""

    def build(store: Any) -> tuple[Simulation, Any]:
        sim = Simulation(workers=1, start=T, store=store)
        return sim, sim.schedule("rate", FixedRate(10), duration=fixed(3), id="rate")

    store = InterruptingStore()
    sim, task = build(store)
    store.armed = {armed}
    with pytest.raises(KeyboardInterrupt, match="raised inside save"):
        sim.run(T + 25)
    store.armed = set()
    if armed is TaskStatus.RUNNING:  # its begin, whole: the run is in flight
        assert (sim.now, sim.busy, task.status) == (T, 1, TaskStatus.RUNNING)
    else:  # its finish, whole: the worker is free, the next slot due
        assert (sim.now, sim.busy, task.status) == (T + 3, 0, TaskStatus.SCHEDULED)
    sim.run(T + 45)
    whole, _ = build(None)
    whole.run(T + 45)
    assert sim.records() == whole.records()
    assert (sim.busy, task.status) == (0, TaskStatus.SCHEDULED)
    assert sim.shutdown() is True
    row = store.get("rate")
    assert row is not None and row.status is TaskStatus.SCHEDULED  # the stale row written again


async def returns_at_once() -> None:
    pass


@pytest.mark.parametrize("verb", ["pause", "cancel"])
def test_a_listeners_ctrl_c_on_a_verbs_event_comes_once_the_verb_is_whole(verb: str) -> None:
    """A verb made between two ``run()`` calls raised a listener's Ctrl-C at once, from
    inside the core's verb: the simulation's own step after it was left undone, so the
    task's coroutine run in flight was not cut and ran on to its modelled end, ``ok``."""

    def build(interrupting: bool) -> tuple[Simulation, list[TaskEvent]]:
        heard, listener = (
            interrupting_once("paused" if verb == "pause" else "cancelled")
            if interrupting
            else ([], lambda event: None)
        )
        sim = Simulation(workers=1, start=T, listeners=[listener])
        sim.schedule("c", FixedRate(60), action=returns_at_once, duration=fixed(10), id="c")
        sim.run(T + 5)
        return sim, heard

    sim, heard = build(interrupting=True)
    with pytest.raises(KeyboardInterrupt, match="Ctrl-C"):
        getattr(sim, verb)("c")
    assert len(heard) == 1
    whole, _ = build(interrupting=False)
    assert getattr(whole, verb)("c") is True
    for each in (sim, whole):
        each.run(T + 30)
    why = {"pause": "paused", "cancel": "cancelled"}[verb]
    assert seen(sim) == seen(whole) == [("c", 0, 5, f"CancelledError: task {why}")]
    assert sim.shutdown() is True and whole.shutdown() is True  # their loops closed


def test_a_coroutines_ctrl_c_leaves_no_task_to_be_logged_as_never_retrieved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The awaited task ended with the interrupt before the loop gave it up: read there,
    # not left for its collection to log "Task exception was never retrieved" (and to
    # format that traceback from inside whatever the collection interrupted).
    sim = Simulation(workers=1, start=T)
    sim.schedule("stops", OneTime(delay=5), action=interrupts_awaited)
    with pytest.raises(KeyboardInterrupt):
        sim.run_for(10)
    sim.shutdown()
    del sim
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        gc.collect()
    assert [r.getMessage() for r in caplog.records] == []
