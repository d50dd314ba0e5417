"""``OneTime(5)`` on a clock that reads the present: a warning that ``delay=5`` was meant.

``OneTime``'s first argument is ``at``, an instant in epoch seconds: ``OneTime(5)`` is
five seconds past midnight of 1970-01-01 UTC, which a wall clock passed decades ago, so
the run is due at once; a user who meant "in five seconds" (as ``FixedDelay(5)`` and
``FixedRate(5)`` read) saw it run at once, and was told nothing.  A refusal would be wrong:
a ``Simulation``'s clock may start at a small epoch (``start=0``), where ``OneTime(5)``
is five seconds in, as written.  So the rule is one of values, the same on both
runtimes, asked by :meth:`OneTime.first_run <lldsched.schedules.simple.OneTime>` as a
task is registered or rescheduled (the one place both runtimes pass): an ``at`` above 0
and under :data:`DURATION_LIKE` (one reads as a duration: nobody schedules a run for 1970)
that ``now`` is :data:`DECADES` or more past gets a ``UserWarning`` naming the value,
when it lies and ``OneTime(delay=...)``; the task is registered as written, and runs at
once (docs/decisions/schedules.md, "`OneTime(5)` on a clock that reads the present warns").
``OneTime(0)`` is told nothing: at once is what either reading means (and a negative
``at`` is no delay).  A simulated clock near the epoch is told nothing either.
"""

from __future__ import annotations

import sys
import warnings

from lldsched.clock import utc_datetime

__all__ = ["DECADES", "DURATION_LIKE", "delay_meant"]

DURATION_LIKE = 365 * 86_400.0
"""An ``at`` below this (epoch seconds: an instant in 1970) reads as a duration."""

DECADES = 10 * DURATION_LIKE
"""How far past such an ``at`` a clock must read for the warning: a wall clock's now
(ten years past it), never a simulation started near the epoch."""


def _text(when: float) -> str:
    """``when`` in UTC to the second; its seconds for a clock past datetime's range."""
    try:
        return utc_datetime(when).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return f"{when!r} s"


def _ours(module: str) -> bool:
    """``module`` is lldsched's (not a user's ``lldsched_jobs``)."""
    return module == "lldsched" or module.startswith("lldsched.")


def delay_meant(at: float, now: float) -> None:
    """Warn if ``OneTime(at)``, asked its first run at ``now`` (passed ``at``), reads as a
    ``delay=`` given as ``at`` (see the module docstring); nothing otherwise."""
    if not 0 < at < DURATION_LIKE or now - at < DECADES:
        return
    years = int((now - at) // DURATION_LIKE)
    level = 1  # this function; the warning names the first frame outside lldsched
    frame = sys._getframe(0)
    while frame is not None and _ours(frame.f_globals.get("__name__", "")):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(
        f"OneTime(at={at!r}) is the instant {_text(at)}, {years} years before the "
        f"clock's now ({_text(now)}): it runs at once. For a run {at:g} s after "
        f"registration write OneTime(delay={at!r})",
        UserWarning,
        stacklevel=level,
    )
