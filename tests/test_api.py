"""The public API: the names users rely on are pinned, and the core imports only the stdlib."""

from __future__ import annotations

import subprocess
import sys

import lldsched

PUBLIC = [
    "Clock", "CronSchedule", "EventLog", "ExecutionRecord", "FakeClock", "FixedDelay",
    "FixedRate", "InMemoryTaskStore", "LldschedError", "Misfire", "MisfirePolicy", "OneTime",
    "Outcome", "Overlap", "OverrunPolicy", "Priority", "RetryPolicy", "RunContext", "Schedule",
    "ScheduleError", "ScheduledTask", "Scheduler", "SchedulerStateError", "Simulation",
    "SqliteTaskStore", "StoreError", "SystemClock", "Task", "TaskEvent", "TaskListener",
    "TaskNotFoundError", "TaskSnapshot", "TaskStatus", "TaskStore", "ValidationError",
    "Jittered", "Window", "TaskRetiredError", "StoreClosedError", "Metrics",
    "SchedulerBusyError",
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
        "bad = [m for m in loaded - stdlib - {'lldsched'} if not m.startswith('_sysconfigdata_')]\n"
        "print(','.join(sorted(bad)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
