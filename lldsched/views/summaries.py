"""Summaries of a frame of runs: per task, per worker over time.

:func:`task_summary` is one row per task of a frame :func:`~lldsched.views.frames.to_frame`
made (runs, outcomes, retries, given-up and skipped slots, lateness and duration
percentiles, overruns, blocked waits; :data:`SUMMARY_COLUMNS`), by the rule the command
line's text summary follows too (:func:`lldsched.views.report.summary_of`);
:func:`utilisation` is the busy fraction of each worker per interval (of each process
and worker, for several processes' runs: :func:`run_nodes`).  :func:`ran`
keeps the rows that are runs (not slots decided without one), and :func:`check_frame`
refuses, naming it, what is not a frame of runs: every view that takes one asks it.
No state, no lock.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, SupportsIndex

from lldsched.views import missing_extra

try:
    import numpy as np
    import pandas as pd
except ImportError as exc:  # pragma: no cover - exercised by a test that hides pandas
    raise missing_extra(__name__, "pandas and numpy", exc) from exc

from lldsched.errors import ValidationError, shown
from lldsched.logs import counted
from lldsched.schedules.base import Schedule
from lldsched.views.columns import DTYPES
from lldsched.views.report import (
    NOT_RUNS,
    TaskColumns,
    TaskSummary,
    overran_slot,
    schedules_by_id,
    summary_of,
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


def ran(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of attempts that ran: without the slots a policy decided without a run
    (missed, coalesced, skipped; :attr:`~lldsched.model.Outcome.ran` says which).  The
    plots and :func:`utilisation` start here, so its check of ``frame`` is theirs."""
    return frame[_ran_rows(frame)]


def _ran_rows(frame: pd.DataFrame) -> pd.Series[bool]:
    """Which rows of ``frame`` are runs (:func:`ran`), its check first."""
    return ~check_frame(frame)["outcome"].isin(NOT_RUNS)


def _ran_reading(frame: pd.DataFrame, read: Collection[str]) -> pd.DataFrame:
    """:func:`ran` of ``frame``, of only the columns in ``read`` that it has
    (:func:`_reading`): a view copies the rows that ran of the columns it reads, not
    every column of them (a million records' frame holds 116 MB in its 17 columns; the
    lateness charts read 6)."""
    runs = _ran_rows(frame).to_numpy()
    return _reading(frame, read)[runs]


def _reading(frame: pd.DataFrame, read: Collection[str]) -> pd.DataFrame:
    """The columns of ``frame`` in ``read`` (those it has), for a view to copy the rows
    it reads of: with pandas' copy-on-write (pandas 3) picking them copies nothing, and
    the rows are then copied once (pandas 2 copies the columns picked twice, still less
    than every column once)."""
    return frame[[column for column in frame.columns if column in read]]


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
    """One row per task id, in the order the tasks first appear in ``frame``, named by
    its last row (a task renamed, by its latest name; each row keeps its run's): the
    command line's summary (:func:`lldsched.views.report.summary_of`, the one rule;
    its :class:`~lldsched.views.report.TaskSummary` documents the columns), as typed
    columns: counts ``int64``, times ``timedelta64[us]`` (``NaT`` for a task whose
    slots were all decided without a run).  ``schedules`` maps task id to schedule
    (see :func:`schedules_of`) for the overrun count; without it the count is 0.
    """
    by_id = schedules_by_id(schedules)
    # every column it reads, named up front (a frame cut to a few columns raised KeyError)
    check_frame(frame, columns=_SUMMARY_NEEDS + (("slot", "start", "finish") if by_id else ()))
    # The rows grouped by task in one stable sort, each column read out once as a list:
    # a task's rows are then one slice of each (a groupby's pandas calls a task, 720
    # tasks at a million rows, took seconds).
    codes, task_ids = pd.factorize(frame["task_id"])  # in order of appearance; <NA> is -1
    order = np.argsort(codes, kind="stable")
    order = order[codes[order] >= 0]  # a row without a task id is no task's (as in groupby)
    bounds = np.searchsorted(codes[order], np.arange(len(task_ids) + 1)).tolist()
    rows_of = _reading(frame, _SUMMARY_READS).take(order)  # the columns read, in task order
    outcome = rows_of["outcome"].astype(str).tolist()
    ok, timed_out = rows_of["ok"].tolist(), rows_of["timed_out"].tolist()
    attempt = rows_of["attempt"].tolist()
    lateness, duration = _seconds(rows_of["lateness"]), _seconds(rows_of["duration"])
    # a task renamed is named as it is now: its last row's name (report.summarize's rule)
    names = rows_of["name"].take([high - 1 for high in bounds[1:]]).tolist()
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

_SUMMARY_READS = frozenset({
    "name", "attempt", "slot", "start", "finish", "duration", "lateness", "ok", "timed_out",
    "outcome",
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


Workers = (
    int
    | Iterable[int]
    | Mapping[str | None, int | Iterable[int]]
    | Mapping[str, int | Iterable[int]]
)
""":func:`utilisation`'s ``workers``: one pool every process has (a count or worker
indexes), or each process's own (a node id, ``None`` for runs that name none, to its
count or indexes)."""


def utilisation(frame: pd.DataFrame, workers: Workers, freq: str = "1h") -> pd.DataFrame:
    """The fraction of each interval that each worker spent running something.

    ``workers`` is a count (workers ``0 .. workers-1``) or the worker indexes to
    report; ``freq`` a fixed length (``"15min"``, ``"1h"``, ``"1D"``).  Intervals
    are aligned on multiples of ``freq`` since the epoch (``"1h"``: whole UTC
    hours) and cover every run; a run that crosses a boundary counts in each
    interval for the part it spent there.  Returns a frame indexed by interval start
    (UTC), one float column per worker, 0.0 (idle) to 1.0 (busy throughout).

    Each run counts, so a worker index that ran several things at once reads above 1.0:
    the mean number of its runs in flight.  Threads never do, but the scheduler's event
    loop (``worker == workers``, its coroutines at once) does.

    The runs of several processes sharing a store (each numbers its workers from 0; the
    frame's ``node`` column says which ran each: :func:`run_nodes`) are not one worker's:
    then the columns are a ``(node, worker)`` :class:`pandas.MultiIndex` (levels
    ``node`` and ``worker``; nodes sorted, then NaN, pandas' missing value, for runs
    that name no process: ``node`` missing or ``""``).  With a count or a list, every
    process is taken to have the workers ``workers`` names; with one node or none, a
    column per worker, as ever.

    Processes of different sizes: give ``workers`` as a mapping from each node (the
    frame's ``node`` value, the store's holder id ``store.node`` of that process;
    ``None`` for the runs that name none) to its count or indexes, such as
    ``{"web-1:4121:a1b2c3": 8, "web-2:977:d4e5f6": 2}``.  The columns are then the
    ``(node, worker)`` lanes of the mapping, in its nodes' order (sorted, ``None``
    last), whatever the runs: a node the mapping names without runs is idle (zeros),
    and a run of a node it leaves out is refused, naming the node (and each key that is
    no node of the runs, with the ids it may mean: a key is the whole id, which
    ``frame["node"].unique()`` lists, not a chart's short ``host:pid``).  The records cannot
    say how many workers a process had (an idle worker writes nothing), so the sizes
    are the caller's: each process's ``Scheduler(workers=)``, or its ``metrics().workers``.
    """
    lanes = _lanes_of(workers)
    step = _step(freq)
    return _utilisation(_lane_runs(frame, workers, lanes), step, freq)


_Laned = tuple[np.ndarray, np.ndarray, np.ndarray, list[Any]]
"""Runs as :func:`_lane_runs` lanes them: ``(start, finish, lane, names)``."""


def _utilisation(laned: _Laned, step: int, freq: str) -> pd.DataFrame:
    """:func:`utilisation`'s table of runs laned (:func:`_lane_runs`) in intervals of
    ``step`` microseconds (``freq``, for its refusals)."""
    start, finish, lane, names = laned
    columns = (
        pd.MultiIndex.from_tuples(names, names=["node", "worker"])
        if names and isinstance(names[0], tuple)
        else pd.Index(names)
    )
    if not len(start):
        empty = pd.DatetimeIndex([], dtype=DTYPES["start"], name=_INTERVAL)
        return pd.DataFrame(np.zeros((0, len(names))), index=empty, columns=columns)
    origin, bins = _intervals(start, finish, step, freq)
    _check_cells(len(names), bins, freq)
    first_bin = (start - origin) // step
    last_bin = np.maximum(first_bin, (finish - origin - 1) // step)  # the bin holding finish
    # Split each run into one piece per interval it touches.
    pieces = (last_bin - first_bin + 1).astype(np.int64)
    if int(pieces.sum()) > MOST_INTERVALS:
        raise ValidationError(
            f"freq={freq!r} cuts these runs into more than {MOST_INTERVALS:,} intervals "
            f"({int(pieces.sum()):,}); give a longer freq"
        )
    run = np.repeat(np.arange(len(start)), pieces)
    offset = np.arange(len(run)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    bin_index = first_bin[run] + offset
    bin_start = origin + bin_index * step
    busy = np.minimum(finish[run], bin_start + step) - np.maximum(start[run], bin_start)
    grid = np.bincount(
        lane[run] * bins + bin_index, weights=busy.astype(float), minlength=len(names) * bins
    ).reshape(len(names), bins)
    index = pd.DatetimeIndex(
        (origin + np.arange(bins) * step).view("M8[us]"), name=_INTERVAL
    ).tz_localize("UTC")
    return pd.DataFrame(grid.T / step, index=index, columns=columns)


def mean_busy(frame: pd.DataFrame, workers: Workers, freq: str = "1h") -> float:
    """The fraction of :func:`utilisation`'s intervals (the same ``workers`` and ``freq``)
    that its workers spent busy, from 0.0 to 1.0; NaN for a frame of no run.

    A worker is busy while at least one run is in flight on it, so a lane that ran
    several things at once (the event loop's) counts each instant once, however many
    runs it held: the mean of :func:`utilisation`'s cells counted its runs in flight
    instead, and three coroutines at once on the loop's lane beside an idle worker read
    150 %.  Without runs at once on
    a lane, the two are equal.  Several processes' runs (:func:`run_nodes`) are laned by
    ``(node, worker)``, as :func:`utilisation` columns them, and the time is that of
    every lane: each process's own workers when ``workers`` maps nodes to them.
    """
    lanes = _lanes_of(workers)
    step = _step(freq)
    return _mean_busy(_lane_runs(frame, workers, lanes), step, freq)


def _mean_busy(laned: _Laned, step: int, freq: str) -> float:
    """:func:`mean_busy` of runs laned (:func:`_lane_runs`) in intervals of ``step``
    microseconds (``freq``, for its refusals); it leaves ``laned``'s arrays as they are."""
    start, finish, lane, names = laned
    if not len(start):
        return float("nan")
    _, bins = _intervals(start, finish, step, freq)
    # Each lane's runs in order of start: a run adds the part of it past the latest
    # finish before it on its lane.
    order = np.lexsort((start, lane))
    lane, start, finish = lane[order], start[order], finish[order]
    reached = pd.Series(finish).groupby(lane).cummax()
    before = reached.groupby(lane).shift(1, fill_value=int(start.min())).to_numpy()
    union = np.maximum(finish - np.maximum(start, before), 0).sum()
    return float(union) / (len(names) * bins * step)


_LANES_READ = frozenset({"start", "finish", "worker", "node", "task_id", "attempt"})
"""The columns :func:`check_spans` and :func:`_laned` read (``task_id`` and ``attempt``
name a refused run): :func:`utilisation`, :func:`mean_busy`, :func:`fitting_freq` and
:func:`mapped_lanes` copy the runs of these only (:func:`_ran_reading`)."""


def _utilisation_drawn(
    frame: pd.DataFrame, workers: Workers, freq: str, most: int | None
) -> tuple[str, int, pd.DataFrame, float]:
    """What ``utilisation_plot`` draws: the interval shown and the count of ``freq``'s
    intervals asked (:func:`fitting_freq`'s; ``freq`` and 0 for ``most=None``, every
    interval), :func:`utilisation`'s table in the interval shown and :func:`mean_busy`
    of it.  The runs are picked out of ``frame`` (:func:`ran`'s rows, in a copy of
    only the columns read: :data:`_LANES_READ`), checked and laned once for the three,
    where calling each copied every column of them and checked them again.  The same
    refusals, in the order of the three calls (``freq``, then ``frame``, then
    ``workers``; with ``most=None``, where :func:`utilisation` alone was called,
    ``workers`` came first)."""
    step = _step(freq)
    runs = _ran_reading(frame, _LANES_READ)
    spans = check_spans(runs)
    shown, asked = (freq, 0) if most is None else _fitting(spans, step, freq, most)
    lanes = _lanes_of(workers)
    shown_step = _step(shown)
    laned = _laned(runs, spans, workers, lanes)
    del runs  # the copy goes before the table is built, as each call's did
    table, mean = _utilisation(laned, shown_step, shown), _mean_busy(laned, shown_step, shown)
    return shown, asked, table, mean


_INTERVAL = "interval"  # the name of utilisation's index

MOST_CELLS = 100_000_000
"""The most cells (lanes times intervals) :func:`utilisation` fills: 800 MB of floats,
a year of minutes for 190 workers.  ``workers=100_000`` over a day at ``freq="1s"``
asked for 8.6 billion (69 GB, twice: the grid, then its share of each interval)."""


def _check_cells(lanes: int, bins: int, freq: str) -> None:
    """Refuse, naming both counts, a table of more than :data:`MOST_CELLS` cells."""
    if lanes * bins > MOST_CELLS:
        raise ValidationError(
            f"{lanes:,} worker lanes by {bins:,} intervals of freq={freq!r} is more than "
            f"{MOST_CELLS:,} cells ({lanes * bins:,}); give a longer freq or fewer workers"
        )


_Pools = dict[str | None, list[int]]


def _lanes_of(workers: object) -> _Pools | list[int]:
    """``workers`` checked: the worker indexes of one pool every process has, or each
    node's (:data:`Workers`), nodes sorted and ``None`` last, refused naming a bad key
    or value; at most :data:`MOST_WORKERS` lanes in all."""
    if not isinstance(workers, Mapping):
        return _workers(workers)
    if not workers:
        raise ValidationError(
            "workers maps each node (the frame's node ids; None for runs that name none) "
            "to its workers, got an empty mapping"
        )
    pools: _Pools = {}
    for node, pool in workers.items():
        if node is not None and not (isinstance(node, str) and node):
            raise ValidationError(
                f"workers' keys are nodes, the frame's node ids (a store's holder id), or "
                f"None for runs that name no process; got {node!r}"
            )
        pools[node] = _workers(pool, name=f"workers[{node!r}]")
    total = sum(len(pool) for pool in pools.values())
    if total > MOST_WORKERS:
        raise ValidationError(
            f"workers names {total:,} worker lanes in all, more than {MOST_WORKERS:,}"
        )
    return {node: pools[node] for node in _sorted_nodes(pools)}


def _sorted_nodes(nodes: Iterable[str | None]) -> list[str | None]:
    """``nodes`` sorted by id, then ``None`` (runs that name no process) if there."""
    named = list(nodes)
    return [*sorted(node for node in named if node is not None), *([None] * (None in named))]


def _lane_runs(frame: pd.DataFrame, workers: object, lanes: _Pools | list[int]) -> _Laned:
    """The runs of ``frame`` as ``(start, finish, lane)`` arrays (microseconds since the
    epoch, and the index of each run's lane among the names) and the lanes' names:
    worker indexes, or ``(node, worker)`` for several processes' runs (:func:`run_nodes`)
    or a mapping of nodes (``lanes``, from :func:`_lanes_of`).  A run on a worker, or
    of a node, that ``workers`` leaves out is refused, naming it."""
    runs = _ran_reading(frame, _LANES_READ)  # decided slots ran nowhere
    return _laned(runs, check_spans(runs), workers, lanes)


def _laned(
    runs: pd.DataFrame,
    spans: tuple[np.ndarray, np.ndarray],
    workers: object,
    lanes: _Pools | list[int],
) -> _Laned:
    """:func:`_lane_runs` of rows of :func:`ran` whose ``spans`` (:func:`check_spans`)
    are checked already."""
    start, finish = spans
    worker = runs["worker"].to_numpy(dtype=np.int64)
    if isinstance(lanes, dict):
        pools = lanes
        present = _present_nodes(runs)
        unknown = [node for node in present if node not in pools]
        if unknown:
            raise ValidationError(_unmapped(unknown, pools, present))
    else:
        pools = dict.fromkeys(run_nodes(runs), lanes)
        if not pools:  # one process or none: a lane per worker
            return start, finish, _pool_lanes(worker, lanes, workers, None), list(lanes)
    names = [(node, w) for node, pool in pools.items() for w in pool]
    codes = (
        _node_codes(runs, list(pools)) if "node" in runs.columns
        else np.full(len(runs), len(pools) - 1, dtype=np.int64)  # made elsewhere: None's, last
    )  # fmt: skip
    lane = np.zeros(len(runs), dtype=np.int64)
    offset = 0
    for code, (node, pool) in enumerate(pools.items()):
        mine = codes == code
        if mine.any():
            lane[mine] = offset + _pool_lanes(worker[mine], pool, workers, node)
        offset += len(pool)
    return start, finish, lane, names


def _unmapped(unknown: list[str | None], pools: _Pools, present: list[str | None]) -> str:
    """The refusal of runs of nodes (``unknown``) that ``workers``' mapping (``pools``)
    leaves out: it names them, each key that is no node of the runs (``present``) with
    the nodes it may have meant (a node it is part of: ``"web-1:4121"``, the chart's
    short label, of ``"web-1:4121:a1b2c3"``), and every node a key may be."""
    said = []
    for key in (key for key in pools if key not in present):
        near = [node for node in unknown if node is not None and key is not None and key in node]
        said.append(
            f"key {key!r} is no node of these runs"
            + (f" ({' or '.join(map(repr, near))} would match)" if near else "")
        )
    keys = f" ({'; '.join(said)})" if said else ""
    return (
        f"runs of nodes {unknown} are not among workers' nodes {list(pools)}{keys}: map each "
        f"node the frame names to its workers, by its whole holder id (the frame's node "
        f"column, a store's store.node; None for runs that name none): {present}"
    )


def _pool_lanes(
    worker: np.ndarray, pool: list[int], workers: object, node: str | None
) -> np.ndarray:
    """Each of ``worker`` (runs' worker indexes) as its index in ``pool`` (one node's
    workers, in the order asked); a worker not in it is refused, naming it (and
    ``node``, for a mapping)."""
    order = np.argsort(pool, kind="stable")
    known = np.asarray(pool, dtype=np.int64)[order]
    at = np.minimum(np.searchsorted(known, worker), len(known) - 1)
    stray = known[at] != worker
    if stray.any():
        unknown = sorted(set(worker[stray].tolist()))
        whose = f"workers[{node!r}]={pool!r}" if isinstance(workers, Mapping) else (
            f"workers={workers!r}"
        )  # fmt: skip
        raise ValidationError(
            f"runs on workers {unknown} are not among {whose} (a scheduler's "
            "coroutines run on its event loop's lane, worker == workers: count it too)"
        )
    lanes: np.ndarray = order[at]
    return lanes


def check_spans(runs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The start and finish of each of ``runs`` (rows of :func:`ran`) in microseconds
    since the epoch; a run without one (``NaT``: a record whose time was lost) or that
    finished before it started (a hand-made or damaged record: a runtime never writes
    one) is refused, naming the first few, as a column without a zone is
    (:func:`instants`)."""
    start = instants(runs["start"]).astype(np.int64)
    finish = instants(runs["finish"]).astype(np.int64)
    bad = (start == _LOST) | (finish == _LOST) | (finish < start)
    _refuse(runs, bad, ("start", "finish"), "a start and a finish in order")
    return start, finish


def check_lateness(runs: pd.DataFrame) -> None:
    """Refuse, naming the first few, ``runs`` whose lateness is not known (no due time or
    no start, ``NaT``): a lateness chart cannot place them, and leaving them out drew a
    task of no known lateness as "(never late)" and another's curve short of 100 %."""
    unknown = runs["lateness"].isna().to_numpy()  # start - due: NaT if either is
    _refuse(runs, unknown, ("due", "start"), "a due time and a start")


_LOST = np.iinfo(np.int64).min  # NaT, as microseconds


def _refuse(runs: pd.DataFrame, bad: np.ndarray, shown: tuple[str, str], what: str) -> None:
    """A ValidationError naming the first three of ``runs`` that are ``bad`` (with their
    ``shown`` columns) and counting the rest, if any is."""
    if not bad.any():
        return
    rows = runs[bad]
    named = ", ".join(
        f"task {task!r} attempt {attempt} ({shown[0]} {one}, {shown[1]} {other})"
        for task, attempt, one, other in zip(
            rows["task_id"][:3], rows["attempt"][:3], rows[shown[0]][:3], rows[shown[1]][:3],
            strict=True,
        )
    )  # fmt: skip
    more = f" and {len(rows) - 3:,} more" if len(rows) > 3 else ""
    raise ValidationError(
        f"{counted(len(rows), 'run')} without {what}, which no chart can place: {named}{more}"
    )


def instants(column: pd.Series[Any]) -> np.ndarray:
    """A column of instants with a zone (``datetime64[us, UTC]``, as :func:`to_frame`
    makes, or converted to any zone) as UTC ``datetime64[us]``, ``NaT`` kept; a column
    of another dtype (a zone dropped, times read back as text) is refused, naming it:
    a naive time says no instant."""
    if not isinstance(column.dtype, pd.DatetimeTZDtype):
        raise ValidationError(
            f"column {column.name!r} must hold instants with a zone (datetime64[us, UTC], "
            f"as to_frame makes it), got dtype {column.dtype}; if its times are UTC, "
            f"frame[{column.name!r}] = frame[{column.name!r}].dt.tz_localize('UTC')"
        )
    utc: np.ndarray = column.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="M8[us]")
    return utc


_NO_NODE = ""
"""A node id that names no process, as a missing one does (:func:`missing_nodes`)."""


def missing_nodes(column: pd.Series[Any]) -> np.ndarray:
    """Which rows of a frame's ``node`` column name no process: missing (``<NA>``, NaN,
    None) or ``""`` (an empty id says no process either: its lane read " · worker 0",
    apart from the "no node" ones).  :func:`run_nodes` and the lanes read the same."""
    empty: np.ndarray = (column == _NO_NODE).to_numpy(dtype=bool, na_value=True)
    return empty | column.isna().to_numpy()


def run_nodes(runs: pd.DataFrame) -> list[str | None]:
    """The processes that ran ``runs`` (rows of :func:`ran`; the frame's ``node``) when
    there is more than one: their ids sorted, then ``None`` if some runs name no process
    (an unshared scheduler's, a store's kept before it had the column, a rolling
    upgrade's older process: ``node`` missing or ``""``, :func:`missing_nodes`); ``[]``
    for one process or none, whose lanes are a worker's.
    A worker index is a worker of its process (every process numbers its workers from
    0), so the views lane several processes' runs by ``(node, worker)``."""
    nodes = _present_nodes(runs)
    return nodes if len(nodes) > 1 else []


def _present_nodes(runs: pd.DataFrame) -> list[str | None]:
    """Every node ``runs`` name, sorted, then ``None`` if some name none
    (:func:`missing_nodes`; all of them for a frame without a ``node`` column)."""
    if "node" not in runs.columns:
        return [None] if len(runs) else []
    # Not one unique() with the NAs: pandas' string unique is 20 times slower on them.
    missing = runs["node"].isna()
    named = set(runs["node"][~missing].unique().tolist()) if not missing.all() else set()
    unnamed = bool(missing.any()) or _NO_NODE in named  # "" names no process either
    return _sorted_nodes({*(str(node) for node in named - {_NO_NODE}), *([None] * unnamed)})


def _node_codes(runs: pd.DataFrame, nodes: list[str | None]) -> np.ndarray:
    """The index of each run's node among ``nodes`` (:func:`_present_nodes` of ``runs``
    or more: sorted, ``None`` last for runs that name no process, :func:`missing_nodes`)."""
    named = [n for n in nodes if n is not None]
    # "" a category, read as none: no comparison of each id (a categorical is one
    # hashing pass; an Index's get_indexer took five times as long)
    codes = pd.Categorical(runs["node"], categories=[*named, _NO_NODE]).codes.astype(np.int64)
    codes[codes < 0] = len(named)  # missing
    return codes


def worker_lanes(runs: pd.DataFrame, nodes: list[str | None]) -> tuple[np.ndarray, list[str]]:
    """Each run's lane (a code from 0, lanes in order of node, as ``nodes`` has them,
    then worker) and each lane's label: ``"worker 0"``, or with ``nodes``
    (:func:`run_nodes`) ``"host:pid · worker 0"`` (:func:`lane_label`)."""
    workers = runs["worker"].to_numpy(dtype=np.int64)
    if not nodes:  # the distinct values hashed, then sorted: not a sort of every run
        indexes = np.sort(pd.unique(workers))
        return np.searchsorted(indexes, workers), [lane_label(None, w) for w in indexes.tolist()]
    low = int(workers.min()) if len(workers) else 0
    span = (int(workers.max()) - low + 1) if len(workers) else 1
    key = _node_codes(runs, nodes) * span + (workers - low)
    keys = np.sort(pd.unique(key))
    texts = node_labels(nodes)
    labels = [lane_label(texts[int(k) // span], int(k) % span + low) for k in keys.tolist()]
    return np.searchsorted(keys, key), labels


def mapped_lanes(runs: pd.DataFrame, workers: Workers) -> tuple[np.ndarray, list[str]]:
    """Each run's lane and each lane's label, as :func:`worker_lanes` gives them, for
    the lanes ``workers`` names: :func:`utilisation`'s columns, by its rules (a count
    or indexes for every process, or a mapping of each node to its own), so a worker
    that ran nothing has its lane, and a run on a worker or of a node that ``workers``
    leaves out is refused, naming it."""
    _, _, lane, names = _lane_runs(runs, workers, _lanes_of(workers))
    return lane, column_labels(names)


def column_labels(columns: Sequence[Any]) -> list[str]:
    """The label of each of :func:`utilisation`'s columns: of a worker index
    ``"worker 0"``, of a ``(node, worker)`` pair ``"host:pid · worker 0"``
    (:func:`lane_label`, the nodes by :func:`node_labels`; pandas keeps a missing node,
    None, as NaN in a column index)."""
    if not len(columns) or not isinstance(columns[0], tuple):
        return [lane_label(None, int(worker)) for worker in columns]
    named = [None if pd.isna(node) else str(node) for node, _ in columns]
    nodes = list(dict.fromkeys(named))
    texts = dict(zip(nodes, node_labels(nodes), strict=True))
    return [
        lane_label(texts[node], int(worker))
        for node, (_, worker) in zip(named, columns, strict=True)
    ]


def lane_label(node: str | None, worker: int) -> str:
    """A worker's lane: ``"worker 0"``, or of a node's worker (``node``, the node's
    label: :func:`node_labels`) ``"host:pid · worker 0"``."""
    return f"worker {worker}" if node is None else f"{node} · worker {worker}"


def node_label(node: str | None) -> str:
    """A node's id in short: ``"host:pid"`` of a holder id ``"host:pid:random"`` (whole
    if it is not one), ``"no node"`` for ``None`` (runs that name no process)."""
    if node is None:
        return "no node"
    parts = node.split(":")
    return f"{parts[0]}:{parts[1]}" if len(parts) == 3 else node


def node_labels(nodes: Sequence[str | None]) -> list[str]:
    """Each node's :func:`node_label`, or its whole id where the short one would name
    two nodes (one host's pid reused: a restart, another container of one name)."""
    short = [node_label(node) for node in nodes]
    twice = {label for label in short if short.count(label) > 1}
    return [
        str(node) if label in twice else label for node, label in zip(nodes, short, strict=True)
    ]


def _intervals(start: np.ndarray, finish: np.ndarray, step: int, freq: str) -> tuple[int, int]:
    """The first interval's start (a multiple of ``step`` since the epoch) and how many
    intervals cover the runs, at most :data:`MOST_INTERVALS`."""
    origin, bins = _covering(start, finish, step)
    if bins > MOST_INTERVALS:
        raise ValidationError(
            f"freq={freq!r} cuts these runs into more than {MOST_INTERVALS:,} intervals "
            f"({bins:,}); give a longer freq"
        )
    return origin, bins


def _covering(start: np.ndarray, finish: np.ndarray, step: int) -> tuple[int, int]:
    """The first interval's start (a multiple of ``step`` since the epoch) and how many
    intervals of ``step`` cover the runs (at least one), however many that is."""
    origin = int(start.min()) // step * step
    first_bin = (start - origin) // step
    last_bin = np.maximum(first_bin, (finish - origin - 1) // step)
    return origin, int(last_bin.max()) + 1


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


def _workers(workers: object, name: str = "workers") -> list[int]:
    """``utilisation``'s ``workers``: a count (``0 .. workers-1``, from 1 to
    :data:`MOST_WORKERS`) or worker indexes, at least one, each ``>= 0`` and none twice
    (numpy's integers too: ``operator.index``; a bool is neither).  A count below 1 gave a
    frame of no column (or blamed the runs' workers), no index an ``IndexError`` out of
    numpy (or, on no runs, a frame of no column), an index twice columns whose figures
    were wrong (one lane's busy time spread over copies), and a negative index a worker
    no runtime has."""
    try:
        if isinstance(workers, Iterable) and not isinstance(workers, str | bytes):
            indexes = list(workers)
            if not any(isinstance(w, bool) for w in indexes):
                lanes = [operator.index(w) for w in indexes]
                if not lanes:
                    raise ValidationError(
                        f"{name} must name at least one worker index, got {shown(workers)}"
                    )
                if len(set(lanes)) == len(lanes) and all(lane >= 0 for lane in lanes):
                    if max(lanes) < MOST_WORKERS:
                        return lanes
                    raise ValidationError(  # no runtime's worker (10**5000: OverflowError)
                        f"{name} must be worker indexes below {MOST_WORKERS:,} (as many "
                        f"workers as a simulation has), got {shown(workers)}"
                    )
                raise ValidationError(
                    f"{name} must be worker indexes >= 0, each once, got {shown(workers)}"
                )
        elif isinstance(workers, SupportsIndex) and not isinstance(workers, bool):
            count = operator.index(workers)
            if 1 <= count <= MOST_WORKERS:
                return list(range(count))
            raise ValidationError(
                f"{name} must be a count from 1 to {MOST_WORKERS:,} (as many as a simulation "
                f"has) or a list of worker indexes, got {shown(workers)}"
            )
    except TypeError:
        pass
    raise ValidationError(
        f"{name} must be a count or a list of worker indexes, got {shown(workers)}"
    )


def fitting_freq(frame: pd.DataFrame, freq: str, most: int) -> tuple[str, int]:
    """The interval to show ``frame``'s runs in at most ``most`` intervals, and how many
    intervals of ``freq`` :func:`utilisation` would cut them into (0 for no run).

    ``freq`` itself where its intervals number at most ``most``; else the shortest
    round length (:data:`_ROUND_LENGTHS`: ``"10min"``, ``"6h"``, ``"1D"``, then whole
    days) that is a whole number of ``freq``'s intervals and needs at most ``most``,
    as a ``freq`` (``"6h"``), or, where no round length is a multiple of ``freq``
    (``"7min"``), the shortest such multiple.  Each of its intervals is then a whole
    number of ``freq``'s (both start at multiples since the epoch), so its busy
    fraction is the mean of theirs.  Counted from the first start and the last
    start and finish, in no array of intervals: a year of minutes (525,600) is not
    built to be merged."""
    step = _step(freq)
    return _fitting(check_spans(_ran_reading(frame, _LANES_READ)), step, freq, most)


def _fitting(
    spans: tuple[np.ndarray, np.ndarray], step: int, freq: str, most: int
) -> tuple[str, int]:
    """:func:`fitting_freq` of runs' checked ``spans`` (:func:`check_spans`), ``freq``
    being ``step`` microseconds."""
    start, finish = spans
    if not len(start):
        return freq, 0
    ends = np.array([start.min(), start.max()]), np.array([finish.max(), finish.max()])
    bins = _covering(*ends, step)[1]
    if bins <= most:
        return freq, bins
    wanted = step * -(-bins // most)  # no shorter interval can do
    unit = _DAY if _DAY % step == 0 else step
    longer = itertools.chain(
        (length for length in _ROUND_LENGTHS if length % step == 0 and length >= wanted),
        (unit * n for n in itertools.count(max(-(-wanted // unit), 1))),
    )
    length = next(length for length in longer if _covering(*ends, length)[1] <= most)
    return _freq_text(length), bins


_DAY = 86_400_000_000  # microseconds
_ROUND_LENGTHS = tuple(
    n * unit
    for unit, counts in (
        (1_000, (1, 2, 5, 10, 20, 50, 100, 200, 500)),  # ms
        (1_000_000, (1, 2, 5, 10, 15, 20, 30)),  # s
        (60_000_000, (1, 2, 5, 10, 15, 20, 30)),  # min
        (3_600_000_000, (1, 2, 3, 4, 6, 8, 12)),  # h
        (_DAY, (1,)),
    )
    for n in counts
)
"""The round lengths (microseconds) :func:`fitting_freq` merges intervals into, up to a
day: past a day, whole days (a week would start on a Thursday, as the epoch did)."""
_UNITS = ((_DAY, "D"), (3_600_000_000, "h"), (60_000_000, "min"), (1_000_000, "s"),
          (1_000, "ms"), (1, "us"))  # fmt: skip


def _freq_text(length: int) -> str:
    """A length in microseconds as a ``freq`` in its largest whole unit (``"6h"``)."""
    size, unit = next((size, unit) for size, unit in _UNITS if length % size == 0)
    return f"{length // size}{unit}"


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
