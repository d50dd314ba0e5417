# %% [markdown]
# # lldsched: the task scheduler case, built for real
#
# *"Design a cron / task scheduler"* is a classic low-level-design interview question.
# This kit answers it with a scheduler you can read, run and replay: a min-heap timer
# that waits on a `Condition`, a bounded worker pool, one-off, fixed-rate, fixed-delay and
# cron schedules, retries with backoff and a dead letter, timeouts, pause / resume /
# cancel, a store, listeners, and a discrete-event simulation that replays a week in
# milliseconds through the same state machine.
#
# **How to use it.** Run each notebook top to bottom (*Run → Run All Cells*); each takes
# seconds. Read the prose, run the cells, change a number and run again. Outputs marked
# as deterministic come from a fake clock or the seeded simulation, so they are the same
# on every run; a few cells measure the real clock, and their numbers vary.
#
# | notebook | what it teaches |
# | --- | --- |
# | [01 · the timer and the heap](01-timer-and-heap.ipynb) | heap order and the sequence field; `Condition.wait` against a poll loop, measured; the early wake-up |
# | [02 · schedules and cron](02-schedules-and-cron.ipynb) | one-off, fixed rate, fixed delay; cron with `explain()`; the DST days in two zones |
# | [03 · failure](03-failure.ipynb) | retries with backoff, dead letter and redrive, timeouts and the cooperative flag |
# | [04 · simulation](04-simulation.ipynb) | a week replayed; the Gantt chart; SKIP against CATCH_UP; how many workers a workload needs |
# | [05 · live control](05-live-control.ipynb) | a control panel over a running scheduler: pause and cancel by hand |
# | [06 · persistence and shutdown](06-persistence-and-shutdown.ipynb) | the store seam, shutdown order, drain against drop, recovery |
# | [07 · the interview in 45 minutes](07-interview-walkthrough.ipynb) | the case at interview pace, with exercises checked by real tests |
#
# On mybinder.org, open any of them from the file browser on the left; the repository's
# README has a launch link per notebook.

# %% [markdown]
# A first taste: the scheduler's behaviour in eleven lines, every figure computed by the
# library on a fake clock (this is `python -m lldsched demo`).

# %% tags=["nbval-check-output"]
from lldsched.cli.demo import run_demo

for line in run_demo():
    print(line)
