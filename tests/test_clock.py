"""Clocks: the fake clock moves only when told and wakes a timer waiting on it; ids count up."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from lldsched import FakeClock, SystemClock, ValidationError
from lldsched.clock import to_timestamp
from lldsched.core.ids import sequential_ids


def test_fake_clock_starts_where_told_and_moves_only_forward() -> None:
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    start = clock.now()
    assert clock.advance(90) == start + 90 and clock.now() == start + 90
    assert clock.set(start + 100) == start + 100
    with pytest.raises(ValidationError, match="cannot go back"):
        clock.set(start)
    with pytest.raises(ValidationError, match="got -1"):
        clock.advance(-1)
    with pytest.raises(ValidationError, match="got inf"):
        clock.advance(float("inf"))


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
    assert not woke.wait(0.05)  # parked for an hour of fake time: nothing happens by itself
    clock.advance(3600)
    assert woke.wait(5)
    thread.join(5)


def test_fake_clock_wait_returns_at_once_when_the_deadline_has_passed() -> None:
    clock = FakeClock(100)
    condition = threading.Condition()
    with condition:
        clock.wait(condition, 50)  # would block forever if it waited


def test_system_clock_waits_at_most_until_the_deadline() -> None:
    clock = SystemClock()
    condition = threading.Condition()
    with condition:
        clock.wait(condition, clock.now() + 0.01)
    assert abs(clock.now() - datetime.now(UTC).timestamp()) < 1


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
