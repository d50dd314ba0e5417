"""Each worker's busy time per interval of a frame of runs.

:func:`utilisation` is the busy fraction of each worker per interval (of each process
and worker, for several processes' runs: :func:`~lldsched.views.lanes.run_nodes`),
:func:`mean_busy` the share of that time the workers were busy, and
:func:`fitting_freq` the interval that shows the runs in at most so many columns (the
heat map's); each bounded (:data:`MOST_INTERVALS`, :data:`MOST_CELLS`).
No state, no lock.
"""

from __future__ import annotations

import itertools

from lldsched.views import missing_extra

try:
    import numpy as np
    import pandas as pd
except ImportError as exc:  # pragma: no cover - exercised by a test that hides pandas
    raise missing_extra(__name__, "pandas and numpy", exc) from exc

from lldsched.errors import ValidationError, shown
from lldsched.views.columns import DTYPES
from lldsched.views.lanes import (
    LANES_READ,
    Laned,
    Workers,
    lane_checked_runs,
    lane_runs,
    lanes_of,
)
from lldsched.views.runs import check_spans, ran_reading

__all__ = [
    "MOST_CELLS",
    "MOST_INTERVALS",
    "fitting_freq",
    "mean_busy",
    "utilisation",
    "utilisation_drawn",
]


def utilisation(frame: pd.DataFrame, workers: Workers, freq: str = "1h") -> pd.DataFrame:
    """The fraction of each interval that each worker spent running something.

    ``workers`` is a count (workers ``0 .. workers-1``) or the worker indexes to
    report; ``freq`` a fixed length (``"15min"``, ``"1h"``, ``"1D"``).  Intervals
    are aligned on multiples of ``freq`` since the epoch (``"1h"``: whole UTC
    hours) and cover every run; a run that crosses a boundary counts in each
    interval for the part it spent there.  Returns a frame indexed by interval start
    (UTC), one float column per worker, 0.0 (idle) to 1.0 (busy throughout).

    Each run counts, so a worker index that ran several things at once reads above 1.0:
    the mean number of its runs in flight.  The scheduler's event loop does (``worker ==
    workers``, its coroutines at once), and so can a thread worker: a plain function that
    returns an awaitable frees its worker at once, but its run, the awaitable's time on
    the loop, is recorded on the worker that called it (the records cannot tell it from
    a thread's run), so that time counts on that worker, here and in :func:`mean_busy`,
    not on the loop's lane.

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
    lanes = lanes_of(workers)
    step = _step(freq)
    return _utilisation(lane_runs(frame, workers, lanes), step, freq)


def _utilisation(laned: Laned, step: int, freq: str) -> pd.DataFrame:
    """:func:`utilisation`'s table of runs laned (:func:`lane_runs`) in intervals of
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
    lanes = lanes_of(workers)
    step = _step(freq)
    return _mean_busy(lane_runs(frame, workers, lanes), step, freq)


def _mean_busy(laned: Laned, step: int, freq: str) -> float:
    """:func:`mean_busy` of runs laned (:func:`lane_runs`) in intervals of ``step``
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


def utilisation_drawn(
    frame: pd.DataFrame, workers: Workers, freq: str, most: int | None
) -> tuple[str, int, pd.DataFrame, float]:
    """What ``utilisation_plot`` draws: the interval shown and the count of ``freq``'s
    intervals asked (:func:`fitting_freq`'s; ``freq`` and 0 for ``most=None``, every
    interval), :func:`utilisation`'s table in the interval shown and :func:`mean_busy`
    of it.  The runs are picked out of ``frame`` (:func:`ran`'s rows, in a copy of
    only the columns read: :data:`LANES_READ`), checked and laned once for the three,
    where calling each copied every column of them and checked them again.  The same
    refusals, in the order of the three calls (``freq``, then ``frame``, then
    ``workers``; with ``most=None``, where :func:`utilisation` alone was called,
    ``workers`` came first)."""
    step = _step(freq)
    runs = ran_reading(frame, LANES_READ)
    spans = check_spans(runs)
    drawn, asked = (freq, 0) if most is None else _fitting(spans, step, freq, most)
    lanes = lanes_of(workers)
    drawn_step = _step(drawn)
    laned = lane_checked_runs(runs, spans, workers, lanes)
    del runs  # the copy goes before the table is built, as each call's did
    table, mean = _utilisation(laned, drawn_step, drawn), _mean_busy(laned, drawn_step, drawn)
    return drawn, asked, table, mean


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
    return _fitting(check_spans(ran_reading(frame, LANES_READ)), step, freq, most)


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
        raise ValidationError(
            f"freq must be a fixed length such as '1h', got {shown(freq)}"
        ) from exc
    if pd.isna(length):  # None, "nat": int(NaN) raised a bare ValueError below
        raise ValidationError(f"freq must be a fixed length such as '1h', got {shown(freq)}")
    step = int(length / pd.Timedelta(1, "us"))
    if step <= 0:
        raise ValidationError(f"freq must be positive, got {freq!r}")
    return step
