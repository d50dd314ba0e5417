"""Waiting: where a simulated entry waits, set aside from the heap, while its lane is full
(and :data:`Handed`, how a handed-over awaitable waits for a place on the coroutine lane).

The simulation starts runs on two lanes, as the threaded runtime does: the virtual
workers (thread and process tasks) and, beside them, the coroutine lane (``async def``
tasks, which the threaded runtime runs on its event loop, up to ``max_coroutines`` at
once, recorded on worker ``workers``).  The heap holds both kinds of entry, and its
head starts when its lane has room; a head whose lane is full would hold back the
other lane's entries behind it, so, once coroutine tasks are registered, the
simulation sets it aside here, in a heap of its lane's, where it keeps its place (the
heap's own tuple order): a lane that frees up takes the smaller of its waiting head and
the heap's head, exactly the entry it would have taken had the entry stayed in the heap
(docs/decisions/simulation.md, "A coroutine run takes the coroutine lane, not a virtual worker").

An entry set aside is no longer in the heap: a cancel, pause or a new push of its task
makes it a tombstone (:meth:`TaskQueue.live <lldsched.core.duequeue.TaskQueue.live>`, the
heap's rule), dropped here when it surfaces.  :meth:`Waiting.entries` gives the live ones
back to ``pending()``.  An entry set aside before it is due is, on threads, still in the
heap: a ``modify(priority=)`` then queues its task again (:meth:`Waiting.ahead`), as the
core does for an entry in the heap.

**What the reads count** (:meth:`Waiting.reads`).  The simulation has no hand-off queue:
a due entry waiting for a worker waits in the heap, in its model
(:meth:`Simulation.metrics <lldsched.sim.verbs.SimulationVerbs.metrics>`), so an entry
set aside counts as in the heap (``queue_stats()``, ``metrics().queued``, a thread
task's in ``metrics().lag`` too), whichever lane, as it would with no coroutine task
registered, except a coroutine task's live entry that is due: on threads the timer
handed it to the event loop, where it waits for a slot, and it counts where
``Scheduler.metrics()`` counts it, in ``coroutines`` (docs/decisions/simulation.md, "What the
simulation reads of the entries it sets aside"), and late in ``lag`` as it waits
(docs/decisions/metrics.md, "The lag of runs waiting for a coroutine slot").  Once the
simulation is shut down no entry waits for the loop (on threads it is closed,
``coroutines`` 0): a coroutine entry left due counts as a thread entry left due does,
in the heap and in ``lag``.

**An awaitable a plain function returned** waits apart, its worker free already: not
an entry of the heap but a :data:`Handed`, in the order handed over, until it gets a
place on the coroutine lane (docs/decisions/simulation.md, "A plain function's awaitable frees its
worker").
"""

from __future__ import annotations

import heapq
from typing import NamedTuple

from lldsched.core.duequeue import TaskQueue
from lldsched.core.task import Entry, Run

__all__ = ["Handed", "Reads", "Waiting"]

Handed = tuple[float, Run, float, "str | None", "str | None", bool, int]
"""A plain function's awaitable waiting for a place on the coroutine lane: (the instant it
was handed over, its run, its modelled duration, error, result, timed out, the queue's
:meth:`~lldsched.core.duequeue.TaskQueue.mark` then: an entry pushed later has a larger
sequence)."""


class Reads(NamedTuple):
    """What :meth:`Waiting.reads` counts of the entries set aside."""

    held: int  # counted as in the heap: every one but a live coroutine entry due
    tombstones: int  # of those ``held``
    due_coroutines: int  # live coroutine entries due: waiting for a slot of the loop
    first_due: float | None  # the first live entry's due instant, either lane (lag), or None


class Waiting:
    """Two heaps of entries set aside, one per lane: :attr:`threads` for the virtual
    workers, :attr:`coroutines` for the coroutine lane."""

    def __init__(self, queue: TaskQueue) -> None:
        self._queue = queue  # whose rule says which entries are live
        self.threads: list[Entry] = []
        self.coroutines: list[Entry] = []

    def set_aside(self, entry: Entry, on_loop: bool) -> None:
        """``entry``, just taken from the heap, waits for a place on its lane."""
        heapq.heappush(self.coroutines if on_loop else self.threads, entry)

    def head(self, lane: list[Entry]) -> Entry | None:
        """The first live entry waiting in ``lane`` (:attr:`threads` or
        :attr:`coroutines`), left in place; tombstones on top are dropped."""
        live = self._queue.live
        while lane:
            if live(lane[0]) is not None:
                return lane[0]
            heapq.heappop(lane)
        return None

    def ahead(self, task_id: str, now: float) -> Entry | None:
        """``task_id``'s live entry set aside before it is due (after ``now``), or None.
        On threads such an entry is still in the heap, not handed out: a change of its
        task's priority queues it again (:meth:`Simulation.modify
        <lldsched.sim.verbs.SimulationVerbs.modify>`).  A scan of both lanes: a verb's
        cost, not an event's."""
        live = self._queue.live
        for entry in (*self.threads, *self.coroutines):
            if entry[3] == task_id and entry[0] > now and live(entry) is not None:
                return entry
        return None

    def entries(self) -> list[Entry]:
        """The live entries waiting on either lane (in no order)."""
        live = self._queue.live
        return [entry for entry in self.threads + self.coroutines if live(entry) is not None]

    def reads(self, now: float, *, loop: bool = True) -> Reads:
        """The entries set aside as the reads count them (see the module docstring): a
        scan of both lanes, at most one entry a task (a read's cost, not an event's).
        ``loop`` False (the simulation is shut down): no coroutine entry waits for a
        slot of the loop any more, so each counts as a thread entry does."""
        live = self._queue.live
        tombstones = due_coroutines = 0
        first: float | None = None  # read, not dropped: a read changes nothing
        for entry in self.coroutines:
            if live(entry) is None:
                tombstones += 1
                continue
            if loop and entry[0] <= now:
                due_coroutines += 1
            if first is None or entry[0] < first:  # late waiting for a slot: lag too
                first = entry[0]
        for entry in self.threads:
            if live(entry) is None:
                tombstones += 1
            elif first is None or entry[0] < first:
                first = entry[0]
        held = len(self.threads) + len(self.coroutines) - due_coroutines
        return Reads(held, tombstones, due_coroutines, first)
