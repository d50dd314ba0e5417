"""TaskQueue: heap order, tombstones instead of removal, and the rebuild rule."""

from __future__ import annotations

import itertools
import threading

from lldsched import OneTime, Priority
from lldsched.task import Entry, ScheduledTask
from lldsched.taskqueue import REBUILD_MIN_ENTRIES, TaskQueue

_sequence = itertools.count()


def make_task(name: str, priority: Priority = Priority.NORMAL) -> ScheduledTask:
    return ScheduledTask(name, name, None, OneTime(delay=0), priority)


def entry(task: ScheduledTask, due: float) -> Entry:
    task.generation += 1
    return (due, task.priority, next(_sequence), task.generation, task)


def tombstone(queue: TaskQueue, task: ScheduledTask) -> None:
    task.generation += 1  # what the core does before discarding
    queue.discard(task)


def test_entries_pop_by_due_then_priority_then_arrival() -> None:
    queue = TaskQueue()
    for name, priority in [("low", Priority.LOW), ("first", Priority.NORMAL),
                           ("high", Priority.HIGH), ("second", Priority.NORMAL)]:  # fmt: skip
        queue.push(entry(make_task(name, priority), 10.0))
    queue.push(entry(make_task("later", Priority.HIGH), 11.0))
    assert queue.next_due() == 10.0
    names = [e[4].name for e in queue.pop_due(10.0, limit=100)]
    assert names == ["high", "first", "second", "low"]


def test_pop_due_respects_its_limit_and_leaves_later_entries() -> None:
    queue = TaskQueue()
    for i in range(5):
        queue.push(entry(make_task(f"t{i}"), float(i)))
    assert [e[4].name for e in queue.pop_due(3.0, limit=2)] == ["t0", "t1"]
    assert [e[4].name for e in queue.pop_due(3.0, limit=10)] == ["t2", "t3"]
    assert len(queue) == 1


def test_a_discarded_entry_becomes_a_tombstone_that_is_dropped_when_it_surfaces() -> None:
    queue = TaskQueue()
    gone, kept = make_task("gone"), make_task("kept")
    queue.push(entry(gone, 1.0))
    queue.push(entry(kept, 2.0))
    tombstone(queue, gone)
    assert queue.stats() == (2, 1) and len(queue) == 1
    assert queue.next_due() == 2.0  # the tombstone on top was dropped
    assert queue.stats() == (1, 0)
    assert [e[4].name for e in queue.pop_due(5.0, 10)] == ["kept"]


def test_the_heap_is_rebuilt_when_tombstones_outnumber_live_entries() -> None:
    queue = TaskQueue()
    tasks = [make_task(f"t{i}") for i in range(REBUILD_MIN_ENTRIES * 2)]
    for i, task in enumerate(tasks):
        queue.push(entry(task, float(i)))
    half = len(tasks) // 2
    for task in tasks[:half]:
        tombstone(queue, task)
    assert queue.stats().tombstones == half  # equal, not outnumbering: no rebuild
    tombstone(queue, tasks[half])
    assert queue.stats() == (half - 1, 0)  # rebuilt: only live entries remain
    assert queue.next_due() == float(half + 1)


def test_a_small_heap_keeps_its_tombstones() -> None:
    queue = TaskQueue()
    tasks = [make_task(f"t{i}") for i in range(3)]
    for i, task in enumerate(tasks):
        queue.push(entry(task, float(i + 10)))
    for task in tasks[:2]:
        tombstone(queue, task)
    assert queue.stats() == (3, 2)


def test_a_push_that_becomes_the_head_wakes_the_timer_and_no_other_push_does() -> None:
    wake = threading.Condition()
    queue = TaskQueue(wake)
    notified: list[str] = []
    wake.notify_all = lambda: notified.append("head")  # type: ignore[method-assign]
    queue.push(entry(make_task("a"), 5.0))
    queue.push(entry(make_task("later"), 9.0))
    queue.push(entry(make_task("sooner"), 1.0))
    assert notified == ["head", "head"]
