"""Value checks: what a number of seconds, a plain number, a whole count and a fraction must be.

Every numeric argument the package accepts is checked here, so the rules live in
one place:

* a **number of seconds** (:func:`seconds`) and a **plain number** (:func:`number`)
  are an ``int`` or a ``float``, never a ``bool`` (``True == 1``, but it is a
  mistake), finite (not NaN, not infinite), and within the given bounds;
* a **whole count** (:func:`whole`, :func:`whole_or_none`) is an ``int``, never a
  ``bool``, within the given bounds;
* a **fraction** (:func:`fraction`) is an ``int`` or ``float``, never a ``bool``,
  in ``[0, 1]`` (NaN is not).

Each function returns the value as given (an ``int`` stays an ``int``, so
a literal shared by many schedules costs no memory) or raises ``error`` (the
:class:`~lldsched.errors.ValidationError` unless the caller names another, e.g.
:class:`~lldsched.errors.ScheduleError` for schedules) with a message that names
the argument and quotes the bad value: ``"<name> must be ..., got <value!r>"``.
Bounds are keyword arguments: ``at_least`` (``>=``), ``above`` (``>``).

Keywords keep a call site's own wording where its tests pin it: ``kind`` names
what a value that is not a number at all should have been (``"epoch seconds or an
aware datetime"``), and ``expected`` replaces the words after the name in every
failure's message (``"run_for() takes seconds >= 0, got -5"``).

Kept cheap: one call, and the message is built only when a value is refused (the
simulation checks every duration a model draws).
"""

from __future__ import annotations

import math

from lldsched.errors import ValidationError

__all__ = ["fraction", "number", "seconds", "whole", "whole_or_none"]


def _bound(at_least: float | None, above: float | None) -> str:
    """The bounds as the messages write them: ``">= 0"``, ``"> 0"``, or nothing."""
    if above is not None:
        return f"> {above:g}"
    if at_least is not None:
        return f">= {at_least:g}"
    return ""


def seconds(
    value: object,
    *,
    name: str,
    at_least: float | None = None,
    above: float | None = None,
    error: type[Exception] = ValidationError,
    kind: str = "a number of seconds",
    unit: str = "seconds",
    expected: str | None = None,
) -> float:
    """``value`` if it is a finite number of seconds within the bounds, else ``error``:
    ``"FixedRate period must be finite and > 0 seconds, got 0"``, or ``"... must be a
    number of seconds, got '60'"``.  ``unit`` is the word after the bound."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise error(f"{name} {expected or 'must be ' + kind}, got {value!r}")
    if (
        math.isnan(value)
        or math.isinf(value)
        or (at_least is not None and value < at_least)
        or (above is not None and value <= above)
    ):
        bound = _bound(at_least, above)
        if expected is None:
            expected = f"must be finite and {bound}" if bound else "must be finite"
            expected += f" {unit}" if bound and unit else ""
        raise error(f"{name} {expected}, got {value!r}")
    return value


def number(
    value: object,
    *,
    name: str,
    at_least: float | None = None,
    above: float | None = None,
    error: type[Exception] = ValidationError,
) -> float:
    """``value`` if it is a finite number within the bounds, else ``error``: the rule of
    :func:`seconds`, with messages that name no unit (``"multiplier must be finite and
    >= 1, got 0.5"``, ``"duration must be a number, got 'long'"``)."""
    return seconds(
        value, name=name, at_least=at_least, above=above, error=error, kind="a number", unit=""
    )


def whole(
    value: object,
    *,
    name: str,
    at_least: int | None = None,
    error: type[Exception] = ValidationError,
) -> int:
    """``value`` if it is an ``int`` (not a ``bool``) ``>= at_least``, else ``error``:
    ``"workers must be an int >= 1, got 0"``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or (at_least is not None and value < at_least)
    ):
        bound = _bound(at_least, None)
        raise error(f"{name} must be an int{' ' + bound if bound else ''}, got {value!r}")
    return value


def whole_or_none(
    value: object,
    *,
    name: str,
    at_least: int,
    error: type[Exception] = ValidationError,
) -> int | None:
    """``None``, or ``value`` if it is an ``int`` (not a ``bool``) ``>= at_least``, else
    ``error``: ``"history_limit must be an int >= 0 or None, got -1"``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < at_least:
        raise error(f"{name} must be an int {_bound(at_least, None)} or None, got {value!r}")
    return value


def fraction(
    value: object,
    *,
    name: str,
    error: type[Exception] = ValidationError,
    expected: str | None = None,
) -> float:
    """``value`` if it is a number in ``[0, 1]`` (not a ``bool``, not NaN), else
    ``error``: ``"jitter must be a fraction in [0, 1], got 1.5"``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise error(f"{name} {expected or 'must be a fraction in [0, 1]'}, got {value!r}")
    return value
