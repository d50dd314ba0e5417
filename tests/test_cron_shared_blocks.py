"""Equal cron expressions share their engine and its latest block of fires.

A fresh ``CronSchedule`` of a text already searched answers from the block the
shared engine found last (one bisection, no search), and whatever order several
schedules of one text ask in, every answer is the one a cold engine gives.
"""

from __future__ import annotations

from datetime import UTC, datetime
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from lldsched import CronSchedule
from lldsched.schedules.cron import schedule as cron_schedule
from lldsched.schedules.cron.search import CronEngine

NOW = datetime(2026, 3, 28, 12, 0, 7, tzinfo=UTC).timestamp()  # Berlin springs forward on the 29th


def test_equal_expressions_share_one_engine_and_its_day_tables() -> None:
    first, second = CronSchedule("0 3 * * 1-5"), CronSchedule("0 3 * * 1-5")
    assert first._engine is second._engine
    assert CronSchedule("0 3 * * 1-5", tz="Europe/Berlin")._engine is not first._engine


def test_a_fresh_schedule_of_a_searched_text_registers_without_a_search() -> None:
    CronSchedule("*/7 * * * *").first_run(NOW)  # one search; its block is the engine's
    with mock.patch.object(CronEngine, "next_fire", autospec=True) as search:
        fires = {CronSchedule("*/7 * * * *").first_run(NOW + i) for i in range(100)}
    assert search.call_count == 0
    assert fires == {datetime(2026, 3, 28, 12, 7, tzinfo=UTC).timestamp()}


def test_a_six_field_schedule_shares_its_block_too() -> None:
    CronSchedule("*/10 * * * * *").first_run(NOW)
    with mock.patch.object(CronEngine, "next_fire", autospec=True) as search:
        fire = CronSchedule("*/10 * * * * *").first_run(NOW)
    assert search.call_count == 0 and fire == NOW - 7 + 10


EXPRESSIONS = ["*/5 * * * *", "30 2 * * *", "0 3 * * 1-5", "*/20 * 2 * * *", "0 0 L * *"]
ZONES = ["UTC", "Europe/Berlin", "America/New_York"]


Query = tuple[int, str, float]
QUERIES = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.sampled_from(["anywhere", "chained", "near"]),
        st.floats(0, 40 * 86400),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(expr=st.sampled_from(EXPRESSIONS), zone=st.sampled_from(ZONES), queries=QUERIES)
def test_schedules_of_one_text_asking_in_any_order_agree_with_a_cold_engine(
    expr: str, zone: str, queries: list[Query]
) -> None:
    cold = cron_schedule._parsed(expr, zone)  # a fresh engine: no memo
    schedules = [CronSchedule(expr, tz=zone) for _ in range(4)]
    latest = NOW  # the latest answer of any of them: around the engine's shared block
    last: list[float | None] = [None] * 4
    for which, kind, value in queries:
        previous = last[which]
        if kind == "chained" and previous is not None:
            at = previous  # as the scheduler asks next
        elif kind == "near":
            at = latest - value % 7200  # up to two hours before the shared block's fire
        else:
            at = NOW + value
        answer = schedules[which].next_after(at)
        assert answer == cold.next_fire(at, None)[0], (expr, zone, at)
        last[which] = answer
        latest = answer if answer is not None else latest


# -- how much searching a walk through the fires costs (the blocks a search returns) --------

D = datetime(2026, 3, 10, tzinfo=UTC).timestamp()  # a Tuesday


def _walk(expr: str, start: float, until: float) -> tuple[int, int, int]:
    """Walk a fresh schedule's fires from ``start`` through ``until`` as the scheduler
    does (each next_after from the last fire): the fires, the engine's searches and the
    local days they looked at."""
    schedule = CronSchedule(expr)
    with (
        mock.patch.object(
            CronEngine, "next_fire", autospec=True, side_effect=CronEngine.next_fire
        ) as searches,
        mock.patch.object(
            CronEngine, "_first_fire_on", autospec=True, side_effect=CronEngine._first_fire_on
        ) as days,
    ):
        fires, at = 0, schedule.next_after(start)
        while at is not None and at <= until:
            fires, at = fires + 1, schedule.next_after(at)
    return fires, searches.call_count, days.call_count


def test_a_walk_through_a_busy_day_searches_once_a_day_not_once_an_hour() -> None:
    # 288 fires a day (no day table for a single query): the walk, past its first hour,
    # tabulates whole days (the full-day table, built once and kept).
    fires, searches, days = _walk("*/5 * * * *", D, D + 3 * 86400)
    assert fires == 3 * 288  # the fire at D + 3 days ends the walk
    assert (searches, days) == (5, 5)  # hour 0, the rest of day 0, days 1, 2 and 3


def test_a_walk_through_a_six_field_hour_block_resumes_at_the_next_day() -> None:
    # 3,600 fires a day, in two hours: blocks of an hour.  Asked just past 09:59:58, the
    # search returns hour 10 with the day to resume at (the next one): the walk through
    # hour 10 and on to the next 09:00:00 is one more search, looking at one day.
    fires, searches, days = _walk("*/2 * 9-10 * * *", D + 9 * 3600 + 3599, D + 86400 + 9 * 3600)
    assert fires == 1800 + 1
    assert (searches, days) == (2, 2)
