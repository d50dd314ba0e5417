"""Every public name, used as the documents show, checked by a user's type checkers.

``tests/test_typing_user.py`` runs ``mypy --strict`` on it as a user's project would
(the package's ``py.typed``, no config of ours), and pyright (VS Code's Pylance) in its
strict mode, as it runs ``readme_program.py`` (docs/decisions/public-api.md, "What a
user's pyright sees").  Each ``assert_type`` is what a user's hover shows: a public
return read as ``Any`` fails it.  It uses each name of ``lldsched.__all__``,
``lldsched.sim`` and ``lldsched.stores``, and the views a notebook calls first
(frames, tables, the summary, three plots, the cluster's frames, both widgets): every
schedule kind, both decorators, listeners (an object, a function, an
:class:`EventLog`), an ``async def`` action with ``ctx``, the stores, the simulation and
its cluster, the verbs' returns, the records' fields and the errors.  ``main()`` runs
it (a fake clock, simulations; about a second, most of it drawing the charts).
"""

from __future__ import annotations

import asyncio
import random
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal, assert_type

import pandas as pd
from matplotlib.figure import Figure

from lldsched import (
    Clock,
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
    Misfire,
    MisfirePolicy,
    OneTime,
    Outcome,
    Overlap,
    OverrunPolicy,
    Priority,
    RetryPolicy,
    RunContext,
    Schedule,
    ScheduledTask,
    ScheduleError,
    Scheduler,
    SchedulerBusyError,
    SchedulerStateError,
    Simulation,
    SqliteTaskStore,
    StoreClosedError,
    StoreError,
    SystemClock,
    Task,
    TaskEvent,
    TaskListener,
    TaskNotFoundError,
    TaskRetiredError,
    TaskSnapshot,
    TaskStatus,
    TaskStore,
    ValidationError,
    Window,
)
from lldsched.sim import (
    ClusterScenario,
    ClusterTask,
    Crash,
    Pause,
    SimStep,
    exponential,
    fails_on,
    fixed,
    lognormal,
    poisson_arrivals,
    simulate_cluster,
    uniform,
)
from lldsched.stores import HistoryStore
from lldsched.views import VIEWS_EXTRA
from lldsched.views.cluster import cluster_counts, cluster_frame
from lldsched.views.frames import task_summary, to_frame, utilisation
from lldsched.views.plots import gantt, lateness_distribution, utilisation_plot
from lldsched.views.report import TaskSummary, format_summary, percentile, summarize
from lldsched.views.tables import readable
from lldsched.views.widgets import ControlPanel, SimulationPlayer

Kind = Literal["started", "retrying", "finished", "paused", "other"]


def kind_of(event: TaskEvent) -> Kind:
    """Each status an event can carry, matched: a new member would fail the match."""
    match event.status:
        case TaskStatus.RUNNING | TaskStatus.BLOCKED:
            return "started"
        case TaskStatus.RETRYING:
            return "retrying"
        case TaskStatus.SUCCEEDED | TaskStatus.FAILED | TaskStatus.CANCELLED:
            return "finished"
        case TaskStatus.PAUSED:
            return "paused"
        case TaskStatus.SCHEDULED:
            return "other"


class Counter(TaskListener):
    """A listener object: ``on_event`` is its one method."""

    def __init__(self) -> None:
        self.kinds: list[Kind] = []

    def on_event(self, event: TaskEvent) -> None:
        assert_type(event.previous, TaskStatus | None)
        assert_type(event.at, float)
        self.kinds.append(kind_of(event))


def heard(event: TaskEvent) -> None:
    """A listener function."""
    if event.record is not None:
        record = event.record
        assert_type(record.outcome, Outcome)
        assert_type(record.error, str | None)
        assert_type(record.misfire, Outcome | None)
        assert_type(record.duration, float)
        assert_type(record.lateness, float)
        assert_type(record.token, int | None)


def flagged(event: TaskEvent) -> bool:
    """A listener function that returns something, ignored (``Callable[[TaskEvent],
    None]`` refused it, and a lambda that hands the event on)."""
    return event.record is not None and not event.record.ok


def nightly(day: str, *, rows: int = 10) -> str:
    return f"{day}: {rows} rows"


async def fetch(url: str, ctx: RunContext) -> int:
    """A coroutine action with the run's context."""
    await asyncio.sleep(0)
    assert_type(ctx.attempt, int)
    assert_type(ctx.due, float)
    assert_type(ctx.fencing_token, int | None)
    assert_type(ctx.reason, str | None)
    return len(url)


def threaded(folder: Path) -> None:
    log, counter = EventLog(), Counter()
    memory = InMemoryTaskStore(retention=10)
    kept: TaskStore = memory  # a store is a TaskStore and a HistoryStore
    history: HistoryStore = memory
    clock: Clock = FakeClock(datetime(2026, 1, 5, tzinfo=UTC))
    with Scheduler(workers=2, clock=clock, store=kept, listeners=[log, counter, heard]) as s:
        assert_type(s, Scheduler)
        s.add_listener(lambda event: counter.kinds.count(kind_of(event)))  # returns an int
        every = s.schedule("rate", nightly, FixedRate(60), args=("mon",), kwargs={"rows": 3})
        s.schedule("delay", nightly, FixedDelay(30), args=["tue"])
        s.schedule("cron", nightly, CronSchedule("0 3 * * *", tz="Europe/Berlin"), args=("w",))
        s.schedule("text", nightly, "*/5 * * * *", args=("th",), priority=Priority.LOW)
        s.schedule("fetch", fetch, OneTime(delay=timedelta(0)), args=("https://x",))
        s.schedule("jitter", nightly, Jittered(FixedRate(60), 5, seed=1), args=("f",))
        s.schedule(
            "window", nightly, Window(FixedRate(60), max_runs=2), args=("sa",),
            retry=RetryPolicy(max_attempts=2, initial_backoff=timedelta(seconds=1)),
            misfire=MisfirePolicy(Misfire.SKIP, grace=timedelta(minutes=1)),
            overlap=Overlap.ALLOW, max_instances=2,
        )  # fmt: skip
        s.schedule("after", nightly, FixedRate(60), args=("su",), depends_on=[every.id])

        @s.scheduled(FixedRate(300, on_overrun=OverrunPolicy.SKIP), id="tidy")
        async def tidy(ctx: RunContext) -> None:
            ctx.wait(0)

        assert_type(asyncio.run(tidy(RunContext("t", "tidy", 1, 0.0, 0))), None)  # as it was
        assert_type(s.pause("tidy"), bool)
        assert_type(s.resume("tidy"), bool)
        assert_type(s.run_now("tidy"), bool)
        assert_type(s.cancel("tidy"), bool)
        assert_type(s.redrive(every.id), bool)
        assert_type(s.reschedule(every.id, "0 * * * *"), ScheduledTask)
        assert_type(s.remove("tidy"), ScheduledTask)
        assert_type(s.metrics(), Metrics)
        assert_type(s.metrics().queued, int)
        assert_type(s.schedules(), dict[str, Schedule])
        assert_type(s.clock, Clock)
        assert_type(s.wait_drained(1), bool)
        assert_type(every.run_count, int)
        assert_type(every.retry, RetryPolicy)
        assert_type(every.schedule, Schedule)
        assert_type(every.definition, Task)
        assert_type(every.priority, Priority)
        assert_type(log.events, list[TaskEvent])
        assert_type(log.runs("rate"), list[ExecutionRecord])
    assert_type(memory.get(every.id), TaskSnapshot | None)
    assert_type(history.records(every.id), list[ExecutionRecord])
    assert_type(memory.load_all(), list[TaskSnapshot])
    with SqliteTaskStore(folder / "jobs.db") as store, Scheduler(store=store) as durable:
        assert_type(store, SqliteTaskStore)
        durable.schedule("nightly", nightly, CronSchedule("0 3 * * *"), args=("any",))
        assert_type(store.load_all(), list[TaskSnapshot])
    assert_type(store.closed, bool)
    assert_type(SystemClock().now(), float)
    try:
        s.pause(every.id)
    except (SchedulerStateError, SchedulerBusyError, StoreClosedError, StoreError) as error:
        assert_type(error, SchedulerStateError | SchedulerBusyError | StoreClosedError | StoreError)
    try:
        s.task("gone")
    except TaskRetiredError as error:
        assert_type(error, TaskRetiredError)
    except TaskNotFoundError as error:
        assert_type(error, TaskNotFoundError)
    try:
        CronSchedule("61 * * * *")
    except ScheduleError as error:
        assert isinstance(error, ValidationError) and isinstance(error, LldschedError)


def arrivals() -> Iterator[float]:
    return poisson_arrivals(1 / 60, start=0, seed=3, count=5)


def replayed(rng: random.Random, attempt: int) -> timedelta:
    """A duration model of one's own that answers a ``timedelta`` (lldsched.sim.models)."""
    return timedelta(seconds=rng.choice([30, 45, 60]) * attempt)


def simulated() -> None:
    sim = Simulation(workers=2, seed=1, listeners=[heard, flagged])
    sim.schedule("replayed", FixedRate(300), duration=replayed)
    sim.schedule("a", FixedRate(60), duration=uniform(1, 5), fails=fails_on(1))
    sim.schedule("b", FixedRate(90), duration=exponential(10), fails=0.1)
    sim.schedule("c", FixedRate(120), duration=lognormal(5, 0.5))
    for n, at in enumerate(arrivals()):
        sim.schedule(f"once-{n}", OneTime(at=at), duration=fixed(2))

    @sim.scheduled(CronSchedule("*/10 * * * *"), duration=timedelta(seconds=30))
    def report() -> None: ...

    assert_type(report, Callable[[], None])
    step = sim.step()
    assert_type(step, SimStep | None)
    assert_type(sim.run_for(3600), Simulation)
    assert_type(sim.records(), list[ExecutionRecord])
    frame = to_frame(sim)
    assert_type(frame, pd.DataFrame)
    assert_type(utilisation(frame, 2), pd.DataFrame)
    assert_type(task_summary(frame), pd.DataFrame)
    assert_type(readable(frame), pd.DataFrame)
    rows = summarize(sim.records())
    assert_type(rows, list[TaskSummary])
    assert_type(format_summary(rows), str)
    assert_type(percentile([1.0, 2.0], 0.99), float | None)
    assert_type(gantt(frame), Figure)
    assert_type(lateness_distribution(frame), Figure)
    assert_type(utilisation_plot(frame, 2), Figure)
    player = SimulationPlayer(sim, chart=False)
    player.buttons["+1 hour"].click()  # a test of one's own presses the player's buttons
    assert "lldsched[views]" in VIEWS_EXTRA


def cluster() -> None:
    scenario = ClusterScenario(
        2, tasks=(ClusterTask("report", every=60, duration=5),),
        crashes=(Crash(0, at=30, restart_after=60),), pauses=(Pause(1, at=90, seconds=40),),
        horizon=300,
    )  # fmt: skip
    result = simulate_cluster(scenario)
    assert_type(cluster_frame(result), pd.DataFrame)
    assert_type(cluster_counts([result]), pd.DataFrame)


def panel() -> None:
    with Scheduler(workers=1, clock=FakeClock(0)) as scheduler:
        assert_type(ControlPanel(scheduler, live=False), ControlPanel)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        threaded(Path(folder))
    simulated()
    cluster()
    panel()


if __name__ == "__main__":
    main()
