"""Lateness (over time, and its distribution per task) and worker utilisation."""

from __future__ import annotations

import math
from datetime import tzinfo

import numpy as np
import pandas as pd
from matplotlib.cbook import STEP_LOOKUP_MAP

from lldsched import checks
from lldsched.views.durations import seconds_text
from lldsched.views.lanes import Workers, column_labels
from lldsched.views.plots._base import (
    DETAIL_RUNS,
    MAX_LANES,
    Axes,
    Figure,
    add_legend,
    figure_and_axes,
    lanes_height,
    say_empty,
    write_title,
)
from lldsched.views.plots.taskcolours import OTHER_TASKS, task_codes, task_handles, task_mark
from lldsched.views.plots.timeaxis import (
    as_zone,
    date_numbers,
    seconds_of,
    set_time_span,
    time_axis,
    time_unit,
)
from lldsched.views.runs import check_lateness, ran_reading
from lldsched.views.utilisation import utilisation_drawn

__all__ = [
    "MAX_COLUMNS",
    "lateness_distribution",
    "lateness_over_time",
    "share_text",
    "utilisation_plot",
]


def share_text(fraction: float) -> str:
    """A share in whole percent (``37%``), which reads ``0%`` or ``100%`` only when it
    is: a share that rounds to either and is not reads ``<1%`` or ``>99%`` (workers
    busy 99.6 % of the time read ``100%``, the saturated pool they were not, and one
    run in a week on four workers ``0%``, none)."""
    percent = f"{fraction:.0%}"
    if percent == "100%" and fraction < 1:
        return ">99%"
    if percent == "0%" and fraction > 0:
        return "<1%"
    return percent


_LATENESS_READS = frozenset({"task_id", "name", "attempt", "due", "start", "lateness"})
"""The columns of a frame's runs the lateness charts read (their copy of the runs has only
these: :func:`~lldsched.views.runs.ran_reading`; ``attempt``, ``due`` and ``start``
name a run :func:`~lldsched.views.runs.check_lateness` refuses)."""


def lateness_over_time(
    frame: pd.DataFrame, ax: Axes | None = None, tz: str | tzinfo = "UTC"
) -> Figure:
    """Each run's lateness (start minus due) at its due time, one colour per task (a run
    resumed after a pause is due at the resume: its pause is not lateness, as in the
    frame and the summaries).
    Past :data:`MAX_LEGEND_TASKS` tasks, the legend names those with the worst
    lateness, in their colours, and the rest are grey points underneath.  A run of no
    known lateness (no due time or start: ``NaT``) is refused, naming it
    (:func:`~lldsched.views.runs.check_lateness`)."""
    given, frame = frame, ran_reading(frame, _LATENESS_READS)
    check_lateness(frame)
    zone = as_zone(tz)  # before anything is drawn: an ax= given stays as it was
    figure, ax = figure_and_axes(ax, (11.0, 4.0))
    lateness = seconds_of(frame["lateness"])
    codes, labels, palette, named = task_codes(frame, lateness, how="max")
    divisor, unit = time_unit(float(lateness.max()) if len(frame) else 0.0)
    if len(frame):
        due = date_numbers(frame["due"])
        size = _mark_size(len(frame))
        others = ~np.isin(codes, named)
        if others.any():  # the tasks the legend does not name, in one grey, underneath
            ax.scatter(due[others], lateness[others] / divisor, s=min(size, _GREY_MARK),
                       color=OTHER_TASKS, linewidths=0, gid="other_tasks")  # fmt: skip
        for rank, code in enumerate(sorted(named)):
            mine = codes == code
            ax.scatter(due[mine], lateness[mine] / divisor, s=size, color=palette[code],
                       label=labels[code], linewidths=0,
                       marker=task_mark(rank, drawn="point")["marker"])  # fmt: skip
        set_time_span(ax, float(due.min()), float(due.max()))
        add_legend(ax, task_handles(labels, palette, named, drawn="point"))
        # Lateness measured from zero: one run 30 s late had an axis from 28.5 to 31.5,
        # and runs all on time one from -0.05 to 0.05.
        top = float(lateness.max()) / divisor
        top = top if top > 0 else 1.0
        ax.set_ylim(min(float(lateness.min()) / divisor, 0.0) - 0.04 * top, top * 1.06)
    else:
        say_empty(ax, "runs", given)
    ax.set_ylabel(f"lateness ({unit})")
    ax.grid(color="0.9")
    ax.set_axisbelow(True)
    time_axis(ax, zone, blank=not len(frame))
    write_title(ax, "Lateness over time: how long each run waited past its due time")
    return figure


_SHAPE_MARK = 14.0
"""The least area (square points) of a named task's marker past :data:`DETAIL_RUNS` runs:
about five pixels across, where a circle, a square and a triangle still differ (at 3, a
week's runs were dots, and the legend's shapes were nowhere on the chart)."""
_GREY_MARK = 6.0
"""The largest marker of the tasks a legend does not name: they are the background."""


_P95_DASHES = (0, (8, 4))
"""The dash pattern of the 95 % line: longer than any of
:data:`~lldsched.views.plots.palette.TASK_LINES`."""


def _mark_size(runs: int) -> float:
    """A marker's area for a chart of ``runs`` points: 28 up to :data:`DETAIL_RUNS`,
    shrinking as the points crowd, never under :data:`_SHAPE_MARK`."""
    crowded: float = 28.0 * min(1.0, math.sqrt(DETAIL_RUNS / max(runs, 1)))
    return max(_SHAPE_MARK, crowded)


_PARTED = np.full((1, 2), np.nan)
"""A row of NaN between two tasks' steps on one line: the line breaks there."""

_HIDDEN = 0.01
"""The part of the lateness axis within which a task's whole curve hides under the others'
rise at 0 (about five pixels at the default size)."""


def lateness_distribution(frame: pd.DataFrame, ax: Axes | None = None) -> Figure:
    """Per task, the fraction of runs that started within a given lateness (an
    empirical CDF); the black dashed line marks 95 %, so where a task's curve crosses it
    is its 95th percentile.  A task whose runs all started on time is named "(never
    late)" in the legend: its curve is a vertical line at 0, hidden under the others'
    rise; one whose runs were all within 1 % of the largest lateness is named "(all
    within 1 s)", its worst, for the same reason; where every run started on time, the
    chart says so, on an axis of one second ticked by the half.  Past :data:`MAX_LEGEND_TASKS`
    tasks, the legend names those with the highest 95th percentile (nearest rank, as
    :func:`~lldsched.views.summaries.task_summary`'s), in their colours,
    and the rest are thin grey curves underneath.  A run of no known lateness (no due
    time or start: ``NaT``) is refused, naming it: left out, a task of none read "(never
    late)" (:func:`~lldsched.views.runs.check_lateness`)."""
    given, frame = frame, ran_reading(frame, _LATENESS_READS)
    check_lateness(frame)
    figure, ax = figure_and_axes(ax, (8.0, 4.5))
    lateness = seconds_of(frame["lateness"])
    codes, labels, palette, named = task_codes(frame, lateness, how="p95")
    divisor, unit = time_unit(float(lateness.max()) if len(frame) else 0.0)
    # A task never late is a vertical line at 0, under every other task's rise, and so
    # is one whose worst lateness is within _HIDDEN of the axis (a day's report-latam,
    # 1 s in 10 min): the legend says so, or its curve seems missing.
    latest = pd.Series(lateness).groupby(codes).max().reindex(range(len(labels))).to_numpy()
    hidden = _HIDDEN * (float(lateness.max()) if len(frame) else 0.0)
    labels = [
        f"{label} (never late)" if float(latest[code]) <= 0
        else f"{label} (all within {seconds_text(float(latest[code]))})"
        if float(latest[code]) <= hidden else label
        for code, label in enumerate(labels)
    ]  # fmt: skip
    rank = {code: n for n, code in enumerate(sorted(named))}
    # Each task's runs are a slice of one sort by task (a mask per task read every run
    # once a task: 720 tasks of a million runs, built in 0.59 s of CPU, now 0.32 s).
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(labels) + 1))
    by_task = lateness[order]
    rest: list[np.ndarray] = []  # the steps of the tasks not named, parted by NaN rows
    for code, label in enumerate(labels):
        values = np.sort(by_task[bounds[code] : bounds[code + 1]]) / divisor
        fraction = np.arange(1, len(values) + 1) / len(values)
        x, y = np.concatenate(([0.0], values)), np.concatenate(([0.0], fraction))
        if code not in rank:
            rest += [np.column_stack(STEP_LOOKUP_MAP["steps-post"](x, y)), _PARTED]
            continue
        ax.step(x, y, where="post", color=palette[code], linewidth=1.5, label=label,
                zorder=2, **task_mark(rank[code], drawn="line"))  # fmt: skip
    if rest:  # thin, grey, underneath: one line (a line a task: 6,000 tasks took 9 s)
        steps = np.concatenate(rest)
        ax.plot(steps[:, 0], steps[:, 1], color=OTHER_TASKS, linewidth=0.8, zorder=1.5,
                label="_", gid="other_tasks")  # fmt: skip
    if not len(frame):
        say_empty(ax, "runs", given)
    # Black and long-dashed: unlike every task's curve (tab20 has a grey, and a task's
    # line may be dotted: report-india's was this line's twin).
    ax.axhline(0.95, color="black", linestyle=_P95_DASHES, linewidth=0.8, gid="p95")
    # The label sits at the line's right end, past the largest lateness, where no curve
    # is drawn: anywhere inside the data a curve can cross it (every task's on-time runs
    # rise from 0 at the left edge; the latest task's last run rises at the largest
    # lateness).  The x axis runs a fifth past the data to make that room (about 1/6 of
    # the axes' width; the label needs 1/8 of the default figure's).
    largest = float(lateness.max()) / divisor if len(frame) else 0.0
    if largest > 0:
        ax.set_xlim(-0.02 * largest, largest * 1.2)
    else:  # nothing late: an axis of one second, ticked by the half (not 0.025 s apart)
        ax.set_xlim(-0.05, 1.2)
        ax.set_xticks([0.0, 0.5, 1.0])
        if len(frame):
            ax.text(
                0.5, 0.5, "every run started on time", transform=ax.transAxes,
                ha="center", va="center", color="0.35", gid="all_on_time",
            )  # fmt: skip
    ax.text(
        0.99, 0.945, "95 % of runs", transform=ax.get_yaxis_transform(), color="0.35",
        fontsize="small", ha="right", va="top",
    )  # fmt: skip
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"lateness ({unit})")
    ax.set_ylabel("fraction of runs started")
    ax.grid(color="0.9")
    ax.set_axisbelow(True)
    if len(labels):
        add_legend(ax, task_handles(labels, palette, named, drawn="line"))
    write_title(ax, "Lateness per task")
    return figure


MAX_COLUMNS = 900
"""The most intervals :func:`utilisation_plot` draws as columns: about the heat map's
width in pixels at its default size and 100 dpi (904).  matplotlib's mesh is not
antialiased, so a pixel over several columns shows the one drawn last, not their mean:
a lane busy a fifth of a year of minutes drew as speckles, each pixel all busy or all
idle, and the 525,600 columns took seconds and hundreds of megabytes to draw."""


def utilisation_plot(
    frame: pd.DataFrame,
    workers: Workers,
    freq: str = "1h",
    ax: Axes | None = None,
    tz: str | tzinfo = "UTC",
    *,
    max_columns: int | None = MAX_COLUMNS,
) -> Figure:
    """Each worker's busy fraction per ``freq`` interval as a heat map (a lane per
    worker), with a colour bar; the title gives the mean busy fraction over all workers
    (:func:`~lldsched.views.utilisation.mean_busy`: a worker is busy while at least one run
    is in flight on it, so the mean is never above 100 %).  Past
    :data:`MAX_LANES` workers every worker still has its row, but the figure is as
    tall as for :data:`MAX_LANES` and only every k-th row is labelled (at most
    :data:`MAX_LANES` labels, none overlapping).  A worker index that ran several things
    at once (the event loop's lane) reads above 1.0 (:func:`utilisation`): the colour
    scale then runs up to its figure, and its label says so.  The runs of several
    processes sharing a store get a row per process and worker (as :func:`utilisation`
    columns them), labelled ``"host:pid · worker 0"``; processes of different sizes take
    ``workers`` as a mapping from each node to its own workers (:func:`utilisation`), so
    a small process has no rows of workers it never had and the mean counts only the
    workers there were.

    Runs over more than ``max_columns`` intervals of ``freq`` (default
    :data:`MAX_COLUMNS`; ``None``: every interval, however many) are shown in longer
    ones, the shortest round length that fits (``"1min"`` over a year: ``"12h"``,
    :func:`~lldsched.views.utilisation.fitting_freq`), each the mean of the ``freq``
    intervals it holds; the title names the length drawn and the time axis's label
    says why.  ``utilisation(frame, workers, <that length>)`` is the table drawn."""
    most_columns = checks.whole_or_none(max_columns, name="max_columns", at_least=1)
    zone = as_zone(tz)  # before anything is drawn: an ax= given stays as it was
    # the runs picked out of frame once for the three (each of fitting_freq, utilisation
    # and mean_busy copied them)
    shown, asked, table, mean = utilisation_drawn(frame, workers, freq, most_columns)
    lanes = len(table.columns)
    tall = lanes_height(min(lanes, MAX_LANES), each=0.4)
    figure, ax = figure_and_axes(ax, (11.0, 1.8 + tall))
    if len(table):
        step = (table.index[1] - table.index[0]) if len(table) > 1 else pd.Timedelta(shown)
        edges = table.index.append(pd.DatetimeIndex([table.index[-1] + step]))
        x = date_numbers(pd.Series(edges))
        # A lane of runs at once (the event loop's) passes 1.0: the scale goes up to its
        # figure, not drawing 2.0 in the colour of 1.0, and says what above 1 means.
        most = max(1.0, float(np.nanmax(table.to_numpy())))
        mesh = ax.pcolormesh(x, np.arange(lanes + 1) - 0.5, table.to_numpy().T,
                             vmin=0.0, vmax=most, cmap="viridis")  # fmt: skip
        label = "busy fraction" if most == 1.0 else "busy fraction\n(above 1: runs at once)"
        figure.colorbar(mesh, ax=ax, label=label, pad=0.01)
        # mean_busy's: a lane of runs at once is busy once
        title = f"Worker utilisation per {shown}: mean {share_text(mean)}"
    else:
        say_empty(ax, "runs", frame)
        title = f"Worker utilisation per {shown}"
    every = -(-lanes // MAX_LANES)  # a label every k rows: at most MAX_LANES labels
    labelled = range(0, lanes, every)
    ax.set_yticks(labelled, [column_labels(list(table.columns))[i] for i in labelled])
    ax.set_ylim(max(lanes, 1) - 0.5, -0.5)
    ax.set_ylabel("node · worker" if isinstance(table.columns, pd.MultiIndex) else "worker")
    time_axis(ax, zone, blank=not len(table))
    if shown != freq:  # merged: the axis says from what, and why (a line under the
        # zone's: on one, the label ran into the date at the axis's right end)
        ax.set_xlabel(
            f"{ax.get_xlabel()}\nin intervals of {shown}: freq={freq!r} would be "
            f"{asked:,} columns, more than max_columns={most_columns:,}"
        )
    write_title(ax, title)
    return figure
