"""A shared store in an outage: the timer lets its lock go between one wake's store calls
and the next's, so a verb from a user's thread gets in (docs/CLUSTER.md, "Network
partitions" and "Limits"; docs/decisions/store-failures.md, "When a store fails": the timer waits
``poll`` after a store call failed).

A black-holed PostgreSQL store answers each call with a failure once the call's
``timeout`` has passed.  Here the calls fail at once and move the scheduler's clock on by
that timeout instead (no real wait): at one wake the timer's read of the change feed and
its claim use up more than ``poll``, so its next wake is already due when they return.
It used to start the next wake's calls at once, never letting its lock go: a user's
``scheduler.task(id)`` or ``pause(id)`` waited for the whole outage.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import FixedRate, Scheduler, StoreError, SystemClock
from tests.lockwaits import HANG_GUARD, returns
from tests.store_doubles import HookedStore, StoreCall

CALL_TIMEOUT = 10.0
"""How far each failing call moves the clock on: a PostgreSQL store's default ``timeout``."""


def noop() -> None:
    pass


class SkewedClock(SystemClock):
    """The system's time plus ``ahead`` seconds, and the count of the timer's waits that
    let the lock go (``released``).  No monotonic clock: the skew is no jump."""

    monotonic = None  # type: ignore[assignment]

    def __init__(self) -> None:
        self.ahead = 0.0
        self.released = 0

    def now(self) -> float:
        return time.time() + self.ahead

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        if deadline is None or deadline > self.now():
            self.released += 1  # SystemClock.wait releases the lock only then
        super().wait(condition, deadline)


SAID: dict[StoreCall, str] = {"changed": "feed read", "claim": "claim", "renew": "renewal"}
"""How a failed call is named in :attr:`BlackHoled.calls` and its error."""


class BlackHoled(HookedStore):
    """A shared SQLite store whose change feed, claims and renewals fail while
    ``black_holed`` is set, each after using up ``CALL_TIMEOUT`` of ``clock``'s time.
    ``calls`` notes each failed call with the count of the lock's releases before it."""

    def __init__(self, path: Path, clock: SkewedClock) -> None:
        super().__init__(path, poll=0.1)
        self.clock = clock
        self.black_holed = False
        self.calls: list[tuple[str, int]] = []
        self.failing = threading.Event()  # set at the outage's second failed call

    def before(self, call: StoreCall) -> None:
        """Fail ``call`` as a black hole does, if the network is black-holed."""
        if not self.black_holed:
            return
        kind = SAID[call]
        self.calls.append((kind, self.clock.released))
        if len(self.calls) >= 2:
            self.failing.set()
        self.clock.ahead += CALL_TIMEOUT
        raise StoreError(f"no answer within {CALL_TIMEOUT:g} s to a {kind}")


@pytest.fixture
def outage(tmp_path: Path) -> Iterator[tuple[Scheduler, BlackHoled]]:
    """A running scheduler on a black-holed shared store, its outage under way."""
    clock = SkewedClock()
    store = BlackHoled(tmp_path / "tasks.db", clock)
    scheduler = Scheduler(store=store, clock=clock)
    scheduler.schedule("hourly", noop, FixedRate(3600, start_delay=3600), id="hourly")
    with store:
        scheduler.start()
        store.black_holed = True
        try:
            assert store.failing.wait(HANG_GUARD), "the timer made no store call"
            yield scheduler, store
        finally:
            store.black_holed = False  # the outage heals: the timer waits again, and stops
            scheduler.shutdown()


def test_a_read_gets_the_lock_between_the_timers_failed_store_calls(
    outage: tuple[Scheduler, BlackHoled],
) -> None:
    scheduler, store = outage
    assert returns(lambda: scheduler.task("hourly"))
    assert returns(scheduler.tasks)
    assert store.black_holed  # within the outage, not after it


def test_a_write_verb_waits_for_its_own_store_calls_only(
    outage: tuple[Scheduler, BlackHoled],
) -> None:
    scheduler, store = outage
    assert returns(lambda: scheduler.pause("hourly"))
    assert scheduler.task("hourly").status.value == "paused"
    assert store.black_holed


def test_the_timer_makes_one_wakes_calls_between_two_releases_of_its_lock(
    outage: tuple[Scheduler, BlackHoled],
) -> None:
    """Each wake in the outage reads the feed and claims (no lease held: no renewal),
    then waits with the lock let go: two failed calls per release, never more."""
    _, store = outage
    store.failing.clear()
    while len(store.calls) < 6:
        assert store.failing.wait(HANG_GUARD)
        store.failing.clear()
    calls = list(store.calls)
    per_release: dict[int, list[str]] = {}
    for kind, released in calls:
        per_release.setdefault(released, []).append(kind)
    assert max(len(kinds) for kinds in per_release.values()) <= 2, per_release
