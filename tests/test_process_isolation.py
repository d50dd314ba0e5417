"""Process isolation (isolation="process"): actions named by import path run in worker
processes, are killed at their timeout (the worker freed at once), crash into failed runs
that name the exit code or signal, and leave no child process behind at shutdown.

Children start in a few hundred milliseconds, so the tests that can share a scheduler do
(``shared``); the ones about a worker slot or shutdown build their own.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import signal
import stat
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    ExecutionRecord,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Outcome,
    Overlap,
    Priority,
    RetryPolicy,
    ScheduledTask,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    TaskStatus,
    ValidationError,
)
from lldsched.core.isolation import worker_killed
from lldsched.threaded import failurelog
from lldsched.threaded.processes import ProcessPool
from lldsched.threaded.processes import life as processlife
from lldsched.threaded.processes import runs as processruns
from lldsched.threaded.processes import wire as processwire
from lldsched.threaded.processes.runs import ProcessOutcome
from tests import process_jobs
from tests.conftest import SchedulerFactory
from tests.processes import held_before_a_child, killed_at, killed_pid

JOBS = "tests.process_jobs"
ROOT = Path(__file__).resolve().parent.parent
ONCE = RetryPolicy(max_attempts=1)
SIM_KILLED = "(its worker process was killed)"  # how the simulation's cut ends its error
BOUND = 20.0  # seconds: the most any wait below may take (the children sleep 3600 s)


def wait_for(condition: Callable[[], bool], timeout: float = BOUND) -> bool:
    """Poll ``condition`` until it holds (True) or ``timeout`` passes (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)  # the polling interval of a bounded wait, not a fixed sleep
    return True


def finished(task: ScheduledTask, runs: int = 1) -> bool:
    return len(task.history) >= runs and not task.running


def serving_children() -> list[int]:
    """Pids of this process's live children that serve isolated runs (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, ppid = fields[0], int(fields[1])
        if ppid == os.getpid() and state != "Z" and b"lldsched.threaded.processes" in command:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def shared() -> Iterator[Scheduler]:
    scheduler = Scheduler(workers=2).start()
    yield scheduler
    assert scheduler.shutdown(timeout=10.0)


def run_once(scheduler: Scheduler, function: str, *args: Any, **options: Any) -> ScheduledTask:
    """Register ``function`` isolated, due now, and wait (bounded) for its first record."""
    options.setdefault("retry", ONCE)
    task = scheduler.schedule(
        function, f"{JOBS}:{function}", OneTime(delay=0), isolation="process", args=args, **options
    )
    assert wait_for(lambda: finished(task)), f"{task!r} did not finish"
    return task


# -- what a run gives back -----------------------------------------------------------------


def test_an_isolated_action_runs_in_a_child_and_its_record_keeps_what_it_returned(
    shared: Scheduler,
) -> None:
    task = run_once(shared, "add", 2, 3)
    (record,) = task.history
    assert record.ok and not record.timed_out
    assert record.result is not None and record.result.startswith("{'sum': 5, 'pid': ")
    assert f"'pid': {os.getpid()}" not in record.result  # it ran in another process
    assert task.status is TaskStatus.SUCCEEDED


def test_an_exception_in_the_child_is_the_runs_error_and_goes_down_the_retry_path(
    shared: Scheduler,
) -> None:
    task = run_once(
        shared,
        "fail",
        "disk full",
        retry=RetryPolicy(max_attempts=2, jitter=0, initial_backoff=0.01),
    )
    assert wait_for(lambda: task.status is TaskStatus.FAILED)
    assert [record.error for record in task.history] == ["ValueError: disk full"] * 2
    assert [record.attempt for record in task.history] == [1, 2]


def test_a_child_that_exits_fails_its_run_naming_the_exit_code_and_is_replaced(
    shared: Scheduler,
) -> None:
    crashed = run_once(shared, "exit_with", 3)
    (record,) = crashed.history
    assert not record.ok and not record.timed_out
    assert record.error is not None and "exited with code 3" in record.error
    assert run_once(shared, "pid").history[0].ok  # the pool still runs calls


def test_a_child_killed_by_a_signal_fails_its_run_naming_the_signal(shared: Scheduler) -> None:
    task = run_once(shared, "die_of_signal", int(signal.SIGKILL))
    (record,) = task.history
    assert record.error is not None and "killed by signal 9 (SIGKILL)" in record.error


def test_an_async_isolated_action_is_awaited_in_the_child(shared: Scheduler) -> None:
    task = run_once(shared, "later", 21)
    assert task.history[0].result == "42"


def test_a_coroutine_an_isolated_async_action_returned_is_awaited_in_the_child(
    shared: Scheduler,
) -> None:
    task = run_once(shared, "later_forgotten", 21)
    assert task.history[0].result == "42"


def test_a_thread_future_an_isolated_action_returned_is_awaited_in_the_child(
    shared: Scheduler,
) -> None:
    task = run_once(shared, "submitted", 21)
    assert task.history[0].result == "42"


def test_a_path_that_does_not_import_in_the_child_is_caught_at_registration(
    shared: Scheduler,
) -> None:
    with pytest.raises(ValidationError, match="has no attribute 'missing'"):
        shared.schedule("x", f"{JOBS}:missing", OneTime(delay=0), isolation="process")


def _nested() -> Callable[[], None]:
    def nightly() -> None:
        pass

    return nightly


def _of_main() -> Callable[[], None]:
    """A function defined in ``__main__`` (a script's), as the interpreter makes it."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec("def nightly():\n    pass", namespace)
    return namespace["nightly"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("action", "said"),
    [
        (process_jobs.add, "; give it by its import path: 'tests.process_jobs:add'"),
        (process_jobs.Tally, "; give it by its import path: 'tests.process_jobs:Tally'"),
        (_of_main(), "; it is defined in __main__, which the worker process does not import "
         "(it runs its own __main__): move it into a module, import it from there and give "
         "'module:nightly'"),
        (lambda: None, "; a lambda has no import path: define a function at module level in "
         "a module and give 'module:function'"),
        (_nested(), "; '_nested.<locals>.nightly' is defined inside a function (a nested "
         "function or closure) and has no import path: define a function at module level "
         "in a module and give 'module:function'"),
        (process_jobs.Tally(1).add, "; a bound method has no import path (its instance "
         "stays in this process): define a function at module level in a module that makes "
         "the instance and calls the method, and give 'module:function'"),
    ],
    ids=["module function", "class", "__main__", "lambda", "nested", "bound method"],
)  # fmt: skip
def test_an_isolated_action_given_as_an_object_is_refused_with_the_path_to_write(
    action: Callable[..., Any], said: str
) -> None:
    """The refusal named the object and the form of a path, not the path that would
    work for it (``obj.__module__`` and ``obj.__qualname__``, when those import back to
    it), nor why one has none.  Nothing is registered."""
    scheduler = Scheduler()
    with pytest.raises(ValidationError) as raised:
        scheduler.schedule("nightly", action, OneTime(delay=0), isolation="process")
    assert str(raised.value) == (
        "task 'nightly': a process-isolated action is given by its import path "
        f"'package.module:function', got {action!r}{said}"
    )
    assert scheduler.tasks() == []


def test_a_class_given_by_path_runs_isolated_and_its_record_keeps_the_instance_s_repr(
    shared: Scheduler,
) -> None:
    """A class is an isolated action as it is a thread's: the run calls it, its result
    the instance's repr (docs/decisions/threaded.md, "A class given by its path is an
    isolated action")."""
    task = run_once(shared, "Tally", 21)
    (record,) = task.history
    assert (record.ok, record.result) == (True, "Tally(42)")


# -- the timeout is enforced -----------------------------------------------------------------


def test_a_run_past_its_timeout_is_killed_recorded_timed_out_and_its_worker_freed_at_once(
    make_scheduler: SchedulerFactory,
) -> None:
    scheduler = make_scheduler(workers=1)
    next_started = threading.Event()
    slow = scheduler.schedule(
        "slow",
        f"{JOBS}:sleep",
        OneTime(delay=0),
        isolation="process",
        args=[3600],
        timeout=0.3,
        priority=Priority.HIGH,
        retry=RetryPolicy(max_attempts=2, initial_backoff=0.01, jitter=0),
    )
    scheduler.schedule("next", next_started.set, OneTime(delay=0), priority=Priority.LOW)
    # One worker: "next" can only start once the worker left "slow" (twice) behind.
    assert next_started.wait(BOUND), "the worker stayed with the sleeping child"
    assert wait_for(lambda: slow.status is TaskStatus.FAILED)
    records = slow.history
    assert [(record.attempt, record.timed_out, record.ok) for record in records] == [
        (1, True, False),
        (2, True, False),
    ]
    assert all(killed_at("0.3", r.error) for r in records), [r.error for r in records]
    # The children the records name, not a pid file of the action's: a child killed at
    # 0.3 s may not have reached its action's first line yet (its import, under load).
    assert wait_for(lambda: not any(alive(killed_pid(r.error)) for r in records))
    assert run_once(scheduler, "pid").history[0].ok  # a replacement child serves the next call


HOUR = 3600.0  # how far the caller's clock of a `jumping` pool jumps at each child's start


@pytest.fixture
def jumping(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ProcessPool, list[float]]]:
    """A pool whose caller's clock jumps an hour whenever it starts a child, and how far
    it jumped in all: a run whose record took in a child's start (its replacement's,
    after its own child was lost) lasts an hour or more."""
    jumps = [0.0]
    pool = ProcessPool(now=lambda: time.monotonic() + jumps[0])
    start = pool._start

    def start_taking_an_hour() -> Any:
        child = start()
        jumps[0] += HOUR
        return child

    monkeypatch.setattr(pool, "_start", start_taking_an_hour)
    try:
        yield pool, jumps
    finally:
        pool.kill_all("test over")
        pool.close(timeout=BOUND)
    assert pool.alive == 0


def ended_before_its_replacement(
    pool: ProcessPool, jumps: list[float], outcome: ProcessOutcome | None, lost: int
) -> None:
    """``outcome``'s run lost its child, worker process ``lost``, which was replaced (two
    children started, each an hour on the caller's clock), and its record ends before the
    replacement started; the next run is the replacement's, and starts no child."""
    assert outcome is not None
    assert jumps == [2 * HOUR]  # the run's child, then its replacement
    assert outcome.finished - outcome.started < HOUR, outcome
    after = pool.run("t", f"{JOBS}:pid", (), None, timeout=BOUND)
    assert after is not None and after.error is None, after
    assert after.result is not None and int(after.result) not in (lost, os.getpid())
    assert jumps == [2 * HOUR]  # no child started for it: the replacement took it


@pytest.mark.parametrize(
    ("call", "args", "timeout", "error"),
    [
        pytest.param(
            "sleep", (3600,), 0.3,
            r"TimeoutError: (stopped at its 0\.3 s timeout|ran \S+ s, over its 0\.3 s budget) "
            r"\(its worker process (?P<pid>\d+) was killed\)",
            id="deadline",
        ),
        pytest.param(
            "exit_with", (3,), None,
            r"ChildProcessError: the worker process (?P<pid>\d+) exited with code 3 during "
            r"the run",
            id="exit",
        ),
        pytest.param(
            "segfault", (), None,
            r"ChildProcessError: the worker process (?P<pid>\d+) was killed by signal 11 "
            r"\(SIGSEGV\) during the run",
            id="segfault",
        ),
        pytest.param(  # its pipe closed, it is given a second to exit, then killed
            "close_pipe_then_sleep", (3600,), None,
            r"ChildProcessError: the worker process (?P<pid>\d+) closed its pipe during the "
            r"run and did not exit within 1 s; it was killed",
            id="silent",
        ),
    ],
)  # fmt: skip
def test_a_run_whose_child_is_lost_ends_when_the_loss_was_seen_not_after_its_replacement(
    jumping: tuple[ProcessPool, list[float]],
    call: str,
    args: tuple[Any, ...],
    timeout: float | None,
    error: str,
) -> None:
    """The record of a run whose child is lost (killed at its deadline, or crashed; one
    killed for what it wrote on its pipe: below) ends when the pool saw the loss:
    killing and reaping the child and starting its replacement are the pool's work, not
    the run's.  They were inside it: on a loaded machine the GUIDE's example printed
    ``ran 0.676294 s`` for its 0.5 s budget, 0.175 s of it the reap and the next
    child's start (fixed for the deadline first; a crash and a garbled answer still
    ended after the replacement started).  Here the caller's clock jumps an hour at each
    child's start."""
    pool, jumps = jumping
    outcome = pool.run("t", f"{JOBS}:{call}", args, None, timeout=timeout)
    assert outcome is not None and outcome.error is not None
    said = re.fullmatch(error, outcome.error)
    assert said is not None, outcome.error
    assert outcome.timed_out == (timeout is not None) and outcome.result is None
    ended_before_its_replacement(pool, jumps, outcome, int(said["pid"]))


def test_a_run_killed_when_asked_ends_at_the_kill_not_after_its_replacement(
    jumping: tuple[ProcessPool, list[float]], tmp_path: Path
) -> None:
    """A cancel's kill (:meth:`ProcessPool.kill`) is a loss like a crash: its record ends
    when the pool read the child's end, before the reap and the replacement."""
    pool, jumps = jumping
    marker = tmp_path / "pid"
    outcomes: list[ProcessOutcome | None] = []
    caller = threading.Thread(
        target=lambda: outcomes.append(
            pool.run("t", f"{JOBS}:sleep", (3600, str(marker)), None, timeout=None)
        )
    )
    caller.start()
    try:
        assert wait_for(marker.exists)
        assert pool.kill("t", "task cancelled")
    finally:
        caller.join(BOUND)
    (outcome,) = outcomes
    lost = int(marker.read_text())
    assert outcome is not None
    assert outcome.error == f"CancelledError: task cancelled (its worker process {lost} was killed)"
    ended_before_its_replacement(pool, jumps, outcome, lost)


def test_a_run_answered_then_killed_ends_at_its_answer_not_after_its_replacement(
    jumping: tuple[ProcessPool, list[float]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel that comes a moment late (the child answered, the worker has not given it
    back) loses the child too: the run keeps its answer, and ends when it came."""
    pool, jumps = jumping
    real = processwire.receive

    def receive_then_cancelled(connection: Any, bound: Any = None) -> dict[str, Any] | None:
        answer = real(connection, bound)
        if answer is not None and "started" not in answer:
            assert pool.kill("t", "task cancelled")
        return answer

    monkeypatch.setattr(processruns, "receive", receive_then_cancelled)
    outcome = pool.run("t", f"{JOBS}:pid", (), None, timeout=BOUND)
    monkeypatch.setattr(processruns, "receive", real)
    assert outcome is not None and outcome.error is None and outcome.result is not None
    ended_before_its_replacement(pool, jumps, outcome, int(outcome.result))


# -- cancel and pause kill -----------------------------------------------------------------


def test_cancelling_a_running_isolated_task_kills_its_child(
    shared: Scheduler, tmp_path: Path
) -> None:
    marker = tmp_path / "pid"
    task = shared.schedule(
        "sleeper", f"{JOBS}:sleep", OneTime(delay=0), isolation="process",
        args=[3600, str(marker)],
    )  # fmt: skip
    assert wait_for(marker.exists) and wait_for(lambda: marker.read_text() != "")
    assert shared.cancel(task.id)
    assert wait_for(lambda: finished(task))
    (record,) = task.history
    assert record.error is not None and record.error.startswith("CancelledError: task cancelled")
    assert task.status is TaskStatus.CANCELLED
    assert wait_for(lambda: not alive(int(marker.read_text())))


def test_a_run_cancel_other_cancels_has_its_child_killed(
    make_scheduler: SchedulerFactory, tmp_path: Path
) -> None:
    # Overlap.CANCEL_OTHER cancels the run in flight when the next slot comes due; a
    # child can be killed, as cancel() kills it, so it is: it ran on to its end (an
    # hour here), holding a worker, its record already saying it was cancelled.
    clock = FakeClock(0)
    scheduler = make_scheduler(workers=2, clock=clock)
    first, second = tmp_path / "first", tmp_path / "second"
    task = scheduler.schedule(
        "sleeper", f"{JOBS}:sleep", FixedRate(60), isolation="process",
        args=[3600, str(first)], overlap=Overlap.CANCEL_OTHER, retry=ONCE,
    )  # fmt: skip
    assert wait_for(lambda: first.exists() and first.read_text() != "")
    old = int(first.read_text())
    scheduler.schedule(  # the same task; its next run writes its pid elsewhere
        "sleeper", f"{JOBS}:sleep", FixedRate(60), isolation="process", id=task.id,
        args=[3600, str(second)], overlap=Overlap.CANCEL_OTHER, retry=ONCE,
        replace_existing=True,
    )  # fmt: skip
    clock.set(60)
    assert wait_for(lambda: second.exists() and second.read_text() != "")
    assert wait_for(lambda: not alive(old)), "the cancelled run's child still runs"
    assert wait_for(lambda: len(task.history) >= 1)
    assert (task.history[0].error or "").startswith("OverlapCancelled: Overlap.CANCEL_OTHER")
    scheduler.cancel(task.id)
    assert wait_for(lambda: finished(task, runs=2))


def test_pausing_a_running_isolated_task_kills_its_child_and_resume_retries_it(
    shared: Scheduler, tmp_path: Path
) -> None:
    marker = tmp_path / "pid"
    task = shared.schedule(
        "sleeper", f"{JOBS}:sleep", OneTime(delay=0), isolation="process",
        args=[3600, str(marker)], retry=RetryPolicy(max_attempts=2, initial_backoff=0.01),
    )  # fmt: skip
    assert wait_for(lambda: marker.exists() and marker.read_text() != "")
    first = int(marker.read_text())
    assert shared.pause(task.id)
    assert wait_for(lambda: finished(task))
    assert (task.history[0].error or "").startswith("CancelledError: task paused")
    assert task.status is TaskStatus.PAUSED
    marker.write_text("")
    assert shared.resume(task.id)
    assert wait_for(lambda: marker.read_text() not in ("", str(first)))
    assert task.attempt == 2
    shared.cancel(task.id)
    assert wait_for(lambda: finished(task, runs=2))


@pytest.mark.parametrize(("verb", "status"), [("cancel", "cancelled"), ("pause", "paused")])
def test_a_run_stopped_before_a_child_took_it_is_never_sent_to_one(
    make_scheduler: SchedulerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    verb: str,
    status: str,
) -> None:
    # Before: the worker begins the run under the lock, then takes a child without it (a
    # first run starts one); a cancel or pause between the two found no child busy with
    # the task to kill, so the run was sent afterwards and ran its whole hour.
    scheduler = make_scheduler(workers=1)
    taking, go = held_before_a_child(scheduler, monkeypatch, BOUND)
    marker = tmp_path / "pid"
    task = scheduler.schedule(
        "sleeper", f"{JOBS}:sleep", OneTime(delay=0), isolation="process",
        args=[3600, str(marker)],
    )  # fmt: skip
    assert taking.wait(BOUND)
    assert getattr(scheduler, verb)(task.id)
    go.set()
    assert wait_for(lambda: finished(task))
    (record,) = task.history
    assert (record.error or "").startswith(f"CancelledError: task {status}"), record.error
    assert task.status is TaskStatus(status)
    assert not marker.exists()  # the action never started


def test_a_run_cancel_other_cancels_before_a_child_took_it_is_never_sent_to_one(
    make_scheduler: SchedulerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: a newer run that Overlap.CANCEL_OTHER began between the older run's begin
    # and its child being held raised the older run's flag and found no child to kill;
    # the worker then asked only whether the task was cancelled or paused, so the older
    # run was sent after all and ran its whole hour beside the newer one, holding a
    # worker and a child, its record already saying the newer run cancelled it.
    clock = FakeClock(0)
    scheduler = make_scheduler(workers=2, clock=clock)
    taking, go, newer = threading.Event(), threading.Event(), threading.Event()
    pool = scheduler._processes
    take = pool._take
    takes: list[str] = []

    def held(task_id: str) -> Any:  # the older run's worker, between its begin and child
        takes.append(task_id)
        if len(takes) == 1:
            taking.set()
            assert go.wait(BOUND)
        else:
            newer.set()  # the newer run began: it raised the older one's flag
        return take(task_id)

    monkeypatch.setattr(pool, "_take", held)
    first, second = tmp_path / "first", tmp_path / "second"
    options: dict[str, Any] = {
        "isolation": "process", "overlap": Overlap.CANCEL_OTHER, "retry": ONCE,
    }  # fmt: skip
    task = scheduler.schedule(
        "sleeper", f"{JOBS}:sleep", FixedRate(60), args=[3600, str(first)], **options
    )
    assert taking.wait(BOUND)
    scheduler.schedule(  # the same task; its next run writes its pid elsewhere
        "sleeper", f"{JOBS}:sleep", FixedRate(60), args=[3600, str(second)], id=task.id,
        replace_existing=True, **options,
    )  # fmt: skip
    clock.set(60)
    assert newer.wait(BOUND)
    go.set()
    assert wait_for(lambda: len(task.history) >= 1), "the older run was sent: it runs on"
    (record,) = task.history
    assert record.outcome.value == "cancelled" and record.slot == 0
    assert record.error == (
        "OverlapCancelled: Overlap.CANCEL_OTHER, slot 1970-01-01T00:01:00.000+00:00 came due "
        "before it started"
    )
    assert wait_for(lambda: second.exists() and second.read_text() != "")
    assert not first.exists()  # the older action never started
    scheduler.cancel(task.id)
    assert wait_for(lambda: finished(task, runs=2))


# -- bad input at registration ---------------------------------------------------------------


def scheduler_of(kind: str, make_scheduler: SchedulerFactory) -> Scheduler | Simulation:
    return make_scheduler(start=False) if kind == "threaded" else Simulation()


def register(runtime: Scheduler | Simulation, action: Any, **options: Any) -> ScheduledTask:
    if isinstance(runtime, Simulation):
        return runtime.schedule("bad", FixedRate(60), action=action, **options)
    return runtime.schedule("bad", action, FixedRate(60), **options)


@pytest.mark.parametrize("kind", ["threaded", "simulated"])
@pytest.mark.parametrize(
    ("action", "options", "named"),
    [
        (process_jobs.add, {"isolation": "process"}, "<function add"),
        (f"{JOBS}:add", {"isolation": "process", "args": [{1, 2}]}, "{1, 2}"),
        (f"{JOBS}:add", {"isolation": "process", "args": [(1, 2), 3]}, "(1, 2)"),
        (f"{JOBS}:add", {"isolation": "process", "kwargs": {"a": object()}}, "object object"),
        (f"{JOBS}:add", {"isolation": "fork"}, "'fork'"),
        (process_jobs.add, {"isolation": None}, "None"),
        (f"{JOBS}:add", {}, f"'{JOBS}:add'"),
        ("not a path", {"isolation": "process"}, "'not a path'"),
        (f"{JOBS}:with_context", {"isolation": "process"}, "cannot take ctx"),
        # the child's __main__ is its own: every attempt would fail with "no attribute"
        ("__main__:main", {"isolation": "process"}, "cannot live in __main__, got '__main__:"),
    ],
)
def test_bad_isolated_registrations_are_refused_naming_the_value_and_lose_nothing(
    kind: str, make_scheduler: SchedulerFactory, action: object, options: dict[str, Any],
    named: str,
) -> None:  # fmt: skip
    runtime = scheduler_of(kind, make_scheduler)
    kept = register(runtime, f"{JOBS}:noop", isolation="process")
    before = [(task.id, task.status) for task in runtime.tasks()]
    with pytest.raises(ValidationError) as raised:
        register(runtime, action, **options)
    assert named in str(raised.value)
    assert [(task.id, task.status) for task in runtime.tasks()] == before
    assert runtime.task(kept.id).definition.isolation == "process"


# -- the simulation, the store and modify ----------------------------------------------------


def test_in_the_simulation_an_isolated_task_runs_at_its_simulated_instant_in_this_process() -> None:
    sim = Simulation()
    start = sim.now
    task = sim.schedule(
        "pid", OneTime(delay=30), action=f"{JOBS}:pid", isolation="process", duration=5.0
    )
    sim.run_for(60)
    (record,) = task.history
    assert record.started == start + 30 and record.finished == start + 35
    assert record.result == str(os.getpid())


def test_in_the_simulation_an_async_isolated_action_holds_its_worker_as_its_child_does() -> None:
    # On threads the child awaits it and its worker waits for the child. The simulation
    # handed its awaitable to the coroutine lane and freed the worker, so "next" ran
    # beside it on the one worker.
    sim = Simulation(workers=1)
    start = sim.now
    isolated = sim.schedule(
        "later", OneTime(delay=0), action=f"{JOBS}:later", args=[21], isolation="process",
        duration=10, timeout=5, retry=ONCE,
    )  # fmt: skip
    after = sim.schedule("next", OneTime(delay=1), duration=1)
    sim.run_for(60)
    (record,) = isolated.history
    assert (record.worker, record.started - start, record.finished - start) == (0, 0, 5)
    assert record.timed_out
    assert record.error == f"TimeoutError: stopped at its 5 s timeout {SIM_KILLED}"
    assert after.history[0].started == start + 5  # its worker freed at the kill, not before


def test_in_the_simulation_an_isolated_task_restored_from_a_store_is_cut_at_its_timeout() -> None:
    # A simulation asks a start whether its run is process-isolated only once such a
    # task is registered (Simulation._isolation): a restored one counts too.
    store = InMemoryTaskStore()
    with Scheduler(store=store, clock=FakeClock(0.0)) as scheduler:  # never started
        scheduler.schedule(
            "long", f"{JOBS}:noop", OneTime(delay=10), id="long", isolation="process",
            timeout=5, retry=ONCE,
        )  # fmt: skip
    sim = Simulation(workers=1, start=0.0, store=store)
    sim.model("long", duration=60)
    sim.run_for(100)
    (record,) = sim.task("long").history
    assert (record.started, record.finished, record.timed_out) == (10, 15, True)
    assert record.error == f"TimeoutError: stopped at its 5 s timeout {SIM_KILLED}"


def test_in_the_simulation_a_shutdown_out_of_time_kills_an_isolated_run_as_on_threads() -> None:
    # On threads a drain out of time kills the busy children (ProcessPool.kill_all); the
    # simulation let the run go on to its modelled end, as a thread's.
    sim = Simulation(workers=1)
    start = sim.now
    task = sim.schedule("long", OneTime(delay=0), isolation="process", duration=3600, retry=ONCE)
    sim.run_for(10)
    assert sim.shutdown(timeout=5)  # every run ended by the deadline
    (record,) = task.history
    assert record.finished == start + 15
    assert record.error == f"CancelledError: scheduler shut down {SIM_KILLED}"


def test_a_durable_store_keeps_the_isolation_and_modify_does_not_drop_it(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        task = scheduler.schedule(
            "add", f"{JOBS}:add", FixedRate(60), isolation="process", args=[1, 2]
        )
        scheduler.modify(task.id, timeout=5.0)
        assert scheduler.task(task.id).definition.isolation == "process"
        scheduler.shutdown()
    with SqliteTaskStore(path) as store:
        restored = Scheduler(store=store).task(task.id)
        assert restored.definition.isolation == "process"
        assert restored.action is process_jobs.add and restored.timeout == 5.0


def test_an_async_isolated_task_restored_from_a_store_is_still_awaited_in_a_child(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        task = scheduler.schedule(
            "pid_later", f"{JOBS}:pid_later", OneTime(delay=0), isolation="process", retry=ONCE
        )
        scheduler.shutdown()  # never started: the run is still due at the restart
    with SqliteTaskStore(path) as store:
        restarted = Scheduler(store=store).start()
        try:
            restored = restarted.task(task.id)
            assert wait_for(lambda: finished(restored)), f"{restored!r} did not finish"
        finally:
            assert restarted.shutdown(timeout=10.0)
    (record,) = restored.history
    assert record.ok and record.result is not None
    assert record.result != str(os.getpid())  # not on this process's event loop


# -- shutdown --------------------------------------------------------------------------------


def test_shutdown_with_drain_waits_for_the_isolated_run_and_leaves_no_child_alive(
    make_scheduler: SchedulerFactory, tmp_path: Path
) -> None:
    marker = tmp_path / "pid"
    others = set(serving_children())  # the shared scheduler's
    scheduler = make_scheduler(workers=2)
    task = scheduler.schedule(
        "short", f"{JOBS}:sleep", OneTime(delay=0), isolation="process", args=[0.3, str(marker)]
    )
    assert wait_for(lambda: marker.exists() and marker.read_text() != "")
    assert set(serving_children()) - others
    assert scheduler.shutdown(drain=True, timeout=BOUND)
    assert task.history[0].ok and task.history[0].result == "'slept'"
    assert set(serving_children()) <= others


def test_shutdown_without_drain_kills_the_running_child_and_leaves_none_alive(
    make_scheduler: SchedulerFactory, tmp_path: Path
) -> None:
    marker = tmp_path / "pid"
    others = set(serving_children())  # the shared scheduler's
    scheduler = make_scheduler(workers=2)
    task = scheduler.schedule(
        "long", f"{JOBS}:sleep", OneTime(delay=0), isolation="process", args=[3600, str(marker)]
    )
    assert wait_for(lambda: marker.exists() and marker.read_text() != "")
    assert scheduler.shutdown(drain=False, timeout=BOUND)
    (record,) = task.history
    pid = int(marker.read_text())
    assert record.error == (
        f"CancelledError: the scheduler shut down without draining (its worker process {pid} "
        "was killed)"
    )
    assert not alive(pid)
    assert set(serving_children()) <= others


def test_a_run_shutdown_stopped_before_a_child_took_it_is_still_due_in_a_durable_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run put back is written: a restart finds the task due at its slot, with no
    record and no attempt spent, and runs it (before: FAILED and dead-lettered)."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(workers=1, store=store)
        taking, go = held_before_a_child(scheduler, monkeypatch, BOUND)
        pool = scheduler._processes
        scheduler.start()
        task = scheduler.schedule(
            "once", f"{JOBS}:add", OneTime(delay=0), isolation="process", args=[1, 2],
            retry=RetryPolicy.never(),
        )  # fmt: skip
        due = task.next_run_at
        assert taking.wait(BOUND)
        stopper = threading.Thread(target=scheduler.shutdown, kwargs={"drain": False})
        stopper.start()
        assert wait_for(lambda: pool._closed)
        go.set()
        stopper.join(BOUND)
        assert not stopper.is_alive()
    with SqliteTaskStore(path) as store:
        restarted = Scheduler(store=store)
        restored = restarted.task(task.id)
        assert (restored.status, restored.attempt, restored.history) == (
            TaskStatus.SCHEDULED, 0, ()
        )  # fmt: skip
        assert restored.next_run_at == due and restarted.dead_letter() == []
        restarted.start()
        assert wait_for(lambda: finished(restored))
        (record,) = restored.history
        assert record.ok and record.attempt == 1
        assert restarted.shutdown(timeout=BOUND)


@pytest.mark.parametrize("closing", ["kill_all", "close"])
def test_a_run_that_finds_the_pool_closed_by_shutdown_is_not_started(closing: str) -> None:
    """A worker that began a process run just as a shutdown closed the pool (before it
    held a child) is told the run never started (None), and no child is started for it:
    the scheduler puts the run back as unbegun.  It used to end failed, 'CancelledError:
    the scheduler shut down without draining (before its worker process started it)'
    after kill_all, and raise SchedulerStateError after close()."""
    pool = ProcessPool(now=time.monotonic)
    if closing == "kill_all":
        pool.kill_all("the scheduler shut down without draining")
    else:
        pool.close(timeout=BOUND)
    assert pool.run("t", f"{JOBS}:add", (1, 2), None, timeout=BOUND) is None
    assert pool.alive == 0  # no child was started for it
    pool.close(timeout=BOUND)


def test_a_run_shutdown_stopped_before_a_child_took_it_stays_due_as_a_threads_run_does(
    make_scheduler: SchedulerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the run was recorded failed ("CancelledError: the scheduler shut down
    # without draining (before its worker process started it)"), its attempt spent, and
    # a one-off with RetryPolicy.never() went to the dead letter without having run.
    scheduler = make_scheduler(workers=1)
    taking, go = held_before_a_child(scheduler, monkeypatch, BOUND)
    pool = scheduler._processes
    marker = tmp_path / "pid"
    isolated = scheduler.schedule(
        "isolated", f"{JOBS}:sleep", OneTime(delay=0), isolation="process",
        args=[3600, str(marker)], retry=RetryPolicy.never(),
    )  # fmt: skip
    due = isolated.next_run_at
    assert taking.wait(BOUND)  # begun, no child yet; the one worker is held
    threaded = scheduler.schedule(  # due too, never taken by the held worker
        "threaded", process_jobs.add, OneTime(delay=0), args=[1, 2], retry=RetryPolicy.never()
    )
    returned: list[bool] = []
    stopper = threading.Thread(
        target=lambda: returned.append(scheduler.shutdown(drain=False, timeout=BOUND))
    )
    stopper.start()
    assert wait_for(lambda: pool._closed)  # shutdown closed the pool: no child now
    go.set()
    stopper.join(BOUND)
    assert returned == [True]
    for task in (isolated, threaded):
        assert (task.status, task.attempt, task.history) == (TaskStatus.SCHEDULED, 0, ())
    assert isolated.next_run_at == due
    assert scheduler.dead_letter() == []
    assert not marker.exists()  # the action never started
    # Both due, both listed due (the isolated one was left out: due, not queued)
    assert {task.id for task in scheduler.pending()} == {isolated.id, threaded.id}
    assert scheduler.queue_stats().live == 2


def test_a_drain_that_runs_out_of_time_kills_the_running_child(
    make_scheduler: SchedulerFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    marker = tmp_path / "pid"
    scheduler = make_scheduler(workers=1)
    task = scheduler.schedule(
        "long", f"{JOBS}:sleep", OneTime(delay=0), isolation="process", args=[3600, str(marker)]
    )
    assert wait_for(lambda: marker.exists() and marker.read_text() != "")
    waiting = scheduler.schedule(
        "waiting", f"{JOBS}:sleep", OneTime(delay=0), isolation="process", args=[0]
    )
    # Before: the child was killed as the timeout ran out and shutdown() returned False
    # before its run was recorded (the record landed after, or at a second call).
    with caplog.at_level(logging.WARNING, logger="lldsched.scheduler"):
        assert scheduler.shutdown(drain=True, timeout=2.0)
    (record,) = task.history
    # Said as it was: a drain out of time, after the 1 s of it (the last 1 s of the 2 is
    # for the ends of the runs cut).  Before, "without draining", which it was not.
    pid = int(marker.read_text())
    assert record.error == (
        "CancelledError: the scheduler shut down, its drain out of time after 1 s (its "
        f"worker process {pid} was killed)"
    )
    # Due at its slot again, its attempt unspent: a store runs it after the restart
    # (before: RETRYING, the attempt spent)
    assert (task.status, task.attempt, task.next_run_at) == (TaskStatus.SCHEDULED, 0, record.due)
    assert record.outcome == "cancelled"
    assert not alive(int(marker.read_text()))
    # The run the drain had no time to start is left due, and said (it was said nowhere:
    # the drain counted as done once the kill had settled what it waited for).
    assert (waiting.status, waiting.run_count) == (TaskStatus.SCHEDULED, 0)
    # The killed run is due again too, and counted apart: it was started (before, "2
    # runs due by the shutdown not started" counted it with the one never started).
    assert [r.getMessage() for r in caplog.records if r.name == "lldsched.scheduler"] == [
        "shutdown(timeout=2.0) ran out of time draining: 1 run due by the shutdown not "
        "started and 1 cut mid-run (they stay SCHEDULED or RETRYING with their due time, "
        "for a durable store to recover)"
    ]


@pytest.mark.parametrize(
    ("error", "cut"),
    [
        ("CancelledError: scheduler shut down", True),  # a coroutine cancelled
        # drain=False; and a drain out of time in a record an older release wrote
        ("CancelledError: the scheduler shut down without draining (its worker process 7 "
         "was killed)", True),
        ("CancelledError: the scheduler shut down, its drain out of time after 4 s (its "
         "worker process 7 was killed)", True),
        ("CancelledError: task cancelled (its worker process 7 was killed)", False),
    ],
)  # fmt: skip
def test_each_way_a_shutdown_cuts_an_isolated_run_is_read_as_a_shutdown_cut(
    error: str, cut: bool
) -> None:
    """The record of a run a shutdown cut that gave its slot up is said as a failure
    (ERROR), not as a run stopped on purpose: read by its error's beginning, the new
    wording of a drain out of time included (before, only "... without draining")."""
    record = ExecutionRecord.of(
        task_id="t", name="t", attempt=1, due=0.0, slot=0.0, worker=0, started=0.0,
        finished=1.0, ok=False, error=error, misfire=Outcome.GIVEN_UP,
    )  # fmt: skip
    assert failurelog._lost_to_a_shutdown(record, TaskStatus.SCHEDULED) is cut


@pytest.mark.parametrize(
    ("length", "body", "said"),
    [
        (9, "not json!", "sent 9 bytes, b'not json!', which is not an answer"),
        (3, "[1]", "sent 3 bytes, b'[1]', which is not an answer"),
        (100, "x" * 100, f"sent 100 bytes, b'{'x' * 80}' (its first 80), which is not an"),
        (  # a header that claims a gigabyte
            2**30, "",
            "sent a frame header announcing 1073741824 bytes, over the 1048576 bytes an answer",
        ),
        (-1, "", "sent a frame header announcing over 2 GiB, over the 1048576 bytes an answer"),
        (-5, "", "sent a frame header announcing -5 bytes, a length no frame has"),
    ],
)  # fmt: skip
def test_a_child_that_writes_garbage_on_its_pipe_fails_its_run_is_killed_and_replaced(
    jumping: tuple[ProcessPool, list[float]], length: int, body: str, said: str
) -> None:
    """The run's error names what came (its length, and its first bytes; it said
    ``longer than 1048576 bytes`` for a header of -5), and its record ends when it came
    (before, after the kill, the reap and the replacement's start: the caller's clock
    jumps an hour at each child's start)."""
    pool, jumps = jumping
    outcome = pool.run("t", f"{JOBS}:write_on_pipe", (length, body), None, timeout=BOUND)
    assert outcome is not None and outcome.error is not None
    told = re.fullmatch(
        r"ChildProcessError: the worker process (\d+) (.*); it was killed", outcome.error
    )
    assert told is not None and said in told[2], outcome.error
    assert outcome.result is None and not outcome.timed_out
    ended_before_its_replacement(pool, jumps, outcome, int(told[1]))


def run_bounded(pool: ProcessPool, call: str, *args: Any) -> ProcessOutcome | None:
    """``pool.run`` of ``call`` without a timeout, on a thread joined within ``BOUND``:
    a run that never ends fails the test instead of hanging it."""
    outcomes: list[ProcessOutcome | None] = []
    caller = threading.Thread(
        target=lambda: outcomes.append(pool.run("t", f"{JOBS}:{call}", args, None, timeout=None))
    )
    caller.start()
    caller.join(BOUND)
    if caller.is_alive():
        pool.kill_all("test over")  # its child, and what its job left in its group
        caller.join(BOUND)
        pytest.fail(f"the run of {call}{args} did not end")
    (outcome,) = outcomes
    return outcome


@pytest.mark.parametrize("how", ["fork", "exec"])
def test_a_crash_is_seen_while_a_process_the_job_started_lives_on(tmp_path: Path, how: str) -> None:
    """A job that forked (a ``multiprocessing`` fork child, a daemon) or shelled out
    (``os.system("... &")``) and then crashed: its run fails naming the exit code.  The
    process it left held the child's end of the answering pipe (a fork copies every
    descriptor; an exec kept the ones ``pass_fds`` made inheritable), so the parent
    never read end-of-file: a run without a timeout held its worker until that process
    ended, an hour here, and a cancel that killed the child did not end it either."""
    pool = ProcessPool(now=time.monotonic)
    marker = tmp_path / "holder"
    try:
        outcome = run_bounded(pool, "leave_a_process_then_exit", how, str(marker), 3)
        assert outcome is not None and outcome.error is not None
        assert re.fullmatch(
            r"ChildProcessError: the worker process \d+ exited with code 3 during the run",
            outcome.error,
        ), outcome.error
    finally:
        if marker.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(marker.read_text()), signal.SIGKILL)
        pool.kill_all("test over")
        pool.close(timeout=BOUND)
    assert pool.alive == 0


def test_a_process_the_job_forked_that_returns_neither_answers_nor_takes_a_call() -> None:
    """A job that forked and whose copy returned from it too (its ``os._exit``
    forgotten): the copy went back to the child's loop on the child's pipes, answered
    the call a second time (the next run's record held that stale answer) and took
    calls of its own.  The copy now holds none of the child's pipes, and ends."""
    pool = ProcessPool(now=time.monotonic)
    try:
        forked = run_bounded(pool, "fork_and_return")
        assert forked is not None and forked.result == "'child'", forked
        (child,) = pool.pids
        for _ in range(3):  # each call answered once, by the child, in its turn
            after = run_bounded(pool, "pid")
            assert after is not None and after.result == str(child), after
    finally:
        pool.kill_all("test over")
        pool.close(timeout=BOUND)
    assert pool.alive == 0


def test_a_run_that_finds_its_idle_child_dead_goes_to_another_and_is_not_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An idle worker process that died (the OOM killer's pick, an operator's ``kill``, a
    thread its last job left that crashed) failed the next run that took it, of whatever
    task, its attempt spent and its error saying the child died "during the run": the
    call was never taken (a child says ``started`` before it runs anything).  It goes
    to another child now, and the loss is said once, at WARNING."""
    pool = ProcessPool(now=time.monotonic)
    try:
        first = run_bounded(pool, "pid")
        assert first is not None and first.result is not None, first
        (idle,) = pool._idle
        os.kill(idle.process.pid, signal.SIGKILL)
        idle.process.wait(BOUND)  # dead and reaped before the next run takes it
        with caplog.at_level(logging.WARNING, logger="lldsched.workers"):
            after = run_bounded(pool, "pid")
        assert after is not None and after.error is None, after
        assert after.result not in (None, first.result)
        said = [r.getMessage() for r in caplog.records if r.name == "lldsched.workers"]
        assert said == [
            f"worker process {first.result} was killed by signal 9 (SIGKILL) while idle; "
            "the run of task 't' goes to another"
        ]
    finally:
        pool.kill_all("test over")
        pool.close(timeout=BOUND)
    assert pool.alive == 0


def test_a_run_whose_served_child_is_killed_before_it_took_the_call_ends_at_the_kill(
    jumping: tuple[ProcessPool, list[float]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel that kills a child which served before, as the run's call reaches it:
    the run fails as cancelled (not sent to another child), and its record ends when
    the pool saw the loss, not after the replacement started (the caller's clock jumps
    an hour at each child's start)."""
    pool, jumps = jumping
    served = pool.run("t", f"{JOBS}:pid", (), None, timeout=BOUND)
    assert served is not None and served.result is not None and jumps == [HOUR]
    take = pool._take

    def taken_then_cancelled(task_id: str) -> Any:
        child = take(task_id)
        assert pool.kill(task_id, "task cancelled")
        child.process.wait(BOUND)  # dead before the call is sent
        return child

    monkeypatch.setattr(pool, "_take", taken_then_cancelled)
    outcome = pool.run("t", f"{JOBS}:pid", (), None, timeout=BOUND)
    assert outcome is not None and outcome.error is not None
    assert outcome.error == f"CancelledError: task cancelled {worker_killed(int(served.result))}"
    assert jumps == [2 * HOUR]  # its replacement started
    assert outcome.finished - HOUR <= time.monotonic(), outcome  # read before that jump


def test_a_fresh_child_lost_before_it_took_the_call_still_fails_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only a child that served before is passed over when found dead: one that cannot
    boot (here its Python is ``/bin/false``) fails the run, as it would every other.  Its
    error says the child died before it took the call (it said "during the run": an
    operator looked for the fault in the action, which never began)."""
    monkeypatch.setattr(processlife, "_executable", lambda: "/bin/false")
    pool = ProcessPool(now=time.monotonic)
    try:
        outcome = run_bounded(pool, "pid")
        assert outcome is not None and outcome.error is not None
        assert outcome.error == (
            f"ChildProcessError: the worker process {outcome.error.split()[4]} exited with "
            "code 1 before it took the call (the action never began)"
        ), outcome.error
        assert outcome.started == outcome.finished  # no duration: it never started
    finally:
        pool.kill_all("test over")
        pool.close(timeout=BOUND)


def test_a_child_that_stops_in_the_middle_of_its_answer_is_killed_at_its_timeout() -> None:
    """The timeout bounds the whole answer: a header and ten of its hundred bytes, then
    silence, is timed out like silence (it used to hold the worker until the child
    ended, as ``recv_bytes`` waited for the rest of the message)."""
    pool = ProcessPool(now=time.monotonic)
    outcomes: list[Any] = []
    caller = threading.Thread(
        target=lambda: outcomes.append(
            pool.run("t", f"{JOBS}:write_half_then_sleep", (3600,), None, timeout=0.5)
        )
    )
    try:
        caller.start()
        caller.join(BOUND)
        assert not caller.is_alive(), "the run outlived its timeout"
        (outcome,) = outcomes
        assert outcome.timed_out
        assert killed_at("0.5", outcome.error), outcome.error
        after = pool.run("t", f"{JOBS}:add", (1, 2), None, timeout=BOUND)
        assert after is not None
        assert after.error is None and after.result is not None and "'sum': 3" in after.result
    finally:
        pool.kill_all("test over")
        caller.join(BOUND)
        pool.close(timeout=BOUND)
    assert pool.alive == 0


def unread(pool: ProcessPool) -> int:
    """How many bytes wait unread on the answering pipe of the pool's one busy child."""
    (child,) = pool._busy
    answer = fcntl.ioctl(child.connection.fileno(), termios.FIONREAD, b"\0" * 4)
    return int(struct.unpack("i", answer)[0])


def test_a_lowered_timeout_kills_a_child_whose_answer_is_half_read_at_its_new_deadline(
    tmp_path: Path,
) -> None:
    """A frame the child began is read to the deadline in force now: a modify that
    lowers the timeout while the parent reads a half-written answer kills the child at
    the new deadline (it used to wait for the rest of the frame until the old one, an
    hour here; the process section of tests/test_rearm_in_flight.py is the same rule
    before a frame begins)."""
    marker = tmp_path / "pid"
    pool = ProcessPool(now=time.monotonic)
    outcomes: list[Any] = []
    caller = threading.Thread(
        target=lambda: outcomes.append(
            pool.run("t", f"{JOBS}:write_half_then_hold", (str(marker), 3600), None, timeout=3600)
        )
    )
    try:
        caller.start()
        assert wait_for(marker.exists)  # the half answer is on the pipe
        assert wait_for(lambda: unread(pool) == 0)  # and the parent has read it: mid-frame
        pool.retime("t", 0.001)  # passed already: killed at once
        caller.join(BOUND)
        assert not caller.is_alive(), "the half-read answer held the run to its old deadline"
        (outcome,) = outcomes
        assert outcome.timed_out
        assert killed_at("0.001", outcome.error), outcome.error
        assert not alive(int(marker.read_text()))
    finally:
        pool.kill_all("test over")
        caller.join(BOUND)
        pool.close(timeout=BOUND)
    assert pool.alive == 0


# -- the interpreter's flags -----------------------------------------------------------------

_UNDER_FLAGS = """
import json
from lldsched import OneTime, RetryPolicy, Scheduler
from tests import process_jobs

scheduler = Scheduler(workers=2).start()
tasks = [
    scheduler.schedule(
        f"{name} {isolation}",
        getattr(process_jobs, name) if isolation == "thread" else f"tests.process_jobs:{name}",
        OneTime(delay=0), isolation=isolation, retry=RetryPolicy(max_attempts=1),
    )
    for name in ("deprecated_call", "interpreter_flags") for isolation in ("thread", "process")
]
if not scheduler.wait_idle(timeout=20):  # not assert: the child runs under -O
    raise SystemExit("not idle")
runs = {task.name: scheduler.task(task.id).history for task in tasks}
print(json.dumps({name: [runs[name][0].result, runs[name][0].error] for name in runs}))
if not scheduler.shutdown(timeout=10):
    raise SystemExit("not stopped")
"""


def test_a_worker_process_runs_under_the_parents_warning_options_dev_mode_and_optimize() -> None:
    # `python -X dev -W error::DeprecationWarning app.py`: a strict user's jobs fail on a
    # deprecated call. On a thread they did; in a worker process, started without the
    # parent's flags, the same call passed unseen (multiprocessing's spawn passes them).
    flags = ["-X", "dev", "-O", "-W", "error::DeprecationWarning", "-W", "error::ResourceWarning"]
    child = subprocess.run(
        [sys.executable, *flags, "-c", _UNDER_FLAGS],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    said = json.loads(child.stdout)
    failed = [None, "DeprecationWarning: old_api() is deprecated"]
    assert said["deprecated_call thread"] == said["deprecated_call process"] == failed
    assert said["interpreter_flags thread"] == said["interpreter_flags process"]
    result = said["interpreter_flags process"][0]
    assert "'dev': True" in result and "'optimize': 1" in result
    assert "'error::DeprecationWarning', 'error::ResourceWarning'" in result


_EMBEDDED = """
import json, multiprocessing, sys
real, sys.executable = sys.executable, ""  # an embedded interpreter's (before any import)
from lldsched import OneTime, RetryPolicy, Scheduler

scheduler = Scheduler().start()
said = []
for executable in ("", real):
    if executable:
        multiprocessing.set_executable(executable)  # multiprocessing's own knob, as spawn
    task = scheduler.schedule(f"with {executable!r}", "tests.process_jobs:pid",
                              OneTime(delay=0), isolation="process",
                              retry=RetryPolicy(max_attempts=1))
    if not scheduler.wait_idle(timeout=20):
        raise SystemExit("not idle")
    (record,) = scheduler.task(task.id).history
    said.append([record.ok, record.error])
scheduler.shutdown(timeout=10)
print(json.dumps(said))
"""


def test_a_worker_process_runs_the_python_multiprocessing_is_told_and_names_a_missing_one() -> None:
    # An embedded interpreter (a Windows service, uWSGI) has no usable sys.executable:
    # the run failed with "PermissionError: [Errno 13] Permission denied: ''".
    child = subprocess.run(
        [sys.executable, "-c", _EMBEDDED], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    (refused_ok, refused), (ran_ok, ran_error) = json.loads(child.stdout)
    assert not refused_ok and "no Python executable to start" in refused
    assert "multiprocessing.set_executable" in refused
    assert ran_ok and ran_error is None


def test_a_marker_is_written_whole_and_never_in_the_place_of_a_device(tmp_path: Path) -> None:
    # A test passed os.devnull as a marker; written by a rename, run as root, it put a
    # regular file in /dev/null's place, and PostgreSQL's initdb failed on it after.
    process_jobs.mark(str(tmp_path / "pid"), "4242")
    assert (tmp_path / "pid").read_text() == "4242" and list(tmp_path.iterdir()) == [
        tmp_path / "pid"
    ]
    with pytest.raises(ValueError, match="is not a regular file"):
        process_jobs.mark(os.devnull, "4242")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
