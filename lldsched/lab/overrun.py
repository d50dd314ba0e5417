"""The overrun policy: what a fixed-rate task does when a run outlasts its period.

The lab runs a simulated day on the :class:`~lldsched.sim.simulation.Simulation` (the
same core state machine, on virtual time): a job every 60 s whose runs take 150 s,
beside a heartbeat every 10 s (1 s runs), on two workers.  Three ways to treat the
job's slots, by swapping its schedule:

* ``SKIP`` (the default): the next run is the next slot not before the finish;
* ``CATCH_UP``: every missed slot runs, one after another: the job falls ever
  further behind, but it has one entry at a time, so it holds one worker;
* **keep queueing**, the decision switched off: every slot is queued as a run of its
  own, whatever is still running (a ticker that submits to the pool, as a naive
  cron loop does).  Runs of the same job overlap, the queue grows by a run every
  2.5 minutes, and the heartbeat, which queues behind them by due time, starves.

Deterministic: virtual time, no randomness.
"""

from __future__ import annotations

from typing import NamedTuple

from lldsched.errors import shown
from lldsched.lab._support import LAB_MOST, lab_seconds, whole_count
from lldsched.model import ExecutionRecord
from lldsched.policies import OverrunPolicy
from lldsched.schedules.simple import FixedRate, OneTime
from lldsched.sim.simulation import Simulation

__all__ = ["KEEP_QUEUEING", "OVERRUN_STRATEGIES", "OverrunDay", "simulate_overrun_day"]

KEEP_QUEUEING = "keep queueing"
OVERRUN_STRATEGIES = (OverrunPolicy.SKIP.name, OverrunPolicy.CATCH_UP.name, KEEP_QUEUEING)
"""The three strategies, by name: ``SKIP``, ``CATCH_UP`` and ``keep queueing``."""


class OverrunDay(NamedTuple):
    """A simulated day of one strategy: the job's and the heartbeat's finished runs, as
    ``(started, lateness)`` pairs in start order, and the job's slots still owed (its
    slots of the day less its runs started, finished or in flight; 0 under SKIP, which
    drops the slots it missed)."""

    strategy: str
    job: list[tuple[float, float]]
    heartbeat: list[tuple[float, float]]
    owed: int
    most_at_once: int

    @property
    def job_late_at_end(self) -> float:
        return self.job[-1][1] if self.job else 0.0

    @property
    def heartbeat_worst(self) -> float:
        return max((late for _, late in self.heartbeat), default=0.0)


def _lateness(records: list[ExecutionRecord]) -> list[tuple[float, float]]:
    return sorted((r.started, r.started - r.due) for r in records)


def _most_at_once(records: list[ExecutionRecord]) -> int:
    edges = sorted([(r.started, 1) for r in records] + [(r.finished, -1) for r in records])
    most = running = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def simulate_overrun_day(
    strategy: str,
    *,
    hours: int = 24,
    period: float = 60.0,
    duration: float = 150.0,
    workers: int = 2,
) -> OverrunDay:
    """Simulate ``hours`` of the job (every ``period`` s, runs ``duration`` s) and the
    heartbeat under ``strategy``, one of :data:`OVERRUN_STRATEGIES`; ``hours`` is a whole
    number from 1 to 744, a month (``ValueError`` otherwise: a day of no hour has nothing
    to show), and ``period`` finite and > 0, with at most 1,000,000 slots in the hours
    (else ``ValueError`` naming it: "keep queueing" with a period of 0 queued runs at 0 s
    for ever, and one of 1e-6 s a run of its own per microsecond, 8.64e10 a day, until
    memory ran out).  ``duration`` and ``workers`` are the simulation's to check."""
    if strategy not in OVERRUN_STRATEGIES:
        raise ValueError(f"strategy must be one of {OVERRUN_STRATEGIES}, got {strategy!r}")
    whole_count("hours", hours, at_most=744)  # a month of 31 days
    period = lab_seconds("period", period, above=0)
    horizon = hours * 3600
    if horizon / period > LAB_MOST:
        raise ValueError(
            f"period must leave at most {LAB_MOST:,} slots in {hours} hours, so be at least "
            f"{horizon / LAB_MOST:g} seconds (keep queueing queues a run per slot; an "
            f"experiment is sized to run in minutes), got {shown(period)}"
        )
    sim = Simulation(workers=workers)
    sim.schedule("heartbeat", FixedRate(10), duration=1.0)
    if strategy == KEEP_QUEUEING:
        slot = 0.0

        def tick() -> None:  # a run of its own per slot, whatever is still running
            nonlocal slot
            sim.schedule("job", OneTime(slot), duration=duration)
            slot += period
            if slot < horizon:
                sim.at(slot, tick)

        sim.at(0.0, tick)
    else:
        policy = OverrunPolicy[strategy]
        sim.schedule("job", FixedRate(period, on_overrun=policy), duration=duration)
    sim.run(horizon)
    records = [r for r in sim.records() if r.outcome.ran]  # runs, not the slots SKIP dropped
    job = [r for r in records if r.name == "job"]
    slots = int(horizon // period)
    # The job's runs in flight at the end (not sim.busy: a heartbeat may hold a worker).
    started = len(job) + sum(1 for task in sim.tasks() if task.name == "job" and task.running)
    owed = 0 if strategy == OverrunPolicy.SKIP.name else max(0, slots - started)
    return OverrunDay(
        strategy,
        _lateness(job),
        _lateness([r for r in records if r.name == "heartbeat"]),
        owed,
        _most_at_once(job),
    )
