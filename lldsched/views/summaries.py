"""Summaries of a frame of runs: one row per task; and the one import of all of them.

:func:`task_summary` is one row per task of a frame :func:`~lldsched.views.frames.to_frame`
made (runs, outcomes, retries, given-up and skipped slots, lateness and duration
percentiles, overruns, blocked waits; :data:`SUMMARY_COLUMNS`), by the rule the command
line's text summary follows too (:func:`lldsched.views.report.summary_of`).

The other summaries of a frame are importable from here too, as they always were:
each worker's busy time (:func:`utilisation`, :func:`mean_busy`, :func:`fitting_freq`:
:mod:`lldsched.views.utilisation`), the lanes of runs (:func:`run_nodes`,
:func:`worker_lanes`, :func:`mapped_lanes` and their labels: :mod:`lldsched.views.lanes`),
and the checks of a frame of runs (:func:`ran`, :func:`check_frame`,
:func:`check_spans`: :mod:`lldsched.views.runs`).  No state, no lock.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from lldsched.views import missing_extra

try:
    import numpy as np
    import pandas as pd
except ImportError as exc:  # pragma: no cover - exercised by a test that hides pandas
    raise missing_extra(__name__, "pandas and numpy", exc) from exc

from lldsched.model import Outcome
from lldsched.schedules.base import Schedule
from lldsched.views.lanes import (
    MOST_WORKERS,
    Workers,
    column_labels,
    lane_label,
    mapped_lanes,
    missing_nodes,
    node_label,
    node_labels,
    run_nodes,
    worker_lanes,
)
from lldsched.views.report import (
    CAPS,
    NOT_RUNS,
    TaskColumns,
    TaskSummary,
    named_tasks,
    no_runs,
    overran_slot,
    schedules_by_id,
    summary_of,
)
from lldsched.views.runs import (
    check_frame,
    check_lateness,
    check_spans,
    instants,
    ran,
    reading,
)
from lldsched.views.utilisation import (
    MOST_CELLS,
    MOST_INTERVALS,
    fitting_freq,
    mean_busy,
    utilisation,
)

__all__ = [
    "MOST_CELLS",
    "MOST_INTERVALS",
    "MOST_WORKERS",
    "SUMMARY_COLUMNS",
    "Workers",
    "check_frame",
    "check_lateness",
    "check_spans",
    "column_labels",
    "fitting_freq",
    "instants",
    "lane_label",
    "mapped_lanes",
    "mean_busy",
    "missing_nodes",
    "node_label",
    "node_labels",
    "ran",
    "run_nodes",
    "task_summary",
    "utilisation",
    "worker_lanes",
]

SUMMARY_COLUMNS = TaskSummary._fields
"""The columns of :func:`task_summary`: :class:`~lldsched.views.report.TaskSummary`'s fields."""
_TIMES = frozenset(
    field for field in SUMMARY_COLUMNS if field.startswith(("lateness", "duration", "blocked_"))
)


def task_summary(
    frame: pd.DataFrame,
    schedules: Mapping[str, Schedule] | None = None,
    *,
    tasks: Iterable[Any] | None = None,
) -> pd.DataFrame:
    """One row per task id, in the order the tasks first appear in ``frame``, named by
    its last row (a task renamed, by its latest name; each row keeps its run's): the
    command line's summary (:func:`lldsched.views.report.summary_of`, the one rule;
    its :class:`~lldsched.views.report.TaskSummary` documents the columns), as typed
    columns: counts ``int64``, times ``timedelta64[us]`` (``NaT`` for a task whose
    slots were all decided without a run).  ``schedules`` maps task id to schedule
    (see :func:`schedules_of`) for the overrun count; without it the count is 0.  Each
    run is judged against the schedule given for its task, which ``schedules_of`` takes
    as the task has it now: a task given another schedule (``reschedule``,
    ``replace_existing``) has its earlier runs judged against the new one too.
    ``tasks`` (the runtime's ``tasks()``) adds a row of no run (counts 0, times ``NaT``)
    for each of them with no row in ``frame`` yet, after the others, in their order
    (:func:`~lldsched.views.report.no_runs`, the command line's rule): without it a task
    registered and not yet due has no row, as a frame knows no other::

        task_summary(to_frame(sim), schedules_of(sim), tasks=sim.tasks())
    """
    by_id = schedules_by_id(schedules)
    named = named_tasks(tasks)
    # every column it reads, named up front (a frame cut to a few columns raised KeyError)
    check_frame(frame, columns=_SUMMARY_NEEDS + (("slot", "start", "finish") if by_id else ()))
    # The rows grouped by task in one stable sort, each column read out once as a list:
    # a task's rows are then one slice of each (a groupby's pandas calls a task, 720
    # tasks at a million rows, took seconds).
    codes, task_ids = pd.factorize(frame["task_id"])  # in order of appearance; <NA> is -1
    order = np.argsort(codes, kind="stable")
    order = order[codes[order] >= 0]  # a row without a task id is no task's (as in groupby)
    bounds = np.searchsorted(codes[order], np.arange(len(task_ids) + 1)).tolist()
    rows_of = reading(frame, _SUMMARY_READS).take(order)  # the columns read, in task order
    outcome = rows_of["outcome"].astype(str).tolist()
    ok, timed_out = rows_of["ok"].tolist(), rows_of["timed_out"].tolist()
    attempt = rows_of["attempt"].tolist()
    lateness, duration = _seconds(rows_of["lateness"]), _seconds(rows_of["duration"])
    # a task renamed is named as it is now: its last row's name (report.summarize's rule)
    names = rows_of["name"].take([high - 1 for high in bounds[1:]]).tolist()
    overruns = _overruns(rows_of, codes[order], len(task_ids), task_ids, by_id)
    caps = _caps(rows_of, codes[order], len(task_ids))
    rows: list[TaskSummary] = []
    for task, (low, high) in enumerate(itertools.pairwise(bounds)):
        columns = TaskColumns(
            outcome=outcome[low:high],
            ok=ok[low:high],
            timed_out=timed_out[low:high],
            attempt=attempt[low:high],
            lateness=lateness[low:high],
            duration=duration[low:high],
            caps=caps[task],
        )
        rows.append(summary_of(str(names[task]), columns, overruns=overruns[task]))
    ids = [str(task_id) for task_id in task_ids]
    for task_id, row in no_runs(named, set(ids)):
        ids.append(task_id)
        rows.append(row)
    data: dict[str, Any] = {"name": pd.array([row.name for row in rows], dtype=pd.StringDtype())}
    for field in SUMMARY_COLUMNS[1:]:
        values = [getattr(row, field) for row in rows]
        if field in _TIMES:
            data[field] = np.array(
                [_NAT if v is None else round(v * 1e6) for v in values], dtype="m8[us]"
            )
        else:
            data[field] = np.array(values, dtype="int64")
    index = pd.Index(ids, dtype=pd.StringDtype(), name="task_id")
    return pd.DataFrame(data, index=index, columns=list(SUMMARY_COLUMNS))


_NAT = np.timedelta64("NaT", "us")
_CAPPED = (Outcome.SKIPPED.value, Outcome.MISSED.value, Outcome.COALESCED.value)
"""The outcomes of a record that may stand for the rest past a cap (:func:`_caps`)."""

_SUMMARY_READS = frozenset({
    "name", "attempt", "slot", "start", "finish", "duration", "lateness", "ok", "timed_out",
    "outcome", "error",
})  # fmt: skip
"""The columns :func:`task_summary` reads of each task's rows (and :func:`_overruns` of
them): its copy of the rows in task order has only these."""
_SUMMARY_NEEDS = (
    "task_id",
    "name",
    "attempt",
    "ok",
    "timed_out",
    "outcome",
    "lateness",
    "duration",
)
"""The columns :func:`task_summary` needs of every frame (and ``slot``, ``start`` and
``finish`` with schedules, for the overruns)."""


def _seconds(column: pd.Series[Any]) -> list[float]:
    """A ``timedelta64[us]`` column as float seconds (NaN for NaT)."""
    seconds: list[float] = (column.to_numpy(dtype="m8[us]") / np.timedelta64(1, "s")).tolist()
    return seconds


def _caps(rows: pd.DataFrame, codes: np.ndarray[Any, Any], tasks: int) -> list[list[Any]]:
    """For each task, the outcome and error of its rows among ``rows`` (grouped by task:
    ``codes``) that stand for the rest past a cap (:data:`~lldsched.views.report.CAPS`),
    found in one vectorised pass: what :func:`~lldsched.views.report.summary_of` counts
    as the slots they state.  A frame cut to columns without ``error`` has none: its
    records count a slot each, as before caps stated a count."""
    caps: list[list[Any]] = [[] for _ in range(tasks)]
    if "error" not in rows.columns:
        return caps
    # only a slot decided without a run can be a cap's record: the few rows read as text
    capped = rows["outcome"].isin(_CAPPED).to_numpy(dtype=bool, copy=True)
    if capped.any():
        capped[capped] = rows["error"][capped].str.startswith(CAPS).fillna(False).to_numpy(bool)
    if capped.any():
        picked = zip(
            codes[capped].tolist(),
            rows["outcome"].astype(str).to_numpy()[capped].tolist(),
            rows["error"].to_numpy(dtype=object)[capped].tolist(),
            strict=True,
        )
        for task, outcome, error in picked:
            caps[task].append((outcome, error))
    return caps


def _overruns(
    rows: pd.DataFrame,
    codes: np.ndarray[Any, Any],
    tasks: int,
    task_ids: Any,
    schedules: Mapping[str, Schedule],
) -> list[int]:
    """For each task, its first attempts among ``rows`` (grouped by task: ``codes``,
    ascending) that overran its schedule (:func:`~lldsched.views.report.overran`); 0
    for a task without a schedule."""
    counts = [0] * tasks
    wanted = [str(task_id) in schedules for task_id in task_ids]
    if not any(wanted):
        return counts
    first = ~rows["outcome"].isin(NOT_RUNS).to_numpy() & (rows["attempt"] == 1).to_numpy()
    first &= np.array(wanted, dtype=bool)[codes]
    seconds = 1e-6
    slot, start, finish = (
        rows[column].to_numpy(dtype="M8[us]")[first].astype(np.int64) * seconds
        for column in ("slot", "start", "finish")
    )
    bounds = np.searchsorted(codes[first], np.arange(tasks + 1)).tolist()
    slots, durations = slot.tolist(), (finish - start).tolist()
    for index, (low, high) in enumerate(itertools.pairwise(bounds)):
        if low < high:
            schedule = schedules[str(task_ids[index])]
            # The rule reads only the slot and the duration (never due: a dependent
            # released after a wait is due when released, and its slot's gap is from its slot).
            counts[index] = sum(
                overran_slot(schedule, t, d)
                for t, d in zip(slots[low:high], durations[low:high], strict=True)
            )
    return counts
