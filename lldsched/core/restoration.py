"""Restoring and following: the core's part that registers tasks as a store described
them, re-plans them after downtime or a clock jump, and adopts a state another
process settled.

The decisions (which slots misfired, what runs when) are
:mod:`lldsched.core.recovery`'s and, in shared mode, the store's; :class:`Restoration`,
mixed into :class:`~lldsched.core.machine.SchedulerCore`, carries them out without
firing transitions of its own.  No thread, no lock: the runtime serialises calls.

What it remembers of a restored task (``_orphans``, ``_restored_names``) goes when the
task leaves the registry, however it leaves: registered again, removed (here, or by
another process: the feed's removal is a ``remove``), or retired
(:meth:`Restoration._unrestored`).  A shared store's follower restores every task
another process registers, so an entry that outlived its task was one for each, for
good (docs/decisions/lifecycle.md, "Every per-task container empties when its task
leaves").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from lldsched.core.calls import check_call
from lldsched.core.ids import sequential_ids
from lldsched.core.names import (
    BLOCKED,
    CANCELLED,
    FAILED,
    GIVEN_UP,
    RUNNABLE,
    SLOT_HELD,
    SUCCEEDED,
)
from lldsched.core.parts import CoreParts
from lldsched.core.registration import options_of, validated
from lldsched.core.task import Restored, ScheduledTask, TaskOptions, fit_flight
from lldsched.errors import ValidationError
from lldsched.logs import STORE
from lldsched.model import ExecutionRecord, TaskEvent, TaskStatus
from lldsched.policies import RetryPolicy
from lldsched.schedules.base import Schedule
from lldsched.schedules.decorators import restore_runs

log = logging.getLogger(STORE)

__all__ = ["Restoration"]


class Restoration(CoreParts):
    """Mixed into SchedulerCore (see the module docstring)."""

    # -- recovery (the decisions are lldsched.core.recovery's; these carry them out) ----

    def restore(
        self,
        restored: Iterable[Restored],
        dead_letter: Iterable[str] = (),
    ) -> list[ScheduledTask]:
        """Register tasks as a store described them; nothing is queued or saved.

        All or nothing: an id already registered rejects the whole batch.  FAILED
        tasks enter the dead letter in the order of ``dead_letter`` (ids it does not
        name follow, in registration order).  With the default id generator, new
        ids continue after the restored ones.  The finished ones (SUCCEEDED,
        CANCELLED) are held by the retention from their last record (from now
        without one), and those past it retire at once; so do the rows of a shared
        store (:mod:`lldsched.core.follow`), finished by other processes
        (``purge_retired`` deletes them as it retires them: :mod:`~lldsched.core.retention`).
        """
        fits: set[Hashable] = set()  # call shapes checked in this batch (_check_stored_call)
        entries = list(restored)
        batch = [self._rebuild(entry, fits) for entry in entries]
        for task in batch:
            if task.id in self.tasks:
                raise ValidationError(f"cannot restore {task.id!r}: that id is already registered")
        failed = {task.id: None for task in batch if task.status is FAILED}
        ordered = {task_id: None for task_id in dead_letter if task_id in failed}
        for task in batch:
            self.tasks[task.id] = task
        linked = [entry for entry in batch if entry.depends_on]
        if linked:  # after the whole batch: upstreams' histories are in place
            deps = self._dependencies()
            now = self.clock.now()
            for task in linked:
                for upstream in task.depends_on:
                    if upstream not in self.tasks:
                        deps.purged(upstream)
            moved = {entry.definition.id: entry.blocked for entry in entries if entry.blocked}
            for task in linked:
                deps.link(task, task.history)
                if task.status is BLOCKED:
                    deps.blocked_at[task.id] = now  # the wait is counted from the restart
                    if task.id in moved:  # for the slot found blocked, a reschedule moved
                        deps.blocked_slot[task.id] = moved[task.id]
        for task_id in [*ordered, *failed]:
            self._dead[task_id] = None
        now = self.clock.now()
        finished = [  # in the order they finished, as far as their records tell
            (history[-1].finished if history else now, task.id)
            for task in batch
            if task.status is SUCCEEDED or task.status is CANCELLED
            for history in (task.history,)
        ]
        for at, task_id in sorted(finished):
            self._retention.finished(task_id, at)
        self._retire(now)
        self._orphans.update((task.id, None) for task in batch)
        self._restored_names.update(
            (task.name, task.id)
            for task in batch
            if task.status is not SUCCEEDED and task.status is not CANCELLED
        )
        # Restored at construction, before the generator issued an id.  Rows followed
        # later (core/follow.py) never meet the default generator: a shared scheduler's
        # ids carry its store's node (threaded/scheduler.py), so a followed ``task-N`` can
        # neither set it back nor make it hand out an id already used.
        if self._default_ids:
            numbers = [_id_number(task.id) for task in batch]
            highest = max((n for n in numbers if n is not None), default=0)
            if highest:
                self._ids = sequential_ids(start=highest + 1)
        return batch

    def _unrestored(self, task: ScheduledTask) -> None:
        """``task`` leaves the registry (removed, here or by another process; retired):
        it is no longer an orphan, and a registration of its name no longer meets it.
        Without this both entries outlived it: a shared store's follower restores every
        task another process registers, so they grew by one for each for good."""
        self._orphans.pop(task.id, None)
        names = self._restored_names
        if names.get(task.name) == task.id:
            del names[task.name]

    def _registered_again(self, name: str, action: object) -> None:
        """A registration without ``id=`` of a task a store restored, still live, with
        the same name and action: both will run.  Said once per name, as a warning: a
        service that registers its tasks at every start (the ``scheduled()`` decorator
        at import time, typically) on a durable store gets one more copy of each at
        every restart, and the job runs N times a slot after N restarts.  The fix is
        the caller's (``id=`` and ``replace_existing=True``); the registration goes
        ahead, as registering without an id always has."""
        task_id = self._restored_names.pop(name, None)
        task = None if task_id is None else self.tasks.get(task_id)
        if task is None or task.action != action:
            return
        log.warning(
            "task %r is registered again without id=, beside %s (%s), which the store "
            "restored: both run, and each restart adds one more; register it with "
            "id=%r, replace_existing=True (scheduled() takes them too)",
            name,
            task_id,
            task.status.value,
            task_id,
            extra={"task_id": task_id, "task_name": name},
        )

    def owe(self, task: ScheduledTask) -> None:
        """``task`` (restored SCHEDULED, due at the attempt that was in flight when the
        last process on the store died) owes that attempt: until it begins, every row
        written for it without a transition (:meth:`replan`, recovery's and ``start()``'s)
        keeps saying so, ``running`` set with the counter as it is (read back as owed by
        :func:`~lldsched.core.recovery.restored_state`).  Written as a plain ``scheduled``
        row, a restart killed before the attempt ran left the next one a slot of its
        downtime, which the misfire policy decided (``SKIP``: missed, the run lost).
        Ends once the task is due elsewhere or a run of it finished (its row then says
        what that run left)."""
        due = task.next_run_at
        if due is not None:
            self._owed[task.id] = (due, task.run_count)

    def cut_flight_ended(self, task: ScheduledTask) -> None:
        """``task`` was restored finished (SUCCEEDED or CANCELLED) from a row still
        flagged with the attempt in flight when the last process on the store died: no
        start runs that attempt, so its row says so from now on (``running`` down),
        unless the retention purged it as it was restored (docs/decisions/persistence.md,
        "A restart writes down the flag of a finished task's cut run")."""
        if task.id in self.tasks or not self._retention.purge:
            self._save(task)

    def replan(
        self,
        task: ScheduledTask,
        *,
        due: float,
        schedule: Schedule | None = None,
        slot: float | None = None,
        grid: float | None = None,
    ) -> None:
        """Queue ``task`` (SCHEDULED or RETRYING) at ``due`` under ``schedule`` (its own,
        or a catch-up plan in front of it; None: what it has, a plan included), its
        pending attempts now belonging to ``slot`` if given, and write it through the
        store; a PAUSED task is not queued, ``due`` becomes the instant ``resume()``
        queues it at.  A change that is no transition (recovery, a clock jump): no
        event is published.  A RUNNING task with a slot queued behind its runs in
        flight (``Overlap.ALLOW``, ``CANCEL_OTHER``: its flight's pending slot) has that
        slot moved to ``due``; its runs go on.  ``grid``: the origin of the fixed-rate
        grid its slots are counted on from now, if given (a row another node wrote: the
        simulated cluster's :class:`~lldsched.sim.leases.TaskRow`)."""
        if schedule is not None:
            task._schedule = schedule
        if slot is not None:
            task._slot = slot
        if grid is not None:
            task._grid = grid
        flight = task._flight
        if flight is not None and flight.pending is not None:  # the slot queued behind runs
            flight.pending = due
        if task.status is TaskStatus.PAUSED:
            task.next_run_at = due
        else:
            self._enqueue(task, due)
        self._save(task)

    def adopt(
        self,
        task: ScheduledTask,
        *,
        status: TaskStatus,
        next_run_at: float | None,
        attempt: int,
        run_count: int,
        failure_count: int,
        last_error: str | None,
        slot: float | None = None,
        grid: float | None = None,
        blocked: tuple[float, float] | None = None,
    ) -> None:
        """Take the state another process decided for ``task`` (a shared store's change
        feed: a run settled there, docs/CLUSTER.md): status, due instant, attempt and
        counters, queued if runnable, in the dead letter if FAILED, held by the retention
        if SUCCEEDED or CANCELLED, as one finished here (:meth:`_finished
        <lldsched.core.machine.SchedulerCore._finished>`: it may retire at once).
        ``slot``: the slot of the run due, when not its due instant (the row's,
        :attr:`TaskSnapshot.slot <lldsched.persistence.TaskSnapshot.slot>`: a plan's run
        resumed after its slot passed; for a retry, due or paused, the slot its attempts
        belong to, which it keeps if not given).  ``grid``: the origin of the fixed-rate
        grid the row counts its slots on (:attr:`TaskSnapshot.grid
        <lldsched.persistence.TaskSnapshot.grid>`; None: the one kept here stays), taken
        with the slot.  ``blocked``: the due instant and slot a BLOCKED row's wait was found
        blocked at, when a reschedule moved its next slot (the row's
        :attr:`TaskSnapshot.blocked_due <lldsched.persistence.TaskSnapshot.blocked_due>`),
        which its record names.  Nothing is written (the store's row already says
        so; a retirement writes nothing but a purge: :mod:`lldsched.core.retention`); listeners
        hear of a status change.  Never for a task running here: its own finish decides."""
        previous = task.status
        self._queue.discard(task)
        task.status = status
        task.attempt = attempt
        if next_run_at is not None and status in SLOT_HELD:
            # Paused, the slot its resume runs: a plan's run keeps its slot (put off
            # already: the row's), a retry the slot its attempts belong to.
            if not attempt:  # a fresh slot
                task._slot = next_run_at if slot is None else slot
            elif slot is not None:  # a retry: the slot its attempts belong to, if given
                task._slot = slot
            if grid is not None:  # the writer's grid: its slots counted on from its origin
                task._grid = grid
        if status in RUNNABLE and next_run_at is not None:
            self._enqueue(task, next_run_at)
        else:
            task.next_run_at = next_run_at
        self.adopt_counts(
            task, run_count=run_count, failure_count=failure_count, last_error=last_error
        )
        # A Window's max_runs counts the successful runs of every process, as a restart
        # hands them back (the stores' decode_task: runs=run_count - failure_count).
        restore_runs(task.schedule, task.id, run_count - failure_count)
        if status is FAILED:
            self._dead[task.id] = None
        else:
            self._dead.pop(task.id, None)
        if self._deps is not None:
            self.adopted_wait(task, previous, blocked)  # when its wait began, and its slot
        if status is not previous and self.emit is not None:
            self.emit(TaskEvent(task.id, task.name, previous, status, self.clock.now()))
        if status is SUCCEEDED or status is CANCELLED:  # finished here too: it may retire
            self._finished(task, self.clock.now())

    def order_dead_letter(self, dead_letter: Iterable[str]) -> None:
        """Put the dead letter in the order of ``dead_letter`` (a store's, oldest failure
        first: :meth:`~lldsched.persistence.HistoryStore.dead_letter`); the ids it does not
        name follow, in the order they entered it.  For the rows
        :func:`~lldsched.core.follow.load` registers one by one, which enter it in the
        order they were registered, not failed (:meth:`restore` orders a batch itself)."""
        dead = self._dead
        ordered = {task_id: None for task_id in dead_letter if task_id in dead}
        rest = [task_id for task_id in dead if task_id not in ordered]
        dead.clear()
        dead.update(ordered)
        dead.update(dict.fromkeys(rest))

    def learnt(self, task: ScheduledTask) -> None:
        """``task`` was just registered here from a row another process wrote (a shared
        store's change feed: :func:`~lldsched.core.follow.follow`): the listeners hear it
        as a registration (``previous`` None), with the status its row has (PAUSED for
        one registered paused, as the process that registered it heard it).  Once:
        the feed never gives a process its own rows, so its own registrations are heard
        only as it made them; and a row that retired at once was never held here, and is
        not heard.  The rows :func:`~lldsched.core.follow.load` registers at construction
        are not heard either, as a restart's restored tasks are not."""
        if self.emit is not None:
            self.emit(TaskEvent(task.id, task.name, None, task.status, self.clock.now()))

    def adopt_counts(
        self, task: ScheduledTask, *, run_count: int, failure_count: int, last_error: str | None
    ) -> None:
        """Take the run counters of ``task``'s row (another process's runs), as
        :meth:`adopt` does; alone, its state kept: a task cancelled here whose row the
        store has not stored yet, written with them (:func:`~lldsched.core.follow.follow`).
        Nothing is written or heard."""
        if run_count or failure_count or task._stats is not None:
            stats = self._stats(task)
            stats.run_count = run_count
            stats.failure_count = failure_count
            stats.last_error = last_error

    def adopt_streak(self, task: ScheduledTask, records: Iterable[ExecutionRecord]) -> None:
        """Take the slots ``task`` gave up in a row from ``records`` (the store's, oldest
        first), as a restart does: on a shared store the streak that
        ``RetryPolicy.fail_after_given_up`` counts runs across the processes, and the
        store's records are its only truth."""
        given_up = _streak(task, records)
        if given_up or task._stats is not None:
            self._stats(task).given_up = given_up

    def _rebuild(self, restored: Restored, fits: set[Hashable]) -> ScheduledTask:
        definition = restored.definition
        _, _, priority, options = validated(  # the stored action and schedule are kept
            definition.name,
            definition.action,
            definition.schedule,
            tz=self.tz,
            **options_of(definition),
            check_arguments=False,  # a changed signature fails its runs, not the start
        )
        if definition.action is not None:
            _check_stored_call(definition.id, definition.name, definition.action, options, fits)
        task = ScheduledTask(
            task_id=definition.id,
            name=definition.name,
            action=definition.action,
            schedule=definition.schedule,
            priority=priority,
            options=options,
            first_run=restored.next_run_at,
        )
        fit_flight(task)
        task.status = restored.status
        task.attempt = restored.attempt
        task._slot = restored.slot
        # A fixed rate's grid goes on from the origin its row keeps (next_on_grid checks
        # the slot is on it); a row without one (an older release's) starts it at the slot.
        task._grid = restored.slot if restored.grid is None else restored.grid
        if restored.run_count or restored.history:
            stats = self._stats(task)
            stats.run_count = restored.run_count
            stats.failure_count = restored.failure_count
            stats.last_error = restored.last_error
            for record in restored.history:
                stats.add(record)
            stats.given_up = _streak(task, restored.history)
        return task


def _check_stored_call(
    task_id: str,
    name: str,
    action: Callable[..., Any],
    options: TaskOptions,
    fits: set[Hashable],
) -> None:
    """Warn, naming the task, when its stored arguments no longer fit its action's
    signature (the function changed in a redeploy): its runs would fail with a
    ``TypeError`` until it is registered again.  Not an error: the new code usually
    registers it again with arguments that fit, right after the store is opened.

    ``fits`` holds the call shapes (action, positional count, keyword names, ``ctx``)
    that fitted earlier in the batch: many tasks share one, and a builtin's signature is
    parsed anew each time (restoring 2,000 tasks of ``len`` took 2.6x as long)."""
    keywords = tuple(options.kwargs) if options.kwargs else ()
    shape: Hashable | None = (action, len(options.args), keywords, options.pass_context)
    try:
        if shape in fits:
            return
    except TypeError:  # an unhashable callable object: checked every time
        shape = None
    try:
        check_call(name, action, options, values=False)  # a log line: no argument's value
    except ValidationError as exc:
        log.warning(
            "task %s, restored from the store, cannot be called as stored: %s. Its runs "
            "fail until it is registered again with arguments that fit (id=%r, "
            "replace_existing=True), or removed",
            task_id,
            exc,
            task_id,
            extra={"task_id": task_id, "task_name": name},
        )
    else:
        if shape is not None:
            fits.add(shape)


def _streak(task: ScheduledTask, records: Iterable[ExecutionRecord]) -> int:
    """``task``'s slots given up in a row, from its ``records`` (oldest first), its status
    set: for a live task at or past its ``fail_after_given_up``, modulo that limit, since
    each limit reached failed the task and a redrive began a new streak (the records do
    not mark it; a live task's streak is below its limit)."""
    given_up = _given_up_in_a_row(records)
    retry = task._options.retry
    limit = retry.fail_after_given_up if type(retry) is RetryPolicy else None
    if limit and given_up >= limit and task.status is not FAILED:
        given_up %= limit
    return given_up


def _given_up_in_a_row(history: Iterable[ExecutionRecord]) -> int:
    """Slots given up since the last successful run in ``history`` (a store keeps no
    counter: the records are the truth, as far back as it keeps them)."""
    count = 0
    for record in reversed(tuple(history)):
        if record.ok:
            break
        count += record.misfire is GIVEN_UP
    return count


def _id_number(task_id: str) -> int | None:
    """17 for ``"task-17"`` (the default generator's form), else None."""
    prefix, _, number = task_id.rpartition("-")
    return int(number) if prefix == "task" and number.isdigit() else None
