"""Overlapping runs: the core's part that carries out ``Overlap.CANCEL_OTHER`` and
``Overlap.ALLOW`` (several runs of one task in flight) and ``BUFFER_ONE``'s folding.

:class:`OverlappingRuns` is mixed into :class:`~lldsched.core.machine.SchedulerCore`
(as :mod:`~lldsched.core.definition` is): ``begin`` and ``finish`` there call in here
when a task has an overlap policy, and never otherwise.  The policies themselves are
values in :mod:`lldsched.policies`; the rules, per policy, are in docs/decisions/overlap.md
("Overlap policies").  No thread, no lock: the runtime serialises calls.
"""

from __future__ import annotations

import heapq
import logging
from itertools import islice

from lldsched.core.context import RunContext
from lldsched.core.names import (
    ALLOW,
    BUFFER_ONE,
    CANCEL_OTHER,
    CANCELLED,
    GIVEN_UP,
    MAX_SKIPPED,
    OVERLAP_CANCELLED,
    RUNNING,
    SCHEDULED,
    SKIPPED,
    SUCCEEDED,
    Skipped,
)
from lldsched.core.parts import CoreParts
from lldsched.core.task import Entry, Flight, Run, RunStats, ScheduledTask
from lldsched.errors import NEVER_STARTED_OVERLAP, OVERLAP_CANCEL_ERROR
from lldsched.logs import JOBS, counted, instant_text
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.schedules.base import (
    Schedule,
    first_slot_after,
    on_grid,
    slot_after_on_grid,
    slots_between,
    slots_on,
)
from lldsched.schedules.catchup import CatchUp, slot_first, unwrap
from lldsched.schedules.decorators import ended_by

__all__ = ["Late", "OverlappingRuns", "buffered"]

log = logging.getLogger(JOBS)  # a schedule that raised

Late = tuple[Skipped, float, float]
"""The slots a run that began late skipped, the pending slot after them and the instant
it began: what :meth:`OverlappingRuns._record_late` records once the begin is announced."""


class OverlappingRuns(CoreParts):
    """Mixed into SchedulerCore (see the module docstring)."""

    # -- overlapping runs (Overlap.CANCEL_OTHER and ALLOW; lldsched.policies) -------------
    #
    # A task whose runs may overlap has its next slot queued as soon as a run of a fresh
    # slot begins (_overlap): the slot is "pending" (Flight.pending).  When that entry
    # comes due while runs are in flight, begin() hands it to _alongside, which applies
    # the policy.  A run that finishes while others are in flight only leaves its
    # record (_record_alongside); the last run out moves the task on (_after_flight):
    # to the pending slot, or down the retry and given-up rules of _after.
    #
    # A run that began late is past slots it will not be sent after: they are recorded
    # SKIPPED (_record_late) once the run's begin is written and announced, so that a
    # listener hears the task enter RUNNING before it hears what that run skipped.

    def _overlap(self, task: ScheduledTask, run: Run) -> tuple[Run, Late | None]:
        """``run`` of a task with an overlap policy began: give a CANCEL_OTHER run a
        context (its cancel flag) and, for CANCEL_OTHER and ALLOW, queue the task's
        next slot behind it (a fresh slot's run only: a retry, or a plan in front of
        the schedule, runs alone as before).  Returns the run as it begins, and the
        slots it is late for, which the caller records after its begin
        (:meth:`_record_late`)."""
        overlap = task._options.overlap
        if overlap is None or overlap is BUFFER_ONE:  # replaced by a definition without one
            if task._flight is not None:
                task._flight.pending = None  # nothing queued behind it: it drains
            return run, None
        if run.context is None and overlap is CANCEL_OTHER:
            context = RunContext(task.id, run.name, run.attempt, run.due, run.worker, run.token)
            run = task._run = run._replace(context=context)
        return run, self._queue_behind(task, run.attempt, run.slot)

    def _queue_behind(self, task: ScheduledTask, attempt: int, slot: float) -> Late | None:
        """The one rule of what an overlapping task queues behind the ``attempt`` of
        ``slot`` as it begins (or, at ``max_instances``, is skipped): the following slot
        only for a fresh slot's first attempt under the task's own schedule; a retry, or
        a plan in front of the schedule (:class:`CatchUp`), runs alone, and the last
        run out decides what follows.  The slots passed since, as
        :meth:`_queue_following` says."""
        flight = task._flight
        if flight is None:
            flight = task._flight = Flight()
        if attempt != 1 or type(task._schedule) is CatchUp:
            flight.pending = None
            return None
        return self._queue_following(task, flight, slot)

    def _queue_following(self, task: ScheduledTask, flight: Flight, slot: float) -> Late | None:
        """Queue the slot after ``slot`` as the task's pending slot (none: the schedule
        has ended, and the last run out finds that out); the slots passed since, which
        the caller records (:meth:`_record_late`) once what it does is announced."""
        schedule = task._schedule
        now = self.clock.now()
        skipped: Skipped = ()
        following: float | None
        try:
            # counted from its grid's origin (runs.py), where the schedule keeps one
            following, task._grid = slot_after_on_grid(schedule, slot, task._grid)
            if following is not None and following <= now:
                # It started late (it waited for a worker, or was resumed): the slots it
                # is already late for are skipped, not chased.
                following = first_slot_after(schedule, slot, now, limit=100_000)
                if following is not None:
                    skipped = slots_between(schedule, slot, following, limit=MAX_SKIPPED)
        except Exception:  # the user's schedule: as recovery's following_slot, logged
            # A raise here came out of begin() with the task RUNNING and its run made:
            # the runtime lost the run (its worker logged "could not start"; the loop,
            # the 31 others it was beginning), and the task stayed RUNNING for good.
            # Nothing is queued behind this run: its end asks the schedule again, and a
            # schedule that raises then fails the task loudly (RunTransitions._after).
            log.exception(
                "task %s %r: %r raised as its run began, listing the slot to queue behind "
                "it; nothing is queued behind this run, whose end asks the schedule again",
                task.id,
                task.name,
                schedule,
                extra={"task_id": task.id, "task_name": task.name},
            )
            following, skipped = None, ()
        flight.pending = following
        if following is None:
            return None
        task._slot = following  # the slot the queued entry belongs to, with no attempt yet
        task.attempt = 0
        self._enqueue(task, following)
        flight.queued = task.generation
        if task._options.overlap is CANCEL_OTHER:  # the runtime asks overdue() there
            slots = self.overdue_slots
            while slots and slots[0][0] < now:  # passed: begun, cut or dropped since
                heapq.heappop(slots)
            heapq.heappush(slots, (following, task.priority._value_, task.generation, task.id))
        return (skipped, following, now) if skipped else None

    def _record_late(self, task: ScheduledTask, late: Late | None) -> None:
        """Record as SKIPPED the slots a run that began late will not be sent after
        (``late``, from :meth:`_queue_following`), up to the pending slot."""
        if late is not None:
            skipped, following, now = late
            self._record_skipped(task, skipped, until=following, at=now)

    def drop_pending(self, task: ScheduledTask) -> None:
        """Nothing stays queued behind ``task``'s runs in flight: a forward clock jump's
        misfire decision skipped every slot its schedule had left (``Misfire.SKIP``,
        :func:`lldsched.core.misfires.apply.decide_misfire`).  The runs go on, and the last
        one out finds the schedule ended, as when :meth:`_queue_following` finds no slot
        (:meth:`_after_flight`).  The task is left as that finding leaves it, due at
        its latest run's due instant, and written through the store at once: the row
        kept the dropped slot until the last run ended, and a restart meanwhile ran that
        slot (recorded missed) instead of the run in flight."""
        flight = task._flight
        if flight is not None:
            flight.pending = None
        self._queue.discard(task)
        run = task._run
        if run is not None:  # as begin() left it before _queue_following queued a slot
            task.next_run_at = run.due
            task._slot = run.slot
            task.attempt = run.attempt
        self._save(task)

    def _alongside(
        self, task: ScheduledTask, entry: Entry, worker: int, *, token: int | None
    ) -> Run | None:
        """The pending slot came due while runs of ``task`` are in flight: its overlap
        policy starts a run beside them (CANCEL_OTHER cancels them first) or, with
        ALLOW at ``max_instances``, records the slot SKIPPED; None when nothing runs."""
        flight = task._flight
        options = task._options
        overlap = options.overlap
        if flight is None or overlap is None or overlap is BUFFER_ONE:
            # Its definition lost the policy mid-run (a replace): the slot waits for the
            # last run out, which queues it again, its entry taken now.
            if flight is not None:
                flight.queued = 0
            return None
        slot = task._slot
        due = entry[0]
        now = self.clock.now()
        running = flight.count
        if overlap is ALLOW and running >= (options.max_instances or 1):
            runs = counted(running, "run")
            note = f"Overlap.ALLOW: {runs} in flight (max_instances={options.max_instances})"
            self._record_decided(task, slot, SKIPPED, note, now)
            self._record_late(task, self._queue_behind(task, 1, slot))  # as a run would
            return None
        if overlap is CANCEL_OTHER:
            self._cancel_flight(task, flight, slot)
        assert task._run is not None
        flight.others.append(task._run)
        context = None
        if options.pass_context or overlap is CANCEL_OTHER:
            context = RunContext(task.id, task.name, 1, due, worker, token)
        run = task._run = Run(
            task, 1, due, slot, worker, context, task.action, options, task.name, token
        )
        task.attempt = 1
        late = self._queue_behind(task, 1, slot)
        if self._store is not None or self.emit is not None:
            self._write_and_publish(task, RUNNING)
        self._record_late(task, late)
        return run

    def overdue(self, entry: Entry) -> None:
        """``entry`` came due and waits for a place to begin (every worker busy, or the
        coroutine lane full): if it is the slot a ``CANCEL_OTHER`` task queued behind its
        runs in flight, those runs are cancelled now, at the slot, not when a place frees
        (:meth:`_cancel_flight`, the rule :meth:`_alongside` applies as the slot's run
        begins beside them).  A run that stops at its flag frees its place, and the
        slot's run takes it.  Before, a task whose own run held the last worker was
        never cancelled: the run went on to its end (a run waiting on its flag, for
        good) and the slot ran late after it (docs/decisions/overlap.md, "Overlap policies").
        Anything else (a slot begun or dropped, another policy, a paused task) is left
        as it is.  The slot is known by its task and instant, not by its entry's
        generation: a ``modify(priority=)`` queues it again.  Each runtime finds the
        slots in :attr:`overdue_slots` (where :meth:`_queue_following` puts them) and
        drops them as they pass: the threaded timer as it hands them out to busy
        workers, the simulation at each slot's instant, once that instant's starts are
        done."""
        task = self.tasks.get(entry[3])
        if task is None or task.status is not RUNNING or task._options.overlap is not CANCEL_OTHER:
            return
        flight = task._flight
        if flight is not None and flight.pending == entry[0] and task._run is not None:
            self._cancel_flight(task, flight, flight.pending)

    def _cancel_flight(self, task: ScheduledTask, flight: Flight, slot: float) -> None:
        """``CANCEL_OTHER``: ``slot`` came due while ``task``'s runs are in flight; raise
        the flag of each not cancelled yet, note the slot that cut it (its record says
        so, :meth:`_leave`), and tell the runtime (``on_cancel``: a coroutine cancelled,
        a worker process killed, a simulated run ended now)."""
        assert task._run is not None
        for other in (*flight.others, task._run):
            if id(other) not in flight.cancelled:
                flight.cancelled[id(other)] = slot
                if other.context is not None:
                    other.context.cancel("overlap")
                if self.on_cancel is not None:
                    self.on_cancel(other)

    @staticmethod
    def _leave(flight: Flight, run: Run, record: ExecutionRecord) -> ExecutionRecord:
        """Take ``run`` out of its task's flight; its record, marked CANCELLED (never
        retried) if CANCEL_OTHER cancelled it."""
        task = run.task
        if task._run is run:
            task._run = flight.others.pop() if flight.others else None
        else:
            others = flight.others
            for index, other in enumerate(others):
                if other is run:
                    del others[index]
                    break
        slot = flight.cancelled.pop(id(run), None)
        if slot is None:
            return record
        # A coroutine cut before its body began: the runtime says so (errors.py)
        when = "before it started" if record.error == NEVER_STARTED_OVERLAP else "while it ran"
        why = (  # the slot in UTC, as every record text and log line gives an instant
            f"{OVERLAP_CANCEL_ERROR}: Overlap.CANCEL_OTHER, slot {instant_text(slot)} came due "
            f"{when}"
        )
        return record._replace(ok=False, error=why, result=None, misfire=OVERLAP_CANCELLED)

    def _record_alongside(
        self, task: ScheduledTask, record: ExecutionRecord, stats: RunStats
    ) -> ExecutionRecord:
        """A run finished while others of its task are still in flight: it leaves its
        record and nothing else changes (the last run out moves the task on).  A failed
        one is not retried beside them: its slot is given up.  A successful one counts in
        the windows of the task's schedule (:meth:`_counted_in_flight`) while a slot is
        queued behind the runs, or a new schedule waits behind a plan for them to end
        (docs/decisions/schedules.md, "A success beside runs in flight counts in a
        window given while they run"); at a window's
        ``max_runs``-th nothing more starts (the pending slot is dropped) and a plan
        that ends the task follows the runs still in flight: the last out ends it.
        A task cancelled or removed counts nothing here: it ends as the runs leave."""
        if not record.ok and record.misfire is None:
            record = record._replace(misfire=GIVEN_UP)
            stats.given_up += 1
        else:
            flight = task._flight
            schedule = task._schedule
            if (
                record.ok
                and flight is not None
                # a slot queued behind it, or a new schedule waiting for the runs in flight
                # (reschedule, replace: DefinitionVerbs._start_afresh); not the plan that
                # ends the task at the max_runs-th (below), nor a schedule that ended
                and (flight.pending is not None or (type(schedule) is CatchUp and schedule.afresh))
                and self._counted_in_flight(task, record)
            ):
                flight.pending = None
                self._queue.discard(task)  # nothing more starts
                # the last run out ends it (the task's own schedule behind the plan)
                task._schedule = CatchUp(unwrap(schedule), [], None)
        self._keep(task, record)
        if task.status is CANCELLED and not self.holds(task):
            return self._removed_run(task, record)  # removed mid-run: it is forgotten
        if self._store is not None or self.emit is not None:
            self._write_and_publish(task, task.status, record)
        return record

    @staticmethod
    def _counted_in_flight(task: ScheduledTask, record: ExecutionRecord) -> bool:
        """Count the successful ``record`` of an overlapping run whose schedule is not
        asked about it (the slot after it was queued as it began, or it ended beside
        others) in the windows of the task's schedule, behind a plan in front of it
        (:func:`~lldsched.schedules.decorators.ended_by`); True at a
        window's ``max_runs``-th.  A run of a task cancelled or removed counts toward
        nothing, as in :meth:`~lldsched.core.runs.RunTransitions._after`: nothing
        follows it, and its id may be a new task's by now (docs/decisions/lifecycle.md,
        "A run that ends after its task was cancelled counts toward nothing")."""
        return task.status is not CANCELLED and ended_by(unwrap(task._schedule), record)

    def _after_flight(
        self, task: ScheduledTask, flight: Flight, record: ExecutionRecord, stats: RunStats
    ) -> tuple[TaskStatus, float | None, ExecutionRecord, Skipped]:
        """:meth:`_after` for the last run out of an overlapping task's flight: a run
        that ended well (or was cancelled) leaves the task due at the pending slot (a
        successful one counted in the schedule's windows first, as in
        :meth:`_record_alongside`: the task ends at a window's ``max_runs``-th; one of a
        task cancelled or removed counts toward nothing); a failed one goes down the
        retry and given-up rules, the pending slot waiting behind its retries.

        A task due at the pending slot keeps that slot's entry, queued as the run
        began, while it is live: :meth:`finish` leaves it where it is (``Flight.queued``
        stays its generation).  Queued again, due in the past, it lost its place on
        threads when the timer had handed it out: behind entries due after it."""
        pending = flight.pending
        flight.pending = None
        queued, flight.queued = flight.queued, 0
        cancelled = record.misfire is OVERLAP_CANCELLED
        decided: tuple[TaskStatus, float | None, ExecutionRecord, Skipped]
        if pending is not None and record.ok and self._counted_in_flight(task, record):
            decided = SUCCEEDED, None, record, ()  # a window's max_runs-th run
            self._queue.discard(task)
        elif pending is not None and (record.ok or cancelled):
            decided = SCHEDULED, pending, record, ()
        else:
            if pending is not None:  # its retries (if any) first, then the pending slot
                task._schedule = slot_first(task._schedule, pending)
            task._slot = record.slot
            task.attempt = record.attempt
            # A cut run with no pending slot: what the schedule says after it, shown as it
            # was recorded (_after: never retried, and no success a Window counts).
            decided = self._after(task, record, stats)
            if decided[1] is None:  # the task ends: no slot stays queued behind it
                self._queue.discard(task)
        if queued and decided[1] == pending and task.generation == queued:
            flight.queued = queued
        return decided


def buffered(
    schedule: Schedule, slot: float, skipped: Skipped, *, before: float, origin: float | None
) -> tuple[float, Skipped]:
    """BUFFER_ONE: the latest slot before ``before`` (the run that comes due at once)
    and the slots folded into it (``skipped``, the slots after the run's ``slot``, is
    cut at MAX_SKIPPED + 1 slots).  Past the slots listed, the slots are counted on the
    task's grid from ``origin`` (``ScheduledTask._grid``) while the last one listed is
    that grid's (a fixed rate, or a plan in front of one: :func:`on_grid`), else on from
    the run's slot; counted from the run's slot, a fixed rate's latest slot was a
    rounding off its grid (docs/decisions/schedules.md, "A fixed rate's slots after downtime are
    its grid's")."""
    latest = skipped[-1]
    if len(skipped) > MAX_SKIPPED:
        own = unwrap(schedule)
        anchor, k = on_grid(own, latest, origin)
        later = (
            slots_on(own, anchor, start=k)
            if k
            else islice(slots_on(schedule, slot), len(skipped), None)
        )
        for following in later:
            if following >= before:
                break
            latest = following
    folded = skipped[:-1] if latest == skipped[-1] else skipped
    return latest, folded
