"""Process isolation: what a run in a worker process costs, and how fast a timeout frees its slot.

* **Overhead per run**: :data:`N_RUNS` one-off tasks due at once on a one-worker
  scheduler, so they run one after another; the action is ``time.sleep(0)`` (a
  no-op that returns None, importable by path in the child), run in-thread and
  then with ``isolation="process"`` on a warm child.  Time from ``start()`` to the
  last record, per run; the overhead is the difference.  A child's interpreter
  start (a few hundred milliseconds, paid once per child, in the background
  after a kill) is not in it: a warm-up run starts the child first.
* **Deadline to freed slot**: a one-worker scheduler runs an isolated
  ``time.sleep(3600)`` with ``timeout=0.2`` (HIGH priority) and an in-thread task
  (LOW) due at the same instant, which can only start once the worker is free.
  The figure is the in-thread task's start minus the deadline (the isolated run's
  recorded start, when its child began the call, plus the timeout): the kill,
  the reap, the replacement's start and the hand-over.  :data:`N_KILLS` rounds,
  each on a fresh scheduler; p50 and max.
* **First run on a new child**: registration to the end of the run of an isolated
  no-op on a scheduler that has no child yet, :data:`N_CHILDREN` times, each on a
  fresh scheduler; the median.  This is the interpreter start the other figures
  leave out.
"""

from __future__ import annotations

import statistics
import threading
import time

from lldsched import OneTime, Priority, RetryPolicy, Scheduler
from lldsched.core.task import Isolation

N_RUNS = 300
N_KILLS = 15
N_CHILDREN = 5
TIMEOUT = 0.2
WAIT = 120.0  # seconds: the most any phase may take

GOALS: dict[str, tuple[str, float]] = {
    "deadline to freed slot p50 (ms)": ("<", 100.0),
    "deadline to freed slot max (ms)": ("<", 100.0),
}


def _per_run(isolation: Isolation) -> float:
    """Seconds per run of ``time.sleep(0)`` under ``isolation``, one worker, runs back to back."""
    scheduler = Scheduler(workers=1)
    action = "time:sleep" if isolation == "process" else time.sleep
    try:
        scheduler.start()
        warm = scheduler.schedule(
            "warm-up", action, OneTime(delay=0), isolation=isolation, args=[0]
        )
        assert scheduler.wait_drained(WAIT) and warm.history[0].ok
        tasks = [
            scheduler.schedule(
                f"noop-{i}", action, OneTime(delay=3600), isolation=isolation, args=[0]
            )
            for i in range(N_RUNS)
        ]
        began = time.perf_counter()
        for task in tasks:
            scheduler.run_now(task.id)
        assert scheduler.wait_idle(WAIT), "the runs did not finish"
        elapsed = time.perf_counter() - began
        assert all(task.history and task.history[0].ok for task in tasks)
        return elapsed / N_RUNS
    finally:
        scheduler.shutdown(timeout=10.0)


def _freed_after_deadline() -> float:
    """Seconds from an isolated run's deadline to the start of the run waiting for its worker."""
    scheduler = Scheduler(workers=1)
    started_at: list[float] = []
    next_started = threading.Event()

    def waiting() -> None:
        started_at.append(time.time())
        next_started.set()

    try:
        scheduler.start()
        warm = scheduler.schedule("warm-up", "time:sleep", OneTime(delay=0), isolation="process",
                                  args=[0])  # fmt: skip
        assert scheduler.wait_drained(WAIT) and warm.history[0].ok
        # Due at once, one after the other: the isolated run takes the only worker first.
        slow = scheduler.schedule(
            "slow", "time:sleep", OneTime(delay=0), isolation="process", args=[3600],
            timeout=TIMEOUT, priority=Priority.HIGH, retry=RetryPolicy(max_attempts=1),
        )  # fmt: skip
        scheduler.schedule("next", waiting, OneTime(delay=0), priority=Priority.LOW)
        assert next_started.wait(WAIT), "the worker was never freed"
        (record,) = slow.history
        assert record.timed_out
        return started_at[0] - (record.started + TIMEOUT)
    finally:
        scheduler.shutdown(timeout=10.0)


def _first_run_on_a_new_child() -> float:
    """Seconds from registering an isolated no-op, due at once, on a started scheduler
    with no child yet, to the end of its run: the child's interpreter start and its
    import of lldsched, the cost the two figures above leave out."""
    scheduler = Scheduler(workers=1)
    try:
        scheduler.start()
        began = time.time()
        task = scheduler.schedule("first", "time:sleep", OneTime(delay=0), isolation="process",
                                  args=[0])  # fmt: skip
        assert scheduler.wait_drained(WAIT) and task.history[0].ok
        return task.history[0].finished - began
    finally:
        scheduler.shutdown(timeout=10.0)


def main() -> dict[str, float]:
    in_thread = _per_run("thread")
    in_process = _per_run("process")
    freed = sorted(_freed_after_deadline() for _ in range(N_KILLS))
    first = sorted(_first_run_on_a_new_child() for _ in range(N_CHILDREN))
    results = {
        "in-thread run (us)": in_thread * 1e6,
        "isolated run (us)": in_process * 1e6,
        "isolation overhead per run (us)": (in_process - in_thread) * 1e6,
        "deadline to freed slot p50 (ms)": statistics.median(freed) * 1e3,
        "deadline to freed slot max (ms)": freed[-1] * 1e3,
        "first run on a new child p50 (ms)": statistics.median(first) * 1e3,
    }
    print(
        f"process isolation: {N_RUNS} no-op runs back to back, {N_KILLS} kills, "
        f"{N_CHILDREN} new children"
    )
    for label, value in results.items():
        print(f"  {label:<34} {value:10.1f}")
    return results


if __name__ == "__main__":
    main()
