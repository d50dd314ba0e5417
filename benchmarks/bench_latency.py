"""Wake latency: how late a task due in 50 ms starts, against a bare Condition.wait floor.

**Timed wake.**  :data:`SAMPLES` times, one at a time: schedule a ``OneTime(delay=0.05)``
no-op on a started lldsched scheduler (4 workers), wait for it to run, and take
``started - due`` from its :class:`~lldsched.ExecutionRecord`.  The floor, sampled
in the same loop (floor sample, then lldsched sample, so drift hits both): a
dedicated thread computes ``due = time.time() + 0.05``, waits on a bare
``threading.Condition`` for the remaining time (re-testing in a loop, as the
scheduler's timer does) and records ``time.time() - due`` inline.  lldsched adds a
hand-off the floor does not have: the timer wakes, then passes the entry to a
worker thread, which records ``started``.

**Early wake.**  The timer is parked on a task an hour away; a task due *now* is
scheduled, and ``started - due`` is recorded (the push must notify the parked
timer).  Its informational floor: a thread parked in ``Condition.wait(3600)`` woken
by ``notify``, measured from just before ``notify`` to the waiter running.
"""

from __future__ import annotations

import statistics
import threading
import time

from lldsched import OneTime, Scheduler

SAMPLES = 200
DELAY = 0.05
WORKERS = 4
TIMEOUT = 5.0

GOALS: dict[str, tuple[str, float]] = {
    "latency p50 / floor p50 (x)": ("<=", 1.5),
    "latency p99 (ms)": ("<", 1.0),
    "early wake p50 (ms)": ("<=", 0.1),
}


def _percentile(samples: list[float], q: int) -> float:
    """The q-th percentile (1..99), interpolated between the samples."""
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


class _TimedFloor:
    """A thread that waits on a bare Condition until a due instant and runs the job inline."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._go = threading.Event()
        self._done = threading.Event()
        self._stop = False
        self.lateness = 0.0
        self._thread = threading.Thread(target=self._loop, name="floor-timed", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        cond = self._cond
        while True:
            self._go.wait()
            self._go.clear()
            if self._stop:
                return
            due = time.time() + DELAY
            with cond:
                while True:
                    remaining = due - time.time()
                    if remaining <= 0:
                        break
                    cond.wait(remaining)
            self.lateness = time.time() - due  # the job, run inline
            self._done.set()

    def sample(self) -> float:
        self._done.clear()
        self._go.set()
        if not self._done.wait(TIMEOUT):
            raise RuntimeError("the floor thread did not wake")
        return self.lateness

    def close(self) -> None:
        self._stop = True
        self._go.set()
        self._thread.join(TIMEOUT)


class _EarlyFloor:
    """A thread parked in Condition.wait(3600), woken by notify."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._woken = threading.Event()
        self._parked = threading.Event()
        self._notified_at = 0.0
        self._stop = False
        self.lateness = 0.0
        self._thread = threading.Thread(target=self._loop, name="floor-early", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        cond = self._cond
        with cond:
            while not self._stop:
                self._parked.set()
                cond.wait(3600.0)
                if self._stop:
                    return
                self.lateness = time.time() - self._notified_at
                self._woken.set()

    def sample(self) -> float:
        if not self._parked.wait(TIMEOUT):
            raise RuntimeError("the floor thread did not park")
        self._parked.clear()
        self._woken.clear()
        with self._cond:
            self._notified_at = time.time()
            self._cond.notify()
        if not self._woken.wait(TIMEOUT):
            raise RuntimeError("the floor thread did not wake")
        return self.lateness

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()
        self._thread.join(TIMEOUT)


def _lldsched_sample(scheduler: Scheduler, delay: float) -> float:
    ran = threading.Event()
    task = scheduler.schedule("probe", ran.set, OneTime(delay=delay))
    if not ran.wait(TIMEOUT) or not scheduler.wait_idle(TIMEOUT):
        raise RuntimeError("the probe task did not run")
    record = task.history[-1]
    return record.started - record.due


def _never_runs() -> None:
    raise AssertionError("the task parked an hour away ran")


def _ms(seconds: float) -> float:
    return seconds * 1e3


def main() -> dict[str, float]:
    floor = _TimedFloor()
    early_floor = _EarlyFloor()
    timed_floor: list[float] = []
    timed: list[float] = []
    early: list[float] = []
    early_base: list[float] = []
    with Scheduler(workers=WORKERS) as scheduler:
        for _ in range(SAMPLES):
            timed_floor.append(floor.sample())
            timed.append(_lldsched_sample(scheduler, DELAY))
        scheduler.schedule("parked", _never_runs, OneTime(delay=3600.0))
        scheduler.wait_idle(TIMEOUT)
        for _ in range(SAMPLES):
            early_base.append(early_floor.sample())
            early.append(_lldsched_sample(scheduler, 0.0))
    floor.close()
    early_floor.close()

    results = {
        "latency p50 (ms)": _ms(_percentile(timed, 50)),
        "latency p99 (ms)": _ms(_percentile(timed, 99)),
        "latency floor p50 (ms)": _ms(_percentile(timed_floor, 50)),
        "latency floor p99 (ms)": _ms(_percentile(timed_floor, 99)),
        "latency p50 / floor p50 (x)": _percentile(timed, 50) / _percentile(timed_floor, 50),
        "early wake p50 (ms)": _ms(_percentile(early, 50)),
        "early wake p99 (ms)": _ms(_percentile(early, 99)),
    }
    print(f"latency: start minus due, {SAMPLES} sequential samples each, {WORKERS} workers")
    lines = [
        ("due in 50 ms, lldsched", timed),
        ("due in 50 ms, floor", timed_floor),
        ("due now, timer parked 1 h", early),
        ("notify wake, floor", early_base),
    ]
    for label, samples in lines:
        print(
            f"  {label:<27} p50 {_ms(_percentile(samples, 50)):7.3f} ms  "
            f"p99 {_ms(_percentile(samples, 99)):7.3f} ms  max {_ms(max(samples)):7.3f} ms"
        )
    print(f"  p50 / floor p50  {results['latency p50 / floor p50 (x)']:.2f}x")
    return results


if __name__ == "__main__":
    main()
