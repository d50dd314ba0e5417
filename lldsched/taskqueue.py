"""TaskQueue: the timer's min-heap of due entries, with tombstones and a Condition.

Entries are tuples ``(due, priority, sequence, generation, task)``.  Order is
due first, then priority (lower first), then ``sequence``, an ever-increasing
counter, so two entries never tie and the task itself is never compared.

Removing from the middle of a heap is O(n), so nothing is removed: cancel,
pause and every re-queue bump the task's ``generation``, and an entry whose
generation no longer matches is a *tombstone*, dropped when it reaches the top.
When tombstones outnumber live entries the heap is rebuilt from the live ones
(O(n), amortised against the cancellations that made them); heaps under
:data:`REBUILD_MIN_ENTRIES` entries are not worth it (asyncio's event loop
uses the same rule for its cancelled timer handles).

The queue is not locked by itself.  In the threaded runtime its owner holds
one lock around every call and gives the queue the timer's condition on that
lock: ``push`` notifies it only when the new entry becomes the head (any other
push leaves the instant the timer waits for unchanged).  The simulation, which
is single-threaded, gives it no condition at all.
"""

from __future__ import annotations

import heapq
import threading
from typing import NamedTuple

from lldsched.task import Entry, ScheduledTask

__all__ = ["REBUILD_MIN_ENTRIES", "QueueStats", "TaskQueue"]

REBUILD_MIN_ENTRIES = 64


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
        self._tombstones = 0

    def push(self, entry: Entry) -> None:
        """Add a live entry; wake the timer if it is the new head."""
        task = entry[4]
        if task._queued:  # the task's previous entry, still in the heap, is dead now
            self._tombstones += 1
        task._queued = True
        heap = self._heap
        heapq.heappush(heap, entry)
        if heap[0] is entry and self._wake is not None:
            self._wake.notify_all()

    def discard(self, task: ScheduledTask) -> None:
        """Count ``task``'s queued entry as a tombstone (the caller has bumped its generation)."""
        if not task._queued:
            return
        task._queued = False
        self._tombstones += 1
        heap = self._heap
        if len(heap) >= REBUILD_MIN_ENTRIES and self._tombstones * 2 > len(heap):
            self.rebuild()

    def pop_due(self, now: float, limit: int) -> list[Entry]:
        """Remove and return up to ``limit`` live entries due at or before ``now``."""
        heap = self._heap
        due: list[Entry] = []
        while heap and heap[0][0] <= now and len(due) < limit:
            entry = heapq.heappop(heap)
            task = entry[4]
            if entry[3] != task.generation:
                self._tombstones -= 1
                continue
            task._queued = False
            due.append(entry)
        return due

    def pop(self) -> Entry | None:
        """Remove and return the first live entry, however far off it is (None if empty)."""
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            task = entry[4]
            if entry[3] == task.generation:
                task._queued = False
                return entry
            self._tombstones -= 1
        return None

    def next_due(self) -> float | None:
        """The due instant of the first live entry (tombstones on top are dropped)."""
        heap = self._heap
        while heap:
            entry = heap[0]
            if entry[3] == entry[4].generation:
                return entry[0]
            heapq.heappop(heap)
            self._tombstones -= 1
        return None

    def rebuild(self) -> None:
        """Drop every tombstone and re-heapify the live entries."""
        live = [entry for entry in self._heap if entry[3] == entry[4].generation]
        heapq.heapify(live)
        self._heap = live
        self._tombstones = 0

    def entries(self) -> list[Entry]:
        """The live entries in due order (a copy; O(n log n))."""
        return sorted(entry for entry in self._heap if entry[3] == entry[4].generation)

    def stats(self) -> QueueStats:
        return QueueStats(len(self._heap), self._tombstones)

    def __len__(self) -> int:
        return len(self._heap) - self._tombstones
