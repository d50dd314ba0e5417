"""The shape both runtimes share: what views read and drive, as ``typing.Protocol`` s.

:class:`~lldsched.threaded.scheduler.Scheduler` (threads, wall time) and
:class:`~lldsched.sim.simulation.Simulation` (virtual time) answer the same verbs,
with the same names and meanings, so a view (a frame, a plot, a control panel)
takes a :class:`Runtime` and never imports either:

* :class:`Controls`: ``pause``, ``resume``, ``cancel``, ``redrive``, ``run_now``
  (True when something changed), ``remove`` (cancel and forget; returns the task),
  ``reschedule`` and ``modify`` (a new *when*, new options; return the task);
* :class:`Reads`: ``task``, ``tasks``, ``records`` (every record the runtime still
  holds, in the order the runs finished), ``priorities`` and ``schedules`` (task id to
  priority value, and to schedule, of every task those records name, retired or
  removed ones included: :mod:`lldsched.core.departed`), ``dead_letter``, ``pending``,
  ``queue_stats``, ``metrics`` (one read of its health and load:
  :class:`~lldsched.core.metrics.Metrics`), ``orphans`` (restored tasks no
  registration named since), ``workers``, ``now`` (the runtime's instant, epoch
  seconds), ``tz`` (the zone of cron schedules that name none) and
  ``retain_finished`` (how long finished tasks stay);
* :class:`Observable`: ``add_listener`` and ``remove_listener``.
* :class:`Runtime` itself: ``shutdown`` (its end: the verbs that would run something,
  :data:`REFUSED_AFTER_SHUTDOWN`, are refused after it, the others keep the books),
  ``aclose`` (the same end awaited from a coroutine: a scheduler waits for its drain on
  a thread of its own, a simulation ends at once) and ``running`` (True while it
  dispatches what falls due: what ``metrics().state == "running"`` says; a scheduler
  from ``start()``, a simulation from construction, both until ``shutdown()``).
  Both runtimes are also context managers, ``with`` and ``async with``, which end them
  on leaving the block; entering is left out of the protocol, being the caller's who
  built the runtime (a scheduler's entry starts it, a simulation's has nothing to
  start).

Registration differs by design: ``Scheduler.schedule(name, action, schedule, ...)``
runs an action, ``Simulation.schedule(name, schedule, *, duration, fails, action=None,
...)`` draws durations and failures from models; their keyword options (``id``,
``replace_existing``, ``priority``, ``retry``, ``timeout``, ``args``, ``kwargs``,
``misfire``) share names and meaning, as do their decorator forms (``scheduled``).
:class:`Stepped` is the simulation's own clockwork, what a player drives.

The protocols are ``runtime_checkable``: ``isinstance(x, Runtime)`` tells a runtime
from a store or a list of records by its verbs.  Standard library only.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from lldsched.core.duequeue import QueueStats
from lldsched.core.metrics import Metrics
from lldsched.core.names import REFUSED_AFTER_SHUTDOWN
from lldsched.core.registration import Unchanged
from lldsched.core.retention import RetainFinished
from lldsched.core.task import ScheduledTask
from lldsched.listeners import Listener
from lldsched.model import ExecutionRecord, Priority
from lldsched.policies import RetryPolicy
from lldsched.schedules.base import Schedule

__all__ = ["REFUSED_AFTER_SHUTDOWN", "Controls", "Observable", "Reads", "Runtime", "Stepped"]


@runtime_checkable
class Controls(Protocol):
    """The control verbs, by task id (an unknown id raises ``TaskNotFoundError``)."""

    def pause(self, task_id: str) -> bool:
        """Hold the task; True if this call paused it."""

    def resume(self, task_id: str) -> bool:
        """Return a paused task to where it was; True if this call resumed it."""

    def cancel(self, task_id: str) -> bool:
        """Stop all future runs of the task; True if it was live."""

    def redrive(self, task_id: str) -> bool:
        """Put a dead-lettered (FAILED) task back, due now; False for one not FAILED."""

    def run_now(self, task_id: str) -> bool:
        """Run the task once more, at once, without moving its schedule; True if queued."""

    def remove(self, task_id: str) -> ScheduledTask:
        """Cancel the task if live, and forget it (here and in the store)."""

    def reschedule(self, task_id: str, schedule: Schedule | str) -> ScheduledTask:
        """Give the task a new schedule (or cron text): same id, history kept."""

    def modify(
        self,
        task_id: str,
        *,
        priority: Priority | int | Unchanged = ...,
        retry: RetryPolicy | Unchanged | None = ...,
        timeout: float | timedelta | Unchanged | None = ...,
    ) -> ScheduledTask:
        """Change the task's priority, retry policy or timeout (what is not given stays)."""


@runtime_checkable
class Reads(Protocol):
    """What a view reads: tasks, records, the dead letter, the queue, the metrics,
    workers and time."""

    @property
    def workers(self) -> int:
        """How many runs go at once (fixed at construction)."""

    @property
    def now(self) -> float:
        """The runtime's instant (a clock's, or the virtual one), in epoch seconds."""

    @property
    def tz(self) -> str:
        """The zone of cron schedules that name none (an IANA key)."""

    @property
    def retain_finished(self) -> RetainFinished:
        """How long finished tasks stay registered (:mod:`lldsched.core.retention`)."""

    def task(self, task_id: str) -> ScheduledTask:
        """The task with this id, or :class:`~lldsched.errors.TaskNotFoundError`."""

    def tasks(self) -> list[ScheduledTask]:
        """Every registered task, in registration order (retired tasks are not)."""

    def records(self) -> list[ExecutionRecord]:
        """Every record still held (retired tasks' too), sorted by ``finished``."""

    def priorities(self) -> dict[str, int]:
        """Task id to priority value of every task that has records here."""

    def schedules(self) -> dict[str, Schedule]:
        """Task id to schedule of every task that has records here."""

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, oldest failure first."""

    def pending(self) -> list[ScheduledTask]:
        """Tasks waiting to run, in the order they will run."""

    def orphans(self) -> list[str]:
        """Ids of the tasks the store restored that no ``schedule(..., id=...)`` named."""

    def queue_stats(self) -> QueueStats:
        """How many entries the queue holds, and how many are tombstones."""

    def metrics(self, timeout: float | timedelta | None = None) -> Metrics:
        """One read of the runtime's health and load (:class:`~lldsched.core.metrics.Metrics`)."""


@runtime_checkable
class Observable(Protocol):
    """Listeners hear every status change (see :mod:`lldsched.listeners`)."""

    def add_listener(self, listener: Listener) -> None:
        """Deliver to ``listener`` as well every event published from now on."""

    def remove_listener(self, listener: Listener) -> bool:
        """Stop delivering to ``listener``; True if it was registered."""


@runtime_checkable
class Runtime(Controls, Reads, Observable, Protocol):
    """A runtime as views see it: :class:`Controls`, :class:`Reads` and :class:`Observable`,
    whether it is ``running``, and its end, ``shutdown`` (the runs in flight finished,
    the rows a store outage left stale written once more; True when nothing is left
    running)."""

    @property
    def running(self) -> bool:
        """True while the runtime runs: started (a simulation from its making), not shut down."""

    def shutdown(self, *, drain: bool = ..., timeout: float | timedelta | None = ...) -> bool:
        """Stop, then drain (or with ``drain=False`` drop) what is due; True when nothing is
        left running."""

    async def aclose(self, *, drain: bool = ..., timeout: float | timedelta | None = ...) -> bool:
        """:meth:`shutdown` for a coroutine: the same stop, drain and result."""


@runtime_checkable
class Stepped(Runtime, Protocol):
    """A runtime on virtual time, moved by hand: one event, an instant, a length."""

    def step(self) -> object:
        """Process the next event, moving the clock to it."""

    def run(self, until: float | datetime) -> object:
        """Process every event up to ``until`` (an instant); the clock ends there."""

    def run_for(self, duration: float | timedelta) -> object:
        """:meth:`run` for ``duration`` past the current instant."""
