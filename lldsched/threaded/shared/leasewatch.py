"""LeaseWatch: the deadline by which a process on a shared store stops trusting its leases.

The one rule of how long a lease is trusted lives here (:func:`renewal_every`,
:func:`trusted_for`): leases are renewed every ``lease / 3``, and a renewal that
succeeded vouches for ``lease - lease / 6`` from when it *began* (the store's
expiry is at least ``lease`` after that instant, and a takeover at least that
late).  It began at the reading of this clock taken before the scheduler's clock was
read for the ``now`` it passed (:meth:`Coordinator.looked
<lldsched.threaded.shared.Coordinator.looked>`): a shared SQLite store counts the
expiry from that ``now``, not from the statement.  Past that without another renewal
succeeding, the process counts its leases lost: each run in flight has its flag raised
(``ctx.lease_lost``), at least ``lease / 6`` before another process can take it over,
and it neither begins nor claims a run (:meth:`LeaseWatch.trusted`) until a renewal
succeeds or it holds no lease any more (leases counted lost are not held: the
coordinator still renews them, to learn whether the store kept them, but trusts none).
A forward step of the wall clock, which a shared SQLite store's expiries are instants
of, brings them closer by the step: the trust is cut by as much of it as the trust's own
clock did not count (:meth:`LeaseWatch.cut`; a suspend that clock counted is no step).

Why a thread of its own: the timer renews, and the timer can be held up by the very
outage that stops the renewals (a store call waiting for a silent network, bounded
by the store's ``timeout``, and the calls around it).  The watch waits on
:data:`LEASE_CLOCK` (the runtime's; a fake clock drives it in its unit tests), never the
scheduler's clock: the store's expiry counts real time on its server, and a fake or
jumping clock that moved an hour let no lease expire.  It starts with the first run it
watches and ends when none is left.  Where the interpreter's exit refuses it (Python
3.12.0 to 3.12.2, :mod:`lldsched.threadstarts`: a worker beginning a run a shutdown a
Ctrl-C cut short had handed it), that run goes unwatched, the process ending, and the
next run's start tries the thread again.

**A suspend.**  The store's expiries go on counting while the machine sleeps (the host's
wall clock on SQLite, the server's on PostgreSQL), so the trust counts on a clock that
counts a suspend too (:func:`suspend_counting`): on Linux ``time.monotonic`` is
``CLOCK_MONOTONIC``, which stops, and a laptop or VM suspended for longer than the lease
woke trusting leases that others may have taken over, its runs' flags down until the
timer's next wake cut the trust by the jump it saw.  Now :meth:`LeaseWatch.trusted`
answers False the moment the machine resumes, and the watch raises the flags within
``lease / 6`` of it: its waits (``Condition.wait``, which counts ``CLOCK_MONOTONIC`` on
Linux, so a suspend stops it too) are at most ``lease / 6`` each
(:func:`look_every`), so a flag goes up no later than the store's expiry unless the
suspend itself outlasted that, and then within ``lease / 6`` of the resume.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType

from lldsched.clock import Clock
from lldsched.core.context import RunContext
from lldsched.logs import CLUSTER, counted
from lldsched.threadstarts import start

__all__ = [
    "LEASE_CLOCK",
    "LeaseWatch",
    "look_every",
    "renewal_every",
    "suspend_counting",
    "trusted_for",
]

log = logging.getLogger(CLUSTER)


def suspend_counting(
    clocks: ModuleType = time, platform: str = sys.platform
) -> tuple[Callable[[], float], str]:
    """The reading leases are trusted by, and its name: real seconds no one sets, counting a
    suspend of the machine where the platform has such a clock (``clocks``: the ``time``
    module, or a test's stand-in; ``platform``: ``sys.platform``'s).

    * Linux: ``clock_gettime(CLOCK_BOOTTIME)``, which counts a suspend;
      ``time.monotonic`` is ``CLOCK_MONOTONIC``, which does not.
    * macOS: ``clock_gettime(CLOCK_MONOTONIC_RAW)``, which goes on while the machine
      sleeps (``mach_continuous_time``'s clock, in Apple's words); ``time.monotonic``
      is ``mach_absolute_time``, which stops.
    * Windows: ``time.monotonic``: ``GetTickCount64`` up to Python 3.12,
      ``QueryPerformanceCounter`` from 3.13; both count sleep and hibernation
      (Microsoft's documentation of each says so).
    * Anywhere else (or a clock the interpreter does not offer): ``time.monotonic``,
      whether it counts a suspend or not.  Where it does not, the timer's next wake (at
      most ``poll`` after the resume) sees the suspend as a forward step of the wall
      clock and cuts the trust by it (:meth:`LeaseWatch.cut`), as before this rule.
    """
    if platform.startswith("linux") and hasattr(clocks, "CLOCK_BOOTTIME"):
        return functools.partial(clocks.clock_gettime, clocks.CLOCK_BOOTTIME), (
            "clock_gettime(CLOCK_BOOTTIME)"
        )
    if platform == "darwin" and hasattr(clocks, "CLOCK_MONOTONIC_RAW"):
        return functools.partial(clocks.clock_gettime, clocks.CLOCK_MONOTONIC_RAW), (
            "clock_gettime(CLOCK_MONOTONIC_RAW)"
        )
    return clocks.monotonic, "time.monotonic"


class _LeaseClock:
    """A reading of :func:`suspend_counting` as a :class:`~lldsched.clock.Clock`: real
    seconds no one sets, a suspend included where the platform counts one."""

    __slots__ = ("name", "now")

    def __init__(self, reading: Callable[[], float], name: str) -> None:
        self.now = reading
        self.name = name  # which clock, for a reader (and the tests)

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        condition.wait(None if deadline is None else max(0.0, deadline - self.now()))

    def __repr__(self) -> str:
        return f"<lease clock {self.name}>"


LEASE_CLOCK: Clock = _LeaseClock(*suspend_counting())
"""The clock leases are trusted by (see the module docstring)."""


def renewal_every(lease: float) -> float:
    """Seconds between renewals of the leases a process holds."""
    return lease / 3


def trusted_for(lease: float) -> float:
    """Seconds a renewal (or the claim) vouches for the leases, from when it began."""
    return lease - renewal_every(lease) / 2


def look_every(lease: float) -> float:
    """The longest the watch waits before it reads its clock again: ``lease / 6``, the
    margin between the trust and the store's expiry.  A wait counts time that may stop
    while the machine sleeps (``Condition.wait`` counts ``CLOCK_MONOTONIC`` on Linux),
    and a wait parked for the whole trust would end that long after a resume."""
    return renewal_every(lease) / 2


class LeaseWatch:
    """Raises the flags of the runs it watches once :func:`trusted_for` passed since the
    last renewal that succeeded began (:meth:`renewed`), unless another did since."""

    def __init__(self, clock: Clock, *, lease: float, name: str) -> None:
        self._clock = clock
        self._trusted = trusted_for(lease)
        self._look = look_every(lease)
        self._name = name
        # Guards _runs, _until and _thread: the runtime adds, drops and renews under the
        # scheduler's lock, the watch thread reads them and raises flags; never held
        # while calling a store or a logging handler.  Lock order: the scheduler's lock,
        # then this one, then an injected clock's (trusted() reads the clock under it).
        self._condition = threading.Condition()
        self._runs: dict[int, RunContext] = {}  # token -> the context of its run
        self._until: float | None = None  # when the leases stop being trusted; None: none held
        self._thread: threading.Thread | None = None

    def renewed(self, began: float) -> None:
        """A renewal (or claim) that began at ``began`` (this watch's clock, read before
        the ``now`` its expiry counts from) succeeded."""
        with self._condition:
            self._vouch(began)

    def claimed(self, began: float) -> None:
        """A claim that began at ``began`` (as :meth:`renewed`'s) succeeded: it vouches for
        the leases if none was held (:meth:`held_none`), else the renewals keep doing so
        (a claim's later start would extend the trust of leases renewed before it)."""
        with self._condition:
            if self._until is None:
                self._vouch(began)

    def _vouch(self, began: float) -> None:
        """Trust the leases until :func:`trusted_for` after ``began``, unless they already
        are for longer (the caller holds ``_condition``)."""
        until = began + self._trusted
        if self._until is None or until > self._until:
            self._until = until
            self._condition.notify()

    def cut(self, seconds: float) -> None:
        """The store's expiries came ``seconds`` closer than the renewals said (a forward
        step of the wall clock a shared SQLite store counts them on, less what this
        watch's clock counted of it: :meth:`Coordinator.clock_jumped
        <lldsched.threaded.shared.Coordinator.clock_jumped>`): trusted that much less."""
        with self._condition:
            if self._until is not None:
                self._until -= seconds
                self._condition.notify()

    def held_none(self) -> None:
        """The process holds no lease any more: nothing to trust or distrust until a claim
        starts the count again (:meth:`renewed`, from its own reading)."""
        with self._condition:
            self._until = None

    def trusted(self) -> bool:
        """Whether the process may act on leases now: claim, or begin a run it claimed.

        True while a renewal (or the claim) still vouches for the leases held
        (:meth:`renewed`, less any :meth:`cut`), and while none is held (:meth:`held_none`;
        a claim vouches for its own).  False once that ran out, until a renewal succeeds
        or the leases are all counted lost: a process that cannot vouch for the leases it
        holds neither begins a run on one nor claims more (each claim would be refused at
        its begin and given back, a store write or two at every wake, and the task kept
        from the other processes in between)."""
        with self._condition:
            return self._until is None or self._clock.now() < self._until

    def add(self, token: int, context: RunContext) -> None:
        """Watch the run holding ``token``."""
        with self._condition:
            self._runs[token] = context
            if self._thread is None:
                thread = threading.Thread(target=self._watch, name=self._name, daemon=True)
                if start(thread):  # else the interpreter's exit refused it: see the docstring
                    self._thread = thread

    def discard(self, token: int) -> None:
        """The run holding ``token`` is over (or its lease was found lost): not watched."""
        with self._condition:
            self._runs.pop(token, None)
            if not self._runs:
                self._condition.notify()  # the thread ends

    def _watch(self) -> None:
        lost: list[tuple[int, RunContext]] = []
        lapse = 0.0  # seconds since the last renewal vouched for the leases, when lost
        with self._condition:
            while self._runs:
                until = self._until
                now = self._clock.now()
                if until is None or now < until:  # at most look_every: a suspend shows then
                    self._clock.wait(
                        self._condition, None if until is None else min(until, now + self._look)
                    )
                    continue
                lost = list(self._runs.items())
                self._runs.clear()  # _until stays, passed: not trusted until a renewal
                lapse = now - (until - self._trusted)
            self._thread = None
        for _, context in lost:
            context.lose_lease()
        if lost:
            # The lapse as it was, not the trust's length: a process stopped 18 s (SIGSTOP,
            # a stall) said "for 7.5 s", read as a short hiccup; a cut counts as time.
            log.warning(
                "no renewal of the leases succeeded for %.1f s (one vouches for %g s): %s in "
                "flight counted their leases lost (flag raised; tokens %s) before another "
                "process can take them over",
                lapse,
                self._trusted,
                counted(len(lost), "run"),
                ", ".join(str(token) for token, _ in lost),
            )
