"""Duration, failure and arrival models for simulated tasks.

Each attempt of a task (a slot's first run, and each retry) asks its models when
it starts: first its duration, then whether it fails (a constant asks nothing of
the generator; a probability draws one number).  A failed attempt still takes its
whole duration.

A *duration model* is a number of seconds or a ``timedelta`` (every attempt takes
exactly that), or a function ``model(rng, attempt) -> seconds`` (a finite number
>= 0, or a ``timedelta``; a real number of a type of its own, numpy's ``int64`` or a
``Fraction``, is read as a ``float``).  A constant is an ``int`` or a ``float``, as
every number of seconds the library takes (``FixedRate(60)``).

A *failure model* is a probability ``p`` in [0, 1] (each attempt fails
independently with probability ``p``, the error text ``"SimulatedFailure:
attempt N"``), or a function ``model(rng, attempt)`` that returns ``False`` or
``None`` (the attempt succeeds), ``True`` (it fails with that text), a
non-empty error text (it fails with that text; ``""`` succeeds), or an exception
instance (it fails with its
``"Type: message"``); numpy's ``bool_`` reads as a ``bool``.  Anything else is refused
at its draw, naming the model, the task and the value (:func:`failure_of`): a number
(``0.3``: a probability meant for ``fails=0.3``), a list or any other object, whose
truth would fail every attempt or none.

In both functions ``rng`` is the task's own ``random.Random``, seeded from the
simulation's seed and the task *id*, and ``attempt`` the attempt's number within
its slot (1 for the first run, 2 for its first retry).  So a task given an
``id=`` draws the same numbers whatever other tasks are registered; generated ids
(``task-1``, ``task-2``, ... in registration order) move when a task is
registered before others, and so do those tasks' draws.  Both models of a task
share its generator: a model that draws more or fewer numbers shifts the other's.

A model is checked at registration: a function must accept ``(rng, attempt)``.
Write your own as a function or a callable object::

    def slower_retries(rng: random.Random, attempt: int) -> float:
        return rng.uniform(60, 600) * (2 if attempt > 1 else 1)

An *arrival model* says when one-off work arrives: :func:`poisson_arrivals` gives
the instants of a Poisson process (independent exponential gaps), the open arrivals
of queueing theory.  Register a one-off task at each, and a pool of ``c`` workers
with ``exponential`` durations is an M/M/c queue (``fixed``: M/D/c)::

    for instant in poisson_arrivals(rate=0.15, start=sim.now, seed=1, until=sim.now + 86400):
        sim.schedule("request", OneTime(at=instant), duration=exponential(mean=10))

A recurring schedule cannot stand in for it: a task has one slot at a time, so a
slot due while every worker is busy holds back the next arrival instead of queueing
behind it.

The helpers below build the common distributions with readable reprs (their
parameters are plain numbers of seconds: a distribution's, not a duration's), so a
scenario prints the way it was written: ``uniform(30, 300)``,
``lognormal(median=240, sigma=0.5)``.

A simulation keeps each task's pair of models with the task's generator in a
:class:`TaskModels` (:data:`NO_RNG`, one generator shared, for the tasks whose
models never draw).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from numbers import Number, Real
from typing import TypeVar

from lldsched.checks import LONGEST, call_error, fraction, number, seconds, whole
from lldsched.clock import LATEST, to_timestamp
from lldsched.errors import ValidationError, error_text, shown

__all__ = [
    "NO_RNG",
    "DurationModel",
    "FailureModel",
    "TaskModels",
    "exponential",
    "fails_on",
    "failure_of",
    "fixed",
    "lognormal",
    "poisson_arrivals",
    "simulated_failure",
    "uniform",
]

DurationModel = float | Callable[[random.Random, int], float | timedelta]
"""A duration model as a type (the module's docstring says what it may be): a function
answers seconds or a ``timedelta``, as its draw takes them."""
FailureModel = float | Callable[[random.Random, int], "bool | str | BaseException | None"]


def _shown(value: float) -> str:
    """A model's parameter as its repr shows it: short (``60``, ``1e+06``) where that is
    the same number, else in full, so the repr gives the model back (``:g`` alone showed
    ``uniform(1234567, 2e6)`` as ``uniform(1.23457e+06, 2e+06)``, another model)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


@dataclass(frozen=True, slots=True)
class fixed:
    """Always ``seconds``."""

    seconds: float

    def __post_init__(self) -> None:
        number(self.seconds, name="fixed seconds", at_least=0)

    def __call__(self, rng: random.Random, attempt: int) -> float:
        return self.seconds

    def __repr__(self) -> str:
        return f"fixed({_shown(self.seconds)})"


@dataclass(frozen=True, slots=True)
class uniform:
    """Continuous uniform between ``low`` and ``high`` seconds (``random.uniform``):
    mean ``(low + high) / 2``."""

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
        return f"uniform({_shown(self.low)}, {_shown(self.high)})"


@dataclass(frozen=True, slots=True)
class exponential:
    """Exponential with the given ``mean`` seconds (``random.expovariate(1 / mean)``):
    memoryless service times, median ``mean * ln 2``."""

    mean: float

    def __post_init__(self) -> None:
        number(self.mean, name="exponential mean", above=0)

    def __call__(self, rng: random.Random, attempt: int) -> float:
        return rng.expovariate(1.0 / self.mean)

    def __repr__(self) -> str:
        return f"exponential(mean={_shown(self.mean)})"


@dataclass(frozen=True, slots=True)
class lognormal:
    """Log-normal with the given ``median`` seconds and shape ``sigma``: ``median *
    exp(sigma * Z)`` for a standard normal ``Z`` (``random.lognormvariate(ln median,
    sigma)``), so ``sigma`` is the standard deviation of the duration's logarithm and
    the mean is ``median * exp(sigma**2 / 2)``.  Mostly near the median, with a long
    tail of slow runs (how real job durations tend to look); ``sigma=0`` is always
    the median."""

    median: float
    sigma: float

    def __post_init__(self) -> None:
        number(self.median, name="lognormal median", above=0)
        number(self.sigma, name="lognormal sigma", at_least=0)

    def __call__(self, rng: random.Random, attempt: int) -> float:
        try:
            return rng.lognormvariate(math.log(self.median), self.sigma)
        except OverflowError:  # exp() of a draw past 709: a duration no float holds
            return math.inf  # refused as any draw out of range is, naming model and task

    def __repr__(self) -> str:
        return f"lognormal(median={_shown(self.median)}, sigma={_shown(self.sigma)})"


@dataclass(frozen=True, slots=True)
class fails_on:
    """Fail exactly the listed attempts (1-based, within each slot: ``fails_on(1, 2)``
    fails a slot's first run and its first retry) of every slot, with ``error`` as
    the text.  Attempts are ints >= 1, at least one; ``error`` a non-empty text."""

    attempts: frozenset[int]
    error: str = "RuntimeError: simulated failure"

    def __init__(self, *attempts: int, error: str = "RuntimeError: simulated failure") -> None:
        if not attempts:
            raise ValidationError("fails_on() needs at least one attempt number, e.g. fails_on(1)")
        for attempt in attempts:
            whole(attempt, name="fails_on attempt", at_least=1)
        if not isinstance(error, str) or not error:
            raise ValidationError(f"fails_on error must be a non-empty text, got {shown(error)}")
        object.__setattr__(self, "attempts", frozenset(attempts))
        object.__setattr__(self, "error", error)

    def __call__(self, rng: random.Random, attempt: int) -> str | None:
        return self.error if attempt in self.attempts else None

    def __repr__(self) -> str:
        return f"fails_on({', '.join(map(str, sorted(self.attempts)))})"


def poisson_arrivals(
    rate: float,
    *,
    start: float | datetime,
    seed: int = 0,
    count: int | None = None,
    until: float | datetime | None = None,
) -> Iterator[float]:
    """The instants (epoch seconds, ascending, each after ``start``) of a Poisson process
    of ``rate`` arrivals a second: gaps drawn independently from an exponential of mean
    ``1 / rate`` (``random.expovariate(rate)``) by a ``random.Random(seed)`` of its own,
    so the same arguments give the same instants whatever else draws.  Exactly one of
    ``count`` (how many) or ``until`` (none after it) says where it ends; either way none
    comes after the end of year 9999, where virtual time ends (a ``count`` of a rate
    too slow to reach it gives fewer: ``rate=1e-308`` gave ``inf``, and ``1e-10`` instants
    that no ``OneTime`` takes).  Lazy: a year of arrivals is read one at a time.

    Raises :class:`~lldsched.errors.ValidationError` naming the bad value, when called
    (not at the first instant read)."""
    number(rate, name="poisson_arrivals rate", above=0)
    begin = to_timestamp(start, name="poisson_arrivals start")
    whole(seed, name="poisson_arrivals seed")
    if (count is None) == (until is None):
        raise ValidationError(
            f"poisson_arrivals needs exactly one of count= or until=, got count={shown(count)}, "
            f"until={shown(until)}"
        )
    if count is not None:
        whole(count, name="poisson_arrivals count", at_least=0)
    end = _LAST_ARRIVAL if until is None else to_timestamp(until, name="poisson_arrivals until")
    if end < begin:
        raise ValidationError(
            f"poisson_arrivals until={shown(until)} is before start={shown(start)}"
        )
    return _arrivals(rate, begin, end, count, random.Random(seed))


_LAST_ARRIVAL = math.nextafter(LATEST, -math.inf)
"""The last instant an arrival may fall on: virtual time's last (a ``datetime``'s)."""


def _arrivals(
    rate: float, instant: float, end: float, count: int | None, rng: random.Random
) -> Iterator[float]:
    made = 0
    while count is None or made < count:
        instant += rng.expovariate(rate)
        if instant > end:
            return
        made += 1
        yield instant


def simulated_failure(attempt: int) -> str:
    """The error text of an attempt a probability (or a model's ``True``) failed."""
    return f"SimulatedFailure: attempt {attempt}"


def failure_of(answer: object, *, attempt: int, model: object, task: str) -> str | None:
    """What a failure model's ``answer`` for ``attempt`` means: ``None`` (the attempt
    succeeds) or its error text.  The one reading of a failure model's answer (see
    the module docstring); any other answer (a number, a list, an object) is a
    ``ValidationError`` naming ``model``, ``task`` and the value, as its truth would fail
    every attempt or none (a probability returned where a verdict was meant: every one)."""
    if answer is None or answer is False:
        return None
    if answer is True:
        return simulated_failure(attempt)
    if isinstance(answer, str):
        return answer or None
    if isinstance(answer, BaseException):
        return error_text(answer)
    if _numpy_bool(answer):  # rng-free models written with numpy: a verdict all the same
        return simulated_failure(attempt) if answer else None
    # Anything else was read by its truth (was: only an int or a float was refused), so
    # a model that returned a list, a Fraction or numpy's int64 failed every attempt, or
    # none, without a word.
    hint = " (a probability is given as fails=<p> itself)" if isinstance(answer, Number) else ""
    raise ValidationError(
        f"fails model {shown(model)} of task {task!r} returned {shown(answer)}; a failure model "
        f"returns True/False, None, an error text or an exception{hint}"
    )


def _numpy_bool(answer: object) -> bool:
    """True for numpy's boolean scalar (``numpy.bool_``; ``numpy.bool`` in numpy 2), what
    a comparison of numpy numbers gives; checked by name: numpy is not imported here."""
    kind = type(answer)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")


def bad_duration(drawn: object, *, model: object, task: str) -> ValidationError:
    """The error of a duration ``model`` of ``task`` that drew ``drawn``, which
    :func:`~lldsched.checks.seconds` refused: it names the model, the task, the value and
    what a duration must be (finite seconds >= 0, at most :data:`~lldsched.checks.LONGEST`);
    the one message of the simulation and the cluster simulation (built only then: the
    check itself stays inline on the run's path)."""
    return ValidationError(
        f"duration model {shown(model)} of task {task!r} returned {shown(drawn)}; "
        "a duration must be "
        f"finite seconds >= 0, at most {LONGEST:.0f} (year 1 to 9999)"
    )


def other_real(value: object) -> object:
    """``value`` as a ``float`` if it is a real number of a type of its own (numpy's
    ``int64``, what a model that picks from observed integer durations,
    ``rng.choice(frame["seconds"].to_numpy())``, returns; a ``Fraction``), else as it
    is: :func:`~lldsched.checks.seconds` takes ``int`` and ``float`` only, and refused
    ``np.int64(42)`` as no duration ("must be finite seconds >= 0").  Never a bool."""
    if isinstance(value, Real) and not isinstance(value, bool | int | float):
        return float(value)
    return value


def drawn_duration(drawn: object, *, model: object, task: str) -> float:
    """The seconds of a duration ``model``'s draw that :func:`~lldsched.checks.seconds`
    refused: a real number of another type (:func:`other_real`) checked as a float, else
    :func:`bad_duration` raised.  Called only once the check has refused the draw, so a
    model that returns floats costs nothing more."""
    real = other_real(drawn)
    if real is not drawn:
        try:
            return seconds(real, name="duration", at_least=0)
        except ValidationError:
            pass
    raise bad_duration(drawn, model=model, task=task) from None  # not the check's, chained


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
    wrong = call_error(model, None, 1)
    if wrong is not None:
        raise ValidationError(
            f"{what} model {shown(model)} must take (rng, attempt), as each draw calls it: {wrong}"
        )
    return model


NO_RNG = random.Random(0)  # shared by tasks whose models never draw


class TaskModels:
    """A task's duration and failure models, and its own random generator."""

    __slots__ = ("duration", "fails", "rng")

    def __init__(self, duration: DurationModel, fails: FailureModel, rng: random.Random) -> None:
        self.duration = duration
        self.fails = fails
        self.rng = rng
