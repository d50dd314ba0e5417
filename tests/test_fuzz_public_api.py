# The calls are wrong on purpose: hypothesis draws values of every type for typed
# parameters, which mypy cannot follow ([arg-type], [misc] for the lambdas' defaults).
# mypy: disable-error-code="arg-type,misc"
"""The public API under fire: hostile values drawn by hypothesis, beyond the table.

``tests/test_bad_input_table.py`` reviews hand-picked mistakes; this file draws them:
wrong types, a ``bool`` for an int, NaN, ±inf, ``-0.0``, huge ints, zero and
negative durations, naive and aware datetimes as far as year 1 and year 9999,
``Decimal``, ``Fraction`` and numpy scalars, empty, blank, long, unicode and
control-character names and ids, unknown ids and the ids of cancelled and retired
tasks, for every public verb of both runtimes and every constructor a user builds
(schedules, policies, stores, a clock), and the views' arguments.

The property is the house rule (docs/decisions/checking-input.md, "Bad input is reviewed as a
table"): a call either succeeds, leaving every task readable (its repr, its
schedule's ``explain()``, a finite or absent next due), or raises one of the
package's errors (or a ``TypeError`` / ``ValueError``) whose message quotes the bad
value, and a snapshot of every task (the table's ``snapshot``) is the same after a
refused call as before it.  An ``AttributeError``, ``KeyError``,
``ZeroDivisionError``, ``OverflowError`` or ``RecursionError`` from inside is a
defect, and so is a call that succeeds into a state a later read cannot show.

Runs are derandomized (hypothesis draws the same examples every run: stable under
pytest-xdist) and capped, so the file takes a few seconds; the runtimes are never
started but for the stepped one (``lldsched.testing.Stepper``, a started scheduler
on a ``FakeClock``) which runs the accepted schedules for a few steps.
"""

from __future__ import annotations

import contextlib
import math
import string
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lldsched import (
    CronSchedule,
    FakeClock,
    FixedDelay,
    FixedRate,
    InMemoryTaskStore,
    Jittered,
    LldschedError,
    Misfire,
    MisfirePolicy,
    OneTime,
    Overlap,
    OverrunPolicy,
    Priority,
    RetryPolicy,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    Window,
)
from lldsched.clock import EARLIEST
from lldsched.testing import Stepper
from lldsched.views import report
from tests.test_bad_input_table import T0, populated, snapshot

# A drawn OneTime(at=...) under a year of seconds, on the runtimes' 2026 clock, warns
# that delay= was meant (schedules/delaymeant.py): the designed answer to such a value,
# asserted in tests/test_one_time_delay_meant.py, not a finding of the fuzz.
pytestmark = pytest.mark.filterwarnings("ignore:OneTime\\(at=:UserWarning")

FUZZ = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,  # Held rebuilds its runtime once changed
    ],
)

INSIDE = (AttributeError, KeyError, IndexError, ZeroDivisionError, OverflowError, RecursionError)
"""What a call must never raise: an error from inside, not a word to the user."""

# -- the hostile values -------------------------------------------------------------

SPECIAL_NUMBERS: list[object] = [
    True, False, 0, -0.0, 0.0, -1, 1, -1e-9, 5e-324, 1e-300, 1e-9, 1e300, -1e300,
    10**18, 2**63, 10**400, -(10**400), math.nan, -math.nan, math.inf, -math.inf,
    Decimal("60"), Decimal("NaN"), Decimal("-1"), Fraction(1, 3), Fraction(120, 2),
    np.float64(60.0), np.float64("nan"), np.float64("inf"), np.int64(60), np.int64(-1),
    np.float32(60.0), np.bool_(True), complex(60, 0),
]  # fmt: skip
SPECIAL_DURATIONS: list[object] = [
    timedelta(0), timedelta(microseconds=1), timedelta(days=-1), timedelta(seconds=-5),
    timedelta.max, timedelta.min, timedelta(days=3650),
]  # fmt: skip
SPECIAL_INSTANTS: list[object] = [
    datetime(1, 1, 1, tzinfo=UTC), datetime(1, 1, 1), datetime(9999, 12, 31, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), datetime(9999, 12, 31),
    datetime(2026, 1, 5, 9, 0), datetime(2026, 1, 5, 9, 0, tzinfo=UTC),
    datetime(2026, 1, 5, 9, 0, tzinfo=timezone(timedelta(hours=14))),
    datetime(2026, 1, 5, 9, 0, tzinfo=timezone(timedelta(hours=-12))),
]  # fmt: skip
SPECIAL_TEXTS: list[object] = [
    "", " ", "\t\n", "\x00", "\x1b[31m", "job\x00", "a\nb", "x" * 5000, "ünïcødé", "名前",
    "\u200b", "\ud800", "🙂" * 3, "60", "nan", "-1", "* * * * *", "None", "kept ",
    b"kept", bytearray(b"x"),
]  # fmt: skip
SPECIAL_OTHERS: list[object] = [None, [], {}, (), set(), object(), int, FixedRate, ["kept"]]

numbers = st.one_of(
    st.sampled_from(SPECIAL_NUMBERS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.decimals(allow_nan=True, allow_infinity=True, places=3),
    st.fractions(),
)
durations = st.one_of(
    numbers,
    st.sampled_from(SPECIAL_DURATIONS),
    st.timedeltas(),
)
instants = st.one_of(
    numbers,
    st.sampled_from(SPECIAL_INSTANTS),
    st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))])),
    st.datetimes(),
)
texts = st.one_of(
    st.sampled_from(SPECIAL_TEXTS),
    st.text(max_size=40),
    st.text(alphabet=string.whitespace + "\x00\x7f", max_size=5),
)
anything = st.one_of(
    durations,
    instants,
    texts,
    st.sampled_from(SPECIAL_OTHERS),
    st.sampled_from(list(Overlap) + list(Misfire) + list(OverrunPolicy) + list(Priority)),
)
ids = st.one_of(
    st.sampled_from(["kept", "asleep", "upstream", "downstream", "gone", "retired", "nope"]),
    texts,
    st.sampled_from(SPECIAL_OTHERS),
    numbers,
)


# -- the property ------------------------------------------------------------------


def quoted(message: str, bad: object) -> bool:
    """True when ``message`` quotes ``bad``: its repr or its str, or for a very long
    value the start of either (a message may cut what it quotes)."""
    for form in (repr, str):
        try:
            text = form(bad)
        except Exception:  # a value whose repr fails cannot be quoted
            return True
        if text in message or (len(text) > 200 and text[:60] in message):
            return True
    if isinstance(bad, timedelta):  # quoted with its seconds (checks._timedelta)
        seconds = bad.total_seconds()
        return f"{seconds:g}" in message or repr(seconds) in message
    if isinstance(bad, list):  # args=[...] is quoted as the tuple it is called with,
        # a list of records or ids by the item that is wrong
        return repr(tuple(bad)) in message or any(repr(item) in message for item in bad)
    return False


def assert_refused_or_fine(runtime: object, call: Callable[[], object], bad: object) -> None:
    """The property, on a runtime (``None``: a constructor, with no registry)."""
    before = None if runtime is None else snapshot(runtime)
    try:
        made = call()
    except INSIDE as error:
        pytest.fail(f"{type(error).__name__} from inside for {bad!r}: {error}")
    except (LldschedError, TypeError, ValueError) as error:
        assert quoted(str(error), bad), (
            f"{type(error).__name__}: {str(error)[:300]!r} does not quote {bad!r}"
        )
        if runtime is not None:
            assert snapshot(runtime) == before, f"a refused call for {bad!r} changed the registry"
    else:
        readable(made)
        if runtime is not None:
            for task in runtime.tasks():  # type: ignore[attr-defined]
                readable(task)


def readable(made: object) -> None:
    """What a successful call returned (or a task it left) can be shown and read."""
    repr(made)
    schedule = getattr(made, "schedule", None)
    for value in (made, schedule):
        explain = getattr(value, "explain", None)
        if callable(explain) and not isinstance(value, type):
            explain()
    due = getattr(made, "next_run_at", None)
    if isinstance(due, float):
        assert math.isfinite(due), f"{made!r} is due at {due!r}"


Runtime = Scheduler | Simulation
KINDS = ["threaded", "simulated"]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Held:
    """A populated runtime, built again only once a call changed it."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.runtime: Runtime = populated(kind)
        self.clean = snapshot(self.runtime)

    def get(self) -> Runtime:
        if snapshot(self.runtime) != self.clean:
            self.close()
            self.runtime = populated(self.kind)
        return self.runtime

    def close(self) -> None:
        if isinstance(self.runtime, Scheduler):
            assert self.runtime.shutdown(timeout=5)


@pytest.fixture
def held(kind: str) -> Iterator[Held]:
    holder = Held(kind)
    yield holder
    holder.close()


def noop() -> None:
    return None


def register(
    runtime: Runtime, name: object = "job", schedule: object = None, **options: Any
) -> object:
    schedule = FixedRate(60) if schedule is None else schedule
    if isinstance(runtime, Scheduler):
        return runtime.schedule(name, noop, schedule, **options)
    return runtime.schedule(name, schedule, action=noop, **options)


# -- constructors -------------------------------------------------------------------

CONSTRUCTORS: dict[str, Callable[[object], object]] = {
    "FixedRate(period)": lambda v: FixedRate(v),
    "FixedRate(start_delay)": lambda v: FixedRate(60, start_delay=v),
    "FixedRate(on_overrun)": lambda v: FixedRate(60, on_overrun=v),
    "FixedDelay(delay)": lambda v: FixedDelay(v),
    "FixedDelay(start_delay)": lambda v: FixedDelay(60, start_delay=v),
    "OneTime(at)": lambda v: OneTime(at=v),
    "OneTime(delay)": lambda v: OneTime(delay=v),
    "CronSchedule(expr)": lambda v: CronSchedule(v),
    "CronSchedule(tz)": lambda v: CronSchedule("0 3 * * *", tz=v),
    "Window(start)": lambda v: Window(FixedRate(60), start=v, max_runs=10),
    "Window(end)": lambda v: Window(FixedRate(60), end=v, max_runs=10),
    "Window(max_runs)": lambda v: Window(FixedRate(60), end=T0 + 86400, max_runs=v),
    "Window(schedule)": lambda v: Window(v, max_runs=1),
    "Jittered(max_delay)": lambda v: Jittered(FixedRate(60), v, seed=1),
    "Jittered(seed)": lambda v: Jittered(FixedRate(60), 5, seed=v),
    "Jittered(schedule)": lambda v: Jittered(v, 5, seed=1),
    "RetryPolicy(max_attempts)": lambda v: RetryPolicy(v),
    "RetryPolicy(initial_backoff)": lambda v: RetryPolicy(initial_backoff=v, max_backoff=10**9),
    "RetryPolicy(multiplier)": lambda v: RetryPolicy(multiplier=v),
    "RetryPolicy(max_backoff)": lambda v: RetryPolicy(initial_backoff=0, max_backoff=v),
    "RetryPolicy(jitter)": lambda v: RetryPolicy(jitter=v),
    "RetryPolicy(fail_after_given_up)": lambda v: RetryPolicy(fail_after_given_up=v),
    "MisfirePolicy(on_misfire)": lambda v: MisfirePolicy(v),
    "MisfirePolicy(grace)": lambda v: MisfirePolicy(grace=v),
    "MisfirePolicy(max_catch_up)": lambda v: MisfirePolicy(max_catch_up=v),
    "FakeClock(start)": lambda v: FakeClock(v),
    "FakeClock.advance": lambda v: FakeClock(T0).advance(v),
    "FakeClock.set": lambda v: FakeClock(EARLIEST).set(v),
    "InMemoryTaskStore(retention)": lambda v: InMemoryTaskStore(retention=v),
    "SqliteTaskStore(path)": lambda v: SqliteTaskStore(v).close(),
    "SqliteTaskStore(retention)": lambda v: SqliteTaskStore(":memory:", retention=v).close(),
    "SqliteTaskStore(synchronous)": lambda v: SqliteTaskStore(":memory:", synchronous=v).close(),
    "SqliteTaskStore(timeout)": lambda v: SqliteTaskStore(":memory:", timeout=v).close(),
    "SqliteTaskStore(shared)": lambda v: SqliteTaskStore(":memory:", shared=v).close(),
    "SqliteTaskStore(lease)": lambda v: SqliteTaskStore(":memory:", lease=v).close(),
    "SqliteTaskStore(poll)": lambda v: SqliteTaskStore(":memory:", poll=v).close(),
    "Simulation(start)": lambda v: Simulation(start=v),
    "Simulation(workers)": lambda v: Simulation(workers=v),
    "Simulation(seed)": lambda v: Simulation(seed=v),
    "Simulation(history_limit)": lambda v: Simulation(history_limit=v),
    "Simulation(retain_finished)": lambda v: Simulation(retain_finished=v),
    "Simulation(tz)": lambda v: Simulation(tz=v),
    "report.percentile(q)": lambda v: report.percentile([1.0, 2.0], v),
}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where a store a drawn path names is made (``SqliteTaskStore(" ")`` is a file)."""
    return tmp_path_factory.mktemp("stores")


@pytest.mark.parametrize("label", sorted(CONSTRUCTORS))
@FUZZ
@given(value=anything)
def test_a_constructor_refuses_a_hostile_value_quoting_it(
    scratch: Path, label: str, value: object
) -> None:
    with contextlib.chdir(scratch):
        assert_refused_or_fine(None, lambda: CONSTRUCTORS[label](value), value)


SCHEDULER_SETTINGS = (
    "workers", "seed", "history_limit", "max_wait", "listener_backlog", "max_coroutines",
    "handoff", "tz", "name", "retain_finished",
)  # fmt: skip


@pytest.mark.parametrize("key", SCHEDULER_SETTINGS)
@settings(FUZZ, max_examples=12)
@given(value=anything)
def test_a_scheduler_setting_refuses_a_hostile_value_quoting_it(key: str, value: object) -> None:
    def build() -> object:
        made = Scheduler(clock=FakeClock(T0), **{key: value})
        made.shutdown()
        return made

    assert_refused_or_fine(None, build, value)


# -- a schedule's queries -------------------------------------------------------------

QUERIED = [
    FixedRate(60), FixedRate(60, OverrunPolicy.CATCH_UP), FixedDelay(5), OneTime(delay=5),
    OneTime(at=T0), CronSchedule("0 3 * * *"), CronSchedule("*/5 * * * *", tz="Europe/Berlin"),
    Window(FixedRate(60), start=T0, end=T0 + 3600), Jittered(FixedRate(60), 5, seed=1),
]  # fmt: skip


@pytest.mark.parametrize("schedule", QUERIED, ids=repr)
@settings(FUZZ, max_examples=20)
@given(value=instants)
def test_a_schedule_query_refuses_a_hostile_instant(schedule: Any, value: object) -> None:
    for query in ("first_run", "slot_after", "next_after", "prev_before"):
        method = getattr(schedule, query, None)
        if method is not None:
            assert_refused_or_fine(None, lambda m=method: m(value), value)
    if hasattr(schedule, "first_slot_after"):
        assert_refused_or_fine(None, lambda: schedule.first_slot_after(T0, value), value)
        assert_refused_or_fine(None, lambda: schedule.first_slot_after(value, T0), value)


# -- registration ---------------------------------------------------------------------

OPTIONS = (
    "id", "replace_existing", "priority", "retry", "timeout", "args", "kwargs", "misfire",
    "isolation", "depends_on", "overlap", "max_instances", "paused",
)  # fmt: skip


@pytest.mark.parametrize("key", OPTIONS)
@settings(FUZZ, max_examples=15)
@given(value=st.one_of(anything, ids))
def test_schedule_with_a_hostile_option(held: Held, key: str, value: object) -> None:
    runtime = held.get()
    assert_refused_or_fine(runtime, lambda: register(runtime, **{key: value}), value)


@FUZZ
@given(value=st.one_of(texts, anything))
def test_schedule_with_a_hostile_name(held: Held, value: object) -> None:
    runtime = held.get()
    assert_refused_or_fine(runtime, lambda: register(runtime, value), value)


def schedules_from(value: object) -> list[Callable[[], object]]:
    """Every way a drawn value becomes a schedule argument."""
    return [
        lambda: value,
        lambda: FixedRate(value),
        lambda: FixedDelay(value),
        lambda: OneTime(at=value),
        lambda: OneTime(delay=value),
        lambda: FixedRate(60, start_delay=value),
        lambda: Window(FixedRate(60), start=value),
        lambda: Window(FixedRate(60), end=value),
        lambda: Jittered(FixedRate(60), value, seed=1),
    ]


@settings(FUZZ, max_examples=20)
@given(value=st.one_of(durations, instants, texts))
def test_schedule_and_reschedule_with_a_hostile_schedule(held: Held, value: object) -> None:
    for make in schedules_from(value):
        try:
            schedule = make()
        except LldschedError:
            continue  # the constructors' own test judges the refusal
        # The value, or the schedule built from it, is what a refusal quotes.
        runtime = held.get()
        assert_refused_or_fine(
            runtime, lambda r=runtime, s=schedule: register(r, "job", s), schedule
        )
        runtime = held.get()
        assert_refused_or_fine(
            runtime, lambda r=runtime, s=schedule: r.reschedule("kept", s), schedule
        )


# -- the verbs on an id ---------------------------------------------------------------

ID_VERBS = ("cancel", "pause", "resume", "redrive", "task", "remove", "run_now")


@pytest.mark.parametrize("verb", ID_VERBS)
@settings(FUZZ, max_examples=15)
@given(value=ids)
def test_a_verb_given_a_hostile_id(held: Held, verb: str, value: object) -> None:
    runtime = held.get()
    assert_refused_or_fine(runtime, lambda: getattr(runtime, verb)(value), value)


@pytest.mark.parametrize("verb", ID_VERBS)
@settings(FUZZ, max_examples=8)
@given(value=ids)
def test_a_verb_on_a_started_scheduler_given_a_hostile_id(verb: str, value: object) -> None:
    """The same on a started scheduler (stepped on a FakeClock), which then runs what is
    due a minute on: a call it took leaves a scheduler that goes on."""
    with Stepper(Scheduler(clock=FakeClock(T0)), timeout=5) as stepper:
        scheduler = stepper.scheduler
        register(scheduler, "kept", id="kept")
        register(scheduler, "gone", id="gone")
        scheduler.cancel("gone")
        stepper.advance(0)  # what is due now has run: nothing changes behind the snapshot
        assert_refused_or_fine(scheduler, lambda: getattr(scheduler, verb)(value), value)
        stepper.advance(60)
        assert scheduler.running
        for task in scheduler.tasks():
            readable(task)


@pytest.mark.parametrize("key", ["priority", "retry", "timeout"])
@settings(FUZZ, max_examples=15)
@given(task_id=st.sampled_from(["kept", "asleep"]), value=anything)
def test_modify_with_a_hostile_value(held: Held, key: str, task_id: str, value: object) -> None:
    runtime = held.get()
    assert_refused_or_fine(runtime, lambda: runtime.modify(task_id, **{key: value}), value)


@settings(FUZZ, max_examples=15)
@given(value=ids)
def test_modify_and_reschedule_given_a_hostile_id(held: Held, value: object) -> None:
    runtime = held.get()
    assert_refused_or_fine(runtime, lambda: runtime.modify(value, timeout=5), value)
    assert_refused_or_fine(runtime, lambda: runtime.reschedule(value, FixedRate(5)), value)


@settings(FUZZ, max_examples=15)
@given(value=anything)
def test_metrics_given_a_hostile_timeout(held: Held, value: object) -> None:
    runtime = held.get()
    assert_refused_or_fine(runtime, lambda: runtime.metrics(timeout=value), value)


# -- the simulation's own verbs -------------------------------------------------------


@pytest.mark.parametrize("verb", ["run", "run_for", "at"])
@settings(FUZZ, max_examples=15)
@given(value=st.one_of(instants, durations))
def test_a_simulation_verb_given_a_hostile_time(verb: str, value: object) -> None:
    simulation = populated("simulated")
    assert isinstance(simulation, Simulation)
    calls: dict[str, Callable[[], object]] = {
        "run": lambda: simulation.run(value),
        "run_for": lambda: simulation.run_for(value),
        "at": lambda: simulation.at(value, noop),
    }
    if not short_run(verb, value):
        return  # a run as far as a huge value would be a long one: not tried
    assert_refused_or_fine(simulation, calls[verb], value)


WEEK = 7 * 86400.0


def short_run(verb: str, value: object) -> bool:
    """False when ``value`` is a time the verb would accept and take long to reach."""
    if verb == "at":
        return True
    if isinstance(value, datetime):
        return value.tzinfo is None or verb != "run" or value.timestamp() - T0 < WEEK
    if isinstance(value, timedelta):
        return verb != "run_for" or value.total_seconds() < WEEK
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return True
    if isinstance(value, bool) or not math.isfinite(number):
        return True
    return number < (T0 + WEEK if verb == "run" else WEEK)


@pytest.mark.parametrize("key", ["duration", "fails"])
@settings(FUZZ, max_examples=15)
@given(value=anything)
def test_a_simulation_model_given_a_hostile_value(key: str, value: object) -> None:
    simulation = populated("simulated")
    assert isinstance(simulation, Simulation)
    assert_refused_or_fine(simulation, lambda: simulation.model("kept", **{key: value}), value)
    assert_refused_or_fine(
        simulation,
        lambda: simulation.schedule("job", FixedRate(60), **{key: value}),
        value,
    )


# -- accepted schedules, run ----------------------------------------------------------

STEPS = 30


@settings(FUZZ, max_examples=20)
@given(value=st.one_of(durations, instants))
def test_an_accepted_schedule_runs_a_few_steps_on_both_runtimes(value: object) -> None:
    """What registration accepted, the runtimes can run: a few simulation steps, and a
    stepped threaded scheduler's runs due now, end in a readable state.  Every accepted
    schedule moves time on a frozen clock: ``FixedDelay(0)``, due again at once after
    every run, was the Stepper's own error (``SettleTimeoutError``) and a drain at
    shutdown reran it until its timeout; a delay is now at least a microsecond."""
    for make in schedules_from(value)[1:]:
        try:
            schedule = make()
        except LldschedError:
            continue
        simulation = Simulation(start=T0)
        assert_refused_or_fine(
            simulation, lambda r=simulation, s=schedule: register(r, "job", s), schedule
        )
        for _ in range(STEPS):  # a bounded number of steps: a recurring task never ends
            if simulation.step() is None:
                break
        for task in simulation.tasks():
            readable(task)
        with Stepper(Scheduler(clock=FakeClock(T0)), timeout=2) as stepper:
            scheduler = stepper.scheduler
            assert_refused_or_fine(
                scheduler, lambda r=scheduler, s=schedule: register(r, "job", s), schedule
            )
            stepper.advance(0)  # what is due now runs
            for task in scheduler.tasks():
                readable(task)


# -- the views' arguments -------------------------------------------------------------


@pytest.fixture(scope="module")
def frame() -> Any:
    """A frame of a few runs (pandas is the views' extra: skipped without it)."""
    frames = pytest.importorskip("lldsched.views.frames")
    simulation = Simulation(start=T0, workers=2)
    simulation.schedule("job", FixedRate(60), duration=5)
    simulation.run_for(600)
    return frames.to_frame(simulation)


VIEW_CALLS: dict[str, Callable[[Any, object], object]] = {
    "to_frame(source)": lambda frame, v: views("frames").to_frame(v),
    "to_frame(priorities)": lambda frame, v: views("frames").to_frame(
        populated("simulated"), priorities=v
    ),
    "ran(frame)": lambda frame, v: views("frames").ran(v),
    "task_summary(frame)": lambda frame, v: views("frames").task_summary(v),
    "task_summary(schedules)": lambda frame, v: views("frames").task_summary(frame, v),
    "utilisation(workers)": lambda frame, v: views("frames").utilisation(frame, v),
    "utilisation(freq)": lambda frame, v: views("frames").utilisation(frame, 2, v),
    "readable(frame)": lambda frame, v: views("tables").readable(v),
    "readable(tz)": lambda frame, v: views("tables").readable(frame, tz=v),
    "summarize(records)": lambda frame, v: report.summarize(v),
}


def views(name: str) -> Any:
    return pytest.importorskip(f"lldsched.views.{name}")


@pytest.mark.parametrize("label", sorted(VIEW_CALLS))
@settings(FUZZ, max_examples=12)
@given(value=anything)
def test_a_view_refuses_a_hostile_argument_quoting_it(
    frame: Any, label: str, value: object
) -> None:
    assert_refused_or_fine(None, lambda: VIEW_CALLS[label](frame, value), value)
