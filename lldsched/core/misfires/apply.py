"""Misfires: a queued task's slots that passed while nobody ran them meet its policy.

:func:`decide_misfire` is the one rule for a task whose due instant passed while no
scheduler was there: a restart (:mod:`lldsched.core.recovery`), a forward wall-clock
jump and the threaded runtime's ``start()`` call it there, and a process sharing a store
calls it for a slot it claims that passed before it was there (``Coordinator.claim``,
:mod:`lldsched.threaded.shared.coordinator`; :func:`first_decided`, the first slot it decides).
Everything here runs under the runtime's lock (or on the simulation's thread) and
changes tasks only through the core.

What the policy decides is :mod:`lldsched.core.misfires.plan`'s (pure: a
:class:`~lldsched.core.misfires.plan.Plan`, capped at
:data:`~lldsched.core.misfires.plan.MAX_SLOTS` slots one by one, a plan cut there never
decided again).

**Applying it** (:func:`_apply`): the decisions recorded, each slot once (a restart
killed among them decides the same slots again), then the task queued as decided
(:func:`queue_as_decided`: its runs, and where its schedule takes over from them).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from lldsched.core.misfires.plan import (
    Plan,
    cut_record,
    deciding_for,
    following_slot,
    plan,
    plan_and_since,
    plan_as_cut,
    plan_put_off,
    slot_put_off,
)
from lldsched.core.parts import CoreParts
from lldsched.core.task import ScheduledTask
from lldsched.model import ExecutionRecord, Outcome
from lldsched.policies import DEFAULT_MISFIRE, Misfire
from lldsched.schedules.catchup import SCHEDULE_DECIDES, CatchUp, unwrap

__all__ = [
    "History",
    "decide_misfire",
    "first_decided",
    "queue_as_decided",
    "record_decisions",
]


History = Callable[[], Sequence[ExecutionRecord]]
"""Where a task's records are read to find a plan cut at
:data:`~lldsched.core.misfires.plan.MAX_SLOTS` (the record standing for the slots beyond the
cap: :func:`cut_record`), called only when one may matter.  None in its place: the task's
own history, which recovery restored from the store.  A process sharing a store passes the
store's (``store.records(task_id)``): its own history holds only the runs it ran, and
another process decided the plan."""


def decide_misfire(
    core: CoreParts,
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
    the process that claims a slot due before it was there
    (:mod:`lldsched.threaded.shared.decisions`).

    A slot of a plan cut at :data:`~lldsched.core.misfires.plan.MAX_SLOTS` (the history holds
    the record standing for the slots beyond the cap, at or after that slot:
    :func:`cut_record`) was decided already: the plan goes on as it was cut, and only the
    slots from its resume slot up to ``now`` meet the policy (:func:`plan_as_cut`,
    :func:`plan_and_since`).  Decided again from that slot, the slots the cap's record stood
    for were counted twice: recorded missed once more, and the latest of them run instead of
    the plan's own.  ``history``: where that record is looked for, read only once the policy
    decides (:data:`History`).

    ``known``: slots whose decisions are recorded already, not recorded again (those of
    this same downtime decided at a scheduler's construction and decided again at its
    start, :func:`~lldsched.core.recovery.at_start`: the task's history, which
    :func:`_apply` reads for them, holds only its last ``history_limit`` records).
    """
    with deciding_for(task):
        return _decided_for(
            core, task, now=now, owed=owed, token=token, history=history, known=known
        )


def _decided_for(
    core: CoreParts,
    task: ScheduledTask,
    *,
    now: float,
    owed: bool,
    token: int | None,
    history: History | None,
    known: Collection[float],
) -> list[ExecutionRecord] | None:
    """:func:`decide_misfire`, within :func:`deciding_for` ``task``."""
    due = task.next_run_at
    if due is None:
        return None
    if type(task._schedule) is CatchUp and task._schedule.afresh:
        # A new schedule waits for the work owed before it (DefinitionVerbs._start_afresh):
        # a decision taken already, whose runs are owed as a retry is, and a schedule that
        # has not begun, so no slot of it passed.  Decided again (on the new schedule's
        # grid), a RUN_ALL plan's runs after the first were dropped unrecorded: a service
        # registering a changed schedule before start() lost them.
        return None
    first = first_decided(task, owed=owed)
    if first is None:  # the owed attempt was its schedule's last slot
        return None
    policy = task.misfire or DEFAULT_MISFIRE
    origin = task._grid
    schedule = task._schedule
    put_off = None if owed else slot_put_off(schedule)
    if put_off is None:
        decided = plan(schedule, first, now, policy, origin=origin)
    else:
        decided = plan_put_off(schedule, first, put_off, now, policy, origin=origin)
    if not decided.misfired:
        return None
    if isinstance(schedule, CatchUp) and policy.on_misfire is Misfire.RUN_ALL:
        until = schedule.until  # a plan not used up, its runs decided already
        if until is not None and first < until:
            return _go_on(core, task, schedule, until, now, owed=owed, token=token, known=known)
    records = task.history if history is None else history()
    cut = cut_record(records, first)
    if cut is not None:  # ``first`` is a slot of a plan cut at the cap
        own = unwrap(task._schedule)
        # An owed first attempt (in flight when the process died) is a run of the plan
        # that left no record; a retry's slot has its first attempt's.
        made = 1 if owed and task.attempt == 0 else 0
        cut_plan = plan_as_cut(own, first, cut, records, policy, made=made, origin=origin)
        decided = plan_and_since(cut_plan, own, now, policy, origin=origin)
    return _apply(core, task, decided, due if owed else None, token=token, known=known)


def _go_on(
    core: CoreParts,
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
    decided = Plan(runs, later.decisions, later.resume, misfired=True)
    return _apply(core, task, decided, due if owed else None, token=token, known=known)


def first_decided(task: ScheduledTask, *, owed: bool) -> float | None:
    """The first slot :func:`decide_misfire` decides of ``task``: its due instant, or,
    when the attempt due is ``owed`` from before (in flight when its process died, or a
    retry: attempts behind it), the slot after the one its attempts belong to (the owed
    attempt runs first; None: that slot was its schedule's last).

    The one rule for whether a task met downtime: a restart decides a queued task's
    slots from here (:func:`~lldsched.core.recovery.recover`), and a process sharing a
    store decides a claimed slot's when this slot passed before it was there to claim it
    (``Coordinator.claim``, :mod:`lldsched.threaded.shared.coordinator`).  Before, a claim with
    attempts behind it (a retry, or a takeover of one) met no policy there: the slots
    after its slot were recorded ``skipped`` after its run, where a restart recorded
    them ``missed`` before it."""
    if not owed:
        return task.next_run_at
    put_off = slot_put_off(task._schedule)
    if put_off is not None:  # the attempt owed is a run_now's extra run, off the grid:
        return put_off  # the slot after it is the one it put off (plan_put_off)
    with deciding_for(task):
        return following_slot(task._schedule, task.slot, origin=task._grid)


def _apply(
    core: CoreParts,
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
    records = record_decisions(core, task, decided.decisions, token=token, known=known)
    queue_as_decided(core, task, decided, owed)
    return records


def record_decisions(
    core: CoreParts,
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


def queue_as_decided(
    core: CoreParts, task: ScheduledTask, decided: Plan, owed: float | None
) -> None:
    """Queue ``task`` as ``decided`` says, after its ``owed`` attempt (cancelled if
    nothing is left to run).

    Never given a task whose new schedule waits for work owed before it (a plan that
    ends in ``FIRST_RUN``, :attr:`CatchUp.afresh`): :func:`decide_misfire` returns
    before it for one, and a plan put back from a row (:func:`~lldsched.core.recovery.
    stored_plan`) is put on a task restored from that row, or followed from it, whose
    plan :mod:`~lldsched.core.follow` drops first; a row keeps no ``FIRST_RUN``.  The
    branch that kept such a plan's end here was reached by nothing, and went
    (docs/TESTING.md, the ``core/misfires/apply.py`` entry)."""
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
    with deciding_for(task):
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
