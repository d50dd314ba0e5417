"""What an operator shipping lldsched's log to a pipeline (one event per line, grep,
alerting) relies on: every record is one line whatever text a job, a user or a store
put in it, its traceback apart on lines of its own, and no store password in any record
at any level (docs/decisions/logging.md, "A line is one line"; docs/OPERATIONS.md,
"Logging")."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import FakeClock, FixedRate, OneTime, RetryPolicy, Scheduler, TaskEvent
from lldsched.listeners import notify
from lldsched.logs import JOBS, LISTENERS, LOGGERS, ONE_LINE, Repeats
from lldsched.model import TaskStatus
from tests.conftest import T0, SchedulerFactory, settle
from tests.pg_server import PostgresServer
from tests.tcp_proxy import TcpProxy
from tests.test_logging import on_lldsched

FORGED = "db down\nERROR lldsched.jobs task t 'x' attempt 9 of 9 failed\x1b[2J\u2028end"
"""A job's error text that would forge a second event (and clear a terminal)."""

ESCAPED = "db down\\nERROR lldsched.jobs task t 'x' attempt 9 of 9 failed\\x1b[2J\\u2028end"

FORMAT = "%(levelname)s %(name)s %(message)s | %(task_name)s | %(error)s"
"""A plain text format a service might use, printing the structured fields too."""


class Lines(logging.Handler):
    """Every record at any level, formatted as a text handler would write it."""

    def __init__(self, fmt: str = "%(levelname)s %(name)s %(message)s") -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter(fmt))
        self.records: list[logging.LogRecord] = []
        self.written: list[str] = []
        self.said = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.said:
            self.records.append(record)
            self.written.append(self.format(record))
            self.said.notify_all()

    def wait_for(self, words: str, timeout: float = 10.0) -> None:
        """Wait (bounded) until a message holding ``words`` is said; fail otherwise."""
        with self.said:
            assert self.said.wait_for(
                lambda: any(words in r.getMessage() for r in self.records), timeout
            ), f"never said: {words}"


@pytest.fixture
def lines(request: pytest.FixtureRequest) -> Iterator[Lines]:
    with on_lldsched(
        Lines(getattr(request, "param", "%(levelname)s %(name)s %(message)s"))
    ) as handler:
        yield handler


def forging() -> None:
    raise RuntimeError(FORGED)


def test_every_logger_keeps_its_records_on_one_line() -> None:
    for name in LOGGERS:
        assert ONE_LINE in logging.getLogger(name).filters, name


@pytest.mark.parametrize("lines", [FORMAT], indirect=True)
def test_a_jobs_multi_line_error_is_one_line_in_its_log_line_and_whole_in_its_traceback(
    make_scheduler: SchedulerFactory, clock: FakeClock, lines: Lines
) -> None:
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule(
        "import", forging, OneTime(delay=0), id="t", retry=RetryPolicy(max_attempts=2)
    )
    settle(scheduler)
    clock.advance(1)  # the backoff
    settle(scheduler)
    assert task.status is TaskStatus.FAILED
    retry, dead = [r for r in lines.records if r.name == JOBS]
    said = [
        text
        for record, text in zip(lines.records, lines.written, strict=True)
        if record.name == JOBS
    ]
    # The retry's WARNING has no traceback: the whole of what is written is one line.
    assert "\n" not in said[0] and "\x1b" not in said[0] and "\u2028" not in said[0]
    assert said[0] == (
        f"WARNING lldsched.jobs task t 'import' attempt 1 of 2 failed: RuntimeError: {ESCAPED}; "
        f"retry due at 2026-01-05T09:00:01.000+00:00 | import | RuntimeError: {ESCAPED}"
    )
    # The dead letter's ERROR: its line, then the traceback on lines of its own, the
    # job's text in it as the job raised it (where a handler expects several lines).
    first, traceback = said[1].split("\n", 1)
    assert first.startswith("ERROR lldsched.jobs task t 'import' attempt 2 of 2 failed: ")
    assert first.endswith(
        f"dead-lettered (redrive() runs it again) | import | RuntimeError: {ESCAPED}"
    )
    assert traceback.startswith("Traceback (most recent call last):")
    assert traceback.endswith(f"RuntimeError: {FORGED}")
    assert dead.exc_info is not None and str(dead.exc_info[1]) == FORGED
    # The record keeps the template (an error tracker groups by it) and the run's record
    # its error as it was, equal to the history's.
    assert dead.msg.startswith("task %s %r attempt %d of %d failed: %s; %s")
    assert retry.__dict__["run_record"].error == task.history[0].error == f"RuntimeError: {FORGED}"


def test_a_listeners_multi_line_error_is_one_line(lines: Lines) -> None:
    def listening(event: TaskEvent) -> None:
        raise ValueError(FORGED)

    event = TaskEvent("p", "poll", TaskStatus.SCHEDULED, TaskStatus.RUNNING, T0)
    notify([(listening, listening)], event, repeats=Repeats())
    (record,) = [r for r in lines.records if r.name == LISTENERS]
    message = record.getMessage()
    assert "\n" not in message and record.__dict__["error"] == f"ValueError: {ESCAPED}"
    assert "task p 'poll' (" in message
    assert record.exc_text is not None and record.exc_text.endswith(f"ValueError: {FORGED}")


class Odd:
    """A user's object whose ``str`` and ``repr`` break lines (a schedule of one's own)."""

    def __str__(self) -> str:
        return "odd\nINFO forged"

    def __repr__(self) -> str:
        return "Odd(\r\n)"


def test_any_argument_that_would_break_a_line_is_escaped_numbers_kept(lines: Lines) -> None:
    logging.getLogger(JOBS).warning(
        "%r.next_run raised (%s) %d times, %.1f s, in %s", Odd(), Odd(), 3, 2.5, "a\u202eb"
    )
    (record,) = lines.records
    assert record.getMessage() == (
        "Odd(\\r\\n).next_run raised (odd\\nINFO forged) 3 times, 2.5 s, in a\\u202eb"
    )
    assert record.msg == "%r.next_run raised (%s) %d times, %.1f s, in %s"


def test_a_template_made_from_a_text_is_escaped_whole(lines: Lines) -> None:
    logging.getLogger(JOBS).info("made from a name: a\nb %s", "c")
    (record,) = lines.records
    assert record.getMessage() == "made from a name: a\\nb c"


def test_a_line_with_nothing_to_escape_is_left_as_it_was(lines: Lines) -> None:
    text = "Rapport mensuel\xa0: ventes \u200f"  # printable to a line, not to isprintable
    logging.getLogger(JOBS).warning("task %s %r", text, text, extra={"task_name": text})
    (record,) = lines.records
    assert record.args == (text, text) and record.__dict__["task_name"] == text


def test_a_store_password_is_in_no_record_at_any_level(
    postgres_server: PostgresServer, postgres_dsn: str, lines: Lines
) -> None:
    """A PostgreSQL store whose dsn holds the server's password, through a run failing to
    the dead letter (its traceback), an outage and its recovery, a restart and a store
    closed under its scheduler: no record at any level (the handler takes DEBUG), formatted
    or in any attribute, holds it.  A guard: it passed before "A line is one line"."""
    from lldsched.stores.postgres import PostgresTaskStore

    secret = postgres_server.password
    assert secret in postgres_dsn
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        dsn = proxy.dsn(postgres_dsn, port=postgres_server.port)
        clock = FakeClock(T0)
        with PostgresTaskStore(dsn, timeout=1) as store:
            scheduler = Scheduler(store=store, clock=clock).start()
            try:
                scheduler.schedule(
                    "import", forging, OneTime(delay=0), id="t", retry=RetryPolicy.never()
                )
                scheduler.schedule("poll", forging, FixedRate(60), id="p")
                settle(scheduler)
                proxy.reset()  # the server gone: every connection reset, new ones too
                clock.advance(60)
                lines.wait_for("failed (a ")  # the outage, said with its traceback
                proxy.heal()
                clock.advance(60)
                lines.wait_for("recovered")
                settle(scheduler)
            finally:
                scheduler.shutdown()
        with PostgresTaskStore(dsn, timeout=1) as store:
            scheduler = Scheduler(store=store, clock=clock).start()  # restores from it
            try:
                store.close()  # closed under its scheduler
                clock.advance(60)
                lines.wait_for("was closed while its scheduler still runs")
            finally:
                scheduler.shutdown()
    said = "\n".join(lines.written)
    assert "password=***" in said or ":***@" in said  # the dsn is named, its password hidden
    assert {"lldsched.jobs", "lldsched.store"} <= {r.name for r in lines.records}
    assert secret not in said
    for record in lines.records:
        for name, value in vars(record).items():
            assert secret not in repr(value), (name, record.getMessage())


def test_a_new_sqlite_store_without_wal_names_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: Lines
) -> None:
    """Said "SQLite could not use WAL mode here": here being no file a reader could find
    among a process's several stores."""
    from lldsched import SqliteTaskStore
    from lldsched.stores.sqlite import schema as sqlite_schema

    monkeypatch.setattr(sqlite_schema, "_wal", lambda connection, timeout: "delete")
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path):
        pass
    (line,) = [r.getMessage() for r in lines.records if "WAL" in r.getMessage()]
    assert line == (
        f"SQLite could not use WAL mode for {str(path)!r} (got 'delete'); writes will be slower"
    )


def test_a_trim_of_a_shared_sqlite_stores_removals_that_failed_says_why_and_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: Lines
) -> None:
    """Said "could not trim the removals of <node>; trying again later": neither the
    file nor SQLite's reason (a lock held, a full disk, a read-only file)."""
    import sqlite3

    from lldsched import SqliteTaskStore
    from lldsched.stores.sqlite import shared as sqlite_shared

    def refused(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path, shared=True) as store:
        state = store._shared
        assert state is not None
        monkeypatch.setattr(state.horizons, "read", lambda cursor: 1)  # a day behind
        monkeypatch.setattr(sqlite_shared, "immediate", refused)
        store.changes()
    (line,) = [r.getMessage() for r in lines.records if "could not trim" in r.getMessage()]
    assert line == (
        f"could not trim the removals of {state.node} in {str(path)!r} (disk I/O error); "
        "trying again later"
    )
