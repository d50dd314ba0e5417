"""The soak: a service's month on a threaded ``Scheduler``, compressed, measured as it goes.

A service runs one scheduler for months without a restart; whatever grows with every
run, every registration or every day grows without bound there.  This harness runs
such a service's workload (:class:`Workload`, about 200 tasks) and samples, at each
simulated day, everything that could grow (:class:`Sample`): memory (tracemalloc
and RSS), the registry, the retired tasks remembered, every history, the due queue
against the live tasks, the timeout deadlines, threads, open file descriptors, the
listeners' backlog, the store's rows and file, the module-level caches and the id
generator.

The workload, per simulated minute on a ``FakeClock`` stepped by
:class:`~lldsched.testing.Stepper` (each run at its own due instant):

* minutely ``FixedRate`` ticks (some flaky with a retry, some with a ``ctx`` and a
  one-hour timeout, some ``async def``), minutely ``FixedDelay`` polls, two minutely
  jobs that always fail (every slot given up after its retries), hourly and nightly
  cron (Berlin);
* an hourly job that overruns its timeout (it moves the fake clock past it: timed
  out, retried, given up);
* "send the reminder in 5 minutes": ``reminders`` one-off tasks registered each
  minute, one in fifty failing for good (dead letter), one in ten a coroutine;
* the operator, each hour: pause one tick and resume the one paused before,
  reschedule an hourly job, modify a tick's retry, run a nightly job now; each day:
  remove a poll and register a new one, remove the dead-lettered reminders;
* a listener counting every event (the service's alerting).

``python -m tests.soak --days 30`` runs it and prints the table (``--store memory``,
``--store none``, ``--scale``, ``--real SECONDS`` for the real-clock run); the tests
are ``tests/test_soak.py``.  ``--real`` runs the same workload on the system clock,
minutes compressed to seconds, and reports the lateness of runs (``started - due``)
at the start and at the end: a timer that drifts, or lateness that creeps up, shows
there.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import logging
import math
import os
import random
import sqlite3
import statistics
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from lldsched import (
    FakeClock,
    FixedDelay,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    RetryPolicy,
    Scheduler,
    SqliteTaskStore,
    TaskEvent,
    ValidationError,
)
from lldsched.clock import Clock, SystemClock
from lldsched.core import calls
from lldsched.core.schedulearg import SCHEDULE_TYPES
from lldsched.persistence import TaskStore
from lldsched.schedules import simple
from lldsched.schedules.cron import schedule as cron_schedule
from lldsched.schedules.cron import zone as cron_zone
from lldsched.testing import Stepper

__all__ = ["Sample", "SoakConfig", "Workload", "run_soak"]

START = datetime(2026, 3, 1, tzinfo=UTC)  # a month with Berlin's spring-forward night in it
MINUTE = 60.0  # a simulated minute; the real-clock run compresses it (SoakConfig.minute)

# -- the jobs (module-level: a durable store keeps them as import paths) ----------------------

_CLOCK: list[FakeClock] = []  # the soak's fake clock, for the job that overruns (see overrun)
_flaky = itertools.count()


def tick() -> None:
    """A minutely job that does nothing."""


def flaky(every: int) -> None:
    """Fails one call in ``every`` (across all flaky tasks: deterministic)."""
    if next(_flaky) % every == 0:
        raise ConnectionError("upstream hiccup")


def always_fails() -> None:
    raise RuntimeError("the partner API rejects us")


def with_context(ctx: Any) -> None:
    """A job that takes its run context (a one-hour timeout arms a deadline each run)."""
    if ctx.cancelled:
        raise RuntimeError("cancelled")


def overrun(seconds: float) -> None:
    """A job that takes ``seconds``: on the fake clock it moves time that far itself."""
    if _CLOCK:
        _CLOCK[0].advance(seconds)
    else:
        time.sleep(seconds)


def send_reminder(user: int, fails: bool) -> None:
    if fails:
        raise ValueError(f"user {user} has no address")


async def push_reminder(user: int) -> None:
    """A reminder sent by a coroutine (on the scheduler's event loop)."""
    await asyncio.sleep(0)


async def async_tick() -> None:
    await asyncio.sleep(0)


# -- the workload -----------------------------------------------------------------------------


@dataclass
class SoakConfig:
    """What a soak runs: ``scale`` multiplies the recurring tasks (1.0: about 200)."""

    days: float = 30.0
    scale: float = 1.0
    reminders: int = 2  # one-off tasks registered per simulated minute
    store: str = "sqlite"  # "sqlite", "memory" or "none"
    path: str | None = None  # the SQLite file (a temporary one if None)
    retain_finished: int = 10_000
    history_limit: int = 100
    retention: int = 1000  # the store's records per task
    purge_retired: bool = False  # Scheduler(purge_retired=...) when the scheduler has it
    trace: bool = True  # tracemalloc (slows the run about 3x)
    trace_from: float = 0.0  # the simulated day tracing starts (the growth after a warm-up)
    seed: int = 7
    minute: float = MINUTE  # the period of the minutely tasks, 5 of it a reminder's delay
    sample_every: float = 1.0  # simulated days between samples


class CountingListener:
    """The service's alerting: counts events by outcome, keeps nothing else."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self.events = 0
        self.lateness: list[float] = []  # for the real-clock run only (see keep_lateness)
        self.keep_lateness = False

    def on_event(self, event: TaskEvent) -> None:
        self.events += 1
        record = event.record
        if record is not None:
            self.outcomes[record.outcome.value] += 1
            if self.keep_lateness and record.attempt == 1 and record.started is not None:
                self.lateness.append(record.started - record.due)


class Workload:
    """Registers the recurring tasks, then plays each minute: reminders and the operator."""

    def __init__(self, scheduler: Scheduler, config: SoakConfig) -> None:
        self.scheduler = scheduler
        self.config = config
        self.rng = random.Random(config.seed)
        self.ticks: list[str] = []
        self.polls: list[str] = []
        self.hourly: list[str] = []
        self.nightly: list[str] = []
        self.paused: str | None = None
        self.reminders = itertools.count()
        self.minute = 0

    def n(self, count: int) -> int:
        return max(1, round(count * self.config.scale))

    def register(self) -> None:
        s = self.scheduler
        retry = RetryPolicy(max_attempts=2, initial_backoff=5)
        for i in range(self.n(40)):
            if i % 8 == 1:
                s.schedule(
                    f"flaky-{i}",
                    flaky,
                    FixedRate(self.config.minute),
                    id=f"tick-{i}",
                    args=(5,),
                    retry=retry,
                )
            elif i % 8 == 2:
                s.schedule(
                    f"ctx-{i}",
                    with_context,
                    FixedRate(self.config.minute),
                    id=f"tick-{i}",
                    timeout=3600,
                )
            else:
                s.schedule(f"tick-{i}", tick, FixedRate(self.config.minute), id=f"tick-{i}")
            self.ticks.append(f"tick-{i}")
        for i in range(self.n(20)):
            self._poll(i)
        for i in range(self.n(5)):
            s.schedule(f"async-{i}", async_tick, FixedRate(self.config.minute), id=f"async-{i}")
        for i in range(2):
            s.schedule(
                f"broken-{i}",
                always_fails,
                FixedRate(self.config.minute),
                id=f"broken-{i}",
                retry=RetryPolicy(max_attempts=3, initial_backoff=10),
            )
        for i in range(self.n(100)):
            s.schedule(f"hourly-{i}", tick, f"{i % 60} * * * *", id=f"hourly-{i}")
            self.hourly.append(f"hourly-{i}")
        for i in range(self.n(30)):
            when = "0 2 * * *" if i % 2 else "30 3 * * *"
            s.schedule(f"nightly-{i}", tick, when, id=f"nightly-{i}")
            self.nightly.append(f"nightly-{i}")
        s.schedule(
            "overrun",
            overrun,
            "7 * * * *",
            id="overrun",
            args=(self.config.minute / 3,),  # 20 s: twice its timeout
            timeout=self.config.minute / 6,
            retry=RetryPolicy(max_attempts=2, initial_backoff=30),
        )

    def _poll(self, i: int) -> None:
        task_id = f"poll-{i}"
        self.scheduler.schedule(task_id, tick, FixedDelay(self.config.minute), id=task_id)
        self.polls.append(task_id)

    def play_minute(self) -> None:
        """Register this minute's reminders; at :30 of each hour the operator acts, and
        at 04:00 each day the daily chores."""
        s = self.scheduler
        for _ in range(self.config.reminders):
            user = next(self.reminders)
            in_five = OneTime(delay=5 * self.config.minute)
            if user % 10 == 3:  # one in ten by a coroutine
                s.schedule("push", push_reminder, in_five, args=(user,))
            else:
                s.schedule(
                    "reminder", send_reminder, in_five, args=(user, user % 50 == 49),
                    retry=RetryPolicy(max_attempts=2),
                )  # fmt: skip
        minute_of_day = self.minute % 1440
        if self.minute % 60 == 30:
            self.hourly_chores()
        if minute_of_day == 4 * 60:
            self.daily_chores()
        self.minute += 1

    def hourly_chores(self) -> None:
        s, rng = self.scheduler, self.rng
        if self.paused is not None:
            s.resume(self.paused)
        self.paused = rng.choice(self.ticks)
        s.pause(self.paused)
        hourly = rng.choice(self.hourly)
        # to a minute another hourly task uses: every cron text is parsed at registration
        # (the cron caches are bounded, lru_cache(1024): a text of every minute is no test)
        s.reschedule(hourly, f"{rng.randrange(len(self.hourly)) % 60} * * * *")
        s.modify(
            rng.choice(self.ticks),
            retry=RetryPolicy(max_attempts=rng.randrange(1, 4), initial_backoff=5),
        )
        s.run_now(rng.choice(self.nightly))

    def daily_chores(self) -> None:
        s = self.scheduler
        gone = self.polls.pop(0)
        s.remove(gone)
        self._poll(int(gone.split("-")[1]) + 1000)
        for task_id in s.dead_letter():
            s.remove(task_id)


# -- what is measured -------------------------------------------------------------------------


@dataclass
class Sample:
    """Everything that could grow, at one instant of the soak."""

    day: float
    runs: int  # records the listener heard, so far
    traced_kib: int  # tracemalloc's current (0 when not tracing)
    rss_kib: int
    registered: int  # tasks in the registry
    finished_held: int  # finished tasks held under retain_finished
    retired_ids: int  # retired ids remembered for TaskRetiredError
    retired_log: int  # retired tasks' records kept (one history)
    max_history: int  # the longest history of a registered task
    history_total: int  # records held in all histories
    heap: int  # entries in the due queue (heap and lane)
    tombstones: int
    live: int  # entries of registered tasks
    deadlines: int  # the timer's deadline heap (timeouts)
    threads: int
    fds: int
    backlog: int  # events waiting for the listeners
    dropped: int  # events dropped past the listener backlog
    dead_letter: int
    store_tasks: int  # rows (or snapshots) the store keeps
    store_records: int
    store_kib: int  # the SQLite file (0 for other stores)
    wal_kib: int  # its write-ahead log
    caches: int  # entries in the module-level caches (cron, schedules, calls)
    next_id: int  # the number in the id the generator gives next


def _rss_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _caches() -> int:
    interval_caches = len(simple._DELAYS) + len(simple._RATES)
    lru = sum(
        getattr(function, "cache_info", lambda: None)().currsize  # type: ignore[union-attr]
        for module in (cron_schedule, cron_zone)
        for function in vars(module).values()
        if hasattr(function, "cache_info")
    )
    return (
        interval_caches
        + lru
        + len(calls.CALL_BY_CODE)
        + len(calls.SIGNATURE_BY_CODE)
        + len(SCHEDULE_TYPES)
    )


def _store_counts(store: TaskStore | None, path: str | None) -> tuple[int, int, int, int]:
    if isinstance(store, SqliteTaskStore) and path is not None:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as reader:
            (tasks,) = reader.execute("SELECT count(*) FROM tasks").fetchone()
            (records,) = reader.execute("SELECT count(*) FROM records").fetchone()
        reader.close()
        wal = f"{path}-wal"
        wal_size = os.path.getsize(wal) if os.path.exists(wal) else 0
        return tasks, records, os.path.getsize(path) // 1024, wal_size // 1024
    if isinstance(store, InMemoryTaskStore):
        return len(store), len(store.records()), 0, 0
    return 0, 0, 0, 0


def sample(
    day: float,
    scheduler: Scheduler,
    store: TaskStore | None,
    path: str | None,
    listener: CountingListener,
) -> Sample:
    """Measure everything :class:`Sample` names (the scheduler should be idle)."""
    gc.collect()
    core = scheduler._core
    retention = core._retention
    with scheduler._lock:
        histories = [len(task.history) for task in core.tasks.values()]
        stats = scheduler._queue.stats()
        deadlines = len(scheduler._deadlines)
        live = sum(1 for task in scheduler._queue.pending())
        probe = core._ids
    tasks, records, kib, wal_kib = _store_counts(store, path)
    next_id = _peek_id(probe)
    return Sample(
        day=round(day, 2),
        runs=sum(listener.outcomes.values()),
        traced_kib=tracemalloc.get_traced_memory()[0] // 1024 if tracemalloc.is_tracing() else 0,
        rss_kib=_rss_kib(),
        registered=len(core.tasks),
        finished_held=retention.held(),
        retired_ids=len(retention._retired),
        retired_log=len(retention.log),
        max_history=max(histories, default=0),
        history_total=sum(histories),
        heap=stats.entries,
        tombstones=stats.tombstones,
        live=live,
        deadlines=deadlines,
        threads=threading.active_count(),
        fds=_fds(),
        backlog=len(scheduler._dispatcher._events),
        dropped=scheduler.dropped_events,
        dead_letter=len(scheduler.dead_letter()),
        store_tasks=tasks,
        store_records=records,
        store_kib=kib,
        wal_kib=wal_kib,
        caches=_caches(),
        next_id=next_id,
    )


def _peek_id(ids: Any) -> int:
    """The number of the next default id, read without taking it (0 if not sequential)."""
    for cell in getattr(ids, "__closure__", None) or ():  # sequential_ids: a count in a cell
        if isinstance(cell.cell_contents, itertools.count):
            return int(repr(cell.cell_contents)[len("count(") : -1])
    return 0


# -- running it -------------------------------------------------------------------------------


@contextmanager
def _quiet() -> Iterator[None]:
    """The scheduler's log lines go nowhere (its logger's NullHandler): a service has a
    handler of its own, and pytest's capture holds every line of the test in memory."""
    logger = logging.getLogger("lldsched")
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.propagate = propagate


@contextmanager
def _store(config: SoakConfig) -> Iterator[tuple[TaskStore | None, str | None]]:
    if config.store == "none":
        yield None, None
    elif config.store == "memory":
        yield InMemoryTaskStore(retention=config.retention), None
    elif config.path is not None:
        with SqliteTaskStore(config.path, retention=config.retention) as store:
            yield store, config.path
    else:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "soak.db")
            with SqliteTaskStore(path, retention=config.retention) as store:
                yield store, path


def build(
    config: SoakConfig, clock: Clock, store: TaskStore | None, listener: CountingListener
) -> Scheduler:
    options: dict[str, Any] = {}
    if config.purge_retired:
        options["purge_retired"] = True
    return Scheduler(
        workers=4,
        clock=clock,
        store=store,
        listeners=[listener],
        tz="Europe/Berlin",
        retain_finished=config.retain_finished,
        history_limit=config.history_limit,
        seed=1,
        name="soak",
        **options,
    )


def run_soak(
    config: SoakConfig, on_sample: Callable[[Sample], None] = lambda s: None
) -> list[Sample]:
    """Run ``config.days`` simulated days on a fake clock; a :class:`Sample` at the start
    and every ``config.sample_every`` days (handed to ``on_sample`` as taken)."""
    started_tracing = False
    samples: list[Sample] = []
    clock = FakeClock(START)
    _CLOCK[:] = [clock]
    try:
        with _quiet(), _store(config) as (store, path):
            listener = CountingListener()
            scheduler = build(config, clock, store, listener)
            workload = Workload(scheduler, config)
            workload.register()
            with Stepper(scheduler, timeout=30) as steps:
                steps.settle()
                minutes = round(config.days * 1440)
                every = max(1, round(config.sample_every * 1440))
                trace_from = round(config.trace_from * 1440)
                for minute in range(minutes + 1):
                    if minute == trace_from and config.trace and not tracemalloc.is_tracing():
                        tracemalloc.start()
                        started_tracing = True
                    if minute % every == 0:
                        taken = sample(minute / 1440, scheduler, store, path, listener)
                        samples.append(taken)
                        on_sample(taken)
                    if minute == minutes:
                        break
                    workload.play_minute()
                    steps.advance(MINUTE)
    finally:
        _CLOCK.clear()
        if started_tracing:
            tracemalloc.stop()
    return samples


def run_real(config: SoakConfig, seconds: float) -> dict[str, Any]:
    """The workload on the system clock for ``seconds`` real seconds, a simulated minute
    every ``config.minute`` seconds (the minutely tasks' period, a reminder's delay
    five of them; cron keeps its real hours).  Returns the lateness (``started - due``
    of first attempts, ms) p50 and p99 of the first and the last fifth of the runs, and
    a :class:`Sample` after the first fifth of the time and at the end."""
    listener = CountingListener()
    listener.keep_lateness = True
    with _quiet(), _store(config) as (store, path):
        scheduler = build(config, SystemClock(), store, listener)
        workload = Workload(scheduler, config)
        workload.register()
        scheduler.start()
        begin = time.monotonic()
        first: Sample | None = None
        try:
            for minute in itertools.count(1):
                workload.play_minute()
                wake = begin + minute * config.minute  # on a grid: the driver does not drift
                if wake - begin > seconds:
                    break
                time.sleep(max(0.0, wake - time.monotonic()))
                if first is None and time.monotonic() - begin > seconds / 5:
                    first = sample(0, scheduler, store, path, listener)
            last = sample(0, scheduler, store, path, listener)
        finally:
            scheduler.shutdown(timeout=10)
    late = listener.lateness
    fifth = max(1, len(late) // 5)
    return {
        "runs": len(late),
        "start": _percentiles(late[:fifth]),
        "end": _percentiles(late[-fifth:]),
        "first": first,
        "last": last,
    }


def _percentiles(values: list[float]) -> tuple[float, float]:
    """p50 and p99 in milliseconds."""
    if len(values) < 2:
        only = values[0] * 1000 if values else 0.0
        return only, only
    cuts = statistics.quantiles(values, n=100)
    return cuts[49] * 1000, cuts[98] * 1000


def _row(values: list[object]) -> str:
    return " ".join(f"{v!s:>9}" for v in values)


def _above_zero(text: str) -> float:
    """An option's value that must be a finite number above 0 (argparse names the option)."""
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be finite and > 0, got {text!r}")
    return value


def _zero_or_more(text: str) -> float:
    """An option's value that must be a finite number, 0 or above."""
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be finite and >= 0, got {text!r}")
    return value


def _count(text: str) -> int:
    """An option's value that must be an int, 0 or above."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an int >= 0, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> None:
    """``python -m tests.soak``: a bad option's value exits 2 naming it (argparse's
    ``error:``, as the scheduler's own refusal of a bound does), before anything runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=_above_zero, default=30.0)
    parser.add_argument("--scale", type=_above_zero, default=1.0)
    parser.add_argument("--reminders", type=_count, default=2)
    parser.add_argument("--store", choices=("sqlite", "memory", "none"), default="sqlite")
    parser.add_argument("--purge-retired", action="store_true")
    parser.add_argument("--no-trace", action="store_true")
    parser.add_argument("--trace-from", type=float, default=0.0, help="simulated day")
    parser.add_argument("--retain-finished", type=int, default=10_000)
    parser.add_argument("--history-limit", type=int, default=100)
    parser.add_argument("--retention", type=int, default=1000, help="the SQLite store's")
    parser.add_argument("--every", type=_above_zero, default=1.0, help="simulated days per sample")
    parser.add_argument(
        "--real",
        type=_zero_or_more,
        default=0.0,
        help="run on the system clock for this many seconds instead",
    )
    parser.add_argument(
        "--minute",
        type=_above_zero,
        default=None,
        help="seconds a minutely task waits (60; --real: 1)",
    )
    args = parser.parse_args(argv)
    config = SoakConfig(
        days=args.days,
        scale=args.scale,
        reminders=args.reminders,
        store=args.store,
        purge_retired=args.purge_retired,
        trace=not args.no_trace,
        trace_from=args.trace_from,
        retain_finished=args.retain_finished,
        history_limit=args.history_limit,
        retention=args.retention,
        sample_every=args.every,
        minute=args.minute or (1.0 if args.real else MINUTE),
    )
    try:
        _report(config, real=args.real)
    except ValidationError as exc:  # a bound the scheduler or its store refuses, at its start
        parser.error(str(exc))


def _report(config: SoakConfig, *, real: float) -> None:
    """Run the soak (``real`` seconds on the system clock, or ``config.days`` simulated)
    and print what it measured; the table's header with its first row, once it began."""
    if real:
        result = run_real(config, real)
        print(
            f"{result['runs']} first attempts; lateness p50/p99 ms: "
            f"first fifth {result['start'][0]:.2f}/{result['start'][1]:.2f}, "
            f"last fifth {result['end'][0]:.2f}/{result['end'][1]:.2f}"
        )
        for name in ("first", "last"):
            print(name, result[name])
        return
    names = [f.name for f in fields(Sample)]
    header = [_row([n[:9] for n in names])]  # printed with the first sample, then gone

    def show(sample: Sample) -> None:
        while header:
            print(header.pop())
        print(_row([getattr(sample, n) for n in names]), flush=True)

    began = time.monotonic()
    run_soak(config, on_sample=show)
    print(f"{time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    main()
