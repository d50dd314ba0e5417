"""TaskQueue compaction: tombstones go a bounded slice at a time, the heap stays bounded."""

from __future__ import annotations

import math
from collections.abc import Callable
from unittest import mock

from hypothesis import given, note, settings
from hypothesis import strategies as st

from lldsched import OneTime, Priority
from lldsched.core import duequeue
from lldsched.core.duequeue import COMPACT_MIN_ENTRIES, COMPACT_SLICE, TaskQueue
from lldsched.core.task import ScheduledTask


class CountingRegistry(dict[str, ScheduledTask]):
    """A registry that counts lookups: one per entry whose liveness is checked."""

    lookups = 0

    def get(self, key: str, default: object = None) -> ScheduledTask | None:  # type: ignore[override]
        self.lookups += 1
        return super().get(key)


def make_queue(n: int, due: Callable[[int], float] = float) -> tuple[TaskQueue, CountingRegistry]:
    """A queue of ``n`` one-off tasks ``t0``..., ``t<i>`` due at ``due(i)``."""
    queue, registry = TaskQueue(), CountingRegistry()
    queue.attach(registry)
    for i in range(n):
        task = registry[f"t{i}"] = ScheduledTask(
            f"t{i}", f"t{i}", None, OneTime(delay=0), Priority.NORMAL
        )
        queue.push(task, due(i))
    return queue, registry


def within_bound(queue: TaskQueue) -> bool:
    entries, tombstones = queue.stats()
    return entries <= 1.5 * (entries - tombstones) + COMPACT_MIN_ENTRIES


def test_a_small_heap_keeps_its_tombstones() -> None:
    queue, registry = make_queue(COMPACT_MIN_ENTRIES - 1)
    for i in range(COMPACT_MIN_ENTRIES - 2):
        queue.discard(registry[f"t{i}"])
    assert queue.stats() == (COMPACT_MIN_ENTRIES - 1, COMPACT_MIN_ENTRIES - 2)


def test_tombstones_past_forty_percent_of_the_live_entries_start_a_compaction() -> None:
    queue, registry = make_queue(1000)
    for i in range(285):  # 285 tombstones, 715 live: 285 * 5 <= 715 * 2
        queue.discard(registry[f"t{i}"])
    assert queue.stats() == (1000, 285)
    queue.discard(registry["t285"])  # 286 * 5 > 714 * 2: starts, moves one slice
    assert len(queue._old) == 1000 - 1 - COMPACT_SLICE  # under way: the head, then a slice
    gone = 286 + math.ceil(1000 / COMPACT_SLICE)  # enough slices to drain the old heap
    for i in range(286, gone):
        queue.discard(registry[f"t{i}"])
    assert not queue._old  # finished: only tombstones made while it ran are left
    entries, tombstones = queue.stats()
    assert entries - tombstones == 1000 - gone and tombstones < gone - 286
    assert queue.next_due() == gone
    survivors = [e[3] for e in queue.pop_due(math.inf, limit=2000)]
    assert survivors == [f"t{i}" for i in range(gone, 1000)]


def test_no_single_discard_looks_at_more_than_one_slice_of_entries() -> None:
    n = 20_000
    queue, registry = make_queue(n, due=lambda i: float((i * 7919) % n))
    worst = 0
    for i in range(n - 10):
        before = registry.lookups
        queue.discard(registry[f"t{i}"])
        worst = max(worst, registry.lookups - before)
        assert within_bound(queue)
    assert 0 < worst <= COMPACT_SLICE  # a whole-heap rebuild would look at every entry
    assert [e[3] for e in queue.pop_due(math.inf, limit=n)] == sorted(
        (f"t{i}" for i in range(n - 10, n)), key=lambda name: (int(name[1:]) * 7919) % n
    )


def test_a_push_and_a_pop_during_a_compaction_move_a_slice_and_find_the_true_head() -> None:
    queue, registry = make_queue(600, due=lambda i: float(600 - i))  # t599 is due first
    for i in range(300, 600):  # the earliest half goes
        queue.discard(registry[f"t{i}"])
    assert queue._old  # a compaction is under way
    entry = queue.pop()
    assert entry is not None and entry[3] == "t299"
    (due,) = queue.pop_due(math.inf, limit=1)
    assert due[3] == "t298"
    assert within_bound(queue)


Op = tuple[str, int, int]
# Before the random operations: INITIAL tasks queued (past COMPACT_MIN_ENTRIES), and
# DISCARDED of them discarded, a few discards short of starting a compaction.
INITIAL, DISCARDED = 150, 40
DISCARD = st.tuples(st.just("discard"), st.integers(0, INITIAL + 19), st.just(0))
OPS = st.one_of(
    st.tuples(st.just("push"), st.integers(0, INITIAL + 19), st.integers(0, 60)),
    DISCARD,
    DISCARD,  # twice as likely: tombstones have to pile up for compactions to start
    st.tuples(st.just("pop_due"), st.integers(0, 60), st.integers(1, 8)),
    st.tuples(st.just("pop"), st.just(0), st.just(0)),
    st.tuples(st.just("peek"), st.just(0), st.just(0)),
)


def replay(ops: list[Op], *, check_bound: bool, lane: bool = False) -> None:
    """Run ``ops`` on a queue and on a plain reference (see INITIAL); they must agree.

    ``lane``: the queue is given a clock, set to each ``pop_due``'s instant, so pushes
    due by then take the lane (:mod:`lldsched.core.duequeue`)."""
    queue, registry = make_queue(INITIAL, due=lambda i: float(i % 17))
    clock = [0.0]
    if lane:
        queue.set_clock(lambda: clock[0])
    # The reference: each task's live entry, by name; the queue must agree on every pop.
    reference = {name: (float(i % 17), task.priority._value_, task.generation, name)
                 for i, (name, task) in enumerate(registry.items())}  # fmt: skip
    for i in range(DISCARDED):
        queue.discard(registry[f"t{i}"])
        del reference[f"t{i}"]
    for verb, a, b in ops:
        name = f"t{a}"
        if verb == "push":
            task = registry.get(name) or ScheduledTask(
                name, name, None, OneTime(delay=0), Priority(b % 3)
            )
            registry[name] = task
            queue.push(task, float(b))
            reference[name] = (float(b), task.priority._value_, task.generation, name)
        elif verb == "discard":
            if name in registry:
                queue.discard(registry[name])
            reference.pop(name, None)
        elif verb == "pop_due":
            clock[0] = float(a)
            expected = sorted(e for e in reference.values() if e[0] <= a)[:b]
            assert queue.pop_due(float(a), limit=b) == expected
            for entry in expected:
                del reference[entry[3]]
        elif verb == "pop":
            head = min(reference.values(), default=None)
            assert queue.pop() == head
            if head is not None:
                del reference[head[3]]
        else:
            assert queue.peek() == min(reference.values(), default=None)
        assert len(queue) == len(reference)
        assert not check_bound or within_bound(queue)
    assert queue.entries() == sorted(reference.values())


# The four ways the random operations are replayed: the real slice, with the bound
# checked after every operation, and two entries a slice, where every compaction spans
# dozens of operations so pushes, pops and discards land while both heaps hold entries
# (the bound needs the real slice); each without and with the lane.
REPLAYS = (
    ("the real slice: the heap stays within its bound", None, False),
    ("two entries a slice: the queue matches the reference", 2, False),
    ("the lane, the real slice: within the bound", None, True),
    ("the lane, two entries a slice: matches the reference", 2, True),
)


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(OPS, min_size=40, max_size=300))
def test_random_pushes_discards_and_pops_match_a_reference_replayed_four_ways(
    ops: list[Op],
) -> None:
    """Every list of operations is replayed in each of the REPLAYS: drawing a list costs
    hypothesis some ten times what replaying it does, so the four share their 300 lists
    (each replay starts from a fresh queue; none sees another's)."""
    for what, slice_size, lane in REPLAYS:
        note(f"replaying: {what}")
        if slice_size is None:
            replay(ops, check_bound=True, lane=lane)
        else:
            with mock.patch.object(duequeue, "COMPACT_SLICE", slice_size):
                replay(ops, check_bound=False, lane=lane)
