"""A registration that replaces a stored definition says so, in the process that writes
it (lldsched/threaded/redefined.py; docs/CLUSTER.md, "Rolling deploys").

A rolling deploy's older process that starts again registers its old schedule with
``replace_existing=True``, and every process on the store follows it: that process logs
one WARNING naming the task and both schedules.  A change of anything else is one INFO
line naming what changed; the same definition registered again (every start) says
nothing, and so does a scheduler with no store.  On a store of one process a new
schedule is said at INFO: no other process follows it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lldsched import FakeClock, Scheduler
from lldsched.logs import STORE
from lldsched.model import Priority
from lldsched.schedules.decorators import describe
from lldsched.stores.sqlite import SqliteTaskStore
from tests import jobs
from tests.cluster import StoreSpec, opened, store_spec
from tests.conftest import T0

__all__ = ["store_spec"]  # the fixture, used by name

SAID = "a registration replaced"


def _said(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == STORE and SAID in r.getMessage()]


def test_an_older_process_turning_a_schedule_back_is_said_once_at_warning(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=STORE)
    with opened(store_spec, 2) as (new_store, old_store):
        new = Scheduler(store=new_store, clock=FakeClock(T0))  # never started: registers
        new.schedule("report", jobs.noop, "0 4 * * *", id="report", replace_existing=True)
        assert _said(caplog) == []  # a new task replaces nothing
        old = Scheduler(store=old_store, clock=FakeClock(T0))  # the older release, respawned
        try:
            old.schedule("report", jobs.noop, "0 3 * * *", id="report", replace_existing=True)
            (line,) = _said(caplog)
            assert line.levelno == logging.WARNING
            message = line.getMessage()
            assert "'report'" in message
            assert message.index("At 04:00") < message.index("At 03:00")  # old, then new
            caplog.clear()
            old.schedule("report", jobs.noop, "0 3 * * *", id="report", replace_existing=True)
            assert _said(caplog) == []  # the definition the store holds: nothing to say
            old.schedule("report", jobs.noop, "0 3 * * *", id="report", replace_existing=True,
                         priority=Priority.HIGH)  # fmt: skip
            (line,) = _said(caplog)
            assert line.levelno == logging.INFO
            assert "changed: priority" in line.getMessage()
            assert "At 03:00" in line.getMessage()  # the schedule that stayed
        finally:
            old.shutdown()
            new.shutdown()


def test_a_scheduler_without_a_store_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=STORE)
    scheduler = Scheduler(clock=FakeClock(T0))
    try:
        scheduler.schedule("report", jobs.noop, "0 4 * * *", id="report")
        scheduler.schedule("report", jobs.noop, "0 3 * * *", id="report", replace_existing=True)
        assert describe(scheduler.task("report").schedule).startswith("At 03:00")
        assert _said(caplog) == []
    finally:
        scheduler.shutdown()


def test_a_new_schedule_on_a_store_of_one_process_is_said_at_info(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A new release's start on its own SQLite file: the one process that reads the
    store changed it, so the line is an event (INFO), not a warning to an operator."""
    caplog.set_level(logging.INFO, logger=STORE)
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = Scheduler(store=store, clock=FakeClock(T0))
        try:
            scheduler.schedule("report", jobs.noop, "0 4 * * *", id="report")
            scheduler.schedule("report", jobs.noop, "0 3 * * *", id="report", replace_existing=True)
            (line,) = _said(caplog)
            assert line.levelno == logging.INFO
            message = line.getMessage()
            assert message.index("At 04:00") < message.index("At 03:00")  # old, then new
            assert "every process" not in message
        finally:
            scheduler.shutdown()
