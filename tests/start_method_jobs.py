"""What the children of tests/test_start_methods.py run (importable by path: a ``spawn``
or ``forkserver`` child unpickles its target by module and name, so it cannot live in
the test module's closures).

Each function reports through ``results`` (a ``multiprocessing`` queue) plain data
only: lists, strings, numbers.
"""

from __future__ import annotations

import os
from typing import Any

from lldsched import OneTime, RetryPolicy, Scheduler, SqliteTaskStore, TaskStatus
from lldsched.stores import forks
from tests.waits import wait_until

BOUND = 30.0  # seconds: the most a child waits for its runs


def whose() -> int:
    """An action that says which process ran it (the record keeps the pid's repr)."""
    return os.getpid()


def nothing(*unused: Any) -> None:
    """A target never run: the tests that use it expect ``Process.start()`` to refuse."""


def process_ids(results: Any) -> None:
    """Report this process's id and the one the store's fork check holds."""
    results.put([os.getpid(), forks.current[0]])


def isolated_runs(results: Any) -> None:
    """Run two process-isolated tasks on a scheduler made in this child: one that
    returns, one killed at its timeout; report each record as
    ``[ok, result, error, timed_out]`` and this process's id."""
    once = RetryPolicy(max_attempts=1)
    with Scheduler(workers=2) as scheduler:
        added = scheduler.schedule(
            "add", "tests.process_jobs:add", OneTime(delay=0), args=(2, 3),
            isolation="process", retry=once,
        )  # fmt: skip
        hangs = scheduler.schedule(
            "hangs", "tests.process_jobs:sleep", OneTime(delay=0), args=(3600,),
            isolation="process", retry=once, timeout=0.3,
        )  # fmt: skip
        scheduler.wait_idle(timeout=BOUND)
        rows = [
            [record.ok, record.result, record.error, record.timed_out]
            for task in (added, hangs)
            for record in task.history
        ]
    results.put([os.getpid(), rows])


def shared_runs(path: str, results: Any) -> None:
    """Open the shared SQLite store at ``path`` here (after the start, as a store must
    be), run its tasks with the other children until every one has succeeded, and
    report ``[this pid, the ids of the tasks whose run this process made]``."""
    with SqliteTaskStore(path, shared=True, poll=0.05, lease=10) as store:
        scheduler = Scheduler(workers=2, store=store).start()
        try:
            wait_until(
                lambda: all(s.status is TaskStatus.SUCCEEDED for s in store.load_all()),
                timeout=BOUND,
                what=f"every task of {path!r} to succeed",
            )
        finally:
            scheduler.shutdown(timeout=BOUND)
        mine = [
            snapshot.task.id
            for snapshot in store.load_all()
            for record in store.records(snapshot.task.id)
            if record.result == repr(os.getpid())
        ]
    results.put([os.getpid(), mine])
