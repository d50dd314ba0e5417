# %% [markdown]
# # 06 · Persistence and shutdown
#
# [previous: 05 · Live control](05-live-control.ipynb) · [contents](00-index.ipynb) · [next: 07 · The interview, in 45 minutes](07-interview-walkthrough.ipynb)
#
# **Objectives**
#
# - name the store seam and say when a scheduler writes through it;
# - shut a scheduler down in the right order, and choose between drain and drop;
# - predict what each misfire policy does with the slots a scheduler slept through.
#
# **Minutes:** 15 (read and run).
#
# Three questions every scheduler design meets after the happy path:
#
# 1. **Where does the state live?** Behind a `TaskStore`: every status change is written
#    through it, with the run's record.
# 2. **How does it stop?** Timer first, then the pool: drain what is queued, or drop it.
#    A run in flight on a worker thread always finishes (Python cannot stop a thread); a
#    run in a worker process (`isolation="process"`) is killed when it is not drained.
# 3. **What happens after a crash or a night of downtime?** A scheduler opened on a
#    durable store gets its tasks back, runs again what was in flight (at-least-once), and
#    applies each task's misfire policy to the slots it slept through.

# %%
import tempfile
import threading
from datetime import UTC, datetime
from pathlib import Path

import jobs

from lldsched import (
    CronSchedule,
    ExecutionRecord,
    FakeClock,
    InMemoryTaskStore,
    Misfire,
    MisfirePolicy,
    OneTime,
    Scheduler,
    SqliteTaskStore,
    TaskSnapshot,
)

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def hhmm(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%H:%M")


# %% [markdown]
# ## 1. The store seam: every transition written through
#
# A store is the Repository of the design: `save(snapshot, record)` at every status
# change, `delete`, `load_all`. Here a store that also keeps a log shows what a durable
# one is told while a task fails once and then succeeds.


# %% tags=["nbval-check-output"]
class LoggingStore(InMemoryTaskStore):
    def __init__(self) -> None:
        super().__init__()
        self.log: list[str] = []

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot, record)
        outcome = f" + record of attempt {record.attempt} ({record.outcome})" if record else ""
        self.log.append(f"{snapshot.task.name}: {snapshot.status.value}{outcome}")


attempts = iter([RuntimeError("not yet")])


def flaky() -> None:
    error = next(attempts, None)
    if error:
        raise error


store = LoggingStore()
clock = FakeClock(START)
with Scheduler(workers=1, clock=clock, store=store) as scheduler:
    scheduler.schedule("import", flaky, OneTime(delay=0))
    scheduler.wait_idle()
    clock.advance(1)
    scheduler.wait_idle()
print("\n".join(store.log))

# %% [markdown]
# With `store=None` (the default) nothing is built or written: the scheduler's registry
# already holds the state.
#
# ## 2. Shutdown: stop timing first, then drain or drop
#
# One worker is busy with a long run; three more tasks are due and wait for it.
# `shutdown(drain=True)` stops the timer, then runs every run due at the instant of the
# call (the three, in heap order), and joins. `drain=False` runs none of them. Either way
# the run in flight finishes: it runs on a worker thread, and Python cannot stop a thread.
#
# Two kinds of run can be stopped, and are. A run in a worker process
# (`isolation="process"`, notebook 03) is killed by `drain=False` at once, and by a drain
# a second before the shutdown's `timeout` runs out (half the timeout, when that is less
# than a second); its attempt is recorded cancelled, saying which (`CancelledError: the
# scheduler shut down without draining`, or for `timeout=5` `CancelledError: the scheduler
# shut down, its drain out of time after 4 s`) before `shutdown()` returns. A coroutine
# run (`async def`) still going then is cancelled (`CancelledError: scheduler shut down`,
# drained or not). Neither spends its attempt: the task stays due at its slot, for a
# durable store to run after the restart.


# %% tags=["nbval-check-output"]
def busy_then_queue(drain: bool) -> dict[str, int]:
    """How many times each task ran, after a shutdown with a run in flight and three due."""
    started, release = threading.Event(), threading.Event()

    def long_run() -> None:
        started.set()
        release.wait(5)

    scheduler = Scheduler(workers=1)
    busy = scheduler.schedule("busy", long_run, OneTime(delay=0))
    queued = [scheduler.schedule(f"queued-{n}", lambda: None, OneTime(delay=0)) for n in range(3)]
    scheduler.start()  # the timer hands all four over at once; the worker takes the first
    started.wait(30)  # busy runs, and the other three wait in the hand-off queue
    if drain:
        threading.Timer(1.0, release.set).start()  # the long run ends a second later...
        scheduler.shutdown(drain=True, timeout=5)  # ...and then the three run
    else:
        scheduler.shutdown(drain=False, timeout=0.5)  # the three are dropped at once
        release.set()  # only now does the long run end,
        scheduler.shutdown(timeout=5)  # and a second call waits for it
    return {t.name: t.run_count for t in [busy, *queued]}


print("runs after drain=True: ", busy_then_queue(drain=True))
print("runs after drain=False:", busy_then_queue(drain=False))

# %% [markdown]
# (With `drain=False`, a task dropped before it ran stays `scheduled` with its due time: a
# durable store will recover it at the next start.)
#
# The order matters. Stopping the pool first would leave the timer handing work to a
# closed pool; stopping the timer first means the pool sees no new work while it drains.
# `shutdown` is idempotent, and final: `schedule` after it raises.

# %% [markdown]
# ## 3. Recovery: a morning of downtime, three misfire policies
#
# Three hourly reports, one per misfire policy, on a scheduler with a SQLite store. The
# first process registers them at 08:59, runs the 09:00 reports, and stops. The next one
# starts at 12:30: the 10:00, 11:00 and 12:00 slots passed while nothing was running.
#
# * `RUN_ONCE` (the default, "coalesce"): run once now, record the other slots coalesced;
# * `RUN_ALL`: run every missed slot now, one after another (bounded by `max_catch_up`);
# * `SKIP`: record the slots missed, and wait for 13:00.
#
# Every decision is a record whose outcome says so, not silence.
#
# The reports' action is `jobs.send_report`, from `notebooks/jobs.py` beside this
# notebook (imported in the first cell): it appends its region to the list `jobs.SENT`.
# A durable store keeps an action by its import path (`"jobs:send_report"`), so the
# actions it keeps live in a module that every process imports (a lambda has no import
# path, and registration on a durable store refuses it).
#
# Like a real service, each process registers its jobs when it starts, by id:
# `replace_existing=True` finds a restored task and keeps it (with its history and due
# time) instead of adding a copy.

# %%
directory = tempfile.TemporaryDirectory()  # removed when the kernel stops
path = Path(directory.name) / "tasks.db"
policies = {"emea": Misfire.RUN_ONCE, "amer": Misfire.RUN_ALL, "apac": Misfire.SKIP}


def register_reports(scheduler: Scheduler) -> None:
    """What the service does at every start."""
    for region, policy in policies.items():
        scheduler.schedule(
            f"report-{region}",
            jobs.send_report,
            CronSchedule("0 * * * *"),
            args=(region,),
            misfire=MisfirePolicy(policy, grace=60),
            id=f"report-{region}",
            replace_existing=True,
        )


# %% tags=["nbval-check-output"]
clock = FakeClock(START.timestamp() - 60)  # 08:59
with SqliteTaskStore(path) as store, Scheduler(workers=1, clock=clock, store=store) as first:
    register_reports(first)
    clock.advance(60)  # 09:00
    first.wait_idle()
print("first process, 09:00, sent:", jobs.SENT)

# %% tags=["nbval-check-output"]
jobs.SENT.clear()
restart = START.timestamp() + 3.5 * 3600  # 12:30
clock = FakeClock(restart)
with SqliteTaskStore(path) as store, Scheduler(workers=1, clock=clock, store=store) as second:
    register_reports(second)  # the restored tasks, not copies
    second.wait_idle()
    for task in second.tasks():
        decided = [f"{hhmm(r.slot)} {r.outcome}" for r in task.history if r.misfire]
        after = [hhmm(r.slot) for r in task.history if r.misfire is None and r.started >= restart]
        policy = task.misfire.on_misfire.name if task.misfire else "RUN_ONCE"
        next_run = hhmm(task.next_run_at)
        print(f"{task.id} ({policy}): decided {decided}; ran {after}; next {next_run}")
print("second process, 12:30, sent:", jobs.SENT)

# %% [markdown]
# What else survives: definitions (the action by import path, arguments as JSON, the
# schedule through a registry: no pickle, so opening a store runs no code but imports),
# statuses, recent history and the dead letter. A run in flight when the process died has
# no record: it runs again (at-least-once), so make such actions idempotent.

# %% [markdown]
# ## Check yourself
#
# 1. Why does `shutdown` stop the timer before the pool, and not the other way round?
# 2. The process dies while a report is running. What happens to that run at the next
#    start, and what must the report's action be for that to be safe?
# 3. A task with `MisfirePolicy(Misfire.RUN_ONCE, grace=60)` slept through the 10:00,
#    11:00 and 12:00 slots and starts again at 12:30. What runs, and what is recorded?
#
# <details><summary>Answers</summary>
#
# 1. Stopping the timer first means nothing new is handed to the pool while it drains;
#    stopping the pool first would leave the timer handing work to a closed pool.
# 2. It has no record, so it runs again at the next start with the same attempt number
#    (at-least-once); the action must be idempotent.
# 3. One run, at 12:30; the 10:00 and 11:00 slots are recorded `coalesced` (the 12:00 slot
#    is the one that ran), and the next run is 13:00.
#
# </details>
#
# [previous: 05 · Live control](05-live-control.ipynb) · [contents](00-index.ipynb) · [next: 07 · The interview, in 45 minutes](07-interview-walkthrough.ipynb)
