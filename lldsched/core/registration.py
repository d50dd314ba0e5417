"""The checks on what a registration passes: schedule, priority and options.

Each check raises :class:`~lldsched.errors.ValidationError` with the bad value in
its message, before anything is registered (:meth:`SchedulerCore.add
<lldsched.core.machine.SchedulerCore.add>` calls them first).  Two checks run on every
registration and are kept cheap by remembering what they learnt: which types
are schedules, and whether a function's code declares ``ctx``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from lldsched.checks import seconds
from lldsched.core.task import DEFAULT_OPTIONS, TaskOptions
from lldsched.errors import ValidationError
from lldsched.model import Priority
from lldsched.policies import MisfirePolicy, RetryPolicy

__all__ = ["is_schedule", "require_action", "validated", "wants_context"]

DEFAULT_RETRY = RetryPolicy()

# Caches, filled as registrations come (plain structures written under the
# runtime's lock, or by the single-threaded simulation; a racing write stores the
# same answer).
SCHEDULE_TYPES: set[type] = set()  # types already seen to have first_run and next_run
CONTEXT_BY_CODE: dict[Any, bool] = {}  # code object -> declares ``ctx`` (bounded below)
_CONTEXT_CACHE_LIMIT = 4096


def is_schedule(schedule: object) -> bool:
    """True when ``schedule`` has ``first_run`` and ``next_run``; remembers its type."""
    if callable(getattr(schedule, "first_run", None)) and callable(
        getattr(schedule, "next_run", None)
    ):
        SCHEDULE_TYPES.add(type(schedule))
        return True
    return False


def wants_context(action: Callable[..., Any]) -> bool:
    """True when ``action`` declares a parameter named ``ctx``."""
    code = getattr(action, "__code__", None)  # a bound method passes its function's on
    if code is not None:  # plain functions and methods: no inspect.signature on the hot path
        known = CONTEXT_BY_CODE.get(code)
        if known is None:
            names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
            known = "ctx" in names
            if len(CONTEXT_BY_CODE) < _CONTEXT_CACHE_LIMIT:
                CONTEXT_BY_CODE[code] = known
        return known
    try:
        parameters = inspect.signature(action).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False
    return "ctx" in parameters


def validated(
    name: str,
    action: Callable[..., Any] | None,
    schedule: object,
    *,
    priority: Priority | int,
    retry: RetryPolicy | None,
    timeout: float | None,
    args: tuple[Any, ...] | list[Any],
    kwargs: Mapping[str, Any] | None,
    misfire: MisfirePolicy | None,
) -> tuple[Priority, TaskOptions]:
    """Check everything a registration passes; return its :class:`Priority` and
    :class:`~lldsched.core.task.TaskOptions`.

    ``action`` may be None (a simulated task needs none; the threaded runtime asks
    :func:`require_action` first).  Options equal to the defaults are the shared
    :data:`~lldsched.core.task.DEFAULT_OPTIONS`.
    """
    if not isinstance(name, str) or not name or name.isspace():
        raise ValidationError(f"task name must be a non-empty string, got {name!r}")
    if action is not None and not callable(action):
        raise _not_callable(name, action)
    if type(schedule) not in SCHEDULE_TYPES and not is_schedule(schedule):
        raise ValidationError(
            f"task {name!r}: schedule must provide first_run() and next_run(), got {schedule!r}"
        )
    if type(priority) is not Priority:
        priority = _priority(name, priority)
    pass_context = action is not None and wants_context(action)
    # Nothing given, nothing to check: the common registration skips _options().
    # (Five checks folded into this one call, and this shortcut, are worth about a
    # fifth of a registration: benchmarks/bench_scale.py.)
    if (
        retry is None
        and timeout is None
        and kwargs is None
        and misfire is None
        and type(args) is tuple
        and not args
        and not pass_context
    ):
        return priority, DEFAULT_OPTIONS
    options = _options(
        name,
        retry=retry,
        timeout=timeout,
        args=args,
        kwargs=kwargs,
        misfire=misfire,
        pass_context=pass_context,
    )
    return priority, options


def require_action(name: str, action: object) -> None:
    """``action`` is not None (the threaded runtime has nothing to run without one)."""
    if action is None:
        raise _not_callable(name, action)


def _not_callable(name: str, action: object) -> ValidationError:
    return ValidationError(f"task {name!r}: action must be callable, got {action!r}")


def _priority(name: str, value: object) -> Priority:
    """``value`` as a :class:`Priority` (a member or its int), or ValidationError."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return Priority(value)
        except ValueError:
            pass
    raise ValidationError(
        f"task {name!r}: priority must be a Priority (HIGH, NORMAL, LOW), got {value!r}"
    )


def _options(
    name: str,
    *,
    retry: RetryPolicy | None,
    timeout: float | None,
    args: tuple[Any, ...] | list[Any],
    kwargs: Mapping[str, Any] | None,
    misfire: MisfirePolicy | None,
    pass_context: bool,
) -> TaskOptions:
    if retry is None:
        retry = DEFAULT_RETRY
    elif not isinstance(retry, RetryPolicy):
        raise ValidationError(f"task {name!r}: retry must be a RetryPolicy, got {retry!r}")
    if timeout is not None:
        timeout = float(
            seconds(
                timeout, name=f"task {name!r}: timeout", above=0, expected="must be seconds > 0"
            )
        )
    if not isinstance(args, tuple | list):
        raise ValidationError(f"task {name!r}: args must be a tuple, got {args!r}")
    if kwargs is not None and (
        not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs)
    ):
        raise ValidationError(f"task {name!r}: kwargs must map str to values, got {kwargs!r}")
    if misfire is not None and not isinstance(misfire, MisfirePolicy):
        raise ValidationError(f"task {name!r}: misfire must be a MisfirePolicy, got {misfire!r}")
    options = TaskOptions(retry, timeout, tuple(args), kwargs or None, pass_context, misfire)
    return DEFAULT_OPTIONS if options == DEFAULT_OPTIONS else options  # equal values shared
