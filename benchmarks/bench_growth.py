"""Growth: how lldsched's costs grow from 1e3 to 1e6 tasks, each against its peer and
its floor in the same run (issue #19), printed as a table of ratios.

Sizes are 1e3, 1e4, 1e5 and 1e6 (``--quick`` stops at 1e5) unless a row says
otherwise; each row reuses the workload of the benchmark module that owns it.

* **registration**: ``n`` tasks registered as a user writes them,
  ``scheduler.schedule("tick", f, FixedRate(60))``, on a scheduler never started, in
  CPU µs per task (one thread; CPU time is what a shared machine leaves comparable
  from one size to the next), against the floor, a bare ``heapq.heappush`` of ``n``
  tuples of the same shape.  The CPU time the cyclic collector took during the
  registrations is printed beside it (:class:`Collector`): a registration leaves one
  tracked object, so full collections start past ~40,000 tasks and are the part
  that grows; the ratio without them is reported for information;
* **churn**, one call timed at a time on those ``n`` tasks: ``n + n // 5``
  pause/resume pairs on tasks picked at random (enough tombstones to pass the
  compaction threshold at least once), then cancels of 60 % of the tasks.  Mean,
  p99 and max per verb, in µs.  A call inside which the cyclic collector ran (any
  generation) is reported apart: at 1e6 registered tasks even a young-generation
  collection took 45-72 ms of CPU here, whatever the queue does, so the goal is on
  the worst call without one, and on the CPU time the call's thread used (on a
  shared machine a call can wait for a core far longer than it works);
* **dispatch**: ``bench_dispatch``'s workload (``n`` no-op one-off tasks due at once,
  4 workers, registered before ``start()``, timed from it to the n-th action), in µs
  per job of wall time and of the process's CPU time (every thread), against a bare
  ``ThreadPoolExecutor(4)`` given the same ``n``
  calls and APScheduler 3 (``bench_dispatch.run_apscheduler``, wall time, to 1e5;
  ``--quick``: 1e4);
* **one-off stream**: a service that schedules one-off tasks forever, in batches of
  :data:`BATCH` on a started scheduler (each batch registered, then run), ``n`` runs in
  all (1e4 ... 1e6).  Untraced, the process's CPU µs per job (registration and run),
  and the collector's share of it (a single batch of 1e4 runs before the first full
  collection; from a few batches on, one runs every ~30,000 jobs over every tracked
  object of the process, pandas' included):
  the goal "dispatch per job flat from 1e4 to 1e6" is on it, since it is what a
  scheduler costs per job after ``n`` one-off runs (the dispatch row above holds all
  ``n`` registered at once, so its heap and registry are ``n`` deep whatever
  retires).  Then under tracemalloc: the memory held after the stream and at its
  peak, with the default retention, with ``retain_finished=None`` (to 1e5: the
  unbounded registry issue #19 measured) and for a ``ThreadPoolExecutor(4)`` given
  the same batches (µs per job shown too, slowed by the tracing on both sides);
* **parked-timer wake latency**: ``n`` tasks parked an hour away on a started
  scheduler, then ``bench_latency``'s probe (a ``OneTime(delay=0.05)``, ``started -
  due``) :data:`LATENCY_SAMPLES` times, against ``bench_latency``'s floor (a thread
  on a bare ``Condition.wait``), sampled in the same loop;
* **simulation** at k = 10, 100, 1,000 tasks: ``bench_sim``'s ten-task workload
  repeated k / 10 times, with 4 workers per ten tasks, for 30 * 10 / k simulated
  days (``--quick``: 0.3 of that), against SimPy running the same model
  (``bench_sim.run_simpy``), in runs per CPU second of the run itself (``run_for``;
  SimPy's ``env.run``: registration and reading the records back are not timed; both
  are single-threaded); and
  the bytes each kept record costs: traced, k = 100, *marginal* (the held bytes
  after one and after two simulated days, their difference over the difference in
  records: a task's bounded state, its recent history included, is reported apart
  per task, not divided by the records; see :func:`bytes_per_record`);
* **to_frame** of a simulation's ``n`` records (k = 100), read from its columns
  (``to_frame(sim)``), against a naive ``pandas.DataFrame(records)`` of the same
  records given as a list built before the clock starts (the strict comparison),
  best of 3 on each side at every size (the first call at 1e6 pays a one-time
  allocator warm-up, printed apart: see :func:`frames`); ``to_frame(records)`` of that
  list is printed too, for information (no goal on it);
* **scheduler history** (informational): a store-less threaded ``Scheduler``'s
  histories, 1,000 ``FixedRate`` tasks run 121 times each: traced bytes per history
  record, and ``to_frame(scheduler)`` against a naive ``DataFrame`` of its records
  (:func:`scheduler_history`).

Usage: ``python benchmarks/bench_growth.py [--quick]`` (or ``run_all.py growth``).
"""

from __future__ import annotations

import gc
import heapq
import math
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import bench_dispatch
import bench_latency
import bench_sim

from lldsched import FakeClock, FixedRate, OneTime, Schedule, Scheduler
from lldsched.core.retention import DEFAULT_RETAIN_FINISHED
from lldsched.sim import Simulation, fixed
from lldsched.views.frames import to_frame

SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000, 100_000)
VERBS = ("pause", "resume", "cancel")

APS_SIZES = (1_000, 10_000, 100_000)  # APScheduler's dispatch: 1e6 takes minutes
STREAM_SIZES = (10_000, 100_000, 1_000_000)
KEEP_ALL_SIZES = (10_000, 100_000)  # retain_finished=None: the unbounded registry
BATCH = 10_000  # one-off tasks a batch of the stream registers before they run
LATENCY_SAMPLES = 40
SIM_TASKS = (10, 100, 1_000)
RECORD_DAYS = 1.0  # each of the two stretches bytes_per_record compares
FRAME_REPEATS = 3
TIMEOUT = 300.0

GOALS: dict[str, tuple[str, float]] = {
    "churn worst call CPU without a GC at 1e5 (ms)": ("<", 20.0),
    "churn worst call CPU without a GC, largest n (ms)": ("<", 20.0),
    "register per task, largest n vs 1e4 (x)": ("<=", 1.5),
    "dispatch per job, largest n vs 1e4 (x)": ("<=", 1.2),
    "one-off memory peak, largest n (MiB)": ("<", 64.0),
    "sim vs SimPy at k=10 (x)": (">=", 4.0),
    "sim vs SimPy at k=100 (x)": (">=", 4.0),
    "sim vs SimPy at k=1000 (x)": (">=", 4.0),
    "sim bytes per kept record (tracemalloc)": ("<=", 100.0),
    "to_frame vs naive DataFrame, largest n (x)": (">=", 3.0),
}


def f() -> None:
    pass


class Collector:
    """The cyclic collector's runs while it is installed (``with Collector() as c``):
    how many (any generation, any thread), how many were full passes, and the CPU
    time they took (of the thread each ran in: a collection holds the GIL throughout,
    and wall time would count the moments a loaded machine preempts it).  What a row
    costs in CPython's collector is printed apart, since it grows with the process's
    tracked objects, not with the scheduler's data structures."""

    def __init__(self) -> None:
        self.runs = 0
        self.full = 0
        self.seconds = 0.0
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.thread_time()
        else:
            self.runs += 1
            self.full += info["generation"] == 2
            self.seconds += time.thread_time() - self._began

    def __enter__(self) -> Collector:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self)


class Samples:
    """The duration of each call of one verb, and of those a collection ran in.

    Each call also records the CPU time its thread used: on a shared machine a call
    can wait for a core far longer than it works, and the goal is on the work.
    """

    def __init__(self) -> None:
        self.all: list[float] = []
        self.collected: list[float] = []
        self.worst_cpu = 0.0  # the most CPU a call used, calls with a collection excluded

    def time(self, call: Callable[[str], bool], task_id: str, collector: Collector) -> None:
        before = collector.runs
        c0 = time.thread_time()
        t0 = time.perf_counter()
        call(task_id)
        elapsed = time.perf_counter() - t0
        cpu = time.thread_time() - c0
        if collector.runs == before:
            self.all.append(elapsed)
            self.worst_cpu = max(self.worst_cpu, cpu)
        else:
            self.collected.append(elapsed)

    def summary(self) -> tuple[float, float, float]:
        """Mean, p99 and max in µs, over every call (collections included)."""
        ordered = sorted(self.all + self.collected)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return statistics.fmean(ordered) * 1e6, p99 * 1e6, ordered[-1] * 1e6


class Registered(NamedTuple):
    per_task: float  # CPU µs per task, lldsched
    floor: float  # CPU µs per push, the bare heapq
    collector: float  # µs per task of lldsched's registrations spent in the collector
    full: int  # full collections among them
    scheduler: Scheduler  # for the churn (hold no other reference: it holds n tasks)


def registration(n: int) -> Registered:
    """µs per task for lldsched (and the collector's share of it) and for the floor."""
    heap: list[tuple[float, int, int, str]] = []
    gc.collect()
    t0 = time.thread_time()  # CPU time: one thread, and the machine may be shared
    for i in range(n):
        heapq.heappush(heap, (60.0 + i, 1, i, "tick"))
    floor = (time.thread_time() - t0) / n * 1e6
    del heap
    scheduler = Scheduler(workers=1)
    gc.collect()
    with Collector() as collector:
        t0 = time.thread_time()
        for _ in range(n):
            scheduler.schedule("tick", f, FixedRate(60))
        per_task = (time.thread_time() - t0) / n * 1e6
    return Registered(per_task, floor, collector.seconds / n * 1e6, collector.full, scheduler)


def churn(scheduler: Scheduler, seed: int = 19) -> dict[str, Samples]:
    rng = random.Random(seed)
    ids = [task.id for task in scheduler.tasks()]
    n = len(ids)
    samples = {verb: Samples() for verb in VERBS}
    with Collector() as collector:
        for _ in range(n + n // 5):
            task_id = ids[rng.randrange(n)]
            samples["pause"].time(scheduler.pause, task_id, collector)
            samples["resume"].time(scheduler.resume, task_id, collector)
        for task_id in rng.sample(ids, k=n * 3 // 5):
            samples["cancel"].time(scheduler.cancel, task_id, collector)
    return samples


# -- dispatch ------------------------------------------------------------------------------


class PerJob(NamedTuple):
    wall: float  # µs per job
    cpu: float  # µs of the process's CPU time (every thread) per job


def dispatch(n: int) -> PerJob:
    """``bench_dispatch.run_lldsched``'s workload (no store, no listener), timed from
    ``start()`` to the n-th action in wall time and in the process's CPU time: on a
    shared machine the CPU time is what stays comparable from one size to the next."""
    done = bench_dispatch._Done(n)

    def noop() -> None:  # a function: a callable object costs a signature lookup to register
        done()

    scheduler = Scheduler(workers=bench_dispatch.WORKERS)
    at = time.time() - 1.0
    for _ in range(n):
        scheduler.schedule("noop", noop, OneTime(at=at))
    gc.collect()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        scheduler.start()
        if not done.event.wait(TIMEOUT):
            raise RuntimeError(f"lldsched ran fewer than {n} tasks in {TIMEOUT} s")
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        scheduler.shutdown(timeout=TIMEOUT)
    return PerJob(wall / n * 1e6, cpu / n * 1e6)


def thread_pool(n: int) -> PerJob:
    """A bare ``ThreadPoolExecutor`` running ``n`` no-op calls (submit included)."""
    done = bench_dispatch._Done(n)
    with ThreadPoolExecutor(bench_dispatch.WORKERS) as pool:
        gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(n):
            pool.submit(done)
        if not done.event.wait(TIMEOUT):
            raise RuntimeError(f"the thread pool ran fewer than {n} calls in {TIMEOUT} s")
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return PerJob(wall / n * 1e6, cpu / n * 1e6)


class Stream(NamedTuple):
    per_job: float  # µs per job, registration and run (traced: slower than untraced)
    collector: float  # of which µs per job in the collector (NaN: not timed)
    full: int  # full collections during the stream
    held: float  # MiB still traced after the last batch (NaN: not traced)
    peak: float  # MiB traced at the stream's peak (NaN: not traced)


Measure = Callable[[Callable[[], None], int], Stream]
"""How a stream is measured: it runs ``n // BATCH`` batches of the given function."""


def cpu_timed(run_batch: Callable[[], None], n: int) -> Stream:
    """Run ``n // BATCH`` batches untraced: the process's CPU µs per job (every thread),
    and the collector's share of it."""
    gc.collect()
    with Collector() as collector:
        c0 = time.process_time()
        for _ in range(n // BATCH):
            run_batch()
        per_job = (time.process_time() - c0) / n * 1e6
    return Stream(per_job, collector.seconds / n * 1e6, collector.full, math.nan, math.nan)


def traced(run_batch: Callable[[], None], n: int) -> Stream:
    """Run ``n // BATCH`` batches under tracemalloc: what they leave held, and their peak.
    Traced memory is exact and independent of what earlier rows left in the allocator
    (resident memory is not: freed arenas are reused without growing it)."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        t0 = time.perf_counter()
        for _ in range(n // BATCH):
            run_batch()
        elapsed = time.perf_counter() - t0
        gc.collect()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return Stream(elapsed / n * 1e6, math.nan, 0, (held - base) / 2**20, (peak - base) / 2**20)


def stream(n: int, *, retain: int | None, measure: Measure = traced) -> Stream:
    """A service scheduling ``n`` one-off tasks in batches (see the module docstring).

    On a ``FakeClock``: each batch is due a second ahead and the clock moves on once it
    is registered, so the workers run it as ``bench_dispatch`` does (registered first),
    not one wake-up per registration."""
    clock = FakeClock(bench_sim.START)
    scheduler = Scheduler(
        workers=bench_dispatch.WORKERS, clock=clock, retain_finished=retain
    ).start()

    def batch() -> None:
        done = bench_dispatch._Done(BATCH)

        def remind() -> None:  # a function, as in dispatch()
            done()

        at = clock.now() + 1.0
        for _ in range(BATCH):
            scheduler.schedule("remind", remind, OneTime(at=at))
        clock.advance(1.0)
        if not done.event.wait(TIMEOUT) or not scheduler.wait_idle(TIMEOUT):
            raise RuntimeError(f"a batch of {BATCH} did not run in {TIMEOUT} s")

    try:
        return measure(batch, n)
    finally:
        scheduler.shutdown(timeout=TIMEOUT)


def thread_pool_stream(n: int) -> Stream:
    """The same batches of calls, given to a bare ``ThreadPoolExecutor``."""
    with ThreadPoolExecutor(bench_dispatch.WORKERS) as pool:

        def batch() -> None:
            done = bench_dispatch._Done(BATCH)
            for _ in range(BATCH):
                pool.submit(done)
            if not done.event.wait(TIMEOUT):
                raise RuntimeError(f"a batch of {BATCH} did not run in {TIMEOUT} s")

        return traced(batch, n)


# -- wake latency ----------------------------------------------------------------------------


def parked_latency(n: int) -> tuple[float, float]:
    """p50 of ``started - due`` (ms) for a probe with ``n`` tasks parked an hour away,
    and of the bare Condition floor sampled in the same loop."""
    scheduler = Scheduler(workers=bench_latency.WORKERS)
    at = time.time() + 3600.0
    for _ in range(n):
        scheduler.schedule("parked", f, OneTime(at=at))
    floor = bench_latency._TimedFloor()
    ours: list[float] = []
    floors: list[float] = []
    try:
        scheduler.start()
        for _ in range(LATENCY_SAMPLES):
            floors.append(floor.sample())
            ours.append(bench_latency._lldsched_sample(scheduler, bench_latency.DELAY))
    finally:
        floor.close()
        scheduler.shutdown(drain=False, timeout=TIMEOUT)
    return statistics.median(ours) * 1e3, statistics.median(floors) * 1e3


# -- simulation ------------------------------------------------------------------------------


def sim_workload(k: int) -> list[tuple[str, Schedule, float]]:
    """``bench_sim``'s ten tasks, repeated ``k / 10`` times."""
    return [
        (f"{name}-{copy}", schedule, duration)
        for copy in range(k // len(bench_sim.WORKLOAD))
        for name, schedule, duration in bench_sim.WORKLOAD
    ]


def sim_workers(k: int) -> int:
    """Four workers per ten tasks, as in ``bench_sim``."""
    return bench_sim.WORKERS * k // len(bench_sim.WORKLOAD)


def sim_versus_simpy(k: int, *, days: float) -> tuple[float, float]:
    """Runs per CPU second for lldsched and SimPy on ``k`` tasks over ``days`` (both are
    single-threaded: CPU time is what a shared machine leaves comparable).

    Only the run itself is timed on each side: lldsched's ``sim.run_for`` and SimPy's
    ``env.run``.  Registering the tasks (making SimPy's processes) and counting the
    runs after (``sim.records()`` builds a record object per row) are not."""
    import simpy  # noqa: F401  (imported before the clock starts)

    workload = sim_workload(k)
    workers = sim_workers(k)
    # The earlier rows leave schedulers of up to a million tasks behind as garbage; a
    # collection of it inside a timed run is charged to that run.  Both sides start
    # from a collected heap.
    gc.collect()
    ours = bench_sim.run_lldsched(workload=workload, days=days, workers=workers)
    gc.collect()
    theirs = bench_sim.run_simpy(workload=workload, days=days, workers=workers)
    return ours.runs / ours.cpu, theirs.runs / theirs.cpu


class RecordBytes(NamedTuple):
    per_record: float  # traced bytes each further kept record adds (marginal)
    per_task: float  # traced bytes of the rest after the first stretch, per task
    records: int  # records kept after both stretches


def bytes_per_record(k: int, *, days: float) -> RecordBytes:
    """Traced bytes a simulation of ``k`` tasks holds for each further record it keeps.

    *Marginal*: the held bytes after ``days`` and after ``2 * days`` of simulated
    time, their difference over the difference in records kept.  What a task holds
    whatever its number of runs (its object, its queue entry, its recent history,
    bounded by ``history_limit``) is then not charged to the records: divided by
    the few records of a short run, it made this row 111 B where the log's columns
    hold 47 B a record.  That bounded part is reported apart, per task (the held
    bytes after the first stretch, less its records at the marginal cost).  The log
    is settled (``record_log().columns()``) before each reading, so records waiting
    to be packed do not count; tracing starts before the simulation is built, so
    every block it reallocates is traced from its birth."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        sim = Simulation(workers=sim_workers(k), start=bench_sim.START)
        for name, schedule, duration in sim_workload(k):
            sim.schedule(name, schedule, duration=fixed(duration))
        held: list[tuple[int, int]] = []  # (traced bytes, records kept) after each stretch
        for _ in range(2):
            sim.run_for(days * 86400)
            sim.record_log().columns()  # settles the log: no record waits as an object
            gc.collect()
            held.append((tracemalloc.get_traced_memory()[0] - base, len(sim.record_log())))
    finally:
        tracemalloc.stop()
    (first, kept_first), (second, kept) = held
    per_record = (second - first) / (kept - kept_first)
    return RecordBytes(per_record, (first - per_record * kept_first) / k, kept)


# -- frames ----------------------------------------------------------------------------------


FRAME_TASKS = 100  # the simulation whose records the to_frame row converts
FRAME_STEP = 300.0  # simulated seconds run at a time until it holds n records


def timed(build: Callable[[], object]) -> list[float]:
    """Seconds of each of :data:`FRAME_REPEATS` calls of ``build``, each from a
    collected heap."""
    times = []
    for _ in range(FRAME_REPEATS):
        gc.collect()
        t0 = time.perf_counter()
        build()
        times.append(time.perf_counter() - t0)
    return times


class Frames(NamedTuple):
    records: int  # the records converted (n, or a few hundred more)
    ours: float  # s: to_frame(sim), read from its columnar log
    ours_first: float  # s: its first call (the process's first frame of this size: cold)
    naive: float  # s: pandas.DataFrame(records) of the same records, a list built untimed
    listed: float  # s: to_frame(records) of that list (informational)


def frames(n: int) -> Frames:
    """Seconds to make a frame of a simulation's ``n`` records (a few hundred more:
    it runs :data:`FRAME_STEP` at a time until it holds ``n``), best of
    :data:`FRAME_REPEATS` on each side, and ours' first call apart.

    The first call at a new size pays the allocator's warm-up: at 1e6 it took 0.35-0.50 s
    against 0.10-0.13 s for the next ones (glibc serves the first large arrays from
    fresh ``mmap`` pages and keeps the later ones in its heap).  The naive side warms up
    the same way over its own repeats, so the goal compares the best of each.

    Ours is ``to_frame(sim)``, read straight from the simulation's columns; the naive
    one is ``pandas.DataFrame(records)`` of the same records, given as a list built
    before the clock starts (so it is not charged for making the record objects:
    the strict comparison).  ``to_frame(records)`` of that list is timed too, for
    information: it is the path of a plain list of records."""
    import pandas as pd

    sim = Simulation(workers=sim_workers(FRAME_TASKS), start=bench_sim.START)
    for name, schedule, duration in sim_workload(FRAME_TASKS):
        sim.schedule(name, schedule, duration=fixed(duration))
    while len(sim.record_log()) < n:
        sim.run_for(FRAME_STEP)
    records = sim.records()

    ours = timed(lambda: to_frame(sim))
    return Frames(
        records=len(records),
        ours=min(ours),
        ours_first=ours[0],
        naive=min(timed(lambda: pd.DataFrame(records))),
        listed=min(timed(lambda: to_frame(records))),
    )


HISTORY_TASKS = 1_000  # the store-less scheduler whose histories scheduler_history() fills
HISTORY_ROUNDS = 121  # runs of each task: its history (100) full, and a tail not yet packed


class History(NamedTuple):
    per_record: float  # traced bytes the scheduler holds per history record (all included)
    records: int  # records in its histories
    ours: float  # s: to_frame(scheduler), read from the packed histories
    naive: float  # s: pandas.DataFrame(records) of scheduler.records(), built untimed


def scheduler_history() -> History:
    """A store-less threaded ``Scheduler`` of :data:`HISTORY_TASKS` ``FixedRate`` tasks
    run :data:`HISTORY_ROUNDS` times each on a ``FakeClock`` (``history_limit`` 100):
    the traced bytes it holds per history record (the tasks themselves included), and
    ``to_frame(scheduler)`` against a naive ``pandas.DataFrame`` of its records (a
    list built untimed), best of :data:`FRAME_REPEATS`.  Informational: issue #19's
    goals are on the simulation."""
    import pandas as pd

    clock = FakeClock(bench_sim.START)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        scheduler = Scheduler(workers=bench_dispatch.WORKERS, clock=clock)
        for _ in range(HISTORY_TASKS):
            scheduler.schedule("tick", f, FixedRate(60))
        scheduler.start()
        for _ in range(HISTORY_ROUNDS):
            clock.advance(60.0)
            if not scheduler.wait_idle(TIMEOUT):
                raise RuntimeError(f"a round of {HISTORY_TASKS} runs did not end in {TIMEOUT} s")
        scheduler.shutdown(timeout=TIMEOUT)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    records = scheduler.records()

    ours = min(timed(lambda: to_frame(scheduler)))
    naive = min(timed(lambda: pd.DataFrame(records)))
    return History(held / len(records), len(records), ours, naive)


# -- the table -------------------------------------------------------------------------------


class Ratio(NamedTuple):
    """One row of the table: lldsched's figure, and its peer's or floor's."""

    row: str
    n: int
    ours: float
    other: float
    unit: str
    against: str


def _size(n: int) -> str:
    return f"1e{len(str(n)) - 1}"


def _print_ratios(ratios: list[Ratio]) -> None:
    print("growth: lldsched / the other, per row (time, memory: lower is better;")
    print("        runs per second, shown as the other's time per run: lower is better too)")
    print(f"  {'row':<26} {'n':>5} {'lldsched':>11} {'other':>11} {'ratio':>8}  other (unit)")
    for r in ratios:
        ratio = r.ours / r.other if r.other else float("nan")
        print(
            f"  {r.row:<26} {_size(r.n):>5} {r.ours:>11,.3f} {r.other:>11,.3f} {ratio:>7.2f}x"
            f"  {r.against} ({r.unit})"
        )


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = sys.argv[1:] if argv is None else argv
    quick = "--quick" in args
    sizes = QUICK_SIZES if quick else SIZES
    largest = sizes[-1]
    results: dict[str, float] = {}
    ratios: list[Ratio] = []

    print("registration and churn: a scheduler that is not started; µs/task, µs/call")
    print(
        f"  {'n':>9}  {'register':>8} {'floor':>6} {'ratio':>6}   "
        + "   ".join(f"{verb + ' mean/p99/max':>26}" for verb in VERBS)
        + "   calls with a GC (longest ms)"
    )
    register: dict[int, float] = {}  # µs per task
    outside: dict[int, float] = {}  # µs per task outside the collector
    for n in sizes:
        per_task, floor, collector, full, scheduler = registration(n)  # the only reference
        register[n], outside[n] = per_task, per_task - collector
        ratios.append(Ratio("register", n, per_task, floor, "µs/task", "bare heapq"))
        samples = churn(scheduler)
        stats = scheduler.queue_stats()
        scheduler.shutdown()
        del scheduler
        summaries = {verb: samples[verb].summary() for verb in VERBS}
        collected = [t for s in samples.values() for t in s.collected]
        worst_cpu = max(s.worst_cpu for s in samples.values())
        cells = "   ".join(
            f"{mean:>8.1f} /{p99:>7.1f} /{worst:>8,.0f}" for mean, p99, worst in summaries.values()
        )
        longest = f"{max(collected) * 1e3:,.1f}" if collected else "-"
        print(
            f"  {n:>9,}  {per_task:>8.2f} {floor:>6.2f} {per_task / floor:>5.1f}x   {cells}"
            f"   {len(collected)} ({longest})"
        )
        print(
            f"  {'':>9}  heap after churn: {stats.entries:,} entries, {stats.tombstones:,} "
            f"dead; worst call's CPU time without a GC {worst_cpu * 1e3:.1f} ms; "
            f"registration in the collector {collector:.2f} µs/task ({full} full passes)"
        )
        size = _size(n)
        results[f"register at {size} (µs/task)"] = per_task
        results[f"register at {size} vs heapq floor (x)"] = per_task / floor
        for verb, (mean, _, worst) in summaries.items():
            results[f"{verb} mean at {size} (µs)"] = mean
            results[f"{verb} max at {size} (ms)"] = worst / 1e3
        results[f"churn worst call CPU without a GC at {size} (ms)"] = worst_cpu * 1e3
    results["churn worst call CPU without a GC, largest n (ms)"] = results[
        f"churn worst call CPU without a GC at {_size(largest)} (ms)"
    ]
    results["register per task, largest n vs 1e4 (x)"] = register[largest] / register[10_000]
    results["register per task without the collector, largest n vs 1e4 (x)"] = (
        outside[largest] / outside[10_000]
    )

    print("dispatch: n one-off no-op tasks due at once, 4 workers; µs per job, wall (CPU)")
    cpu: dict[int, float] = {}
    for n in sizes:
        ours = dispatch(n)
        pool = thread_pool(n)
        cpu[n] = ours.cpu
        line = (
            f"  {n:>9,}  lldsched {ours.wall:6.2f} ({ours.cpu:5.2f})   "
            f"ThreadPoolExecutor {pool.wall:6.2f} ({pool.cpu:5.2f})"
        )
        pool_name = "ThreadPoolExecutor"
        ratios.append(Ratio("dispatch", n, ours.wall, pool.wall, "µs/job", pool_name))
        ratios.append(Ratio("dispatch, CPU", n, ours.cpu, pool.cpu, "µs/job", pool_name))
        if n in APS_SIZES and (not quick or n <= 10_000):
            aps = bench_dispatch.run_apscheduler(n).run.wall / n * 1e6
            line += f"   APScheduler 3 {aps:6.2f}"
            ratios.append(Ratio("dispatch", n, ours.wall, aps, "µs/job", "APScheduler 3"))
            results[f"dispatch at {_size(n)} vs APScheduler (x)"] = aps / ours.wall
        print(line)
        results[f"dispatch at {_size(n)} (µs/job)"] = ours.wall
        results[f"dispatch at {_size(n)}, CPU (µs/job)"] = ours.cpu
    results["dispatch registered first, largest n vs 1e4 (x)"] = cpu[largest] / cpu[10_000]

    print(
        f"one-off stream: batches of {BATCH:,} one-off tasks on a started scheduler, traced; "
        "MiB held after the stream / at its peak"
    )
    peak = 0.0
    streamed_cpu: dict[int, float] = {}
    outside_collector: dict[int, float] = {}
    for n in (n for n in STREAM_SIZES if n <= largest):
        untraced = stream(n, retain=DEFAULT_RETAIN_FINISHED, measure=cpu_timed)
        streamed_cpu[n] = untraced.per_job
        outside_collector[n] = untraced.per_job - untraced.collector
        print(
            f"  {n:>9,}  untraced: {streamed_cpu[n]:5.2f} CPU µs/job, of which in the collector "
            f"{untraced.collector:4.2f} ({untraced.full} full passes)"
        )
        ratios.append(Ratio("one-off stream, CPU", n, streamed_cpu[n], streamed_cpu[10_000],
                            "µs/job", "the same at 1e4"))  # fmt: skip
        results[f"one-off stream at {_size(n)}, CPU (µs/job)"] = streamed_cpu[n]
        streamed = stream(n, retain=DEFAULT_RETAIN_FINISHED)
        pooled = thread_pool_stream(n)
        peak = streamed.peak
        line = (
            f"  {n:>9,}  default retention: {streamed.held:5.1f} / {streamed.peak:5.1f} MiB "
            f"({streamed.per_job:5.2f} µs/job)   ThreadPoolExecutor: {pooled.held:4.1f} / "
            f"{pooled.peak:4.1f} MiB ({pooled.per_job:5.2f} µs/job)"
        )
        ratios.append(Ratio("one-off stream, traced", n, streamed.per_job, pooled.per_job, "µs/job",
                            "ThreadPoolExecutor"))  # fmt: skip
        ratios.append(Ratio("one-off memory peak", n, streamed.peak, pooled.peak, "MiB traced",
                            "ThreadPoolExecutor"))  # fmt: skip
        if n in KEEP_ALL_SIZES:
            kept = stream(n, retain=None)
            line += f"   retain_finished=None: {kept.held:5.1f} / {kept.peak:5.1f} MiB"
            ratios.append(Ratio("one-off memory peak", n, streamed.peak, kept.peak, "MiB traced",
                                "retain_finished=None"))  # fmt: skip
            results[f"one-off memory peak at {_size(n)}, keep all (MiB)"] = kept.peak
        print(line)
        results[f"one-off memory held after {_size(n)} runs (MiB)"] = streamed.held
        results[f"one-off memory peak at {_size(n)} (MiB)"] = streamed.peak
    results["one-off memory peak, largest n (MiB)"] = peak
    results["dispatch per job, largest n vs 1e4 (x)"] = streamed_cpu[largest] / streamed_cpu[10_000]
    results["dispatch per job without the collector, largest n vs 1e4 (x)"] = (
        outside_collector[largest] / outside_collector[10_000]
    )

    print(f"parked-timer wake latency: n tasks an hour away, p50 of {LATENCY_SAMPLES} probes")
    for n in sizes:
        ours_ms, floor_ms = parked_latency(n)
        print(f"  {n:>9,}  lldsched {ours_ms:6.3f} ms   bare Condition floor {floor_ms:6.3f} ms")
        ratios.append(Ratio("wake latency p50", n, ours_ms, floor_ms, "ms", "Condition.wait"))
        results[f"wake latency p50 at {_size(n)} (ms)"] = ours_ms
        results[f"wake latency p50 at {_size(n)} vs floor (x)"] = ours_ms / floor_ms

    scale = 0.3 if quick else 1.0
    print(
        "simulation: bench_sim's workload repeated k / 10 times; runs per CPU second of the "
        "run itself (run_for; SimPy's env.run)"
    )
    for k in SIM_TASKS:
        days = bench_sim.DAYS * 10 / k * scale
        ours_rate, simpy_rate = sim_versus_simpy(k, days=days)
        print(f"  k={k:>5,} {days:5.2f} days  lldsched {ours_rate:9,.0f}  SimPy {simpy_rate:9,.0f}")
        ratios.append(Ratio("simulation", k, 1e6 / ours_rate, 1e6 / simpy_rate, "µs/run", "SimPy"))
        results[f"sim vs SimPy at k={k} (x)"] = ours_rate / simpy_rate
    record_bytes = bytes_per_record(100, days=RECORD_DAYS)
    print(
        f"  bytes per kept record (tracemalloc, k=100, marginal over {RECORD_DAYS:g} + "
        f"{RECORD_DAYS:g} days, {record_bytes.records:,} records): "
        f"{record_bytes.per_record:.1f}; bounded state per task besides (its object, "
        f"queue entry, history): {record_bytes.per_task:,.0f}"
    )
    results["sim bytes per kept record (tracemalloc)"] = record_bytes.per_record
    results["sim bounded bytes per task (tracemalloc)"] = record_bytes.per_task

    print(
        f"to_frame: the records of a simulation of k={FRAME_TASKS} tasks; seconds "
        "(naive: of the same records as a list built untimed)"
    )
    frame_ratio = 0.0
    for n in sizes:
        made = frames(n)
        frame_ratio = made.naive / made.ours
        print(
            f"  {made.records:>9,}  to_frame(sim) {made.ours:7.3f}   pandas.DataFrame(records) "
            f"{made.naive:7.3f}  ({frame_ratio:4.2f}x)   informational: to_frame(records) "
            f"{made.listed:7.3f} ({made.naive / made.listed:4.2f}x)   "
            f"to_frame(sim)'s first call {made.ours_first:.3f}"
        )
        ratios.append(Ratio("to_frame(sim)", n, made.ours, made.naive, "s", "DataFrame(records)"))
        results[f"to_frame at {_size(n)} vs naive (x)"] = frame_ratio
        results[f"to_frame of a list at {_size(n)} vs naive (x)"] = made.naive / made.listed
    results["to_frame vs naive DataFrame, largest n (x)"] = frame_ratio

    history = scheduler_history()
    print(
        f"store-less Scheduler, {HISTORY_TASKS:,} FixedRate tasks x {HISTORY_ROUNDS} runs "
        f"(history_limit 100): {history.per_record:.0f} traced bytes per history record "
        f"({history.records:,}, the tasks included); to_frame(scheduler) {history.ours:.3f} s, "
        f"pandas.DataFrame(records) {history.naive:.3f} s ({history.naive / history.ours:.2f}x)"
    )
    results["scheduler bytes per history record (tracemalloc)"] = history.per_record
    results["to_frame(scheduler) vs naive (x)"] = history.naive / history.ours

    _print_ratios(ratios)
    return results


if __name__ == "__main__":
    print(main())
