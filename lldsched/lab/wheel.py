"""The heap against a hierarchical timing wheel (Varghese & Lauck, 1987).

:class:`TimingWheel` keeps the :class:`~lldsched.core.duequeue.TaskQueue`'s operations
(``push``, ``discard``, ``live``, ``pop_due``, ``next_due``, tombstones by generation)
on a different structure: ``levels`` wheels of ``slots`` buckets.  A due instant is
rounded to a tick of ``resolution`` seconds; an entry goes to the lowest wheel whose
bucket can tell its tick apart, and moves down a wheel (a *cascade*) when time
reaches its bucket.  Entries beyond the top wheel wait in an overflow list.  A due
instant goes to the tick that ends at or after it (rounded up, as kernel timers are),
so an entry never comes out before it is due, and at most one tick after; the real
heap hands out the same entries in the same order wherever no two fall in one tick
(``tests/test_lab_fairness.py``).

What it buys: ``push`` is O(levels), with no comparison between entries, and
expiring is O(1) per entry plus O(1) per tick walked.  What it costs a job
scheduler: the ticks walked grow with the time covered (a day at 1 ms is 86.4
million ticks, most of them empty), and within a tick entries come out in the order
they went in, not by priority.  :func:`compare_wheel_and_heap` measures insert and
pop cost against the real heap from 1e3 to 1e6 timers.
"""

from __future__ import annotations

import collections
import itertools
import math
import random
from collections.abc import Mapping
from typing import NamedTuple, cast

from lldsched import checks
from lldsched.core.duequeue import TaskQueue
from lldsched.core.task import Entry, ScheduledTask
from lldsched.errors import shown
from lldsched.lab._support import cpu_time, lab_seconds, no_collection, several, whole_count
from lldsched.lab.entries import StandIn
from lldsched.model import Priority

__all__ = [
    "SLOTS_MOST",
    "TICKS_MOST",
    "TimingWheel",
    "WheelCost",
    "compare_wheel_and_heap",
    "pop_order_within_a_tick",
]

SLOTS_MOST = 4_096
"""The most buckets a wheel takes (``slots``): 2**12, eight times the largest wheel a
real timer uses (Linux's timer wheel has 64 buckets a level, Netty's ``HashedWheelTimer``
512 by default, Kafka's ``TimingWheel`` 20).  Every bucket of every level is built
before anything runs, so 16 levels of 4,096 are 65,536 empty lists, about 4 MB; without
the bound ``slots=2**40`` tried to build 2**40 lists a level and ate the machine's
memory before a timer was pushed."""

TICKS_MOST = 100_000_000
"""The most ticks :func:`compare_wheel_and_heap` walks a size (``horizon / resolution``):
a day at 1 ms (86.4 million ticks, the cost the module docstring names) fits, and walks
in about 40 s of CPU (0.4 us a tick).  A ``resolution=1e-9`` over the 60 s default
walked 6e10 ticks a size, for hours."""


class TimingWheel:
    """A hierarchical timing wheel with the due queue's operations (not locked).

    ``resolution``: seconds a tick, finite and at least a microsecond (finer, an instant's
    float cannot tell ticks apart); ``slots``: buckets a wheel, a power of two from 2 to
    :data:`SLOTS_MOST`; ``levels``: wheels, a whole number from 1 to 16; ``start``: the
    instant of the first tick.  Anything else is a ``ValueError`` naming it."""

    def __init__(
        self, *, resolution: float = 0.001, slots: int = 64, levels: int = 4, start: float = 0.0
    ) -> None:
        # A resolution of 5e-324 made start / resolution infinite (an OverflowError).
        resolution = checks.step(resolution, name="resolution", error=ValueError)
        start = lab_seconds("start", start)
        whole_count("levels", levels, at_most=16)  # 64**16 ticks: past any horizon
        if (
            isinstance(slots, bool)
            or not isinstance(slots, int)
            or slots < 2
            or slots & (slots - 1)
        ):
            raise ValueError(f"slots must be a power of two >= 2, got {shown(slots)}")
        if slots > SLOTS_MOST:
            raise ValueError(
                f"slots must be at most {SLOTS_MOST:,} (every bucket of every level is built "
                f"up front), got {shown(slots)}"
            )
        self.resolution = resolution
        self._bits = slots.bit_length() - 1
        self._mask = slots - 1
        self._levels = levels
        self._tick = math.floor(start / resolution)  # it and every tick before: expired
        self._wheels: list[list[list[Entry]]] = [[[] for _ in range(slots)] for _ in range(levels)]
        self._overflow: list[Entry] = []
        self._ready: collections.deque[Entry] = collections.deque()  # expired, not handed out
        self._sequence = itertools.count(1)
        self._size = 0  # entries held, tombstones included
        self._tombstones = 0
        self.ticks = 0  # ticks walked, for the measurements
        self.tasks: Mapping[str, ScheduledTask] = {}

    def attach(self, tasks: Mapping[str, ScheduledTask]) -> None:
        self.tasks = tasks

    def push(self, task: ScheduledTask, due: float) -> None:
        sequence = next(self._sequence)
        if task._queued:
            self._tombstones += 1
        task._queued = True
        task.generation = sequence
        self._file((due, task.priority._value_, sequence, task.id))
        self._size += 1

    def _file(self, entry: Entry) -> None:
        tick = max(math.ceil(entry[0] / self.resolution), self._tick)  # never early
        bits, now = self._bits, self._tick
        for level in range(self._levels):
            shift = bits * (level + 1)
            if tick >> shift == now >> shift:  # same digits above this wheel: it belongs here
                if level == 0 and tick == now:
                    self._ready.append(entry)
                else:
                    self._wheels[level][(tick >> (bits * level)) & self._mask].append(entry)
                return
        self._overflow.append(entry)

    def discard(self, task: ScheduledTask) -> None:
        task.generation = 0
        if task._queued:
            task._queued = False
            self._tombstones += 1

    def live(self, entry: Entry) -> ScheduledTask | None:
        task = self.tasks.get(entry[3])
        return task if task is not None and task.generation == entry[2] else None

    def _advance(self) -> None:
        """Walk one tick: cascade the buckets time has reached, expire the tick's bucket."""
        self._tick = tick = self._tick + 1
        self.ticks += 1
        bits, mask = self._bits, self._mask
        if tick & mask == 0:  # a lower wheel wrapped: cascade, highest wheel first
            top = self._levels
            while top > 1 and tick & ((1 << (bits * top)) - 1):
                top -= 1
            if top == self._levels and not tick & ((1 << (bits * top)) - 1):
                moved, self._overflow = self._overflow, []
                for entry in moved:
                    self._file(entry)
                top -= 1
            for level in range(top, 0, -1):
                bucket = self._wheels[level][(tick >> (bits * level)) & mask]
                if bucket:
                    self._wheels[level][(tick >> (bits * level)) & mask] = []
                    for entry in bucket:
                        self._file(entry)
        bucket = self._wheels[0][tick & mask]
        if bucket:
            self._wheels[0][tick & mask] = []
            self._ready.extend(bucket)

    def pop_due(self, now: float, limit: int) -> list[Entry]:
        """Up to ``limit`` live entries whose tick is at or before ``now``'s (so due at or
        before ``now``: a due instant is rounded up to its tick), in the order their ticks
        expired (within a tick: the order they were pushed)."""
        target = math.floor(now / self.resolution)  # as _file divides: one rounding
        due: list[Entry] = []
        while True:
            ready = self._ready
            while ready and len(due) < limit:
                entry = ready.popleft()
                self._size -= 1
                task = self.live(entry)
                if task is None:
                    self._tombstones -= 1
                    continue
                task._queued = False
                due.append(entry)
            if len(due) >= limit or self._tick >= target:
                return due
            self._advance()

    def next_due(self) -> float | None:
        """The due instant of the first live entry: the earliest bucket of the lowest
        wheel that holds any (O(levels x slots) buckets looked at)."""
        live = [entry[0] for entry in self._ready if self.live(entry) is not None]
        if live:
            return min(live)
        bits, mask = self._bits, self._mask
        for level in range(self._levels):
            start = (self._tick >> (bits * level)) & mask
            for offset in range(mask + 1):
                bucket = self._wheels[level][(start + offset) & mask]
                live = [entry[0] for entry in bucket if self.live(entry) is not None]
                if live:
                    return min(live)
        live = [entry[0] for entry in self._overflow if self.live(entry) is not None]
        return min(live) if live else None

    def __len__(self) -> int:
        return self._size - self._tombstones


class WheelCost(NamedTuple):
    """Microseconds of CPU per timer to insert ``size`` timers and to pop them all,
    heap and wheel (each the fastest of its runs); ``ticks``: ticks the wheel walked to
    pop them."""

    size: int
    heap_insert_us: float
    wheel_insert_us: float
    heap_pop_us: float
    wheel_pop_us: float
    ticks: int


def _cost(
    queue: TaskQueue | TimingWheel, tasks: list[StandIn], dues: list[float], horizon: float
) -> tuple[float, float]:
    queue.attach({task.id: cast(ScheduledTask, task) for task in tasks})
    began = cpu_time()  # this thread's CPU (lab/_support.py)
    for task, due in zip(tasks, dues, strict=True):
        queue.push(cast(ScheduledTask, task), due)
    pushed = cpu_time()
    popped = queue.pop_due(horizon, len(tasks))
    done = cpu_time()
    assert len(popped) == len(tasks), f"{len(popped)} of {len(tasks)} timers popped"
    per = 1e6 / len(tasks)
    return (pushed - began) * per, (done - pushed) * per


def compare_wheel_and_heap(
    sizes: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000),
    *,
    horizon: float = 60.0,
    resolution: float = 0.001,
) -> list[WheelCost]:
    """Insert ``size`` timers due uniformly over ``horizon`` seconds, then pop them all,
    in the real heap (:class:`TaskQueue`) and in a :class:`TimingWheel` at
    ``resolution``; CPU time per timer (garbage collection off, after a dropped warm-up
    round), each figure the fastest of :data:`REPEATS` runs below :data:`REPEATED_BELOW`
    timers, of one run from there on.  A size below 1, a ``horizon`` or ``resolution``
    not finite and > 0, a ``resolution`` under a microsecond, or more than
    :data:`TICKS_MOST` ticks in the horizon: ``ValueError`` naming it, before anything
    is timed."""
    several("sizes", sizes)
    for size in sizes:
        whole_count("size", size)
    horizon = lab_seconds("horizon", horizon, above=0)
    resolution = checks.step(resolution, name="resolution", error=ValueError)
    if horizon / resolution > TICKS_MOST:
        raise ValueError(
            f"horizon / resolution must be at most {TICKS_MOST:,} ticks (each size walks "
            f"them all; an experiment is sized to run in minutes), got horizon {shown(horizon)} "
            f"/ resolution {shown(resolution)} = {horizon / resolution:.3g} ticks"
        )
    results = []
    with no_collection():
        warm = [StandIn(f"w{n}") for n in range(1_000)]
        _cost(TaskQueue(), warm, [horizon * n / 1_000 for n in range(1_000)], horizon)  # dropped
        for size in sizes:
            rng = random.Random(size)
            dues = [rng.random() * horizon for _ in range(size)]
            tasks = [StandIn(f"t{n}") for n in range(size)]
            runs = []
            for _ in range(REPEATS if size < REPEATED_BELOW else 1):
                heap_insert, heap_pop = _cost(TaskQueue(), tasks, dues, horizon)
                wheel = TimingWheel(resolution=resolution)
                # A due instant in the horizon's last, partial tick is rounded up past it
                # (never early): popped at the horizon, the wheel held it back.  One tick
                # on: all out.
                wheel_insert, wheel_pop = _cost(wheel, tasks, dues, horizon + resolution)
                runs.append((heap_insert, wheel_insert, heap_pop, wheel_pop))
            # Each figure its fastest run, as timeit reads its repeats: load only adds.
            heap_insert, wheel_insert, heap_pop, wheel_pop = (
                min(figures) for figures in zip(*runs, strict=True)
            )
            results.append(
                WheelCost(size, heap_insert, wheel_insert, heap_pop, wheel_pop, wheel.ticks)
            )
    return results


REPEATS = 3
"""Runs of a size below :data:`REPEATED_BELOW` that :func:`compare_wheel_and_heap` times,
keeping each figure's fastest."""
REPEATED_BELOW = 100_000
"""Below this many timers a figure is milliseconds of CPU, and one slow run on a loaded
machine turned the heap's insert at 10,000 timers from half the wheel's to as much as it
(the notebook says the heap inserts faster at every size); from here on each figure is
tens of milliseconds or more, which such a run does not swing, and a size is timed once
(three runs of 100,000 took 9 s where one took 4.5 s, on a loaded two-core machine; one
run of a million takes half a minute)."""


def pop_order_within_a_tick(queue: TaskQueue | TimingWheel) -> list[str]:
    """Push a LOW, a NORMAL and a HIGH timer due at the same instant, in that order, and
    return the order they pop in (the heap: by priority; the wheel: as pushed).  ``queue``
    is a queue object, ``TaskQueue()`` or ``TimingWheel()`` (a class: ``TypeError``)."""
    if isinstance(queue, type):
        raise TypeError(
            f"queue must be a queue object, e.g. {queue.__name__}(), got the class {queue!r}"
        )
    tasks = []
    for name, priority in [
        ("low", Priority.LOW),
        ("normal", Priority.NORMAL),
        ("high", Priority.HIGH),
    ]:
        task = StandIn(name)
        task.priority = priority
        tasks.append(task)
    queue.attach({task.id: cast(ScheduledTask, task) for task in tasks})
    for task in tasks:
        queue.push(cast(ScheduledTask, task), 1.0)
    return [entry[3] for entry in queue.pop_due(2.0, 10)]
