# The rows capture their wrong value as a lambda's default (``lambda v=value: ...``),
# whose type mypy cannot infer ([misc]); the values are wrong on purpose, and mypy
# refuses each of the classes and listeners given here already ([arg-type]).
# mypy: disable-error-code="misc, arg-type"
"""Bad input a fresh audit of the public API found still taken, or refused with a bare
``TypeError``, as a table (the rule and the helpers of ``tests/test_bad_input_table.py``:
a package error quoting the value, raised before anything changes).

* a class given where an instance goes (the parentheses forgotten): ``store=
  InMemoryTaskStore`` and ``clock=FakeClock`` raised a bare ``TypeError`` from inside the
  constructor, ``clock=SystemClock`` was taken and its timer died at its first wait;
* a listener that cannot be called with an event (``listeners=[EventLog]``, a function
  of no argument, an ``on_event`` without its ``event``) was taken, and every event
  raised ``TypeError`` in it, logged and never heard;
* a schedule of one's own whose ``first_run`` answers a bool was taken (``True`` is 1:
  the threaded scheduler held ``next_run_at=True``, due in 1970), where every other
  query of an instant refuses one;
* the widgets' flags (``ControlPanel(live=)``, ``SimulationPlayer(chart=)``) read any
  value by its truth: ``live=None`` made a panel that never listened;
* a zone's name in the wrong case or padded (``tz="utc"``, ``"europe/berlin"``) was told
  to "use an IANA name such as 'Europe/Berlin'": now it is told the name it meant;
* the task ``schedule()`` returned, given to a verb for its id (``cancel(task)``), was
  "no task with id <ScheduledTask kept ...>", of a task that is registered: now it is
  told to pass ``task.id``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    EventLog,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    MisfirePolicy,
    RetryPolicy,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    SystemClock,
    TaskEvent,
    TaskListener,
    TaskStore,
)
from lldsched.clock import Clock
from lldsched.views.widgets import ControlPanel, SimulationPlayer
from tests.test_bad_input_table import (
    T0,
    Build,
    Named,
    Runtime,
    ids,
    populated_runtime,
    refused_build,
    refused_unchanged,
    register,
)


def no_event() -> None:
    """A listener that takes no event."""


def two_arguments(event: TaskEvent, more: object) -> None:
    """A listener that wants more than the event."""


class DeafListener:
    """An ``on_event`` that forgot its ``event``."""

    def on_event(self) -> None:
        return None


class HalfListener(abc.ABC):
    """An abstract class of listeners, its ``on_event`` left to subclasses."""

    @abc.abstractmethod
    def on_event(self, event: TaskEvent) -> None: ...


class Heard:
    """A listener as documented: ``on_event(event)``."""

    def __init__(self) -> None:
        self.events: list[TaskEvent] = []

    def on_event(self, event: TaskEvent) -> None:
        self.events.append(event)


class AnswersBool:
    """A schedule of one's own whose ``first_run`` answers a bool (``now > start``)."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer

    def first_run(self, now: float) -> float | None:
        return self.answer

    def next_run(self, record: object, now: float) -> float | None:
        return None

    def __repr__(self) -> str:
        return f"AnswersBool({self.answer})"


def simulation() -> Simulation:
    made = Simulation(start=T0)
    made.schedule("job", FixedRate(60))
    return made


value: Any  # the loop variables of the tables: a wrong value of any type, on purpose

# -- constructors: (label, call, bad) ------------------------------------------------

BUILDS: list[tuple[str, Build, object]] = [
    ("Scheduler(store=InMemoryTaskStore)", lambda: Scheduler(store=InMemoryTaskStore),
     Named("InMemoryTaskStore'> (a class: pass an instance, InMemoryTaskStore())")),
    ("Simulation(store=InMemoryTaskStore)", lambda: Simulation(store=InMemoryTaskStore),
     Named("InMemoryTaskStore'> (a class: pass an instance, InMemoryTaskStore())")),
    ("Scheduler(store=SqliteTaskStore)", lambda: Scheduler(store=SqliteTaskStore),
     Named("SqliteTaskStore'> (a class: pass an instance, SqliteTaskStore(...))")),
    ("Scheduler(clock=FakeClock)", lambda: Scheduler(clock=FakeClock),
     Named("FakeClock'> (a class: pass an instance, FakeClock())")),
    ("Scheduler(clock=SystemClock)", lambda: Scheduler(clock=SystemClock),
     Named("SystemClock'> (a class: pass an instance, SystemClock())")),
    # A protocol or an abstract class has no instance to pass: the hint said Clock().
    ("Scheduler(clock=Clock)", lambda: Scheduler(clock=Clock),
     Named("Clock'> (a protocol, which has no instances: pass an instance of a class that "
           "implements Clock)")),
    ("Simulation(store=TaskStore)", lambda: Simulation(store=TaskStore),
     Named("TaskStore'> (a protocol, which has no instances: pass an instance of a class "
           "that implements TaskStore)")),
]  # fmt: skip
for label, listener, bad in [
    ("EventLog", EventLog, Named("EventLog'> (a class: pass an instance, EventLog())")),
    ("no_event", no_event, Named("no_event at 0x")),
    ("two_arguments", two_arguments, Named("missing a required argument: 'more'")),
    ("DeafListener()", DeafListener(), Named("DeafListener object at 0x")),
    (
        "TaskListener",
        TaskListener,
        Named(
            "TaskListener'> (a protocol, which has no instances: pass an instance of a class "
            "that implements TaskListener)"
        ),
    ),
    (
        "HalfListener",
        HalfListener,
        Named(
            "HalfListener'> (an abstract class, which has no instances: pass an instance of "
            "a subclass that implements on_event)"
        ),
    ),
]:
    BUILDS.append((f"Scheduler(listeners=[{label}])",
                   lambda v=listener: Scheduler(listeners=[v]), bad))  # fmt: skip
    BUILDS.append((f"Simulation(listeners=[{label}])",
                   lambda v=listener: Simulation(listeners=[v]), bad))  # fmt: skip
# A zone's name mistyped in its case or padded: the message names the zone meant.
for value, meant in (("utc", "UTC"), ("europe/berlin", "Europe/Berlin"), ("UTC ", "UTC")):
    for label, make in (("Scheduler", Scheduler), ("Simulation", Simulation)):
        BUILDS.append((f"{label}(tz={value!r})", lambda m=make, v=value: m(tz=v),
                       Named(f"{value!r}: did you mean {meant!r}?")))  # fmt: skip
    BUILDS.append((f"CronSchedule(tz={value!r})",
                   lambda v=value: CronSchedule("0 3 * * *", tz=v),
                   Named(f"{value!r}: did you mean {meant!r}?")))  # fmt: skip
for value in (None, 1, 0, "yes"):
    BUILDS.append((f"ControlPanel(live={value!r})",
                   lambda v=value: ControlPanel(simulation(), loop=None, live=v),
                   value))  # fmt: skip
    BUILDS.append((f"SimulationPlayer(chart={value!r})",
                   lambda v=value: SimulationPlayer(simulation(), chart=v), value))  # fmt: skip


@pytest.mark.parametrize(("label", "call", "bad"), BUILDS, ids=ids(BUILDS))
def test_a_bad_constructor_argument_is_refused_quoting_it(
    label: str, call: Build, bad: object
) -> None:
    refused_build(call, bad)


# -- verbs on a runtime holding tasks: (label, call, bad) ----------------------------

Verb = Callable[[Runtime], object]
VERBS: list[tuple[str, Verb, object]] = [
    ("add_listener(EventLog)", lambda rt: rt.add_listener(EventLog),
     Named("(a class: pass an instance, EventLog())")),
    ("add_listener(TaskListener)", lambda rt: rt.add_listener(TaskListener),
     Named("(a protocol, which has no instances: pass an instance of a class that "
           "implements TaskListener)")),
    ("add_listener(no_event)", lambda rt: rt.add_listener(no_event),
     Named("too many positional arguments")),
    ("add_listener(DeafListener())", lambda rt: rt.add_listener(DeafListener()),
     Named("DeafListener object at 0x")),
    ("schedule(retry=RetryPolicy)", lambda rt: register(rt, retry=RetryPolicy),
     Named("RetryPolicy'> (a class: pass an instance, RetryPolicy())")),
    ("schedule(misfire=MisfirePolicy)", lambda rt: register(rt, misfire=MisfirePolicy),
     Named("MisfirePolicy'> (a class: pass an instance, MisfirePolicy())")),
]  # fmt: skip
# The task schedule() returned, given for its id: "no task with id <ScheduledTask kept ...>"
# said nothing of the id to pass, of a task that is registered.
HOLDS_KEPT = Named("(not an id but what holds one: pass its .id, 'kept')")
for verb_name in ("cancel", "pause", "resume", "redrive", "task", "remove", "run_now"):
    VERBS.append((f"{verb_name}(the task itself)",
                  lambda rt, n=verb_name: getattr(rt, n)(rt.task("kept")), HOLDS_KEPT))  # fmt: skip
VERBS.append(("reschedule(the task itself, ...)",
              lambda rt: rt.reschedule(rt.task("kept"), FixedRate(5)), HOLDS_KEPT))  # fmt: skip
VERBS.append(("modify(the task itself, ...)",
              lambda rt: rt.modify(rt.task("kept"), timeout=5), HOLDS_KEPT))  # fmt: skip
VERBS.append(("schedule(depends_on=[the task itself])",
              lambda rt: register(rt, depends_on=[rt.task("kept")]), HOLDS_KEPT))  # fmt: skip
for value in (True, False):
    VERBS.append((f"schedule(first_run answers {value})",
                  lambda rt, v=value: register(rt, "job", no_event, AnswersBool(v)),
                  Named(f"AnswersBool({value}).first_run({T0!r}) answered {value}, "
                        "not an instant")))  # fmt: skip
    VERBS.append((f"reschedule('kept', first_run answers {value})",
                  lambda rt, v=value: rt.reschedule("kept", AnswersBool(v)),
                  Named(f"answered {value}, not an instant")))  # fmt: skip
    VERBS.append((f"schedule(id='kept', replace_existing, first_run answers {value})",
                  lambda rt, v=value: register(rt, "job", no_event, AnswersBool(v), id="kept",
                                               replace_existing=True),
                  Named(f"answered {value}, not an instant")))  # fmt: skip


@pytest.mark.parametrize("kind", ["threaded", "simulated"])
@pytest.mark.parametrize(("label", "call", "bad"), VERBS, ids=ids(VERBS))
def test_a_bad_call_is_refused_quoting_the_value_and_changes_nothing(
    kind: str, label: str, call: Verb, bad: object
) -> None:
    with populated_runtime(kind) as runtime:
        refused_unchanged(runtime, call, bad)


@pytest.mark.parametrize("kind", ["threaded", "simulated"])
def test_a_refused_listener_is_not_registered_and_the_others_still_hear(kind: str) -> None:
    """The listener refused by ``add_listener`` is not half-registered: removing it finds
    nothing, and a listener added before goes on hearing every event."""
    heard = Heard()
    runtime: Runtime = (
        Scheduler(clock=FakeClock(T0)) if kind == "threaded" else Simulation(start=T0)
    )
    runtime.add_listener(heard)
    for bad in (EventLog, no_event, DeafListener()):
        with pytest.raises(ValueError, match="a listener is called with each event"):
            runtime.add_listener(bad)
        assert runtime.remove_listener(bad) is False
    register(runtime, "job", no_event, id="kept")
    if isinstance(runtime, Scheduler):
        assert runtime.shutdown(timeout=5)  # delivers what was published
    assert [(event.task_id, event.status.value) for event in heard.events] == [
        ("kept", "scheduled")
    ]


# What is still taken: each can be called with one event.
TAKEN: list[tuple[str, object]] = [
    ("print", print),
    ("a bound method of a builtin", [].append),
    ("a function of *args", lambda *events: None),
    ("a function with a default after the event", lambda event, more=1: None),
    ("a partial that leaves the event", partial(two_arguments, more=1)),
    ("an instance with on_event(event)", Heard()),
    ("an EventLog", EventLog()),
]


@pytest.mark.parametrize(("label", "listener"), TAKEN, ids=[label for label, _ in TAKEN])
def test_a_listener_that_takes_an_event_is_still_taken(label: str, listener: Any) -> None:
    simulation = Simulation(start=T0, listeners=[listener])
    simulation.schedule("job", FixedRate(60))
    simulation.run_for(60)
    assert simulation.remove_listener(listener)


def test_a_store_or_a_clock_given_as_an_instance_is_still_taken(tmp_path: Any) -> None:
    for store in (InMemoryTaskStore(), SqliteTaskStore(tmp_path / "tasks.db")):
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        scheduler.schedule("job", no_event, FixedRate(60))
        assert scheduler.shutdown(timeout=5)
        if isinstance(store, SqliteTaskStore):
            store.close()
    assert Scheduler(clock=SystemClock()).shutdown(timeout=5)
