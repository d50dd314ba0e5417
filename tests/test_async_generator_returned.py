"""An action that returns an async generator object (``return stream()``, ``stream`` an
``async def`` that yields) fails its run saying so, none of the generator's body run, on
both runtimes, from a plain function, a coroutine and a worker process
(docs/decisions/threaded.md, "An async generator an action returns fails its run")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from lldsched import OneTime, RetryPolicy, Scheduler, Simulation, TaskStatus
from tests.conftest import T0
from tests.waits import wait_until

ONCE = RetryPolicy(max_attempts=1)
BODY: list[str] = []  # what the generators' bodies did: nothing, ever
SAID = (
    "TypeError: the action returned an async generator (stream) and none of its body ran: "
    "a run's result is kept as text, nothing iterates it; iterate it in an async def job "
    "(async for item in stream(...): ...), or return what it yields"
)


async def stream() -> AsyncIterator[int]:
    BODY.append("ran")
    yield 1


def plain() -> AsyncIterator[int]:
    return stream()


async def coroutine() -> AsyncIterator[int]:
    return stream()


ACTIONS: dict[str, Callable[[], Any]] = {"plain": plain, "coroutine": coroutine}


@pytest.fixture(autouse=True)
def _no_body() -> None:
    BODY.clear()


def test_the_generator_is_closed_so_its_body_never_runs_later_either() -> None:
    """An action that keeps the generator it returned finds it closed once its run
    failed: iterated later, it yields nothing and its body does not run."""
    kept: list[AsyncIterator[int]] = []

    def keeping() -> AsyncIterator[int]:
        kept.append(stream())
        return kept[0]

    async def drained() -> list[int]:
        return [item async for item in kept[0]]

    sim = Simulation(start=T0)
    task = sim.schedule("feed", OneTime(delay=0), action=keeping, retry=ONCE)
    sim.run_for(10)
    assert [record.error for record in task.history] == [SAID]
    assert asyncio.run(drained()) == [] and BODY == []


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_in_the_simulation_the_run_fails_saying_so(action: str) -> None:
    sim = Simulation(start=T0)
    task = sim.schedule("feed", OneTime(delay=0), action=ACTIONS[action], retry=ONCE)
    sim.run_for(10)
    (record,) = task.history
    assert (record.ok, record.result, record.error) == (False, None, SAID)
    assert task.status is TaskStatus.FAILED and BODY == []


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_on_threads_the_run_fails_saying_so(action: str) -> None:
    scheduler = Scheduler(workers=1).start()
    try:
        task = scheduler.schedule("feed", ACTIONS[action], OneTime(delay=0), retry=ONCE)
        assert scheduler.wait_idle(timeout=10.0)
        (record,) = task.history
        assert (record.ok, record.result) == (False, None)
        assert record.error is not None and record.error.startswith(SAID)
        assert task.status is TaskStatus.FAILED and BODY == []
    finally:
        assert scheduler.shutdown(timeout=10.0)


def test_in_a_worker_process_the_run_fails_saying_so() -> None:
    scheduler = Scheduler(workers=1).start()
    try:
        task = scheduler.schedule(
            "feed", "tests.process_jobs:streamed", OneTime(delay=0), isolation="process",
            args=(3,), retry=ONCE,
        )  # fmt: skip
        wait_until(lambda: task.status is TaskStatus.FAILED, timeout=30.0, what="its run failed")
        (record,) = task.history
        assert record.error is not None and record.error.startswith(
            "TypeError: the action returned an async generator (rows) and none of its body ran"
        )
    finally:
        assert scheduler.shutdown(timeout=10.0)
