"""``next_run_and_skipped``: the one question the core asks a schedule after each run
gives what its two questions gave (``next_run``, then ``slots_between`` to that due
instant), for every schedule class, with its own method and without it.

Schedules are built twice from the same recipe, so a schedule with state (a
``Window`` counting runs, a ``CatchUp`` handing out its slots) answers each side
from the same start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hypothesis import example, given, settings
from hypothesis import strategies as st

from lldsched import (
    CronSchedule,
    FixedDelay,
    FixedRate,
    Jittered,
    OneTime,
    OverrunPolicy,
    Schedule,
    Window,
)
from lldsched.checks import FINEST
from lldsched.model import ExecutionRecord
from lldsched.schedules.base import (
    counts_on_grid,
    next_on_grid,
    next_run_and_skipped,
    slots_between,
)
from lldsched.schedules.catchup import FIRST_RUN, SCHEDULE_DECIDES, CatchUp, Then

START = 1_767_571_200.0  # 2026-01-05 00:00 UTC
CRONS = ("* * * * *", "*/15 * * * *", "0 3 * * 1-5", "30 2 * * *", "*/20 * * * * *", "0 0 29 2 *")
ZONES = ("UTC", "Europe/Berlin", "America/New_York")

Recipe = Callable[[], Schedule]


def separately(
    schedule: Schedule, record: ExecutionRecord, limit: int
) -> tuple[object, list[float]]:
    """The two questions the core used to ask."""
    due = schedule.next_run(record, record.finished)
    return due, ([] if due is None else slots_between(schedule, record.slot, due, limit=limit))


def together(schedule: Schedule, record: ExecutionRecord, limit: int) -> tuple[object, list[float]]:
    due, skipped = next_run_and_skipped(schedule, record, limit=limit)
    return due, list(skipped)


class Derived:
    """``inner`` with nothing but the protocol's two methods: the derived answer."""

    def __init__(self, inner: Schedule) -> None:
        self.inner = inner

    def first_run(self, now: float) -> float | None:
        return self.inner.first_run(now)

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        return self.inner.next_run(record, now)


def record_of(slot: float, finished: float, *, attempt: int = 1) -> ExecutionRecord:
    return ExecutionRecord(
        task_id="t1",
        name="t",
        attempt=attempt,
        due=slot,
        slot=slot,
        worker=0,
        started=min(slot, finished),
        finished=finished,
        ok=True,
    )


periods = st.floats(min_value=0.001, max_value=100_000, allow_nan=False)
policies = st.sampled_from([OverrunPolicy.SKIP, OverrunPolicy.CATCH_UP])


@st.composite
def interval_recipes(draw: st.DrawFn) -> Recipe:
    kind = draw(st.sampled_from(["rate", "delay", "once-at", "once-delay"]))
    if kind == "rate":
        period, policy = draw(periods), draw(policies)
        return lambda: FixedRate(period, policy)
    if kind == "delay":
        delay = draw(st.floats(min_value=FINEST, max_value=100_000))
        return lambda: FixedDelay(delay)
    if kind == "once-at":
        at = draw(st.floats(min_value=START - 1e6, max_value=START + 1e6))
        return lambda: OneTime(at)
    after = draw(st.floats(min_value=0, max_value=1e5))
    return lambda: OneTime(delay=after)


@st.composite
def cron_recipes(draw: st.DrawFn) -> Recipe:
    expr, zone = draw(st.sampled_from(CRONS)), draw(st.sampled_from(ZONES))
    return lambda: CronSchedule(expr, tz=zone)


@st.composite
def recipes(draw: st.DrawFn) -> Recipe:
    inner = draw(st.one_of(interval_recipes(), cron_recipes()))
    wrap = draw(st.sampled_from(["none", "jitter", "window", "both"]))
    if wrap == "none":
        return inner
    seed, late = draw(st.integers(0, 99)), draw(st.floats(min_value=0.5, max_value=600))
    end = draw(st.none() | st.floats(min_value=START, max_value=START + 30 * 86400))
    runs = draw(st.none() | st.integers(1, 5))
    if end is None and runs is None:
        runs = 3
    if wrap == "jitter":
        return lambda: Jittered(inner(), late, seed=seed)
    if wrap == "window":
        return lambda: Window(inner(), end=end, max_runs=runs)
    return lambda: Window(Jittered(inner(), late, seed=seed), end=end, max_runs=runs)


@st.composite
def runs_of(draw: st.DrawFn, recipe: Recipe) -> ExecutionRecord:
    """A run of a slot of the schedule (or of any instant), taking anything from no time
    to many slots, now and then finishing before its slot (a run started early)."""
    schedule = recipe()
    instant = draw(st.floats(min_value=START, max_value=START + 366 * 86400))
    slot = schedule.first_run(instant) if draw(st.booleans()) else instant
    if slot is None:
        slot = instant
    took = draw(
        st.one_of(
            st.floats(min_value=0, max_value=120),
            st.floats(min_value=0, max_value=40 * 86400),
            st.floats(min_value=-60, max_value=0),
        )
    )
    return record_of(slot, slot + took)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), recipe=recipes(), limit=st.integers(0, 12))
def test_one_question_answers_as_the_two_did(
    data: st.DataObject, recipe: Recipe, limit: int
) -> None:
    record = data.draw(runs_of(recipe))
    assert together(recipe(), record, limit) == separately(recipe(), record, limit)
    # The derived answer too (hiding slot_after, so slots_between derives it as well).
    assert together(Derived(recipe()), record, limit) == separately(
        Derived(recipe()), record, limit
    )


@settings(max_examples=300, deadline=None)
@given(period=periods, policy=policies, slot=st.floats(min_value=0, max_value=1e10), data=st.data())
@example(period=60.0, policy=OverrunPolicy.SKIP, slot=START, data=None)
@example(period=0.1, policy=OverrunPolicy.SKIP, slot=START, data=None)
def test_a_fixed_rate_lists_the_slots_it_skipped_on_the_grid_it_jumps_to(
    period: float, policy: OverrunPolicy, slot: float, data: st.DataObject | None
) -> None:
    """One grid: the next slot is ``slot + k * period`` and the slots skipped on the way
    are ``slot + j * period`` for ``0 < j < k``, each below the next slot, never
    ``period`` added again and again (``slot_after`` stepped), which lands a float below
    the slot jumped to and listed it skipped beside its run (docs/decisions/schedules.md, "One grid
    for a fixed rate's slots"); the derived answer agrees."""
    took = 1000.5 * period if data is None else data.draw(st.floats(0, 50 * period))
    record = record_of(slot, slot + took)
    rate = FixedRate(period, policy)
    due, skipped = together(rate, record, 10)
    assert (due, skipped) == separately(rate, record, 10)
    assert isinstance(due, float)
    k = round((due - slot) / period)
    assert due == slot + k * period
    grid = [slot + j * period for j in range(1, min(k, 12))]
    assert skipped == [at for at in grid if at < due]


@settings(max_examples=200, deadline=None)
@given(
    inner=st.one_of(interval_recipes(), cron_recipes()),
    slots=st.lists(st.floats(min_value=START, max_value=START + 86400), max_size=3),
    then=st.sampled_from(["schedule", "first", "slot", "end"]),
    data=st.data(),
)
def test_a_catch_up_plan_skips_nothing_until_its_own_schedule_answers(
    inner: Recipe, slots: Sequence[float], then: str, data: st.DataObject
) -> None:
    """A plan's slots are decided, and so is a slot, a first run or an end it hands out
    after them: those runs answer ``next_run`` and no skipped slot.  The run that hands
    the task back to its own schedule (``then`` the schedule's), and every run after the
    plan is spent, answers as the own schedule does, skipped slots included: before,
    it skipped none, and a plan's last run that outlasted its period left the slots it
    outlasted without a record."""
    follows: dict[str, Then] = {
        "schedule": SCHEDULE_DECIDES,
        "first": FIRST_RUN,
        "slot": START + 2e5,
        "end": None,
    }
    ours, theirs = CatchUp(inner(), slots, follows[then]), CatchUp(inner(), slots, follows[then])
    for run in range(len(slots) + 2):
        record = data.draw(runs_of(inner))
        answer = together(ours, record, 10)
        if run < len(slots) or (run == len(slots) and then != "schedule"):
            assert answer == (theirs.next_run(record, record.finished), [])
        else:  # the own schedule's answer, both questions
            assert answer == separately(theirs.inner, record, 10)


def test_a_cron_run_that_overran_lists_the_fires_it_missed() -> None:
    cron = CronSchedule("*/15 * * * *")
    record = record_of(START, START + 50 * 60)
    assert next_run_and_skipped(cron, record, limit=10) == (
        START + 60 * 60,
        [START + 15 * 60, START + 30 * 60, START + 45 * 60],
    )
    assert next_run_and_skipped(cron, record, limit=1) == (
        START + 60 * 60,
        [START + 15 * 60, START + 30 * 60],  # limit + 1: the list was cut short
    )


def test_a_cron_run_that_ends_on_the_next_fire_has_not_missed_it() -> None:
    """The first fire not before the finish is due, as a fixed rate's SKIP: a fire
    exactly at the finish is due at once, and nothing is skipped (docs/decisions/schedules.md, "A
    slot that falls exactly at a run's finish has not been missed")."""
    cron = CronSchedule("*/15 * * * *")
    record = record_of(START, START + 15 * 60)
    expected: tuple[float, list[float]] = (START + 15 * 60, [])
    assert together(cron, record, 10) == separately(cron, record, 10) == expected
    assert together(FixedRate(15 * 60), record, 10) == expected
    # Two fires on: the one between is skipped, the one at the finish is due.
    record = record_of(START, START + 30 * 60)
    expected_later = (START + 30 * 60, [START + 15 * 60])
    assert together(cron, record, 10) == separately(cron, record, 10) == expected_later


def test_an_on_time_fixed_rate_run_skips_nothing() -> None:
    assert next_run_and_skipped(FixedRate(60), record_of(START, START + 5), limit=10) == (
        START + 60,
        (),
    )


def test_next_on_grid_asks_a_grid_count_or_answers_as_the_core_does_for_none() -> None:
    # base.next_on_grid: a schedule's own next_on_grid where it counts on a grid origin
    # (a fixed rate, wrapped or not); else next_run_and_skipped, the origin as it is
    # (what the core keeps for a schedule with no grid); what a CatchUp asks of its inner.
    origin = START - 600.0
    overran = record_of(START, START + 150)  # two slots of 60 s passed while it ran
    for counting in (FixedRate(60), Window(FixedRate(60), max_runs=5)):
        assert counts_on_grid(counting)
        assert next_on_grid(counting, overran, origin, limit=10) == (
            START + 180,
            [START + 60, START + 120],
            origin,
        )

    class OwnWay(FixedRate):  # answers next_run its own way: no grid count
        __slots__ = ()

        def next_run(self, record: ExecutionRecord, now: float) -> float:
            return record.finished + 1

        def next_run_and_skipped(
            self, record: ExecutionRecord, *, limit: int
        ) -> tuple[float, list[float]]:
            return self.next_run(record, record.finished), []

    cron, own = CronSchedule("* * * * *"), OwnWay(60)
    for schedule in (cron, own, Derived(FixedRate(60))):
        assert not counts_on_grid(schedule)
        due, skipped = next_run_and_skipped(schedule, overran, limit=10)
        assert next_on_grid(schedule, overran, origin, limit=10) == (due, skipped, origin)
    assert next_on_grid(own, overran, origin, limit=10)[0] == START + 151
