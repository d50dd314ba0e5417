"""A shutdown returns within its timeout even when a thread holds the scheduler's lock
(a store whose save hangs: the core writes under the lock), and a failed run's log
line is written without the lock (a slow logging handler holds no verb)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import (
    FakeClock,
    OneTime,
    RetryPolicy,
    Scheduler,
    SqliteTaskStore,
    TaskEvent,
    TaskStatus,
)
from lldsched.core.isolation import killed_by_shutdown
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from lldsched.stores.memory import InMemoryTaskStore
from lldsched.threaded.coroutines.shutdown import CANCEL_GRACE, grace_for
from lldsched.threaded.deadline import Deadline
from lldsched.threaded.processes import pool
from lldsched.threaded.processes.life import kill_group
from tests import cluster_jobs, jobs
from tests.conftest import T0, collect_left_behind
from tests.exitthreads import refusing_threads
from tests.waits import wait_until

HANG = 30.0  # how long a hung call waits at most: a shutdown returns long before it ends
BOUND = 4.0  # a shutdown that must succeed is given this long (a bound on a wait only)


class HangingStore(InMemoryTaskStore):
    """Saves a run's record only once ``release`` is set (``hanging``: one waits;
    ``hung``: whether one is waiting now)."""

    def __init__(self) -> None:
        super().__init__()
        self.hanging = threading.Event()
        self.release = threading.Event()
        self.ended = threading.Event()  # set when a hung save stopped waiting

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        if record is not None:  # a run's outcome, written under the scheduler's lock
            self.hanging.set()
            self.release.wait(HANG)
            self.ended.set()
        super().save(snapshot, record)

    @property
    def hung(self) -> bool:
        """Whether a save is hanging now (begun, not released), the scheduler's lock held."""
        return self.hanging.is_set() and not self.ended.is_set()


@pytest.fixture
def store() -> Iterator[HangingStore]:
    store = HangingStore()
    yield store
    store.release.set()  # never leave a worker hung behind a failed test


@contextlib.contextmanager
def lldsched_logs_to(handler: logging.Handler) -> Iterator[None]:
    """``handler`` on the ``lldsched`` logger, WARNING and up, for the block."""
    logger = logging.getLogger("lldsched")
    before = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)


def test_a_save_that_hangs_before_shutdown_does_not_hold_it_past_its_timeout(
    store: HangingStore, caplog: pytest.LogCaptureFixture
) -> None:
    scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store).start()
    task = scheduler.schedule("hung", lambda: None, OneTime(delay=0))
    assert store.hanging.wait(5)  # its worker holds the lock, inside save
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        stopped = scheduler.shutdown(timeout=0.5)
    assert not stopped and store.hung  # returned while the save still holds the lock
    assert "returned without stopping the scheduler: its lock stayed held" in caplog.text
    assert scheduler.running  # nothing was changed ...
    store.release.set()
    assert scheduler.shutdown(timeout=5)  # ... and a later shutdown() does it all
    assert not scheduler.running
    assert task.status is TaskStatus.SUCCEEDED
    assert [record.outcome for record in store.records(task.id)] == ["ok"]


def test_a_save_that_hangs_during_the_drain_does_not_hold_it_past_its_timeout(
    store: HangingStore, caplog: pytest.LogCaptureFixture
) -> None:
    gate = threading.Event()
    entered = threading.Event()

    def held() -> None:
        entered.set()
        gate.wait(HANG)

    scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store).start()
    task = scheduler.schedule("held", held, OneTime(delay=0))
    assert entered.wait(5)
    result: list[tuple[bool, bool]] = []  # (stopped, the save hung when it returned)

    def close() -> None:
        # 1.5 s: the save must hang before the drain's time is up, a few steps below
        stopped = scheduler.shutdown(timeout=1.5)
        result.append((stopped, store.hung))

    closing = threading.Thread(target=close)
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        closing.start()
        assert scheduler._timer is not None
        scheduler._timer.join(5)
        assert not scheduler._timer.is_alive()  # shutdown took the lock: it drains now
        gate.set()  # the run ends, and its save hangs under the lock
        assert store.hanging.wait(5)
        closing.join(HANG)
    assert not closing.is_alive()
    assert result == [(False, True)]  # returned while the save still holds the lock
    assert "the scheduler's lock still held" in caplog.text
    store.release.set()
    assert scheduler.shutdown(timeout=5)  # what was left finishes
    assert task.status is TaskStatus.SUCCEEDED


def test_a_drain_out_of_time_behind_a_save_that_hangs_still_kills_its_worker_process(
    store: HangingStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, with a process-isolated run in flight too: the drain cannot take the lock
    back before its time is up (the save hangs under it), and is out of time all the
    same.  The run still in its child is killed as the shutdown ends (the drain's cut),
    not left going after shutdown() returned; its record, written once the save lets the
    lock go, says the first shutdown's drain ran out of time."""
    killed: list[int] = []  # the pids the pool killed

    def noted_kill(process: subprocess.Popen[bytes]) -> None:
        killed.append(process.pid)
        kill_group(process)

    monkeypatch.setattr(pool, "kill_group", noted_kill)
    gate = threading.Event()
    entered = threading.Event()

    def held() -> None:
        entered.set()
        gate.wait(HANG)

    marker, release = tmp_path / "pid", tmp_path / "release"
    scheduler = Scheduler(workers=2, clock=FakeClock(T0), store=store).start()
    try:
        child = scheduler.schedule(
            "child",
            "tests.process_jobs:held",
            OneTime(delay=0),
            args=(str(marker), str(release)),
            isolation="process",
        )
        wait_until(marker.exists, timeout=HANG, what="the isolated run in its child")
        pid = int(marker.read_text())
        task = scheduler.schedule("held", held, OneTime(delay=0))
        assert entered.wait(5)
        result: list[tuple[bool, bool, list[int]]] = []

        def close() -> None:
            stopped = scheduler.shutdown(timeout=1.5)
            result.append((stopped, store.hung, list(killed)))

        closing = threading.Thread(target=close)
        closing.start()
        # The drain under way, waiting for the runs in flight (the lock let go): only
        # then does the thread run end, its save hanging under the lock, so that the
        # drain cannot take the lock back (before, the save could hang first, and the
        # drain not begin at all)
        wait_until(lambda: scheduler._draining, timeout=5, what="the drain")
        gate.set()
        assert store.hanging.wait(5)
        closing.join(HANG)
        assert not closing.is_alive()
        assert result == [(False, True, [pid])]  # the child killed as the shutdown ended
    finally:
        gate.set()
        release.touch()  # a child left going ends at once
        store.release.set()
    assert scheduler.shutdown(timeout=5)  # what was left finishes
    assert task.status is TaskStatus.SUCCEEDED
    (record,) = child.history
    drained = 1.5 - grace_for(1.5)
    why = killed_by_shutdown(drain=True, drained=drained)
    assert record.error == f"CancelledError: {why} (its worker process {pid} was killed)"


def test_a_logging_handler_that_blocks_holds_no_verb_and_lines_keep_their_order() -> None:
    entered, release = threading.Event(), threading.Event()
    lines: list[str] = []

    class Blocking(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "failed" in record.getMessage():
                entered.set()
                release.wait(HANG)  # a slow handler: a remote log service that hangs
                lines.append(record.getMessage())

    def fail() -> None:
        raise ValueError("boom")

    second_failed = threading.Event()

    def listener(event: TaskEvent) -> None:  # on the listeners' thread, not the worker's
        if event.name == "second" and event.status is TaskStatus.FAILED:
            second_failed.set()

    with lldsched_logs_to(Blocking()):
        scheduler = Scheduler(workers=2, clock=FakeClock(T0), listeners=[listener]).start()
        try:
            once = RetryPolicy(max_attempts=1)
            other = scheduler.schedule("other", lambda: None, OneTime(delay=60))
            first = scheduler.schedule("first", fail, OneTime(delay=0), retry=once)
            assert entered.wait(5)  # first's line is in the handler, which blocks
            pausing = threading.Thread(target=scheduler.pause, args=(other.id,))
            pausing.start()
            pausing.join(5)
            assert not pausing.is_alive() and other.status is TaskStatus.PAUSED
            second = scheduler.schedule("second", fail, OneTime(delay=0), retry=once)
            assert second_failed.wait(5)  # recorded while the first line is still being written
            assert lines == []
            release.set()
            assert scheduler.wait_idle(timeout=5)
            assert first.status is TaskStatus.FAILED
        finally:
            release.set()
            scheduler.shutdown(timeout=5)
    assert [line.split(" attempt ")[0] for line in lines] == [
        f"task {first.id} 'first'",
        f"task {second.id} 'second'",
    ]
    assert lines[0].endswith("failed: ValueError: boom; dead-lettered (redrive() runs it again)")


def test_shutdown_from_a_signal_handler_inside_a_scheduler_call_returns_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The handler runs on the main thread while it holds the lock (here: inside the
    store's save of a registration): it gets False after its timeout, not a hang."""
    results: list[bool] = []

    class SignallingStore(InMemoryTaskStore):
        def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
            signal.raise_signal(signal.SIGUSR1)  # the handler runs before the next line
            super().save(snapshot, record)

    scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=SignallingStore()).start()
    previous = signal.signal(
        signal.SIGUSR1, lambda number, frame: results.append(scheduler.shutdown(timeout=0.2))
    )
    try:
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            scheduler.schedule("in the save", lambda: None, OneTime(delay=60))
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert results == [False]
    assert "a signal handler called shutdown(): set an Event there" in caplog.text
    assert scheduler.shutdown(timeout=5)


def test_a_logging_handler_that_blocks_on_a_coroutines_failure_holds_no_verb() -> None:
    entered, release = threading.Event(), threading.Event()

    class Blocking(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "failed" in record.getMessage():
                entered.set()
                release.wait(HANG)

    async def fail() -> None:
        raise ValueError("boom")

    with lldsched_logs_to(Blocking()):
        scheduler = Scheduler(workers=1, clock=FakeClock(T0)).start()
        try:
            other = scheduler.schedule("other", lambda: None, OneTime(delay=60))
            failing = scheduler.schedule(
                "async", fail, OneTime(delay=0), retry=RetryPolicy(max_attempts=1)
            )
            assert entered.wait(5)  # the loop thread is in the handler
            pausing = threading.Thread(target=scheduler.pause, args=(other.id,))
            pausing.start()
            pausing.join(5)
            assert not pausing.is_alive() and other.status is TaskStatus.PAUSED
            assert not scheduler.wait_idle(timeout=0.05)  # settled only once its line is written
            release.set()
            assert scheduler.wait_idle(timeout=5)
            assert failing.status is TaskStatus.FAILED
        finally:
            release.set()
            scheduler.shutdown(timeout=5)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["thread", "coroutine"])
def test_a_logging_handler_that_raises_still_lets_the_failed_run_settle(
    asynchronous: bool,
) -> None:
    class Raising(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "attempt 1 of 1 failed" in record.getMessage():  # the failure's line only
                raise RuntimeError("the handler broke")

    def fail() -> None:
        raise ValueError("boom")

    async def fail_async() -> None:
        raise ValueError("boom")

    with lldsched_logs_to(Raising()):
        scheduler = Scheduler(workers=1, clock=FakeClock(T0)).start()
        try:
            task = scheduler.schedule(
                "fails",
                fail_async if asynchronous else fail,
                OneTime(delay=0),
                retry=RetryPolicy(max_attempts=1),
            )
            assert scheduler.wait_idle(timeout=5)  # settled, or wait_idle would time out
            assert task.status is TaskStatus.FAILED
        finally:
            scheduler.shutdown(timeout=5)


async def deaf(started: threading.Event) -> None:
    """Swallows every cancellation: it ends only when its coroutine is closed."""
    started.set()
    while True:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)


@pytest.mark.parametrize(
    ("timeout", "grace"),
    [(0.2, 0.1), (2.0, CANCEL_GRACE), (3600.0, CANCEL_GRACE), (None, CANCEL_GRACE)],
)
def test_a_cancelled_coroutine_s_grace_comes_out_of_the_shutdown_s_timeout(
    timeout: float | None, grace: float
) -> None:
    """CANCEL_GRACE is taken from the timeout (half of it, if less), not added to it: a
    shutdown(timeout=0.2) took 1.2 s, waiting the whole timeout and then 1 s more.
    The arithmetic is grace_for's, which LoopShutdown.shutdown cancels by."""
    assert grace_for(timeout) == grace


def test_a_coroutine_deaf_to_cancellation_is_cancelled_recorded_and_left_behind() -> None:
    """A bounded shutdown cancels a coroutine that swallows its cancellation, records
    its run once as cancelled by shutdown, leaves nothing in flight and stops the loop
    (asserted as what was stopped and in what state: its wall time is grace_for's
    arithmetic, tested above, not bounded here)."""
    started = threading.Event()
    scheduler = Scheduler(workers=1, clock=FakeClock(T0)).start()
    task = scheduler.schedule(
        "deaf", deaf, OneTime(delay=0), args=(started,), retry=RetryPolicy(max_attempts=1)
    )
    assert started.wait(5)
    loop_thread = next(
        t for t in threading.enumerate() if t.name == f"lldsched-{scheduler.name}-loop"
    )
    stopped = scheduler.shutdown(timeout=0.2)
    # The loop was told to stop: it ends, within LOCK_GRACE unless a pause longer than
    # that came between; a second shutdown waits for what the first left stopping.
    assert stopped or scheduler.shutdown(timeout=5)
    assert not loop_thread.is_alive() and not scheduler.running
    assert [r.error for r in task.history] == ["CancelledError: scheduler shut down"]
    # Not left RUNNING: due at its slot again, its one attempt unspent (before: FAILED)
    assert (task.status, task.attempt) == (TaskStatus.SCHEDULED, 0)
    assert scheduler._in_flight == 0  # no count leaked by the run shutdown recorded
    collect_left_behind()  # its line said here, not in a later test


def test_a_step_where_the_exit_starts_no_thread_runs_on_the_caller_and_is_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At the interpreter's exit on Python 3.12.0 to 3.12.2 no thread starts: the step of
    a shutdown there runs on the calling thread, and is said done (the steps after it
    take the lock in turn, not as if it were still stuck)."""
    refused = refusing_threads(monkeypatch)
    ran: list[threading.Thread] = []
    assert Deadline(0).run(lambda: ran.append(threading.current_thread()), name="step")
    monkeypatch.undo()
    assert refused == ["step"] and ran == [threading.current_thread()]


HUNG_STEP = """
import threading
from lldsched.threaded.deadline import Deadline
print(Deadline(0).run(threading.Event().wait, name="hung step"))
"""


def test_a_step_still_going_at_its_deadline_does_not_hold_the_interpreters_exit() -> None:
    """A shutdown's step that hangs (a store call that never returns) is given up at its
    deadline, and the program then ends: its thread does not hold the interpreter's exit
    (the subprocess's timeout only keeps a failure from hanging the suite)."""
    ended = subprocess.run(
        [sys.executable, "-c", HUNG_STEP], capture_output=True, text=True, timeout=60
    )
    assert (ended.returncode, ended.stdout, ended.stderr) == (0, "False\n", "")


def test_a_save_that_hangs_recording_a_cancelled_coroutine_does_not_hold_shutdown(
    store: HangingStore, caplog: pytest.LogCaptureFixture
) -> None:
    """The runner records the coroutine it cancelled through the store, under the lock:
    on a thread of its own (Deadline.run), so the hang holds that thread, not shutdown."""
    started = threading.Event()
    scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store).start()
    task = scheduler.schedule(
        "deaf", deaf, OneTime(delay=0), args=(started,), retry=RetryPolicy(max_attempts=1)
    )
    assert started.wait(5)
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        stopped = scheduler.shutdown(timeout=0.5)
    assert store.hung  # the record's save hangs ...
    assert not stopped  # ... and shutdown returned anyway, and said so
    assert "the scheduler's lock still held" in caplog.text
    store.release.set()
    assert scheduler.shutdown(timeout=5)
    assert [r.error for r in task.history] == ["CancelledError: scheduler shut down"]
    collect_left_behind()


def test_a_release_that_hangs_at_shutdown_does_not_hold_it_past_its_timeout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Shutdown without a drain gives back the claims it dropped unrun (a store call,
    under the lock): a release that hangs held shutdown for as long as it hung."""
    hanging, release, ended = threading.Event(), threading.Event(), threading.Event()

    class HangingRelease(SqliteTaskStore):
        def release(self, *, task_id: str, token: int) -> None:
            hanging.set()
            release.wait(HANG)
            ended.set()
            super().release(task_id=task_id, token=token)

    store = HangingRelease(tmp_path / "tasks.db", shared=True, poll=0.05)
    cluster_jobs.released.clear()
    scheduler = Scheduler(workers=1, handoff=4, store=store)
    try:
        scheduler.schedule("held", cluster_jobs.held_until_released, OneTime(delay=0), id="held")
        scheduler.schedule("queued", jobs.noop, OneTime(delay=0), id="queued")
        scheduler.start()  # both claimed in one batch, while the one worker is idle
        cluster_jobs.seen.get(timeout=5)  # the one worker is busy: "queued" waits for it
        wait_until(lambda: len(store.leases()) == 2, timeout=5,
                   what="the queued task to be claimed")  # fmt: skip
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            stopped = scheduler.shutdown(drain=False, timeout=0.5)
        assert not stopped
        assert hanging.is_set() and not ended.is_set()  # returned while the release hangs
    finally:
        release.set()
        cluster_jobs.released.set()
        scheduler.shutdown(timeout=5)
        store.close()
    cluster_jobs.seen.get(timeout=5)  # the held run's end


async def awaits_a_thread(started: threading.Event, release: threading.Event) -> None:
    """Awaits a blocking call on the loop's executor that ends once ``release`` is set."""
    await asyncio.to_thread(_blocks_until, started, release)


def _blocks_until(started: threading.Event, release: threading.Event) -> None:
    started.set()
    release.wait(HANG)


def _to_thread_calls(scheduler: Scheduler) -> list[threading.Thread]:
    prefix = f"lldsched-{scheduler.name}-loop-to-thread_"
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]


def test_a_to_thread_call_still_running_at_shutdown_is_waited_for_within_its_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The cancelled coroutine was recorded, but the thread it awaited runs on: shutdown
    waits for it until its timeout, then returns False and says so (it returned True,
    the thread left running on a closed loop's executor)."""
    started, release = threading.Event(), threading.Event()
    scheduler = Scheduler(workers=1, clock=FakeClock(T0)).start()
    task = scheduler.schedule(
        "offload", awaits_a_thread, OneTime(delay=0), args=(started, release),
        retry=RetryPolicy(max_attempts=1),
    )  # fmt: skip
    assert started.wait(5)
    try:
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            stopped = scheduler.shutdown(timeout=0.5)
        assert not stopped  # returned while the call still runs (it runs until released)
        assert [t.is_alive() for t in _to_thread_calls(scheduler)] == [True]
        assert "asyncio.to_thread calls of coroutine runs still going" in caplog.text
        assert [r.error for r in task.history] == ["CancelledError: scheduler shut down"]
    finally:
        release.set()
    assert scheduler.shutdown(timeout=5)  # a second shutdown waits for what is left
    assert _to_thread_calls(scheduler) == []


# Where Thread.join blocks: in its own _wait_for_tstate_lock up to Python 3.12; from
# 3.13 in the C _ThreadHandle.join it calls, under no Python frame but join's.
BLOCKED_IN_JOIN = "join" if sys.version_info >= (3, 13) else "_wait_for_tstate_lock"


def joining_the_calls() -> bool:
    """A thread of ``shutdown()`` (its loop's closer) waits for the calls still running on
    the loop's executor to end: blocked in a ``join`` under ``_join_calls``."""
    for frame in sys._current_frames().values():
        innermost = frame.f_code.co_name
        while frame is not None and frame.f_code.co_name != "_join_calls":
            frame = frame.f_back  # type: ignore[assignment]
        if frame is not None and innermost == BLOCKED_IN_JOIN:
            return True
    return False


async def awaits_a_thread_that_checks(
    started: threading.Event, release: threading.Event, returned: threading.Event, seen: list[bool]
) -> None:
    """As :func:`awaits_a_thread`; once released, the call waits (bounded) until
    ``returned`` is set (shutdown returned without waiting for it) or shutdown waits
    for it (:func:`joining_the_calls`), and notes in ``seen`` whether shutdown had
    returned by its end.  (It waited 0.5 s for ``returned``: in full when shutdown
    works.)"""

    def call() -> None:
        _blocks_until(started, release)
        wait_until(
            lambda: returned.is_set() or joining_the_calls(),
            timeout=HANG,
            what="shutdown() to return or to wait for the call",
            every=0.001,
        )
        seen.append(returned.is_set())

    await asyncio.to_thread(call)


def test_a_to_thread_call_that_ends_within_the_timeout_is_waited_for() -> None:
    """A call still running when its coroutine is cancelled, ending within the timeout,
    is over before shutdown returns True: it never outlives the scheduler (the call
    saw shutdown return while it still ran)."""
    started, release, returned = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []
    scheduler = Scheduler(workers=1, clock=FakeClock(T0)).start()
    task = scheduler.schedule(
        "offload", awaits_a_thread_that_checks, OneTime(delay=0),
        args=(started, release, returned, seen), retry=RetryPolicy(max_attempts=1),
    )  # fmt: skip
    assert started.wait(5)
    scheduler.cancel(task.id)  # the coroutine ends; the thread it awaited runs on
    wait_until(lambda: bool(task.history), timeout=5, what="the cancelled run's record")
    loop_thread = next(
        t for t in threading.enumerate() if t.name == f"lldsched-{scheduler.name}-loop"
    )

    # Released once the loop thread ended: past the loop's close, where a shutdown
    # that did not wait for the call returned.
    def release_once_the_loop_ended() -> None:
        loop_thread.join(HANG)
        release.set()

    watcher = threading.Thread(target=release_once_the_loop_ended)
    watcher.start()
    try:
        assert scheduler.shutdown(timeout=BOUND)
        returned.set()
        assert seen == [False]  # over before shutdown returned
    finally:
        release.set()
        returned.set()
        watcher.join(HANG)


def test_a_worker_process_that_cannot_exit_does_not_hold_shutdown_past_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An isolated action left a thread that is no daemon: its worker process, idle, does
    not exit when its pipe closes.  shutdown() kills it when its timeout runs out: the
    pool's close kills it (it waited 5 s more first, then the reaper killed it)."""
    killed: list[int] = []  # the pids the pool killed

    def noted_kill(process: subprocess.Popen[bytes]) -> None:
        killed.append(process.pid)
        kill_group(process)

    monkeypatch.setattr(pool, "kill_group", noted_kill)
    scheduler = Scheduler(workers=1).start()
    task = scheduler.schedule(
        "leave", "tests.process_jobs:leave_a_thread", OneTime(delay=0), isolation="process"
    )
    assert scheduler.wait_idle(timeout=HANG) and task.history[0].result == "'left'"
    (pid,) = scheduler._processes.pids
    assert scheduler.shutdown(timeout=0.5)  # the worker process killed, and reaped
    assert killed == [pid]  # by the pool at the timeout, not by the reaper after it
    assert scheduler._processes.pids == []


def test_a_worker_process_that_cannot_exit_does_not_hold_a_shutdown_with_no_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same worker process, and ``shutdown(timeout=None)``: it waited for it for ever
    (an idle worker process runs no run; a drain with no bound waits for the runs).  The
    pool's close kills it once ``REAP_TIMEOUT`` passed, as ``end_child`` does one it
    ends (0 here: the test waits for no timeout)."""
    killed: list[int] = []  # the pids the pool killed

    def noted_kill(process: subprocess.Popen[bytes]) -> None:
        killed.append(process.pid)
        kill_group(process)

    monkeypatch.setattr(pool, "kill_group", noted_kill)
    monkeypatch.setattr(pool, "REAP_TIMEOUT", 0.0)
    scheduler = Scheduler(workers=1).start()
    task = scheduler.schedule(
        "leave", "tests.process_jobs:leave_a_thread", OneTime(delay=0), isolation="process"
    )
    assert scheduler.wait_idle(timeout=HANG) and task.history[0].result == "'left'"
    (pid,) = scheduler._processes.pids
    results: list[bool] = []
    closing = threading.Thread(target=lambda: results.append(scheduler.shutdown(timeout=None)))
    closing.start()
    closing.join(HANG)
    if closing.is_alive():
        os.kill(pid, signal.SIGKILL)  # let the shutdown end, and the test fail
        closing.join(HANG)
        pytest.fail("shutdown(timeout=None) waited for an idle worker process that cannot exit")
    assert results == [True]
    assert killed == [pid]
    assert scheduler._processes.pids == []
