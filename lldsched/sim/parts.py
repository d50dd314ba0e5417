"""SimulationParts: the members and helpers the simulation's modules share, declared once.

:class:`~lldsched.sim.simulation.Simulation` is one class written in several modules,
as the threaded scheduler is: construction, the verbs that move virtual time and the
shutdown (:mod:`~lldsched.sim.simulation`) and, mixed into it, the verbs a user calls
(:mod:`~lldsched.sim.verbs`), the event loop (:mod:`~lldsched.sim.eventloop`), a run's
start (:mod:`~lldsched.sim.starts`), the cuts of the coroutine and process-isolated runs
in flight (:mod:`~lldsched.sim.cuts`) and the listeners' hearing of its events
(:mod:`~lldsched.sim.hearing`).  :class:`SimulationParts` is their common base: it
declares the members ``Simulation.__init__`` sets (its comments there say what each
holds) and the helpers one module calls of another, so each module type-checks on its
own and mypy checks that ``Simulation``'s definitions match.  At run time it adds
nothing.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from lldsched.core.duequeue import TaskQueue
from lldsched.core.machine import SchedulerCore
from lldsched.core.recordlog import RecordLog
from lldsched.core.task import Entry, Run, ScheduledTask
from lldsched.listeners import Registered
from lldsched.model import ExecutionRecord, TaskEvent
from lldsched.persistence import TaskStore
from lldsched.sim.awaiting import PrivateLoop
from lldsched.sim.clock import VirtualClock
from lldsched.sim.interrupts import Interrupts
from lldsched.sim.lanes import Handed, Waiting
from lldsched.sim.models import TaskModels

__all__ = ["SimulationParts"]


class SimulationParts:
    """The members the simulation's modules share (see the module docstring)."""

    _store: TaskStore | None
    _workers: int
    _seed: int
    _clock: VirtualClock
    _queue: TaskQueue
    _callbacks: Registered  # replaced at each change, never changed in place
    _log: RecordLog
    _core: SchedulerCore
    _models: dict[str, TaskModels]
    _free: list[int]  # a heap: the lowest free worker starts next
    _max_coroutines: int
    _coroutines: int  # runs in flight on the coroutine lane
    _loop_tasks: bool  # a coroutine task (or a handed-over awaitable): entries set aside
    _waiting: Waiting  # entries set aside from the heap while their lane is full
    _isolation: bool  # a process-isolated task was registered
    _handed: deque[Handed]  # plain functions' awaitables waiting for a place on that lane
    _picked: tuple[list[Entry] | None, bool | str]  # where _next_start's pick waits
    _finishes: list[tuple[float, int, int, Run, float, str | None, str | None, bool]]
    _awaiting: PrivateLoop
    _awaited: dict[int, Run]  # coroutine and process-isolated runs maybe in flight
    _uncut: dict[int, tuple[float, float, str | None, str | None]]
    _interventions: list[tuple[float, int, Callable[[], object]]]
    _sequence: itertools.count[int]
    _advancing: bool  # inside the event loop: a listener's Ctrl-C waits for its event
    _heard: list[BaseException]  # those Ctrl-Cs, not raised yet
    _in_verb: bool  # inside a verb: a listener's or a store's Ctrl-C waits for it (_whole)
    _interrupts: Interrupts
    _stopped_at: float | None  # the first shutdown()'s drain bound; None: not shut down

    if TYPE_CHECKING:  # called across the modules; each is defined in one of them

        @property
        def seed(self) -> int: ...  # simulation

        @property
        def workers(self) -> int: ...  # simulation

        @property
        def busy(self) -> int: ...  # simulation

        @property
        def now(self) -> float: ...  # simulation

        @property
        def running(self) -> bool: ...  # simulation

        def _note_lane(self, task: ScheduledTask) -> None: ...  # eventloop

        def _start(  # starts
            self, entry: Entry, now: float, worker: int
        ) -> ExecutionRecord | str | None: ...

        def _hand_on(self, now: float) -> None: ...  # starts

        def _prune_awaited(self) -> dict[int, Run]: ...  # cuts

        def _stop_awaited(self, task_id: str, why: str) -> None: ...  # cuts

        def _emit(self, event: TaskEvent) -> None: ...  # hearing
