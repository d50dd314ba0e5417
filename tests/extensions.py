"""Extensions written the way docs/EXTENDING.md says, importable (a durable store keeps
import paths): a schedule, decorators of one's own, and a retry policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lldsched import ExecutionRecord, RetryPolicy, Schedule
from lldsched.schedules.base import slot_after
from lldsched.stores.codec import decode_schedule, encode_schedule, register_schedule


@dataclass(frozen=True)
class ExceptOn:
    """The slots of ``schedule`` except those on ``dates`` (UTC ``YYYY-MM-DD``)."""

    schedule: Schedule
    dates: tuple[str, ...] = ()

    def _kept(self, when: float | None) -> float | None:
        while (
            when is not None and datetime.fromtimestamp(when, UTC).date().isoformat() in self.dates
        ):
            when = slot_after(self.schedule, when)
        return when

    def first_run(self, now: float) -> float | None:
        return self._kept(self.schedule.first_run(now))

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        return self._kept(self.schedule.next_run(record, now))

    def with_schedule(self, schedule: Schedule) -> ExceptOn:
        return ExceptOn(schedule, self.dates)


@dataclass(frozen=True)
class Unzoned(ExceptOn):
    """ExceptOn without ``with_schedule``: it cannot be rebuilt around a re-zoned cron."""

    with_schedule = None  # type: ignore[assignment]


register_schedule(
    "ExceptOn",
    ExceptOn,
    lambda s: {"schedule": encode_schedule(s.schedule), "dates": list(s.dates)},
    lambda d: ExceptOn(decode_schedule(d["schedule"]), tuple(d["dates"])),
)


@dataclass(frozen=True)
class Dates:
    """One run at each instant of ``at`` (a tuple): registered with a ``from_dict`` that
    forgets to turn JSON's list back into a tuple."""

    at: tuple[float, ...]

    def first_run(self, now: float) -> float | None:
        return next((t for t in self.at if t >= now), None)

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        return next((t for t in self.at if t > record.slot), None)


def _dates(fields: Mapping[str, Any]) -> Dates:
    return Dates(fields["at"])  # a list: not equal to the tuple it was


register_schedule("Dates", Dates, lambda s: {"at": s.at}, _dates)


@dataclass(frozen=True)
class Every:
    """A run every ``period`` seconds, its period kept as it was given (a NaN too)."""

    period: float

    def first_run(self, now: float) -> float | None:
        return now + self.period

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        return record.slot + self.period


register_schedule("Every", Every, lambda s: {"period": s.period}, lambda d: Every(d["period"]))


class Fibonacci(RetryPolicy):
    """Backoffs 1, 1, 2, 3, 5, ... times ``initial_backoff``, capped at ``max_backoff``."""

    __slots__ = ()

    def backoff(self, attempt: int, rng: Any = None) -> float:
        previous, current = 0.0, 1.0
        for _ in range(attempt - 1):
            previous, current = current, previous + current
        return min(current * self.initial_backoff, self.max_backoff)


class Remembers(RetryPolicy):
    """A RetryPolicy subclass with state of its own, which its fields do not rebuild."""

    __slots__ = ("label",)

    def __init__(self, label: str, **fields: Any) -> None:
        super().__init__(**fields)
        object.__setattr__(self, "label", label)


def fails() -> None:
    """Always raises."""
    raise RuntimeError("always")
