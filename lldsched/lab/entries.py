"""The heap entry's two decisions: tombstones instead of removal, and the sequence field.

Both are switched off by swapping the :class:`~lldsched.core.duequeue.TaskQueue` of the
real :class:`~lldsched.threaded.scheduler.Scheduler` (its ``queue_type`` seam):

* **tombstones** — :class:`RemovingQueue` takes a cancelled task's entry out of the
  heap (a scan, ``list.remove`` and ``heapify``: O(n)) instead of leaving a tombstone
  (O(1));
* **the sequence field** — :class:`TaskTieQueue` and :class:`IdTieQueue` build entries
  whose third field holds the task, or ties and lets the task id decide: entries of
  ``(due, priority, task)`` or ``(due, priority, task_id)``.  A tie between two
  equal-priority tasks then raises ``TypeError``, or breaks first-in-first-out.

Cancel cost is measured on the queue alone, with stand-in tasks (what the queue reads
of a task: its id, priority, generation, and whether it is queued).
"""

from __future__ import annotations

import heapq
import random
import threading
from typing import NamedTuple, cast

from lldsched.core.duequeue import TaskQueue
from lldsched.core.task import Entry, ScheduledTask
from lldsched.lab._support import (
    VARIANT_PATIENCE,
    ObservedClock,
    cpu_time,
    done_or_stalled,
    lost,
    no_collection,
    running,
    scheduler_variant,
    several,
    whole_count,
)
from lldsched.model import Priority
from lldsched.schedules.simple import OneTime
from lldsched.threaded.scheduler import Scheduler

__all__ = [
    "CancelCost",
    "IdTieQueue",
    "IdTieScheduler",
    "RemovingQueue",
    "RemovingScheduler",
    "StandIn",
    "TaskTieQueue",
    "TaskTieScheduler",
    "TieOutcome",
    "cancel_comparisons",
    "measure_cancel_cost",
    "run_a_tie",
]

# -- tombstones --------------------------------------------------------------------------


class RemovingQueue(TaskQueue):
    """Cancel and pause take the entry out of the heap: find it, ``list.remove``,
    ``heapify``; so does a push that replaces a queued entry (``run_now``,
    ``reschedule``).  No tombstone is ever left, so no compaction ever starts."""

    def push(self, task: ScheduledTask, due: float) -> None:
        self._remove(task)  # the task's earlier entry, if still queued (else a tombstone)
        super().push(task, due)

    def discard(self, task: ScheduledTask) -> None:
        self._remove(task)
        task.generation = 0  # an entry already handed to a worker is still stale

    def _remove(self, task: ScheduledTask) -> None:
        if task._queued:
            heap = self._heap
            generation = task.generation
            in_lane = next((entry for entry in self._lane if entry[2] == generation), None)
            if in_lane is not None:  # due when it was pushed: the lane (a deque, in order)
                self._lane.remove(in_lane)
            else:
                heap.remove(next(entry for entry in heap if entry[2] == generation))
                heapq.heapify(heap)
            task._queued = False


class RemovingScheduler(Scheduler):
    """The real scheduler over a :class:`RemovingQueue`."""

    queue_type = RemovingQueue


class StandIn:
    """What the queue reads of a task (see :meth:`TaskQueue.push`)."""

    __slots__ = ("_queued", "generation", "id", "priority")

    def __init__(self, task_id: str) -> None:
        self.id = task_id
        self.priority = Priority.NORMAL
        self.generation = 0
        self._queued = False


def _filled(queue_type: type[TaskQueue], dues: list[float]) -> tuple[TaskQueue, list[StandIn]]:
    queue = queue_type()
    tasks = [StandIn(f"t{n}") for n in range(len(dues))]
    queue.attach({task.id: cast(ScheduledTask, task) for task in tasks})
    for task, due in zip(tasks, dues, strict=True):
        queue.push(cast(ScheduledTask, task), due)
    return queue, tasks


class _CountingDue(float):
    """A due instant that counts how often it is compared."""

    count = 0

    def __eq__(self, other: object) -> bool:
        _CountingDue.count += 1
        return float.__eq__(self, other)

    def __lt__(self, other: float) -> bool:
        _CountingDue.count += 1
        return float.__lt__(self, other)

    __hash__ = float.__hash__


def cancel_comparisons(queue_type: type[TaskQueue], size: int, *, cancels: int = 10) -> float:
    """Comparisons of entries per cancel in a heap of ``size`` (deterministic: seeded);
    a heap smaller than ``cancels`` has every entry cancelled."""
    cancels = min(whole_count("cancels", cancels), whole_count("size", size))
    rng = random.Random(size)
    queue, tasks = _filled(queue_type, [_CountingDue(rng.random()) for _ in range(size)])
    victims = rng.sample(tasks, cancels)
    _CountingDue.count = 0
    for task in victims:
        queue.discard(cast(ScheduledTask, task))
    return _CountingDue.count / cancels


class CancelCost(NamedTuple):
    """Microseconds per cancel in a heap of ``size`` entries, both ways (one run)."""

    size: int
    tombstone_us: float
    remove_us: float

    @property
    def ratio(self) -> float:
        return self.remove_us / self.tombstone_us


def measure_cancel_cost(
    sizes: tuple[int, ...] = (1_000, 10_000, 100_000), *, cancels: int = 20
) -> list[CancelCost]:
    """CPU time of ``cancels`` cancellations in heaps of each size, tombstone against
    removal (this thread's CPU time, so the ratio holds on a busy machine; elapsed time
    on Windows, see :func:`~lldsched.lab._support.cpu_clock`; garbage
    collection off); a heap smaller than ``cancels`` has every entry cancelled."""
    several("sizes", sizes)
    whole_count("cancels", cancels)
    for size in sizes:
        whole_count("size", size)
    results = []
    with no_collection():
        for size in sizes:
            rng = random.Random(size)
            dues = [rng.random() for _ in range(size)]
            timings = []
            victim_count = min(cancels, size)
            for queue_type in (TaskQueue, RemovingQueue):
                queue, tasks = _filled(queue_type, dues)
                victims = random.Random(size + 1).sample(tasks, victim_count)
                began = cpu_time()  # this thread's CPU (lab/_support.py)
                for task in victims:
                    queue.discard(cast(ScheduledTask, task))
                timings.append((cpu_time() - began) * 1e6 / victim_count)
            results.append(CancelCost(size, timings[0], timings[1]))
    return results


# -- the sequence field --------------------------------------------------------------------


class _TaskInEntry:
    """An entry's third field holding the task: equal to the task's generation (so
    tombstones still work) but, like a task object, without an order."""

    __slots__ = ("generation",)

    def __init__(self, generation: int) -> None:
        self.generation = generation

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int):
            return self.generation == other
        return self is other

    def __hash__(self) -> int:
        return hash(self.generation)


class _TiedField(_TaskInEntry):
    """A third field that ties with every other: the comparison falls through to the id."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int):
            return self.generation == other
        return isinstance(other, _TiedField)

    __hash__ = _TaskInEntry.__hash__


class TaskTieQueue(TaskQueue):
    """Entries of ``(due, priority, task)``: nothing breaks a tie, and tasks do not compare."""

    field: type[_TaskInEntry] = _TaskInEntry

    def push(self, task: ScheduledTask, due: float) -> None:
        # TaskQueue.push with one field changed: the third is no longer the sequence.
        sequence = next(self._sequence)
        if task._queued:
            self._tombstones += 1
        task._queued = True
        task.generation = sequence
        entry = cast(Entry, (due, task.priority._value_, self.field(sequence), task.id))
        heap = self._heap
        heapq.heappush(heap, entry)
        if heap[0] is entry and self._wake is not None:
            self._wake.notify_all()


class IdTieQueue(TaskTieQueue):
    """Entries of ``(due, priority, task_id)``: a tie goes to the smaller id, as a string."""

    field = _TiedField


class TaskTieScheduler(Scheduler):
    """The real scheduler over a :class:`TaskTieQueue`."""

    queue_type = TaskTieQueue


class IdTieScheduler(Scheduler):
    """The real scheduler over an :class:`IdTieQueue`."""

    queue_type = IdTieQueue


class TieOutcome(NamedTuple):
    """The order in which tasks due together ran, or the error their registration raised."""

    order: list[str]
    error: str | None

    @property
    def fifo(self) -> bool:
        return self.error is None and self.order == sorted(self.order, key=_number)


def _number(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


def run_a_tie(scheduler_type: type[Scheduler] = Scheduler, *, tasks: int = 12) -> TieOutcome:
    """Register ``tasks`` equal-priority tasks due at the same instant (fake clock, one
    worker) and record the order they run in, or the error a registration raises.
    ``tasks`` is a whole number >= 1 (``ValueError`` otherwise: no tie to watch);
    ``scheduler_type`` a :class:`Scheduler` class (``TypeError`` naming it otherwise).
    A variant that loses one of the tasks: :class:`~lldsched.lab.VariantError`."""
    scheduler_variant("scheduler_type", scheduler_type)
    whole_count("tasks", tasks)
    clock = ObservedClock(0)
    scheduler = scheduler_type(workers=1, clock=clock)
    order: list[str] = []
    # Guards order: the tasks append to it from the worker thread, the caller reads it.
    lock = threading.Lock()

    def record(name: str) -> None:
        with lock:
            order.append(name)

    with running(scheduler):
        try:
            for n in range(1, tasks + 1):
                name = f"job-{n}"
                scheduler.schedule(name, record, OneTime(delay=10), args=(name,))
        except TypeError as error:
            return TieOutcome(order, f"TypeError: {error}")
        clock.advance(10)
        if not done_or_stalled(
            lambda: len(order) == tasks, clock, scheduler
        ) or not scheduler.wait_idle(VARIANT_PATIENCE):
            raise lost(
                scheduler_type, f"{tasks - len(order)} of the {tasks} tasks due never ran", clock
            )
    return TieOutcome(order, None)
