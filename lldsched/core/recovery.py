"""Recovery: tasks reloaded from a store, the start after them, and wall-clock jumps.

Both runtimes call :func:`recover` when they are built on a store that holds
tasks, the threaded runtime calls :func:`at_start` at ``start()`` and
:func:`after_clock_jump` when its wall clock jumps.  Everything here runs under the
runtime's lock (or on the simulation's thread) and changes tasks only through the core.
What becomes of the slots that passed while nobody ran them is the misfire rule's
(:mod:`lldsched.core.misfires`, :func:`~lldsched.core.misfires.apply.decide_misfire`), which
this module applies to each queued task it restores, starts or finds jumped over.

**Reloading.**  Each stored snapshot becomes a :class:`ScheduledTask` with its
status, attempt counter, next due instant, counters and the records the store
kept; FAILED tasks return to the dead letter in the order they failed.  The
heap is rebuilt from the stored due instants.  Nothing is written while
reloading: a store that cannot be read raises before anything changes.

**At-least-once.**  A task stored RUNNING (or paused mid-run) had an attempt in
flight when the process died.  Its record was never written, so the attempt
runs again, with the same attempt number, due when it was due.  Actions that
must not repeat their effect should be idempotent.  Until that attempt begins, its
row keeps saying it is owed (``core.owe``: ``running`` set, the counter as it is), so
a restart killed before it ran leaves the next one owing it too.

**Misfires.**  Then each live task's passed slots meet its
:class:`~lldsched.policies.MisfirePolicy`, its owed attempt first.  Paused
tasks are left alone: ``resume`` already runs a slot
that was slept through.  A ``RUN_ALL`` task restored during its catch-up, paused or
not, gets the slots of its plan back (the store kept only the next two, and where its
runs end): its slots up to that end, as decided (:func:`stored_plan`; a row that keeps
no end, an older release's, is decided again from the slot its plan waited for, grace
not asked; a plan cut at :data:`~lldsched.core.misfires.plan.MAX_SLOTS` is put back as it
was: the record standing for the slots beyond the cap says where it ended).
A BLOCKED task stays off the heap, waiting for what its records say it still waits for
(:mod:`lldsched.core.dependencies`), and is released at once if that is nothing.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from lldsched.core.machine import SchedulerCore
from lldsched.core.misfires.apply import History, decide_misfire, queue_as_decided, record_decisions
from lldsched.core.misfires.plan import (
    Plan,
    cut_record,
    deciding_for,
    first_after,
    passed_slots,
    plan,
    plan_as_cut,
)
from lldsched.core.names import RETRYING, SCHEDULED, runnable
from lldsched.core.task import Restored, ScheduledTask
from lldsched.logs import STORE, counted
from lldsched.model import ExecutionRecord, Outcome, TaskStatus
from lldsched.persistence import FINISHED_STATUSES, HistoryStore, Task, TaskSnapshot, TaskStore
from lldsched.policies import DEFAULT_MISFIRE, Misfire
from lldsched.schedules.base import Schedule, measures_elapsed_time
from lldsched.schedules.catchup import SCHEDULE_DECIDES, CatchUp, slot_first, unwrap

__all__ = [
    "Found",
    "after_clock_jump",
    "at_start",
    "blocked_of",
    "pending_slot",
    "recover",
    "restored_from",
    "restored_state",
    "stored_plan",
]

restores = logging.getLogger(STORE)

_QUEUED = (TaskStatus.SCHEDULED, TaskStatus.RETRYING)  # statuses with a due instant to settle


def _queue_restored(
    core: SchedulerCore, task: ScheduledTask, owed: bool, now: float
) -> list[ExecutionRecord] | None:
    """Queue a restored live task, deciding what its passed slots become; the records
    decided when they met its misfire policy (a plan put back from its row,
    :func:`stored_plan`, is then superseded), else None."""
    due = task.next_run_at
    if task.status is TaskStatus.BLOCKED:  # waits off the heap; released if nothing is owed
        core.release_if_ready(task)
        return None
    if task.status not in _QUEUED or due is None:
        return None
    decided = decide_misfire(core, task, now, owed=owed)
    if decided is None:
        core.replan(task, due=due)  # as stored: the schedule (a plan put back) carries on
    return decided


def stored_plan(
    core: SchedulerCore,
    task: ScheduledTask,
    waited: float,
    now: float,
    *,
    resumes: bool = False,
    until: float | None = None,
    history: History | None = None,
) -> list[tuple[float, Outcome, str | None]]:
    """Put back the plan a stored row stands for (the one rule for a restart,
    :func:`recover`, and for a process following a shared store, :mod:`~lldsched.core.follow`):
    the slot the plan ``waited`` for (:attr:`TaskSnapshot.waited
    <lldsched.persistence.TaskSnapshot.waited>`) after the run due, as the slot to resume
    at when the row says so (``resumes``: :attr:`TaskSnapshot.resumes
    <lldsched.persistence.TaskSnapshot.resumes>`; a run before it that outlasts it skips
    it, as in the process that decided the plan; read as a slot decided to run, it ran
    late there), and, for a ``RUN_ALL`` task whose ``waited`` is a slot decided to run,
    the rest of its catch-up: the row kept only ``waited`` behind its due instant, so the
    slots after that one are decided again, from ``waited`` up to ``now``, grace not asked
    (they misfired when the plan was made: :func:`plan`).  The task keeps its status, due
    where it was, with that plan behind.  A plan cut at
    :data:`~lldsched.core.misfires.plan.MAX_SLOTS` is put back as it was (:func:`cut_record`).  Any
    other policy's plan, and one whose ``waited`` is the slot to resume at, holds no
    slot after ``waited``: nothing was lost.  Returns the decisions
    that plan took (slots beyond ``max_catch_up``), for the caller to record or not:
    ``task`` is only replanned here.

    ``until``: where the plan's runs end (:attr:`TaskSnapshot.until
    <lldsched.persistence.TaskSnapshot.until>`), kept by a row written since: the plan is
    its slots from ``waited`` up to it, as decided, nothing decided again; the slots from
    ``until`` on passed after the plan was made, and are the misfire policy's when the
    slot due meets it (:func:`decide_misfire`, :func:`~lldsched.core.misfires.apply._go_on`; a
    restart), else the task's schedule's after the plan's last run, as in the process
    that made it.  Read
    from ``waited`` up to now, a slot passed since (the restart's own downtime within
    grace; on a shared store, a plan whose runs outlast its period, taken over by another
    process) ran with the plan, where that process skips it after the plan's last run;
    and a restart beyond grace decided the plan's slots again with those since, counting
    them against ``max_catch_up`` a second time.

    Before, only a PAUSED task got the rest back, and only beyond grace: a task not
    paused was left to the restart's misfire decision (:func:`decide_misfire`), which
    decides nothing within grace, and a process following a shared store decides none
    for a slot it was there for; both ran ``waited`` and counted the fixed rate on from
    it, the plan's later slots recorded skipped.

    ``history``: read only for a ``RUN_ALL`` plan whose ``waited`` passed (:data:`History`);
    a process following a shared store that did not pass it decided a cut plan again
    from ``waited``, counting the slots beyond the cap twice, as a restart did before."""
    with deciding_for(task):
        return _put_back(
            core, task, waited=waited, now=now, resumes=resumes, until=until, history=history
        )


def _put_back(
    core: SchedulerCore,
    task: ScheduledTask,
    *,
    waited: float,
    now: float,
    resumes: bool,
    until: float | None,
    history: History | None,
) -> list[tuple[float, Outcome, str | None]]:
    """:func:`stored_plan`, within :func:`deciding_for` ``task``."""
    if resumes:
        task._schedule = CatchUp(unwrap(task._schedule), [], waited, resumes=True)
    else:
        task._schedule = slot_first(task._schedule, waited)
    policy = task.misfire or DEFAULT_MISFIRE
    owed = task.next_run_at
    if resumes or policy.on_misfire is not Misfire.RUN_ALL or owed is None:
        return []
    own, origin = unwrap(task._schedule), task._grid
    if until is not None:  # where the plan ends is kept: its slots, as they were decided
        slots, _ = passed_slots(own, waited, until, origin=origin)
        runs = [slot for slot in slots if slot < until]
        queue_as_decided(core, task, Plan(runs, [], SCHEDULE_DECIDES, misfired=True), owed)
        return []
    decided = plan(own, waited, now, policy, grace=False, origin=origin)
    if not decided.misfired:  # ``waited`` is still to come: no slot after it passed
        return []
    records = task.history if history is None else history()
    cut = cut_record(records, waited)
    if cut is not None:  # the plan, cut at MAX_SLOTS, ended before the record for the rest
        # The run due (``owed``, ahead of ``waited``) is a run of the plan no record counts,
        # unless it is a retry: its slot's first attempt is recorded (``_runs_since``).
        made = 1 if task.attempt == 0 else 0
        decided = plan_as_cut(own, waited, cut, records, policy, made=made, origin=origin)
    queue_as_decided(core, task, decided, owed)
    return decided.decisions


# -- reloading ---------------------------------------------------------------------------


class Found(NamedTuple):
    """A task :func:`recover` restored, for :func:`at_start`: ``left`` and ``left_with``,
    the due instant and schedule it left the task with, ``at`` (the instant it decided
    at); ``owed``: the attempt due is owed from before the downtime (in flight at a
    crash, or a retry); ``decided``: the records written when its passed slots met its
    policy then (None: they did not); and the task as recovery found it, before that
    decision: ``due``, ``schedule`` (a plan put back from its row, :func:`stored_plan`,
    included) and ``slot``."""

    left: float | None
    left_with: Schedule
    at: float
    owed: bool
    decided: tuple[ExecutionRecord, ...] | None
    due: float | None
    schedule: Schedule
    slot: float


def recover(
    core: SchedulerCore, store: TaskStore, *, found: dict[str, Found] | None = None
) -> list[ScheduledTask]:
    """Restore every task ``store`` holds into ``core`` and settle its passed slots.

    Reads everything first: a store that cannot be read (a :class:`StoreError`
    from ``load_all``) leaves both the core and the store as they were.

    ``found``: filled, by task id, for :func:`at_start` (a threaded scheduler built here
    and started later) with each task left queued whose attempt is owed or whose passed
    slots met its policy here: as it was found, and the due instant it was left at
    (:class:`Found`).
    """
    snapshots = store.load_all()
    if not snapshots:
        return []
    records: dict[str, list[ExecutionRecord]] = defaultdict(list)
    dead_letter: Sequence[str] = ()
    if isinstance(store, HistoryStore):
        for record in store.records():
            records[record.task_id].append(record)
        dead_letter = store.dead_letter()
    restored = [_restored(snap, records.get(snap.task.id, ())) for snap in snapshots]
    tasks = core.restore((entry for entry, _ in restored), dead_letter)
    now = core.clock.now()
    for task, snapshot, (_, owed) in zip(tasks, snapshots, restored, strict=True):
        decided: list[tuple[float, Outcome, str | None]] = []
        if snapshot.waited is not None:  # the slot a plan waited for: the plan put back
            decided = stored_plan(
                core, task, snapshot.waited, now,
                resumes=snapshot.resumes, until=snapshot.until,
            )  # fmt: skip
        if snapshot.running and snapshot.status in FINISHED_STATUSES:  # its cut run: none
            core.cut_flight_ended(task)
        due, schedule, slot = task.next_run_at, task._schedule, task._slot  # as found
        if owed and task.status is TaskStatus.SCHEDULED:  # in flight: its rows say so
            core.owe(task)
        # Its decisions are recorded unless the passed slots meet the policy again, from
        # the slot due (which decides this plan's slots too): recorded first, a cap's
        # record of them would read as that slot's plan's (cut_record).
        misfired = _queue_restored(core, task, owed, now)
        if misfired is None:
            record_decisions(core, task, decided)
        if found is not None and (misfired is not None or owed) and task.status in _QUEUED:
            written = None if misfired is None else tuple(misfired)
            left = task.next_run_at
            found[task.id] = Found(left, task._schedule, now, owed, written, due, schedule, slot)
    restores.info("restored %s from %r", counted(len(tasks), "task"), store)
    _say_cut(snapshots, store)
    return tasks


def _say_cut(snapshots: Sequence[TaskSnapshot], store: TaskStore) -> None:
    """Name the tasks whose row says a run was in flight when the last process on
    ``store`` stopped (killed, crashed): that run left no record, and its attempt runs
    again (at-least-once), as a shared store's start says of such a row
    (lldsched/threaded/shared/load.py).  Before, an unshared restart ran it again unsaid."""
    cut = [
        snapshot.task.id
        for snapshot in snapshots
        if restored_state(snapshot)[2] and snapshot.status not in FINISHED_STATUSES
    ]  # a finished task's cut run does not run again (Restoration.cut_flight_ended)
    if cut:
        restores.info(
            "%s had a run in flight when the last process on %r stopped (no record of it): "
            "that attempt runs again (at-least-once): %s",
            counted(len(cut), "task"),
            store,
            ", ".join(cut),
        )


def pending_slot(
    snapshot: TaskSnapshot, attempt: int, *, records: Callable[[], Sequence[ExecutionRecord]]
) -> float:
    """The slot a task registered from ``snapshot`` stands at, ``attempt`` the attempts
    behind it (a RUNNING row's read as owed): a retry's attempts belong to the slot of
    its task's last run (``records()``, oldest first, read only then; a retry read as a
    slot of its own moved a fixed rate's grid by its backoff), a plan's run a resume put
    off keeps its slot, and any other task stands at its next run.  The one rule for a
    restart (:func:`recover`) and for a row a shared store's feed brings
    (:mod:`lldsched.core.follow`)."""
    if attempt:
        for record in reversed(records()):
            if record.outcome.ran:
                return record.slot
    elif snapshot.slot is not None:
        return snapshot.slot
    return snapshot.next_run_at if snapshot.next_run_at is not None else 0.0


def restored_state(snapshot: TaskSnapshot) -> tuple[TaskStatus, int, bool]:
    """The status and attempt counter a stored row stands for, and whether an attempt was
    in flight when it was written: the at-least-once rule.  A RUNNING row (or one paused
    mid-run) was written as an attempt began, by a process that died before its record:
    that attempt is owed, and runs again with the same attempt number (the counter one
    back, the status :func:`~lldsched.core.names.runnable` says for it).

    A row paused (or cancelled) mid-run is read alike: its attempt in flight is owed,
    the counter one back.  A runnable row with ``running`` set is a shared store's row
    as a claim left it (a run resumed while it went on: ``SchedulerCore._save`` with
    ``as_claimed``), whose counter holds only the attempts before the run: owed, its
    counter as it is (taken one back before, a retry was read RETRYING with no attempt
    behind it, and ran its attempt again under the number before).  Recovery writes an
    owed first attempt's row so too until it begins (:meth:`SchedulerCore.owe
    <lldsched.core.restoration.Restoration.owe>`): a restart killed before it ran
    leaves the next one owing it.

    The one rule for a restart (:func:`recover`), for every row a shared store's feed or
    start brings (:mod:`lldsched.core.follow`; before, only a RUNNING one: a row paused
    mid-run kept the attempt a restart gives back), and for the row a shared start writes
    for it (:meth:`CoordinatedStore.owe <lldsched.coordination.CoordinatedStore.owe>`)."""
    status, attempt = snapshot.status, snapshot.attempt
    in_flight = snapshot.running or status is TaskStatus.RUNNING
    if in_flight and status not in _QUEUED:  # its record never written: that attempt again
        attempt = max(0, attempt - 1)
    if status is TaskStatus.RUNNING:
        status = runnable(attempt)
    return status, attempt, in_flight


def blocked_of(snapshot: TaskSnapshot) -> tuple[float, float] | None:
    """The due instant and slot the BLOCKED row ``snapshot``'s wait was found blocked at,
    when a reschedule moved its next slot during the wait (:attr:`TaskSnapshot.blocked_due
    <lldsched.persistence.TaskSnapshot.blocked_due>`); None otherwise: the wait is of the
    slot the row is due at."""
    due, slot = snapshot.blocked_due, snapshot.blocked_slot
    if snapshot.status is not TaskStatus.BLOCKED or due is None or slot is None:
        return None
    return due, slot


def restored_from(
    snapshot: TaskSnapshot,
    *,
    definition: Task,
    status: TaskStatus,
    attempt: int,
    slot: float,
    history: tuple[ExecutionRecord, ...],
) -> Restored:
    """The stored row ``snapshot`` as the core restores it: its counts, due instant, grid
    and moved wait (:func:`blocked_of`) as stored, with the ``definition`` to register,
    the ``status`` and ``attempt`` read by :func:`restored_state`, the ``slot`` of
    :func:`pending_slot` and the records kept of it (``history``).  The one reading of a
    row's columns into a :class:`~lldsched.core.task.Restored`, for a restart
    (:func:`recover`) and for a row a shared store's feed or start brings
    (:mod:`lldsched.core.follow`)."""
    return Restored(
        definition=definition,
        status=status,
        attempt=attempt,
        next_run_at=snapshot.next_run_at,
        slot=slot,
        run_count=snapshot.run_count,
        failure_count=snapshot.failure_count,
        last_error=snapshot.last_error,
        history=history,
        grid=snapshot.grid,
        blocked=blocked_of(snapshot),
    )


def _restored(snapshot: TaskSnapshot, records: Iterable[ExecutionRecord]) -> tuple[Restored, bool]:
    """What ``snapshot`` says the task is, and whether an attempt is owed from before."""
    history = tuple(records)
    status, attempt, in_flight = restored_state(snapshot)
    slot = pending_slot(snapshot, attempt, records=lambda: history)
    definition = snapshot.task._replace(schedule=unwrap(snapshot.task.schedule))
    restored = restored_from(
        snapshot,
        definition=definition,
        status=status,
        attempt=attempt,
        slot=slot,
        history=history,
    )
    owed = status is TaskStatus.RETRYING or (in_flight and status is TaskStatus.SCHEDULED)
    return restored, owed


# -- start() (the threaded runtime) ---------------------------------------------------------


def at_start(core: SchedulerCore, found: Mapping[str, Found], now: float) -> None:
    """At ``start()`` (``now``): the slots that passed before ``now`` and nobody decided.
    Nobody ran them, as in downtime, so each queued task's meet its misfire policy by the
    rule a restart applies (:func:`decide_misfire`, a retry's attempt owed).  Before, the
    first ran late and the later ones were recorded ``skipped`` by the overrun rule,
    whatever the policy.

    A task :func:`recover` restored at the construction (``found``, filled by it) and
    still as it left it (:func:`_as_left`) had its attempt owed (in flight at a crash, or
    a retry), or its passed slots decided then.  Nothing ran since: its
    downtime lasts until ``now``, and is decided as one, as a restart at ``now`` decides
    it, from the task as recovery found it, its owed attempt first (:func:`_decide_again`).
    So a ``RUN_ONCE`` task runs once for the whole downtime, ``RUN_ALL`` at most
    ``max_catch_up`` times, ``SKIP`` records every slot ``missed``.  Before, the run
    recovery left due ran at the start and the slots after it were recorded ``skipped``
    (the overrun rule).  A paused task is left to ``resume()``, as a restart leaves it."""
    default = DEFAULT_MISFIRE.grace
    for task in list(core.tasks.values()):  # a decision may cancel a task
        due = task.next_run_at
        status = task.status
        restored = _as_left(core, found, task) if found else None  # (none restored: none)
        if restored is not None:
            if status is SCHEDULED or status is RETRYING:
                _decide_again(core, task, restored, now)
            continue
        if due is None or due > now:
            continue
        if status is RETRYING:  # its attempt is owed: it runs first
            decide_misfire(core, task, now, owed=True)
        elif status is SCHEDULED:
            # Its due slot is the oldest the policy decides (first_decided): within grace
            # nothing is (plan), and the slots are not listed, as they were for every task
            # registered before start() (threaded_instructions.py dispatch).
            policy = task._options.misfire
            if now - due > (default if policy is None else policy.grace):
                decide_misfire(core, task, now)


def _as_left(core: SchedulerCore, found: Mapping[str, Found], task: ScheduledTask) -> Found | None:
    """``task``'s entry in ``found`` while it is as :func:`recover` left it: due where it
    left it, on the schedule it left it, and owing the attempt it found in flight if it
    did (None: nothing restored, or changed since: rescheduled, registered again, run by
    ``run_now``, paused: a first attempt owed no more, :meth:`~lldsched.core.publishing.
    Publishing.owes`, even where a verb left it due at that instant on the same
    schedule)."""
    restored = found.get(task.id)
    if restored is None or restored.left != task.next_run_at:
        return None
    if restored.owed and task.status is SCHEDULED and not core.owes(task):
        return None  # decided anew since (a pause, a new first run at the same instant)
    return restored if task._schedule is restored.left_with else None


def _decide_again(core: SchedulerCore, task: ScheduledTask, found: Found, now: float) -> None:
    """Decide ``task``'s downtime up to ``now`` as one, as :func:`recover` ``found`` it,
    its attempt owed as it was (a task whose passed slots recovery did not decide: as it
    is).  A decision recovery took is put back first (``core.replan``: one more write of
    its row), unless no slot of the task passed since (the start right after the
    construction, as usual): it stands as taken.

    The records recovery wrote stay: decided again, each of their slots is decided as
    then, and none is recorded twice (``known``: the history holds only its last
    ``history_limit`` records); the decision reads the history without them (its record
    standing for the slots beyond the cap would read as a cut plan's, :func:`cut_record`).
    The runs recovery decided are decided again (``RUN_ALL``'s oldest, a ``RUN_ONCE``
    run, may be ``missed`` or ``coalesced`` now).  Decided instead
    from where recovery left the task, an owed attempt (at-least-once: not a slot of the
    downtime) was read as a slot of its own (``SKIP`` recorded it ``missed``); with it
    owed, the run recovery decided ran as well as the one for the slots since (a
    ``RUN_ONCE`` task twice for one downtime); and a plan recovery made, none of its runs
    made, was counted against ``max_catch_up`` apart from the slots since
    (:func:`~lldsched.core.misfires.apply._go_on`, for a plan some of whose runs ran)."""
    decided = found.decided
    if decided is None:
        decide_misfire(core, task, now, owed=found.owed)
        return
    if found.due is None or not _passed_since(task, found, now):
        return
    core.replan(task, due=found.due, schedule=found.schedule, slot=found.slot)
    written = frozenset(decided)
    decide_misfire(
        core,
        task,
        now,
        owed=found.owed,
        # Its records, less those recovery wrote: one standing for the slots beyond the
        # cap would read as a cut plan's (cut_record), where this decision makes it again.
        history=lambda: [record for record in task.history if record not in written],
        known={record.slot for record in written},
    )


def _passed_since(task: ScheduledTask, found: Found, now: float) -> bool:
    """Whether a slot of ``task``'s schedule passed after recovery decided its passed
    slots (at ``found.at``, from the slot it stood at: at or before then) up to ``now``."""
    with deciding_for(task):
        following = first_after(found.schedule, found.slot, found.at, origin=task._grid)
    return following is not None and following <= now


# -- wall-clock jumps (the threaded runtime) ------------------------------------------------


def after_clock_jump(core: SchedulerCore, jump: float, now: float) -> None:
    """Re-evaluate queued tasks after the wall clock jumped by ``jump`` seconds.

    Forward (time passed that the timer did not see: a suspend, a clock set ahead): queued
    tasks whose slots passed meet their misfire policy, as after downtime, by the rule a
    restart and a shared claim apply (:func:`decide_misfire` from
    :func:`~lldsched.core.misfires.apply.first_decided`): a task awaiting a retry owes that
    attempt, which runs first, and the slots after its slot are decided, whether the retry
    is due yet or not (before, only SCHEDULED tasks were: a retry ran and its passed slots
    were recorded ``skipped`` after it, and a retry within a ``RUN_ALL`` catch-up left the
    slots the jump passed without a record).  So does a task a restart found with its
    attempt in flight, while it still owes it (:meth:`~lldsched.core.publishing.
    Publishing.owes`; before, that slot met the policy as one the jump passed: ``SKIP``
    recorded it missed, the run lost).  Backward (a clock set back): elapsed-time due
    instants move back with the clock (fixed rate, fixed delay, one-off by delay, and every
    retry's backoff), so "every 60 s" keeps meaning 60 s; calendar instants (cron, one-off
    at a given time) stay where they are.  A task whose run is in flight keeps its due
    instants (its run's finish decides the next), but a fixed rate's next slot is counted
    from the slot the run serves: that slot is read as moved with the clock
    (:meth:`CatchUp.moving`).  A forward jump leaves a run in flight alone: the slots it
    outlasted are its overrun's, skipped or caught up; but the slot an overlapping task
    (``Overlap.ALLOW``, ``CANCEL_OTHER``) queued behind its run is queued like any other,
    and meets the misfire policy with the slots after it.  A PAUSED task's due instant (the
    one ``resume()`` queues it at) moves back as a queued one would, so resuming does not
    wait out the jump; forward, ``resume()`` already runs a slot it slept through at once.
    """
    for task in list(core.tasks.values()):
        due = task.next_run_at
        if task.running:
            if jump < 0 and measures_elapsed_time(unwrap(task._schedule)):
                _move_in_flight(core, task, jump)
            elif jump > 0 and due is not None and due <= now and _queued_behind(task):
                decide_misfire(core, task, now)  # a slot queued like any other's
            continue
        paused = task.status is TaskStatus.PAUSED
        if due is None or not (task.status in _QUEUED or paused):
            continue
        if jump > 0:
            if not paused:  # an owed attempt runs first (first_decided), as at a restart
                owed = task.status is TaskStatus.RETRYING or core.owes(task)
                decide_misfire(core, task, now, owed=owed)
            continue
        schedule = task._schedule
        elapsed = measures_elapsed_time(unwrap(schedule))
        if elapsed or runnable(task.attempt) is TaskStatus.RETRYING:
            core.replan(
                task,
                due=due + jump,
                schedule=schedule.shifted(jump)
                if elapsed and isinstance(schedule, CatchUp)
                else schedule,
                slot=task.slot + jump if elapsed else None,
            )


def _queued_behind(task: ScheduledTask) -> bool:
    """True when ``task`` (RUNNING, with ``Overlap.ALLOW`` or ``CANCEL_OTHER``) has its
    next slot queued behind its runs in flight (its flight's pending slot, which
    :meth:`~lldsched.core.overlapping.OverlappingRuns._queue_following` queued)."""
    flight = task._flight
    return task.status is TaskStatus.RUNNING and flight is not None and flight.pending is not None


def _move_in_flight(core: SchedulerCore, task: ScheduledTask, jump: float) -> None:
    """The wall clock was set back by ``-jump`` while a run of ``task`` (an elapsed-time
    schedule) is in flight.  Its next slot is counted from the slot it serves, which the
    clock left behind: the record is read with that slot moved (a fixed rate would
    otherwise wait out the jump, its slots lost without a record).  An overlapping task
    counted its next slot already (its flight's pending slot, queued as the run began):
    that slot moves with the clock instead, and the record is read as it is."""
    flight = task._flight
    if flight is None or flight.pending is None:
        task._schedule = CatchUp.moving(task._schedule, jump)
        return
    pending = flight.pending = flight.pending + jump
    task._slot = pending  # the slot the queued entry belongs to (_queue_following)
    if task.status is TaskStatus.RUNNING:
        core.replan(task, due=pending)
    elif task.status is TaskStatus.PAUSED:  # resume() queues the pending slot
        task.next_run_at = pending
