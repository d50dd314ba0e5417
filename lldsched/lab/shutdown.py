"""Two decisions about waking and stopping threads: ``notify_all`` at shutdown, and
stopping the timer before the pool.

* **notify_all** — swapped: the workers' condition (the
  :class:`~lldsched.threaded.pool.WorkerPool`'s ``condition_type`` seam).  Several
  threads wait on it.  ``put`` wakes one worker per item (``notify(n)``), which is
  right; shutdown queues one sentinel per worker and must wake them *all*.  With
  :class:`NotifyOneCondition`, whose ``notify_all`` wakes one, the other workers sleep
  on a queue that holds their sentinels: ``shutdown`` hangs until its timeout.
  (The timer's condition has a single waiter, so there the two calls agree.)
* **timer first** — swapped: the order of the two stops (:class:`PoolFirstScheduler`
  stops the pool, then runs the real shutdown).  The real pool also refuses work
  once shut down (its ``room`` drops to 0), a second line of defence, so pool first
  on the real pool loses nothing either.  The experiment also runs both orders on an
  :class:`ExecutorLikePool`, a pool that, like
  ``concurrent.futures.ThreadPoolExecutor``, refuses work only when handed some.
  Timer first: nothing is lost.  Pool first: the timer, still running, pops due
  entries, the pool refuses them, the timer thread dies holding them, and they are
  gone (not in the heap, never run), and ``wait_idle`` hangs on them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any, NamedTuple

from lldsched.checks import seconds
from lldsched.lab._support import (
    VARIANT_PATIENCE,
    CountingCondition,
    Gate,
    ObservedClock,
    VariantError,
    captured_log,
    eventually,
    lab_type,
    whole_count,
)
from lldsched.schedules.simple import OneTime
from lldsched.threaded.pool import WorkerPool
from lldsched.threaded.scheduler import Scheduler

__all__ = [
    "CountingPool",
    "ExecutorLikePool",
    "ExecutorPoolFirstScheduler",
    "ExecutorTimerFirstScheduler",
    "NotifyOneCondition",
    "NotifyOnePool",
    "ObservedPool",
    "PoolFirstScheduler",
    "ShutdownOutcome",
    "StopOutcome",
    "TimerFirstScheduler",
    "run_shutdown_while_work_falls_due",
    "run_shutdown_with_idle_workers",
]

# -- notify_all ------------------------------------------------------------------------------


class NotifyOneCondition(CountingCondition):
    """A condition whose ``notify_all`` wakes a single waiter."""

    def notify_all(self) -> None:
        self.notify(1)


class CountingPool(WorkerPool[Any, Any, Any]):
    """The real pool, its condition counting parked workers (same behaviour), and the
    workers that reached their wait for an item counted apart from the condition (the
    pool's ``on_idle``, called under the lock just before the wait): so a condition of
    a learner's that parks workers without counting them is told at once, not after
    the whole patience."""

    condition_type = CountingCondition

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reached: set[threading.Thread] = set()
        """The workers that have reached a wait for an item (under the pool's lock)."""
        self.on_idle = lambda: self.reached.add(threading.current_thread())

    @property
    def condition(self) -> CountingCondition:
        condition = self._not_empty
        assert isinstance(condition, CountingCondition)
        return condition


class NotifyOnePool(CountingPool):
    """The real pool on a :class:`NotifyOneCondition`."""

    condition_type = NotifyOneCondition


class _PoolScheduler(Scheduler):
    """A scheduler that lends the lab its pool, to look at."""

    @property
    def lab_pool(self) -> WorkerPool[Any, Any, Any]:
        return self._pool

    @property
    def timer_alive(self) -> bool:
        return self._timer is not None and self._timer.is_alive()


class ShutdownOutcome(NamedTuple):
    """Whether ``shutdown`` stopped every thread in time, and how many workers it left."""

    stopped: bool
    workers_left: int


def run_shutdown_with_idle_workers(
    pool_type: type[CountingPool] = CountingPool, *, workers: int = 4, timeout: float = 2.0
) -> ShutdownOutcome:
    """Start ``workers`` workers, wait until every one is parked on an empty queue, then
    shut down with ``timeout`` seconds to spare.  The hung workers of a broken variant
    are released afterwards (a real ``notify_all``).  ``pool_type`` is a
    :class:`CountingPool` (``TypeError`` naming it otherwise): the experiment counts
    the workers parked in its condition."""
    lab_type("pool_type", pool_type, CountingPool, "a CountingPool (or NotifyOnePool)")

    class Variant(_PoolScheduler):
        pass

    Variant.pool_type = pool_type
    scheduler = Variant(workers=workers)
    scheduler.start()
    pool = scheduler.lab_pool
    assert isinstance(pool, CountingPool)
    condition = pool.condition
    eventually(
        lambda: condition.parked >= workers or len(pool.reached) >= workers, VARIANT_PATIENCE
    )
    with condition:  # each worker that reached its wait has let the lock go in it (or died)
        seen = condition.parked
    parked = seen >= workers
    stopped = scheduler.shutdown(timeout=timeout)
    left = pool.alive
    with condition:
        threading.Condition.notify_all(condition)  # release what the variant left asleep
    pool.shutdown(timeout=5.0)
    if not parked:
        raise VariantError(
            f"{pool_type.__name__}: only {seen} of its {workers} workers parked in its "
            f"condition ({len(pool.reached)} reached their wait for an item within "
            f"{VARIANT_PATIENCE:g} s), so there was no idle pool to shut down (a worker "
            "whose wait raises dies: its traceback is above)"
        )
    return ShutdownOutcome(stopped, left)


# -- timer first ------------------------------------------------------------------------------


class ObservedPool(WorkerPool[Any, Any, Any]):
    """The real pool; ``closing`` is set when its shutdown starts (same behaviour)."""

    def __init__(self, workers: int, **options: Any) -> None:
        super().__init__(workers, **options)
        self.closing = threading.Event()

    def shutdown(
        self,
        drain: bool = True,
        timeout: float | None = None,
        *,
        on_drop: Callable[[list[Any]], None] | None = None,
    ) -> list[Any]:
        self.closing.set()
        return super().shutdown(drain=drain, timeout=timeout, on_drop=on_drop)


class ExecutorLikePool(ObservedPool):
    """A pool that refuses work only when handed some (``put`` raises once shut down):
    its ``room`` does not drop to 0 at shutdown."""

    @property
    def room(self) -> int:
        return self.capacity - self.queued


class TimerFirstScheduler(_PoolScheduler):
    """The real scheduler and pool (timer stopped first), the pool observed."""

    pool_type = ObservedPool


class PoolFirstScheduler(TimerFirstScheduler):
    """Stops the pool, then runs the real shutdown (which stops the timer)."""

    def shutdown(self, drain: bool = True, timeout: float | timedelta | None = 5.0) -> bool:
        if timeout is not None:
            timeout = seconds(timeout, name="shutdown() timeout", at_least=0)
        self.lab_pool.shutdown(drain=drain, timeout=timeout)
        return super().shutdown(drain=drain, timeout=timeout)


class ExecutorTimerFirstScheduler(TimerFirstScheduler):
    """Timer first, on an :class:`ExecutorLikePool`."""

    pool_type = ExecutorLikePool


class ExecutorPoolFirstScheduler(PoolFirstScheduler):
    """Pool first, on an :class:`ExecutorLikePool`."""

    pool_type = ExecutorLikePool


STOP_BUDGET = 0.5
"""Seconds the lab's ``shutdown`` may take: the held run outlives it on purpose."""


def _stop_failed(variant: type, error: BaseException) -> VariantError:
    failure = VariantError(
        f"{variant.__name__}: its shutdown() raised {error!r} (its traceback is above); "
        "an order stops the timer and the pool, and raises nothing"
    )
    failure.__cause__ = error
    return failure


class StopOutcome(NamedTuple):
    """Tasks due during shutdown: run, still queued (a store would keep them), or lost
    (out of the heap and never run); whether the timer died; whether ``wait_idle`` hangs."""

    ran: int
    queued: int
    lost: int
    timer_died: bool
    idle_after: bool


def run_shutdown_while_work_falls_due(
    scheduler_type: type[TimerFirstScheduler] = TimerFirstScheduler, *, burst: int = 10
) -> StopOutcome:
    """One worker busy (held at a gate); shutdown begins; while the pool closes, ``burst``
    tasks fall due (fake clock).  Then the gate opens and the shutdown completes.
    ``scheduler_type`` is one of the lab's orders (a :class:`TimerFirstScheduler` or a
    subclass: ``TypeError`` naming it otherwise), ``burst`` a whole number >= 1
    (``ValueError``: with -1 tasks, -1 were reported lost)."""
    lab_type(
        "scheduler_type",
        scheduler_type,
        TimerFirstScheduler,
        "one of the lab's shutdown orders (TimerFirstScheduler or a subclass)",
    )
    whole_count("burst", burst)
    clock = ObservedClock(0)
    scheduler = scheduler_type(workers=1, clock=clock)
    gate = Gate()
    ran: list[str] = []
    scheduler.schedule("busy", gate.hold, OneTime(delay=0))
    burst_ids = {
        scheduler.schedule(f"burst-{n}", ran.append, OneTime(delay=60), args=(n,)).id
        for n in range(burst)
    }
    with captured_log() as log:
        scheduler.start()
        gate.entered.wait(5.0)
        clock.parked()
        # A short budget: the real shutdown waits for the held run before it closes the
        # pool, which this waits for below; with the default 5 s, every order took 5 s.
        failed: list[BaseException] = []  # what the variant's shutdown raised, if anything

        def stop() -> None:
            try:
                scheduler.shutdown(timeout=STOP_BUDGET)
            except BaseException as error:
                failed.append(error)

        stopper = threading.Thread(target=stop, name="lab-shutdown")
        stopper.start()
        pool = scheduler.lab_pool
        assert isinstance(pool, ObservedPool)
        eventually(lambda: pool.closing.is_set() or not stopper.is_alive(), VARIANT_PATIENCE)
        if not pool.closing.is_set():
            gate.open()
            stopper.join(VARIANT_PATIENCE)
            Scheduler.shutdown(scheduler, timeout=STOP_BUDGET)  # the real one, to clean up
            if failed:
                raise _stop_failed(scheduler_type, failed[0])
            raise VariantError(
                f"{scheduler_type.__name__}: its shutdown() never shut the pool down "
                f"(ObservedPool.shutdown not called within {VARIANT_PATIENCE:g} s): an order "
                "must stop both the timer and the pool"
            )
        waits = clock.waits
        clock.advance(60)
        # the timer either parks again, or is (or was already) gone
        eventually(lambda: clock.waits > waits or not scheduler.timer_alive)
        gate.open()
        stopper.join(10.0)
        if failed:
            raise _stop_failed(scheduler_type, failed[0])
        if stopper.is_alive():
            raise VariantError(
                f"{scheduler_type.__name__}: its shutdown(timeout={STOP_BUDGET:g}) had not "
                "returned 10 s after the held run was let go"
            )
        idle = scheduler.wait_idle(timeout=0.2)
    queued = len([t for t in scheduler.pending() if t.id in burst_ids])
    died = any("timer thread died" in record.getMessage() for record in log)
    return StopOutcome(len(ran), queued, burst - len(ran) - queued, died, idle)
