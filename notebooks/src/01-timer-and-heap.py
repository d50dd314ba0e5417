# %% [markdown]
# # 01 · The timer and the heap
#
# *"Design an in-process task scheduler. Show the data structure the timer uses, and say
# exactly what the timer thread does while it has nothing to do."*
#
# This notebook answers both halves of that question with the real code of `lldsched`,
# measured live: the min-heap keyed on `(due, priority, sequence)`, why the sequence
# field exists, a timer that blocks on a `Condition` instead of polling, and the early
# wake-up that makes a task due *now* run now.

# %%
import heapq
import inspect
import threading
import time

from lldsched import FakeClock, OneTime, Priority, Scheduler

# %% [markdown]
# ## 1. The heap: due first, then priority, then arrival
#
# Every queued task is a tuple `(due, priority, sequence, task_id)`. Python compares
# tuples element by element, in C, so `heapq` keeps the earliest due time on top; ties go
# to the lower priority number (`HIGH = 0`), then to whoever arrived first. The entry names
# its task by id, not by the object: a tuple of numbers and strings is one object fewer for
# Python's garbage collector to track, about a sixth of the cost of registering 100,000
# tasks (`benchmarks/bench_scale.py`).

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
# A scheduler's heap, seen from outside: `pending()` lists the live entries in the order
# they will run. A fake clock keeps the numbers readable and the same on every run.

# %% tags=["nbval-check-output"]
clock = FakeClock(0)
demo = Scheduler(workers=1, clock=clock)
for name, delay, priority in [
    ("report", 60, Priority.NORMAL),
    ("alert", 60, Priority.HIGH),
    ("cleanup", 30, Priority.LOW),
    ("digest", 60, Priority.NORMAL),
]:
    demo.schedule(name, lambda: None, OneTime(delay=delay), priority=priority)
print([(t.name, t.next_run_at) for t in demo.pending()])

# %% [markdown]
# ### Tombstones instead of removal
#
# Cancelling a task in the middle of a heap would cost O(n). Instead, each push gives the
# task a new *generation* (the entry's sequence number) and an entry is live only while its
# task's generation matches. `cancel` clears the generation: the entry stays in the heap as
# a tombstone and is dropped when it reaches the top. When tombstones outnumber live entries
# (in a heap of at least 64), the heap is rebuilt from the live ones.

# %% tags=["nbval-check-output"]
report = next(t for t in demo.tasks() if t.name == "report")
demo.cancel(report.id)
print(demo.queue_stats(), "->", [t.name for t in demo.pending()])
demo.shutdown()

# %% [markdown]
# ## 2. The timer loop
#
# This is the whole timer thread. It holds the scheduler's lock, moves every due entry into
# the workers' bounded hand-off queue, and otherwise waits on a `Condition` until the head
# is due (`clock.wait(cond, wake)`), or until something notifies it. It never sleeps for a
# fixed interval, and it re-tests everything after each wake-up: a wait can end by
# a notify, by its timeout, or spuriously.

# %%
print(inspect.getsource(Scheduler._timer_loop))

# %% [markdown]
# ## 3. `Condition.wait` against a poll loop, measured
#
# The poll loop is the common first answer: wake up every 10 ms, scan for due tasks. Here
# both approaches watch 1,000 tasks parked a day out for one second, and we count the CPU
# time the process spends. (The numbers are live: they differ from machine to machine.)


# %%
def cpu_during(seconds: float) -> float:
    """Milliseconds of process CPU while this thread waits ``seconds``."""
    before = time.process_time()
    threading.Event().wait(seconds)
    return (time.process_time() - before) * 1000


idle = Scheduler(workers=4).start()
for n in range(1000):
    idle.schedule(f"parked-{n}", lambda: None, OneTime(delay=86400))
threading.Event().wait(0.2)  # let the timer park
scheduler_cpu = cpu_during(1.0)
idle.shutdown()

due_times = [time.time() + 86400] * 1000
stop = threading.Event()
scans = 0


def poll_loop() -> None:
    global scans
    while not stop.is_set():
        now = time.time()
        _ = [t for t in due_times if t <= now]
        scans += 1
        stop.wait(0.01)


poller = threading.Thread(target=poll_loop)
poller.start()
poll_cpu = cpu_during(1.0)
stop.set()
poller.join()
print(f"idle scheduler : {scheduler_cpu:6.1f} ms of CPU in 1 s")
print(f"poll loop      : {poll_cpu:6.1f} ms of CPU in 1 s ({scans} scans)")

# %% [markdown]
# The scheduler's timer is blocked in `Condition.wait(86400 s)`: the operating system does
# not schedule it at all. The poll loop pays for every scan, and it adds up to its polling
# interval of latency to every task: a task due *now* still waits for the next scan.
# At one scan a second that is 86,400 scans a day, and up to a second late.

# %% [markdown]
# ## 4. The early wake-up
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
# ## 5. Mistakes worth a minute in the interview
#
# * **A poll loop**: CPU and latency, as measured above.
# * **`notify()` where `notify_all()` is needed**: with more than one waiter, `notify()` may
#   wake a thread that has nothing to do with the change, and the one that should wake
#   sleeps on.
# * **Not re-testing the predicate after `wait` returns**: a wait ends by a notify, by its
#   timeout, or spuriously. Always `while not ready: cond.wait(...)`.
# * **Removing from the middle of the heap** (O(n)) instead of tombstoning.
# * **Stopping the pool before the timer** at shutdown: the timer then submits into a closed
#   pool. `lldsched` stops timing first, then drains the pool.
#
# Next: [02 · schedules and cron](02-schedules-and-cron.ipynb).
