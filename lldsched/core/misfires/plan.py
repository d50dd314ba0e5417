"""A misfire plan: what a task's policy decides for its slots that passed while nobody
ran them (pure: a schedule, its passed slots, now and a policy in, a :class:`Plan` out).

The decision is applied to a task, each slot recorded once, by
:mod:`lldsched.core.misfires` (:func:`~lldsched.core.misfires.apply.decide_misfire`).

**The decision** (:func:`plan`: pure, a schedule, its passed slots, now and a policy in,
a :class:`Plan` out).  The passed slots meet the task's
:class:`~lldsched.policies.MisfirePolicy` (see :mod:`lldsched.policies`): the
decisions are records whose outcome says ``missed`` or ``coalesced``, and the
task is queued where the policy says.  An attempt owed from before the
downtime (a retry, or the in-flight attempt) runs first; the policy decides the
slots after it.  A fixed rate's slots are counted on the task's grid, from its origin
(``ScheduledTask._grid``, :func:`~lldsched.schedules.base.on_grid`): every slot decided,
run or resumed at is ``slot_at(origin, k)``, so downtime starts no new grid.  A misfire
decided from the due slot of a ``RUN_ALL`` plan not used up goes on with that plan, and
decides only the slots after its end (:func:`~lldsched.core.misfires.apply._go_on`).

**Enumeration is capped.**  At most :data:`MAX_SLOTS` passed slots of one task are
decided one by one.  Beyond that, one more record (outcome as the policy says, ``error``
text saying so) stands for all the later ones, and the task resumes at its first slot
after now.  A slot of such a plan that meets the policy again (a restart during the
plan, a later jump, a claim in shared mode) is not decided again: the plan goes on as it
was cut, and only the slots after it meet the policy
(:func:`~lldsched.core.misfires.apply.decide_misfire`, :func:`cut_record`).  A ``FixedDelay``
misses one slot however long the downtime: its slots count from finishes that never
happened.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

from lldsched.core.names import COALESCED, MISFIRE_CAP, MISSED, cap_text, goes_on, stands_for
from lldsched.core.task import ScheduledTask
from lldsched.logs import JOBS, instant_text
from lldsched.model import ExecutionRecord, Outcome
from lldsched.policies import Misfire, MisfirePolicy
from lldsched.schedules.base import Schedule, first_slot_after, on_grid, slot_after, slots_on
from lldsched.schedules.catchup import SCHEDULE_DECIDES, CatchUp, Resume, unwrap
from lldsched.schedules.slotcount import slots_counted

__all__ = [
    "COALESCED",
    "MAX_SLOTS",
    "MISSED",
    "Plan",
    "cut_record",
    "deciding_for",
    "first_after",
    "following_slot",
    "passed_slots",
    "plan",
    "plan_and_since",
    "plan_as_cut",
    "plan_put_off",
    "slot_put_off",
]


log = logging.getLogger(JOBS)  # a schedule that raised

_DECIDING: ContextVar[ScheduledTask | None] = ContextVar("lldsched_misfires_task", default=None)
"""The task whose slots are being listed, named in the line a schedule that raised logs
(:func:`deciding_for`)."""


@contextmanager
def deciding_for(task: ScheduledTask) -> Iterator[None]:
    """Within it, a schedule that raises while its slots are listed is logged naming
    ``task`` ("task t1 'report': ...", with ``task_id`` and ``task_name`` as the record's
    attributes).  The planning functions take a schedule, not a task (they are pure), so the
    callers that hold the task (:func:`~lldsched.core.misfires.apply.decide_misfire`,
    :func:`~lldsched.core.misfires.apply.first_decided`,
    :func:`~lldsched.core.misfires.apply.queue_as_decided`, :mod:`~lldsched.core.recovery`'s) say
    which; the line said only the schedule's ``repr``, which names no task."""
    token = _DECIDING.set(task)
    try:
        yield
    finally:
        _DECIDING.reset(token)


def _log_schedule(message: str, *args: object, raised: bool = False) -> None:
    """Log an error of the schedule whose slots are listed (with its traceback if it
    ``raised``), naming the task :func:`deciding_for` names, if any."""
    said = log.exception if raised else log.error
    task = _DECIDING.get()
    if task is None:  # a plan asked of a schedule alone
        said(message, *args, stacklevel=2)
        return
    said(
        f"task %s %r: {message}", task.id, task.name, *args,
        extra={"task_id": task.id, "task_name": task.name}, stacklevel=2,
    )  # fmt: skip


MAX_SLOTS = 1000
"""Passed slots of one task decided one by one; the rest are summed up in one record."""


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
    a stored row: :func:`~lldsched.core.recovery.stored_plan`): they misfired when that
    plan was made, however recent they are now, so the policy decides every one that
    passed.

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
    :func:`passed_slots`, or by :func:`plan_put_off`) and the slot ``following`` them."""
    if not slots or (grace and now - slots[0] <= policy.grace):
        return Plan([first], [], SCHEDULE_DECIDES, misfired=False)
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
        # how many slots it stands for: those not after now, counted as plan() lists them
        stood = slots_counted(unwrap(schedule), following, now, inclusive=True, origin=origin)
        tail = [(following, outcome, _tail_text(following, now, action, after, stood))]
        resume = after
    if action is Misfire.SKIP:
        return Plan([], [(slot, MISSED, None) for slot in slots] + tail, after, misfired=True)
    if action is Misfire.RUN_ONCE:
        coalesced = [(slot, COALESCED, None) for slot in slots[:-1]]
        return Plan([slots[-1]], coalesced + tail, resume, misfired=True)
    keep = policy.max_catch_up
    missed = [(slot, MISSED, None) for slot in slots[:-keep]]
    return Plan(slots[-keep:], missed + tail, resume, misfired=True)


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
        _log_schedule("%r.next_run raised while listing missed slots", schedule, raised=True)
        return None
    if following is not None and following <= slot:
        _log_schedule(
            "%r.next_run went from %r back to %r; no more slots", schedule, slot, following
        )
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
        _log_schedule("%r.next_run raised while skipping missed slots", schedule, raised=True)
        return None


_CAPPED = MISFIRE_CAP  # how the error text of a record standing for the rest begins


def _tail_text(
    following: float, now: float, action: Misfire, after: float | None, slots: int | None
) -> str:
    """The error text of the record standing for the slots beyond :data:`MAX_SLOTS`
    (:func:`~lldsched.core.names.cap_text`): that they passed unrun, what decided them
    and when, how many (``slots``, :func:`~lldsched.core.names.stands_for`), the first
    of them, what became of them (not run; under ``RUN_ONCE`` coalesced into its one
    run, the last listed slot's) and where the task goes on (``after``).  Read back by
    its prefix alone (:func:`cut_record`)."""
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
        stands=stands_for(slots),
        first=following,
        last="up to then",
        then=f"{fate}; {goes_on(after)}",
    )


def slot_put_off(schedule: Schedule) -> float | None:
    """The slot a ``run_now`` put off behind its extra run (:func:`~lldsched.schedules.
    catchup.slot_first`: a plan that hands out that slot, decided to run, after the run
    due), or None for any other schedule or plan."""
    if not isinstance(schedule, CatchUp) or schedule.spent or schedule.slots:
        return None
    if schedule.resuming:  # a misfire decision's slot to resume at: on the grid already
        return None
    return schedule.waited


def plan_put_off(
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
    (docs/decisions/changing-a-task.md, "A `run_now`'s extra run past its grace")."""
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


def plan_as_cut(
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
        return Plan(runs, [], resume, misfired=True)
    made += _runs_since(history, cut)
    runs = runs[: max(0, size - made)]
    after = following_slot(own, runs[-1], origin=origin) if runs else None
    if resume is not None and after is not None:
        resume += after - cut.slot
    return Plan(runs, [], resume, misfired=True)


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


def plan_and_since(
    decided: Plan, own: Schedule, now: float, policy: MisfirePolicy, *, origin: float | None
) -> Plan:
    """``decided`` (:func:`plan_as_cut`), then the slots from its resume slot up to ``now``
    as ``policy`` decides them: they passed after the plan was decided (a restart's own
    downtime, a later jump), and are misfires of their own."""
    resume = decided.resume
    if resume is None or resume is SCHEDULE_DECIDES:
        return decided
    later = plan(own, resume, now, policy, origin=origin)
    if not later.misfired:
        return decided
    return Plan(decided.runs + later.runs, later.decisions, later.resume, misfired=True)


def cut_record(history: Sequence[ExecutionRecord], slot: float) -> ExecutionRecord | None:
    """The record that stands for the slots beyond :data:`MAX_SLOTS` of a catch-up that
    ``slot`` is a slot of (the first such record at or after ``slot``), if the history
    holds one: the plan's slots end before it, and the task resumes at the first slot
    after the instant it was decided (``finished``).  Decided again from ``slot`` up to
    now instead, those slots were counted once more: a ``RUN_ALL`` plan's own later
    slots were recorded missed, and slots the record stood for ran.

    At the record's own slot too: an attempt of the plan's last slot owed (a retry, or in
    flight at a crash) is decided from the slot after its own, the record's
    (:func:`~lldsched.core.misfires.apply.first_decided`); no slot of a plan, nor the one it
    resumes at, is that slot."""
    for record in history:
        error = record.error
        if record.slot >= slot and error is not None and error.startswith(_CAPPED):
            return record
    return None
