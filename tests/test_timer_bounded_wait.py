"""The timer's wait is bounded (``max_wait``), so a suspend or a wall-clock jump is noticed
within it, not when the head of the heap falls due by the monotonic clock."""

from __future__ import annotations

import math
import threading
import weakref

import pytest

from lldsched import EventLog, OneTime, Scheduler, ValidationError
from lldsched.threaded.jumps import JUMP_TOLERANCE, LastLook
from tests.conftest import T0, SchedulerFactory


class SuspendingClock:
    """Wall time that can jump, and a wait that counts only monotonic time.

    ``Condition.wait(timeout)`` counts monotonic time, which stops while a machine is
    suspended.  This clock models that: ``wait(condition, deadline)`` ends when the
    *monotonic* time has moved on by ``deadline - now()`` (or on an ordinary notify),
    ``elapse(s)`` moves both clocks, and ``suspend(s)`` moves the wall clock alone and
    wakes nobody, as a laptop lid does.
    """

    def __init__(self, start: float) -> None:
        # Guards the two times and the waiters; never held while a condition is taken.
        self._lock = threading.Lock()
        self._wall = start
        self._mono = 0.0
        self._waiters: weakref.WeakKeyDictionary[threading.Condition, float | None] = (
            weakref.WeakKeyDictionary()
        )
        self.parked = threading.Event()

    def now(self) -> float:
        return self._wall

    def monotonic(self) -> float:
        return self._mono

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        with self._lock:
            if deadline is not None and deadline <= self._wall:
                return
            # the monotonic instant this wait times out at
            self._waiters[condition] = (
                None if deadline is None else self._mono + (deadline - self._wall)
            )
            self.parked.set()
        condition.wait()

    def elapse(self, seconds: float) -> None:
        """Time passes on both clocks; waits whose monotonic timeout passed end."""
        with self._lock:
            self._wall += seconds
            self._mono += seconds
            due = [
                c for c, until in self._waiters.items() if until is not None and until <= self._mono
            ]
        for condition in due:
            with condition:
                condition.notify_all()

    def suspend(self, seconds: float) -> None:
        """The machine sleeps: the wall clock moves on, the monotonic one does not."""
        with self._lock:
            self._wall += seconds


@pytest.mark.parametrize("max_wait", [60.0, None])
def test_a_task_due_in_an_hour_runs_within_the_bounded_wait_after_an_eight_hour_suspend(
    make_scheduler: SchedulerFactory, max_wait: float | None
) -> None:
    clock = SuspendingClock(T0)
    log = EventLog()
    scheduler = make_scheduler(clock=clock, listeners=[log], max_wait=max_wait, start=False)
    task = scheduler.schedule("hourly-report", lambda: None, OneTime(delay=3600))
    scheduler.start()
    assert clock.parked.wait(5)  # parked on the head (or on the bound), nothing else to do
    clock.suspend(8 * 3600)  # the lid closes for eight hours; no thread is woken
    clock.elapse(60)  # one minute after resume
    ran = log.wait_for(lambda e: e.record is not None, timeout=0.5 if max_wait is None else 5)
    if max_wait is None:  # the unbounded wait still has 59 monotonic minutes to go
        assert ran is None and task.run_count == 0
        clock.elapse(3540)
        ran = log.wait_for(lambda e: e.record is not None, timeout=5)
        assert ran is not None and ran.record is not None
        assert ran.record.started == T0 + 8 * 3600 + 3600  # an hour after resume
    else:
        assert ran is not None and ran.record is not None
        assert ran.record.started == T0 + 8 * 3600 + 60  # a minute after resume


def test_an_idle_timer_looks_at_the_clock_once_per_bounded_wait(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = SuspendingClock(T0)
    make_scheduler(clock=clock, max_wait=60)
    for _ in range(3):  # nothing is registered: each minute it wakes and parks again
        assert clock.parked.wait(5)
        clock.parked.clear()
        clock.elapse(60)
    assert clock.parked.wait(5)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "60", True])
def test_a_bad_max_wait_is_refused_with_its_value(bad: object) -> None:
    with pytest.raises(ValidationError, match=f"max_wait .*got {bad!r}"):
        Scheduler(max_wait=bad)  # type: ignore[arg-type]


def test_the_last_look_takes_a_gap_past_the_tolerance_and_drift_for_a_jump() -> None:
    look = LastLook(monotonic=None)
    assert look.set_back_below == -math.inf  # no look yet: no run finished before it
    look.took(T0, 100.0)
    assert look.look(T0 + 60.5, 160.0) == 0.0  # half a second apart in a minute: no jump
    # 1.5 s apart over 1000 s: within 1 s plus 0.1 % of the time waited (NTP slewing)
    assert look.look(T0 + 1062.0, 1160.0) == 0.0
    assert look.look(T0 + 1072.0 - 3600, 1170.0) == -3600.0  # set back an hour
    assert look.set_back_below == T0 + 1072.0 - 3600 - 1170.0 - JUMP_TOLERANCE
    assert look.look(T0 + 1082.0 - 3600, 1180.0) == 0.0  # the next look compares anew


def test_a_run_finished_after_a_set_back_of_any_size_is_told_from_one_before_it() -> None:
    mono = [100.0]
    look = LastLook(monotonic=lambda: mono[0])
    assert not look.set_back_since(T0)  # no look yet
    look.took(T0, 100.0)
    mono[0] = 400.0  # 300 s since the look, by the monotonic clock
    assert not look.set_back_since(T0 + 300.0)  # the clocks agree
    assert not look.set_back_since(T0 + 299.5)  # within the tolerance
    # Set back 2 minutes: a finish later than the look's wall reading, which the test
    # of the finish alone (against the look's wall reading) let pass.
    assert look.set_back_since(T0 + 180.0)
    assert look.set_back_since(T0 - 3600.0)  # an hour, as ever
    assert not LastLook(monotonic=None).set_back_since(-math.inf)  # a FakeClock: never


def test_a_run_that_finishes_after_the_clock_was_set_back_is_recorded_at_the_moved_clock(
    make_scheduler: SchedulerFactory,
) -> None:
    # The action sets the wall clock back ten minutes (an NTP step) and returns: its
    # record's finish is read after the jump, so it is the moved clock's reading (no
    # negative duration), and the run succeeded.  (mutation15, running.py:
    # `_jumped_since`'s `return finished` as None: the record was made with no finish,
    # and the core's error failed the task.)
    clock = SuspendingClock(T0)
    log = EventLog()
    scheduler = make_scheduler(clock=clock, listeners=[log], start=False)
    task = scheduler.schedule("steps-back", lambda: clock.suspend(-600.0), OneTime(delay=0))
    scheduler.start()
    ran = log.wait_for(lambda e: e.record is not None, timeout=5)
    assert ran is not None and ran.record is not None
    assert ran.record.finished == T0 - 600.0
    assert ran.record.started <= ran.record.finished  # the look moved its start too
    assert ran.record.error is None and task.run_count == 1


def test_a_clock_that_raises_as_a_set_back_run_is_recorded_is_logged_and_the_run_kept(
    make_scheduler: SchedulerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    # As above, and the clock raises as the worker reads it again to handle the jump:
    # the run is recorded at the finish it read, and the clock's error is logged with
    # its traceback.  (mutation15, running.py: `_jumped_since`'s `log.exception`
    # dropped, the error went unsaid.)
    worker_reads: list[str] = []

    class RaisingOnce(SuspendingClock):
        def now(self) -> float:
            if worker_reads and threading.current_thread().name == worker_reads[0]:
                worker_reads.append("read")
                if len(worker_reads) == 3:  # the finish's reading, then the jump's
                    raise OSError("the clock's device went away")
            return super().now()

    clock = RaisingOnce(T0)
    log = EventLog()
    scheduler = make_scheduler(clock=clock, listeners=[log], start=False)

    def steps_back() -> None:
        clock.suspend(-600.0)
        worker_reads.append(threading.current_thread().name)

    task = scheduler.schedule("steps-back", steps_back, OneTime(delay=0))
    scheduler.start()
    ran = log.wait_for(lambda e: e.record is not None, timeout=5)
    assert ran is not None and ran.record is not None
    assert ran.record.finished == T0 - 600.0 and task.run_count == 1
    said = [r for r in caplog.records if "the scheduler's clock raised" in r.getMessage()]
    assert [r.getMessage() for r in said] == [
        f"the scheduler's clock raised; the run is recorded at {T0 - 600.0!r}"
    ]
    assert said[0].exc_info is not None and "device went away" in str(said[0].exc_info[1])
