"""A program written from the user guide's tour (docs/GUIDE.md), checked with ``mypy --strict``.

``tests/test_typing_user.py`` runs mypy on it as a user's project would (the package's
``py.typed``, no config of ours): correct code must pass, and every public return it
reads must be its real type, not ``Any`` (the ``assert_type`` lines).  It is also
checked, as part of ``tests``, by the project's own mypy run.  Nothing imports it: it
is a program, run by ``main()``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, assert_type

import pandas as pd

from lldsched import (
    CronSchedule,
    EventLog,
    ExecutionRecord,
    FakeClock,
    FixedDelay,
    FixedRate,
    InMemoryTaskStore,
    Jittered,
    LldschedError,
    Metrics,
    OneTime,
    Overlap,
    OverrunPolicy,
    Priority,
    RetryPolicy,
    RunContext,
    ScheduledTask,
    Scheduler,
    Simulation,
    TaskEvent,
    TaskRetiredError,
    TaskStatus,
    Window,
)
from lldsched.runtime import Runtime
from lldsched.schedules.base import Schedule
from lldsched.stores.codec import decode_schedule, encode_schedule, register_schedule
from lldsched.testing import SettleTimeoutError, Stepper
from lldsched.views.frames import task_summary, to_frame


def backup() -> None:
    print("backing up")


def careful(ctx: RunContext) -> str:
    ctx.wait(0.01)
    return "stopped" if ctx.cancelled else "done"


async def fetch(rows: int) -> dict[str, int]:
    await asyncio.sleep(0)
    return {"rows": rows}


def on_event(event: TaskEvent) -> None:
    if event.record is not None:
        assert_type(event.record, ExecutionRecord)
        print(event.name, event.record.duration, event.record.outcome.value)


def threaded() -> None:
    log = EventLog()
    with Scheduler(workers=4, store=InMemoryTaskStore(), listeners=[log, on_event],
                   tz="Europe/Berlin", clock=FakeClock(0)) as scheduler:  # fmt: skip
        task = scheduler.schedule(
            "backup", backup, FixedRate(60, on_overrun=OverrunPolicy.CATCH_UP),
            priority=Priority.HIGH, retry=RetryPolicy(max_attempts=3), timeout=30.0,
        )  # fmt: skip
        assert_type(task, ScheduledTask)
        scheduler.schedule("poll", lambda: None, FixedDelay(timedelta(seconds=10)))
        scheduler.schedule("report", lambda: None, "0 3 * * 1-5", id="nightly-report")
        scheduler.schedule("once", careful, OneTime(delay=5), depends_on=["nightly-report"])
        scheduler.schedule("fetch", fetch, OneTime(delay=0), args=(3,), isolation="thread")

        @scheduler.scheduled(FixedRate(300))
        def cleanup() -> None: ...

        @scheduler.scheduled("*/5 * * * *", name="tick", overlap=Overlap.BUFFER_ONE)
        def tick(ctx: RunContext) -> int:
            return ctx.attempt

        assert_type(cleanup, Callable[[], None])  # the decorator gives the function back
        assert_type(tick(RunContext("t", "tick", 1, 0.0, 0)), int)  # ... with its types
        assert_type(log.wait_for(lambda e: e.name == "backup", timeout=0), TaskEvent | None)
        assert_type(task.status, TaskStatus)
        assert_type(task.explain(), str)  # README's first scheduler: report.explain()
        assert_type(task.next_run_at, float | None)
        assert_type(task.history, tuple[ExecutionRecord, ...])
        assert_type(scheduler.pause(task.id), bool)
        assert_type(scheduler.resume(task.id), bool)
        scheduler.reschedule("nightly-report", CronSchedule("30 2 * * *"))
        modified = scheduler.modify("nightly-report", priority=Priority.LOW, timeout=600)
        assert_type(modified, ScheduledTask)
        assert_type(scheduler.run_now("nightly-report"), bool)
        assert_type(scheduler.tasks(), list[ScheduledTask])
        assert_type(scheduler.pending(), list[ScheduledTask])
        assert_type(scheduler.dead_letter(), list[str])
        assert_type(scheduler.records(), list[ExecutionRecord])
        assert_type(scheduler.wait_idle(timeout=timedelta(seconds=1)), bool)
    assert_type(scheduler.shutdown(drain=False, timeout=1), bool)


def simulated() -> None:
    sim = Simulation(retain_finished=2, start=datetime(2026, 1, 5, 9, tzinfo=UTC))
    ids = [sim.schedule(f"reminder-{n}", OneTime(delay=60 * n)).id for n in range(1, 5)]
    sim.schedule("jittered", Jittered(CronSchedule("0 * * * *"), 300, seed=1), duration=1)
    sim.schedule("evenings", Window("0 18 * * *", max_runs=2), duration=1)  # cron text
    sim.schedule("trial", Window(FixedRate(60), max_runs=3),
                 duration=lambda rng, attempt: rng.uniform(1, 2))  # fmt: skip

    @sim.scheduled(FixedRate(60), duration=2.0)
    def step() -> None: ...

    assert_type(step, Callable[[], None])
    assert_type(sim.run_for(timedelta(hours=2)), Simulation)
    try:
        sim.task(ids[0])
    except TaskRetiredError as error:
        print(error)
    frame = to_frame(sim)
    assert_type(frame, pd.DataFrame)
    assert_type(task_summary(frame), pd.DataFrame)
    assert_type(CronSchedule("0 3 * * *", tz="Europe/Berlin").preview(3), list[datetime])
    assert_type(FixedRate(60).explain(), str)


def stepped() -> None:
    """A user's test of their jobs (docs/TESTING.md): a scheduler on a fake clock, stepped."""
    clock = FakeClock(datetime(2026, 3, 28, 11, tzinfo=UTC))
    scheduler = Scheduler(clock=clock, tz="Europe/Berlin", history_limit=None)
    scheduler.schedule("report", backup, "0 2 * * *", id="report")
    with Stepper(scheduler, timeout=timedelta(seconds=5)) as steps:
        assert_type(steps, Stepper)
        assert_type(steps.scheduler, Scheduler)
        assert_type(steps.clock, FakeClock)
        assert_type(steps.now, float)
        assert_type(steps.advance(timedelta(days=1)), float)
        assert_type(steps.advance(60), float)
        assert_type(steps.advance_to(datetime(2026, 3, 30, tzinfo=UTC)), float)
        steps.settle()
        assert_type(steps.records("report"), list[ExecutionRecord])
    assert_type(SettleTimeoutError.__mro__, tuple[type, ...])  # exported, a class


def overview(runtime: Runtime) -> list[str]:
    """A view of one's own, written once for both runtimes (lldsched.runtime)."""
    assert_type(runtime.orphans(), list[str])
    assert_type(runtime.retain_finished, int | timedelta | None)
    assert_type(runtime.metrics(timeout=1), Metrics)
    assert_type(runtime.now, float)
    assert_type(runtime.workers, int)
    try:
        runtime.pause("no-such-task")
    except LldschedError as error:  # every mistake lldsched refuses
        assert_type(error, LldschedError)
    return [f"{task.name}: {task.status.value}" for task in runtime.tasks()]


def both() -> None:
    sim = Simulation(workers=2, seed=7)
    sim.schedule("tick", FixedRate(60))
    with Scheduler(workers=2, clock=FakeClock(0)) as scheduler:
        scheduler.schedule("tick", backup, FixedRate(60), paused=True)
        assert overview(scheduler) == ["tick: paused"]
    assert overview(sim.run_for(1)) == ["tick: scheduled"]


@dataclass(frozen=True)
class Hourly:
    """A schedule of one's own (docs/EXTENDING.md): every hour at ``minute``."""

    minute: int = 0

    def first_run(self, now: float) -> float:
        hour = now - now % 3600
        return hour + 60 * self.minute if now <= hour + 60 * self.minute else hour + 3660

    def next_run(self, record: ExecutionRecord, now: float) -> float:
        return self.first_run(max(record.slot + 1, now))


def hourly_fields(schedule: Hourly) -> dict[str, int]:
    return {"minute": schedule.minute}


def hourly_from(fields: Mapping[str, Any]) -> Hourly:
    return Hourly(fields["minute"])


def stored() -> None:
    """A durable store keeps it once registered, by named functions or by lambdas: both
    typed over the class (``schedule.minute`` is read on an ``Hourly``)."""
    register_schedule("readme-Hourly", Hourly, hourly_fields, hourly_from)
    register_schedule(
        "readme-Hourly", Hourly, lambda s: {"minute": s.minute}, lambda d: Hourly(d["minute"])
    )
    document = encode_schedule(Hourly(5))
    assert_type(document, dict[str, Any])
    again = decode_schedule(document)
    assert_type(again, Schedule)
    assert again == Hourly(5)


def main() -> None:
    threaded()
    simulated()
    stepped()
    both()
    stored()


if __name__ == "__main__":
    main()
