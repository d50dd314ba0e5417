"""@scheduler.scheduled(schedule): registering a function by decorating it."""

from __future__ import annotations

import functools
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    FakeClock,
    FixedRate,
    Priority,
    ScheduledTask,
    ScheduleError,
    Simulation,
    SqliteTaskStore,
    ValidationError,
)
from lldsched.sim import fixed
from tests.conftest import T0, SchedulerFactory, settle


def test_the_decorator_registers_the_function_under_its_name_and_returns_it(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    calls: list[str] = []

    @scheduler.scheduled(FixedRate(60), priority=Priority.HIGH)
    def heartbeat() -> None:
        calls.append("beat")

    settle(scheduler)
    (task,) = scheduler.tasks()
    assert (task.name, task.action, task.priority) == ("heartbeat", heartbeat, Priority.HIGH)
    assert calls == ["beat"]
    heartbeat()  # still the plain function
    assert calls == ["beat", "beat"]
    assert isinstance(scheduler.task(task.id), ScheduledTask)  # task() still looks up by id


def test_name_id_replace_existing_and_cron_text_pass_through(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)

    def report() -> None: ...

    scheduler.scheduled("0 3 * * *", name="nightly report", id="nightly")(report)
    scheduler.scheduled("0 4 * * *", id="nightly", replace_existing=True)(report)
    (task,) = scheduler.tasks()
    assert (task.id, task.name, task.schedule) == ("nightly", "report", CronSchedule("0 4 * * *"))


def test_a_bare_decorator_without_a_schedule_is_refused_at_once(
    make_scheduler: SchedulerFactory,
) -> None:
    scheduler = make_scheduler()

    def heartbeat() -> None: ...

    with pytest.raises(ValidationError, match=r"got <function .*heartbeat.*with the schedule in"):
        scheduler.scheduled(heartbeat)  # type: ignore[arg-type]
    assert scheduler.tasks() == []


def test_bad_input_is_refused_naming_it_and_nothing_is_registered(
    make_scheduler: SchedulerFactory,
) -> None:
    scheduler = make_scheduler()
    with pytest.raises(ValidationError, match="scheduled\\(\\) decorates a callable, got 42"):
        scheduler.scheduled(FixedRate(60))(42)  # type: ignore[type-var]
    with pytest.raises(ValidationError, match=r"has no __name__ .*pass name="):
        scheduler.scheduled(FixedRate(60))(functools.partial(print, "x"))
    with pytest.raises(ScheduleError, match=r"task 'job': .*'\* \* \*'"):
        scheduler.scheduled("* * *")(job)
    with pytest.raises(ValidationError, match="takes a schedule or a cron expression, got 60"):
        scheduler.scheduled(60)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="task name must be a non-empty string, got ''"):
        scheduler.scheduled(FixedRate(60), name="")(job)
    assert scheduler.tasks() == []
    scheduler.scheduled(FixedRate(60), name="print")(functools.partial(print, end=""))
    assert [task.name for task in scheduler.tasks()] == ["print"]


def job() -> None:
    """A module-level function to decorate."""


def test_the_simulation_has_the_same_decorator_with_its_models() -> None:
    sim = Simulation(workers=1, start=T0)
    ran: list[float] = []

    @sim.scheduled(FixedRate(60), duration=fixed(5))
    def tick() -> None:
        ran.append(sim.now)

    sim.run(T0 + 130)
    assert ran == [T0, T0 + 60, T0 + 120]
    assert [(r.name, r.finished - r.started) for r in sim.records()] == [("tick", 5.0)] * 3


def test_decorating_twice_without_an_id_makes_two_tasks(driven: Any) -> None:
    driven.runtime.scheduled(FixedRate(60))(job)
    driven.runtime.scheduled(FixedRate(60))(job)
    assert [task.name for task in driven.runtime.tasks()] == ["job", "job"]


# --- the decorator on a durable store ----------------------------------------------------

DECORATED_MODULE = """
from lldsched import FixedRate

@scheduler.scheduled(FixedRate(60), id="cleanup", replace_existing=True)
def cleanup() -> str:
    return "cleaned"
"""


def _import_as_it_runs(name: str, scheduler: object, source: str) -> types.ModuleType:
    """``source`` run as the module ``name`` is imported (in sys.modules while its body
    runs), with ``scheduler`` among its globals."""
    module = types.ModuleType(name)
    module.scheduler = scheduler  # type: ignore[attr-defined]
    sys.modules[name] = module
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


@pytest.mark.parametrize("runs", [1, 2], ids=["imported", "run-again"])
def test_the_decorator_registers_a_module_level_function_on_a_durable_store(
    make_scheduler: SchedulerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: int
) -> None:
    """Before: the import-back check ran while the decorator ran, before Python bound the
    function's name in its module: "'decorated_jobs' has no attribute 'cleanup'", for
    every function so decorated, on every durable store (GUIDE.md tells such a
    registration to take id= and replace_existing=True). Run again (a notebook's cell,
    a reload), the name held the earlier definition: "does not round-trip"."""
    monkeypatch.delitem(sys.modules, "decorated_jobs", raising=False)
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = make_scheduler(store=store)
        for _ in range(runs):
            module = _import_as_it_runs("decorated_jobs", scheduler, DECORATED_MODULE)
        (task,) = scheduler.tasks()
        assert task.action is module.cleanup
        assert [s.task.action for s in store.load_all()] == [module.cleanup]


def test_a_module_run_again_in_its_own_namespace_registers_its_new_definition(
    make_scheduler: SchedulerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reload (``importlib.reload``) or a notebook cell run again runs the body in the
    module's own namespace: its name holds the earlier definition of the function as the
    decorator runs, and is bound to the new one first, so that the store's import-back
    check finds the function registered ("does not round-trip" otherwise)."""
    monkeypatch.delitem(sys.modules, "decorated_jobs", raising=False)
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = make_scheduler(store=store)
        module = _import_as_it_runs("decorated_jobs", scheduler, DECORATED_MODULE)
        first = module.cleanup
        exec(compile(DECORATED_MODULE, "decorated_jobs.py", "exec"), module.__dict__)
        assert module.cleanup is not first
        (task,) = scheduler.tasks()
        assert task.action is module.cleanup
        assert [s.task.action for s in store.load_all()] == [module.cleanup]


def test_a_refused_decoration_leaves_the_modules_name_as_it_was(
    make_scheduler: SchedulerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "decorated_jobs", raising=False)
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = make_scheduler(store=store)
        refused = DECORATED_MODULE.replace("replace_existing=True", "timeout=-1")
        with pytest.raises(ValidationError, match="timeout must be seconds > 0, got -1"):
            _import_as_it_runs("decorated_jobs", scheduler, refused)
        assert not hasattr(sys.modules["decorated_jobs"], "cleanup")
        assert scheduler.tasks() == [] and store.load_all() == []


def test_a_refused_redefinition_leaves_the_earlier_definition_bound(
    make_scheduler: SchedulerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module run again in its own namespace (a reload, a notebook cell) whose new
    definition is refused: the ``def`` statement raises, so the module's name keeps the
    earlier definition, the one registered and stored (the new one, bound early for the
    store's import-back check, is taken back)."""
    monkeypatch.delitem(sys.modules, "decorated_jobs", raising=False)
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = make_scheduler(store=store)
        module = _import_as_it_runs("decorated_jobs", scheduler, DECORATED_MODULE)
        first = module.cleanup
        refused = DECORATED_MODULE.replace(
            "replace_existing=True", "replace_existing=True, timeout=-1"
        )
        with pytest.raises(ValidationError, match="timeout must be seconds > 0, got -1"):
            exec(compile(refused, "decorated_jobs.py", "exec"), module.__dict__)
        assert module.cleanup is first
        (task,) = scheduler.tasks()
        assert task.action is first
        assert [s.task.action for s in store.load_all()] == [first]


TIMED_JOB = """
import functools
from lldsched import FixedRate

def timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper

def job() -> str:
    return "ran"
"""

WRAPPED_BY_CALL = f"""{TIMED_JOB}
scheduler.scheduled(FixedRate(60), name="timed job")(timed(job))
scheduler.scheduled(FixedRate(60), name="static job")(staticmethod(job))
"""


def test_registering_a_wrapper_of_a_bound_function_leaves_the_modules_name_alone(
    make_scheduler: SchedulerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``scheduled(...)(timed(job))``, the call form on a function its module binds
    already: the wrapper copies ``job``'s name, qualified name and module, and the
    decorator's early binding replaced the module's ``job`` with it (a ``staticmethod``
    too), so every later ``job()`` in the user's code ran through the wrapper, or
    raised."""
    monkeypatch.delitem(sys.modules, "wrapped_jobs", raising=False)
    scheduler = make_scheduler()
    module = _import_as_it_runs("wrapped_jobs", scheduler, WRAPPED_BY_CALL)
    assert not hasattr(module.job, "__wrapped__") and module.job() == "ran"
    assert [getattr(task.action, "__wrapped__", None) for task in scheduler.tasks()] == [
        module.job,
        module.job,
    ]


class _Link:
    """One link of a ``__wrapped__`` chain."""

    __wrapped__: object = None


def test_a_redefinition_whose_wrapped_chain_loops_is_registered_and_bound(
    make_scheduler: SchedulerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The early binding asks whether the module's ``job`` is on the new function's
    ``__wrapped__`` chain; a chain that loops (here past its first link) is followed to
    its first repeat, and ``job`` not being on it, the new definition is bound."""
    monkeypatch.delitem(sys.modules, "looped_jobs", raising=False)
    scheduler = make_scheduler()
    module = _import_as_it_runs("looped_jobs", scheduler, "def job() -> str:\n    return 'old'\n")
    first, second = _Link(), _Link()
    first.__wrapped__, second.__wrapped__ = second, first

    def job() -> str:
        return "new"

    job.__module__, job.__qualname__ = "looped_jobs", "job"
    job.__wrapped__ = first  # type: ignore[attr-defined]
    scheduler.scheduled(FixedRate(60))(job)
    assert module.job is job and module.job() == "new"
    assert [task.action for task in scheduler.tasks()] == [job]


WRAPPED_TWICE = f"{TIMED_JOB}\nscheduler.scheduled(FixedRate(60))(timed(timed(job)))\n"


def test_registering_a_wrapper_of_a_wrapper_of_a_bound_function_leaves_its_name_alone(
    make_scheduler: SchedulerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module's ``job`` two links down the ``__wrapped__`` chain is found as well."""
    monkeypatch.delitem(sys.modules, "wrapped_twice", raising=False)
    module = _import_as_it_runs("wrapped_twice", make_scheduler(), WRAPPED_TWICE)
    assert not hasattr(module.job, "__wrapped__") and module.job() == "ran"
