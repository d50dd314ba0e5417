"""TaskQueue: heap order, tombstones instead of removal, and the rebuild rule."""

from __future__ import annotations

import itertools

from lldsched import OneTime, Priority
from lldsched.task import Entry, ScheduledTask
from lldsched.taskqueue import REBUILD_MIN_ENTRIES, TaskQueue

_sequence = itertools.count()


def make_task(name: str, priority: Priority = Priority.NORMAL) -> ScheduledTask:
    return ScheduledTask(name, name, None, OneTime(delay=0), priority)


def entry(task: ScheduledTask, due: float) -> Entry:
    task.generation += 1
    return (due, task.priority, next(_sequence), task.generation, task)


def test_entries_pop_by_due_then_priority_then_arrival() -> None:
    queue = TaskQueue()
    low, high, first, second = (
        make_task("low", Priority.LOW), make_task("high", Priority.HIGH),
        make_task("first"), make_task("second"),
    )  # fmt: skip
    with queue.cond:
        for task in (low, first, high, second):
            queue.push(entry(task, 10.0))
        queue.push(entry(make_task("later", Priority.HIGH), 11.0))
        assert queue.next_due() == 10.0
        names = [e[4].name for e in queue.pop_due(10.0, limit=100)]
    assert names == ["high", "first", "second", "low"]


def test_pop_due_respects_its_limit_and_leaves_later_entries() -> None:
    queue = TaskQueue()
    tasks = [make_task(f"t{i}") for i in range(5)]
    with queue.cond:
        for i, task in enumerate(tasks):
            queue.push(entry(task, float(i)))
        assert [e[4].name for e in queue.pop_due(3.0, limit=2)] == ["t0", "t1"]
        assert [e[4].name for e in queue.pop_due(3.0, limit=10)] == ["t2", "t3"]
        assert len(queue) == 1


def test_a_discarded_entry_becomes_a_tombstone_that_is_dropped_when_it_surfaces() -> None:
    queue = TaskQueue()
    gone, kept = make_task("gone"), make_task("kept")
    with queue.cond:
        queue.push(entry(gone, 1.0))
        queue.push(entry(kept, 2.0))
        gone.generation += 1  # what the core does before discarding
        queue.discard(gone)
        assert queue.stats() == (2, 1) and len(queue) == 1
        assert queue.next_due() == 2.0  # the tombstone on top was dropped
        assert queue.stats() == (1, 0)
        assert [e[4].name for e in queue.pop_due(5.0, 10)] == ["kept"]


def test_the_heap_is_rebuilt_when_tombstones_outnumber_live_entries() -> None:
    queue = TaskQueue()
    tasks = [make_task(f"t{i}") for i in range(REBUILD_MIN_ENTRIES * 2)]
    with queue.cond:
        for i, task in enumerate(tasks):
            queue.push(entry(task, float(i)))
        half = len(tasks) // 2
        for task in tasks[:half]:
            task.generation += 1  # what the core does before discarding
            queue.discard(task)
        assert queue.stats().tombstones == half  # equal, not outnumbering: no rebuild
        tasks[half].generation += 1
        queue.discard(tasks[half])
        assert queue.stats() == (half - 1, 0)  # rebuilt: only live entries remain
        assert queue.next_due() == float(half + 1)


def test_a_small_heap_keeps_its_tombstones() -> None:
    queue = TaskQueue()
    tasks = [make_task(f"t{i}") for i in range(3)]
    with queue.cond:
        for i, task in enumerate(tasks):
            queue.push(entry(task, float(i + 10)))
        for task in tasks[:2]:
            task.generation += 1  # what the core does before discarding
            queue.discard(task)
        assert queue.stats() == (3, 2)


def test_a_push_that_becomes_the_head_notifies_the_waiting_timer() -> None:
    queue = TaskQueue()
    notified: list[str] = []

    class Spy:
        def notify_all(self) -> None:
            notified.append("head")

    with queue.cond:
        real = queue.cond
        queue.cond = Spy()  # type: ignore[assignment]
        queue.push(entry(make_task("a"), 5.0))
        queue.push(entry(make_task("later"), 9.0))
        queue.push(entry(make_task("sooner"), 1.0))
        queue.cond = real
    assert notified == ["head", "head"]
