"""The control verbs of the threaded scheduler, and its listeners.

Each verb takes the one lock, applies what other processes changed first (shared
mode, :class:`~lldsched.threaded.shared.Coordinator`, with the store holding the row
from that read to the verb's write: :meth:`SharedVerbs._acting_on
<lldsched.threaded.sharedverbs.SharedVerbs._acting_on>`, mixed in), and calls one
core method;
the core writes the store and announces the change.  What only a runtime can do is
here: a cancelled, paused or removed task's running coroutine is cancelled and its
process-isolated run killed; a thread's run is cooperative (its context's flag).  The
reads are :mod:`~lldsched.threaded.reads`'.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import timedelta

from lldsched.core.names import RefusedVerb
from lldsched.core.registration import UNCHANGED, Unchanged
from lldsched.core.store.interrupts import left_whole
from lldsched.core.task import ScheduledTask
from lldsched.listeners import Listener
from lldsched.model import Priority
from lldsched.policies import RetryPolicy
from lldsched.schedules.base import Schedule
from lldsched.threaded.coroutines.flights import LEASE_GONE
from lldsched.threaded.parts import STOPPED, shut_down, torn
from lldsched.threaded.sharedverbs import SharedVerbs

__all__ = ["ControlVerbs"]


class ControlVerbs(SharedVerbs):
    """Mixed into Scheduler: the verbs and the listeners."""

    # -- control verbs -------------------------------------------------------

    def reschedule(self, task_id: str, schedule: Schedule | str) -> ScheduledTask:
        """Give the task a new *when* (a schedule, or cron text): same id, history
        kept, as if registered now.  A run in flight or a pending retry finishes
        first; see :meth:`SchedulerCore.reschedule
        <lldsched.core.machine.SchedulerCore.reschedule>`.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an unknown id
        (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.ValidationError` for a bad schedule
        (:class:`~lldsched.errors.ScheduleError` for cron text that does not parse);
        :class:`~lldsched.errors.SchedulerStateError` for a finished (succeeded or
        cancelled) task and in a forked child, and after shutdown its subclass
        :class:`~lldsched.errors.SchedulerShutDownError`;
        :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while another running scheduler holds its
        store (nothing changes then).
        """
        with (
            self._lock,
            self._whole("reschedule", task_id),
            self._acting_on(task_id, refused="reschedule"),  # shared: on the row now
        ):
            task = self._core.reschedule(task_id, schedule)
            self._notify_idle()  # the task it moved may have been all that was due
            return task

    def modify(
        self,
        task_id: str,
        *,
        priority: Priority | int | Unchanged = UNCHANGED,
        retry: RetryPolicy | Unchanged | None = UNCHANGED,
        timeout: float | timedelta | Unchanged | None = UNCHANGED,
    ) -> ScheduledTask:
        """Change the task's priority, retry policy or timeout (what is not given stays);
        see :meth:`SchedulerCore.modify <lldsched.core.machine.SchedulerCore.modify>`.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an unknown id
        (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.ValidationError` for a bad value;
        :class:`~lldsched.errors.SchedulerStateError` for a finished (succeeded or
        cancelled) task, and in a forked child;
        :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while another running scheduler holds its
        store (nothing changes then).  Not after shutdown: a modify keeps the books
        (:data:`~lldsched.core.names.REFUSED_AFTER_SHUTDOWN`).
        """
        with (
            self._lock,
            self._whole("modify", task_id),
            self._acting_on(task_id),  # shared: on the row as it is now
        ):
            return self._core.modify(task_id, priority=priority, retry=retry, timeout=timeout)

    def run_now(self, task_id: str) -> bool:
        """Run the task once more, at once, without moving its schedule; True if a run
        was queued (or a pending retry brought forward).  False if it is due at once
        anyway, running, paused, blocked on its upstreams (or would be: a dependent whose
        upstreams have not succeeded since its previous slot), failed or finished: nothing
        was queued, and nothing is kept to run later (a task running now, whatever its
        ``overlap``: call it again once that run has finished); see
        :meth:`SchedulerCore.run_now <lldsched.core.machine.SchedulerCore.run_now>`.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an unknown id
        (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.SchedulerShutDownError` (a ``SchedulerStateError``) after shutdown
        (once it has begun); :class:`~lldsched.errors.SchedulerStateError` if the timer thread died
        (:attr:`running`), and in a forked child;
        :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while another running scheduler holds its
        store (nothing changes then).
        """
        with (
            self._lock,
            self._whole("run_now", task_id),
            self._acting_on(task_id, refused="run_now"),  # shared: on the row now
        ):
            self._refuse_if_dead(f"run_now {task_id!r}")
            return self._core.run_now(task_id)

    def cancel(self, task_id: str) -> bool:
        """Stop all future runs of the task; True if it was live.  A run in flight on a
        thread finishes (its record is kept) and its context's flag is raised: the
        thread rule is cooperative.  A running *coroutine* is cancelled, and a running
        *process-isolated* run killed; either attempt is recorded failed
        (``CancelledError: task cancelled``).

        Raises as :meth:`pause` does: :class:`~lldsched.errors.TaskNotFoundError`
        (:class:`~lldsched.errors.TaskRetiredError`), :class:`~lldsched.errors.StoreClosedError`,
        :class:`~lldsched.errors.StoreError`, and :class:`~lldsched.errors.SchedulerStateError`
        in a forked child.  Not after shutdown: a cancel only stops things.
        """
        return self._halt(
            task_id, name="cancel", verb=self._core.cancel, why="cancelled", dependents=True
        )

    def pause(self, task_id: str) -> bool:
        """Hold the task; True if this call paused it (False for one already paused,
        finished or failed).  A run in flight on a thread finishes;
        nothing follows.  A running *coroutine* is cancelled, and a running
        *process-isolated* run killed: its attempt is recorded failed
        (``CancelledError: task paused``) and, like any failure, retried after
        ``resume()`` while attempts remain.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an id that is not registered,
        whatever its type (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while another running scheduler holds its
        store (nothing is changed then; a store that fails, an outage, raises nothing: the
        row is written again when it answers); :class:`~lldsched.errors.SchedulerStateError`
        in a child forked from the process that made the scheduler
        (:mod:`lldsched.threaded.forked`).  Not after shutdown: a pause only stops things.
        """
        return self._halt(task_id, name="pause", verb=self._core.pause, why="paused")

    def _halt(
        self,
        task_id: str,
        *,
        name: str,
        verb: Callable[[str], bool],
        why: str,
        dependents: bool = False,
    ) -> bool:
        """What cancel and pause share: the core's ``verb``, then, if it took, the
        runtime's runs of the task stopped (``task <why>``), and a ``wait_drained()``
        waiter woken either way.  ``dependents``: the verb may fail the task's dependents,
        whose rows a shared store holds with its own (:meth:`_acting_on`; read under the
        lock, as the registry is)."""
        # The verb whole before a Ctrl-C a save raised reaches the caller (_whole): else
        # the task was stopped in the registry and its coroutine or child process ran on.
        with (
            self._lock,
            self._whole(name, task_id),
            self._acting_on(  # shared: on the row as it is now
                task_id,
                also=self._core.downstream(task_id)
                if dependents and self._coordinator is not None
                else (),
            ),
        ):
            changed = verb(task_id)
            if changed:
                self._stop_running(task_id, why)
            self._notify_idle()  # a wait_drained() waiter may have been waiting on this task
            return changed

    def resume(self, task_id: str) -> bool:
        """Return a paused task to where it was.  Resumed before the slot it waited for,
        the task runs at that slot; after it, the slots slept through get one run, at once
        (no overrun or misfire policy applies: a pause is not a downtime), and a
        fixed-rate grid re-anchors on that run (docs/decisions/schedules.md, "Resume re-anchors a
        fixed-rate grid").  A pending retry keeps its due instant (at once if it passed).

        Raises as :meth:`pause` does: :class:`~lldsched.errors.TaskNotFoundError`
        (:class:`~lldsched.errors.TaskRetiredError`), :class:`~lldsched.errors.StoreClosedError`,
        :class:`~lldsched.errors.StoreError`, and :class:`~lldsched.errors.SchedulerStateError`
        in a forked child, and after shutdown its subclass
        :class:`~lldsched.errors.SchedulerShutDownError`.
        """
        with (
            self._lock,
            self._whole("resume", task_id),
            self._acting_on(task_id, refused="resume"),  # shared: on the row now
        ):
            return self._core.resume(task_id)

    def redrive(self, task_id: str) -> bool:
        """Put a dead-lettered (FAILED) task back, due now, with a fresh attempt counter;
        False, changing nothing, for a task that is not FAILED.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an unknown id
        (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.SchedulerShutDownError` (a ``SchedulerStateError``) after shutdown,
        and :class:`~lldsched.errors.SchedulerStateError` in a forked child;
        :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while another running scheduler holds its
        store (nothing changes then).
        """
        with (
            self._lock,
            self._whole("redrive", task_id),
            self._acting_on(task_id, refused="redrive"),  # shared: on the row now
        ):
            return self._core.redrive(task_id)

    def remove(self, task_id: str) -> ScheduledTask:
        """Cancel the task if live, and forget it (here and in the store).

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an unknown id
        (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.SchedulerStateError` naming them while other tasks depend
        on it, and in a forked child;
        :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while another running scheduler holds its
        store (nothing changes then).  Not after shutdown: a remove only
        stops things.
        """
        with (
            self._lock,
            self._whole("remove", task_id),  # as _halt says
            self._acting_on(task_id),  # shared: on the row as it is now
        ):
            task = self._core.remove(task_id)
            self._stop_running(task_id, "cancelled")
            self._loop_ids.discard(task_id)
            self._notify_idle()
            return task

    @contextlib.contextmanager
    def _whole(self, verb: str, task_id: str) -> Iterator[None]:
        """A verb (``verb`` on ``task_id``) made whole or said to be cut (under the lock).

        A ``KeyboardInterrupt`` or ``SystemExit`` a store raises in one of its writes (a
        Ctrl-C landing in ``save`` on the main thread) is kept until the verb is whole and
        raised then (:meth:`StoreWrites.interrupts_deferred
        <lldsched.core.store.writes.StoreWrites.interrupts_deferred>`): raised at once, it
        left the verb's later steps undone.  A store's refusal of a registration or a
        change of definition is whole too: the core put everything back.  Any other
        interrupt out of the verb landed between two of its statements, as a real SIGINT
        can, and may have left it half made (a task resumed and never queued, a row never
        written): ``SchedulerCore.under_way``, set before the verb and cleared once it is
        whole, stays set, and every later verb is refused naming this one
        (:func:`~lldsched.threaded.parts.torn`).  Errs on refusing: one that landed
        before the verb changed anything refuses too (docs/decisions/simulation.md, "A Ctrl-C in a
        threaded scheduler's verb")."""
        core = self._core
        cut = core.under_way
        if cut is not None:
            raise torn(cut, verb, task_id)
        writes = core.store_writes
        core.under_way = (verb, task_id)
        if writes is None:
            try:
                yield
            except Exception:
                core.under_way = None
                raise
            core.under_way = None
            return
        try:
            with writes.interrupts_deferred():
                yield
        except BaseException as exc:
            if left_whole(writes, exc):
                core.under_way = None  # whole: refused, or made and then interrupted
            raise
        core.under_way = None

    def _stop_running(self, task_id: str, why: str) -> None:
        """What only the runtime can stop (under the lock): the task's running coroutine
        is cancelled and its process-isolated run killed, their attempts recorded
        ``CancelledError: task <why>``; a thread's run is cooperative (the core raised
        its context's flag)."""
        self._coroutines.cancel(task_id, why)
        self._processes.kill(task_id, f"task {why}")

    def _stop_lost(self, task_id: str) -> None:
        """The store no longer holds the lease of the task's run here (the timer's renewal
        found it taken over, or gone with its task; under the lock): the runs only the
        runtime can stop are stopped as :meth:`_stop_running` stops them, a coroutine
        cancelled and a process-isolated run killed, each recorded ``CancelledError: the
        store no longer holds its lease ...`` (its settle is refused by its token all the
        same).  Neither can look at a flag: each ran the slot to its end beside the
        process that took it over.  A thread's run is cooperative (``ctx.lease_lost``)."""
        self._coroutines.cancel(task_id, "lease")
        self._processes.kill(task_id, LEASE_GONE)

    def _check_open(self, verb: RefusedVerb, task_id: str) -> None:
        """Refuse ``verb`` on the task once the scheduler is shut down (under the lock,
        before it changes anything): :data:`~lldsched.core.names.REFUSED_AFTER_SHUTDOWN`."""
        if self._state is STOPPED:
            raise shut_down(verb, task_id)

    # -- listeners -----------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        """Deliver to ``listener`` as well every event published from now on, none
        published before (still waiting behind a slow listener, say).  Raises
        :class:`~lldsched.errors.ValidationError` for what is no listener (neither
        callable nor with ``on_event``; an ``async def`` one, which is never awaited) and
        for one already registered (it would hear every event twice)."""
        with self._lock:
            self._dispatcher.add(listener)
            self._core.emit = self._dispatcher.publish

    def remove_listener(self, listener: Listener) -> bool:
        """Stop delivering to ``listener``; True if it was registered.  Once this returns
        it hears no further event, not even one published before that still waits to be
        delivered; only the event whose delivery had begun is still heard by its
        listeners in turn (by this one too when it comes after the listener removing it,
        or when the listeners' thread was already inside its call)."""
        with self._lock:
            found = self._dispatcher.remove(listener)
            if not self._dispatcher.listeners:
                self._core.emit = None  # back to the fast path: no event objects at all
            return found

    @property
    def dropped_events(self) -> int:
        """Events dropped because the listeners fell more than the backlog behind."""
        return self._dispatcher.dropped
