# The calls are wrong on purpose: each row gives a parameter a value of a type it does
# not take, which mypy cannot follow ([arg-type]), captured as a lambda's default ([misc]).
# mypy: disable-error-code="arg-type,list-item,misc"
"""Extreme numbers (and a name of a million characters) across the public API.

``10**5000`` has more digits than Python converts to text (4,300 by default), so the
message meant to refuse it raised a bare ``ValueError: Exceeds the limit (4300 digits)
for integer string conversion`` from its own ``{value!r}``, naming neither the argument
nor the value; a count that took it (``RetryPolicy(max_attempts=10**5000)``) made a value
whose ``repr`` raised the same; a name of a million characters was quoted whole in
every message.  Now every message quotes what it was given through
``lldsched.errors.shown`` (docs/decisions/checking-input.md, "A bad value is quoted by one rule"),
and a count is an int of at most 640 digits (``checks.WIDEST``).

Each row gives one public constructor, verb or query every value below; a value the
row's rule takes is listed with the row (``taken``), every other one must be refused
with one of the package's errors whose message quotes it as ``quote`` says (the
abbreviation for the giant ones) and stays short, and on a runtime nothing registered
changes (the snapshot of ``tests/test_bad_input_table.py``).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from lldsched import (
    CronSchedule,
    EventLog,
    FakeClock,
    FixedDelay,
    FixedRate,
    InMemoryTaskStore,
    Jittered,
    LldschedError,
    MisfirePolicy,
    OneTime,
    Overlap,
    RetryPolicy,
    Scheduler,
    SchedulerStateError,
    Simulation,
    SqliteTaskStore,
    TaskNotFoundError,
    Window,
)
from lldsched.errors import shown
from lldsched.sim import models
from lldsched.sim.cluster_scenario import ClusterScenario, ClusterTask, Crash, Pause
from lldsched.sim.overrun import simulate_overrun
from lldsched.views import report
from lldsched.views.frames import to_frame
from lldsched.views.plots.gantt import gantt
from lldsched.views.summaries import mean_busy, utilisation
from tests.test_bad_input_table import T0, Runtime, noop, populated, register, snapshot

BIG = 10**5000
LONG = "x" * 10**6

NEGATIVE_INF = -math.inf  # one object each: a row names the values it takes by identity
THIRD = Fraction(1, 3)
NUMPY_INT = np.int64(60)
NUMBERS: list[object] = [
    BIG, -BIG, math.nan, math.inf, NEGATIVE_INF, -0.0, 1e308, 5e-324, True, False,
    Decimal("60"), THIRD, NUMPY_INT, np.float64("nan"),
]  # fmt: skip
"""What every number below is given; np.float64(60.0) is a float, and taken."""


def label(value: object) -> str:
    """A short, stable test id for a value."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= BIG:
        return "-10**5000" if value < 0 else "10**5000"
    if isinstance(value, str) and len(value) > 100:
        return f"a str of {len(value):,} characters"
    try:
        text = repr(value)
    except Exception:  # a container holding 10**5000, a repr that raises
        return f"a {type(value).__name__}"
    return text if len(text) <= 40 else f"a {type(value).__name__}"


def quote(value: object) -> str:
    """How a message quotes ``value``: its ``repr``, or for the giant ones the words that
    stand for it."""
    if value is BIG:
        return "an int of 5,001 digits"
    if isinstance(value, int) and not isinstance(value, bool) and value == -BIG:
        return "a negative int of 5,001 digits"
    if value is LONG:
        return "'" + "x" * 1000 + "'... (1,000,000 characters, cut)"
    return repr(value)


MOST_MESSAGE = 2_500
"""The longest message a refusal below writes: no value is quoted past its first
1,000 characters (``errors.SHOWN_LIMIT``), and none more than twice (``tz=...:
unknown time zone ...``)."""


def check_refused(error: BaseException, value: object) -> None:
    assert isinstance(error, LldschedError), f"{type(error).__name__}: {error}"
    message = str(error)
    assert quote(value) in message, f"{message[:300]!r} does not quote {label(value)}"
    assert len(message) < MOST_MESSAGE, f"a message of {len(message):,} characters"


# -- constructors and queries: (label, call, taken) --------------------------------


@functools.cache
def runs() -> pd.DataFrame:
    """A frame of a simulated task's runs, for the views."""
    simulation = Simulation(start=T0)
    simulation.schedule("report", FixedRate(60), duration=5)
    return to_frame(simulation.run_for(600))


Call = Callable[[object], object]
FLOATS_FINE: tuple[object, ...] = (-0.0, 5e-324)
BUILDS: list[tuple[str, Call, tuple[object, ...]]] = [
    ("FixedRate(v)", lambda v: FixedRate(v), ()),
    ("FixedDelay(v)", lambda v: FixedDelay(v), ()),
    ("FixedRate(60, start_delay=v)", lambda v: FixedRate(60, start_delay=v), FLOATS_FINE),
    ("OneTime(delay=v)", lambda v: OneTime(delay=v), FLOATS_FINE),
    ("OneTime(at=v)", lambda v: OneTime(at=v), FLOATS_FINE),
    ("RetryPolicy(max_attempts=v)", lambda v: RetryPolicy(max_attempts=v), ()),
    ("RetryPolicy(fail_after_given_up=v)", lambda v: RetryPolicy(fail_after_given_up=v), ()),
    ("RetryPolicy(initial_backoff=v)", lambda v: RetryPolicy(initial_backoff=v), FLOATS_FINE),
    ("RetryPolicy(multiplier=v)", lambda v: RetryPolicy(multiplier=v), ()),
    ("RetryPolicy(jitter=v)", lambda v: RetryPolicy(jitter=v), FLOATS_FINE),
    ("MisfirePolicy(grace=v)", lambda v: MisfirePolicy(grace=v), FLOATS_FINE),
    ("MisfirePolicy(max_catch_up=v)", lambda v: MisfirePolicy(max_catch_up=v), ()),
    ("Jittered(FixedRate(60), v)", lambda v: Jittered(FixedRate(60), v, seed=1), ()),
    ("Jittered(seed=v)", lambda v: Jittered(FixedRate(60), 5, seed=v), ()),
    ("Window(max_runs=v)", lambda v: Window(FixedRate(60), max_runs=v), ()),
    ("Window(start=v)", lambda v: Window(FixedRate(60), start=v), FLOATS_FINE),
    ("Window(end=v)", lambda v: Window(FixedRate(60), end=v), FLOATS_FINE),
    ("FakeClock(v)", lambda v: FakeClock(v), FLOATS_FINE),
    ("FakeClock().advance(v)", lambda v: FakeClock().advance(v), FLOATS_FINE),
    ("FakeClock().set(v)", lambda v: FakeClock().set(v), FLOATS_FINE),
    ("Simulation(workers=v)", lambda v: Simulation(workers=v), ()),
    ("Simulation(start=v)", lambda v: Simulation(start=v), FLOATS_FINE),
    ("Simulation(seed=v)", lambda v: Simulation(seed=v), ()),
    ("Simulation(history_limit=v)", lambda v: Simulation(history_limit=v), ()),
    ("Simulation(max_coroutines=v)", lambda v: Simulation(max_coroutines=v), ()),
    ("Simulation(retain_finished=v)", lambda v: Simulation(retain_finished=v), ()),
    ("Scheduler(workers=v)", lambda v: Scheduler(workers=v), ()),
    ("Scheduler(seed=v)", lambda v: Scheduler(seed=v), ()),
    ("Scheduler(history_limit=v)", lambda v: Scheduler(history_limit=v), ()),
    ("Scheduler(max_wait=v)", lambda v: Scheduler(max_wait=v), ()),
    ("Scheduler(listener_backlog=v)", lambda v: Scheduler(listener_backlog=v), ()),
    ("Scheduler(max_coroutines=v)", lambda v: Scheduler(max_coroutines=v), ()),
    ("Scheduler(handoff=v)", lambda v: Scheduler(handoff=v), ()),
    ("Scheduler(retain_finished=v)", lambda v: Scheduler(retain_finished=v), ()),
    ("InMemoryTaskStore(retention=v)", lambda v: InMemoryTaskStore(retention=v), ()),
    ("SqliteTaskStore(retention=v)", lambda v: SqliteTaskStore(":memory:", retention=v), ()),
    ("SqliteTaskStore(timeout=v)", lambda v: SqliteTaskStore(":memory:", timeout=v), FLOATS_FINE),
    ("cron.preview(v)", lambda v: CronSchedule("0 3 * * *").preview(v), ()),
    (
        "cron.preview(2, start=v)",
        lambda v: CronSchedule("0 3 * * *").preview(2, start=v),
        FLOATS_FINE,
    ),
    ("cron.fire_times(0, v)", lambda v: CronSchedule("0 3 * * *").fire_times(0, v), ()),
    # A search: ±inf answers None.  next_after, cron's hot path, checks its instant only
    # once a comparison raises (docs/DECISIONS.md), so a Fraction or a numpy int is taken.
    (
        "cron.prev_before(v)",
        lambda v: CronSchedule("0 3 * * *").prev_before(v),
        (-0.0, 5e-324, 1e308, math.inf, NEGATIVE_INF),
    ),
    (
        "cron.next_after(v)",
        lambda v: CronSchedule("0 3 * * *").next_after(v),
        (-0.0, 5e-324, 1e308, math.inf, NEGATIVE_INF, THIRD, NUMPY_INT),
    ),
    ("FixedRate(60).first_run(v)", lambda v: FixedRate(60).first_run(v), FLOATS_FINE),
    ("FixedRate(60).slot_after(v)", lambda v: FixedRate(60).slot_after(v), FLOATS_FINE),
    ("models.fixed(v)", lambda v: models.fixed(v), FLOATS_FINE),
    ("models.uniform(0, v)", lambda v: models.uniform(0, v), FLOATS_FINE),
    ("models.exponential(v)", lambda v: models.exponential(v), (5e-324,)),
    ("models.lognormal(v, 1)", lambda v: models.lognormal(v, 1), (5e-324,)),
    ("models.fails_on(v)", lambda v: models.fails_on(v), ()),
    ("report.percentile([1.0], v)", lambda v: report.percentile([1.0], v), (5e-324,)),
    (  # 5e-324 arrivals a second: none before the end of year 9999, where they end
        "poisson_arrivals(v)",
        lambda v: list(models.poisson_arrivals(v, start=0, count=1)),
        (5e-324,),
    ),
    (
        "poisson_arrivals(seed=v)",
        lambda v: next(models.poisson_arrivals(1, start=0, count=1, seed=v)),
        (),
    ),
    ("poisson_arrivals(count=v)", lambda v: next(models.poisson_arrivals(1, start=0, count=v)), ()),
    ("simulate_overrun(v)", lambda v: simulate_overrun(v), ()),
    ("simulate_overrun(duration=v)", lambda v: simulate_overrun(duration=v), (5e-324,)),
    ("simulate_overrun(max_instances=v)", lambda v: simulate_overrun(max_instances=v), ()),
    ("ClusterTask(every=v)", lambda v: ClusterTask("report", every=v), ()),
    ("ClusterScenario(nodes=v)", lambda v: ClusterScenario(v), ()),
    ("ClusterScenario(workers=v)", lambda v: ClusterScenario(workers=v), ()),
    ("ClusterScenario(seed=v)", lambda v: ClusterScenario(seed=v), ()),
    ("ClusterScenario(lease=v)", lambda v: ClusterScenario(lease=v), ()),
    ("ClusterScenario(horizon=v)", lambda v: ClusterScenario(horizon=v), (5e-324,)),
    ("ClusterScenario(start=v)", lambda v: ClusterScenario(start=v), FLOATS_FINE),
    ("Pause(node=v)", lambda v: Pause(v, at=0, seconds=5), ()),
    ("Pause(seconds=v)", lambda v: Pause(0, at=0, seconds=v), (5e-324,)),
    ("Crash(node=v)", lambda v: Crash(v, at=0), ()),
    ("Crash(at=v)", lambda v: Crash(0, at=v), FLOATS_FINE),
    # A count of workers or their indexes: numpy's integers too (operator.index).
    ("utilisation(frame, workers=v)", lambda v: utilisation(runs(), workers=v), (NUMPY_INT,)),
    ("mean_busy(frame, workers=[0, v])", lambda v: mean_busy(runs(), workers=[0, v]), (NUMPY_INT,)),
    ("gantt(frame, max_lanes=v)", lambda v: gantt(runs(), max_lanes=v), ()),
]


def cases(rows: list[tuple[str, Any, tuple[object, ...]]]) -> list[Any]:
    return [
        pytest.param(name, call, value, any(value is t for t in taken), id=f"{name}-{label(value)}")
        for name, call, taken in rows
        for value in NUMBERS
    ]


@pytest.mark.parametrize(("name", "call", "value", "taken"), cases(BUILDS))
def test_an_extreme_number_is_refused_by_name_or_taken(
    name: str, call: Call, value: object, taken: bool
) -> None:
    if taken:
        made = call(value)
        repr(made)  # readable: what was taken can be shown
        if isinstance(made, Scheduler):
            made.shutdown()
        if isinstance(made, SqliteTaskStore):
            made.close()
        return
    with pytest.raises(Exception) as caught:  # check_refused says which kind
        made = call(value)
        if isinstance(made, Scheduler):  # built by mistake: stopped anyway
            made.shutdown()
        if isinstance(made, SqliteTaskStore):  # opened by mistake: closed anyway
            made.close()
    check_refused(caught.value, value)


# -- verbs on a runtime holding tasks -----------------------------------------------

Verb = Callable[[Runtime, object], object]
VERBS: list[tuple[str, Verb, tuple[object, ...]]] = [
    ("schedule(priority=v)", lambda rt, v: register(rt, priority=v), ()),
    ("schedule(timeout=v)", lambda rt, v: register(rt, timeout=v), (5e-324,)),
    (
        "schedule(max_instances=v)",
        lambda rt, v: register(rt, overlap=Overlap.ALLOW, max_instances=v),
        (),
    ),
    ("schedule(schedule=FixedRate(v))", lambda rt, v: register(rt, "job", noop, FixedRate(v)), ()),
    ("modify(priority=v)", lambda rt, v: rt.modify("kept", priority=v), ()),
    ("modify(timeout=v)", lambda rt, v: rt.modify("kept", timeout=v), (5e-324,)),
    ("reschedule(FixedDelay(v))", lambda rt, v: rt.reschedule("kept", FixedDelay(v)), ()),
    ("metrics(timeout=v)", lambda rt, v: rt.metrics(timeout=v), FLOATS_FINE),
    ("shutdown(timeout=v)", lambda rt, v: rt.shutdown(timeout=v), FLOATS_FINE),
]
SIMULATED: list[tuple[str, Callable[[Simulation, object], object], tuple[object, ...]]] = [
    ("run(v)", lambda s, v: s.run(v), ()),  # before its start: the past
    ("run_for(v)", lambda s, v: s.run_for(v), FLOATS_FINE),
    ("at(v, noop)", lambda s, v: s.at(v, noop), ()),
    (
        "schedule(duration=v)",
        lambda s, v: s.schedule("job", FixedRate(60), duration=v),
        FLOATS_FINE,
    ),
    ("schedule(fails=v)", lambda s, v: s.schedule("job", FixedRate(60), fails=v), FLOATS_FINE),
    ("model('kept', duration=v)", lambda s, v: s.model("kept", duration=v), FLOATS_FINE),
]
THREADED: list[tuple[str, Callable[[Scheduler, object], object], tuple[object, ...]]] = [
    ("wait_idle(v)", lambda s, v: s.wait_idle(v), FLOATS_FINE),
    ("wait_drained(v)", lambda s, v: s.wait_drained(v), FLOATS_FINE),
]
"""A wait a scheduler never started takes is refused for that (``SchedulerStateError``)."""


def on(runtime: Any, call: Callable[[Any, object], object], value: object, taken: bool) -> None:
    """``call`` refused quoting ``value``, the registry unchanged; or taken."""
    before = snapshot(runtime)
    if taken:
        call(runtime, value)
        return
    with pytest.raises(Exception) as caught:  # check_refused says which kind
        call(runtime, value)
    check_refused(caught.value, value)
    assert snapshot(runtime) == before


@pytest.mark.parametrize("kind", ["threaded", "simulated"])
@pytest.mark.parametrize(("name", "call", "value", "taken"), cases(VERBS))
def test_an_extreme_number_given_a_verb_changes_nothing(
    kind: str, name: str, call: Verb, value: object, taken: bool
) -> None:
    runtime = populated(kind)
    try:
        on(runtime, call, value, taken)
    finally:
        if isinstance(runtime, Scheduler):
            runtime.shutdown(timeout=5)


@pytest.mark.parametrize(("name", "call", "value", "taken"), cases(SIMULATED))
def test_an_extreme_number_given_the_simulation_changes_nothing(
    name: str, call: Callable[[Simulation, object], object], value: object, taken: bool
) -> None:
    on(populated("simulated"), call, value, taken)


@pytest.mark.parametrize(("name", "call", "value", "taken"), cases(THREADED))
def test_an_extreme_number_given_the_scheduler_changes_nothing(
    name: str, call: Callable[[Scheduler, object], object], value: object, taken: bool
) -> None:
    scheduler = populated("threaded")
    try:
        if taken:
            with pytest.raises(SchedulerStateError, match="not started"):
                call(scheduler, value)
        else:
            on(scheduler, call, value, taken)
    finally:
        scheduler.shutdown(timeout=5)


@pytest.mark.parametrize("value", NUMBERS, ids=label)
def test_an_event_log_refuses_an_extreme_timeout_by_name(value: object) -> None:
    if any(value is fine for fine in FLOATS_FINE):
        assert EventLog().wait_for(bool, timeout=value) is None
        return
    with pytest.raises(Exception) as caught:  # check_refused says which kind
        EventLog().wait_for(bool, timeout=value)
    check_refused(caught.value, value)


# -- a name of a million characters -------------------------------------------------

NAMED: list[tuple[str, Verb]] = [
    ("schedule(name=LONG)", lambda rt, v: register(rt, v)),
    ("schedule(id=LONG)", lambda rt, v: register(rt, id=v)),
    ("schedule(id=LONG + newline)", lambda rt, v: register(rt, id=f"{v}\n")),
    ("schedule(depends_on=[LONG])", lambda rt, v: register(rt, depends_on=[v])),
    ("schedule(schedule=LONG)", lambda rt, v: register(rt, "job", noop, v)),
    ("schedule(args=(LONG,))", lambda rt, v: register(rt, "job", noop, FixedRate(60), args=(v,))),
    *[
        (f"{verb}(LONG)", lambda rt, v, verb=verb: getattr(rt, verb)(v))
        for verb in ("cancel", "pause", "resume", "redrive", "task", "remove", "run_now")
    ],
    ("reschedule(LONG, ...)", lambda rt, v: rt.reschedule(v, FixedRate(5))),
    ("modify(LONG, ...)", lambda rt, v: rt.modify(v, timeout=5)),
]


@pytest.mark.parametrize("kind", ["threaded", "simulated"])
@pytest.mark.parametrize(("name", "call"), NAMED, ids=[name for name, _ in NAMED])
def test_a_name_of_a_million_characters_is_refused_by_its_start(
    kind: str, name: str, call: Verb
) -> None:
    runtime = populated(kind)
    try:
        before = snapshot(runtime)
        with pytest.raises(LldschedError) as caught:
            call(runtime, LONG)
        message = str(caught.value)
        assert "x" * 40 in message and len(message) < MOST_MESSAGE, message[:300]
        assert snapshot(runtime) == before
    finally:
        if isinstance(runtime, Scheduler):
            runtime.shutdown(timeout=5)


def test_an_unknown_id_of_a_million_characters_is_quoted_by_its_start() -> None:
    simulation = Simulation()
    with pytest.raises(TaskNotFoundError) as caught:
        simulation.cancel(LONG)
    assert str(caught.value) == f"no task with id {quote(LONG)}"


def test_a_task_name_is_at_most_as_long_as_an_id() -> None:
    """2,000 bytes of UTF-8 (``storechecks.MAX_ID_BYTES``): a name of a million
    characters was taken, and written whole into every record and message of its task."""
    simulation = Simulation(start=T0)
    assert simulation.schedule("x" * 2000, FixedRate(60)).name == "x" * 2000
    with pytest.raises(LldschedError, match=r"^task name 'x{40}'\.\.\. \(2001 bytes in UTF-8\)"):
        simulation.schedule("x" * 2001, FixedRate(60))
    assert len(simulation.tasks()) == 1


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: CronSchedule(LONG), "cron expression 'xxxx"),
        (lambda: CronSchedule("* * * * *", tz=LONG), "unknown time zone 'xxxx"),
        (lambda: Scheduler(tz=LONG), "tz='xxxx"),
        (lambda: Simulation(tz=LONG), "tz='xxxx"),
        (lambda: Scheduler(name=LONG + "\n"), "name must be a non-empty printable str"),
    ],
    ids=["CronSchedule", "CronSchedule(tz)", "Scheduler(tz)", "Simulation(tz)", "Scheduler(name)"],
)
def test_a_text_of_a_million_characters_is_quoted_by_its_start(
    call: Callable[[], object], words: str
) -> None:
    with pytest.raises(LldschedError) as caught:
        call()
    message = str(caught.value)
    assert words in message and len(message) < MOST_MESSAGE, message[:300]


# -- the rule itself ------------------------------------------------------------------


class Unshowable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (BIG, "an int of 5,001 digits"),
        (-BIG, "a negative int of 5,001 digits"),
        (10**639, repr(10**639)),  # 640 digits: whole, whatever the conversion limit
        (10**640, "an int of 641 digits"),
        (10**400, repr(10**400)),
        ([1, BIG], "[1, an int of 5,001 digits]"),
        ({"k": -BIG}, "{'k': a negative int of 5,001 digits}"),
        (list(range(20)), "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ...]"),
        (LONG, quote(LONG)),
        (b"y" * 1500, repr(b"y" * 1000) + "... (1,500 characters, cut)"),
        ("z" * 1000, repr("z" * 1000)),
        (["z" * 600] * 2, repr(["z" * 600] * 2)[:1000] + "... (1,208 characters, cut)"),
        (Unshowable(), "<Unshowable object (its repr raised RuntimeError)>"),
        (Decimal("1e5000"), "Decimal('1E+5000')"),
        (timedelta(seconds=-5), repr(timedelta(seconds=-5))),
        ("short", "'short'"),
        (True, "True"),
        (None, "None"),
    ],
    ids=label,
)
def test_shown_quotes_a_value_whole_or_by_what_stands_for_it(value: object, text: str) -> None:
    assert shown(value) == text


def test_shown_names_a_bigger_int_than_a_lowered_limit_converts() -> None:
    """``sys.set_int_max_str_digits(640)``, the lowest it goes: every int shown whole is
    still converted."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        assert shown(10**639) == "1" + "0" * 639
        assert shown(-(10**640)) == "a negative int of 641 digits"
    finally:
        sys.set_int_max_str_digits(limit)
