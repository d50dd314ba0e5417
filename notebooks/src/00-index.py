# %% [markdown]
# # lldsched: the task scheduler case, built for real
#
# [contents](00-index.ipynb) · [next: 01 · The timer and the heap](01-timer-and-heap.ipynb)
#
# **Objectives**
#
# - know what this kit is, where to start, and how long each notebook takes;
# - know the words the notebooks use (the glossary below);
# - see the scheduler's behaviour in eleven lines before reading any of its code.
#
# **Minutes:** 5 (read).
#
# *"Design a cron / task scheduler"* is a classic low-level-design interview question.
# This kit answers it with a scheduler you can read, run and replay: a min-heap timer
# that waits on a `Condition`, a bounded worker pool, one-off, fixed-rate, fixed-delay and
# cron schedules, retries with backoff and a dead letter, timeouts, pause / resume /
# cancel, a store, listeners, and a discrete-event simulation that replays a week in
# milliseconds through the same state machine.
#
# ## Where to start
#
# **Start with 01 and go in order**: each notebook uses only what the ones before it
# introduced. Preparing for an interview with little time? Read 07 first, then come back
# to 01-03 for the parts you could not explain. Every notebook runs top to bottom with
# *Run → Run All Cells*; then read the prose, change a number and run again. Most take a
# few seconds (04 and 10 up to about ten). **09, the design lab, takes half a minute or
# more**: its experiments measure real time (a timer idling under each polling interval,
# listener latency, shutdowns racing due work, a timing wheel against the heap), and a
# measurement lasts as long as what it measures.
#
# | notebook | what it teaches | minutes | how |
# | --- | --- | --- | --- |
# | [01 · The timer and the heap](01-timer-and-heap.ipynb) | the heap entry and its sequence field; a twenty-line timer queue on a `Condition`, measured against a poll loop; the production loop; one lock, three Conditions | 25 | read and run |
# | [02 · Schedules and cron](02-schedules-and-cron.ipynb) | one-off, fixed rate, fixed delay; cron with `explain()`; the DST days in two zones | 20 | read and run |
# | [03 · Failure](03-failure.ipynb) | the task lifecycle; retries with backoff, dead letter and redrive, timeouts and the cooperative flag; a worker process killed at its timeout; dependencies | 30 | read and run |
# | [04 · Simulation](04-simulation.ipynb) | a week replayed; the Gantt chart; SKIP against CATCH_UP; how many workers a workload needs | 20 | read and run, sliders |
# | [05 · Live control](05-live-control.ipynb) | a control panel over a running scheduler: pause and cancel by hand | 10 | **hands-on**: press the buttons |
# | [06 · Persistence and shutdown](06-persistence-and-shutdown.ipynb) | the store seam, shutdown order, drain against drop, recovery | 15 | read and run |
# | [07 · The interview, in 45 minutes](07-interview-walkthrough.ipynb) | the case at interview pace, with exercises checked by real tests | 45 (+15 homework) | **hands-on**: write code |
# | [08 · Testing a scheduler](08-testing-a-scheduler.ipynb) | a fake clock as dependency injection, bounded waits, the tests that pin the hard promises, run with pytest; your own jobs tested with the `Stepper` | 25 | read and run, then break it |
# | [09 · The design lab](09-design-lab.ipynb) | eleven design decisions switched off one at a time: the consequence measured, and the test that catches it | 25 | read and run, with toggles |
# | [10 · When one process is not enough](10-when-one-process-is-not-enough.ipynb) | N web workers, N runs; leases; the paused process that needs a fencing token; a simulated cluster, plotted; an idempotent sink; three real processes on one SQLite file | 25 | read and run |
#
# About four hours in all. Two notebooks ask for your hands: in **05** you press the
# panel's buttons (it stays live after *Run All*); in **07** you write code: until you
# do, **its checks say `not written yet`**, and a failed check (✗) after that names what
# your answer gets wrong, not a bug of the kit.
# Each notebook opens with its objectives and ends with three to five *Check yourself*
# questions, answers folded underneath.
#
# **Binder, and changing the code.** On mybinder.org (the launch links are in the
# repository's README) the kit runs with `lldsched` installed *editable*: the notebooks
# import the source in `lldsched/`. Open a module from the file browser, change it, save,
# then **restart the kernel** (*Kernel → Restart Kernel*): an edit takes effect only in a
# fresh kernel. 08 shows how to break something on purpose and watch a test catch it.
#
# Outputs that come from a fake clock or the seeded simulation are the same on every
# run; a few cells measure the real clock, and their numbers vary.
#
# ## Glossary
#
# - **slot**: an instant a schedule says a task should run (every 60 s from 09:00: the
#   slots are 09:00, 09:01, ...). A retry belongs to the slot of the run it retries.
# - **due**: the instant a run may start: its slot, or for a retry the failure plus the
#   backoff. The heap is ordered by due time.
# - **lateness**: how long a run waited past its due time (start minus due): zero when a
#   worker was free, longer when every worker was busy.
# - **tombstone**: a heap entry that no longer counts (its task was cancelled, paused or
#   rescheduled). Removing from the middle of a heap is slow, so the entry stays, marked
#   dead, and is skipped when it reaches the top.
# - **generation**: the number a task's live heap entry carries; an entry whose number is
#   not the task's current generation is a tombstone.
# - **misfire**: a slot that passed while the scheduler was not running (a restart, a
#   night of downtime); the task's misfire policy decides whether to run every missed
#   slot, run once for all of them, or skip them.
#
# ## A first taste
#
# The scheduler's behaviour in eleven lines, every figure computed by the library on a
# fake clock (this is `python -m lldsched demo`).

# %% tags=["nbval-check-output"]
from lldsched.cli.demo import run_demo

for line in run_demo():
    print(line)

# %% [markdown]
# ## Check yourself
#
# 1. Which notebook do you open first, and which two ask you to do something rather than
#    read?
# 2. A run was due at 09:00 and started at 09:03. What is its lateness, and what is its
#    slot?
# 3. You edited `lldsched/core/duequeue.py` on Binder and nothing changed. Why?
#
# <details><summary>Answers</summary>
#
# 1. 01 (or 07 when time is short); 05 (press the panel's buttons) and 07 (write code
#    until its checks pass).
# 2. Three minutes; its slot is 09:00 (a first attempt's due time is its slot).
# 3. The kernel still holds the module it imported before the edit: restart the kernel.
#
# </details>
#
# [contents](00-index.ipynb) · [next: 01 · The timer and the heap](01-timer-and-heap.ipynb)
