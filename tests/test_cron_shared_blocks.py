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
    cold = cron_schedule._engine.__wrapped__(expr, zone)  # a fresh engine: no memo
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
