"""TaskQueue: both runtimes' due entries, a min-heap with tombstones (and the timer's lane).

Entries are tuples ``(due, priority, sequence, task_id)``.  Order is due first,
then priority (lower first), then ``sequence``, an ever-increasing counter, so
two entries never tie and the id is never compared.

An entry names its task by id, and its priority by the plain int, and the
queue resolves the id through the core's registry (given by
:meth:`TaskQueue.attach`).  An entry that held the task, or a ``Priority``
member, would be one more object for the cyclic garbage collector to track and
traverse per queued task; a tuple of strings and numbers is untracked at the
collector's first pass over it (``benchmarks/bench_scale.py`` measures the
difference).

Removing from the middle of a heap is O(n), so nothing is removed.  Each push
gives the task a new ``generation``, the entry's sequence number; an entry is
live while its task is registered with that generation (:meth:`TaskQueue.live`,
the one statement of the rule).  Cancel and pause :meth:`~TaskQueue.discard` the
task (generation 0), so its queued entry, or one already handed to a worker, is
a *tombstone*, dropped when it reaches the top.  A re-registered id cannot
revive an old entry: sequences only grow.

Tombstones are compacted away a bounded slice at a time, never all at once
(issue #19: rebuilding a heap of a million entries inside one ``pause()``, under
the scheduler's lock, stalled it for seconds).  When tombstones pass 40 % of the
live entries (and the heap holds at least :data:`COMPACT_MIN_ENTRIES`; asyncio
leaves small heaps alone by the same rule), the heap becomes the *old* heap and
an empty one takes its place.  Every later push, discard and pop then moves
:data:`COMPACT_SLICE` entries from the end of the old heap to the new one,
dropping tombstones: taking the last element of a heap's list keeps it a heap,
and pushing an entry in random order costs O(1) on average.  Both heaps are
consulted meanwhile, through one invariant: while the old heap holds entries,
the new heap's head comes first (entries moved from the old one all come after
its head, and whenever the new heap's head is taken the old heap's head moves
across), so readers only ever look at ``_heap[0]`` (and the lane's head, below).
A compaction ends within ``entries / COMPACT_SLICE`` operations, before tombstones
can grow past half the live entries, so the queue holds at most
``1.5 * live + COMPACT_MIN_ENTRIES`` entries at all times.

**The lane.**  An entry that is already due when it is pushed (a one-off task
registered for now or for a passed instant, a run-now, a slot that came due late)
skips the heap: it joins the *lane*, a FIFO deque, as asyncio's ``call_soon`` puts a
callback in its ready deque instead of its timer heap.  A push and a pop there are
O(1) instead of O(log n) tuple comparisons: for 20,000 jobs due at once the heap pop
alone was 4,700 of a dispatched job's 40,600 machine instructions
(``benchmarks/bench_dispatch.py``; see :meth:`TaskQueue.set_clock`).  The order
stays exact: an entry joins the lane only if it sorts after the lane's last entry
(else it goes to the heap), so the lane is sorted, and every reader takes the
smaller of the two heads.  A compaction sweeps the lane too (from its end, which
keeps it sorted), after the old heap.  Only a queue given a clock has a lane: the
simulation's pushes are rarely due already, and its clock is a Python call.

The queue is not locked by itself.  In the threaded runtime its owner holds
one lock around every call and gives the queue the timer's condition on that
lock: ``push`` notifies it only when the new entry becomes the head (any other
push leaves the instant the timer waits for unchanged).  The simulation, which
is single-threaded, gives it no condition at all.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import NamedTuple

from lldsched.core.task import Entry, ScheduledTask

__all__ = ["COMPACT_MIN_ENTRIES", "COMPACT_SLICE", "QueueStats", "TaskQueue", "queued_entry"]

COMPACT_MIN_ENTRIES = 64  # a smaller heap keeps its tombstones until they surface
COMPACT_SLICE = 64  # entries a compaction moves per operation (tens of µs at 1e6)


def queued_entry(task: ScheduledTask, due: float) -> Entry:
    """The live entry of ``task`` queued at ``due``, as :meth:`TaskQueue.push` made it
    (due, priority, generation, id), for a caller that hands a queued task's run to a
    worker itself (a claim in shared mode).  The priority is the plain int (see the
    module docstring)."""
    return (due, int(task.priority), task.generation, task.id)


_NO_TASKS: Mapping[str, ScheduledTask] = {}


class QueueStats(NamedTuple):
    """How many entries the heap holds, and how many of them are tombstones."""

    entries: int
    tombstones: int

    @property
    def live(self) -> int:
        return self.entries - self.tombstones


class TaskQueue:
    """A heap of entries, with a tombstone count; see the module docstring for locking."""

    def __init__(self, wake: threading.Condition | None = None) -> None:
        # The timer's condition, notified by a push that makes a new head (its
        # lock is held by the caller), or None when nobody waits on this queue.
        self._wake = wake
        self._heap: list[Entry] = []
        # The heap a compaction is draining into _heap; empty when none runs.
        # While it holds entries, _heap is not empty and _heap[0] comes first.
        self._old: list[Entry] = []
        # Entries that were due when pushed, in order (see "The lane" above).
        self._lane: deque[Entry] = deque()
        # Lane entries a compaction still has to sweep, from the lane's end.
        self._sweep = 0
        self._tombstones = 0  # in both heaps and the lane
        self._now: Callable[[], float] | None = None  # the clock that enables the lane
        self._sequence = itertools.count(1)  # entry tie-breaker and generation; 0 is "none"
        self.tasks = _NO_TASKS  # the registry entries are resolved in; see attach()

    def attach(self, tasks: Mapping[str, ScheduledTask]) -> None:
        """Resolve entries through ``tasks``, the core's registry (read, never written)."""
        self.tasks = tasks

    def set_clock(self, now: Callable[[], float]) -> None:
        """Give the queue the runtime's clock: from now on an entry due when it is pushed
        (``due <= now()``) goes to the lane (see the module docstring)."""
        self._now = now

    def push(self, task: ScheduledTask, due: float) -> None:
        """Queue ``task`` at ``due`` (its earlier entry, if any, dies); wake the timer if
        the entry is the new head."""
        sequence = next(self._sequence)
        if task._queued:  # the task's previous entry, still queued, is dead now
            self._tombstones += 1
        task._queued = True
        task.generation = sequence
        entry = queued_entry(task, due)
        heap = self._heap
        lane = self._lane
        # The timer is woken before the entry goes in, not after (it wakes once the lock
        # is let go, and finds it): a Ctrl-C landing between the two on the main thread
        # then leaves it woken for nothing, never asleep past a new head (after, it slept
        # on to its old deadline: with a FakeClock, for good).
        if self._now is not None and due <= self._now() and (not lane or lane[-1] < entry):
            if not lane and (not heap or entry < heap[0]) and self._wake is not None:
                self._wake.notify_all()
            lane.append(entry)  # due already, and in order: the lane (module docstring)
        else:
            wake = self._wake
            if wake is not None and (not heap or entry < heap[0]) and (not lane or entry < lane[0]):
                wake.notify_all()
            heapq.heappush(heap, entry)
        if self._tombstones:  # else there is nothing to compact (see _compact)
            self._compact(1)

    def put_back(self, entries: list[Entry]) -> None:
        """Queue again, as they were, ``entries`` popped and never run (a shutdown dropped
        them from the hand-off queue or the event loop's line): each live one goes back
        into the heap with its place (its due, priority and sequence) and its task counts
        as queued again; a tombstone is dropped.  What is left due after a shutdown is
        then all in the queue, whatever had been handed out (``pending()``,
        ``queue_stats()``, ``metrics()``: docs/decisions/simulation.md, "What a simulation's metrics
        read after its shutdown")."""
        tasks = self.tasks
        for entry in entries:
            task = tasks.get(entry[3])
            if task is None or entry[2] != task.generation or task._queued:
                continue
            task._queued = True
            heapq.heappush(self._heap, entry)

    def mark(self) -> int:
        """A sequence number no entry holds: every entry pushed before this call has a
        smaller one, every entry pushed after it a larger one (arrival order, for the
        simulation's coroutine lane: ``SimulationEventLoop._next_start``, sim/eventloop.py)."""
        return next(self._sequence)

    def discard(self, task: ScheduledTask) -> None:
        """Kill ``task``'s entry, whether still queued or already popped for a worker."""
        task.generation = 0
        if not task._queued:
            return
        task._queued = False
        self._tombstones += 1
        self._compact(1)

    def live(self, entry: Entry) -> ScheduledTask | None:
        """The task ``entry`` stands for, or None if the entry is a tombstone."""
        task = self.tasks.get(entry[3])
        return task if task is not None and task.generation == entry[2] else None

    def pop_due(self, now: float, limit: int) -> list[Entry]:
        """Remove and return up to ``limit`` live entries due at or before ``now``."""
        heap = self._heap
        lane = self._lane
        old = self._old
        due: list[Entry] = []
        while len(due) < limit:
            if lane and (not heap or lane[0] < heap[0]):  # the smaller head
                if lane[0][0] > now:
                    break
                entry = lane.popleft()
            elif heap and heap[0][0] <= now:
                entry = heapq.heappop(heap)
                if old:  # a compaction runs: the head must stay in _heap
                    self._restore_head()
            else:
                break
            task = self.live(entry)
            if task is None:
                self._tombstones -= 1
                continue
            task._queued = False
            due.append(entry)
        if due and self._tombstones:  # else there is nothing to compact (see _compact)
            self._compact(len(due))
        return due

    def peek(self) -> Entry | None:
        """The first live entry, left in place (None if empty); tombstones on top are
        dropped on the way.  Its task is ``queue.tasks[entry[3]]``: a pair holding the
        task would be a container the cyclic collector tracks, one per peek."""
        heap = self._heap
        lane = self._lane
        while heap or lane:
            in_lane = (not heap or lane[0] < heap[0]) if lane else False  # the smaller head
            entry = lane[0] if in_lane else heap[0]
            if self.live(entry) is not None:
                return entry
            self._tombstones -= 1
            if in_lane:
                lane.popleft()
            else:
                heapq.heappop(heap)
                if self._old:  # a compaction runs: the head must stay in _heap
                    self._restore_head()
        return None

    def pop(self) -> Entry | None:
        """Remove and return the first live entry, however far off it is (None if empty)."""
        entry = self.peek()
        if entry is not None:
            self.take(entry)
        return entry

    def take(self, head: Entry) -> None:
        """Remove ``head``, the entry :meth:`peek` just returned (nothing changed the
        queue since): ``pop`` without peeking again, for a caller that already has it."""
        lane = self._lane
        if lane and lane[0] is head:
            lane.popleft()
        else:
            heapq.heappop(self._heap)
            if self._old:  # a compaction runs: the head must stay in _heap
                self._restore_head()
        self.tasks[head[3]]._queued = False
        if self._tombstones:  # else there is nothing to compact (see _compact)
            self._compact(1)

    def next_due(self) -> float | None:
        """The due instant of the first live entry (tombstones on top are dropped)."""
        head = self.peek()
        return None if head is None else head[0]

    def _restore_head(self) -> None:
        """After ``_heap``'s head was taken: move the old heap's head across if it
        comes first (one move restores the invariant: see the module docstring)."""
        heap, old = self._heap, self._old
        if old and (not heap or old[0] < heap[0]):
            heapq.heappush(heap, heapq.heappop(old))

    def _compact(self, operations: int) -> None:
        """Start a compaction if tombstones pass 40 % of the live entries, and move
        ``COMPACT_SLICE`` entries per operation of the caller from the old heap, then
        from the end of the lane (which leaves the lane sorted), into the new heap.

        Callers skip it while there are no tombstones: then nothing needs dropping,
        the heap holds only live entries (within any bound), and a compaction under
        way, left as it is, stays correct until the next tombstone resumes it."""
        old = self._old
        lane = self._lane
        if not old and not self._sweep:
            entries = len(self._heap) + len(lane)
            tombstones = self._tombstones
            if entries < COMPACT_MIN_ENTRIES or tombstones * 5 <= (entries - tombstones) * 2:
                return
            old, self._heap = self._heap, []
            self._old = old
            self._sweep = len(lane)
            self._restore_head()
        heap = self._heap
        budget = COMPACT_SLICE * operations
        moves = min(len(old), budget)
        for _ in range(moves):
            entry = old.pop()  # the last entry: what is left is still a heap
            if self.live(entry) is None:
                self._tombstones -= 1
            else:  # after the new heap's head, as it was after the old heap's
                heapq.heappush(heap, entry)
        if old or not self._sweep:
            return
        sweeps = min(self._sweep, len(lane), budget - moves)
        for _ in range(sweeps):
            entry = lane.pop()  # the last entry: what is left is still in order
            if self.live(entry) is None:
                self._tombstones -= 1
            else:  # readers compare both heads: the heap is as good a place
                heapq.heappush(heap, entry)
        self._sweep = 0 if not lane else self._sweep - sweeps

    def entries(self) -> list[Entry]:
        """The live entries in due order (a copy; O(n log n))."""
        everything = itertools.chain(self._heap, self._old, self._lane)
        return sorted(entry for entry in everything if self.live(entry) is not None)

    def pending(self) -> list[ScheduledTask]:
        """The tasks of the live entries, in the order they will start."""
        tasks = self.tasks
        return [tasks[entry[3]] for entry in self.entries()]

    def stats(self) -> QueueStats:
        return QueueStats(len(self._heap) + len(self._old) + len(self._lane), self._tombstones)

    def __len__(self) -> int:
        return len(self._heap) + len(self._old) + len(self._lane) - self._tombstones
