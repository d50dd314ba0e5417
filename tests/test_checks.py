"""The value checks: what a number of seconds, a number, a whole count and a fraction must be."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from threading import TIMEOUT_MAX

import pytest

from lldsched.checks import (
    FARTHEST,
    LONGEST,
    flag,
    fraction,
    instant,
    number,
    seconds,
    step,
    wait_seconds,
    whole,
    whole_or_none,
)
from lldsched.errors import ScheduleError, ValidationError

NOT_NUMBERS = [True, False, "60", None, [60], 1j]
NOT_FINITE = [math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("value", [0, 0.0, 1, 60, 2.5, 1e9])
def test_seconds_returns_the_value_as_given(value: float) -> None:
    checked = seconds(value, name="delay", at_least=0)
    assert checked == value and type(checked) is type(value)


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_seconds_refuses_what_is_not_a_number_bool_included(value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        seconds(value, name="FixedRate period", above=0)
    assert str(caught.value) == (
        f"FixedRate period must be a number of seconds or a timedelta, got {value!r}"
    )


@pytest.mark.parametrize("value", NOT_FINITE)
def test_seconds_refuses_nan_and_infinities(value: float) -> None:
    with pytest.raises(ValidationError) as caught:
        seconds(value, name="delay", at_least=0)
    assert str(caught.value) == f"delay must be finite and >= 0 seconds, got {value!r}"


def test_seconds_at_least_includes_the_bound_and_above_excludes_it() -> None:
    assert seconds(0, name="delay", at_least=0) == 0
    with pytest.raises(ValidationError, match=r"^delay must be finite and >= 0 seconds, got -1$"):
        seconds(-1, name="delay", at_least=0)
    assert seconds(0.001, name="period", above=0) == 0.001
    with pytest.raises(ValidationError, match=r"^period must be finite and > 0 seconds, got 0$"):
        seconds(0, name="period", above=0)


def test_seconds_without_bounds_takes_any_finite_number() -> None:
    assert seconds(-1e9, name="when") == -1e9
    with pytest.raises(ValidationError, match=r"^when must be finite, got nan$"):
        seconds(math.nan, name="when")


def test_seconds_raises_the_error_class_the_caller_names() -> None:
    with pytest.raises(ScheduleError, match="got -5"):
        seconds(-5, name="FixedRate period", above=0, error=ScheduleError)
    with pytest.raises(ValueError, match="got 'x'") as caught:
        seconds("x", name="timeout", above=0, error=ValueError)
    assert not isinstance(caught.value, ValidationError)


def test_seconds_words_a_non_number_as_the_kind_the_site_expects() -> None:
    kind = "epoch seconds or an aware datetime"
    with pytest.raises(ValidationError) as caught:
        seconds("soon", name="start", kind=kind)
    assert str(caught.value) == "start must be epoch seconds or an aware datetime, got 'soon'"
    with pytest.raises(ValidationError, match=r"^start must be finite, got inf$"):
        seconds(math.inf, name="start", kind=kind)


@pytest.mark.parametrize("value", [-5, math.nan, math.inf, True, "5"])
def test_seconds_uses_the_sites_own_words_for_every_failure_when_given(value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        seconds(value, name="run_for()", at_least=0, expected="takes seconds >= 0")
    assert str(caught.value) == f"run_for() takes seconds >= 0, got {value!r}"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(timedelta(0), 0.0), (timedelta(minutes=5), 300.0), (timedelta(microseconds=1), 1e-06)],
)
def test_seconds_takes_a_timedelta_as_its_float_seconds(value: timedelta, expected: float) -> None:
    checked = seconds(value, name="delay", at_least=0)
    assert checked == expected and type(checked) is float


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (timedelta(0), "datetime.timedelta(0) (0 seconds)"),
        (timedelta(seconds=-60), "datetime.timedelta(days=-1, seconds=86340) (-60 seconds)"),
    ],
)
def test_seconds_refuses_a_timedelta_out_of_bounds_quoting_it_and_its_seconds(
    value: timedelta, shown: str
) -> None:
    with pytest.raises(ScheduleError) as caught:
        seconds(value, name="FixedRate period", above=0, error=ScheduleError)
    assert str(caught.value) == f"FixedRate period must be finite and > 0 seconds, got {shown}"
    with pytest.raises(ValidationError) as words:
        seconds(value, name="run_for()", above=0, expected="takes seconds > 0")
    assert str(words.value) == f"run_for() takes seconds > 0, got {shown}"


def test_a_timedelta_is_not_a_plain_number() -> None:
    with pytest.raises(ValidationError) as caught:
        number(timedelta(seconds=2), name="multiplier", at_least=1)
    assert str(caught.value) == "multiplier must be a number, got datetime.timedelta(seconds=2)"
    with pytest.raises(ValidationError) as instant:
        number(timedelta(0), name="start", kind="epoch seconds or an aware datetime")
    assert str(instant.value) == (
        "start must be epoch seconds or an aware datetime, got datetime.timedelta(0)"
    )


def test_number_is_the_rule_of_seconds_with_no_unit_in_its_words() -> None:
    assert number(1, name="multiplier", at_least=1) == 1
    assert number(0.5, name="sigma", at_least=0) == 0.5
    with pytest.raises(ValidationError, match=r"^multiplier must be finite and >= 1, got 0\.5$"):
        number(0.5, name="multiplier", at_least=1)
    with pytest.raises(ValidationError, match=r"^mean must be finite and > 0, got 0$"):
        number(0, name="mean", above=0)
    with pytest.raises(ValidationError, match=r"^duration must be a number, got True$"):
        number(True, name="duration", at_least=0)
    for value in NOT_FINITE:
        with pytest.raises(ValidationError, match=f"^mean must be finite and > 0, got {value!r}$"):
            number(value, name="mean", above=0)


@pytest.mark.parametrize("value", [1, 2, 10**12])
def test_whole_returns_an_int_within_its_bound(value: int) -> None:
    assert whole(value, name="workers", at_least=1) is value


@pytest.mark.parametrize("value", [0, -1, True, False, 2.0, 2.5, math.nan, math.inf, "3", None])
def test_whole_refuses_bools_floats_and_values_below_its_bound(value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        whole(value, name="workers", at_least=1)
    assert str(caught.value) == f"workers must be an int >= 1, got {value!r}"


def test_whole_without_a_bound_takes_any_int_but_still_no_bool() -> None:
    assert whole(-7, name="seed") == -7
    with pytest.raises(ValidationError, match=r"^seed must be an int, got True$"):
        whole(True, name="seed")


def test_whole_or_none_also_takes_none_and_says_so_when_it_refuses() -> None:
    assert whole_or_none(None, name="history_limit", at_least=0) is None
    assert whole_or_none(0, name="history_limit", at_least=0) == 0
    for value in (-1, True, 1.5, math.nan):
        with pytest.raises(ValidationError) as caught:
            whole_or_none(value, name="history_limit", at_least=0)
        assert str(caught.value) == f"history_limit must be an int >= 0 or None, got {value!r}"


@pytest.mark.parametrize("value", [0, 0.0, 0.25, 1, 1.0])
def test_fraction_takes_zero_to_one_inclusive_as_given(value: float) -> None:
    checked = fraction(value, name="jitter")
    assert checked == value and type(checked) is type(value)


@pytest.mark.parametrize("value", [-0.1, 1.5, math.nan, math.inf, -math.inf, True, False, "0.5"])
def test_fraction_refuses_values_outside_zero_to_one_nan_and_bools(value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        fraction(value, name="jitter")
    assert str(caught.value) == f"jitter must be a fraction in [0, 1], got {value!r}"


def test_fraction_uses_the_sites_own_words_when_given() -> None:
    expected = "must be a probability in [0, 1] or a function"
    with pytest.raises(ValidationError) as caught:
        fraction(1.5, name="fails", expected=expected)
    assert str(caught.value) == "fails must be a probability in [0, 1] or a function, got 1.5"


@pytest.mark.parametrize(
    ("check", "value", "bounds"),
    [
        (seconds, -1, {"at_least": 0}),
        (number, -1, {"at_least": 0}),
        (whole, 0, {"at_least": 1}),
        (whole_or_none, 0, {"at_least": 1}),
        (fraction, 2, {}),
    ],
)
def test_every_refusal_is_a_validation_error_and_a_value_error_by_default(
    check: Callable[..., object], value: object, bounds: dict[str, int]
) -> None:
    with pytest.raises(ValidationError):
        check(value, name="x", **bounds)
    with pytest.raises(ValueError, match=f"^x must be .*, got {value!r}$"):
        check(value, name="x", **bounds)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "workers must be an int >= 1, got 0"),
        (11, "workers must be an int <= 10, got 11"),
        ("3", "workers must be an int >= 1 and <= 10, got '3'"),
    ],
)
def test_whole_names_the_bound_a_value_misses(value: object, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        whole(value, name="workers", at_least=1, at_most=10)
    assert str(caught.value) == message
    assert whole(10, name="workers", at_least=1, at_most=10) == 10


def test_a_wait_longer_than_a_thread_can_wait_waits_as_long_as_it_can() -> None:
    """``metrics(timeout=1e10)`` raised ``OverflowError`` from ``Lock.acquire``: a wait
    past ``threading.TIMEOUT_MAX`` is "as long as it takes", capped, not refused."""
    assert wait_seconds(1e10, name="t") == TIMEOUT_MAX
    assert wait_seconds(timedelta(days=365 * 1000), name="t") == TIMEOUT_MAX
    assert wait_seconds(5, name="t") == 5
    with pytest.raises(ValidationError, match="t must be finite and >= 0 seconds, got -1"):
        wait_seconds(-1, name="t")
    with pytest.raises(ValidationError, match="got inf"):
        wait_seconds(math.inf, name="t")
    assert wait_seconds(-1, name="t", at_least=None) == -1


@pytest.mark.parametrize("value", [1e300, -1e300, LONGEST * 1.0001, timedelta.max, 10**400])
def test_a_number_past_the_span_of_a_datetime_is_refused_saying_so(value: object) -> None:
    """``FixedRate(1.7e308)`` was accepted, and its task was due at ``inf`` after a run."""
    with pytest.raises(ValidationError) as caught:
        seconds(value, name="period", above=0)
    assert "must be within ±315537897600 seconds (the span of a datetime" in str(caught.value)
    assert repr(value) in str(caught.value)
    assert seconds(LONGEST, name="period", above=0) == LONGEST
    assert seconds(-LONGEST, name="when") == -LONGEST


def test_a_number_is_an_int_or_a_float_numpy_float64_included() -> None:
    """docs/GUIDE.md's rule: numpy's ``float64`` is a ``float`` (a subclass) and is taken
    as it is; a ``Decimal``, a ``Fraction``, numpy's ``int64`` and ``float32`` are not
    ``int`` or ``float`` and are refused, quoting them (convert with ``float()``)."""
    np = pytest.importorskip("numpy")
    assert seconds(np.float64(5.0), name="period", above=0) == 5.0
    for value in (Decimal("5"), Fraction(5, 1), np.int64(5), np.float32(5.0)):
        with pytest.raises(ValidationError, match=re.escape(f"got {value!r}")):
            seconds(value, name="period", above=0)


def test_step_takes_a_microsecond_and_refuses_anything_shorter_quoting_it() -> None:
    assert step(1e-6, name="period") == 1e-6
    assert step(timedelta(microseconds=1), name="period") == 1e-6
    with pytest.raises(ScheduleError, match=r"period must be at least 1e-06 seconds .*got 9e-07"):
        step(9e-7, name="period", error=ScheduleError)
    with pytest.raises(ValidationError, match=r"period must be finite and > 0 seconds, got 0"):
        step(0, name="period")


def test_flag_takes_true_and_false_only_naming_what_else_it_got() -> None:
    assert flag(True, name="paused") is True and flag(False, name="paused") is False
    for value in (1, 0, "yes", None):
        with pytest.raises(ValidationError, match=f"paused must be True or False, got {value!r}"):
            flag(value, name="paused")
    with pytest.raises(ScheduleError, match="got 1"):
        flag(1, name="paused", error=ScheduleError)


class _Query:
    """A stand-in schedule: ``of=`` names its class in the message."""


def test_instant_takes_epoch_seconds_within_the_farthest_either_way() -> None:
    for value in (0, 1.5, -FARTHEST, FARTHEST):
        assert instant(value, name="first_run()") == value
    for value in (FARTHEST * 2, -FARTHEST * 2, math.nan, math.inf):
        with pytest.raises(ValidationError, match=r"first_run\(\) takes finite epoch seconds"):
            instant(value, name="first_run()")
    assert instant(math.inf, name="next_fire()", within=None) == math.inf


def test_instant_names_the_schedules_query_and_hints_at_a_datetimes_timestamp() -> None:
    with pytest.raises(
        ScheduleError, match=r"^_Query.first_run\(\) takes epoch seconds \(a float\), got True$"
    ):
        instant(True, name="first_run()", of=_Query(), error=ScheduleError)
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(
        ValidationError, match=r"got datetime.* \(an instant: use .timestamp\(\)\)$"
    ):
        instant(moment, name="at")


@pytest.mark.parametrize("value", [1e15, timedelta(days=10**8)])
def test_a_site_with_words_of_its_own_still_names_the_span_for_a_number_past_it(
    value: object,
) -> None:
    """``Simulation.run_for(1e15)`` said "run_for() takes seconds >= 0, got 1e+15", of a
    positive number: a site's own words name its bound, not the span of a datetime."""
    with pytest.raises(ValidationError) as caught:
        seconds(value, name="run_for()", at_least=0, expected="takes seconds >= 0")
    assert "run_for() must be within ±315537897600 seconds (the span of a datetime" in str(
        caught.value
    )
    with pytest.raises(ValidationError, match=r"^run_for\(\) takes seconds >= 0, got -1$"):
        seconds(-1, name="run_for()", at_least=0, expected="takes seconds >= 0")


def test_the_public_calls_with_words_of_their_own_name_the_span_for_a_huge_number() -> None:
    from lldsched import FakeClock, FixedRate, Scheduler, Simulation
    from lldsched.testing import Stepper

    scheduler = Scheduler(clock=FakeClock(0))
    with Stepper(scheduler) as steps:
        calls: list[Callable[[], object]] = [
            lambda: Simulation(start=0).run_for(1e15),
            lambda: FakeClock(0).advance(1e15),
            lambda: steps.advance(1e15),
            lambda: scheduler.schedule("job", print, FixedRate(60), timeout=1e15),
        ]
        for call in calls:
            with pytest.raises(ValidationError, match=r"must be within ±315537897600 seconds"):
                call()
        assert scheduler.tasks() == [] and steps.now == 0
