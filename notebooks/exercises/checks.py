"""The checks behind the exercises, and the timer exercise's checker.

Each exercise has a list of named checks.  :func:`run_checks` runs them against
an answer and returns one :class:`Result` per check; the ``check_*`` functions
the notebooks call print those results, one line each, and never raise, so a
half-written answer shows where it stands.  ``tests/test_exercise_checkers.py``
runs the same checks against known-wrong answers (each must fail, with a
message that names the mistake) and against the reference answers (all pass).

**The timer exercise** (notebook 07, minutes 14-24): a ``TaskQueue(clock)`` with
``push(task, due)``, ``cancel(task)`` and a blocking ``pop_due()``, on one
``threading.Condition``.  The checker drives it with real threads and a clock it
controls (:class:`ExerciseClock`: its own epoch, and a count of every read), and
watches the queue's Condition (:class:`WatchedCondition` counts waits and
notifies, keeps each wait's timeout, and lets the checker wake the waiters when
nobody asked: a spurious wake-up).  Every wait in here is bounded; a consumer that
never returns is left parked on a daemon thread after the check pushes it something
to take, and a push or cancel the checker makes while a consumer may hold the lock
runs on a daemon thread too, bounded by :data:`HELD` (a ``pop_due`` that sleeps
holding the lock is told so instead of hanging the notebook), and so do the pushes that
fill a queue before its consumers start (a push that waits is told so) and the queue's
constructor (one that deadlocks is told so).  The checks of
the pure functions (``next_slot``, ``retry_at``, ``runs_after_resume``, ``parse_field``)
run each on a daemon
thread, and each call to the answer gets :data:`ANSWER_LIMIT` seconds (see
:func:`run_checks`).  The whole check
takes about two seconds for a correct answer, and a few seconds for any.  A check
whose scenario needs a head not yet due when the queue sees it runs it again on a fresh
queue when the machine was too slow for that (:func:`tried`), and says so after
:data:`TRIES` tries instead of a pass or a blame.
"""

from __future__ import annotations

import builtins
import ctypes
import datetime
import decimal
import gc
import importlib.util
import inspect
import itertools
import math
import numbers
import os
import queue
import random
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from types import TracebackType
from typing import Any, NamedTuple

import lldsched
from exercises import printed

__all__ = [
    "ANSWER_LIMIT",
    "LIMIT_AGAIN",
    "TWICE",
    "ExerciseClock",
    "OutOfTime",
    "Raised",
    "Result",
    "Taken",
    "WatchedCondition",
    "as_number",
    "asked_again",
    "call_answer",
    "check_answer",
    "check_task_queue",
    "check_wakes_for_a_push",
    "print_results",
    "run_checks",
    "shown_apart",
    "timer_checks",
    "unlike_a_number",
]

Check = tuple[str, Callable[[], None]]


class Result(NamedTuple):
    """One check: what it checks, whether the answer passed, and what went wrong."""

    description: str
    passed: bool
    message: str = ""


def run_checks(checks: list[Check], limit: float | None = None) -> list[Result]:
    """Run each check; an ``AssertionError`` is a failure with its message, any other
    exception is the answer's own error, reported as such.

    With a ``limit``, each check runs on a daemon thread, and each call it makes to the
    answer (see :func:`call_answer`) gets ``limit`` seconds, and so does each stretch of
    the check's own code before, between and after them: a call still running then (the
    answer loops for ever) is a failure naming that call, and is stopped if it runs
    Python code.  The limit is counted from the start of each call, not of the check, so
    the calls before it (slow on a loaded machine) never make a right answer look stuck,
    and the call named is the one that ran for the whole limit.  Once a check has run
    out of time, each check after it gets :data:`LIMIT_AGAIN` (when that is shorter): an
    answer that loops for ever on every input kept its cell busy ``limit`` seconds a
    check, 35 s for the seven overrun checks.  The timer checks bound every wait of their
    own and run without one.

    An answer that goes on running after it was stopped (it caught the stop: a bare
    ``except:`` or ``except BaseException:`` around its loop) cannot be stopped again:
    its thread runs on in the learner's kernel, so the checks after it are not run
    (:class:`StillRunning`, :data:`NOT_RUN`), each of which would leave one more.

    A check during which a name it reads changed (the answer replaced a reference answer,
    ``FixedRate.next_run`` or ``abs``) fails naming it, and it is put back (:class:`_Kept`).
    """
    results = []
    for description, check in checks:
        kept = _Kept()
        try:
            if limit is None:
                check()
            else:
                _within(check, limit)
        except StillRunning as failure:  # every later check would leave one more
            results.append(Result(description, False, str(failure)))
            results.extend(Result(later, False, NOT_RUN) for later, _ in checks[len(results) :])
            kept.put_back()
            return results
        except OutOfTime as failure:
            result = Result(description, False, str(failure))
            if limit is not None:  # (always: only a limit runs out)
                limit = min(limit, LIMIT_AGAIN)
        except AssertionError as failure:
            result = Result(description, False, str(failure))
        except (Exception, SystemExit) as error:  # the learner's code raised: report it
            result = Result(description, False, f"raised {type(error).__name__}: {error}")
        else:
            result = Result(description, True)
        replaced = kept.put_back()
        if replaced:
            result = Result(description, False, f"{', '.join(replaced)} {REPLACED}")
        results.append(result)
    return results


REPLACED = (
    "changed while the check ran (put back now): the check reads it, and what it says "
    "with a replacement proves nothing; leave lldsched and the checker as they are (a "
    "mock.patch belongs in a test of your own, inside its `with`)"
)

_MISSING = object()


class _Kept:
    """What the checks read, as it was when a check began: every name of the checker's
    modules and of the classes they define, of lldsched's classes, functions and modules
    they import, and the names their code reads of the standard modules they import and
    of ``builtins``.  An answer that replaced one (a reference answer, ``FixedRate.
    next_run``, ``abs``) would have the check compare with the replacement: the check
    fails, naming it, and :meth:`put_back` restores it.  A name added is counted only
    where it shadows a builtin (a lazy import adds names to a package, harmlessly)."""

    def __init__(self) -> None:
        self.kept = [
            (label, owner, names, dict(vars(owner)) if names is None else _some(owner, names))
            for label, owner, names in _relied_on()
        ]

    def put_back(self) -> list[str]:
        """The names changed since the check began (``module.name``), each restored."""
        replaced = []
        for label, owner, names, before in self.kept:
            now = vars(owner) if names is None else _some(owner, names)
            if now == before:  # the usual case, at C speed
                continue
            for name, value in before.items():
                if now.get(name, _MISSING) is not value:
                    replaced.append(f"{label}.{name}")
                    if value is _MISSING:
                        delattr(owner, name)
                    else:
                        setattr(owner, name, value)
            if names is None and not isinstance(owner, type):  # a module: a builtin shadowed
                for name in [n for n in now if n not in before and n in _BUILTINS]:
                    replaced.append(f"{label}.{name}")
                    delattr(owner, name)
        return replaced


_BUILTINS = vars(builtins)


def _some(owner: object, names: frozenset[str]) -> dict[str, object]:
    space = vars(owner)
    return {name: space.get(name, _MISSING) for name in names}


# What _relied_on found, by checker module: it is worked out once for each.
_RELIED_ON: dict[str, list[tuple[str, object, frozenset[str] | None]]] = {}


def _relied_on() -> list[tuple[str, object, frozenset[str] | None]]:
    """(label, owner, names: None for all) of everything :class:`_Kept` keeps."""
    found: dict[int, tuple[str, object, frozenset[str] | None]] = {}
    for name in [_PACKAGE, *(f"{_PACKAGE}.{module}" for module in _MODULES)]:
        module = sys.modules.get(name)
        if module is not None:
            if name not in _RELIED_ON:
                _RELIED_ON[name] = _read_by(name, module)
            for entry in _RELIED_ON[name]:
                found.setdefault(id(entry[1]), entry)
    return list(found.values())


def _read_by(name: str, module: Any) -> list[tuple[str, object, frozenset[str] | None]]:
    """What checker module ``module`` reads (see :class:`_Kept`)."""
    read: set[str] = set()
    codes = [value.__code__ for value in vars(module).values() if inspect.isfunction(value)]
    codes += [
        member.__code__
        for value in vars(module).values()
        if inspect.isclass(value) and value.__module__ == name
        for member in vars(value).values()
        if inspect.isfunction(member)
    ]
    while codes:
        code = codes.pop()
        read.update(code.co_names)
        codes.extend(c for c in code.co_consts if inspect.iscode(c))
    entries: list[tuple[str, object, frozenset[str] | None]] = [(name, module, None)]
    entries.append(("builtins", builtins, frozenset(read & _BUILTINS.keys())))
    for value in vars(module).values():
        home = getattr(value, "__module__", None) or ""
        if inspect.ismodule(value) and value is not builtins:
            path = os.path.abspath(getattr(value, "__file__", None) or os.devnull)
            if not path.startswith((_CHECKER, _LIBRARY)):  # the standard library's
                names = frozenset(read & vars(value).keys())
                entries.append((value.__name__, value, names))
                entries += [
                    (f"{value.__name__}.{member.__qualname__}", member, None)
                    for member in (getattr(value, n) for n in names)
                    if inspect.isclass(member) and member.__module__ == value.__name__
                ]
        elif home == name or home == "lldsched" or home.startswith("lldsched."):
            if inspect.isclass(value):
                entries.append((f"{home}.{value.__qualname__}", value, None))
            if home != name and home in sys.modules:
                entries.append((home, sys.modules[home], None))
    return entries


def _real_monotonic() -> Callable[[], float]:
    """``time.monotonic`` as the interpreter made it, whatever a cell did to it: the
    function of a fresh copy of the ``time`` module (a module of C code, built anew from
    its spec, shares nothing with ``sys.modules["time"]``).  An earlier cell that froze
    ``time.monotonic`` (``time.monotonic = lambda: 0.0``, a ``mock.patch`` never stopped),
    even before the checker was imported, would otherwise freeze the checker's own
    clocks: the limit of each call to an answer (an answer that loops for ever was never
    stopped) and the timer checks' :class:`ExerciseClock` (a right queue failed)."""
    spec = importlib.util.find_spec("time")
    if spec is None:  # no spec to build a copy from: the module's own (never seen here)
        return time.monotonic
    clock: Callable[[], float] = importlib.util.module_from_spec(spec).monotonic
    return clock


_monotonic = _real_monotonic()
"""The checker's clock for its limits and its timer checks, taken at import (see
:func:`_real_monotonic`): never the ``time.monotonic`` a learner's cell replaced."""


ANSWER_LIMIT = 5.0
"""Seconds each call a check makes to a pure function (next_slot, retry_at,
runs_after_resume, parse_field)
may take: a right answer takes a millisecond or less a call, on a slow Binder too."""

LIMIT_AGAIN = 1.0
"""Seconds each call gets in the checks after one that ran out of time (see
:func:`run_checks`): still a thousand times what a right answer takes a call."""


class OutOfTime(AssertionError):
    """A check whose call to the answer, or whose own code, ran out of its limit."""


class StillRunning(OutOfTime):
    """A check whose call to the answer ran out of its limit and went on running after
    it was stopped: the answer caught the stop (see :func:`_within`)."""


CAUGHT = (
    "and it goes on running after the checker stopped it: it caught the stop (a bare "
    "`except:` or `except BaseException:` takes it, as it takes Ctrl-C; catch "
    "`Exception`, or the errors you mean). It still runs on a thread of this kernel, "
    "using a core: restart the kernel (Kernel > Restart) to end it"
)

NOT_RUN = (
    "not run: a call of an earlier check is still running (it caught the checker's stop, "
    "see above), and each check would leave one more"
)

_CAUGHT_GRACE = 1.0
"""Seconds :func:`_within` gives a check's thread whose stop landed to leave the answer's
call, before it says the answer caught the stop: the stop's way out (the answer's
``finally`` blocks, the checker's own lines) takes far less, on a loaded machine too."""


class _Stopped(BaseException):
    """Raised inside a check's thread that outran its limit, to end its loop (see
    :class:`_Stop`, whose own subclass it is raised as).  A ``BaseException``, as
    ``KeyboardInterrupt`` is: neither :func:`call_answer` nor an answer's ``except
    Exception`` takes it for an error and goes on (a check that catches the answer's
    errors then called it again, to loop for ever on a thread nobody would stop again)."""

    stop: _Stop | None = None

    def __init__(self, *args: object) -> None:  # run where it lands (a handler takes it)
        super().__init__(*args)
        if self.stop is not None:
            self.stop.landed = True


_STOPPING = 0.1
"""Seconds :func:`_within` waits for a check's thread it stopped to end: one stopped in a
Python loop ends at once; one in a blocking call (a wait with no timeout) ends only when
that returns, and is left behind (a daemon thread, silent when it ends)."""


class _Stop:
    """Where a check's thread is, for :func:`_within` to stop it only inside the check.

    The stop is an exception raised in the thread (``PyThreadState_SetAsyncExc``): it
    lands at whatever line the thread runs next.  Raised as the thread was about to begin
    the check, or had just returned from it, it landed outside the thread's handler and
    threading's excepthook printed it (a ``PytestUnhandledThreadExceptionWarning`` in a
    parallel test run).  So the thread says, under :attr:`lock`, when it begins and when it
    ends the check (:meth:`begin`, :meth:`end`), and the checker raises the exception
    only between the two (:meth:`stop`): before, the check is called off and never begins;
    after, there is nothing to stop.  A stop raised that has not landed yet (the thread
    was in C code, which returned) lands in :meth:`end`, still inside the handler: it
    cannot be taken back (``PyThreadState_SetAsyncExc`` with NULL leaves CPython 3.11's
    signal of it set, and the next thread started hung, holding the GIL)."""

    def __init__(self) -> None:
        # Guards state: the check's thread begins and ends the check, and the checker
        # stops it, under it, so a stop is raised only while the check runs
        self.lock = threading.Lock()
        self.state = "before"  # then "running", then "returned" or "stopped"; or "called off"
        self.landed = False  # the stop raised in the thread has landed there
        self.exception = type("_Stopped", (_Stopped,), {"stop": self})

    def begin(self) -> bool:
        """On the check's thread: whether it may begin the check (not called off)."""
        with self.lock:
            if self.state == "called off":
                return False
            self.state = "running"
            return True

    def end(self) -> None:
        """On the check's thread, as the check returns or raises: no stop lands after this."""
        with self.lock:
            pending = self.state == "stopped"
            self.state = "returned"
        # It lands at the loop's first turn; bounded all the same, for a stop that landed
        # where C code dropped it unseen (a lookup that clears any error)
        until = _monotonic() + _STOPPING
        while pending and not self.landed and _monotonic() < until:
            pass

    def stop(self, thread: threading.Thread) -> bool:
        """On the checker's thread, at the limit: stop the check if it runs (and say so),
        call it off if it has not begun."""
        with self.lock:
            if self.state == "before":
                self.state = "called off"
            ident = thread.ident  # set once started: a thread running the check has one
            if self.state != "running" or ident is None:
                return False
            self.state = "stopped"
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(ident), ctypes.py_object(self.exception)
            )
            return True


# By check thread: the watch of the call to the answer it is in, if any, from before
# anything of it goes on until all of it is off (see _watch and _unwatch).
_WATCHING: dict[threading.Thread, _Watch] = {}

# By check thread: the call to the answer it is in ("" between calls) and the
# _monotonic() that call began at (or the last one ended at).  The thread writes its
# own entry, _within reads it; each entry is one tuple replaced whole, so no lock.  By
# thread, so that a stopped check's thread, ending later, cannot touch the next one's.
_CALLING: dict[threading.Thread, tuple[str, float]] = {}


class Raised(AssertionError):
    """The failure of a call to the answer that raised (its message names the call):
    ``error`` is what it raised, for a checker that can say more once it knows what the
    right answer was (a ``retry_at`` that raises where it should return None)."""

    def __init__(self, message: str, error: BaseException) -> None:
        super().__init__(message)
        self.error = error


class AsyncAnswer(AssertionError):
    """A call to the answer returned a coroutine (see :data:`ASYNC_DEF`)."""


class Taken(list[Any]):
    """What an answer's iterator (a generator) yielded, taken by :func:`call_answer`:
    ``kind`` is the iterator's type (``"generator"``), and ``more`` whether it had more
    to give than was taken."""

    kind = "iterator"
    more = False


def call_answer(
    call: str,
    answer: Callable[..., Any],
    *args: Any,
    passes: tuple[type[Exception], ...] = (),
    take: int = 0,
) -> Any:
    """``answer(*args)``, where ``call`` (how it reads: ``next_slot(0, 60, 5, 'skip')``)
    names it in the failure when it raises (any exception but those in ``passes``), never
    returns, sleeps, or asks lldsched or this checker for its answer (see :class:`_Watch`),
    on its own thread or on one it starts, or turns that watch off.

    With ``take``, an iterator the answer returns (a generator, ``map(...)``) is iterated
    here, as part of the call, for at most ``take`` items: a generator's body runs only
    as it is iterated, and it is the answer's code, watched and timed as the rest of it.
    Those items come back as a :class:`Taken` list."""
    watch = _Watch(sys.getprofile())
    told: tuple[type[BaseException], ...] = (*passes, AsyncAnswer)  # re-raised as they are
    thread = threading.current_thread()
    _CALLING[thread] = (call, _monotonic())
    try:
        try:
            _watch(watch)
            sys.setprofile(watch)
            got = answer(*args)
            if inspect.iscoroutine(got):  # closed: never awaited, and no warning of it
                got.close()
                raise AsyncAnswer(f"{call} returned a coroutine: it {ASYNC_DEF}")
            if take and isinstance(got, Iterator):
                taken = Taken(itertools.islice(got, take))
                taken.kind = type(got).__name__
                taken.more = len(taken) == take and next(got, _MISSING) is not _MISSING
                # Closed here, inside the call: a generator's finally blocks are the
                # answer's code.  Dropped, it was closed by the collector, where what they
                # raised (the stop, at the limit) is printed and lost: "Exception ignored
                # in: <generator object ...>", and the check went on.
                close = getattr(got, "close", None)
                if close is not None:
                    close()
                got = taken
        finally:
            # Turned off by a way the watch cannot see; but CPython also drops a profile
            # function that raises, as the watch does at the recursion limit: that is
            # the answer's recursion, reported as such below.
            recursed = sys.getprofile() is None and _recursion(sys.exc_info()[1]) is not None
            if sys.getprofile() is not watch and not recursed:
                watch.unhooked = watch.unhooked or "sys.setprofile"
            sys.setprofile(watch.previous)  # first: the watch would see _unwatch called
            _unwatch()  # (a stop that lands in it leaves the rest to _within's thread)
            _CALLING[thread] = ("", _monotonic())
    except told:
        watch.refuse(call)
        raise
    except (Exception, SystemExit) as error:  # the learner's code raised: name the input
        watch.refuse(call)  # (sys.exit() too: it would end the whole check, or the kernel)
        recursion = _recursion(error)
        if recursion is not None:
            message = f"{call} raised RecursionError: {recursion}: {RECURSES}"
            raise Raised(message, recursion) from None
        raise Raised(f"{call} raised {type(error).__name__}: {error}", error) from None
    watch.refuse(call)
    return got


def _recursion(error: BaseException | None) -> RecursionError | None:
    """The RecursionError ``error`` is, or the one CPython wrapped in the SystemError it
    raises when the recursion limit strikes inside the watch (a profile function)."""
    if isinstance(error, SystemError):
        error = error.__cause__ or error.__context__
    return error if isinstance(error, RecursionError) else None


RECURSES = (
    "a function that calls itself deeper than Python allows (sys.getrecursionlimit(), "
    "about 1,000 calls): either it never reaches a case that returns without calling "
    "itself again, or it calls itself once per step of a count in the thousands (this "
    "call's input), which a recursion cannot go through in Python: write those steps as "
    "a loop"
)
"""Said of an answer that raised RecursionError: a recursion without end, or a right
recursion one call deep per attempt, which ``retry_at(5000, ...)`` takes past the limit
(it was told it never reached a case that returns, which it does)."""


TWICE = (
    "the same call has one answer; leave out any random part (jitter) and keep nothing "
    "from one call to the next"
)


def asked_again(
    call: str,
    answer: Callable[..., Any],
    args: Sequence[Any],
    got: Any,
    plain: Callable[[Any], Any],
    shown: Callable[[Any], str],
    take: int = 0,
) -> None:
    """Ask the answer the same ``call`` again (once its first answer, ``got`` made
    ``plain``, turned out wrong), and fail naming both answers if the second is another:
    a random or stateful answer is told that, not a mistake in the rule it was never
    going to answer the same twice."""
    again = plain(call_answer(call, answer, *args, take=take))
    if again != got:
        raise AssertionError(f"{call} returned {shown(got)}, then {shown(again)}: {TWICE}")


def as_number(value: object) -> int | float | None:
    """``value`` as a plain ``int`` or ``float`` when it is a number a right answer may
    return, else None (:func:`unlike_a_number` says why).

    Taken: an ``int`` or a ``float`` (a subclass too), a ``Fraction``, a ``Decimal``, a
    numpy integer, a numpy float of 64 bits or more, and a numpy array of no dimension
    holding one (``numpy.asarray(x)``).  Refused: a ``bool`` (numpy's too), NaN, a
    numpy float of fewer than 64 bits (a float32 keeps 7 significant digits: an instant
    of 1.7e9 s since 1970 is off by up to a minute), and anything that is no real
    number (a ``datetime``, a ``timedelta``, a ``str``, a complex number, a generator, a
    collection).  The checks compare the plain number: a subclass's own ``__eq__`` or
    ``__sub__`` cannot answer for it."""
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        value = value[()]  # type: ignore[index]  # a 0-d array's scalar (a scalar's self)
    if isinstance(value, bool) or _too_coarse(value):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, decimal.Decimal) and value.is_nan():  # float() refuses a signaling one
        return None
    if isinstance(value, numbers.Real | decimal.Decimal):
        number = float(value)
        return None if math.isnan(number) else number
    return None


def _too_coarse(value: object) -> bool:
    """Whether ``value`` is a numpy float of fewer than 64 bits (float16, float32)."""
    return (
        type(value).__module__ == "numpy"
        and isinstance(value, numbers.Real)
        and not isinstance(value, numbers.Integral)
        and getattr(value, "itemsize", 8) < 8
    )


def unlike_a_number(value: object) -> str:
    """Why :func:`as_number` refused ``value``, a phrase to follow "returned x, " (what
    to return instead is the caller's to say)."""
    kind = type(value).__name__
    if isinstance(value, bool) or kind in ("bool", "bool_"):
        return "a bool, which is no instant"
    if _too_coarse(value):
        return (
            f"a numpy.{kind}, which keeps about {7 if kind == 'float32' else 3} significant "
            "digits: too few for an instant (1.7e9 s since 1970 would be off by minutes; a "
            "float keeps 15)"
        )
    if isinstance(value, datetime.datetime | datetime.date):
        return f"a {kind}: the instants here are seconds, numbers as the arguments are"
    if isinstance(value, datetime.timedelta):
        return (
            "a timedelta, a length of time: the instants here are seconds, numbers as the "
            "arguments are"
        )
    if isinstance(value, str | bytes):
        return f"a {kind}: the number's text, not the number"
    if isinstance(value, numbers.Real | decimal.Decimal):  # what as_number refuses: NaN
        return "not a number (an inf - inf or a 0 * inf on the way?)"
    if isinstance(value, numbers.Number):
        return f"a {kind} number, not a real one"
    if kind == "generator":
        return "a generator: a `yield` makes the function a generator, not a value"
    if isinstance(value, Iterator):
        return f"a {kind} iterator, not a number"
    if isinstance(value, Iterable):
        return f"a {kind}, a collection where one number is due"
    return f"a {kind}, not a number"


def shown_apart(expected: float, got: float) -> tuple[str, str]:
    """``expected`` and ``got`` written with as few significant digits (6 at least) as
    tell them apart: "expected 1962.18, got 1962.18" said nothing."""
    for digits in (6, 9, 12, 15):
        first, second = f"{expected:.{digits}g}", f"{got:.{digits}g}"
        if first != second:
            return first, second
    return repr(expected), repr(got)


_LIBRARY = os.path.dirname(os.path.abspath(lldsched.__file__)) + os.sep
_CHECKER = os.path.dirname(os.path.abspath(__file__)) + os.sep
_REFERENCE_ANSWERS = os.path.join(_CHECKER, "solutions") + os.sep
# The checker's modules, whose names _Kept keeps: exercises.checks, ...
_PACKAGE = __name__.rpartition(".")[0] or __name__  # "exercises"
_MODULES = sorted(
    file.removesuffix(".py")
    for file in os.listdir(_CHECKER)
    if file.endswith(".py") and file != "__init__.py"
)


SLEEPS = (
    "the exercise computes an instant and waits for nothing (the scheduler's timer does "
    "the waiting, until the instant you return)"
)


_SLEEP = time.sleep  # the real one: an earlier cell may have wrapped time.sleep since
# What turns a profile function off: sys's (C functions, seen as calls of that function),
# threading's (Python functions, seen by their code).
_SETS_THE_PROFILE = tuple(
    f for f in (sys.setprofile, getattr(sys, "_setprofileallthreads", None)) if f is not None
)
_SETS_THREADS_PROFILE = tuple(
    f.__code__
    for f in (threading.setprofile, getattr(threading, "setprofile_all_threads", None))
    if f is not None
)
_THREAD_START = threading.Thread.start.__code__

UNHOOKED = (
    "which turns off the profile function the checker watches your answer with (to see "
    "that it asks neither lldsched nor the checker, and sleeps nowhere), so your answer "
    "cannot be checked; leave sys.setprofile and threading.setprofile alone"
)


class _Watch:
    """A profile function (``sys.setprofile``) for one call to the answer: it keeps the
    module of the first function of lldsched or of the checker that the answer called
    (``asked``), and whether it called ``time.sleep`` (``sleeping``: in it now, ``slept``:
    ever).  Each pure exercise is checked against lldsched (``FixedRate.next_run``,
    ``RetryPolicy``, its cron parser, its ``Scheduler``), so an answer that asks them
    agrees with every check and shows nothing of what the learner knows.  The reference
    answers (``%load``-ed, or imported from ``exercises.solutions``) are the learner's to
    use.  A sleep makes a right value slow, never right: a retry that "waits its backoff"
    passed every check it had time for.

    A thread the answer starts (``Thread.start``, a ``ThreadPoolExecutor``'s too) is
    watched as well, from its first instruction (``threading.setprofile``: see
    :func:`_watch`) until the answer returns; a thread anyone else starts is not.
    What the garbage collector runs while it collects on a watched thread (a weak
    reference's callback, a ``__del__``: lldsched's, of objects an earlier cell dropped) is
    nobody's call, and is not counted (``collecting``, set by :func:`_collecting`).  An
    answer that calls ``sys.setprofile`` or ``threading.setprofile`` (``unhooked``) turns
    the watch off, and fails for that."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous  # the thread's profile function before the call
        self.asked: str | None = None
        self.sleeping = self.slept = False
        self.unhooked: str | None = None  # the function that turned the watch off, if any
        self.active = True  # until the answer returns
        self.started: list[threading.Thread] = []  # threads the answer started
        self.collecting: set[int] = set()  # threads whose garbage collection runs now
        self._whose: dict[str, str | None] = {}  # by code file: "lldsched's own", ... or None

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if self.collecting and threading.get_ident() in self.collecting:
            return
        if not self.active:  # a thread the answer started, still running after it returned
            sys.setprofile(None)
            return
        if event != "call":
            if arg is _SLEEP:
                self.sleeping = event == "c_call"
                self.slept = True
            elif event == "c_call" and arg in _SETS_THE_PROFILE and frame.f_globals is not _OURS:
                self.unhooked = self.unhooked or f"{arg.__module__}.{arg.__name__}"
            return
        code = frame.f_code
        if code is _THREAD_START:
            _started_by(frame.f_locals.get("self"), self)
            return
        if code in _SETS_THREADS_PROFILE:
            self.unhooked = self.unhooked or f"threading.{code.co_name}"
            return
        if self.asked is not None or code is _COLLECTING or code in printed.QUIET_CODES:
            return
        whose = self._whose.get(code.co_filename, "")
        if whose == "":
            path = os.path.abspath(code.co_filename)
            whose = (
                "lldsched's own"
                if path.startswith(_LIBRARY)
                else "the checker's own"
                if path.startswith(_CHECKER) and not path.startswith(_REFERENCE_ANSWERS)
                else None
            )
            self._whose[code.co_filename] = whose
        if whose is not None:  # the module, not the function: it may be a wrapper's
            self.asked = f"into {frame.f_globals.get('__name__', code.co_filename)}, {whose} code"

    def refuse(self, call: str) -> None:
        """Fail the check when the answer turned the watch off, slept, or asked lldsched
        or the checker."""
        if self.unhooked is not None:
            raise AssertionError(f"{call} called {self.unhooked}, {UNHOOKED}")
        if self.slept:
            raise AssertionError(f"{call} called time.sleep: {SLEEPS}")
        if self.asked is not None:
            raise AssertionError(
                f"{call} called {self.asked}: the check compares your answer with "
                "lldsched's own, so an answer that asks lldsched (or the checker) agrees "
                "with it and shows nothing; write the rule yourself, in plain Python"
            )


_OURS = globals()  # this module's frames turn the watch on and off: not the answer

# By thread the answer started and that has not run yet: its watch.
_STARTED: dict[threading.Thread, _Watch] = {}
# Whether threading's profile function and the collector's callback are the checker's
# (while any call to an answer runs), and threading's profile function before them.
_THREADS_WATCHED: list[Any] = [False, None]
_THREADS_LOCK = threading.Lock()


def _started_by(thread: object, watch: _Watch) -> None:
    """Note that the watched answer starts ``thread`` (its ``Thread.start`` runs)."""
    if isinstance(thread, threading.Thread):
        watch.started.append(thread)
        _STARTED[thread] = watch


def _first_event(frame: Any, event: str, arg: Any) -> None:
    """The profile function of every thread started while an answer runs (threading's):
    a thread the answer started gets its watch; any other, the profile function it would
    have had."""
    watch = _STARTED.pop(threading.current_thread(), None)
    if watch is None or not watch.active:
        sys.setprofile(_THREADS_WATCHED[1])
        return
    sys.setprofile(watch)
    watch(frame, event, arg)


def _watch(watch: _Watch) -> None:
    """A call to the answer starts on this thread, watched by ``watch``: the first of the
    calls running puts :func:`_first_event` on every thread started from then on, and the
    collector's callback on (:func:`_collecting`); :func:`_unwatch` takes them off."""
    with _THREADS_LOCK:
        _WATCHING[threading.current_thread()] = watch  # first: _unwatch finds what is on
        if not _THREADS_WATCHED[0]:
            _THREADS_WATCHED[1] = threading.getprofile()
            _THREADS_WATCHED[0] = True
            threading.setprofile(_first_event)
            gc.callbacks.append(_collecting)


def _unwatch() -> None:
    """The call to the answer on this thread ends: its watch is taken off the thread and
    the threads it started, and, once no call runs, threading's profile function and the
    collector's callback are put back as they were.

    A stop (:class:`_Stop`) lands wherever the thread is, in the checker's own lines too:
    one that landed as the call put its watch on or took it off left threading's profile
    function on, for every thread the learner's kernel started after it.  So the check's
    thread calls this again as it ends, where no stop lands (:func:`_within`): whatever is
    still on is taken off then, and what is off already is left alone."""
    thread = threading.current_thread()
    with _THREADS_LOCK:
        watch = _WATCHING.get(thread)
        if watch is not None:
            sys.setprofile(watch.previous)
            watch.active = False  # a thread the answer started stops being watched
            for started in watch.started:
                _STARTED.pop(started, None)
            del _WATCHING[thread]
        if _THREADS_WATCHED[0] and not _WATCHING:
            threading.setprofile(_THREADS_WATCHED[1])
            if _collecting in gc.callbacks:  # (an answer may have emptied the list)
                gc.callbacks.remove(_collecting)
            _THREADS_WATCHED[0] = False


def _collecting(phase: str, info: Mapping[str, int]) -> None:
    """A ``gc.callbacks`` function: the garbage collector starts or stops on this thread;
    if the thread is watched, what it runs meanwhile is not the answer's call."""
    watch = sys.getprofile()
    if isinstance(watch, _Watch):
        if phase == "start":
            watch.collecting.add(threading.get_ident())
        else:
            watch.collecting.discard(threading.get_ident())


_COLLECTING = _collecting.__code__


def _within(check: Callable[[], None], limit: float) -> None:
    """Run ``check`` on a daemon thread until one call to the answer, or one stretch
    between calls, has run ``limit`` seconds; re-raise what it raised, or fail naming the
    call it is stuck in."""
    raised: list[BaseException] = []
    stop = _Stop()

    def run() -> None:
        try:
            if stop.begin():  # (not once the limit ran out: called off)
                try:
                    check()
                finally:
                    stop.end()  # no _Stopped lands after this
        except _Stopped:  # (landed before the end: the check's finally blocks ran)
            pass
        except BaseException as error:  # re-raised below, on the caller's thread
            raised.append(error)
        finally:
            _CALLING.pop(threading.current_thread(), None)
            _unwatch()  # what a stop that landed in call_answer's own lines left on

    started = _monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    while True:
        stuck, since = _CALLING.get(thread, ("", started))
        left = since + limit - _monotonic()
        if left <= 0:
            break
        thread.join(left)
        if not thread.is_alive():
            break
    if thread.is_alive():
        stopped = stop.stop(thread)  # a Python loop ends; a blocking call ends it later
        where = f"{stuck} " if stuck else ""
        watch = _WATCHING.get(thread)
        asleep = watch is not None and watch.sleeping
        # Ended before this returns, unless it is stuck in a blocking call: not stopped, it
        # had not begun the check (called off) or had returned from it
        thread.join((0 if asleep else _STOPPING) if stopped else None)
        why = (
            f"it is asleep in time.sleep; {SLEEPS}"
            if asleep
            else "a loop that never ends (a `while` whose condition never changes, a "
            "step that does not move) or a wait with no timeout"
        )
        if stopped and not asleep and _caught(stop, thread, stuck):
            raise StillRunning(f"{where}did not return within {limit:g} s: {why}; {CAUGHT}")
        raise OutOfTime(f"{where}did not return within {limit:g} s: {why}")
    if raised:
        raise raised[0]


def _caught(stop: _Stop, thread: threading.Thread, stuck: str) -> bool:
    """Whether the answer caught the stop that landed in ``thread``: within
    :data:`_CAUGHT_GRACE` the thread neither ended nor left the call it was stopped in
    (``stuck``; :data:`_CALLING`)."""
    until = _monotonic() + _CAUGHT_GRACE
    while thread.is_alive() and _CALLING.get(thread, ("", 0.0))[0] == stuck:
        if stop.landed and _monotonic() >= until:
            return True
        thread.join(_STOPPING)
        if _monotonic() >= until and not stop.landed:  # in C code: a blocking call
            return False
    return False


def print_results(results: list[Result]) -> None:
    """One line per check, then the count; one line in all for an answer not yet written,
    and for one that fails every check with the same error (a constructor or function
    whose parameters are not the exercise's: the first such message, said once).  A
    failure whose message is that of the failure printed last says so instead of saying
    it again."""
    if results and all("NotImplementedError" in r.message for r in results):
        print(f"not written yet: {len(results)} checks are waiting for your answer")
        return
    # "next_slot(0, 60, 5, 'skip') raised TypeError: ..." differs only in the call
    same = {r.message.partition(" raised ")[2] or r.message for r in results}
    if len(results) > 1 and len(same) == 1 and not any(r.passed for r in results):
        print(f"✗ all {len(results)} checks fail the same way: {results[0].message}")
        return
    said = ""  # the last failure's message: one said again is not printed again
    for result in results:
        if result.passed:
            print(f"✓ {result.description}")
        elif result.message == said:
            print(f"✗ {result.description}: {SAID_ABOVE}")
        else:
            print(f"✗ {result.description}: {result.message}")
            said = result.message
    print(f"{sum(r.passed for r in results)} of {len(results)} checks pass")


SAID_ABOVE = "the same as the last ✗ above"
"""What :func:`print_results` prints for a failure whose message is the last one printed (a
poll loop fails seven timer checks with one message of three lines)."""


def check_answer(
    answer: Any,
    checks_of: Callable[[Any], list[Check]],
    call: str,
    *,
    what: str = "function",
    limit: float | None = ANSWER_LIMIT,
) -> None:
    """Print the results of ``checks_of(answer)`` run against ``answer`` (see
    :func:`run_checks` for ``limit``); when ``answer`` cannot be called (an instance,
    ``TaskQueue()``, or a call's result, ``next_slot(0, 60, 5, 'skip')``), one line
    instead, saying what to write: ``call``, as in ``check_next_slot(next_slot)``."""
    asynchronous = _async_parts(answer)
    if asynchronous:
        tail = ASYNC_QUEUE if isinstance(answer, type) else ""
        print(f"✗ {', '.join(asynchronous)} {ASYNC_DEF}{tail}")
        return
    if callable(answer):
        with printed.bounded() as said:  # what the answer prints: its first lines only
            results = run_checks(checks_of(answer), limit=limit)
        said.report()
        print_results(results)
        return
    if type(answer).__module__ not in ("builtins", type(None).__module__):
        shown = f"a {type(answer).__name__} object"
    else:
        text = repr(answer)
        shown = text if len(text) <= 40 else f"{text[:37]}..."
    checker, _, name = call.rstrip(")").partition("(")
    print(
        f"✗ {checker} was given {shown}, which cannot be called: pass the {what} itself, "
        f"{call}, with no () after {name}"
    )


ASYNC_DEF = (
    "is `async def`: calling it makes a coroutine, whose body runs only when an event loop "
    "awaits it, and the checks call it as the exercise does, for its value; write it as a "
    "plain `def`"
)
ASYNC_QUEUE = (
    " (the exercise's consumers are threads, parked on a threading.Condition; a queue for "
    "asyncio awaits an asyncio.Condition, in one event loop: another design)"
)


def _async_parts(answer: Any) -> list[str]:
    """The answer, or the methods of an answer's class, written ``async def``."""
    if inspect.iscoroutinefunction(answer) or inspect.isasyncgenfunction(answer):
        return [getattr(answer, "__name__", "the answer")]
    if not isinstance(answer, type):
        return []
    return [
        f"{answer.__name__}.{name}"
        for name in dir(answer)
        if not name.startswith("__")
        and (
            inspect.iscoroutinefunction(getattr(answer, name, None))
            or inspect.isasyncgenfunction(getattr(answer, name, None))
        )
    ]


# -- the clock and the condition the checker watches -----------------------------------------

TWELVE_HOURS = 12 * 3600.0
POLL_FLOOR = 60.0
"""The shortest wait that is not a poll while the head is 12 h off (lldsched's own timer
wakes at least every ``max_wait``, 60 s, to notice a wall-clock jump: no shorter)."""
IDLE = 0.3  # seconds the poll check watches a consumer with nothing due
SPIN_TAKES = 10
"""Times a consumer with nothing due may take the queue's lock in :data:`IDLE` seconds (a
right one takes it once, and waits): one that spins around ``with self._cond`` took it
38,000 times in 0.3 s on a loaded machine, where it got 0.03 s of CPU, under the
CPU bound, and passed as no busy loop."""
SPUN = IDLE
"""The CPU time a consumer seen spinning around the lock counts as: all of :data:`IDLE`."""
LATE = 0.5  # seconds after its due instant by which a task must be returned (room for load)
HELD = 1.0  # seconds a push, a cancel or the checker may wait for the queue's lock
HELD_AGAIN = 0.1
"""Seconds the same waits get once a check of this run, or its clean-up, waited
:data:`HELD` seconds for the lock in vain (a consumer holds it: :data:`HOLDS_THE_LOCK`, or
a push never returns).  A right queue holds its lock for microseconds and lets it go
inside ``wait``, so it never meets this bound, even on a loaded machine: only an answer
seen holding the lock a whole second does, and each later check still names the lock,
after 0.1 s (thousands of times a right answer's hold) instead of another second and then a
second more for its clean-up: that answer's run took 18 s, 4 s now."""
HOLDS_THE_LOCK = (
    "pop_due holds the lock while it waits (a time.sleep or a loop inside `with "
    "self._cond`), so nothing else can get in; wait on the condition, which releases the "
    "lock while it waits"
)


_CHECKERS_CALL = "the checker's call"  # the name of each thread bounded() runs a call on


class NotReturned(AssertionError):
    """A call :func:`bounded` made did not return within its limit."""


def bounded(
    call: Callable[[], object],
    what: str,
    why: str | Callable[[], str] = HOLDS_THE_LOCK,
    limit: float = HELD,
) -> None:
    """Run ``call`` (a push or a cancel the checker makes, while a consumer may hold the
    queue's lock) and let it take at most ``limit`` seconds; it runs on a daemon thread,
    stopped if it has not returned by then (:class:`NotReturned`; a loop ends at once, a
    call blocked on the lock once it gets it, as :func:`_within` stops a check), and
    ``why`` (or what it returns, asked only then) says what that most likely means."""
    thread = _Stoppable(call)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        said = why if isinstance(why, str) else why()  # asked before the stop lets go
        thread.halt()
        raise NotReturned(f"{what} did not return within {limit:g} s: {said}")
    if thread.raised:
        raise thread.raised[0]


class _Stoppable(threading.Thread):
    """A daemon thread that runs one call the checker makes to the queue (a push, a
    cancel), and that :meth:`halt` stops as :func:`_within` stops a check: a Python loop
    ends at once, a call blocked on a lock once it gets it.  Left running, a push that
    loops spun on in the learner's kernel for good, twenty threads a run: the next
    answer's checks, a right one's, took minutes, and its ``pop_due`` was told "a busy
    loop" by a CPU count that then read the whole process's."""

    def __init__(self, call: Callable[[], object], name: str | None = _CHECKERS_CALL) -> None:
        super().__init__(name=name, daemon=True)
        self._call = call
        self._halting = _Stop()
        self.raised: list[BaseException] = []
        """What the learner's code raised (a stop excepted)."""

    def run(self) -> None:
        try:
            if self._halting.begin():  # (not once halted before it began: called off)
                try:
                    self._call()
                finally:
                    self._halting.end()  # no _Stopped lands after this
        except _Stopped:  # halted: the checker says why
            pass
        except BaseException as error:  # the learner's code raised: the checker re-raises it
            self.raised.append(error)

    def halt(self) -> None:
        """Stop the call if it still runs."""
        if self.is_alive():
            self._halting.stop(self)


def _cpu_seconds(threads: Sequence[threading.Thread]) -> float:
    """The CPU seconds ``threads`` have taken, read per thread where the system says
    (Linux: ``/proc/self/task/<id>/stat``), else the whole process's
    (``time.process_time``).  The process's counts every thread of the learner's kernel:
    a Scheduler still running from an earlier cell, or an earlier answer's loop, made a
    right ``pop_due`` "a busy loop".  A thread that has ended counts 0."""
    total = 0.0
    for thread in threads:
        if thread.native_id is None:
            continue
        try:
            with open(f"/proc/self/task/{thread.native_id}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except FileNotFoundError:  # ended (or not Linux: then no thread's file is there)
            if not os.path.isdir("/proc/self/task"):
                return time.process_time()
            continue
        except OSError:
            return time.process_time()
        total += (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime + stime
    return total


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
"""The unit of a thread's times in ``/proc`` (100 a second on Linux)."""


class ExerciseClock:
    """The checker's clock: seconds since its own epoch (not ``time.time()``), moving at
    the speed of real time, counting every read the queue makes."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._origin = _monotonic()
        self._start = start
        self.reads = 0
        self.first: float | None = None
        """The time the queue read first (since the checker set it back to None)."""

    def __call__(self) -> float:
        self.reads += 1
        now = self.peek()
        if self.first is None:
            self.first = now
        return now

    def peek(self) -> float:
        """The time, without counting a read (for the checker itself)."""
        return self._start + (_monotonic() - self._origin)


class WatchedCondition:
    """A stand-in for the queue's Condition that counts its waits and notifies, and keeps
    the timeout of each wait.

    ``waiting`` is how many threads are inside ``wait`` right now; ``inner`` is the
    real Condition, for the checker's own spurious wake-ups.  A queue with more than one
    Condition (one lock, a Condition for each thing a consumer waits for, as lldsched's
    own runtime has) gets one of these for each: :meth:`watch_also` makes the others,
    which count into this one (``tally``), and a spurious wake-up wakes them all.
    """

    def __init__(self, inner: threading.Condition) -> None:
        self.inner = inner
        self.tally = self  # where the counts go: self, or the first Condition's watcher
        self.conditions = [inner]  # every Condition watched into this tally
        self.here = 0  # threads waiting on this very Condition (the tally's ``waiting``: all)
        self.strays = 0  # notifies of a Condition no thread waited on, while one waited on another
        self.waits = 0
        self.takes = 0  # times a thread took the lock (``with``, ``acquire``), not in a wait
        self.notifies = 0
        self.notify_alls = 0
        self.waiting = 0
        self.timeouts: list[float | None] = []  # of every wait, in order
        self.inside: list[threading.Thread] = []  # the threads inside ``wait`` now
        self.changed = threading.Condition()  # notified when ``waiting`` grows
        self.reaching: threading.Event | None = None  # set when a thread reaches for the lock

    def watch_also(self, inner: threading.Condition) -> WatchedCondition:
        """A watcher of another Condition of the same queue, counting into this one."""
        also = WatchedCondition(inner)
        also.tally = self
        self.conditions.append(inner)
        return also

    def __enter__(self) -> bool:
        self.tally.takes += 1
        if self.tally.reaching is not None:
            self.tally.reaching.set()
        return self.inner.__enter__()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.inner.__exit__(exc_type, exc, traceback)

    def acquire(self, *args: Any, **kwargs: Any) -> bool:
        self.tally.takes += 1
        if self.tally.reaching is not None:
            self.tally.reaching.set()
        return self.inner.acquire(*args, **kwargs)

    def release(self) -> None:
        self.inner.release()

    def wait(self, timeout: float | None = None) -> bool:
        tally = self.tally
        tally.timeouts.append(timeout)
        with tally.changed:  # (``waits`` with ``inside``: _held_while_waiting reads both)
            tally.waits += 1
            tally.waiting += 1
            self.here += 1
            tally.inside.append(threading.current_thread())
            tally.changed.notify_all()
        try:
            return self.inner.wait(timeout)
        finally:
            with tally.changed:
                tally.waiting -= 1
                self.here -= 1
                tally.inside.remove(threading.current_thread())

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        result = predicate()
        deadline = None if timeout is None else _monotonic() + timeout
        while not result:
            remaining = None if deadline is None else deadline - _monotonic()
            if remaining is not None and remaining <= 0:
                break
            self.wait(remaining)
            result = predicate()
        return result

    def _stray(self) -> None:
        """Count a notify that reaches nobody while a thread waits on another Condition."""
        with self.tally.changed:
            if not self.here and self.tally.waiting:
                self.tally.strays += 1

    def notify(self, n: int = 1) -> None:
        self.tally.notifies += 1
        self._stray()
        self.inner.notify(n)

    def notify_all(self) -> None:
        self.tally.notify_alls += 1
        self._stray()
        self.inner.notify_all()

    def notifyAll(self) -> None:
        """``notify_all``, in the spelling a Condition still takes (deprecated): a right
        queue written so failed every check, told this class has no ``notifyAll``."""
        warnings.warn(
            "notifyAll() is deprecated, use notify_all() instead", DeprecationWarning, stacklevel=2
        )
        self.notify_all()

    def __getattr__(self, name: str) -> Any:
        """Anything else of the Condition (``_is_owned``, its ``_lock``) is the real one's."""
        inner = self.__dict__.get("inner")  # (none yet while a copy is being made)
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def parked(self, count: int, timeout: float = 1.0) -> bool:
        """Wait (bounded) until ``count`` threads are inside ``wait``; then, holding the
        real lock once, be sure they have released it."""
        with self.changed:
            ok = self.changed.wait_for(lambda: self.waiting >= count, timeout)
        if ok:
            for condition in self.conditions:
                with condition:
                    pass
        return ok

    def spurious_wake_up(self, limit: float = HELD) -> None:
        """Wake every waiter although nothing changed (if the lock can be had within
        ``limit`` seconds: a waiter that never releases it is told so, :class:`NotReturned`)."""
        for condition in self.conditions:
            if not condition.acquire(timeout=limit):
                raise NotReturned(
                    f"the checker could not take the lock in {limit:g} s: {HOLDS_THE_LOCK}"
                )
            try:
                condition.notify_all()
            finally:
                condition.release()


RETURNED_NONE = (
    "pop_due returned None: it blocks until the head is due, then returns it; "
    "it never returns without a task (wait on the condition while nothing is due)"
)


class ReturnedNone(AssertionError):
    """A consumer's ``pop_due`` returned None (:data:`RETURNED_NONE`): whichever check
    meets it says that, and nothing else."""


class Consumers:
    """Threads that each call ``pop_due()`` ``takes`` times and report what they got."""

    def __init__(self, target: Any, clock: ExerciseClock, count: int = 1, takes: int = 1) -> None:
        self.got: queue.Queue[tuple[str, object, float]] = queue.Queue()
        self.raised = False
        """A pop_due raised: the check reports that, whatever the time (see :func:`tried`)."""
        self.threads = [
            threading.Thread(target=self._consume, args=(target, clock, takes), daemon=True)
            for _ in range(count)
        ]
        for thread in self.threads:
            thread.start()

    def _consume(self, target: Any, clock: ExerciseClock, takes: int) -> None:
        for _ in range(takes):
            try:
                task = target.pop_due()
            except (Exception, SystemExit) as error:  # a thread ends silently on SystemExit
                self.raised = True
                self.got.put(("error", f"{type(error).__name__}: {error}", clock.peek()))
                return
            if inspect.iscoroutine(task):  # closed: never awaited, and no warning of it
                task.close()
                self.raised = True  # as a pop_due that raised: told whatever the time
                self.got.put(("async", None, clock.peek()))
                return
            self.got.put(("task", task, clock.peek()))

    def next(self, timeout: float) -> tuple[object, float] | None:
        """The next (task, when) a consumer returned, or None after ``timeout`` seconds."""
        try:
            kind, value, at = self.got.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None
        if kind == "error":
            raise AssertionError(f"pop_due raised {value}")
        if kind == "async":
            raise AssertionError(f"pop_due returned a coroutine: pop_due {ASYNC_DEF}{ASYNC_QUEUE}")
        if value is None:
            raise ReturnedNone(RETURNED_NONE)
        if not isinstance(value, str):  # the checker pushes names only
            raise AssertionError(
                f"pop_due returned {value!r}: return the task as it was pushed (a name such "
                "as 'report')"
                + (
                    ", not its heap entry"
                    if isinstance(value, tuple | list)
                    else "; a `yield` makes pop_due a generator, which waits for nothing "
                    "and takes nothing until it is iterated"
                    if type(value).__name__ == "generator"
                    else ""
                )
            )
        return value, at

    def names(self, count: int, timeout: float) -> list[object]:
        """The first ``count`` tasks the consumers returned, each waited for up to
        ``timeout`` seconds; fewer if one did not come in time."""
        got = []
        for _ in range(count):
            item = self.next(timeout)
            if item is None:
                break
            got.append(item[0])
        return got


TRIES = 3
"""Times a check whose scenario needs a head not yet due (a task due in 0.1 or 0.2 s) runs
it, on a fresh queue, when the machine was so slow that the head was due already by the
time the queue saw it: what the answer did then proves nothing either way."""


def too_slow(premise: str) -> str:
    """What a check says when its scenario's ``premise`` failed in each of its tries."""
    return (
        f"this machine was too slow to tell: {premise}, in each of {TRIES} tries, so this "
        "check says nothing about your answer; run it again when the machine is less busy"
    )


def tried(attempt: Callable[[], bool], premise: str) -> None:
    """Run ``attempt`` (one scenario on a fresh queue: it asserts, or returns False when
    its ``premise``, a head not yet due when the queue saw it, did not hold, unless a
    pop_due raised: that is told whatever the time) until the premise held, :data:`TRIES`
    times at most; then it fails saying the machine was too slow to tell
    (:func:`too_slow`): neither a pass nor a blame."""
    for _ in range(TRIES):
        if attempt():
            return
    raise AssertionError(too_slow(premise))


PUSHED_IN_TIME = "the checker's push returned only once its task was due"


class Rig(NamedTuple):
    """A fresh queue under test, its clock and its watched Condition."""

    queue: Any
    clock: ExerciseClock
    cond: WatchedCondition


def _attributes(target: object) -> dict[str, object]:
    """The queue's attributes: its ``__dict__``, its ``__slots__``, then its class's (a
    Condition kept on the class is one too)."""
    found = dict(getattr(target, "__dict__", {}))
    for klass in type(target).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in [slots] if isinstance(slots, str) else slots:
            if name not in found and hasattr(target, name):
                found[name] = getattr(target, name)
    for klass in type(target).__mro__:
        for name, value in vars(klass).items():
            found.setdefault(name, value)
    return found


BUILD_STUCK = (
    "the constructor waits, loops, or takes a lock it already holds (a `with` on a "
    "threading.Lock, or a Condition built on one, inside another `with` on the same lock "
    "never gets in: one thread cannot take a Lock twice); it only sets the queue's "
    "attributes up"
)


class NotBuilt(AssertionError):
    """The queue's constructor did not return within its limit (:data:`BUILD_STUCK`)."""


def _build(make_queue: Callable[[Any], Any], clock: ExerciseClock, limit: float = HELD) -> Any:
    """``make_queue(clock)``, on a daemon thread for at most ``limit`` seconds (a
    constructor that deadlocks is told so, :class:`NotBuilt`, and left behind); a
    constructor that cannot take the clock is told so."""
    name = getattr(make_queue, "__name__", "TaskQueue")
    built: list[Any] = []
    try:
        bounded(lambda: built.append(make_queue(clock)), f"{name}(clock)", limit=limit)
        return built[0]
    except NotReturned:
        raise NotBuilt(f"{name}(clock) did not return: {BUILD_STUCK}") from None
    except TypeError as error:
        if not callable(make_queue):
            raise
        try:
            inspect.signature(make_queue).bind(clock)
        except (TypeError, ValueError):  # its parameters, not its body, refused the call
            raise AssertionError(
                f"the checker builds your queue as TaskQueue(clock), and {name}(clock) "
                f"raised TypeError: {error}; keep the constructor's clock parameter "
                "(def __init__(self, clock=time.monotonic))"
            ) from None
        raise


def _rig(make_queue: Callable[[Any], Any], limit: float = HELD) -> Rig:
    """A fresh queue, built within ``limit`` seconds (:func:`_build`), every Condition it
    keeps watched (the first one's watcher counts for them all)."""
    clock = ExerciseClock()
    target = _build(make_queue, clock, limit)
    watched: WatchedCondition | None = None
    for name, value in _attributes(target).items():
        if isinstance(value, threading.Condition):
            watcher = WatchedCondition(value) if watched is None else watched.watch_also(value)
            setattr(target, name, watcher)
            watched = watched or watcher
    if watched is not None:
        return Rig(target, clock, watched)
    raise AssertionError(
        "found no threading.Condition on the queue: keep one in an attribute (self._cond) "
        "and wait on it"
    )


def _release(rig: Rig, consumers: Consumers, limit: float = HELD) -> bool:
    """Give every consumer still inside pop_due something to take, and let them go, each
    push and the wake-up within ``limit`` seconds; False when one of them did not return
    (a consumer holds the lock, or push waits), and the threads are left parked."""
    alive = sum(thread.is_alive() for thread in consumers.threads)
    try:
        for n in range(alive * 2):
            task = f"release-{n}"
            bounded(
                partial(rig.queue.push, task, rig.clock.peek() - 1), f"push({task!r})", limit=limit
            )
        rig.cond.spurious_wake_up(limit)
    except NotReturned:
        return False
    except Exception:  # a queue that raises: leave its threads parked
        return True
    for thread in consumers.threads:
        thread.join(0.1)
    return True


PUSH_STUCK = (
    "no consumer was running, so nobody else held the lock: push waits or loops (it "
    "only adds an entry, and notifies when the entry is the new head)"
)


CANCEL_STUCK = "no consumer was running, so nobody else held the lock: cancel waits or loops"


PUSH_WAITING = (
    "the only consumer was waiting on the condition, which lets the lock go, so push "
    "waits or loops (it only adds an entry, and notifies when the entry is the new head)"
)


_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))

TAKEN_TWICE = (
    "; or it takes a lock it holds again: your Condition is built on a threading.Lock, "
    "which one thread cannot take twice (a `with self._cond` inside another, or a helper "
    "that takes it called under it, never gets in)"
)


def _alone(rig: Rig, why: str) -> str:
    """``why`` a push or cancel made with no consumer running did not return, and, when a
    Condition of the queue is built on a plain Lock, that taking it twice deadlocks."""
    plain = any(isinstance(getattr(c, "_lock", None), _LOCK_TYPES[0]) for c in rig.cond.conditions)
    return why + (TAKEN_TWICE if plain else "")


NESTED_MONITOR = (
    "pop_due waits on the condition while it holds {held}: wait() lets go of the "
    "condition's own lock only, so a push or a cancel that takes {held} first waits for "
    "ever (a nested-monitor deadlock); guard the heap with one lock: build the Condition "
    "on that lock (threading.Condition({held})), or keep the Condition alone"
)


def _taken(lock: Any) -> bool:
    """Whether another thread holds ``lock`` (a Lock or an RLock) right now."""
    if lock.acquire(blocking=False):
        lock.release()
        return False
    return True


def _held_while_waiting(rig: Rig) -> str | None:
    """When a push or cancel did not return while a consumer waits on the queue's
    Condition, whose own lock is free: the consumer holds another lock of the queue
    (:data:`NESTED_MONITOR`, naming it).  None when the checker's call waits on the
    Condition itself (a push that waits), or when no other lock of the queue is held.
    A consumer seen out of ``wait``, or a Condition's own lock seen taken, is looked at
    again as a consumer next enters ``wait``, for :data:`HELD_AGAIN` seconds: its timed wait
    may have ended just as the call's bound did, on a loaded machine (then it took the
    Condition's lock back, and takes the head, holding the other lock still).  None if
    none enters by then (no consumer waits; or one holds the Condition's own lock, which
    :data:`HOLDS_THE_LOCK` says)."""
    changed = rig.cond.changed
    until = _monotonic() + HELD_AGAIN
    while True:
        with changed:
            callers = [thread.name == _CHECKERS_CALL for thread in rig.cond.inside]
            waits = rig.cond.waits
        if any(callers):
            return None
        if callers and not any(_taken(condition) for condition in rig.cond.conditions):
            return _other_lock_held(rig)
        with changed:
            left = until - _monotonic()
            if left <= 0 or not changed.wait_for(_waits_past(rig, waits), left):
                return None


def _held_by_the_call(rig: Rig, what: str) -> str | None:
    """When the checker's own push or cancel holds the queue's lock and did not return:
    it loops or waits inside ``with self._cond`` (:data:`CALL_HOLDS`).  A cancel that
    looked for its task in a loop was told that pop_due held the lock.  Seen only on an
    RLock (a Condition's default), whose owner its repr names; None on a plain Lock."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    for condition in rig.cond.conditions:
        lock = getattr(condition, "_lock", None)
        if not isinstance(lock, _LOCK_TYPES[1]):
            continue
        owner = repr(lock).partition(" owner=")[2].partition(" ")[0]
        if owner.isdigit() and names.get(int(owner)) == _CHECKERS_CALL:
            verb = what.partition("(")[0]
            return CALL_HOLDS.format(verb=verb, does=_DOES.get(verb, "it is quick"))
    return None


CALL_HOLDS = (
    "{verb} itself holds the queue's lock and does not let it go: a loop that never ends, "
    "or a wait, inside `with self._cond` ({does})"
)
_DOES = {
    "push": "push only adds an entry, and notifies when the entry is the new head",
    "cancel": "cancel only forgets the task's live entry: its heap entry becomes a tombstone",
}


def _waits_past(rig: Rig, waits: int) -> Callable[[], bool]:
    """Whether a consumer entered ``wait`` again since the count was ``waits``."""
    return lambda: rig.cond.waits > waits


def _other_lock_held(rig: Rig) -> str | None:
    """:data:`NESTED_MONITOR` naming each lock of the queue, other than its Conditions'
    own, that is taken now; None if none is."""
    own = [getattr(condition, "_lock", None) for condition in rig.cond.conditions]
    held = [
        f"self.{name}"
        for name, value in _attributes(rig.queue).items()
        if isinstance(value, _LOCK_TYPES)
        and all(value is not lock for lock in own)
        and _taken(value)
    ]
    return NESTED_MONITOR.format(held=" and ".join(held)) if held else None


def _fill(rig: Rig, entries: Sequence[tuple[str, float]], limit: float = HELD) -> None:
    """Push ``entries`` (task, due) before any consumer runs, within ``limit`` seconds."""

    def push_all() -> None:
        for task, due in entries:
            rig.queue.push(task, due)

    what = f"push({entries[0][0]!r}, ...)" if len(entries) == 1 else f"{len(entries)} pushes"
    bounded(push_all, what, lambda: _alone(rig, PUSH_STUCK), limit)


def _expect(
    consumers: Consumers,
    task: str,
    due: float,
    clock: ExerciseClock,
    why: str | Callable[[], str],
) -> None:
    """``task`` is the next one returned, not before ``due`` and by ``due + LATE``; ``why``
    (or what it returns, asked only then) says what a task not returned means."""
    got = consumers.next(due + LATE - clock.peek())
    if got is None:
        said = why if isinstance(why, str) else why()
        raise AssertionError(f"{task!r} was not returned within {LATE} s of its due time: {said}")
    name, at = got
    if name != task:
        raise AssertionError(f"expected {task!r}, got {name!r}")
    if at < due:
        raise AssertionError(
            f"{task!r} returned {due - at:.2f} s before it was due: the head comes out once "
            f"it is due, when delay = due - self._clock() is 0 or less, and not before"
        )


WAITED_FOREVER = (
    "pop_due waited with no timeout while a head was queued, so only a push could end the "
    "wait; wait with timeout = due - self._clock() toward the head (with no timeout only "
    "while the queue is empty)"
)


def _wrong_timeout(timeouts: Sequence[float | None], delay: float) -> str | None:
    """What the last wait's timeout says when a head due in ``delay`` seconds (with a head
    queued all along) did not come out in time: no timeout at all, or one no right answer
    computes (the delay taken on another clock).  None when it looks right, or like the
    timeout of the old 12 h head, which the checks that meet it name themselves."""
    if not timeouts:
        return None
    last = timeouts[-1]
    if last is None:
        return WAITED_FOREVER
    if last > delay + LATE + 1 and 200 * delay <= last <= 1_100 * delay:
        return (
            f"pop_due waited {last:,.0f} s for a head due in {delay:g} s, some thousand "
            "times too long: Condition.wait takes seconds, not milliseconds; wait "
            "due - self._clock() as it is"
        )
    if last > delay + LATE + 1 and abs(last - TWELVE_HOURS) > 60:
        return (
            f"pop_due waited {last:,.0f} s for a head due in {delay:g} s: compute the "
            "timeout as due - self._clock(), on the clock you were given (time.time() and "
            "time.monotonic() count from epochs of their own)"
        )
    return None


def _late_wait(rig: Rig, consumers: Consumers, delay: float) -> str | None:
    """When a head due in ``delay`` seconds did not come out in time: what
    :func:`_wrong_timeout` says of the wait, if the head is still there to take, which the
    checker learns by waking the consumers (a spurious wake-up); None when it says
    nothing or nothing comes out (the entry is gone: the check's own message stands, as
    for a cancel that lost it, after which waiting with no timeout is right)."""
    hint = _wrong_timeout(rig.cond.timeouts, delay)
    if hint is None:
        return None
    try:
        rig.cond.spurious_wake_up()
        came = consumers.next(0.2)
    except AssertionError:  # it holds the lock, raised or returned None: said elsewhere
        return None
    return hint if came is not None else None


NEVER_WAITS = (
    "pop_due never waited on the queue's condition: a time.sleep cannot be woken by a "
    "push, and a wait on anything else (an Event of its own) is not the exercise's and "
    "cannot be watched here; wait on the condition, with timeout = due - now"
)
STRAY_NOTIFY = (
    "your push notified a Condition no consumer was waiting on (pop_due waits for the "
    "head on another one): notify the Condition the waiter waits on"
)
_STALE_TIMEOUT = (
    "the waiter woke and went back to the timeout it computed from the old head: "
    "compute it again from the head after every wake-up (a wait_for(predicate, timeout) "
    "keeps the timeout it was given)"
)

HEAP_SIZE = 1_000  # tasks the cost check pushes and pops
# Orderings of due times allowed per task pushed and popped.  A heap makes about
# 2 * log2(1000) = 20 per pop and 2 per push (the reference: 21 in all); a sort, a
# heapify or a scan per operation, about HEAP_SIZE / 2 = 500.  A sorted list kept with
# bisect.insort passes: its O(n) is a memmove, which no comparison count sees.
COMPARISONS_PER_ENTRY = 60
FILL_LIMIT = 20.0  # seconds the HEAP_SIZE pushes may take (the reference: milliseconds)


class ComparisonCounter:
    """How many times the due times it is given to were ordered (``count``), and how many
    times a due time or a task name was tested for equality (``equalities``: what a scan
    for one entry does, ``list.remove`` or a filter by name)."""

    def __init__(self) -> None:
        self.count = 0
        self.equalities = 0


class _CountsEqualities:
    """Counts the times the value is tested for equality (``==``, ``!=``) in its
    ``counter.equalities``; the value's own type answers."""

    counter: ComparisonCounter

    def __eq__(self, other: object) -> bool:
        self.counter.equalities += 1
        return super().__eq__(other)

    def __ne__(self, other: object) -> bool:
        self.counter.equalities += 1
        return super().__ne__(other)

    def __hash__(self) -> int:
        return super().__hash__()


class CountedDue(_CountsEqualities, float):
    """A due instant (a plain float to the queue) that counts the times it is ordered.

    Only ``<``, ``<=``, ``>`` and ``>=`` count: a tuple comparison also asks ``==`` of
    each pair of fields first, which says nothing about the cost of the structure.
    Arithmetic (``due - now``) gives plain floats, but for a negation: ``-due`` counts
    too, so a list kept in descending order (``(-due, ...)``, the earliest popped from
    its end) is seen, as ``float(due)`` cannot be.
    """

    counter: ComparisonCounter

    def __new__(cls, value: float, counter: ComparisonCounter) -> CountedDue:
        due = super().__new__(cls, value)
        due.counter = counter
        return due

    def __neg__(self) -> CountedDue:
        return CountedDue(-float(self), self.counter)

    def __pos__(self) -> CountedDue:
        return self

    def __lt__(self, other: float) -> bool:
        self.counter.count += 1
        return float(self) < other

    def __le__(self, other: float) -> bool:
        self.counter.count += 1
        return float(self) <= other

    def __gt__(self, other: float) -> bool:
        self.counter.count += 1
        return float(self) > other

    def __ge__(self, other: float) -> bool:
        self.counter.count += 1
        return float(self) >= other


class CountedName(_CountsEqualities, str):
    """A task name (a plain str to the queue) that counts the times it is tested for
    equality.  A dict or set lookup by the very object finds it by identity, and counts
    nothing: what a tombstone's bookkeeping does."""

    counter: ComparisonCounter

    def __new__(cls, value: str, counter: ComparisonCounter) -> CountedName:
        name = super().__new__(cls, value)
        name.counter = counter
        return name


class WatchedDue(float):
    """The due instant of an entry already in the heap (a plain float to the queue) that
    sets ``read`` when it is ordered against anything (only code that reads the heap, a
    push sifting its entry up or a look at the head, compares it), and ``moved`` too."""

    read: threading.Event
    moved: threading.Event

    def __new__(cls, value: float, read: threading.Event, moved: threading.Event) -> WatchedDue:
        due = super().__new__(cls, value)
        due.read, due.moved = read, moved
        return due

    def _seen(self) -> None:
        self.read.set()
        self.moved.set()

    def __lt__(self, other: float) -> bool:
        self._seen()
        return float(self) < other

    def __le__(self, other: float) -> bool:
        self._seen()
        return float(self) <= other

    def __gt__(self, other: float) -> bool:
        self._seen()
        return float(self) > other

    def __ge__(self, other: float) -> bool:
        self._seen()
        return float(self) >= other


_CANCELS_ONE = "a cancel marks only the entry of the task it names"

ORDER_ROUNDS = 150  # shuffled small heaps the order check empties, before one of HEAP_SIZE
ORDER_HINT = (
    "the earliest due comes out first; a heap written by hand is easy to get one index "
    "wrong (the parent of i is (i - 1) // 2, its children 2 * i + 1 and 2 * i + 2, and a "
    "sift-down compares an entry with both its children, the last entry of the list "
    "included): heapq.heappush and heapq.heappop keep the order for you"
)


def _tie_broken(got: Sequence[object]) -> str:
    """What broke the tie of the due-now check's tied tasks, as they came out in ``got``."""
    tied = [task for task in got if task != "report"]
    if tied == sorted(tied, key=str):
        return "they came out in the order of their names: a tie compared the task names"
    return (
        "they came out in the order the heap happened to leave them: entries equal on a "
        "tie (a key of the due time alone, or a tie-break that is the same for every "
        "entry) are not kept in arrival order, for a heap is not stable"
    )


def _first_out_of_order(got: Sequence[object], ago: Mapping[str, float]) -> str | None:
    """Where ``got`` (tasks taken, each due ``ago[task]`` seconds ago) first leaves due
    order: which pop returned which task while an earlier-due one was still queued."""
    expected = sorted(ago, key=lambda task: -ago[task])
    for n, (task, due_first) in enumerate(zip(got, expected, strict=False)):
        if task != due_first:
            when = "never pushed"
            if isinstance(task, str) and task in ago:
                when = f"due {ago[task]:g} s ago"
            return (
                f"pop {n + 1} returned {task!r} ({when}) while {due_first!r}, due "
                f"{ago[due_first]:g} s ago, was still queued"
            )
    return None


_RACES = (
    "push read or changed the heap while the checker held the queue's lock: it touches "
    "the heap outside `with self._cond` (taking the lock only to notify), so a consumer "
    "popping at that instant sees a heap half pushed, or a head that is already gone "
    "(heapq is not thread-safe); do all of push under the lock"
)


_CANCEL_RACES = (
    "cancel('nightly') returned while the checker held the queue's lock: it changes the "
    "queue without taking the lock. A dict.pop is one step, but pop_due, under the lock, "
    "tests the head's live entry, takes the head, then forgets its task (del "
    "self._live[task]): a cancel in between makes that raise KeyError. Do all of cancel "
    "under the lock"
)


def _why_slept(rig: Rig, consumers: Consumers, delay: float, notifies: int, strays: int) -> str:
    """Why waiters toward a far head slept through a push of a new head due in ``delay``
    seconds, which made ``notifies`` notifies, ``strays`` of them of a Condition nobody
    waited on."""
    if notifies and strays == notifies:
        return STRAY_NOTIFY
    if notifies:
        return _late_wait(rig, consumers, delay) or _STALE_TIMEOUT
    return (
        "your push did not notify: it must notify whenever its entry becomes the head, "
        "due yet or not"
    )


# -- the timer checks -------------------------------------------------------------------


def timer_checks(make_queue: Callable[[Any], Any]) -> list[Check]:
    """The checks of the timer exercise, against ``make_queue(clock)`` (the class)."""
    patience = [1.0]  # seconds to wait for consumers to park; cut once they never do
    push_patience = [math.inf]  # cut to 0.1 s once a push never returned
    cancel_patience = [math.inf]  # cut to 0.1 s once a cancel with no consumer never returned
    held = [HELD]  # seconds to wait for the queue's lock; HELD_AGAIN once a consumer held it
    build_patience = [HELD]  # seconds to wait for the constructor; cut once it never returned

    def new_rig() -> Rig:
        """A fresh queue (:func:`_rig`), its constructor waited for as a push is."""
        try:
            return _rig(make_queue, build_patience[0])
        except NotBuilt:
            build_patience[0] = HELD_AGAIN
            raise

    def locked(rig: Rig, call: Callable[[], object], what: str) -> None:
        """``call`` (a push or a cancel of ``rig``'s queue) while a consumer may hold the
        lock: bounded."""
        try:
            bounded(
                call,
                what,
                lambda: _held_while_waiting(rig) or _held_by_the_call(rig, what) or HOLDS_THE_LOCK,
                held[0],
            )
        except NotReturned:
            held[0] = HELD_AGAIN
            raise

    def wake(rig: Rig) -> None:
        """A spurious wake-up of ``rig``'s waiters, the lock waited for as :func:`locked`."""
        try:
            rig.cond.spurious_wake_up(held[0])
        except NotReturned:
            held[0] = HELD_AGAIN
            raise

    def release(rig: Rig, consumers: Consumers) -> None:
        """A check's clean-up (:func:`_release`), the lock waited for as :func:`locked`."""
        if not _release(rig, consumers, held[0]):
            held[0] = HELD_AGAIN

    def cancels(rig: Rig, call: Callable[[], object], what: str, limit: float = HELD) -> None:
        """``call`` (cancels of ``rig``'s queue, with no consumer running), bounded as a
        fill is: a 500-cancel run waited 20 s for a cancel already seen looping, and was
        told pop_due held the lock."""
        try:
            bounded(call, what, lambda: _alone(rig, CANCEL_STUCK), min(limit, cancel_patience[0]))
        except NotReturned:
            cancel_patience[0] = 0.1
            raise

    def fill(rig: Rig, entries: Sequence[tuple[str, float]], limit: float = HELD) -> None:
        try:
            _fill(rig, entries, min(limit, push_patience[0]))
        except AssertionError:
            push_patience[0] = 0.1
            raise

    def park(rig: Rig, consumers: Consumers, count: int = 1) -> None:
        """Wait (bounded) until ``count`` consumers wait on the queue's Condition.  When
        none ever did and all are still inside pop_due, say so: what the check would
        report next (a push slept through, a task run late) would blame the wrong line."""
        if rig.cond.parked(count, patience[0]):
            return
        patience[0] = 0.1  # a queue that never waits on its Condition: do not wait again
        if rig.cond.waits or not all(thread.is_alive() for thread in consumers.threads):
            return  # it waits, or a consumer returned or raised: the check tells which
        if not rig.cond.inner.acquire(timeout=held[0]):
            limit, held[0] = held[0], HELD_AGAIN
            raise AssertionError(
                f"the checker could not take the lock in {limit:g} s: {HOLDS_THE_LOCK}"
            )
        rig.cond.inner.release()
        raise AssertionError(NEVER_WAITS)

    def seen_early(rig: Rig, due: float) -> bool:
        """pop_due first read the clock before ``due`` (or never read it: the check of the
        clock says so)."""
        return rig.clock.first is None or rig.clock.first < due

    def reads_the_clock_given() -> None:
        rig = new_rig()
        fill(rig, [("due", rig.clock.peek() - 1)])
        reads = rig.clock.reads  # a push may read it too: count pop_due's reads only
        consumers = Consumers(rig.queue, rig.clock)
        try:
            got = consumers.next(LATE)
            reads = rig.clock.reads - reads
        finally:
            release(rig, consumers)
        came = "came out" if got is not None else f"did not come out within {LATE} s"
        assert reads, (
            f"pop_due never called self._clock(): a task due 1 s ago by that clock {came}, "
            "so it read the time elsewhere (time.time(), time.monotonic()); take the time "
            "only from the clock you were given, or the scheduler cannot be tested with a "
            "fake one (the checks below fail from this too)"
        )
        assert got is not None, (
            f"'due', due 1 s ago, {came}, though pop_due read the clock: a task already due "
            "comes out at once, for its delay = due - self._clock() is below 0 (now - due is "
            "the time since it fell due)"
        )
        assert got[0] == "due", f"expected 'due', got {got[0]!r}"

    def due_now_in_order() -> None:
        rig = new_rig()
        now = rig.clock.peek()
        # Five tasks arrive due at the same instant, after 'report': arrival order is not
        # the names' order, so a heap that compares names on a tie shows; and five equal
        # entries are enough for heapq, which is not stable, to take them out of arrival
        # order (three come out in order by chance): an entry with no tie-break shows too.
        tied = ["cleanup", "alert", "purge", "digest", "backup"]
        fill(rig, [("report", now - 1)] + [(task, now - 2) for task in tied])
        consumers = Consumers(rig.queue, rig.clock, takes=len(tied) + 1)
        try:
            got = consumers.names(len(tied) + 1, LATE)
        finally:
            release(rig, consumers)
        expected = [*tied, "report"]
        shown = ", ".join(expected)
        assert len(got) == len(expected), (
            f"expected {shown} (all due already) at once, got only {got}: compare due "
            "instants with self._clock(), the clock you were given"
        )
        assert got[-1] == "report", f"expected {shown}, got {got}: the earliest due comes out first"
        assert got == expected, (
            f"expected {shown}, got {got}: {', '.join(tied)} are due at the same instant, "
            f"pushed in that order; a tie must keep arrival order, but {_tie_broken(got)}; "
            "put a sequence counter in the entry, (due, sequence, task), and the comparison "
            "never reaches the task"
        )

    def take_all(ago: Mapping[str, float], limit: float = HELD) -> list[object]:
        """Push each task due ``ago[task]`` seconds ago (in the mapping's order) before any
        consumer runs, then take them all: what came out, in order."""
        rig = new_rig()
        now = rig.clock.peek()
        fill(rig, [(task, now - seconds) for task, seconds in ago.items()], limit)
        consumers = Consumers(rig.queue, rig.clock, takes=len(ago))
        try:
            return consumers.names(len(ago), LATE)
        finally:
            release(rig, consumers)

    def in_due_order() -> None:
        rng = random.Random(13)
        sizes = [rng.randint(2, 16) for _ in range(ORDER_ROUNDS)] + [HEAP_SIZE]
        for size in sizes:
            seconds = list(range(1, size + 1))
            rng.shuffle(seconds)
            ago = {f"job-{n}": float(s) for n, s in enumerate(seconds)}
            got = take_all(ago, FILL_LIMIT if size == HEAP_SIZE else HELD)
            pushed = f" (due {', '.join(map(str, seconds))} s ago)" if size <= 16 else ""
            wrong = _first_out_of_order(got, ago)
            assert wrong is None, (
                f"{size} tasks, all due already, pushed in a shuffled order{pushed}: "
                f"{wrong}: {ORDER_HINT}"
            )
            assert len(got) == size, (
                f"{size} tasks, all due already, pushed in a shuffled order{pushed}: only "
                f"{len(got)} came back within {LATE} s"
                + (f", {got}" if size <= 16 else "")
                + ": a task already due comes out at once; compare due instants with "
                "self._clock(), the clock you were given"
            )

    def waits_exactly_the_delay() -> None:
        tried(wait_the_delay, "pop_due first read the clock only once its task was due")

    def wait_the_delay() -> bool:
        rig = new_rig()
        due = rig.clock.peek() + 0.2
        fill(rig, [("soon", due)])
        rig.clock.first = None  # pop_due's first read, not the push's
        consumers = Consumers(rig.queue, rig.clock)
        try:
            _expect(
                consumers,
                "soon",
                due,
                rig.clock,
                lambda: (
                    _late_wait(rig, consumers, 0.2)
                    or "wait on the condition with timeout = due - now (a wait with no timeout "
                    "only ends when someone notifies)"
                ),
            )
        except AssertionError:
            if not consumers.raised and not seen_early(rig, due):
                return False
            raise
        finally:
            release(rig, consumers)
        return seen_early(rig, due)

    def idle(nightly: bool) -> tuple[int, int, float, float]:
        """A consumer on a fresh queue, empty or holding 'nightly' due in 12 h, watched for
        :data:`IDLE` seconds: its clock reads, its waits, the CPU it took (or
        :data:`SPUN`, when it took the lock more than :data:`SPIN_TAKES` times) and its
        shortest wait's timeout (:data:`POLL_FLOOR` when none was shorter)."""
        rig = new_rig()
        if nightly:
            fill(rig, [("nightly", rig.clock.peek() + TWELVE_HOURS)])
        consumers = Consumers(rig.queue, rig.clock)
        if not rig.cond.parked(1, timeout=IDLE):
            patience[0] = 0.1
        cpu_now = partial(_cpu_seconds, consumers.threads)
        reads, waits, takes, cpu = rig.clock.reads, rig.cond.waits, rig.cond.takes, cpu_now()
        early = consumers.next(IDLE)  # a bounded wait: nothing is due for twelve hours
        reads, waits = rig.clock.reads - reads, rig.cond.waits - waits
        cpu = cpu_now() - cpu
        spun[0] = rig.cond.takes - takes
        if spun[0] > SPIN_TAKES:  # a loop around `with self._cond`, spinning: seen on a
            cpu = max(cpu, SPUN)  # loaded machine too, where it gets little CPU
        timeouts = list(rig.cond.timeouts)
        release(rig, consumers)
        assert early is None, f"returned {early[0]!r} twelve hours early"
        short = min((t for t in timeouts if t is not None), default=POLL_FLOOR)
        return reads, waits, cpu, short

    spun = [0]  # times the last idle consumer took the lock

    def busy(cpu: float) -> str:
        """What a consumer idle for :data:`IDLE` seconds did that made it a busy loop."""
        if spun[0] > SPIN_TAKES:
            return f"took the lock {spun[0]:,} times (a loop around `with self._cond`)"
        return f"{cpu:.2f} s of CPU"

    def no_poll_loop() -> None:
        reads, waits, cpu, short = idle(nightly=True)
        assert reads <= 1 and waits <= 1, (
            f"a sleep or poll loop: with nothing due for 12 h, pop_due read the clock {reads} "
            f"times and waited {waits} times in {IDLE:g} s; wait on the condition once, for "
            "the whole delay until the head is due"
        )
        assert cpu < 0.15, f"a busy loop: {busy(cpu)} in {IDLE:g} s with nothing due"
        assert short >= POLL_FLOOR, (
            f"a poll loop: with nothing due for 12 h, pop_due waited {short:g} s at a time, "
            f"so it wakes {TWELVE_HOURS / max(short, 1e-3):,.0f} times before the head is due; "
            "wait once, with timeout = due - now (a push that makes a new head wakes it)"
        )
        reads, waits, cpu, short = idle(nightly=False)
        assert waits <= 1 and short >= POLL_FLOOR and cpu < 0.15, (
            "a poll loop: with nothing queued, pop_due "
            + (
                f"waited {short:g} s at a time"
                if short < POLL_FLOOR
                else f"waited {waits} times in {IDLE:g} s"
                if waits > 1
                else f"took {busy(cpu)} in {IDLE:g} s"
            )
            + "; while the queue is empty, wait with no timeout (self._cond.wait()): only a "
            "push can give it something to do, and a push notifies"
        )

    def re_tests_after_a_wake_up() -> None:
        parked = new_rig()
        fill(parked, [("nightly", parked.clock.peek() + TWELVE_HOURS)])
        empty = new_rig()
        on_parked = Consumers(parked.queue, parked.clock)
        on_empty = Consumers(empty.queue, empty.clock)
        try:
            park(parked, on_parked)
            park(empty, on_empty)
            for _ in range(2):
                wake(parked)
                wake(empty)
            for consumers, rig, where in [
                (on_parked, parked, "a task due in 12 h"),
                (on_empty, empty, "nothing"),
            ]:
                try:
                    early = consumers.next(0.1)
                except ReturnedNone:  # the None is the fault, whatever the `if`
                    raise AssertionError(
                        f"after a spurious wake-up with {where} queued, {RETURNED_NONE}"
                    ) from None
                except AssertionError as error:
                    if not rig.cond.waits:  # it ended before it ever waited: not about `if`
                        raise
                    raise AssertionError(
                        f"after a spurious wake-up with {where} queued, {error}: `if` where "
                        "`while` is needed (re-test the predicate after every wait)"
                    ) from None
                assert early is None, (
                    f"a wake-up nobody asked for made pop_due return {early[0]!r} with "
                    f"{where} due: `if` where `while` is needed (a wait can end by a "
                    "notify, a timeout, or spuriously: re-test after every wait)"
                )
        finally:
            release(parked, on_parked)
            release(empty, on_empty)

    def push_wakes_a_parked_timer() -> None:
        rig = new_rig()
        fill(rig, [("nightly", rig.clock.peek() + TWELVE_HOURS)])
        consumers = Consumers(rig.queue, rig.clock)
        try:
            park(rig, consumers)
            due = rig.clock.peek()
            locked(rig, lambda: rig.queue.push("urgent", due), "push('urgent')")
            _expect(
                consumers,
                "urgent",
                due,
                rig.clock,
                "a timer parked 12 h on 'nightly' slept through a push due now; a push "
                "that makes a new head must notify the condition",
            )
        finally:
            release(rig, consumers)

    def push_wakes_a_waiter_on_an_empty_queue() -> None:
        rig = new_rig()
        consumers = Consumers(rig.queue, rig.clock)
        try:
            park(rig, consumers)
            due = rig.clock.peek()
            try:  # the consumer waits on the condition, so the lock is free
                bounded(
                    lambda: rig.queue.push("first", due),
                    "push('first')",
                    lambda: _held_while_waiting(rig) or _alone(rig, PUSH_WAITING),
                    min(HELD, push_patience[0]),
                )
            except AssertionError:
                push_patience[0] = 0.1
                raise
            _expect(
                consumers,
                "first",
                due,
                rig.clock,
                "a consumer waiting on an empty queue slept through a push due now: the "
                "first entry of an empty queue is the new head, so push must notify for it "
                "too (a test such as `due < self._heap[0][0]`, made only when there is a "
                "head, leaves that case out)",
            )
        finally:
            release(rig, consumers)

    def push_re_arms_a_waiting_timer() -> None:
        tried(re_arm_a_waiting_timer, PUSHED_IN_TIME)

    def re_arm_a_waiting_timer() -> bool:
        rig = new_rig()
        fill(rig, [("nightly", rig.clock.peek() + TWELVE_HOURS)])
        consumers = Consumers(rig.queue, rig.clock)
        try:
            park(rig, consumers)
            due = rig.clock.peek() + 0.2
            before = rig.cond.notifies + rig.cond.notify_alls
            strays = rig.cond.strays
            locked(rig, lambda: rig.queue.push("soon", due), "push('soon')")
            # push may have seen its head due already (a pop_due that raised is reported as such)
            if not consumers.raised and rig.clock.peek() >= due:
                return False
            notifies = rig.cond.notifies + rig.cond.notify_alls - before
            _expect(
                consumers,
                "soon",
                due,
                rig.clock,
                lambda: (
                    "a timer waiting toward 'nightly', 12 h off, slept through a new head "
                    "due in 0.2 s; "
                    + _why_slept(rig, consumers, 0.2, notifies, rig.cond.strays - strays)
                ),
            )
        finally:
            release(rig, consumers)
        return True

    def two_waiters_both_re_arm() -> None:
        tried(wake_both_of_two_waiters, PUSHED_IN_TIME)

    def wake_both_of_two_waiters() -> bool:
        rig = new_rig()
        fill(rig, [("nightly", rig.clock.peek() + TWELVE_HOURS)])
        consumers = Consumers(rig.queue, rig.clock, count=2)
        got: list[object] = []
        try:
            park(rig, consumers, 2)
            due = rig.clock.peek() + 0.1
            # what the two pushes do: not the fill's push into the empty queue before
            # them, nor the release's after them
            notifies, notify_alls = -rig.cond.notifies, -rig.cond.notify_alls
            strays = -rig.cond.strays
            locked(rig, lambda: rig.queue.push("first", due), "push('first')")
            # push may have seen its head due already (a pop_due that raised is reported as such)
            if not consumers.raised and rig.clock.peek() >= due:
                return False
            # same instant, later arrival: not a new head
            locked(rig, lambda: rig.queue.push("second", due), "push('second')")
            notifies += rig.cond.notifies
            notify_alls += rig.cond.notify_alls
            strays += rig.cond.strays
            for _ in range(2):
                item = consumers.next(due + LATE - rig.clock.peek())
                if item is not None:
                    got.append(item[0])
            late = len(got) < 2 and notify_alls and not notifies
            waited = _late_wait(rig, consumers, 0.1) if late else None
        finally:
            release(rig, consumers)
        if notifies + notify_alls and strays == notifies + notify_alls:
            hint = STRAY_NOTIFY
        elif notifies:
            hint = "notify() wakes one, use notify_all() (your push called notify())"
        elif not notify_alls:
            hint = (
                "your push did not notify for a new head due in 0.1 s: it must notify "
                "whenever its entry becomes the head, due yet or not"
            )
        else:
            hint = f"your push called notify_all(), so {_STALE_TIMEOUT}"
        twice = sorted({name for name in map(str, got) if got.count(name) > 1})
        assert not twice, (
            f"two consumers woke for 'first' and 'second' and got {got}: {twice[0]!r} came "
            "out twice; test the head and pop it in one `with self._cond` (a consumer "
            "that lets the lock go in between lets the other take the same head)"
        )
        assert sorted(map(str, got)) == ["first", "second"], (
            f"two consumers were parked toward the 12 h head and only {got} came back: "
            + (
                waited
                or "a new head must wake every waiter, since each computed its timeout "
                f"from the old head; {hint}"
            )
        )
        return True

    def the_waiter_that_loses_waits_on() -> None:
        tried(the_loser_waits_on, PUSHED_IN_TIME)

    def the_loser_waits_on() -> bool:
        rig = new_rig()
        fill(rig, [("nightly", rig.clock.peek() + TWELVE_HOURS)])
        consumers = Consumers(rig.queue, rig.clock, count=2)
        try:
            park(rig, consumers, 2)
            due = rig.clock.peek() + 0.1
            before = rig.cond.notifies + rig.cond.notify_alls
            strays = rig.cond.strays
            locked(rig, lambda: rig.queue.push("soon", due), "push('soon')")
            # push may have seen its head due already (a pop_due that raised is reported as such)
            if not consumers.raised and rig.clock.peek() >= due:
                return False
            notifies = rig.cond.notifies + rig.cond.notify_alls - before
            _expect(
                consumers,
                "soon",
                due,
                rig.clock,
                lambda: (
                    "two consumers waiting toward 'nightly', 12 h off, slept through a new "
                    "head due in 0.1 s; "
                    + _why_slept(rig, consumers, 0.1, notifies, rig.cond.strays - strays)
                ),
            )
            extra = consumers.next(0.1)  # 'nightly' is 12 h off: nothing else comes out
        finally:
            release(rig, consumers)
        assert extra is None, (
            f"two consumers waited for 'soon', due in 0.1 s; one took it and the other "
            f"returned {extra[0]!r}, due in 12 h: a wait that timed out only says the head "
            "you waited for is due, and another consumer may have taken it first; test the "
            "head again after every wait, a timeout included (`while`, not the return value "
            "of wait)"
        )
        return True

    def push_works_under_the_lock() -> None:
        rig = new_rig()
        read, moved = threading.Event(), threading.Event()
        fill(rig, [("nightly", WatchedDue(rig.clock.peek() + TWELVE_HOURS, read, moved))])
        read.clear()  # from here, only a push that reads the heap compares nightly's due
        moved.clear()
        rig.cond.reaching = moved  # set when the push reaches for the condition's lock
        if not rig.cond.inner.acquire(timeout=HELD):
            raise AssertionError(f"the checker could not take the lock in {HELD:g} s")
        try:  # while the checker holds the lock, a push must wait for it
            pushing = _Stoppable(partial(rig.queue.push, "soon", rig.clock.peek() + 60), None)
            pushing.start()
            # until the push reads the heap, or reaches for the lock first (as it should);
            # a push that takes a lock of its own under the Condition sets neither
            moved.wait(HELD)
            raced = read.is_set()
        finally:
            rig.cond.reaching = None
            rig.cond.inner.release()
        pushing.join(HELD)
        pushing.halt()
        assert not raced, _RACES

    def cancel_works_under_the_lock() -> None:
        rig = new_rig()
        fill(rig, [("nightly", rig.clock.peek() + TWELVE_HOURS)])
        seen = threading.Event()  # the cancel reached for the condition's lock, or returned
        returned = threading.Event()
        raised: list[BaseException] = []

        def cancel() -> None:
            try:
                rig.queue.cancel("nightly")
            except BaseException as error:  # the learner's code raised: re-raised below
                raised.append(error)
            finally:
                returned.set()
                seen.set()

        rig.cond.reaching = seen
        if not rig.cond.inner.acquire(timeout=HELD):
            raise AssertionError(f"the checker could not take the lock in {HELD:g} s")
        try:  # while the checker holds the lock, a cancel must wait for it
            cancelling = _Stoppable(cancel, None)
            cancelling.start()
            seen.wait(HELD)  # a cancel that takes a lock of its own under it sets neither
            unlocked = returned.is_set()
        finally:
            rig.cond.reaching = None
            rig.cond.inner.release()
        cancelling.join(HELD)
        cancelling.halt()
        if raised:
            raise raised[0]
        assert not unlocked, _CANCEL_RACES

    def cancel_then_take(dues: Mapping[str, float], cancelled: str) -> tuple[list[object], str]:
        """Push ``dues`` (task: seconds since it fell due), cancel ``cancelled`` with no
        consumer running, then take the others: what came out, and the others that did
        not (quoted, earliest due first).  The cancelled task must not come out."""
        rig = new_rig()
        now = rig.clock.peek()
        fill(rig, [(task, now - ago) for task, ago in dues.items()])
        cancels(rig, lambda: rig.queue.cancel(cancelled), f"cancel({cancelled!r})")
        others = len(dues) - 1
        consumers = Consumers(rig.queue, rig.clock, takes=others)
        try:
            got = consumers.names(others, LATE)
        finally:
            release(rig, consumers)
        assert cancelled not in got, f"the cancelled {cancelled!r} still ran: got {got}"
        due_first = sorted(dues, key=lambda task: -dues[task])
        lost = ", ".join(repr(t) for t in due_first if t != cancelled and t not in got)
        return got, lost

    def cancel_keeps_the_heap_in_order() -> None:
        # pushed in this order, the heap's list is due [6, 10, 9, 12, 18] s (20 s ago = 0):
        # taking out its head without a heapify leaves [10, 9, 12, 18], which is no heap
        dues = {"backup": 14, "report": 10, "digest": 11, "cleanup": 8, "sync": 2}
        got, lost = cancel_then_take(dues, "backup")
        expected = ["digest", "report", "cleanup", "sync"]
        if got == expected:
            return
        if sorted(map(str, got)) == sorted(expected):
            uncancelled = take_all(dues)
            why = (
                "the cancel broke the heap's order; a list with an entry taken out "
                "(list.remove, del heap[i]) is no longer a heap. Leave a tombstone (or "
                "heapq.heapify after removing, O(n))"
                if _first_out_of_order(uncancelled, dues) is None
                else f"with no cancel, the same five came out as {uncancelled}: not the "
                f"cancel, the heap's own order is wrong; {ORDER_HINT}"
            )
        elif lost:
            why = f"cancel('backup') lost {lost}; {_CANCELS_ONE}"
        else:
            why = "the earliest due comes out first"
        raise AssertionError(
            f"five tasks all due already, 'backup' (the earliest) cancelled: expected "
            f"{', '.join(expected)}, got {got}: {why}"
        )

    def cancelled_entry_never_runs() -> None:
        tried(cancel_a_parked_head, "the checker's cancel returned only once its task was due")

    def cancel_a_parked_head() -> bool:
        rig = new_rig()
        start = rig.clock.peek()
        # Once a consumer was seen holding the lock (the cancel's bound cut to HELD_AGAIN),
        # 'doomed' is due after that bound: a cancel the consumer holds up is then caught
        # while the consumer still waits, which says which lock.  Due within it, the
        # consumer woke first, took 'doomed' and, as often as not, the lock again (a lock
        # is not handed to its oldest waiter); when the cancel got it instead, it returned
        # as 'doomed' was due, and three such tries read "too slow to tell".
        lead = 0.1 if held[0] >= HELD else 0.1 + HELD_AGAIN
        fill(rig, [("doomed", start + lead), ("kept", start + lead + 0.05)])
        consumers = Consumers(rig.queue, rig.clock, takes=2)
        try:
            park(rig, consumers)
            # the consumer is parked on it: a tombstone now
            locked(rig, lambda: rig.queue.cancel("doomed"), "cancel('doomed')")
            late = rig.clock.peek() >= start + lead  # 'doomed' may have come out before
            first = consumers.next(start + lead + 0.05 + LATE - rig.clock.peek())
            assert first is not None, (
                f"'kept', not cancelled, did not come out within {LATE} s of its due time "
                "after cancel('doomed'): "
                + (
                    _late_wait(rig, consumers, lead + 0.05)
                    or f"{_CANCELS_ONE}, and pop_due, once it has dropped the cancelled "
                    "head, waits on for the next"
                )
            )
            if first[0] == "doomed" and late:
                return False
            assert first[0] != "doomed", (
                "the cancelled 'doomed' still ran: cancel leaves a tombstone, and pop_due "
                "drops tombstones when they reach the top"
            )
            assert first[0] == "kept", f"expected 'kept', got {first[0]!r}"
            again = rig.clock.peek()
            # pushed again after its cancel: live again
            locked(rig, lambda: rig.queue.push("doomed", again), "push('doomed')")
            wake(rig)  # this check is about tombstones, not about notify
            second = consumers.next(again + LATE - rig.clock.peek())
            assert second is not None and second[0] == "doomed", (
                "'doomed', cancelled and then pushed again, never came back: a tombstone "
                "must kill the old entry only (remember the sequence of each task's live entry)"
            )
        finally:
            release(rig, consumers)
        return True

    def cancel_leaves_the_others() -> None:
        # 'digest' is neither the head nor the last entry: a cancel that takes out the
        # head (heapq.heappop), whichever task it is, or forgets every task, shows here
        got, lost = cancel_then_take(
            {"backup": 4, "digest": 3, "report": 2, "cleanup": 1}, "digest"
        )
        expected = ["backup", "report", "cleanup"]
        assert not lost, (
            f"four tasks all due already, only 'digest' cancelled (not the head): expected "
            f"{', '.join(expected)}, got {got}: cancel('digest') lost {lost}; "
            f"{_CANCELS_ONE} (a heapq.heappop in cancel takes out the head, whichever task "
            "that is)"
        )
        assert got == expected, (
            f"expected {', '.join(expected)}, got {got}: the earliest due comes out first"
        )

    def cancel_of_a_task_not_queued() -> None:
        rig = new_rig()
        fill(rig, [("once", rig.clock.peek() - 1)])
        consumers = Consumers(rig.queue, rig.clock, takes=2)
        try:
            got = consumers.next(LATE)
            assert got is not None and got[0] == "once", f"expected 'once' at once, got {got}"
            # taken already, then again, then a task never pushed
            for task in ("once", "once", "never-pushed"):
                try:
                    locked(rig, partial(rig.queue.cancel, task), f"cancel({task!r})")
                except (AssertionError, NotImplementedError):
                    raise  # NotImplementedError: cancel is not written yet, nothing to explain
                except Exception as error:
                    raise AssertionError(
                        f"cancel({task!r}) of a task not queued raised "
                        f"{type(error).__name__}: {error}; a cancel can race with the run "
                        "that just took the task, or come twice: then it does nothing"
                    ) from None
            again = rig.clock.peek()
            locked(rig, partial(rig.queue.push, "once", again), "push('once')")
            wake(rig)  # this check is about cancel, not about notify
            _expect(
                consumers,
                "once",
                again,
                rig.clock,
                "pushed again after a cancel that found it already taken",
            )
        finally:
            release(rig, consumers)

    def re_push_replaces_the_entry() -> None:
        rig = new_rig()
        start = rig.clock.peek()
        # 'report' rescheduled: its entry at +0.1 s is dead; 'digest' again, same instant
        fill(
            rig,
            [
                ("report", start + 0.1),
                ("report", start + 0.25),
                ("digest", start + 0.3),
                ("digest", start + 0.3),
            ],
        )
        consumers = Consumers(rig.queue, rig.clock, takes=3)
        got: list[tuple[object, float]] = []
        try:
            for _ in range(2):
                item = consumers.next(start + 0.3 + LATE - rig.clock.peek())
                if item is None:
                    break
                got.append(item)
            extra = consumers.next(0.1)  # nothing is left to come out
            if extra is not None:
                got.append(extra)
            waited = _late_wait(rig, consumers, 0.3) if not got else None
        finally:
            release(rig, consumers)
        names = [name for name, _ in got]
        assert names.count("report") < 2, (
            "'report', pushed at +0.1 s and pushed again at +0.25 s, came out twice: "
            "pushing a queued task replaces its entry, so the older entry is a tombstone "
            "(remember the sequence of each task's live entry)"
        )
        assert names.count("digest") < 2, (
            "'digest', pushed twice for the same instant (+0.3 s), came out twice: the "
            "older entry must die even when the due times are equal (remember the "
            "sequence of each task's live entry, not its due time)"
        )
        assert names == ["report", "digest"], (
            f"pushed 'report' at +0.1 s, again at +0.25 s, and 'digest' twice at +0.3 s; "
            f"expected report, digest, got {names}" + (f": {waited}" if waited else "")
        )
        late = got[0][1] - start
        assert late >= 0.25, (
            f"'report' came out at +{late:.2f} s, at the due time it was first pushed with: "
            "pushing it again at +0.25 s replaces its entry"
        )

    def logarithmic_push_and_pop() -> None:
        rig = new_rig()
        counter = ComparisonCounter()
        now = rig.clock.peek()
        # Distinct due instants, all passed, in a shuffled order: every pop returns at once.
        dues = [now - 1 - (n * 7919 % HEAP_SIZE) / HEAP_SIZE for n in range(HEAP_SIZE)]
        # a sort on every push takes seconds here: let it, so the count can name it
        entries = [(f"job-{n}", CountedDue(due, counter)) for n, due in enumerate(dues)]
        fill(rig, entries, limit=FILL_LIMIT)
        pushed = counter.count
        consumers = Consumers(rig.queue, rig.clock, takes=HEAP_SIZE)
        out: list[object] = []
        try:
            while len(out) < HEAP_SIZE and (item := consumers.next(LATE)) is not None:
                out.append(item[0])
        finally:
            release(rig, consumers)
        got = len(out)
        assert got == HEAP_SIZE, (
            f"pushed {HEAP_SIZE} tasks, all due already, and only {got} came back"
        )
        # Any structure that orders the shuffled due instants compares them: none compared
        # means the queue keeps copies (float(due)), and its cost cannot be seen; or that
        # it orders its entries by something else (the sequence before the due time).
        compared = counter.count
        late = _first_out_of_order(out, {f"job-{n}": now - due for n, due in enumerate(dues)})
        assert compared or late is None, (
            f"{HEAP_SIZE} tasks, all due already, did not come out earliest first, and your "
            f"queue never compared the due instants pushed: {late}; it orders its entries by "
            "something else (a field before the due time?), so this check cannot count what "
            "ordering them by due time would cost"
        )
        assert compared, (
            f"{HEAP_SIZE} tasks came out earliest first, and your queue never compared the "
            "due instants pushed: it keeps copies of them (float(due) in push?), so this "
            "check cannot count what your push and pop cost; store due as it is given (it "
            "is a number already)"
        )
        budget = COMPARISONS_PER_ENTRY * HEAP_SIZE
        assert counter.count <= budget, (
            f"{HEAP_SIZE} pushes and pops compared due times {counter.count:,} times "
            f"({pushed:,} in the pushes), about {counter.count // HEAP_SIZE} per task where a "
            f"heap needs about 2 * log2({HEAP_SIZE}) = 20: a sort, a heapify or a scan on "
            "every push or pop costs O(n) each; keep a heap (heapq.heappush / heappop, "
            "O(log n))"
        )

    def cancel_leaves_a_tombstone() -> None:
        """Cancel half of HEAP_SIZE queued tasks, every other one: a tombstone costs no
        comparison of a due time or a name; taking the entry out of the heap (a filter, a
        ``list.remove``, a heapify) costs O(n) of them per cancel.  (A scan that matches
        entries by sequence number alone compares neither, and is not seen.)"""
        rig = new_rig()
        counter = ComparisonCounter()
        later = rig.clock.peek() + TWELVE_HOURS
        names = [CountedName(f"job-{n}", counter) for n in range(HEAP_SIZE)]
        dues = [CountedDue(later + n * 7919 % HEAP_SIZE, counter) for n in range(HEAP_SIZE)]
        fill(rig, list(zip(names, dues, strict=True)), limit=FILL_LIMIT)
        cancelled = names[::2]
        counter.count = counter.equalities = 0

        def cancel_all() -> None:
            for name in cancelled:
                rig.queue.cancel(name)

        cancels(rig, cancel_all, f"{len(cancelled)} cancels", FILL_LIMIT)
        spent = counter.count + counter.equalities
        budget = COMPARISONS_PER_ENTRY * len(cancelled)
        assert spent <= budget, (
            f"cancelling {len(cancelled):,} of {HEAP_SIZE:,} queued tasks compared due times "
            f"or task names {spent:,} times, about {spent // len(cancelled)} per cancel: a "
            "cancel that takes its entry out of the heap (a filter, list.remove, a heapify) "
            "costs O(n); leave a tombstone: forget the task's live sequence, and let pop_due "
            "drop the entry when it reaches the top (O(1))"
        )

    checks: list[Check] = [
        ("takes the time from the clock it was given", reads_the_clock_given),
        ("returns what is due at once, due first, then arrival", due_now_in_order),
        (
            f"returns shuffled tasks earliest first: {ORDER_ROUNDS} small heaps, one of "
            f"{HEAP_SIZE:,}",
            in_due_order,
        ),
        ("waits exactly the delay until the head is due", waits_exactly_the_delay),
        ("no sleep or poll loop while nothing is due", no_poll_loop),
        ("re-tests in a while after a spurious wake-up", re_tests_after_a_wake_up),
        ("a push due now wakes a timer parked 12 h", push_wakes_a_parked_timer),
        (
            "a push into an empty queue wakes a consumer waiting on it",
            push_wakes_a_waiter_on_an_empty_queue,
        ),
        (
            "a push due in 0.2 s re-arms a timer waiting on a later head",
            push_re_arms_a_waiting_timer,
        ),
        ("a new head wakes both of two waiters (notify_all)", two_waiters_both_re_arm),
        (
            "one new head, two waiters: one takes it, the other waits on",
            the_waiter_that_loses_waits_on,
        ),
        ("a cancelled entry never runs; pushed again, it does", cancelled_entry_never_runs),
        ("cancelling the head keeps the others in order", cancel_keeps_the_heap_in_order),
        ("cancelling one task leaves every other task queued", cancel_leaves_the_others),
        ("push reads and changes the heap only under the lock", push_works_under_the_lock),
        ("cancel changes the queue only under the lock", cancel_works_under_the_lock),
        (
            "cancelling a task not queued (taken, twice, unknown) does nothing",
            cancel_of_a_task_not_queued,
        ),
        ("pushing a queued task again replaces its entry", re_push_replaces_the_entry),
        ("push and pop cost O(log n): a heap, not a sort or a scan", logarithmic_push_and_pop),
        ("cancel costs O(1): a tombstone, not a removal", cancel_leaves_a_tombstone),
    ]
    return [(description, _hinted(check)) for description, check in checks]


UNORDERED_ENTRIES = (
    "heapq compares whole entries, and a tuple field by field: two entries due at the same "
    "instant compare their next field, and that one has no order; put a sequence counter "
    "right after the due time, (due, sequence, task), so no comparison goes past it (an "
    "entry class of your own needs an order: @dataclass(order=True), the task a "
    "field(compare=False))"
)
OUTSIDE_THE_LOCK = (
    "a Condition's wait, notify and notify_all are called holding its lock, inside `with "
    "self._cond:` (the wait lets go of it while it waits and takes it back to return); "
    "notify after the change, in the same `with` block"
)
HINTS = (
    ("not supported between instances of", UNORDERED_ENTRIES),  # '<' not supported ...
    ("un-acquired lock", OUTSIDE_THE_LOCK),  # cannot notify (wait) on un-acquired lock
)
"""What an error the queue raised says, and what the checker adds to it: the mistake it
names."""


def _hinted(check: Callable[[], None]) -> Callable[[], None]:
    """``check``, its failure told why when the queue raised one of the errors of
    :data:`HINTS` (in the checker's call, or a pop_due that raised it)."""

    def checked() -> None:
        try:
            check()
        except AssertionError as failure:
            said = str(failure)
            hint = next((h for text, h in HINTS if text in said and h not in said), None)
            if hint is None:
                raise
            raise AssertionError(f"{said}: {hint}") from None
        except Exception as error:
            hint = next((h for text, h in HINTS if text in str(error)), None)
            if hint is None:
                raise
            raise AssertionError(f"raised {type(error).__name__}: {error}: {hint}") from None

    return checked


def check_task_queue(make_queue: Callable[[Any], Any]) -> None:
    """Run every timer check against ``make_queue`` (your ``TaskQueue`` class)."""
    check_answer(make_queue, timer_checks, "check_task_queue(TaskQueue)", what="class", limit=None)


def check_wakes_for_a_push(make_queue: Callable[[Any], Any]) -> None:
    """Run only the parked-timer check: a task due now wakes a timer parked 12 h."""

    def parked_timer_check(answer: Callable[[Any], Any]) -> list[Check]:
        return [c for c in timer_checks(answer) if "parked 12 h" in c[0]]

    check_answer(
        make_queue,
        parked_timer_check,
        "check_wakes_for_a_push(TaskQueue)",
        what="class",
        limit=None,
    )
