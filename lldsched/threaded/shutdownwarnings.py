"""What a shutdown says it left: the warnings of what it did not stop, run or wait for.

:class:`ShutdownWarnings`, mixed into :class:`~lldsched.threaded.stopping.Stopping`,
says on the ``lldsched.scheduler`` logger what a ``shutdown(timeout=...)`` left: a lock held
for the whole timeout, so that nothing stopped (:meth:`~ShutdownWarnings._warn_not_stopped`);
the runs still going, what else is still busy, and the runs due by the shutdown it did
not start or cut mid-run (:meth:`~ShutdownWarnings._warn_still_running`,
:meth:`~ShutdownWarnings._warn_unstarted`), in the words a shared store needs
(:func:`_still_going`, :func:`_not_started`).  What it reads, it reads under the
scheduler's lock, taken within what is left of the shutdown's deadline
(:class:`~lldsched.threaded.deadline.Deadline`); a lock still held then is said
instead.  The counts are the shutdown's (:meth:`Stopping._unstarted
<lldsched.threaded.stopping.Stopping._unstarted>`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lldsched.errors import doc_url
from lldsched.logs import SCHEDULER, counted
from lldsched.threaded.deadline import Deadline
from lldsched.threaded.parts import SchedulerParts

__all__ = ["ShutdownWarnings"]

log = logging.getLogger(SCHEDULER)


class ShutdownWarnings(SchedulerParts):
    """Mixed into Stopping: what a shutdown says it left."""

    if TYPE_CHECKING:

        def _unstarted(self, due_by: float) -> tuple[int, int]: ...  # stopping

    def _warn_not_stopped(self, timeout: float | None) -> None:
        """Say that ``shutdown(timeout=...)`` could not take the scheduler's lock at all."""
        log.warning(
            "shutdown(timeout=%s) returned without stopping the scheduler: its lock stayed "
            "held for the whole timeout (by a store call that does not return, or by this "
            "very thread if a signal handler called shutdown(): set an Event there and shut "
            "down from the main thread, %s); nothing was changed, and shutdown() does it "
            "all when called again",
            timeout,
            doc_url("docs/OPERATIONS.md#running-it-in-a-service"),
        )

    def _warn_still_running(
        self,
        timeout: float | None,
        deadline: Deadline,
        *,
        flushing: bool = False,
        due_by: float | None = None,
    ) -> None:
        """Say what outlived ``shutdown(timeout=...)``: the caller (a ``with`` block)
        often drops the False, and a run left going is not recorded, nor an event
        delivered, if the process ends first (a durable store runs such a run again at
        the next start).  With ``due_by`` (the shutdown's instant, when no drain ran
        to its end) it also says how many runs due by then did not start, and what
        ``shutdown()``'s docstring says of them.  The runs are read under the lock, taken
        within what is left of ``deadline``; a lock still held then is said instead."""
        going: list[str] | None = None
        unstarted = (0, 0)
        with deadline.holding(self._lock) as hold:
            if hold.held:
                tasks = self._core.tasks.values()
                going = [f"{task.id} {task.name!r}" for task in tasks if task.running]
                if due_by is not None:
                    unstarted = self._unstarted(due_by)
        if going is None:
            left = [
                "the scheduler's lock still held (a store call that does not return?): "
                "what it could not do is left as it is"
            ]
        else:
            shared = self._coordinator is not None
            left = [_still_going(going, shared=shared)] if going else []
            if any(unstarted):
                left.append(_not_started(*unstarted, shared=shared))
        if self._dispatcher.busy:
            left.append("listeners still receiving events")
        if self._coroutines.calls_running:
            left.append("asyncio.to_thread calls of coroutine runs still going")
        if flushing:
            left.append("the store still writing the settles held back for a batch")
        log.warning(
            "shutdown(timeout=%s) returned with %s; a thread cannot be stopped: each ends "
            "on its own, unless the process ends first",
            timeout,
            " and ".join(left) or "a thread still stopping",
        )

    def _warn_unstarted(self, deadline: Deadline, due_by: float, said: str, *args: object) -> None:
        """Say how many runs due by ``due_by`` a drain did not start, after ``said % args``:
        a drain called from an action (its worker's own run goes on, by definition, and
        is not said) that ran out of time, or whose caller is the only worker, which runs
        nothing else until the shutdown returns; or a drain out of time that returns True
        all the same, every run it did not wait for cut (a coroutine cancelled, a worker
        process killed: each said by its run's line).  Read under the lock, taken within
        what is left of ``deadline`` (nothing is said if it stays held)."""
        with deadline.holding(self._lock) as hold:
            unstarted = self._unstarted(due_by) if hold.held else (0, 0)
        if any(unstarted):
            shared = self._coordinator is not None
            log.warning(said + " %s", *args, _not_started(*unstarted, shared=shared))


def _still_going(going: list[str], *, shared: bool = False) -> str:
    """What a shutdown's warning says of the runs it left going (``going``: each task's id
    and name).  On a shared store (``shared``) their leases are renewed no more once the
    shutdown returns (docs/CLUSTER.md, "How it works"): a run still going then is taken
    over once its lease runs out, another process running that attempt again, as a
    stalled one's.  Said so: before, the line named the runs alone, and an operator read
    that they would end here and be recorded, at most lost if the process ended first."""
    said = f"runs still going: {', '.join(going)}"
    if shared:
        return (
            f"{said} (on a shared store their leases are renewed no more: once one runs "
            "out, another process runs that attempt again)"
        )
    return said


def _not_started(unstarted: int, cut: int, *, shared: bool = False) -> str:
    """What a shutdown's warning says of the runs due by it left due: ``unstarted`` it did
    not start, ``cut`` it started and cut (a coroutine cancelled, a worker process
    killed).  Before, a cut run was counted "not started", beside its own line saying it
    was stopped.

    On a shared store (``shared``) a drain starts nothing its process had not claimed
    (docs/CLUSTER.md, "How it works"): the tasks its registry has due are the store's,
    another process's run in flight among them (its row says due at the slot being run).
    Said so: before, the line said they stayed due "for a durable store to recover",
    counting the runs another process held as left undone here."""
    if not cut:
        said = f"{counted(unstarted, 'run')} due by the shutdown not started"
    elif not unstarted:
        said = f"{counted(cut, 'run')} due by the shutdown cut mid-run"
    else:
        said = f"{counted(unstarted, 'run')} due by the shutdown not started and {cut} cut mid-run"
    if shared:
        return (
            f"{said} (on a shared store they stay due in the store, for the other processes, "
            "which may be running them already: a drain starts only what its process had "
            "claimed, and a run it cut is due again at once)"
        )
    return (
        f"{said} (they stay SCHEDULED or RETRYING with their due time, for a durable store "
        "to recover)"
    )
