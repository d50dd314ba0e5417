# %% [markdown]
# # 08 · Testing a scheduler
#
# [previous: 07 · The interview, in 45 minutes](07-interview-walkthrough.ipynb) · [contents](00-index.ipynb) · [next: 09 · The design lab](09-design-lab.ipynb)
#
# **Objectives**
#
# - inject a fake clock, and test a twelve-hour delay in milliseconds;
# - wait for what you expect with a bounded timeout, and prove that something does *not*
#   happen with a short bounded wait, never with `sleep`;
# - write and run, with pytest, the tests that pin a scheduler's hard promises: an early
#   insertion wakes the timer, fifty simultaneous tasks each run exactly once, a failure
#   leaves its worker alive, a slow listener does not stall the timer, the hand-off queue
#   is bounded;
# - test your own jobs, as your service registers them, with `lldsched.testing.Stepper`:
#   a retry's backoff and the dead letter checked to the second, in milliseconds.
#
# **Minutes:** 25 (read and run; then break something in `lldsched` and watch a test fail).
#
# A scheduler is made of time and threads, the two things tests handle worst. Both are
# tamed the same way: **make them parameters**. The scheduler never reads the time
# itself; it asks the clock it was given. It never says "wait a moment"; it waits on a
# condition that someone notifies. A test passes its own clock and waits on its own
# events.

# %%
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    OneTime,
    RetryPolicy,
    Scheduler,
    SystemClock,
    TaskEvent,
    TaskStatus,
)
from lldsched.testing import Stepper

# %% [markdown]
# ## 1. The clock is a dependency: a twelve-hour delay tested in milliseconds
#
# `Scheduler(clock=...)` takes anything with `now()` and `wait(condition, deadline)`.
# `FakeClock` moves only when told: `advance(seconds)` moves it and wakes whoever waits on
# it, so the running scheduler's timer re-reads the time and finds its task due. This is
# dependency injection in its plainest form: the scheduler depends on *a* clock, and the
# test chooses which.

# %% tags=["nbval-check-output"]
clock = FakeClock(0)
log = EventLog()
began = time.perf_counter()
with Scheduler(workers=1, clock=clock, listeners=[log]) as scheduler:
    nightly = scheduler.schedule("nightly", lambda: None, OneTime(delay=12 * 3600))
    assert scheduler.wait_idle(timeout=5)  # nothing due: the timer is parked
    print("before:", nightly.status.value, "| runs:", nightly.run_count)
    clock.advance(12 * 3600)  # twelve hours, at once
    ran = log.wait_for(lambda e: e.name == "nightly" and e.record is not None, timeout=5)
    print("after: ", nightly.status.value, "| runs:", nightly.run_count)
    print("it ran at", ran.record.started, "on the fake clock: 43200 s after it was scheduled")
elapsed = time.perf_counter() - began
print("twelve hours took less than a second of real time:", elapsed < 1)

# %% [markdown]
# ## 2. Waiting without sleeping: `EventLog.wait_for`
#
# An `EventLog` is a listener that keeps every event. `wait_for(predicate, timeout)`
# returns the first event (past or future) that matches, or `None` when the timeout
# passes first. That gives a test both halves of what it needs:
#
# * **a positive wait** is bounded but generous (5 s): it returns the moment the event
#   arrives, so a passing test is fast and a hung one fails instead of hanging;
# * **a negative wait** ("this must *not* happen") cannot be proven by waiting forever.
#   Wait a short, bounded time (here 0.2 s) and accept `None` as the proof; better still,
#   let a second, live task measure the time, so "no run" means "no run while the other
#   task ran three times".
#
# A fixed `sleep(1)` is wrong both ways: too long on a fast machine, too short on a busy one.

# %% tags=["nbval-check-output"]
log = EventLog()
with Scheduler(workers=2, listeners=[log]) as scheduler:
    paused = scheduler.schedule("paused", lambda: None, FixedRate(0.05))
    witness = scheduler.schedule("witness", lambda: None, FixedRate(0.05))
    scheduler.pause(paused.id)
    paused_at = time.time()  # a run in flight at the pause started before this
    # The positive wait: three witness runs happen, and quickly (None after 5 s: they
    # did not; the line printed below says so, and the notebook goes on).
    target = witness.run_count + 3
    witnessed = log.wait_for(lambda e: witness.run_count >= target, timeout=5)

    def ran_after_pause(event: TaskEvent) -> bool:
        return (
            event.name == "paused" and event.record is not None and event.record.started > paused_at
        )

    # The negative wait: meanwhile the paused task did not start, nor in 0.2 s more.
    late = log.wait_for(ran_after_pause, timeout=0.2)
    print("paused task ran again:", late is not None, "| witness ran:", witnessed is not None)

# %% [markdown]
# ## 3. The tests, run by pytest
#
# The next cells define ordinary pytest test functions. The last cell of this section
# writes their source to a temporary file and runs pytest on it, in this kernel, so what
# you read is exactly what pytest runs. Each is named as a sentence saying what it
# proves.
#
# **The parked timer woken by an insertion.** With a task twelve hours out, the timer
# parks in `Condition.wait` with a twelve-hour deadline. A task due *now* is inserted;
# nothing advances a clock and nothing calls a wake method by hand. It must run at once:
# `schedule()` pushes a new head onto the heap and notifies the condition. The clock here
# is the real one, wrapped to tell the test when the timer parked.


# %%
def test_an_earlier_insertion_wakes_a_timer_parked_twelve_hours_out() -> None:
    class ParkingClock(SystemClock):
        """The real clock, telling the test each time the timer parks on its condition."""

        def __init__(self) -> None:
            self.parked = threading.Event()
            self.deadlines: list[float | None] = []

        def wait(self, condition: threading.Condition, deadline: float | None) -> None:
            self.deadlines.append(deadline)
            self.parked.set()
            super().wait(condition, deadline)

    clock, log = ParkingClock(), EventLog()
    # max_wait=None: park for the whole twelve hours (by default the timer also looks at
    # the clock once a minute, to notice a wall-clock jump or a suspend).
    scheduler = Scheduler(clock=clock, listeners=[log], max_wait=None)
    scheduler.schedule("nightly", lambda: None, OneTime(delay=12 * 3600))
    with scheduler:  # starts it, with the nightly task already queued
        assert clock.parked.wait(5)
        parked_for = clock.deadlines[-1]
        assert parked_for is not None and parked_for - clock.now() > 11.9 * 3600
        scheduler.schedule("urgent", lambda: None, OneTime(delay=0))
        ran = log.wait_for(lambda e: e.name == "urgent" and e.record is not None, timeout=5)
        assert ran is not None, "'urgent' did not run within 5 s: the timer slept on"
        assert ran.record is not None and ran.record.lateness < 1.0


# %% [markdown]
# **Fifty tasks, each run exactly once.** Fifty tasks due at one instant on four workers:
# every one runs, none twice, and all four workers take part. The first four runs meet at
# a barrier, which only opens when four run at the same time: proof that the pool really
# is four wide. (Exactly once is the promise a second timer wake-up, or a task handed to
# two workers, would break.)


# %%
def test_fifty_tasks_due_at_one_instant_on_four_workers_each_run_exactly_once() -> None:
    calls: Counter[int] = Counter()
    workers_seen: set[int] = set()
    lock = threading.Lock()
    meet = threading.Barrier(4, timeout=5)

    def work(n: int, ctx) -> None:
        with lock:
            calls[n] += 1
            workers_seen.add(ctx.worker)
        if n < 4:
            meet.wait()  # the first four meet: all four workers were busy at once

    clock = FakeClock(0)
    with Scheduler(workers=4, clock=clock) as scheduler:
        tasks = [scheduler.schedule(f"t{n}", work, OneTime(at=0), args=(n,)) for n in range(50)]
        assert scheduler.wait_idle(timeout=5)
    assert calls == Counter(range(50))
    assert workers_seen == {0, 1, 2, 3}
    assert all(task.status is TaskStatus.SUCCEEDED and task.run_count == 1 for task in tasks)


# %% [markdown]
# **A failing task leaves its worker alive.** An exception in an action is data (a failed
# record), never a dead worker thread. Four tasks fail on two workers; four more then
# succeed, which they could not if a failure had killed a worker.


# %%
def test_a_failing_task_leaves_its_worker_alive() -> None:
    def broken() -> None:
        raise RuntimeError("boom")

    clock = FakeClock(0)
    with Scheduler(workers=2, clock=clock) as scheduler:
        failed = [
            scheduler.schedule(f"bad{n}", broken, OneTime(delay=0), retry=RetryPolicy.never())
            for n in range(4)
        ]
        assert scheduler.wait_idle(timeout=5)
        after = [scheduler.schedule(f"ok{n}", lambda: None, OneTime(delay=0)) for n in range(4)]
        assert scheduler.wait_idle(timeout=5)
    assert all(task.status is TaskStatus.FAILED for task in failed)
    assert all(task.history[-1].error == "RuntimeError: boom" for task in failed)
    assert all(task.status is TaskStatus.SUCCEEDED for task in after)


# %% [markdown]
# **A slow listener does not stall the timer.** Listeners run on their own thread, behind
# a queue. One that blocks on its first event must not delay the next due task: the timer
# and the workers never call a listener themselves.


# %%
def test_a_listener_blocked_on_an_event_does_not_delay_the_next_due_task() -> None:
    unblock, blocked, ran = threading.Event(), threading.Event(), threading.Event()

    def stuck_listener(event: TaskEvent) -> None:
        blocked.set()
        unblock.wait(10)

    clock = FakeClock(0)
    scheduler = Scheduler(clock=clock, listeners=[stuck_listener]).start()
    try:
        scheduler.schedule("first", lambda: None, OneTime(delay=0))
        assert blocked.wait(5)  # the listener is stuck on the first event
        scheduler.schedule("next", ran.set, OneTime(delay=5))
        clock.advance(5)
        assert ran.wait(5)  # and the next task ran all the same
    finally:
        unblock.set()
        scheduler.shutdown()


# %% [markdown]
# **Backpressure.** The timer hands due work to the workers through a *bounded* queue
# (`handoff`). When the workers are busy and the queue is full, the timer stops handing
# out work and waits for room: due tasks stay in the heap, where pause and cancel still
# reach them, instead of piling up in an unbounded backlog. One worker is held busy;
# ten tasks are due; at most `1 + handoff` of them ever leave the heap.


# %%
def test_a_full_hand_off_queue_keeps_due_work_in_the_heap() -> None:
    gate, started = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        gate.wait(5)

    clock = FakeClock(0)
    with Scheduler(workers=1, handoff=2, clock=clock) as scheduler:
        tasks = [scheduler.schedule(f"t{n}", hold, OneTime(delay=0)) for n in range(10)]
        assert started.wait(5)  # the worker holds one
        assert scheduler.queue_stats().live >= 10 - 1 - 2  # the hand-off holds at most two
        gate.set()
        assert scheduler.wait_idle(timeout=5)
    assert all(task.run_count == 1 for task in tasks)


# %% [markdown]
# Run them. `run_tests` writes the source of each test, under the same imports as this
# notebook, into a temporary file and calls `pytest.main` on it. pytest prints a dot per
# passing test, and for a failing one its name, the failed line and the values that made
# it fail. The next cell lists each test with its outcome: the outcomes of this cell's
# last run, whatever ran since (run both again to run the tests again).


# %%
import inspect
import sys

HEADER = """
import threading
from collections import Counter

from lldsched import (EventLog, FakeClock, OneTime, RetryPolicy, Scheduler, SystemClock,
                      TaskEvent, TaskStatus)
"""


class Outcomes:
    """A pytest plugin: each test's outcome ("passed" or "failed"), by the test's name."""

    def __init__(self) -> None:
        self.by_test: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or report.failed:  # a failed set-up counts too
            self.by_test[report.nodeid.split("::")[-1]] = report.outcome


def run_tests(*functions, header: str = HEADER) -> tuple[int, dict[str, str]]:
    """Run the test ``functions`` (and the helpers among them) with pytest, under the
    imports in ``header``; return pytest's exit code and each test's outcome."""
    outcomes = Outcomes()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "test_scheduler_promises.py"
        path.write_text(header + "\n\n".join(inspect.getsource(f) for f in functions))
        # Plain, short output: no colour codes (a notebook shows them as noise), -qq
        # leaves out the timing line, a failure shows its failed line and values
        # (--tb=short), and no summary repeats the outcomes listed below (-rN).
        # -p no:nbval: the plugin that runs these notebooks in CI is slow to load.
        options = ["-qq", "--color=no", "--no-header", "--tb=short", "-rN"]
        options += ["-p", "no:cacheprovider", "-p", "no:nbval"]
        exit_code = pytest.main([str(path), *options, "--rootdir", directory], plugins=[outcomes])
        # pytest imported the file as a module of that name: forget it, so the next run
        # (section 4's, or this cell run again) imports its own file, not this one.
        sys.modules.pop(path.stem, None)
    return int(exit_code), outcomes.by_test


promises_exit_code, promises = run_tests(
    test_an_earlier_insertion_wakes_a_timer_parked_twelve_hours_out,
    test_fifty_tasks_due_at_one_instant_on_four_workers_each_run_exactly_once,
    test_a_failing_task_leaves_its_worker_alive,
    test_a_listener_blocked_on_an_event_does_not_delay_the_next_due_task,
    test_a_full_hand_off_queue_keeps_due_work_in_the_heap,
)

# %% tags=["nbval-check-output"]
for name, outcome in promises.items():
    print(f"{outcome:6}  {name}")
print("pytest exit code:", promises_exit_code, "(0: every test passed)")

# %% [markdown]
# ## 4. Testing your own jobs: `lldsched.testing.Stepper`
#
# Sections 1 to 3 tested the scheduler. Your service tests something else: *its* jobs, as
# its own code registers them. Here is a service's job and its registration: it syncs
# orders every quarter of an hour, retries a failed sync twice (30 s, then 60 s later),
# and a slot whose retries run out puts the task in the dead letter. In the test the
# orders API is down.


# %%
def sync_orders() -> None:
    """The service's job; here, the orders API is down."""
    raise ConnectionError("orders API is down")


def register_jobs(scheduler: Scheduler) -> None:
    """The service's registration, as it ships."""
    retry = RetryPolicy(max_attempts=3, initial_backoff=30, fail_after_given_up=1)
    scheduler.schedule("sync", sync_orders, "*/15 * * * *", id="sync", retry=retry)


def hhmmss(instant: float) -> str:
    return f"{datetime.fromtimestamp(instant, UTC):%H:%M:%S}"


# %% [markdown]
# What a test wants to say: "from 12:00, the 12:15 sync fails, is retried at 12:15:30 and
# at 12:16:30, and then the task is in the dead letter". `FakeClock.advance` alone cannot
# say it: it leaps straight to the target, so the slot due on the way starts late, at
# the end of the leap, and each retry it queues needs another advance and another wait.

# %% tags=["nbval-check-output"]
clock = FakeClock(datetime(2026, 3, 28, 12, tzinfo=UTC))
with Scheduler(clock=clock, history_limit=None) as scheduler:
    register_jobs(scheduler)
    clock.advance(20 * 60)  # to 12:20, in one leap
    assert scheduler.wait_idle(timeout=5)
    for record in scheduler.records():
        print(f"due {hhmmss(record.due)}, started {hhmmss(record.started)}: {record.outcome.value}")
    retry = scheduler.task("sync").next_run_at
    print(f"now {hhmmss(clock.now())}; the retry, due {hhmmss(retry)}, waits for another advance")

# %% [markdown]
# `Stepper` steps a real `Scheduler` on a `FakeClock` through **each due instant** in
# order: `steps.advance(seconds)` sets the clock to the next due time, waits until the runs
# due then have finished and your listeners have heard them, and goes on, so a retry is
# visited at its failure plus its backoff, as in production. Every wait is bounded (5 real
# seconds per instant by default): a job that blocks fails the test with a
# `SettleTimeoutError` naming it, instead of hanging the suite. The stepper decides
# nothing; the scheduler's timer, workers and retry rules do, as they will in production.
# `history_limit=None` keeps every record (by default the latest 100 of each task).


# %%
def sync_attempts_from_noon(minutes: int) -> tuple[list[str], list[str]]:
    """The sync's attempts over ``minutes`` from 12:00, and the dead letter then."""
    clock = FakeClock(datetime(2026, 3, 28, 12, tzinfo=UTC))
    scheduler = Scheduler(clock=clock, history_limit=None)
    register_jobs(scheduler)
    with Stepper(scheduler) as steps:  # starts the scheduler; shuts it down at the end
        steps.advance(timedelta(minutes=minutes))
        attempts = [
            f"{hhmmss(record.started)} attempt {record.attempt}: {record.outcome.value}"
            for record in steps.records("sync")
        ]
        return attempts, scheduler.dead_letter()


def test_a_failing_sync_retries_with_backoff_then_lands_in_the_dead_letter() -> None:
    attempts, dead_letter = sync_attempts_from_noon(20)
    assert attempts == [
        "12:15:00 attempt 1: failed",
        "12:15:30 attempt 2: failed",  # 30 s of backoff
        "12:16:30 attempt 3: given_up",  # 60 s more: the slot is given up
    ]
    assert dead_letter == ["sync"]  # fail_after_given_up=1: one given-up slot is enough


# %% [markdown]
# Deterministic and fast: the same twenty minutes stepped ten times give the same attempts
# at the same seconds every time, in a few milliseconds each, and pytest runs the test as
# it runs the others (with the helpers it calls, under their imports: `run_tests` is
# section 3's, so run that section first).

# %% tags=["nbval-check-output"]
began = time.perf_counter()
runs = [sync_attempts_from_noon(20) for _ in range(10)]
elapsed = time.perf_counter() - began
attempts, dead_letter = runs[0]
print(*attempts, sep="\n")
print("dead letter:", dead_letter)
print("the same in all ten runs:", all(run == runs[0] for run in runs))
print("ten runs of twenty minutes took less than a second:", elapsed < 1)

# %%
sync_exit_code, sync_outcomes = run_tests(
    sync_orders,
    register_jobs,
    hhmmss,
    sync_attempts_from_noon,
    test_a_failing_sync_retries_with_backoff_then_lands_in_the_dead_letter,
    header=HEADER + "from datetime import UTC, datetime, timedelta\n"
    "from lldsched.testing import Stepper\n",
)

# %% tags=["nbval-check-output"]
for name, outcome in sync_outcomes.items():
    print(f"{outcome:6}  {name}")
print("pytest exit code:", sync_exit_code, "(0: the test passed)")

# %% [markdown]
# **When the Simulation is the better tool.** On the manual clock a run takes no time:
# the clock stands still while the action runs on its worker, so durations, overruns,
# lateness under load and a timeout reached by the clock never happen. And every due
# instant is a step: a day of a 15-minute job is 96 steps, a year of a one-second
# heartbeat 31 million. For load, lateness, overruns and long horizons use the
# `Simulation` (notebook 04): the same state machine on virtual time, durations from
# models. The Stepper is for what your jobs and their registration promise; the
# repository's docs/TESTING.md has more examples (a cron job across a DST night, pausing
# for maintenance, a listener that pages, a job that hangs).
#
# ## 5. Break it and watch
#
# On Binder (and after `make install`), `lldsched` is installed *editable*: the package
# imported here is the source in `lldsched/`. Open `lldsched/core/duequeue.py`, make
# `TaskQueue.push` forget to notify the condition (replace `self._wake.notify_all()`
# with `pass`: commenting the line out leaves its `if` with no body, a syntax error),
# save, **restart the kernel** (an edit takes effect only in a fresh kernel), and run
# all again (*Run All*). Section 2 prints `witness ran: False` on most runs: both tasks
# are due at once, so their first entries join the due lane (notebook 01, section 7),
# whose push is the notify you silenced, and the timer, already parked on an empty
# queue, sleeps on (the witness never runs at all; when the two `schedule()` calls beat
# the timer thread's first look, it finds them without a wake-up and the line says
# `True`). In section 3 the parked-timer test fails every time, and says why ("the timer
# slept on"): it waits until the timer has parked before it schedules. The three that
# schedule right after `with Scheduler(...)` (fifty tasks, the failing task, the
# hand-off queue) fail with it too, each after its 5 s bound. The failing-task test
# fails on practically every run: its last four tasks are scheduled after `wait_idle`,
# when the timer has almost always parked. The other two fail on most runs but not on
# every run: when their `schedule()` calls win the race against the timer thread's first
# look, the timer finds the tasks without a wake-up. The hand-off test wins it the most
# often of the three, yet it too loses more often than it wins (on our machine it
# passed about one run in five while a second run shared the two cores, nearly one in
# two alone): if it passes, run section 3's last two cells again (the one that runs
# pytest, then the one that lists its outcomes), a few times more to count. That race
# is why the parked-timer test makes sure the timer is parked: a missing notify shows
# only then. The listener test passes: its clock's `advance` wakes the timer itself; so
# does section 4's, for the stepper moves the clock too. Undo the edit afterwards.
# The repository's own suite (`make test`) holds these tests and thousands of others.
#
# ## Check yourself
#
# 1. Why does `Scheduler` take a `clock` argument, and what does a test gain from
#    `FakeClock.advance`?
# 2. How do you test that a paused task does *not* run, without `sleep` and without
#    waiting forever?
# 3. Which line of the scheduler does the parked-timer test protect, and what would a
#    scheduler that polls every second do to it?
# 4. Why does the sync's test step with `Stepper.advance` rather than `FakeClock.advance`,
#    and when do you test with the Simulation instead?
#
# <details><summary>Answers</summary>
#
# 1. Time becomes a dependency the test controls: `advance` moves it and wakes the
#    parked timer, so hours pass in microseconds and the result is the same on every run.
# 2. With a bounded negative wait: `log.wait_for(ran_again, timeout=0.2)` returning
#    `None`, ideally while a second, live task proves that time passed (it ran meanwhile).
# 3. The notify in the heap's push when a new head arrives. A scheduler that polls every
#    second passes it too: its urgent task starts less than a second late, inside the
#    test's bound. This test pins the wake-up; what catches a poll is a test of what the
#    idle timer does (09, section 1: the deadline it parks with, and its wake-ups).
# 4. `FakeClock.advance` leaps: the slot due on the way runs late, at the end, and
#    its retries wait for another advance. `Stepper.advance` visits each due instant in
#    order and waits, bounded, until its runs have finished. The Simulation, when runs
#    must take time (durations, overruns, lateness) or the horizon is long.
#
# </details>
#
# [previous: 07 · The interview, in 45 minutes](07-interview-walkthrough.ipynb) · [contents](00-index.ipynb) · [next: 09 · The design lab](09-design-lab.ipynb)
