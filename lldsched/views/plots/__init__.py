"""Plots: worker occupancy, overrun behaviour, lateness and utilisation, from a frame.

Every function takes a frame from :func:`lldsched.views.frames.to_frame` and returns a
matplotlib :class:`~matplotlib.figure.Figure`, or draws on the ``ax=`` it is
given and returns that axes' figure.  Nothing here touches pyplot: figures are
built with the object-oriented API (``Figure()``, not ``plt.figure()``), so they
are safe to make from any thread, never pop up a window, and never call pyplot's
``show``.  Show one in a notebook by leaving it as a cell's value (the
figures these functions make render themselves as PNG, with or without
``%matplotlib inline``), or save it with ``fig.savefig("out.png")`` (the format's
own canvas is picked, Agg for PNG, without choosing a global backend).

Every chart colours a task by its name (:func:`task_colours`), the same in every chart
(two tasks of one chart never in one hue, up to ten); past :data:`MAX_LEGEND_TASKS`
tasks, only the ones its legend names (those that weigh most in it), the rest in one
grey, :data:`OTHER_TASKS`.

* :func:`gantt`: a lane per worker (of each process, when several processes' runs
  share a store), or per task, a bar per run coloured by task,
  failed runs hatched, cancelled ones (``Overlap.CANCEL_OTHER``, or a shutdown's cut)
  hatched the other way, timed-out runs outlined, each run's due time marked with a
  tick and a line to its start, so lateness shows; runs at once on one lane (the event
  loop's coroutines, a task's ``Overlap.ALLOW`` runs by task) a row each.  All bars are one
  ``PolyCollection`` and all due marks one ``LineCollection``: 100,000 runs draw
  and render in about half a second (``benchmarks/bench_views.py``).  At most
  :data:`MAX_LANES` lanes, the busiest, with a note of how many were left out.
* :func:`overrun_comparison`: overrun and overlap policies side by side (``SKIP``
  against ``CATCH_UP`` by default) for a fixed-rate task whose runs outlast its period
  (from the runs :func:`lldsched.sim.overrun.simulate_overrun` makes, one per policy).
* :func:`cluster_timeline` (a lane per node of a simulated cluster: runs, leases,
  pauses, crashes, duplicate and rejected writes) and :func:`fencing_comparison`
  (the counts of several cluster results side by side), from a
  :class:`~lldsched.cluster.ClusterResult` rather than a frame.
* :func:`mark_wait` annotates one run's wait on a Gantt chart.
* :func:`lateness_over_time`, :func:`lateness_distribution` (per task) and
  :func:`utilisation_plot` (busy fraction per worker per interval; past
  :data:`MAX_COLUMNS` intervals, in longer ones that fit, as its axis says).

Time axes show timezone-aware instants in the zone given as ``tz`` (default UTC),
their ticks evenly apart in real time across a change of summer time (a wall time two
ticks share, 02:00 of the night the clocks go back, says its zone under it, as do the
two times of day either side of the change: 01:30 CET, then 03:00 CEST, the night
they go forward); ticks a day or more apart at the zone's midnights.

Every chart has a title and labelled axes, and says in words what it shows
(:func:`describe`: a figure's text form in a notebook, for a screen reader); the
colours that carry an outcome or a state are told apart in any colour vision and in
greyscale, or by a hatch or a marker too (:mod:`lldsched.views.plots.palette`).
"""

from lldsched.views.plots._base import (
    DETAIL_RUNS,
    MAX_LANES,
    MIN_LANE_INCHES,
    SHORT_RUN,
    PlotFigure,
    describe,
)
from lldsched.views.plots.cluster import cluster_timeline, fencing_comparison
from lldsched.views.plots.gantt import gantt, mark_wait
from lldsched.views.plots.overrun import overrun_comparison
from lldsched.views.plots.taskcolours import MAX_LEGEND_TASKS, OTHER_TASKS, task_colours
from lldsched.views.plots.timing import (
    MAX_COLUMNS,
    lateness_distribution,
    lateness_over_time,
    utilisation_plot,
)

__all__ = [
    "DETAIL_RUNS",
    "MAX_COLUMNS",
    "MAX_LANES",
    "MAX_LEGEND_TASKS",
    "MIN_LANE_INCHES",
    "OTHER_TASKS",
    "SHORT_RUN",
    "PlotFigure",
    "cluster_timeline",
    "describe",
    "fencing_comparison",
    "gantt",
    "lateness_distribution",
    "lateness_over_time",
    "mark_wait",
    "overrun_comparison",
    "task_colours",
    "utilisation_plot",
]
