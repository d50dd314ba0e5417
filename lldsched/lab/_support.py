"""What every experiment of the lab shares: observable clocks and conditions, a gate,
bounded waits, and a capture of the package's log.

Nothing here changes how the runtime behaves: an :class:`ObservedClock` is a
:class:`~lldsched.clock.FakeClock` that also counts the timer's waits, a
:class:`CountingCondition` is a ``threading.Condition`` that also counts the threads
parked in it.  They are the lab's observation points, so an experiment can wait,
boundedly, for "the timer is parked" instead of sleeping.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from lldsched import checks
from lldsched.clock import FakeClock
from lldsched.errors import shown

if TYPE_CHECKING:
    from lldsched.threaded.scheduler import Scheduler

__all__ = [
    "LAB_MOST",
    "LAB_WAIT_MOST",
    "CountingCondition",
    "Gate",
    "ObservedClock",
    "VariantError",
    "captured_log",
    "cpu_clock",
    "cpu_time",
    "done_or_stalled",
    "eventually",
    "lab_type",
    "lab_wait",
    "lost",
    "median",
    "middle_half",
    "no_collection",
    "running",
    "scheduler_variant",
    "several",
    "timer_parked",
    "whole_count",
]

VARIANT_PATIENCE = 5.0
"""Real seconds an experiment gives a variant to do what every variant must (run a task
the fake clock has made due, deliver an event, park its workers): the real runtime
takes milliseconds, so running out of them is the variant's fault, said as a
:class:`VariantError`."""


class VariantError(RuntimeError):
    """A variant an experiment was given broke what every variant keeps: it lost a task
    (never ran it, not even late), its dispatcher never delivered an event, its workers
    never parked, its ``shutdown`` raised or hung.  Said in the lab's words and naming
    the variant, instead of a hang on the scheduler's lock or a traceback from deep in
    the runtime."""


def cpu_clock(platform: str = sys.platform) -> Callable[[], float]:
    """The clock an experiment times its own work with, on ``platform``: this thread's
    CPU time (``time.thread_time``), so other load on the machine is not counted; on
    Windows ``time.perf_counter``, because there ``thread_time`` ticks every 15.6 ms
    (``GetThreadTimes``) and work of microseconds reads 0 s (a cancel-cost ratio would
    divide by zero)."""
    return time.perf_counter if platform == "win32" else time.thread_time


cpu_time = cpu_clock()
"""This platform's :func:`cpu_clock`."""


LAB_MOST = 1_000_000
"""The largest count an experiment takes unless its own is smaller (:func:`whole_count`):
ten times the largest heap the notebooks measure (100,000 entries).  A count is work
done, often in real time, so a mistyped ``10**9`` ran for hours (or days) instead of
being refused."""


def whole_count(name: str, value: int, *, at_most: int = LAB_MOST) -> int:
    """``value``, a count an experiment is given (entries in a heap, timers, cancels), if
    it is a whole number >= 1 and <= ``at_most``; else ``ValueError`` naming it (a heap
    of 0 would divide by zero, 2.5 entries mean nothing, and a count past ``at_most``
    would run for hours: ``"samples must be a whole number <= 1,000 (an experiment is
    sized to run in minutes), got 1000000"``).  ``at_most``: the experiment's own bound,
    where a unit of its count costs real time (a sample, an hour simulated)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {shown(value)}")
    if value > at_most:
        raise ValueError(
            f"{name} must be a whole number <= {at_most:,} (an experiment is sized to run "
            f"in minutes), got {shown(value)}"
        )
    return value


def lab_seconds(
    name: str, value: float, *, above: float | None = None, at_least: float | None = None
) -> float:
    """``value``, seconds an experiment is given (a poll interval, a listener's delay), if
    finite and within the bound; else ``ValueError`` naming it, raised before anything is
    measured (a negative poll interval killed the timer thread, and the learner read that
    the timer had died)."""
    return checks.seconds(value, name=name, above=above, at_least=at_least, error=ValueError)


def lab_type(name: str, value: object, base: type, expected: str) -> None:
    """Nothing if ``value`` is ``base`` or a subclass of it (a variant an experiment is
    given); else ``TypeError`` naming it and what was ``expected`` (an experiment that
    reads the lab's observation points fails on anything else, with an
    ``AttributeError`` or a bare ``AssertionError`` that names nothing)."""
    if not (isinstance(value, type) and issubclass(value, base)):
        raise TypeError(f"{name} must be {expected}, got {value!r}")


def done_or_stalled(done: Callable[[], bool], clock: ObservedClock, scheduler: Scheduler) -> bool:
    """Whether ``done()`` came to hold: wait for it at most :data:`VARIANT_PATIENCE`
    seconds, and no longer once ``clock`` saw the timer stall (the variant lost a task)
    or the timer thread died (``running`` False): then it will not come."""
    eventually(
        lambda: done() or clock.stalled is not None or not scheduler.running, VARIANT_PATIENCE
    )
    return done()


def timer_parked(clock: ObservedClock, scheduler: Scheduler) -> bool:
    """Whether the timer parked (waited on ``clock``): wait for it at most
    :data:`VARIANT_PATIENCE` seconds, and no longer once the timer thread died
    (``running`` False: a variant's queue raised in it, and it will never park; the
    experiment then says what killed it, at once instead of after the whole patience)."""
    eventually(lambda: clock.waits > 0 or not scheduler.running, VARIANT_PATIENCE)
    return clock.waits > 0


def lost(variant: object, what: str, clock: ObservedClock) -> VariantError:
    """The error for a ``variant`` that lost what the experiment waited for: ``what`` (a
    task that "never ran ..."), and, if ``clock`` saw the timer stall on a passed
    instant, what its queue did wrong."""
    name = getattr(variant, "__name__", repr(variant))
    stall = (
        ""
        if clock.stalled is None
        else f" (its queue's next_due said an entry was due at {clock.stalled:g} s, and its "
        "pop_due handed out nothing)"
    )
    return VariantError(
        f"{name}: {what}{stall}.  A variant may run a task late or early, never lose it"
    )


def scheduler_variant(name: str, value: object) -> None:
    """Nothing if ``value`` is :class:`~lldsched.threaded.scheduler.Scheduler` or a
    subclass (a variant is the real scheduler with a collaborator swapped); else
    ``TypeError`` naming it and saying how a queue, a pool or a dispatcher of one's own
    plugs in (a queue class passed as it was refused by the scheduler's constructor:
    "TaskQueue.__init__() got an unexpected keyword argument 'workers'")."""
    from lldsched.threaded.scheduler import Scheduler

    lab_type(
        name,
        value,
        Scheduler,
        "a Scheduler class (a queue, pool or dispatcher of your own plugs in as "
        "`class Mine(Scheduler): queue_type = YourQueue`, or pool_type, dispatcher_type)",
    )


def several(name: str, values: object) -> None:
    """Nothing if ``values`` is a collection of values (a tuple, a list); else
    ``TypeError`` naming it and showing the one-value tuple (``measure_polling(0.01)``
    read "'float' object is not iterable")."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a tuple of values, e.g. ({values!r},), got {values!r}")


LAB_WAIT_MOST = 60.0
"""The longest real wait an experiment takes in one parameter (:func:`lab_wait`): a
minute.  The defaults are milliseconds to a second (a poll every 1 ms to 100 ms, a
listener's 5 ms, a patience of 1 s, an idle window of 0.5 s), so a minute is past
anything a learner means; a mistyped ``idle=10**9`` waited 31 years, a poll interval of
``1e6`` s hung the scheduler's shutdown (the polling timer sleeps it out, deaf to the
notify), before anything was said."""


def lab_wait(
    name: str, value: float, *, above: float | None = None, at_least: float | None = None
) -> float:
    """``value``, real seconds an experiment waits (an idle window, a poll interval, a
    listener's delay, a patience), as :func:`lab_seconds` takes it and at most
    :data:`LAB_WAIT_MOST`; else ``ValueError`` naming it and the bound."""
    seconds = lab_seconds(name, value, above=above, at_least=at_least)
    if seconds > LAB_WAIT_MOST:
        raise ValueError(
            f"{name} must be at most {LAB_WAIT_MOST:g} real seconds (an experiment is sized "
            f"to run in minutes), got {shown(value)}"
        )
    return seconds


def patience_seconds(value: float) -> float:
    """``value``, the real seconds an experiment gives a run that may not come, if finite,
    > 0 and at most :data:`LAB_WAIT_MOST`; else ``ValueError`` naming it (``Event.wait``
    takes a negative or NaN timeout as 0, and the real variant's run read as "not in
    time"; the real variant of :func:`~lldsched.lab.timer.run_early_on_spurious_wakeup`
    waits its whole patience)."""
    return lab_wait("patience", value, above=0)


class ObservedClock(FakeClock):
    """A :class:`FakeClock` that counts the timer's waits, so a caller can wait for the
    timer to park, and that can wake the timer without moving time (a spurious wake-up).

    It also notices a queue that lost a task: the real timer waits only for an instant
    still ahead (it hands out what is due first), so a wait for one already passed means
    the queue's ``next_due`` named a due head its ``pop_due`` did not hand out.  A
    FakeClock returns at once from such a wait, and the timer spun on the scheduler's
    lock, starving every other thread (the lab hung); this clock records the instant in
    ``stalled`` and lets go of the lock for a moment of real time instead."""

    STALL_PAUSE = 0.01
    """Real seconds the timer is held, lock released, on a wait for a passed instant."""

    def __init__(self, start: float = 0.0) -> None:
        super().__init__(start)
        # Guards waits and stalled; notified on every wait.  Taken inside the scheduler's lock
        # (the timer holds its condition when it calls wait), never the other way round.
        self._parks = threading.Condition(threading.Lock())
        self.waits = 0
        self.stalled: float | None = None  # a due instant the queue did not hand out

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        passed = deadline is not None and deadline <= self.now()
        with self._parks:
            self.waits += 1
            if passed:
                self.stalled = deadline
            self._parks.notify_all()
        if passed:
            condition.wait(self.STALL_PAUSE)
            return
        super().wait(condition, deadline)

    def parked(self, *, more_than: int = 0, timeout: float = 5.0) -> bool:
        """Wait (at most ``timeout`` s) until the timer has waited more than ``more_than``
        times.  The timer holds the scheduler's lock until it is really parked, so
        anything the caller does under that lock next happens after it."""
        with self._parks:
            return self._parks.wait_for(lambda: self.waits > more_than, timeout)

    def spurious_wakeup(self) -> None:
        """Notify every condition the timer waited on, without moving time."""
        self._notify_all()


class CountingCondition(threading.Condition):
    """A ``threading.Condition`` that counts the threads parked in it (same semantics)."""

    def __init__(self, lock: threading.Lock | threading.RLock | None = None) -> None:
        super().__init__(lock)
        # Guards parked; notified when a thread parks.  Taken inside the condition's
        # own lock (wait is called with it held), never the other way round.
        self._seen = threading.Condition(threading.Lock())
        self.parked = 0

    def wait(self, timeout: float | None = None) -> bool:
        with self._seen:
            self.parked += 1
            self._seen.notify_all()
        try:
            return super().wait(timeout)
        finally:
            with self._seen:
                self.parked -= 1

    def wait_parked(self, count: int, timeout: float = 5.0) -> bool:
        """Wait (at most ``timeout`` s) until ``count`` threads are parked here."""
        with self._seen:
            return self._seen.wait_for(lambda: self.parked >= count, timeout)


class Gate:
    """Actions that block until :meth:`open` (never longer than ``limit`` seconds), and
    an event set when the first of them has entered."""

    def __init__(self, limit: float = 10.0) -> None:
        self.limit = limit
        self.entered = threading.Event()
        self._open = threading.Event()

    def hold(self) -> None:
        self.entered.set()
        self._open.wait(self.limit)

    def open(self) -> None:
        self._open.set()


def eventually(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """True as soon as ``predicate()`` holds; False if ``timeout`` seconds pass first.

    For states no event announces (a thread that has died); everything else waits
    on an event or a condition.
    """
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        pause.wait(0.001)
    return True


class _Collect(logging.Handler):
    def __init__(self, into: list[logging.LogRecord]) -> None:
        super().__init__()
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record)


@contextmanager
def captured_log() -> Iterator[list[logging.LogRecord]]:
    """Collect what the ``lldsched`` logger says (a broken variant is noisy by design: a
    dying timer logs its death once, and raises nothing further).  A thread's exception
    that escapes is left to ``threading.excepthook``: it is no variant's design."""
    logger = logging.getLogger("lldsched")
    records: list[logging.LogRecord] = []
    handler = _Collect(records)
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


@contextmanager
def running(scheduler: Scheduler) -> Iterator[None]:
    """Start ``scheduler`` and shut it down after the block, as every experiment on a
    variant does.  If the block raised, the shutdown does not drain (a lost task held a
    drain for its whole timeout) and the block's error stands (the variant's method,
    raising again in the drain, buried it).  A timer thread the variant killed is a
    :class:`VariantError` whose cause is what killed it, the variant's own traceback,
    instead of "cannot wait_idle(): the scheduler's timer thread died" or "the task
    never ran".  What the package logged meanwhile is logged again afterwards."""
    from lldsched.errors import SchedulerStateError
    from lldsched.lab.lockwatch import HeldTheLock, LockWatch

    log: list[logging.LogRecord] = []
    watch = LockWatch(scheduler, VARIANT_PATIENCE)  # a variant holding the lock for good
    try:
        with captured_log() as log:
            scheduler.start()
            watch.start()
            try:
                yield
            except BaseException as error:
                watch.close()
                try:
                    scheduler.shutdown(drain=False)
                except Exception as also:  # the block's error is the one to read
                    error.add_note(f"(and shutdown() then raised {also!r})")
                death = next(filter(None, map(_timer_death, log)), None)
                if isinstance(error, SchedulerStateError | VariantError) and death is not None:
                    if isinstance(death, HeldTheLock):
                        raise VariantError(
                            f"{type(scheduler).__name__}: {watch.held_in} held the "
                            f"scheduler's lock {VARIANT_PATIENCE:g} s without returning (a "
                            "loop whose condition never changes, or a sleep): the timer "
                            "calls the queue holding that lock, so nothing else could run, "
                            "and the lab stopped it there, its timer thread with it"
                        ) from death
                    raise VariantError(
                        f"{type(scheduler).__name__}: its timer thread died on {death!r}, "
                        "raised by the variant (its traceback is above), so nothing ran "
                        "after it"
                    ) from death
                raise
            watch.close()
            scheduler.shutdown()
    finally:
        watch.close()
        logger = logging.getLogger("lldsched")
        for record in log:  # the capture is gone: to wherever they would have gone
            logger.handle(record)


def _timer_death(record: logging.LogRecord) -> BaseException | None:
    """What killed the timer thread, if ``record`` is its death."""
    if record.exc_info and record.getMessage().startswith("the timer thread died"):
        return record.exc_info[1]
    return None


def median(values: list[float]) -> float:
    """The median, or NaN for no values."""
    import statistics  # here, not above: `python -m lldsched` names the lab's decisions
    # in its parser, and statistics (with fractions and decimal) is a run's, not a start's

    return statistics.median(values) if values else float("nan")


def middle_half(values: list[float]) -> tuple[float, float]:
    """The first and third quartiles (between them, the middle half of ``values``): the
    spread a real-time figure is printed with, so a learner sees when two strategies'
    medians lie within each other's noise.  One value: it, twice; none: NaN, twice."""
    if len(values) < 2:
        middle = median(values)
        return middle, middle
    import statistics  # as median's

    low, _, high = statistics.quantiles(values, n=4, method="inclusive")
    return low, high


@contextmanager
def no_collection() -> Iterator[None]:
    """Garbage collection off while timing, as ``timeit`` does: a collection pass would
    land on whichever side happened to be timed."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
