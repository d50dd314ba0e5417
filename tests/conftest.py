"""Shared fixtures: fake clocks, schedulers that are always shut down, event logs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from lldsched import EventLog, FakeClock, Scheduler
from tests.cluster import cluster, store_spec  # noqa: F401 - the multi-process fixtures

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC).timestamp()  # a Monday, 09:00 UTC

SchedulerFactory = Callable[..., Scheduler]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def log() -> EventLog:
    return EventLog()


@pytest.fixture
def make_scheduler() -> Iterator[SchedulerFactory]:
    """Build schedulers (started unless start=False); every one is shut down after the test."""
    made: list[Scheduler] = []

    def make(*, start: bool = True, **kwargs: Any) -> Scheduler:
        scheduler = Scheduler(**kwargs)
        made.append(scheduler)
        if start:
            scheduler.start()
        return scheduler

    yield make
    for scheduler in made:
        assert scheduler.shutdown(timeout=5.0), f"{scheduler!r} did not stop"


def settle(scheduler: Scheduler) -> None:
    """Wait (bounded) until nothing is due or running; fail the test otherwise."""
    assert scheduler.wait_idle(timeout=5.0), "scheduler did not settle within 5 s"


@pytest.fixture(params=["threaded", "simulated"])
def driven(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Both runtimes in turn, driven alike (tests/runtimes.py); closed after the test."""
    from tests.runtimes import Driven

    runtime = Driven(request.param)
    yield runtime
    runtime.close()
