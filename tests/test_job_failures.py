"""What a failed run leaves for the engineer on call: the record's error text (bounded,
legible, its cause and an exception group's members named, never lost by a store), and
the traceback on the ERROR line that gives the slot up (docs/decisions/lifecycle.md, "What a
failed run leaves").

Every odd exception a job can raise runs on a thread, as a coroutine and in a worker
process, against a SQLite and a PostgreSQL store: none may stall a run, lose the record
or fail the store's write.
"""

from __future__ import annotations

import gc
import logging
import pickle
import sqlite3
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from lldsched import FakeClock, OneTime, RetryPolicy, ScheduledTask, Scheduler, TaskStatus
from lldsched.errors import ERROR_LIMIT, TRACEBACK_LIMIT, error_text, traceback_text
from lldsched.stores.sqlite import SqliteTaskStore
from tests import process_jobs
from tests.conftest import SchedulerFactory, settle

# What each odd exception's record says, on every runtime and store alike.
EXPECTED = {
    "unprintable": "UnprintableError: <its __str__ raised RuntimeError>",
    "surrogate": "ValueError: bad \\udcff byte and a \\x00 NUL",
    "unpicklable": "LockedError: holds a lock",
    "str-interrupts": "InterruptingStrError: <its __str__ raised KeyboardInterrupt>",
    "repr-exits": "ExitingReprError: <its __str__ raised SystemExit>",
    "group": "ExceptionGroup: two failed (2 sub-exceptions) [ValueError: a; KeyError: 'b']",
    "chained": "RuntimeError: lookup failed (caused by KeyError: 'missing')",
    "exit": "SystemExit: 3",
    "interrupt": "KeyboardInterrupt",
    "generator-exit": "GeneratorExit",
}
HUGE_HEAD = "ValueError: " + "y" * ERROR_LIMIT + "... (10,000,000 characters, cut)"
KINDS = [*EXPECTED, "huge"]


def raised(action: Callable[[], object]) -> BaseException:
    try:
        action()
    except BaseException as exc:  # the exceptions under test, whatever they are
        return exc
    raise AssertionError(f"{action!r} raised nothing")


# -- the text: error_text ---------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_error_text_of_each_odd_exception(kind: str) -> None:
    text = error_text(raised(lambda: process_jobs.odd_failure(kind)))
    assert text == EXPECTED.get(kind, HUGE_HEAD)
    text.encode("utf-8")  # what a store's driver does: no UnicodeEncodeError
    assert "\x00" not in text  # PostgreSQL's text refuses NUL


def test_an_implicit_context_is_named_and_a_suppressed_one_is_not() -> None:
    def during() -> None:
        try:
            raise KeyError("cache")
        except KeyError:
            raise ValueError("fallback failed")  # noqa: B904 - the context under test

    def suppressed() -> None:
        try:
            raise KeyError("cache")
        except KeyError:
            raise ValueError("fallback failed") from None

    assert error_text(raised(during)) == (
        "ValueError: fallback failed (while handling KeyError: 'cache')"
    )
    assert error_text(raised(suppressed)) == "ValueError: fallback failed"


def test_a_long_chain_names_three_links_and_a_cycle_ends() -> None:
    first = ValueError("1")
    first.__cause__ = KeyError("2")
    first.__cause__.__cause__ = OSError("3")
    first.__cause__.__cause__.__cause__ = TypeError("4")
    first.__cause__.__cause__.__cause__.__cause__ = RuntimeError("5")
    assert error_text(first) == (
        "ValueError: 1 (caused by KeyError: '2') (caused by OSError: 3) (caused by TypeError: 4)"
    )
    looped = ValueError("a")
    looped.__context__ = KeyError("b")
    looped.__context__.__context__ = looped
    assert error_text(looped) == "ValueError: a (while handling KeyError: 'b')"


def test_a_large_group_names_five_members_and_counts_the_rest() -> None:
    group = ExceptionGroup("many", [ValueError(str(n)) for n in range(8)])
    assert error_text(group) == (
        "ExceptionGroup: many (8 sub-exceptions) "
        "[ValueError: 0; ValueError: 1; ValueError: 2; ValueError: 3; ValueError: 4; and 3 more]"
    )


def test_the_traceback_text_keeps_every_frame_and_bounds_the_rest() -> None:
    huge = traceback_text(raised(lambda: process_jobs.odd_failure("huge")))
    assert 'in odd_failure\n    raise ValueError("y" * 10_000_000)' in huge  # the frame kept
    assert huge.endswith("... (10,000,013 characters, cut)\n")  # its line, newline included
    assert len(huge) < 2 * ERROR_LIMIT + 1000
    chain = ValueError("0")
    for n in range(1, 2000):  # Python prints every link of a chain (it collapses recursion)
        link = ValueError(str(n))
        link.__context__ = chain
        chain = link
    long = traceback_text(chain)
    assert long.startswith("... (") and "characters cut)\n" in long
    assert len(long) <= TRACEBACK_LIMIT + 100 and long.endswith("ValueError: 1999\n")
    assert traceback_text(raised(lambda: process_jobs.odd_failure("surrogate"))).endswith(
        "ValueError: bad \\udcff byte and a \\x00 NUL\n"
    )


# -- the run: every runtime, every store ------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A durable store of each kind, closed after the test."""
    if request.param == "sqlite":
        opened: Any = SqliteTaskStore(tmp_path / "jobs.db")
    else:
        from lldsched.stores.postgres import PostgresTaskStore

        opened = PostgresTaskStore(request.getfixturevalue("postgres_dsn"))
    yield opened
    opened.close()


def _each_kind(
    scheduler: Scheduler, job: str, where: str, kinds: Iterable[str], **options: Any
) -> dict[str, ScheduledTask]:
    """One task per kind, each running ``tests.process_jobs``' ``job`` (its ``_async``
    twin for a coroutine) with the kind as its argument, on a thread, on the event loop
    or in a worker process (``where``), due now."""
    actions: dict[str, Callable[..., Any] | str] = {
        "thread": getattr(process_jobs, job),
        "coroutine": getattr(process_jobs, f"{job}_async"),
        "process": f"tests.process_jobs:{job}",
    }
    return {
        kind: scheduler.schedule(
            kind,
            actions[where],
            OneTime(delay=0),
            args=(kind,),
            isolation="process" if where == "process" else "thread",
            **options,
        )
        for kind in kinds
    }


@pytest.mark.parametrize("where", ["thread", "coroutine", "process"])
def test_each_odd_exception_is_recorded_legibly_and_stored(
    make_scheduler: SchedulerFactory, store: Any, where: str
) -> None:
    scheduler = make_scheduler(workers=2, store=store)
    tasks = _each_kind(scheduler, "odd_failure", where, KINDS, retry=RetryPolicy.never())
    settle(scheduler)  # an unprintable exception on the loop left its run in flight for ever
    for kind, task in tasks.items():
        (record,) = task.history
        assert task.status is TaskStatus.FAILED
        assert record.error == EXPECTED.get(kind, HUGE_HEAD), kind
        assert store.records(task.id) == [record], kind  # the store's write did not fail


def test_a_worker_process_lives_on_after_a_job_that_exits(make_scheduler: SchedulerFactory) -> None:
    # The child answered for the action's SystemExit instead of exiting: the next run
    # is served by the same process, as a thread run's worker goes on.
    scheduler = make_scheduler(workers=1)
    exits = scheduler.schedule(
        "exits",
        "tests.process_jobs:odd_failure",
        OneTime(delay=0),
        args=("exit",),
        retry=RetryPolicy.never(),
        isolation="process",
    )
    settle(scheduler)
    assert exits.history[0].error == "SystemExit: 3"
    first = scheduler.schedule(
        "pid", "tests.process_jobs:pid", OneTime(delay=0), isolation="process"
    )
    settle(scheduler)
    second = scheduler.schedule(
        "pid", "tests.process_jobs:pid", OneTime(delay=0), isolation="process"
    )
    settle(scheduler)
    assert first.history[0].result == second.history[0].result


def test_a_store_keeps_a_surrogate_it_is_given_verbatim_nowhere_else() -> None:
    # Why the text escapes surrogates: the drivers refuse them (SQLite's here).
    with closing(sqlite3.connect(":memory:")) as connection, pytest.raises(UnicodeEncodeError):
        connection.execute("select ?", ("\udcff",))  # closed: Python 3.13 warns otherwise


def test_the_unpicklable_exception_is_the_childs_alone() -> None:
    # Nothing crosses the process boundary but text: the exception cannot be pickled.
    with pytest.raises(TypeError):
        pickle.dumps(raised(lambda: process_jobs.odd_failure("unpicklable")))


# -- the log: the traceback on the line that gives up -----------------------------------


def _lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "lldsched.jobs" and "attempt" in r.getMessage()]


@pytest.mark.parametrize("where", ["thread", "coroutine"])
def test_the_line_that_gives_up_carries_the_exception_and_a_retry_line_none(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    action = process_jobs.odd_failure if where == "thread" else process_jobs.odd_failure_async
    scheduler = make_scheduler(workers=1)
    with caplog.at_level(logging.INFO, logger="lldsched"):
        scheduler.schedule(
            "chained",
            action,
            OneTime(delay=0),
            args=("chained",),
            retry=RetryPolicy(max_attempts=2, initial_backoff=0.01),
        )
        assert scheduler.wait_drained(timeout=10)
    retry, gave_up = _lines(caplog)
    assert retry.levelno == logging.WARNING and retry.exc_info is None and not retry.exc_text
    assert gave_up.levelno == logging.ERROR
    assert gave_up.exc_info is not None
    exc = gave_up.exc_info[1]
    assert isinstance(exc, RuntimeError) and isinstance(exc.__cause__, KeyError)
    assert gave_up.exc_text is not None
    assert "The above exception was the direct cause" in gave_up.exc_text
    assert gave_up.exc_text.endswith("RuntimeError: lookup failed")
    assert "in odd_failure" in caplog.text  # what a handler prints


def test_a_huge_message_is_logged_bounded_with_its_frames(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    scheduler = make_scheduler(workers=1)
    with caplog.at_level(logging.ERROR, logger="lldsched"):
        scheduler.schedule(
            "huge",
            process_jobs.odd_failure,
            OneTime(delay=0),
            args=("huge",),
            retry=RetryPolicy.never(),
        )
        settle(scheduler)
    (line,) = _lines(caplog)
    assert line.exc_text is not None and "in odd_failure" in line.exc_text
    assert len(caplog.text) < 3 * ERROR_LIMIT + 2000  # the message, the traceback: not 10 MB


def test_a_worker_process_sends_its_traceback_for_the_line(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    scheduler = make_scheduler(workers=1)
    with caplog.at_level(logging.ERROR, logger="lldsched"):
        scheduler.schedule(
            "chained",
            "tests.process_jobs:odd_failure",
            OneTime(delay=0),
            args=("chained",),
            retry=RetryPolicy.never(),
            isolation="process",
        )
        settle(scheduler)
    (line,) = _lines(caplog)
    assert line.exc_info is None  # the exception stayed in the child: its text came
    assert line.exc_text is not None
    assert "in odd_failure" in line.exc_text and "direct cause" in line.exc_text
    assert line.exc_text.endswith("RuntimeError: lookup failed")


@pytest.mark.parametrize("where", ["thread", "coroutine", "process"])
def test_each_failure_line_carries_its_attempts_record_for_a_handler(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    # The record keeps no traceback (docs/decisions/lifecycle.md, "What a failed run leaves"); the
    # documented way to keep one beside it is a logging handler keyed by the line's
    # ``run_record`` (docs/EXTENDING.md): every failure line carries the record, equal to
    # the history's, and the line that gives up its traceback.
    scheduler = make_scheduler(workers=1)
    with caplog.at_level(logging.INFO, logger="lldsched"):
        (task,) = _each_kind(
            scheduler,
            "odd_failure",
            where,
            ["chained"],
            retry=RetryPolicy(max_attempts=2, initial_backoff=0.01),
        ).values()
        assert scheduler.wait_drained(timeout=10)
    retry, gave_up = _lines(caplog)
    assert [retry.run_record, gave_up.run_record] == list(task.history)  # type: ignore[attr-defined]
    assert not retry.exc_text and gave_up.exc_text is not None
    assert "in odd_failure" in gave_up.exc_text
    assert gave_up.exc_text.endswith("RuntimeError: lookup failed")


class _Held:
    """Something large a job holds in a local when it raises."""


def test_a_failed_jobs_locals_are_not_held_once_its_run_is_settled(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # The exception travels with the run to its log line, and its traceback holds the
    # job's frames: once the run is settled nothing may keep them (a worker waiting for
    # its next run held its last result).
    held: list[weakref.ref[_Held]] = []

    def job() -> None:
        buffer = _Held()
        held.append(weakref.ref(buffer))
        raise ValueError("failed holding a buffer")

    scheduler = make_scheduler(clock=clock, workers=1)
    scheduler.schedule(
        "job",
        job,
        OneTime(delay=0),
        retry=RetryPolicy(max_attempts=2, initial_backoff=3600, max_backoff=3600),
    )
    settle(scheduler)  # attempt 1 failed; its retry is an hour away
    gc.collect()
    assert [ref() for ref in held] == [None]


RESULTS = {
    "lock": "<unlocked _thread.lock object at 0x...>",
    "huge": "'" + "z" * 196 + "...",
    "odd-repr": "<odd \\udcff \\x00>",
    "repr-interrupts": "<_InterruptingRepr whose repr raised KeyboardInterrupt>",
}


@pytest.mark.parametrize("where", ["thread", "coroutine", "process"])
def test_each_odd_result_is_recorded_as_text_and_stored(
    make_scheduler: SchedulerFactory, store: Any, where: str
) -> None:
    scheduler = make_scheduler(workers=2, store=store)
    tasks = _each_kind(scheduler, "odd_result", where, RESULTS)
    settle(scheduler)
    for kind, task in tasks.items():
        (record,) = task.history
        assert record.ok and record.result is not None, kind
        head, _, _ = RESULTS[kind].partition("0x...")
        assert record.result.startswith(head) and len(record.result) <= 200, kind
        assert store.records(task.id) == [record], kind  # the store's write did not fail
