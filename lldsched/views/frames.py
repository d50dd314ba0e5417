"""Frames: every execution record as a row of a pandas ``DataFrame``, and summaries of them.

:func:`to_frame` takes a runtime (a :class:`~lldsched.runtime.Runtime`: a
``Scheduler`` or a ``Simulation``), a store (anything with ``records()`` and
``load_all()``, such as :class:`~lldsched.stores.memory.InMemoryTaskStore`) or an
iterable of :class:`~lldsched.model.ExecutionRecord`, and returns one row per
attempt with these typed columns (:data:`DTYPES`):

==========  ======================  ==================================================
column      dtype                   meaning
==========  ======================  ==================================================
task_id     string                  the task's id
name        string                  the task's name
attempt     int64                   1 for a slot's first attempt, 2 for its first retry
worker      int64                   index of the worker that ran it
due         datetime64[us, UTC]     when the attempt was due
slot        datetime64[us, UTC]     the schedule slot it belongs to: ``due`` for
                                    most first attempts; a retry keeps its first
                                    attempt's slot, and a dependent released after
                                    waiting for its upstreams keeps its slot while
                                    its ``due`` is when it was released
start       datetime64[us, UTC]     when it started
finish      datetime64[us, UTC]     when it finished
duration    timedelta64[us]         ``finish - start``
lateness    timedelta64[us]         ``start - due``: dispatch latency or a wait for a worker
                                    (a run resumed after a pause is due at the resume:
                                    the pause is not lateness; ``start - slot`` is how
                                    long its slot waited); on a row of a slot decided
                                    without a run, how long after it was due it was
                                    decided, no wait (:func:`ran` leaves those out, as
                                    the summaries and charts do)
ok          bool                    the attempt succeeded
error       string                  ``"Type: message"``, ``<NA>`` when ok
result      string                  what the action returned, as a bounded ``repr``
                                    (:mod:`lldsched.core.results`); ``<NA>`` when it
                                    returned None or did not succeed
timed_out   bool                    the attempt ran past its timeout
outcome     category                ``ok``, ``failed``, ``timed_out``, ``given_up``
                                    (a run that gave its slot up), or for a slot
                                    decided without a run ``missed``/``coalesced``
                                    (a misfire policy) or ``skipped`` (an overrun),
                                    or ``blocked``: a dependent's slot waiting for
                                    its upstreams, ``start`` to ``finish``
                                    (:data:`OUTCOMES`; decided rows have attempt 0
                                    and worker -1, and :func:`ran` leaves them out)
priority    Int64                   the task's :class:`~lldsched.model.Priority` value
                                    (0 HIGH, 1 NORMAL, 2 LOW), ``<NA>`` when unknown
node        string                  the process that ran it on a shared store (its
                                    holder id, ``"host:pid:random"``): ``worker`` is
                                    that process's; ``<NA>`` for a scheduler that
                                    shares nothing, a slot decided without a run, or
                                    a record kept before the store had the column
==========  ======================  ==================================================

Times inside the library are float seconds since the epoch; here they are rounded
to the microsecond (a float near 1.7e9 carries about a quarter of a microsecond,
so nanoseconds would be noise), and ``duration`` and ``lateness`` are differences
of the rounded columns, so ``start - due == lateness`` holds exactly.  Convert to a
zone for display with ``frame.start.dt.tz_convert("Europe/Berlin")``.

The frame is built column-wise (one pass per field, no per-row objects:
:mod:`lldsched.views.columns`); a simulation's records are read straight from its
columnar log (:class:`~lldsched.core.recordlog.RecordLog`), with no record object at all.  An
empty source gives an empty frame with the same columns and dtypes.

Summaries, importable from here too (:mod:`lldsched.views.summaries`):
:func:`~lldsched.views.summaries.task_summary` (runs, outcomes, retries, given-up and
skipped slots, lateness and duration percentiles, overruns, blocked waits per task),
:func:`~lldsched.views.utilisation.utilisation` (the busy fraction of each worker per
interval; of each process's own workers, for processes of different sizes, from a mapping
of node to workers) and :func:`~lldsched.views.utilisation.mean_busy` (the fraction of
that time the workers were busy, a lane of runs at once counted busy once).

pandas and numpy are imported here, in :mod:`lldsched.views.tables` and in
:mod:`lldsched.views.plots` only; without them, importing this module raises an
``ImportError`` that names the extra.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lldsched.views import missing_extra

try:
    import pandas as pd
except ImportError as exc:  # pragma: no cover - exercised by a test that hides pandas
    raise missing_extra(__name__, "pandas and numpy", exc) from exc

from lldsched.errors import ValidationError, shown
from lldsched.model import ExecutionRecord
from lldsched.runtime import Reads
from lldsched.schedules.base import Schedule
from lldsched.views.columns import (
    COLUMNS,
    DTYPES,
    OUTCOMES,
    from_log,
    from_packed,
    from_records,
    priority_column,
    utc_column,
)
from lldsched.views.report import MISFIRES, records_iterable
from lldsched.views.summaries import (
    MOST_CELLS,
    MOST_INTERVALS,
    MOST_WORKERS,
    SUMMARY_COLUMNS,
    check_frame,
    mean_busy,
    ran,
    task_summary,
    utilisation,
)

__all__ = [
    "COLUMNS",
    "DTYPES",
    "MISFIRES",
    "MOST_CELLS",
    "MOST_INTERVALS",
    "MOST_WORKERS",
    "OUTCOMES",
    "SUMMARY_COLUMNS",
    "check_frame",
    "dependencies_of",
    "mean_busy",
    "ran",
    "records_of",
    "schedules_of",
    "task_summary",
    "to_frame",
    "utilisation",
]

# -- sources -------------------------------------------------------------------------


def records_of(source: object) -> tuple[list[ExecutionRecord], dict[str, int]]:
    """The records of ``source`` and the priority of each task id it knows.

    A runtime gives ``records()`` (a ``Simulation`` every finished attempt, a
    ``Scheduler`` its tasks' histories, bounded by its ``history_limit``: build it
    with a store for every record); a store gives ``records()``; an iterable is taken
    as records as they are, with no priorities.
    """
    if isinstance(source, Reads):
        return source.records(), source.priorities()
    if callable(getattr(source, "records", None)) and callable(getattr(source, "load_all", None)):
        store: Any = source
        priorities = {snap.task.id: int(snap.task.priority) for snap in store.load_all()}
        return list(store.records()), priorities
    if not records_iterable(source):
        raise ValidationError(
            "to_frame() takes a runtime (Scheduler, Simulation), a store with records() and "
            f"load_all(), or an iterable of ExecutionRecord; got {shown(source)}"
        )
    records = list(source)
    for record in records[:1]:
        if not isinstance(record, ExecutionRecord):
            raise ValidationError(f"to_frame() expects ExecutionRecord items, got {shown(record)}")
    return records, {}


def schedules_of(source: Reads) -> dict[str, Schedule]:
    """Task id to schedule, for :func:`task_summary`'s overrun count: the runtime's
    ``schedules()``, of the registered tasks and of those gone from its registry whose
    records it keeps (:mod:`lldsched.core.departed`)."""
    _check_runtime(source, "schedules_of", "schedules")
    return source.schedules()


def dependencies_of(source: Reads) -> dict[str, tuple[str, ...]]:
    """Task id to the ids it depends on, for the tasks that have upstreams (the
    ``depends_on`` of :func:`lldsched.views.plots.gantt`)."""
    _check_runtime(source, "dependencies_of", "tasks")
    return {task.id: task.depends_on for task in source.tasks() if task.depends_on}


def _check_runtime(source: object, view: str, read: str) -> None:
    """``source`` refused, naming it, unless it has the runtime's ``read`` method
    (``None`` or a list of records raised ``AttributeError``: they keep no tasks)."""
    if not callable(getattr(source, read, None)):
        raise ValidationError(
            f"{view}() takes a runtime (a Scheduler or a Simulation), got {shown(source)}"
        )


# -- the frame -----------------------------------------------------------------------


def to_frame(source: object, *, priorities: Mapping[str, int] | None = None) -> pd.DataFrame:
    """One row per attempt of ``source``, with the columns and dtypes of :data:`DTYPES`.

    ``priorities`` (task id to :class:`~lldsched.model.Priority`) fills or overrides
    the priority column, for example for a plain list of records.  A runtime that
    keeps its records as columns (``record_log()``, as a ``Simulation`` does) is read
    straight from them, without building a record object; a ``Scheduler``'s
    histories are read from their packed form (``packed_records()``), with a record
    object only for the few newest runs of each task, not yet packed.
    """
    if priorities is not None and not (
        isinstance(priorities, Mapping)
        and all(isinstance(p, int) and not isinstance(p, bool) for p in priorities.values())
    ):
        raise ValidationError(
            f"priorities must map task ids to Priority values (ints), got {shown(priorities)}"
        )
    log = getattr(source, "record_log", None)
    packed = getattr(source, "packed_records", None)
    if isinstance(source, Reads) and callable(log):
        known = source.priorities()
        columns = from_log(log().columns())
    elif isinstance(source, Reads) and callable(packed):
        known = source.priorities()
        columns = from_packed(packed())
    else:
        records, known = records_of(source)
        columns = from_records(records)
    if priorities:
        known = {**known, **{key: int(value) for key, value in priorities.items()}}
    due, slot = columns.pop("due"), columns.pop("slot")
    start, finish = columns.pop("started"), columns.pop("finished")
    codes, task_ids = columns["task_keys"]  # the task of each row, as a code into the ids
    data = {
        "task_id": columns["task_id"],
        "name": columns["name"],
        "attempt": columns["attempt"],
        "worker": columns["worker"],
        "due": utc_column(due),
        "slot": utc_column(slot),
        "start": utc_column(start),
        "finish": utc_column(finish),
        "duration": finish.view("m8[us]") - start.view("m8[us]"),  # NaT stays NaT
        "lateness": start.view("m8[us]") - due.view("m8[us]"),
        "ok": columns["ok"],
        "error": columns["error"],
        "result": columns["result"],
        "timed_out": columns["timed_out"],
        "outcome": columns["outcome"],
        "priority": priority_column(codes, task_ids, known),
        "node": columns["node"],
    }
    return pd.DataFrame(data, columns=list(COLUMNS))
