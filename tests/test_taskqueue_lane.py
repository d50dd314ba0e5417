"""TaskQueue's lane: entries due when they are pushed skip the heap, in exact order."""

from __future__ import annotations

import threading

from lldsched import FakeClock, OneTime, Priority, Scheduler
from lldsched.core.duequeue import COMPACT_MIN_ENTRIES, TaskQueue
from lldsched.core.task import ScheduledTask

Registry = dict[str, ScheduledTask]


def make_queue(
    clock: FakeClock, wake: threading.Condition | None = None
) -> tuple[TaskQueue, Registry]:
    """A queue given ``clock``, as the threaded scheduler gives it its own."""
    queue = TaskQueue(wake)
    registry: Registry = {}
    queue.attach(registry)
    queue.set_clock(clock.now)
    return queue, registry


def make_task(registry: Registry, name: str, priority: Priority = Priority.NORMAL) -> ScheduledTask:
    task = registry[name] = ScheduledTask(name, name, None, OneTime(delay=0), priority)
    return task


def test_an_entry_due_when_pushed_takes_the_lane_and_a_later_one_the_heap() -> None:
    clock = FakeClock(100.0)
    queue, tasks = make_queue(clock)
    queue.push(make_task(tasks, "now"), 100.0)
    queue.push(make_task(tasks, "also now"), 100.0)
    queue.push(make_task(tasks, "later"), 130.0)
    assert [e[3] for e in queue._lane] == ["now", "also now"]
    assert [e[3] for e in queue._heap] == ["later"]
    assert len(queue) == 3 and queue.stats() == (3, 0)


def test_the_two_heads_merge_in_due_then_priority_then_arrival_order() -> None:
    clock = FakeClock(0.0)
    queue, tasks = make_queue(clock)
    queue.push(make_task(tasks, "at ten"), 10.0)  # not due yet: the heap
    clock.set(10.0)
    queue.push(make_task(tasks, "early"), 5.0)  # due already: the lane
    queue.push(make_task(tasks, "first"), 10.0)  # due, and after "early": the lane
    queue.push(make_task(tasks, "high", Priority.HIGH), 10.0)  # sorts before "first": heap
    queue.push(make_task(tasks, "second"), 10.0)
    assert [e[3] for e in queue._lane] == ["early", "first", "second"]
    assert queue.entries() == sorted(queue.entries())
    names = [e[3] for e in queue.pop_due(10.0, limit=100)]
    assert names == ["early", "high", "at ten", "first", "second"]
    assert len(queue) == 0


def test_peek_and_take_read_the_smaller_head_and_drop_tombstones_on_the_way() -> None:
    clock = FakeClock(0.0)
    queue, tasks = make_queue(clock)
    queue.push(make_task(tasks, "heap"), 3.0)  # the heap
    clock.set(5.0)
    gone = make_task(tasks, "gone")
    queue.push(gone, 1.0)  # the lane
    queue.push(make_task(tasks, "lane"), 2.0)  # the lane
    queue.discard(gone)
    head = queue.peek()
    assert head is not None and head[3] == "lane" and queue.stats() == (2, 0)
    queue.take(head)
    assert queue.pop() is not None and queue.pop() is None and len(queue) == 0


def test_a_compaction_sweeps_the_tombstones_out_of_the_lane() -> None:
    clock = FakeClock(50.0)
    queue, tasks = make_queue(clock)
    n = 10 * COMPACT_MIN_ENTRIES
    for i in range(n):
        queue.push(make_task(tasks, f"t{i}"), 50.0)  # all due: the lane
    for i in range(0, n, 3):
        queue.push(make_task(tasks, f"h{i}"), 60.0 + i)  # later: the heap
    for i in range(n - 100):
        queue.discard(tasks[f"t{i}"])
        entries, tombstones = queue.stats()
        assert entries <= 1.5 * (entries - tombstones) + COMPACT_MIN_ENTRIES
    assert queue.stats().tombstones < n - 100  # dropped, not only counted
    survivors = [e[3] for e in queue.pop_due(1e9, limit=2 * n)]
    expected = [f"t{i}" for i in range(n - 100, n)] + [f"h{i}" for i in range(0, n, 3)]
    assert survivors == expected


def test_a_lane_entry_wakes_the_timer_only_when_it_becomes_the_head() -> None:
    clock = FakeClock(10.0)
    wake = threading.Condition()
    queue, tasks = make_queue(clock, wake)
    notified: list[str] = []
    wake.notify_all = lambda: notified.append("head")  # type: ignore[method-assign]
    queue.push(make_task(tasks, "parked"), 3600.0)  # the heap's head: the timer is told
    assert notified == ["head"]
    queue.push(make_task(tasks, "due"), 10.0)  # the lane's first, before the heap: told
    assert notified == ["head", "head"]
    queue.push(make_task(tasks, "behind"), 10.0)  # behind "due": nothing changes
    assert notified == ["head", "head"]


def test_a_queue_given_no_clock_keeps_every_entry_in_the_heap() -> None:
    queue = TaskQueue()
    tasks: Registry = {}
    queue.attach(tasks)
    queue.push(make_task(tasks, "t"), 0.0)
    assert not queue._lane and len(queue._heap) == 1


def test_runs_due_at_once_start_in_priority_order_through_the_scheduler() -> None:
    clock = FakeClock(1_000.0)
    order: list[str] = []
    scheduler = Scheduler(workers=1, clock=clock)
    for name, priority in [("normal 1", Priority.NORMAL), ("low", Priority.LOW),
                           ("high", Priority.HIGH), ("normal 2", Priority.NORMAL)]:  # fmt: skip
        scheduler.schedule(name, order.append, OneTime(at=900.0), args=(name,), priority=priority)
    paused = scheduler.schedule("paused", order.append, OneTime(at=900.0), args=("paused",))
    scheduler.pause(paused.id)
    scheduler.start()
    try:
        assert scheduler.wait_idle(10)
    finally:
        scheduler.shutdown()
    assert order == ["high", "normal 1", "normal 2", "low"]
