"""Plain-text summaries of execution records (standard library only).

The pandas frames and plots live in the views; this is what the command line
prints, and what a script without the notebook extra can use.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from lldsched.model import ExecutionRecord
from lldsched.schedules.base import Schedule
from lldsched.schedules.cron import CronSchedule
from lldsched.schedules.simple import FixedRate

__all__ = ["TaskSummary", "format_summary", "nearest_rank", "overran", "percentile", "summarize"]


class TaskSummary(NamedTuple):
    """One task's runs, counted and measured."""

    name: str
    runs: int
    ok: int
    failed: int
    timed_out: int
    retries: int
    overruns: int
    lateness_p50: float
    lateness_p95: float
    lateness_max: float
    duration_p50: float
    duration_max: float


def nearest_rank(count: int, q: float) -> int:
    """The index, in ``count`` sorted values (count >= 1), of their ``q``-th percentile
    (0 < q <= 100) by nearest rank: always one of the values, never an interpolation.
    The one percentile rule of the summaries (:func:`percentile` here,
    :func:`lldsched.views.frames.task_summary` on a frame)."""
    return max(1, math.ceil(q / 100 * count)) - 1


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 < q <= 100) of sorted ``values``; 0 if empty."""
    if not values:
        return 0.0
    return values[nearest_rank(len(values), q)]


def overran(schedule: Schedule | None, record: ExecutionRecord) -> bool:
    """True when the run itself lasted longer than the gap to its schedule's next slot
    (fixed rate and cron).  Time spent waiting for a worker is lateness, not overrun."""
    if isinstance(schedule, FixedRate):
        gap: float | None = schedule.period
    elif isinstance(schedule, CronSchedule):
        following = schedule.next_after(record.slot)
        gap = None if following is None else following - record.slot
    else:
        return False
    return gap is not None and record.duration > gap


def summarize(
    records: Iterable[ExecutionRecord], schedules: dict[str, Schedule] | None = None
) -> list[TaskSummary]:
    """Per-task summaries, in the order the tasks first ran.  ``schedules`` maps task ids
    to schedules, for counting overruns."""
    grouped: dict[str, list[ExecutionRecord]] = {}
    for record in records:
        if record.outcome.ran:  # a slot a policy decided without a run is no run
            grouped.setdefault(record.task_id, []).append(record)
    rows = []
    for task_id, runs in grouped.items():
        lateness = sorted(r.lateness for r in runs)
        durations = sorted(r.duration for r in runs)
        schedule = (schedules or {}).get(task_id)
        rows.append(
            TaskSummary(
                name=runs[0].name,
                runs=len(runs),
                ok=sum(r.ok for r in runs),
                failed=sum(not r.ok and not r.timed_out for r in runs),
                timed_out=sum(r.timed_out for r in runs),
                retries=sum(r.attempt > 1 for r in runs),
                overruns=sum(overran(schedule, r) for r in runs if r.attempt == 1),
                lateness_p50=percentile(lateness, 50),
                lateness_p95=percentile(lateness, 95),
                lateness_max=lateness[-1],
                duration_p50=percentile(durations, 50),
                duration_max=durations[-1],
            )
        )
    return rows


def _seconds(value: float) -> str:
    if value >= 3600:
        return f"{value / 3600:.1f}h"
    if value >= 60:
        return f"{value / 60:.1f}m"
    return f"{value:.0f}s" if value >= 10 or value == 0 else f"{value:.1f}s"


def format_summary(rows: Sequence[TaskSummary]) -> str:
    """A fixed-width table of ``rows``."""
    header = ("task", "runs", "ok", "failed", "timeout", "retries", "overrun",
              "late p50", "late p95", "late max", "dur p50", "dur max")  # fmt: skip
    table: list[tuple[str, ...]] = [header]
    for row in rows:
        counts = (row.runs, row.ok, row.failed, row.timed_out, row.retries, row.overruns)
        times = (row.lateness_p50, row.lateness_p95, row.lateness_max,
                 row.duration_p50, row.duration_max)  # fmt: skip
        table.append((row.name, *map(str, counts), *map(_seconds, times)))
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in table
    ]
    return "\n".join(lines)
