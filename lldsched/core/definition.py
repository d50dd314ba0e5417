"""The definition verbs: changing what a task runs and when, never its status.

:class:`DefinitionVerbs` is the part of :class:`~lldsched.core.machine.SchedulerCore`
that carries out ``add(..., replace_existing=True)``, :meth:`~DefinitionVerbs.reschedule`,
:meth:`~DefinitionVerbs.modify` and :meth:`~DefinitionVerbs.run_now` (the rules are in
docs/decisions/changing-a-task.md, "Changing a task"), and decides what a registration that names
its id registers (:meth:`~DefinitionVerbs._replaced`: a new task under a free id, a
registered task replaced, or a retired one, :meth:`~DefinitionVerbs._replace_retired`).
It is a mixin so the core's lifecycle edges (a run's, :mod:`~lldsched.core.runs`; an
operator's, :mod:`~lldsched.core.control`) and its definition changes (here) read as
modules of one state machine: the registry, the queue and the store are the core's,
reached through the members :class:`~lldsched.core.parts.CoreParts` declares.  Like the
rest of the core it never sleeps and has no lock: the runtime serialises calls.

Every change is written through the store before it takes effect; a store that
refuses it puts the task back as it was (:class:`_Definition`) and the call raises.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, NamedTuple

from lldsched.checks import FARTHEST
from lldsched.core.misfires.firstpassed import first_passed
from lldsched.core.names import (
    BLOCKED,
    CANCELLED,
    COALESCED,
    MISSED,
    PAUSED,
    RETRYING,
    RUNNABLE,
    RUNNING,
    SCHEDULED,
    SUCCEEDED,
)
from lldsched.core.parts import CoreParts
from lldsched.core.publishing import verb_written
from lldsched.core.registration import UNCHANGED, Unchanged, check_overlap, validated
from lldsched.core.schedulearg import schedule_of
from lldsched.core.store.writes import check_store, refused
from lldsched.core.task import DEFAULT_OPTIONS, ScheduledTask, TaskOptions, fit_flight
from lldsched.errors import ScheduleError, SchedulerStateError, ValidationError, shown
from lldsched.logs import instant_text
from lldsched.model import Priority, TaskEvent, TaskStatus
from lldsched.policies import RetryPolicy
from lldsched.printable import name_after
from lldsched.schedules.base import Schedule, checked_answer
from lldsched.schedules.catchup import FIRST_RUN, CatchUp, slot_first, unwrap
from lldsched.schedules.decorators import restore_runs

__all__ = ["DefinitionVerbs"]


class DefinitionVerbs(CoreParts):
    """Reschedule, modify, run now and replace: mixed into the core."""

    def reschedule(self, task_id: str, schedule: Schedule | str) -> ScheduledTask:
        """Give the task a new *when*: same id, same history, as if registered now.

        A task free to run (SCHEDULED, or PAUSED between runs) is due at the new
        schedule's ``first_run(now)`` (a paused one stays paused until then).  A task
        with work owed (a run in flight, a retry pending, also while paused) does
        that work first: the new schedule's first run then counts from the finish
        of the run that completes it.  A FAILED task takes the schedule and stays in
        the dead letter (``redrive`` runs it).  A slot already due before now (the run a
        restart's misfire decision folded the passed slots into, and the rest of its
        catch-up plan) is owed work too, and runs first (:func:`_owed`); any other plan
        in front of the schedule (an extra run from :meth:`run_now`) is dropped.

        :class:`SchedulerStateError` for a SUCCEEDED or CANCELLED task (nothing will
        run again); :class:`ScheduleError` for a schedule that never fires.
        """
        task = self.get(task_id)
        check_store(self._writes, "reschedule", task_id)
        self._check_changeable(task, "reschedule")
        schedule = schedule_of(task.name, schedule, tz=self.tz)
        options = task._options
        if options.overlap is not None:  # the policy must suit the new schedule too
            check_overlap(
                task.name, schedule, overlap=options.overlap, max_instances=options.max_instances
            )
        now = self.clock.now()
        first = first_run(task.name, schedule, now)
        saved = _Definition.of(task)
        due, behind = self._start_afresh(task, schedule, first, now)
        self._commit(task, saved, anew=True)
        if behind:
            self._drop_behind(task)
        if due is not None:
            self._enqueue(task, due)
        self._announce(task, now)
        if due is not None and due < now:  # a schedule of one's own answered slots passed
            first_passed(self, task, now)
        return task

    def modify(
        self,
        task_id: str,
        *,
        priority: Priority | int | Unchanged = UNCHANGED,
        retry: RetryPolicy | Unchanged | None = UNCHANGED,
        timeout: float | timedelta | Unchanged | None = UNCHANGED,
    ) -> ScheduledTask:
        """Change how the task runs; what is not given stays as it is.  Each value is
        read as at registration: ``retry=None`` is the default ``RetryPolicy()`` (not
        "no retries": ``RetryPolicy(max_attempts=1)``), ``timeout=None`` no timeout.

        The new values govern everything decided after the call: a queued entry
        takes the new priority at once, the run in flight is judged at its finish
        against the new timeout and retry policy, a pending retry keeps its due
        time.  A new timeout also re-arms the run in flight from its begin
        (:func:`~lldsched.core.runs.rearmed`, through the runtime's ``on_retime``): a
        thread's cooperative flag or a coroutine's cancellation goes off at the begin
        plus the new timeout, at once if that has passed, and never for ``None``; a
        flag already up stays up, and its run is recorded with the budget that raised
        it, unless it ran on past the new timeout too: then with that one.  A
        process-isolated run's child is killed at its start plus the new timeout
        (docs/decisions/changing-a-task.md, "A run in flight is held to its task's timeout now").
        :class:`SchedulerStateError` for a SUCCEEDED or CANCELLED task.
        """
        task = self.get(task_id)
        check_store(self._writes, "modify", task_id)
        self._check_changeable(task, "modify")
        old = task._options
        _, _, new_priority, options = validated(
            task.name,
            task.action,
            task._schedule,
            tz=self.tz,
            priority=task.priority if priority is UNCHANGED else priority,
            retry=old.retry if retry is UNCHANGED else retry,
            timeout=old.timeout if timeout is UNCHANGED else timeout,
            args=old.args,
            kwargs=old.kwargs,
            misfire=old.misfire,
            overlap=old.overlap,
            max_instances=old.max_instances,
            isolation=old.isolation,
            depends_on=old.depends_on,
            check_arguments=False,  # judged when it was registered
        )
        if new_priority is task.priority and options == old:
            return task  # nothing to change: nothing written, nothing announced
        now = self.clock.now()
        saved = _Definition.of(task)
        with task.redefining():
            task.priority = new_priority
            task._options = options
        self._commit(task, saved)
        if task._queued and new_priority is not saved.priority:
            self._requeue(task)
        self._retime(task, saved.options.timeout)
        self._announce(task, now)
        return task

    def run_now(self, task_id: str) -> bool:
        """Run the task once more, at once, without moving its schedule's grid; True if
        a run was queued or brought forward.

        A SCHEDULED task gets an extra run due now (its record's ``due`` and ``slot``
        are this instant); the slot it was waiting for stays in place and runs next
        (late, if the extra run outlasts it).  The extra run is an ordinary attempt
        under the task's retry policy.  A RETRYING task has its pending retry brought
        forward to now, its attempt counter kept.  False when nothing changes, and
        nothing is remembered to run later: the task is due at once anyway, running
        (a run_now adds no run beside one in flight, whatever the task's ``overlap``,
        which is for the slots of its schedule: call it again once the run has
        finished), paused (resume it first), blocked on its upstreams (its slot runs
        when they have succeeded), a dependent whose upstreams have not all succeeded
        since its previous slot started (the extra run could only wait for them, then
        take the success the slot it put off waits for), failed (redrive it), or
        finished.  A dependent's extra run uses its upstreams' successes as any slot
        does: the slot it put off waits for their next ones.
        """
        task = self.get(task_id)
        check_store(self._writes, "run now", task_id)
        previous = task.status
        due = task.next_run_at
        now = self.clock.now()
        if previous not in RUNNABLE or due is None or due <= now:
            return False
        if previous is SCHEDULED and task.depends_on and self._would_wait(task):
            return False  # its extra run could not run now (docs/decisions/dependencies.md)
        if previous is SCHEDULED:
            task._schedule = slot_first(task._schedule, due)  # then the slot it waited for
            task._slot = now
        self._enqueue(task, now)
        verb_written(self, task, previous)
        return True

    def _replaced(
        self,
        task_id: str | None,
        *,
        replace_existing: bool,
        name: str,
        action: Callable[..., Any] | None,
        schedule: Schedule,
        priority: Priority,
        options: TaskOptions,
    ) -> ScheduledTask | None:
        """A registration that names its id, or asks to replace: the task replaced (an
        id registered, or retired, with ``replace_existing``), or None when ``task_id``
        is free and a new task is registered under it.  An id registered without
        ``replace_existing``, or ``replace_existing`` without an id, is a
        :class:`ValidationError` naming it."""
        if task_id is None:
            raise ValidationError(
                f"task {name!r}: replace_existing=True needs the id= of the task to replace"
            )
        if self._orphans:  # the code registers it again: no longer an orphan
            self._orphans.pop(task_id, None)
        retired_as = self._retention.registered(task_id)  # a retired task of it is history
        if retired_as is not None and replace_existing:
            return self._replace_retired(
                task_id,
                retired_as,
                name=name,
                action=action,
                schedule=schedule,
                priority=priority,
                options=options,
            )
        existing = self.tasks.get(task_id)
        if existing is None:
            return None
        if not replace_existing:
            said = f"task id {task_id!r} is already registered (task {existing.name!r}, "
            if existing.status is SUCCEEDED or existing.status is CANCELLED:
                # replace_existing would update a definition nothing runs again
                raise ValidationError(
                    f"{said}{existing.status.value}): a finished task does not run again, "
                    f"and replace_existing=True would only update its definition; "
                    f"{_anew(task_id)}"
                )
            raise ValidationError(
                f"{said}{existing.status.value}); pass replace_existing=True to update it"
            )
        return self._replace(
            existing,
            name=name,
            action=action,
            schedule=schedule,
            priority=priority,
            options=options,
        )

    def _replace_retired(
        self,
        task_id: str,
        status: TaskStatus,
        *,
        name: str,
        action: Callable[..., Any] | None,
        schedule: Schedule,
        priority: Priority,
        options: TaskOptions,
    ) -> ScheduledTask:
        """``replace_existing`` registration of an id that finished and retired: what
        replacing it would have done had it stayed registered.  The task takes the new
        definition and keeps its finished ``status`` (nothing runs), is written through
        the store, announced as an event whose ``previous`` equals its status, and
        retires again under the retention.  So a service that registers a one-off job by
        id at every start runs it once, whether the finished task was still held or not
        (docs/decisions/lifecycle.md, "Finished tasks retire")."""
        self._chosen_ids = True
        task = ScheduledTask(task_id, name, action, schedule, priority, options, None)
        task.status = status
        if options is not DEFAULT_OPTIONS and options.overlap is not None:
            fit_flight(task)
        self.tasks[task_id] = task
        if self._store is not None:  # a failed save registers nothing: still retired
            self._first_write(task, store=self._store, retired_as=status)
        if options.depends_on:
            self._dependencies().link(task)
        self.replaced_unheld(task)
        return task

    def replaced_unheld(self, task: ScheduledTask) -> None:
        """The end of a ``replace_existing=True`` registration of a task this registry
        did not hold, now registered with the state it had: one that retired here
        (:meth:`_replace_retired`), or a shared store's row this process had left out
        (it could not load the definition another release wrote) and took over
        (docs/CLUSTER.md, "Rolling deploys").  What replacing it would have done had it
        been held (:meth:`_replace`): it keeps its status, a finished one included, so
        nothing runs again; the listeners hear the replacement, an event whose
        ``previous`` equals its status, not a transition it never made here; and a
        finished one (SUCCEEDED, CANCELLED) counts as finished from now for the
        retention, and retires again under it.  The one rule of both: a service that
        registers a one-off job by id at every start runs it once, whether this process
        held it, retired it or could not load it."""
        now = self.clock.now()
        status = task.status
        if self.emit is not None:
            self.emit(TaskEvent(task.id, task.name, status, status, now))
        self._finished(task, now)

    def _replace(
        self,
        task: ScheduledTask,
        *,
        name: str,
        action: Callable[..., Any] | None,
        schedule: Schedule,
        priority: Priority,
        options: TaskOptions,
    ) -> ScheduledTask:
        """Give a registered task a new definition (``add(..., replace_existing=True)``).

        Whether it runs does not change: a paused task stays paused, a finished one
        (SUCCEEDED, FAILED, CANCELLED) stays finished.  An equal schedule keeps the
        task's due time and any plan in front of it (a service that registers its
        jobs again at every start moves nothing); a different one is a
        :meth:`reschedule`.  An identical definition changes nothing at all.  A run
        in flight keeps the action and options it began with (:class:`Run
        <lldsched.core.task.Run>`); the next attempt takes these.  A new timeout
        re-arms the run in flight, as :meth:`modify`'s does: its budget is the task's.
        """
        saved = _Definition.of(task)
        new_schedule = unwrap(task._schedule) != schedule
        if not new_schedule and saved[:4] == (name, action, priority, options):
            return task
        now = self.clock.now()
        first = first_run(name, schedule, now) if new_schedule else None
        with task.redefining():
            task.name = name
            task.action = action
            task.priority = priority
            task._options = options
            fit_flight(task)
            due, behind = (
                (None, False) if first is None else self._start_afresh(task, schedule, first, now)
            )
        self._commit(task, saved, anew=first is not None)
        if behind:
            self._drop_behind(task)
        if due is not None:
            self._enqueue(task, due)
        elif task._queued and priority is not saved.priority:
            self._requeue(task)
        self._retime(task, saved.options.timeout)
        self._announce(task, now)
        if options.depends_on != saved.options.depends_on:
            self._relink(task, saved.options.depends_on)  # other upstreams: wait for them
        if due is not None and due < now:  # a schedule of one's own answered slots passed
            first_passed(self, task, now)
        return task

    def _retime(self, task: ScheduledTask, before: float | None) -> None:
        """A modify or a replace gave ``task`` its definition (committed), whose timeout
        was ``before``: if that changed, the runtime re-arms each run in flight against
        the new one (``on_retime``; the rule is :func:`~lldsched.core.runs.rearmed`)."""
        on_retime = self.on_retime
        if on_retime is not None and task._run is not None and task._options.timeout != before:
            for run in task.runs:
                on_retime(run)

    def _start_afresh(
        self, task: ScheduledTask, schedule: Schedule, first: float, now: float
    ) -> tuple[float | None, bool]:
        """Put ``schedule`` in place as if the task were registered now (its first run
        then is ``first``, or counted from the finish of the work owed first: a run in
        flight, a pending retry, a slot already due, :func:`_owed`), changing only what
        :class:`_Definition` puts back; returns the instant to queue it at (None: its
        queue entry, if any, stays as it is), and whether the slot an overlapping task
        queued behind its runs in flight is to go (:meth:`_drop_behind`, once the store
        took the change: the old schedule's slot, dropped as a plan in front is)."""
        status = task.status
        owed = (
            _owed(task, now, decided_here=self.node is None)
            if status is SCHEDULED and task._run is None
            else None
        )
        if owed is not None:  # a slot already due runs first: the new schedule follows it
            task._schedule = CatchUp(schedule, owed, FIRST_RUN)
            return None, False
        if status in (SCHEDULED, PAUSED, BLOCKED) and task._run is None and not task.attempt:
            if status is BLOCKED:  # its wait goes on, recorded for the slot found blocked
                self._wait_moved(task)
            task._schedule = schedule
            task.next_run_at = task._slot = task._grid = first  # a new grid starts there
            # resume() queues a paused one; a blocked one is queued when released
            return (first if status is SCHEDULED else None), False
        if status in (RUNNING, RETRYING, PAUSED):  # owed work first, then a fresh start
            behind = _owed_behind(task._schedule) if status is not PAUSED else []
            task._schedule = CatchUp(schedule, behind, FIRST_RUN)
            flight = task._flight
            return None, flight is not None and flight.pending is not None
        # finished: nothing is queued (redrive starts a FAILED task again)
        task._schedule = schedule
        return None, False

    def _drop_behind(self, task: ScheduledTask) -> None:
        """Drop the slot an overlapping task queued behind its runs in flight (a new
        schedule took its place: :meth:`_start_afresh`).  After the store took the
        change: dropped before, a store that refused it left the task due at a slot no
        entry stood for any more, its flight's pending slot gone."""
        flight = task._flight
        assert flight is not None
        flight.pending = None  # the last run out finds no slot behind it
        self._queue.discard(task)  # its entry (a task paused mid-run has none)

    def _requeue(self, task: ScheduledTask) -> None:
        """Queue ``task`` again at its due time: its entry carries its priority."""
        due = task.next_run_at
        assert due is not None  # a queued task has one
        self._enqueue(task, due)

    @staticmethod
    def _check_changeable(task: ScheduledTask, verb: str) -> None:
        if task.status is SUCCEEDED or task.status is CANCELLED:
            raise SchedulerStateError(
                f"cannot {verb} task {task.id!r}{name_after(task.id, task.name)}: it is "
                f"{task.status.value} and will not run again; {_anew(task.id)}"
            )

    def _commit(self, task: ScheduledTask, saved: _Definition, *, anew: bool = False) -> None:
        """Write ``task``'s changed definition through the store before it takes effect:
        a store that refuses it (a durable store cannot keep a lambda) puts ``saved``
        back and the call raises, as a registration does.  ``anew``: a new schedule was
        put in place, as if the task were registered now, so an attempt a restart found
        in flight is owed no more (once the store took it); else the row goes on saying
        it is owed while it is (``_as_owed``).  A ``Window`` in the new schedule is told
        the task's successful runs, as a restart tells it (:func:`restore_runs`): its
        ``max_runs`` counts every run of the task, not those since the change."""
        if self._store is not None:
            try:
                self._store.save(self._snapshot(task) if anew else self._as_owed(task))
            except BaseException as exc:
                saved.restore(task)
                refused(self._writes, exc, task.id, self._snapshot(task))
                raise
        if anew:
            self._owed_no_more(task)
            restore_runs(task.schedule, task.id, task.run_count - task.failure_count)

    def _announce(self, task: ScheduledTask, now: float) -> None:
        """Tell the listeners that ``task`` changed without changing status."""
        if self.emit is not None:
            self.emit(TaskEvent(task.id, task.name, task.status, task.status, now))


def _anew(task_id: str) -> str:
    """How a finished task's id is registered again: its task removed first (a retired
    one's id is free)."""
    return f"remove({task_id!r}) first to register it anew"


def _owed(task: ScheduledTask, now: float, *, decided_here: bool) -> list[float] | None:
    """The slots a SCHEDULED ``task`` owes before a new schedule starts, after the one it
    is due at, or None when it owes nothing (docs/decisions/changing-a-task.md, "A slot
    already due when the schedule changes runs first").  A slot due before ``now`` is
    owed: the latest slot a restart's misfire decision runs, the earlier ones
    ``coalesced`` into it (due at ``now`` too, when the downtime ended on a slot), and
    with it the rest of a ``RUN_ALL`` plan's catch-up runs, all passed.  Not owed: a slot
    due at ``now`` that no decision folded slots into (a task registered due at once),
    and a ``run_now``'s extra run and the slot it put off (a plan that is no misfire
    decision's), and a slot merely late that no decision ran (its workers were busy, the
    clock moved past it): a new schedule supersedes them, as before.

    ``decided_here``: False on a shared store, where the node that claims a slot
    passed before it was there decides the downtime (``Coordinator.claim``), on the
    row's schedule: a slot due before ``now`` is owed there only once a claim folded
    slots into it; undecided, the task starts afresh, and no record claims anything."""
    due = task.next_run_at
    if due is None or due > now:
        return None
    schedule = task._schedule
    if type(schedule) is CatchUp and schedule.afresh:  # owed already, by a change before
        return list(schedule.slots)
    decided = type(schedule) is CatchUp and (schedule.deciding or schedule.resuming)
    if (due == now or not decided_here or not decided) and not _decided_into(task, now):
        return None  # no misfire decision ran it: a slot merely late is superseded
    if type(schedule) is not CatchUp or schedule.spent:
        return []
    if not schedule.deciding and not schedule.resuming:
        return None  # a run_now's extra run, the slot it put off behind it
    return list(schedule.slots)


def _owed_behind(schedule: Schedule) -> list[float]:
    """The slots owed after the run in flight or the retry pending of a task whose plan
    in front is ``schedule``: the rest of a misfire decision's runs (a ``RUN_ALL``
    catch-up), or of the work an earlier change found owed (a plan ending in
    ``FIRST_RUN``); none behind any other plan (a ``run_now``'s put-off slot) or a
    schedule.  Dropped, a new schedule given while the first of two catch-up runs ran
    lost the second, without a record."""
    if type(schedule) is not CatchUp or schedule.spent:
        return []
    return list(schedule.slots) if schedule.deciding or schedule.afresh else []


def _decided_into(task: ScheduledTask, now: float) -> bool:
    """True when ``task``'s latest record is a slot a misfire decision recorded before it
    queued the run ``task`` is due at (it records the passed slots first): ``coalesced``
    into that run, or ``missed`` before it when that run's slot passed too (``RUN_ALL``
    past its ``max_catch_up``: one run decided, so no plan stands in front of the
    schedule; a ``SKIP`` decision leaves no passed slot due)."""
    history = task.history
    if not history:
        return False
    outcome = history[-1].outcome
    due = task.next_run_at
    return outcome is COALESCED or (outcome is MISSED and due is not None and due < now)


def first_run(name: str, schedule: Schedule, now: float) -> float:
    """``schedule``'s first run for a task registered ``now``; ScheduleError if none, or
    if it is no instant (NaN, inf, a bool, a str): the one check of a first run, for a
    registration (:meth:`SchedulerCore.add <lldsched.core.machine.SchedulerCore.add>`)
    and a definition verb alike."""
    first: float = schedule.first_run(now)  # type: ignore[assignment]  # checked below
    try:
        if -FARTHEST <= first <= FARTHEST and first.__class__ is not bool:
            return first
    except TypeError:  # None, or what no instant is (a str, a datetime)
        pass
    return first_due(name, schedule, now, first)  # a bool too: True is 1, due in 1970


def first_due(name: str, schedule: Schedule, now: float, first: object) -> float:
    """``first``, what ``schedule.first_run(now)`` answered for the task ``name``, found
    odd by a plain comparison: ScheduleError when it never fires (``None``) or is not
    an instant (:func:`~lldsched.schedules.base.checked_answer`), before anything is
    registered or changed."""
    if first is None:
        after = instant_text(now)
        raise ScheduleError(f"task {name!r}: {shown(schedule)} never fires after {after}")
    try:
        return checked_answer(schedule, first, query=f"first_run({now!r})")
    except ScheduleError as exc:
        raise ScheduleError(f"task {name!r}: {exc}") from None


class _Definition(NamedTuple):
    """What a definition verb may change on a task, kept to put back if the store
    refuses the change."""

    name: str
    action: Callable[..., Any] | None
    priority: Priority
    options: TaskOptions
    schedule: Schedule
    next_run_at: float | None
    slot: float

    @classmethod
    def of(cls, task: ScheduledTask) -> _Definition:
        return cls(
            task.name,
            task.action,
            task.priority,
            task._options,
            task._schedule,
            task.next_run_at,
            task._slot,
        )

    def restore(self, task: ScheduledTask) -> None:
        with task.redefining():
            task.name, task.action, task.priority, task._options = self[:4]
            task._schedule, task.next_run_at, task._slot = self[4:]
