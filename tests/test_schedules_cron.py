"""CronSchedule as a Schedule: valid expressions fire when cron says, bad ones fail early."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lldsched import CronSchedule, ExecutionRecord, ScheduleError, Simulation, SqliteTaskStore
from tests import jobs


def ts(*parts: int) -> float:
    year, month, day, hour, minute = parts
    return datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp()


def fires(expr: str, start: float, n: int) -> list[str]:
    return [
        datetime.fromtimestamp(t, UTC).strftime("%a %Y-%m-%d %H:%M")
        for t in CronSchedule(expr).fire_times(start, n)
    ]


def test_every_fifteen_minutes_fires_on_the_quarter_hours() -> None:
    assert fires("*/15 * * * *", ts(2026, 11, 30, 9, 7), 3) == [
        "Mon 2026-11-30 09:15", "Mon 2026-11-30 09:30", "Mon 2026-11-30 09:45",
    ]  # fmt: skip


def test_a_weekday_range_skips_the_weekend() -> None:
    assert fires("0 9-17 * * 1-5", ts(2026, 12, 4, 17, 0), 2) == [
        "Mon 2026-12-07 09:00", "Mon 2026-12-07 10:00",
    ]  # fmt: skip


def test_the_first_of_the_month_rolls_over_into_the_next_month_and_year() -> None:
    assert fires("0 0 1 * *", ts(2026, 12, 15, 0, 0), 2) == [
        "Fri 2027-01-01 00:00", "Mon 2027-02-01 00:00",
    ]  # fmt: skip


def test_a_list_of_days_of_week_with_a_fixed_time() -> None:
    assert fires("30 2 * * 0,6", ts(2026, 11, 30, 0, 0), 2) == [
        "Sat 2026-12-05 02:30", "Sun 2026-12-06 02:30",
    ]  # fmt: skip


def test_new_years_eve_at_noon_fires_once_a_year() -> None:
    assert fires("0 12 31 12 *", ts(2026, 12, 31, 12, 0), 2) == [
        "Fri 2027-12-31 12:00", "Sun 2028-12-31 12:00",
    ]  # fmt: skip


def test_the_first_run_is_strictly_after_registration_and_overrun_fires_are_skipped() -> None:
    cron = CronSchedule("*/15 * * * *")
    at = ts(2026, 11, 30, 9, 15)
    assert cron.first_run(at) == at + 900
    overran = ExecutionRecord("task-1", "t", 1, at, at, 0, at, at + 1000, True)
    assert cron.next_run(overran, at + 1000) == ts(2026, 11, 30, 9, 45)


def test_a_fire_exactly_at_the_finish_is_due_at_once_and_next_after_stays_strict() -> None:
    """docs/decisions/schedules.md, "A slot that falls exactly at a run's finish has not been
    missed": cron follows the fixed rate's rule (the first fire not before the finish)."""
    cron = CronSchedule("*/15 * * * *")
    at = ts(2026, 11, 30, 9, 15)

    def ran(finished: float) -> ExecutionRecord:
        return ExecutionRecord("task-1", "t", 1, at, at, 0, at, finished, True)

    assert cron.next_run(ran(at + 900), at + 900) == at + 900  # exactly at the finish
    assert cron.next_run(ran(at + 1800), at + 1800) == at + 1800
    assert cron.next_run(ran(at + 900.5), at + 900.5) == at + 1800  # a hair later: missed
    assert cron.next_run(ran(at), at) == at + 900  # no time: the slot it served is not due
    assert cron.next_run_and_skipped(ran(at + 900), limit=10) == (at + 900, ())
    assert cron.next_run_and_skipped(ran(at + 1800), limit=10) == (at + 1800, [at + 900])
    assert cron.next_after(at + 900) == at + 1800  # the query keeps "strictly after"


def test_a_fire_at_the_finish_in_the_second_pass_of_a_repeated_hour_is_due() -> None:
    """Europe/Berlin falls back on 2026-10-25: 02:00 CEST is 00:00 UTC, 02:00 CET is
    01:00 UTC, and an hourly job fires in both passes."""
    cron = CronSchedule("0 * * * *", tz="Europe/Berlin")
    first, second = ts(2026, 10, 25, 0, 0), ts(2026, 10, 25, 1, 0)
    assert cron.next_after(first) == second
    ran = ExecutionRecord("task-1", "t", 1, first, first, 0, first, second, True)
    assert cron.next_run(ran, second) == second
    assert cron.next_run_and_skipped(ran, limit=10) == (second, ())
    longer = ran._replace(finished=second + 1)
    assert cron.next_run_and_skipped(longer, limit=10) == (second + 3600, [second])


@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin", "Etc/GMT+12", "Asia/Kathmandu"])
def test_an_instant_a_hair_from_a_fire_near_1970_is_not_rounded_onto_it(tz: str) -> None:
    """Found by tools/fuzz/fuzz_cron.py: near the epoch an instant is far smaller than
    the UTC instant of its local midnight (Berlin's 1970-01-01 starts at -3600), and
    ``ts - midnight`` rounded a hair onto a fire: ``prev_before(5e-324)`` skipped the
    fire at 0 (-60.0), ``next_after(-5e-324)`` too (60.0), and a run ending exactly at
    a fire (``next_run`` asks for the first fire after the float just below the finish)
    found that fire passed.  Fires are whole seconds; each query is answered as such."""
    cron = CronSchedule("* * * * *", tz=tz)
    assert cron.prev_before(5e-324) == 0.0
    assert cron.prev_before(1e-300) == 0.0
    assert cron.next_after(-5e-324) == 0.0
    assert cron.next_after(-1e-13) == 0.0
    assert cron.prev_before(math.nextafter(120.0, math.inf)) == 120.0
    assert cron.next_after(math.nextafter(120.0, -math.inf)) == 120.0
    assert cron.next_after(0.0) == 60.0 and cron.prev_before(0.0) == -60.0  # still strict
    assert cron.next_after(119.99) == 120.0  # asked again, after a search found 120
    assert cron.next_after(math.nextafter(60.0, -math.inf)) == 60.0
    ran = ExecutionRecord("task-1", "t", 1, 60.0, 60.0, 0, 60.0, 120.0, True)
    assert cron.next_run(ran, 120.0) == 120.0  # a fire exactly at the finish is due


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("* * * *", "has 4 fields; expected 5"),
        ("61 * * * *", "minute field: 61 is out of range 0-59"),
        ("*/0 * * * *", "minute field: step must be a number >= 1"),
        ("5-1 * * * *", "minute field: reversed range '5-1'"),
        ("1,,2 * * * *", "minute field: empty list item"),
    ],
)
def test_malformed_expressions_are_rejected_at_construction(expr: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        CronSchedule(expr)


def test_a_redeploy_that_rewrites_a_cron_text_stores_the_new_text(tmp_path: Path) -> None:
    """docs/decisions/schedules.md, "A cron schedule is its text and zone": the two texts fire
    alike, yet the store and the registry hold the text the code now has."""
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        sim = Simulation(start=ts(2026, 1, 1, 12, 0), store=store)
        sim.schedule("nightly", "0 0 * * *", action=jobs.noop, id="nightly")
        due = sim.task("nightly").next_run_at
        task = sim.schedule(
            "nightly", "0 0 * * 0-6", action=jobs.noop, id="nightly", replace_existing=True
        )
        assert task.schedule == CronSchedule("0 0 * * 0-6") and task.next_run_at == due
        row = store.get("nightly")
        assert row is not None and row.task.schedule == CronSchedule("0 0 * * 0-6")
