"""views.tables.readable: a frame for reading, with durations in seconds, minutes or hours,
instants as weekday and clock in a zone, and long text cut, so it fits a notebook cell."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lldsched import ExecutionRecord, ValidationError
from lldsched.model import Outcome
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
