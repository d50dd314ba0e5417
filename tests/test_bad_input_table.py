# The rows capture their wrong value as a lambda's default (``lambda v=value: ...``),
# whose type mypy cannot infer ([misc]); the values are wrong on purpose.
# mypy: disable-error-code="misc"
"""Bad input, as a user who makes mistakes gives it, across the public API (a table).

The house rule: a wrong type or a wrong value is a clear exception of the package's
own (a ``LldschedError``: ``except LldschedError`` catches every mistake below; a
``ValidationError`` is also a ``ValueError``), its message quotes
the bad value (``repr``, or the words given in the row), and nothing registered is
lost or changed: each verb row compares a snapshot of every task (status, due time,
definition, counters, the dead letter, the heap) before and after.

Each row is ``(label, call, bad)``: ``call`` makes the mistake, ``bad`` is the value
the message must quote (a ``str`` marked ``Named(...)`` is looked for as it is).
The verb rows run on both runtimes, a ``Scheduler`` (never started: no thread runs)
and a ``Simulation``, each holding a scheduled, a paused, a cancelled and a retired
task.  Nothing here sleeps; the whole file runs in about a second.
"""

from __future__ import annotations

import asyncio
import functools
import math
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    EventLog,
    FakeClock,
    FixedDelay,
    FixedRate,
    Jittered,
    LldschedError,
    MisfirePolicy,
    OneTime,
    Overlap,
    RetryPolicy,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    TaskRetiredError,
    Window,
)
from lldsched.cli import main as cli_main
from lldsched.views import report

HUGE = 10**400  # an int no float holds
NAN = math.nan
INF = math.inf
NAIVE = datetime(2026, 1, 5, 9, 0)
AWARE = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
T0 = AWARE.timestamp()


def noop() -> None:
    return None


def one_argument(value: int) -> int:
    return value


def yields() -> Iterator[int]:  # a generator function: calling it runs none of its body
    yield 1


async def yields_async() -> AsyncIterator[int]:
    yield 1


class YieldsWhenCalled:
    async def __call__(self) -> AsyncIterator[int]:
        yield 1


async def fetches() -> int:
    return 1


@dataclass(frozen=True)
class Named:
    """What the message must contain when it is not the bad value's ``repr``."""

    words: str


def ids(rows: list[tuple[str, Any, object]]) -> list[str]:
    """The rows' labels as test ids: stable across runs (no ``at 0x...`` address) and short
    (``10**400`` rather than its 401 digits)."""
    return [
        re.sub(r" at 0x[0-9a-f]+", "", label.replace(repr(HUGE), "10**400")) for label, _, _ in rows
    ]


def check_error(error: BaseException, bad: object) -> None:
    """One of the package's errors, whose message quotes ``bad``."""
    assert isinstance(error, LldschedError), (
        f"{type(error).__name__} is not an LldschedError: {error}"
    )
    wanted = bad.words if isinstance(bad, Named) else repr(bad)
    assert wanted in str(error), f"{str(error)!r} does not quote {wanted!r}"


# -- constructors and values (no runtime) ----------------------------------------

Build = Callable[[], object]

# The loop variables of the tables: a wrong value of any type, on purpose.
value: Any
key: str

BUILDS: list[tuple[str, Build, object]] = []


def build(label: str, call: Build, bad: object) -> None:
    BUILDS.append((label, call, bad))


for value in (None, -1, 0, NAN, INF, HUGE, True, "60", timedelta(seconds=-5)):
    build(f"FixedRate({value!r})", lambda v=value: FixedRate(v), value)
    build(f"FixedDelay({value!r})", lambda v=value: FixedDelay(v), value)
for value in (None, -1, NAN, INF, HUGE, True, "60", timedelta(seconds=-5)):  # 0 is a backoff
    build(f"RetryPolicy(initial_backoff={value!r})",
          lambda v=value: RetryPolicy(initial_backoff=v), value)  # fmt: skip
for value in (None, -1, NAN, INF, HUGE, True, "60", timedelta(seconds=-5)):
    build(f"FixedRate(60, start_delay={value!r})",
          lambda v=value: FixedRate(60, start_delay=v), value)  # fmt: skip
    build(f"OneTime(delay={value!r})", lambda v=value: OneTime(delay=v), value)
    build(f"MisfirePolicy(grace={value!r})", lambda v=value: MisfirePolicy(grace=v), value)
    build(f"Jittered(max_delay={value!r})",
          lambda v=value: Jittered(FixedRate(60), v, seed=1), value)  # fmt: skip
    build(f"FakeClock().advance({value!r})", lambda v=value: FakeClock().advance(v), value)
# A number of seconds past the span of a datetime (checks.LONGEST): FixedRate(1.7e308) made
# its task due at inf after one run, and a duration of 1e300 a record no frame could hold.
for value in (1e300, -1e300, 3.2e11, timedelta.max):
    build(f"FixedRate({value!r})", lambda v=value: FixedRate(v), value)
    build(f"OneTime(delay={value!r})", lambda v=value: OneTime(delay=v), value)
    build(f"RetryPolicy(max_backoff={value!r})",
          lambda v=value: RetryPolicy(max_backoff=v), value)  # fmt: skip
# A step below a microsecond (checks.FINEST) is lost in an instant's float: FixedRate(1e-9)
# ran one slot forever at one instant, and so did FixedDelay(0) on a clock that stands
# still; Jittered(max_delay=1e-300) raised OverflowError.
for value in (1e-9, 5e-324, 9.99e-7):
    build(f"FixedRate({value!r})", lambda v=value: FixedRate(v), value)
    build(f"FixedDelay({value!r})", lambda v=value: FixedDelay(v), value)
    build(f"Jittered(max_delay={value!r})",
          lambda v=value: Jittered(FixedRate(60), v, seed=1), value)  # fmt: skip
build("RetryPolicy(multiplier=1e300)", lambda: RetryPolicy(multiplier=1e300), 1e300)
# An instant a datetime cannot show (past year 9999, before year 1) is refused: a task due
# then could not be explained or listed (OneTime(at=1e300).explain() raised OverflowError).
PAST_9999 = (1e300, -1e300, 253402300800.0, datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC))
for value in (NAN, INF, HUGE, True, "2026-01-05", NAIVE, timedelta(seconds=5), *PAST_9999):
    build(f"OneTime(at={value!r})", lambda v=value: OneTime(at=v), value)
    build(f"Window(start={value!r})", lambda v=value: Window(FixedRate(60), start=v), value)
    build(f"FakeClock({value!r})", lambda v=value: FakeClock(v), value)
    build(f"Simulation(start={value!r})", lambda v=value: Simulation(start=v), value)
for value in PAST_9999:
    build(f"Window(end={value!r})", lambda v=value: Window(FixedRate(60), end=v), value)
    build(f"FakeClock().set({value!r})", lambda v=value: FakeClock().set(v), value)
build("FakeClock(T0).advance(1e300)", lambda: FakeClock(T0).advance(1e300), 1e300)
build("FakeClock(T0).set(-(2**53) - 1)", lambda: FakeClock(T0).set(-(2**53) - 1), -(2**53) - 1)
build("Window() with no bound", lambda: Window(FixedRate(60)), Named("needs at least one of"))
for value in (0, -1, 2.5, True, "3"):
    build(f"RetryPolicy(max_attempts={value!r})",
          lambda v=value: RetryPolicy(max_attempts=v), value)  # fmt: skip
    build(f"MisfirePolicy(max_catch_up={value!r})",
          lambda v=value: MisfirePolicy(max_catch_up=v), value)  # fmt: skip
    build(f"Window(max_runs={value!r})",
          lambda v=value: Window(FixedRate(60), max_runs=v), value)  # fmt: skip
for value in (NAN, 0.5, True, "2", INF, HUGE):
    build(f"RetryPolicy(multiplier={value!r})", lambda v=value: RetryPolicy(multiplier=v), value)
for value in (-0.1, 1.5, NAN, True, "0.1"):
    build(f"RetryPolicy(jitter={value!r})", lambda v=value: RetryPolicy(jitter=v), value)
build("FixedRate(60, on_overrun='skip')", lambda: FixedRate(60, on_overrun="skip"), "skip")  # type: ignore[arg-type]
build("MisfirePolicy(on_misfire='skip')",
      lambda: MisfirePolicy(on_misfire="skip"), "skip")  # type: ignore[arg-type]  # fmt: skip
build("OneTime(at=..., delay=...)", lambda: OneTime(at=5, delay=5), Named("at"))
build("Window(start after end)", lambda: Window(FixedRate(60), start=10, end=5),
      Named("start 10 is after its end 5"))  # fmt: skip
build("Jittered(60)", lambda: Jittered(60, 5, seed=1), 60)  # type: ignore[arg-type]
build("Jittered(FixedRate)", lambda: Jittered(FixedRate, 5, seed=1), FixedRate)  # type: ignore[arg-type]
build("Window(FixedRate)", lambda: Window(FixedRate, max_runs=1), FixedRate)  # type: ignore[arg-type]
build("Jittered(seed='1')", lambda: Jittered(FixedRate(60), 5, seed="1"), "1")  # type: ignore[arg-type]
for value in (None, 5, "", "* * *", "61 * * * *", "@reboot", b"* * * * *"):
    build(f"CronSchedule({value!r})", lambda v=value: CronSchedule(v), value)
for value in (5, "", "Mars/Olympus", True):
    build(f"CronSchedule(tz={value!r})", lambda v=value: CronSchedule("* * * * *", tz=v), value)
CRON = CronSchedule("0 3 * * *")
# Decimal("Infinity") compared with a float raised decimal.InvalidOperation from the search.
for value in (None, "5", NAIVE, AWARE, timedelta(seconds=5), True, False, Decimal("Infinity")):
    build(f"cron.next_after({value!r})", lambda v=value: CRON.next_after(v), value)
    build(f"cron.first_run({value!r})", lambda v=value: CRON.first_run(v), value)
# A schedule's other queries of an instant: a bool is not one (checks.instant).
for label, query in (
    ("FixedRate(60).first_run", FixedRate(60).first_run),
    ("FixedDelay(60).first_run", FixedDelay(60).first_run),
    ("OneTime(delay=5).first_run", OneTime(delay=5).first_run),
    ("Jittered(FixedRate(60)).first_run", Jittered(FixedRate(60), 5, seed=1).first_run),
    ("FixedRate(60).slot_after", FixedRate(60).slot_after),
    ("FixedDelay(60).slot_after", FixedDelay(60).slot_after),
    ("OneTime(delay=5).slot_after", OneTime(delay=5).slot_after),
    ("Jittered(FixedRate(60)).slot_after", Jittered(FixedRate(60), 5, seed=1).slot_after),
    ("cron.slot_after", CRON.slot_after),
    ("Window(FixedRate(60), start=0).first_run", Window(FixedRate(60), start=0).first_run),
):
    for value in (True, "5", None, NAN, HUGE):  # NaN: a ValueError from math.floor
        build(f"{label}({value!r})", lambda q=query, v=value: q(v), value)
for label, two_instants in (
    ("FixedRate(60).first_slot_after", FixedRate(60).first_slot_after),
    ("FixedDelay(60).first_slot_after", FixedDelay(60).first_slot_after),
    ("OneTime(delay=5).first_slot_after", OneTime(delay=5).first_slot_after),
    (
        "Jittered(FixedRate(60)).first_slot_after",
        Jittered(FixedRate(60), 5, seed=1).first_slot_after,
    ),
):
    build(f"{label}(True, 0)", lambda q=two_instants: q(True, 0), True)
    build(f"{label}(0, True)", lambda q=two_instants: q(0, True), True)
    build(f"{label}(0, nan)", lambda q=two_instants: q(0, NAN), NAN)
    build(f"{label}(0, inf)", lambda q=two_instants: q(0, INF), INF)
for value in (None, "5", NAIVE, AWARE, timedelta(seconds=5), True):
    build(f"cron.fire_times({value!r}, 2)", lambda v=value: CRON.fire_times(v, 2), value)
for value in (None, "5", NAIVE, HUGE):
    build(f"cron.prev_before({value!r})", lambda v=value: CRON.prev_before(v), value)
build("cron.next_after(10**400)", lambda: CRON.next_after(HUGE), HUGE)
for value in (None, -1, 2.5, True, "5"):
    build(f"cron.preview({value!r})", lambda v=value: CRON.preview(v), value)
    build(f"cron.fire_times(0, {value!r})", lambda v=value: CRON.fire_times(0, v), value)
build("cron.preview(10**9)", lambda: CRON.preview(10**9), 10**9)  # listed at once: it would hang
for value in (NAN, INF, True, "5", timedelta(seconds=5)):
    build(f"cron.preview(start={value!r})", lambda v=value: CRON.preview(2, start=v), value)

# The runtimes' own settings.
for value in (0, -1, 2.5, True, "4", None, HUGE):
    build(f"Scheduler(workers={value!r})", lambda v=value: Scheduler(workers=v), value)
    build(f"Simulation(workers={value!r})", lambda v=value: Simulation(workers=v), value)
for value in (-1, 2.5, True, "100", HUGE):
    build(f"Scheduler(history_limit={value!r})",
          lambda v=value: Scheduler(history_limit=v), value)  # fmt: skip
    build(f"Simulation(history_limit={value!r})",
          lambda v=value: Simulation(history_limit=v), value)  # fmt: skip
for value in (NAN, INF, 2.5, True, "4", timedelta(seconds=1)):
    build(f"Scheduler(seed={value!r})", lambda v=value: Scheduler(seed=v), value)
    build(f"Simulation(seed={value!r})", lambda v=value: Simulation(seed=v), value)
for value in (0, -1, 1e-9, NAN, INF, HUGE, True, "60"):  # 1e-9: a timer never asleep
    build(f"Scheduler(max_wait={value!r})", lambda v=value: Scheduler(max_wait=v), value)
for value in (0, -1, True, "10"):
    build(f"Scheduler(listener_backlog={value!r})",
          lambda v=value: Scheduler(listener_backlog=v), value)  # fmt: skip
    build(f"Scheduler(max_coroutines={value!r})",
          lambda v=value: Scheduler(max_coroutines=v), value)  # fmt: skip
    build(f"Scheduler(handoff={value!r})", lambda v=value: Scheduler(handoff=v), value)
for value in (5, "", "Mars/Olympus"):
    build(f"Scheduler(tz={value!r})", lambda v=value: Scheduler(tz=v), value)
    build(f"Simulation(tz={value!r})", lambda v=value: Simulation(tz=v), value)
for value in (5, "", "a\nb"):
    build(f"Scheduler(name={value!r})", lambda v=value: Scheduler(name=v), value)
for value in (5, "clock"):
    build(f"Scheduler(clock={value!r})", lambda v=value: Scheduler(clock=v), value)
for value in (5, "store", {}):
    build(f"Scheduler(store={value!r})", lambda v=value: Scheduler(store=v), value)
    build(f"Simulation(store={value!r})", lambda v=value: Simulation(store=v), value)
for value in (5, "task-", True):
    build(f"Scheduler(ids={value!r})", lambda v=value: Scheduler(ids=v), value)
    build(f"Simulation(ids={value!r})", lambda v=value: Simulation(ids=v), value)
for value in (5, None, EventLog(), "log"):
    build(f"Scheduler(listeners={value!r})", lambda v=value: Scheduler(listeners=v), value)
    build(f"Simulation(listeners={value!r})", lambda v=value: Simulation(listeners=v), value)
build("Scheduler(listeners=[5])", lambda: Scheduler(listeners=[5]), 5)  # type: ignore[list-item]
# One listener twice heard every event twice, and one remove_listener removed both.
build("Scheduler(listeners=[f, f])", lambda: Scheduler(listeners=[print, print]),
      Named("listener <built-in function print> is registered already"))  # fmt: skip
build("Simulation(listeners=[f, f])", lambda: Simulation(listeners=[print, print]),
      Named("listener <built-in function print> is registered already"))  # fmt: skip
build("Simulation(listeners=[5])", lambda: Simulation(listeners=[5]), 5)  # type: ignore[list-item]
for value in (-2, 2.5, True, "1h", timedelta(seconds=-1), NAN):
    build(f"Simulation(retain_finished={value!r})",
          lambda v=value: Simulation(retain_finished=v), value)  # fmt: skip


for value in (5, None, b"x.db", 2.5, "tasks\x00.db"):
    build(f"SqliteTaskStore({value!r})", lambda v=value: SqliteTaskStore(v), value)
for key, value in [("retention", 0), ("retention", True), ("retention", "10"),
                   ("synchronous", "FAST"), ("timeout", -1), ("timeout", HUGE),
                   ("shared", 1), ("shared", "yes"), ("lease", 0), ("poll", NAN)]:  # fmt: skip
    build(f"SqliteTaskStore({key}={value!r})",
          lambda k=key, v=value: SqliteTaskStore(":memory:", **{k: v}), value)  # fmt: skip

# Views that take records or frames.
for value in (None, 5, "x", {}):
    build(f"report.summarize({value!r})", lambda v=value: report.summarize(v), value)
for value in (None, -1, 0, 101, NAN, True, "50"):
    build(f"report.percentile(q={value!r})", lambda v=value: report.percentile([1.0], v), value)


def refused_build(call: Build, bad: object) -> None:
    """``call()`` raises one of the package's errors quoting ``bad`` (a Scheduler built
    by mistake is shut down)."""
    with pytest.raises(Exception) as caught:  # check_error says which kind
        made = call()
        if isinstance(made, Scheduler):  # a scheduler built by mistake: stop it anyway
            made.shutdown()
    check_error(caught.value, bad)


@pytest.mark.parametrize(("label", "call", "bad"), BUILDS, ids=ids(BUILDS))
def test_a_bad_constructor_argument_is_refused_quoting_it(
    label: str, call: Build, bad: object
) -> None:
    refused_build(call, bad)


# -- verbs on a runtime holding tasks ---------------------------------------------

Runtime = Scheduler | Simulation


def register(runtime: Runtime, *args: Any, **options: Any) -> object:
    """``schedule(name, action, schedule, **options)`` on either runtime (the simulation
    takes the action as a keyword)."""
    name, action, schedule = (list(args) + ["job", noop, FixedRate(60)][len(args) :])[:3]
    if isinstance(runtime, Scheduler):
        return runtime.schedule(name, action, schedule, **options)
    return runtime.schedule(name, schedule, action=action, **options)


def decorate(runtime: Runtime, action: Any, schedule: Any = None, **options: Any) -> object:
    """``@runtime.scheduled(schedule, **options)`` over ``action``."""
    decorator = runtime.scheduled(FixedRate(60) if schedule is None else schedule, **options)
    return decorator(action)


Verb = Callable[[Runtime], object]
VERBS: list[tuple[str, Verb, object]] = []


def verb(label: str, call: Verb, bad: object) -> None:
    VERBS.append((label, call, bad))


# Registration: every argument of schedule(), wrong.
for value in (None, 5, "", "   "):
    verb(f"schedule(name={value!r})", lambda rt, v=value: register(rt, v), value)
for value in (5, "not callable", "os.path:join"):
    verb(f"schedule(action={value!r})", lambda rt, v=value: register(rt, "job", v), value)
verb("schedule(action=one_argument)", lambda rt: register(rt, "job", one_argument),
     Named("one_argument(value)"))  # fmt: skip
# A generator function ran none of its body and every run was recorded a success.
verb("schedule(action=a generator function)", lambda rt: register(rt, "job", yields),
     Named("action yields is a generator function"))  # fmt: skip
verb("schedule(action=an async generator function)",
     lambda rt: register(rt, "job", yields_async),
     Named("action yields_async is an async generator function"))  # fmt: skip
verb("@scheduled(...) over a generator function", lambda rt: decorate(rt, yields),
     Named("action yields is a generator function"))  # fmt: skip
# A partial of one, or an object whose __call__ is one, was taken: each run a success,
# '<async_generator object ...>', its body never run.
verb("schedule(action=a partial of an async generator function)",
     lambda rt: register(rt, "job", functools.partial(yields_async)),
     Named("action yields_async (in a functools.partial) is an async generator"))  # fmt: skip
verb("schedule(action=an object whose __call__ is an async generator function)",
     lambda rt: register(rt, "job", YieldsWhenCalled()),
     Named("action YieldsWhenCalled.__call__ is an async generator function"))  # fmt: skip
verb("schedule(action=a partial of such an object)",
     lambda rt: register(rt, "job", functools.partial(YieldsWhenCalled())),
     Named("action YieldsWhenCalled.__call__ (in a functools.partial) is an async"))  # fmt: skip


def called_coroutine(runtime: Runtime) -> object:
    """``schedule(..., fetches(), ...)``: the coroutine object, not the function; closed
    after, so that no "never awaited" warning is left behind."""
    coroutine = fetches()
    try:
        return register(runtime, "job", coroutine)
    finally:
        coroutine.close()


verb("schedule(action=a coroutine object)", called_coroutine, Named("not f()"))
# The action and the schedule swapped: the hint spoke of import paths for cron text.
for value in ("0 3 * * *", FixedRate(60)):
    verb(f"schedule(action={value!r}) (swapped)",
         lambda rt, v=value: register(rt, "job", v, FixedRate(60)),
         Named(f"got {value!r} (a schedule, where the action goes: Scheduler.schedule(name, "
               "action, schedule) takes the action second"))  # fmt: skip
# An import path on a thread: refused by validated()'s callable check (the core no longer
# asks isolated_action() first for a thread: the same error, one check fewer).
verb("schedule(action='json:dumps') (a thread's import path)",
     lambda rt: register(rt, "job", "json:dumps", FixedRate(60)),
     Named("got 'json:dumps' (an import path is the action of a task registered with "
           "isolation='process')"))  # fmt: skip
verb("schedule(args too many)", lambda rt: register(rt, "job", noop, FixedRate(60), args=(1,)),
     (1,))  # fmt: skip
verb("schedule(kwargs unknown)",
     lambda rt: register(rt, "job", noop, FixedRate(60), kwargs={"x": 1}), {"x": 1})  # fmt: skip
for value in (None, 60, 60.0, timedelta(seconds=60), "* * *", "61 * * * *", FixedRate, OneTime,
              int, object()):  # fmt: skip
    verb(f"schedule(schedule={value!r})",
         lambda rt, v=value: register(rt, "job", noop, v), value)  # fmt: skip
OPTIONS: list[tuple[str, object]] = [
    ("id", 5), ("id", ""), ("id", "  "), ("id", ["x"]),
    ("replace_existing", 1), ("replace_existing", "yes"), ("replace_existing", None),
    ("priority", None), ("priority", 7), ("priority", True), ("priority", "HIGH"),
    ("priority", 1.0),
    ("retry", 3), ("retry", RetryPolicy), ("retry", "never"),
    ("timeout", 0), ("timeout", -1), ("timeout", NAN), ("timeout", INF), ("timeout", HUGE),
    ("timeout", True), ("timeout", "5"), ("timeout", timedelta(seconds=-1)),
    ("args", None), ("args", "ab"), ("args", 5),
    ("kwargs", []), ("kwargs", {1: 2}), ("kwargs", "x=1"),
    ("misfire", "skip"), ("misfire", MisfirePolicy),
    ("isolation", "proc"), ("isolation", None), ("isolation", "process"),
    ("depends_on", "kept"), ("depends_on", None), ("depends_on", {"kept"}),
    ("depends_on", ["nope"]), ("depends_on", ["retired"]),
    ("overlap", "allow"), ("overlap", True),
    ("max_instances", 2),
    ("paused", 1), ("paused", None), ("paused", "yes"),
]  # fmt: skip
verb("schedule(depends_on= an id twice)",
     lambda rt: register(rt, depends_on=["kept", "kept"]), ["kept"])  # fmt: skip
verb("schedule(depends_on= a number)", lambda rt: register(rt, depends_on=[5]), 5)
for key, value in OPTIONS:
    shown: object = Named("noop") if (key, value) == ("isolation", "process") else value
    verb(f"schedule({key}={value!r})",
         lambda rt, k=key, v=value: register(rt, **{k: v}), shown)  # fmt: skip
for value in (0, -1, True, "2", None):
    verb(f"schedule(overlap=ALLOW, max_instances={value!r})",
         lambda rt, v=value: register(rt, overlap=Overlap.ALLOW, max_instances=v),
         value)  # fmt: skip
verb("schedule(overlap on a one-off)",
     lambda rt: register(rt, "job", noop, OneTime(delay=5), overlap=Overlap.ALLOW,
                         max_instances=2), Named("OneTime"))  # fmt: skip
verb("schedule(id= of a registered task)", lambda rt: register(rt, id="kept"), "kept")
# An id with a newline could forge a log line; one padded lists like another: refused.
for value in ("a\nb", "tab\there", " kept", "kept "):
    verb(f"schedule(id={value!r})", lambda rt, v=value: register(rt, id=v), value)
verb("schedule(replace_existing without id)",
     lambda rt: register(rt, replace_existing=True), Named("replace_existing"))  # fmt: skip
verb("schedule(depends_on= itself)", lambda rt: register(rt, id="kept", replace_existing=True,
                                                         depends_on=["kept"]),
     Named("kept -> kept"))  # fmt: skip
verb("schedule(a one-off that never fires)",
     lambda rt: register(rt, "job", noop, Window(FixedRate(60), end=T0 - 3600)),
     Named("never fires"))  # fmt: skip

# The decorator forms.
verb("@scheduled (bare)", lambda rt: rt.scheduled(noop), Named("noop"))  # type: ignore[arg-type]
verb("@scheduled(FixedRate)", lambda rt: rt.scheduled(FixedRate), FixedRate)  # type: ignore[arg-type]
verb("@scheduled(60)", lambda rt: rt.scheduled(60), 60)  # type: ignore[arg-type]
verb("@scheduled(...) over 5", lambda rt: decorate(rt, 5), 5)
verb("@scheduled(name=5)", lambda rt: decorate(rt, noop, name=5), 5)
verb("@scheduled(timeout=-1)", lambda rt: decorate(rt, noop, timeout=-1), -1)
verb("@scheduled(...) over one_argument", lambda rt: decorate(rt, one_argument),
     Named("one_argument(value)"))  # fmt: skip
verb("@scheduled(id='kept')", lambda rt: decorate(rt, noop, id="kept"), "kept")
verb("@scheduled(replace_existing=1)",
     lambda rt: decorate(rt, noop, id="kept", replace_existing=1), 1)  # fmt: skip

# The control verbs, given ids that are wrong, unknown or retired.
CONTROLS = ("cancel", "pause", "resume", "redrive", "task", "remove", "run_now")
for name in CONTROLS:
    for value in (None, 5, "", "nope", ["kept"], b"kept", True):
        verb(f"{name}({value!r})", lambda rt, n=name, v=value: getattr(rt, n)(v), value)
    verb(f"{name}(a retired id)", lambda rt, n=name: getattr(rt, n)("retired"), "retired")
for value in (None, 5, "nope", "retired"):
    verb(f"reschedule({value!r}, ...)", lambda rt, v=value: rt.reschedule(v, FixedRate(5)), value)
    verb(f"modify({value!r}, ...)", lambda rt, v=value: rt.modify(v, timeout=5), value)
verb("reschedule(a cancelled task)",
     lambda rt: rt.reschedule("gone", FixedRate(5)), "gone")  # fmt: skip
verb("modify(a cancelled task)", lambda rt: rt.modify("gone", timeout=5), "gone")
verb("remove(an upstream)", lambda rt: rt.remove("upstream"), "upstream")
for value in (None, 60, "* * *", FixedRate, timedelta(seconds=5)):
    verb(f"reschedule('kept', {value!r})", lambda rt, v=value: rt.reschedule("kept", v), value)
for key, value in [("priority", None), ("priority", 9), ("priority", True), ("retry", 3),
                   ("timeout", -1), ("timeout", HUGE), ("timeout", NAN), ("timeout", True),
                   ("timeout", "5")]:  # fmt: skip
    verb(f"modify('kept', {key}={value!r})",
         lambda rt, k=key, v=value: rt.modify("kept", **{k: v}), value)  # fmt: skip
for value in (None, 5, "x"):
    verb(f"add_listener({value!r})", lambda rt, v=value: rt.add_listener(v), value)


def add_twice(runtime: Runtime) -> None:
    """The same listener added twice: the first stays registered, the second is refused."""
    runtime.add_listener(print)
    try:
        runtime.add_listener(print)
    finally:
        assert runtime.remove_listener(print) and not runtime.remove_listener(print)


verb("add_listener(a listener twice)", add_twice, Named("print> is registered already"))
for value in (-1, NAN, INF, HUGE, True, "5"):
    verb(f"metrics(timeout={value!r})", lambda rt, v=value: rt.metrics(timeout=v), value)
# A shutdown refused shuts nothing down (the snapshot holds metrics().state).
for value in (-1, NAN, HUGE, True, "5"):
    verb(f"shutdown(timeout={value!r})", lambda rt, v=value: rt.shutdown(timeout=v), value)
for value in (None, 1, "yes"):
    verb(f"shutdown(drain={value!r})", lambda rt, v=value: rt.shutdown(drain=v), value)
# aclose() on either runtime: the same checks, raised in the awaiting coroutine.
for value in (-1, NAN, "5"):
    verb(f"aclose(timeout={value!r})", lambda rt, v=value: asyncio.run(rt.aclose(timeout=v)), value)
verb("aclose(drain=None)", lambda rt: asyncio.run(rt.aclose(drain=None)), None)  # type: ignore[arg-type]


# Verbs of one runtime only.
THREADED: list[tuple[str, Callable[[Scheduler], object], object]] = []
for value in (-1, NAN, INF, HUGE, True, "5", None):
    THREADED.append((f"wait_idle({value!r})", lambda s, v=value: s.wait_idle(v), value))
    THREADED.append((f"wait_drained({value!r})", lambda s, v=value: s.wait_drained(v), value))

SIMULATED: list[tuple[str, Callable[[Simulation], object], object]] = []
for value in (None, -1, NAN, INF, HUGE, True, "5", NAIVE, timedelta(seconds=5)):
    SIMULATED.append((f"run({value!r})", lambda s, v=value: s.run(v), value))
    SIMULATED.append((f"at({value!r}, fn)", lambda s, v=value: s.at(v, noop), value))
for value in (None, -1, NAN, INF, HUGE, True, "5", NAIVE):
    SIMULATED.append((f"run_for({value!r})", lambda s, v=value: s.run_for(v), value))
# An instant in the past is quoted as given, not as its epoch seconds.
YEAR_1 = datetime(1, 1, 1, tzinfo=UTC)
SIMULATED.append(("run(year 1)", lambda s: s.run(YEAR_1), YEAR_1))
SIMULATED.append(("at(year 1, fn)", lambda s: s.at(YEAR_1, noop), YEAR_1))
SIMULATED.append(("run_for(past year 9999)", lambda s: s.run_for(2.6e11), 2.6e11))
for value in (None, 5, one_argument):
    SIMULATED.append((f"at(..., fn={value!r})", lambda s, v=value: s.at(T0 + 60, v), value))
for key, value in [("duration", -1), ("duration", NAN), ("duration", HUGE), ("duration", "5"),
                   ("duration", 1e300),
                   ("duration", None), ("duration", True), ("fails", 2), ("fails", -0.1),
                   ("fails", True), ("fails", None), ("fails", "x"), ("fails", NAN)]:  # fmt: skip
    SIMULATED.append((f"schedule({key}={value!r})",
                      lambda s, k=key, v=value: s.schedule("job", FixedRate(60), **{k: v}),
                      value))  # fmt: skip
    SIMULATED.append((f"model('kept', {key}={value!r})",
                      lambda s, k=key, v=value: s.model("kept", **{k: v}), value))  # fmt: skip
for value in ("nope", "retired", None):
    SIMULATED.append((f"model({value!r})", lambda s, v=value: s.model(v, duration=5), value))
# The Scheduler's order, (name, action, schedule), given to a simulation: a bare TypeError
# ("takes 3 positional arguments but 4 were given") said nothing of the order.
SIMULATED.append(("schedule(name, action, schedule) (the Scheduler's order)",
                  lambda s: s.schedule("job", noop, FixedRate(60)),  # type: ignore[arg-type]
                  Named("got 3: <function noop")))  # fmt: skip
SIMULATED.append(("schedule(name, action, schedule) (the call to write)",
                  lambda s: s.schedule("job", noop, "0 3 * * *"),  # type: ignore[arg-type]
                  Named("schedule('job', '0 3 * * *', action=noop)")))  # fmt: skip
SIMULATED.append(("schedule(name, schedule, 5, 6)",
                  lambda s: s.schedule("job", FixedRate(60), 5, 6),  # type: ignore[arg-type]
                  Named("got 4: FixedRate(60) for schedule, then 5, 6")))  # fmt: skip
SIMULATED.append(("schedule(duration=a model of one argument)",
                  lambda s: s.schedule("job", FixedRate(60), duration=lambda rng: 1.0),  # type: ignore[arg-type]
                  Named("must take (rng, attempt)")))  # fmt: skip

LOG_CASES: list[tuple[str, Callable[[EventLog], object], object]] = [
    ("EventLog.wait_for(5)", lambda log: log.wait_for(5, timeout=0), 5),  # type: ignore[arg-type]
    ("EventLog.wait_for(None)", lambda log: log.wait_for(None, timeout=0), None),  # type: ignore[arg-type]
    ("EventLog.wait_for(timeout=-1)", lambda log: log.wait_for(bool, timeout=-1), -1),
    ("EventLog.wait_for(timeout=HUGE)", lambda log: log.wait_for(bool, timeout=HUGE), HUGE),
    ("EventLog.runs(5)", lambda log: log.runs(5), 5),  # type: ignore[arg-type]
]


def populated(kind: str) -> Runtime:
    """A runtime holding ``kept`` (scheduled), ``asleep`` (paused), ``upstream`` (with a
    dependent, ``downstream``), ``gone`` (cancelled) and ``retired`` (cancelled, then
    retired from the registry by ``retain_finished=1``)."""
    runtime: Runtime
    if kind == "threaded":
        runtime = Scheduler(clock=FakeClock(T0), retain_finished=1)
    else:
        runtime = Simulation(start=T0, retain_finished=1)
    register(runtime, "retired", id="retired")
    runtime.cancel("retired")
    register(runtime, "kept", id="kept")
    register(runtime, "asleep", id="asleep", paused=True)
    register(runtime, "upstream", id="upstream")
    register(runtime, "downstream", id="downstream", depends_on=["upstream"])
    register(runtime, "gone", id="gone")
    runtime.cancel("gone")  # "retired" leaves the registry: one finished task is kept
    with pytest.raises(TaskRetiredError):
        runtime.task("retired")
    return runtime


def snapshot(runtime: Runtime) -> object:
    """Everything a rejected call must leave as it was."""
    tasks = sorted(
        (
            task.id,
            task.name,
            task.status,
            task.next_run_at,
            task.attempt,
            task.priority,
            task.definition,
            task.run_count,
            task.generation,
            task.history,
        )
        for task in runtime.tasks()
    )
    state = runtime.metrics().state  # "new" (a Scheduler never started) or "running"
    return tasks, runtime.dead_letter(), runtime.queue_stats(), len(runtime.records()), state


@contextmanager
def populated_runtime(kind: str) -> Iterator[Runtime]:
    """:func:`populated`, shut down (a Scheduler) at the end."""
    made = populated(kind)
    yield made
    if isinstance(made, Scheduler):
        assert made.shutdown(timeout=5)


@pytest.fixture(params=["threaded", "simulated"])
def runtime(request: pytest.FixtureRequest) -> Iterator[Runtime]:
    with populated_runtime(request.param) as made:
        yield made


def refused_unchanged(runtime: Runtime, call: Verb, bad: object) -> None:
    """``call(runtime)`` raises one of the package's errors quoting ``bad``, and leaves
    every task, the dead letter, the heap and the state as they were."""
    before = snapshot(runtime)
    with pytest.raises(Exception) as caught:  # check_error says which kind
        call(runtime)
    check_error(caught.value, bad)
    assert snapshot(runtime) == before


@pytest.mark.parametrize(("label", "call", "bad"), VERBS, ids=ids(VERBS))
def test_a_bad_call_is_refused_quoting_the_value_and_changes_nothing(
    runtime: Runtime, label: str, call: Verb, bad: object
) -> None:
    refused_unchanged(runtime, call, bad)


@pytest.mark.parametrize(("label", "call", "bad"), THREADED, ids=ids(THREADED))
def test_a_bad_call_on_the_threaded_scheduler_changes_nothing(
    label: str, call: Callable[[Scheduler], object], bad: object
) -> None:
    scheduler = populated("threaded")
    assert isinstance(scheduler, Scheduler)
    before = snapshot(scheduler)
    try:
        with pytest.raises(Exception) as caught:  # check_error says which kind
            call(scheduler)
        check_error(caught.value, bad)
        assert snapshot(scheduler) == before
        assert not scheduler.running and scheduler.pending()  # not shut down by the mistake
    finally:
        assert scheduler.shutdown(timeout=5)


@pytest.mark.parametrize(("label", "call", "bad"), SIMULATED, ids=ids(SIMULATED))
def test_a_bad_call_on_the_simulation_changes_nothing(
    label: str, call: Callable[[Simulation], object], bad: object
) -> None:
    simulation = populated("simulated")
    assert isinstance(simulation, Simulation)
    before = snapshot(simulation), simulation.now
    with pytest.raises(Exception) as caught:  # check_error says which kind
        call(simulation)
    check_error(caught.value, bad)
    assert (snapshot(simulation), simulation.now) == before


@pytest.mark.parametrize(("label", "call", "bad"), LOG_CASES, ids=ids(LOG_CASES))
def test_a_bad_call_on_an_event_log_is_refused_quoting_it(
    label: str, call: Callable[[EventLog], object], bad: object
) -> None:
    log = EventLog()
    simulation = Simulation(listeners=[log])
    simulation.schedule("job", OneTime(delay=0))
    simulation.run_for(1)
    kept = log.events
    with pytest.raises(Exception) as caught:  # check_error says which kind
        call(log)
    check_error(caught.value, bad)
    assert log.events == kept


def test_a_class_given_as_a_schedule_does_not_open_the_door_to_other_classes() -> None:
    """``FixedRate`` for ``FixedRate(60)`` once remembered ``type`` as a schedule type,
    after which any class (``int``) passed registration's check unchecked."""
    simulation = Simulation()
    for schedule in (FixedRate, int, FixedRate, dict):
        with pytest.raises(LldschedError, match="schedule must provide first_run"):
            simulation.schedule("job", schedule)  # type: ignore[arg-type]
    assert simulation.tasks() == []


def test_depends_on_none_is_refused_with_or_without_other_options() -> None:
    """``depends_on=None`` was let through when no other option was given (the shortcut
    for a plain registration) and refused when one was."""
    simulation = Simulation()
    for options in ({}, {"timeout": 5}):
        with pytest.raises(LldschedError, match="depends_on must be a list of task ids, got None"):
            simulation.schedule("job", FixedRate(60), depends_on=None, **options)  # type: ignore[arg-type]
    assert simulation.tasks() == []


def test_an_injected_id_generator_that_returns_no_string_registers_nothing() -> None:
    simulation = Simulation(ids=lambda: 5)  # type: ignore[arg-type, return-value]
    with pytest.raises(LldschedError, match="task id must be a non-empty string, got 5 from"):
        simulation.schedule("job", FixedRate(60))
    assert simulation.tasks() == []


@pytest.mark.parametrize(
    ("argv", "bad"),
    [
        (["cron", "* * *"], "'* * *'"),
        (["cron", "* * * * *", "-n", "0"], "got 0"),
        (["cron", "* * * * *", "-n", "99999999999"], "got 99,999,999,999"),
        (["cron", "* * * * *", "--tz", "Mars/Olympus"], "'Mars/Olympus'"),
        (["cron", "* * * * *", "--start", "soon"], "'soon'"),
        (["simulate", "--days", "-1"], "got -1"),
        (["simulate", "--days", "nan"], "got nan"),
        (["simulate", "--days", "1e400"], "got inf"),
        (["simulate", "--workers", "0"], "got 0"),
        (["simulate", "--workers", "100000000"], "got 100,000,000"),
        (["simulate", "--max-coroutines", "0"], "--max-coroutines must be an int >= 1, got 0"),
        (["simulate", "--gantt", "chart.txt"], "'chart.txt'"),
    ],
)
def test_bad_command_line_arguments_exit_2_quoting_the_value(
    capsys: pytest.CaptureFixture[str], argv: list[str], bad: str
) -> None:
    assert cli_main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and bad in err


def test_the_table_covers_every_public_control_verb_of_both_runtimes() -> None:
    """A new public verb joins the table, or this fails naming it."""
    covered = {label.split("(")[0] for label, _, _ in VERBS + THREADED + SIMULATED}
    covered |= {"scheduled", "@scheduled"}
    no_argument = {"dead_letter", "pending", "tasks", "records", "queue_stats", "start",
                   "packed_records", "record_log", "step", "remove_listener",
                   "orphans", "schedules", "priorities"}  # fmt: skip
    for kind in (Scheduler, Simulation):
        verbs = {
            name
            for name in dir(kind)
            if not name.startswith("_") and callable(getattr(kind, name))
            and not isinstance(getattr(kind, name), type)
        }  # fmt: skip
        missing = verbs - covered - no_argument
        assert not missing, f"{kind.__name__} verbs without a bad-input row: {sorted(missing)}"
