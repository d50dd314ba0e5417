"""Frames made readable in a notebook cell: durations in seconds, minutes or hours,
instants as short local times, long text cut, so a table fits the cell.

:func:`readable` returns a copy whose cells are strings (what pandas prints as
``0 days 00:05:51`` becomes ``5 min 51 s``); keep the typed frame for computing.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

from lldsched.schedules.cron.zone import zone_info
from lldsched.views import missing_extra

try:
    import pandas as pd
except ImportError as exc:  # pragma: no cover - exercised by a test that hides pandas
    raise missing_extra(__name__, "pandas", exc) from exc

from lldsched.clock import UTC_NAMES
from lldsched.errors import ValidationError

__all__ = ["readable", "seconds_text"]


TEXT_WIDTH = 28
"""Longer text cells (an error message) are cut to this many characters, with "…"."""


def seconds_text(seconds: float) -> str:
    """A duration for reading: ``0.25 s``, ``12 s``, ``5 min 51 s``, ``2 h 05 min``."""
    if seconds != seconds:  # NaN: a percentile of no runs
        return "—"
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    if seconds < 10:
        return f"{sign}{seconds:.3g} s"
    whole = round(seconds)
    if whole < 60:
        return f"{sign}{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{sign}{minutes} min {rest:02d} s" if rest else f"{sign}{minutes} min"
    hours, rest = divmod(whole, 3600)
    return f"{sign}{hours} h {rest // 60:02d} min"


def readable(frame: pd.DataFrame, *, tz: str | tzinfo = "UTC") -> pd.DataFrame:
    """A copy of ``frame`` for display: timedelta columns as :func:`seconds_text`,
    aware datetime columns as ``Mon 09:00:12`` in zone ``tz`` (in any zone but UTC
    with its abbreviation, ``Sun 02:30:00 CEST``: the two 02:30 of a night the clocks
    go back read apart), text cut to :data:`TEXT_WIDTH` characters, missing values as
    an empty cell."""
    if not isinstance(frame, pd.DataFrame):
        raise ValidationError(f"readable() takes a DataFrame, got {frame!r}")
    zone = _zone(tz)
    clock = "%a %H:%M:%S" if str(zone) in UTC_NAMES else "%a %H:%M:%S %Z"
    shown = frame.copy()
    for column in shown.columns:
        values = shown[column]
        if pd.api.types.is_timedelta64_dtype(values.dtype):
            shown[column] = [_duration(v) for v in values]
        elif isinstance(values.dtype, pd.DatetimeTZDtype):
            local = values.dt.tz_convert(zone)
            shown[column] = local.dt.strftime(clock).fillna("")
        elif pd.api.types.is_string_dtype(values.dtype) and not isinstance(
            values.dtype, pd.CategoricalDtype
        ):
            shown[column] = [_cut(v) for v in values]
    return shown


def _duration(value: Any) -> str:
    if pd.isna(value):
        return "—"
    return seconds_text(pd.Timedelta(value).total_seconds())


def _cut(value: Any) -> str:
    if value is None or pd.isna(value):
        return ""
    text = str(value)
    return text if len(text) <= TEXT_WIDTH else text[: TEXT_WIDTH - 1] + "…"


def _zone(tz: str | tzinfo) -> tzinfo:
    if isinstance(tz, tzinfo):
        return tz
    return zone_info(tz)  # ScheduleError, a ValidationError, naming a bad one
