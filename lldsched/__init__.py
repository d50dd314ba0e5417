"""lldsched: an in-process task scheduler you can read, run and replay.

The classic low-level-design case ("design a cron / task scheduler") built for
real: a min-heap timer that waits on a Condition, a bounded worker pool, one-off,
fixed-rate, fixed-delay and cron schedules (with jitter and windows as
decorators over any of them), priorities, retries with capped
exponential backoff and a dead letter, timeouts, pause / resume / cancel, a store
every transition is written through (durably, with :class:`SqliteTaskStore`, and
recovered after downtime under a per-task :class:`MisfirePolicy`), and listeners;
and a discrete-event :class:`Simulation` that replays days of schedules in
seconds through the same state machine.  See ``README.md``.

The documents the docstrings cite (``README.md``, ``docs/GUIDE.md``, ...) are
the repository's, https://github.com/lldsched/lldsched (``docs/GUIDE.md`` is read at
https://github.com/lldsched/lldsched/blob/main/docs/GUIDE.md), and the sdist's: the
wheel holds the package alone.  A message cites a document by that address
(:func:`lldsched.errors.doc_url`).
"""

# First: a Ctrl-C while the rest imports ends `python -m lldsched` (or the `lldsched`
# script) with one line, not a traceback; a program that imports lldsched is untouched.
from lldsched import startup as _startup  # noqa: F401

# isort: split

import logging as _logging
import typing as _typing

from lldsched.clock import Clock, FakeClock, SystemClock
from lldsched.core.context import RunContext
from lldsched.core.metrics import Metrics
from lldsched.core.task import ScheduledTask
from lldsched.errors import (
    LldschedError,
    ScheduleError,
    SchedulerBusyError,
    SchedulerShutDownError,
    SchedulerStateError,
    StoreClosedError,
    StoreError,
    TaskNotFoundError,
    TaskRetiredError,
    ValidationError,
)
from lldsched.listeners import EventLog, TaskListener
from lldsched.model import (
    ExecutionRecord,
    Outcome,
    Priority,
    TaskEvent,
    TaskStatus,
)
from lldsched.persistence import Task, TaskSnapshot
from lldsched.policies import Misfire, MisfirePolicy, Overlap, OverrunPolicy, RetryPolicy
from lldsched.schedules import (
    CronSchedule,
    FixedDelay,
    FixedRate,
    Jittered,
    OneTime,
    Schedule,
    Window,
)
from lldsched.stores import InMemoryTaskStore, SqliteTaskStore, TaskStore
from lldsched.threaded import Scheduler

# The library's loggers (lldsched.jobs, lldsched.store, ...: lldsched/logs.py) are
# children of "lldsched", which says nothing until the application configures logging
# (the logging HOWTO's rule for libraries): a script or a notebook whose tasks fail on
# purpose stays quiet, and a service that calls logging.basicConfig() or dictConfig()
# hears every failed attempt (docs/OPERATIONS.md, "Logging").
_logging.getLogger("lldsched").addHandler(_logging.NullHandler())

__all__ = [
    "Clock",
    "CronSchedule",
    "EventLog",
    "ExecutionRecord",
    "FakeClock",
    "FixedDelay",
    "FixedRate",
    "InMemoryTaskStore",
    "Jittered",
    "LldschedError",
    "Metrics",
    "Misfire",
    "MisfirePolicy",
    "OneTime",
    "Outcome",
    "Overlap",
    "OverrunPolicy",
    "Priority",
    "RetryPolicy",
    "RunContext",
    "Schedule",
    "ScheduleError",
    "ScheduledTask",
    "Scheduler",
    "SchedulerBusyError",
    "SchedulerShutDownError",
    "SchedulerStateError",
    "Simulation",
    "SqliteTaskStore",
    "StoreClosedError",
    "StoreError",
    "SystemClock",
    "Task",
    "TaskEvent",
    "TaskListener",
    "TaskNotFoundError",
    "TaskRetiredError",
    "TaskSnapshot",
    "TaskStatus",
    "TaskStore",
    "ValidationError",
    "Window",
]

__version__ = "0.1.0"

# The simulation is imported when first named (``lldsched.Simulation``, ``from lldsched
# import Simulation``), not with the package: a process that only schedules (a service,
# a process-isolated run's child, a test's child scheduler) does not pay for its modules,
# about a sixth of the package's import (docs/PERFORMANCE.md, "Start-up").
if _typing.TYPE_CHECKING:
    from lldsched.sim import Simulation
else:

    def __getattr__(name: str) -> object:
        if name == "Simulation":
            from lldsched.sim import Simulation

            globals()["Simulation"] = Simulation  # found directly from now on
            return Simulation
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "Simulation"})
