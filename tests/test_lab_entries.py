"""The lab's heap-entry decisions stay honest: removal costs the whole heap and a tombstone
nothing; without the sequence field a tie raises or breaks FIFO (lldsched.lab.entries)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lldsched.clock import FakeClock
from lldsched.core.duequeue import TaskQueue
from lldsched.core.task import Entry
from lldsched.lab import VariantError
from lldsched.lab.entries import (
    IdTieScheduler,
    RemovingQueue,
    RemovingScheduler,
    TaskTieQueue,
    TaskTieScheduler,
    cancel_comparisons,
    measure_cancel_cost,
    run_a_tie,
)
from lldsched.schedules.simple import OneTime
from lldsched.threaded.scheduler import Scheduler


def test_removing_a_cancelled_entry_compares_the_heap_and_a_tombstone_compares_nothing() -> None:
    assert cancel_comparisons(TaskQueue, 2_000) == 0
    small, large = cancel_comparisons(RemovingQueue, 500), cancel_comparisons(RemovingQueue, 5_000)
    assert small >= 500 and large >= 5_000  # heapify alone compares every entry at least once
    assert large > 5 * small


def test_a_removing_queue_still_runs_a_scheduler_correctly(make_scheduler: object) -> None:
    scheduler = RemovingScheduler(workers=1)
    ran: list[str] = []
    keep = scheduler.schedule("keep", ran.append, OneTime(delay=0), args=("keep",))
    gone = scheduler.schedule("gone", ran.append, OneTime(delay=0), args=("gone",))
    scheduler.cancel(gone.id)
    assert scheduler.queue_stats().tombstones == 0
    with scheduler:
        assert scheduler.wait_drained()
    assert ran == ["keep"] and keep.status.name == "SUCCEEDED"


def test_a_removing_queue_removes_the_entry_a_run_now_replaces_and_leaves_no_tombstone() -> None:
    """``run_now`` pushes a queued task again: the real queue leaves a tombstone, and the
    removing queue left one too; once they passed 40 % a compaction moved entries to its
    old heap, where ``discard`` did not look, and a cancel raised StopIteration."""
    scheduler = RemovingScheduler(workers=1, clock=FakeClock(0))
    ids = [scheduler.schedule(f"t{n}", lambda: None, OneTime(delay=60 + n)).id for n in range(3000)]
    for task_id in ids[:1000]:
        assert scheduler.run_now(task_id)
        assert scheduler.queue_stats() == (3000, 0)
    for task_id in ids[1000:]:
        assert scheduler.cancel(task_id)
    assert scheduler.queue_stats() == (1000, 0)
    assert [task.id for task in scheduler.pending()] == ids[:1000]


def test_without_the_sequence_field_a_tie_raises_or_breaks_first_in_first_out() -> None:
    by_task = run_a_tie(TaskTieScheduler)
    assert by_task.error is not None and by_task.error.startswith("TypeError: '<' not supported")
    by_id = run_a_tie(IdTieScheduler)
    assert by_id.order[:3] == ["job-1", "job-10", "job-11"] and not by_id.fifo


def test_with_the_sequence_field_a_tie_runs_first_in_first_out() -> None:
    real = run_a_tie(Scheduler)
    assert real.error is None and real.fifo and len(real.order) == 12


def test_a_heap_smaller_than_the_cancels_cancels_every_entry() -> None:
    """A class trying "a heap of 5" with the default ten cancels gets an answer, not
    "Sample larger than population"."""
    assert cancel_comparisons(TaskQueue, 5) == 0
    assert cancel_comparisons(RemovingQueue, 5) > 0
    (cost,) = measure_cancel_cost((5,))
    assert cost.size == 5 and cost.remove_us > 0


@pytest.mark.parametrize("size", [0, -3, 2.5, True])
def test_a_heap_size_below_one_is_refused_naming_it(size: object) -> None:
    with pytest.raises(ValueError, match=f"size must be a whole number >= 1, got {size!r}"):
        cancel_comparisons(TaskQueue, size)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"size must be a whole number >= 1, got {size!r}"):
        measure_cancel_cost((1_000, size))  # type: ignore[arg-type]


def test_a_cancel_count_below_one_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="cancels must be a whole number >= 1, got 0"):
        cancel_comparisons(TaskQueue, 100, cancels=0)


@pytest.mark.parametrize("tasks", [0, -1, 2.5, True])
def test_a_tie_of_fewer_than_one_task_is_refused_naming_it(tasks: object) -> None:
    with pytest.raises(ValueError, match=f"tasks must be a whole number >= 1, got {tasks!r}"):
        run_a_tie(tasks=tasks)  # type: ignore[arg-type]


def test_the_notebook_names_the_count_per_cancel_comparisons_which_outnumber_the_entries() -> None:
    # list.remove tests entries for equality and heapify orders them: a removal in a heap
    # of 1,000 makes several comparisons an entry, so the notebook cannot call the count
    # "how many entries each cancel compares" (4,549 entries of 1,000).
    assert cancel_comparisons(RemovingQueue, 1_000) > 1_000
    source = (Path(__file__).resolve().parent.parent / "notebooks/src/09-design-lab.py").read_text(
        encoding="utf-8"
    )
    section = source[source.index('id="lab-tombstones"') : source.index('id="lab-sequence"')]
    assert "entries each cancel" not in section
    assert "comparisons per cancel" in section


class _ForgetfulQueue(TaskQueue):
    """A learner's queue that never hands an entry out."""

    def pop_due(self, now: float, limit: int) -> list[Entry]:
        return []


class ForgetfulScheduler(Scheduler):
    queue_type = _ForgetfulQueue


def test_a_tie_on_a_variant_that_loses_the_tasks_is_told_so_instead_of_hanging() -> None:
    """The timer spun on the scheduler's lock and wait_idle() never got it."""
    with pytest.raises(VariantError, match="ForgetfulScheduler: 3 of the 3 tasks due never ran"):
        run_a_tie(ForgetfulScheduler, tasks=3)


def test_a_tie_given_a_queue_class_says_how_to_plug_it_in() -> None:
    with pytest.raises(TypeError, match=r"scheduler_type must be a Scheduler class .*queue_type"):
        run_a_tie(TaskTieQueue)  # type: ignore[arg-type]
