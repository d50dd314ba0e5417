# %% [markdown]
# # 02 · Schedules and cron
#
# [previous: 01 · The timer and the heap](01-timer-and-heap.ipynb) · [contents](00-index.ipynb) · [next: 03 · Failure](03-failure.ipynb)
#
# **Objectives**
#
# - tell fixed rate from fixed delay exactly: a rate keeps a grid of slots anchored on the
#   slot each run served, a delay counts from the finish;
# - say what SKIP and CATCH_UP do with a run that outlasts its period, including a run that
#   ends exactly on a slot, and what `resume` does to the grid;
# - read a cron expression, the day-of-month / day-of-week rule, and the two DST days.
#
# **Minutes:** 20.
#
# A task is *what* runs; its schedule says *when*. Each schedule is a small immutable
# Strategy that answers two questions: when first (`first_run(now)`) and when again after
# this run (`next_run(record, now)`; `None` retires the task). "Now support cron" is one
# more class.
#
# Everything here runs on a fake clock or in the simulation, so every number below is the
# same on every run.

# %%
from collections.abc import Callable
from datetime import UTC, datetime
from random import Random

from lldsched import (
    CronSchedule,
    FakeClock,
    FixedDelay,
    FixedRate,
    OneTime,
    OverrunPolicy,
    Priority,
    Schedule,
    Scheduler,
)
from lldsched.sim import Simulation

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # a Monday, 09:00 UTC
T0 = START.timestamp()


def clock_time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%H:%M:%S")


# %% [markdown]
# ## 1. One-off, fixed rate, fixed delay
#
# Each task below runs alone on a threaded scheduler whose clock we move by hand; a run
# takes 20 s (the action advances the fake clock). Both recurring tasks say "every 60 s":
# fixed *rate* keeps a grid of slots 60 s apart, fixed *delay* counts 60 s from each
# finish, so the delay task drifts 20 s a run and its runs never overlap.


# %% tags=["nbval-check-output"]
def timeline(schedule: Schedule, run_seconds: float, horizon: float = 300) -> list[str]:
    """Start times of one task on a fake clock, stepped 5 s at a time to ``horizon``."""
    clock = FakeClock(START)
    starts: list[str] = []

    def work() -> None:
        starts.append(clock_time(clock.now()))
        clock.advance(run_seconds)

    with Scheduler(workers=1, clock=clock) as scheduler:
        scheduler.schedule("task", work, schedule)
        scheduler.wait_idle()
        while clock.now() < T0 + horizon:
            clock.advance(5)
            scheduler.wait_idle()
    return starts


print("OneTime(delay=90)      ", timeline(OneTime(delay=90), 20))
print("FixedRate(60)          ", timeline(FixedRate(60), 20))
print("FixedDelay(60)         ", timeline(FixedDelay(60), 20))

# %% [markdown]
# ### Fixed rate anchors on the slot it served
#
# "Every 60 s from the start of a run" is not quite it. A fixed-rate task has a grid of
# slots, `first + k * period`, and its next slot is computed from the slot the run
# *served*, which equals its start only when it starts on time. Below, one worker is busy
# with a 30 s backup when the report falls due at t+0 (both are due then; the backup's
# `Priority.HIGH` sends it first, for priority orders the runs due at one instant): the
# report starts 30 s late, and is still next due at t+60, not t+90.

# %% tags=["nbval-check-output"]
clock = FakeClock(START)
scheduler = Scheduler(workers=1, clock=clock)
scheduler.schedule("backup", lambda: clock.advance(30), OneTime(delay=0), priority=Priority.HIGH)
report = scheduler.schedule("report", lambda: clock.advance(5), FixedRate(60))
with scheduler:  # started with both registered, so both are due at t+0
    scheduler.wait_idle()
(first,) = report.history
assert report.next_run_at is not None
slot, started, finished = (t - T0 for t in (first.slot, first.started, first.finished))
print(f"slot t+{slot:.0f} s, started t+{started:.0f} s, finished t+{finished:.0f} s")
print(f"next due t+{report.next_run_at - T0:.0f} s")

# %% [markdown]
# Counting from the start would have given t+90, and every late start would push the whole
# schedule later: a report that is 30 s late each time would run every 90 s instead of
# every 60. Anchoring on the slot keeps lateness from drifting the grid. (Fixed *delay* is
# the rule that does count from the run, from its finish: use it when runs must not
# overlap.)

# %% [markdown]
# ## 2. A run longer than its period: SKIP or CATCH_UP
#
# A fixed-rate report every 60 s whose first run takes 150 s. `SKIP` drops the slots the
# long run missed and resumes on the grid; `CATCH_UP` runs every missed slot, one after
# another, at once. To see a run take 150 s without waiting for it, this section borrows
# `Simulation`: the same scheduler core on virtual time, where a task's run takes the
# duration you give it and a day passes in milliseconds (notebook 04 is about it). Here it
# is only a stopwatch: one worker, one task.
# A dropped slot is not lost silently: it is a record of its own whose outcome is
# `skipped` (it never ran, so `record.outcome.ran` is False and views count it apart
# from the runs).


# %% tags=["nbval-check-output"]
def first_run_takes_150_s() -> Callable[[Random, int], float]:
    """A duration model: the first run takes 150 s, the others 5 s."""
    runs = iter([150.0])
    return lambda rng, attempt: next(runs, 5.0)


for policy in (OverrunPolicy.SKIP, OverrunPolicy.CATCH_UP):
    sim = Simulation(workers=1, start=START)
    sim.schedule("report", FixedRate(60, policy), duration=first_run_takes_150_s())
    sim.run_for(300)
    runs = [(int(r.due - T0), int(r.started - T0)) for r in sim.records() if r.outcome.ran]
    skipped = [int(r.slot - T0) for r in sim.records() if r.outcome == "skipped"]
    print(f"{policy.name:8} (due, started) after t0:", runs, " skipped slots:", skipped)

# %% [markdown]
# ### The boundary: a run that ends exactly on a slot
#
# SKIP moves to the first slot **not before** the finish, so a slot that falls exactly at
# the finish has not been missed: it is next, due at once. A report that always takes
# exactly 60 s runs back to back on every slot; at 60.5 s it overruns the next slot and
# SKIP runs every other one. (The first version of this design stepped past a slot at
# the finish, `while next <= finished`, so there a 60 s report ran every other slot;
# lldsched does not.) The lists hold the runs finished by t+250, for the simulation's
# records are finished runs: in both cases the next run starts at t+240 and is still
# going then.

# %% tags=["nbval-check-output"]
for seconds in (60.0, 60.5):
    sim = Simulation(workers=1, start=START)
    sim.schedule("report", FixedRate(60), duration=seconds)
    sim.run_for(250)
    starts = [int(r.started - T0) for r in sim.records() if r.outcome.ran]
    print(f"each run takes {seconds:4} s -> the runs done by t+250 started at t+", starts)

# %% [markdown]
# ### Resume re-anchors the grid
#
# A paused task that slept through its slots runs **at once** when resumed, and its grid
# starts again there: the next slot is a period after the resumed run, not the old grid's
# next point. Paused at t+10 and resumed at t+130, a 60 s task runs at t+130 and is next
# due at t+190 (not t+180).

# %% tags=["nbval-check-output"]
clock = FakeClock(START)
with Scheduler(workers=1, clock=clock) as scheduler:
    sync = scheduler.schedule("sync", lambda: None, FixedRate(60))
    scheduler.wait_idle()
    clock.advance(10)
    scheduler.pause(sync.id)
    clock.advance(120)
    scheduler.resume(sync.id)
    scheduler.wait_idle()
assert sync.next_run_at is not None
print(
    "runs at t+",
    [int(r.started - T0) for r in sync.history],
    f"| next due t+{sync.next_run_at - T0:.0f}",
)

# %% [markdown]
# ## 3. Cron: five fields, and what they mean in English
#
# `CronSchedule` follows real cron (Vixie / cronie, as cronsim does). `explain()` says an
# expression in plain English; `fire_times(start, n)` lists the next fires, strictly after
# `start`.

# %% tags=["nbval-check-output"]
EXPRESSIONS = ["*/15 * * * *", "0 3 * * 1-5", "0 9-17/2 * * mon-fri", "0 0 L * *", "0 12 * * 5#3"]
for expr in [*EXPRESSIONS, "@weekly"]:
    cron = CronSchedule(expr)
    fires = [
        datetime.fromtimestamp(t, UTC).strftime("%a %d %b %H:%M") for t in cron.fire_times(T0, 3)
    ]
    print(f"{expr:22} {cron.explain()}\n{'':22} next: {', '.join(fires)}")

# %% [markdown]
# ### The day-of-month / day-of-week rule
#
# When either day field starts with `*`, a day must match both; otherwise either one is
# enough. So `0 0 */2 * 1` means "odd days of the month that are Mondays", while
# `0 0 1,15 * 1` means "the 1st, the 15th, and every Monday".

# %% tags=["nbval-check-output"]
for expr in ["0 0 */2 * 1", "0 0 1,15 * 1"]:
    days = [
        datetime.fromtimestamp(t, UTC).strftime("%a %d %b")
        for t in CronSchedule(expr).fire_times(T0, 6)
    ]
    print(f"{expr:14}", days)

# %% [markdown]
# ### Bad expressions fail when they are built, not at 03:00

# %% tags=["nbval-check-output"]
for bad in ["* * * *", "61 * * * *", "0 0 30 2 *", "5-1 * * * *", "@reboot"]:
    try:
        CronSchedule(bad)
    except ValueError as error:
        print(f"{bad!r:16} {error}")

# %% [markdown]
# ## 4. The two days a year cron gets hard
#
# In a zone with daylight saving time, one night a year skips an hour of wall-clock time
# and another night repeats one: in Berlin, both times 02:00-03:00, so a 02:30 job does
# not exist one night and happens twice on another. The rule: a job whose minute and
# hour are both fixed keeps its wall-clock meaning (in the gap it runs once, at the first
# minute after the gap; in the repeated hour it runs once, at the first occurrence).
# Other jobs step through real instants, so an hourly job runs in both passes of the
# repeated hour.


# %% tags=["nbval-check-output"]
def fires_on(expr: str, zone: str, day: str) -> list[str]:
    cron = CronSchedule(expr, tz=zone)
    local = cron.tzinfo
    begin = datetime.fromisoformat(day).replace(tzinfo=local).timestamp() - 1
    out = []
    for t in cron.fire_times(begin, 40):
        moment = datetime.fromtimestamp(t, local)
        if moment.strftime("%Y-%m-%d") != day:
            break
        out.append(moment.strftime("%H:%M %Z"))
    return out


DST_DAYS = {
    "Europe/Berlin": ("2026-03-29", "2026-10-25"),
    "America/New_York": ("2026-03-08", "2026-11-01"),
}
for zone, (spring, autumn) in DST_DAYS.items():
    print(zone)
    for expr in ["30 2 * * *", "0 * * * *"]:
        print(f"  {expr:11} spring: {fires_on(expr, zone, spring)[:5]}")
        print(f"  {expr:11} autumn: {fires_on(expr, zone, autumn)[:5]}")

# %% [markdown]
# Read the Berlin lines: on 29 March the clocks jump from 02:00 to 03:00, so `30 2 * * *`
# runs at 03:00 CEST; the hourly job has no 02:00 that day. On 25 October 02:00-03:00
# happens twice: the 02:30 job runs once (CEST, the first pass) while the hourly job runs
# at 02:00 CEST *and* 02:00 CET.
#
# New York skips the same hour in spring, but in autumn its clocks go back from 02:00
# EDT to 01:00 EST: the hour it repeats is 01:00-02:00. There 02:30 happens once (EST),
# and it is the hourly job that runs twice at one reading of the clock: 01:00 EDT and
# 01:00 EST.
#
# More in [docs/CRON.md](../docs/CRON.md).
#
# ## Check yourself
#
# 1. A `FixedRate(60)` task's run for the slot at t+0 waits for a worker and starts at
#    t+45. When is it next due, and what would go wrong if it were due at t+105?
# 2. A `FixedRate(60)` task under SKIP: its run for the slot at t+0 finishes at exactly
#    t+120. When does the task run next? And if it finished at t+120.5?
# 3. Which days does `0 0 1,15 * 1` fire on, and which does `0 0 */2 * 1`?
#
# <details><summary>Answers</summary>
#
# 1. At t+60: the grid is anchored on the slot the run served, not on its start. Due at
#    t+105, every late start would move the whole grid, and the task would drift later
#    with each wait.
# 2. At t+120, at once: a slot exactly at the finish has not been missed. At t+120.5 the
#    slot at t+120 was missed, and SKIP moves to t+180.
# 3. `0 0 1,15 * 1`: the 1st, the 15th and every Monday (neither day field starts with
#    `*`, so either may match). `0 0 */2 * 1`: odd days of the month that are also
#    Mondays (the day of month starts with `*`, so both must match).
#
# </details>
#
# [previous: 01 · The timer and the heap](01-timer-and-heap.ipynb) · [contents](00-index.ipynb) · [next: 03 · Failure](03-failure.ipynb)
