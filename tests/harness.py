"""A single-threaded driver for the core state machine, for tests that need no threads."""

from __future__ import annotations

from typing import Any

from lldsched import (
    ExecutionRecord,
    FakeClock,
    InMemoryTaskStore,
    StoreError,
    TaskEvent,
    TaskSnapshot,
)
from lldsched.core.duequeue import TaskQueue
from lldsched.core.machine import SchedulerCore
from lldsched.core.task import Entry, Run, ScheduledTask


class HeapQueue(TaskQueue):
    """The runtime's TaskQueue, also keeping the id of every task it was told to discard."""

    def __init__(self) -> None:
        super().__init__()
        self.discarded: list[str] = []

    def discard(self, task: ScheduledTask) -> None:
        self.discarded.append(task.id)
        super().discard(task)

    def pop_live(self) -> Entry | None:
        return self.pop()


class RecordingStore(InMemoryTaskStore):
    """An InMemoryTaskStore that also keeps every (id, status) it was told, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.saved: list[tuple[str, str]] = []

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot, record)
        self.saved.append((snapshot.task.id, snapshot.status.value))


class FailingStore(InMemoryTaskStore):
    """An in-memory store whose writes raise while ``down`` is set (a server down)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def save(self, snapshot: Any, record: Any = None) -> None:
        if self.down:
            raise StoreError("connection refused: the server is down")
        super().save(snapshot, record)

    def delete(self, task_id: str) -> None:
        if self.down:
            raise StoreError("connection refused: the server is down")
        super().delete(task_id)


class Harness:
    """Drives a SchedulerCore by hand: pop the next due entry, run it for a duration."""

    def __init__(self, clock: FakeClock, **kwargs: Any) -> None:
        self.clock = clock
        self.queue = HeapQueue()
        self.events: list[TaskEvent] = []
        kwargs.setdefault("emit", self.events.append)
        kwargs.setdefault("seed", 0)
        self.core = SchedulerCore(clock=clock, queue=self.queue, **kwargs)

    def begin(self) -> Run:
        """Begin the next live entry (advancing the clock to it) and leave the run in flight."""
        entry = self.queue.pop_live()
        assert entry is not None, "nothing is queued"
        if entry[0] > self.clock.now():
            self.clock.set(entry[0])
        run = self.core.begin(entry, worker=0)
        assert run is not None
        return run

    def offer(self) -> Run | None:
        """Offer the next live entry to the core (advancing the clock to it): its run, or
        None when the core holds the task back (a dependent BLOCKED, or failed)."""
        entry = self.queue.pop_live()
        assert entry is not None, "nothing is queued"
        if entry[0] > self.clock.now():
            self.clock.set(entry[0])
        return self.core.begin(entry, worker=0)

    def step(self, duration: float = 0.0, error: str | None = None) -> ExecutionRecord | None:
        """Run the next live entry (advancing the clock to it); None when nothing is queued."""
        if not len(self.queue):
            return None
        run = self.begin()
        started = self.clock.now()
        self.clock.advance(duration)
        return self.core.finish(run, started, self.clock.now(), error)
