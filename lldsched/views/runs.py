"""A frame of runs, checked: which of its rows are runs, and what no view can place.

:func:`ran` keeps the rows that are runs (not the slots a policy decided without one;
:func:`ran_reading` of only the columns a view reads), and :func:`check_frame`
refuses, naming it, what is not a frame of runs :func:`~lldsched.views.frames.to_frame`
made: every view that takes one asks it.  :func:`check_spans` refuses runs without a
start and a finish in order, :func:`check_lateness` runs of no known lateness, and
:func:`instants` a column of times without a zone: what no chart can place.
No state, no lock.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from lldsched.views import missing_extra

try:
    import numpy as np
    import pandas as pd
except ImportError as exc:  # pragma: no cover - exercised by a test that hides pandas
    raise missing_extra(__name__, "pandas and numpy", exc) from exc

from lldsched.errors import ValidationError, shown
from lldsched.logs import counted
from lldsched.views.report import NOT_RUNS

__all__ = [
    "check_frame",
    "check_lateness",
    "check_spans",
    "instants",
    "ran",
    "ran_reading",
    "reading",
]


def ran(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of attempts that ran: without the slots a policy decided without a run
    (missed, coalesced, skipped; :attr:`~lldsched.model.Outcome.ran` says which).  The
    plots and :func:`utilisation` start here, so its check of ``frame`` is theirs."""
    return frame[_ran_rows(frame)]


def _ran_rows(frame: pd.DataFrame) -> pd.Series[bool]:
    """Which rows of ``frame`` are runs (:func:`ran`), its check first."""
    return ~check_frame(frame)["outcome"].isin(NOT_RUNS)


def ran_reading(frame: pd.DataFrame, read: Collection[str]) -> pd.DataFrame:
    """:func:`ran` of ``frame``, of only the columns in ``read`` (:func:`reading`): a
    view copies the rows that ran of the columns it reads, not every column of them (a
    million records' frame holds 116 MB in its 17 columns; the lateness charts read 6).
    A frame without one of them is refused, naming it (:func:`check_frame`), but for the
    :data:`OPTIONAL` ones: a view raised pandas' bare ``KeyError: 'finish'`` at its first
    use, or only on some frames (``attempt`` with ``depends_on``, ``error`` of a
    cancelled run)."""
    check_frame(frame, columns=sorted(set(read) - OPTIONAL))
    runs = _ran_rows(frame).to_numpy()
    return reading(frame, read)[runs]


OPTIONAL = frozenset({"node"})
"""The columns a view reads if a frame has them: ``node``, which a frame of one process's
runs may leave out (its lanes are the workers alone)."""


def reading(frame: pd.DataFrame, read: Collection[str]) -> pd.DataFrame:
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
            f"expected a DataFrame of runs, as to_frame(scheduler) makes, got {shown(frame)}"
        )
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValidationError(
            f"expected a DataFrame of runs, as to_frame(scheduler) makes: it has no "
            f"{missing} column, got columns {list(frame.columns)}"
        )
    return frame


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
