"""A schedule as an object handed to the package: whether an object is one
(:func:`has_schedule_methods`, and :func:`seconds_hint`, what a refusal of a number of
seconds adds), the schedule a decorator wraps (:func:`wrapped_schedule`), and a copy of a
schedule of its own class (:func:`copied`), what a built-in schedule rebuilds itself from
in another zone.  What a schedule answers is :mod:`lldsched.schedules.base`'s.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TypeGuard, TypeVar

from lldsched.checks import LONGEST
from lldsched.schedules.base import Schedule

__all__ = ["copied", "has_schedule_methods", "seconds_hint", "wrapped_schedule"]


def has_schedule_methods(schedule: object) -> TypeGuard[Schedule]:
    """True when ``schedule`` is an object with ``first_run`` and ``next_run`` to call:
    what registration and the decorators (``Jittered``, ``Window``) take as a schedule
    (a ``TypeGuard``: where it is true, the type checker takes ``schedule`` for one).

    A class is not one, though its methods are callable attributes: ``FixedRate`` given
    for ``FixedRate(60)`` is refused here, naming it, instead of failing at
    ``first_run`` with a bare ``TypeError``."""
    return (
        callable(getattr(schedule, "first_run", None))
        and callable(getattr(schedule, "next_run", None))
        and not isinstance(schedule, type)
    )


def seconds_hint(value: object) -> str:
    """What a refusal of ``value`` where a schedule goes adds when it is a number of
    seconds (or a ``timedelta``), the likeliest slip: the two schedules it may have
    meant, ``" (a number of seconds is no schedule: FixedRate(60) runs every 60 s,
    OneTime(delay=60) once, in 60 s)"``; else nothing (a bool, or a number past
    :data:`~lldsched.checks.LONGEST`, which has no ``:g``: 10**5000).  The one
    wording, for a registration (:func:`~lldsched.core.schedulearg.schedule_of`) and a
    decorator (``Jittered(60, 5)``) alike."""
    if isinstance(value, timedelta):
        every = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool) and abs(value) <= LONGEST:
        every = value
    else:
        return ""
    return (
        f" (a number of seconds is no schedule: FixedRate({every:g}) runs every {every:g} s,"
        f" OneTime(delay={every:g}) once, in {every:g} s)"
    )


def wrapped_schedule(schedule: object) -> Schedule | None:
    """The schedule a decorator wraps, or None for a schedule that wraps none: a
    decorator (``Jittered``, ``Window``, one of one's own) is a schedule that keeps
    another in ``.schedule``.  Registration (its time zone, the overlap check, the type
    cache), the stores (a ``Window``'s count restored) and PostgreSQL's decode cache
    all ask here."""
    inner = getattr(schedule, "schedule", None)
    return inner if has_schedule_methods(inner) else None


_Copied = TypeVar("_Copied")


def copied(schedule: _Copied) -> _Copied:
    """A shallow copy of ``schedule``, of its class, made without calling its
    ``__init__`` (a subclass's may take other arguments): every attribute, slots and
    ``__dict__``, as it is.  What a built-in schedule rebuilds itself from when a
    scheduler reads it in another zone (a cron's ``in_zone``, a ``Window``'s or a
    ``Jittered``'s ``with_schedule``), so that a subclass comes back a subclass, with
    its own settings; the caller then sets its base class's fields anew (its
    ``__init__`` called on the copy)."""
    twin = object.__new__(type(schedule))
    state = object.__getstate__(schedule)
    attributes, slots = state if isinstance(state, tuple) else (state, None)
    for name, value in {**(attributes or {}), **(slots or {})}.items():
        object.__setattr__(twin, name, value)  # past a frozen value's __setattr__
    return twin
