"""The public API: the names users rely on are pinned, and the core imports only the stdlib."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Callable, Iterator

import lldsched
import lldsched.runtime
import lldsched.sim
import lldsched.testing
from lldsched import (
    CronSchedule,
    EventLog,
    FakeClock,
    FixedDelay,
    FixedRate,
    InMemoryTaskStore,
    Jittered,
    MisfirePolicy,
    OneTime,
    Priority,
    RetryPolicy,
    RunContext,
    Scheduler,
    Simulation,
    TaskStatus,
    Window,
)

PUBLIC = [
    "Clock", "CronSchedule", "EventLog", "ExecutionRecord", "FakeClock", "FixedDelay",
    "FixedRate", "InMemoryTaskStore", "LldschedError", "Misfire", "MisfirePolicy", "OneTime",
    "Outcome", "Overlap", "OverrunPolicy", "Priority", "RetryPolicy", "RunContext", "Schedule",
    "ScheduleError", "ScheduledTask", "Scheduler", "SchedulerStateError", "Simulation",
    "SqliteTaskStore", "StoreError", "SystemClock", "Task", "TaskEvent", "TaskListener",
    "TaskNotFoundError", "TaskSnapshot", "TaskStatus", "TaskStore", "ValidationError",
    "Jittered", "Window", "TaskRetiredError", "StoreClosedError", "Metrics",
    "SchedulerBusyError", "SchedulerShutDownError",
]  # fmt: skip


def test_all_is_pinned() -> None:
    assert sorted(lldsched.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert getattr(lldsched, name) is not None


def test_priorities_sort_high_first_and_statuses_are_eight() -> None:
    assert sorted([lldsched.Priority.LOW, lldsched.Priority.HIGH, lldsched.Priority.NORMAL]) == [
        lldsched.Priority.HIGH, lldsched.Priority.NORMAL, lldsched.Priority.LOW,
    ]  # fmt: skip
    assert len(lldsched.TaskStatus) == 8  # the seven of the lifecycle, and BLOCKED


def test_importing_the_package_loads_no_third_party_module() -> None:
    # Not pandas, matplotlib, ipywidgets, numpy, psycopg or IPython, nor anything else
    # outside the standard library: the extras are imported by the modules that need them.
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import lldsched, lldsched.__main__\n"
        "loaded = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "assert 'lldsched' in loaded, loaded\n"
        "stdlib = set(sys.stdlib_module_names) | {'__mp_main__'}  # multiprocessing's alias\n"
        # Made when Python is built, and not in stdlib_module_names: the build's
        # configuration, and (3.15's traceback imports it) the hints of ModuleNotFoundError.
        "stdlib |= {'_missing_stdlib_info'}\n"
        "bad = [m for m in loaded - stdlib - {'lldsched'} if not m.startswith('_sysconfigdata_')]\n"
        "print(','.join(sorted(bad)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_dir_of_the_package_is_its_names_its_modules_and_its_version() -> None:
    """``dir(lldsched)`` (what an IDE and tab completion offer) holds no helper: every
    public name is exported, a submodule, or ``__version__``."""
    extra = {
        name for name in dir(lldsched) if not name.startswith("_") and name not in lldsched.__all__
    }
    assert all(inspect.ismodule(getattr(lldsched, name)) for name in extra), extra
    assert all(getattr(lldsched, name).__name__ == f"lldsched.{name}" for name in extra)
    assert not [name for name in lldsched.__all__ if name.startswith("_")]


def public_functions() -> Iterator[tuple[str, Callable[..., object]]]:
    """Every function and method a user calls, of each exported name of the package,
    ``lldsched.testing``, ``lldsched.sim`` and ``lldsched.runtime``."""
    for module in (lldsched, lldsched.testing, lldsched.sim, lldsched.runtime):
        for export in module.__all__:
            value = getattr(module, export)
            if inspect.isfunction(value):
                yield f"{module.__name__}.{export}", value
            if not inspect.isclass(value):
                continue
            for name in dir(value):
                member = inspect.getattr_static(value, name)
                if isinstance(member, staticmethod | classmethod):
                    member = member.__func__
                if inspect.isfunction(member) and (name == "__init__" or name[0] != "_"):
                    yield f"{module.__name__}.{export}.{name}", member


def test_no_public_function_takes_a_flag_by_position() -> None:
    """``shutdown(False)`` says nothing at the call: a ``bool`` is keyword-only."""
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    flags = [
        f"{where}({parameter.name})"
        for where, function in public_functions()
        for parameter in inspect.signature(function).parameters.values()
        if parameter.kind in positional and "bool" in str(parameter.annotation).split(" | ")
    ]
    assert not flags
    assert len(list(public_functions())) > 200  # the walk saw the API


def test_every_public_class_has_a_repr_that_says_what_it_is() -> None:
    """No ``<... object at 0x...>``: each value a user prints, or meets in a debugger,
    names its class and what it holds."""
    clock = FakeClock(0)
    scheduler = Scheduler(workers=1, clock=clock)
    task = scheduler.schedule("a", lambda: None, FixedRate(60))
    log = EventLog()
    values: list[object] = [
        scheduler, Simulation(), task, log, clock, lldsched.SystemClock(),
        InMemoryTaskStore(), RetryPolicy(), MisfirePolicy(), FixedRate(60), FixedDelay(5),
        OneTime(delay=5), CronSchedule("0 3 * * *"), Jittered(FixedRate(60), 5, seed=1),
        Window(FixedRate(60), max_runs=3), scheduler.metrics(), scheduler.queue_stats(),
        RunContext("task-1", "a", 1, 0.0, 0), lldsched.testing.Stepper(scheduler),
        task.definition, TaskStatus.RUNNING, Priority.HIGH,
    ]  # fmt: skip
    try:
        for value in values:
            shown = repr(value)
            assert " object at 0x" not in shown, shown
            assert type(value).__name__ in shown, shown
        assert repr(log) == "<EventLog 0 events>"
    finally:
        assert scheduler.shutdown()
