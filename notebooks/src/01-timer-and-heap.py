# %% [markdown]
# # 01 · The timer and the heap
#
# [contents](00-index.ipynb) · [next: 02 · Schedules and cron](02-schedules-and-cron.ipynb)
#
# **Objectives**
#
# - say why the heap entry is `(due, priority, sequence, task_id)`, and what the sequence is for;
# - write a timer queue that waits on a `Condition` for exactly the delay until the head is
#   due, and measure it against a poll loop;
# - read the production timer loop and name each concern it adds to those twenty lines;
# - say which lock guards what, and why one lock with two Conditions replaces two locks.
#
# **Minutes:** 25.
#
# *"Design an in-process task scheduler. Show the data structure the timer uses, and say
# exactly what the timer thread does while it has nothing to do."*
#
# This notebook answers both halves concept first: the heap, then a twenty-line timer
# queue you can read in one go, run and measured; only then the production loop of
# `lldsched`, with every line it adds explained.

# %%
import heapq
import inspect
import itertools
import threading
import time

from lldsched import FakeClock, OneTime, Priority, Scheduler, SystemClock

# %% [markdown]
# ## 1. The heap: due first, then priority, then arrival
#
# Every queued task is a tuple `(due, priority, sequence, task_id)`. Python compares
# tuples element by element, in C, so `heapq` keeps the earliest due time on top; ties go
# to the lower priority number (`HIGH = 0`), then to whoever arrived first.

# %% tags=["nbval-check-output"]
heap: list[tuple[float, Priority, int, str]] = []
arrivals = [
    (10.0, Priority.NORMAL, "report"),
    (10.0, Priority.HIGH, "alert"),
    (5.0, Priority.LOW, "cleanup"),
    (10.0, Priority.NORMAL, "digest"),
]
for sequence, (due, priority, name) in enumerate(arrivals):
    heapq.heappush(heap, (due, priority, sequence, name))
print([heapq.heappop(heap)[3] for _ in range(len(heap))])

# %% [markdown]
# `report` and `digest` are due together with the same priority: the sequence number, an
# ever-increasing counter, keeps them in arrival order. Without it, the comparison falls
# through to the next element, and two task objects cannot be compared:


# %% tags=["nbval-check-output"]
class Job:
    pass


try:
    broken: list[tuple[float, int, Job]] = []
    heapq.heappush(broken, (10.0, 1, Job()))
    heapq.heappush(broken, (10.0, 1, Job()))
except TypeError as error:
    print("TypeError:", error)

# %% [markdown]
# ## 2. The whole idea in twenty lines
#
# A timer queue needs three things: a heap, a `threading.Condition` (a lock plus a place
# to wait), and two rules. **`pop_due` waits with a timeout equal to the delay until the
# head is due, and re-tests in a `while` after every wake-up** (a wait ends by a notify,
# by its timeout, or spuriously). **`push` notifies when its entry becomes the new head**,
# because every waiter computed its timeout from the old head; `notify_all()`, because
# there may be more than one waiter.


# %%
class TinyTimerQueue:
    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._cond = threading.Condition()  # guards _heap; push notifies a new head
        self._heap = []
        self._sequence = itertools.count()

    def push(self, task, due):
        with self._cond:
            entry = (due, next(self._sequence), task)
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:  # a new head: every waiter's timeout is too long
                self._cond.notify_all()

    def pop_due(self):
        with self._cond:
            while True:  # re-test after every wake-up
                delay = self._heap[0][0] - self._clock() if self._heap else None
                if delay is not None and delay <= 0:
                    return heapq.heappop(self._heap)[2]
                self._cond.wait(delay)  # None: no timeout, only a push can help


# %% [markdown]
# Run it: a consumer thread takes three tasks due 50, 100 and 150 ms from now, pushed out
# of order. How late does each come out?

# %%
timers = TinyTimerQueue()
start = time.monotonic()
for name, delay in [("second", 0.10), ("third", 0.15), ("first", 0.05)]:
    timers.push(name, start + delay)
taken = []
consumer = threading.Thread(target=lambda: taken.extend(timers.pop_due() for _ in range(3)))
consumer.start()
consumer.join(timeout=5)
print("order:", taken)
print(f"the last one came out {(time.monotonic() - start - 0.15) * 1000:.2f} ms after it was due")

# %% [markdown]
# ### Measured: the Condition against a poll loop
#
# The poll loop is the common first answer: wake up every 10 ms, look at the head. Here
# both wait one second for a task due tomorrow, while we count the CPU time the process
# spends. (The numbers are live: they differ from machine to machine.)


# %%
def cpu_during(seconds: float) -> float:
    """Milliseconds of process CPU while this thread waits ``seconds``."""
    before = time.process_time()
    threading.Event().wait(seconds)
    return (time.process_time() - before) * 1000


parked = TinyTimerQueue()
parked.push("tomorrow", time.monotonic() + 86400)
sleeper = threading.Thread(target=parked.pop_due, daemon=True)
sleeper.start()
queue_cpu = cpu_during(1.0)

polled: list[tuple[float, str]] = [(time.monotonic() + 86400, "tomorrow")]
stop = threading.Event()
scans = 0


def poll_loop() -> None:
    global scans
    while not stop.is_set():
        if polled[0][0] <= time.monotonic():
            heapq.heappop(polled)
        scans += 1
        stop.wait(0.01)


poller = threading.Thread(target=poll_loop)
poller.start()
poll_cpu = cpu_during(1.0)
stop.set()
poller.join()
parked.push("release the sleeper", 0)
print(f"Condition.wait : {queue_cpu:6.1f} ms of CPU in 1 s")
print(f"poll loop      : {poll_cpu:6.1f} ms of CPU in 1 s ({scans} scans)")

# %% [markdown]
# The waiting thread is blocked in `Condition.wait(86400)`: the operating system does not
# schedule it at all. The poll loop pays for every scan, and adds up to its interval to
# every task's lateness. At one scan a second that is 86,400 scans a day, and up to a
# second late.
#
# ### Broken on purpose: a push that does not notify
#
# Drop the `notify_all()` and everything still *looks* fine while tasks arrive in order.
# It breaks when the timer is parked on a task twelve hours away and a task due now
# arrives: nobody wakes the timer. The exercise checker of notebook 07 tests exactly this,
# with real threads and a clock it controls; here it is on both versions.


# %%
from exercises import check_wakes_for_a_push


class PushWithoutNotify(TinyTimerQueue):
    def push(self, task, due):
        with self._cond:
            heapq.heappush(self._heap, (due, next(self._sequence), task))


check_wakes_for_a_push(PushWithoutNotify)
check_wakes_for_a_push(TinyTimerQueue)

# %% [markdown]
# ## 3. The production loop, concern by concern
#
# `lldsched`'s timer is the same loop. Read it and its two named steps (the deadlines it
# flags, the instant it wakes at), then the table: every line that is not in the
# twenty-line version answers one concern of a real scheduler.

# %%
for step in (Scheduler._timer_loop, Scheduler._flag_timeouts, Scheduler._wake_at):
    print(inspect.getsource(step))

# %% [markdown]
# | in `_timer_loop` and its steps | the concern it answers |
# | --- | --- |
# | `while self._state is RUNNING` | **shutdown**: `shutdown()` sets the state and notifies `_wake`; the loop re-tests and ends |
# | `monotonic`, `_look_at_clock` | **wall-clock jumps**: due instants are wall-clock, the wait is monotonic; a gap over 1 s between the two is a jump (NTP, suspend), and the heap is re-evaluated (a worker looks too, before it records a run whose finish it read after the clock was set back since the timer's last look) |
# | `deadlines`, `cancel("timeout")` | **timeouts**: a run with a budget has a deadline; when it passes, its cooperative flag goes up (the thread itself cannot be stopped) |
# | `room = pool.room`, `pop_due(now, room)` | **backpressure**: take no more than the bounded hand-off queue can hold; when it is full, wait (`wake = None`) until a worker makes room and notifies |
# | `continue` after a batch | **batches**: every due entry moves in one lock hold, then the loop re-tests |
# | `_idle_waiters`, `_wake_idle()` | **idle waiters**: `wait_idle()` (tests, demos) learns when only tombstones were due |
# | `queue.next_due()` | **tombstones**: dead entries on top are dropped before the head's due time is read |
# | `max_wait`, `wake = now + max_wait` | **suspends**: a `Condition.wait` counts monotonic time, which (on Linux) stops while the machine sleeps; waking at least once a minute notices a suspend or a jump |
# | `coordinator`, `claim(now, room, looked, among, leaving)` | **several processes** on one store: the store hands out what this process may run (leases, notebook 10; `looked`, read before `now`, is when this process starts to trust its claims; `among`, `leaving`: only runs it has room to start, a free worker or coroutine slot); the heap is only the hint of when to wake; with no room, `_unheld` drops the hints of runs another process holds |
# | `writes`, `retry_due(now)` | **a store that fails** (of one process): the rows its failed writes left stale are written again a minute after the last failure, so the outage ends when the store is back, not at the next write of a task that may be a day away |
# | `_hand_out(batch)` | **coroutines**: entries of `async def` tasks go to the scheduler's event loop, the rest to the worker threads |
# | `clock.wait(cond, wake)` | **the wait itself**, through the clock, so that a fake clock can drive a running scheduler |
# | `passed`, `cond.wait(LET_GO)` | **the lock let go**: the wait is the one place where the timer lets the lock go; a wait for an instant that passed while the wake worked returns at once, and twice in a row the timer waits a millisecond all the same, or a wake that always outlasts its bound (a tiny `poll` to a distant store) would hold the lock for good |
#
# The wait goes through the clock. `SystemClock.wait` is `Condition.wait` with the
# remaining delay; `FakeClock.wait` waits with no timeout and is woken by `advance()`,
# which is how a twelve-hour delay is tested in milliseconds:

# %%
print("SystemClock.wait:")
print(inspect.getsource(SystemClock.wait))
print("FakeClock.wait:")
print(inspect.getsource(FakeClock.wait))

# %% [markdown]
# ## 4. Which lock guards what
#
# The scheduler has **one lock** and **two Conditions** on it, waited on by its own threads only:
#
# | Condition | who waits on it | who notifies it |
# | --- | --- | --- |
# | `_wake` | the timer | a push that makes a new head, a new earliest deadline, a worker that half-emptied the hand-off queue, a clock change, shutdown; on a shared store, another process's change, and a settled run whose task has dependents (its end may decide a wait) |
# | the pool's `_not_empty` | the workers | the timer putting a batch, shutdown |
#
# `wait_idle()` / `wait_drained()`, on the caller's thread, wait each on a lock of their
# own (`_idle_waiters`), let go by `_wake_idle()` under the scheduler's lock: the last run
# in flight settling, the timer (only tombstones were due), a cancel, pause, remove or
# reschedule (what was due may be due no more). Not a `Condition.wait` on the scheduler's
# lock: it takes the lock back untimed, and a Ctrl-C that cuts that acquisition would let
# go of the lock the timer or a worker holds.
#
# `shutdown()` waits on `Event`s set under the lock instead (every settled run sets its
# drain's; the event loop's thread sets the coroutine runner's `_settled` when it records
# the last coroutine run), and takes the lock back with a timeout: a `Condition.wait`
# takes its lock back for as long as another thread holds it, and a store write that
# hangs under the lock would hold `shutdown(timeout=1)` for as long as it hangs.
#
# The lock guards all of the scheduler's state: the core state machine (registry,
# statuses, dead letter), the heap, the deadline heap, the hand-off queue and the
# counters. It is **never held while an action or a listener runs**. Lock order: this
# lock, then the event dispatcher's, the store's, the process pool's or an event's.
#
# **Why not two locks, as the first version of this design had** (one for the task
# registry, one for the queue, always taken in that order)? Nearly every operation
# needs both: `cancel` changes a status *and* tombstones an entry, a finished run
# records an outcome *and* pushes the next slot, the timer pops an entry *and* marks its
# task. Two locks taken together buy
# no concurrency, only an ordering rule that one careless call can break (deadlock). And
# user code, the only slow part, runs outside any lock. What that second lock was
# for, *separate waiters*, is what a Condition is: several Conditions share one lock, and
# each wakes only its own kind of waiter (a new head does not wake the workers).
#
# ## 5. One tick, end to end
#
# ```mermaid
# sequenceDiagram
#     participant U as caller
#     participant S as Scheduler (the lock)
#     participant C as SchedulerCore
#     participant Q as TaskQueue (heap)
#     participant T as timer thread
#     participant P as WorkerPool (bounded)
#     participant W as worker
#     U->>S: schedule("report", action, FixedRate(60))
#     S->>C: add() under the lock
#     C->>Q: push(task, due)
#     Q-->>T: notify_all() on _wake (a new head)
#     T->>Q: pop_due(now, room)
#     T->>P: put(batch)
#     P-->>W: notify() on _not_empty
#     W->>C: begin(entry): stale? RUNNING
#     Note over W: the action runs, no lock held
#     W->>C: finish(run, started, finished, error)
#     C->>Q: push(task, next slot)
#     T->>T: clock.wait(_wake, head due)
# ```
#
# ## 6. The early wake-up, on the real scheduler
#
# The timer is parked twelve hours out. A task due *now* is pushed: it becomes the new head
# of the heap, so the push notifies the condition and the timer re-arms at once.

# %%
log_lateness: list[float] = []
with Scheduler(workers=2) as live:
    live.schedule("nightly", lambda: None, OneTime(delay=12 * 3600))
    threading.Event().wait(0.1)  # the timer is parked on the nightly task
    for _ in range(20):
        urgent = live.schedule("urgent", lambda: None, OneTime(delay=0))
        live.wait_idle(timeout=5)
        log_lateness.append(urgent.history[0].lateness)
median = sorted(log_lateness)[len(log_lateness) // 2]
print(f"urgent ran {median * 1000:.2f} ms after it was due (median of 20)")

# %% [markdown]
# ## 7. Tombstones instead of removal
#
# Cancelling a task in the middle of a heap would cost O(n). Instead, each push gives the
# task a new *generation* (the entry's sequence number) and an entry is live only while its
# task's generation matches. `cancel` clears the generation: the entry stays in the heap as
# a tombstone and is dropped when it reaches the top. When tombstones pass 40 % of the live
# entries (in a heap of at least 64), a compaction starts: each later operation moves 64
# entries into a fresh heap and drops the tombstones among them, so no single call pays for
# the whole heap. A fake clock keeps the numbers readable.

# %% tags=["nbval-check-output"]
demo = Scheduler(workers=1, clock=FakeClock(0))
for name, delay, priority in [
    ("report", 60, Priority.NORMAL),
    ("alert", 60, Priority.HIGH),
    ("cleanup", 30, Priority.LOW),
    ("digest", 60, Priority.NORMAL),
]:
    demo.schedule(name, lambda: None, OneTime(delay=delay), priority=priority)
print([(t.name, t.next_run_at) for t in demo.pending()])
report = next(t for t in demo.tasks() if t.name == "report")
demo.cancel(report.id)
print(demo.queue_stats(), "->", [t.name for t in demo.pending()])
stopped = demo.shutdown()

# %% [markdown]
# One more room beside the heap: an entry that is **already due when it is pushed** (a
# one-off task for now, a `run_now`) joins a FIFO *lane* instead, as asyncio's
# `call_soon` puts a callback in its ready deque rather than its timer heap. A push and a
# pop there cost O(1) instead of O(log n) comparisons. The order stays exact: an entry
# joins the lane only if it sorts after the lane's last entry (else the heap takes it),
# and every reader takes the smaller of the two heads.

# %% [markdown]
# ## 8. Mistakes worth a minute in the interview
#
# * **A poll loop**: CPU and latency, as measured above.
# * **A push that does not notify**: a timer parked on a far task sleeps through a near one.
# * **`notify()` where `notify_all()` is needed**: with more than one waiter, `notify()`
#   wakes one; the others keep timeouts computed from the old head.
# * **Not re-testing the predicate after `wait` returns**: always
#   `while not ready: cond.wait(...)`.
# * **Removing from the middle of the heap** (O(n)) instead of tombstoning.
# * **Stopping the pool before the timer** at shutdown: the timer then submits into a closed
#   pool. `lldsched` stops timing first, then drains the pool.
#
# ## Check yourself
#
# 1. Two tasks are due at the same instant with the same priority. What decides which runs
#    first, and what goes wrong without it?
# 2. The timer waits with a timeout of 12 h. Name every event that must wake it early in
#    `lldsched`, and say which of them the twenty-line queue also has.
# 3. Why does the scheduler use one lock with two Conditions instead of a registry lock
#    and a queue lock taken in order?
#
# <details><summary>Answers</summary>
#
# 1. The sequence number, an ever-increasing counter: the earlier arrival runs first.
#    Without it the tuple comparison reaches the task objects, which cannot be compared
#    (`TypeError`), and equal entries lose their arrival order.
# 2. A push that makes a new head, a new earliest run deadline, a worker making room in a
#    full hand-off queue, a change of a fake clock, and shutdown (and on a store several
#    processes share, another process's change). The twenty-line queue has only the
#    first. (On the system clock lldsched never waits the whole 12 h anyway: it looks
#    again every `max_wait`, 60 s, for a suspend or a wall-clock jump.)
# 3. Almost every operation touches both the registry and the heap, so two locks would be
#    taken together anyway: no concurrency gained, and a lock order to get wrong. User code
#    runs outside the lock. The Conditions keep the waiters apart: the timer and the
#    workers are each woken only for their own reason (and idle waiters, on locks of their
#    own, only when the scheduler may have gone idle).
#
# </details>
#
# [contents](00-index.ipynb) · [next: 02 · Schedules and cron](02-schedules-and-cron.ipynb)
