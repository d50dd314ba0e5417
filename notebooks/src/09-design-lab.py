# %% [markdown]
# # 09 · The design lab: switch a decision off and watch what breaks
#
# [previous: 08 · Testing a scheduler](08-testing-a-scheduler.ipynb) · [contents](00-index.ipynb) · [next: 10 · When one process is not enough](10-when-one-process-is-not-enough.ipynb)
#
# **Objectives**
#
# - switch off each of the scheduler's eleven design decisions, one at a time, and see the
#   consequence measured instead of asserted;
# - tell the failures a fake clock or the simulation pins down exactly from those that
#   only show as ratios of real time;
# - name the test that catches each broken variant, so you could defend the decision in
#   an interview with the failure in hand;
# - plug in a variant of your own and run it through the same experiments.
#
# **Minutes:** 25 (read and run; a toggle per section to flip).
#
# Interview write-ups defend these decisions in prose. Here each one is an experiment.
# Every broken variant is the **real** scheduler with **one collaborator swapped**: a
# clock whose `wait` polls, a queue whose push does not notify, a queue that removes
# instead of tombstoning, a pool condition whose `notify_all` wakes one, a listener called
# under the lock... never a copy of the scheduler. The variants live in `lldsched/lab/`,
# and each plugs in through a seam of the real code (`Scheduler.queue_type`,
# `pool_type`, `dispatcher_type`, `WorkerPool.condition_type`) or what the scheduler
# already takes (a clock, `handoff=`). Two stand beside it instead: the overrun
# experiment runs the real state machine on the simulation, and the timing wheel is
# timed against the real heap on its own.
#
# Each section has a one-line claim, a toggle (flip it and the cell reruns), the same
# experiment as a plain call below it, the measured consequence, and the tests that catch
# it. Outputs on a fake clock or the simulation are the same on every run; timings vary
# with the machine, so read them as ratios within one run. The same experiments run from
# a shell: `python -m lldsched lab <decision>`.
#
# *Run All* takes half a minute or more, unlike the other notebooks' few seconds: the
# real-time experiments last as long as what they measure. The timer section alone lets
# four timers idle half a second each and times sixty short waits (about 7 s); listener
# latency (three bursts each way, about 7 s), the shutdown orders and the timing wheel
# take a few seconds more.

# %%
from IPython.display import display
from ipywidgets import Checkbox, Dropdown

from lldsched import Scheduler
from lldsched.core.duequeue import TaskQueue
from lldsched.lab import DECISIONS, VariantError, decision
from lldsched.lab.dispatch import (
    InlineListenerScheduler,
    measure_listener_latency,
    runs_while_a_listener_blocks,
)
from lldsched.lab.entries import (
    IdTieScheduler,
    RemovingQueue,
    TaskTieScheduler,
    cancel_comparisons,
    measure_cancel_cost,
    run_a_tie,
)
from lldsched.lab.handoff import UNBOUNDED, run_a_burst
from lldsched.lab.overrun import OVERRUN_STRATEGIES, simulate_overrun_day
from lldsched.lab.shutdown import (
    CountingPool,
    ExecutorPoolFirstScheduler,
    ExecutorTimerFirstScheduler,
    NotifyOnePool,
    PoolFirstScheduler,
    TimerFirstScheduler,
    run_shutdown_while_work_falls_due,
    run_shutdown_with_idle_workers,
)
from lldsched.lab.timer import (
    IfScheduler,
    SilentPushScheduler,
    measure_polling,
    run_due_now_behind_parked_timer,
    run_early_on_spurious_wakeup,
)
from lldsched.lab.wheel import TimingWheel, compare_wheel_and_heap, pop_order_within_a_tick
from lldsched.views.interact import interact
from lldsched.views.plots.lab import (
    cancel_cost,
    listener_latency,
    overrun_pileup,
    polling_tradeoff,
    wheel_costs,
)


def caught_by(key: str) -> None:
    """The tests that catch the decision switched off: the lab's, and the real code's."""
    row = decision(key)
    print("the lab's test:      ", row.lab_test)
    print("the real code's test:", row.production_test)


# %% [markdown]
# The table of the lab: each decision, and what switching it off means.

# %% tags=["nbval-check-output"]
for row in DECISIONS:
    print(f"{row.title:<24} -> {row.switched_off}")

# %% [markdown]
# <a id="lab-wait"></a>
# ## 1. `Condition.wait(timeout)`, not a poll
#
# **Claim:** the timer sleeps until the head is due, so an idle scheduler wakes at most
# once a minute (the bounded wait that notices a wall-clock jump) and a run starts when it
# is due.
#
# Switched off: a `PollingClock`, whose `wait` releases the lock, sleeps a fixed interval
# and ignores notifications. Each strategy watches a task parked a day out for half a
# second (wake-ups, and the whole process's CPU, per idle second: what a poll adds to
# `Condition.wait`'s is the timer's), then runs fifteen tasks due in 20 to 120 ms
# (median lateness, and the middle half of the fifteen). The wake-ups are a count: the
# Condition makes none, on any machine; a poll makes one per interval it sleeps: a
# little under ten a second at 100 ms and a hundred at 10 ms, and at 1 ms up to a
# thousand, a few hundred where a busy machine oversleeps each millisecond. The
# lateness is real time: every strategy pays the thread's own wake-up, and a poll adds
# up to one interval, tens of milliseconds at 100 ms. At 1 ms that share is smaller
# than a busy machine's wake-up noise, so there the two medians can come out either way
# round (one run in three on a loaded two-core machine): read them with their spread.

# %%
timers = measure_polling()


def show_timer(strategy: str = "Condition.wait") -> None:
    for result in timers:
        if result.label == strategy:
            print(
                f"{result.label}: {result.wakeups_per_s:.0f} wake-ups and "
                f"{result.cpu_ms_per_s:.1f} ms of CPU per idle second; "
                f"a run due in 20-120 ms starts {result.lateness_ms:.2f} ms late (median; "
                f"middle half {result.lateness_low_ms:.2f}-{result.lateness_high_ms:.2f} ms)"
            )


timer_toggle = interact(show_timer, strategy=Dropdown(options=[r.label for r in timers]))

# %% [markdown]
# The plain call, every strategy, and the trade-off drawn: the further left, the less an
# idle scheduler costs; the lower, the sooner a due run starts (a bar spans the middle
# half of the fifteen runs).

# %%
for result in timers:
    show_timer(result.label)
polling_tradeoff(
    [(r.label, r.wakeups_per_s, r.lateness_ms) for r in timers],
    [(r.lateness_low_ms, r.lateness_high_ms) for r in timers],
)

# %% tags=["nbval-check-output"]
caught_by("wait")

# %% [markdown]
# <a id="lab-push"></a>
# ## 2. A push that makes a new head notifies the timer
#
# **Claim:** a task due now runs now, even when the timer is parked twelve hours out.
#
# Switched off: a `SilentPushQueue`, the real queue given no condition to notify. On a
# fake clock the timer parks on a task due in 12 h; a task due *now* is scheduled. After
# half a second of real time the clock is moved 12 h on, and the task's lateness is read:
# exactly zero, or exactly twelve hours.


# %%
def push_lab(silent: bool = False) -> None:
    variant = SilentPushScheduler if silent else Scheduler
    # How long to give the run: a broken variant spends it all, the real one returns at once.
    outcome = run_due_now_behind_parked_timer(variant, patience=0.5 if silent else 5.0)
    kind = "silent push" if silent else "push notifies"
    print(
        f"{kind}: the task due now ran at once: {outcome.ran_in_time}; "
        f"it started {outcome.lateness / 3600:g} h late"
    )


push_toggle = interact(push_lab, silent=Checkbox(value=False, description="silent push"))

# %% tags=["nbval-check-output"]
push_lab(silent=True)
push_lab(silent=False)
caught_by("push")

# %% [markdown]
# <a id="lab-notify-all"></a>
# ## 3. `notify_all` when every waiter must hear
#
# **Claim:** a `notify` wakes one waiter; when a change matters to all of them, only
# `notify_all` reaches the one that cares.
#
# Four workers wait on one condition for items. `put` wakes one worker per item
# (`notify(n)`), which is right. Shutdown queues one sentinel per worker and must wake them
# *all*. Switched off: the pool's condition is a `NotifyOneCondition`, whose `notify_all`
# wakes a single waiter. The other workers sleep beside their sentinels, and `shutdown`
# hangs until its timeout: the bounded wait is what catches it. (The timer's condition has
# a single waiter, so there `notify` and `notify_all` agree.)


# %%
def notify_lab(notify_one: bool = False) -> None:
    pool = NotifyOnePool if notify_one else CountingPool
    timeout = 0.5 if notify_one else 5.0  # a hang spends it all, a clean stop returns at once
    outcome = run_shutdown_with_idle_workers(pool, workers=4, timeout=timeout)
    call = "notify" if notify_one else "notify_all"
    print(
        f"{call}: shutdown stopped every thread within {timeout:g} s: {outcome.stopped}; "
        f"workers still asleep: {outcome.workers_left} of 4"
    )


notify_toggle = interact(notify_lab, notify_one=Checkbox(value=False, description="notify"))

# %% tags=["nbval-check-output"]
notify_lab(notify_one=True)
notify_lab(notify_one=False)
caught_by("notify-all")

# %% [markdown]
# <a id="lab-while"></a>
# ## 4. Re-test in `while`, not `if`
#
# **Claim:** a wait can end by a notify, a timeout or for no reason at all; the timer
# re-tests the clock before it runs anything.
#
# Switched off: an `IfQueue`, which believes the timer's first test: after a wait, the
# next pop hands out the head whatever the clock says. On a fake clock a task is due in
# 60 s; the timer parks; the clock wakes it once without moving time (a spurious
# wake-up).


# %%
def while_lab(use_if: bool = False) -> None:
    variant = IfScheduler if use_if else Scheduler
    outcome = run_early_on_spurious_wakeup(variant, patience=5.0 if use_if else 0.5)
    test = "if" if use_if else "while"
    when = "on time" if outcome.lateness == 0 else f"{-outcome.lateness:g} s early"
    print(f"{test}: ran on the spurious wake-up: {outcome.ran_in_time}; it ran {when}")


while_toggle = interact(while_lab, use_if=Checkbox(value=False, description="if"))

# %% tags=["nbval-check-output"]
while_lab(use_if=True)
while_lab(use_if=False)
caught_by("while")

# %% [markdown]
# <a id="lab-tombstones"></a>
# ## 5. Tombstones, not removal
#
# **Claim:** cancel marks the entry dead in O(1); taking it out of a heap is O(n).
#
# Switched off: a `RemovingQueue`, whose cancel finds the entry, `list.remove`s it and
# re-`heapify`s. First the count that does not vary: how many comparisons of due times
# each cancel makes (the due times count them; `list.remove` tests entries for equality
# and `heapify` orders them, so a removal makes several per entry). Then the CPU time
# per cancel from 1,000 to 100,000 entries, measured in one run.

# %% tags=["nbval-check-output"]
for size in (1_000, 10_000):
    print(
        f"heap of {size:>6,}: tombstone {cancel_comparisons(TaskQueue, size):.0f} comparisons, "
        f"removal {cancel_comparisons(RemovingQueue, size):,.0f} comparisons per cancel"
    )

# %%
costs = measure_cancel_cost()


def tombstone_lab(size: int = 100_000) -> None:
    for cost in costs:
        if cost.size == size:
            print(
                f"heap of {size:,}: tombstone {cost.tombstone_us:.2f} µs, removal "
                f"{cost.remove_us:,.0f} µs per cancel: {cost.ratio:,.0f}x"
            )


tombstone_toggle = interact(tombstone_lab, size=Dropdown(options=[c.size for c in costs]))

# %%
tombstone_lab(10_000)
cancel_cost([c.size for c in costs], [c.tombstone_us for c in costs], [c.remove_us for c in costs])

# %% tags=["nbval-check-output"]
caught_by("tombstones")

# %% [markdown]
# <a id="lab-sequence"></a>
# ## 6. The sequence field
#
# **Claim:** an ever-increasing sequence number breaks every tie, so the heap never
# compares two tasks and equal-priority tasks run first in, first out.
#
# Switched off: entries whose third field holds the task (`TaskTieQueue`), or ties and
# lets the task id decide (`IdTieQueue`). Twelve equal-priority tasks are due at the same
# instant on a fake clock.

# %%
ENTRIES = {
    "(due, priority, sequence, id)": Scheduler,
    "(due, priority, task)": TaskTieScheduler,
    "(due, priority, task_id)": IdTieScheduler,
}


def sequence_lab(entry: str = "(due, priority, sequence, id)") -> None:
    outcome = run_a_tie(ENTRIES[entry])
    if outcome.error is not None:
        print(f"{entry}: registering the second task raised {outcome.error}")
    else:
        print(f"{entry}: first in, first out: {outcome.fifo}")
        print("   ran:", " ".join(outcome.order))


sequence_toggle = interact(sequence_lab, entry=Dropdown(options=list(ENTRIES)))

# %% tags=["nbval-check-output"]
for entry in ENTRIES:
    sequence_lab(entry)
caught_by("sequence")

# %% [markdown]
# <a id="lab-handoff"></a>
# ## 7. A bounded hand-off
#
# **Claim:** the timer hands the workers only a few entries at a time; the rest keep their
# place in the heap, where a HIGH-priority task can still pass them.
#
# Switched off: `handoff=` larger than any burst. On a fake clock 2,000 tasks fall due at
# once on one worker, held at a gate until the timer has handed off all it will; then a
# HIGH task falls due. Entries out of the heap are memory the heap no longer orders.


# %%
def handoff_lab(bounded: bool = True) -> None:
    outcome = run_a_burst(None if bounded else UNBOUNDED, burst=2_000)
    kind = "bounded (16 per worker)" if bounded else "unbounded"
    print(
        f"{kind}: {outcome.handed_off:,} of 2,000 entries out of the heap; "
        f"the HIGH task ran after {outcome.runs_before_high:,} runs"
    )


handoff_toggle = interact(handoff_lab, bounded=Checkbox(value=True, description="bounded"))

# %% [markdown]
# The plain call, both ways (a worker may take one entry while the timer hands off, so
# the bounded figure is 16 or 17):

# %%
handoff_lab(bounded=False)
handoff_lab(bounded=True)

# %% tags=["nbval-check-output"]
caught_by("handoff")

# %% [markdown]
# <a id="lab-overrun"></a>
# ## 8. An overrun policy, not "keep queueing"
#
# **Claim:** a fixed-rate job whose runs outlast its period has one entry at a time, and
# its policy says what happens to the slots it missed: no run piles up behind it.
# (Which policy is a choice: `CATCH_UP` owes every slot, so a job that *always* overruns
# falls further behind all day; it suits an occasional overrun.)
#
# A simulated day on two workers: a job every 60 s whose runs take 150 s, beside a
# heartbeat every 10 s. `SKIP` runs the next slot after the finish; `CATCH_UP` runs every
# missed slot, back to back, and falls ever further behind, on one worker. Switched off,
# "keep queueing" submits a run per slot whatever is still running, as a naive cron loop
# does: the job's runs overlap on both workers, and the heartbeat, queued behind them by
# due time, starves. Virtual time: the same on every run.

# %%
days = {strategy: simulate_overrun_day(strategy) for strategy in OVERRUN_STRATEGIES}


def overrun_lab(strategy: str = "SKIP") -> None:
    day = days[strategy]
    print(
        f"{strategy}: {len(day.job):,} runs of the job, up to {day.most_at_once} at once; at "
        f"the end of the day the job is {day.job_late_at_end / 3600:.1f} h behind and "
        f"{day.owed} slots are owed; the heartbeat was up to "
        f"{day.heartbeat_worst / 3600:.1f} h late"
    )


overrun_toggle = interact(overrun_lab, strategy=Dropdown(options=list(OVERRUN_STRATEGIES)))

# %% tags=["nbval-check-output"]
for strategy in OVERRUN_STRATEGIES:
    overrun_lab(strategy)

# %%
overrun_pileup({strategy: (day.job, day.heartbeat) for strategy, day in days.items()})

# %% tags=["nbval-check-output"]
caught_by("overrun")

# %% [markdown]
# <a id="lab-shutdown"></a>
# ## 9. Shutdown stops the timer first
#
# **Claim:** stop the producer before the consumers, and no due entry is ever popped into
# a closed pool.
#
# On a fake clock, one worker is busy (held at a gate) when shutdown begins; while the
# pool closes, ten tasks fall due. Switched off, the pool is stopped before the timer.
# The real pool also refuses work once shut down (its `room` drops to 0), a second line
# of defence, so "pool first" loses nothing on it. On a pool that refuses work only when
# handed some, as `concurrent.futures.ThreadPoolExecutor` does, the order alone decides:
# pool first, the still-running timer pops the ten entries, the pool refuses them, the
# timer thread dies holding them, and they are gone.

# %%
ORDERS = {
    "timer first (the real scheduler)": TimerFirstScheduler,
    "pool first, real pool": PoolFirstScheduler,
    "timer first, executor-like pool": ExecutorTimerFirstScheduler,
    "pool first, executor-like pool": ExecutorPoolFirstScheduler,
}


def shutdown_lab(order: str = "timer first (the real scheduler)") -> None:
    outcome = run_shutdown_while_work_falls_due(ORDERS[order], burst=10)
    print(
        f"{order}: {outcome.queued} kept in the heap, {outcome.lost} lost; "
        f"timer thread died: {outcome.timer_died}; wait_idle returns: {outcome.idle_after}"
    )


shutdown_toggle = interact(shutdown_lab, order=Dropdown(options=list(ORDERS)))

# %% tags=["nbval-check-output"]
for order in ORDERS:
    shutdown_lab(order)
caught_by("shutdown")

# %% [markdown]
# <a id="lab-listeners"></a>
# ## 10. Listeners off the lock
#
# **Claim:** listeners run on the dispatcher's own thread, so a slow one delays no run.
#
# Switched off: an `InlineDispatcher`, which calls each listener inside `publish`, and the
# core publishes under the scheduler's one lock. First, on a fake clock: a listener
# blocks on the event of task A starting; does task B, due at the same instant on a second
# worker, run meanwhile?


# %%
def listener_lab(under_lock: bool = False) -> None:
    variant = InlineListenerScheduler if under_lock else Scheduler
    ran = runs_while_a_listener_blocks(variant, patience=0.5 if under_lock else 5.0)
    where = "under the lock" if under_lock else "off the lock"
    print(f"listener {where}: B ran while the listener was blocked: {ran}")


listener_toggle = interact(
    listener_lab, under_lock=Checkbox(value=False, description="under the lock")
)

# %% tags=["nbval-check-output"]
listener_lab(under_lock=True)
listener_lab(under_lock=False)

# %% [markdown]
# Then in real time: twenty runs due together on four workers, a listener taking 0 to 5
# ms per event. Under the lock every event of every run waits for it in turn. Each way
# runs three bursts and keeps the quietest (the smallest median): other load on the
# machine only ever adds lateness, and one burst on a busy machine has shown the runs
# off the lock the later ones.

# %%
points = measure_listener_latency()
listener_latency(
    [p.delay_ms for p in points], [p.off_lock_ms for p in points], [p.under_lock_ms for p in points]
)

# %% tags=["nbval-check-output"]
caught_by("listeners")

# %% [markdown]
# <a id="lab-wheel"></a>
# ## 11. A heap, not a timing wheel
#
# **Claim:** a heap gives the exact (due, priority, arrival) order at O(log n) per
# operation; a job scheduler keeps it.
#
# The alternative is a hierarchical timing wheel (Varghese & Lauck, 1987), the structure
# behind kernel and network timers: four wheels of 64 buckets, 1 ms ticks. A push drops
# the entry in a bucket (no comparison at all); time walks tick by tick, moving entries
# down a wheel as it reaches them. `TimingWheel` in `lldsched/lab/wheel.py` has the real
# queue's core operations (`push`, `discard`, `pop_due`, `next_due`, tombstones), not
# plugged into a scheduler. It rounds a due instant up to its tick, as kernel timers do
# (never early, at most a tick late), and wherever no two timers share a tick it hands
# out the same entries in the same order as the heap (`tests/test_lab_fairness.py`): two
# correct queues are timed. The comparison inserts timers due over the next 60 s, then
# pops them all, in the real heap and in the wheel (CPU per timer, one run). Pick the
# largest size: 1,000,000 takes about half a minute, more on a busy machine.


# %%
def wheel_lab(largest: int = 100_000) -> None:
    sizes = tuple(n for n in (1_000, 10_000, 100_000, 1_000_000) if n <= largest)
    results = compare_wheel_and_heap(sizes)
    for r in results:
        print(
            f"{r.size:>9,} timers, the wheel's cost over the heap's: insert "
            f"{r.wheel_insert_us / r.heap_insert_us:.1f}x, pop "
            f"{r.wheel_pop_us / r.heap_pop_us:.1f}x ({r.ticks:,} ticks walked)"
        )
    insert = {"heap": [r.heap_insert_us for r in results]}
    insert["wheel"] = [r.wheel_insert_us for r in results]
    pop = {"heap": [r.heap_pop_us for r in results], "wheel": [r.wheel_pop_us for r in results]}
    display(wheel_costs([r.size for r in results], insert, pop))


sizes = Dropdown(options=[10_000, 100_000, 1_000_000], value=10_000, description="largest")
wheel_toggle = interact(wheel_lab, largest=sizes)

# %% [markdown]
# The plain call, to 100,000 timers:

# %%
wheel_lab(100_000)

# %% [markdown]
# Read the ratios, not the microseconds. The wheel's push is O(1) but it is Python
# bytecode, and the heap's O(log n) is C (`heapq`): in CPython the heap inserts faster at
# every size. Popping, the wheel pays for every tick it walks (60,000 of them for 60 s at
# 1 ms) whether or not a bucket holds anything, so with few timers the heap wins by far.
# The more timers share the walk, the less it costs each, while the heap's pop grows with
# log n: the two meet around 100,000 timers (on which side of 1x varies from run to run:
# 0.6x to 1.4x on a busy two-core machine), and at 1,000,000 (pick it above) the wheel
# pops for under two thirds of the heap's cost, in every run (0.45x to 0.66x there, under
# half in some runs on a machine busier still). That is the wheel's
# home: a network stack with a million connection timeouts a few seconds out, most
# cancelled before they fire. A job scheduler's timers are few, spread over hours or
# days (a day at 1 ms is 86.4 million ticks, nearly all empty), and ordered by priority
# too, which a bucket does not keep:

# %% tags=["nbval-check-output"]
print("three timers due together, pushed LOW, NORMAL, HIGH:")
print("  heap pops ", pop_order_within_a_tick(TaskQueue()))
print("  wheel pops", pop_order_within_a_tick(TimingWheel()))
caught_by("wheel")

# %% [markdown]
# <a id="lab-yours"></a>
# ## 12. A variant of your own
#
# The experiments that take a `scheduler_type` run any variant: subclass the real
# collaborator (`TaskQueue`, `CountingPool`, `EventDispatcher`), name it on a
# `Scheduler` subclass through its seam (`queue_type`, `pool_type`, `dispatcher_type`),
# and pass the class, as `SilentPushScheduler` and `IfScheduler` are passed above. Start
# from the real queue unchanged, break one thing, and rerun:


# %% tags=["nbval-check-output"]
class MyQueue(TaskQueue):
    """Yours: the real queue, until you override push, pop_due or discard."""


class MyScheduler(Scheduler):
    queue_type = MyQueue


def when(lateness: float) -> str:
    if lateness == 0:
        return "on time"
    return f"{abs(lateness):g} s " + ("late" if lateness > 0 else "early")


pushed = run_due_now_behind_parked_timer(MyScheduler, patience=5.0)
print(f"push: the task due now ran at once: {pushed.ran_in_time}; it ran {when(pushed.lateness)}")
woken = run_early_on_spurious_wakeup(MyScheduler, patience=0.5)
print(f"while: ran on the spurious wake-up: {woken.ran_in_time}; it ran {when(woken.lateness)}")
print("sequence: first in, first out:", run_a_tie(MyScheduler).fifo)

# %% [markdown]
# A variant may run a task late, or early: that is what the experiments measure. One
# that loses a task, kills the timer thread, delivers no event or raises in `shutdown`
# breaks what every variant keeps, and the experiment stops within seconds with a
# `VariantError` that names it (its own exception as the cause), not a hang. A queue
# whose `pop_due` forgot to hand anything out:


# %% tags=["nbval-check-output"]
class ForgetfulQueue(TaskQueue):
    def pop_due(self, now: float, limit: int) -> list:
        return []  # forgot to hand the due entries out


class ForgetfulScheduler(Scheduler):
    queue_type = ForgetfulQueue


try:
    run_due_now_behind_parked_timer(ForgetfulScheduler, patience=0.5)
except VariantError as error:
    print(error)

# %% [markdown]
# ## Check yourself
#
# 1. A scheduler polls every 10 ms instead of waiting on a `Condition`. Which test of
#    this kit still passes, and which number gets worse?
# 2. Why does the lab swap a collaborator instead of editing the scheduler, and why does
#    that make the lab's tests trustworthy?
# 3. Two equal-priority tasks due at the same instant: what goes wrong with heap entries
#    of `(due, priority, task)`, and what with `(due, priority, task_id)`?
#
# <details><summary>Answers</summary>
#
# 1. Every test of *what* runs still passes, a little late: the task due now still runs,
#    up to 10 ms after its time. What gets worse is the idle cost, about a hundred
#    wake-ups a second for nothing, and the lateness (section 1). Only a test of what the
#    idle timer does catches a poll: the lab's counts its wake-ups, the real code's checks
#    the deadline it parks with (the bounded wait, not 10 ms). A test that asserts a task
#    due now runs *before* a fake clock moves catches a silent push, not a poll.
# 2. A swapped collaborator changes exactly one decision and runs all the rest of the real
#    code, through a seam the production path builds once, in the constructor. A copy of
#    the scheduler could drift from the real one; this cannot. And each lab test asserts
#    both halves, that the broken variant fails and that the real runtime does not, so the
#    lab cannot quietly become a no-op.
# 3. With the task in the entry, the tie falls through to comparing two task objects, and
#    `heappush` raises `TypeError` at registration. With the id, the tie goes to the
#    smaller string: `job-10` runs before `job-2`, breaking first-in-first-out. The
#    sequence field, unique and increasing, ends every comparison before the id.
#
# </details>
#
# [previous: 08 · Testing a scheduler](08-testing-a-scheduler.ipynb) · [contents](00-index.ipynb) · [next: 10 · When one process is not enough](10-when-one-process-is-not-enough.ipynb)
