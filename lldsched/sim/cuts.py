"""Cuts: how a coroutine or process-isolated run in flight ends before its modelled finish.

A thread's run is cooperative: once started it keeps its worker to its modelled finish,
and is judged by its timeout there.  A coroutine run is cut, as the threaded event loop
cancels it, and so is a process-isolated one, as its pool kills its child: at its timeout
(the worker frees at ``started + timeout``), re-armed from its start when a modify or a
replace changes its task's timeout during the run (``_retime``, by
:func:`~lldsched.core.runs.rearmed`), ended by a pause, cancel or remove of its task
(``_stop_awaited``), by ``Overlap.CANCEL_OTHER`` (``_cut``, a thread's run too) and by a
shutdown out of time (``_out_of_time``: :data:`SHUT_DOWN`); a process-isolated one by a
shutdown without a drain too, at once (``_kill_isolated``).  A plain function's awaitable
still waiting for a place on the coroutine lane is cut the same way (``_cut_handed``).
docs/decisions/threaded.md, "A process-isolated run is cut at its deadline, in the simulation too".
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable

from lldsched.core.isolation import killed_at_deadline, killed_by_shutdown, worker_killed
from lldsched.core.runs import cancelled_error, rearmed
from lldsched.core.task import Run
from lldsched.sim.lanes import Handed
from lldsched.sim.parts import SimulationParts

__all__ = ["SHUT_DOWN", "SimulationCuts", "rearmed_end"]

SHUT_DOWN = "CancelledError: scheduler shut down"  # a coroutine run a shutdown's timeout cut


def rearmed_end(
    origin: float,
    duration: float,
    *,
    error: str | None,
    result: str | None,
    timeout: float | None,
    now: float,
    killed: bool = False,
) -> tuple[float, str | None, str | None, bool]:
    """A coroutine run (or, ``killed``, a process-isolated one) whose duration counts
    from ``origin`` and is ``duration`` uncut, re-armed at ``now`` against ``timeout``:
    (how long it lasts, its error, its result, whether it timed out), cut at
    :func:`~lldsched.core.runs.rearmed`'s deadline, in the words the threaded runtime's
    cut uses (a coroutine cancelled, a worker process killed)."""
    deadline = rearmed(origin, timeout=timeout, now=now)
    if deadline is None or origin + duration <= deadline:
        return duration, error, result, False
    assert timeout is not None  # a deadline is armed only with a timeout
    length = deadline - origin
    if killed:
        return length, killed_at_deadline(length, budget=timeout, pid=None), result, True
    return length, cancelled_error(timeout), result, True


class SimulationCuts(SimulationParts):
    """The cuts of runs in flight: mixed into the simulation."""

    def _cut(self, run: Run) -> None:
        """Overlap.CANCEL_OTHER cancelled ``run``: it ends now, as a run that checks its
        flag (or a coroutine, cancelled for real) would; the core records why."""
        finishes = self._finishes
        for index, item in enumerate(finishes):
            if item[3] is run:
                finishes[index] = (self.now, *item[1:])
                heapq.heapify(finishes)
                return
        if self._handed:  # an awaitable waiting for a place on the lane
            self._cut_handed(lambda waiting: waiting is run, None)

    def _cut_handed(self, cut: Callable[[Run], bool], error: str | None) -> None:
        """The awaitables waiting for a place on the coroutine lane whose runs ``cut``
        picks end now (with ``error``, else the error they had), holding no place: their
        finish, at this instant, is an event (worker ``workers + 1``, which frees
        nothing), as on threads a cancelled one is recorded once the loop drops it."""
        now = self.now
        kept: deque[Handed] = deque()
        for item in self._handed:
            handed_at, run, _, had, result, timed_out, _ = item
            if not cut(run):
                kept.append(item)
                continue
            ending = had if error is None else error
            heapq.heappush(
                self._finishes,
                (now, next(self._sequence), self._workers + 1, run, handed_at, ending,
                 None if error is not None else result, False if error is not None else timed_out),
            )  # fmt: skip
        self._handed = kept

    def _prune_awaited(self) -> dict[int, Run]:
        """The coroutine runs in flight (:attr:`_awaited` without those finished), kept."""
        awaited = self._awaited
        self._awaited = live = {
            id(item[3]): item[3] for item in self._finishes if awaited.get(id(item[3])) is item[3]
        }
        uncut = self._uncut
        if uncut:
            self._uncut = {key: uncut[key] for key in live.keys() & uncut.keys()}
            for item in self._handed:  # waiting for a place on the lane: in flight too
                key = id(item[1])
                if key in uncut:
                    self._uncut[key] = uncut[key]
        return live

    def _retime(self, run: Run) -> None:
        """The core's ``on_retime``: a modify or a replace changed the timeout of
        ``run``'s task during the run.  A coroutine run is cut at its timeout here, as on
        threads: its finish is re-armed from the instant its duration counts from by
        :func:`~lldsched.core.runs.rearmed` (a timeout raised or dropped gives it back
        the duration its model drew, one lowered cuts it, at once if already past; one
        begun without a timeout counts from this first re-arm, as on threads).  A thread
        run is judged at its finish by the timeout in force then, as before."""
        key = id(run)
        kept = self._uncut.get(key)
        timeout = run.task._options.timeout
        for index, handed in enumerate(self._handed):  # no place on the lane yet
            if handed[1] is run:
                if kept is None:  # begun without a timeout: as it waits, uncut
                    if handed[5]:  # cut in wall time: it ended there
                        return
                    kept = self._uncut[key] = (handed[0], *handed[2:5])
                origin, duration, error, result = kept  # (its place, once it has one)
                self._handed[index] = (
                    handed[0],
                    run,
                    *rearmed_end(
                        origin,
                        duration,
                        error=error,
                        result=result,
                        timeout=timeout,
                        now=origin,
                    ),
                    handed[6],
                )
                return
        if self._awaited.get(key) is not run:  # a thread run: judged at its finish
            return
        finishes = self._finishes
        for index, item in enumerate(finishes):
            if item[3] is run:
                if kept is None:  # begun without a timeout: uncut, and its finish says it
                    if item[7]:  # cut in wall time: it ended there
                        return
                    # Counted from this first re-arm, as the threaded runtime counts a run
                    # begun without a timeout (it kept no begin instant).
                    now = self.now
                    kept = self._uncut[key] = (now, item[0] - now, item[5], item[6])
                origin, duration, error, result = kept
                length, error, result, timed_out = rearmed_end(
                    origin, duration, error=error, result=result, timeout=timeout,
                    now=self.now, killed=run[7].isolation != "thread",
                )  # fmt: skip
                finishes[index] = (
                    origin + length,
                    item[1],
                    item[2],
                    run,
                    item[4],
                    error,
                    result,
                    timed_out,
                )
                heapq.heapify(finishes)
                return

    def _stop_awaited(self, task_id: str, why: str) -> None:
        """A pause, cancel or remove of ``task_id`` took: its coroutine runs in flight end
        now, failed with ``CancelledError: task <why>`` (a paused task retries the
        attempt after resume), as the threaded runtime cancels them (its
        ``_stop_running``), and so do its process-isolated runs (``... (its worker process
        was killed)``, as the pool kills their children); a thread's run is cooperative
        and goes on, here as there."""
        self._stop_lane(lambda run: run.task.id == task_id, f"CancelledError: task {why}")

    def _stop_lane(self, cut: Callable[[Run], bool], error: str) -> None:
        """The coroutine runs in flight that ``cut`` picks (and the awaitables waiting for
        a place on the lane) end now, failed with ``error``."""
        if self._handed:  # waiting for a place on the lane: ended now, never begun there
            self._cut_handed(cut, error)
        if not self._awaited:
            return
        awaited = self._prune_awaited()
        finishes = self._finishes
        now = self.now
        ended = False
        killed = f"{error} {worker_killed(None)}"  # a process-isolated run's
        for index, item in enumerate(finishes):
            run = item[3]
            if id(run) in awaited and cut(run):
                ending = error if run[7].isolation == "thread" else killed
                finishes[index] = (now, item[1], item[2], run, item[4], ending, None, False)
                ended = True
        if ended:
            heapq.heapify(finishes)

    def _kill_isolated(self) -> None:
        """A shutdown without a drain: the process-isolated runs in flight end now, as
        the threaded shutdown kills their children at once (not at its timeout, as it
        cuts the coroutines), each recorded in its words,
        ``CancelledError: the scheduler shut down without draining (its worker process
        was killed)`` (:func:`~lldsched.core.isolation.killed_by_shutdown`), its task
        kept due (:meth:`SchedulerCore.cut_by_shutdown
        <lldsched.core.runs.RunTransitions.cut_by_shutdown>`)."""
        cut_by_shutdown = self._core.cut_by_shutdown

        def isolated(run: Run) -> bool:
            """Each process-isolated run, cut here: its finish keeps its task due."""
            if run[7].isolation == "thread":
                return False
            cut_by_shutdown(run)
            return True

        reason = killed_by_shutdown(drain=False, drained=None)
        self._stop_lane(isolated, f"CancelledError: {reason}")

    def _out_of_time(self, deadline: float) -> bool:
        """A shutdown's ``deadline`` is reached with runs still in flight, at
        ``_advance``'s rest: the coroutine runs (on the lane, or waiting for a place there)
        end at it, recorded ``CancelledError: scheduler shut down``, their tasks kept
        due (:meth:`SchedulerCore.cut_by_shutdown
        <lldsched.core.runs.RunTransitions.cut_by_shutdown>`), as the threaded
        shutdown cancels them, and so do the process-isolated runs (their children
        killed there); True when a thread run goes on past it (it cannot be cut, there
        as here)."""
        if not self._finishes and not self._handed:
            return False
        self._clock.advance_to(deadline)
        cut_by_shutdown = self._core.cut_by_shutdown

        def cut(run: Run) -> bool:
            """Each run cut here: its finish keeps its task due (core/runs.py)."""
            cut_by_shutdown(run)
            return True

        self._stop_lane(cut, SHUT_DOWN)
        return any(item[0] > deadline for item in self._finishes)
