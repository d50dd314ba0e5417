"""OneTime, FixedDelay and FixedRate: first runs, next runs, overruns, bad input."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lldsched import (
    ExecutionRecord,
    FixedDelay,
    FixedRate,
    OneTime,
    OverrunPolicy,
    ScheduleError,
    Simulation,
    ValidationError,
)
from lldsched.schedules.base import measures_elapsed_time
from lldsched.sim import fixed

T = 1_000_000.0


def record(slot: float, started: float, finished: float) -> ExecutionRecord:
    return ExecutionRecord("task-1", "t", 1, slot, slot, 0, started, finished, True)


def test_one_time_runs_at_its_instant_or_at_once_when_it_has_passed() -> None:
    assert OneTime(T + 5).first_run(T) == T + 5
    assert OneTime(T - 5).first_run(T) == T
    assert OneTime(delay=30).first_run(T) == T + 30
    assert OneTime(datetime.fromtimestamp(T, UTC)).first_run(T - 1) == T
    assert OneTime(T).next_run(record(T, T, T), T) is None


def test_fixed_delay_counts_from_the_finish_of_the_previous_run() -> None:
    schedule = FixedDelay(10, start_delay=2)
    assert schedule.first_run(T) == T + 2
    assert schedule.next_run(record(T, T, T + 7), T + 7) == T + 17


def test_fixed_rate_keeps_its_grid_when_runs_are_short_or_start_late() -> None:
    schedule = FixedRate(60)
    assert schedule.first_run(T) == T
    assert schedule.next_run(record(T, T, T + 5), T + 5) == T + 60
    assert schedule.next_run(record(T, T + 20, T + 25), T + 25) == T + 60  # late start: no drift


def test_fixed_rate_skip_jumps_to_the_first_slot_after_an_overrun() -> None:
    schedule = FixedRate(60, OverrunPolicy.SKIP)
    assert schedule.next_run(record(T, T, T + 150), T + 150) == T + 180


def test_fixed_rate_skip_keeps_a_slot_that_falls_exactly_at_the_finish() -> None:
    schedule = FixedRate(60, OverrunPolicy.SKIP)
    assert schedule.next_run(record(T, T, T + 60), T + 60) == T + 60
    assert schedule.next_run(record(T, T, T + 120), T + 120) == T + 120


def _grid_index(schedule: FixedRate, slot: float, answer: float) -> int:
    """``k`` with ``answer == slot + k * period``: the answer is a slot of the grid."""
    k = round((answer - slot) / schedule.period)
    assert answer == slot + k * schedule.period
    return k


# Instants on the grid whose quotient rounds: the first slot after 1/3 s periods' was
# the instant itself, and a 0.1 s period's SKIP run of 0.2 s went on at 0.3 s.
@example(period=1 / 3, slot=1_700_000_000.0, k=9685, offset=0.0)
@example(period=0.1, slot=1_767_571_200.0, k=2, offset=0.0)
@given(
    period=st.sampled_from([1e-6, 0.1, 0.3, 1 / 3, 0.7, 7.7, 60, 95_040.00000000001]),
    slot=st.floats(0, 2e9),
    k=st.integers(2, 10_000),
    offset=st.sampled_from([0.0, 1e-9, -1e-9, 5e-7]),
)
def test_a_fixed_rates_slot_after_an_instant_on_its_grid_is_the_next_one_not_the_same_nor_one_more(
    period: float, slot: float, k: int, offset: float
) -> None:
    # The grid's slots are slot + k * period as floats; a division guessed k, and its
    # rounding answered an instant on the grid as the first slot "strictly after"
    # itself, and skipped the slot at a SKIP run's finish ("not been missed").
    schedule = FixedRate(period)
    instant = slot + k * period + offset
    after = schedule.first_slot_after(slot, instant)
    j = _grid_index(schedule, slot, after)
    assert after > instant and (j == 1 or slot + (j - 1) * period <= instant)
    due = schedule.next_run(record(slot, slot, instant), instant)
    j = _grid_index(schedule, slot, due)
    assert due >= instant and (j == 1 or slot + (j - 1) * period < instant)


def test_a_simulated_skip_run_that_ends_on_a_fractional_grid_slot_runs_that_slot() -> None:
    sim = Simulation(workers=1, start=1_767_571_200.0)
    task = sim.schedule("poll", FixedRate(0.1), duration=fixed(0.2))
    sim.run(1_767_571_200.0 + 0.45)
    ran = [round(r.slot - 1_767_571_200.0, 6) for r in task.history if r.outcome.ran]
    assert ran == [0.0, 0.2]  # the slot at its finish is due, not missed


def test_fixed_rate_catch_up_returns_each_missed_slot_in_turn() -> None:
    schedule = FixedRate(60, OverrunPolicy.CATCH_UP)
    first = schedule.next_run(record(T, T, T + 150), T + 150)
    assert first == T + 60
    second = schedule.next_run(record(first, T + 150, T + 150), T + 150)
    assert second == T + 120


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: FixedRate(0), "period must be finite and > 0 seconds, got 0"),
        (lambda: FixedRate(-5), "got -5"),
        (lambda: FixedRate(float("nan")), "got nan"),
        (lambda: FixedRate("60"), "got '60'"),  # type: ignore[arg-type]
        (lambda: FixedRate(60, on_overrun="skip"), "got 'skip'"),  # type: ignore[arg-type]
        (lambda: FixedRate(60, start_delay=-1), "start_delay must be finite and >= 0"),
        (lambda: FixedDelay(-1), "FixedDelay delay must be finite and > 0 seconds, got -1"),
        (lambda: OneTime(), "exactly one of at= or delay="),
        (lambda: OneTime(T, delay=1), "exactly one of at= or delay="),
        (lambda: OneTime(delay=-3), "got -3"),
        (lambda: OneTime(delay=-0.5), "OneTime delay must be finite and >= 0 seconds, got -0.5"),
        (lambda: FixedDelay(-0.5), "got -0.5"),
        (lambda: FixedRate(60, start_delay=-0.5), "got -0.5"),
        (lambda: OneTime(datetime(2026, 1, 1)), "timezone-aware"),
        (lambda: OneTime(True), "got True"),
    ],
)
def test_bad_schedules_are_rejected_at_construction_with_the_value(
    build: object, message: str
) -> None:
    with pytest.raises(ScheduleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build()  # type: ignore[operator]


def test_schedule_errors_are_validation_errors_and_value_errors() -> None:
    with pytest.raises(ValidationError):
        FixedRate(0)
    with pytest.raises(ValueError):
        FixedRate(0)


def test_schedules_are_immutable_values() -> None:
    schedule = FixedRate(60)
    assert schedule == FixedRate(60) and hash(schedule) == hash(FixedRate(60))
    with pytest.raises(AttributeError):
        schedule.period = 5


def test_reprs_show_what_was_written_and_read_back() -> None:
    schedules = [FixedRate(60), FixedRate(300, OverrunPolicy.CATCH_UP, start_delay=5),
                 FixedDelay(30), FixedDelay(30, start_delay=2.5), OneTime(delay=10)]  # fmt: skip
    assert [repr(s) for s in schedules] == [
        "FixedRate(60)", "FixedRate(300, OverrunPolicy.CATCH_UP, start_delay=5)",
        "FixedDelay(30)", "FixedDelay(30, start_delay=2.5)", "OneTime(delay=10)",
    ]  # fmt: skip
    namespace = {"FixedRate": FixedRate, "FixedDelay": FixedDelay, "OneTime": OneTime,
                 "OverrunPolicy": OverrunPolicy}  # fmt: skip
    assert [eval(repr(s), namespace) for s in schedules] == schedules


def test_a_shared_schedule_keeps_the_number_as_it_was_written() -> None:
    # Sharing equal values must not hand back FixedRate(45.0) for FixedRate(45): 45 == 45.0.
    assert repr(FixedRate(45.0)) == "FixedRate(45.0)" and repr(FixedRate(45)) == "FixedRate(45)"
    assert repr(FixedDelay(45.0)) == "FixedDelay(45.0)" and repr(FixedDelay(45)) == "FixedDelay(45)"
    assert FixedRate(45) == FixedRate(45.0)  # still equal values


def test_equal_interval_schedules_are_one_shared_immutable_object() -> None:
    import copy

    assert FixedRate(60) is FixedRate(60) and FixedDelay(5, 1) is FixedDelay(5, 1)
    assert FixedRate(60) is not FixedRate(60, OverrunPolicy.CATCH_UP)
    assert FixedRate(1) is FixedRate(1)
    with pytest.raises(ScheduleError, match="got True"):
        FixedRate(True)  # True == 1, but it is still refused
    with pytest.raises(AttributeError, match="immutable"):
        FixedDelay(5).delay = 6
    rate = FixedRate(90, start_delay=3)
    assert copy.deepcopy(rate) == rate and copy.copy(rate) is rate
    assert {FixedRate(90, start_delay=3): "x"}[rate] == "x"
    assert FixedRate(60) != FixedDelay(60)
    with pytest.raises(ScheduleError, match="got \\[60\\]"):
        FixedRate([60])  # type: ignore[arg-type]  # unhashable: validated, not cached


def test_the_shared_values_are_at_most_shared_limit_of_both_classes_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lldsched.schedules import simple

    kept = len(simple._DELAYS) + len(simple._RATES)
    monkeypatch.setattr(simple, "SHARED_LIMIT", kept + 1)
    assert FixedDelay(4321.5) is FixedDelay(4321.5)  # the last one kept
    assert FixedRate(4321.5) is not FixedRate(4321.5)  # past the limit: built, equal
    assert FixedRate(4321.5) == FixedRate(4321.5)


def test_a_subclass_of_an_interval_schedule_is_never_handed_out_for_the_plain_one() -> None:
    # Equal values are shared per class: a subclass's FixedRate(60) is not a FixedRate(60)
    # (FrozenValue.__eq__ compares types), so neither may come back for the other.
    class Every(FixedRate):
        __slots__ = ()

        def explain(self) -> str:
            return "my own words"

    class After(FixedDelay):
        __slots__ = ()

    own, plain = Every(61), FixedRate(61)
    assert (type(own), type(plain)) == (Every, FixedRate)
    assert plain.explain() == "Every 61 s" and own.explain() == "my own words"
    assert type(FixedRate(62)) is FixedRate and type(Every(62)) is Every
    assert (type(After(7)), type(FixedDelay(7))) == (After, FixedDelay)
    assert Every(61) is own and FixedRate(61) is plain  # each still shared


def test_explain_says_each_interval_schedule_in_words() -> None:
    assert FixedRate(60).explain() == "Every 60 s"
    assert FixedRate(0.5, OverrunPolicy.CATCH_UP, 10).explain() == (
        "Every 0.5 s, catching up missed slots, the first 10 s after registration"
    )
    assert FixedDelay(10).explain() == "10 s after each run finishes"
    assert (
        FixedDelay(10, 5).explain()
        == "10 s after each run finishes, the first 5 s after registration"
    )
    assert OneTime(delay=5).explain() == "Once, 5 s after registration"
    assert (
        OneTime(datetime(2026, 6, 1, 9, 0, tzinfo=UTC)).explain() == "Once, at 2026-06-01 09:00 UTC"
    )
    assert OneTime(datetime(2026, 6, 1, 9, 0, 30, tzinfo=UTC)).explain() == (
        "Once, at 2026-06-01 09:00:30 UTC"
    )


def test_one_time_is_an_immutable_value_too() -> None:
    once = OneTime(T + 5)
    assert once == OneTime(T + 5) and {once: "x"}[OneTime(T + 5)] == "x"
    with pytest.raises(AttributeError):
        once.at = T  # type: ignore[misc]
    assert once.first_run(T) == T + 5


def test_one_time_with_no_delay_runs_at_once_and_any_delay_from_zero_up_is_accepted() -> None:
    assert OneTime(delay=0).first_run(T) == T
    assert OneTime(delay=0.5).first_run(T) == T + 0.5


@pytest.mark.parametrize("schedule", [OneTime(delay=5), FixedDelay(10), FixedRate(60)], ids=repr)
def test_a_bad_instant_given_to_a_schedule_is_refused_with_the_value(
    schedule: OneTime | FixedDelay | FixedRate,
) -> None:
    # A datetime where epoch seconds belong: the error names the query, the value, the fix.
    moment = datetime.fromtimestamp(T, UTC)
    calls: list[tuple[str, Callable[[], object]]] = [
        ("first_run", lambda: schedule.first_run(moment)),  # type: ignore[arg-type]
        ("slot_after", lambda: schedule.slot_after(moment)),  # type: ignore[arg-type]
        ("first_slot_after", lambda: schedule.first_slot_after(moment, T)),  # type: ignore[arg-type]
        ("first_slot_after", lambda: schedule.first_slot_after(T, moment)),  # type: ignore[arg-type]
    ]
    for query, call in calls:
        with pytest.raises(ScheduleError, match=f"{query}.*got datetime.*use .timestamp"):
            call()


def test_the_slot_rules_recovery_and_skipping_use() -> None:
    # slot_after: the next slot of the grid, had the run taken no time (None: a delay
    # counts from a finish, a one-off has no second slot).  first_slot_after: the first
    # slot strictly after now, after downtime.
    rate, delay = FixedRate(60), FixedDelay(10)
    assert rate.slot_after(T) == T + 60
    assert rate.first_slot_after(T, T + 150) == T + 180
    assert rate.first_slot_after(T, T + 120) == T + 180  # strictly after now
    assert delay.slot_after(T) is None  # type: ignore[func-returns-value]
    assert delay.first_slot_after(T, T + 500) == T + 510
    assert OneTime(delay=5).slot_after(T) is None  # type: ignore[func-returns-value]
    assert OneTime(delay=5).first_slot_after(T, T + 500) is None  # type: ignore[func-returns-value]


def test_next_run_and_skipped_names_the_slots_an_overrun_passed_over() -> None:
    overrun = record(T, T, T + 150)
    assert FixedRate(60).next_run_and_skipped(overrun, limit=10) == (T + 180, [T + 60, T + 120])
    assert FixedRate(60, OverrunPolicy.CATCH_UP).next_run_and_skipped(overrun, limit=10) == (
        T + 60,
        (),
    )
    assert FixedRate(60).next_run_and_skipped(record(T, T, T + 5), limit=10) == (T + 60, ())
    assert FixedDelay(10).next_run_and_skipped(record(T, T, T + 7), limit=10) == (T + 17, ())
    assert OneTime(T).next_run_and_skipped(record(T, T, T + 7), limit=10) == (None, ())


def test_which_schedules_measure_elapsed_time() -> None:
    # A backward wall-clock jump moves the due instant of these (a delay is elapsed
    # time), never of a calendar instant (OneTime(at=...)); lldsched.core.recovery.
    assert measures_elapsed_time(FixedRate(60)) and measures_elapsed_time(FixedDelay(10))
    assert measures_elapsed_time(OneTime(delay=5))
    assert not measures_elapsed_time(OneTime(T))
