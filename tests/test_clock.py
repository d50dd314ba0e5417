"""Clocks: the fake clock moves only when told and wakes a timer waiting on it; ids count up."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from lldsched import FakeClock, SystemClock, ValidationError
from lldsched.clock import to_timestamp
from lldsched.core.ids import sequential_ids


def test_fake_clock_starts_where_told_and_moves_only_forward() -> None:
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    start = clock.now()
    assert clock.advance(90) == start + 90 and clock.now() == start + 90
    assert clock.advance(0) == start + 90 and clock.advance(0.5) == start + 90.5
    assert clock.set(start + 100) == start + 100 and clock.now() == start + 100
    with pytest.raises(ValidationError, match="cannot go back"):
        clock.set(start)
    with pytest.raises(ValidationError, match="got -1"):
        clock.advance(-1)
    with pytest.raises(ValidationError, match="got inf"):
        clock.advance(float("inf"))


@pytest.mark.parametrize(
    ("when", "words"),
    [
        (float("nan"), "must be finite, got nan"),
        (1e300, "must be within .*, got 1e\\+300"),
        ("x", "must be epoch seconds or an aware datetime, got 'x'"),
        (datetime(2026, 1, 1), "must be timezone-aware .*, got datetime"),
    ],
)
def test_a_bad_set_names_the_verb_and_the_value(when: object, words: str) -> None:
    clock = FakeClock(0)
    with pytest.raises(ValidationError, match=rf"^FakeClock\.set\(\) when {words}"):
        clock.set(when)  # type: ignore[arg-type]
    with pytest.raises(
        ValidationError, match=r"^FakeClock\.set\(\) cannot go back from 0\.0 to -1$"
    ):
        clock.set(-1)
    assert clock.now() == 0.0  # nothing moved


@pytest.mark.parametrize(
    ("seconds", "got"),
    [
        (-1, "-1"),
        (float("nan"), "nan"),
        (float("inf"), "inf"),
        ("5", "'5'"),
        (None, "None"),
        (True, "True"),
        (timedelta(seconds=-60), r"datetime\.timedelta\(days=-1, seconds=86340\) \(-60 seconds\)"),
    ],
)  # fmt: skip
def test_a_bad_advance_names_the_clock_and_the_value(seconds: object, got: str) -> None:
    clock = FakeClock(100)
    with pytest.raises(
        ValidationError,
        match=rf"^FakeClock\.advance\(\) takes finite seconds >= 0 \(or a timedelta\), got {got}$",
    ):
        clock.advance(seconds)  # type: ignore[arg-type]
    assert clock.now() == 100.0  # nothing moved


def test_an_advance_past_year_9999_names_the_clock_where_it_stands_and_the_step() -> None:
    clock = FakeClock(100)
    with pytest.raises(
        ValidationError,
        match=r"^FakeClock\.advance\(\) would move the clock from 100\.0 past year 9999 "
        r".*, got 300000000000\.0$",
    ):
        clock.advance(3e11)
    with pytest.raises(ValidationError, match=r"^FakeClock\.advance\(\) must be within ±"):
        clock.advance(1e300)  # past any span a datetime has: refused as a duration
    assert clock.advance(timedelta(minutes=1)) == 160.0  # a timedelta is taken


def test_a_fake_clock_starts_at_the_epoch_unless_told() -> None:
    assert FakeClock().now() == 0.0
    assert repr(FakeClock()) == "FakeClock(now=0.0)"


def test_fake_clock_wakes_a_thread_waiting_on_it() -> None:
    clock = FakeClock(0)
    condition = threading.Condition()
    parked = threading.Event()
    woke = threading.Event()

    def timer() -> None:
        with condition:
            while clock.now() < 3600:
                parked.set()
                clock.wait(condition, 3600)
        woke.set()

    thread = threading.Thread(target=timer, daemon=True)
    thread.start()
    assert parked.wait(5)
    assert not woke.is_set() and clock.now() == 0  # parked for an hour of fake time
    clock.advance(3600)
    assert woke.wait(5)
    thread.join(5)


def test_fake_clock_wait_returns_at_once_when_the_deadline_has_passed() -> None:
    clock = FakeClock(100)
    condition = threading.Condition()
    with condition:
        clock.wait(condition, 50)  # would block forever if it waited


def test_fake_clock_wait_returns_at_once_at_its_deadline() -> None:
    clock = FakeClock(100)
    condition = threading.Condition()
    returned = threading.Event()

    def timer() -> None:
        with condition:
            clock.wait(condition, 100)  # nothing moves the clock: it must not block
        returned.set()

    threading.Thread(target=timer, daemon=True).start()
    assert returned.wait(5)


@pytest.mark.parametrize("move", ["advance", "set"])
def test_fake_clock_without_a_deadline_waits_until_the_time_moves(move: str) -> None:
    clock = FakeClock(100)
    condition = threading.Condition()
    parked, returned = threading.Event(), threading.Event()

    def timer() -> None:
        with condition:
            parked.set()
            clock.wait(condition, None)
            returned.set()

    threading.Thread(target=timer, daemon=True).start()
    assert parked.wait(5)
    with condition:  # taken once the timer waits (it is among the clock's waiters then)
        assert not returned.is_set()  # parked, not back at once
    if move == "advance":
        clock.advance(1)
    else:
        clock.set(101)
    assert returned.wait(5)


def test_system_clock_waits_at_most_until_the_deadline() -> None:
    clock = SystemClock()
    condition = threading.Condition()
    with condition:
        clock.wait(condition, clock.now() + 0.01)
    before = time.time()
    assert before <= clock.now() <= time.time()  # the system's time, read between these
    assert repr(clock) == "SystemClock()"


def test_system_clock_without_a_deadline_waits_until_notified() -> None:
    clock = SystemClock()
    condition = threading.Condition()
    waiting, returned = threading.Event(), threading.Event()

    def timer() -> None:
        with condition:
            waiting.set()  # the condition is held until wait() releases it
            clock.wait(condition, None)
            returned.set()

    threading.Thread(target=timer, daemon=True).start()
    assert waiting.wait(5)
    with condition:  # taken once the timer waits
        assert not returned.is_set()  # parked, not back at once
        condition.notify_all()
    assert returned.wait(5)


class HourAhead(SystemClock):
    """A system clock set an hour ahead: the way a test or a user injects skew."""

    def now(self) -> float:
        return super().now() + 3600


def test_a_system_clock_with_its_own_now_waits_until_its_own_deadline() -> None:
    """The wait measures the deadline with the clock's ``now()``: a subclass that moves
    ``now()`` does not sleep an hour past a deadline 50 ms away."""
    clock = HourAhead()
    condition = threading.Condition()
    returned = threading.Event()

    def timer() -> None:
        with condition:
            clock.wait(condition, clock.now() + 0.05)
        returned.set()

    threading.Thread(target=timer, daemon=True).start()
    assert returned.wait(5)


def test_timestamps_come_from_numbers_or_aware_datetimes_only() -> None:
    assert to_timestamp(datetime(1970, 1, 1, 0, 1, tzinfo=UTC)) == 60
    with pytest.raises(ValidationError, match="timezone-aware"):
        to_timestamp(datetime(2026, 1, 1))
    with pytest.raises(ValidationError, match="got 'soon'"):
        to_timestamp("soon")  # type: ignore[arg-type]


def test_timestamps_are_instants_a_datetime_can_show() -> None:
    first = datetime(1, 1, 1, tzinfo=UTC)  # 0001-01-01 00:00 UTC
    assert to_timestamp(first) == to_timestamp(-62135596800.0) == -62135596800.0
    last = 253402300799.0  # 9999-12-31 23:59:59 UTC
    assert to_timestamp(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)) == last
    for outside in (-62135596801.0, 253402300800.0):
        with pytest.raises(ValidationError, match=f"year 1 to year 9999 .*got {outside!r}"):
            to_timestamp(outside)
    # its last microsecond: the float rounds to the first instant of year 10000
    very_last = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    with pytest.raises(ValidationError, match="year 1 to year 9999"):
        to_timestamp(very_last)


def test_ids_count_up_and_never_repeat_across_threads() -> None:
    ids = sequential_ids()
    assert [ids(), ids()] == ["task-1", "task-2"]
    seen: list[str] = []
    lock = threading.Lock()

    def take() -> None:
        mine = [ids() for _ in range(1000)]
        with lock:
            seen.extend(mine)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert len(set(seen)) == 4000


class Answering:
    """A clock of one's own whose ``now()`` answers ``reading``."""

    def __init__(self, reading: object) -> None:
        self.reading = reading

    def now(self) -> object:
        return self.reading

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        condition.wait(0)

    def __repr__(self) -> str:
        return "Answering()"


@pytest.mark.parametrize(
    "reading",
    [datetime(2026, 1, 5, 9, tzinfo=UTC), "now", float("nan"), None, True, 1e300],
    ids=repr,
)
def test_a_clock_of_ones_own_that_answers_no_instant_is_refused_naming_it(
    reading: object,
) -> None:
    """Before: the scheduler took it, its first registration blamed the schedule
    (``FixedRate.first_run() takes epoch seconds (a float), got datetime...``: the
    clock unnamed) and ``start()``'s timer thread died of a ``TypeError``; a NaN clock
    was registered and ran nothing."""
    from lldsched import Scheduler

    with pytest.raises(ValidationError) as caught:
        Scheduler(clock=Answering(reading))  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith(f"clock Answering(): now() answered {reading!r}, not epoch seconds")
    assert "time.time()" in message
    if isinstance(reading, datetime):  # the likeliest slip: its way out
        assert "(a datetime: answer its .timestamp())" in message


def test_a_clock_of_ones_own_answering_an_int_is_taken() -> None:
    from lldsched import FixedRate, Scheduler

    scheduler = Scheduler(clock=Answering(1_767_600_000))  # type: ignore[arg-type]
    task = scheduler.schedule("tick", print, FixedRate(60))
    assert task.next_run_at == 1_767_600_000
