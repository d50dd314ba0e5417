"""RetryPolicy: how many attempts a task gets and how long it waits between them.

A retry is the same task, attempt ``n + 1``, due at the failed run's finish plus
``backoff(n)``; the schedule is not consulted.  Backoffs grow geometrically and are
capped: with the defaults 1 s, 2 s, 4 s, ... never more than 60 s.

Optional jitter spreads retries of many tasks that failed together (a "thundering
herd" after an outage): with ``jitter=j`` the wait is drawn uniformly from
``[b * (1 - j), b]``, where ``b`` is the capped backoff, so jitter never makes a
wait longer than the policy without it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from lldsched.errors import ValidationError

__all__ = ["RetryPolicy"]


def _check_number(name: str, value: object, *, minimum: float, strict: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if (
        math.isnan(number)
        or math.isinf(number)
        or number < minimum
        or (strict and number == minimum)
    ):
        bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
        raise ValidationError(f"{name} must be finite and {bound}, got {value!r}")
    return number


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Attempts and capped exponential backoff (validated at construction).

    ``max_attempts`` counts every attempt, the first included: ``max_attempts=1``
    never retries, the default 3 runs at most twice more.
    """

    max_attempts: int = 3
    initial_backoff: float = 1.0
    multiplier: float = 2.0
    max_backoff: float = 60.0
    jitter: float = 0.0

    def __post_init__(self) -> None:
        attempts = self.max_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ValidationError(f"max_attempts must be an int >= 1, got {attempts!r}")
        _check_number("initial_backoff", self.initial_backoff, minimum=0.0, strict=False)
        _check_number("multiplier", self.multiplier, minimum=1.0, strict=False)
        _check_number("max_backoff", self.max_backoff, minimum=0.0, strict=False)
        _check_number("jitter", self.jitter, minimum=0.0, strict=False)
        if self.jitter > 1.0:
            raise ValidationError(f"jitter must be a fraction in [0, 1], got {self.jitter!r}")
        if self.max_backoff < self.initial_backoff:
            raise ValidationError(
                f"max_backoff ({self.max_backoff!r}) is below initial_backoff "
                f"({self.initial_backoff!r})"
            )

    @classmethod
    def never(cls) -> RetryPolicy:
        """A policy with a single attempt: a failure goes straight to the dead letter."""
        return cls(max_attempts=1)

    def allows_retry(self, attempt: int) -> bool:
        """True when the ``attempt``-th attempt (1-based) may be followed by another."""
        return attempt < self.max_attempts

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after the ``attempt``-th attempt (1-based) failed.

        With jitter, ``rng`` draws the spread (the core passes its seeded generator,
        so simulations stay reproducible).
        """
        # Compute in log space first so a large attempt never overflows a float.
        exponent = attempt - 1
        if self.multiplier > 1.0 and exponent * math.log(self.multiplier) > 700:
            base = self.max_backoff
        else:
            base = min(self.max_backoff, self.initial_backoff * self.multiplier**exponent)
        if self.jitter:
            spread = (rng or random).random() * self.jitter
            return base * (1.0 - spread)
        return base
