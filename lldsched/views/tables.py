"""Frames made readable in a notebook cell: durations in seconds, minutes or hours,
instants as short local times, long text cut, so a table fits the cell.

:func:`readable` returns a copy whose cells are strings (what pandas prints as
``0 days 00:05:51`` becomes ``5 min 51 s``, by the one rule of
:mod:`lldsched.views.durations`); keep the typed frame for computing.
"""

from __future__ import annotations

from datetime import date, tzinfo
from typing import Any

from lldsched.schedules.cron.zone import zone_info
from lldsched.views import missing_extra

try:
    import numpy as np
    import pandas as pd
except ImportError as exc:  # pragma: no cover - exercised by a test that hides pandas
    raise missing_extra(__name__, "pandas and numpy", exc) from exc

from lldsched.clock import UTC_NAMES
from lldsched.errors import ValidationError, shown
from lldsched.views.durations import seconds_text

__all__ = ["readable", "seconds_text"]


TEXT_WIDTH = 28
"""Longer text cells (an error message) are cut to this many characters, with "…"."""


def readable(frame: pd.DataFrame, *, tz: str | tzinfo = "UTC") -> pd.DataFrame:
    """A copy of ``frame`` for display: timedelta columns as :func:`seconds_text`,
    aware datetime columns as ``Mon 09:00:12`` in zone ``tz`` (in any zone but UTC
    with its abbreviation, ``Sun 02:30:00 CEST``: the two 02:30 of a night the clocks
    go back read apart), text cut to :data:`TEXT_WIDTH` characters, missing values as
    an empty cell.

    Each rule is applied column by column, to the distinct values a column holds (a
    duration's text, a text's cut) or to the parts of an instant (its weekday, its
    time of day, its zone's abbreviation), never one cell at a time: a million rows
    read in about a second (docs/PERFORMANCE.md, "Views at a million records")."""
    if not isinstance(frame, pd.DataFrame):
        raise ValidationError(f"readable() takes a DataFrame, got {shown(frame)}")
    zone = _zone(tz)
    table = frame.copy()
    for column in table.columns:
        values = table[column]
        if pd.api.types.is_timedelta64_dtype(values.dtype):
            table[column] = _durations(values)
        elif isinstance(values.dtype, pd.DatetimeTZDtype):
            table[column] = _clock_texts(values, zone)
        elif pd.api.types.is_string_dtype(values.dtype) and not isinstance(
            values.dtype, pd.CategoricalDtype
        ):
            table[column] = _cut_texts(values)
    return table


def _durations(values: pd.Series[Any]) -> list[str]:
    """:func:`seconds_text` of each duration (``—`` for NaT), asked once per distinct
    text: from 10 s on a text depends only on the whole seconds (``round``, which
    ``np.rint`` equals: both round half to even; :mod:`lldsched.views.durations`), so
    those values are rounded first
    (a week of a million runs has about 600,000 distinct durations, and a few
    thousand distinct whole seconds: ``readable`` of that week 1.40 s of CPU without
    the rounding, 1.22 s with it)."""
    seconds = values.to_numpy() / np.timedelta64(1, "s")  # Timedelta.total_seconds, NaN for NaT
    codes, distinct = pd.factorize(np.where(np.abs(seconds) >= 10, np.rint(seconds), seconds))
    texts = np.array([*map(seconds_text, distinct.tolist()), "—"], dtype=object)  # [-1]: NaT
    shown: list[str] = texts[codes].tolist()
    return shown


def _clock_texts(values: pd.Series[Any], zone: tzinfo) -> pd.Series[Any]:
    """``strftime("%a %H:%M:%S")`` of each instant in ``zone`` (and ``" %Z"`` outside
    UTC), ``""`` for NaT, put together from two tables: the hours of a week (``Mon
    09:``, the weekday's name ``strftime``'s own, in the locale's words) and the
    ``MM:SS`` of an hour (with each abbreviation present, outside UTC)."""
    wall = values.dt.tz_convert(zone).dt.tz_localize(None).to_numpy()
    whole = wall.astype("M8[s]").view(np.int64)  # floored, as %S shows them
    day, second = whole // 86_400, whole % 86_400
    # 1970-01-01, day 0, was a Thursday: weekday 3 of 2024-01-01's Monday-first week.
    hour = (day + 3) % 7 * 24 + second // 3600
    names = [f"{date(2024, 1, 1 + weekday):%a}" for weekday in range(7)]
    hours = np.array([f"{name} {h:02d}:" for name in names for h in range(24)], dtype=object)
    ends = [f"{m:02d}:{s:02d}" for m in range(60) for s in range(60)]
    missing = values.isna().to_numpy()
    end = second % 3600
    if str(zone) not in UTC_NAMES:
        present = ~missing
        codes, abbreviations = _abbreviations(values[present], zone)
        end[present] += codes * 3600
        ends = [f"{mmss} {abbreviation}" for abbreviation in abbreviations for mmss in ends]
    texts = hours[hour] + np.array(ends, dtype=object)[end]
    texts[missing] = ""
    return pd.Series(texts, index=values.index, dtype="str")


def _abbreviations(values: pd.Series[Any], zone: tzinfo) -> tuple[Any, list[str]]:
    """``strftime("%Z")`` of each instant (none NaT) in ``zone``: a code per instant into
    the distinct abbreviations.  Asked once per (UTC hour, UTC offset) present, at the
    group's earliest and latest instant (pandas' ``strftime`` takes about 25 µs an
    instant in a zone: a week of a million runs asked row by row took 25 s a column); a
    group whose two ends differ (the abbreviation changed inside that hour, the offset
    did not) is asked instant by instant.  Exact unless an abbreviation changed and
    changed back within an hour with the same offset, which no zone has done."""
    instants = values.dt.tz_localize(None).to_numpy()
    ticks = instants.view(np.int64)  # in the column's own unit
    unit, _ = np.datetime_data(instants.dtype)
    per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]  # pandas' units
    offset = values.dt.tz_convert(zone).dt.tz_localize(None).to_numpy().view(np.int64) - ticks
    # An offset is under a day (tzinfo's rule): 2**18 seconds hold it either side.
    hour = ticks // (3600 * per_second)
    group, groups = pd.factorize(hour * 2**19 + offset // per_second + 2**18)
    earliest = np.full(len(groups), np.iinfo(np.int64).max)
    latest = np.full(len(groups), np.iinfo(np.int64).min)
    np.minimum.at(earliest, group, ticks)
    np.maximum.at(latest, group, ticks)

    def named(ticks: Any) -> Any:
        moments = pd.DatetimeIndex(ticks.view(instants.dtype)).tz_localize("UTC")
        return moments.tz_convert(zone).strftime("%Z").to_numpy(dtype=object)

    first, last = named(earliest), named(latest)
    changed = (first != last)[group]
    alone = named(ticks[changed])  # the instants of the groups whose ends differ
    codes, abbreviations = pd.factorize(np.concatenate([first, alone]))
    code = codes[group]
    code[changed] = codes[len(first) :]
    return code, list(abbreviations)


def _cut_texts(values: pd.Series[Any]) -> list[str]:
    """Each text cut (:func:`_cut`), ``""`` where missing: cut once per distinct text."""
    codes, distinct = pd.factorize(values)  # a missing value's code is -1
    cut = np.array([_cut(text) for text in distinct] + [""], dtype=object)  # [-1] is ""
    shown: list[str] = cut[codes].tolist()
    return shown


def _cut(value: Any) -> str:
    if value is None or pd.isna(value):
        return ""
    text = str(value)
    return text if len(text) <= TEXT_WIDTH else text[: TEXT_WIDTH - 1] + "…"


def _zone(tz: str | tzinfo) -> tzinfo:
    if isinstance(tz, tzinfo):
        return tz
    return zone_info(tz)  # ScheduleError, a ValidationError, naming a bad one
