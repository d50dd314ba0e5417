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
from tests.cluster import StoreSpec, opened
from tests.waits import wait_until

T0 = float(int(time.time()))


def test_the_slot_that_completes_the_streak_fails_the_task_in_the_other_process(
    store_spec: StoreSpec,
) -> None:
    retry = RetryPolicy(max_attempts=1, fail_after_given_up=2)
    with opened(store_spec, 2, poll=0.05) as (first_store, second_store):
        first = Scheduler(store=first_store, clock=FakeClock(T0))  # started below
        first.schedule("import", jobs.broken, FixedRate(60), id="i", retry=retry)
        # Behind by far: it follows the store but claims nothing until its clock moves.
        second_clock = FakeClock(T0 - 1000)
        second = Scheduler(store=second_store, clock=second_clock).start()
        try:

            def followed(failures: int) -> bool:
                second_clock.advance(0)  # wake its timer: it reads the change feed
                known = {task.id: task for task in second.tasks()}
                return "i" in known and known["i"].failure_count == failures

            wait_until(lambda: followed(0), timeout=10, what="the registration, followed")
            first.start()
            first.wait_idle()  # the first slot given up, here
            wait_until(lambda: followed(1), timeout=10, what="the slot given up, followed")
            assert second.task("i").given_up == 1
            first.shutdown()
            second_clock.advance(1060)  # the second slot, T0 + 60, is due there only
            wait_until(lambda: second.task("i").failure_count == 2, timeout=10, what="slot 2")
            second.wait_idle()
            task = second.task("i")
            assert (task.status, second.dead_letter()) == (TaskStatus.FAILED, ["i"])
        finally:
            first.shutdown()
            second.shutdown()


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
        follower_clock = FakeClock(T0 - 5000)  # follows, claims nothing
        follower = Scheduler(store=runner_store, clock=follower_clock).start()
        # Never started; the redrive makes the task due at its now, still ahead of the
        # follower's clock, so the follower does not run it.
        other = Scheduler(store=other_store, clock=FakeClock(T0 - 1000))
        try:
            assert follower.task("i").given_up == 2  # learnt at start, FAILED
            assert other.redrive("i")

            def followed() -> bool:
                follower_clock.advance(0)  # wake its timer: it reads the change feed
                return follower.task("i").status is TaskStatus.SCHEDULED

            wait_until(followed, timeout=10, what="the redrive, followed")
            assert follower.task("i").given_up == 0
        finally:
            follower.shutdown()
            other.shutdown()
