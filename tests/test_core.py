"""The core state machine, driven by hand: transitions, retries, dead letter, control verbs."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from lldsched import (
    FakeClock,
    FixedDelay,
    FixedRate,
    Misfire,
    MisfirePolicy,
    OneTime,
    Overlap,
    RetryPolicy,
    Simulation,
    TaskNotFoundError,
    TaskStatus,
    ValidationError,
    Window,
)
from lldsched.core.recovery import after_clock_jump
from tests.harness import Harness, RecordingStore

RUN_ALL = MisfirePolicy(Misfire.RUN_ALL)


def noop() -> None:
    return None


def test_a_one_off_task_runs_once_and_retires_as_succeeded(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("once", noop, OneTime(delay=5))
    record = h.step()
    assert record is not None and record.ok and record.attempt == 1
    assert record.due == clock.now() and task.status is TaskStatus.SUCCEEDED
    assert task.next_run_at is None and h.queue.pop_live() is None


def test_a_recurring_task_is_rescheduled_with_its_attempt_counter_reset(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("tick", noop, FixedRate(10))
    start = clock.now()
    h.step()
    assert task.status is TaskStatus.SCHEDULED and task.attempt == 0
    assert task.next_run_at == start + 10


def test_retries_wait_one_then_two_seconds_and_keep_the_attempt_counter(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("import", noop, OneTime(delay=0))
    first = h.step(error="RuntimeError: not yet")
    assert first is not None and task.status is TaskStatus.RETRYING and task.attempt == 1
    assert task.next_run_at == first.finished + 1
    second = h.step(error="RuntimeError: not yet")
    assert second is not None and second.attempt == 2 and second.due == first.finished + 1
    assert task.next_run_at == second.finished + 2
    third = h.step()
    assert third is not None and third.ok and third.attempt == 3
    assert task.status is TaskStatus.SUCCEEDED


def test_a_retry_does_not_consult_the_schedule_and_keeps_the_slot(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("rate", noop, FixedRate(60))
    slot = clock.now()
    h.step(duration=1, error="ValueError: x")
    retry = h.step(duration=1)
    assert retry is not None and retry.slot == slot and retry.due == slot + 1 + 1
    assert task.next_run_at == slot + 60  # back on the grid, not drifted by the retry


def test_exhausted_retries_fail_the_task_into_the_dead_letter_and_the_store_saw_it_all(
    clock: FakeClock,
) -> None:
    store = RecordingStore()
    h = Harness(clock, store=store)
    retry = RetryPolicy(max_attempts=2, fail_after_given_up=1)  # recurring: stop at once
    task = h.core.add("cleanup", noop, FixedRate(60), retry=retry)
    h.step(error="RuntimeError: disk is full")
    h.step(error="RuntimeError: disk is full")
    assert task.status is TaskStatus.FAILED and task.next_run_at is None
    assert h.core.dead_letter() == [task.id]
    assert task.last_error == "RuntimeError: disk is full" and task.failure_count == 2
    assert [status for _, status in store.saved] == [
        "scheduled", "running", "retrying", "running", "failed",
    ]  # fmt: skip
    assert [r.attempt for r in store.records(task.id)] == [1, 2]
    assert h.queue.pop_live() is None  # FAILED is terminal for a recurring task too


def test_redrive_puts_a_dead_task_back_due_now_with_a_fresh_attempt_counter(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    task = h.core.add("cleanup", noop, OneTime(delay=0), retry=RetryPolicy.never())
    h.step(error="OSError: gone")
    assert task.status is TaskStatus.FAILED
    assert h.core.redrive(task.id) is True
    assert task.status is TaskStatus.SCHEDULED and task.attempt == 0
    assert task.next_run_at == clock.now() and h.core.dead_letter() == []
    record = h.step()
    assert record is not None and record.attempt == 1 and task.status is TaskStatus.SUCCEEDED
    assert h.core.redrive(task.id) is False  # only FAILED tasks can be redriven


def test_redrive_is_written_to_the_store_and_told_to_the_listeners(clock: FakeClock) -> None:
    # Before its redriven run: a process that died now would restart it SCHEDULED, not
    # FAILED, and a listener (the panel, a metric) hears it leave the dead letter.
    store = RecordingStore()
    h = Harness(clock, store=store)
    task = h.core.add("cleanup", noop, OneTime(delay=0), retry=RetryPolicy.never())
    h.step(error="OSError: gone")
    assert h.core.redrive(task.id) is True
    assert store.saved[-1] == (task.id, "scheduled")
    (row,) = store.load_all()
    assert (row.status, row.next_run_at, row.attempt) == (TaskStatus.SCHEDULED, clock.now(), 0)
    last = h.events[-1]
    assert (last.task_id, last.previous, last.status) == (
        task.id,
        TaskStatus.FAILED,
        TaskStatus.SCHEDULED,
    )


def test_a_redriven_task_leaves_the_catch_up_it_died_in_and_counts_on_from_its_redriven_run(
    clock: FakeClock,
) -> None:
    # RUN_ALL owes the slots 60, 120 and 180 s after the first; the catch-up of the first
    # fails for good and the task is dead-lettered.  Redriven 100 s later, it runs at
    # once for that instant, and its grid goes on from there: the catch-up's old slots
    # do not come back.
    h = Harness(clock)
    start = clock.now()
    retry = RetryPolicy(max_attempts=1, fail_after_given_up=1)
    task = h.core.add("sync", noop, FixedRate(60), retry=retry, misfire=RUN_ALL)
    h.step()
    clock.advance(210)
    after_clock_jump(h.core, 210, clock.now())
    h.step(error="OSError: down")  # the catch-up of the slot 60 s after the first
    assert task.status is TaskStatus.FAILED
    clock.advance(100)
    assert h.core.redrive(task.id) is True
    redriven = h.step()
    assert redriven is not None and redriven.slot == start + 310
    assert task.next_run_at == start + 370


def test_a_run_over_its_timeout_is_recorded_timed_out_and_retried(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("slow", noop, OneTime(delay=0), timeout=2.0)
    record = h.step(duration=3.0)
    assert record is not None and record.timed_out and not record.ok
    assert record.outcome == "timed_out" and record.error is not None
    assert "TimeoutError" in record.error and task.status is TaskStatus.RETRYING


def test_a_run_exactly_at_its_budget_is_not_timed_out(clock: FakeClock) -> None:
    h = Harness(clock)
    h.core.add("edge", noop, OneTime(delay=0), timeout=2.0)
    record = h.step(duration=2.0)
    assert record is not None and record.ok and not record.timed_out


def test_a_run_its_runtime_says_timed_out_fails_also_when_its_task_has_no_timeout_now(
    clock: FakeClock,
) -> None:
    # A runtime says so when a run's deadline stopped it and a modify has since dropped
    # the task's timeout: the record says it timed out, and is no success.
    h = Harness(clock)
    task = h.core.add("slow", noop, OneTime(delay=0))
    run = h.begin()
    started = clock.now()
    clock.advance(3)
    record = h.core.finish(run, started, clock.now(), None, timed_out=True)
    assert record.timed_out and not record.ok and record.outcome == "timed_out"
    assert record.error == "TimeoutError: ran 3 s, over its budget"
    assert task.status is TaskStatus.RETRYING and task.failure_count == 1


def test_fixed_delay_is_measured_from_the_finish(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("poll", noop, FixedDelay(10))
    record = h.step(duration=4)
    assert record is not None and task.next_run_at == record.finished + 10


def test_pause_tombstones_the_entry_and_resume_runs_a_missed_slot_at_once(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    task = h.core.add("digest", noop, FixedRate(3600, start_delay=60))
    assert h.core.pause(task.id) is True and task.status is TaskStatus.PAUSED
    assert h.queue.discarded == [task.id] and h.queue.stats() == (1, 1)
    assert h.queue.pop_live() is None  # the entry is a tombstone
    clock.advance(600)
    assert h.core.resume(task.id) is True and task.status is TaskStatus.SCHEDULED
    assert task.next_run_at == clock.now()
    record = h.step()
    assert record is not None and record.due == record.slot == clock.now()
    assert task.next_run_at == clock.now() + 3600


def test_resume_before_the_slot_keeps_the_slot(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("later", noop, OneTime(delay=100))
    h.core.pause(task.id)
    clock.advance(10)
    h.core.resume(task.id)
    assert task.next_run_at == clock.now() + 90


def test_resume_keeps_the_attempt_counter_of_a_task_paused_while_retrying(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    task = h.core.add("flaky", noop, OneTime(delay=0))
    h.step(error="E: 1")
    assert task.status is TaskStatus.RETRYING
    h.core.pause(task.id)
    clock.advance(30)
    h.core.resume(task.id)
    assert task.status is TaskStatus.RETRYING and task.attempt == 1
    record = h.step()
    assert record is not None and record.attempt == 2


def test_pause_of_a_running_task_takes_effect_at_once_and_nothing_follows_the_run(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    task = h.core.add("tick", noop, FixedRate(10))
    run = h.begin()
    assert task.status is TaskStatus.RUNNING
    assert h.core.pause(task.id) is True and task.status is TaskStatus.PAUSED
    h.core.finish(run, clock.now(), clock.now() + 1, None)
    assert task.status is TaskStatus.PAUSED and len(task.history) == 1
    assert h.queue.pop_live() is None
    clock.advance(100)
    h.core.resume(task.id)  # resumes at its next slot, which has passed: at once
    assert task.status is TaskStatus.SCHEDULED and task.next_run_at == clock.now()


def test_a_run_that_fails_while_its_task_is_paused_resumes_as_a_retry(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("flaky", noop, FixedRate(60))
    run = h.begin()
    h.core.pause(task.id)
    h.core.finish(run, clock.now(), clock.now() + 1, "E: boom")
    assert task.status is TaskStatus.PAUSED and h.queue.pop_live() is None
    h.core.resume(task.id)
    assert task.status is TaskStatus.RETRYING and task.attempt == 1
    record = h.step()
    assert record is not None and record.attempt == 2 and record.slot == run.slot


def test_pause_and_resume_during_one_run_leave_the_task_running(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("tick", noop, FixedRate(10))
    run = h.begin()
    h.core.pause(task.id)
    h.core.resume(task.id)
    assert task.status is TaskStatus.RUNNING
    h.core.finish(run, clock.now(), clock.now(), None)
    assert task.status is TaskStatus.SCHEDULED and task.next_run_at == clock.now() + 10


def test_cancel_of_a_running_task_keeps_the_record_and_raises_the_flag(clock: FakeClock) -> None:
    h = Harness(clock)

    def cooperative(ctx: object) -> None:
        return None

    task = h.core.add("job", cooperative, FixedRate(10))
    run = h.begin()
    assert run.context is not None and not run.context.cancelled
    assert h.core.cancel(task.id) is True
    assert run.context.cancelled and run.context.reason == "cancelled"
    record = h.core.finish(run, clock.now(), clock.now() + 1, "RuntimeError: interrupted")
    assert task.status is TaskStatus.CANCELLED and task.history == (record,)
    assert h.queue.pop_live() is None and h.core.dead_letter() == []


@pytest.mark.parametrize("error", [None, "RuntimeError: interrupted"])
def test_a_one_off_cancelled_mid_run_stays_cancelled_whatever_its_run_ends_in(
    clock: FakeClock, error: str | None
) -> None:
    # Its run would have ended the task (SUCCEEDED, or a retry): cancelled first, it
    # stays CANCELLED, out of the dead letter, and nothing is queued.
    h = Harness(clock)
    task = h.core.add("once", noop, OneTime(delay=0))
    run = h.begin()
    assert h.core.cancel(task.id) is True
    record = h.core.finish(run, clock.now(), clock.now() + 1, error)
    assert task.status is TaskStatus.CANCELLED and task.history == (record,)
    assert h.queue.pop_live() is None and h.core.dead_letter() == []


def test_control_verbs_report_whether_they_changed_anything(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("once", noop, OneTime(delay=0))
    assert h.core.resume(task.id) is False  # not paused
    assert h.core.cancel(task.id) is True
    assert h.core.cancel(task.id) is False  # already cancelled
    assert h.core.pause(task.id) is False
    assert h.core.resume(task.id) is False


def test_unknown_ids_raise_task_not_found_with_the_id(clock: FakeClock) -> None:
    h = Harness(clock)
    for verb in (h.core.cancel, h.core.pause, h.core.resume, h.core.redrive, h.core.get):
        with pytest.raises(TaskNotFoundError, match="'task-99'"):
            verb("task-99")


def test_a_stale_entry_is_refused_by_begin(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("x", noop, OneTime(delay=0))
    (entry,) = h.queue.pop_due(clock.now(), 1)  # popped for a worker, not begun yet
    h.core.cancel(task.id)
    assert h.core.begin(entry, worker=0) is None


def test_every_transition_is_published_as_an_event_with_the_record_on_finish(
    clock: FakeClock,
) -> None:
    h = Harness(clock)
    task = h.core.add("once", noop, OneTime(delay=0))
    record = h.step()
    kinds = [(e.previous, e.status) for e in h.events]
    assert kinds == [
        (None, TaskStatus.SCHEDULED),
        (TaskStatus.SCHEDULED, TaskStatus.RUNNING),
        (TaskStatus.RUNNING, TaskStatus.SUCCEEDED),
    ]
    assert h.events[-1].record == record and h.events[0].task_id == task.id


def test_a_run_of_an_overlapping_task_is_published_without_a_store(clock: FakeClock) -> None:
    h = Harness(clock)  # listeners, no store: the begin of an ALLOW run is heard all the same
    h.core.add("twice", noop, FixedRate(60), overlap=Overlap.ALLOW, max_instances=2)
    h.begin()
    assert [(e.previous, e.status) for e in h.events] == [
        (None, TaskStatus.SCHEDULED),
        (TaskStatus.SCHEDULED, TaskStatus.RUNNING),
    ]


@pytest.mark.parametrize(
    "options", [{}, {"overlap": Overlap.ALLOW, "max_instances": 2}], ids=["alone", "overlapping"]
)
def test_a_run_is_written_without_listeners(clock: FakeClock, options: dict[str, Any]) -> None:
    store = RecordingStore()
    h = Harness(clock, store=store, emit=None)  # a store, nobody listening
    task = h.core.add("twice", noop, FixedRate(60), **options)
    h.begin()
    assert store.saved == [(task.id, "scheduled"), (task.id, "running")]


def test_a_schedule_whose_next_run_raises_fails_its_task_saying_why(clock: FakeClock) -> None:
    class Broken:
        def first_run(self, now: float) -> float:
            return now

        def next_run(self, record: object, now: float) -> float | None:
            raise RuntimeError("no next slot today")

    h = Harness(clock)
    task = h.core.add("broken", noop, Broken())
    record = h.step()
    assert record is not None and record.ok  # the run itself went well
    assert task.status is TaskStatus.FAILED and h.core.dead_letter() == [task.id]
    assert task.last_error == "ScheduleError: RuntimeError: no next slot today"


def test_a_task_registered_paused_is_paused_and_does_not_run_when_due(clock: FakeClock) -> None:
    h = Harness(clock)
    task = h.core.add("held", noop, FixedRate(60), paused=True)
    assert task.status is TaskStatus.PAUSED
    assert h.step() is None  # its slot was queued, then tombstoned by the pause
    assert [(e.previous, e.status) for e in h.events] == [(None, TaskStatus.PAUSED)]


def test_history_is_bounded_by_the_history_limit(clock: FakeClock) -> None:
    h = Harness(clock, history_limit=3)
    task = h.core.add("tick", noop, FixedRate(1))
    for _ in range(5):
        h.step()
    assert [r.attempt for r in task.history] == [1, 1, 1] and task.run_count == 5
    assert task.history[0].due == task.history[-1].due - 2


def test_remove_cancels_and_forgets_the_task_in_the_store(clock: FakeClock) -> None:
    store = RecordingStore()
    h = Harness(clock, store=store)
    task = h.core.add("x", noop, FixedRate(5))
    h.core.remove(task.id)
    assert task.status is TaskStatus.CANCELLED and store.get(task.id) is None
    with pytest.raises(TaskNotFoundError):
        h.core.get(task.id)


def test_an_id_removed_and_registered_again_runs_only_the_new_task(clock: FakeClock) -> None:
    ids = iter(["job", "job"])  # an id generator that hands out a removed id again
    h = Harness(clock, ids=lambda: next(ids))
    start = clock.now()
    old = h.core.add("old", noop, FixedRate(5))
    h.core.remove(old.id)
    new = h.core.add("new", noop, FixedRate(5, start_delay=3))
    assert new.id == old.id == "job"
    dues = [record.due - start for record in (h.step(), h.step()) if record is not None]
    assert dues == [3, 8]  # the old entry, due at 0, is a tombstone
    assert old.status is TaskStatus.CANCELLED and old.run_count == 0 and new.run_count == 2


@pytest.mark.parametrize("status", [TaskStatus.PAUSED, TaskStatus.RUNNING, TaskStatus.FAILED])
def test_a_task_another_process_settled_not_runnable_leaves_the_queue_here(
    clock: FakeClock, status: TaskStatus
) -> None:
    # A shared store's feed (core.adopt): paused, running or failed elsewhere, the task
    # has no entry here any more.  Left queued, it counted in the metrics' ``queued``
    # (and their lag, as the heap's head) as waiting to run here, and its entry came due
    # at the instant the row had replaced.  Its due instant is the row's too: none for
    # one running or failed there (the listing showed the one replaced), the resume's
    # for one paused.
    h = Harness(clock)
    task = h.core.add("sync", noop, FixedRate(10))
    assert len(h.queue) == 1
    due = clock.now() + 20 if status is TaskStatus.PAUSED else None  # what resume() runs
    h.core.adopt(
        task, status=status, next_run_at=due, attempt=0, run_count=1, failure_count=0,
        last_error=None,
    )  # fmt: skip
    assert task.status is status and len(h.queue) == 0 and h.queue.pop_live() is None
    assert task.next_run_at == due


def test_a_retry_another_process_settled_is_taken_with_its_attempt_counter(
    clock: FakeClock,
) -> None:
    # The row says the slot's second attempt failed: the next one here is the third,
    # and the task gives the slot up after it as the retry policy says.
    h = Harness(clock)
    task = h.core.add("sync", noop, FixedRate(60), retry=RetryPolicy(max_attempts=3))
    h.core.adopt(
        task, status=TaskStatus.RETRYING, next_run_at=clock.now() + 5, attempt=2,
        run_count=2, failure_count=2, last_error="OSError: down",
    )  # fmt: skip
    assert task.attempt == 2 and task.last_error == "OSError: down"  # the row's
    third = h.step(error="OSError: down")
    assert third is not None and third.attempt == 3 and third.outcome == "given_up"
    assert task.status is TaskStatus.SCHEDULED and task.failure_count == 3


def test_a_task_another_process_redrove_leaves_the_dead_letter_here(clock: FakeClock) -> None:
    # Failed here, redriven elsewhere (the feed's row: SCHEDULED again): no longer dead,
    # and the listeners here hear the change.
    h = Harness(clock)
    task = h.core.add("once", noop, OneTime(delay=0), retry=RetryPolicy.never())
    h.step(error="OSError: down")
    assert task.status is TaskStatus.FAILED and h.core.dead_letter() == [task.id]
    heard = len(h.events)
    h.core.adopt(
        task, status=TaskStatus.SCHEDULED, next_run_at=clock.now() + 5, attempt=0,
        run_count=1, failure_count=1, last_error="OSError: down",
    )  # fmt: skip
    assert h.core.dead_letter() == []
    assert [(e.task_id, e.previous, e.status) for e in h.events[heard:]] == [
        (task.id, TaskStatus.FAILED, TaskStatus.SCHEDULED)
    ]
    record = h.step()
    assert record is not None and record.ok and task.status is TaskStatus.SUCCEEDED


def test_the_dead_letter_put_in_a_stores_order_keeps_the_ids_the_store_does_not_name(
    clock: FakeClock,
) -> None:
    # core.order_dead_letter (a shared store's rows, registered one by one): the ids
    # the store's list names come first, in its order; the others follow, kept.
    h = Harness(clock)
    for name in ("a", "b", "c"):
        h.core.add(name, noop, OneTime(delay=0), retry=RetryPolicy.never())
        h.step(error="OSError: down")
    assert h.core.dead_letter() == ["task-1", "task-2", "task-3"]
    h.core.order_dead_letter(["task-3", "task-9"])
    assert h.core.dead_letter() == ["task-3", "task-1", "task-2"]


def test_a_windows_runs_made_by_another_process_count_toward_its_max_runs(
    clock: FakeClock,
) -> None:
    # Window(max_runs=3) and the row says one successful run elsewhere (two runs, one
    # failed): the next run here is the window's second, and the task ends with its third.
    h = Harness(clock)
    task = h.core.add("sync", noop, Window(FixedRate(60), max_runs=3))
    h.core.adopt(
        task, status=TaskStatus.SCHEDULED, next_run_at=clock.now() + 60, attempt=0,
        run_count=2, failure_count=1, last_error="OSError: down",
    )  # fmt: skip
    second = h.step()
    assert second is not None and second.ok and task.status is TaskStatus.SCHEDULED
    third = h.step()
    assert third is not None and third.ok
    assert task.status is TaskStatus.SUCCEEDED and task.next_run_at is None


def test_holds_is_true_only_for_the_task_object_registered_under_its_id(clock: FakeClock) -> None:
    ids = iter(["job", "job", "once"])
    h = Harness(clock, ids=lambda: next(ids), retain_finished=0)
    old = h.core.add("old", noop, FixedRate(5))
    assert h.core.holds(old)
    h.core.remove(old.id)
    assert not h.core.holds(old)  # removed
    new = h.core.add("new", noop, FixedRate(5))
    assert h.core.holds(new) and not h.core.holds(old)  # its id names another task now
    once = h.core.add("once", noop, OneTime(delay=0))
    while h.step() is not None and once.status is not TaskStatus.SUCCEEDED:
        pass
    assert once.status is TaskStatus.SUCCEEDED and not h.core.holds(once)  # retired


def test_an_id_is_judged_where_it_is_registered_not_where_it_is_followed(clock: FakeClock) -> None:
    h = Harness(clock)
    with pytest.raises(ValidationError, match=r"printable, with no blank at either end, got ' x'"):
        h.core.add("x", noop, FixedRate(5), task_id=" x")
    assert h.core.tasks == {}
    # A definition another process registered (an older release allowed the padding)
    # is followed as it is: refusing it here would lose the change.
    followed = h.core.add(
        "x", noop, FixedRate(5), task_id=" x", replace_existing=True, check_arguments=False
    )
    assert h.core.tasks[" x"] is followed


def test_a_failing_store_save_at_registration_registers_nothing(clock: FakeClock) -> None:
    class BrokenStore(RecordingStore):
        def save(self, snapshot, record=None):  # type: ignore[no-untyped-def]
            raise OSError("read-only file system")

    h = Harness(clock, store=BrokenStore())
    with pytest.raises(OSError, match="read-only"):
        h.core.add("x", noop, OneTime(delay=0))
    assert h.core.tasks == {} and h.queue.stats() == (0, 0)


@pytest.mark.parametrize("limit", [0, 1, 2, None])
def test_history_keeps_the_newest_runs_up_to_its_limit(clock: FakeClock, limit: int | None) -> None:
    h = Harness(clock, history_limit=limit)
    start = clock.now()
    task = h.core.add("tick", noop, FixedRate(1))
    for _ in range(3):
        h.step()
    every_due = [start, start + 1, start + 2]
    expected = every_due if limit is None else every_due[len(every_due) - limit :]
    assert [r.due for r in task.history] == expected and task.run_count == 3


def test_an_action_gets_the_run_context_by_its_parameter_name_whatever_callable_it_is() -> None:
    from lldsched.core.calls import wants_context

    def plain(ctx: object) -> None: ...

    def without() -> None: ...

    class Job:
        def __call__(self, ctx: object) -> None: ...

    assert wants_context(plain) and not wants_context(without)
    assert wants_context(Job()) and wants_context(functools.partial(plain))
    assert not wants_context(print)  # a C function: no ctx, and no text signature parsed
    assert not wants_context(functools.partial(print, "x"))


def test_a_function_redefined_under_its_name_is_judged_by_its_new_parameters() -> None:
    """A notebook's cell run again with other parameters: the old function and its code
    are freed (the caches keep no code object alive), and the new code object, which may
    take the freed one's id, never finds its answers."""
    import weakref

    from lldsched import ValidationError
    from lldsched.core import calls
    from lldsched.core.calls import BARE, CTX, TAKES, call_shape, check_call
    from lldsched.core.task import TaskOptions

    def room_taken() -> list[int]:
        return [len(calls.CALL_BY_CODE), len(calls.SIGNATURE_BY_CODE), len(calls._WATCHED)]

    before = room_taken()
    cell: dict[str, Any] = {}  # the notebook's namespace
    versions = [  # source, its shape, arguments that fit, arguments that do not
        ("def job():\n    pass\n", BARE, (), (1,)),
        ("def job(ctx):\n    pass\n", CTX, (), (1,)),
        ("def job(a, b):\n    pass\n", TAKES, (1, 2), (1,)),
        ("def job(a):\n    pass\n", TAKES, (1,), (1, 2)),
    ]
    for _ in range(25):  # ids are reused: a freed code object's memory is taken again
        for source, shape, fits, misfits in versions:
            exec(source, cell)  # the cell, run again
            job = cell["job"]
            assert call_shape(job) is shape, source
            check_call("job", job, TaskOptions(args=fits, pass_context=shape is CTX))
            with pytest.raises(ValidationError, match=r"action job\(.*\) cannot be called"):
                check_call("job", job, TaskOptions(args=misfits, pass_context=shape is CTX))
            code = weakref.ref(job.__code__)
            del job, cell["job"]
            assert code() is None, source  # freed: the caches did not keep it
    # ...and gave its room back (a cache full of freed code would stop caching)
    assert all(now <= then for now, then in zip(room_taken(), before, strict=True))


def passes_everything_on(function: Any) -> Any:
    """A decorator as most are written: ``functools.wraps`` and ``*args, **kwargs``."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    return wrapper


CONTEXTS_SEEN: list[str] = []


@passes_everything_on
def decorated_with_ctx(ctx: Any) -> None:
    CONTEXTS_SEEN.append(type(ctx).__name__)


@passes_everything_on
def decorated_without(value: int = 0) -> int:
    return value


def test_a_decorated_action_gets_the_run_context_when_what_it_wraps_declares_ctx(
    clock: FakeClock,
) -> None:
    """The wrapper declares no ctx itself; it takes **kwargs and wraps one that does. Each
    wrapper of the shared code is asked about its own function."""
    from lldsched.core.calls import wants_context

    assert wants_context(decorated_with_ctx) and not wants_context(decorated_without)
    assert wants_context(decorated_with_ctx)  # the cached answer for the code is not reused
    CONTEXTS_SEEN.clear()
    sim = Simulation(start=clock.now())  # runs the action, as a worker does
    task = sim.schedule("job", OneTime(delay=0), action=decorated_with_ctx)
    sim.run_for(1)
    assert [r.ok for r in task.history] == [True] and CONTEXTS_SEEN == ["RunContext"]


def test_validated_is_the_one_gate_of_what_counts_as_a_schedule() -> None:
    """Cron text and a CronSchedule naming no zone come back read in the zone given;
    any other schedule comes back as it is; anything else is refused, naming it."""
    from lldsched import CronSchedule, ValidationError
    from lldsched.core.registration import validated

    def check(schedule: object) -> object:
        _, checked, _, _ = validated(
            "job",
            noop,
            schedule,  # type: ignore[arg-type]  # a wrong type on purpose, below
            tz="Europe/Berlin",
            priority=1,
            retry=None,
            timeout=None,
            args=(),
            kwargs=None,
            misfire=None,
        )
        return checked

    for zoneless in ("0 3 * * *", CronSchedule("0 3 * * *")):
        read = check(zoneless)
        assert isinstance(read, CronSchedule) and read.tz == "Europe/Berlin"
    in_utc = CronSchedule("0 3 * * *", tz="UTC")
    assert check(in_utc) is in_utc
    every_minute = FixedRate(60)
    assert check(every_minute) is every_minute
    with pytest.raises(ValidationError, match=r"schedule must provide first_run.*got 60"):
        check(60)


@pytest.mark.parametrize("error", [None, "RuntimeError: boom"])
def test_a_run_that_finished_before_it_started_is_recorded_with_no_duration(
    clock: FakeClock, error: str | None
) -> None:
    # A runtime reads the wall clock at a run's start and finish; set back between the
    # two (a run across a backward jump, on any runtime: thread, coroutine, process),
    # the finish reads earlier.  Before, the record said so: a negative duration in
    # history(), a store, a frame (and a bar drawn backwards in a Gantt chart).  The
    # record starts at its finish; the finish stays what the clock said (a fixed delay
    # counts from it), and the timeout is judged on the duration recorded.
    h = Harness(clock)
    task = h.core.add("tick", noop, FixedDelay(60), timeout=1.0)
    run = h.begin()
    started = clock.now()
    record = h.core.finish(run, started, started - 3600.0, error)
    assert (record.started, record.finished) == (started - 3600.0, started - 3600.0)
    assert record.duration == 0.0 and not record.timed_out and record.error == error
    assert task.history == (record,)
    if error is None:
        assert task.next_run_at == started - 3600.0 + 60


@pytest.mark.parametrize("cancelled", [False, True])
def test_a_cancel_mid_run_leaves_the_runs_outcome_to_the_plan_in_front_then_drops_it(
    clock: FakeClock, cancelled: bool
) -> None:
    # Found by the state machine: a one-off rescheduled mid-run has the new schedule
    # planned after the run (counted from its finish); its last attempt failing gives
    # that slot up.  A cancel meanwhile dropped the plan at once, so the same run was
    # judged by the bare new one-off (no slot after it): a failure, not a slot given
    # up.  The plan now goes as the run ends, having judged it; the row written then
    # carries none of it.
    store = RecordingStore()
    h = Harness(clock, store=store)
    task = h.core.add("once", noop, OneTime(delay=0), retry=RetryPolicy.never())
    run = h.begin()
    started = clock.now()
    clock.advance(1)
    h.core.reschedule(task.id, OneTime(delay=0))
    if cancelled:
        assert h.core.cancel(task.id)
    record = h.core.finish(run, started, clock.now(), "OSError: gone")
    assert record.outcome == "given_up"
    if cancelled:
        assert task.status is TaskStatus.CANCELLED and task.next_run_at is None
        row = store.get(task.id)
        assert row is not None and row.status is TaskStatus.CANCELLED
        assert (row.waited, row.resumes, row.until) == (None, False, None)
    else:
        assert task.status is TaskStatus.SCHEDULED
