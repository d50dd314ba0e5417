"""Properties (hypothesis): successive fires strictly increase, each one matches the
expression, and no instant between two fires matches; queries agree with each other
whatever their order, and backwards with forwards."""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from lldsched import CronSchedule, ScheduleError
from lldsched.schedules.cron.parse import parse
from tests.cron_reference import day_matches, reference_fires, wall_matches

LOW, HIGH = (0, 0, 1, 1, 0), (59, 23, 31, 12, 7)
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
START = st.floats(
    min_value=datetime(1990, 1, 1, tzinfo=UTC).timestamp(),
    max_value=datetime(2060, 1, 1, tzinfo=UTC).timestamp(),
)


# Strategies that do not depend on a drawn value are built once, not on every draw: a
# strategy built afresh has its properties (emptiness, recursion) worked out again each time.
ITEM_KINDS = st.sampled_from(["value", "range", "step", "from", "special"])
LAST_DAYS = st.sampled_from(["L", "LW"])


@st.composite
def items(draw: st.DrawFn, index: int) -> str:
    low, high = LOW[index], HIGH[index]
    kind = draw(ITEM_KINDS)
    if kind == "special" and index == 2:
        return draw(LAST_DAYS)
    if kind == "special" and index == 4:
        weekday = draw(st.integers(0, 7))
        return draw(st.sampled_from([f"{weekday}L", f"{weekday}#{draw(st.integers(1, 5))}"]))
    value = draw(st.integers(low, high))
    if kind == "range":
        stop = draw(st.integers(value, high))
        return f"{value}-{stop}"
    if kind == "step":
        return f"*/{draw(st.integers(1, high))}"
    if kind == "from":
        return f"{value}/{draw(st.integers(1, high))}"
    if index == 3 and draw(st.booleans()):
        return MONTHS[value - 1].lower()
    if index == 4 and value < 7 and draw(st.booleans()):
        return DAYS[value]
    return str(value)


FIELDS = [st.lists(items(index), min_size=1, max_size=3) for index in range(5)]  # by field


@st.composite
def expressions(draw: st.DrawFn) -> str:
    fields = []
    for index in range(5):
        if draw(st.booleans()):
            fields.append("*")
        else:
            fields.append(",".join(draw(FIELDS[index])))
    expr = " ".join(fields)
    try:
        CronSchedule(expr)  # the grammar, and some date must match the day fields
    except ScheduleError:
        assume(False)
    return expr


def no_fire_between(expr: str, after: float, before: float) -> bool:
    """No UTC minute in (after, before) matches: days by the day rule, the ends by minutes."""
    if before - after <= 3 * 86400:
        return reference_fires(expr, "UTC", after, before - 1) == []
    f = parse(expr)
    first = datetime.fromtimestamp(after, UTC)
    last = datetime.fromtimestamp(before, UTC)
    end_of_first = datetime(first.year, first.month, first.day, tzinfo=UTC) + timedelta(days=1)
    start_of_last = datetime(last.year, last.month, last.day, tzinfo=UTC)
    day = end_of_first
    while day < start_of_last:
        if day_matches(f, day.year, day.month, day.day):
            return False
        day += timedelta(days=1)
    return reference_fires(expr, "UTC", after, end_of_first.timestamp() - 1) == [] and (
        reference_fires(expr, "UTC", start_of_last.timestamp() - 1, before - 1) == []
    )


@settings(max_examples=150, deadline=None)
@given(expressions(), START)
def test_successive_fires_increase_match_and_leave_no_matching_minute_between(
    expr: str, start: float
) -> None:
    fires = list(CronSchedule(expr).fire_times(start, 12))
    assert fires, "every accepted expression fires within 100 years of 1990-2060"
    previous = start
    for fire in fires:
        assert fire > previous
        assert fire % 60 == 0
        assert wall_matches(parse(expr), datetime.fromtimestamp(fire, UTC).replace(tzinfo=None))
        assert no_fire_between(expr, previous, fire)
        previous = fire


ZONE_CHANGES = [
    ("Europe/Berlin", datetime(2026, 3, 29, 1, tzinfo=UTC)),
    ("Europe/Berlin", datetime(2026, 10, 25, 1, tzinfo=UTC)),
    ("America/New_York", datetime(2026, 3, 8, 7, tzinfo=UTC)),
    ("America/New_York", datetime(2026, 11, 1, 6, tzinfo=UTC)),
]


@settings(max_examples=120, deadline=None)
@given(
    expressions(),
    st.sampled_from(ZONE_CHANGES),
    st.floats(min_value=-30 * 3600, max_value=6 * 3600),
)
def test_in_a_zone_the_fires_around_a_dst_change_are_exactly_the_reference_ones(
    expr: str, change: tuple[str, datetime], shift: float
) -> None:
    zone, instant = change
    start = instant.timestamp() + shift
    end = start + 36 * 3600
    expected = reference_fires(expr, zone, start, end)
    got = [t for t in CronSchedule(expr, tz=zone).fire_times(start, len(expected) + 1) if t <= end]
    assert got == expected


@settings(max_examples=150, deadline=None)
@given(
    expressions(),
    st.lists(START, min_size=1, max_size=8),
    st.sampled_from(["UTC", "Europe/Berlin"]),
)
def test_a_shared_schedule_answers_any_sequence_of_queries_like_fresh_ones(
    expr: str, instants: list[float], zone: str
) -> None:
    shared = CronSchedule(expr, tz=zone)
    for t in instants:
        for query in (t, shared.next_after(t)):
            if query is not None:
                assert shared.next_after(query) == CronSchedule(expr, tz=zone).next_after(query)


@settings(max_examples=150, deadline=None)
@given(expressions(), START, st.sampled_from(["UTC", "America/New_York"]))
@example(expr="* * * * *", start=631152000.0000001, zone="UTC")  # just after a fire
def test_backwards_then_forwards_returns_to_the_first_fire_not_before_the_start(
    expr: str, start: float, zone: str
) -> None:
    schedule = CronSchedule(expr, tz=zone)
    previous = schedule.prev_before(start)
    assume(previous is not None)
    assert previous is not None and previous < start
    # Nothing fires between the last fire before the start and the start itself, so the
    # fire after `previous` is the first one not before the start.  (Not the fire after
    # `start - 0.001`: hypothesis found a start 1e-7 s after a fire.)
    returned = schedule.next_after(previous)
    assert returned is not None and returned >= start
    assert schedule.prev_before(returned) == previous
    following = schedule.next_after(start)
    if following is not None:
        assert schedule.prev_before(following + 0.001) == following


def test_each_fire_in_a_zone_reads_as_a_matching_wall_time_for_an_ordinary_job() -> None:
    tz = ZoneInfo("Europe/Berlin")
    schedule = CronSchedule("*/7 1-3 * * 0,6", tz="Europe/Berlin")
    f = parse("*/7 1-3 * * 0,6")
    start = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    for fire in schedule.fire_times(start, 2000):
        assert wall_matches(f, datetime.fromtimestamp(fire, tz).replace(tzinfo=None))


@st.composite
def grammatical(draw: st.DrawFn) -> str:
    """Expressions the grammar accepts, the never-firing ones included."""
    fields = ["*" if draw(st.booleans()) else ",".join(draw(FIELDS[i])) for i in range(5)]
    expr = " ".join(fields)
    try:
        parse(expr)
    except ScheduleError:
        assume(False)
    return expr


@settings(max_examples=60, deadline=None)
@given(grammatical())
@example("* 0 */16 1 0L")  # the first one hypothesis found: 1 or 17 January, last Sunday
@example("0 0 */4 2 0#5")  # Sunday 29 February only: fires once in 28 years
@example("0 0 */20 * 0#2")
def test_an_expression_is_rejected_as_never_firing_exactly_when_no_date_matches(
    expr: str,
) -> None:
    # 28 consecutive years of one century hold every (month, first weekday) pair,
    # leap Februaries included.
    f = parse(expr)
    matches = any(
        day_matches(f, year, month, day)
        for year in range(2001, 2029)
        for month in f.months
        for day in range(1, calendar.monthrange(year, month)[1] + 1)
    )
    try:
        CronSchedule(expr)
    except ScheduleError as error:
        assert not matches and "never fires" in str(error)
    else:
        assert matches
