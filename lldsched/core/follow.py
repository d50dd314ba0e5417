"""Following a shared store: what other processes wrote, applied to this registry.

In shared mode (docs/CLUSTER.md) the store's rows are the truth every process
shares, and each process's registry follows them.  The runtime calls in here
under its lock, with the store muted (:meth:`CoordinatedStore.muted
<lldsched.coordination.CoordinatedStore.muted>`), since the row already says what a
verb applied here would write.  Everything goes through the core's verbs:

* :func:`load` registers the rows at construction (instead of recovery: no process
  decides misfires for all of them at start; whoever claims a passed slot decides
  its misfire, :mod:`lldsched.threaded.shared.decisions`);
* :func:`follow` applies one :class:`~lldsched.coordination.Change`: a removal, a
  registration (announced to the listeners as one: :meth:`SchedulerCore.learnt
  <lldsched.core.restoration.Restoration.learnt>`), a new definition
  (``add(..., replace_existing=True)``), and the
  state a run settled elsewhere or a control verb left (:meth:`SchedulerCore.adopt`);
  a task whose run is in flight *here* takes only control verbs (pause, resume,
  cancel): its own finish decides the rest;
* :func:`claimed_entry` turns a :class:`~lldsched.coordination.Claim` into the
  entry :meth:`SchedulerCore.begin` takes, aligning the task with the row the
  claim saw first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from lldsched.coordination import Change, Claim
from lldsched.core.duequeue import queued_entry
from lldsched.core.machine import SchedulerCore
from lldsched.core.names import RUNNABLE, SLOT_HELD, runnable
from lldsched.core.recovery import (
    blocked_of,
    pending_slot,
    restored_from,
    restored_state,
    stored_plan,
)
from lldsched.core.registration import options_of
from lldsched.core.store.stalerows import VERBS_OWED
from lldsched.core.task import Entry, ScheduledTask
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import Task, TaskSnapshot
from lldsched.policies import RetryPolicy
from lldsched.schedules.catchup import unwrap

__all__ = ["RecordsOf", "claimed_entry", "follow", "load"]

RecordsOf = Callable[[str], Sequence[ExecutionRecord]]
"""The store's records of a task, oldest first (:meth:`HistoryStore.records
<lldsched.persistence.HistoryStore.records>`): read only for a row registered here with
attempts behind it (the slot they belong to:
:func:`~lldsched.core.recovery.pending_slot`) and to put back the
plan of a task during its ``RUN_ALL`` catch-up (:func:`_plan`), and for the streak of
slots given up of a task whose retry policy counts it (:func:`_streak`)."""


def load(
    core: SchedulerCore,
    snapshots: Iterable[TaskSnapshot],
    *,
    records_of: RecordsOf,
    dead_letter: Iterable[str] = (),
) -> None:
    """Register every stored row as it is (a shared store's tasks at construction), as
    :func:`follow` registers a row it learns (:func:`_register`).  ``records_of``: see
    :data:`RecordsOf`.  The FAILED ones enter the dead letter in the order of
    ``dead_letter`` (the store's, oldest failure first), as a restart restores it from
    an unshared store; before, in the order the rows were registered."""
    for snapshot in snapshots:
        _register(core, snapshot, records_of)
    core.order_dead_letter(dead_letter)


def follow(core: SchedulerCore, change: Change, *, records_of: RecordsOf) -> ScheduledTask | None:
    """Apply ``change`` to the registry; returns the task it left (None: removed, or
    finished and retired at once under ``retain_finished``: the runtime keeps nothing
    more of it).  ``records_of``: see :data:`RecordsOf`."""
    task = core.tasks.get(change.task_id)
    snapshot = change.snapshot
    if snapshot is None:
        if task is not None:
            core.remove(task.id)
        return None
    if task is None:  # registered elsewhere (or again): heard here as a registration
        if _removed_here(core, snapshot):
            return None  # a run of it settled elsewhere: the purge written here deletes it
        learnt = _held(core, _register(core, snapshot, records_of))
        if learnt is not None:
            core.learnt(learnt)
        return learnt
    redefined = snapshot.task != task.definition and task.status not in (
        TaskStatus.SUCCEEDED,
        TaskStatus.CANCELLED,
    )
    if redefined:
        _redefine(core, snapshot.task)
    status, attempt = _state(snapshot)
    if task.running:
        _control(core, task, status)
        return task
    owed = _owed(core, task, status)
    if task.status is TaskStatus.CANCELLED:
        if owed:  # its row not stored yet: the other's runs counted in what it writes
            core.adopt_counts(
                task,
                run_count=snapshot.run_count,
                failure_count=snapshot.failure_count,
                last_error=snapshot.last_error,
            )
        return task  # cancelled is final here as everywhere (a row cannot revive it)
    _adopt(core, task, snapshot, task.status if owed else status, attempt, records_of)
    return _held(core, task)


def _owed(core: SchedulerCore, task: ScheduledTask, status: TaskStatus) -> bool:
    """Whether ``task``'s pause or cancel, made here while the store failed its write
    (the row stale: :meth:`StaleRows.owes <lldsched.core.store.stalerows.StaleRows.owes>`),
    wins over the row another process wrote since, which says ``status``: runnable (a
    run settled there, its next slot).  Such a verb wins over that process's
    run as one written during the run does (docs/CLUSTER.md, "What the shared mode
    guarantees"): the rest of the row is taken, its status is this process's, and the
    rewrite of the stale row writes them.  A row another process finished, paused,
    cancelled, failed or found blocked is taken as it is."""
    if task.status not in VERBS_OWED or status not in RUNNABLE:
        return False
    writes = core.store_writes
    return writes is not None and writes.owes(task.id)


def _removed_here(core: SchedulerCore, snapshot: TaskSnapshot) -> bool:
    """Whether ``snapshot``, a row of a task this registry does not hold, is another
    process's run of a task ``remove()`` forgot here while the store failed its delete
    (:meth:`StaleRows.owes_removal <lldsched.core.store.stalerows.StaleRows.owes_removal>`:
    runnable, with the definition removed): not learnt back, as a removal written during
    that run would have ended it; the purge of the stale row deletes it.  A row of
    another definition is a registration made elsewhere, learnt as any."""
    writes = core.store_writes
    return (
        writes is not None
        and _state(snapshot)[0] in RUNNABLE
        and writes.owes_removal(snapshot.task.id, snapshot.task)
    )


def _held(core: SchedulerCore, task: ScheduledTask) -> ScheduledTask | None:
    """``task`` if the registry still holds it (a task followed into SUCCEEDED or
    CANCELLED may have retired at once), else None."""
    return task if core.holds(task) else None


def claimed_entry(core: SchedulerCore, claim: Claim) -> Entry | None:
    """The live entry for ``claim``, its task first aligned with the row the claim saw
    (due at the claimed slot, the row's attempt counter); None if the task is not
    registered here or not runnable (paused or cancelled here: the caller releases
    the claim)."""
    task = core.tasks.get(claim.task_id)
    if task is None or task.status not in RUNNABLE or task.running:
        return None
    if task.next_run_at != claim.slot or task.attempt != claim.attempt or not task.generation:
        core.adopt(
            task,
            status=runnable(claim.attempt),
            next_run_at=claim.slot,
            attempt=claim.attempt,
            run_count=task.run_count,
            failure_count=task.failure_count,
            last_error=task.last_error,
        )
    return queued_entry(task, claim.slot)


def _state(snapshot: TaskSnapshot) -> tuple[TaskStatus, int]:
    """The row's status and attempt counter by the rule a restart applies
    (:func:`~lldsched.core.recovery.restored_state`): a RUNNING row (left by an unshared
    scheduler that died mid-run) or one paused mid-run is read as the attempt still
    owed.  A row paused mid-run whose holder goes on settles it, and that row is
    followed then; one whose holder died is resumed with the attempt owed, as after a
    restart, where it was resumed as a retry of an attempt never recorded."""
    status, attempt, _ = restored_state(snapshot)
    return status, attempt


def _register(core: SchedulerCore, snapshot: TaskSnapshot, records_of: RecordsOf) -> ScheduledTask:
    """Register the row, at :func:`load` or learnt by :func:`follow`: one rule.  A row
    with attempts behind it keeps the retry's due instant, not the slot its attempts
    belong to, and a retry read as a slot of its own moved a fixed rate's grid by its
    backoff (the slot after 09:01 retried at 09:01:05 was 09:02:05): its slot is its
    task's last run record's (:func:`~lldsched.core.recovery.pending_slot`, as at a
    restart)."""
    status, attempt = _state(snapshot)
    slot = pending_slot(snapshot, attempt, records=lambda: records_of(snapshot.task.id))
    (task,) = core.restore(
        [
            restored_from(
                snapshot,
                definition=snapshot.task,
                status=status,
                attempt=attempt,
                slot=slot,
                history=(),
            )
        ]
    )
    if status in RUNNABLE and snapshot.next_run_at is not None:
        _adopt(core, task, snapshot, status, attempt, records_of, slot=slot)  # its streak too
        return task
    _streak(core, task, records_of)
    if status is TaskStatus.BLOCKED:  # its wait began at its slot, in whichever process
        core.adopted_wait(task, previous=None, blocked=blocked_of(snapshot))
    elif snapshot.waited is not None:  # a paused task's plan, for its resume
        _plan(core, task, snapshot, records_of)
    return task


def _adopt(
    core: SchedulerCore,
    task: ScheduledTask,
    snapshot: TaskSnapshot,
    status: TaskStatus,
    attempt: int,
    records_of: RecordsOf,
    *,
    slot: float | None = None,
) -> None:
    """Take the row's state: ``status`` and ``attempt`` as :func:`_state` read them, the
    due instant and the counters as the row has them, the slot a retry's attempts belong
    to (``slot`` if known, else its task's last run record's:
    :func:`~lldsched.core.recovery.pending_slot`, as :func:`_register` reads it; the row
    does not keep it), and its plan: the slot the
    schedule waits for behind an extra run (``snapshot.waited``: another process's
    run_now, or a misfire's catch-up), handed out after the run due now as run_now()
    here would.  A plan this process had put in front of the task's schedule is
    dropped: the row, written since by another process, says what comes next, and a
    plan left in place would hand out its slot again at this process's next run.
    Without the row's plan, whoever ran the extra run counted the schedule on from it
    (an hourly task moved to the minute of the click).

    Before, a retry kept the slot this process last knew of its task: one that read
    the row only once it was retrying a later slot (the feed gives a task's latest row,
    not each one between: a run of 09:00 and a failed 10:00 read together) ran the
    retry as 09:00's, its record in the wrong slot and 10:00 recorded ``skipped``
    after it, and a claim deciding its misfire counted the slots from 09:00."""
    task._schedule = unwrap(task._schedule)
    if attempt and slot is None and status in SLOT_HELD and snapshot.next_run_at is not None:
        # A retry due, or paused with it: its slot is its last run's (one read a retry).
        # Only then: adopt takes a slot for a runnable or paused row with a due instant
        # alone, and a finished row keeps its last attempt (a one-off's SUCCEEDED row
        # says 1): read for every settle followed, that was a records read per run in
        # each other process.  A paused retry's slot is the one its resume here runs.
        slot = pending_slot(snapshot, attempt, records=lambda: records_of(task.id))
    core.adopt(
        task,
        status=status,
        next_run_at=snapshot.next_run_at,
        attempt=attempt,
        run_count=snapshot.run_count,
        failure_count=snapshot.failure_count,
        last_error=snapshot.last_error,
        slot=snapshot.slot if slot is None else slot,  # a plan's run put off keeps its slot
        grid=snapshot.grid,
        blocked=blocked_of(snapshot),
    )
    if snapshot.waited is not None:
        _plan(core, task, snapshot, records_of)
    _streak(core, task, records_of)


def _streak(core: SchedulerCore, task: ScheduledTask, records_of: RecordsOf) -> None:
    """The slots ``task`` gave up in a row, from the store's records, for a retry policy
    that counts them (``fail_after_given_up``, or a policy of one's own): another process
    may have given some up, or ended the streak with a success.  A read of the task's
    records per change followed, for such tasks only."""
    retry = task.retry
    if type(retry) is RetryPolicy and retry.fail_after_given_up is None:
        return
    core.adopt_streak(task, records_of(task.id))


def _plan(
    core: SchedulerCore, task: ScheduledTask, snapshot: TaskSnapshot, records_of: RecordsOf
) -> None:
    """The plan the row stands for, put back as a restart puts it back
    (:func:`~lldsched.core.recovery.stored_plan`: its ``waited`` slot, to resume at when
    the row says ``resumes``; a task during its ``RUN_ALL`` catch-up, paused or not, gets
    the slots after it back, up to where the row says its runs end, ``until``: without
    them, this process ran ``waited`` and its fixed rate went on from there, the plan's
    later slots recorded skipped; without ``until``, it ran the slots passed since the
    plan was made with it).  The decisions
    that plan would take (slots beyond ``max_catch_up`` that passed since it was made)
    are not recorded here: a follower writes nothing; its runs are the plan's latest
    slots.  A plan cut at the cap is found in the store's records (``records_of``), which
    this process's own history does not hold (another process decided it), and put back
    as it was."""
    waited = snapshot.waited
    assert waited is not None  # the callers' test
    stored_plan(
        core, task, waited, core.clock.now(), resumes=snapshot.resumes, until=snapshot.until,
        history=lambda: records_of(task.id),
    )  # fmt: skip


def _redefine(core: SchedulerCore, definition: Task) -> None:
    core.add(
        definition.name,
        definition.action,
        definition.schedule,
        task_id=definition.id,
        replace_existing=True,
        **options_of(definition),
        check_arguments=False,  # judged by the process that registered it
    )


def _control(core: SchedulerCore, task: ScheduledTask, status: TaskStatus) -> None:
    """A control verb written elsewhere, for a task whose run is in flight here."""
    if status is TaskStatus.CANCELLED:
        core.cancel(task.id)
    elif status is TaskStatus.PAUSED:
        core.pause(task.id)
    elif task.status is TaskStatus.PAUSED and (status in RUNNABLE or status is TaskStatus.RUNNING):
        core.resume(task.id)
