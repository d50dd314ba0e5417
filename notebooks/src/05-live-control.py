# %% [markdown]
# # 05 · Live control
#
# A `ControlPanel` is a live table of a running scheduler's tasks, with buttons to pause,
# resume and cancel each one (and redrive a dead one). It is driven by the scheduler's
# events, never by a polling loop: its listener notes which tasks changed, and one refresh
# per burst of events runs on the notebook's own event loop, so the widgets are only ever
# touched from the kernel's thread.
#
# Run the cells, then press the buttons. (Where widgets cannot render, on a repository
# page for instance, the panel shows its table as text.)

# %%
import itertools

from IPython.display import display

from lldsched import EventLog, FixedRate, OneTime, RetryPolicy, Scheduler
from lldsched.views.widgets import ControlPanel

beats = itertools.count(1)


def cleanup() -> None:
    raise OSError("disk is full")


log = EventLog()  # a second listener, so the notebook can wait for runs without sleeping
scheduler = Scheduler(workers=2, listeners=[log]).start()
heartbeat = scheduler.schedule("heartbeat", lambda: next(beats), FixedRate(0.5))
digest = scheduler.schedule("digest", lambda: None, FixedRate(3600, start_delay=1800))
dead = scheduler.schedule("cleanup", cleanup, OneTime(delay=0), retry=RetryPolicy.never())
assert scheduler.wait_idle()

# %%
panel = ControlPanel(scheduler)
display(panel)

# %% [markdown]
# The heartbeat runs twice a second: its `runs` column climbs while the scheduler's worker
# threads run it, and the panel follows. Now **press `pause` on the heartbeat row**. The
# status turns `paused` at once, even if a run is in flight (that run finishes and is
# recorded, and nothing is scheduled after it), and the count stops.
#
# The same press, from code, so this notebook can run unattended:

# %%
panel.button(heartbeat.id, "pause").click()
print(panel.row(heartbeat.id)["status"], "| scheduler says:", heartbeat.status.value)

# %% [markdown]
# `resume` puts it back; a slot it slept through runs at once. `cancel` stops every future
# run. The dead-lettered `cleanup` has a `redrive` button: it runs again, due now, with a
# fresh attempt counter (and fails again here, because the disk is still full).

# %%
panel.button(heartbeat.id, "resume").click()
panel.button(digest.id, "cancel").click()
panel.button(dead.id, "redrive").click()
target = heartbeat.run_count + 3
log.wait_for(lambda _: heartbeat.run_count >= target, timeout=10)  # three more beats
print(panel.message.value)
print(scheduler.dead_letter() == [dead.id], dead.run_count, "runs of cleanup")

# %% [markdown]
# A table of what the panel shows right now (the rows update between cells, when the
# kernel's event loop gets to run the refresh the events asked for):

# %%
print(panel.to_text())

# %% [markdown]
# Closing the panel removes its listener: a closed panel hears nothing. Shut the scheduler
# down when you are done: the timer stops first, then the pool drains.

# %%
panel.close()
print("stopped cleanly:", scheduler.shutdown())

# %% [markdown]
# Next: [06 · persistence and shutdown](06-persistence-and-shutdown.ipynb).
