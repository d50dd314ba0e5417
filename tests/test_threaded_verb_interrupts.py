"""A Ctrl-C in the middle of a threaded ``Scheduler``'s verb (Jupyter's "interrupt kernel"
raises ``KeyboardInterrupt`` in the main thread, where a notebook cell's verb runs):
raised by the store inside one of the verb's writes, or landing between two statements
of the verb as a real SIGINT can (injected with ``sys.settrace`` at every line of the
package's frames, tests/interrupting.py), on the in-memory store and on SQLite.

What must hold (docs/decisions/simulation.md, "A Ctrl-C in a threaded scheduler's verb"): the verb
happened whole (the registry, the due queue, the store's rows and the listeners' events
agree, as after the verb uninterrupted) or not at all (as before it), the
``KeyboardInterrupt`` reaches the caller, and the scheduler goes on (its timer and worker
run a task registered after, and ``shutdown()`` stops it); or, where the Ctrl-C landed
inside the verb's own steps, the scheduler says it is torn and refuses every later verb
with a ``SchedulerStateError`` naming the verb that was cut, its reads still answering,
its timer going on and ``shutdown()`` stopping it.

Every line of each verb is swept on the in-memory store, and on SQLite only the lines
run inside one of the store's calls: outside them both engines run the same lines
(checked each time: :func:`lines_to_sweep`).
"""

from __future__ import annotations

import functools
import linecache
import shutil
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    OneTime,
    RetryPolicy,
    Scheduler,
    SchedulerStateError,
    SqliteTaskStore,
    TaskEvent,
    TaskStatus,
)
from lldsched.persistence import TaskStore
from lldsched.threaded.deadline import Deadline
from lldsched.threaded.dispatcher import EventDispatcher
from tests import jobs
from tests.conftest import T0
from tests.interrupting import (
    RAISED,
    STORES,
    CtrlC,
    Interrupter,
    Interrupting,
    InterruptingSqliteStore,
    InterruptingStore,
    disagreements,
    exit_on_sigterm,
)
from tests.memory_folder import memory_folder

WAIT = 30.0  # a bound on each wait, never reached when the scheduler works


class Built:
    """A started scheduler on a ``FakeClock`` at ``T0`` with one worker, a store that can
    raise a Ctrl-C once, and an ``EventLog``: a rate ``c`` with ``d`` depending on it, a
    one-off ``f`` dead-lettered, a rate ``r`` and a rate ``p`` paused.  A SQLite store
    opens a copy of ``empty``, a store file made and closed with nothing in it: making
    the file (its switch to WAL mode, its schema) took most of a build's time."""

    def __init__(self, kind: str, folder: Path, empty: Path) -> None:
        if kind == "memory":
            self.store: Interrupting = InterruptingStore()
        else:
            Built.files += 1
            path = folder / f"tasks-{Built.files}.db"
            shutil.copyfile(empty, path)
            self.store = InterruptingSqliteStore(path)
        self.log = EventLog()
        self.scheduler = Scheduler(
            workers=1, clock=FakeClock(T0), store=self.tasks_store, listeners=[self.log]
        )
        scheduler = self.scheduler
        scheduler.schedule("c", jobs.noop, FixedRate(60), id="c")
        scheduler.schedule("d", jobs.noop, FixedRate(60), id="d", depends_on=["c"])
        once = RetryPolicy(max_attempts=1)
        scheduler.schedule("f", jobs.broken, OneTime(T0), id="f", retry=once)
        scheduler.schedule("r", jobs.noop, FixedRate(100), id="r")
        scheduler.schedule("p", jobs.noop, FixedRate(30), id="p")
        scheduler.pause("p")
        scheduler.start()
        self.settle()
        assert scheduler.task("f").status is TaskStatus.FAILED

    files = 0

    @property
    def tasks_store(self) -> TaskStore:
        store = self.store
        assert isinstance(store, TaskStore)
        return store

    def settle(self) -> None:
        assert self.scheduler.wait_idle(timeout=WAIT)
        assert self.scheduler._dispatcher.flush(timeout=WAIT)

    def close(self) -> None:
        self.scheduler.shutdown(timeout=WAIT)
        close = getattr(self.store, "close", None)
        if close is not None:
            close()


VERBS: dict[str, Callable[[Scheduler], object]] = {
    "schedule": lambda s: s.schedule("n", jobs.noop, FixedRate(50), id="n"),
    "replace": lambda s: s.schedule("r", jobs.noop, FixedRate(70), id="r", replace_existing=True),
    "reschedule": lambda s: s.reschedule("r", FixedRate(40)),
    "modify": lambda s: s.modify("c", priority=1, timeout=3),
    "run_now": lambda s: s.run_now("r"),
    "pause": lambda s: s.pause("c"),
    "resume": lambda s: s.resume("p"),
    "cancel": lambda s: s.cancel("c"),
    "remove": lambda s: s.remove("r"),
    "redrive": lambda s: s.redrive("f"),
    "shutdown": lambda s: s.shutdown(timeout=WAIT),
}
SUBJECT = {"schedule": "n", "replace": "r", "reschedule": "r", "modify": "c", "run_now": "r",
           "pause": "c", "resume": "p", "cancel": "c", "remove": "r", "redrive": "f"}  # fmt: skip
KINDS = ["memory", "sqlite"]


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    """The folder of this module's SQLite files (each build's its own, numbered): in
    memory, on ``/dev/shm`` (a tmpfs), where the machine has one, else a temporary
    folder on disk; removed after the module.  What the sweeps check on SQLite is the
    package's lines inside its calls, which the disk does not change.  On a disk each
    build's file synced its new write-ahead log and the folder at its first write, and
    the log and the file as it closed: most of a SQLite build's time, 30 to 55 ms a
    build and its close on this loaded machine, 10 ms in memory (about 300 builds)."""
    with memory_folder("lldsched-verb-interrupts-") as name:
        yield Path(name)


@pytest.fixture(scope="module")
def empty(folder: Path) -> Path:
    """A SQLite store's file as a new store leaves it, closed: each build opens a copy."""
    path = folder / "empty.db"
    SqliteTaskStore(path).close()
    return path


@pytest.fixture
def made(folder: Path, empty: Path) -> Iterator[Callable[[str], Built]]:
    built: list[Built] = []

    def make(kind: str) -> Built:
        built.append(Built(kind, folder, empty))
        return built[-1]

    yield make
    for one in built:
        one.close()


def state(scheduler: Scheduler) -> tuple[Any, ...]:
    """What the verb changes: every task's snapshot, the live entries of the due queue,
    the dead letter."""
    core = scheduler._core
    snapshots = {task_id: core.snapshot(task) for task_id, task in core.tasks.items()}
    queued = sorted(
        (task.id, entry[0])
        for entry in scheduler._queue.entries()
        if (task := scheduler._queue.live(entry)) is not None
    )
    return snapshots, queued, core.dead_letter()


def heard(log: EventLog, since: int) -> list[tuple[str, str | None, str]]:
    return [
        (e.task_id, None if e.previous is None else e.previous.value, e.status.value)
        for e in log.events[since:]
    ]


def not_whole(built: Built) -> list[str]:
    """What disagrees (nothing: []): a runnable task not queued, or queued when it should
    not be, or at another instant than it says; the dead letter and the FAILED tasks; a
    row that is not the task's (and not marked stale, to be written again)."""
    scheduler = built.scheduler
    queue = scheduler._queue
    return disagreements(scheduler._core, queue, queue.entries(), built.tasks_store)


def references(make: Callable[[str], Built], kind: str, verb: str) -> tuple[Any, Any, Any]:
    """The state after the verb made whole, and without it; the events it published."""
    done = make(kind)
    before = len(done.log.events)
    VERBS[verb](done.scheduler)
    done.settle()
    undone = make(kind)
    undone.settle()
    return state(done.scheduler), state(undone.scheduler), heard(done.log, before)


def goes_on(built: Built, verb: str) -> None:
    """A task registered after runs, and ``shutdown()`` stops the scheduler."""
    scheduler = built.scheduler
    if verb != "shutdown":
        scheduler.schedule("after", jobs.noop, OneTime(T0), id="after")
        built.settle()
        assert scheduler.task("after").status is TaskStatus.SUCCEEDED
    assert scheduler.shutdown(timeout=WAIT) is True
    assert not scheduler.running and scheduler._pool.alive == 0


def refuses(built: Built, verb: str) -> None:
    """Torn: every later verb refused naming the verb cut; the reads answer, the timer
    goes on, ``shutdown()`` stops it."""
    scheduler = built.scheduler
    named = verb.replace("replace", "schedule")
    with pytest.raises(SchedulerStateError, match=f"in the middle of its verb {named}"):
        scheduler.schedule("after", jobs.noop, OneTime(T0), id="after")
    with pytest.raises(SchedulerStateError, match=f"in the middle of its verb {named}"):
        scheduler.pause("r" if verb != "remove" else "c")
    scheduler.tasks(), scheduler.records(), scheduler.metrics()  # the reads answer
    assert scheduler.running
    assert scheduler.shutdown(timeout=WAIT) is True
    assert not scheduler.running and scheduler._pool.alive == 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("written", [True, False], ids=["written", "unwritten"])
@pytest.mark.parametrize("verb", [verb for verb in VERBS if verb != "shutdown"])
def test_a_stores_ctrl_c_in_a_verbs_write_leaves_it_whole_or_undone(
    made: Callable[[str], Built], kind: str, verb: str, written: bool
) -> None:
    """The store raises the Ctrl-C in the verb's first write of its task, having made the
    write or not: the verb is whole (a row not written marked stale, written again) or,
    a registration or a change of definition the store refused, not made at all; the
    Ctrl-C reaches the caller and the scheduler goes on."""
    done, undone, events = references(made, kind, verb)
    built = made(kind)
    before = len(built.log.events)
    built.store.armed, built.store.written = SUBJECT[verb], written
    with pytest.raises(KeyboardInterrupt, match="raised inside"):
        VERBS[verb](built.scheduler)
    built.settle()
    assert not_whole(built) == []
    now = state(built.scheduler)
    assert now in (done, undone)
    assert heard(built.log, before) == (events if now == done else [])
    goes_on(built, verb)


def interrupted(built: Built, verb: str, at: int | None) -> Interrupter:
    interrupter = Interrupter(at)
    sys.settrace(interrupter)
    try:
        VERBS[verb](built.scheduler)
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
    return interrupter


class Tracer(Interrupter):
    """Counts the lines as ``Interrupter(None)`` does, keeping each: where it is (file,
    function, line, instruction) and whether one of the store's frames is under it (the
    store called the package's code: its codec's checks, ``persistence.finished``)."""

    def __init__(self) -> None:
        super().__init__(None)
        self.seen: list[tuple[tuple[str, str, int, int], bool]] = []

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        counted = self.lines
        tracer = super().__call__(frame, event, arg)
        if self.lines != counted:
            code = frame.f_code
            where = (code.co_filename, code.co_name, frame.f_lineno, frame.f_lasti)
            under: FrameType | None = frame
            while under is not None and not under.f_code.co_filename.startswith(STORES):
                under = under.f_back
            self.seen.append((where, under is not None))
        return tracer


def traced(built: Built, verb: str) -> Tracer:
    tracer = Tracer()
    sys.settrace(tracer)
    try:
        VERBS[verb](built.scheduler)
    finally:
        sys.settrace(None)
    return tracer


def lines_to_sweep(make: Callable[[str], Built], kind: str, verb: str) -> list[int]:
    """The lines (numbered as :class:`Interrupter` counts them) to raise the Ctrl-C at:
    every line of the verb on the in-memory store; on SQLite, the lines run inside one of
    the store's calls (its codec's checks of a definition, ``persistence.finished``).

    Why the other lines on SQLite are the in-memory store's, already swept: with the
    store's own calls left out, SQLite runs the same lines in the same order (asserted
    here, each time: a branch on the store's kind outside its calls fails it, and then
    the sweep must cover those lines too).  At each of them every store call made before
    has returned, whole or raised; an unshared SQLite store keeps no transaction open and
    no lock held between calls (each call's transaction ends in it: ``_using``), so what
    a later read or write finds is what the calls that returned wrote, as in memory (the
    store contract, tests/test_store_contract.py).  The checks after the Ctrl-C (the
    registry, the due queue, the rows by ``load_all``, the events, a later registration,
    the shutdown) then run the same code on the same state.  Inside a store call they do
    differ: a Ctrl-C raised inside SQLite's ``save``, before its write or after, is
    SQLite's own case, so those lines are swept on SQLite; the in-memory store's own
    (its check of the id ``get`` and ``delete`` take, ``storechecks.id_asked``) are
    among every line swept on it."""
    if kind == "memory":
        return list(range(1, traced(make("memory"), verb).lines + 1))
    memory = [where for where, inside in traced(make("memory"), verb).seen if not inside]
    sqlite = traced(make("sqlite"), verb).seen
    outside = [where for where, inside in sqlite if not inside]
    assert outside == memory, "outside its calls, SQLite ran other lines than memory did"
    return [at for at, (_, inside) in enumerate(sqlite, 1) if inside]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("verb", [verb for verb in VERBS if verb != "shutdown"])
def test_a_ctrl_c_anywhere_in_a_verb_leaves_it_whole_or_refusing_further_verbs(
    made: Callable[[str], Built], kind: str, verb: str
) -> None:
    """A Ctrl-C at each line of the verb (:func:`lines_to_sweep`: on SQLite, those its
    calls run)."""
    done, undone, events = references(made, kind, verb)
    lines = lines_to_sweep(made, kind, verb)
    assert len(lines) > (10 if kind == "memory" else 0)
    outcomes = []
    refused = 0
    for at in lines:
        built = made(kind)
        before = len(built.log.events)
        interrupter = interrupted(built, verb, at)
        if getattr(built.scheduler._core, "under_way", None) is not None:
            refused += 1
            refuses(built, verb)
        else:
            built.settle()
            now = state(built.scheduler)
            said = heard(built.log, before)
            outcomes.append(
                (
                    interrupter.where,
                    not_whole(built),
                    now in (done, undone),
                    said == (events if now == done else []),
                )
            )
            goes_on(built, verb)
        built.close()
    assert [outcome for outcome in outcomes if outcome[1:] != ([], True, True)] == []


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Python's own SIGINT handler in place (as in a notebook's cell or a script): a
    Ctrl-C raises ``KeyboardInterrupt`` in the main thread."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def cut(
    call: Callable[[], object], at: int | None, signum: int = signal.SIGINT
) -> tuple[Interrupter, bool]:
    """``call()`` with a Ctrl-C (or another signal, handed to its handler as a real one
    is) at its ``at``-th line (none: counted); whether what it raised reached the
    caller."""
    interrupter = Interrupter(at, signum)
    sys.settrace(interrupter)
    try:
        call()
    except RAISED[signum]:
        return interrupter, True
    finally:
        sys.settrace(None)
    return interrupter, False


def lock_free(scheduler: Scheduler) -> bool:
    """The scheduler's lock can be taken (within ``WAIT``, never reached when it is free)."""
    if not scheduler._lock.acquire(timeout=WAIT):
        return False
    scheduler._lock.release()
    return True


SIGNALS = [signal.SIGINT, signal.SIGTERM]
"""A Ctrl-C, and a SIGTERM whose handler calls ``sys.exit`` (a service's)."""


@pytest.mark.usefixtures("ctrl_c_raises", "sigterm_exits")
@pytest.mark.parametrize("signum", SIGNALS, ids=["sigint", "sigterm"])
@pytest.mark.parametrize("drain", [True, False], ids=["drain", "drop"])
def test_a_ctrl_c_anywhere_in_shutdown_leaves_the_lock_free_and_a_second_shutdown_stops_it(
    made: Callable[[str], Built], drain: bool, signum: int
) -> None:
    """A Ctrl-C at every line ``shutdown()`` runs on the caller's thread, as a real SIGINT
    can land (and a SIGTERM whose handler calls ``sys.exit``): it reaches the caller, the
    scheduler's lock is not left taken (the timer, the workers, every later verb and a
    second shutdown would wait on it for good), a second ``shutdown()`` stops every
    thread, and what is left due is queued and agrees with its rows, as after a shutdown
    uninterrupted.  (Before, a Ctrl-C as a timed acquisition returned left the lock
    taken; one just after the first took it left the second waiting for a first that
    had ended; one in the pool's close left its workers without their sentinels.  And a
    ``Hold`` kept SIGINT alone: the SIGTERM's ``SystemExit`` as a timed acquisition
    returned left the lock taken, docs/decisions/simulation.md, "Any signal a Python handler raises
    from, not only Ctrl-C".)"""
    name = signal.Signals(signum).name
    first = made("memory").scheduler
    counted, _ = cut(functools.partial(first.shutdown, drain=drain, timeout=WAIT), None)
    assert counted.lines > 100
    for at in range(1, counted.lines + 1):
        built = made("memory")
        scheduler = built.scheduler
        interrupter, reached = cut(
            functools.partial(scheduler.shutdown, drain=drain, timeout=WAIT), at, signum
        )
        where = interrupter.where
        assert reached, f"the {name} at {where} did not reach the caller"
        assert lock_free(scheduler), f"the lock left taken by a {name} at {where}"
        assert scheduler.shutdown(timeout=WAIT) is True, f"after a {name} at {where}"
        assert not scheduler.running and scheduler._pool.alive == 0, where
        assert not_whole(built) == [], where
        assert signal.getsignal(signal.SIGTERM) is exit_on_sigterm, where
        built.close()


@pytest.mark.usefixtures("ctrl_c_raises", "sigterm_exits")
@pytest.mark.parametrize("signum", SIGNALS, ids=["sigint", "sigterm"])
def test_a_ctrl_c_anywhere_in_a_bounded_metrics_leaves_the_lock_free(
    made: Callable[[str], Built], signum: int
) -> None:
    """``metrics(timeout=...)`` takes the lock with a timeout too: a Ctrl-C (or a SIGTERM
    whose handler calls ``sys.exit``) at any of its lines reaches the caller and leaves
    the lock free (before, one as the acquisition returned left it taken)."""
    built = made("memory")
    scheduler = built.scheduler
    counted, _ = cut(lambda: scheduler.metrics(timeout=WAIT), None)
    assert counted.lines > 10
    for at in range(1, counted.lines + 1):
        interrupter, reached = cut(lambda: scheduler.metrics(timeout=WAIT), at, signum)
        assert reached, f"the signal at {interrupter.where} did not reach the caller"
        assert lock_free(scheduler), f"the lock left taken by a signal at {interrupter.where}"
    goes_on(built, "metrics")


@pytest.mark.usefixtures("ctrl_c_raises")
def test_a_real_sigint_while_a_hold_has_the_lock_is_raised_once_it_is_let_go() -> None:
    """A SIGINT (a real one, ``signal.raise_signal``) while a ``Hold`` has the lock on the
    main thread is kept: the block runs to its end, and the ``KeyboardInterrupt`` is
    raised as it ends, the lock let go and Python's handler back in place."""
    lock = threading.Lock()
    after = []
    with pytest.raises(KeyboardInterrupt), Deadline(WAIT).holding(lock) as hold:
        assert hold.held
        signal.raise_signal(signal.SIGINT)
        after.append("the block went on")
    assert after == ["the block went on"]
    assert not lock.locked()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("ctrl_c_raises", "sigterm_exits")
def test_a_hold_runs_no_line_for_each_signal_left_without_a_python_handler() -> None:
    """A ``Hold`` on the main thread reads the handler of every valid signal (62 on Linux)
    and keeps those with a Python handler (here SIGINT's, SIGTERM's and any the test
    runner put in place): no line of it runs once for each of the others, which raise
    nothing.  (Before, a Python loop over every signal ran 389 of a hold's 436 lines:
    1,167 of the 1,525 lines a shutdown runs, each one more build and cut in the sweep
    of a Ctrl-C at every line above.)"""
    python = [s for s in signal.valid_signals() if callable(signal.getsignal(s))]
    assert signal.SIGTERM in python and len(python) < len(signal.valid_signals()) // 2
    lock = threading.Lock()

    def hold() -> None:
        with Deadline(WAIT).holding(lock) as hold:
            assert hold.held

    tracer = Tracer()
    sys.settrace(tracer)
    try:
        hold()
    finally:
        sys.settrace(None)
    runs = Counter((file, line) for (file, _, line, _), _ in tracer.seen)
    assert max(runs.values()) <= len(python) + 2, runs.most_common(3)
    assert not lock.locked()


def taking_the_lock_back(frame: FrameType) -> bool:
    """``frame`` (a thread's innermost) is at the scheduler's lock, taking it back after a
    wait: in a ``Condition``'s ``_acquire_restore``, or at a ``with self._lock:``."""
    if frame.f_code.co_name == "_acquire_restore":
        return True
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    return line.strip() == "with self._lock:"


def until(what: Callable[[], object], *, meanwhile: str) -> None:
    """Poll until ``what()`` (within ``WAIT``, never reached when the scheduler works)."""
    bound = time.monotonic() + WAIT
    while not what():
        assert time.monotonic() < bound, f"never {meanwhile}"


def test_a_real_sigint_as_wait_drained_takes_the_lock_back_leaves_it_to_its_holder(
    ctrl_c: CtrlC,
) -> None:
    """A Ctrl-C (a real SIGINT, to the main thread) while ``wait_drained()`` takes the
    scheduler's lock back after a wake, another thread holding it: the
    ``KeyboardInterrupt`` reaches the caller, the lock stays its holder's (who lets it go
    without error), and the scheduler goes on.  (Before, it waited with
    ``Condition.wait``, whose untimed re-acquisition the SIGINT cut: its ``with`` block
    then let go of the lock the other thread held, which raised ``RuntimeError`` as it
    let it go in turn.)"""
    scheduler = Scheduler(workers=1, clock=FakeClock(T0))
    scheduler.schedule("later", jobs.noop, OneTime(T0 + 3600), id="later")
    scheduler.start()
    main = threading.main_thread()
    assert threading.current_thread() is main
    interrupted = threading.Event()
    holder: dict[str, object] = {}

    def hold_the_lock_and_wake() -> None:
        until(lambda: scheduler._idle_waiters, meanwhile="waited")  # the caller waits
        with scheduler._lock:
            scheduler._notify_idle()  # as a settled run does: the caller takes the lock back
            until(
                lambda: taking_the_lock_back(sys._current_frames()[main.ident]),  # type: ignore[index]
                meanwhile="took the lock back",
            )
            ctrl_c.press(main, bound=WAIT)
            interrupted.wait(WAIT)
            holder["held when interrupted"] = scheduler._lock.locked()
        holder["let go"] = True

    helper = threading.Thread(target=hold_the_lock_and_wake, name="holder")
    helper.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            scheduler.wait_drained(timeout=WAIT)
    finally:
        interrupted.set()
        helper.join(WAIT)
    assert holder == {"held when interrupted": True, "let go": True}
    assert lock_free(scheduler)
    scheduler.cancel("later")
    assert scheduler.wait_drained(timeout=WAIT)
    assert scheduler.shutdown(timeout=WAIT) is True
    assert signal.getsignal(signal.SIGINT) == ctrl_c.handle  # the handler back in place


def waiting_to_be_woken(frame: FrameType) -> bool:
    """``frame`` (a thread's innermost) waits to be woken: in a ``Condition``'s ``wait``,
    or at a ``waiter.acquire(timeout=...)``."""
    if frame.f_code.co_name == "wait" and frame.f_code.co_filename == threading.__file__:
        return True
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    return line.strip().startswith("waiter.acquire(timeout=")


def test_a_real_sigint_as_a_flush_takes_the_lock_back_leaves_it_to_the_delivery_thread(
    ctrl_c: CtrlC,
) -> None:
    """The same in the event dispatcher's ``flush()`` (``wait_idle()`` waits there too):
    a Ctrl-C while it takes the dispatcher's lock back from the delivery thread, which
    woke it and holds the lock still, reaches the caller and leaves the lock the
    delivery thread's, which goes on.  (Before, ``flush()`` waited with
    ``Condition.wait_for``: its ``with`` let go of the delivery thread's lock, and the
    delivery thread's next wait raised ``RuntimeError``.)"""
    main = threading.main_thread()
    assert threading.current_thread() is main

    def main_frame() -> FrameType:
        """The main thread's innermost frame, once inside ``flush()`` (else its root)."""
        frame = innermost = sys._current_frames()[main.ident]  # type: ignore[index]
        while frame.f_back is not None and frame.f_code.co_name != "flush":
            frame = frame.f_back
        return innermost if frame.f_code.co_name == "flush" else frame

    parked, go_on, interrupted = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    class Parking(threading.Condition):
        """The delivery thread's condition: its first wait, once it emptied the backlog
        and woke ``flush()`` (holding the lock), waits for the test first."""

        def wait(self, timeout: float | None = None) -> bool:
            if threading.current_thread() is not main and not parked.is_set():
                parked.set()
                assert go_on.wait(WAIT)
            try:
                return super().wait(timeout)
            except RuntimeError as error:  # the lock it held let go by another thread
                seen["delivery thread"] = error
                raise

    def listener(event: TaskEvent) -> None:  # lets the backlog empty once flush() waits
        until(lambda: waiting_to_be_woken(main_frame()), meanwhile="flush() waited")

    dispatcher = EventDispatcher()
    dispatcher._cond = Parking(dispatcher._lock)
    dispatcher.add(listener)
    # queued before the thread starts: its first wait comes once it was delivered
    dispatcher.publish(TaskEvent("task-1", "t", TaskStatus.SCHEDULED, TaskStatus.RUNNING, 0.0))
    dispatcher.start()

    def interrupt() -> None:
        assert parked.wait(WAIT)
        until(lambda: taking_the_lock_back(main_frame()), meanwhile="flush() took the lock back")
        ctrl_c.press(main, bound=WAIT)
        interrupted.wait(WAIT)
        seen["held when interrupted"] = dispatcher._lock.locked()
        go_on.set()

    helper = threading.Thread(target=interrupt, name="interrupter")
    helper.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            dispatcher.flush(WAIT)
    finally:
        interrupted.set()
        helper.join(WAIT)
        go_on.set()
    assert seen == {"held when interrupted": True}
    dispatcher.publish(TaskEvent("task-1", "t", TaskStatus.RUNNING, TaskStatus.SUCCEEDED, 1.0))
    assert dispatcher.flush(WAIT) is True
    dispatcher.close(WAIT)
    assert dispatcher.thread is not None and not dispatcher.thread.is_alive()
