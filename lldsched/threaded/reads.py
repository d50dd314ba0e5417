"""The reads of the threaded scheduler: its tasks, records, queue and metrics.

Each takes the scheduler's one lock for one consistent read (``metrics()`` within a
``timeout``, if given) and changes nothing.
"""

from __future__ import annotations

import operator
from datetime import timedelta

from lldsched.checks import wait_seconds
from lldsched.core.duequeue import QueueStats
from lldsched.core.metrics import Metrics, take
from lldsched.core.packedstats import Rows
from lldsched.core.task import ScheduledTask
from lldsched.errors import SchedulerBusyError
from lldsched.model import ExecutionRecord
from lldsched.schedules.base import Schedule
from lldsched.threaded.deadline import Deadline
from lldsched.threaded.parts import SchedulerParts

__all__ = ["Reads"]

_finished = operator.attrgetter("finished")  # the order of records()


class Reads(SchedulerParts):
    """Mixed into Scheduler: the queries."""

    def task(self, task_id: str) -> ScheduledTask:
        """The task with this id, or :class:`~lldsched.errors.TaskNotFoundError`
        (:class:`~lldsched.errors.TaskRetiredError` if it finished and retired)."""
        with self._lock:
            return self._core.get(task_id)

    def tasks(self) -> list[ScheduledTask]:
        """Every registered task, in registration order (retired tasks are not)."""
        with self._lock:
            return list(self._core.tasks.values())

    def records(self) -> list[ExecutionRecord]:
        """Every record the scheduler still holds: its tasks' histories (each bounded by
        ``history_limit``; a store keeps them all) and those of the tasks it retired (one
        history of that bound), sorted by ``finished``: runs that finished at one
        instant (a ``FakeClock``'s, a coarse clock's tick) come in task order, not in
        the order they ran."""
        with self._lock:
            merged = [record for task in self._core.tasks.values() for record in task.history]
            merged += self._core.retired_records()
        merged.sort(key=_finished)
        return merged

    def schedules(self) -> dict[str, Schedule]:
        """Task id to schedule of every task that has records here: the registered ones,
        and those retired whose records :meth:`records` still holds (a one-off task's
        only while registered: it never overruns; :mod:`lldsched.core.departed`).  What
        :func:`lldsched.views.frames.schedules_of` gives ``task_summary`` to count
        overruns."""
        with self._lock:
            return self._core.schedules()

    def priorities(self) -> dict[str, int]:
        """Task id to :class:`~lldsched.model.Priority` value of every task that has
        records here, retired ones included (each as it was when it retired): the
        priority column of :func:`lldsched.views.frames.to_frame`."""
        with self._lock:
            return self._core.priorities()

    def packed_records(self) -> list[Rows]:
        """What :meth:`records` holds, packed (:mod:`lldsched.core.packedstats`) and not
        yet in finish order (``records()`` is these records sorted by ``finished``, ties
        in this order): :func:`~lldsched.views.frames.to_frame` reads it with numpy."""
        with self._lock:
            return self._core.packed_records()

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, oldest failure first."""
        with self._lock:
            return self._core.dead_letter()

    def orphans(self) -> list[str]:
        """Ids of the tasks the store restored that no ``schedule(..., id=...)`` has named
        since this scheduler was built, in the order restored: once a service registered
        its jobs, the ones its code no longer defines (docs/UPGRADING.md).  They still run
        as stored: ``remove`` them, or register them again."""
        with self._lock:
            return self._core.orphans()

    def pending(self) -> list[ScheduledTask]:
        """Tasks waiting in the heap, in the order they will run (an entry the timer has
        handed to the workers or the event loop is not here until it runs).  After
        :meth:`shutdown`, every task left due, handed out or not: what a drain did not run
        is queued again as it was, as in a ``Simulation`` (docs/decisions/simulation.md, "What a
        simulation's metrics read after its shutdown")."""
        with self._lock:
            return self._queue.pending()

    def queue_stats(self) -> QueueStats:
        """How many entries the heap holds, and how many are tombstones (after
        :meth:`shutdown`, those left due included, as :meth:`pending` says)."""
        with self._lock:
            return self._queue.stats()

    def metrics(self, timeout: float | timedelta | None = None) -> Metrics:
        """One read of the scheduler's health and load, for a dashboard and a health check
        (:class:`~lldsched.core.metrics.Metrics`: the timer's liveness, the pool's load,
        the backlog and its lag, the dead letter, the records by outcome, the store).

        Taken in one hold of the lock, so its fields agree; O(1) in the tasks and
        records (the hand-off queue, at most its capacity, and the entries waiting for a
        coroutine slot are read for their live entries).  ``timeout`` bounds the wait for
        the lock (seconds or a ``timedelta``; ``None``: as long as it takes): past it,
        :class:`~lldsched.errors.SchedulerBusyError` (a ``TimeoutError``), which is what a
        liveness probe should report, since a lock held that long (a store call that
        hangs) dispatches nothing."""
        wait = None if timeout is None else wait_seconds(timeout, name="metrics() timeout")
        with Deadline(wait, grace=0.0).holding(self._lock) as hold:  # no Ctrl-C inside (Hold)
            if not hold.held:
                raise SchedulerBusyError(
                    f"metrics(timeout={timeout!r}): the scheduler's lock was held by another "
                    "thread all that time (a store call that hangs under it?); nothing is "
                    "dispatched while it is"
                )
            pool = self._pool
            queue = self._queue
            # Live entries only, as the heap's: one a verb stopped or moved since the
            # timer handed it out is a tombstone until a worker drops it, no run waiting
            # (busy is what is in flight beside every entry waiting, tombstones too).
            handoff, first = pool.count(lambda entry: queue.live(entry) is not None)
            # The same rule for the loop tasks' entries waiting for a coroutine slot:
            # their tombstones are no run waiting, the oldest live one is late (lag).
            in_hand = self._coroutines.in_hand
            dropped, waiting_due = self._coroutines.read_waiting(queue.live)
            coroutines = in_hand - dropped
            handed_due = None if first is None else first[0]
            handed = [due for due in (handed_due, waiting_due) if due is not None]
            timer = self._timer
            return take(
                self._core,
                queue,
                at=self._clock.now(),
                state=self._state,
                timer_alive=timer is not None and timer.is_alive(),
                timer_woke=self._last_look.woke,
                workers=pool.workers,
                busy=self._in_flight - pool.waiting - in_hand,
                handoff=handoff,
                coroutines=coroutines,
                handed_out_due=min(handed, default=None),
                dropped_events=self._dispatcher.dropped,
            )
