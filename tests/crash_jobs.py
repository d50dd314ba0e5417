"""The crash harness's jobs and its store that counts writes (tests/test_crash_harness.py).

Each action appends one line to :data:`JOURNAL` (``task_id due attempt pid``) before it
does anything else: the effect a user's job has outside the store, which a SIGKILL
cannot take back.  The harness reads it to tell which process ran what.  :data:`CLOCK`
is the process's fake clock (the child's, then the parent's), which :func:`overrun`
moves past its own timeout.  Both are set by whoever runs the scheduler.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from lldsched import (
    FakeClock,
    FixedDelay,
    FixedRate,
    Misfire,
    MisfirePolicy,
    OneTime,
    RetryPolicy,
    RunContext,
    Scheduler,
    SqliteTaskStore,
)
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot, TaskStore

JOURNAL: list[str] = [""]
"""The journal file's path (one element, set by the process that runs the jobs)."""

CLOCK: list[FakeClock] = [FakeClock(0.0)]
"""The process's fake clock (one element, set likewise)."""

_JOURNAL_LOCK = threading.Lock()  # guards appends to the journal from several workers


def _journal(ctx: RunContext) -> None:
    line = f"{ctx.task_id} {ctx.due!r} {ctx.attempt} {os.getpid()}\n"
    with _JOURNAL_LOCK, open(JOURNAL[0], "a", encoding="utf-8") as journal:
        journal.write(line)
        journal.flush()


def work(ctx: RunContext) -> None:
    """Succeeds."""
    _journal(ctx)


def fail_first(ctx: RunContext) -> None:
    """Fails the first attempt of each slot, succeeds the second."""
    _journal(ctx)
    if ctx.attempt == 1:
        raise RuntimeError(f"first attempt of the slot at {ctx.due!r} fails")


def fail_always(ctx: RunContext) -> None:
    """Always fails."""
    _journal(ctx)
    raise RuntimeError("always fails")


def overrun(ctx: RunContext) -> None:
    """Moves the clock past its 5 s timeout and returns once the flag goes up (bounded in
    real time, so a broken timeout cannot hang a worker)."""
    _journal(ctx)
    CLOCK[0].advance(10)
    ctx.wait(20)


def overrun_two_slots(ctx: RunContext) -> None:
    """Moves the clock past the next two slots of its one-minute rate (130 s): the run
    that finishes skips them (two SKIPPED records after its own)."""
    _journal(ctx)
    CLOCK[0].advance(130)


TIMEOUT = 5.0
HORIZON = 330.0
"""How long after the start the harness runs (fake seconds)."""


def register(scheduler: Scheduler, *, report: bool = False) -> None:
    """The service's registrations, by id with ``replace_existing=True`` as at every start
    (docs/GUIDE.md, "Durability"); ``report``: say each id on stdout once registered."""
    quick = RetryPolicy(max_attempts=2, initial_backoff=5)
    tasks: list[tuple[str, Any, Any, dict[str, Any]]] = [
        ("once", work, OneTime(delay=30), {}),
        ("once-flaky", fail_first, OneTime(delay=45), {"retry": quick}),
        ("once-dead", fail_always, OneTime(delay=70), {"retry": quick}),
        ("rate", work, FixedRate(60, start_delay=60), {}),
        ("delay", fail_first, FixedDelay(90), {"retry": quick}),
        ("cron", work, "*/2 * * * *", {"misfire": MisfirePolicy(Misfire.RUN_ALL)}),
        ("slow", overrun, FixedRate(100, start_delay=20),
         {"timeout": TIMEOUT, "retry": RetryPolicy.never(),
          "misfire": MisfirePolicy(Misfire.SKIP)}),
    ]  # fmt: skip
    for name, action, schedule, options in tasks:
        scheduler.schedule(name, action, schedule, id=name, replace_existing=True, **options)
        if report:  # one write: a worker's line cannot come between its parts
            sys.stdout.write(f"registered {name}\n")
            sys.stdout.flush()


SKIPPING_HORIZON = 200.0
"""How long after the start the harness runs the skipping service (fake seconds): one
run, at +60 s, which finishes at +190 s past the slots at +120 s and +180 s."""


def register_skipping(scheduler: Scheduler, *, report: bool = False) -> None:
    """The skipping service: one fixed-rate task whose run overruns two slots."""
    scheduler.schedule("skipper", overrun_two_slots, FixedRate(60, start_delay=60),
                       id="skipper", replace_existing=True)  # fmt: skip
    if report:
        sys.stdout.write("registered skipper\n")
        sys.stdout.flush()


SERVICES = {"register": register, "register_skipping": register_skipping}
"""The services a child runs, by the name the harness passes."""


def said(count: list[int], stop_at: int) -> None:
    """Say the write a store just made on stdout (``wrote N NOW``, N counted in
    ``count``); at write number ``stop_at``, block for good once it is said: the harness
    kills the process there, between two writes it knows.  A negative ``stop_at`` never
    blocks: the harness kills the process wherever it is when the word reaches it (a
    write or a run half done).  Called under the scheduler's lock: writes are serial."""
    count[0] += 1
    sys.stdout.write(f"wrote {count[0]} {CLOCK[0].now()!r}\n")
    sys.stdout.flush()
    if count[0] == stop_at:
        threading.Event().wait()  # until SIGKILL


class CountingStore(SqliteTaskStore):
    """A :class:`SqliteTaskStore` that says each write it makes (:func:`said`)."""

    def __init__(self, path: str, *, stop_at: int) -> None:
        super().__init__(path)
        self.stop_at = stop_at
        self.count = [0]

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot, record)
        said(self.count, self.stop_at)

    def save_all(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]) -> None:
        super().save_all(snapshot, records)  # one write: a run's record and its skipped slots'
        said(self.count, self.stop_at)

    def delete(self, task_id: str) -> None:
        super().delete(task_id)
        said(self.count, self.stop_at)


class Counting(TaskStore, Protocol):
    """A store that says its writes: how many so far (``count[0]``), and ``close``."""

    count: list[int]

    def close(self) -> None: ...


def open_counting(where: str, *, stop_at: int) -> Counting:
    """The counting store on ``where``: a PostgreSQL dsn (``tests/crash_postgres.py``,
    psycopg imported only then), or an SQLite file's path."""
    if where.startswith("postgresql://"):
        from tests.crash_postgres import CountingPostgresStore

        return CountingPostgresStore(where, stop_at=stop_at)
    return CountingStore(where, stop_at=stop_at)
