"""A chart's time axis: instants shown in a zone (``tz=``), ticks evenly apart in real
time across a change of summer time (a wall time two ticks share, and the times either
side of the change, say their zones under them), a lone instant given the minute around
it, and durations in a readable unit.  What every plot shares besides is
:mod:`lldsched.views.plots._base`'s.
"""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import datetime, time, timedelta, tzinfo
from typing import Any

import numpy as np
import pandas as pd

from lldsched.schedules.cron.zone import zone_info
from lldsched.views.plots._base import Array, Axes, NullLocator, mdates
from lldsched.views.runs import instants

__all__ = [
    "LONE_INSTANT",
    "as_zone",
    "date_numbers",
    "seconds_of",
    "set_time_span",
    "time_axis",
    "time_unit",
]


def as_zone(tz: str | tzinfo) -> tzinfo:
    """``tz`` as a ``tzinfo``: one given as is, a name looked up (refused, naming it)."""
    if isinstance(tz, tzinfo):
        return tz
    return zone_info(tz)  # ScheduleError, a ValidationError, naming a bad one


def date_numbers(column: pd.Series[Any]) -> Array:
    """A tz-aware datetime column as matplotlib date numbers (days since its epoch); a
    column of naive times or text is refused, naming it (:func:`instants`)."""
    return mdates.date2num(instants(column))


def time_axis(
    ax: Axes, tz: str | tzinfo, *, max_ticks: int | None = None, blank: bool = False
) -> None:
    """Dates in ``tz`` on the x axis; ``max_ticks`` bounds the labels (a narrow panel).
    ``blank``: no tick at all (a chart of no runs, whose axis would otherwise read
    1970-01-01, the epoch matplotlib's dates start from)."""
    zone = as_zone(tz)
    locator = _ZoneLocator(tz=zone, maxticks=max_ticks)
    ax.xaxis.set_major_locator(NullLocator() if blank else locator)
    # Ticks seconds apart read as times ("09:00:30"), not as seconds alone ("30", the
    # concise default, a number a reader takes for anything but a time of day), and
    # ticks under a second apart with their fraction ("09:00:00.25": matplotlib trims
    # the zeros every label shares, so whole seconds still read "09:00:30"); ticks days
    # apart as days ("Mon 05", not "05", which reads as an hour as well).  The zero
    # formats (a day's first tick "Jan-06") are matplotlib's, given again: with formats
    # alone, they are derived from them, and midnight read "06".
    formats = ["%Y", "%b", "%a %d", "%H:%M", "%H:%M", "%H:%M:%S.%f"]
    zero_formats = ["", "%Y", "%b", "%b-%d", "%H:%M", "%H:%M"]
    ax.xaxis.set_major_formatter(
        _ZoneFormatter(locator, tz=zone, formats=formats, zero_formats=zero_formats)
    )
    ax.set_xlabel(f"time ({zone})")


class _ZoneLocator(mdates.AutoDateLocator):  # type: ignore[misc]
    """matplotlib's date locator, with ticks under a day apart kept evenly apart across
    a change of the zone's offset.  Its ticks are steps of local time: over the night
    summer time begins, Europe/Berlin's 02:00 does not exist and fell on 03:00's
    instant (two ticks, "03:00" printed over itself); over the night it ends, 02:00
    happens twice and had one tick (from "02:00" to "03:00" two hours of runs).  Where
    the ticks' offsets differ they are laid again from the first, one step of real
    time apart (the step the locator chose: its ticks' least gap of wall time), so that
    the axis reads as the time that passed; ticks a day or more apart stay at local
    midnights."""

    def __call__(self) -> Any:
        return _even_ticks(super().__call__(), self.tz)

    def tick_values(self, vmin: float, vmax: float) -> Any:
        return _even_ticks(super().tick_values(vmin, vmax), self.tz)


def _even_ticks(ticks: Any, zone: tzinfo) -> Any:
    """``ticks`` (date numbers), or, when they cross a change of ``zone``'s offset and are
    under a day apart, as many ticks from the first one step apart (see
    :class:`_ZoneLocator`)."""
    values = np.unique(np.asarray(ticks, dtype=float))
    if len(values) < 2 or len(_offsets(values, zone)) == 1:
        return ticks
    # In whole microseconds (a date number's sum of steps drifted to 01:59:59.999999).
    micros = np.rint(values * _MICROS_A_DAY).astype(np.int64)
    step = _local_step(micros, values, zone)
    if step >= _MICROS_A_DAY:  # days apart: local midnights, however long the day between
        return values
    count = (int(micros[-1] - micros[0]) + step // 2) // step + 1
    return (micros[0] + step * np.arange(count, dtype=np.int64)) / _MICROS_A_DAY


_MICROS_A_DAY = 86_400 * 10**6


def _local_step(micros: Any, values: Any, zone: tzinfo) -> int:
    """The locator's step, in microseconds: the least gap between the ticks' wall times in
    ``zone`` (``micros``, the ticks in whole microseconds, plus each one's offset: the
    date numbers ``values`` read in ``zone``), the time it stepped in; or their least gap
    in real time if no wall time follows another.  Not their least gap in real time:
    across the night the clocks go forward one gap is an hour short, and a week's ticks a
    day apart (its Sunday of 23 hours) were laid again every 23 hours, read "23:00",
    "22:00" ... with no day."""
    offsets = [mdates.num2date(value, tz=zone).utcoffset() or timedelta() for value in values]
    walls = [
        int(at) + offset // timedelta(microseconds=1)
        for at, offset in zip(micros, offsets, strict=True)
    ]
    gaps = [later - earlier for earlier, later in itertools.pairwise(walls) if later > earlier]
    return min(gaps, default=int(np.diff(micros).min()))


def _offsets(values: Any, zone: tzinfo) -> set[Any]:
    """The distinct UTC offsets of ``zone`` at the date numbers ``values``."""
    return {mdates.num2date(value, tz=zone).utcoffset() for value in values}


class _ZoneFormatter(mdates.ConciseDateFormatter):  # type: ignore[misc]
    """matplotlib's concise date labels, with the zone's abbreviation under each tick
    whose wall time another tick shows too: the night summer time ends, Europe/Berlin's
    02:00 happens twice ("02:00" over "CEST", then over "CET"; on a line of its own, so
    that a label is no wider than its neighbours); and under the time of day of each tick
    either side of a change of offset (the night it begins, "01:30" over "CET", "03:00"
    over "CEST")."""

    def format_ticks(self, values: Any) -> list[str]:
        if len(values) == 0:  # a blank axis; matplotlib 3.8.0's concise labels fail on none
            return []
        labels: list[str] = list(super().format_ticks(values))
        moments = [mdates.num2date(value, tz=self._tz) for value in values]
        # Ticks under an hour apart read "00:00" at midnight (matplotlib's zero format
        # of minutes is a time), under an offset of the last tick's day alone: two hours
        # around midnight read as the second day's.  A tick at a local midnight after
        # the first names its day, as matplotlib's ticks an hour or more apart do.
        for index, moment in enumerate(moments[1:], start=1):
            if labels[index] and moment.time() == time() and ":" in labels[index]:
                labels[index] = moment.strftime("%b-%d")
        walls = Counter(moment.replace(tzinfo=None) for moment in moments)
        changed = _beside_a_change(moments)
        return [
            f"{label}\n{moment.strftime('%Z')}"
            if label and (walls[moment.replace(tzinfo=None)] > 1 or (at and ":" in label))
            else label
            for moment, label, at in zip(moments, labels, changed, strict=True)
        ]  # fmt: skip


def _beside_a_change(moments: list[datetime]) -> list[bool]:
    """Which of ``moments`` (ticks in order) have a neighbour of another UTC offset: the
    two ticks either side of a change of summer time.  Their times of day say their zones
    ("01:30" over "CET", then "03:00" over "CEST"), since ticks evenly apart in real time
    read "01:30", "03:00" half an hour apart the night the clocks go forward, and nothing
    said the hour between did not happen."""
    offsets = [moment.utcoffset() for moment in moments]
    steps = [a != b for a, b in itertools.pairwise(offsets)]
    return [
        (index > 0 and steps[index - 1]) or (index < len(steps) and steps[index])
        for index in range(len(moments))
    ]


def seconds_of(column: pd.Series[Any]) -> Array:
    """A timedelta column as float seconds."""
    return column.to_numpy(dtype="m8[us]").astype(np.int64) / 1e6


def time_unit(largest: float) -> tuple[float, str]:
    """A divisor and a name that keep ``largest`` seconds readable."""
    if largest >= 3 * 3600:
        return 3600.0, "h"
    if largest >= 180:
        return 60.0, "min"
    return 1.0, "s"


LONE_INSTANT = 60 / 86400
"""The time axis (in days, as matplotlib dates are) of a chart whose runs are all at one
instant: the minute around it."""


def set_time_span(ax: Axes, low: float, high: float) -> None:
    """The x range ``low`` to ``high`` (date numbers) and a margin; a single instant gets
    the minute around it (:data:`LONE_INSTANT`: a margin of 1 % of nothing made ticks of
    tenths of a second, read "59.4, 59.6, 00:00")."""
    if high == low:
        ax.set_xlim(low - LONE_INSTANT / 2, high + LONE_INSTANT / 2)
        return
    span = high - low
    ax.set_xlim(low - span * 0.01, high + span * 0.01)
