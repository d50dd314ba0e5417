"""What following the other processes costs on PostgreSQL, counted in statements: a
process that follows a settle made elsewhere reads the row from the feed and nothing
more.  A run costs its share of a claim, a settle and a feed read, in whichever process
(docs/PERFORMANCE.md, "Many processes, one set of tasks", measured by
``benchmarks/cluster_statements.py``); the count here is that benchmark's workload made
small, so a per-run statement cannot come back unseen.

Before, a follower read the records of every task it followed whose row kept an attempt
counter (a one-off's SUCCEEDED row keeps its 1), to find the slot a retry belongs to
(:func:`lldsched.core.recovery.pending_slot`), although only a runnable row's slot is
taken: a records read per run in each other process, 1.6 to 2.9 statements a run at
four processes where there had been 0.07.  The retry that read is for is held by
``tests/test_shared_retry_slot.py``.

Statements are counted at the client: every ``execute`` and ``executemany`` a psycopg
cursor makes on the schedulers' and stores' threads (not the test's own: its reads of
the records, what ``start()`` sends from it) from the moment the schedulers start
(loading their rows is not counted, as the benchmark does not count it) until each has
heard every run end; the stores use no pipeline and no multi-statement string, so each
is one round trip.  Three schedulers in one process stand for three processes: each has
a store of its own (its connections, its node), as a process would.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from lldsched import Misfire, MisfirePolicy, OneTime, Scheduler, TaskStatus
from lldsched.model import TaskEvent
from lldsched.stores.postgres import PostgresTaskStore, sql
from tests import jobs
from tests.waits import wait_until

TASKS = 40
PROCESSES = 3
LATE_IS_FINE = MisfirePolicy(Misfire.RUN_ONCE, grace=3600)  # due at load, run later
POLL = 30.0  # no poll's wake within the test: the feed is read when a NOTIFY wakes it


class Statements:
    """Every statement psycopg's cursors execute while counting (any thread)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[str] = []
        self.counting = False
        self._lock = threading.Lock()
        self._test = threading.current_thread()
        execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany

        def counted_execute(cursor: psycopg.Cursor[Any], query: Any, *args: Any, **kw: Any) -> Any:
            self._note(query)
            return execute(cursor, query, *args, **kw)

        def counted_many(cursor: psycopg.Cursor[Any], query: Any, params: Any, **kw: Any) -> Any:
            params = list(params)
            for _ in params:  # one statement per set of parameters
                self._note(query)
            return executemany(cursor, query, params, **kw)

        monkeypatch.setattr(psycopg.Cursor, "execute", counted_execute)
        monkeypatch.setattr(psycopg.Cursor, "executemany", counted_many)

    def _note(self, query: Any) -> None:
        if threading.current_thread() is self._test:
            return  # the test's own reads, not the schedulers'
        with self._lock:
            if self.counting:
                self.sent.append(query if isinstance(query, str) else repr(query))

    def taken(self) -> list[str]:
        """What was counted so far; counting stops."""
        with self._lock:
            self.counting = False
            return list(self.sent)


def _kinds(sent: list[str]) -> Counter[str]:
    """The statements by their first two words, as the benchmark prints them."""
    return Counter(" ".join(text.split()[:2]).upper() for text in sent)


def test_following_other_processes_settles_costs_no_statement_per_run(
    open_store: Callable[..., PostgresTaskStore],
    postgres_dsn: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loader = open_store(poll=POLL)
    registrar = Scheduler(store=loader)  # never started: it only registers
    for n in range(TASKS):
        registrar.schedule(f"t{n}", jobs.noop, OneTime(delay=0), id=f"t{n}", misfire=LATE_IS_FINE)
    registrar.shutdown()
    schedulers = [
        Scheduler(store=open_store(poll=POLL), workers=4, name=f"p{n}") for n in range(PROCESSES)
    ]
    ended: list[set[str]] = [set() for _ in schedulers]

    def heard(into: set[str]) -> Callable[[TaskEvent], None]:
        def on_event(event: TaskEvent) -> None:
            if event.status is TaskStatus.SUCCEEDED:
                into.add(event.task_id)  # its own run's end, or one followed from the feed

        return on_event

    for scheduler, into in zip(schedulers, ended, strict=True):
        scheduler.add_listener(heard(into))
    statements = Statements(monkeypatch)
    statements.counting = True
    try:
        for scheduler in schedulers:
            scheduler.start()
        wait_until(lambda: len(loader.records()) == TASKS, timeout=30, what="every run's record")
        # A settle NOTIFYs only when it leaves its task the earliest due: a process with
        # nothing to claim reads the feed at its poll.  One NOTIFY stands for that poll.
        with psycopg.connect(postgres_dsn, autocommit=True) as connection:
            connection.execute("SELECT pg_catalog.pg_notify(%s, 'test')", (loader._channel,))
        wait_until(
            lambda: all(len(into) == TASKS for into in ended),
            timeout=30,
            what="every process to hear every run end",
        )
        sent = statements.taken()
    finally:
        statements.counting = False
        for scheduler in schedulers:
            assert scheduler.shutdown(timeout=10)
    runs = [r for r in loader.records() if r.outcome.ran]
    assert sorted(r.task_id for r in runs) == sorted(f"t{n}" for n in range(TASKS))
    records_reads = [text for text in sent if sql.RECORD_COLUMNS in text]
    assert records_reads == [], _kinds(sent)
    # A claim, a settle and a feed read per batch of runs, with each process's start
    # (LISTEN, its first feed read and claim): about 0.5 a run here.  A read per run
    # followed in each other process made it 2.5.
    assert len(sent) < 2 * TASKS, _kinds(sent)
