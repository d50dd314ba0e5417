"""What lldsched logs, as a service wiring it into its own logging sees it: which
logger says what (one per component, all under ``lldsched``), the structured fields of
a failed attempt's line, a line repeated for ever said once a window, and no job
argument in any line (docs/decisions/logging.md, "Logging"; docs/OPERATIONS.md, "Logging")."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, NoReturn, TypeVar

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    RetryPolicy,
    Scheduler,
    TaskEvent,
)
from lldsched.listeners import notify
from lldsched.logs import (
    JOBS,
    LISTENERS,
    LOGGERS,
    REPEAT_WINDOW,
    STORE,
    WORKERS,
    Repeats,
    counted,
)
from lldsched.model import TaskStatus
from lldsched.threaded.failurelog import FIELDS
from lldsched.threaded.processes import ProcessPool
from tests.conftest import SchedulerFactory, settle

ROOT = Path(__file__).resolve().parent.parent


class Captured(logging.Handler):
    """Every record that reaches it, whatever the level."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def named(self, name: str, level: int | None = None) -> list[logging.LogRecord]:
        return [r for r in self.records if r.name == name and (level is None or r.levelno == level)]


H = TypeVar("H", bound=logging.Handler)


@contextmanager
def on_lldsched(handler: H) -> Iterator[H]:
    """``handler`` on ``lldsched`` at DEBUG, as a service's dictConfig would set one."""
    parent = logging.getLogger("lldsched")
    level = parent.level
    parent.addHandler(handler)
    parent.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        parent.removeHandler(handler)
        parent.setLevel(level)


@pytest.fixture
def captured() -> Iterator[Captured]:
    """A handler on ``lldsched`` at DEBUG, as a service's dictConfig would set one."""
    with on_lldsched(Captured()) as handler:
        yield handler


def test_every_logger_is_a_named_child_of_lldsched_which_keeps_its_null_handler() -> None:
    assert all(name.startswith("lldsched.") for name in LOGGERS)
    assert len(set(LOGGERS)) == len(LOGGERS)
    parent = logging.getLogger("lldsched")
    assert any(isinstance(h, logging.NullHandler) for h in parent.handlers)
    # Every module names its logger from lldsched/logs.py: no line goes to a name a user
    # could not find in the list of docs/OPERATIONS.md, "Logging" (nor to the bare parent).
    called = re.compile(r"logging\.getLogger\(([^)]*)\)")
    for path in sorted((ROOT / "lldsched").rglob("*.py")):
        for argument in called.findall(path.read_text()):
            if path.name == "__init__.py" and argument == '"lldsched"':
                continue  # the NullHandler's
            if path.parts[-2] == "lab" and argument == '"lldsched"':
                continue  # the design lab's capture of every line
            if path.name == "logs.py" and argument == "_name":
                continue  # the one-line filter on each of LOGGERS
            assert argument in {
                "JOBS",
                "STORE",
                "CLUSTER",
                "LISTENERS",
                "TIMER",
                "WORKERS",
                "SCHEDULER",
            }, f"{path}: getLogger({argument})"


def test_a_failed_attempt_says_its_task_and_scheduler_as_fields_on_the_jobs_logger(
    make_scheduler: SchedulerFactory, clock: FakeClock, captured: Captured
) -> None:
    def broken() -> None:
        raise RuntimeError("db down")

    scheduler = make_scheduler(clock=clock, name="billing")
    task = scheduler.schedule(
        "import", broken, OneTime(delay=0), id="import", retry=RetryPolicy(max_attempts=2)
    )
    settle(scheduler)
    clock.advance(1)  # the backoff
    settle(scheduler)
    assert task.status is TaskStatus.FAILED
    retry, dead = captured.named(JOBS)
    fields = [{name: getattr(r, name) for name in FIELDS} for r in (retry, dead)]
    common = {"scheduler": "billing", "task_id": "import", "task_name": "import"}
    assert fields[0] == {
        **common,
        "attempt": 1,
        "max_attempts": 2,
        "outcome": "failed",
        "error": "RuntimeError: db down",
        "then": "retry",
        "next_run_at": "2026-01-05T09:00:01.000+00:00",
        "repeated": 0,
    }
    assert fields[1] == {
        **common,
        "attempt": 2,
        "max_attempts": 2,
        "outcome": "failed",
        "error": "RuntimeError: db down",
        "then": "dead_letter",
        "next_run_at": None,
        "repeated": 0,
    }
    assert (retry.levelno, dead.levelno) == (logging.WARNING, logging.ERROR)
    assert retry.exc_info is None and dead.exc_info is not None  # the traceback: ERROR only


def test_a_run_a_shutdown_cut_is_said_at_info_and_its_task_stays_due(
    make_scheduler: SchedulerFactory, clock: FakeClock, captured: Captured
) -> None:
    # A shutdown that cuts a run (a coroutine cancelled, an isolated run killed) does not
    # spend its attempt: the task stays due at its slot, so nothing is dead-lettered or
    # given up, and the line is INFO, "stopped" (then="stopped"), as a cancel's is.
    # Before, the cut spent the attempt: "last" was dead-lettered and "hourly"'s slot
    # given up, said at ERROR (then="dead_letter", "given_up").
    started = [threading.Event() for _ in range(3)]

    async def hangs(n: int) -> None:
        started[n].set()
        await asyncio.sleep(3600)

    scheduler = make_scheduler(clock=clock, name="app")
    once = RetryPolicy(max_attempts=1)
    scheduler.schedule("retried", hangs, OneTime(delay=0), args=(0,), id="retried")
    scheduler.schedule("last", hangs, OneTime(delay=0), args=(1,), id="last", retry=once)
    scheduler.schedule("hourly", hangs, FixedRate(3600), args=(2,), id="hourly", retry=once)
    assert all(event.wait(5) for event in started)
    assert scheduler.shutdown(drain=False, timeout=2.0)  # cancelled, and said, before it returns
    said = {r.__dict__["task_id"]: (r.levelno, r.__dict__["then"]) for r in captured.named(JOBS)}
    assert said == {name: (logging.INFO, "stopped") for name in ("retried", "last", "hourly")}
    assert scheduler.dead_letter() == []
    for name in ("retried", "last", "hourly"):
        task = scheduler.task(name)
        (record,) = task.history
        assert (record.ok, record.outcome, record.error) == (
            False, "cancelled", "CancelledError: scheduler shut down")  # fmt: skip
        assert (task.status, task.attempt) == (TaskStatus.SCHEDULED, 0)
        assert task.next_run_at == record.due and record.slot == record.due


def test_an_hour_of_a_task_failing_every_second_is_one_full_line_a_minute(
    make_scheduler: SchedulerFactory, clock: FakeClock, captured: Captured
) -> None:
    def broken() -> None:
        raise RuntimeError("db down")

    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("poll", broken, FixedRate(1), retry=RetryPolicy.never())
    settle(scheduler)
    for _ in range(3600):
        clock.advance(1)
        settle(scheduler)
    assert len(task.history) == 100  # (the history limit) it ran every second
    errors = captured.named(JOBS, logging.ERROR)
    # One full line (with its traceback) each REPEAT_WINDOW of the scheduler's clock,
    # each after the first counting the repeats since; the rest at DEBUG, no traceback.
    assert len(errors) == 3601 // int(REPEAT_WINDOW) + 1 == 61
    assert [r.__dict__["repeated"] for r in errors] == [0] + [int(REPEAT_WINDOW) - 1] * 60
    assert errors[1].getMessage().endswith("(59 more like this since its last line, at DEBUG)")
    assert all(r.exc_info is not None for r in errors)
    repeats = captured.named(JOBS, logging.DEBUG)
    assert len(repeats) == 3601 - 61
    assert all(r.exc_info is None and r.exc_text is None for r in repeats)


def test_a_new_kind_of_failure_is_said_in_full_at_once(
    make_scheduler: SchedulerFactory, clock: FakeClock, captured: Captured
) -> None:
    failures = iter([RuntimeError("db down"), RuntimeError("db down"), KeyError("orders")])

    def broken() -> None:
        raise next(failures)

    scheduler = make_scheduler(clock=clock)
    scheduler.schedule("poll", broken, FixedRate(1), retry=RetryPolicy.never())
    settle(scheduler)
    for _ in range(2):
        clock.advance(1)
        settle(scheduler)
    assert [r.__dict__["error"] for r in captured.named(JOBS, logging.ERROR)] == [
        "RuntimeError: db down",
        "KeyError: 'orders'",
    ]
    assert [r.__dict__["error"] for r in captured.named(JOBS, logging.DEBUG)] == [
        "RuntimeError: db down"
    ]


def test_a_listener_failing_on_every_event_is_said_in_full_once_a_window(
    captured: Captured,
) -> None:
    now = [0.0]
    repeats = Repeats(clock=lambda: now[0])

    def broken(event: TaskEvent) -> None:
        raise ConnectionError("metrics endpoint down")

    heard: list[TaskEvent] = []
    listeners = [(broken, broken), (heard.append, heard.append)]
    for second in range(300):
        now[0] = float(second)
        event = TaskEvent("task-1", "poll", TaskStatus.SCHEDULED, TaskStatus.RUNNING, second)
        notify(listeners, event, repeats=repeats)
    assert len(heard) == 300  # the listener after it is still called
    errors = captured.named(LISTENERS, logging.ERROR)
    assert len(errors) == 300 // int(REPEAT_WINDOW) == 5
    assert [r.exc_info is not None for r in errors] == [True] * 5
    assert [r.__dict__["repeated"] for r in errors] == [0, 59, 59, 59, 59]
    assert "task-1 'poll'" in errors[0].getMessage()
    assert len(captured.named(LISTENERS, logging.DEBUG)) == 295


def test_a_line_about_a_run_never_shows_the_jobs_arguments(
    make_scheduler: SchedulerFactory, clock: FakeClock, captured: Captured
) -> None:
    class Refusing(logging.Handler):
        """A handler that fails (a full disk, a log service down)."""

        def emit(self, record: logging.LogRecord) -> None:
            raise OSError("no space left on device")

        def handleError(self, record: logging.LogRecord) -> None:
            raise OSError("no space left on device")

    def broken(password: str) -> None:
        raise RuntimeError("login refused")

    refusing = Refusing()
    jobs = logging.getLogger(JOBS)
    jobs.addHandler(refusing)
    try:
        scheduler = make_scheduler(clock=clock)
        scheduler.schedule(
            "login", broken, OneTime(delay=0), args=("hunter2",), retry=RetryPolicy.never()
        )
        settle(scheduler)
    finally:
        jobs.removeHandler(refusing)
    (line,) = captured.named(WORKERS, logging.ERROR)  # the pool's: it could not settle
    assert "hunter2" not in line.getMessage()
    assert "login" in line.getMessage()
    for record in captured.records:
        assert "hunter2" not in record.getMessage()


def test_a_system_refusing_worker_processes_is_said_in_full_once_a_window(
    monkeypatch: pytest.MonkeyPatch, captured: Captured
) -> None:
    now = [0.0]
    pool = ProcessPool(now=lambda: now[0], repeats=Repeats(clock=lambda: now[0]))

    def refused() -> NoReturn:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(pool, "_start", refused)
    for second in range(300):  # a worker process lost every second, none replaced
        now[0] = float(second)
        pool._replace()
    errors = captured.named(WORKERS, logging.ERROR)
    assert [r.__dict__["repeated"] for r in errors] == [0, 59, 59, 59, 59]
    assert all(r.exc_info is not None for r in errors)
    assert len(captured.named(WORKERS, logging.DEBUG)) == 295
    assert errors[0].getMessage() == "could not start a worker process to replace a lost one"
    assert errors[1].getMessage().endswith("(59 more times since its last line, at DEBUG)")


def test_an_hour_of_a_store_failing_every_run_is_one_outage_line_a_minute(
    make_scheduler: SchedulerFactory, clock: FakeClock, captured: Captured
) -> None:
    class Flapping(InMemoryTaskStore):
        """Every run's record fails its first save; the begin's save succeeds and writes
        the record held with the row: an outage begins and ends every second (a disk
        full by moments)."""

        refused: ClassVar[set[tuple[float, float]]] = set()

        def save(self, snapshot: Any, record: Any = None) -> None:
            if record is not None and (record.slot, record.started) not in self.refused:
                self.refused.add((record.slot, record.started))
                raise OSError("disk full")
            super().save(snapshot, record)

    scheduler = make_scheduler(clock=clock, store=Flapping())
    task = scheduler.schedule("tick", lambda: None, FixedRate(1))
    settle(scheduler)
    for _ in range(3600):
        clock.advance(1)
        settle(scheduler)
    assert task.run_count == 3601
    errors = captured.named(STORE, logging.ERROR)
    assert len(errors) == 61 and all(r.exc_info is not None for r in errors)
    assert [r.__dict__["repeated"] for r in errors] == [0] + [59] * 60
    assert errors[1].getMessage().endswith("(59 more outages since its last line, at debug level)")
    # each said outage's end but the last's (its run's record failed; the next begin
    # would end it)
    assert len(captured.named(STORE, logging.WARNING)) == 60
    assert len(captured.named(STORE, logging.DEBUG)) == 2 * 3540  # the others' start, end


def test_a_quiet_outage_that_lasts_is_said_once_its_window_is_over(
    make_scheduler: SchedulerFactory, clock: FakeClock, captured: Captured
) -> None:
    class Failing(InMemoryTaskStore):
        """Flapping as above (a record's first save fails), then down for good."""

        down = False
        refused: ClassVar[set[tuple[float, float]]] = set()

        def save(self, snapshot: Any, record: Any = None) -> None:
            if self.down:
                raise OSError("disk full")
            if record is not None and (record.slot, record.started) not in self.refused:
                self.refused.add((record.slot, record.started))
                raise OSError("disk full")
            super().save(snapshot, record)

    store = Failing()
    scheduler = make_scheduler(clock=clock, store=store)
    scheduler.schedule("tick", lambda: None, FixedRate(1))
    settle(scheduler)
    for _ in range(5):  # flapping: outages 2 to 6 are quiet
        clock.advance(1)
        settle(scheduler)
    store.down = True  # and now down for good
    for _ in range(120):
        clock.advance(1)
        settle(scheduler)
    errors = captured.named(STORE, logging.ERROR)
    assert [r.getMessage().split(" (a ")[0] for r in errors] == [
        f"store {store!r} failed",
        f"store {store!r} still failing",
    ]
    assert errors[1].__dict__["repeated"] == 5
    # the last line at WARNING or above says the store is failing, not that it recovered
    assert captured.records[-1].levelno == logging.DEBUG
    above = [r for r in captured.records if r.levelno >= logging.WARNING and r.name == STORE]
    assert above[-1] is errors[1]


def test_repeats_start_a_new_window_when_the_clock_goes_back_and_keep_their_keys_bounded() -> None:
    repeats = Repeats(window=60)
    assert repeats.admit("a", now=100.0) == 0
    assert repeats.admit("a", now=130.0) is None  # a repeat, counted
    assert not repeats.expired("a", now=130.0)
    assert repeats.admit("a", now=50.0) == 1  # the clock went back: a new window, said
    for n in range(5000):  # many tasks failing once each
        repeats.admit(n, now=1000.0 + n)
    assert len(repeats._seen) <= 4096


def test_a_listener_whose_repr_raises_is_still_said_and_the_next_one_called(
    captured: Captured,
) -> None:
    class Odd:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

        def on_event(self, event: TaskEvent) -> None:
            raise ConnectionError("down")

    odd = Odd()
    heard: list[TaskEvent] = []
    event = TaskEvent("task-1", "poll", TaskStatus.SCHEDULED, TaskStatus.RUNNING, 0.0)
    notify([(odd, odd.on_event), (heard.append, heard.append)], event, repeats=Repeats())
    assert heard == [event]
    (line,) = captured.named(LISTENERS, logging.ERROR)
    assert line.__dict__["listener"].endswith(".Odd")
    assert line.__dict__["error"] == "ConnectionError: down"


def _huge(event: TaskEvent) -> NoReturn:
    raise ValueError("y" * 10_000_000)


def _chained(event: TaskEvent) -> NoReturn:
    # a deep recursion Python prints collapsed; a chain of 2,000 links it prints whole
    error: BaseException = ValueError("root")
    for n in range(2000):
        try:
            raise error
        except BaseException as exc:
            error = RuntimeError(f"link {n}")
            error.__context__ = exc
    raise error


@pytest.mark.parametrize("raising", [_huge, _chained], ids=["10MB-message", "2000-link-chain"])
def test_a_listener_traceback_is_bounded_as_a_jobs_is_on_both_runtimes(
    driven: Any, captured: Captured, raising: Any
) -> None:
    from lldsched.errors import ERROR_LIMIT, TRACEBACK_LIMIT

    driven.runtime.add_listener(raising)
    driven.add("poll", OneTime(delay=0))
    driven.run_until(driven.now + 1)
    driven.settle()  # every event delivered, too
    errors = captured.named(LISTENERS, logging.ERROR)
    assert errors, "the listener's failure was not said"
    line = errors[0]
    assert line.exc_info is not None  # the exception stays for an error tracker
    printed = logging.Formatter().format(line)  # what any handler writes
    assert len(printed) < TRACEBACK_LIMIT + 3 * ERROR_LIMIT + 1000
    assert "characters cut" in printed or "characters, cut" in printed
    assert f"in {raising.__name__}" in printed  # its innermost frame is kept


def test_a_line_counts_one_thing_in_the_singular(caplog: pytest.LogCaptureFixture) -> None:
    """'restored 1 task', not '1 tasks': every count a line says goes through
    lldsched.logs.counted (the restore, the outage's recovery, the shutdown's leftovers,
    the lease watch, the Gantt chart's note)."""
    store = InMemoryTaskStore()
    with Scheduler(clock=FakeClock(0), store=store) as first:
        first.schedule("one", print, FixedRate(60), id="one")
    caplog.set_level(logging.INFO, logger="lldsched")
    with Scheduler(clock=FakeClock(0), store=store):
        pass
    restored = [r.getMessage() for r in caplog.records if r.getMessage().startswith("restored")]
    assert restored == [f"restored 1 task from {store!r}"]
    assert counted(2, "task") == "2 tasks" and counted(1_000, "run") == "1,000 runs"
    assert counted(0, "process", "processes") == "0 processes"
