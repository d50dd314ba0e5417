"""The threaded scheduler inside a long-running service: what a day of runs leaves in
memory, what an action's BaseException does to the workers, and what is logged."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    RetryPolicy,
    RunContext,
    Scheduler,
    SqliteTaskStore,
    TaskEvent,
    TaskStatus,
    ValidationError,
)
from lldsched.errors import error_text
from lldsched.threaded.timer import DEADLINE_SLACK
from tests import jobs
from tests.conftest import T0, SchedulerFactory, settle


def live_contexts() -> int:
    gc.collect()
    return sum(isinstance(thing, RunContext) for thing in gc.get_objects())


def test_a_run_that_ends_before_its_timeout_leaves_no_context_behind(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    before = live_contexts()
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("minutely", lambda ctx: None, FixedRate(60), timeout=86400)
    runs = 3 * DEADLINE_SLACK
    for _ in range(runs):
        clock.advance(60)
        settle(scheduler)
    assert task.run_count == runs + 1  # the first run is due at once
    # Every run ended hours before its deadline: the deadline heap drops void entries
    # once they outnumber the armed ones (before: all 193 contexts stayed for a day).
    assert live_contexts() - before <= DEADLINE_SLACK + 1


def test_a_deadline_still_flags_its_run_after_the_heap_dropped_void_entries(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    long_started = threading.Event()
    reasons: list[str | None] = []

    def long(ctx: RunContext) -> None:
        long_started.set()
        ctx.wait(10)  # returns when the timer raises the flag at the deadline
        reasons.append(ctx.reason)

    log = EventLog()
    scheduler = make_scheduler(workers=2, clock=clock, listeners=[log])
    scheduler.schedule("long", long, OneTime(delay=0), timeout=30, retry=RetryPolicy.never())
    assert long_started.wait(5)
    quick = 2 * DEADLINE_SLACK + 3  # enough void entries to rebuild the heap
    for n in range(quick):
        scheduler.schedule(f"quick{n}", lambda ctx: None, OneTime(delay=0), timeout=30)
    assert log.wait_for(lambda e: len(log.runs()) == quick)
    clock.advance(30)
    settle(scheduler)
    assert reasons == ["timeout"]


@pytest.mark.parametrize("escape", [SystemExit(3), KeyboardInterrupt()])
def test_an_action_that_raises_a_base_exception_fails_its_run_and_the_worker_goes_on(
    make_scheduler: SchedulerFactory, clock: FakeClock, escape: BaseException
) -> None:
    def escapes() -> None:
        raise escape

    scheduler = make_scheduler(workers=1, clock=clock)
    exiting = scheduler.schedule("exits", escapes, OneTime(delay=0), retry=RetryPolicy.never())
    settle(scheduler)
    (record,) = exiting.history
    assert not record.ok and record.error == error_text(escape)
    assert scheduler.dead_letter() == [exiting.id]
    # Before, the exception was re-raised and ended the only worker thread: nothing ran
    # again, wait_idle() timed out, and shutdown(timeout=None) waited for ever.
    after = scheduler.schedule("after", lambda: "still here", OneTime(delay=0))
    settle(scheduler)
    assert after.status is TaskStatus.SUCCEEDED and after.history[0].result == "'still here'"


def test_each_failed_attempt_is_logged_once_with_what_follows_and_a_success_is_not(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> None:
        raise RuntimeError("db down")

    scheduler = make_scheduler(clock=clock)
    with caplog.at_level(logging.DEBUG, logger="lldsched"):
        scheduler.schedule("fine", lambda: None, OneTime(delay=0))
        task = scheduler.schedule(
            "import", broken, OneTime(delay=0), id="import", retry=RetryPolicy(max_attempts=2)
        )
        settle(scheduler)
        clock.advance(1)  # the backoff
        settle(scheduler)
    assert task.status is TaskStatus.FAILED
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "lldsched.jobs"]
    retry_at = datetime.fromtimestamp(T0 + 1, UTC).isoformat(timespec="milliseconds")
    assert lines == [
        (
            logging.WARNING,
            "task import 'import' attempt 1 of 2 failed: RuntimeError: db down; "
            f"retry due at {retry_at}",
        ),
        (
            logging.ERROR,
            "task import 'import' attempt 2 of 2 failed: RuntimeError: db down; "
            "dead-lettered (redrive() runs it again)",
        ),
    ]


def test_an_attempt_past_a_lowered_max_attempts_is_logged_as_such_not_as_n_of_fewer(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> None:
        raise RuntimeError("db down")

    scheduler = make_scheduler(clock=clock)
    with caplog.at_level(logging.WARNING, logger="lldsched.jobs"):
        task = scheduler.schedule(
            "import", broken, OneTime(delay=0), id="import", retry=RetryPolicy(max_attempts=5)
        )
        settle(scheduler)
        scheduler.modify("import", retry=RetryPolicy(max_attempts=1))  # the retry keeps its due
        clock.advance(1)
        settle(scheduler)
    assert task.status is TaskStatus.FAILED
    lines = [r.getMessage() for r in caplog.records if r.name == "lldsched.jobs"]
    assert lines[1] == (
        "task import 'import' attempt 2 failed (max_attempts lowered to 1 while it was due): "
        "RuntimeError: db down; dead-lettered (redrive() runs it again)"
    )


def test_a_recurring_task_that_gives_a_slot_up_says_when_it_runs_next(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> None:
        raise RuntimeError("db down")

    scheduler = make_scheduler(clock=clock)
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        task = scheduler.schedule("hourly", broken, FixedRate(3600), retry=RetryPolicy.never())
        settle(scheduler)
    assert task.history[-1].outcome == "given_up"
    next_at = datetime.fromtimestamp(T0 + 3600, UTC).isoformat(timespec="milliseconds")
    (line,) = [r for r in caplog.records if r.name == "lldsched.jobs"]
    assert line.levelno == logging.ERROR
    expected = f"RuntimeError: db down; slot given up, next due at {next_at}"
    assert line.getMessage().endswith(expected)


def test_a_run_stopped_on_purpose_is_logged_at_info_only(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    started = threading.Event()

    async def waits() -> None:
        started.set()
        await asyncio.sleep(60)

    scheduler = make_scheduler()
    with caplog.at_level(logging.INFO, logger="lldsched"):
        task = scheduler.schedule("waits", waits, OneTime(delay=0))
        assert started.wait(5)
        scheduler.cancel(task.id)
        settle(scheduler)
    assert task.history[-1].error == "CancelledError: task cancelled"
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "lldsched.jobs"]
    assert lines == [
        (logging.INFO, f"task {task.id} 'waits' attempt 1 stopped: CancelledError: task cancelled")
    ]


def test_a_shutdown_that_runs_out_of_time_says_which_runs_are_still_going(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    started, release = threading.Event(), threading.Event()

    def stuck() -> None:
        started.set()
        release.wait(10)

    scheduler = make_scheduler(workers=1)
    task = scheduler.schedule("report", stuck, OneTime(delay=0), id="nightly-report")
    assert started.wait(5)
    try:
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            assert scheduler.shutdown(timeout=0.05) is False
    finally:
        release.set()
    (line,) = [r for r in caplog.records if r.name == "lldsched.scheduler"]
    assert "shutdown(timeout=0.05) returned with runs still going: nightly-report 'report'" in (
        line.getMessage()
    )
    assert scheduler.shutdown(timeout=5) is True  # the run ended: a second call says so
    assert task.history[-1].ok


def test_a_shutdown_is_not_over_while_a_listener_is_still_busy(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    busy, release = threading.Event(), threading.Event()

    def stuck(event: TaskEvent) -> None:
        busy.set()
        release.wait(10)

    scheduler = make_scheduler(listeners=[stuck])
    scheduler.schedule("x", lambda: None, OneTime(delay=0))
    assert busy.wait(5)
    try:
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            # Before: True, with the listener's thread still inside it and events undelivered.
            assert scheduler.shutdown(timeout=0.05) is False
    finally:
        release.set()
    assert "listeners still receiving events" in caplog.text
    assert scheduler.shutdown(timeout=5) is True


FAILING_SERVICE = """
import logging, sys
from lldsched import OneTime, RetryPolicy, Scheduler
if sys.argv[1] == "configured":
    logging.basicConfig(format="%(levelname)s %(name)s %(message)s")
def broken():
    raise RuntimeError("db down")
with Scheduler(workers=1) as scheduler:
    scheduler.schedule("nightly", broken, OneTime(delay=0), retry=RetryPolicy.never())
    assert scheduler.wait_idle(timeout=30)
"""


@pytest.mark.parametrize(
    ("logging_setup", "stderr"),
    [
        ("none", ""),  # a library prints nothing of its own accord
        (
            "configured",
            "ERROR lldsched.jobs task task-1 'nightly' attempt 1 of 1 failed: RuntimeError: "
            "db down; dead-lettered (redrive() runs it again)\n"
            "Traceback (most recent call last):\n"
            "...\n"  # the scheduler's own frame, calling the action
            '  File "<service>", line 7, in broken\n'
            '    raise RuntimeError("db down")\n'
            "RuntimeError: db down\n",
        ),
    ],
)
def test_the_failure_line_reaches_stderr_only_once_the_application_configures_logging(
    tmp_path: Path, logging_setup: str, stderr: str
) -> None:
    # The line that dead-letters the task carries the action's traceback (its last frame
    # the action's own, with its source line): what the on-call engineer reads first.
    # A service is a file: run as `python -c`, its frames showed no source line on
    # Python 3.11 and 3.12 and did on 3.13.
    service = tmp_path / "service.py"
    service.write_text(FAILING_SERVICE, encoding="utf-8")
    stderr = stderr.replace("<service>", str(service))
    done = subprocess.run(
        [sys.executable, str(service), logging_setup],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=True,
    )
    head, _, tail = stderr.partition("...\n")
    if not tail:
        assert done.stderr == stderr
        return
    assert done.stderr.startswith(head), done.stderr
    assert done.stderr.endswith(tail), done.stderr


def test_a_restored_task_registered_again_without_an_id_is_warned_of_once(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = InMemoryTaskStore()
    first = make_scheduler(clock=clock, store=store, start=False)
    first.scheduled(FixedRate(3600))(jobs.noop)  # the decorator, at every start
    first.schedule("startup", jobs.noop, OneTime(delay=0))  # a one-off...
    first.start()
    settle(first)  # ...that ran: finished, it runs nothing again
    first.shutdown()
    restarted = make_scheduler(clock=clock, store=store, start=False)
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        restarted.scheduled(FixedRate(3600))(jobs.noop)
        restarted.scheduled(FixedRate(3600), name="noop")(jobs.noop)  # said once a name
        restarted.schedule("startup", jobs.noop, OneTime(delay=0))
    assert [task.name for task in restarted.tasks()].count("noop") == 3  # as ever: copies
    (line,) = [r.getMessage() for r in caplog.records if r.name == "lldsched.store"]
    assert line.startswith(
        "task 'noop' is registered again without id=, beside task-1 (scheduled), which the "
        "store restored: both run"
    )
    assert "id='task-1', replace_existing=True" in line


ENDS_WITHOUT_SHUTDOWN = """
import threading
from lldsched import OneTime, Scheduler
started = threading.Event()
def stuck():
    started.set()
    threading.Event().wait()  # never returns
scheduler = Scheduler(workers=1).start()
scheduler.schedule("stuck", stuck, OneTime(delay=0))
assert started.wait(30)
print("leaving with a run in flight", flush=True)
"""


A_JOB_WHOSE_CALL_NEVER_RETURNS = """
import asyncio, sys, threading
started = threading.Event()
def stuck():
    started.set()
    threading.Event().wait()  # never returns
async def job():
    await asyncio.to_thread(stuck)  # on the event loop's default executor
"""


ENDS_IN_A_CALL_ON_THE_LOOPS_EXECUTOR = (
    A_JOB_WHOSE_CALL_NEVER_RETURNS
    + """
from lldsched import OneTime, Scheduler
scheduler = Scheduler(workers=1).start()
scheduler.schedule("stuck", job, OneTime(delay=0))
assert started.wait(30)
print("leaving with a run in flight", flush=True)
"""
)


@pytest.mark.parametrize(
    "program",
    [ENDS_WITHOUT_SHUTDOWN, ENDS_IN_A_CALL_ON_THE_LOOPS_EXECUTOR],
    ids=["thread", "to_thread"],
)
def test_a_program_that_ends_without_shutdown_exits_with_its_run_cut_short(program: str) -> None:
    # The scheduler's threads are daemon threads (docs/OPERATIONS.md, "Running it in a service"):
    # the interpreter does not wait for a run that never returns, nor for a coroutine
    # run's asyncio.to_thread call (before: concurrent.futures joined it at exit, for ever).
    assert ends_clean(program) == "leaving with a run in flight\n"


def ends_clean(program: str, *argv: str) -> str:
    """What ``python -c program *argv`` printed, once it exited 0 within 60 s, with nothing
    on stderr (an exit that waits for a thread for ever fails at the 60 s)."""
    done = subprocess.run(
        [sys.executable, "-c", program, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout


ENDS_WITH_AN_ISOLATED_RUN = """
import sys, time
from pathlib import Path
from lldsched import OneTime, Scheduler
marker, release = sys.argv[1:]
scheduler = Scheduler(workers=1).start()
scheduler.schedule("held", "tests.process_jobs:held", OneTime(delay=0), isolation="process",
                   args=[marker, release])
deadline = time.monotonic() + 30
while not Path(marker).exists() or not Path(marker).read_text():
    assert time.monotonic() < deadline
    time.sleep(0.01)  # the polling interval of a bounded wait
print("leaving with an isolated run in flight", flush=True)
"""


def test_a_worker_process_left_by_a_program_that_ended_finishes_its_call_quietly(
    tmp_path: Path,
) -> None:
    marker, release = tmp_path / "pid", tmp_path / "release"
    program = subprocess.Popen(
        [sys.executable, "-c", ENDS_WITH_AN_ISOLATED_RUN, str(marker), str(release)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert program.wait(timeout=60) == 0  # the exit does not wait for the worker process
    release.touch()  # its call returns now, with nobody left to answer
    # The worker process shares the program's stderr: EOF there once it exited too.
    out, err = program.communicate(timeout=60)
    # Before: "BrokenPipeError: [Errno 32] Broken pipe", a traceback in the service's log.
    assert (out, err) == ("leaving with an isolated run in flight\n", "")


def _threads_of(scheduler: Scheduler) -> set[str]:
    prefix = f"lldsched-{scheduler.name}-"
    return {t.name[len(prefix) :] for t in threading.enumerate() if t.name.startswith(prefix)}


async def _nap() -> None:
    await asyncio.sleep(0)


def test_two_schedulers_in_one_process_name_their_threads_apart(tmp_path: Path) -> None:
    first = Scheduler(workers=2, clock=FakeClock(T0), listeners=[EventLog()])
    second = Scheduler(workers=2, clock=FakeClock(T0), listeners=[EventLog()], name="billing")
    assert int(Scheduler(clock=FakeClock(T0)).name) == int(first.name) + 1  # a process count
    with first, second:
        for scheduler in (first, second):
            scheduler.schedule("nap", _nap, OneTime(delay=0))  # the loop thread starts
            settle(scheduler)
        expected = {"timer", "worker-0", "worker-1", "events", "loop"}
        assert _threads_of(first) == _threads_of(second) == expected
    assert second.name == "billing"  # its threads were "lldsched-billing-timer", ...
    store = SqliteTaskStore(tmp_path / "shared.db", shared=True)
    shared = Scheduler(clock=FakeClock(T0), store=store, name="jobs")
    with store, shared._leases_kept():  # shutdown's lease keeper, while the runs finish
        assert "lease-keeper" in _threads_of(shared)
    shared.shutdown()


def test_a_shared_stores_lease_watch_thread_carries_its_schedulers_name(
    tmp_path: Path,
) -> None:
    """The thread that raises a run's flag once its leases are no longer trusted starts
    with the first run of an action that declares ``ctx`` on a shared store. Before,
    every scheduler's was named "lldsched-lease-watch": two in one process could not be
    told apart in a thread dump, and OPERATIONS.md's list of thread names did not have
    it."""
    jobs.GATE.clear()
    ran = EventLog()
    store = SqliteTaskStore(tmp_path / "shared.db", shared=True, poll=0.05)
    scheduler = Scheduler(workers=1, store=store, name="billing", listeners=[ran])
    try:
        with scheduler:
            scheduler.schedule("gated", jobs.gated_with_context, OneTime(delay=0), id="gated")
            assert ran.wait_for(lambda event: event.status is TaskStatus.RUNNING, timeout=10)
            threads = _threads_of(scheduler)
            jobs.GATE.set()
        assert "lease-watch" in threads
    finally:
        jobs.GATE.clear()
        store.close()


@pytest.mark.parametrize("name", ["", 7, "a\nb"])
def test_a_scheduler_name_must_be_printable_text_and_the_error_names_it(name: object) -> None:
    with pytest.raises(ValidationError, match=re.escape(f"got {name!r}")):
        Scheduler(name=name)  # type: ignore[arg-type]
