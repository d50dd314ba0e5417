"""Value checks: what a number of seconds, a plain number, a count, a fraction and a flag must be.

Every numeric argument and every flag the package accepts is checked here, so the rules
live in one place:

* a **number of seconds** (:func:`seconds`, every duration of the public API: periods,
  delays, timeouts, backoffs, grace, leases...) is an ``int`` or a ``float``, never a
  ``bool`` (``True == 1``, but it is a mistake), or a :class:`datetime.timedelta`
  (read as its ``total_seconds()``); finite (not NaN, not infinite) and within the
  given bounds;
* a **step** (:func:`step`: a fixed rate's period, a fixed delay's delay, a jitter's
  ``max_delay``) is a number of seconds ``> 0`` and at least :data:`FINEST`, a
  microsecond: a shorter one is lost when added to an instant (at 2026 a float's epoch
  seconds step by 0.24 µs), so ``FixedRate(1e-9)`` ran its first slot forever at one
  instant, ``FixedDelay(0)`` ran for ever at the instant its zero-length runs finished
  on a clock that stands still, and ``Jittered(..., max_delay=1e-300)`` divided a slot
  by it into ``inf`` (``OverflowError``);
* a **plain number** (:func:`number`) is the same without the ``timedelta``: an
  instant in epoch seconds, a multiplier, a sigma are not durations;
* an **instant** a schedule's query takes (:func:`instant`: ``first_run(now)``,
  ``slot_after(slot)``, cron's ``next_after(t)``) is an ``int`` or a ``float``, never a
  ``bool`` (``next_after(True)`` answered the first fire after 1970-01-01T00:00:01),
  within ±:data:`FARTHEST` (so not NaN, not infinite);
* a **whole count** (:func:`whole`, :func:`whole_or_none`) is an ``int``, never a
  ``bool``, within the given bounds, and never past :data:`WIDEST` (640 digits) either
  way, bounds given or not;
* a **fraction** (:func:`fraction`) is an ``int`` or ``float``, never a ``bool``,
  in ``[0, 1]`` (NaN is not);
* a **flag** (:func:`flag`) is ``True`` or ``False``, nothing else (``1``, ``"yes"``
  and ``None`` are mistakes, not truthy values);
* a **wait** (:func:`wait_seconds`: the timeout of a call that blocks its caller, such as
  ``shutdown()``, ``metrics()``, ``wait_idle()``, ``EventLog.wait_for()``) is a number of
  seconds, and one longer than a thread can wait (``threading.TIMEOUT_MAX``, some 292
  years) waits that long: ``timeout=1e10`` means "as long as it takes" and is not a
  mistake, but the lock and condition waits raise ``OverflowError`` past it;
* a **function called later** (:func:`call_error`: a simulated model, an intervention,
  a listener) can be called as the package will call it, its arguments bound to its
  signature when it is given (a listener that takes no event, or a class given for an
  instance, failed at every event).

An ``int`` too large for a float (``10**400``) is not finite: every number of seconds
becomes a float somewhere, and there it would raise ``OverflowError``.  Nor is a
number past :data:`LONGEST` either way (315,537,897,600: the seconds from year 1 to
year 9999, the span of a ``datetime``), though a float holds it: no instant a
``datetime`` shows is that far from another, so such a period, delay or duration only
makes a task due past year 9999 (or, past ``1e308``, at ``inf``) that nothing can show
or reach, and ``FixedRate(1e300)`` was taken as readily as ``FixedRate(60)``.

Each function returns the value as given (an ``int`` stays an ``int``, so
a literal shared by many schedules costs no memory; a ``timedelta`` comes back as
its float seconds, so ``FixedRate(timedelta(minutes=5)) == FixedRate(300)``) or
raises ``error`` (the :class:`~lldsched.errors.ValidationError` unless the caller
names another, e.g. :class:`~lldsched.errors.ScheduleError` for schedules) with a
message that names the argument and quotes the bad value: ``"<name> must be ...,
got <value>"``, the value as :func:`lldsched.errors.shown` writes it (its ``repr``; an
``int`` past 640 digits as ``"an int of 5,001 digits"``, a long text by its start: the
message of an ``int`` past Python's 4,300 digits raised ``ValueError`` from the
f-string meant to refuse it) (a ``timedelta`` is quoted with its seconds: ``"got
datetime.timedelta(days=-1, seconds=86340) (-60 seconds)"``).
Bounds are keyword arguments: ``at_least`` (``>=``), ``above`` (``>``), and for a count
``at_most`` (``<=``).

Keywords keep a call site's own wording where its tests pin it: ``kind`` names
what a value that is not a number at all should have been (``"epoch seconds or an
aware datetime"``), and ``expected`` replaces the words after the name in every
failure's message (``"run_for() takes seconds >= 0, got -5"``).

Kept cheap: one call, and a ``timedelta`` is recognised, and the message built,
only once a value is not a plain number (the simulation checks every duration a
model draws).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from datetime import timedelta
from threading import TIMEOUT_MAX

from lldsched.errors import MOST_DIGITS, ValidationError, shown

__all__ = [
    "FARTHEST",
    "FINEST",
    "LONGEST",
    "WIDEST",
    "call_error",
    "flag",
    "fraction",
    "id_hint",
    "instance_hint",
    "instant",
    "number",
    "seconds",
    "shutdown_timeout",
    "step",
    "wait_seconds",
    "whole",
    "whole_or_none",
]


LONGEST = 315537897600.0
"""The largest number of seconds (or plain number) the checks take, either way: from
0001-01-01 to 10000-01-01 UTC, the span of a ``datetime`` (see the module docstring)."""


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
    kind: str = "a number of seconds or a timedelta",
    unit: str = "seconds",
    expected: str | None = None,
) -> float:
    """``value`` (a ``timedelta`` as its float seconds) if it is a finite number of
    seconds within the bounds, else ``error``: ``"FixedRate period must be finite and
    > 0 seconds, got 0"``, or ``"... must be a number of seconds or a timedelta, got
    '60'"``.  ``unit`` is the word after the bound."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        if isinstance(value, timedelta):  # here, so a plain number pays nothing for it
            return _timedelta(value, name, at_least, above, error, unit, expected)
        raise error(f"{name} {expected or 'must be ' + kind}, got {shown(value)}")
    # One chained comparison says finite and within LONGEST: NaN compares False, and an
    # int compares exactly with a float, so 10**400 raises no OverflowError here.
    if (
        not -LONGEST <= value <= LONGEST
        or (at_least is not None and value < at_least)
        or (above is not None and value <= above)
    ):
        words = _expected(at_least, above, unit, expected, value=value)
        raise error(f"{name} {words}, got {shown(value)}")
    return value


FINEST = 1e-6
"""The shortest step the checks take (:func:`step`): a microsecond, the resolution of a
``timedelta`` and of a frame's times."""


def step(value: object, *, name: str, error: type[Exception] = ValidationError) -> float:
    """:func:`seconds` ``> 0``, and then at least :data:`FINEST`: ``"FixedRate period
    must be at least 1e-06 seconds (a microsecond: a shorter step is lost in an
    instant's float), got 1e-09"``."""
    checked = seconds(value, name=name, above=0, error=error)
    if checked < FINEST:
        raise error(
            f"{name} must be at least {FINEST:g} seconds (a microsecond: a shorter step is "
            f"lost in an instant's float), got {shown(value)}"
        )
    return checked


def wait_seconds(
    value: object,
    *,
    name: str,
    at_least: float | None = 0,
    above: float | None = None,
    error: type[Exception] = ValidationError,
) -> float:
    """:func:`seconds` for a call that blocks its caller: checked the same way (``>= 0``
    unless ``at_least`` says otherwise), then capped at ``threading.TIMEOUT_MAX``, the
    longest a lock or a condition can wait (``metrics(timeout=1e10)`` raised
    ``OverflowError`` from ``Lock.acquire``)."""
    checked = seconds(value, name=name, at_least=at_least, above=above, error=error)
    return TIMEOUT_MAX if checked > TIMEOUT_MAX else checked


def _timedelta(
    value: timedelta,
    name: str,
    at_least: float | None,
    above: float | None,
    error: type[Exception],
    unit: str,
    expected: str | None,
) -> float:
    """:func:`seconds` of a ``timedelta``: always finite, so only the bounds can refuse
    it; the message quotes it with its seconds (a negative one's repr reads badly)."""
    total = value.total_seconds()
    if (
        not -LONGEST <= total <= LONGEST
        or (at_least is not None and total < at_least)
        or (above is not None and total <= above)
    ):
        words = _expected(at_least, above, unit, expected, value=total)
        raise error(f"{name} {words}, got {shown(value)} ({total:g} seconds)")
    return total


def _expected(
    at_least: float | None,
    above: float | None,
    unit: str,
    expected: str | None,
    *,
    value: float,
) -> str:
    """The words after the name when ``value`` is refused: for a finite number past
    :data:`LONGEST` the limit (a site's own words name its bound, ``"takes seconds >=
    0"``, which such a number meets), else the site's own, or ``"must be finite and > 0
    seconds"``."""
    if value == value and abs(value) != math.inf and abs(value) > LONGEST:
        size = f"{LONGEST:.0f} {unit}" if unit else f"{LONGEST:.0f}"
        return f"must be within ±{size} (the span of a datetime, year 1 to 9999)"
    if expected is not None:
        return expected
    bound = _bound(at_least, above)
    if not bound:
        return "must be finite"
    return f"must be finite and {bound} {unit}" if unit else f"must be finite and {bound}"


def number(
    value: object,
    *,
    name: str,
    at_least: float | None = None,
    above: float | None = None,
    error: type[Exception] = ValidationError,
    kind: str = "a number",
) -> float:
    """``value`` if it is a finite number within the bounds, else ``error``: the rule of
    :func:`seconds` without the ``timedelta`` (not a duration: an instant, a factor), with
    messages that name no unit (``"multiplier must be finite and >= 1, got 0.5"``,
    ``"sigma must be a number, got 'wide'"``).  ``kind`` as in :func:`seconds`."""
    if isinstance(value, timedelta):
        raise error(f"{name} must be {kind}, got {shown(value)}")
    return seconds(
        value, name=name, at_least=at_least, above=above, error=error, kind=kind, unit=""
    )


WIDEST = 10**MOST_DIGITS - 1
"""The largest ``int`` (either way) a whole count takes when its caller names no upper
bound (:func:`whole`, :func:`whole_or_none`): one of :data:`~lldsched.errors.MOST_DIGITS`
digits, 640.  No count, seed or limit is that large on purpose, and what the package
keeps it shows (a policy's ``repr``, a store's JSON, a log line): ``RetryPolicy(
max_attempts=10**5000)`` was taken, and its ``repr`` raised ``ValueError: Exceeds the
limit (4300 digits) for integer string conversion``."""


def whole(
    value: object,
    *,
    name: str,
    at_least: int | None = None,
    at_most: int | None = None,
    error: type[Exception] = ValidationError,
) -> int:
    """``value`` if it is an ``int`` (not a ``bool``) ``>= at_least`` and ``<= at_most``,
    else ``error`` naming the bound it misses: ``"workers must be an int >= 1, got 0"``,
    ``"workers must be an int <= 100000, got 1000000000"``."""
    return _whole(value, name=name, at_least=at_least, at_most=at_most, error=error)


def _at_most(at_most: int | None) -> str:
    """An upper bound as the messages write it: ``"<= 100000"``, or nothing."""
    return "" if at_most is None else f"<= {at_most}"


def whole_or_none(
    value: object,
    *,
    name: str,
    at_least: int | None = None,
    at_most: int | None = None,
    error: type[Exception] = ValidationError,
) -> int | None:
    """``None``, or ``value`` if it is an ``int`` (not a ``bool``) ``>= at_least`` and
    ``<= at_most``, else ``error`` naming the bound it misses, as :func:`whole` does:
    ``"history_limit must be an int >= 0 or None, got -1"``."""
    if value is None:
        return None
    return _whole(
        value, name=name, at_least=at_least, at_most=at_most, error=error, also=" or None"
    )


def _whole(
    value: object,
    *,
    name: str,
    at_least: int | None,
    at_most: int | None,
    error: type[Exception],
    also: str = "",
) -> int:
    """The rule of :func:`whole` and :func:`whole_or_none` (``also``: what else the caller
    takes, for the message)."""
    if isinstance(value, bool) or not isinstance(value, int):
        bounds = [bound for bound in (_bound(at_least, None), _at_most(at_most)) if bound]
    elif at_least is not None and value < at_least:
        bounds = [_bound(at_least, None)]
    elif at_most is not None and value > at_most:
        bounds = [_at_most(at_most)]
    elif not -WIDEST <= value <= WIDEST:
        bounds = [f"of at most {MOST_DIGITS} digits"]
    else:
        return value
    wanted = " and ".join(bounds)
    raise error(f"{name} must be an int{' ' + wanted if wanted else ''}{also}, got {shown(value)}")


def flag(value: object, *, name: str, error: type[Exception] = ValidationError) -> bool:
    """``value`` if it is ``True`` or ``False``, else ``error``: ``"paused must be True or
    False, got 1"`` (a truthy ``1`` or ``"yes"`` is refused: it is a mistake more often
    than a choice, and ``None`` would read as ``False``)."""
    if value is not True and value is not False:
        raise error(f"{name} must be True or False, got {shown(value)}")
    return value


def shutdown_timeout(drain: object, timeout: object) -> float | None:
    """A ``shutdown()``'s (and ``aclose()``'s) arguments checked, both runtimes': ``drain``
    a :func:`flag`, ``timeout`` a wait (:func:`wait_seconds`) or ``None`` (no bound).
    Returns the timeout in seconds."""
    flag(drain, name="shutdown() drain")
    if timeout is None:
        return None
    return wait_seconds(timeout, name="shutdown() timeout")


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
        raise error(f"{name} {expected or 'must be a fraction in [0, 1]'}, got {shown(value)}")
    return value


FARTHEST = 1e15
"""The farthest instant (epoch seconds, either way) a schedule's query takes: some 31
million years from 1970, far past any a runtime computes (a datetime's range, plus the
longest period and the longest jitter), and near enough that a slot divided by the finest
step (:data:`FINEST`) stays a float.  ``FixedRate(60).first_slot_after(0, nan)`` raised
``ValueError`` from ``math.floor`` and ``first_run(10**400)`` ``OverflowError``."""


def instant(
    value: object,
    *,
    name: str,
    of: object = None,
    error: type[Exception] = ValidationError,
    within: float | None = FARTHEST,
) -> float:
    """``value`` if it is epoch seconds as a schedule's query takes them (an ``int`` or a
    ``float``, not a ``bool``, within ±:data:`FARTHEST`: NaN and ``inf`` are not), else
    ``error``: ``"FixedRate.first_run() takes epoch seconds (a float), got True"``.
    ``of``: the schedule whose query ``name`` is, its class named in the message
    (``name="first_run()", of=self``).  ``within=None`` takes any number: cron's
    searches answer ``None`` for ``±inf`` and refuse NaN in their own words.  Kept to two
    identity tests and one chained comparison for a plain float or int, and the message
    built only for a bad value: the schedules' queries run once per run and once per
    registration (a name built at every call cost a registration 1.8 %: 36,611 -> 35,950
    instructions)."""
    kind = value.__class__
    if kind is float or kind is int or (isinstance(value, int | float) and kind is not bool):
        if within is None or -within <= value <= within:  # type: ignore[operator]
            return value  # type: ignore[return-value]
        query = name if of is None else f"{type(of).__name__}.{name}"
        raise error(f"{query} takes finite epoch seconds within ±{within:g}, got {shown(value)}")
    query = name if of is None else f"{type(of).__name__}.{name}"
    hint = " (an instant: use .timestamp())" if hasattr(value, "timestamp") else ""
    raise error(f"{query} takes epoch seconds (a float), got {shown(value)}{hint}")


def call_error(function: Callable[..., object], *args: object) -> str | None:
    """Why ``function(*args)`` cannot bind (``"missing a required argument: 'x'"``, one
    wording on every Python: :func:`bind_error`), or
    None when it can or its signature cannot be read: the check of what the package
    will call later with these arguments (a simulated model's draw, an intervention, a
    listener given each event), made when it is given, not as a ``TypeError`` at each
    call."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    return bind_error(signature, args)


def bind_error(
    signature: inspect.Signature,
    args: tuple[object, ...] | list[object],
    keywords: Mapping[str, object] | None = None,
) -> str | None:
    """Why ``signature`` cannot take ``(*args, **keywords)``, or None when it can: what
    :meth:`inspect.Signature.bind` says, in one wording on every Python version.  The
    bind's words changed: a missing keyword-only argument is "missing a required
    keyword-only argument: 'key'" from 3.12 (3.11 said "missing a required argument:
    'key'"); a positional-only parameter passed by keyword is "got some positional-only
    arguments passed as keyword arguments: 'a, b'" from 3.13, as the call itself says on
    all of them (3.11 and 3.12's bind: "'a' parameter is positional only, but was passed
    as a keyword").  And Python 3.13.0's bind took ``f(a=1)`` for ``def f(a, /, **kw)``,
    which the call refuses: the keyword goes to ``**kw`` and ``a`` is missing."""
    parameters = signature.parameters
    if keywords:
        by_position = [
            name
            for name in keywords
            if (parameter := parameters.get(name)) is not None
            and parameter.kind is parameter.POSITIONAL_ONLY
        ]
        if by_position:
            if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
                named = ", ".join(by_position)
                return f"got some positional-only arguments passed as keyword arguments: {named!r}"
            # They go to **kw: bind without them, as the call would fill the parameters
            keywords = {name: keywords[name] for name in keywords if name not in by_position}
    try:
        signature.bind(*args, **(keywords or {}))
    except TypeError as exc:
        said = str(exc)
        missing = said.removeprefix("missing a required argument: ")
        if missing != said:
            parameter = parameters.get(missing[1:-1])  # a name's repr: 'key'
            if parameter is not None and parameter.kind is parameter.KEYWORD_ONLY:
                return f"missing a required keyword-only argument: {missing}"
        return said
    return None


def instance_hint(value: object) -> str:
    """What a message adds when ``value`` is a class given where an instance of it goes
    (``store=InMemoryTaskStore``, ``clock=FakeClock``, ``listeners=[EventLog]``,
    ``retry=RetryPolicy``: the parentheses forgotten): ``" (a class: pass an instance,
    InMemoryTaskStore())"``, or ``SqliteTaskStore(...)`` for a class that needs
    arguments; nothing for any other value.  A protocol (``listeners=[TaskListener]``,
    ``clock=Clock``) or an abstract class has no instance to pass: the hint says to pass
    one of a class that implements it (it said ``TaskListener()``, which raises
    ``TypeError: Protocols cannot be instantiated``).  Only a refusal asks."""
    if not isinstance(value, type):
        return ""
    # typing sets _is_protocol on a Protocol itself, not on a class that subclasses one
    # to implement it (typing.is_protocol is Python 3.13's name for the same test).
    if getattr(value, "_is_protocol", False) is True:
        return (
            " (a protocol, which has no instances: pass an instance of a class that "
            f"implements {value.__name__})"
        )
    if inspect.isabstract(value):
        missing = ", ".join(sorted(value.__abstractmethods__))  # type: ignore[attr-defined]
        return (
            " (an abstract class, which has no instances: pass an instance of a subclass "
            f"that implements {missing})"
        )
    arguments = "" if call_error(value) is None else "..."
    return f" (a class: pass an instance, {value.__name__}({arguments}))"


def id_hint(value: object) -> str:
    """What a message adds when ``value``, given where a task id goes, is no ``str`` but
    holds one: the task ``schedule()`` returned (``scheduler.cancel(task)``), a store's
    ``Task``, an event or a record: ``" (not an id but what holds one: pass its .id,
    'task-1')"``; nothing for any other value.  Only a refusal asks."""
    if isinstance(value, str):
        return ""
    for attribute in ("id", "task_id"):
        try:
            held = getattr(value, attribute, None)
        except Exception:  # a property that raises: no hint, the message stands
            return ""
        if isinstance(held, str):
            return f" (not an id but what holds one: pass its .{attribute}, {shown(held)})"
    return ""
