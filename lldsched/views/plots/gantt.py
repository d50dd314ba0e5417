"""The Gantt chart of worker occupancy: a lane per worker or per task, a bar per run."""

from __future__ import annotations

from datetime import tzinfo

import numpy as np
import pandas as pd

from lldsched.errors import ValidationError
from lldsched.views.plots._base import (
    DETAIL_RUNS,
    Axes,
    Figure,
    _axes,
    _draw_runs,
    _empty,
    _legend,
    _mark_handles,
    _palette,
    _set_xlim,
    _task_handles,
    _tasks,
    _time_axis,
    ran,
)

__all__ = ["gantt"]


def gantt(
    frame: pd.DataFrame,
    by: str = "worker",
    ax: Axes | None = None,
    tz: str | tzinfo = "UTC",
    *,
    title: str | None = None,
) -> Figure:
    """Worker occupancy: a lane per worker (``by="worker"``) or per task (``by="task"``),
    a bar per run from start to finish, one colour per task (with a legend), failed
    runs hatched, timed-out runs outlined, and each run's due time marked by a tick
    with a line to its start, so lateness shows as the line's length.  The time axis
    is in zone ``tz``.

    Bars have no outline and are not snapped to pixels, so a run narrower than a
    pixel shades it in proportion to its length: a lane's colour density is its
    occupancy, at ten runs or at 100,000.  Up to :data:`DETAIL_RUNS` runs every due
    time gets a tick; beyond that only late runs get their wait line, so the chart
    shows occupancy and where waits pile up.
    """
    if by not in ("worker", "task"):
        raise ValidationError(f'by must be "worker" or "task", got {by!r}')
    frame = ran(frame)  # a slot a misfire policy decided ran on no worker
    codes, labels = _tasks(frame)
    if by == "worker":
        workers = sorted(frame["worker"].unique().tolist())
        lane = np.searchsorted(np.array(workers, dtype=np.int64), frame["worker"].to_numpy())
        lane_labels = [f"worker {w}" for w in workers]
    else:
        lane, lane_labels = codes, labels
    lanes = len(lane_labels)
    figure, ax = _axes(ax, (11.0, 1.6 + 0.45 * max(lanes, 2)))
    palette = _palette(len(labels))
    detail = len(frame) <= DETAIL_RUNS
    if len(frame):
        low, high = _draw_runs(ax, frame, lane.astype(float), palette[codes], detail=detail)
        _set_xlim(ax, low, high)
        _legend(ax, [*_task_handles(labels, palette), *_mark_handles(frame, detail)])
    else:
        _empty(ax, "runs")
    ax.set_yticks(range(lanes), lane_labels)
    ax.set_ylim(max(lanes, 1) - 0.5, -0.5)
    ax.set_ylabel("worker" if by == "worker" else "task")
    ax.grid(axis="x", color="0.9", zorder=0)
    ax.set_axisbelow(True)
    _time_axis(ax, tz)
    ax.set_title(title if title is not None else _gantt_title(frame, by, lanes), loc="left")
    return figure


def _gantt_title(frame: pd.DataFrame, by: str, lanes: int) -> str:
    outcome = frame["outcome"]
    failed = int((outcome == "failed").sum())
    timed_out = int((outcome == "timed_out").sum())
    what = "workers" if by == "worker" else "tasks"
    return f"{len(frame):,} runs on {lanes} {what}: {failed:,} failed, {timed_out:,} timed out"
