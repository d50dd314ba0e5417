"""``RetryPolicy(fail_after_given_up=n)`` on a shared store: the n slots given up in a
row are counted across the processes.  The streak is read from the store's records (as
a restart of one process reads it) whenever a process follows a run settled elsewhere,
or learns the task, so the n-th slot given up fails the task wherever it runs, and a
success elsewhere ends the streak here too.

Before, each process counted the slots it gave up itself since it started:
``fail_after_given_up=4`` gave up 7 slots on a shared SQLite file and 5 on PostgreSQL
with three processes before one of them failed the task (and a process whose own
streak a success elsewhere should have ended failed the task too early).
"""

from __future__ import annotations

import time

from lldsched import FakeClock, FixedRate, RetryPolicy, Scheduler, TaskStatus
from tests import jobs
from tests.cluster import StoreSpec, ahead_and_behind, follows, opened
from tests.waits import wait_until

T0 = float(int(time.time()))
SCHEDULED = TaskStatus.SCHEDULED


def test_the_slot_that_completes_the_streak_fails_the_task_in_the_other_process(
    store_spec: StoreSpec,
) -> None:
    retry = RetryPolicy(max_attempts=1, fail_after_given_up=2)
    with ahead_and_behind(store_spec, T0) as (first, second):
        first.schedule("import", jobs.broken, FixedRate(60), id="i", retry=retry)
        wait_until(lambda: follows(second, "i", lambda task: task.failure_count == 0),
                   timeout=10, what="the registration, followed")  # fmt: skip
        first.start()
        first.wait_idle()  # the first slot given up, here
        wait_until(lambda: follows(second, "i", lambda task: task.failure_count == 1),
                   timeout=10, what="the slot given up, followed")  # fmt: skip
        assert second.task("i").given_up == 1
        first.shutdown()
        second.clock.advance(1060)  # type: ignore[attr-defined]  # T0 + 60 due there only
        wait_until(lambda: second.task("i").failure_count == 2, timeout=10, what="slot 2")
        second.wait_idle()
        task = second.task("i")
        assert (task.status, second.dead_letter()) == (TaskStatus.FAILED, ["i"])


def test_a_redrive_elsewhere_begins_a_new_streak_here(store_spec: StoreSpec) -> None:
    """The records still hold the given-up slots that failed the task; the process that
    follows a redrive made in another counts a new streak from it, as the one that
    redrove does (not the old one, which would fail the task at its next slot given up)."""
    retry = RetryPolicy(max_attempts=1, fail_after_given_up=2)
    with opened(store_spec, 2, poll=0.05) as (runner_store, other_store):
        runner_clock = FakeClock(T0)
        runner = Scheduler(store=runner_store, clock=runner_clock).start()
        try:
            runner.schedule("import", jobs.broken, FixedRate(60), id="i", retry=retry)
            runner.wait_idle()
            runner_clock.advance(60)
            runner.wait_idle()
            assert runner.task("i").status is TaskStatus.FAILED
        finally:
            runner.shutdown()
        # Follows, claims nothing.
        follower = Scheduler(store=runner_store, clock=FakeClock(T0 - 5000)).start()
        # Never started; the redrive makes the task due at its now, still ahead of the
        # follower's clock, so the follower does not run it.
        other = Scheduler(store=other_store, clock=FakeClock(T0 - 1000))
        try:
            assert follower.task("i").given_up == 2  # learnt at start, FAILED
            assert other.redrive("i")
            wait_until(lambda: follows(follower, "i", lambda task: task.status is SCHEDULED),
                       timeout=10, what="the redrive, followed")  # fmt: skip
            assert follower.task("i").given_up == 0
        finally:
            follower.shutdown()
            other.shutdown()
