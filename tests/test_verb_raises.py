"""The docstrings of the verbs on one task (``pause``, ``cancel``, ``resume``, ``redrive``,
``remove``, ``run_now``, ``reschedule``, ``modify``) name every exception they raise on
purpose.  Each case is made to happen here, on the threaded scheduler and on
the simulation, and the class it raised must be the one expected and be named in the
docstring of the verb that raised it: a docstring that leaves one out, or names a class
the verb never raises in that case, fails here."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    OneTime,
    Priority,
    ScheduleError,
    Scheduler,
    SchedulerShutDownError,
    SchedulerStateError,
    Simulation,
    SqliteTaskStore,
    StoreClosedError,
    StoreError,
    TaskNotFoundError,
    TaskRetiredError,
    ValidationError,
)
from lldsched.runtime import REFUSED_AFTER_SHUTDOWN
from lldsched.schedules.base import Schedule
from tests import jobs
from tests.forking import in_child

VERBS = ("pause", "cancel", "resume", "redrive", "remove", "run_now", "reschedule", "modify")

ARGUMENTS: dict[str, tuple[tuple[object, ...], dict[str, object]]] = {
    "reschedule": ((FixedRate(30),), {}),
    "modify": ((), {"priority": Priority.HIGH}),
}
"""What a verb is given besides the task's id: good values (the cases are the id's, the
store's and the runtime's)."""

REFUSED = tuple(verb for verb in VERBS if verb in REFUSED_AFTER_SHUTDOWN)
"""The verbs refused after shutdown (the rule's one home, ``REFUSED_AFTER_SHUTDOWN``)."""

Runtime = Scheduler | Simulation


@pytest.fixture
def built() -> Iterator[list[Runtime]]:
    """The runtimes a test built, shut down at its end, the last built first (a scheduler
    holding a store before the runtime it refuses)."""
    made: list[Runtime] = []
    yield made
    for runtime in reversed(made):
        runtime.shutdown(timeout=5)
    while _OPENED:  # after the runtimes on them
        _OPENED.pop().close()


_OPENED: list[SqliteTaskStore] = []
"""The stores a case opened and left open for the verb (closed by :func:`built`)."""


def _runtime(kind: str, made: list[Runtime], **options: object) -> Runtime:
    runtime: Runtime
    if kind == "scheduler":
        runtime = Scheduler(workers=1, clock=FakeClock(0), **options)  # type: ignore[arg-type]
    else:
        runtime = Simulation(workers=1, **options)  # type: ignore[arg-type]
    made.append(runtime)
    return runtime


def _register(runtime: Runtime, schedule: Schedule | None = None) -> str:
    every = schedule if schedule is not None else FixedRate(60, start_delay=60)
    if isinstance(runtime, Scheduler):
        return runtime.schedule("tick", jobs.noop, every).id
    return runtime.schedule("tick", every).id


def _unknown(kind: str, made: list[Runtime], tmp: Path) -> tuple[Runtime, str]:
    runtime = _runtime(kind, made)
    _register(runtime)
    return runtime, "nope"


def _not_a_string(kind: str, made: list[Runtime], tmp: Path) -> tuple[Runtime, object]:
    runtime = _runtime(kind, made)
    _register(runtime)
    return runtime, 123  # not found, as any id never registered: no ValidationError


def _retired(kind: str, made: list[Runtime], tmp: Path) -> tuple[Runtime, str]:
    runtime = _runtime(kind, made, retain_finished=0)
    task_id = _register(runtime, OneTime(delay=0))
    if isinstance(runtime, Scheduler):
        runtime.start()
        assert runtime.wait_idle(timeout=5)
    else:
        runtime.run_for(1)
    return runtime, task_id


def _store_closed(kind: str, made: list[Runtime], tmp: Path) -> tuple[Runtime, str]:
    store = SqliteTaskStore(tmp / "closed.db")
    runtime = _runtime(kind, made, store=store)
    task_id = _register(runtime)
    store.close()
    return runtime, task_id


def _store_held_elsewhere(kind: str, made: list[Runtime], tmp: Path) -> tuple[Runtime, str]:
    store = SqliteTaskStore(tmp / "held.db")
    _OPENED.append(store)
    runtime = _runtime(kind, made, store=store)
    task_id = _register(runtime)
    made.append(Scheduler(workers=1, clock=FakeClock(0), store=store).start())
    return runtime, task_id


def _shut_down(kind: str, made: list[Runtime], tmp: Path) -> tuple[Runtime, str]:
    runtime = _runtime(kind, made)
    task_id = _register(runtime)
    runtime.shutdown()
    return runtime, task_id


CASES: dict[str, tuple[Callable[..., tuple[Runtime, object]], type[Exception], tuple[str, ...]]]
CASES = {
    "unknown id": (_unknown, TaskNotFoundError, VERBS),
    "id not a string": (_not_a_string, TaskNotFoundError, VERBS),
    "retired": (_retired, TaskRetiredError, VERBS),
    "store closed": (_store_closed, StoreClosedError, VERBS),
    "store held by a running scheduler": (_store_held_elsewhere, StoreError, VERBS),
    # SchedulerShutDownError, not only a SchedulerStateError: a library embedding lldsched
    # tells a call that raced its own shutdown from a mistake (a finished task, a fork).
    "after shutdown": (_shut_down, SchedulerShutDownError, REFUSED),
}
"""Each case: how it is made, what it raises, and which verbs raise it (the others are
allowed then: a pause or a cancel after shutdown only stops things)."""


def _docstring(runtime: object, verb: str) -> str:
    return inspect.getdoc(getattr(type(runtime), verb)) or ""


def _call(runtime: Runtime, verb: str, task_id: object) -> object:
    args, kwargs = ARGUMENTS.get(verb, ((), {}))
    return getattr(runtime, verb)(task_id, *args, **kwargs)


@pytest.mark.parametrize("kind", ["scheduler", "simulation"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("verb", VERBS)
def test_each_exception_a_verb_raises_is_named_in_its_docstring(
    kind: str, case: str, verb: str, built: list[Runtime], tmp_path: Path
) -> None:
    make, raised, verbs = CASES[case]
    runtime, task_id = make(kind, built, tmp_path)
    docstring = _docstring(runtime, verb)
    if verb not in verbs:
        _call(runtime, verb, task_id)  # allowed: it raises nothing
        if case == "after shutdown":
            assert "Not after shutdown" in docstring, (kind, verb)
        return
    with pytest.raises(raised) as caught:
        _call(runtime, verb, task_id)
    assert type(caught.value) is raised
    assert raised.__name__ in docstring, (kind, verb, raised.__name__)
    if case == "after shutdown":
        assert "after shutdown" in docstring and "Not after shutdown" not in docstring


@pytest.mark.parametrize("verb", VERBS)
def test_a_scheduler_s_verb_in_a_forked_child_raises_what_its_docstring_names(
    verb: str, built: list[Runtime]
) -> None:
    scheduler = _runtime("scheduler", built)
    task_id = _register(scheduler)
    outcome = in_child(lambda: _call(scheduler, verb, task_id))
    assert outcome.startswith("SchedulerStateError: "), outcome
    docstring = _docstring(scheduler, verb)
    assert "SchedulerStateError" in docstring and "forked" in docstring, docstring


def _finished(runtime: Runtime) -> str:
    task_id = _register(runtime)
    runtime.cancel(task_id)
    return task_id


def _depended_on(runtime: Runtime) -> str:
    task_id = _register(runtime)
    if isinstance(runtime, Scheduler):
        runtime.schedule("down", jobs.noop, FixedRate(60), depends_on=[task_id])
    else:
        runtime.schedule("down", FixedRate(60), depends_on=[task_id])
    return task_id


REFUSALS: dict[
    str,
    tuple[
        str, Callable[[Runtime], str], tuple[object, ...], dict[str, object], type[Exception], str
    ],
]
REFUSALS = {
    "reschedule: not a schedule": (
        "reschedule",
        _register,
        (123,),
        {},
        ValidationError,
        "bad schedule",
    ),
    "reschedule: cron text that does not parse": (
        "reschedule",
        _register,
        ("not a cron",),
        {},
        ScheduleError,
        "cron text",
    ),
    "reschedule: a finished task": (
        "reschedule",
        _finished,
        (FixedRate(30),),
        {},
        SchedulerStateError,
        "finished",
    ),
    "modify: a bad priority": (
        "modify",
        _register,
        (),
        {"priority": 5},
        ValidationError,
        "bad value",
    ),
    "modify: a bad timeout": (
        "modify",
        _register,
        (),
        {"timeout": -1},
        ValidationError,
        "bad value",
    ),
    "modify: a finished task": (
        "modify",
        _finished,
        (),
        {"priority": Priority.HIGH},
        SchedulerStateError,
        "finished",
    ),
    "remove: tasks depend on it": ("remove", _depended_on, (), {}, SchedulerStateError, "depend"),
}
"""Each refusal of a verb's arguments or its task's state: the verb, how the task is made,
what the verb is given besides its id, what it raises, and the words its docstring says it
with."""


@pytest.mark.parametrize("kind", ["scheduler", "simulation"])
@pytest.mark.parametrize("refusal", sorted(REFUSALS))
def test_each_refusal_of_a_verbs_arguments_or_task_is_named_in_its_docstring(
    kind: str, refusal: str, built: list[Runtime]
) -> None:
    verb, make, args, kwargs, raised, words = REFUSALS[refusal]
    runtime = _runtime(kind, built)
    task_id = make(runtime)
    before = runtime.task(task_id).status
    with pytest.raises(raised) as caught:
        getattr(runtime, verb)(task_id, *args, **kwargs)
    assert type(caught.value) is raised
    assert runtime.task(task_id).status is before  # nothing changed
    docstring = _docstring(runtime, verb)
    assert raised.__name__ in docstring and words in docstring, (kind, verb, raised.__name__)


def _replacing(runtime: Runtime, task_id: object, **options: object) -> object:
    """``schedule`` registering ``task_id`` again (``replace_existing=True``)."""
    options.setdefault("replace_existing", True)
    if isinstance(runtime, Scheduler):
        return runtime.schedule("tick", jobs.noop, FixedRate(60), id=task_id, **options)  # type: ignore[arg-type]
    return runtime.schedule("tick", FixedRate(60), id=task_id, **options)  # type: ignore[arg-type]


REPLACING = ("store closed", "store held by a running scheduler", "after shutdown")
"""The cases of the verbs above that ``schedule`` replacing a task meets alike (an unknown
or retired id it registers, as a restart does)."""


@pytest.mark.parametrize("kind", ["scheduler", "simulation"])
@pytest.mark.parametrize("case", REPLACING)
def test_schedule_replacing_a_task_raises_what_its_docstring_names(
    kind: str, case: str, built: list[Runtime], tmp_path: Path
) -> None:
    make, raised, _ = CASES[case]
    runtime, task_id = make(kind, built, tmp_path)
    with pytest.raises(raised) as caught:
        _replacing(runtime, task_id)
    assert type(caught.value) is raised
    docstring = _docstring(runtime, "schedule")
    assert raised.__name__ in docstring, (kind, raised.__name__)
    if case == "after shutdown":
        assert "after shutdown" in docstring


@pytest.mark.parametrize("kind", ["scheduler", "simulation"])
@pytest.mark.parametrize(
    ("options", "raised", "words"),
    [
        ({"replace_existing": False}, ValidationError, "without ``replace_existing``"),
        ({"depends_on": ["nope"]}, ValidationError, "bad value"),
        ({"priority": 99}, ValidationError, "bad value"),
    ],
)
def test_schedule_refusing_a_replacement_names_it_and_changes_nothing(
    kind: str,
    options: dict[str, object],
    raised: type[Exception],
    words: str,
    built: list[Runtime],
) -> None:
    runtime = _runtime(kind, built)
    task_id = _register(runtime)
    before = runtime.task(task_id)
    with pytest.raises(raised) as caught:
        _replacing(runtime, task_id, **options)
    assert type(caught.value) is raised
    assert runtime.task(task_id) is before and before.depends_on == ()
    docstring = _docstring(runtime, "schedule")
    assert raised.__name__ in docstring and words in docstring, kind


def test_schedule_in_a_forked_child_raises_what_its_docstring_names(
    built: list[Runtime],
) -> None:
    scheduler = _runtime("scheduler", built)
    task_id = _register(scheduler)
    outcome = in_child(lambda: _replacing(scheduler, task_id))
    assert outcome.startswith("SchedulerStateError: "), outcome
    docstring = _docstring(scheduler, "schedule")
    assert "SchedulerStateError" in docstring and "forked" in docstring, docstring
