"""A simulation's coroutine action sleeps no real time: its loop's clock skips the waits
nothing outside the loop can end (``lldsched/sim/looptime.py``).  Before, an
``await asyncio.sleep(3600)`` in a simulated run slept a real hour, and a task's
``timeout`` cut a hung coroutine only after that many real seconds.  A wait on real work
(a thread of ``asyncio.to_thread``, a socket) is still waited for, in real time.  And a
coroutine deaf to its timeout's cancellation no longer holds the simulation for ever.

Each simulation runs on a thread joined within a bound: before the fix, the join ran out
(the run was still asleep) and the test failed there, not an hour later."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Future

import pytest

from lldsched import OneTime, RetryPolicy, ScheduledTask, Simulation, TaskStatus
from tests.test_scheduler_service import A_JOB_WHOSE_CALL_NEVER_RETURNS, ends_clean
from tests.test_sim_running_loop import PATHS, in_loop
from tests.waits import wait_until

BOUND = 60.0  # seconds a join waits for a simulation that should take next to none


def on_a_thread(drive: Callable[[Callable[[], object]], object], sim: Simulation) -> None:
    """``sim.run_for(86400)`` driven as ``drive`` says, on a thread joined within BOUND."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            drive(lambda: sim.run_for(86400))
        except BaseException as exc:  # reported by the test's thread
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), "run_for did not return: it waited on real time, or for ever"
    assert not failed, failed


def one_attempt(
    sim: Simulation, name: str, action: Callable[..., object], timeout: float, *args: object
) -> ScheduledTask:
    """A one-off coroutine task due at once, with ``timeout`` and no retry."""
    return sim.schedule(
        name, OneTime(delay=0), action=action, args=args, timeout=timeout,
        retry=RetryPolicy(max_attempts=1),
    )  # fmt: skip


def shut_down_within_bound(sim: Simulation) -> None:
    closer = threading.Thread(target=sim.shutdown, daemon=True)
    closer.start()
    closer.join(BOUND)
    assert not closer.is_alive()


async def ticks(cancellations: list[str], deaf: bool) -> None:
    """Sleeps ten seconds at a time for ever, noting each cancellation; ``deaf``: it
    swallows them and goes on."""
    while True:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancellations.append("cancelled")
            if not deaf:
                raise


@PATHS
def test_a_coroutine_that_sleeps_an_hour_runs_at_once_and_sees_its_loop_clock_move(
    drive: Callable[[Callable[[], object]], object],
) -> None:
    async def naps() -> float:
        loop = asyncio.get_running_loop()
        before = loop.time()
        await asyncio.sleep(3600)
        return loop.time() - before

    sim = Simulation(workers=1)
    task = sim.schedule("naps", OneTime(delay=0), action=naps, duration=5)
    on_a_thread(drive, sim)
    (record,) = task.history
    assert record.ok and float(record.result or 0) >= 3600  # the hour passed on its clock
    assert record.finished - record.started == 5  # the run still takes its modelled time
    assert sim.shutdown() is True


@PATHS
def test_a_hung_coroutine_is_cut_at_its_timeout_without_waiting_it_out(
    drive: Callable[[Callable[[], object]], object],
) -> None:
    async def hangs() -> None:
        await asyncio.sleep(86400)

    sim = Simulation(workers=1)
    task = sim.schedule(
        "hangs", OneTime(delay=0), action=hangs, timeout=3600,
        retry=RetryPolicy(max_attempts=3, initial_backoff=60),
    )  # fmt: skip
    on_a_thread(drive, sim)
    assert [(r.attempt, r.timed_out, r.error) for r in task.history] == [
        (n, True, "TimeoutError: cancelled at its 3600 s timeout") for n in (1, 2, 3)
    ]
    assert [r.finished - r.started for r in task.history] == [3600, 3600, 3600]
    assert task.status is TaskStatus.FAILED
    assert sim.shutdown() is True


@PATHS
def test_a_coroutine_awaiting_a_thread_is_not_cut_while_the_thread_works(
    drive: Callable[[Callable[[], object]], object],
) -> None:
    """The skip would have fired the timeout at once; the loop waits for the call."""
    called, release = threading.Event(), threading.Event()

    def work() -> str:
        called.set()
        return "done" if release.wait(BOUND) else "never released"

    async def awaits_a_thread() -> str:
        return await asyncio.to_thread(work)

    def releases() -> None:
        if called.wait(BOUND):
            release.set()

    releaser = threading.Thread(target=releases)
    releaser.start()
    sim = Simulation(workers=1)
    task = one_attempt(sim, "threaded", awaits_a_thread, 1)
    on_a_thread(drive, sim)
    releaser.join(BOUND)
    (record,) = task.history
    assert (record.ok, record.result) == (True, "'done'")
    assert sim.shutdown() is True


@PATHS
def test_a_coroutine_awaiting_a_socket_is_not_cut_while_it_waits(
    drive: Callable[[Callable[[], object]], object],
) -> None:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    waiting = threading.Event()

    async def reads() -> bytes:
        loop = asyncio.get_running_loop()
        receiving = loop.create_task(loop.sock_recv(ours, 1))
        await asyncio.sleep(0)  # its reader is registered now
        waiting.set()
        return await receiving

    sender = threading.Thread(target=lambda: waiting.wait(BOUND) and theirs.send(b"x"))
    sender.start()
    sim = Simulation(workers=1)
    task = one_attempt(sim, "reads", reads, 1)
    try:
        on_a_thread(drive, sim)
    finally:
        sender.join(BOUND)
        ours.close()
        theirs.close()
    (record,) = task.history
    assert (record.ok, record.result) == (True, "b'x'")
    assert sim.shutdown() is True


@pytest.mark.parametrize("deaf", [False, True], ids=["cancellable", "deaf"])
def test_a_task_left_on_the_loop_is_ended_at_shutdown_without_a_real_wait(deaf: bool) -> None:
    """The shutdown gives what a coroutine left on its loop a second to end: on this
    clock a second that a task deaf to its cancellation sleeps through is skipped."""
    ended: list[str] = []
    left: list[asyncio.Task[None]] = []

    async def starts() -> None:
        left.append(asyncio.get_running_loop().create_task(ticks(ended, deaf)))

    sim = Simulation(workers=1)
    sim.schedule("starts", OneTime(delay=0), action=starts)
    on_a_thread(lambda run: run(), sim)
    shut_down_within_bound(sim)
    assert ended == ["cancelled"]
    assert left[0].done() is not deaf


@PATHS
def test_a_coroutine_deaf_to_its_timeout_is_cut_there_and_the_simulation_goes_on(
    drive: Callable[[Callable[[], object]], object],
) -> None:
    """``asyncio.wait_for`` waited for the cancelled coroutine to end: one that swallows
    its ``CancelledError`` held ``run_for`` for ever.  Now it is recorded timed out at
    its timeout and left on the loop, as the threaded runtime leaves it, and its next
    cancellation (the shutdown's) is swallowed as well."""
    cancellations: list[str] = []

    async def quick() -> str:
        return "done"

    sim = Simulation(workers=1)
    hung = one_attempt(sim, "deaf", ticks, 5, cancellations, True)
    after = sim.schedule("after", OneTime(delay=60), action=quick)
    on_a_thread(drive, sim)
    assert [(r.timed_out, r.error, r.finished - r.started) for r in hung.history] == [
        (True, "TimeoutError: cancelled at its 5 s timeout", 5)
    ]
    assert hung.status is TaskStatus.FAILED
    assert [(r.ok, r.result) for r in after.history] == [(True, "'done'")]
    shut_down_within_bound(sim)
    assert cancellations == ["cancelled", "cancelled"]


@PATHS
@pytest.mark.parametrize("ends", ["returns", "raises"])
def test_a_coroutine_that_ends_its_own_way_once_cut_is_recorded_timed_out_as_on_threads(
    drive: Callable[[Callable[[], object]], object], ends: str
) -> None:
    """It returned a value (or raised) from its ``except CancelledError``: the simulation
    recorded that, as if it had not been cut; the threaded runtime records the cut."""

    async def swallows() -> str:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if ends == "raises":
                raise RuntimeError("rollback failed") from None
        return "went on"

    sim = Simulation(workers=1)
    task = one_attempt(sim, "swallows", swallows, 5)
    on_a_thread(drive, sim)
    (record,) = task.history
    assert (record.ok, record.timed_out, record.result) == (False, True, None)
    assert record.finished - record.started == 5
    assert sim.shutdown() is True


def test_between_runs_the_loop_thread_does_not_drive_a_task_left_there_round_its_sleeps() -> None:
    """The simulation's loop thread runs for ever; it skipped its waits between runs too,
    so a heartbeat a coroutine action left there (sleeping an hour at a time) was driven
    round its sleeps as fast as the thread could go, while nothing was simulated."""
    beats: list[int] = []
    left: list[asyncio.Task[None]] = []

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(3600)
            beats.append(1)

    async def starts() -> None:
        left.append(asyncio.get_running_loop().create_task(heartbeat()))

    async def ahead() -> float:  # how far the loop's clock is ahead of the monotonic one
        return asyncio.get_running_loop().time() - time.monotonic()

    sim = Simulation(workers=1)
    sim.schedule("starts", OneTime(delay=0), action=starts)
    in_loop(lambda: sim.run_for(60))  # on the simulation's loop thread
    loop = left[0].get_loop()
    skipped = [asyncio.run_coroutine_threadsafe(ahead(), loop).result(BOUND) for _ in range(20)]
    assert beats == []
    assert max(skipped) - min(skipped) < 1  # its clock kept pace with the monotonic one
    shut_down_within_bound(sim)


# -- a thread's future an action returns (core.results.must_await) ----------------------


class Released:
    """Work on a thread that ends, with "done", once a thread of this test sees it
    called."""

    def __init__(self) -> None:
        self.called, self.release = threading.Event(), threading.Event()
        self.releaser = threading.Thread(target=self._releases)
        self.releaser.start()

    def work(self) -> str:
        self.called.set()
        return "done" if self.release.wait(BOUND) else "never released"

    def _releases(self) -> None:
        if self.called.wait(BOUND):
            self.release.set()


class DoneOnceChained(Future[str]):
    """A thread's future that a thread of this test completes, with "done", once the
    simulation's loop has chained it to one of its own (``asyncio.wrap_future`` adds a
    callback): before then, the loop had nothing but the run's timeout to skip to."""

    def __init__(self) -> None:
        super().__init__()
        self._chained = threading.Event()
        self.completer = threading.Thread(target=self._completes)
        self.completer.start()

    def add_done_callback(self, fn: Callable[[Future[str]], object]) -> None:
        super().add_done_callback(fn)
        self._chained.set()

    def _completes(self) -> None:
        if self._chained.wait(BOUND) and self.set_running_or_notify_cancel():
            self.set_result("done")


@PATHS
@pytest.mark.parametrize("returns", ["plain", "coroutine", "awaited-wrapped"])
def test_a_thread_future_an_action_returns_is_waited_for_not_cut_at_once(
    drive: Callable[[Callable[[], object]], object], returns: str
) -> None:
    """The loop could not see the thread's future ``asyncio.wrap_future`` chained to it
    (an executor's ``submit``, ``run_coroutine_threadsafe``), so the skip fired the
    timeout at once: recorded timed out on every attempt.  Now it is waited for, as
    ``asyncio.to_thread``'s call is, and the run still takes its modelled duration;
    also when the coroutine wraps it itself and awaits it (docs/ASYNCIO.md's recipe),
    where the threaded runtime records the same task a success."""
    futures: list[DoneOnceChained] = []

    def submits() -> Future[str]:
        futures.append(DoneOnceChained())
        return futures[-1]

    async def returns_it() -> Future[str]:
        return submits()

    async def awaits_it() -> str:
        return await asyncio.wrap_future(submits())

    actions = {"plain": submits, "coroutine": returns_it, "awaited-wrapped": awaits_it}
    sim = Simulation(workers=1)
    task = sim.schedule(
        "submits", OneTime(delay=0), action=actions[returns],
        duration=5, timeout=10, retry=RetryPolicy(max_attempts=1),
    )  # fmt: skip
    try:
        on_a_thread(drive, sim)
    finally:
        futures[0].completer.join(BOUND)
    (record,) = task.history
    assert (record.ok, record.timed_out, record.result) == (True, False, "'done'")
    assert record.finished - record.started == 5
    assert sim.shutdown() is True


@PATHS
@pytest.mark.parametrize("awaits", [False, True], ids=["returned", "awaited-wrapped"])
def test_a_future_run_coroutine_threadsafe_gives_is_waited_for_and_cancelled_at_the_timeout(
    drive: Callable[[Callable[[], object]], object], awaits: bool
) -> None:
    """``run_coroutine_threadsafe`` onto another loop, its future returned (or wrapped
    and awaited by a coroutine action, docs/ASYNCIO.md's recipe for reaching the
    application's loop): the first run is waited for until its coroutine ends there;
    the second, still asleep there at its task's timeout, is cut, and its coroutine on
    that loop is cancelled."""
    released = Released()
    other = asyncio.new_event_loop()
    runner = threading.Thread(target=other.run_forever, daemon=True)
    runner.start()
    handed: list[Future[object]] = []

    async def on_the_other_loop() -> str:
        return await asyncio.get_running_loop().run_in_executor(None, released.work)

    def hands(coroutine: Callable[[], Coroutine[object, object, object]]) -> Future[object]:
        handed.append(asyncio.run_coroutine_threadsafe(coroutine(), other))
        return handed[-1]

    async def awaits_handed(coroutine: Callable[[], Coroutine[object, object, object]]) -> object:
        return await asyncio.wrap_future(hands(coroutine))

    async def still_there() -> list[asyncio.Task[object]]:
        return [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]

    sim = Simulation(workers=1)
    action = awaits_handed if awaits else hands
    waited = one_attempt(sim, "waited", action, 10, on_the_other_loop)
    cut = one_attempt(sim, "cut", action, 0.1, lambda: asyncio.sleep(3600))  # a real hour
    try:
        on_a_thread(drive, sim)
        left = asyncio.run_coroutine_threadsafe(still_there(), other).result(BOUND)
    finally:
        released.releaser.join(BOUND)
        other.call_soon_threadsafe(other.stop)
        runner.join(BOUND)
        other.close()
    assert [(r.ok, r.result) for r in waited.history] == [(True, "'done'")]
    assert [(r.timed_out, r.error) for r in cut.history] == [
        (True, "TimeoutError: cancelled at its 0.1 s timeout")
    ]
    assert handed[1].cancelled() and left == []
    assert sim.shutdown() is True


CUTS_A_CALL_THAT_NEVER_RETURNS = (
    A_JOB_WHOSE_CALL_NEVER_RETURNS
    + """
from lldsched import OneTime, RetryPolicy, Simulation
def simulate():
    sim = Simulation(workers=1)
    sim.schedule("stuck", OneTime(delay=0), action=job, timeout=0.2,
                 retry=RetryPolicy(max_attempts=1))
    sim.run_for(10)
    assert started.is_set() and sim.shutdown() is False  # a call left running: said
    (record,) = sim.records()
    print(record.error, flush=True)
async def in_a_loop():  # a loop runs on this thread: the simulation's loop thread runs it
    simulate()
if sys.argv[1] == "loop":
    asyncio.run(in_a_loop())
else:
    simulate()
"""
)


@pytest.mark.parametrize("where", ["caller", "loop"])
def test_an_exit_does_not_wait_for_a_call_of_a_run_its_timeout_cut(where: str) -> None:
    """A coroutine action's ``asyncio.to_thread`` call, cut at the run's timeout, goes on
    on its thread (Python cannot stop one).  On asyncio's default executor that thread was
    not a daemon (the loop ran on the main thread) and ``concurrent.futures`` joined it at
    exit: after a ``shutdown()`` that returned True, the program never ended (it returns
    False now, the call left running: the test below).  Now the
    loop's executor is the threaded runtime's (``lldsched/loopcalls.py``), on the
    caller's thread and on the simulation's loop thread alike."""
    printed = ends_clean(CUTS_A_CALL_THAT_NEVER_RETURNS, where)
    assert printed == "TimeoutError: cancelled at its 0.2 s timeout\n"


@PATHS
def test_shutdown_says_an_asyncio_to_thread_call_its_runs_timeout_cut_is_still_running(
    drive: Callable[[Callable[[], bool]], bool], caplog: pytest.LogCaptureFixture
) -> None:
    """The call goes on on its thread after its run's timeout (nothing can stop it), and
    ``shutdown()`` returned True without a word, where the threaded one returns False and
    warns of "asyncio.to_thread calls of coroutine runs still going".  Now it says how many
    it left running and returns False, until none is (it waits for none: its shutdown
    takes no wall time)."""
    started, release, ended = threading.Event(), threading.Event(), threading.Event()

    def held() -> None:
        started.set()
        release.wait()
        ended.set()

    async def job() -> None:
        await asyncio.to_thread(held)

    sim = Simulation(workers=1)
    task = sim.schedule(
        "held", OneTime(delay=0), action=job, timeout=0.2, retry=RetryPolicy(max_attempts=1)
    )

    def run_and_shut_down() -> bool:
        sim.run_for(10)
        return sim.shutdown()

    try:
        with caplog.at_level("WARNING", logger="lldsched.scheduler"):
            assert drive(run_and_shut_down) is False
        assert started.is_set() and task.history[0].timed_out
        assert [r.getMessage() for r in caplog.records] == [
            "Simulation.shutdown() returned with 1 asyncio.to_thread call of coroutine runs "
            "still going (a call its run's timeout cut goes on); a thread cannot be stopped: "
            "each ends on its own, unless the process ends first"
        ]
    finally:
        release.set()
    assert ended.wait(timeout=10.0)
    # the pool marks the call done just after it returns: asked until it is
    wait_until(lambda: sim.shutdown() is True, timeout=10.0, what="the call ended, uncounted")


def test_shutdown_returns_true_when_every_call_ended_with_its_run() -> None:
    async def job() -> int:
        return await asyncio.to_thread(lambda: 2)

    sim = Simulation(workers=1)
    task = sim.schedule("quick", OneTime(delay=0), action=job, retry=RetryPolicy(max_attempts=1))
    sim.run_for(10)
    assert task.history[0].result == "2"
    assert sim.shutdown() is True
