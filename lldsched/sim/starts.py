"""Starts: what a simulated run does as it starts on a worker or the coroutine lane.

The core begins the attempt (a dependent it holds BLOCKED starts nothing: :data:`_HELD`);
then its duration and its failure are drawn from its task's models
(:mod:`lldsched.sim.models`, a model that raises abandons the attempt), its action is
called, for its side effects, and a coroutine it returns is run to completion on the
simulation's private loop (:mod:`lldsched.sim.awaiting`).  The run then finishes at once
if it takes no time, or its finish goes on the heap of runs in flight: cut at its
timeout if it is a coroutine's or a process-isolated one (:mod:`lldsched.sim.cuts`), or,
for a plain function's awaitable, handed over to wait for a place on the coroutine lane,
its worker free again (``_hand_on`` gives it one).
"""

from __future__ import annotations

import heapq
from typing import Any

from lldsched import checks
from lldsched.core.isolation import killed_at_deadline
from lldsched.core.results import must_await, result_text
from lldsched.core.runs import cancelled_error
from lldsched.core.task import Run
from lldsched.errors import ValidationError, error_text
from lldsched.model import ExecutionRecord
from lldsched.sim.cuts import rearmed_end
from lldsched.sim.models import drawn_duration, failure_of, simulated_failure
from lldsched.sim.parts import SimulationParts

__all__ = ["SimulationStarts"]

_HELD = "blocked"  # what _start returns for an entry the core held BLOCKED (a SimStep kind)


class SimulationStarts(SimulationParts):
    """A run's start and the places it takes and gives back: mixed into the simulation."""

    def _start(self, entry: Any, now: float, worker: int) -> ExecutionRecord | str | None:
        """Start live ``entry`` on ``worker``, taken for it (a free worker, or a place on
        the coroutine lane, numbered ``workers``): None, or its record if it takes no time
        (it finishes at once).  A dependent the core holds back (BLOCKED) starts nothing,
        gives ``worker`` back and draws nothing from its models: :data:`_HELD`."""
        run = self._core.begin(entry, worker)
        if run is None:  # BLOCKED: the core queues it again when its upstreams succeed
            self._release(worker)
            return _HELD
        duration, error = self._drawn(run, worker, now)
        result, timed_out = None, False
        if run.action is not None:  # (the action the run began with: what it calls)
            called = self._called(run, worker, now, duration, error)
            if called is None:  # handed over: it waits for a place on the coroutine lane
                return None
            duration, error, result, timed_out = called
        if self._isolation and run.options.isolation != "thread":
            duration, error, result, timed_out = self._isolated(
                run, now, duration, error, result, timed_out
            )
        if duration == 0:  # finishes before anything else can happen at this instant
            record = self._core.finish(run, now, now, error, result, timed_out)
            self._release(worker)
            return record
        heapq.heappush(
            self._finishes,
            (now + duration, next(self._sequence), worker, run, now, error, result, timed_out),
        )
        return None

    def _drawn(self, run: Run, worker: int, now: float) -> tuple[float, str | None]:
        """The duration and the error (None: it succeeds) drawn for ``run`` from its
        task's models; a model that raises abandons the attempt (the caller's bug)."""
        models = self._models[run.task.id]
        try:  # zero-cost on 3.11 when nothing raises
            duration = models.duration
            if callable(duration):
                drawn = duration(models.rng, run.attempt)
                try:  # numpy's int64 and the error naming model and task: only on failure
                    duration = checks.seconds(drawn, name="duration", at_least=0)
                except ValidationError:
                    duration = drawn_duration(drawn, model=duration, task=run.task.name)
            error = None
            fails = models.fails
            if fails:
                if callable(fails):
                    answer = fails(models.rng, run.attempt)
                    if answer is not None and answer is not False:
                        error = failure_of(
                            answer, attempt=run.attempt, model=fails, task=run.task.name
                        )
                elif models.rng.random() < fails:
                    error = simulated_failure(run.attempt)
        except BaseException as exc:  # a model that raises is the caller's bug
            self._abandon(run, worker, now, exc)
            self._interrupts.whole = exc
            raise
        return duration, error

    def _called(
        self, run: Run, worker: int, now: float, duration: float, error: str | None
    ) -> tuple[float, str | None, str | None, bool] | None:
        """Call ``run``'s action, for its side effects, and run a coroutine it returns to
        completion: the run's (duration, error, result, timed_out), given what its
        models drew; None for a plain function's awaitable, handed over
        (:meth:`_coroutine_ran`)."""
        try:
            exception, value = run.invoke()
            awaits = exception is None and value is not None and must_await(value)
            if awaits:
                awaited = self._awaiting.run(value, run.task.timeout)  # to completion
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: as a model's
            self._abandon(run, worker, now, exc)
            self._interrupts.whole = exc
            raise
        if exception is not None:
            return duration, error_text(exception), None, False
        if not awaits:
            return duration, error, None if value is None else result_text(value), False
        raised, result, timed_out = awaited
        error = raised or error
        if run.options.isolation != "thread":  # as its child awaits it, on its worker
            return duration, error, result, timed_out
        return self._coroutine_ran(run, worker, now, duration, error, result, timed_out)

    def _coroutine_ran(
        self,
        run: Run,
        worker: int,
        now: float,
        duration: float,
        error: str | None,
        result: str | None,
        timed_out: bool,
    ) -> tuple[float, str | None, str | None, bool] | None:
        """A coroutine ``run`` returned, run to completion: cut at its task's timeout, as
        on threads, and kept for a re-arm; None when a plain function returned it, whose
        worker is free now while the awaitable waits for a place on the coroutine lane."""
        timeout = run.task.timeout
        # Kept for a re-arm (_retime) when a cut may hide it; else its finish says it
        # (none once cut on its loop's clock: it ended there).
        if timeout is not None and not timed_out:
            self._uncut[id(run)] = (now, duration, error, result)
        elif self._uncut:
            self._uncut.pop(id(run), None)  # (a finished run's, under its id)
        if timeout is not None and (timed_out or duration > timeout):
            duration, timed_out = timeout, True  # cut at its timeout, as on threads
            error = cancelled_error(timeout)
        if len(self._awaited) > 2 * len(self._finishes) + 16:
            self._prune_awaited()
        self._awaited[id(run)] = run
        if worker != self._workers:  # a plain function's: its worker is free now
            # It queues for a place on the lane, behind the awaitables handed over
            # before it and the coroutine entries due by now (_next_start takes it
            # there, at this instant if a place is free), as on threads.
            self._loop_tasks = True  # its finish frees a place on the lane
            self._release(worker)
            mark = self._queue.mark()
            self._handed.append((now, run, duration, error, result, timed_out, mark))
            return None
        return duration, error, result, timed_out

    def _isolated(
        self,
        run: Run,
        now: float,
        duration: float,
        error: str | None,
        result: str | None,
        timed_out: bool,
    ) -> tuple[float, str | None, str | None, bool]:
        """A process-isolated run starting at ``now``, ``duration`` long uncut, as its
        worker process is killed on threads: (how long it lasts, its error, its result,
        whether it timed out), cut at its timeout (its worker frees at ``started +
        timeout``, its error :func:`~lldsched.core.isolation.killed_at_deadline`'s).  It
        is kept for :meth:`_retime`, which re-arms it from its start (its uncut duration
        kept with or without a timeout, as the pool counts a deadline given later from
        the child's start too), and for :meth:`_stop_lane`, which ends it at a pause,
        cancel or remove or at a shutdown out of time, as a coroutine run is.
        ``timed_out``: an awaitable the action returned was cut on its loop's clock at
        the timeout (it ended there)."""
        timeout = run.task._options.timeout
        if len(self._awaited) > 2 * len(self._finishes) + 16:
            self._prune_awaited()
        self._awaited[id(run)] = run
        if timed_out:  # cut on its loop's clock at its timeout: it ended there, never re-armed
            assert timeout is not None  # (the cut is the timeout's)
            return timeout, killed_at_deadline(timeout, budget=timeout, pid=None), result, True
        self._uncut[id(run)] = (now, duration, error, result)
        return rearmed_end(
            now, duration, error=error, result=result, timeout=timeout, now=now, killed=True
        )

    def _abandon(self, run: Run, worker: int, now: float, exc: BaseException) -> None:
        """``exc`` stops the attempt ``run`` on ``worker`` at ``now`` and is raised to
        the caller of run() (a model's error, or an action's KeyboardInterrupt or
        SystemExit, which may be the user's Ctrl-C): the attempt ends failed with it, so
        the task is not left RUNNING on a worker that never frees, and a later run()
        goes on consistently."""
        self._core.finish(run, started=now, finished=now, error=error_text(exc))
        self._release(worker)

    def _release(self, worker: int) -> None:
        """A run on ``worker`` ended: the worker is free again, or, for the coroutine
        lane's number, a place on that lane is."""
        if worker == self._workers:
            self._coroutines -= 1
        else:
            heapq.heappush(self._free, worker)

    def _hand_on(self, now: float) -> None:
        """The first awaitable a plain function handed over that waits for a place on
        the coroutine lane takes one at ``now`` (:meth:`_next_start` picked it)."""
        started, run, duration, error, result, timed_out, _ = self._handed.popleft()
        self._coroutines += 1
        self._awaited[id(run)] = run  # (a prune while it waited dropped it)
        uncut = self._uncut.get(id(run))
        if uncut is not None:  # its duration counts from its place on the lane
            self._uncut[id(run)] = (now, *uncut[1:])
        heapq.heappush(
            self._finishes,
            (now + duration, next(self._sequence), self._workers, run, started, error, result,
             timed_out),
        )  # fmt: skip
