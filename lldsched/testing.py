"""Testing your jobs: a real :class:`~lldsched.threaded.scheduler.Scheduler` stepped
through time by a test, without sleeping.

A service registers its jobs on a ``Scheduler``; its tests want to say "a day later
the nightly report ran once, at 02:00 Berlin time" in milliseconds, on the scheduler
and registration code the service ships.  :class:`Stepper` does that on the seams
the scheduler already has:

* the scheduler is built with ``clock=FakeClock(start)``: its timer waits on that
  clock and wakes whenever the clock moves (:mod:`lldsched.clock`);
* :meth:`Stepper.advance` visits every due instant up to the target in order: it
  sets the clock to the earliest due time (``scheduler.pending()``), waits until the
  runs due then have finished and their events were delivered
  (``scheduler.wait_idle``), and goes on; a retry's backoff or a slot queued by a run
  is visited in turn.  So each run starts at its own due instant, as in production,
  and a retry is seen at finish + backoff;
* every wait is bounded (``timeout``, 5 real seconds by default, for each instant):
  a job that blocks fails the test with :class:`~lldsched.errors.SettleTimeoutError`
  naming the tasks still running, instead of hanging it.

Nothing here decides what runs: the scheduler's timer, workers and core do, as in
production.  The stepper only moves the clock and waits.  On the manual clock a run
takes no time (the clock stands still while actions run on the worker threads);
durations, lateness under load and week-long horizons are the
:class:`~lldsched.sim.simulation.Simulation`'s (docs/TESTING.md says when to use
which).

A stepper is driven from one thread, the test's: ``advance`` from inside an action or
a listener would wait for itself, so it raises
:class:`~lldsched.errors.SchedulerStateError` there (``wait_idle``'s rule).

A scheduler that no longer runs is refused, saying which way it stopped: shut down
(:meth:`Stepper.close`, the test's own ``shutdown()``, or an action's or a listener's
while the stepper waited) raises :class:`~lldsched.errors.SchedulerShutDownError`, as
every verb of a shut-down scheduler does; a dead timer thread raises the parent
:class:`~lldsched.errors.SchedulerStateError` saying so, with what to do.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from datetime import datetime, timedelta
from types import TracebackType

from lldsched import checks
from lldsched.clock import FakeClock, to_timestamp, utc_datetime
from lldsched.errors import (
    DEAD_TIMER,
    DEAD_TIMER_ADVICE,
    SchedulerShutDownError,
    SchedulerStateError,
    SettleTimeoutError,
    TaskRetiredError,
    ValidationError,
    shown,
)
from lldsched.model import ExecutionRecord
from lldsched.printable import name_after
from lldsched.threaded.scheduler import Scheduler

__all__ = ["SettleTimeoutError", "Stepper"]


class Stepper:
    """Steps ``scheduler`` (built with ``clock=FakeClock(...)``) through time.

    The scheduler is started here if it was not yet, and the runs due at the start
    have finished when the constructor returns (a job due at once that hangs raises
    here, as in :meth:`advance`); a job registered afterwards and due at once runs on
    its own, and :meth:`settle` waits for it.  ``timeout`` (seconds or a
    ``timedelta``, > 0; default 5) bounds, in real time, each wait for the runs due at
    one instant.  Use it as a context manager (the scheduler is shut down at the end)
    or call :meth:`close`::

        clock = FakeClock(datetime(2026, 3, 28, 12, tzinfo=UTC))
        with Stepper(Scheduler(clock=clock, tz="Europe/Berlin")) as steps:
            register_jobs(steps.scheduler)         # the service's own registration
            steps.advance(timedelta(days=2))
            assert [r.started for r in steps.records("nightly-report")] == [...]

    A scheduler that no longer runs is refused, here and by every step, saying which
    way it stopped: shut down (already, by :meth:`close`, by the test or by an action
    meanwhile), :class:`~lldsched.errors.SchedulerShutDownError`; its timer thread dead,
    the parent :class:`~lldsched.errors.SchedulerStateError`, with what to do.
    """

    def __init__(self, scheduler: Scheduler, *, timeout: float | timedelta = 5.0) -> None:
        if not isinstance(scheduler, Scheduler):
            raise ValidationError(f"Stepper steps a Scheduler, got {shown(scheduler)}")
        clock = scheduler.clock
        if not isinstance(clock, FakeClock):
            raise ValidationError(
                "Stepper needs a Scheduler built with clock=FakeClock(...), "
                f"got clock={shown(clock)}"
            )
        self._timeout = checks.wait_seconds(timeout, name="Stepper timeout", above=0)
        self._scheduler = scheduler
        self._clock = clock
        self._closed = False
        if not scheduler.running:
            try:
                scheduler.start()
            except SchedulerStateError as exc:  # shut down already, or its timer died
                refused = (
                    SchedulerShutDownError
                    if isinstance(exc, SchedulerShutDownError)
                    else SchedulerStateError
                )
                raise refused(
                    f"Stepper needs a scheduler that can run, got {scheduler!r}: {exc}"
                ) from exc
        try:  # returns as every step does: what is due at the start has run
            self._settle()
        except BaseException:
            with contextlib.suppress(SettleTimeoutError):  # a hung run: the settle's
                self.close()  # error names it; no one else would shut this one down
            raise

    # -- what it drives ------------------------------------------------------------------

    @property
    def scheduler(self) -> Scheduler:
        """The scheduler being stepped: register jobs and call its verbs on it."""
        return self._scheduler

    @property
    def clock(self) -> FakeClock:
        """The scheduler's manual clock (move it with :meth:`advance`, which also waits)."""
        return self._clock

    @property
    def now(self) -> float:
        """The clock's instant, epoch seconds."""
        return self._clock.now()

    # -- moving time -----------------------------------------------------------------------

    def advance(self, seconds: float | timedelta) -> float:
        """Move time forward by ``seconds`` (>= 0, or a ``timedelta``), running each run
        due by then at its own due instant, in order; return the new now once every one
        has finished and its events were delivered.  ``advance(0)`` runs what is due now.

        Raises :class:`~lldsched.errors.SettleTimeoutError` (naming the tasks still
        running) when the runs due at one instant do not finish within ``timeout``;
        :class:`~lldsched.errors.SchedulerShutDownError` once the scheduler is shut down
        (before or during the step), :class:`~lldsched.errors.SchedulerStateError` once
        its timer thread died.
        """
        step = checks.seconds(
            seconds,
            name="advance()",
            at_least=0,
            expected="takes finite seconds >= 0 (or a timedelta)",
        )
        self._check_open("advance")
        return self._run_until(self._clock.now() + step)

    def advance_to(self, when: float | datetime) -> float:
        """:meth:`advance` up to the instant ``when`` (epoch seconds or an aware
        datetime, not before now)."""
        target = to_timestamp(when, name="advance_to() when")
        self._check_open("advance_to")
        now = self._clock.now()
        if target < now:
            raise ValidationError(
                f"advance_to() cannot go back from {_instant(now)} to {_instant(target)}"
            )
        return self._run_until(target)

    def settle(self) -> None:
        """Wait, bounded, until the runs due now (after a ``run_now``, a ``resume``, a
        task registered due at once) have finished and their events were delivered;
        the clock does not move.  Raises as :meth:`advance` does."""
        self._check_open("settle")
        self._settle()

    def _run_until(self, target: float) -> float:
        clock = self._clock
        self._settle()
        instant, since = clock.now(), time.monotonic()
        while True:
            due = self._next_due()
            if due is None or due > target:
                break
            clock.set(max(due, clock.now()))
            if clock.now() != instant:
                instant, since = clock.now(), time.monotonic()
            elif time.monotonic() - since > self._timeout:  # due at this instant for good:
                raise self._not_settled()  # bounded, as every wait here
            self._settle()
        if target > clock.now():
            clock.set(target)
            self._settle()
        return clock.now()

    def _next_due(self) -> float | None:
        """The earliest due time of a task waiting in the heap (None: nothing waits)."""
        for task in self._scheduler.pending():  # in the order they will run
            if task.next_run_at is not None:
                return task.next_run_at
        return None

    def _settle(self) -> None:
        """Wait until nothing is due at now or in flight and every event is delivered
        (what a listener made due meanwhile included: ``wait_idle``'s promise), within
        ``timeout``."""
        if not self._scheduler.wait_idle(timeout=self._timeout):
            raise self._not_settled()
        if not self._scheduler.running:  # a stopped scheduler is always "idle": shut
            # down by an action or a listener, or its timer died after the wait found it idle
            raise self._not_running()

    def _not_settled(self, *, shutting_down: bool = False) -> SettleTimeoutError:
        """The error of a wait that ran out: the instant, and the runs still going (a
        shutdown's too, as the test that left a run going wants to know which)."""
        running = [
            f"{task.id}{name_after(task.id, task.name)} (attempt {task.runs[-1].attempt})"
            + self._real(task.id, task.timeout)
            for task in self._scheduler.tasks()
            if task.runs
        ]
        if running:
            what = f"still running: {', '.join(running)}"
        elif shutting_down:
            what = "no run in flight: a listener still inside a call"
        else:
            what = (
                "no run in flight: a listener still inside a call, or a task due again "
                "at once after every run"
            )
        doing = "shut down" if shutting_down else "settle"
        return SettleTimeoutError(
            f"the scheduler did not {doing} within {self._timeout:g} s at "
            f"{_instant(self._clock.now())}: {what}"
        )

    def _real(self, task_id: str, timeout: float | None) -> str:
        """What a run's own timeout adds to the message when it outlasts the wait: a
        coroutine's or a worker process's timeout counts real seconds, also on a
        ``FakeClock``, so the test's wait runs out first (a thread run's is judged on
        the clock, which stands still)."""
        if timeout is None or timeout <= self._timeout:
            return ""
        return (
            f", its timeout {timeout:g} s longer than this wait (a coroutine's or a worker "
            "process's timeout counts real seconds: shorten it in the test with "
            f"scheduler.modify({task_id!r}, timeout=...))"
        )

    # -- reading -----------------------------------------------------------------------

    def records(self, task_id: str) -> list[ExecutionRecord]:
        """The records of one task, in the order its runs finished (slots decided
        without a run included: skipped, missed, given up...), also once it retired.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an id never registered."""
        with contextlib.suppress(TaskRetiredError):  # retired: its records are still held
            self._scheduler.task(task_id)
        return [record for record in self._scheduler.records() if record.task_id == task_id]

    # -- the end -----------------------------------------------------------------------

    def close(self) -> None:
        """Shut the scheduler down (``drain=True``: what is due now runs), bounded by
        ``timeout``; idempotent.  Raises :class:`~lldsched.errors.SettleTimeoutError`
        when a run outlasts it."""
        if self._closed:
            return
        self._closed = True
        if not self._scheduler.shutdown(timeout=self._timeout):
            raise self._not_settled(shutting_down=True)

    def __enter__(self) -> Stepper:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None:
            self.close()
            return
        with contextlib.suppress(SettleTimeoutError):  # the test already failed: that
            self.close()  # error is the one to see, not this one

    def __del__(self) -> None:
        # A test that forgot close() (no ``with``) leaves the scheduler's threads running
        # and its last runs unwaited-for: said as Python says an unclosed file, with the
        # fix, when the stepper is collected (at the end of the test that made it).  A
        # RuntimeWarning, not the ResourceWarning of a file: Python and pytest hide
        # those unless asked, and this one is meant to be seen.  Only said, not shut
        # down here: a finaliser may run on any thread, an action's included, where a
        # shutdown would wait for itself.
        if getattr(self, "_closed", True) or not self._scheduler.running:
            return
        warnings.warn(
            f"unclosed {self!r}: its scheduler still runs; use 'with Stepper(...) as "
            "steps:' or call steps.close() at the end of the test",
            RuntimeWarning,
            stacklevel=2,
            source=self,
        )

    def _check_open(self, verb: str) -> None:
        if self._closed or not self._scheduler.running:
            raise self._not_running(verb)

    def _not_running(self, verb: str | None = None) -> SchedulerStateError:
        """The error of a stepper whose scheduler no longer runs, refusing ``verb`` (None:
        found stopped after a wait), one rule for each way it stopped, read from the
        scheduler's own state (``metrics().state``, within ``timeout``), so a shutdown
        behind the stepper's back is said as one by :meth:`close` is.  ``"dead"``: its
        timer thread died; said as the scheduler's own verbs say it, a
        :class:`~lldsched.errors.SchedulerStateError` (a mistake to fix, not a race with
        a shutdown).  Else shut down: :class:`~lldsched.errors.SchedulerShutDownError`, as
        every verb refused after the shutdown raises.  A forked child's copy raises its
        own error from the read."""
        scheduler = self._scheduler
        at = _instant(self._clock.now())
        if scheduler.metrics(timeout=self._timeout).state == "dead":
            doing = f"cannot {verb}():" if verb else f"the Stepper waited at {at}, and"
            return SchedulerStateError(
                f"{doing} {DEAD_TIMER}, so nothing is dispatched any more; "
                f"{DEAD_TIMER_ADVICE} ({scheduler!r})"
            )
        if verb:
            return SchedulerShutDownError(
                f"cannot {verb}(): the Stepper's scheduler is shut down ({scheduler!r})"
            )
        return SchedulerShutDownError(
            f"the scheduler was shut down while the Stepper waited at {at} ({scheduler!r})"
        )

    def __repr__(self) -> str:
        return f"<Stepper at {_instant(self._clock.now())} of {self._scheduler!r}>"


def _instant(when: float) -> str:
    """An instant as a message writes it: ISO 8601 in UTC, and its epoch seconds."""
    return f"{utc_datetime(when).isoformat()} ({when!r})"
