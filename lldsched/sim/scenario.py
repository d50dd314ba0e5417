"""The built-in scenario that ``python -m lldsched simulate`` replays.

A small operations team's week: a fan-out of hourly reports at the top of the
hour, a compaction job whose runs sometimes outlast its five-minute period, a
flaky import that needs its retries, a heartbeat with high priority, and a
nightly backup with a timeout.  Every number is a model from
:mod:`lldsched.sim.models`, so the week differs by seed and is reproducible.
"""

from __future__ import annotations

from datetime import UTC, datetime

from lldsched.model import Priority
from lldsched.policies import RetryPolicy
from lldsched.schedules import CronSchedule, FixedRate
from lldsched.sim.models import fixed, lognormal, uniform
from lldsched.sim.simulation import Simulation

__all__ = ["SCENARIO_START", "build_scenario"]

SCENARIO_START = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday, midnight UTC


def build_scenario(workers: int = 4, seed: int = 0, *, max_coroutines: int = 1000) -> Simulation:
    """A :class:`Simulation` at :data:`SCENARIO_START` with the scenario's tasks registered
    (all plain functions, run on the ``workers``; ``max_coroutines`` bounds the coroutine
    lane of a simulation one adds ``async def`` tasks to)."""
    sim = Simulation(
        workers=workers, start=SCENARIO_START, seed=seed, max_coroutines=max_coroutines
    )
    for region in ("emea", "amer", "apac", "latam", "anz", "india"):
        sim.schedule(f"report-{region}", CronSchedule("0 * * * *"), duration=uniform(60, 600))
    sim.schedule("compaction", FixedRate(300), duration=lognormal(median=240, sigma=0.4))
    sim.schedule(
        "import", FixedRate(900, start_delay=120), duration=uniform(20, 90), fails=0.25,
        retry=RetryPolicy(max_attempts=4, initial_backoff=30),
    )  # fmt: skip
    sim.schedule("heartbeat", FixedRate(60), duration=fixed(1), priority=Priority.HIGH)
    sim.schedule(
        "nightly-backup", CronSchedule("0 2 * * *"), duration=uniform(1800, 3600), timeout=3300,
        retry=RetryPolicy.never(),
    )  # fmt: skip
    return sim
