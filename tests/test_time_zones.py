"""What a team in a zone with DST sees of a simulation across the night the clocks go
back: every run in the frame once, in order, and its times read apart.

Cron's own DST semantics are tests/test_cron_dst.py's; this is what is around them."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    OneTime,
    ScheduleError,
    Simulation,
    ValidationError,
    Window,
)
from lldsched.schedules.cron import zone
from lldsched.views.frames import to_frame
from lldsched.views.tables import readable

BERLIN = ZoneInfo("Europe/Berlin")


def test_three_days_of_a_berlin_cron_over_the_night_the_clocks_go_back() -> None:
    # Sunday 2026-10-25: 03:00 CEST becomes 02:00 CET, so that day has 25 hours and
    # "30 * * * *" fires at 02:30 twice (a fire at every wall-clock hour, cronie's rule).
    sim = Simulation(start=datetime(2026, 10, 24, tzinfo=BERLIN), tz="Europe/Berlin")
    sim.schedule("half-past", "30 * * * *")
    sim.run_for(3 * 86400)
    frame = to_frame(sim)
    assert len(frame) == 3 * 24  # run_for counts real seconds: 72 real hours, 72 fires
    assert frame["due"].is_monotonic_increasing and frame["due"].is_unique
    assert str(frame["due"].dtype) == "datetime64[us, UTC]"
    night = frame[frame["due"].dt.tz_convert(BERLIN).dt.strftime("%a %H") == "Sun 02"]
    assert night["due"].tolist() == [
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC), datetime(2026, 10, 25, 1, 30, tzinfo=UTC),
    ]  # fmt: skip
    assert readable(night[["due"]], tz=BERLIN)["due"].tolist() == [
        "Sun 02:30:00 CEST", "Sun 02:30:00 CET",
    ]  # fmt: skip


def test_a_half_hour_fall_back_reads_apart_too() -> None:
    # Lord Howe's clocks go back half an hour (02:00 +11 -> 01:30 +1030) on 2026-04-05:
    # a fire every quarter hour is at 01:30 and 01:45 twice each.
    zone = ZoneInfo("Australia/Lord_Howe")
    sim = Simulation(start=datetime(2026, 4, 5, 1, 10, tzinfo=zone), tz=zone)
    sim.schedule("quarter", "*/15 * * * *")
    sim.run(datetime(2026, 4, 5, 2, 0, tzinfo=zone))
    frame = to_frame(sim)
    assert frame["due"].is_monotonic_increasing and frame["due"].is_unique
    assert readable(frame[["due"]], tz=zone)["due"].tolist() == [
        "Sun 01:15:00 +11", "Sun 01:30:00 +11", "Sun 01:45:00 +11",
        "Sun 01:30:00 +1030", "Sun 01:45:00 +1030", "Sun 02:00:00 +1030",
    ]  # fmt: skip


def test_a_one_off_at_a_repeated_local_time_is_the_one_its_fold_names() -> None:
    # fall-back (2026-10-25): fold=0 is the first 02:30 (CEST), fold=1 the second (CET)
    first = OneTime(datetime(2026, 10, 25, 2, 30, tzinfo=BERLIN))
    second = OneTime(datetime(2026, 10, 25, 2, 30, tzinfo=BERLIN, fold=1))
    assert first.at == datetime(2026, 10, 25, 0, 30, tzinfo=UTC).timestamp()
    assert second.at == datetime(2026, 10, 25, 1, 30, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("fold", [0, 1])
def test_a_local_time_the_clocks_skip_is_refused_wherever_an_instant_is_taken(
    fold: int,
) -> None:
    # 2026-03-29 in Berlin: 02:00 CET -> 03:00 CEST; Python would read 02:30 as 03:30
    # CEST (fold=0) or 01:30 CET (fold=1), neither of them 02:30
    gap = datetime(2026, 3, 29, 2, 30, tzinfo=BERLIN, fold=fold)
    with pytest.raises(ScheduleError, match=r"2026-03-29 02:30:00 does not exist in Europe/Berlin"):
        OneTime(gap)
    with pytest.raises(ScheduleError, match="does not exist"):
        Window(FixedRate(60), start=gap)
    with pytest.raises(ValidationError, match="does not exist"):
        Simulation(start=gap)
    with pytest.raises(ValidationError, match="does not exist"):
        FakeClock(gap)
    assert OneTime(datetime(2026, 3, 29, 3, 0, tzinfo=BERLIN)).at == (
        datetime(2026, 3, 29, 1, 0, tzinfo=UTC).timestamp()
    )  # the first minute after the gap, where cron runs a fire inside it


def test_a_fixed_rate_counts_real_seconds_across_a_dst_change() -> None:
    # 09:00 CET on the Saturday before the spring change; a day of real seconds later
    # is 10:00 CEST on the Sunday, where "0 9 * * *" in Berlin fires at 09:00 CEST
    sim = Simulation(start=datetime(2026, 3, 28, 9, tzinfo=BERLIN), tz="Europe/Berlin")
    sim.schedule("rate", FixedRate(86400))
    sim.schedule("cron", "0 9 * * *")
    sim.run(datetime(2026, 3, 29, 12, tzinfo=BERLIN))
    frame = to_frame(sim)
    local = readable(frame[["name", "start"]], tz=BERLIN)
    assert sorted(zip(local["name"], local["start"], strict=True)) == [
        ("cron", "Sun 09:00:00 CEST"), ("rate", "Sat 09:00:00 CET"),
        ("rate", "Sun 10:00:00 CEST"),
    ]  # fmt: skip


def test_a_zone_remembers_a_bounded_number_of_its_days(monkeypatch: pytest.MonkeyPatch) -> None:
    # A cron schedule iterated for years asks its zone about one local day after another:
    # the answers kept are bounded (the bound lowered here to 10), and the days asked
    # again after a clear are worked out again, the same.
    monkeypatch.setattr(zone, "_CACHE_LIMIT", 10)
    berlin = zone.LocalDays("Europe/Berlin")
    first = datetime(2026, 3, 20).toordinal()  # 29 March, a change, is among them
    days: list[zone.LocalDay] = []
    held: list[int] = []
    for n in range(25):
        days.append(berlin.day(first + n))
        held.append(len(berlin._days))
    assert max(held) == 10
    assert [berlin.day(first + n) for n in range(25)] == days
    assert sum(day.shift is not None for day in days) == 1
