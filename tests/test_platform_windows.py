"""What a Windows user meets, emulated on Linux (CI runs no Windows): each test switches
the one flag the code reads to know its platform, then checks the behaviour a Windows
host would get.

Instants are shown through lldsched.clock.utc_datetime, which takes the ones before 1970
that Windows' ``datetime.fromtimestamp`` refuses.  The lab times its experiments with
elapsed time there (lldsched/lab/_support.py).
Process isolation is POSIX-only (lldsched/threaded/processes/pool.py): it is refused at
registration, naming the task and the reason, and a process-isolated task restored
from a store written on a POSIX host fails each attempt with that reason, starting no
child.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lldsched import OneTime, RetryPolicy, Scheduler, SqliteTaskStore, TaskStatus, ValidationError
from lldsched.clock import utc_datetime
from lldsched.lab._support import cpu_clock
from lldsched.lab.entries import measure_cancel_cost
from lldsched.threaded.processes import pool

ONCE = RetryPolicy(max_attempts=1)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as processes/pool.py sees it on Windows."""
    monkeypatch.setattr(pool, "SUPPORTED", False)


@pytest.mark.usefixtures("windows")
def test_process_isolation_is_refused_at_registration_naming_the_task_and_why() -> None:
    with Scheduler() as scheduler:
        with pytest.raises(ValidationError) as caught:
            scheduler.schedule(
                "report", "tests.process_jobs:add", OneTime(delay=0), args=(1, 2),
                isolation="process",
            )  # fmt: skip
        message = str(caught.value)
        assert "task 'report'" in message and "needs a POSIX system" in message
        assert "isolation='thread'" in message  # what to do instead
        assert scheduler.tasks() == []  # nothing half-registered
        thread = scheduler.schedule("fine", lambda: None, OneTime(delay=0))
        assert thread.definition.isolation == "thread"  # threads are unaffected


def test_a_restored_isolated_task_fails_its_attempts_saying_why_and_starts_no_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:  # written on a POSIX host
        scheduler = Scheduler(store=store)
        scheduler.schedule(
            "add", "tests.process_jobs:add", OneTime(delay=0), args=(1, 2),
            isolation="process", retry=ONCE, id="add",
        )  # fmt: skip
        assert scheduler.shutdown(drain=False)
    monkeypatch.setattr(pool, "SUPPORTED", False)  # opened on Windows
    with SqliteTaskStore(path) as store, Scheduler(store=store) as scheduler:
        assert scheduler.wait_idle(timeout=10)
        task = scheduler.task("add")
        assert task.status is TaskStatus.FAILED
        (record,) = task.history
        assert record.error is not None and record.error.startswith("OSError: isolation='process'")
        assert "needs a POSIX system" in record.error
        assert scheduler._processes.alive == 0


def test_the_labs_cpu_clock_is_elapsed_time_where_thread_time_is_coarse() -> None:
    """Windows' thread_time ticks every 15.6 ms: microseconds of work would read 0 s and
    notebook 09's cancel-cost ratio would divide by zero."""
    assert cpu_clock("win32") is time.perf_counter
    assert cpu_clock("linux") is time.thread_time
    assert cpu_clock("darwin") is time.thread_time
    assert measure_cancel_cost((1_000,), cancels=5)[0].ratio > 0  # this platform's clock


@pytest.mark.parametrize(
    "timestamp", [0.0, 1.5, -3600.0, -0.0000015, 1_796_200_000.123456, 40_000_000_000.0]
)
def test_utc_datetime_is_fromtimestamp_also_for_instants_windows_refuses(timestamp: float) -> None:
    """Windows' C library refuses instants before 1970 (and after 3000); the arithmetic
    gives the same microsecond everywhere."""
    assert utc_datetime(timestamp) == datetime.fromtimestamp(timestamp, UTC)


def test_no_instant_is_shown_through_fromtimestamp() -> None:
    """Each place that prints an instant goes through utc_datetime: OneTime(at=-3600)'s
    explain(), a Stepper's message, the log's retry instant, a cron preview, the panel's
    times raised OSError on Windows for an instant before 1970."""
    assert OneTime(at=-3600).explain() == "Once, at 1969-12-31 23:00 UTC"
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "lldsched").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ".fromtimestamp(" in line and not line.lstrip().startswith("#")
    ]
    assert offenders == ["lldsched/schedules/cron/zone.py:66"]  # guarded there: ts >= 0
