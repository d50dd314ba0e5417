"""A worker process that does not take its call (isolation="process"): one hung in its
start-up, or stopped while idle, is killed at ``START_TIMEOUT`` after it was held for the
run.  The wait for its ``started`` was unbounded: its worker held for ever, its task
RUNNING, and a shutdown with no timeout waiting on it.

No test waits ``START_TIMEOUT``: the pool's deadlines count on its ``monotonic`` clock,
which each test replaces by one it moves (:class:`Moved`), waking the pool's wait as the
process differential does (tests/test_sim_differential.py, ``look_again``).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lldsched import FakeClock, OneTime, Outcome, RetryPolicy, Scheduler, TaskStatus
from lldsched.core.isolation import worker_killed
from lldsched.threaded.processes import ProcessPool, life
from lldsched.threaded.processes.runs import START_TIMEOUT, ProcessOutcome
from tests.waits import wait_until

JOBS = "tests.process_jobs"
BOUND = 20.0  # seconds: the most any wait below may take (a hung child never ends)
HUNG_BOOT = "import time; time.sleep(3600)"  # a child's program that never takes a call


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after :data:`BOUND`."""
    wait_until(condition, timeout=BOUND, what=what)


class Moved:
    """The pool's ``monotonic`` clock, moved by the test only."""

    def __init__(self) -> None:
        self.at = 1000.0

    def __call__(self) -> float:
        return self.at


def past_the_start_bound(pool: ProcessPool, clock: Moved, held: int = 1) -> None:
    """Once ``held`` children are held for a run (each run's bound counted from then),
    move ``clock`` past :data:`START_TIMEOUT` and wake the runs' waits."""
    wait_for(lambda: len(pool._budgets) == held, "a run to hold its child")
    clock.at += START_TIMEOUT + 1
    with pool._lock:
        for budget in pool._budgets.values():
            budget.wake()


def pid_in(error: str | None) -> int:
    """The pid of the worker process ``error`` names."""
    found = re.search(r"worker process (\d+) ", error or "")
    assert found is not None, error
    return int(found.group(1))


def hung_error(pid: int) -> str:
    return (
        f"ChildProcessError: the worker process {pid} did not take the call within "
        f"{START_TIMEOUT:g} s (it hung before the action began); it was killed"
    )


@pytest.fixture
def hung_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every child started from now on hangs before it reads a call (a ``sitecustomize``
    or an import of lldsched that blocks)."""
    monkeypatch.setattr(life, "_BOOT", HUNG_BOOT)


@pytest.fixture
def moved_pool() -> Iterator[tuple[ProcessPool, Moved]]:
    clock = Moved()
    pool = ProcessPool(now=time.monotonic, monotonic=clock)
    yield pool, clock
    pool.kill_all("test over")
    pool.close(timeout=BOUND)
    assert pool.alive == 0


def run_in_thread(pool: ProcessPool, *args: Any) -> tuple[threading.Thread, list[Any]]:
    """``pool.run("t", f"{JOBS}:length", args, ...)`` without a timeout, on a thread."""
    outcomes: list[ProcessOutcome | None] = []
    caller = threading.Thread(
        target=lambda: outcomes.append(pool.run("t", f"{JOBS}:length", args, None, timeout=None))
    )
    caller.start()
    return caller, outcomes


def ended(caller: threading.Thread, pool: ProcessPool) -> None:
    caller.join(BOUND)
    if caller.is_alive():
        pool.kill_all("test over")
        caller.join(BOUND)
        pytest.fail("the run did not end")


@pytest.mark.usefixtures("hung_at_start")
def test_a_fresh_child_hung_in_its_start_up_fails_the_run_at_the_start_bound(
    moved_pool: tuple[ProcessPool, Moved],
) -> None:
    """A child whose interpreter never gets to the call: killed once ``START_TIMEOUT``
    passed since it was held, the run failed naming it (not timed out, and with no
    duration: the action never began).  The wait had no bound: the worker waited for
    ever."""
    pool, clock = moved_pool
    caller, outcomes = run_in_thread(pool, "x")
    past_the_start_bound(pool, clock)
    ended(caller, pool)
    (outcome,) = outcomes
    assert outcome is not None and outcome.error == hung_error(pid_in(outcome.error)), outcome
    assert not outcome.timed_out and outcome.result is None
    assert outcome.started == outcome.finished  # it never started
    pool.close(timeout=None)  # its replacement hangs too: never served, it is killed at once
    assert pool.alive == 0


@pytest.mark.parametrize("size", [1, 1 << 20], ids=["small call", "call longer than the pipe"])
def test_a_served_child_hung_while_idle_is_killed_at_the_start_bound_and_another_runs(
    moved_pool: tuple[ProcessPool, Moved], caplog: pytest.LogCaptureFixture, size: int
) -> None:
    """A child that served a call and was stopped while idle (``SIGSTOP``: a debugger, a
    frozen cgroup; or a thread its last job left that holds the interpreter): the call
    never began, so it is killed at ``START_TIMEOUT`` and another child runs it, the
    loss said at WARNING, as for a child found dead idle.  A call longer than the pipe's
    buffer held the worker in its send, which the bound covers too."""
    pool, clock = moved_pool
    served = pool.run("t", f"{JOBS}:pid", (), None, timeout=None)
    assert served is not None and served.result is not None, served
    stopped = int(served.result)
    os.kill(stopped, signal.SIGSTOP)
    with caplog.at_level(logging.WARNING, logger="lldsched.workers"):
        caller, outcomes = run_in_thread(pool, "x" * size)
        past_the_start_bound(pool, clock)
        ended(caller, pool)
    (outcome,) = outcomes
    assert outcome is not None and outcome.error is None, outcome
    assert outcome.result == str(size)
    said = [r.getMessage() for r in caplog.records if r.name == "lldsched.workers"]
    assert said == [
        f"worker process {stopped} did not take the call of task 't' within "
        f"{START_TIMEOUT:g} s (it hung while idle) and was killed; the run goes to another"
    ]
    assert stopped not in pool.pids


@pytest.mark.usefixtures("hung_at_start")
def test_a_run_whose_child_hangs_in_its_start_up_is_retried_and_an_unbounded_drain_ends() -> None:
    """On a scheduler: each attempt whose child hangs in its start-up fails at the start
    bound and goes down the retry path, the worker freed for the next; a drain with no
    timeout, called while the last attempt waits for its child, ends when it does (it
    waited for ever), with no worker process left."""
    clock = Moved()
    scheduler = Scheduler(workers=1)
    pool = scheduler._processes
    pool._monotonic = clock
    scheduler.start()
    retry = RetryPolicy(max_attempts=2, initial_backoff=0.001, jitter=0)
    task = scheduler.schedule(
        "boot", f"{JOBS}:pid", OneTime(delay=0), isolation="process", retry=retry, timeout=1
    )
    past_the_start_bound(pool, clock)
    wait_for(lambda: len(task.history) == 1, "the first attempt's record")  # then retried
    wait_for(lambda: len(pool._budgets) == 1, "the retry to hold a child")  # worker freed
    results: list[bool] = []
    closing = threading.Thread(
        target=lambda: results.append(scheduler.shutdown(drain=True, timeout=None))
    )
    closing.start()
    past_the_start_bound(pool, clock)
    closing.join(BOUND)
    if closing.is_alive():
        pool.kill_all("test over")
        closing.join(BOUND)
        pytest.fail("shutdown(timeout=None) did not end")
    assert results == [True]
    assert [(r.attempt, r.outcome, r.timed_out) for r in task.history] == [
        (1, Outcome.FAILED, False),
        (2, Outcome.FAILED, False),
    ]
    for record in task.history:
        assert record.error == hung_error(pid_in(record.error))
        assert record.started == record.finished
    assert task.status is TaskStatus.FAILED  # its retries spent: the dead letter
    assert pool.alive == 0


@pytest.mark.usefixtures("hung_at_start")
@pytest.mark.parametrize("verb", ["cancel", "pause"])
def test_a_run_stopped_while_its_child_hangs_in_its_start_up_is_failed_not_timed_out(
    verb: str,
) -> None:
    """A cancel or a pause while the child has not taken the call: the run is recorded
    failed as the verb says, not timed out.  Its record's ``started`` was the instant the
    call was sent, so a cancel ten seconds into a hung start-up was judged a run of ten
    seconds over its 1 s timeout (the caller's clock moves ten seconds here)."""
    clock = FakeClock()
    scheduler = Scheduler(workers=1, clock=clock).start()
    pool = scheduler._processes
    try:
        task = scheduler.schedule(
            "boot", f"{JOBS}:pid", OneTime(delay=0), isolation="process", timeout=1
        )
        wait_for(lambda: len(pool._budgets) == 1, "a run to hold its child")
        clock.advance(10)
        getattr(scheduler, verb)(task.id)
        wait_for(lambda: len(task.history) == 1, "the run's record")
        (record,) = task.history
        assert record.outcome is Outcome.FAILED and not record.timed_out, record
        said = {"cancel": "cancelled", "pause": "paused"}[verb]
        assert record.error == f"CancelledError: task {said} {worker_killed(pid_in(record.error))}"
        assert record.started == record.finished
    finally:
        assert scheduler.shutdown(timeout=BOUND)
    assert pool.alive == 0
