"""TaskQueue: heap order, and tombstones instead of removal (compaction has its own file)."""

from __future__ import annotations

import gc
import threading

from lldsched import OneTime, Priority
from lldsched.core.duequeue import TaskQueue, queued_entry
from lldsched.core.task import ScheduledTask

Registry = dict[str, ScheduledTask]


def make_queue(wake: threading.Condition | None = None) -> tuple[TaskQueue, Registry]:
    """A queue attached to a registry, as the core attaches its own."""
    queue = TaskQueue(wake)
    registry: dict[str, ScheduledTask] = {}
    queue.attach(registry)
    return queue, registry


def make_task(
    registry: dict[str, ScheduledTask], name: str, priority: Priority = Priority.NORMAL
) -> ScheduledTask:
    task = registry[name] = ScheduledTask(name, name, None, OneTime(delay=0), priority)
    return task


def test_entries_pop_by_due_then_priority_then_arrival() -> None:
    queue, tasks = make_queue()
    for name, priority in [("low", Priority.LOW), ("first", Priority.NORMAL),
                           ("high", Priority.HIGH), ("second", Priority.NORMAL)]:  # fmt: skip
        queue.push(make_task(tasks, name, priority), 10.0)
    queue.push(make_task(tasks, "later", Priority.HIGH), 11.0)
    assert queue.next_due() == 10.0
    names = [e[3] for e in queue.pop_due(10.0, limit=100)]
    assert names == ["high", "first", "second", "low"]


def test_pop_due_respects_its_limit_and_leaves_later_entries() -> None:
    queue, tasks = make_queue()
    for i in range(5):
        queue.push(make_task(tasks, f"t{i}"), float(i))
    assert [e[3] for e in queue.pop_due(3.0, limit=2)] == ["t0", "t1"]
    assert [e[3] for e in queue.pop_due(3.0, limit=10)] == ["t2", "t3"]
    assert len(queue) == 1


def test_a_discarded_entry_becomes_a_tombstone_that_is_dropped_when_it_surfaces() -> None:
    queue, tasks = make_queue()
    gone, kept = make_task(tasks, "gone"), make_task(tasks, "kept")
    queue.push(gone, 1.0)
    queue.push(kept, 2.0)
    queue.discard(gone)
    assert queue.stats() == (2, 1) and len(queue) == 1
    assert queue.next_due() == 2.0  # the tombstone on top was dropped
    assert queue.stats() == (1, 0)
    assert [e[3] for e in queue.pop_due(5.0, 10)] == ["kept"]


def test_peek_returns_the_first_live_entry_and_leaves_it_queued() -> None:
    queue, tasks = make_queue()
    assert queue.peek() is None
    gone, kept = make_task(tasks, "gone"), make_task(tasks, "kept")
    queue.push(gone, 1.0)
    queue.push(kept, 2.0)
    queue.discard(gone)
    entry = queue.peek()
    assert entry is not None
    assert (entry[0], entry[3], queue.live(entry)) == (2.0, "kept", kept)
    assert queue.stats() == (1, 0)  # the tombstone on top was dropped, the head stays
    assert queue.pop() == entry and queue.peek() is None


def test_take_removes_the_head_peek_returned_as_pop_would() -> None:
    queue, tasks = make_queue()
    first, second = make_task(tasks, "first"), make_task(tasks, "second")
    queue.push(first, 1.0)
    queue.push(second, 2.0)
    head = queue.peek()
    assert head is not None
    queue.take(head)
    assert not first._queued and queue.stats() == (1, 0)
    later = queue.peek()
    assert later is not None and later[3] == "second"


def test_a_second_push_kills_the_first_entry_of_the_same_task() -> None:
    queue, tasks = make_queue()
    task = make_task(tasks, "moved")
    queue.push(task, 1.0)
    queue.push(task, 7.0)
    assert queue.stats() == (2, 1)
    assert queue.pop_due(5.0, 10) == []
    (entry,) = queue.pop_due(7.0, 10)
    assert entry[0] == 7.0 and queue.live(entry) is task


def test_an_entry_already_popped_dies_when_its_task_is_discarded() -> None:
    queue, tasks = make_queue()
    task = make_task(tasks, "handed-off")
    queue.push(task, 1.0)
    (entry,) = queue.pop_due(1.0, 10)  # now on its way to a worker
    assert queue.live(entry) is task
    queue.discard(task)
    assert queue.live(entry) is None
    assert queue.stats() == (0, 0)  # it was no longer in the heap: no tombstone counted


def test_an_id_registered_again_does_not_revive_the_old_entry() -> None:
    queue, tasks = make_queue()
    old = make_task(tasks, "reused")
    queue.push(old, 1.0)
    queue.discard(old)
    del tasks["reused"]  # removed, then an id generator hands out the same id
    new = make_task(tasks, "reused")
    assert queue.next_due() is None and queue.pop() is None
    queue.push(new, 5.0)
    assert queue.pop_due(4.0, 10) == []
    (entry,) = queue.pop_due(5.0, 10)
    assert queue.live(entry) is new


def test_an_entry_of_a_task_no_longer_registered_is_a_tombstone() -> None:
    queue, tasks = make_queue()
    queue.push(make_task(tasks, "forgotten"), 1.0)
    queue.push(make_task(tasks, "kept"), 2.0)
    del tasks["forgotten"]
    assert queue.entries() == [(2.0, Priority.NORMAL, tasks["kept"].generation, "kept")]
    assert queue.pending() == [tasks["kept"]]
    assert [e[3] for e in queue.pop_due(3.0, 10)] == ["kept"]


def test_entries_hold_no_object_the_cyclic_collector_has_to_track() -> None:
    queue, tasks = make_queue()
    queue.push(make_task(tasks, "t"), 1.0)
    gc.collect()  # the collector untracks tuples of untracked values when it sees them
    (entry,) = queue.entries()
    assert not gc.is_tracked(queue._heap[0]) and entry == queue._heap[0]


def test_a_push_that_becomes_the_head_wakes_the_timer_and_no_other_push_does() -> None:
    wake = threading.Condition()
    queue, tasks = make_queue(wake)
    notified: list[str] = []
    wake.notify_all = lambda: notified.append("head")  # type: ignore[method-assign]
    queue.push(make_task(tasks, "a"), 5.0)
    queue.push(make_task(tasks, "later"), 9.0)
    queue.push(make_task(tasks, "sooner"), 1.0)
    assert notified == ["head", "head"]


def test_queued_entry_is_the_live_entry_push_made() -> None:
    """A shared store's claim hands a queued task's run to a worker by this entry."""
    queue, tasks = make_queue()
    task = make_task(tasks, "claimed", Priority.HIGH)
    queue.push(task, 12.5)
    entry = queued_entry(task, 12.5)
    assert queue.entries() == [entry] and queue.live(entry) is task


def test_put_back_queues_entries_popped_unrun_in_their_places_and_drops_the_dead() -> None:
    """A shutdown's dropped entries (docs/decisions/simulation.md, "What a simulation's metrics read
    after its shutdown"): each live one back in its place, its task queued again; one
    whose task was discarded, pushed again or removed since stays out."""
    queue, tasks = make_queue()
    for name, due in [("a", 1.0), ("b", 1.0), ("paused", 1.0), ("moved", 1.0), ("gone", 1.0)]:
        queue.push(make_task(tasks, name), due)
    queue.push(make_task(tasks, "later"), 5.0)
    popped = queue.pop_due(2.0, limit=10)
    assert [e[3] for e in popped] == ["a", "b", "paused", "moved", "gone"]
    queue.discard(tasks["paused"])
    queue.push(tasks["moved"], 3.0)  # pushed again: its popped entry is dead
    del tasks["gone"]
    queue.put_back(list(reversed(popped)))
    assert [t.id for t in queue.pending()] == ["a", "b", "moved", "later"]
    assert tasks["a"]._queued and queue.stats() == (4, 0)
    queue.put_back(popped)
    assert queue.stats() == (4, 0)  # nothing twice
    assert [e[3] for e in queue.pop_due(10.0, limit=10)] == ["a", "b", "moved", "later"]
