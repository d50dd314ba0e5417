"""The docstrings of ``pause``, ``cancel`` and ``resume`` name every exception the verbs
raise on purpose.  Each case is made to happen here, on the threaded scheduler and on
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
    Scheduler,
    SchedulerStateError,
    Simulation,
    SqliteTaskStore,
    StoreClosedError,
    StoreError,
    TaskNotFoundError,
    TaskRetiredError,
)
from lldsched.schedules.base import Schedule
from tests import jobs
from tests.forking import in_child

VERBS = ("pause", "cancel", "resume")

Runtime = Scheduler | Simulation


@pytest.fixture
def built() -> Iterator[list[Runtime]]:
    """The runtimes a test built, shut down at its end, the last built first (a scheduler
    holding a store before the runtime it refuses)."""
    made: list[Runtime] = []
    yield made
    for runtime in reversed(made):
        runtime.shutdown(timeout=5)


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
    "after shutdown": (_shut_down, SchedulerStateError, ("resume",)),
}
"""Each case: how it is made, what it raises, and which verbs raise it (the others are
allowed then: a pause or a cancel after shutdown only stops things)."""


def _docstring(runtime: object, verb: str) -> str:
    return inspect.getdoc(getattr(type(runtime), verb)) or ""


@pytest.mark.parametrize("kind", ["scheduler", "simulation"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("verb", VERBS)
def test_each_exception_a_verb_raises_is_named_in_its_docstring(
    kind: str, case: str, verb: str, built: list[Runtime], tmp_path: Path
) -> None:
    make, raised, verbs = CASES[case]
    runtime, task_id = make(kind, built, tmp_path)
    if verb not in verbs:
        getattr(runtime, verb)(task_id)  # allowed: it raises nothing
        return
    with pytest.raises(raised) as caught:
        getattr(runtime, verb)(task_id)
    assert type(caught.value) is raised
    assert raised.__name__ in _docstring(runtime, verb), (kind, verb, raised.__name__)


@pytest.mark.parametrize("verb", VERBS)
def test_a_scheduler_s_verb_in_a_forked_child_raises_what_its_docstring_names(
    verb: str, built: list[Runtime]
) -> None:
    scheduler = _runtime("scheduler", built)
    task_id = _register(scheduler)
    outcome = in_child(lambda: getattr(scheduler, verb)(task_id))
    assert outcome.startswith("SchedulerStateError: "), outcome
    docstring = _docstring(scheduler, verb)
    assert "SchedulerStateError" in docstring and "forked" in docstring, docstring
