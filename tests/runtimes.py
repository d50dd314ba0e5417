"""Both runtimes behind one small driver, for tests of verbs that must behave alike.

``Driven("threaded")`` is a started :class:`Scheduler` on a :class:`FakeClock`;
``Driven("simulated")`` is a :class:`Simulation`.  Both start at ``T0`` with one
worker and an :class:`EventLog`, register ``tests.jobs.noop`` (a durable store
keeps only importable actions), and move time the same way: every due instant
up to the target is visited in order, so a threaded run starts at its due time
as a simulated one does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lldsched import (
    EventLog,
    FakeClock,
    ScheduledTask,
    Scheduler,
    Simulation,
    TaskEvent,
    TaskStore,
)
from lldsched.core.retention import DEFAULT_RETAIN_FINISHED
from tests import jobs
from tests.conftest import T0

KINDS = ["threaded", "simulated"]


class Driven:
    """One runtime, driven by hand."""

    def __init__(
        self,
        kind: str,
        *,
        store: TaskStore | None = None,
        tz: str = "UTC",
        retain_finished: Any = DEFAULT_RETAIN_FINISHED,
        purge_retired: bool = False,
    ) -> None:
        self.kind = kind
        self.log = EventLog()
        self.clock = FakeClock(T0)
        self.runtime: Scheduler | Simulation
        if kind == "threaded":
            self.runtime = Scheduler(
                workers=1,
                clock=self.clock,
                store=store,
                listeners=[self.log],
                tz=tz,
                retain_finished=retain_finished,
                purge_retired=purge_retired,
            ).start()
        else:
            self.runtime = Simulation(
                workers=1,
                start=T0,
                store=store,
                listeners=[self.log],
                tz=tz,
                retain_finished=retain_finished,
                purge_retired=purge_retired,
            )

    def add(
        self, name: str, schedule: Any, *, action: Callable[[], Any] = jobs.noop, **options: Any
    ) -> ScheduledTask:
        """Register ``action`` (``tests.jobs.noop``) under ``name`` (options as
        ``schedule()`` takes them)."""
        if isinstance(self.runtime, Scheduler):
            return self.runtime.schedule(name, action, schedule, **options)
        return self.runtime.schedule(name, schedule, action=action, **options)

    @property
    def now(self) -> float:
        if isinstance(self.runtime, Scheduler):
            return self.clock.now()
        return self.runtime.now

    def run_until(self, when: float) -> None:
        """Process everything due up to ``when`` (absolute), each at its own instant."""
        runtime = self.runtime
        if isinstance(runtime, Simulation):
            runtime.run(when)
            return
        self.settle()
        while True:
            pending = runtime.pending()
            due = pending[0].next_run_at if pending else None
            if due is None or due > when:
                break
            self.clock.set(max(due, self.clock.now()))
            self.settle()
        self.clock.set(when)
        self.settle()

    def settle(self) -> None:
        if isinstance(self.runtime, Scheduler):
            assert self.runtime.wait_idle(timeout=5.0), "the scheduler did not settle in 5 s"

    @property
    def events(self) -> list[TaskEvent]:
        self.settle()
        return self.log.events

    def close(self) -> None:
        if isinstance(self.runtime, Scheduler):
            assert self.runtime.shutdown(timeout=5.0)
