"""Signals other than Ctrl-C in a threaded ``Scheduler``'s shutdown, and what a signal
leaves for a second ``shutdown()`` to finish.

A service commonly installs ``signal.signal(SIGTERM, lambda *a: sys.exit(0))``: its
``SystemExit`` lands between two statements as a Ctrl-C's ``KeyboardInterrupt`` does,
and where the scheduler's lock is taken with a timeout (``shutdown()``,
``metrics(timeout=...)``) one landing as the acquisition returns left the lock taken for
good.  A :class:`~lldsched.threaded.deadline.Hold` keeps every signal with a Python
handler now, not SIGINT alone (docs/decisions/simulation.md, "Any signal a Python handler raises
from, not only Ctrl-C").  Sent for real here (``os.kill``, ``signal.pthread_kill``); injected
at every line of ``shutdown()`` and ``metrics(timeout=...)`` with the Ctrl-C's sweeps
(tests/test_threaded_verb_interrupts.py).
"""

from __future__ import annotations

import contextlib
import linecache
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from lldsched import FakeClock, OneTime, Scheduler, TaskStatus
from lldsched.threaded import deadline as deadline_module
from lldsched.threaded.deadline import Deadline, Flag, Waiters
from tests import jobs
from tests.cluster import ROOT
from tests.conftest import T0
from tests.harness import FailingStore
from tests.interrupting import CtrlC, Terminated, exit_on_sigterm
from tests.test_threaded_verb_interrupts import WAIT, lock_free, until


@pytest.fixture
def signals_raise(sigterm_exits: None) -> Iterator[None]:
    """SIGTERM's handler raises ``SystemExit`` (``Terminated``), SIGINT's is Python's."""
    sigint = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, sigint)


@pytest.mark.usefixtures("signals_raise")
def test_a_real_sigterm_while_a_hold_has_the_lock_is_raised_once_it_is_let_go() -> None:
    """A SIGTERM sent for real (``os.kill`` to this process) while a ``Hold`` has the lock
    on the main thread is kept: the block runs to its end, and its handler's
    ``SystemExit`` is raised as it ends, the lock let go and the handler back."""
    lock = threading.Lock()
    after = []
    with pytest.raises(Terminated), Deadline(WAIT).holding(lock) as hold:
        assert hold.held
        os.kill(os.getpid(), signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)  # ran the handlers pending: the kill's too
        after.append("the block went on")
    assert after == ["the block went on"]
    assert not lock.locked()
    assert signal.getsignal(signal.SIGTERM) is exit_on_sigterm
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("signals_raise")
def test_a_real_sigterm_as_a_hold_takes_the_lock_leaves_it_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A SIGTERM that comes while a ``Hold`` on the main thread waits for the lock another
    thread holds, its C handler run on that other thread (so the main thread's wait is
    not cut: the lock's release ends it, with True), and handled at the main thread's
    next check, just after the acquisition returned: the hold has the lock, runs its
    block and lets it go, and the ``SystemExit`` comes then.  (Before, it was raised as
    the acquisition returned, before the hold knew it held the lock: taken for good.)"""
    monkeypatch.setattr(deadline_module, "ASK_EVERY", WAIT)  # one wait, ended by the release
    lock = threading.Lock()
    lock.acquire()
    main = threading.main_thread()
    assert threading.current_thread() is main

    def at_the_acquisition() -> bool:
        frame = sys._current_frames()[main.ident]  # type: ignore[index]
        return frame.f_code is Deadline._take.__code__

    def send_and_let_go() -> None:
        until(at_the_acquisition, meanwhile="the hold waited for the lock")
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)  # handled by the main thread
        lock.release()

    helper = threading.Thread(target=send_and_let_go, name="sender")
    helper.start()
    ran = []
    try:
        with pytest.raises(Terminated), Deadline(WAIT).holding(lock) as hold:
            ran.append(hold.held)
    finally:
        helper.join(WAIT)
    assert ran == [True]
    assert not lock.locked(), "the lock left taken by the SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is exit_on_sigterm


class HeldAWhile:
    """A lock another thread holds for a while: its first ``refusals`` timed acquisitions
    run out (as each would, the holder still at work), then it is free."""

    def __init__(self, refusals: int, *, signal_in_wait: int | None = None) -> None:
        self.refusals = refusals
        self.signal_in_wait = signal_in_wait  # a signal that comes during the first wait
        self.timeouts: list[float] = []
        self.lock = threading.Lock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self.timeouts.append(timeout)
        if self.signal_in_wait is not None:
            signal.raise_signal(self.signal_in_wait)
            self.signal_in_wait = None
        if self.refusals:
            self.refusals -= 1
            return False
        return self.lock.acquire()

    def release(self) -> None:
        self.lock.release()


@pytest.mark.usefixtures("signals_raise")
def test_a_hold_without_a_deadline_waits_for_a_lock_held_for_a_while_and_takes_it() -> None:
    """``shutdown(timeout=None)``'s holds on the main thread: the lock held by another
    thread, the wait asks every ``ASK_EVERY`` whether a signal came, and takes the lock
    once it is free, however long that is (no deadline to run out)."""
    lock = HeldAWhile(refusals=2)
    with Deadline(None).holding(lock) as hold:  # type: ignore[arg-type]
        assert hold.held
    assert lock.timeouts == [deadline_module.ASK_EVERY] * 3
    assert not lock.lock.locked()


@pytest.mark.usefixtures("signals_raise")
def test_a_signal_while_a_hold_waits_for_a_lock_ends_the_wait_at_the_next_ask() -> None:
    """A SIGTERM that comes while a hold without a deadline waits for a lock another
    thread holds: the wait ends at its next ask (``ASK_EVERY``), nothing held, and the
    handler's ``SystemExit`` comes at once; the block never runs.  (Not asked, the hold
    would wait on for as long as the lock stayed held, then run its block.)"""
    lock = HeldAWhile(refusals=5, signal_in_wait=signal.SIGTERM)
    ran = []
    with pytest.raises(Terminated), Deadline(None).holding(lock) as hold:  # type: ignore[arg-type]
        ran.append(hold.held)
    assert ran == []
    assert lock.timeouts == [deadline_module.ASK_EVERY]
    assert not lock.lock.locked()
    assert signal.getsignal(signal.SIGTERM) is exit_on_sigterm


def test_a_flag_set_stays_set_for_a_later_wait_until_cleared() -> None:
    """As ``threading.Event``: set before anyone waits, a wait returns True at once (the
    drain's wake that came before its wait is not lost), until ``clear``."""
    flag = Flag()
    assert not flag.is_set() and not flag.wait(0)
    flag.set()
    assert flag.is_set() and flag.wait(0)
    flag.clear()
    assert not flag.is_set() and not flag.wait(0)


def test_waiters_are_let_go_by_the_next_wake_once_and_forgotten() -> None:
    """Each waiter (a ``flush``'s, a ``wait_idle``'s) is a lock taken for it; ``wake``
    lets every one go and forgets them, so the next wake lets go only those added since
    (a waiter not let go would wait out its whole timeout)."""
    waiters = Waiters()
    first, second = waiters.waiter(), waiters.waiter()
    assert not first.acquire(blocking=False)  # taken: its owner waits on it
    waiters.wake()
    assert first.acquire(blocking=False) and second.acquire(blocking=False)
    assert not waiters
    third = waiters.waiter()
    waiters.wake()  # the earlier ones, taken again above, are not let go twice
    assert third.acquire(blocking=False) and first.locked() and second.locked()


@pytest.mark.usefixtures("signals_raise")
def test_a_ctrl_c_and_a_sigterm_kept_together_each_reach_their_handler() -> None:
    """Two signals kept by one hold are each handed to their own handler once it lets the
    lock go, even though the first raised: the ``SystemExit`` comes out, the
    ``KeyboardInterrupt`` as its context (as Python runs the second handler while the
    first's exception is on its way)."""
    lock = threading.Lock()
    with pytest.raises(Terminated) as raised, Deadline(WAIT).holding(lock):
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)  # the same signal twice: its handler runs once
    assert isinstance(raised.value.__context__, KeyboardInterrupt)
    assert raised.value.__context__.__context__ is None
    assert not lock.locked()
    assert signal.getsignal(signal.SIGTERM) is exit_on_sigterm
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@contextlib.contextmanager
def interrupted_by(tracer: Any) -> Iterator[None]:
    """The block, run with ``tracer`` on this thread, raises its ``KeyboardInterrupt``."""
    sys.settrace(tracer)
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        sys.settrace(None)


def in_write_stale(frame: FrameType, event: str, arg: Any) -> Any:
    """A tracer: a Ctrl-C at the first line of ``LastWrites._write_stale``."""
    if event == "call":
        return in_write_stale if frame.f_code.co_name == "_write_stale" else None
    if event == "line":
        raise KeyboardInterrupt("Ctrl-C at _write_stale")
    return in_write_stale


@pytest.mark.usefixtures("signals_raise")
def test_a_second_shutdown_writes_the_rows_left_stale_a_ctrl_c_kept_the_first_from() -> None:
    """A one-off run while its store was down left its row stale (the store says it is
    still to run).  A clean shutdown writes it, its last write; a Ctrl-C landing just
    before that write cuts the first shutdown short, and the second one makes it: the
    row says it succeeded.  (Before, the first let the store go in its ``finally``, and
    the second one no longer wrote: a restart ran the one-off again.)"""
    store = FailingStore()
    scheduler = Scheduler(workers=1, clock=FakeClock(T0), store=store)
    scheduler.schedule("once", jobs.noop, OneTime(T0), id="once")
    store.down = True
    scheduler.start()
    assert scheduler.wait_idle(timeout=WAIT)
    assert scheduler.task("once").status is TaskStatus.SUCCEEDED
    row = store.get("once")
    assert row is not None and row.status is TaskStatus.SCHEDULED  # stale
    store.down = False
    with interrupted_by(in_write_stale):
        scheduler.shutdown(timeout=WAIT)
    assert scheduler.shutdown(timeout=WAIT) is True
    row = store.get("once")
    assert row is not None and row == scheduler._core.snapshot(scheduler.task("once"))
    assert row.status is TaskStatus.SUCCEEDED


_CUT_THEN_EXIT = """
import atexit

made = {}
# Registered before lldsched is imported: atexit runs its hooks last in, first out,
# so this one reads the row after lldsched's own hook ran.
atexit.register(lambda: print("row", made["store"].get("once").status.name, flush=True))

import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from lldsched import FakeClock, OneTime, Scheduler, TaskStatus  # noqa: E402
from tests import jobs  # noqa: E402
from tests.harness import FailingStore  # noqa: E402

T0 = 1_767_225_600.0
never = threading.Event()


def hang() -> None:
    never.wait()  # a run that never ends: the exit must not wait for it


store = made["store"] = FailingStore()
scheduler = Scheduler(workers=2, clock=FakeClock(T0), store=store)
scheduler.schedule("once", jobs.noop, OneTime(T0), id="once")
scheduler.schedule("hang", hang, OneTime(T0), id="hang")
store.down = True  # the outage: the rows of both runs are left stale
scheduler.start()
bound = time.monotonic() + 30
once, hung = scheduler.task("once"), scheduler.task("hang")
while once.status is not TaskStatus.SUCCEEDED or not hung.running:
    assert time.monotonic() < bound
    time.sleep(0.01)  # the interval of a bounded poll
store.down = False
print("row", store.get("once").status.name, flush=True)  # stale: still to run
main = threading.main_thread().ident


def ctrl_c() -> None:  # once shutdown() drains (waiting for "hang", for ever)
    while not scheduler._draining:
        time.sleep(0.01)  # the interval of a poll the 60 s of the parent bound
    signal.pthread_kill(main, signal.SIGINT)


threading.Thread(target=ctrl_c, daemon=True).start()
scheduler.shutdown(timeout=None)  # its KeyboardInterrupt ends the script
"""


def test_the_exit_makes_the_last_writes_of_a_shutdown_a_ctrl_c_cut_without_waiting_for_runs() -> (
    None
):
    """A script whose ``shutdown()`` a Ctrl-C cut short mid-drain (a run that never ends
    in flight, a one-off that finished in a store outage left stale) and that ends
    there, as a script does on Ctrl-C: the interpreter's exit writes the stale row, and
    does not wait for the run still in flight.  (Before, nothing made those writes at
    exit: the row said the one-off was still to run, and the next start ran it again.)"""
    done = subprocess.run(
        [sys.executable, "-c", _CUT_THEN_EXIT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,  # the exit waits for no run: a hang fails here
        check=False,
    )
    assert done.stdout.split("\n") == ["row SCHEDULED", "row SUCCEEDED", ""], done.stderr
    assert done.returncode in (130, -signal.SIGINT), done.stderr  # ended by its Ctrl-C
    assert done.stderr.rstrip().endswith("KeyboardInterrupt"), done.stderr


def in_the_first_s_wake(frame: FrameType, event: str, arg: Any) -> Any:
    """A tracer: a Ctrl-C at the start of the ``_shut_down.set()`` that ends the first
    ``shutdown()`` (its ``finally``'s last call: ``_first_over`` is stored, the flag
    left unset)."""
    if (
        event == "call"
        and frame.f_code is Flag.set.__code__
        and frame.f_back is not None
        and frame.f_back.f_code.co_name == "shutdown"
    ):
        raise KeyboardInterrupt("Ctrl-C at the start of set()")
    return None


@pytest.mark.usefixtures("signals_raise")
def test_a_second_shutdown_waiting_on_another_thread_ends_when_a_ctrl_c_cut_the_first_s_wake() -> (
    None
):
    """A second ``shutdown(timeout=None)`` on another thread waits for the first, which
    drains a run on the main thread; a Ctrl-C lands at the start of the first's last
    call, the ``set()`` that wakes the second.  The second goes on all the same, as soon
    as the first has ended, and stops every thread.  (Before, it waited on the flag its
    whole timeout: for ever with ``timeout=None``, only a later call reading
    ``_first_over``.)"""
    gate, running = threading.Event(), threading.Event()

    def block() -> None:
        running.set()
        gate.wait(WAIT)

    scheduler = Scheduler(workers=1).start()
    scheduler.schedule("block", block, OneTime(delay=0), id="block")
    assert running.wait(WAIT)
    second: list[bool] = []
    waiting = threading.Thread(
        target=lambda: second.append(scheduler.shutdown(timeout=None)), daemon=True
    )

    def start_the_second() -> None:
        until(lambda: not scheduler.running, meanwhile="the first shutdown stopped it")
        waiting.start()
        until(lambda: bool(scheduler._shut_down._waiters), meanwhile="the second waited")
        gate.set()  # the run ends, the first's drain with it

    helper = threading.Thread(target=start_the_second, name="second-starter")
    helper.start()
    try:
        with interrupted_by(in_the_first_s_wake):
            scheduler.shutdown(timeout=None)
    finally:
        gate.set()
        helper.join(WAIT)
    assert scheduler._first_over and not scheduler._shut_down.is_set()  # the wake was cut
    waiting.join(WAIT)
    assert not waiting.is_alive(), "the second shutdown still waits for the first"
    assert second == [True]
    assert scheduler.task("block").status is TaskStatus.SUCCEEDED
    assert lock_free(scheduler)


def waiting_on_the_flag(frame: FrameType) -> bool:
    """``frame`` (the main thread's innermost) is the drain's wait to be woken by a
    settled run: in a ``Condition``'s ``wait`` (an ``Event``'s), or at a ``Flag``'s
    ``waiter.acquire``, inside ``_drain``."""
    if frame.f_code.co_name != "wait":
        return False
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    if frame.f_code.co_filename != threading.__file__ and not line.strip().startswith(
        "if waiter.acquire("
    ):
        return False
    while frame.f_back is not None and frame.f_code.co_name != "_drain":
        frame = frame.f_back
    return frame.f_code.co_name == "_drain"


def taking_a_lock_back(frame: FrameType) -> bool:
    """``frame`` (the main thread's innermost) takes a lock back once woken: the event's
    own (a ``Condition``'s ``_acquire_restore``), or the scheduler's (a ``Hold``'s)."""
    return frame.f_code.co_name == "_acquire_restore" or frame.f_code is Deadline._take.__code__


def test_a_real_sigint_as_the_drain_is_woken_leaves_the_worker_settling_unharmed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, ctrl_c: CtrlC
) -> None:
    """A Ctrl-C (a real SIGINT) while ``shutdown()``'s drain, woken by the worker settling
    the run it waits for, takes a lock back, the worker still inside the wake: the
    ``KeyboardInterrupt`` reaches the caller, the worker ends its settle unharmed, and
    a second ``shutdown()`` stops the scheduler.  (Before, the drain waited on a
    ``threading.Event``: the SIGINT cut ``Condition.wait``'s untimed re-acquisition of
    the event's lock, its ``with`` block let go of that lock, which the worker held inside
    ``set()``, and the worker's ``set()`` raised ``RuntimeError`` under the scheduler's
    lock, its settle cut short and logged at ERROR: python/cpython#118433.)"""
    failures: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    main = threading.main_thread()
    assert threading.current_thread() is main
    started, release = threading.Event(), threading.Event()
    parked, go_on = threading.Event(), threading.Event()

    def busy() -> None:
        started.set()
        release.wait(WAIT)

    scheduler = Scheduler(workers=1, clock=FakeClock(T0))
    scheduler.schedule("busy", busy, OneTime(T0), id="busy")

    def waking(frame: FrameType, event: str, arg: Any) -> Any:
        """In the worker: parks at the end of the wake its settle makes while draining,
        still inside the flag's ``set()`` (the flag's own lock held)."""
        if event == "return":
            parked.set()
            go_on.wait(WAIT)
        return waking

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if (
            event == "call"
            and frame.f_code.co_name in ("notify_all", "wake")
            and frame.f_back is not None
            and frame.f_back.f_code.co_name == "set"
            and scheduler._draining
            and not parked.is_set()
        ):
            return waking
        return None

    threading.settrace(tracer)  # the worker's, started by start()
    try:
        scheduler.start()
    finally:
        threading.settrace(None)
    assert started.wait(WAIT)

    def main_frame() -> FrameType:
        return sys._current_frames()[main.ident]  # type: ignore[index]

    def interrupt() -> None:
        until(lambda: waiting_on_the_flag(main_frame()), meanwhile="the drain waited")
        release.set()  # the run ends, and its settle wakes the drain
        assert parked.wait(WAIT)
        until(lambda: taking_a_lock_back(main_frame()), meanwhile="the drain was woken")
        ctrl_c.press(main, bound=WAIT)

    helper = threading.Thread(target=interrupt, name="interrupter")
    helper.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            scheduler.shutdown(timeout=WAIT)
    finally:
        go_on.set()
        release.set()
        helper.join(WAIT)
    assert scheduler.shutdown(timeout=WAIT) is True
    assert failures == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert scheduler.task("busy").status is TaskStatus.SUCCEEDED
    assert scheduler._in_flight == 0
    assert lock_free(scheduler)
