# %% [markdown]
# # 05 · Live control
#
# [previous: 04 · Simulation](04-simulation.ipynb) · [contents](00-index.ipynb) · [next: 06 · Persistence and shutdown](06-persistence-and-shutdown.ipynb)
#
# **Objectives**
#
# - drive a running scheduler by hand: pause, resume, cancel and redrive from a control panel;
# - say what pause does to a run already in flight;
# - explain how a panel follows a scheduler without polling, and why its widgets are only
#   touched on the kernel's thread.
#
# **Minutes:** 10 (hands-on: after *Run All*, press the buttons).
#
# A `ControlPanel` is a live table of a running scheduler's tasks, with buttons to pause,
# resume and cancel each one (and redrive a dead one). It is driven by the scheduler's
# events, never by a polling loop: its listener notes which tasks changed, and one refresh
# per burst of events runs on the notebook's own event loop, so the widgets are only ever
# touched from the kernel's thread. (Where widgets cannot render, on a repository page for
# instance, the panel shows its table as text.)

# %%
import itertools

from IPython.display import display
from ipywidgets import Button, Output

from lldsched import EventLog, FixedRate, OneTime, RetryPolicy, Scheduler, TaskStatus
from lldsched.views.widgets import ControlPanel

beats = itertools.count(1)


def cleanup() -> None:
    raise OSError("disk is full: 0 bytes left on /srv/exports for daily-summary.csv")


earlier = globals().get("scheduler")  # Run All again: the last run's scheduler stops
if earlier is not None:
    earlier.shutdown()
log = EventLog()  # a second listener, so the notebook can wait for runs without sleeping
scheduler = Scheduler(workers=2, listeners=[log]).start()
heartbeat = scheduler.schedule("heartbeat", lambda: next(beats), FixedRate(0.5))
poll = scheduler.schedule("poll", lambda: None, FixedRate(0.5))
digest = scheduler.schedule("digest", lambda: None, FixedRate(3600, start_delay=1800))
dead = scheduler.schedule("cleanup", cleanup, OneTime(delay=0), retry=RetryPolicy.never())
assert scheduler.wait_idle()

# %% [markdown]
# The panel. `heartbeat` and `poll` run twice a second: their `runs` columns climb while
# the scheduler's worker threads run them. `digest` is hourly, its first run half an hour
# out (the `next run` column says in which zone). `cleanup` failed at once and sits in the
# dead letter, with its error: cut to one line, and the whole text opens under it when you
# click the line (or press Enter on it).

# %%
panel = ControlPanel(scheduler)
panel

# %% [markdown]
# **Press `pause` on the heartbeat row.** The status turns `paused` at once, even if a run
# is in flight (that run finishes and is recorded, and nothing is scheduled after it), and
# its count stops while `poll`'s keeps climbing. `resume` puts it back; a slot it slept
# through runs at once. `cancel` stops every future run, for good. The dead-lettered
# `cleanup` has a `redrive` button: it runs again, due now, with a fresh attempt counter
# (and fails again here, because the disk is still full). The line under the table says
# what each press did; a redrive only queues a run, so it says "queued again" at once, and
# how the re-run ended once it has (the button never waits for the run). The cell below
# waits for that end before it prints the line: read at once, it would say either, as
# the re-run happened to be quick or not.
#
# The same presses, from code (what each button calls), so this notebook also runs
# unattended. The panel above stays live: press its buttons after these.

# %%
panel.button(heartbeat.id, "pause").click()
print(panel.row(heartbeat.id)["status"], "| scheduler says:", heartbeat.status.value)

# %% tags=["nbval-check-output"]
panel.button(heartbeat.id, "resume").click()
panel.button(digest.id, "cancel").click()
beats_then, cleanups_then = heartbeat.run_count, dead.run_count
panel.button(dead.id, "redrive").click()


def settled(_event: object) -> bool:  # three more beats, and cleanup failed once more
    return (
        heartbeat.run_count >= beats_then + 3
        and dead.run_count == cleanups_then + 1
        and dead.status is TaskStatus.FAILED
    )


assert log.wait_for(settled, timeout=10)
panel.refresh([dead.id])  # what the panel's next refresh does: it reads how the re-run ended
print(panel.message.value)

# %% tags=["nbval-check-output"]
print("status:", heartbeat.status.value, digest.status.value, dead.status.value)
print("dead letter:", [scheduler.task(task_id).name for task_id in scheduler.dead_letter()])

# %% [markdown]
# What the panel shows right now, as text, and the line under it (rows and line update
# between cells, when the kernel's event loop gets to run the refresh the events asked
# for):

# %%
print(panel.to_text())
print(panel.message.value)

# %% [markdown]
# ## When you are done
#
# Closing the panel removes its listener (a closed panel hears nothing); shutting the
# scheduler down stops the timer first, then drains the pool. *Run All* does not press
# this button, so the panel above stays alive until you do. (Restarting the kernel stops
# everything too.)


# %%
def shut_down(_button: Button) -> None:
    panel.close()
    with said:
        print("stopped cleanly:", scheduler.shutdown())


said = Output()
# width "auto": a button is 148 px wide by default, which cuts this label short.
stop = Button(
    description="shut down the scheduler", button_style="warning", layout={"width": "auto"}
)
stop.add_class("lldsched-shutdown")
stop.on_click(shut_down)
display(stop, said)

# %% [markdown]
# ## Check yourself
#
# 1. You press `pause` while the heartbeat is running. Does that run finish? Is it
#    recorded? When does the heartbeat run next?
# 2. The panel's listener runs on the scheduler's event thread, yet the panel never
#    touches a widget there. What does it do instead, and why?
# 3. A thousand events arrive in one second. How many times does the panel redraw?
#
# <details><summary>Answers</summary>
#
# 1. It finishes (Python cannot stop a thread) and is recorded in the history; nothing is
#    scheduled after it, so the heartbeat runs next when you press `resume`, at once if
#    it slept through a slot. (A run in a worker process, `isolation="process"` in
#    notebook 03, would be killed instead, and a coroutine run cancelled.)
# 2. It notes which tasks changed and asks the kernel's event loop to refresh
#    (`call_soon_threadsafe`); the refresh runs on the kernel's thread, because ipykernel
#    does not reliably send widget updates made from other threads.
# 3. Far fewer than a thousand: the first event of a burst schedules one refresh, the
#    others join it until it runs, so a burst costs one redraw of the rows that changed.
#
# </details>
#
# [previous: 04 · Simulation](04-simulation.ipynb) · [contents](00-index.ipynb) · [next: 06 · Persistence and shutdown](06-persistence-and-shutdown.ipynb)
