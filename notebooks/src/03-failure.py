# %% [markdown]
# # 03 · Failure: retries, dead letter, timeouts
#
# [previous: 02 · Schedules and cron](02-schedules-and-cron.ipynb) · [contents](00-index.ipynb) · [next: 04 · Simulation](04-simulation.ipynb)
#
# **Objectives**
#
# - read the task lifecycle from the core's own transition table, and say why RETRYING is
#   a status of its own;
# - follow a failing task through capped exponential backoff, the dead letter and redrive;
# - say what a timeout can and cannot do to a running thread, and write an action that
#   stops when asked;
# - run a task in a worker process, so that its timeout is enforced by a kill;
# - hold a task until its upstream succeeded (`depends_on`), and say what a failed
#   upstream does to it.
#
# **Minutes:** 30.
#
# User code fails. A scheduler you can trust turns every failure into data (a record with
# the error text), retries with a capped exponential backoff, gives up into a dead-letter
# list someone can look at, and lets a person put a task back (`redrive`). And it is honest
# about timeouts: Python cannot stop a running thread, so a timeout is *detected*, and
# stopping early is something the task has to cooperate with.
#
# ## 0. The lifecycle
#
# Every status a task can be in, and every allowed move between them. The diagram is
# drawn from `lldsched/core/lifecycle.py`, the table of transitions the core makes, and a
# test (`tests/test_lifecycle.py`) drives the core through every trigger and fails if the
# table, the core and this diagram disagree. RETRYING is separate from SCHEDULED on
# purpose: a retry keeps the attempt counter, a reschedule resets it.
#
# ```mermaid
# stateDiagram-v2
#     [*] --> SCHEDULED: schedule()
#     [*] --> PAUSED: schedule(paused=True)
#     SCHEDULED --> RUNNING: due
#     RETRYING --> RUNNING: backoff elapsed
#     RUNNING --> SCHEDULED: ok, next run
#     RUNNING --> SUCCEEDED: ok, no next run
#     RUNNING --> RETRYING: failed, attempts left
#     RUNNING --> SCHEDULED: slot given up
#     RUNNING --> FAILED: no attempts left
#     SCHEDULED --> PAUSED: pause()
#     RETRYING --> PAUSED: pause()
#     RUNNING --> PAUSED: pause() mid-run
#     PAUSED --> SCHEDULED: resume()
#     PAUSED --> RETRYING: resume()
#     PAUSED --> RUNNING: resume() mid-run
#     PAUSED --> SUCCEEDED: run ends, no next run
#     PAUSED --> FAILED: run fails, no attempts left
#     SCHEDULED --> CANCELLED: cancel()
#     RETRYING --> CANCELLED: cancel()
#     RUNNING --> CANCELLED: cancel() mid-run
#     PAUSED --> CANCELLED: cancel()
#     FAILED --> SCHEDULED: redrive()
#     SCHEDULED --> BLOCKED: due, upstreams not met
#     BLOCKED --> SCHEDULED: upstreams succeeded
#     BLOCKED --> PAUSED: pause()
#     BLOCKED --> CANCELLED: cancel()
#     BLOCKED --> FAILED: upstream failed or cancelled
#     SCHEDULED --> FAILED: due, upstream failed or cancelled
#     RUNNING --> SCHEDULED: restart
#     RUNNING --> RETRYING: restart, attempts behind it
#     SUCCEEDED --> [*]
#     CANCELLED --> [*]
# ```

# %%
import random
import time
from datetime import UTC, datetime

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    OneTime,
    Priority,
    RetryPolicy,
    RunContext,
    Scheduler,
)

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

# %% [markdown]
# That many moves make a dense drawing, small on a laptop or a projector. The same
# table, a line per status: where a task in it can go next, and on what.

# %% tags=["nbval-check-output"]
from lldsched import TaskStatus
from lldsched.core.lifecycle import TRANSITIONS

for status in [None, *TaskStatus]:
    moves = [f"-> {t.target.name:<10} {t.trigger}" for t in TRANSITIONS if t.source is status]
    if moves:
        print(f"{'(new)' if status is None else status.name:>9} " + f"\n{'':9} ".join(moves))


# %% [markdown]
# ## 1. Retries with capped exponential backoff
#
# A retry is the same task, attempt n + 1, due at the failed run's finish plus
# `backoff(n)`; the schedule is not consulted. The default policy makes three attempts,
# waiting 1 s, then 2 s (and 4, 8, ... capped at 60 s for longer policies).

# %% tags=["nbval-check-output"]
policy = RetryPolicy(max_attempts=8)
print("waits after attempts 1..7:", [policy.backoff(n) for n in range(1, 8)])
spread = RetryPolicy(max_attempts=8, jitter=0.5)
rng = random.Random(0)  # a scheduler seeds one per retry: its seed, the task, the slot, the attempt
print(
    "jitter=0.5 draws the 8 s wait from [4, 8]:",
    [round(spread.backoff(4, rng), 2) for _ in range(5)],
)

# %% [markdown]
# A flaky import fails twice, then succeeds. The scheduler runs on a fake clock; each
# `advance` is a second of fake time. `EventLog` is a *listener*: the scheduler tells it
# of every status change (on a thread of its own, never the timer's or a worker's), and
# it keeps them all, so the last line can list the task's transitions.

# %% tags=["nbval-check-output"]
clock = FakeClock(START)
log = EventLog()
failures_left = [2]


def flaky_import() -> None:
    if failures_left[0]:
        failures_left[0] -= 1
        raise ConnectionError("source not ready")


with Scheduler(workers=1, clock=clock, listeners=[log]) as scheduler:
    task = scheduler.schedule("import", flaky_import, OneTime(delay=0))
    for _ in range(4):
        scheduler.wait_idle()
        clock.advance(1)
    scheduler.wait_idle()

t0 = START.timestamp()
for record in task.history:
    print(
        f"attempt {record.attempt}: due t+{record.due - t0:.0f} s  "
        f"{record.outcome:9} {record.error or ''}"
    )
print("status:", task.status.value)
print("transitions:", " -> ".join(e.status.value for e in log.events if e.task_id == task.id))

# %% [markdown]
# ## 2. A bad slot, the dead letter and redrive
#
# When a slot's attempts run out, what happens depends on the schedule. A recurring task
# **gives the slot up**: its last record says `given_up`, listeners hear it, and the task
# is due at its next slot with a fresh attempt counter. An hourly job that fails at 03:00
# because a database restarted still runs at 04:00 (cron, Quartz and Celery beat behave the
# same way). A one-off task has no next slot: it is `FAILED`, and its id goes to the
# dead-letter list.

# %% tags=["nbval-check-output"]
clock = FakeClock(START)
database_up = [False]


def hourly_report() -> None:
    if not database_up[0]:
        raise ConnectionError("database restarting")


with Scheduler(workers=1, clock=clock) as scheduler:
    report = scheduler.schedule("report", hourly_report, FixedRate(3600))
    for _ in range(3):  # three attempts: at once, then after 1 s and 2 s
        scheduler.wait_idle()
        clock.advance(2)
    scheduler.wait_idle()
    print(
        f"{report.status.value}, next run in {report.next_run_at - clock.now():.0f} s; "
        f"dead letter {scheduler.dead_letter()}"
    )
    database_up[0] = True
    clock.advance(report.next_run_at - clock.now())
    scheduler.wait_idle()

t0 = START.timestamp()
for record in report.history:
    print(f"slot t+{record.slot - t0:>4.0f} s  attempt {record.attempt}  {record.outcome}")

# %% [markdown]
# A job that keeps failing slot after slot may need a person rather than another try
# next hour. `RetryPolicy(fail_after_given_up=n)` says so: after `n` slots given up in a
# row the task is `FAILED` and its id goes to the dead-letter list (the default, `None`,
# never gives up on the task). `redrive` puts it back, due now, with a fresh attempt
# counter and a fresh count.

# %% tags=["nbval-check-output"]
clock = FakeClock(START)
disk_full = [True]


def cleanup() -> None:
    if disk_full[0]:
        raise OSError("disk is full")


with Scheduler(workers=1, clock=clock) as scheduler:
    retry = RetryPolicy(max_attempts=2, fail_after_given_up=2)
    job = scheduler.schedule("cleanup", cleanup, FixedRate(3600), retry=retry)
    for _ in range(2):  # two slots, two attempts each
        scheduler.wait_idle()
        clock.advance(1)
        scheduler.wait_idle()
        if job.next_run_at is not None:
            clock.advance(job.next_run_at - clock.now())
    scheduler.wait_idle()
    print(f"{job.status.value}: {job.last_error!r}; dead letter {scheduler.dead_letter()}")
    for record in job.history:
        print(f"slot t+{record.slot - t0:>4.0f} s  attempt {record.attempt}  {record.outcome}")

    disk_full[0] = False  # someone frees the disk, then redrives
    scheduler.redrive(job.id)
    scheduler.wait_idle()
    print(
        f"{job.status.value}: next run in {job.next_run_at - clock.now():.0f} s; "
        f"dead letter {scheduler.dead_letter()}"
    )

# %% [markdown]
# ## 3. Timeouts: detected, not enforced
#
# A task with `timeout=0.1` whose action sleeps 0.3 s: Python has no way to stop that
# thread, so the run goes on for its whole 0.3 s and its worker is busy all along. When it
# returns, the run is recorded `timed_out` and goes down the retry path.
#
# (These two cells use the real clock, so their numbers vary a little.)

# %%
with Scheduler(workers=1) as scheduler:
    once = RetryPolicy.never()
    stubborn = scheduler.schedule(
        "stubborn", lambda: time.sleep(0.3), OneTime(delay=0), timeout=0.1, retry=once
    )
    scheduler.wait_drained(timeout=5)
(run,) = stubborn.history
print(f"timed out: {run.timed_out}; ran {run.duration:.2f} s against a 0.1 s budget")
print("error:", run.error)

# %% [markdown]
# ### Cooperative cancellation
#
# What *can* be stopped is code that looks. An action that declares a parameter named
# `ctx` gets a `RunContext`; its flag goes up when the budget runs out or the task is
# cancelled. `ctx.wait(seconds)` is the cooperative `sleep`: it returns early, and True,
# once the flag is up.


# %%
def polite(ctx: RunContext) -> None:
    for _ in range(30):  # thirty chunks of work, 0.1 s each...
        if ctx.wait(0.1):  # ...checking the flag between them
            return


with Scheduler(workers=1) as scheduler:
    cooperative = scheduler.schedule(
        "polite", polite, OneTime(delay=0), timeout=0.25, retry=RetryPolicy.never()
    )
    scheduler.wait_drained(timeout=5)
(run,) = cooperative.history
print(f"timed out: {run.timed_out}; stopped after {run.duration:.2f} s of a possible 3 s")
print("status:", cooperative.status.value)

# %% [markdown]
# ### Enforced: a process can be killed
#
# Python cannot stop a thread, but it can stop a process. `isolation="process"` runs each
# attempt in a worker process. The action is then named by its import path
# (`"package.module:function"`) with arguments JSON keeps unchanged: nothing is pickled,
# the child imports the function itself. At the timeout the child is killed (SIGKILL), the
# run is recorded `timed_out`, and the worker is free at once: below, one worker, a
# 30-second sleep with a 0.1 s budget, and a second task waiting for that worker.
# (The first run also waits for the child's interpreter to start: a few hundred ms.)

# %%
with Scheduler(workers=1) as scheduler:
    sleeper = scheduler.schedule(
        "sleeper",
        "time:sleep",
        OneTime(delay=0),
        args=[30],
        timeout=0.1,
        isolation="process",
        retry=RetryPolicy.never(),
        priority=Priority.HIGH,
    )
    waiting = scheduler.schedule("waiting", lambda: None, OneTime(delay=0), priority=Priority.LOW)
    scheduler.wait_drained(timeout=10)
(run,) = sleeper.history
print(f"timed out: {run.timed_out}; its child was killed after {run.duration:.2f} s")
print("error:", run.error.split(" (its worker")[0])  # then "(its worker process N was killed)"
freed = waiting.history[0].started - run.finished
print(f"the waiting task started {freed * 1000:.0f} ms after the kill, not 30 s later")

# %% [markdown]
# A child that crashes (`os._exit(3)`, a segfault) is a failed run whose error names the
# exit code or the signal, and the pool starts a new child. `cancel` and `pause` kill a
# running child too. The price: a few hundred microseconds a run for the round trip, an
# interpreter start per new child, and no shared memory (the action gets JSON, returns a
# value whose `repr` becomes the record's `result`).

# %% [markdown]
# ## 4. Dependencies: wait for the upstream, fail with it
#
# `depends_on=[ids]` holds each slot of a task until every upstream has succeeded since the
# task's previous slot started. A slot that falls due too early is `BLOCKED`: it leaves the
# heap, nothing polls, and the upstream's success releases it at that instant (the queue
# does not change; a readiness check before dispatch does). Every wait is a record whose
# outcome is `blocked`. This chain runs hourly in a simulation, so the times are exact:
# `load` and `report` are due at :00, `extract` starts at :05 and takes 15 minutes.

# %% tags=["nbval-check-output"]
from lldsched import Simulation
from lldsched.views.frames import dependencies_of, to_frame
from lldsched.views.plots import gantt

chain = Simulation(workers=2, start=START)
chain.schedule("extract", FixedRate(3600, start_delay=300), id="extract", duration=900)
chain.schedule("load", FixedRate(3600), id="load", duration=300, depends_on=["extract"])
chain.schedule("report", FixedRate(3600), id="report", duration=60, depends_on=["load"])
chain.run_for(2 * 3600 - 1)
for record in chain.records():
    print(
        f"{record.name:8} {record.outcome:8} t+{(record.started - t0) / 60:>4.0f} min "
        f"to t+{(record.finished - t0) / 60:>4.0f} min"
    )

# %% [markdown]
# The chart by task draws each wait as a grey hatched band and each dependency as a dashed
# arrow, from the upstream run whose success let the dependent start. (`to_frame` turns
# the records into a table, `gantt` draws it: notebook 04 reads both in full.)

# %%
gantt(to_frame(chain), by="task", depends_on=dependencies_of(chain), title="An hourly chain")

# %% [markdown]
# An upstream that is `FAILED` or `CANCELLED` will not succeed without a person, so the
# tasks waiting for it fail too, into the dead letter, with an error that names it (and so
# do theirs). Redrive the upstream first, then its dependents.

# %% tags=["nbval-check-output"]
broken = Simulation(workers=1, start=START)
broken.schedule("extract", OneTime(delay=300), id="extract", fails=1.0, retry=RetryPolicy.never())
broken.schedule("load", OneTime(delay=0), id="load", depends_on=["extract"])
broken.schedule("report", OneTime(delay=0), id="report", depends_on=["load"])
broken.run_for(600)
print("dead letter:", broken.dead_letter())
print(broken.task("report").last_error)

# %% [markdown]
# ## What Python can and cannot stop
#
# * It **cannot** preempt a thread: `time.sleep`, a socket read without a timeout, a long
#   C call all run to their end. The scheduler records the overrun; the worker stays busy.
# * It **can** stop code that cooperates: check `ctx.cancelled`, or wait with `ctx.wait()`.
# * `cancel` stops future runs at once and raises the running run's flag; a run in flight
#   on a thread finishes and its record is kept.
# * For work that must be killable, register it with `isolation="process"`: a process can
#   be stopped from outside, a thread cannot. Its run is killed at its timeout, by `cancel`
#   and `pause`, by a slot that `Overlap.CANCEL_OTHER` starts over it, and by a shutdown
#   that does not drain it.
#
# ## Check yourself
#
# 1. A one-off task with `RetryPolicy(max_attempts=3)` fails every time. List its
#    statuses from registration to the end, and say what `redrive` then does.
# 2. Why is RETRYING a status of its own instead of SCHEDULED with a shorter due time?
# 3. An action calls `time.sleep(10)` and has `timeout=1`. When is the timeout noticed,
#    when does the worker become free, and what would you change in the action?
# 4. `load` depends on `extract`; both are hourly, and `extract` fails one slot (its
#    retries too) but succeeds the next hour. What happens to `load` meanwhile?
#
# <details><summary>Answers</summary>
#
# 1. SCHEDULED, RUNNING, RETRYING, RUNNING, RETRYING, RUNNING, FAILED (and its id in the
#    dead letter). `redrive` moves it FAILED → SCHEDULED, due now, with a fresh attempt
#    counter.
# 2. A retry keeps the attempt counter (attempt n + 1 of the same slot) and is due at
#    finish + backoff, without consulting the schedule; a reschedule resets the counter
#    and asks the schedule. One status per meaning keeps both rules in one place.
# 3. Nothing interrupts the sleep: the run returns after 10 s, is recorded `timed_out`
#    then, and only then is the worker free. Declare a `ctx` parameter and wait with
#    `ctx.wait(10)` (or check `ctx.cancelled` between chunks of work): its flag goes up
#    at 1 s and the action returns.
# 4. `extract` gave its slot up but is still SCHEDULED (not dead), so `load`'s next slot
#    waits BLOCKED, off the heap, until `extract` succeeds the next hour; then it runs at
#    once, and the `load` slot it slept through is recorded `skipped`.
#
# </details>
#
# [previous: 02 · Schedules and cron](02-schedules-and-cron.ipynb) · [contents](00-index.ipynb) · [next: 04 · Simulation](04-simulation.ipynb)
