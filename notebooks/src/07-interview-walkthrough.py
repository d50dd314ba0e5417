# %% [markdown]
# # 07 · The interview, in 45 minutes
#
# [previous: 06 · Persistence and shutdown](06-persistence-and-shutdown.ipynb) · [contents](00-index.ipynb) · [next: 08 · Testing a scheduler](08-testing-a-scheduler.ipynb)
#
# **Objectives**
#
# - answer the case at interview pace, one slot at a time: what to say, what to draw, what to write;
# - write the blocking timer queue (`push`, `pop_due`, `cancel`) on a `threading.Condition`
#   from memory, and have real threads check it;
# - state the fixed-rate, overrun, retry and resume rules exactly, boundaries included;
# - know the talking points: the patterns used, the two deliberately not used, and the
#   hand-off to the distributed design.
#
# **Minutes:** 45, as in the interview (the cron field parser at the end is optional homework, 15 more).
#
# *"Design an in-process task scheduler: cron-like schedules, retries, a worker pool. Show
# the data structure the timer uses, and say exactly what the timer thread does while it
# has nothing to do."*
#
# Each slot opens with a **prompt card**: what to say, what to draw, what to write. Four
# exercises sit where an interviewer asks for them (the timer queue in 14-24, the overrun
# and retry rules in 24-34, what a resume runs in 34-38); each is checked by running real
# tests against your code. Write each in plain Python: the checks compare your answer with
# lldsched's own code, so an answer that calls it (`FixedRate`, `RetryPolicy`) is refused.
# Running all cells never shows an answer: each exercise has a commented `%load` line
# that brings the reference answer into its cell when *you* ask for it.
#
# | minutes | slot | you write |
# | --- | --- | --- |
# | 0-5 | clarify | nothing yet: questions |
# | 5-10 | entities | two class diagrams |
# | 10-14 | the data structure | the heap entry |
# | 14-24 | the timer and the pool | **exercise 1**: the timer queue on a Condition |
# | 24-34 | lifecycle, retries, rescheduling | **exercises 2 and 3**: the overrun rule, the retry rule |
# | 34-38 | cancellation, pause and shutdown | **exercise 4**: what a resume runs; the shutdown order |
# | 38-45 | extensions | cron as a five-minute sketch; leases and fencing tokens |

# %% [markdown]
# ## 0-5 · Clarify
#
# > **Say:** "Before I design: one process or many? Rate or delay? What if a run outlasts
# > its period?" **Draw:** nothing yet. **Write:** the answers, as a list, in a corner.
#
# | question | the answer this design takes |
# | --- | --- |
# | one process or a cluster? | one scheduler per process; several share a job set through the store with leases and fencing tokens (38-45) |
# | fixed rate from the start or the finish? | rate keeps a **grid of slots**, anchored on the slot each run served (its start, when it starts on time); delay counts from the finish |
# | a run longer than its period? | an explicit policy, SKIP or CATCH_UP, never a silent pile-up (CATCH_UP only for an occasional overrun: a job that always overruns falls further behind every run, 09 measures it) |
# | can a running task be stopped? | not a thread: Python cannot preempt one, so cancel and timeout raise a cooperative flag; a run that must be stoppable runs in a child process, killed at its timeout (`isolation="process"`), or as a coroutine, cancelled at its next `await` |
# | seconds, time zones? | five cron fields to the minute; zones are the hard extension |
# | is a retry a new run? | the same task, attempt n + 1, due at finish + backoff; at most `max_attempts` in all, then the dead letter (one-off) or the next slot (recurring) |
# | how many tasks, how precise? | thousands to a few hundred thousand, to the second: one heap in memory, O(log n) a push or pop |
# | what must survive a restart? | definitions, statuses and next-run times, in a store; a run cut by a crash runs again (at-least-once) |
# | what does the timer do while waiting? | blocks on a Condition for exactly the remaining delay (lldsched: at most `max_wait`, 60 s, to notice a wall-clock jump, 38-45) |
#
# **Back of the envelope**, out loud, for 100,000 tasks each due every minute: about
# 1,700 runs a second. The heap is cheap: 17 levels deep, so a push or pop is a few
# dozen comparisons at most, and a registered task owns about 390 bytes in lldsched
# (39 MB in all; `docs/PERFORMANCE.md`). The history is not: a kept run record is about
# 105 bytes (older ones packed sixteen to a block, with a store or without), so 100
# records a task is about 1 GB; bound it (`history_limit`) and let the store keep the
# rest. The limits are the actions and the store: every transition is a write
# (lldsched's SQLite store took 20,000 to 40,000 status writes a second in its own
# benchmark, on the same page, as the disk allowed), and by Little's law the pool needs
# `runs a second * seconds a run` workers, 1,700 for one-second actions (or coroutine
# runs, which hold no thread while they wait).

# %% [markdown]
# ## 5-10 · Entities
#
# > **Say:** "The task is *what* (a Command), the schedule is *when* (a Strategy); the
# > runtime moves tasks without knowing what they do." **Draw:** the two diagrams below.
# > **Write:** the `Schedule` protocol, two methods.
#
# ```mermaid
# classDiagram
#     direction LR
#     class ScheduledTask {
#         id
#         name
#         action
#         priority
#         status TaskStatus
#         next_run_at
#         attempt
#         generation
#     }
#     class Schedule {
#         <<protocol>>
#         first_run(now) float
#         next_run(record, now) float or None
#     }
#     class RetryPolicy {
#         max_attempts
#         backoff(attempt) float
#     }
#     class ExecutionRecord {
#         attempt
#         due
#         slot
#         started
#         finished
#         ok
#         error
#     }
#     ScheduledTask --> Schedule : when
#     ScheduledTask --> RetryPolicy : on failure
#     ScheduledTask "1" --> "*" ExecutionRecord : history
#     Schedule <|.. OneTime
#     Schedule <|.. FixedRate
#     Schedule <|.. FixedDelay
#     Schedule <|.. CronSchedule
# ```
#
# The runtime around them: one state machine, two runtimes that drive it, and the seams
# injected into it (clock, store, listeners).
#
# ```mermaid
# classDiagram
#     direction LR
#     class Scheduler {
#         one Lock, two Conditions
#         schedule()
#         cancel()
#         pause()
#         resume()
#         shutdown()
#     }
#     class SchedulerCore {
#         tasks
#         add()
#         begin()
#         finish()
#     }
#     class TaskQueue {
#         heap of due, priority, sequence, id
#         push()
#         pop_due()
#         discard()
#     }
#     class WorkerPool {
#         bounded hand-off queue
#         put()
#     }
#     class Clock {
#         <<protocol>>
#         now() float
#         wait(condition, deadline)
#     }
#     class TaskStore {
#         <<protocol>>
#         save()
#         load_all()
#     }
#     class Listener {
#         <<protocol>>
#         on_event(event)
#     }
#     Scheduler *-- SchedulerCore
#     Scheduler *-- TaskQueue
#     Scheduler *-- WorkerPool
#     Simulation *-- SchedulerCore
#     SchedulerCore --> TaskQueue : push
#     SchedulerCore --> Clock
#     SchedulerCore --> TaskStore : every transition
#     Scheduler --> Listener : events, off the lock
# ```

# %% tags=["nbval-check-output"]
from lldsched import FixedRate, Priority, RetryPolicy, Scheduler, TaskStatus

print([status.value for status in TaskStatus])
print(sorted(Priority), "<- lower sorts first")
print(RetryPolicy())

# %% [markdown]
# ## 10-14 · The data structure
#
# > **Say:** "A min-heap of `(due, priority, sequence, task)`. The sequence is an
# > ever-increasing counter: equal due times keep arrival order, and the comparison never
# > reaches the task object." **Draw:** a heap of four entries, the head circled.
# > **Write:** the tuple, and `heapq.heappush` / `heappop`.
#
# Cancelling from the middle of a heap is O(n), so nothing is removed: each task
# remembers the sequence of its one live entry, and an entry whose sequence is no longer
# its task's is a **tombstone**, dropped when it reaches the top (notebook 01 shows it on
# the real queue).
#
# *"Why a heap?"* Name the three candidates and what each costs (n timers queued):
#
# | structure | push | take the head | cancel | order within an instant |
# | --- | --- | --- | --- | --- |
# | binary heap (`heapq`) | O(log n) | O(log n), plus a pop per tombstone | O(1) by tombstone | yes |
# | sorted set (balanced tree, skip list) | O(log n) | O(log n) | O(log n), removed for real | yes |
# | hierarchical timing wheel | O(1) | O(1) a timer, plus every tick walked | O(1) | no: a bucket is a list |
#
# The timer only ever needs the minimum, and the heap is in the standard library, in C,
# as a flat list: that wins in one process. The sorted set earns its extra memory when
# you must also list "the next ten due" in order, or remove without tombstones; Redis's
# sorted set (score = due instant) is the usual *shared* version, and lldsched's shared
# stores keep the same order as an index on `next_run_at` (`docs/CLUSTER.md`). The wheel
# is in 38-45. lldsched's heap bounds its tombstones (it compacts, a slice at a time,
# once they pass 40 % of the live entries) and lets an entry already due skip the heap
# for a FIFO lane, O(1) (`lldsched/core/duequeue.py`).

# %% tags=["nbval-check-output"]
import heapq

heap: list[tuple[float, int, int, str]] = []
for sequence, (due, priority, name) in enumerate(
    [(10.0, 1, "report"), (10.0, 0, "alert"), (5.0, 2, "cleanup"), (10.0, 1, "digest")]
):
    heapq.heappush(heap, (due, priority, sequence, name))
print([heapq.heappop(heap)[3] for _ in range(len(heap))])

# %% [markdown]
# ## 14-24 · The timer, and the pool behind it
#
# > **Say**, while you write: *"The timer waits on a Condition with a timeout equal to the
# > time until the head is due; a push that makes a new head notifies all waiters; after
# > every wake-up I re-test, in a `while`."* Then: "due entries go to a fixed pool of
# > workers through a **bounded** queue: backpressure, not an unbounded backlog."
# > **Draw:** timer thread → bounded queue → N workers. **Write:** the class below.
#
# **Exercise 1 (ten minutes).** Complete `TaskQueue`:
#
# - `push(task, due)` queues a task name at `due` (seconds on `self._clock()`); pushing a
#   task that is already queued replaces its entry;
# - `cancel(task)` leaves a tombstone: the entry stays in the heap and never comes out
#   (a task that is not queued, taken already or cancelled twice, is left alone);
# - `pop_due()` blocks until the head is due, then removes and returns it.
#
# The constructor is written for you: take the time only from `self._clock()`. The check
# runs your class on real threads for about two seconds, with a clock it controls, and
# names each mistake it finds:
#
# - the time: read from `time.time()` or `time.monotonic()` instead of `self._clock()`;
#   ties that lose their arrival order (no sequence field); tasks that come out of due
#   order (a heap written by hand with one index wrong: the check empties 150 small
#   shuffled heaps and one of 1,000);
# - the wait: a sleep or poll loop (a wait capped at a second "to be safe" is one too,
#   and so is a timed wait on an empty queue, where only a push can end the wait);
#   a wait with no timeout while a head is queued, or a timeout computed on another
#   clock than `self._clock()`; `if` where `while` is needed (it wakes your waiter when
#   nothing changed); a waiter that goes back to the timeout it computed from the old
#   head; a waiter that takes the head because its wait timed out (the other waiter may
#   have taken it first); a lock of your own held while you wait on the Condition (the
#   wait lets go of the Condition's lock only, so every push waits for ever);
# - the push: one that does not notify (a waiter parked twelve hours must wake for a
#   task due now, or due in a moment, and so must one waiting on an empty queue);
#   `notify()` where two waiters need `notify_all()`; one that touches the heap before
#   it takes the lock; a task pushed twice that comes out twice;
# - the cancel: a cancelled entry that still comes out; a cancel that loses another task
#   (a `heappop` takes out the head, whichever task that is); a cancel that raises for a
#   task a worker already took; one that takes the entry out and leaves a list that is no
#   longer a heap; one that forgets the task without taking the lock;
# - the cost: a sort or a scan where the heap belongs, and a cancel that takes its entry
#   out of the heap instead of leaving a tombstone (it counts how often your queue
#   compares the due times and task names it was given: keep them as given, not
#   `float(due)`).
#
# *Where lldsched differs:* its entries also carry the priority, `(due, priority,
# sequence, task_id)`; the sequence doubles as the task's generation; the timer waits
# through `clock.wait(condition, deadline)` so that a fake clock can drive it (notebook
# 01); and one lock carries two Conditions (timer, workers; idle waiters wait on locks of
# their own, let go under it), while shutdown waits on events set under it and takes it
# back with a timeout. Its heap has a
# single waiter, the timer thread, so there `notify_all()` is insurance; the exercise
# lets several threads call `pop_due`, and then it is required.
#
# *If asked about the locks:* one lock guards the heap, the task registry and the
# hand-off queue together, so "pop the head, mark it RUNNING, hand it to a worker" is one
# atomic step and the three cannot deadlock against each other (the few other locks,
# the listeners' queue's, the store's and the process pool's among them, are only ever
# taken after it); Conditions on
# that lock keep the waiters apart (a new head wakes the timer, not the workers).
# Actions and listeners run outside it, so it is held for microseconds and one lock does
# not limit throughput (notebook 01, section 4).
#
# *If asked what backpressure means here:* when every worker is busy and the hand-off
# queue is full, the timer stops taking due entries; they stay in the heap, in order
# (a HIGH-priority task that falls due meanwhile still goes first) and run late; a
# worker that has half emptied the queue wakes the timer again. Nothing is dropped and
# `schedule()` never blocks. The other choices are to block the
# producer (here the timer: then it cannot notice anything else) or to shed load (drop,
# or skip the slot: a policy per task, as in 24-34). Lateness is the signal:
# `scheduler.metrics()` reports `lag` (how late the oldest waiting due entry is) and
# `handoff` (entries handed out that no worker took yet).

# %%
import itertools
import threading
import time


class TaskQueue:
    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._cond = threading.Condition()  # guards everything below
        self._heap = []  # (due, sequence, task)
        self._sequence = itertools.count()
        self._live = {}  # task -> the sequence of its live entry

    def push(self, task, due):
        raise NotImplementedError("your turn")

    def cancel(self, task):
        raise NotImplementedError("your turn")

    def pop_due(self):
        raise NotImplementedError("your turn")


# To see the reference answer, uncomment the next line and run this cell (it replaces the cell):
# %load exercises/solutions/task_queue.py

# %% tags=["nbval-check-output"]
from exercises import check_task_queue

check_task_queue(TaskQueue)

# %% [markdown]
# ## 24-34 · Lifecycle, retries, rescheduling
#
# > **Say:** "SCHEDULED → RUNNING → SCHEDULED, SUCCEEDED, RETRYING or FAILED; PAUSED and
# > CANCELLED from any live status. RETRYING is its own status because a retry keeps the
# > attempt counter and a reschedule resets it." **Draw:** the state diagram (notebook 03
# > draws it from the core's own transition table). **Write:** `next_run` for fixed rate.
#
# **Fixed rate anchors on the slot it served**, not on the start: the slots are a grid
# `first + k * period`, and a run that starts late does not move the grid. A run due at 0
# that starts at 30 s is next due at 60, not 90:

# %% tags=["nbval-check-output"]
from lldsched import ExecutionRecord


def run(slot: float, started: float, finished: float) -> ExecutionRecord:
    return ExecutionRecord(
        task_id="t",
        name="report",
        attempt=1,
        due=slot,
        slot=slot,
        worker=0,
        started=started,
        finished=finished,
        ok=True,
    )


every_minute = FixedRate(60)
print("due 0, started 30, finished 35 -> next due", every_minute.next_run(run(0, 30, 35), 35))

# Ten runs that each start 30 s late: the grid against "start + period".
grid, from_start, slot, start = [], [], 0.0, 0.0
for _ in range(10):
    grid.append(slot + 30)
    slot = every_minute.next_run(run(slot, slot + 30, slot + 35), slot + 35)
    from_start.append(start + 30)
    start += 30 + 60
print("grid       starts:", [int(t) for t in grid])
print("start + 60 starts:", [int(t) for t in from_start], "<- drifts 30 s a run")

# %% [markdown]
# *"And after a pause?"* The grid comes back in 34-38, as exercise 4.
#
# **Exercise 2 (four minutes).** A run that outlasts its period has missed slots. After
# the run for `slot` finishes at `finished`, the next slot is `slot + period`, unless the
# run overran it: `"skip"` moves to the first slot of the grid **not before** the finish,
# `"catch_up"` returns the missed slot, due at once. Write `next_slot(slot, period,
# finished, policy)`; the check compares it with `FixedRate.next_run`, boundaries included.
#
# *The convention, at the boundary:* a slot that falls exactly at the finish has **not**
# been missed: `next_slot(0, 60, 60, "skip")` is 60, due at once, and
# `next_slot(0, 60, 120, "skip")` is 120. The first version of this design stepped past
# it (`while next <= finished`), so it answered 120 and 180: a run that takes exactly its
# period ran every other slot.


# %%
def next_slot(slot, period, finished, policy):
    raise NotImplementedError("your turn")


# To see the reference answer, uncomment the next line and run this cell:
# %load exercises/solutions/next_slot.py

# %% tags=["nbval-check-output"]
from exercises import check_next_slot

check_next_slot(next_slot)

# %% [markdown]
# **Retries.** *"And when a run fails?"* Say four things. A retry is the same task and
# the same slot, attempt n + 1, due at the finish plus a **backoff** that grows by a
# factor (1 s, 2 s, 4 s...) so a struggling dependency gets room, **capped** so the wait
# never grows past a minute or so. The attempts are **capped** too: after the last one a
# one-off task is FAILED and lands in the **dead letter** (a list an operator can read
# and redrive: `scheduler.dead_letter()`, `scheduler.redrive(task_id)`), and a recurring
# task gives that slot up and goes on to its next one (or, with
# `RetryPolicy(fail_after_given_up=n)`, fails after n slots given up in a row).
# **Jitter** (a random fraction off each wait) keeps a thousand tasks that failed
# together from retrying together: `RetryPolicy(jitter=0.5)` draws each wait from
# `[b / 2, b]`, never longer than the capped wait `b`. Its cousin for schedules,
# `Jittered(schedule, max_delay)`, starts fifty hourly tasks spread over a few minutes
# instead of all at :00. And only what may succeed next time is worth
# retrying: a timeout or a refused connection, not a `TypeError` (lldsched retries every
# failure alike; a filter by error type is a one-line extension to offer).
#
# **Exercise 3 (three minutes).** Write `retry_at(attempt, finished, max_attempts,
# initial, multiplier, cap)`: after attempt `attempt` (1 is the first run) failed at
# `finished`, the instant the next attempt is due, or `None` when none is left.
# `max_attempts` counts every attempt, the first included; the wait after attempt n is
# `initial * multiplier ** (n - 1)`, at most `cap`. The check compares it with lldsched's
# `RetryPolicy`, the last attempt, a wait still growing at attempt 12 under a long cap
# (and at attempt 80 under a multiplier of 1.1), and an attempt far past the cap
# included. Each check of exercises 2 to 4 gets a few seconds: an answer that loops
# for ever is stopped and shown the call it was in (and the checks after it get a
# second each, so the cell does not keep you waiting).


# %%
def retry_at(attempt, finished, max_attempts=3, initial=1.0, multiplier=2.0, cap=60.0):
    raise NotImplementedError("your turn")


# To see the reference answer, uncomment the next line and run this cell:
# %load exercises/solutions/retry_at.py

# %% tags=["nbval-check-output"]
from exercises import check_retry_at

check_retry_at(retry_at)

# %% [markdown]
# ## 34-38 · Cancellation, pause and shutdown
#
# > **Say:** "Tombstones, not removal. A running thread cannot be stopped. A pause is not
# > a downtime. Stop the timer before the pool." **Draw:** the shutdown order as three
# > numbered arrows. **Write:** what a resume runs, then `shutdown()` in four lines.
#
# * **Tombstones, not removal**: cancel, pause and every re-queue give the task a new
#   generation; the timer drops stale entries, and a worker checks the generation again
#   before it starts (an entry can die after the timer popped it).
# * **A running thread cannot be stopped**: cancel stops future runs at once and raises the
#   run's cooperative flag; the run finishes and its record is kept. A timeout is the
#   same: the run is recorded `timed_out`, but an action that ignores its flag keeps its
#   worker, and enough of them starve the pool. Say the cure: a child process, killed at
#   the timeout (`isolation="process"`; its price: the action named by import path, JSON
#   arguments, and a few hundred microseconds a run).
# * **Shutdown order**: stop the timer first (nothing new is submitted), then drain the
#   pool (or drop what is queued), then join. Stopping the pool first would have the timer
#   submit into a closed pool: work lost, or a timer thread that dies (lldsched's pool also
#   stops taking work the moment it closes).
#
# **Deliberately not used** (say so before you are asked):
#
# * **Singleton**: one scheduler is built and passed around. Tests build one per case and
#   shut it down; a module-level instance needs a reset back door and hides the clock it
#   should be given.
# * **A State class per status**: eight statuses with guarded transitions are an enum and
#   one table (`lldsched/core/lifecycle.py`); a class per status spreads one rule over
#   eight files and makes the simulation's reuse of the same machine harder.

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
# **Exercise 4 (three minutes): pause and resume.** *"An operator pauses a report that
# runs every minute, and resumes it an hour later. What happens to the sixty slots it
# missed? Does resume run them all, run one, or wait for the next?"* Answer in code.
#
# A fixed-rate task runs on the grid `first + k * period`, and each run takes no time. It
# is paused at `paused` (every slot up to that instant, one exactly at it included, has
# run) and resumed at `resumed`. Write `runs_after_resume(first, period, paused, resumed,
# policy)`: the instants of its first three runs after the pause, a list. `policy` is how
# the task treats missed slots elsewhere:
#
# | `policy` | a run longer than its period (overrun) | slots passed while the process was down (misfire) |
# | --- | --- | --- |
# | `"skip"` | `OverrunPolicy.SKIP` | `Misfire.SKIP` |
# | `"run_once"` (the defaults) | `OverrunPolicy.SKIP` | `Misfire.RUN_ONCE` |
# | `"catch_up"` | `OverrunPolicy.CATCH_UP` | `Misfire.RUN_ALL` |
#
# The check does not hold an answer of its own: it drives lldsched's `Scheduler` through
# the same pause on a fake clock (`lldsched.testing.Stepper`, notebook 08), reads the
# task's runs from its records and compares them with yours, on named cases (a pause
# between two slots; six slots slept through, under each policy; a resume exactly on a
# slot; a pause exactly on one; a pause before the first run) and on 100 random pauses.
#
# <details><summary>Hint 1: where was the task when it was paused?</summary>
#
# It was waiting for one slot: the first of the grid *after* `paused` (a slot exactly at
# `paused` has run), or `first` if it never ran. Everything turns on whether `resumed`
# comes before that slot or after it.
#
# </details>
#
# <details><summary>Hint 2: resumed before that slot</summary>
#
# Was anything missed? Then nothing changes: a resume is not a "run now".
#
# </details>
#
# <details><summary>Hint 3: resumed after it</summary>
#
# Ask who decided the stop. An overrun and a downtime happen *to* the task, and its
# policies say what to do about them; a pause is an operator's decision. Should a minutely
# report paused for a week fire 10,080 runs at the resume? And once it runs again, does it
# go on from the old grid, or from the run it just made? (`docs/decisions/schedules.md`, "Resume
# re-anchors a fixed-rate grid", says what lldsched chose and why.)
#
# </details>


# %%
def runs_after_resume(first, period, paused, resumed, policy):
    raise NotImplementedError("your turn")


# To see the reference answer, uncomment the next line and run this cell:
# %load exercises/solutions/runs_after_resume.py

# %% tags=["nbval-check-output"]
from exercises import check_runs_after_resume

check_runs_after_resume(runs_after_resume)

# %% [markdown]
# <details><summary>The answer, as you would say it</summary>
#
# "A pause is a deliberate stop, so no catch-up policy applies: resumed before the slot
# it waited for, nothing was missed and the grid goes on; resumed after it, the slots
# slept through get **one** run, at once, and a fixed-rate grid re-anchors on that run
# (the next is a period later). Nothing is recorded for the slots slept through: the
# listeners heard the pause and the resume." The same holds for the other schedules in
# their own terms: a cron task runs once at the resume and then at its next calendar fire
# (the calendar does not move); a fixed delay counts from that run's finish; a retry that
# was pending keeps its due instant, or runs at once if that passed.
#
# </details>

# %% [markdown]
# ## 38-45 · Extensions
#
# > **Say:** "Cron is one more Strategy." Then take the follow-ups in the order the
# > interviewer cares about. **Draw:** the five fields as five sets. **Write:** the
# > sketch below, not a parser.
#
# **Cron as a five-minute sketch.** Each field becomes a set of allowed values (minutes
# 0-59, hours 0-23, days of month, months, days of week); `next_run` finds the first
# minute after the finish whose fields are all in their sets (the two day fields are
# OR-ed unless one starts with `*`), **jumping** field by field (next allowed month, then
# day, hour, minute), not walking minutes. On the board:
#
# ```python
# class CronSchedule:                      # a Strategy, like FixedRate
#     def __init__(self, expr, tz="UTC"):   # parse once; bad text fails here, not at 03:00
#         self.minutes, self.hours, self.days, self.months, self.weekdays = parse(expr)
#     def first_run(self, now):
#         return self.next_after(now)
#     def next_run(self, record, now):         # fires missed by an overrun are skipped;
#         return self.next_after(max(record.finished, record.slot))  # never the same fire twice
# ```
#
# The `max`: if the finish reads earlier than the slot the run served (a wall clock set
# back while it ran), the first fire after the finish is that same slot again.
#
# lldsched's own, in plain English:

# %% tags=["nbval-check-output"]
from lldsched import CronSchedule

for expr in ["*/15 * * * *", "0 9-17/2 * * mon-fri", "30 2 * * *"]:
    print(f"{expr:22} {CronSchedule(expr).explain()}")

# %% [markdown]
# The other follow-ups, one sentence each:
#
# * **Task dependencies**: a BLOCKED status until upstream runs succeed; the queue does not
#   change, a readiness check does.
# * **Misfires after downtime**: per task, a grace time and RUN_ONCE, RUN_ALL or SKIP
#   (`MisfirePolicy`): a slot at most `grace` late (60 s by default) just runs, late;
#   beyond it, RUN_ONCE (the default) runs once for the latest passed slot, RUN_ALL runs
#   each (at most `max_catch_up`, 100), SKIP none. Every passed slot gets a record
#   (`missed`, `coalesced`): nothing is dropped in silence. RUN_ALL after a long outage
#   is the thundering herd; RUN_ONCE is the safe default.
# * **Recovery from the store**: rebuild the heap from stored next-run times; a run in
#   flight at a crash runs again (at-least-once), so tasks should be idempotent
#   (`lldsched/core/recovery.py`).
# * **At-most-once** is the other promise, and a choice to state: write "slot taken"
#   durably *before* the action and never run it again after a crash. A crash then
#   loses the run instead of repeating it: right for a side effect worse repeated than
#   missed (a payment someone reconciles by hand). lldsched promises at-least-once.
# * **Exactly-once?** Not as execution: the crash can fall after the action's side effect
#   and before its record is written, and no scheduler can tell the two apart. Offer
#   at-least-once runs and an **idempotency key** (the task id and its slot) that the
#   action's sink deduplicates on: exactly-once *effect*.
# * **Clock jumps**: due instants are wall-clock instants, but `Condition.wait` counts
#   monotonic time, which (on Linux) also stops while the machine sleeps. So lldsched's
#   timer wakes at least every `max_wait` (60 s) and compares the two clocks; a gap over
#   a second is a jump. Forward, the slots jumped over meet the misfire policy, as after
#   downtime; backward, elapsed-time due instants (fixed rate, fixed delay, a retry's
#   backoff) move back with the clock, so "every 60 s" stays 60 s, while calendar
#   instants (cron) stay put, so a cron job does not fire twice (`lldsched/threaded/timer.py`,
#   `lldsched/core/recovery.py`).
# * **Cron time zones**: keep UTC instants and read the zone only to find the next fire.
#   A 02:30 job does not exist one night a year and happens twice on another. lldsched
#   takes Debian cron's rule: a wall-clock job (`30 2 * * *`) runs once, at the first
#   minute after the spring-forward gap, and once, at the first pass, in the fall-back
#   overlap; a job that steps (`*/20 * * * *`, `0 * * * *`) follows real instants,
#   nothing in the gap and both passes of the overlap (notebook 02, `docs/CRON.md`).
# * **Observability**: one snapshot, `scheduler.metrics()`: `lag` (how late the oldest
#   waiting due entry is: the number to alert on), `handoff` (saturation), `queued`,
#   `busy`, `dead_letter`, counts by outcome, `store_ok`, and `timer_alive`: a dead
#   timer thread is the silent failure, nothing runs and nothing raises. Per run, each
#   record's `lateness` and `duration`, through a listener (`docs/OPERATIONS.md`).
# * **A hierarchical timing wheel** (Varghese and Lauck, 1987): O(1) insertion and
#   cancel, but time walks tick by tick and a bucket keeps no order (no priority within a
#   tick). Right for a network stack with a million connection timeouts, most cancelled;
#   a job scheduler's timers are few, hours apart and prioritised, so it keeps the heap
#   (09 measures both: in CPython they meet around 100,000 timers).
#
# **The hand-off: several schedulers, one set of jobs.** Everything so far is one process.
# When the interviewer asks for several, say: each scheduler takes a **lease** on a job in
# the shared store (a row it may run until the lease expires, renewed while it runs), and
# every lease comes with a **fencing token**, a number that only grows. A scheduler that
# stalls (a GC pause, a partition) can outlive its lease while another takes the job; when
# it wakes and writes, the store rejects its older token. Leases give at-most-one owner
# *most* of the time; the fencing token makes the stale owner harmless the rest of the
# time, but only where it is checked: the scheduler's own store checks it, and the
# action's sink must check it too (the run gets its token; the sink keeps the newest
# token per task and refuses older ones). A side effect that cannot be fenced, an e-mail
# sent, needs the idempotency key instead. Idempotent tasks make the retry after a crash
# harmless. That is where the distributed-scheduler interview begins (notebook 10).
#
# Two questions follow at once:
#
# * **A leader, or none?** lldsched has none: every process claims due rows itself, in
#   one transaction (`FOR UPDATE SKIP LOCKED` in PostgreSQL, `BEGIN IMMEDIATE`, the
#   write lock, on a shared SQLite file), so there is no election and no failover gap
#   beyond one lease; the price is a claim query per wake on every node. A leader (the
#   holder of a lease on one "leader" row decides what is due and hands it out) decides
#   in one place, but its own lease needs fencing just the same, and it is a bottleneck
#   and a hand-off channel to build.
# * **Whose clock?** A lease's expiry is an instant: compare it on one clock, the
#   database's (`PostgresTaskStore`) or the one host's (a shared SQLite file), and skew
#   no longer decides who owns what; it only moves when a node thinks a slot is due
#   (early or late, never twice). With every node's own clock, skew must stay below the
#   margin `lease - renewal` (notebook 10, section 5; `docs/CLUSTER.md`).
#
# **Failure modes**, one line each, and what answers them:
#
# | failure | what happens | the answer |
# | --- | --- | --- |
# | the process dies mid-run | the run's record was never written | at restart it runs again: at-least-once, idempotent actions |
# | an action hangs | it holds its worker; enough of them starve the pool | a timeout; a child process, killed (`isolation="process"`) |
# | a task always fails | without caps, a retry storm for ever | capped attempts and backoff; the dead letter; `fail_after_given_up` |
# | more due than the pool runs | due entries wait in the heap | the bounded hand-off; `lag` grows and alerts |
# | the store fails | transitions are not written | lldsched runs on from memory, logs once, `store_ok` is False; the stale rows are written again when it is back, with the records between, in order |
# | the timer thread dies | nothing runs, nothing raises | `metrics().state` is `"dead"`: a health check reads it |
# | a process stalls past its lease | another takes its runs; its late write arrives | fencing tokens, refused by the store and the sink |
#
# ## Homework (optional, 15 minutes): a cron field parser
#
# Write `parse_field(text, low, high)`: the set of values one numeric cron field allows
# (`*`, `n`, `a-b`, `*/s`, `a-b/s`, `n/s`, comma lists), raising `ValueError` for what cron
# rejects: reversed ranges, a step of 0, empty list items, out-of-range values (range
# ends included: `50-70` is not a minute field) and anything that is not plain digits
# (`+5`). *The library's convention:* `n/s` means `n-high/s`, as in real cron (`50/3`
# in a minute field is 50, 53, 56 and 59). The check compares your answer with lldsched's own parser on named and
# random fields, the edges of each range included.


# %%
def parse_field(text, low, high):
    raise NotImplementedError("your turn")


# To see the reference answer, uncomment the next line and run this cell:
# %load exercises/solutions/parse_field.py

# %% tags=["nbval-check-output"]
from exercises import check_parse_field

check_parse_field(parse_field)

# %% [markdown]
# ## Each talking point, switched off
#
# The design lab ([09](09-design-lab.ipynb)) takes the real scheduler, swaps one
# collaborator, and measures what breaks. After a mock interview, run the sections behind
# the points you defended:
#
# | slot | talking point | in the lab |
# | --- | --- | --- |
# | 0-5 | a run longer than its period: an explicit policy, never a silent pile-up | [overrun policy](09-design-lab.ipynb#lab-overrun) |
# | 5-10 | events leave the lock and are delivered off the hot path | [listeners off the lock](09-design-lab.ipynb#lab-listeners) |
# | 10-14 | the sequence field: ties never compare tasks | [the sequence field](09-design-lab.ipynb#lab-sequence) |
# | 10-14, 34-38 | cancel by tombstone, not by removal from the middle of the heap | [tombstones](09-design-lab.ipynb#lab-tombstones) |
# | 14-24 | the timer waits on a Condition with a timeout, no poll | [Condition.wait](09-design-lab.ipynb#lab-wait) |
# | 14-24 | a push that makes a new head notifies, and notifies *all* | [push notifies](09-design-lab.ipynb#lab-push), [notify_all](09-design-lab.ipynb#lab-notify-all) |
# | 14-24 | after every wake-up, re-test in a `while` | [re-test in while](09-design-lab.ipynb#lab-while) |
# | 14-24 | a bounded hand-off queue: backpressure | [bounded hand-off](09-design-lab.ipynb#lab-handoff) |
# | 34-38 | stop the timer before the pool | [shutdown order](09-design-lab.ipynb#lab-shutdown) |
# | 38-45 | a hierarchical timing wheel, and why a job scheduler keeps the heap | [heap or wheel](09-design-lab.ipynb#lab-wheel) |

# %% [markdown]
# ## Check yourself
#
# 1. Your timer waits on a Condition with a timeout computed from the head of the heap.
#    A push arrives with an entry due before that head. What must `push` do, and why
#    does it matter that there may be two waiters?
# 2. A fixed-rate task every 60 s: its run for the slot at 0 starts at 30 s and finishes
#    at 60 s exactly. When is it next due, under SKIP, and why not 90 or 120?
# 3. An interviewer asks why there is no `SchedulerSingleton` and no `RunningState`
#    class. Answer in two sentences.
# 4. *"Can your scheduler guarantee each report is sent exactly once?"* What do you
#    promise instead, and what must the report's action do?
# 5. A laptop running a task every minute sleeps for two hours. What does the timer,
#    parked on `Condition.wait`, see when the lid opens, and what runs?
#
# <details><summary>Answers</summary>
#
# 1. Notify the condition, with `notify_all()`: every waiter computed its timeout from the
#    old head and would sleep past the new one. `notify()` wakes one; the other sleeps on.
#    And each waiter re-tests in a `while`, since it may wake for nothing.
# 2. At 60, due at once: fixed rate anchors on the slot the run served (0), not on its
#    start (30 s, which would give 90), and a slot that falls exactly at the finish has
#    not been missed (stepping past it with `next <= finished`, as the first version of
#    this design did, would give 120).
# 3. A singleton needs a reset back door for tests and hides the clock it should be
#    given, so one scheduler is built and passed around. Eight statuses with guarded
#    transitions are an enum and one table; a class per status would spread one rule
#    over eight places.
# 4. Not exactly-once execution: a crash after the send and before the record is written
#    looks, at restart, like a run that never finished, so it runs again. Promise
#    at-least-once, and have the action deduplicate on an idempotency key (the task id
#    and slot; with several processes, the fencing token too): exactly-once *effect*.
# 5. On Linux `Condition.wait` counts monotonic time, which stopped during the sleep, so
#    the wait (under a minute here; `max_wait`, 60 s, bounds any wait, a task due in an
#    hour's included) ends within a minute of waking. The timer then compares the clocks,
#    finds wall time two hours ahead of monotonic time, and takes it for a forward jump:
#    the 120 slots slept through, and the one due as the timer wakes, meet the misfire
#    policy. Under the default (RUN_ONCE, 60 s of grace) one run goes at once, for the
#    latest of them, the 120 before it are recorded `coalesced`, and the grid carries on
#    (`tests/test_recovery.py` plays this with a clock whose wall time jumps).
#
# </details>
#
# [previous: 06 · Persistence and shutdown](06-persistence-and-shutdown.ipynb) · [contents](00-index.ipynb) · [next: 08 · Testing a scheduler](08-testing-a-scheduler.ipynb)
