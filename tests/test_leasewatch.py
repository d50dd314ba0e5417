"""LeaseWatch (lldsched/threaded/shared/leasewatch.py), on a fake clock: a run's flag goes up once
``trusted_for(lease)`` passed since the last renewal that succeeded began, not before; a
renewal pushes that instant on; a run no longer watched is left alone.  Over a real
network (tests/test_cluster_partition.py) the watch's clock is a fake too: that the flag
goes up before the server's expiry is a matter of real time, which no test times (that
test's docstring says why)."""

from __future__ import annotations

import sys
import threading
from types import ModuleType
from typing import Any, cast

import pytest

from lldsched import FakeClock
from lldsched.core.context import RunContext
from lldsched.threaded.shared.leases import leases_kept
from lldsched.threaded.shared.leasewatch import (
    LEASE_CLOCK,
    LeaseWatch,
    _LeaseClock,
    look_every,
    renewal_every,
    suspend_counting,
    trusted_for,
)
from tests.exitthreads import refusing_threads
from tests.waits import wait_until

LEASE = 30.0


def context(token: int) -> RunContext:
    return RunContext(f"task-{token}", "task", 1, 0.0, 0, fencing_token=token)


def watch_thread_ended() -> bool:
    return not any(thread.name == "test-lease-watch" for thread in threading.enumerate())


def test_the_rule_is_a_renewal_every_third_trusted_for_five_sixths() -> None:
    assert renewal_every(LEASE) == 10.0
    assert trusted_for(LEASE) == 25.0  # lease / 6 before the server can expire it


def test_flags_go_up_once_no_renewal_vouches_for_the_leases_and_not_before() -> None:
    clock = FakeClock(1000.0)
    watch = LeaseWatch(clock, lease=LEASE, name="test-lease-watch")
    held, done = context(1), context(2)
    watch.renewed(1000.0)
    watch.add(1, held)
    watch.add(2, done)
    watch.discard(2)  # settled: not watched
    clock.advance(20.0)
    watch.renewed(1020.0)  # trusted until 1045 now
    clock.advance(24.0)  # 1044: within
    clock.advance(0.5)
    assert not held.cancelled and not held.lease_lost
    clock.advance(0.5)  # 1045: no renewal since 1020
    wait_until(lambda: held.lease_lost, timeout=5, what="the flag of the run whose lease lapsed")
    assert held.reason == "lease"
    assert not done.cancelled
    wait_until(watch_thread_ended, timeout=5, what="the watch to end with nothing to watch")


def test_a_run_discarded_before_the_deadline_is_not_flagged() -> None:
    clock = FakeClock(0.0)
    watch = LeaseWatch(clock, lease=LEASE, name="test-lease-watch")
    run = context(7)
    watch.renewed(0.0)
    watch.add(7, run)
    watch.discard(7)
    wait_until(watch_thread_ended, timeout=5, what="the watch to end with nothing to watch")
    clock.advance(100.0)
    assert not run.cancelled


def test_a_run_begun_at_the_exit_that_refuses_the_watch_thread_is_watched_by_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At the interpreter's exit on Python 3.12.0 to 3.12.2 no thread starts
    (lldsched/threadstarts.py): a worker beginning a claimed run as the process exited (a
    shutdown a Ctrl-C cut short leaves the workers taking what was handed to them) had
    the watch's start raise that ``RuntimeError`` out of the begin once the core had begun
    the run (a begin that raised: its task failed).  Now the run goes unwatched, the
    process ending (no renewal is made then either); a later run's start watches it too."""
    clock = FakeClock(0.0)
    watch = LeaseWatch(clock, lease=LEASE, name="test-lease-watch")
    watch.renewed(0.0)
    refused = refusing_threads(monkeypatch)
    early = context(1)
    watch.add(1, early)  # before: RuntimeError
    assert refused == ["test-lease-watch"]
    monkeypatch.undo()
    watch.add(2, context(2))  # the thread, started this time
    clock.advance(trusted_for(LEASE))
    wait_until(lambda: early.lease_lost, timeout=5, what="the flag of the run added at the exit")
    wait_until(watch_thread_ended, timeout=5, what="the watch to end with nothing to watch")


def test_a_cut_brings_the_flags_forward_by_its_seconds() -> None:
    clock = FakeClock(1000.0)
    watch = LeaseWatch(clock, lease=LEASE, name="test-lease-watch")
    cut = context(1)
    watch.renewed(1000.0)  # trusted until 1025
    watch.add(1, cut)
    watch.cut(20.0)  # a forward step of the wall clock: until 1005
    clock.advance(4.5)
    assert not cut.lease_lost
    clock.advance(0.5)  # 1005
    wait_until(lambda: cut.lease_lost, timeout=5, what="the flag 20 s sooner")
    wait_until(watch_thread_ended, timeout=5, what="the watch to end with nothing to watch")


def test_trusted_with_none_held_and_not_once_the_trust_ran_out_until_renewed() -> None:
    """What :meth:`LeaseWatch.trusted` answers the coordinator before a claim and a
    begin: with no lease held, yes (a claim vouches for itself); with leases held, only
    while a renewal vouches for them, the flags raised or not."""
    clock = FakeClock(1000.0)
    watch = LeaseWatch(clock, lease=LEASE, name="test-lease-watch")
    assert watch.trusted()  # nothing held
    watch.renewed(1000.0)  # a claim: trusted until 1025
    run = context(1)
    watch.add(1, run)
    clock.advance(24.0)
    assert watch.trusted()
    clock.advance(1.0)
    wait_until(lambda: run.lease_lost, timeout=5, what="the flag of the run whose lease lapsed")
    wait_until(watch_thread_ended, timeout=5, what="the watch to end with nothing to watch")
    assert not watch.trusted()  # still held by the coordinator: no claim, no begin
    watch.renewed(1026.0)  # a renewal succeeded
    assert watch.trusted()
    clock.advance(26.0)  # 1051: ran out again
    assert not watch.trusted()
    watch.held_none()  # counted lost, or settled: nothing held
    assert watch.trusted()


def test_a_claim_vouches_for_the_leases_only_when_none_was_held() -> None:
    """A claim's trust counts from its own reading when nothing was held; with leases
    held, the renewals vouch (a later claim must not extend the trust of older leases)."""
    clock = FakeClock(1000.0)
    watch = LeaseWatch(clock, lease=LEASE, name="test-lease-watch")
    watch.claimed(1000.0)  # nothing held: trusted until 1025
    watch.claimed(1020.0)  # held: no later than 1025 still
    clock.advance(25.0)
    assert not watch.trusted()
    watch.held_none()
    watch.claimed(1025.0)  # nothing held again: until 1050
    clock.advance(24.0)
    assert watch.trusted()


# -- a suspend ------------------------------------------------------------------------


class Host:
    """A stand-in for the ``time`` module of a machine that slept: ``monotonic`` stops
    while it is suspended (Linux's ``CLOCK_MONOTONIC``, macOS's ``mach_absolute_time``),
    ``clock_gettime`` of the clocks that count a suspend does not."""

    CLOCK_BOOTTIME = 7
    CLOCK_MONOTONIC_RAW = 4

    def __init__(self) -> None:
        self.awake = 100.0
        self.asleep = 0.0

    def monotonic(self) -> float:
        return self.awake

    def clock_gettime(self, clock: int) -> float:
        assert clock in (self.CLOCK_BOOTTIME, self.CLOCK_MONOTONIC_RAW), clock
        return self.awake + self.asleep

    def suspend(self, seconds: float) -> None:
        self.asleep += seconds


@pytest.mark.parametrize(
    ("platform", "name"),
    [
        ("linux", "clock_gettime(CLOCK_BOOTTIME)"),
        ("darwin", "clock_gettime(CLOCK_MONOTONIC_RAW)"),
    ],
)
def test_the_lease_clock_counts_a_suspend_that_time_monotonic_does_not(
    platform: str, name: str
) -> None:
    """The store's expiries go on while the machine sleeps; ``time.monotonic`` does not
    on Linux or macOS: a process suspended past its lease woke trusting leases another
    process may hold by now.  The lease clock counts the suspend."""
    host = Host()
    reading, said = suspend_counting(cast(ModuleType, host), platform)
    assert said == name
    before, monotonic_before = reading(), host.monotonic()
    host.suspend(2 * LEASE)
    assert host.monotonic() == monotonic_before  # the hole: no time passed, by this clock
    assert reading() - before == 2 * LEASE
    watch = LeaseWatch(_LeaseClock(reading, said), lease=LEASE, name="test-lease-watch")
    watch.renewed(before)
    assert not watch.trusted()  # at once on resuming: no wake of the timer needed


@pytest.mark.parametrize("platform", ["win32", "freebsd14"])
def test_elsewhere_the_lease_clock_is_time_monotonic(platform: str) -> None:
    # Windows: GetTickCount64 or QueryPerformanceCounter, both count sleep.  Elsewhere the
    # rule falls back to it, and the timer's next look cuts the trust by a suspend it did
    # not count.
    host = Host()
    reading, said = suspend_counting(cast(ModuleType, host), platform)
    assert (reading, said) == (host.monotonic, "time.monotonic")


def test_this_process_trusts_its_leases_by_the_clock_the_rule_chooses_here() -> None:
    assert isinstance(LEASE_CLOCK, _LeaseClock)
    assert LEASE_CLOCK.name == suspend_counting()[1]
    if sys.platform.startswith("linux"):
        assert LEASE_CLOCK.name == "clock_gettime(CLOCK_BOOTTIME)"


class Waits(FakeClock):
    """A fake clock that keeps each ``(now, deadline)`` a waiter waited with."""

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self.waits: list[tuple[float, float | None]] = []

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        self.waits.append((self.now(), deadline))
        super().wait(condition, deadline)


def test_the_watch_looks_at_its_clock_at_least_every_sixth_of_the_lease() -> None:
    """``Condition.wait`` counts ``CLOCK_MONOTONIC`` on Linux, which stops in a suspend: a
    watch parked for the whole trust (25 s) would read its clock that long after the
    resume.  It waits ``lease / 6`` at most, so a flag goes up no later than the store's
    expiry, or within ``lease / 6`` of a resume past it."""
    clock = Waits(1000.0)
    watch = LeaseWatch(clock, lease=LEASE, name="test-lease-watch")
    run = context(1)
    watch.renewed(1000.0)  # trusted until 1025
    watch.add(1, run)
    wait_until(lambda: bool(clock.waits), timeout=5, what="the watch to wait")
    assert clock.waits[0] == (1000.0, 1000.0 + look_every(LEASE))
    assert look_every(LEASE) == LEASE / 6
    clock.advance(look_every(LEASE))  # the watch looks, and waits again: 1010 at most
    wait_until(lambda: len(clock.waits) > 1, timeout=5, what="the watch to wait again")
    assert clock.waits[-1] == (1005.0, 1010.0)
    watch.discard(1)
    wait_until(watch_thread_ended, timeout=5, what="the watch to end with nothing to watch")
    assert not run.lease_lost


class _Keeping:
    """The Coordinator as ``leases_kept`` sees it: its store's lease, and the renewals."""

    class store:
        lease = 0.03  # a renewal every 10 ms

    def __init__(self) -> None:
        self.renewals = 0
        self.renewed = threading.Event()

    def looked(self) -> float:
        return 0.0

    def renew_held(self, now: float, looked: float) -> None:
        self.renewals += 1
        self.renewed.set()


def _keeper_running() -> bool:
    return any(thread.name == "test-lease-keeper" for thread in threading.enumerate())


def test_shutdowns_lease_keeper_renews_while_its_block_runs_and_ends_with_it() -> None:
    """``leases_kept`` (lldsched/threaded/shared/leases.py): the keeper renews until the block
    ends (shutdown's wait for the runs), then ends with it, joined: no thread renewing
    the leases of a scheduler shut down."""
    coordinator: Any = _Keeping()
    with leases_kept(coordinator, threading.Lock(), lambda: 0.0, name="test-lease-keeper"):
        assert coordinator.renewed.wait(5)
        assert _keeper_running()
    assert not _keeper_running()


def test_shutdowns_lease_keeper_refused_at_the_interpreters_exit_lets_the_block_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At the exit of Python 3.12.0 to 3.12.2 no thread starts: the block (shutdown's
    wait for the runs) runs all the same, its leases not renewed meanwhile."""
    coordinator: Any = _Keeping()
    refused = refusing_threads(monkeypatch)
    ran = False
    with leases_kept(coordinator, threading.Lock(), lambda: 0.0, name="test-lease-keeper"):
        ran = True
    monkeypatch.undo()
    assert ran and refused == ["test-lease-keeper"]
    assert coordinator.renewals == 0
