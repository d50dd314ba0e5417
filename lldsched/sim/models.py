"""Duration and failure models for simulated tasks.

A *duration model* is a number of seconds (a ``timedelta`` is taken as its seconds),
or a function ``(rng, attempt) -> seconds``; a *failure model* is a probability, or a
function ``(rng, attempt) -> bool | str | None`` (True or an error text fails the
attempt).  ``rng`` is the task's own ``random.Random``, seeded from the simulation's
seed and the task id, so adding a task never changes the draws of another.

The helpers below build the common distributions with readable reprs (their
parameters are plain numbers of seconds: a distribution's, not a duration's), so a
scenario prints the way it was written: ``uniform(30, 300)``,
``lognormal(median=240, sigma=0.5)``.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

from lldsched.checks import fraction, number, seconds
from lldsched.errors import ValidationError

__all__ = [
    "DurationModel",
    "FailureModel",
    "exponential",
    "fails_on",
    "fixed",
    "lognormal",
    "uniform",
]

DurationModel = float | Callable[[random.Random, int], float]
FailureModel = float | Callable[[random.Random, int], "bool | str | None"]


@dataclass(frozen=True, slots=True)
class fixed:
    """Always ``seconds``."""

    seconds: float

    def __post_init__(self) -> None:
        number(self.seconds, name="fixed seconds", at_least=0)

    def __call__(self, rng: random.Random, attempt: int) -> float:
        return self.seconds

    def __repr__(self) -> str:
        return f"fixed({self.seconds:g})"


@dataclass(frozen=True, slots=True)
class uniform:
    """Uniform between ``low`` and ``high`` seconds."""

    low: float
    high: float

    def __post_init__(self) -> None:
        number(self.low, name="uniform low", at_least=0)
        number(self.high, name="uniform high", at_least=0)
        if self.high < self.low:
            raise ValidationError(f"uniform({self.low!r}, {self.high!r}): high is below low")

    def __call__(self, rng: random.Random, attempt: int) -> float:
        return rng.uniform(self.low, self.high)

    def __repr__(self) -> str:
        return f"uniform({self.low:g}, {self.high:g})"


@dataclass(frozen=True, slots=True)
class exponential:
    """Exponential with the given ``mean`` seconds (memoryless service times)."""

    mean: float

    def __post_init__(self) -> None:
        number(self.mean, name="exponential mean", above=0)

    def __call__(self, rng: random.Random, attempt: int) -> float:
        return rng.expovariate(1.0 / self.mean)

    def __repr__(self) -> str:
        return f"exponential(mean={self.mean:g})"


@dataclass(frozen=True, slots=True)
class lognormal:
    """Log-normal with the given ``median`` seconds and shape ``sigma``: mostly near the
    median, with a long tail of slow runs (how real job durations tend to look)."""

    median: float
    sigma: float

    def __post_init__(self) -> None:
        number(self.median, name="lognormal median", above=0)
        number(self.sigma, name="lognormal sigma", at_least=0)

    def __call__(self, rng: random.Random, attempt: int) -> float:
        return rng.lognormvariate(math.log(self.median), self.sigma)

    def __repr__(self) -> str:
        return f"lognormal(median={self.median:g}, sigma={self.sigma:g})"


@dataclass(frozen=True, slots=True)
class fails_on:
    """Fail exactly the listed attempts (1-based) of every slot, with ``error`` as the text."""

    attempts: frozenset[int]
    error: str = "RuntimeError: simulated failure"

    def __init__(self, *attempts: int, error: str = "RuntimeError: simulated failure") -> None:
        object.__setattr__(self, "attempts", frozenset(attempts))
        object.__setattr__(self, "error", error)

    def __call__(self, rng: random.Random, attempt: int) -> str | None:
        return self.error if attempt in self.attempts else None

    def __repr__(self) -> str:
        return f"fails_on({', '.join(map(str, sorted(self.attempts)))})"


def check_duration(value: DurationModel | timedelta) -> DurationModel:
    """Validate a duration model (a number now; a function's results when drawn).

    ``fixed(x)`` comes back as the number ``x``: no call per run for a constant."""
    if isinstance(value, fixed):
        return value.seconds
    if callable(value):
        return _takes_rng_and_attempt(value, "duration")
    return float(seconds(value, name="duration", at_least=0, unit=""))


def check_failure(value: FailureModel) -> FailureModel:
    """Validate a failure model: a probability in [0, 1], or a function."""
    if callable(value):
        return _takes_rng_and_attempt(value, "fails")
    expected = "must be a probability in [0, 1] or a function"
    return float(fraction(value, name="fails", expected=expected))


_MODELS = (uniform, exponential, lognormal, fails_on)  # take (rng, attempt), as written above
M = TypeVar("M", bound=Callable[..., object])


def _takes_rng_and_attempt(model: M, what: str) -> M:
    """``model`` if it can be called as every draw calls it, ``model(rng, attempt)``; else a
    ValidationError naming it, at registration rather than at its first draw mid-run
    (a lambda that takes only ``rng`` is the usual slip).  A callable whose signature
    cannot be read passes."""
    if isinstance(model, _MODELS):
        return model
    try:
        signature = inspect.signature(model)
    except (TypeError, ValueError):
        return model
    try:
        signature.bind(None, 1)
    except TypeError as exc:
        raise ValidationError(
            f"{what} model {model!r} must take (rng, attempt), as each draw calls it: {exc}"
        ) from None
    return model
