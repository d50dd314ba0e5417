# %% [markdown]
# # 07 · The interview, in 45 minutes
#
# *"Design an in-process task scheduler: cron-like schedules, retries, a worker pool. Show
# the data structure the timer uses, and say exactly what the timer thread does while it
# has nothing to do."*
#
# This notebook walks the case at interview pace. Three exercises ask you to write the
# pieces interviewers most often ask for on the whiteboard (`pop_due`, a cron field parser,
# the overrun rule); each is checked by running real tests against your code, and a
# reference answer is there when you want it, not before.
#
# | minutes | what to do |
# | --- | --- |
# | 0-5 | clarify: one process or a cluster, rate or delay, overruns, time zones |
# | 5-10 | entities: the task is *what*, the schedule is *when* |
# | 10-14 | the data structure: a heap keyed on (due, priority, sequence); say why the sequence |
# | 14-24 | the timer loop ("wait with a timeout, a push notifies") and the pool behind it |
# | 24-32 | lifecycle: retries, dead letter, rescheduling |
# | 32-38 | tombstones and generations, why a running thread cannot be stopped, shutdown order |
# | 38-45 | extensions: dependencies, misfires, recovery, several schedulers, timing wheels |

# %% [markdown]
# ## 0-5 · Clarify
#
# | question | the answer this design takes |
# | --- | --- |
# | one process or a cluster? | one; the store is the seam to a shared one |
# | fixed rate from the start or the finish of a run? | rate from the start, delay from the finish |
# | a run longer than its period? | an explicit policy, SKIP or CATCH_UP, never a silent pile-up |
# | can a running task be stopped? | no: cancel stops future runs; real cancellation is cooperative |
# | seconds, time zones? | five cron fields to the minute; zones are the hard extension |
# | is a retry a new run? | the same task, attempt n + 1, due at finish + backoff |
# | what does the timer do while waiting? | blocks on a Condition for exactly the remaining delay |

# %% [markdown]
# ## 5-10 · Entities
#
# Say the split out loud: a **task** is a Command (id, name, callable, priority, retry
# policy, timeout) and a **schedule** is a Strategy (`first_run(now)`, `next_run(record)`).
# Around them: a **store** every status change is written through (Repository), a
# **clock**, an **id generator** and **listeners** (Observer), all injected.

# %% tags=["nbval-check-output"]
from lldsched import FixedRate, Priority, RetryPolicy, Scheduler, TaskStatus

print([status.value for status in TaskStatus])
print(sorted(Priority), "<- lower sorts first")
print(RetryPolicy())

# %% [markdown]
# ## 10-14 · The data structure, and exercise 1: `pop_due`
#
# A min-heap of `(due, priority, sequence, generation, task)`. The sequence is an
# ever-increasing counter: ties never reach the task object, and equal due times keep
# arrival order. Cancelling bumps the task's generation, so its entry becomes a tombstone
# that is dropped when it surfaces. (lldsched's own entries are `(due, priority, sequence,
# task_id)`, with the sequence doubling as the generation: notebook 01 says why.)
#
# **Exercise 1.** Write `pop_due(heap, now, generations)`: pop and return, in heap order,
# the live entries due at or before `now`. Entries here are
# `(due, priority, sequence, generation, name)`; an entry is live when
# `generations[name]` equals its generation. Replace the body and run the check.


# %%
def pop_due(heap, now, generations):  # heapq.heappop is your friend
    raise NotImplementedError("your turn")


# %%
from exercises import check_pop_due

check_pop_due(pop_due)

# %% [markdown]
# Stuck? `show_solution("pop_due")` prints a reference answer; here it is checked with the
# same tests:

# %% tags=["nbval-check-output"]
from exercises import solutions

check_pop_due(solutions.pop_due)

# %% [markdown]
# ## 14-24 · The timer loop and the pool
#
# While writing it, say: *"the timer waits on a Condition with a timeout equal to the time
# until the head is due; a push that makes a new head notifies it; after every wake-up I
# re-test."* Due entries go to a fixed pool of workers through a **bounded** queue:
# backpressure, not an unbounded backlog. Notebook 01 measures it against a poll loop.
#
# ## 24-32 · Lifecycle, and exercise 2: a cron field
#
# `SCHEDULED -> RUNNING -> SCHEDULED | SUCCEEDED | RETRYING | FAILED`, with `PAUSED` and
# `CANCELLED` from any live status. RETRYING is its own status because a retry keeps the
# attempt counter and a reschedule resets it.
#
# Cron comes up here ("now support cron"): it is one more schedule. **Exercise 2.** Write
# `parse_field(text, low, high)`: the set of values a numeric cron field allows (`*`, `n`,
# `a-b`, `*/s`, `a-b/s`, `n/s` meaning `n-high/s`, comma lists), raising `ValueError` for
# reversed ranges, a step of 0, empty list items and out-of-range values. The check
# compares your answer with lldsched's own parser.


# %%
def parse_field(text, low, high):
    raise NotImplementedError("your turn")


# %%
from exercises import check_parse_field

check_parse_field(parse_field)

# %% tags=["nbval-check-output"]
check_parse_field(solutions.parse_field)

# %% [markdown]
# ## Exercise 3: the overrun rule
#
# A fixed-rate task keeps a grid of slots `first + k * period`. After its run for `slot`
# finishes at `finished`, the next slot is `slot + period`, unless the run overran it:
# `SKIP` jumps to the first slot of the grid not before the finish, `CATCH_UP` returns the
# missed slot, due at once. Write `next_slot(slot, period, finished, policy)` with policy
# `"skip"` or `"catch_up"`; the check compares it with `FixedRate.next_run`.


# %%
def next_slot(slot, period, finished, policy):
    raise NotImplementedError("your turn")


# %%
from exercises import check_next_slot

check_next_slot(next_slot)

# %% tags=["nbval-check-output"]
check_next_slot(solutions.next_slot)

# %% [markdown]
# ## 32-38 · Cancellation and shutdown
#
# * **Tombstones, not removal**: cancel, pause and every re-queue bump the generation; the
#   timer drops stale entries, and a worker checks the generation again before it starts.
# * **A running thread cannot be stopped**: cancel stops future runs at once and raises the
#   run's cooperative flag; the run finishes and its record is kept.
# * **Shutdown order**: stop the timer first (so nothing new is submitted), then drain the
#   pool (or drop what is queued), then join. Stopping the pool first makes the timer
#   submit into a closed pool.

# %% tags=["nbval-check-output"]
from lldsched import FakeClock

scheduler = Scheduler(workers=2, clock=FakeClock(0)).start()
tick = scheduler.schedule("tick", lambda: None, FixedRate(60))
scheduler.wait_idle()
print("first shutdown:", scheduler.shutdown(), "| again:", scheduler.shutdown())
try:
    scheduler.schedule("late", lambda: None, FixedRate(60))
except RuntimeError as error:
    print(type(error).__name__, "-", error)

# %% [markdown]
# ## 38-45 · Extensions interviewers ask for
#
# * **Task dependencies**: a BLOCKED status until upstream runs succeed; the queue does not
#   change, a readiness check does.
# * **Misfires after downtime**: per task, a grace time and RUN_ONCE, RUN_ALL or SKIP.
# * **Recovery from the store**: rebuild the heap from stored next-run times; a run in
#   flight at a crash runs again (at-least-once), so tasks should be idempotent.
# * **Several schedulers sharing one set of jobs**: leases with fencing tokens.
# * **A hierarchical timing wheel** (Varghese and Lauck, 1987): O(1) insertion, right for
#   network stacks with hundreds of thousands of timers, rarely needed for a job scheduler.
# * **Cron time zones**: a 02:30 job does not exist one night a year and happens twice on
#   another (notebook 02).
#
# When you are done, compare with the reference answers: `show_solution("pop_due")`,
# `show_solution("parse_field")`, `show_solution("next_slot")`.

# %%
from exercises import show_solution

show_solution("next_slot")

# %% [markdown]
# Back to the [index](00-index.ipynb).
