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
==========  ======================  ==================================================

Times inside the library are float seconds since the epoch; here they are rounded
to the microsecond (a float near 1.7e9 carries about a quarter of a microsecond,
so nanoseconds would be noise), and ``duration`` and ``lateness`` are differences
of the rounded columns, so ``start - due == lateness`` holds exactly.  Convert to a
zone for display with ``frame.start.dt.tz_convert("Europe/Berlin")``.

The frame is built column-wise (one pass per field, no per-row objects); a
simulation's records are read straight from its columnar log
(:class:`~lldsched.core.recordlog.RecordLog`), with no record object at all.  An
empty source gives an empty frame with the same columns and dtypes.

Summaries: :func:`task_summary` (runs, outcomes, retries, given-up and skipped
slots, lateness and duration percentiles, overruns, blocked waits per task) and
:func:`utilisation` (the busy fraction of each worker per interval).

pandas and numpy are imported here, in :mod:`lldsched.views.tables` and in
:mod:`lldsched.views.plots` only; without them, importing this module raises an
``ImportError`` that names the extra.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Mapping
from typing import Any, SupportsIndex

from lldsched.views import missing_extra

try:
    import numpy as np
    import pandas as pd
except ImportError as exc:  # pragma: no cover - exercised by a test that hides pandas
    raise missing_extra(__name__, "pandas and numpy", exc) from exc

from lldsched.core.packedstats import BATCH, CODES, NUMBERS, REST, Rows
from lldsched.core.recordlog import MISFIRES as LOG_MISFIRES
from lldsched.core.recordlog import RecordColumns
from lldsched.errors import ValidationError
from lldsched.model import ExecutionRecord, Outcome
from lldsched.runtime import Reads
from lldsched.schedules.base import Schedule
from lldsched.views.report import (
    MISFIRES,
    NOT_RUNS,
    TaskColumns,
    TaskSummary,
    overran_slot,
    records_iterable,
    schedules_by_id,
    summary_of,
)

__all__ = [
    "COLUMNS",
    "DTYPES",
    "MISFIRES",
    "OUTCOMES",
    "dependencies_of",
    "ran",
    "records_of",
    "schedules_of",
    "task_summary",
    "to_frame",
    "utilisation",
]

OUTCOMES = tuple(outcome.value for outcome in Outcome)
"""The outcome categories, in this order (:class:`~lldsched.model.Outcome`'s); an
outcome a record reports beyond these is appended after them."""


DTYPES: dict[str, Any] = {
    "task_id": pd.StringDtype(),
    "name": pd.StringDtype(),
    "attempt": np.dtype("int64"),
    "worker": np.dtype("int64"),
    "due": pd.DatetimeTZDtype("us", "UTC"),
    "slot": pd.DatetimeTZDtype("us", "UTC"),
    "start": pd.DatetimeTZDtype("us", "UTC"),
    "finish": pd.DatetimeTZDtype("us", "UTC"),
    "duration": np.dtype("timedelta64[us]"),
    "lateness": np.dtype("timedelta64[us]"),
    "ok": np.dtype("bool"),
    "error": pd.StringDtype(),
    "result": pd.StringDtype(),
    "timed_out": np.dtype("bool"),
    "outcome": pd.CategoricalDtype(list(OUTCOMES)),
    "priority": pd.Int64Dtype(),
}
"""Column name to dtype, in column order."""

COLUMNS = tuple(DTYPES)

# Positions of the fields in an ExecutionRecord, read with itemgetter (no attribute lookups).
_FIELD = {name: index for index, name in enumerate(ExecutionRecord._fields)}


# -- sources -------------------------------------------------------------------------


def records_of(source: object) -> tuple[list[ExecutionRecord], dict[str, int]]:
    """The records of ``source`` and the priority of each task id it knows.

    A runtime gives ``records()`` (a ``Simulation`` every finished attempt, a
    ``Scheduler`` its tasks' histories, bounded by its ``history_limit``: build it
    with a store for every record); a store gives ``records()``; an iterable is taken
    as records as they are, with no priorities.
    """
    if isinstance(source, Reads):
        tasks = source.tasks()
        return source.records(), {task.id: int(task.priority) for task in tasks}
    if callable(getattr(source, "records", None)) and callable(getattr(source, "load_all", None)):
        store: Any = source
        priorities = {snap.task.id: int(snap.task.priority) for snap in store.load_all()}
        return list(store.records()), priorities
    if not records_iterable(source):
        raise ValidationError(
            "to_frame() takes a runtime (Scheduler, Simulation), a store with records() and "
            f"load_all(), or an iterable of ExecutionRecord; got {source!r}"
        )
    records = list(source)
    for record in records[:1]:
        if not isinstance(record, ExecutionRecord):
            raise ValidationError(f"to_frame() expects ExecutionRecord items, got {record!r}")
    return records, {}


def schedules_of(source: Reads) -> dict[str, Schedule]:
    """Task id to schedule, for :func:`task_summary`'s overrun count."""
    return {task.id: task.schedule for task in source.tasks()}


def dependencies_of(source: Reads) -> dict[str, tuple[str, ...]]:
    """Task id to the ids it depends on, for the tasks that have upstreams (the
    ``depends_on`` of :func:`lldsched.views.plots.gantt`)."""
    return {task.id: task.depends_on for task in source.tasks() if task.depends_on}


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
            f"priorities must map task ids to Priority values (ints), got {priorities!r}"
        )
    log = getattr(source, "record_log", None)
    packed = getattr(source, "packed_records", None)
    if isinstance(source, Reads) and callable(log):
        known = {task.id: int(task.priority) for task in source.tasks()}
        columns = _from_log(log().columns())
    elif isinstance(source, Reads) and callable(packed):
        known = {task.id: int(task.priority) for task in source.tasks()}
        columns = _from_packed(packed())
    else:
        records, known = records_of(source)
        columns = _from_records(records)
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
        "due": _utc(due),
        "slot": _utc(slot),
        "start": _utc(start),
        "finish": _utc(finish),
        "duration": finish.view("m8[us]") - start.view("m8[us]"),  # NaT stays NaT
        "lateness": start.view("m8[us]") - due.view("m8[us]"),
        "ok": columns["ok"],
        "error": columns["error"],
        "result": columns["result"],
        "timed_out": columns["timed_out"],
        "outcome": columns["outcome"],
        "priority": _priorities(codes, task_ids, known),
    }
    return pd.DataFrame(data, columns=list(COLUMNS))


def _from_records(records: list[ExecutionRecord]) -> dict[str, Any]:
    """The frame's columns from record objects, one pass per field."""
    count = len(records)

    def column(field: str) -> list[Any]:
        return list(map(operator.itemgetter(_FIELD[field]), records))

    def numbers(field: str, dtype: type) -> np.ndarray[Any, Any]:
        values = map(operator.itemgetter(_FIELD[field]), records)
        return np.fromiter(values, dtype=dtype, count=count)

    task_id = pd.array(column("task_id"), dtype=DTYPES["task_id"])
    return {
        "task_id": task_id,
        "task_keys": pd.factorize(task_id) if count else (np.zeros(0, np.intp), []),
        "name": pd.array(column("name"), dtype=DTYPES["name"]),
        "attempt": numbers("attempt", np.int64),
        "worker": numbers("worker", np.int64),
        **{field: _microseconds(numbers(field, float)) for field in _TIMES_OF_RECORD},
        "ok": numbers("ok", bool),
        "timed_out": numbers("timed_out", bool),
        "error": pd.array(column("error"), dtype=DTYPES["error"]),
        "result": pd.array(column("result"), dtype=DTYPES["result"]),
        "outcome": _outcomes(*_coded([record.outcome for record in records])),
    }


def _from_log(log: RecordColumns) -> dict[str, Any]:
    """The frame's columns from a :class:`~lldsched.core.recordlog.RecordLog`'s: numpy
    reads its arrays in place, and each row's outcome is the model's rule applied once
    per combination of (ok, timed_out, misfire) present."""
    numbers = log.numbers
    count = len(log.keys)
    keys = np.frombuffer(log.keys, dtype=np.int32) if count else np.zeros(0, np.int32)

    def array_of(field: str, dtype: Any) -> np.ndarray[Any, Any]:
        column = numbers[field]
        return np.frombuffer(column, dtype=dtype) if count else np.zeros(0, dtype)

    def texts(sparse: Mapping[int, str]) -> Any:
        """Rows without a text are ``<NA>``: a take from the distinct texts."""
        distinct = {text: index for index, text in enumerate(dict.fromkeys(sparse.values()))}
        codes = np.full(count, -1, dtype=np.intp)
        codes[list(sparse)] = [distinct[text] for text in sparse.values()]
        return pd.array(list(distinct), dtype=pd.StringDtype()).take(codes, allow_fill=True)

    ok, timed_out = array_of("ok", np.uint8), array_of("timed_out", np.uint8)
    misfire = array_of("misfire", np.uint8)
    return {
        "task_id": pd.array(log.key_ids, dtype=DTYPES["task_id"]).take(keys),
        "task_keys": (keys, log.key_ids),
        "name": pd.array(log.key_names, dtype=DTYPES["name"]).take(keys),
        "attempt": array_of("attempt", np.int32).astype(np.int64),
        "worker": array_of("worker", np.int32).astype(np.int64),
        **{field: _microseconds(array_of(field, np.float64)) for field in _TIMES_OF_RECORD},
        "ok": ok.astype(bool),
        "timed_out": timed_out.astype(bool),
        "error": texts(log.errors),
        "result": texts(log.results),
        "outcome": _outcomes_of(ok, timed_out, misfire),
    }


def _from_packed(rows: list[Rows]) -> dict[str, Any]:
    """The frame's columns from a scheduler's packed histories
    (:meth:`~lldsched.core.machine.SchedulerCore.packed_records`), in the order of
    its ``records()``: sorted by ``finished``, ties in the order given."""
    blocks = np.frombuffer(b"".join(row.block.numbers for row in rows), dtype=_BLOCK_DTYPE)
    sizes = np.array([row.block.size for row in rows], dtype=np.intp).reshape(-1, 1)
    starts = np.array([row.start for row in rows], dtype=np.intp).reshape(-1, 1)
    held = (starts <= _IN_BLOCK) & (sizes > _IN_BLOCK)  # the records of each block
    counts = (sizes - starts).reshape(-1)
    finished = blocks["finished"][held]
    order = np.argsort(finished, kind="stable")

    def number(field: str) -> np.ndarray[Any, Any]:
        return blocks[field][held][order]

    def coded(field: str) -> tuple[np.ndarray[Any, Any], list[Any]]:
        """One field kept as objects: each row's code into the distinct values (None
        is -1), in finish order.  A block's shared value is coded once."""
        index = REST.index(field)
        distinct: dict[Any, int] = {None: -1}
        code = distinct.setdefault
        values = [block.rest[index] for block, _ in rows]
        if not any(isinstance(value, tuple) for value in values):  # one value a block
            shared = [code(value, len(distinct) - 1) for value in values]
            codes: Any = np.repeat(np.array(shared, dtype=np.intp), counts)
        else:
            codes = []
            for (block, start), value in zip(rows, values, strict=True):
                if isinstance(value, tuple):
                    codes += [code(each, len(distinct) - 1) for each in value[start:]]
                else:
                    codes += [code(value, len(distinct) - 1)] * (block.size - start)
            codes = np.array(codes, dtype=np.intp)
        del distinct[None]
        return codes[order], list(distinct)

    def texts(field: str) -> Any:
        codes, distinct = coded(field)
        return pd.array(distinct, dtype=DTYPES[field]).take(codes, allow_fill=True)

    keys, task_ids = coded("task_id")
    misfire_codes, misfires = coded("misfire")
    # Each distinct misfire's index in MISFIRES, and a 0 last: the code -1 (None) reads it.
    misfire = np.array([_MISFIRE_INDEX[value] for value in misfires] + [0], dtype=np.uint8)
    ok, timed_out = number("ok"), number("timed_out")
    return {
        "task_id": pd.array(task_ids, dtype=DTYPES["task_id"]).take(keys),
        "task_keys": (keys, task_ids),
        "name": texts("name"),
        "attempt": number("attempt").astype(np.int64),
        "worker": number("worker").astype(np.int64),
        **{field: _microseconds(number(field)) for field in _TIMES_OF_RECORD},
        "ok": ok,
        "timed_out": timed_out,
        "error": texts("error"),
        "result": texts("result"),
        "outcome": _outcomes_of(
            ok.astype(np.uint8), timed_out.astype(np.uint8), misfire[misfire_codes]
        ),
    }


_BLOCK_DTYPE = np.dtype([(field, "=" + CODES[field], (BATCH,)) for field in NUMBERS])
"""A packed block's numbers (:func:`lldsched.core.packedstats.block_format`)."""
_IN_BLOCK = np.arange(BATCH).reshape(1, -1)  # a record's place in its block
_MISFIRE_INDEX = {misfire: index for index, misfire in enumerate(LOG_MISFIRES)}


def _outcomes_of(ok: Any, timed_out: Any, misfire: Any) -> Any:
    """The outcome column from the (uint8) ok, timed_out and misfire-index columns: the
    model's rule applied once per combination present."""
    combination = misfire.astype(np.int64) * 4 + timed_out * 2 + ok
    present, where = np.unique(combination, return_inverse=True)
    outcomes = [_outcome_of(int(code)) for code in present]
    return _outcomes(outcomes, where.reshape(-1))


_TIMES_OF_RECORD = ("due", "slot", "started", "finished")


_NAT_INTEGER = float(np.iinfo(np.int64).min)  # NaT as an integer: -2**63, exact in a float


def _microseconds(seconds: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Seconds as whole microseconds, a NaN (an instant not known) as NaT's integer: said
    outright, as the cast of a NaN is undefined (-2**63 on x86, 0 on ARM) and warns."""
    microseconds = np.rint(seconds * 1e6)
    microseconds[np.isnan(microseconds)] = _NAT_INTEGER
    return microseconds.astype(np.int64)


def _outcome_of(combination: int) -> Outcome:
    """The outcome of a record whose (misfire index, timed_out, ok) is ``combination``
    (``misfire * 4 + timed_out * 2 + ok``): the record's own rule, asked once."""
    misfire, timed_out, ok = combination >> 2, combination >> 1 & 1, combination & 1
    probe = ExecutionRecord.of(
        task_id="", name="", attempt=0, due=0.0, slot=0.0, worker=0, started=0.0,
        finished=0.0, ok=bool(ok), timed_out=bool(timed_out), misfire=LOG_MISFIRES[misfire],
    )  # fmt: skip
    return probe.outcome


def _utc(microseconds: np.ndarray[Any, np.dtype[np.int64]]) -> pd.DatetimeIndex:
    return pd.DatetimeIndex(microseconds.view("M8[us]")).tz_localize("UTC")


def _coded(values: list[Outcome]) -> tuple[list[Outcome], np.ndarray[Any, Any]]:
    """The distinct ``values``, and for each value its index among them."""
    index: dict[Outcome, int] = {}
    codes = [index.setdefault(value, len(index)) for value in values]
    return list(index), np.array(codes, dtype=np.intp)


def _outcomes(distinct: list[Outcome], codes: np.ndarray[Any, Any]) -> Any:
    """The outcome column: row ``i`` is ``distinct[codes[i]]`` (each record's own
    ``outcome``: one rule, in the model); the categories are :data:`OUTCOMES` plus
    any outcome a record reports beyond them."""
    categories = list(OUTCOMES)
    categories += sorted(set(distinct).difference(categories))
    position = np.array([categories.index(value) for value in distinct], dtype=np.intp)
    return pd.Categorical.from_codes(position[codes], dtype=pd.CategoricalDtype(categories))


def _priorities(codes: Any, task_ids: Any, known: Mapping[str, int]) -> Any:
    """Row ``i``'s priority is task ``task_ids[codes[i]]``'s in ``known`` (<NA> if unknown)."""
    per_task = pd.array([known.get(str(task_id)) for task_id in task_ids], dtype=DTYPES["priority"])
    if len(codes) == 0 or not known:
        return pd.array([None] * len(codes), dtype=DTYPES["priority"])
    return per_task.take(codes)


# -- summaries -----------------------------------------------------------------------

SUMMARY_COLUMNS = TaskSummary._fields
"""The columns of :func:`task_summary`: :class:`~lldsched.views.report.TaskSummary`'s fields."""
_TIMES = frozenset(
    field for field in SUMMARY_COLUMNS if field.startswith(("lateness", "duration", "blocked_"))
)


def ran(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of attempts that ran: without the slots a policy decided without a run
    (missed, coalesced, skipped; :attr:`~lldsched.model.Outcome.ran` says which).  The
    plots and :func:`utilisation` start here, so its check of ``frame`` is theirs."""
    return frame[~check_frame(frame)["outcome"].isin(NOT_RUNS)]


def check_frame(frame: object, *, columns: Iterable[str] = ("outcome",)) -> pd.DataFrame:
    """``frame`` if it is a ``DataFrame`` with ``columns``, else ValidationError naming
    what it is: every view that takes a frame of runs (made by :func:`to_frame`) asks
    here first, rather than failing on its first subscript or ``groupby``."""
    if not isinstance(frame, pd.DataFrame):
        raise ValidationError(
            f"expected a DataFrame of runs, as to_frame(scheduler) makes, got {frame!r}"
        )
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValidationError(
            f"expected a DataFrame of runs, as to_frame(scheduler) makes: it has no "
            f"{missing} column, got columns {list(frame.columns)}"
        )
    return frame


def task_summary(
    frame: pd.DataFrame, schedules: Mapping[str, Schedule] | None = None
) -> pd.DataFrame:
    """One row per task id, in the order the tasks first appear in ``frame``: the
    command line's summary (:func:`lldsched.views.report.summary_of`, the one rule;
    its :class:`~lldsched.views.report.TaskSummary` documents the columns), as typed
    columns: counts ``int64``, times ``timedelta64[us]`` (``NaT`` for a task whose
    slots were all decided without a run).  ``schedules`` maps task id to schedule
    (see :func:`schedules_of`) for the overrun count; without it the count is 0.
    """
    check_frame(frame, columns=("task_id", "outcome"))
    by_id = schedules_by_id(schedules)
    # The rows grouped by task in one stable sort, each column read out once as a list:
    # a task's rows are then one slice of each (a groupby's pandas calls a task, 720
    # tasks at a million rows, took seconds).
    codes, task_ids = pd.factorize(frame["task_id"])  # in order of appearance; <NA> is -1
    order = np.argsort(codes, kind="stable")
    order = order[codes[order] >= 0]  # a row without a task id is no task's (as in groupby)
    bounds = np.searchsorted(codes[order], np.arange(len(task_ids) + 1)).tolist()
    rows_of = frame.take(order)
    outcome = rows_of["outcome"].astype(str).tolist()
    ok, timed_out = rows_of["ok"].tolist(), rows_of["timed_out"].tolist()
    attempt = rows_of["attempt"].tolist()
    lateness, duration = _seconds(rows_of["lateness"]), _seconds(rows_of["duration"])
    names = rows_of["name"].take(bounds[:-1]).tolist()
    overruns = _overruns(rows_of, codes[order], len(task_ids), task_ids, by_id)
    rows: list[TaskSummary] = []
    for task, (low, high) in enumerate(itertools.pairwise(bounds)):
        columns = TaskColumns(
            outcome=outcome[low:high],
            ok=ok[low:high],
            timed_out=timed_out[low:high],
            attempt=attempt[low:high],
            lateness=lateness[low:high],
            duration=duration[low:high],
        )
        rows.append(summary_of(str(names[task]), columns, overruns=overruns[task]))
    ids = [str(task_id) for task_id in task_ids]
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


def _seconds(column: pd.Series[Any]) -> list[float]:
    """A ``timedelta64[us]`` column as float seconds (NaN for NaT)."""
    seconds: list[float] = (column.to_numpy(dtype="m8[us]") / np.timedelta64(1, "s")).tolist()
    return seconds


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


def utilisation(
    frame: pd.DataFrame, workers: int | Iterable[int], freq: str = "1h"
) -> pd.DataFrame:
    """The fraction of each interval that each worker spent running something.

    ``workers`` is a count (workers ``0 .. workers-1``) or the worker indexes to
    report; ``freq`` a fixed length (``"15min"``, ``"1h"``, ``"1D"``).  Intervals
    are aligned on multiples of ``freq`` since the epoch (``"1h"``: whole UTC
    hours) and cover every run; a run that crosses a boundary counts in each
    interval for the part it spent there.  Returns a frame indexed by interval start
    (UTC), one float column per worker, 0.0 (idle) to 1.0 (busy throughout).
    """
    frame = ran(frame)  # decided slots ran nowhere
    columns = _workers(workers)
    step = _step(freq)
    index_name = "interval"
    if frame.empty:
        empty = pd.DatetimeIndex([], dtype=DTYPES["start"], name=index_name)
        return pd.DataFrame({w: pd.Series([], dtype=float) for w in columns}, index=empty)
    unknown = sorted(set(frame["worker"].unique().tolist()).difference(columns))
    if unknown:
        raise ValidationError(f"runs on workers {unknown} are not among workers={workers!r}")
    start = frame["start"].to_numpy(dtype="M8[us]").astype(np.int64)
    finish = frame["finish"].to_numpy(dtype="M8[us]").astype(np.int64)
    lane = np.searchsorted(np.array(sorted(columns)), frame["worker"].to_numpy())
    origin = start.min() // step * step
    first_bin = (start - origin) // step
    last_bin = np.maximum(first_bin, (finish - origin - 1) // step)  # the bin holding finish
    bins = int(last_bin.max()) + 1
    # Split each run into one piece per interval it touches.
    pieces = (last_bin - first_bin + 1).astype(np.int64)
    if bins > MOST_INTERVALS or int(pieces.sum()) > MOST_INTERVALS:
        raise ValidationError(
            f"freq={freq!r} cuts these runs into more than {MOST_INTERVALS:,} intervals "
            f"({bins:,}); give a longer freq"
        )
    run = np.repeat(np.arange(len(start)), pieces)
    offset = np.arange(len(run)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    bin_index = first_bin[run] + offset
    bin_start = origin + bin_index * step
    busy = np.minimum(finish[run], bin_start + step) - np.maximum(start[run], bin_start)
    grid = np.bincount(
        lane[run] * bins + bin_index, weights=busy.astype(float), minlength=len(columns) * bins
    ).reshape(len(columns), bins)
    index = pd.DatetimeIndex(
        (origin + np.arange(bins) * step).view("M8[us]"), name=index_name
    ).tz_localize("UTC")
    result = pd.DataFrame(grid.T / step, index=index, columns=sorted(columns))
    return result[columns]


MOST_INTERVALS = 10_000_000
"""The most intervals :func:`utilisation` cuts runs into (a run crossing several counts
in each): ``freq="1us"`` over ten minutes of runs asked for 600 million, and the arrays
took gigabytes and a minute before a frame; a year of minutes is 525,600."""

MOST_WORKERS = 100_000
"""The largest count of workers :func:`utilisation` takes: as many as a simulation may
have (``lldsched.sim.simulation.MAX_WORKERS``, which a view may not import;
``tests/test_frames.py`` keeps the two equal).  A count is a column each: ``workers=10**9``
built a list of a billion lanes (gigabytes, a minute of the machine) before a frame of
them, and ``10**30`` raised ``OverflowError``."""


def _workers(workers: object) -> list[int]:
    """``utilisation``'s ``workers``: a count (``0 .. workers-1``, at most
    :data:`MOST_WORKERS`) or worker indexes (numpy's integers too: ``operator.index``; a
    bool is neither)."""
    try:
        if isinstance(workers, Iterable) and not isinstance(workers, str | bytes):
            indexes = list(workers)
            if not any(isinstance(w, bool) for w in indexes):
                return [operator.index(w) for w in indexes]
        elif isinstance(workers, SupportsIndex) and not isinstance(workers, bool):
            count = operator.index(workers)
            if count <= MOST_WORKERS:
                return list(range(count))
            raise ValidationError(
                f"workers must be a count of at most {MOST_WORKERS:,} (as many as a simulation "
                f"has) or a list of worker indexes, got {workers!r}"
            )
    except TypeError:
        pass
    raise ValidationError(f"workers must be a count or a list of worker indexes, got {workers!r}")


def _step(freq: str) -> int:
    """``freq`` as a whole number of microseconds (> 0)."""
    try:
        length = pd.Timedelta(freq)
    except (ValueError, TypeError) as exc:
        raise ValidationError(f"freq must be a fixed length such as '1h', got {freq!r}") from exc
    if pd.isna(length):  # None, "nat": int(NaN) raised a bare ValueError below
        raise ValidationError(f"freq must be a fixed length such as '1h', got {freq!r}")
    step = int(length / pd.Timedelta(1, "us"))
    if step <= 0:
        raise ValidationError(f"freq must be positive, got {freq!r}")
    return step
