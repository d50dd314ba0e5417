"""The control verbs and the reads of the threaded scheduler.

Each verb takes the one lock, applies what other processes changed first (shared
mode, :class:`~lldsched.threaded.shared.Coordinator`, with the store holding the row
from that read to the verb's write: :meth:`ControlVerbs._acting_on`), and calls one
core method;
the core writes the store and announces the change.  What only a runtime can do is
here: a cancelled, paused or removed task's running coroutine is cancelled and its
process-isolated run killed; a thread's run is cooperative (its context's flag).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import operator
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any

from lldsched.checks import wait_seconds
from lldsched.core import storeuse
from lldsched.core.duequeue import QueueStats
from lldsched.core.isolation import is_loop_action
from lldsched.core.metrics import Metrics, take
from lldsched.core.names import RefusedVerb
from lldsched.core.outage import Outage
from lldsched.core.packedstats import Rows
from lldsched.core.registration import UNCHANGED, Unchanged
from lldsched.core.stalerows import STALE_SHOWN
from lldsched.core.storeinterrupts import left_whole
from lldsched.core.task import ScheduledTask
from lldsched.errors import SchedulerBusyError
from lldsched.listeners import Listener
from lldsched.logs import STORE, counted
from lldsched.model import ExecutionRecord, Priority, TaskStatus
from lldsched.persistence import HoldNotCommitted, verb_held
from lldsched.policies import RetryPolicy
from lldsched.schedules.base import Schedule
from lldsched.threaded.flights import LEASE_GONE
from lldsched.threaded.parts import NEW, RUNNING, STOPPED, SchedulerParts, shut_down, torn
from lldsched.threadstarts import at_exit

__all__ = ["ControlVerbs"]

log = logging.getLogger(STORE)  # a verb that could not hold its row

_finished = operator.attrgetter("finished")  # the order of records()

_unwatched: set[SchedulerParts] = set()
"""The schedulers with writes left for the interpreter's exit (:func:`_shut_unwatched`):
never started, whose verbs left rows stale (:meth:`ControlVerbs._say_stale_unwatched`);
or whose first ``shutdown()`` a signal cut short before its last writes
(:func:`unfinished`).  Held strongly, so that one a script dropped still writes; one
whose shutdown let its store go is let go (:func:`watched`)."""


def watched(scheduler: SchedulerParts) -> None:
    """``scheduler`` shut down: nothing of it is left for the interpreter's exit."""
    _unwatched.discard(scheduler)


def unfinished(scheduler: SchedulerParts) -> None:
    """``scheduler``'s first ``shutdown()`` ended before its last writes (a signal cut
    it short): they are made at the interpreter's exit, unless a second ``shutdown()``
    makes them first (:meth:`Stopping._finish_at_exit
    <lldsched.threaded.stopping.Stopping._finish_at_exit>`)."""
    _unwatched.add(scheduler)


@atexit.register
def _shut_unwatched() -> None:
    """At the interpreter's exit, ``shutdown()`` each scheduler never started whose verbs
    left rows stale and that nothing shut down or started since: its last write of those
    rows (those still refused said at WARNING), as the verb's WARNING promised.  A script
    that only calls verbs (an admin process) ends without ``shutdown()``, as scripts do,
    and a verb made in an outage was lost for good, the verb having returned as done.
    And each one whose first ``shutdown()`` a signal cut short before its last writes
    (a Ctrl-C that ends the script): those writes, within a bound of their own, its
    threads not waited for (:meth:`Stopping._finish_at_exit
    <lldsched.threaded.stopping.Stopping._finish_at_exit>`).
    Not for a crash, ``os._exit`` or a signal's default action, which run no exit hook;
    a forked child's copy stops nothing (:mod:`lldsched.threaded.forked`)."""
    at_exit()  # Python 3.12.0-3.12.2 start no thread from here on
    while _unwatched:
        scheduler: Any = _unwatched.pop()  # a Scheduler: Stopping's methods mixed in
        try:
            if scheduler._state is NEW:
                scheduler.shutdown()
            elif scheduler._state is STOPPED:
                scheduler._finish_at_exit()
        except Exception:  # (not met) the next one is still shut down
            log.exception("the shutdown at exit of scheduler %r raised", scheduler.name)


class ControlVerbs(SchedulerParts):
    """Mixed into Scheduler: the verbs, the queries and the listeners."""

    # The outage whose stale rows a verb of this scheduler, not running, said at WARNING
    # (_say_stale_unwatched): once an outage.  Under the scheduler's lock.
    _stale_said: Outage | None = None

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
        cancelled) task, in a forked child, and after shutdown;
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
        :class:`~lldsched.errors.SchedulerStateError` after shutdown (once it has begun),
        if the timer thread died (:attr:`running`), and in a forked child;
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
        return self._halt(task_id, "cancel", self._core.cancel, "cancelled", dependents=True)

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
        return self._halt(task_id, "pause", self._core.pause, "paused")

    def _halt(
        self,
        task_id: str,
        name: str,
        verb: Callable[[str], bool],
        why: str,
        *,
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
                self._core.downstream(task_id)
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
        in a forked child, and after shutdown.
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
        :class:`~lldsched.errors.SchedulerStateError` after shutdown, and in a forked
        child; :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
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
        <lldsched.core.storewrites.StoreWrites.interrupts_deferred>`): raised at once, it
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

    # -- shared mode: other processes' changes first -------------------------

    def _follow_others(self) -> None:
        """Shared mode: apply what other processes wrote before a verb changes a task, so
        the row this process writes starts from the latest one (under the lock).  Not
        while another running scheduler holds the store object: the feed says each change
        once, to whoever reads it through that object, and that scheduler would miss
        what this one read (the core refuses the verb then: ``StoreWrites.check_open``)."""
        coordinator = self._coordinator
        if coordinator is not None and not storeuse.held_by_another(coordinator.store, self):
            coordinator.sync()  # tells _followed

    @contextlib.contextmanager
    def _acting_on(
        self, task_id: str, also: Sequence[str] = (), *, refused: RefusedVerb | None = None
    ) -> Iterator[None]:
        """Shared mode: a verb on ``task_id`` runs inside, under the lock, from its read of
        what other processes wrote (:meth:`_follow_others`) to its last write, with the
        store holding the row for it (:func:`~lldsched.persistence.verb_held`): no other
        process's write lands between the two, so the verb acts on the row as it is and
        never writes back one older than another process's (a run settled there meanwhile,
        whose slot ran again).  Nothing is held unshared, nor while another running
        scheduler holds the store object (the core refuses the verb then).  ``also``: the
        other tasks whose rows the verb may write (a ``cancel``'s dependents), held with
        its own, all at once (:func:`~lldsched.persistence.verb_held`).

        A store that cannot be held (closed, or failing: an outage) lets the verb run
        unheld, as before: its own calls meet the same failure and say it as ever (a
        closed store's verb is refused naming the verb; in an outage a pause or cancel
        carries on, its row written again once the store answers).  A hold whose end
        fails (its commit: the connection lost, the disk full) stored none of the verb's
        writes: the task's row is a failed write, written again as any
        (:meth:`StoreWrites.failed <lldsched.core.storewrites.StoreWrites.failed>`),
        and the verb, already done in the registry, returns as it would have; so is every
        other row it wrote inside (a ``cancel``'s dependents, a retirement's purge: what
        :class:`~lldsched.persistence.HoldNotCommitted` names), and a verb that raised
        raises its own error, those rows failed writes as well.

        ``refused``: the verb, one refused once the scheduler is shut down
        (:meth:`_check_open`), checked first, in any mode: a refused verb makes no store
        call.  Before, it was checked inside, after the hold and the read of the feed,
        which applied other processes' changes to a scheduler that was shut down."""
        if refused is not None:
            self._check_open(refused, task_id)
        coordinator = self._coordinator
        if coordinator is None or storeuse.held_by_another(coordinator.store, self):
            yield
            return
        own: BaseException | None = None
        try:
            with contextlib.ExitStack() as holding:
                try:
                    holding.enter_context(verb_held(coordinator.store, task_id, also))
                except Exception:  # closed or failing: unheld, as the docstring says
                    log.debug("no hold of task %s's row for a verb", task_id, exc_info=True)
                coordinator.sync()  # tells _followed
                try:
                    yield
                except BaseException as exc:
                    own = exc
                    raise
        except Exception as exc:
            if exc is own:
                raise  # the verb's own error, its writes committed
            self._hold_not_committed(task_id, exc)
            if own is not None:
                raise own from None
        finally:
            self._say_stale_unwatched()

    def _say_stale_unwatched(self) -> None:
        """Shared mode, after a verb (caller holds the lock): a scheduler that is not
        running (never started, or shut down) has no timer, whose store calls write the
        rows an outage left stale again within ``poll``; this one writes them at its next
        verb (its read of the feed) or at ``shutdown()``.  Until then the other
        processes go on with those rows as they were (a pause not heard, a task they
        run): said at WARNING, once an outage (docs/CLUSTER.md, the store-restart row of
        the failure matrix).  A process that ends without either writes them at the
        interpreter's exit (:func:`_shut_unwatched`); one that crashes leaves them so."""
        writes = self._core.store_writes
        if writes is None or self._state is RUNNING:
            return
        outage = writes.outage
        if outage is None or not outage.stale or outage is self._stale_said:
            return
        self._stale_said = outage
        if self._state is NEW:
            _unwatched.add(self)  # written at the interpreter's exit, if not before
        left = list(outage.stale)
        shown = ", ".join(left[:STALE_SHOWN])
        more = f" and {len(left) - STALE_SHOWN} more" if len(left) > STALE_SHOWN else ""
        log.warning(
            "scheduler %r is not running: the rows of %s (%s%s) whose writes store %r "
            "failed are written again at its next verb or its shutdown() (at the "
            "interpreter's exit, if neither), not by a timer; until then the other "
            "processes go on with them as they were, and a process that crashes leaves "
            "them so",
            self.name,
            counted(len(left), "task"),
            shown,
            more,
            writes.store,
        )

    def _hold_not_committed(self, task_id: str, error: Exception) -> None:
        """The end of a verb's hold on ``task_id``'s row raised ``error``: its writes are
        not stored, so each row it wrote (``task_id``'s, and every other one a
        :class:`~lldsched.persistence.HoldNotCommitted` names) is a failed write of the
        task as the registry has it now, or, for one no longer registered (removed,
        retired), as the hold last wrote it (a delete: deleted again, as a purge)."""
        writes = self._core.store_writes
        assert writes is not None  # a coordinator's scheduler has a store
        written = error.written if isinstance(error, HoldNotCommitted) else {}
        for written_id in (task_id, *(other for other in written if other != task_id)):
            task = self._core.tasks.get(written_id)
            snapshot = written.get(written_id) if task is None else self._core.snapshot(task)
            if snapshot is None:
                writes.failed(error, "delete", written_id)
            else:
                writes.failed(error, "save", written_id, snapshot)

    def _followed(self, tasks: list[ScheduledTask]) -> None:
        """Tasks another process changed (the coordinator tells every read of the feed,
        :meth:`Coordinator.sync <lldsched.threaded.shared.Coordinator.sync>`): keep the
        loop-task ids, and stop the running coroutine or isolated run of a task paused or
        cancelled elsewhere (as pause() and cancel() do)."""
        for task in tasks:
            if is_loop_action(task.action, task._options.isolation):
                self._loop_ids.add(task.id)
            else:
                self._loop_ids.discard(task.id)
            if task.running and task.status in (TaskStatus.PAUSED, TaskStatus.CANCELLED):
                self._stop_running(task.id, task.status.value)

    def _check_open(self, verb: RefusedVerb, task_id: str) -> None:
        """Refuse ``verb`` on the task once the scheduler is shut down (under the lock,
        before it changes anything): :data:`~lldsched.core.names.REFUSED_AFTER_SHUTDOWN`."""
        if self._state is STOPPED:
            raise shut_down(verb, task_id)

    # -- queries -------------------------------------------------------------

    def task(self, task_id: str) -> ScheduledTask:
        """The task with this id, or :class:`~lldsched.errors.TaskNotFoundError`
        (:class:`~lldsched.errors.TaskRetiredError` if it finished and retired)."""
        with self._lock:
            return self._core.get(task_id)

    def tasks(self) -> list[ScheduledTask]:
        """Every registered task, in registration order (retired tasks are not)."""
        with self._lock:
            return list(self._core.tasks.values())

    def records(self) -> list[ExecutionRecord]:
        """Every record the scheduler still holds: its tasks' histories (each bounded by
        ``history_limit``; a store keeps them all) and those of the tasks it retired (one
        history of that bound), sorted by ``finished``: runs that finished at one
        instant (a ``FakeClock``'s, a coarse clock's tick) come in task order, not in
        the order they ran."""
        with self._lock:
            merged = [record for task in self._core.tasks.values() for record in task.history]
            merged += self._core.retired_records()
        merged.sort(key=_finished)
        return merged

    def schedules(self) -> dict[str, Schedule]:
        """Task id to schedule of every task that has records here: the registered ones,
        and those retired whose records :meth:`records` still holds (a one-off task's
        only while registered: it never overruns; :mod:`lldsched.core.departed`).  What
        :func:`lldsched.views.frames.schedules_of` gives ``task_summary`` to count
        overruns."""
        with self._lock:
            return self._core.schedules()

    def priorities(self) -> dict[str, int]:
        """Task id to :class:`~lldsched.model.Priority` value of every task that has
        records here, retired ones included (each as it was when it retired): the
        priority column of :func:`lldsched.views.frames.to_frame`."""
        with self._lock:
            return self._core.priorities()

    def packed_records(self) -> list[Rows]:
        """What :meth:`records` holds, packed (:mod:`lldsched.core.packedstats`) and not
        yet in finish order (``records()`` is these records sorted by ``finished``, ties
        in this order): :func:`~lldsched.views.frames.to_frame` reads it with numpy."""
        with self._lock:
            return self._core.packed_records()

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, oldest failure first."""
        with self._lock:
            return self._core.dead_letter()

    def orphans(self) -> list[str]:
        """Ids of the tasks the store restored that no ``schedule(..., id=...)`` has named
        since this scheduler was built, in the order restored: once a service registered
        its jobs, the ones its code no longer defines (docs/UPGRADING.md).  They still run
        as stored: ``remove`` them, or register them again."""
        with self._lock:
            return self._core.orphans()

    def pending(self) -> list[ScheduledTask]:
        """Tasks waiting in the heap, in the order they will run (an entry the timer has
        handed to the workers or the event loop is not here until it runs).  After
        :meth:`shutdown`, every task left due, handed out or not: what a drain did not run
        is queued again as it was, as in a ``Simulation`` (docs/decisions/simulation.md, "What a
        simulation's metrics read after its shutdown")."""
        with self._lock:
            return self._queue.pending()

    def queue_stats(self) -> QueueStats:
        """How many entries the heap holds, and how many are tombstones (after
        :meth:`shutdown`, those left due included, as :meth:`pending` says)."""
        with self._lock:
            return self._queue.stats()

    def metrics(self, timeout: float | timedelta | None = None) -> Metrics:
        """One read of the scheduler's health and load, for a dashboard and a health check
        (:class:`~lldsched.core.metrics.Metrics`: the timer's liveness, the pool's load,
        the backlog and its lag, the dead letter, the records by outcome, the store).

        Taken in one hold of the lock, so its fields agree; O(1) in the tasks and
        records (the hand-off queue, at most its capacity, and the entries waiting for a
        coroutine slot are read for their live entries).  ``timeout`` bounds the wait for
        the lock (seconds or a ``timedelta``; ``None``: as long as it takes): past it,
        :class:`~lldsched.errors.SchedulerBusyError` (a ``TimeoutError``), which is what a
        liveness probe should report, since a lock held that long (a store call that
        hangs) dispatches nothing."""
        # Imported here: one more name in this module's globals cost every registration
        # 27 instructions (benchmarks/threaded_instructions.py register).
        from lldsched.threaded.deadline import Deadline

        wait = None if timeout is None else wait_seconds(timeout, name="metrics() timeout")
        with Deadline(wait, grace=0.0).holding(self._lock) as hold:  # no Ctrl-C inside (Hold)
            if not hold.held:
                raise SchedulerBusyError(
                    f"metrics(timeout={timeout!r}): the scheduler's lock was held by another "
                    "thread all that time (a store call that hangs under it?); nothing is "
                    "dispatched while it is"
                )
            pool = self._pool
            queue = self._queue
            # Live entries only, as the heap's: one a verb stopped or moved since the
            # timer handed it out is a tombstone until a worker drops it, no run waiting
            # (busy is what is in flight beside every entry waiting, tombstones too).
            handoff, first = pool.count(lambda entry: queue.live(entry) is not None)
            # The same rule for the loop tasks' entries waiting for a coroutine slot:
            # their tombstones are no run waiting, the oldest live one is late (lag).
            in_hand = self._coroutines.in_hand
            dropped, waiting_due = self._coroutines.read_waiting(queue.live)
            coroutines = in_hand - dropped
            handed_due = None if first is None else first[0]
            handed = [due for due in (handed_due, waiting_due) if due is not None]
            timer = self._timer
            return take(
                self._core,
                queue,
                at=self._clock.now(),
                state=self._state,
                timer_alive=timer is not None and timer.is_alive(),
                timer_woke=self._last_look.woke,
                workers=pool.workers,
                busy=self._in_flight - pool.waiting - in_hand,
                handoff=handoff,
                coroutines=coroutines,
                handed_out_due=min(handed, default=None),
                dropped_events=self._dispatcher.dropped,
            )

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
