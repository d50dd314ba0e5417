"""The Gantt chart of worker occupancy: a lane per worker or per task, a bar per run;
optionally the dependency edges between runs and the waits of blocked slots."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any, cast

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.lines import Line2D

from lldsched import checks
from lldsched.clock import to_timestamp
from lldsched.errors import ValidationError, shown
from lldsched.logs import counted
from lldsched.printable import one_line
from lldsched.views.durations import seconds_text
from lldsched.views.lanes import (
    Workers,
    lane_label,
    mapped_lanes,
    missing_nodes,
    node_label,
    run_nodes,
    worker_lanes,
)
from lldsched.views.plots._base import (
    MAX_LANES,
    MIN_LANE_INCHES,
    Axes,
    Figure,
    add_legend,
    detailed,
    figure_and_axes,
    first_free_rows,
    lanes_height,
    root_figure,
    say_empty,
    write_title,
)
from lldsched.views.plots.palette import text_on
from lldsched.views.plots.runbars import BAR_HEIGHT, draw_runs, failures, mark_handles
from lldsched.views.plots.taskcolours import task_codes, task_handles, task_label
from lldsched.views.plots.timeaxis import (
    as_zone,
    date_numbers,
    seconds_of,
    set_time_span,
    time_axis,
)
from lldsched.views.report import NOT_RUNS
from lldsched.views.runs import check_spans, instants, ran_reading

__all__ = ["MAX_ROWS_AT_ONCE", "gantt", "mark_wait"]

_GANTT_READS = frozenset({
    "task_id", "name", "attempt", "worker", "node", "due", "start", "finish", "duration",
    "ok", "timed_out", "outcome", "error",
})  # fmt: skip
"""The columns of a frame's runs a Gantt chart reads: its copy of the runs has only these
(:func:`~lldsched.views.runs.ran_reading`)."""


def gantt(
    frame: pd.DataFrame,
    by: str = "worker",
    ax: Axes | None = None,
    tz: str | tzinfo = "UTC",
    *,
    title: str | None = None,
    span: tuple[float | datetime, float | datetime] | None = None,
    depends_on: Mapping[str, Sequence[str]] | None = None,
    max_lanes: int | None = MAX_LANES,
    workers: Workers | None = None,
) -> Figure:
    """Worker occupancy: a lane per worker (``by="worker"``) or per task (``by="task"``),
    a bar per run from start to finish, one colour per task (with a legend), failed
    runs hatched, runs cancelled (for a newer slot, ``Overlap.CANCEL_OTHER``, or by a
    shutdown, each keyed by what cut it; counted apart from the failed, as
    :func:`task_summary` does) hatched the other way,
    timed-out runs outlined, and each run's due time marked by a tick
    with a line to its start, so lateness shows as the line's length.  The time axis
    is in zone ``tz``.

    Bars have no outline and are not snapped to pixels, so a run narrower than a
    pixel shades it in proportion to its length: a lane's colour density is its
    occupancy, at ten runs or at 100,000.  Up to :data:`DETAIL_RUNS` runs every due
    time gets a tick; beyond that only late runs get their wait line, so the chart
    shows occupancy and where waits pile up.  Up to :data:`DETAIL_RUNS` runs, a run
    too short to show as a bar (under :data:`SHORT_RUN` of the time span) is also
    drawn as a diamond at its start, crossed if it failed (its hatching cannot show).

    ``span`` (two aware datetimes or epoch seconds) zooms on that window: the chart is
    of the runs that overlap it (a run that crosses an edge is drawn cut there), and the
    title's counts, the legend's choice of tasks, the busiest lanes and the level of
    detail are theirs (a run's time in the window is what weighs), while a task keeps
    the colour the chart of the whole frame gives it (:func:`task_codes`'s
    ``within``).  Without it the axis covers the runs.  A ``span`` with no run in it
    shows that span, empty.

    ``depends_on`` (task id to upstream ids: :func:`~lldsched.views.frames.dependencies_of`
    of a runtime) draws each dependency as a dashed arrow from the upstream run whose
    success let a dependent's slot start (its latest success before that start) to
    the dependent run, up to :data:`DETAIL_RUNS` runs.  With ``by="task"`` the wait
    of each blocked slot (a record whose outcome is ``blocked``) is drawn on the
    task's lane as a hatched grey band, from when it was found blocked to when the
    wait ended.

    Beyond :data:`MAX_LEGEND_TASKS` tasks the legend names the tasks with the most run
    time, which keep their colours; every other task is grey.  ``max_lanes`` bounds
    the lanes drawn (default :data:`MAX_LANES`; on an ``ax=`` given, also as many as
    fit its height at :data:`MIN_LANE_INCHES` each; ``None``: every lane, however
    tall the figure): past it the lanes with the most run time are drawn, in their
    usual order, the title counts every run, and its second line says how many
    lanes were left out ("40 busiest of 300 tasks drawn").  Without ``ax`` the figure
    is 0.45 inch a lane up to 16 lanes and 0.25 for each one more.

    The runs of several processes sharing a store (the frame's ``node`` column: each
    numbers its workers from 0) get a lane per process and worker, labelled
    ``"host:pid · worker 0"`` (:func:`~lldsched.views.lanes.run_nodes`), and the runs
    that name no process (``node`` missing or ``""``) beside them ``"no node · worker 0"``;
    with one process or none, a lane per worker, ``"worker 0"``.

    A run without a start or a finish (``NaT``), or that finished before it started, has
    no bar: it is refused, naming it (:func:`~lldsched.views.runs.check_spans`), as
    is a time column without a zone.

    Runs at once on one lane (the event loop's coroutines, on ``worker == workers``; a
    plain function's awaitable, on the worker that called it, beside that worker's next
    runs; a task's ``Overlap.ALLOW`` runs, by task) get a row each, ``+1``, ``+2`` under
    the lane's label, at most :data:`MAX_ROWS_AT_ONCE`, and the key says how many ran at
    once; ``max_lanes`` then bounds the rows (fewer of the busiest lanes are drawn).

    ``workers`` (by worker only) names the lanes, as :func:`utilisation` takes it and
    by its rules (:func:`~lldsched.views.lanes.mapped_lanes`): a count or worker
    indexes every process has, or a mapping from each node (its whole holder id, the
    frame's ``node`` value; ``None`` for runs that name none) to its own, so a worker
    that ran nothing has an empty lane; a run on a worker, or of a node, it leaves out
    is refused, naming it.  Without it, the lanes are the workers that ran something.
    Past ``max_lanes``, empty lanes are the least busy, left out first.
    """
    if by not in ("worker", "task"):
        raise ValidationError(f'by must be "worker" or "task", got {shown(by)}')
    if max_lanes is not None:
        checks.whole(max_lanes, name="max_lanes", at_least=1)
    if title is not None and not isinstance(title, str):  # drawn as str(title): 5 was "5"
        raise ValidationError(f"title must be a text or None, got {shown(title)}")
    if workers is not None and by != "worker":
        raise ValidationError(
            f'workers names the lanes of a chart by worker (by="worker"); by={shown(by)} has a '
            f"lane per task, got workers={shown(workers)}"
        )
    # Checked before anything is drawn: on an ax= given, a refusal leaves it as it was.
    zone = as_zone(tz)
    window = None if span is None else _span(span)  # seconds
    if depends_on is not None:
        _check_depends_on(depends_on)
    # a slot a misfire policy decided ran on no worker; checks frame
    everything = ran_reading(frame, _GANTT_READS)
    given, waits = frame, frame[frame["outcome"] == "blocked"]
    # a run with no start or finish, or backwards, has no bar
    start, finish = check_spans(everything)
    fit = max_lanes if ax is None or max_lanes is None else _fitting(ax, max_lanes)
    nodes = run_nodes(everything)  # of every run: the lanes drawn may be one node's
    run_time = seconds_of(everything["duration"])
    whole = None
    if window is not None:  # a zoom: the runs in the window, weighed by their time in it
        low_us, high_us = (round(end * 1e6) for end in window)
        inside = (finish >= low_us) & (start <= high_us)
        whole = (everything, run_time)
        cut = np.minimum(finish, high_us) - np.maximum(start, low_us)
        everything, run_time = everything[inside], cut[inside] / 1e6
        given, waits = _overlapping(given, window), _overlapping(waits, window)
    # each run's lane by worker (of its node), a code from 0; the lanes' labels
    every_lane = (
        None if by != "worker"
        else worker_lanes(everything, nodes) if workers is None
        else mapped_lanes(everything, workers)
    )  # fmt: skip
    chosen, kept, note = _busiest_lanes(everything, run_time, by, fit, every_lane)
    frame = everything if chosen.all() else everything[chosen]
    codes, labels, palette, named = task_codes(frame, run_time[chosen], within=whole)
    if every_lane is not None:  # the lanes kept, in their order, numbered from 0
        shown_lanes = np.sort(kept.to_numpy(dtype=np.int64))
        base = np.searchsorted(shown_lanes, every_lane[0][chosen])
        base_labels = [every_lane[1][code] for code in shown_lanes.tolist()]
    else:
        base, base_labels = codes, labels
    lane, lane_labels, first_rows, crowded = _rows_at_once(frame, base, base_labels)
    lanes = len(lane_labels)
    figure, ax = figure_and_axes(ax, (11.0, 1.6 + lanes_height(lanes)))
    detail = detailed(len(frame))
    days = None if window is None else (window[0] / 86400.0, window[1] / 86400.0)
    if len(frame):
        low, high = draw_runs(
            ax, frame, lane.astype(float), palette[codes], detail=detail, span=days
        )
        drawn = {c.get_gid() for c in ax.collections}
        marks = mark_handles(
            frame, detail, short="short_runs" in drawn, short_failed="short_failed_runs" in drawn
        )
        earliest = (
            _draw_waits(ax, waits, dict(zip(pd.unique(frame["task_id"]), first_rows, strict=True)))
            if by == "task" and len(waits) else None
        )  # fmt: skip
        if earliest is not None:
            low = min(low, earliest)
            marks.append(_WAIT_HANDLE)
        set_time_span(ax, low, high)
        if by == "worker" and detail:  # a lane per worker: the bar says its task too
            _name_bars(ax, frame, lane.astype(float), palette[codes], days or ax.get_xlim())
        if depends_on and detail and _draw_edges(ax, frame, lane.astype(float), depends_on):
            marks.append(_EDGE_HANDLE)
        if crowded:  # the rows "+1", "+2" of runs at once, said in the key
            marks.append(Line2D([], [], linestyle="none", label=crowded))
        add_legend(ax, [*task_handles(labels, palette, named), *marks])
    else:
        say_empty(ax, "runs" if window is None else "runs in the span", given)
    if days is not None:
        ax.set_xlim(*days)
    ax.set_yticks(range(lanes), lane_labels)
    ax.set_ylim(max(lanes, 1) - 0.5, -0.5)
    paired = nodes or isinstance(workers, Mapping)  # lanes of (node, worker)
    ax.set_ylabel(("node · worker" if paired else "worker") if by == "worker" else "task")
    ax.grid(axis="x", color="0.9", zorder=0)
    ax.set_axisbelow(True)
    time_axis(ax, zone, blank=not len(frame) and window is None)
    title = title if title is not None else _gantt_title(everything, every_lane)
    # The note is the title's second line: at the top right, on the title's line, it ran
    # into the title where a legend of long names narrowed the chart (2,000 tasks).
    write_title(ax, f"{title}\n{note}" if note else title)
    return figure


_NAME_POINTS = 7.0
"""The size of a task's name written on its bar (a lane per worker)."""


def _name_bars(
    ax: Axes,
    frame: pd.DataFrame,
    lane: np.ndarray[Any, Any],
    colours: np.ndarray[Any, Any],
    span: tuple[float, float],
) -> None:
    """Write each run's task name on its bar where the bar is wide enough to hold it, in
    black or white, whichever reads better on the bar (:func:`text_on`): on a lane per
    worker the bar's colour was all that said which task ran, and ``tab20``'s colours
    are not told apart by every reader."""
    start, finish = date_numbers(frame["start"]), date_numbers(frame["finish"])
    width = ax.get_position().width * root_figure(ax).get_figwidth() * 72  # points, roughly
    per_point = (span[1] - span[0]) / max(width, 1.0)
    names = [one_line(name) for name in frame["name"].astype(str).tolist()]  # as its lane
    for i in range(len(frame)):
        room = (min(finish[i], span[1]) - max(start[i], span[0])) / per_point
        if room < len(names[i]) * _NAME_POINTS * 0.62 + 4:  # DejaVu Sans: ~0.6 em a letter
            continue
        ax.text(
            (max(start[i], span[0]) + min(finish[i], span[1])) / 2, lane[i], names[i],
            ha="center", va="center", fontsize=_NAME_POINTS, color=text_on(colours[i]),
            clip_on=True, zorder=4, gid="bar_names",
            # on the bar's own colour: a failed run's hatching stops short of the name
            bbox={"boxstyle": "square,pad=0.15", "facecolor": colours[i], "edgecolor": "none"},
        )  # fmt: skip


_EDGE_COLOUR = "0.25"
_EDGE_HANDLE = Line2D([], [], color=_EDGE_COLOUR, linestyle="--", label="upstream → dependent")
_WAIT_HANDLE = PolyCollection(
    [], facecolors="0.85", edgecolors="0.45", hatch="xx", label="blocked (waits for upstreams)"
)


def _draw_edges(
    ax: Axes, frame: pd.DataFrame, lane: np.ndarray[Any, Any], depends_on: Mapping[str, Any]
) -> bool:
    """An arrow from each upstream success to the first attempt it let start; True if
    any was drawn."""
    ids = frame["task_id"].astype(str).to_numpy()
    start, finish = date_numbers(frame["start"]), date_numbers(frame["finish"])
    ok, first = frame["ok"].to_numpy(), frame["attempt"].to_numpy() == 1
    dependents = np.flatnonzero(first & np.isin(ids, list(depends_on)))
    drawn = 0
    for i in dependents:
        for upstream in depends_on[ids[i]]:
            before = np.flatnonzero((ids == upstream) & ok & (finish <= start[i]))
            if not len(before):
                continue
            j = before[np.argmax(finish[before])]
            if lane[j] == lane[i] and finish[j] == start[i]:
                continue  # back to back on one lane: an arrow of no length shows nothing
            ax.annotate(
                "", xy=(start[i], lane[i]), xytext=(finish[j], lane[j]),
                arrowprops={"arrowstyle": "->", "color": _EDGE_COLOUR, "linestyle": "--",
                            "shrinkA": 0, "shrinkB": 0, "linewidth": 1.0},
                zorder=6,
            )  # fmt: skip
            drawn += 1
    return drawn > 0


def _draw_waits(ax: Axes, waits: pd.DataFrame, rows: Mapping[Any, float]) -> float | None:
    """The blocked waits of tasks that have a lane (a task with runs: ``rows``, task id
    to the y of its lane's first row), as hatched bands; the earliest start drawn (a date
    number), None if none was."""
    lanes = waits["task_id"].map(rows)
    shown = lanes.notna().to_numpy()
    if not shown.any():
        return None
    waits = waits[shown]
    lane = lanes[shown].to_numpy(dtype=float)
    start, finish = date_numbers(waits["start"]), date_numbers(waits["finish"])
    low, high = lane - BAR_HEIGHT / 4, lane + BAR_HEIGHT / 4
    boxes = np.stack(
        [np.column_stack(corner) for corner in
         ((start, low), (start, high), (finish, high), (finish, low))],
        axis=1,
    )  # fmt: skip
    band = PolyCollection(
        cast(Any, boxes), facecolors="0.85", edgecolors="0.45", linewidths=0.5, hatch="xx",
        zorder=1,
    )  # fmt: skip
    band.set_gid("blocked")
    ax.add_collection(band, autolim=False)
    return float(start.min())


MAX_ROWS_AT_ONCE = 6
"""The most rows a lane of a Gantt chart is split into for runs that overlap on it; the
runs past them share the last row (drawn over one another), and the note says how many
ran at once at most."""


def _rows_at_once(
    frame: pd.DataFrame, base: np.ndarray[Any, Any], labels: Sequence[str]
) -> tuple[np.ndarray[Any, Any], list[str], list[float], str]:
    """Each run's y (a float), the label of each row, the y of each lane's first row, and
    a note: a lane whose runs overlap in time gets a row for each run at once.

    A thread runs one thing at a time, but not every lane does: the event loop's
    (``worker == workers``) runs many coroutines at once, a plain function's awaitable
    is recorded on the worker that called it (free again at once, it runs the next),
    and a task with ``Overlap.ALLOW`` runs on several workers at once (a lane per
    task); several processes' runs get a lane per process and worker
    (:func:`worker_lanes`), but the runs that name no process still share theirs.  Drawn
    on one row, each such run's bar covered the others: four coroutines of half a second
    read as one.  Each run takes the first row of its lane free at its start (rows
    numbered from the top, the lane's label on its first, "+1", "+2" under it; at most
    :data:`MAX_ROWS_AT_ONCE`); the note, for the chart's key, says which lanes were split
    and how many runs they ran at once at most.  A chart of no overlap is drawn as
    before, a row a lane."""
    count = len(labels)
    row, most = _at_once(frame, base, count)
    if not (most > 1).any():
        return base.astype(float), list(labels), [float(code) for code in range(count)], ""
    rows = np.minimum(most, MAX_ROWS_AT_ONCE)
    offset = np.concatenate(([0], np.cumsum(rows)[:-1]))
    lane = offset[base] + np.minimum(row, rows[base] - 1)
    lane_labels = [
        labels[code] if extra == 0 else f"+{extra}"
        for code in range(count)
        for extra in range(int(rows[code]))
    ]
    split = [f"{labels[code]}: {int(most[code])}" for code in np.flatnonzero(most > 1).tolist()]
    more = f", {len(split) - 3} more" if len(split) > 3 else ""
    note = f"+1, +2: a row each for runs\nat once ({', '.join(split[:3])}{more})"
    return lane.astype(float), lane_labels, offset.astype(float).tolist(), note


def _at_once(frame: pd.DataFrame, base: np.ndarray[Any, Any], count: int) -> tuple[Any, Any]:
    """Each run's row in its lane (``base``: a code from 0 to ``count - 1``), and the most
    runs at once on each lane (1 where none overlap): see :func:`_rows_at_once`."""
    row = np.zeros(len(frame), dtype=np.int64)
    most = np.ones(count, dtype=np.int64)
    if not len(frame):
        return row, most
    start = frame["start"].to_numpy(dtype="M8[us]").astype(np.int64)
    finish = frame["finish"].to_numpy(dtype="M8[us]").astype(np.int64)
    order = np.lexsort((start, base))
    lanes = base[order]
    ahead = pd.Series(finish[order]).groupby(lanes).cummax().groupby(lanes).shift()
    overlapping = start[order] < ahead.to_numpy(dtype=float, na_value=np.nan)
    for code in np.unique(lanes[overlapping]).tolist():
        mine = order[lanes == code]  # the lane's runs, by start
        row[mine], most[code] = first_free_rows(start[mine], finish[mine])
    return row, most


def _span(span: tuple[float | datetime, float | datetime]) -> tuple[float, float]:
    """``span`` as epoch seconds; refused, naming it, unless it is two instants
    in order (an int gave ``TypeError: 'int' object is not iterable``, three instants
    ``ValueError: too many values to unpack``)."""
    try:
        if isinstance(span, str | bytes):
            raise TypeError  # two characters are no instants
        first, last = span
    except (TypeError, ValueError):
        raise ValidationError(
            f"span must be two instants (start, end): aware datetimes or epoch seconds, "
            f"got {shown(span)}"
        ) from None
    low, high = (to_timestamp(end, name="span") for end in (first, last))
    if not high > low:
        raise ValidationError(f"span must run forwards, got {span!r}")
    return low, high


def _overlapping(frame: pd.DataFrame, window: tuple[float, float]) -> pd.DataFrame:
    """The rows of ``frame`` (records: runs, waits, slots decided without a run) whose
    start and finish overlap ``window`` (epoch seconds, both ends in); a row without
    them (``NaT``) is in none."""
    low, high = (round(end * 1e6) for end in window)
    start, finish = (instants(frame[key]).astype(np.int64) for key in ("start", "finish"))
    lost = np.iinfo(np.int64).min  # NaT
    rows: pd.DataFrame = frame[(start != lost) & (finish >= low) & (start <= high)]
    return rows


def _check_depends_on(depends_on: object) -> None:
    """``depends_on`` refused, naming it, unless it maps task ids to collections of
    upstream ids (:func:`~lldsched.views.frames.dependencies_of`): an int raised
    ``TypeError`` out of the arrows, with the bars drawn already, and a text of one
    upstream id was read as ids of one character each, drawing nothing."""
    if isinstance(depends_on, Mapping) and all(
        isinstance(task, str)
        and isinstance(upstreams, Collection)
        and not isinstance(upstreams, str | bytes)
        and all(isinstance(upstream, str) for upstream in upstreams)
        for task, upstreams in depends_on.items()
    ):
        return
    raise ValidationError(
        "depends_on must map task ids to their upstream task ids, as "
        f"dependencies_of(runtime) gives ({{'load': ('extract',)}}), got {shown(depends_on)}"
    )


def _gantt_title(frame: pd.DataFrame, by_worker: tuple[Any, list[str]] | None) -> str:
    """The runs of every lane, drawn or not (those in the span, if one was given), and
    how many failed or timed out (and were cancelled, if any was), as the summaries count
    them (:func:`failures`).  A chart by worker has ``by_worker`` (:func:`worker_lanes`
    of ``frame``), one by task None.  A chart of no run says "No runs", on the lanes
    ``workers=`` named, if any: "0 runs on 0 workers: 0 failed, 0 timed out" read as a
    pool of no worker, and its counts said nothing."""
    what = "worker" if by_worker is not None else "task"
    lanes = len(by_worker[1]) if by_worker is not None else frame["task_id"].nunique()
    if not len(frame):
        return f"No runs on {counted(lanes, what)}" if lanes else "No runs"
    failed, timed_out, cancelled = (int(cut.sum()) for cut in failures(frame))
    return (
        f"{counted(len(frame), 'run')} on {counted(lanes, what)}: "
        f"{failed:,} failed, {timed_out:,} timed out"
        + (f", {cancelled:,} cancelled" if cancelled else "")
    )


def _fitting(ax: Axes, max_lanes: int) -> int:
    """The lanes that fit the height of ``ax`` at :data:`MIN_LANE_INCHES` each (at
    least one), and at most ``max_lanes``."""
    figure = root_figure(ax)  # checks it is an Axes first
    inches = ax.get_position().height * figure.get_figheight()
    return min(max(int(inches / MIN_LANE_INCHES), 1), max_lanes)


def _busiest_lanes(
    frame: pd.DataFrame,
    run_time: np.ndarray[Any, Any],
    by: str,
    max_lanes: int | None,
    by_worker: tuple[Any, Any] | None,
) -> tuple[np.ndarray[Any, Any], pd.Index, str]:
    """Which runs to draw (a mask of ``frame``'s rows): those of the busiest lanes (the
    most run time, ``run_time`` seconds a row) whose rows (a lane of runs at once has
    several: :func:`_rows_at_once`) number at most ``max_lanes`` (every lane for
    ``None``; at least the busiest one); the lanes kept; and the note that says how many
    lanes were left out ("" if none were).
    By worker, ``by_worker`` is each run's lane and every lane's label
    (:func:`worker_lanes` or :func:`mapped_lanes` of ``frame``), and the lanes kept are
    their codes: a lane without runs (a worker ``workers=`` names that ran nothing) is
    among the least busy."""
    key = (
        pd.Series(by_worker[0], index=frame.index) if by_worker is not None
        else frame["task_id"]
    )  # fmt: skip
    busy = pd.Series(run_time, index=frame.index).groupby(
        key.to_numpy(), sort=False
    ).sum()  # fmt: skip
    if by_worker is not None:  # the lanes without runs, after the others
        idle = np.setdiff1d(np.arange(len(by_worker[1])), busy.index.to_numpy())
        busy = busy.reindex([*busy.index, *idle.tolist()], fill_value=0.0)
    everything = np.ones(len(frame), dtype=bool)
    if max_lanes is None or len(busy) * MAX_ROWS_AT_ONCE <= max_lanes:
        return everything, busy.index, ""  # every lane, and every row of runs at once, fits
    # A stable sort: of lanes equally busy, the first to appear stays.
    kept = busy.index[np.argsort(-busy.to_numpy(), kind="stable")[:max_lanes]]
    chosen = everything if len(busy) <= max_lanes else key.isin(kept).to_numpy()
    codes, keys = pd.factorize(key[chosen])
    _, most = _at_once(frame[chosen], codes, len(keys))
    rows = pd.Series(np.minimum(most, MAX_ROWS_AT_ONCE), index=keys).reindex(kept, fill_value=1)
    if rows.sum() > max_lanes:  # runs at once: fewer lanes, so that their rows fit
        fits = rows.cumsum().to_numpy() <= max_lanes
        kept = kept[: max(int(fits.sum()), 1)]
        chosen = key.isin(kept).to_numpy()
    if len(kept) == len(busy):
        return everything, busy.index, ""
    what = "workers" if by == "worker" else "tasks"
    note = f"{len(kept)} busiest of {len(busy):,} {what} drawn; {len(busy) - len(kept):,} left out"
    return chosen, kept, note


def _row_of(ax: Axes, labels: Sequence[str], lane: int, start: float) -> int:
    """The row of ``lane`` (its first) or of its rows of runs at once (``+1``, ``+2``
    under it: :func:`_rows_at_once`) whose bar starts at ``start``: the first row if none
    does, or the lane has one row."""
    rows = [lane]
    while rows[-1] + 1 < len(labels) and labels[rows[-1] + 1].startswith("+"):
        rows.append(rows[-1] + 1)
    bars = [c for c in ax.collections if c.get_gid() == "runs"]
    if len(rows) == 1 or not bars:
        return lane
    corners = np.concatenate([np.asarray(path.vertices) for path in bars[0].get_paths()])
    at_start = np.isclose(corners[:, 0], start, rtol=0.0, atol=1e-9)  # about 0.1 ms
    drawn = set(np.rint(corners[at_start, 1]).astype(int).tolist())  # a bar's row
    return next((row for row in rows if row in drawn), lane)


_RUN_FIELDS = frozenset({"task_id", "name", "worker", "due", "start"})
"""The fields of a frame's row :func:`mark_wait` reads."""


def mark_wait(
    chart: Figure | Axes, run: pd.Series[Any], *, by: str = "worker", text: str | None = None
) -> Figure:
    """Annotate one run's wait on a :func:`gantt` chart: an arrow to the line from its
    due time to its start, labelled "waited 5 min 51 s" (or ``text``).  ``run`` is a
    row of the frame the chart was drawn from; ``by`` is the chart's ``by``.  On a lane
    of runs at once, the arrow points at the row of the run's bar.  A row of a slot decided
    without a run (skipped, missed, coalesced, blocked: its ``lateness`` is when it was
    decided, no wait) is refused, naming it: ``frame["lateness"].argmax()`` over a frame
    of SKIP overruns often picks one."""
    if isinstance(chart, Axes):
        ax = chart
    elif isinstance(chart, Figure) and chart.axes:
        ax = chart.axes[0]
    else:  # named, not matplotlib's AttributeError ('int' object has no attribute 'axes')
        raise ValidationError(
            f"chart must be a gantt chart (its Figure or Axes), got {shown(chart)}"
        )
    if by not in ("worker", "task"):
        raise ValidationError(f'by must be "worker" or "task", got {shown(by)}')
    if text is not None and not isinstance(text, str):
        raise ValidationError(f"text must be a text or None, got {shown(text)}")
    if not (isinstance(run, pd.Series) and _RUN_FIELDS.issubset(run.index)):
        raise ValidationError(
            "run must be a row of the frame the chart was drawn from (frame.iloc[i]), "
            f"got {shown(run)}"
        )
    if "outcome" in run.index and str(run["outcome"]) in NOT_RUNS:  # no bar, no wait
        raise ValidationError(
            f"task {run['task_id']!r} attempt {run.get('attempt')} is a slot decided "
            f"without a run ({run['outcome']}, due {run['due']}), not a run: it has no bar "
            "and no wait to mark; pick a row of the runs, ran(frame) "
            "(lldsched.views.frames.ran)"
        )
    if pd.isna(run["due"]) or pd.isna(run["start"]):  # an arrow to NaN drew nothing
        raise ValidationError(
            f"task {run['task_id']!r} attempt {run.get('attempt')} has no wait to mark: "
            f"due {run['due']}, start {run['start']}"
        )
    labels = [label.get_text() for label in ax.get_yticklabels()]
    name = one_line(str(run["name"]))  # as task_codes labels its lane
    # A task's lane is labelled as task_codes labels it: its name (shortened if long, whole
    # if shortening would make it another's), or, for a name two tasks share, with its id.
    lane_labels = (
        _worker_labels(run) if by == "worker"
        else [task_label(f"{name} ({run['task_id']})"), task_label(name), name]
    )  # fmt: skip
    found = [label for label in lane_labels if label in labels]
    if not found:
        raise ValidationError(f"the chart has no lane {lane_labels[-1]!r}; its lanes are {labels}")
    lane = labels.index(found[0])
    due, start = (to_timestamp(run[key].to_pydatetime()) / 86400.0 for key in ("due", "start"))
    lane = _row_of(ax, labels, lane, start)
    waited = seconds_text((run["start"] - run["due"]).total_seconds())
    label = text if text is not None else f"{name} waited {waited}"
    ax.annotate(
        label, xy=((due + start) / 2, lane + 0.42), xytext=(40, -16),
        textcoords="offset points", ha="left", va="top", fontsize="small",
        arrowprops={"arrowstyle": "->", "color": "0.15"},
        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "0.6"},
        zorder=7,
    )  # fmt: skip
    return root_figure(ax)


def _worker_labels(run: pd.Series[Any]) -> list[str]:
    """The labels the lane of ``run`` may have on a chart by worker: of its node's worker
    (the node in short, or whole where the short form names two: ``node_labels``) on a
    chart of several processes' runs, else ``"worker 0"`` (last, as the error names it)."""
    worker = int(run["worker"])
    named = "node" in run.index and not missing_nodes(pd.Series([run["node"]]))[0]
    node = str(run["node"]) if named else None
    ids = dict.fromkeys([node_label(node), "no node" if node is None else node])
    return [*(lane_label(text, worker) for text in ids), lane_label(None, worker)]
