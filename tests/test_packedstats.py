"""PackedRunStats: a history whose older records are packed gives back equal records, in
order, within its limit; the threaded scheduler keeps its histories that way."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lldsched import (
    ExecutionRecord,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Priority,
    Scheduler,
)
from lldsched.core.packedstats import (
    BATCH,
    PackedRunStats,
    Rows,
    pack,
    pack_all,
    packed_history,
    run_stats_maker,
    unpack,
)
from lldsched.core.task import RunStats
from lldsched.views import columns
from lldsched.views.frames import to_frame
from tests.harness import Harness
from tests.test_recordlog import records
from tests.tracking import tracked_from

T0 = 1_767_571_200.0


def _record(index: int, *, task_id: str = "t", name: str = "tick") -> ExecutionRecord:
    failed = index % 5 == 0
    return ExecutionRecord.of(
        task_id=task_id, name=name, attempt=1 + index % 3, due=T0 + index, slot=T0 + index,
        worker=index % 4, started=T0 + index + 0.25, finished=T0 + index + 1.5, ok=not failed,
        error="ValueError: boom" if failed else None, result=None if failed else repr(index),
    )  # fmt: skip


@given(st.lists(records, min_size=1, max_size=BATCH))
@settings(max_examples=60)
def test_a_block_gives_back_the_records_packed(packed: list[ExecutionRecord]) -> None:
    back = list(unpack(pack(packed)))
    assert back == packed
    assert [list(map(type, record)) for record in back] == [
        list(map(type, record)) for record in packed
    ]


def test_a_block_of_no_record_or_more_than_a_batch_is_refused_naming_the_size() -> None:
    with pytest.raises(ValueError, match="not 0"):
        pack([])
    with pytest.raises(ValueError, match=f"not {BATCH + 1}"):
        pack([_record(i) for i in range(BATCH + 1)])


@pytest.mark.parametrize("limit", [None, BATCH + 1, 40, 100])
@pytest.mark.parametrize("count", [0, 1, 2, BATCH - 1, BATCH, BATCH + 1, 5 * BATCH + 3, 250])
def test_the_history_is_the_newest_records_within_the_limit(limit: int | None, count: int) -> None:
    added = [_record(i) for i in range(count)]
    packed, plain = PackedRunStats(limit), RunStats(limit)
    for record in added:
        packed.add(record)
        plain.add(record)
    expected = tuple(added if limit is None else added[-limit:])
    assert packed.records() == plain.records() == expected
    assert packed.held() == len(expected)


@given(st.lists(records, max_size=80), st.integers(min_value=BATCH + 1, max_value=60))
@settings(max_examples=40)
def test_any_records_come_back_equal_and_in_order(added: list[ExecutionRecord], limit: int) -> None:
    stats = PackedRunStats(limit)
    for record in added:
        stats.add(record)
    assert stats.records() == tuple(added[-limit:])


def test_the_blocks_end_with_the_held_records() -> None:
    stats = PackedRunStats(40)
    added = [_record(i, name="renamed" if i > 50 else "tick") for i in range(70)]
    for record in added:
        stats.add(record)
    blocks = stats.blocks()
    assert sum(block.size for block in blocks[:-1]) == BATCH * (len(blocks) - 1)
    everything = [record for block in blocks for record in unpack(block)]
    assert everything[-stats.held() :] == added[-40:]


def test_a_full_history_leaves_only_its_tail_tracked_by_the_collector() -> None:
    stats = PackedRunStats(100)
    added = [_record(i) for i in range(100)]  # six blocks packed, four records in the tail
    for record in added:
        stats.add(record)
    tracked = tracked_from(stats)
    # The stats, the deque of blocks, the tail's deque and its four records: no block.
    assert sorted(type(thing).__name__ for thing in tracked) == [
        *["ExecutionRecord"] * 4, "PackedRunStats", "deque", "deque"
    ]  # fmt: skip
    assert stats.records() == tuple(added)
    assert [record for block in stats.blocks() for record in unpack(block)] == added


def test_the_blocks_of_no_record_or_one_hold_nothing_or_it() -> None:
    stats = PackedRunStats(40)  # a one-off task's history: one record, never a tail
    assert stats.blocks() == [] and stats.held() == 0 and packed_history(stats) == []
    stats.add(_record(0))
    (block,) = stats.blocks()
    assert list(unpack(block)) == [_record(0)] and stats.held() == 1
    assert packed_history(stats) == [Rows(block, 0)]


@pytest.mark.parametrize("count", [55, 56, 57, 70])
def test_the_packed_history_gives_only_blocks_with_records_in_the_history(count: int) -> None:
    stats = PackedRunStats(40)  # at 56, the oldest block kept is wholly older than the history
    added = [_record(i) for i in range(count)]
    for record in added:
        stats.add(record)
    rows = packed_history(stats)
    assert all(row.start < row.block.size for row in rows)
    kept = [record for row in rows for record in list(unpack(row.block))[row.start :]]
    assert kept == added[-40:]


def test_only_a_limit_that_leaves_records_to_pack_makes_packed_stats() -> None:
    assert type(run_stats_maker(100, packed=True)()) is PackedRunStats
    assert type(run_stats_maker(None, packed=True)()) is PackedRunStats
    assert type(run_stats_maker(BATCH, packed=True)()) is RunStats
    assert type(run_stats_maker(0, packed=True)()) is RunStats
    assert type(run_stats_maker(100, packed=False)()) is RunStats


def noop() -> str:
    return "done"


def test_a_core_with_packed_histories_keeps_the_same_history(clock: FakeClock) -> None:
    h = Harness(clock, history_limit=30, packed_history=True)
    task = h.core.add("tick", noop, FixedRate(1))
    made = [h.step() for _ in range(3 * BATCH + 5)]
    ran = [record for record in made if record is not None]
    assert task.history == tuple(ran[-30:]) and task.run_count == len(ran) == 3 * BATCH + 5
    assert [record.due for record in task.history] == sorted(r.due for r in task.history)


def test_a_retired_tasks_packed_history_stays_in_the_retired_records(clock: FakeClock) -> None:
    h = Harness(clock, history_limit=20, packed_history=True, retain_finished=0)
    task = h.core.add("tick", noop, FixedRate(1))
    for _ in range(2 * BATCH + 3):
        h.step()
    history = task.history
    h.core.cancel(task.id)  # finished: it retires at once (retain_finished=0)
    assert task.id not in h.core.tasks
    assert h.core.retired_records() == list(history) and len(history) == 20


def test_a_threaded_schedulers_records_are_its_stores_records() -> None:
    clock = FakeClock(T0)
    store = InMemoryTaskStore()
    scheduler = Scheduler(workers=2, clock=clock, store=store, history_limit=None)
    with scheduler:
        for number in range(3):
            scheduler.schedule(f"tick-{number}", noop, FixedRate(10))
        scheduler.schedule("once", noop, OneTime(delay=25))
        for _ in range(2 * BATCH + 2):
            clock.advance(10.0)
            assert scheduler.wait_idle(10.0)
        held = scheduler.records()
        first = scheduler.tasks()[0]
        history = first.history
    # Runs on a FakeClock take no time: ties in ``finished`` are in no set order.
    assert [record.finished for record in held] == sorted(record.finished for record in held)
    assert sorted(held) == sorted(store.records()) and len(held) > 3 * 2 * BATCH
    assert history == tuple(record for record in store.records() if record.task_id == first.id)


def _flaky(counter: list[int]) -> None:
    counter.append(1)
    if len(counter) % 3 == 0:
        raise ValueError(f"boom {len(counter)}")


def test_a_schedulers_frame_read_from_its_packed_histories_equals_the_frame_of_its_records() -> (
    None
):
    clock = FakeClock(T0)
    scheduler = Scheduler(workers=2, clock=clock, history_limit=40, retain_finished=0)
    with scheduler:
        scheduler.schedule("flaky", _flaky, FixedRate(10), args=([],), priority=Priority.HIGH)
        scheduler.schedule("answers", lambda: 42, FixedRate(20))
        ended = scheduler.schedule("ended", noop, FixedRate(10))
        for number in range(5):
            scheduler.schedule(f"once-{number}", noop, OneTime(delay=10.0 * number))
        for step in range(6 * BATCH):
            if step == 3 * BATCH:
                scheduler.cancel(ended.id)  # it retires (retain_finished=0) with its history
            clock.advance(10.0)
            assert scheduler.wait_idle(10.0)
    from_blocks = to_frame(scheduler)
    from_records = to_frame(scheduler.records(), priorities=scheduler.priorities())
    assert len(from_blocks) == 3 * 40 and from_blocks["error"].notna().any()  # 2 tasks, retired
    assert from_blocks["result"].notna().any() and (from_blocks["task_id"] == ended.id).any()
    # a retired task's rows keep its priority (core/departed.py), not <NA>
    assert set(from_blocks[from_blocks["task_id"] == ended.id]["priority"]) == {Priority.NORMAL}
    pd.testing.assert_frame_equal(from_blocks, from_records)


def test_an_empty_schedulers_frame_has_the_columns() -> None:
    frame = to_frame(Scheduler(workers=1))
    pd.testing.assert_frame_equal(frame, to_frame([]))


@given(st.lists(records, max_size=70), st.integers(min_value=0, max_value=BATCH - 1))
@settings(max_examples=40)
def test_packed_rows_give_the_frame_of_their_records_sorted_by_finish(
    added: list[ExecutionRecord], skip: int
) -> None:
    rows = [Rows(block, 0) for block in pack_all(added)]
    if rows:
        rows[0] = Rows(rows[0].block, min(skip, rows[0].block.size))  # older than the history
    kept = added[rows[0].start :] if rows else []
    expected = columns.from_records(sorted(kept, key=lambda record: record.finished))
    got = columns.from_packed(rows)
    assert list(got) == list(expected)
    for column in ("task_id", "name", "error", "result"):
        assert list(got[column]) == list(expected[column]), column
    for column in ("attempt", "worker", "due", "started", "finished", "ok", "timed_out"):
        assert np.array_equal(got[column], expected[column]), column
    assert list(got["outcome"]) == list(expected["outcome"])


class _PacksWhileCopied(deque):  # type: ignore[type-arg]
    """The blocks of a PackedRunStats that, the first time they are copied, let ``add``
    pack a batch right after the copy and before the tail is copied: the interleaving
    a reader without the runtime's lock can meet, forced."""

    def __init__(self, blocks: deque[Any], add: Callable[[], None]) -> None:
        super().__init__(blocks, maxlen=blocks.maxlen)
        self._add: Callable[[], None] | None = add

    def __iter__(self) -> Iterator[Any]:
        copied = list(super().__iter__())
        add, self._add = self._add, None
        if add is not None:
            add()  # completes the batch: it is packed into a block, the tail emptied
        return iter(copied)


def test_a_history_read_while_a_batch_is_packed_is_the_one_before_or_after_the_add() -> None:
    stats = PackedRunStats(None)
    added = [_record(i) for i in range(2 * BATCH)]
    for record in added[:-1]:  # one block, and a tail a record short of a batch
        stats.add(record)
    stats._blocks = _PacksWhileCopied(stats._blocks, lambda: stats.add(added[-1]))
    assert stats.records() in (tuple(added[:-1]), tuple(added))  # never without the tail
    assert stats.records() == tuple(added)


@pytest.mark.parametrize("with_store", [False, True], ids=["no store", "sqlite store"])
def test_a_threaded_scheduler_packs_its_histories_with_a_store_or_without(
    tmp_path: Any, with_store: bool
) -> None:
    from lldsched import SqliteTaskStore
    from lldsched.core import packedstats

    store = SqliteTaskStore(tmp_path / "tasks.db") if with_store else None
    clock = FakeClock(T0)
    scheduler = Scheduler(workers=1, clock=clock, store=store)
    with scheduler:
        scheduler.schedule("tick", noop, FixedRate(10))
        for _ in range(2 * BATCH):
            clock.advance(10.0)
            assert scheduler.wait_idle(10.0)
        (task,) = scheduler.tasks()
    if store is not None:
        store.close()  # after its scheduler's shutdown
    # Its older records are in packed blocks, not record objects, a store or none.
    assert type(task._stats) is PackedRunStats and task._stats.blocks()
    assert len(task.history) == 2 * BATCH + 1  # the run at T0, then one a step
    # The module's account says so too: packing is the threaded scheduler's, store or not.
    opening = (packedstats.__doc__ or "").split("\n\n")[1]
    assert "store-less" not in opening and "with a store or without" in opening
