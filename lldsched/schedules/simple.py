"""The three interval schedules: OneTime, FixedDelay and FixedRate.

Each is a frozen value validated at construction, with the bad value quoted in
the :class:`~lldsched.errors.ScheduleError`.

Fixed rate keeps a grid of slots ``first + k * period``.  The next slot after a
run is computed from the slot the run served (``record.slot``), which is the
run's start whenever it started on time: so dispatch latency, a wait for a free
worker and a retry's backoff never make the grid drift.  A run that outlasts its
period has *missed* the slots that passed before it finished:

* ``SKIP`` moves to the first slot not before the finish (a slot that falls
  exactly at the finish has not been missed);
* ``CATCH_UP`` returns the first missed slot, which is due at once; the runs
  after it catch up one slot at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from lldsched.clock import to_timestamp
from lldsched.errors import ScheduleError, ValidationError
from lldsched.model import ExecutionRecord, OverrunPolicy

__all__ = ["FixedDelay", "FixedRate", "OneTime"]


def _seconds(name: str, value: object, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScheduleError(f"{name} must be a number of seconds, got {value!r}")
    if math.isnan(value) or math.isinf(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise ScheduleError(f"{name} must be finite and {bound} seconds, got {value!r}")
    return value  # kept as given: a literal shared by many schedules costs no memory


@dataclass(frozen=True, slots=True, init=False)
class OneTime:
    """Run once: at ``at`` (epoch seconds or an aware datetime), or ``delay`` seconds
    after registration.  An ``at`` that has already passed runs at once."""

    at: float | None
    delay: float | None

    def __init__(self, at: float | datetime | None = None, *, delay: float | None = None) -> None:
        if (at is None) == (delay is None):
            raise ScheduleError(
                f"OneTime needs exactly one of at= or delay=, got at={at!r}, delay={delay!r}"
            )
        try:
            when = None if at is None else to_timestamp(at, name="OneTime at")
        except ValidationError as exc:
            raise ScheduleError(str(exc)) from None
        wait = None if delay is None else _seconds("OneTime delay", delay, positive=False)
        object.__setattr__(self, "at", when)
        object.__setattr__(self, "delay", wait)

    def first_run(self, now: float) -> float:
        if self.at is None:
            return now + (self.delay or 0.0)
        return max(self.at, now)

    def next_run(self, record: ExecutionRecord, now: float) -> None:
        return None

    def __repr__(self) -> str:
        return (
            f"OneTime(at={self.at!r})" if self.at is not None else f"OneTime(delay={self.delay!r})"
        )


@dataclass(frozen=True, slots=True, repr=False)
class FixedDelay:
    """Run every ``delay`` seconds measured from the previous run's *finish*:
    runs never overlap, however long they take."""

    delay: float
    start_delay: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "delay", _seconds("FixedDelay delay", self.delay, positive=False))
        object.__setattr__(
            self,
            "start_delay",
            _seconds("FixedDelay start_delay", self.start_delay, positive=False),
        )

    def first_run(self, now: float) -> float:
        return now + self.start_delay

    def next_run(self, record: ExecutionRecord, now: float) -> float:
        return record.finished + self.delay

    def __repr__(self) -> str:
        start = f", start_delay={self.start_delay!r}" if self.start_delay else ""
        return f"FixedDelay({self.delay!r}{start})"


@dataclass(frozen=True, slots=True, repr=False)
class FixedRate:
    """Run every ``period`` seconds on a fixed grid of slots; ``on_overrun`` says what
    happens to the slots a long run misses (see the module docstring)."""

    period: float
    on_overrun: OverrunPolicy = OverrunPolicy.SKIP
    start_delay: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "period", _seconds("FixedRate period", self.period, positive=True))
        object.__setattr__(
            self, "start_delay", _seconds("FixedRate start_delay", self.start_delay, positive=False)
        )
        if not isinstance(self.on_overrun, OverrunPolicy):
            raise ScheduleError(
                f"on_overrun must be OverrunPolicy.SKIP or OverrunPolicy.CATCH_UP, "
                f"got {self.on_overrun!r}"
            )

    def first_run(self, now: float) -> float:
        return now + self.start_delay

    def __repr__(self) -> str:
        policy = "" if self.on_overrun is OverrunPolicy.SKIP else ", OverrunPolicy.CATCH_UP"
        start = f", start_delay={self.start_delay!r}" if self.start_delay else ""
        return f"FixedRate({self.period!r}{policy}{start})"

    def next_run(self, record: ExecutionRecord, now: float) -> float:
        period = self.period
        following = record.slot + period
        if following >= record.finished or self.on_overrun is OverrunPolicy.CATCH_UP:
            return following
        # SKIP: the first slot of the grid that is not before the finish.
        missed = math.ceil((record.finished - record.slot) / period)
        return record.slot + missed * period
