"""views.tables.readable: a frame for reading, with durations in seconds, minutes or hours,
instants as weekday and clock in a zone, and long text cut, so it fits a notebook cell."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

from lldsched import ExecutionRecord, ValidationError
from lldsched.clock import UTC_NAMES
from lldsched.model import Outcome
from lldsched.sim.scenario import build_scenario
from lldsched.views.frames import task_summary, to_frame
from lldsched.views.tables import TEXT_WIDTH, readable, seconds_text
from tests.conftest import T0

R = ExecutionRecord
RUNS = [
    R("t1", "heartbeat", 1, T0 + 60, T0 + 60, 1, T0 + 411, T0 + 412, True),
    R("t2", "import", 1, T0, T0, 0, T0, T0 + 0.25, False, "ValueError: " + "x" * 80),
    R("t3", "backup", 1, T0, T0, 2, T0, T0 + 7500, True),
]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 s"), (0.25, "0.25 s"), (1, "1 s"), (42.4, "42 s"), (60, "1 min"),
     (351, "5 min 51 s"), (3600, "1 h 00 min"), (7500, "2 h 05 min"), (-90, "-1 min 30 s"),
     (float("nan"), "—")],
)  # fmt: skip
def test_seconds_read_as_seconds_minutes_or_hours(seconds: float, text: str) -> None:
    assert seconds_text(seconds) == text


def test_a_readable_frame_has_no_days_notation_and_short_times() -> None:
    shown = readable(to_frame(RUNS))
    assert shown["lateness"].tolist() == ["5 min 51 s", "0 s", "0 s"]
    assert shown["duration"].tolist() == ["1 s", "0.25 s", "2 h 05 min"]
    assert shown["start"].tolist() == ["Mon 09:06:51", "Mon 09:00:00", "Mon 09:00:00"]
    assert shown["error"].tolist()[1] == "ValueError: " + "x" * (TEXT_WIDTH - 13) + "…"
    assert len(shown["error"].tolist()[1]) == TEXT_WIDTH and shown["error"].tolist()[0] == ""
    assert shown["worker"].tolist() == [1, 0, 2]  # numbers stay numbers
    assert "days" not in shown.to_string()


def test_times_are_shown_in_the_zone_asked_for_and_a_bad_zone_is_refused() -> None:
    shown = readable(to_frame(RUNS[:1]), tz="Europe/Berlin")
    assert shown["due"].tolist() == ["Mon 10:01:00 CET"]
    with pytest.raises(ValidationError, match="'Mars/Olympus'"):
        readable(to_frame(RUNS), tz="Mars/Olympus")


def test_a_summary_reads_in_minutes_and_an_empty_percentile_as_a_dash() -> None:
    summary = task_summary(to_frame(RUNS))
    shown = readable(summary[["name", "lateness_max", "duration_p50"]])
    assert list(shown.loc["t1"]) == ["heartbeat", "5 min 51 s", "1 s"]
    missed = R("t4", "report", 1, T0, T0, -1, T0, T0, False, misfire=Outcome.MISSED)
    only_missed = task_summary(to_frame([missed]))  # no run: no lateness to measure
    assert readable(only_missed)["lateness_max"].tolist() == ["—"]


@pytest.mark.parametrize(
    ("tz", "times"),
    [
        ("Europe/Berlin", ["Sun 02:30:00 CEST", "Sun 02:30:00 CET"]),
        ("UTC", ["Sun 00:30:00", "Sun 01:30:00"]),
    ],
)
def test_the_two_half_past_two_of_a_night_the_clocks_go_back_read_apart(
    tz: str, times: list[str]
) -> None:
    # 2026-10-25: Berlin's clocks go back from 03:00 CEST to 02:00 CET; a run at 00:30
    # UTC and one at 01:30 UTC are both at 02:30 on the wall, an hour apart.
    first = datetime(2026, 10, 25, 0, 30, tzinfo=UTC).timestamp()
    runs = [
        ExecutionRecord("t", "half-past", 1, at, at, 0, at, at + 1, True)
        for at in (first, first + 3600)
    ]
    assert readable(to_frame(runs), tz=tz)["start"].tolist() == times


# -- the cells pinned against their per-cell rules ------------------------------------------


def cell_by_cell(frame: pd.DataFrame, tz: str | tzinfo) -> pd.DataFrame:
    """``readable`` as it was written first, one cell at a time: the oracle that pins what
    the column-wise ``readable`` shows (each cell's rule is ``seconds_text``, ``strftime``
    in the zone, or the cut)."""
    zone = tz if isinstance(tz, tzinfo) else ZoneInfo(tz)
    clock = "%a %H:%M:%S" if str(zone) in UTC_NAMES else "%a %H:%M:%S %Z"
    shown = frame.copy()
    for column in shown.columns:
        values = shown[column]
        if pd.api.types.is_timedelta64_dtype(values.dtype):
            shown[column] = [
                "—" if pd.isna(v) else seconds_text(pd.Timedelta(v).total_seconds()) for v in values
            ]
        elif isinstance(values.dtype, pd.DatetimeTZDtype):
            shown[column] = values.dt.tz_convert(zone).dt.strftime(clock).fillna("")
        elif pd.api.types.is_string_dtype(values.dtype) and not isinstance(
            values.dtype, pd.CategoricalDtype
        ):
            shown[column] = [
                "" if v is None or pd.isna(v)
                else (str(v) if len(str(v)) <= TEXT_WIDTH else str(v)[: TEXT_WIDTH - 1] + "…")
                for v in values
            ]  # fmt: skip
    return shown


def edge_records() -> list[ExecutionRecord]:
    """Records at the edges of each cell's rule: a duration on each boundary of
    ``seconds_text`` (9.9996 s, 10.5 s, 59.5 s, 3599.5 s), negative lateness, an unknown
    finish (NaN: no duration), an instant before 1970 and one in 2100, texts just under,
    at and past the cut, and tasks with only decided slots."""
    texts = ["x" * (TEXT_WIDTH - 1), "y" * TEXT_WIDTH, "z" * (TEXT_WIDTH + 1), "é€" * 20, ""]
    records = [
        R(f"b{i}", f"bound-{i}", 1, T0, T0, 0, T0 + i, T0 + i + seconds, True, result=text)
        for i, (seconds, text) in enumerate(
            zip((9.9996, 10.5, 59.5, 3599.5, 0.0001), texts, strict=True)
        )
    ]
    return [
        *records,
        R("early", "early", 1, T0 + 5, T0 + 5, 0, T0, T0 + 3, True),  # lateness -5 s
        R("nan", "nan", 1, T0, T0, 0, T0, float("nan"), False, "RuntimeError: lost"),
        R("old", "before-1970", 1, -2.5, -2.5, 0, -1.5, -0.25, True),
        R("far", "in-2100", 1, 4102444800.5, 4102444800.5, 0, 4102444801.75, 4102448401.0, True),
        R("skip", "only-skipped", 0, T0, T0, -1, T0, T0, False, None, False, Outcome.SKIPPED),
        R("miss", "only-missed", 0, T0, T0, -1, T0 + 9, T0 + 9, False, None, False, Outcome.MISSED),
    ]


def pinned_frames() -> list[pd.DataFrame]:
    sim = build_scenario(workers=3, seed=2)
    sim.run_for(2 * 86400)
    frame = to_frame(sim.records() + edge_records())
    summary = task_summary(frame)
    return [frame, frame.iloc[:1], frame.iloc[:0], summary, summary.iloc[:0]]


@pytest.mark.parametrize(
    "tz",
    ["UTC", "Europe/Berlin", "Australia/Lord_Howe", "America/St_Johns",
     timezone(timedelta(hours=5, minutes=30)), UTC],
)  # fmt: skip
def test_readable_shows_each_cell_by_its_rule(tz: str | tzinfo) -> None:
    for frame in pinned_frames():
        pd.testing.assert_frame_equal(readable(frame, tz=tz), cell_by_cell(frame, tz))


def test_readable_shows_frames_of_other_units_and_object_text_by_the_same_rules() -> None:
    frame = pd.DataFrame(
        {
            "wait": pd.to_timedelta([0.5, float("nan"), -12.25, 7201], unit="s"),  # nanoseconds
            "at": pd.to_datetime([0, 1.5e9, float("nan"), -86400.5], unit="s", utc=True),
            "note": pd.Series(["short", None, "w" * 40, float("nan")], dtype=object),
            "kind": pd.Categorical(["a", "b", "a", "b"]),
        },
        index=pd.Index([10, 20, 30, 40], name="row"),
    )
    for tz in ("UTC", "America/New_York"):
        pd.testing.assert_frame_equal(readable(frame, tz=tz), cell_by_cell(frame, tz))


class Renamed(tzinfo):
    """UTC+2 all along, whose abbreviation changes from OLD to NEW at ``RENAMED``, in the
    middle of a minute (as zones' abbreviations have changed with their offset kept)."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=2)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def tzname(self, dt: datetime | None) -> str:
        wall = dt.replace(tzinfo=None) if dt is not None else datetime.max
        return "OLD" if wall < datetime(2026, 1, 5, 11, 0, 30) else "NEW"


def test_an_abbreviation_that_changes_inside_a_minute_is_read_instant_by_instant() -> None:
    runs = [
        R("t", "renamed", 1, T0 + at, T0 + at, 0, T0 + at, T0 + at + 1, True)
        for at in (0, 10, 29.5, 30, 50, 60)  # T0 is 09:00 UTC: 11:00 on this zone's wall
    ]
    shown = readable(to_frame(runs), tz=Renamed())
    assert shown["start"].tolist() == [
        "Mon 11:00:00 OLD", "Mon 11:00:10 OLD", "Mon 11:00:29 OLD",
        "Mon 11:00:30 NEW", "Mon 11:00:50 NEW", "Mon 11:01:00 NEW",
    ]  # fmt: skip
    assert shown.equals(cell_by_cell(to_frame(runs), Renamed()))
