"""Recovery: tasks reloaded from a store, and the slots that passed while nobody ran them.

Both runtimes call :func:`recover` when they are built on a store that holds
tasks, and the threaded runtime calls :func:`after_clock_jump` when its wall
clock jumps.  Everything here runs under the runtime's lock (or on the
simulation's thread) and changes tasks only through the core.

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
:class:`~lldsched.policies.MisfirePolicy` (see :mod:`lldsched.policies`): the
decisions are records whose outcome says ``missed`` or ``coalesced``, and the
task is queued where the policy says.  An attempt owed from before the
downtime (a retry, or the in-flight attempt) runs first; the policy decides the
slots after it.  A fixed rate's slots are counted on the task's grid, from its origin
(``ScheduledTask._grid``, :func:`~lldsched.schedules.base.on_grid`): every slot decided,
run or resumed at is ``slot_at(origin, k)``, so downtime starts no new grid.  Paused
tasks are left alone: ``resume`` already runs a slot
that was slept through.  A ``RUN_ALL`` task restored during its catch-up, paused or
not, gets the slots of its plan back (the store kept only the next two, and where its
runs end): its slots up to that end, as decided (:func:`stored_plan`; a row that keeps
no end, an older release's, is decided again from the slot its plan waited for, grace
not asked; a plan cut at :data:`MAX_SLOTS` is put back as it was: the record standing
for the slots beyond the cap says where it ended).  A misfire decided from its due slot
goes on with that plan, and decides only the slots after its end (:func:`_go_on`).
A BLOCKED task stays off the heap, waiting for what its records say it still waits for
(:mod:`lldsched.core.dependencies`), and is released at once if that is nothing.

**Enumeration is capped.**  At most :data:`MAX_SLOTS` passed slots of one task
are decided one by one.  Beyond that, one more record (outcome as the policy
says, ``error`` text saying so) stands for all the later ones, and the task
resumes at its first slot after now.  A slot of such a plan that meets the policy
again (a restart during the plan, a later jump, a claim in shared mode) is not decided
again: the plan goes on as it was cut, and only the slots after it meet the policy
(:func:`decide_misfire`).  A ``FixedDelay`` misses one slot however long the
downtime: its slots count from finishes that never happened.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import NamedTuple

from lldsched.core.machine import SchedulerCore
from lldsched.core.names import (
    COALESCED,
    MISFIRE_CAP,
    RETRYING,
    SCHEDULED,
    cap_text,
    goes_on,
    runnable,
)
from lldsched.core.task import Restored, ScheduledTask
from lldsched.logs import JOBS, STORE, counted, instant_text
from lldsched.model import ExecutionRecord, Outcome, TaskStatus
from lldsched.persistence import HistoryStore, TaskSnapshot, TaskStore
from lldsched.policies import DEFAULT_MISFIRE, Misfire, MisfirePolicy
from lldsched.schedules.base import (
    Schedule,
    first_slot_after,
    measures_elapsed_time,
    on_grid,
    slot_after,
    slots_on,
)
from lldsched.schedules.catchup import SCHEDULE_DECIDES, CatchUp, Resume, slot_first, unwrap

__all__ = [
    "COALESCED",
    "MAX_SLOTS",
    "MISSED",
    "Found",
    "History",
    "Plan",
    "after_clock_jump",
    "at_start",
    "decide_misfire",
    "first_decided",
    "passed_slots",
    "pending_slot",
    "plan",
    "recover",
    "restored_state",
    "stored_plan",
]

log = logging.getLogger(JOBS)  # a schedule that raised
restores = logging.getLogger(STORE)

MAX_SLOTS = 1000
"""Passed slots of one task decided one by one; the rest are summed up in one record."""

MISSED = Outcome.MISSED

History = Callable[[], Sequence[ExecutionRecord]]
"""Where a task's records are read to find a plan cut at :data:`MAX_SLOTS` (the record
standing for the slots beyond the cap: :func:`_cut`), called only when one may matter.
None in its place: the task's own history, which recovery restored from the store.  A
process sharing a store passes the store's (``store.records(task_id)``): its own history
holds only the runs it ran, and another process decided the plan."""

_QUEUED = (TaskStatus.SCHEDULED, TaskStatus.RETRYING)  # statuses with a due instant to settle


class Plan(NamedTuple):
    """What a policy decided for a task's passed slots.

    ``runs``: the slots that will run, oldest first.  ``decisions``: the slots
    that will not run on their own, each ``(slot, outcome, error)``.  ``resume``:
    what follows the runs (a slot, ``None`` for the end, or ``SCHEDULE_DECIDES``).
    ``misfired``: False when the oldest slot was within grace (no decision taken).
    """

    runs: list[float]
    decisions: list[tuple[float, Outcome, str | None]]
    resume: Resume
    misfired: bool


# -- the decisions (pure: schedule, slots, now, policy in; a Plan out) ----------------------


def plan(
    schedule: Schedule,
    first: float,
    now: float,
    policy: MisfirePolicy,
    *,
    grace: bool = True,
    origin: float | None = None,
) -> Plan:
    """Decide what happens to the slots of ``schedule`` from ``first`` up to ``now``.

    ``grace``: False for slots a misfire decision made a plan of already (put back from
    a stored row: :func:`stored_plan`): they misfired when that plan was made, however
    recent they are now, so the policy decides every one that passed.

    ``origin``: the task's grid origin (``ScheduledTask._grid``): a fixed rate's slots
    are counted on that grid while ``first`` is one of its slots (:func:`on_grid`), every
    slot listed, run or resumed at ``slot_at(origin, k)``, the very float."""
    slots, following = passed_slots(schedule, first, now, origin=origin)
    return _decided(schedule, first, slots, following, now, policy, grace=grace, origin=origin)


def _decided(
    schedule: Schedule,
    first: float,
    slots: list[float],
    following: float | None,
    now: float,
    policy: MisfirePolicy,
    *,
    grace: bool = True,
    origin: float | None = None,
) -> Plan:
    """:func:`plan` for the passed ``slots`` (from ``first`` on, listed by
    :func:`passed_slots`, or by :func:`_decided_put_off`) and the slot ``following`` them."""
    if not slots or (grace and now - slots[0] <= policy.grace):
        return Plan([first], [], SCHEDULE_DECIDES, False)
    truncated = following is not None and following <= now
    if following is None or truncated:  # the slot to resume at is past what was listed
        last = slots[-1] if following is None else following
        after = first_after(schedule, last, now, origin=origin)
    else:
        after = following
    action = policy.on_misfire
    tail: list[tuple[float, Outcome, str | None]] = []
    resume: Resume = SCHEDULE_DECIDES
    if truncated:
        assert following is not None
        outcome = COALESCED if action is Misfire.RUN_ONCE else MISSED
        tail = [(following, outcome, _tail_text(following, now, action, after))]
        resume = after
    if action is Misfire.SKIP:
        return Plan([], [(slot, MISSED, None) for slot in slots] + tail, after, True)
    if action is Misfire.RUN_ONCE:
        coalesced = [(slot, COALESCED, None) for slot in slots[:-1]]
        return Plan([slots[-1]], coalesced + tail, resume, True)
    keep = policy.max_catch_up
    missed = [(slot, MISSED, None) for slot in slots[:-keep]]
    return Plan(slots[-keep:], missed + tail, resume, True)


def passed_slots(
    schedule: Schedule,
    first: float,
    now: float,
    cap: int = MAX_SLOTS,
    *,
    origin: float | None = None,
) -> tuple[list[float], float | None]:
    """The slots from ``first`` on that are not after ``now`` (at most ``cap``), and
    the slot that follows the last of them (``None``: the schedule ends there);
    ``origin``: the task's grid origin, as :func:`plan` takes it."""
    if first > now or cap < 1:
        return [], first
    own = unwrap(schedule)
    # A grid's slots counted from its origin, or from ``first`` where it is off that
    # grid (on_grid, slots_on: the schedule's own rule, never a copy of it here); any
    # other schedule's stepped one slot_after at a time.
    if getattr(own, "slot_at", None):
        later = slots_on(own, *on_grid(own, first, origin))
    else:
        later = _stepped(own, first)
    slots = [first]
    for slot in later:
        if slot > now or len(slots) >= cap:
            return slots, slot
        slots.append(slot)
    return slots, None


def _stepped(schedule: Schedule, slot: float) -> Iterator[float]:
    """The slots after ``slot``, by :func:`following_slot`, until there is none."""
    while (following := following_slot(schedule, slot)) is not None:
        yield following
        slot = following


def following_slot(schedule: Schedule, slot: float, *, origin: float | None = None) -> float | None:
    """The slot after ``slot``, had its run taken no time (None: there is none), on the
    grid from ``origin`` while ``slot`` is one of its slots (:func:`on_grid`)."""
    schedule = unwrap(schedule)
    try:  # the schedule's own rule (FixedRate: slot + period), never a copy of it here
        anchor, k = on_grid(schedule, slot, origin)
        following = next(slots_on(schedule, anchor, k), None) if k else slot_after(schedule, slot)
    except Exception:
        log.exception("%r.next_run raised while listing missed slots", schedule)
        return None
    if following is not None and following <= slot:
        log.error("%r.next_run went from %r back to %r; no more slots", schedule, slot, following)
        return None
    return following


def first_after(
    schedule: Schedule, slot: float, now: float, *, origin: float | None = None
) -> float | None:
    """The first slot after ``now`` of ``schedule``, counting on from ``slot`` (<= now),
    or from the grid's ``origin`` while ``slot`` is one of its slots (:func:`on_grid`)."""
    schedule = unwrap(schedule)
    try:
        anchor, _ = on_grid(schedule, slot, origin)
        return first_slot_after(schedule, anchor, now, limit=MAX_SLOTS)
    except Exception:
        log.exception("%r.next_run raised while skipping missed slots", schedule)
        return None


_CAPPED = MISFIRE_CAP  # how the error text of a record standing for the rest begins


def _tail_text(following: float, now: float, action: Misfire, after: float | None) -> str:
    """The error text of the record standing for the slots beyond :data:`MAX_SLOTS`
    (:func:`~lldsched.core.names.cap_text`): that they passed unrun, what decided them
    and when, the first of them, what became of them (not run; under ``RUN_ONCE``
    coalesced into its one run, the last listed slot's) and where the task goes on
    (``after``).  Read back by its prefix alone (:func:`_cut`)."""
    fate = (
        "coalesced into the one run the policy made (the slot before them)"
        if action is Misfire.RUN_ONCE
        else "none of them run"
    )
    return cap_text(
        _CAPPED,
        passed=f"more than {MAX_SLOTS} slots passed unrun (the scheduler down or not started, "
        f"or its clock moved on) before the misfire policy ({action.value}) decided them at "
        f"{instant_text(now)}",
        kept=f"the first {MAX_SLOTS:,}",
        stands="every later one",
        first=following,
        last="up to then",
        then=f"{fate}; {goes_on(after)}",
    )


# -- applying them ------------------------------------------------------------------------


def decide_misfire(
    core: SchedulerCore,
    task: ScheduledTask,
    now: float,
    *,
    owed: bool = False,
    token: int | None = None,
    history: History | None = None,
    known: Collection[float] = (),
) -> list[ExecutionRecord] | None:
    """The one rule for a queued task whose due instant passed while no scheduler was
    there: its passed slots meet its :class:`~lldsched.policies.MisfirePolicy`.

    ``owed``: the attempt due is owed from before (it was in flight, or a retry): it
    runs first, at its due instant, and the policy decides the slots after its slot.
    ``None`` when the oldest slot decided is within grace (nothing decided, nothing
    changed); otherwise the records decided (``missed`` or ``coalesced``, each carrying
    ``token``), with the task queued as decided (the owed attempt, the catch-up runs,
    its first slot after now, or cancelled if its schedule ended).

    Used by recovery at start, after a forward wall-clock jump, and in shared mode by
    the process that claims a slot due before it was there (:mod:`lldsched.threaded.shared`).

    A slot of a plan cut at :data:`MAX_SLOTS` (the history holds the record standing for
    the slots beyond the cap, at or after that slot: :func:`_cut`) was decided already: the
    plan goes on as it was cut, and only the slots from its resume slot up to ``now``
    meet the policy (:func:`_cut_plan`, :func:`_and_since`).  Decided again from that
    slot, the slots the cap's record stood for were counted twice: recorded missed once
    more, and the latest of them run instead of the plan's own.  ``history``: where that
    record is looked for, read only once the policy decides (:data:`History`).

    ``known``: slots whose decisions are recorded already, not recorded again (those of
    this same downtime decided at a scheduler's construction and decided again at its
    start, :func:`at_start`: the task's history, which :func:`_apply` reads for them,
    holds only its last ``history_limit`` records).
    """
    due = task.next_run_at
    if due is None:
        return None
    first = first_decided(task, owed=owed)
    if first is None:  # the owed attempt was its schedule's last slot
        return None
    policy = task.misfire or DEFAULT_MISFIRE
    origin = task._grid
    schedule = task._schedule
    put_off = None if owed else _put_off(schedule)
    if put_off is None:
        decided = plan(schedule, first, now, policy, origin=origin)
    else:
        decided = _decided_put_off(schedule, first, put_off, now, policy, origin=origin)
    if not decided.misfired:
        return None
    if isinstance(schedule, CatchUp) and policy.on_misfire is Misfire.RUN_ALL:
        until = schedule.until  # a plan not used up, its runs decided already
        if until is not None and first < until:
            return _go_on(core, task, schedule, until, now, owed=owed, token=token, known=known)
    records = task.history if history is None else history()
    cut = _cut(records, first)
    if cut is not None:  # ``first`` is a slot of a plan cut at the cap
        own = unwrap(task._schedule)
        # An owed first attempt (in flight when the process died) is a run of the plan
        # that left no record; a retry's slot has its first attempt's.
        made = 1 if owed and task.attempt == 0 else 0
        cut_plan = _cut_plan(own, first, cut, records, policy, made=made, origin=origin)
        decided = _and_since(cut_plan, own, now, policy, origin=origin)
    return _apply(core, task, decided, due if owed else None, token=token, known=known)


def _put_off(schedule: Schedule) -> float | None:
    """The slot a ``run_now`` put off behind its extra run (:func:`~lldsched.schedules.
    catchup.slot_first`: a plan that hands out that slot, decided to run, after the run
    due), or None for any other schedule or plan."""
    if not isinstance(schedule, CatchUp) or schedule.spent or schedule.slots:
        return None
    if schedule.resuming:  # a misfire decision's slot to resume at: on the grid already
        return None
    return schedule.waited


def _decided_put_off(
    schedule: Schedule,
    first: float,
    put_off: float,
    now: float,
    policy: MisfirePolicy,
    *,
    origin: float | None,
) -> Plan:
    """:func:`plan` for a ``run_now``'s extra run due at ``first`` (no slot of the task's
    schedule: a fixed rate's is off its grid) with the slot it ``put_off`` behind it: the
    passed slots are the extra run, then the schedule's from ``put_off`` on, and the task
    goes on at ``put_off`` when only the extra run passed.  Counted on from ``first``, as
    any other run due is, the slots were ``first`` plus the period: the slot put off was
    dropped unrecorded, and a fixed rate's grid moved to the extra run's instant
    (docs/DECISIONS.md, "A `run_now`'s extra run past its grace")."""
    following: float | None
    if put_off > now:
        slots, following = [first], put_off
    else:
        after, following = passed_slots(schedule, put_off, now, origin=origin)
        slots = [first, *after]
    decided = _decided(schedule, first, slots, following, now, policy, origin=origin)
    if decided.misfired and decided.runs and decided.runs[-1] == first:
        # The extra run runs, and hands the task to the slot it put off, not to its
        # schedule counted on from the extra run's instant.
        decided = decided._replace(resume=put_off)
    return decided


def _go_on(
    core: SchedulerCore,
    task: ScheduledTask,
    schedule: CatchUp,
    until: float,
    now: float,
    *,
    owed: bool,
    token: int | None,
    known: Collection[float] = (),
) -> list[ExecutionRecord] | None:
    """A ``RUN_ALL`` plan not used up (``schedule``, whose runs end before ``until``) met
    downtime: its slots were decided when it was made, and run as decided; only the slots
    from ``until`` up to ``now`` meet the policy, as misfires of their own (``None``: they
    are within grace, and the plan goes on as it is, its schedule after it).

    Decided again from the slot due with the slots after the plan, its own slots were
    counted against ``max_catch_up`` a second time: every minute, down 10 minutes, a
    plan of 10 runs, the clock jumped 5 minutes once its third ran, ``max_catch_up=10``:
    its 4th and 5th slots were recorded missed (a restart then, the 4th in flight: the
    5th), where the plan runs its 7 and the 5 slots since meet the policy (all run)."""
    due = task.next_run_at
    assert due is not None  # decide_misfire's test
    policy = task.misfire or DEFAULT_MISFIRE
    later = plan(schedule.inner, until, now, policy, origin=task._grid)
    if not later.misfired:
        return None
    runs = [*([] if owed else [due]), *schedule.slots, *later.runs]
    decided = Plan(runs, later.decisions, later.resume, True)
    return _apply(core, task, decided, due if owed else None, token=token, known=known)


def first_decided(task: ScheduledTask, *, owed: bool) -> float | None:
    """The first slot :func:`decide_misfire` decides of ``task``: its due instant, or,
    when the attempt due is ``owed`` from before (in flight when its process died, or a
    retry: attempts behind it), the slot after the one its attempts belong to (the owed
    attempt runs first; None: that slot was its schedule's last).

    The one rule for whether a task met downtime: a restart decides a queued task's
    slots from here (:func:`recover`), and a process sharing a store decides a claimed
    slot's when this slot passed before it was there to claim it (``Coordinator.claim``,
    :mod:`lldsched.threaded.shared`).  Before, a claim with attempts behind it (a retry,
    or a takeover of one) met no policy there: the slots after its slot were recorded
    ``skipped`` after its run, where a restart recorded them ``missed`` before it."""
    if not owed:
        return task.next_run_at
    put_off = _put_off(task._schedule)
    if put_off is not None:  # the attempt owed is a run_now's extra run, off the grid:
        return put_off  # the slot after it is the one it put off (_decided_put_off)
    return following_slot(task._schedule, task.slot, origin=task._grid)


def _cut_plan(
    own: Schedule,
    first: float,
    cut: ExecutionRecord,
    history: Sequence[ExecutionRecord],
    policy: MisfirePolicy,
    *,
    made: int = 0,
    origin: float | None = None,
) -> Plan:
    """The plan cut at :data:`MAX_SLOTS` that ``first`` is a slot of, from ``first`` on,
    as it was decided: its slots up to ``cut`` (the record standing for the slots beyond
    the cap), then the first slot after the instant ``cut`` was decided.

    Unless the wall clock was set back since, while the plan went on: its slots still to
    come moved back with the clock (``after_clock_jump``: an elapsed-time schedule's
    slots do), ``first`` among them, but the record did not.  Read from ``first`` up to
    the record, such a plan held more runs than any plan has (:func:`_plan_size`): slots
    decided missed and slots it had run ran (again), and the task resumed where the
    jump had not moved it.  Then the plan is the runs it has not made yet (its size less
    the runs recorded since ``cut``, first attempts, and less ``made``: its runs no
    record counts, in flight at a crash or owed ahead of ``first``), from ``first`` on,
    and its resume moves by the shift that puts its last run just before ``cut``, as
    the jump moved it.  A jump back by fewer periods than the plan had run is not told
    apart that way: the plan reads as one not moved, as before."""
    slots, _ = passed_slots(own, first, cut.slot, origin=origin)
    runs = [slot for slot in slots if slot < cut.slot]
    resume = first_after(own, cut.slot, cut.finished, origin=origin)
    size = _plan_size(policy)
    if len(runs) <= size:
        return Plan(runs, [], resume, True)
    made += _runs_since(history, cut)
    runs = runs[: max(0, size - made)]
    after = following_slot(own, runs[-1], origin=origin) if runs else None
    if resume is not None and after is not None:
        resume += after - cut.slot
    return Plan(runs, [], resume, True)


def _plan_size(policy: MisfirePolicy) -> int:
    """The most runs a plan cut at :data:`MAX_SLOTS` holds (:func:`plan`): the slots
    ``RUN_ALL`` keeps of those it listed (``max_catch_up``), ``RUN_ONCE``'s one."""
    if policy.on_misfire is Misfire.RUN_ALL:
        return min(policy.max_catch_up, MAX_SLOTS)
    return 1 if policy.on_misfire is Misfire.RUN_ONCE else 0


def _runs_since(history: Sequence[ExecutionRecord], cut: ExecutionRecord) -> int:
    """The runs recorded after ``cut`` in ``history`` (first attempts: a retry is its
    slot's run again): the slots of its plan made since it was decided."""
    after = False
    made = 0
    for record in history:
        if after:
            made += record.attempt == 1 and record.outcome.ran
        elif record == cut:  # equal, not the same object: a packed history rebuilds it
            after = True
    return made


def _and_since(
    decided: Plan, own: Schedule, now: float, policy: MisfirePolicy, *, origin: float | None
) -> Plan:
    """``decided`` (:func:`_cut_plan`), then the slots from its resume slot up to ``now``
    as ``policy`` decides them: they passed after the plan was decided (a restart's own
    downtime, a later jump), and are misfires of their own."""
    resume = decided.resume
    if resume is None or resume is SCHEDULE_DECIDES:
        return decided
    later = plan(own, resume, now, policy, origin=origin)
    if not later.misfired:
        return decided
    return Plan(decided.runs + later.runs, later.decisions, later.resume, True)


def _apply(
    core: SchedulerCore,
    task: ScheduledTask,
    decided: Plan,
    owed: float | None,
    *,
    token: int | None = None,
    known: Collection[float] = (),
) -> list[ExecutionRecord]:
    """Record the decisions, then queue ``task`` as decided (after its ``owed`` attempt);
    the records written.

    A slot whose decision the task's history already holds is not recorded again: a
    restart killed among its decisions (each its own write, the task's due instant
    written after the last) left some of them in the store with the task still due
    where it was, and the next restart decides the same slots again.
    """
    records = _record(core, task, decided.decisions, token=token, known=known)
    _queue(core, task, decided, owed)
    return records


def _record(
    core: SchedulerCore,
    task: ScheduledTask,
    decisions: Sequence[tuple[float, Outcome, str | None]],
    *,
    token: int | None = None,
    known: Collection[float] = (),
) -> list[ExecutionRecord]:
    """Record ``decisions`` of ``task`` but those its history holds (see :func:`_apply`)
    or ``known`` names (:func:`decide_misfire`)."""
    if decisions:
        done = {record.slot for record in task.history if not record.outcome.ran}
        done.update(known)
        if done:
            decisions = [decision for decision in decisions if decision[0] not in done]
    return [
        core.record_misfire(task, slot, outcome, error, token=token)
        for slot, outcome, error in decisions
    ]


def _queue(core: SchedulerCore, task: ScheduledTask, decided: Plan, owed: float | None) -> None:
    """Queue ``task`` as ``decided`` says, after its ``owed`` attempt (cancelled if
    nothing is left to run)."""
    own = unwrap(task._schedule)  # a catch-up decided earlier is superseded
    queue = list(decided.runs)
    resume = decided.resume
    if owed is not None:
        queue.insert(0, owed)
    elif not queue:
        if resume is None or resume is SCHEDULE_DECIDES:  # every slot skipped, none left
            if task.running:  # skipped behind runs in flight: they go on, the last ends it
                core.drop_pending(task)
            else:
                core.cancel(task.id)
            return
        queue, resume = [resume], SCHEDULE_DECIDES
    plan_ahead = len(queue) > 1 or resume is not SCHEDULE_DECIDES
    # Where the runs decided end, kept with the row (TaskSnapshot.until): the slot after
    # the last, when the task's schedule takes over from it.
    until = (
        following_slot(own, queue[-1], origin=task._grid)
        if plan_ahead and resume is SCHEDULE_DECIDES
        else None
    )
    core.replan(
        task,
        due=queue[0],
        # A slot to resume at is the schedule's: a run that outlasts it skips it.
        schedule=CatchUp(own, queue[1:], resume, resumes=True, until=until) if plan_ahead else own,
        slot=None if owed is not None else queue[0],
    )


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
    where it was, with that plan behind.  A plan cut at :data:`MAX_SLOTS` is put back as
    it was (:func:`_cut`).  Any other policy's plan, and one whose ``waited`` is the slot
    to resume at, holds no slot after ``waited``: nothing was lost.  Returns the decisions
    that plan took (slots beyond ``max_catch_up``), for the caller to record or not:
    ``task`` is only replanned here.

    ``until``: where the plan's runs end (:attr:`TaskSnapshot.until
    <lldsched.persistence.TaskSnapshot.until>`), kept by a row written since: the plan is
    its slots from ``waited`` up to it, as decided, nothing decided again; the slots from
    ``until`` on passed after the plan was made, and are the misfire policy's when the
    slot due meets it (:func:`decide_misfire`, :func:`_go_on`; a restart), else the
    task's schedule's after the plan's last run, as in the process that made it.  Read
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
        _queue(core, task, Plan(runs, [], SCHEDULE_DECIDES, True), owed)
        return []
    decided = plan(own, waited, now, policy, grace=False, origin=origin)
    if not decided.misfired:  # ``waited`` is still to come: no slot after it passed
        return []
    records = task.history if history is None else history()
    cut = _cut(records, waited)
    if cut is not None:  # the plan, cut at MAX_SLOTS, ended before the record for the rest
        # The run due (``owed``, ahead of ``waited``) is a run of the plan no record counts,
        # unless it is a retry: its slot's first attempt is recorded (``_runs_since``).
        made = 1 if task.attempt == 0 else 0
        decided = _cut_plan(own, waited, cut, records, policy, made=made, origin=origin)
    _queue(core, task, decided, owed)
    return decided.decisions


def _cut(history: Sequence[ExecutionRecord], slot: float) -> ExecutionRecord | None:
    """The record that stands for the slots beyond :data:`MAX_SLOTS` of a catch-up that
    ``slot`` is a slot of (the first such record at or after ``slot``), if the history
    holds one: the plan's slots end before it, and the task resumes at the first slot
    after the instant it was decided (``finished``).  Decided again from ``slot`` up to
    now instead, those slots were counted once more: a ``RUN_ALL`` plan's own later
    slots were recorded missed, and slots the record stood for ran.

    At the record's own slot too: an attempt of the plan's last slot owed (a retry, or
    in flight at a crash) is decided from the slot after its own, the record's
    (:func:`first_decided`); no slot of a plan, nor the one it resumes at, is that slot."""
    for record in history:
        error = record.error
        if record.slot >= slot and error is not None and error.startswith(_CAPPED):
            return record
    return None


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
        due, schedule, slot = task.next_run_at, task._schedule, task._slot  # as found
        if owed and task.status is TaskStatus.SCHEDULED:  # in flight: its rows say so
            core.owe(task)
        # Its decisions are recorded unless the passed slots meet the policy again, from
        # the slot due (which decides this plan's slots too): recorded first, a cap's
        # record of them would read as that slot's plan's (_cut).
        misfired = _queue_restored(core, task, owed, now)
        if misfired is None:
            _record(core, task, decided)
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
    (lldsched/threaded/shared.py).  Before, an unshared restart ran it again unsaid."""
    cut = [snapshot.task.id for snapshot in snapshots if restored_state(snapshot)[2]]
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
    for it (:meth:`CoordinatedStore.owe <lldsched.persistence.CoordinatedStore.owe>`)."""
    status, attempt = snapshot.status, snapshot.attempt
    in_flight = snapshot.running or status is TaskStatus.RUNNING
    if in_flight and status not in _QUEUED:  # its record never written: that attempt again
        attempt = max(0, attempt - 1)
    if status is TaskStatus.RUNNING:
        status = runnable(attempt)
    return status, attempt, in_flight


def _restored(snapshot: TaskSnapshot, records: Iterable[ExecutionRecord]) -> tuple[Restored, bool]:
    """What ``snapshot`` says the task is, and whether an attempt is owed from before."""
    history = tuple(records)
    status, attempt, in_flight = restored_state(snapshot)
    slot = pending_slot(snapshot, attempt, records=lambda: history)
    definition = snapshot.task._replace(schedule=unwrap(snapshot.task.schedule))
    restored = Restored(
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
    standing for the slots beyond the cap would read as a cut plan's, :func:`_cut`).
    The runs recovery decided are decided again (``RUN_ALL``'s oldest, a ``RUN_ONCE``
    run, may be ``missed`` or ``coalesced`` now).  Decided instead
    from where recovery left the task, an owed attempt (at-least-once: not a slot of the
    downtime) was read as a slot of its own (``SKIP`` recorded it ``missed``); with it
    owed, the run recovery decided ran as well as the one for the slots since (a
    ``RUN_ONCE`` task twice for one downtime); and a plan recovery made, none of its runs
    made, was counted against ``max_catch_up`` apart from the slots since (:func:`_go_on`,
    for a plan some of whose runs ran)."""
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
        # cap would read as a cut plan's (_cut), where this decision makes it again.
        history=lambda: [record for record in task.history if record not in written],
        known={record.slot for record in written},
    )


def _passed_since(task: ScheduledTask, found: Found, now: float) -> bool:
    """Whether a slot of ``task``'s schedule passed after recovery decided its passed
    slots (at ``found.at``, from the slot it stood at: at or before then) up to ``now``."""
    following = first_after(found.schedule, found.slot, found.at, origin=task._grid)
    return following is not None and following <= now


# -- wall-clock jumps (the threaded runtime) ------------------------------------------------


def after_clock_jump(core: SchedulerCore, jump: float, now: float) -> None:
    """Re-evaluate queued tasks after the wall clock jumped by ``jump`` seconds.

    Forward (time passed that the timer did not see: a suspend, a clock set
    ahead): queued tasks whose slots passed meet their misfire policy, as after
    downtime, by the rule a restart and a shared claim apply (:func:`decide_misfire`
    from :func:`first_decided`): a task awaiting a retry owes that attempt, which runs
    first, and the slots after its slot are decided, whether the retry is due yet or
    not (before, only SCHEDULED tasks were: a retry ran and its passed slots were
    recorded ``skipped`` after it, and a retry within a ``RUN_ALL`` catch-up left the
    slots the jump passed without a record).  So does a task a restart found with its
    attempt in flight, while it still owes it (:meth:`~lldsched.core.publishing.
    Publishing.owes`; before, that slot met the policy as one the jump passed:
    ``SKIP`` recorded it missed, the run lost).  Backward (a clock set back):
    elapsed-time due instants move back with the clock (fixed rate, fixed delay,
    one-off by delay, and every retry's backoff), so "every 60 s" keeps meaning 60 s;
    calendar instants (cron, one-off at a given time) stay where they are.  A task
    whose run is in flight keeps its due instants (its run's finish decides the next), but a fixed
    rate's next slot is counted from the slot the run serves: that slot is read as
    moved with the clock (:meth:`CatchUp.moving`).  A forward jump leaves a run in
    flight alone: the slots it outlasted are its overrun's, skipped or caught up; but the
    slot an overlapping task (``Overlap.ALLOW``, ``CANCEL_OTHER``) queued behind its run
    is queued like any other, and meets the misfire policy with the slots after it.  A
    PAUSED task's due instant (the one ``resume()`` queues it at) moves back as a queued
    one would, so resuming does not wait out the jump; forward, ``resume()`` already
    runs a slot it slept through at once.
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
