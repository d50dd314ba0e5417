"""The Schedule protocol: a small immutable Strategy that says *when*.

A schedule answers two questions and keeps no state of its own, so one instance
can be shared by any number of tasks and by both runtimes:

* ``first_run(now)``: the first due instant for a task registered at ``now``;
* ``next_run(record, now)``: the next due instant after a *successful* run, or
  ``None`` to retire the task (it becomes SUCCEEDED).  It is asked the same after
  a run that gave its slot up (its retries ran out; ``record.outcome`` says
  ``given_up``): a recurring task goes on to the slot it answers.

Retries never consult the schedule: the core computes them from the task's
:class:`~lldsched.policies.RetryPolicy`.  "Now support cron" is one more class.

Recovery (after downtime or a clock jump), and the core listing the slots a long
run skipped (:func:`slots_between`), ask a schedule three more things,
through the functions below: the slot after a slot (:func:`slot_after`), the
first slot after an instant (:func:`first_slot_after`), and whether its due
instants measure elapsed time (:func:`measures_elapsed_time`).  After every run
the core asks for the next due instant and the slots the run skipped together
(:func:`next_run_and_skipped`).  Each has an answer derived from ``next_run``
alone, so a new schedule is one class with two methods; a schedule that knows
better (a fixed rate answers in O(1), a fixed delay has no slots of its own, a
cron schedule finds both answers in one pass) defines a method of the same name.  A
schedule on a grid (a fixed rate) also says its ``k``-th slot after a slot
(``slot_at(anchor, k)``), and every listing of its slots counts them so
(:func:`slots_on`), never adding its step again and again.  One whose grid has an
origin the core keeps with the task (a fixed rate) answers after a run on that grid
(``next_on_grid(record, origin, limit)``, :data:`GridCount`; :func:`next_on_grid` asks
it, or answers as the core does for a schedule with none) and says where a slot
stands on it (``on_grid(slot, origin)``); a decorator that has them when what it wraps
does (``Window``, ``Jittered``, a catch-up plan) passes the origin
on, and so does a store's row (:func:`counts_on_grid`).
A durable store keeps it once :func:`lldsched.stores.codec.register_schedule` names
it; a decorator of one's own keeps what it wraps in ``.schedule`` and rebuilds itself
around another with ``with_schedule(inner)`` (docs/EXTENDING.md).

What counts as a schedule, the schedule a decorator wraps and a copy of one are
:mod:`lldsched.schedules.objects`'; the rule for a subclass of a built-in schedule that
answers ``next_run`` its own way (which of these fast paths it keeps) is
:mod:`lldsched.schedules.subclasses`'.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from itertools import islice, takewhile
from typing import Protocol, TypeAlias, runtime_checkable

from lldsched.checks import FARTHEST, FINEST, instant
from lldsched.errors import ScheduleError, ValidationError, doc_url, shown
from lldsched.logs import JOBS, Repeats, instant_text
from lldsched.model import ExecutionRecord

__all__ = [
    "FROM_NEXT_RUN",
    "SEARCH_LIMIT",
    "GridCount",
    "Schedule",
    "SteppedPast",
    "checked_answer",
    "counts_on_grid",
    "first_slot_after",
    "measures_elapsed_time",
    "next_on_grid",
    "next_run_and_skipped",
    "on_grid",
    "say_stepped_past",
    "slot_after",
    "slot_after_on_grid",
    "slots_between",
    "slots_from",
    "slots_on",
]

# Where a schedule's wrong answer sends its writer (a refusal, the stepped-past WARNING).
_OWN_SCHEDULE = doc_url("docs/EXTENDING.md#a-schedule-of-your-own")


@runtime_checkable
class Schedule(Protocol):
    """When a task runs (times are float epoch seconds, UTC)."""

    def first_run(self, now: float) -> float | None:
        """The first due instant for a task registered at ``now``."""
        ...

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        """The due instant after the run ``record``: a success, or the last attempt of a
        slot given up (a retry never asks; :func:`slot_after` and the queries derived from
        it ask with a run of no length, :func:`ran_in_no_time`); ``None`` retires the
        task.  The built-in schedules answer a slot exactly at the finish as due, not
        missed (docs/decisions/schedules.md, "A slot that falls exactly at a run's finish has not
        been missed"); the slots a run skipped are those before the answer."""
        ...


def checked_answer(schedule: Schedule, answer: object, *, query: str) -> float:
    """``answer``, what ``schedule`` answered to ``query`` (``"first_run(1.0)"``), if it
    is an instant as the runtimes take one: an ``int`` or a ``float`` within
    ±:data:`~lldsched.checks.FARTHEST`, as a schedule's queries take them (NaN and
    ``inf`` are not); else :class:`ScheduleError` naming the schedule and its answer.

    Asked only where a plain comparison found the answer odd: a NaN due instant broke
    the heap's order, and a ``str`` or a ``datetime`` made the heap raise ``TypeError``
    at every later push.  ``None`` is the caller's to read (it never fires again)."""
    try:
        return instant(answer, name=query)
    except ValidationError:
        timestamp = isinstance(answer, datetime)  # the likeliest slip: its way out
        hint = " (a datetime: answer its .timestamp(), epoch seconds)" if timestamp else ""
        raise ScheduleError(
            f"{shown(schedule)}.{query} answered {shown(answer)}, not an instant{hint}: a schedule "
            f"answers epoch seconds (an int or a float within ±{FARTHEST:g}) or None "
            f"({_OWN_SCHEDULE})"
        ) from None


def slot_after(schedule: Schedule, slot: float) -> float | None:
    """The slot after ``slot``, had its run taken no time (``None``: there is none)."""
    own = getattr(schedule, "slot_after", None)
    if own is not None:
        answer: float | None = own(slot)
        return answer
    return _slot_after_from_next_run(schedule, slot)


def _slot_after_from_next_run(schedule: Schedule, slot: float) -> float | None:
    """:func:`slot_after` derived from ``next_run``: a run of ``slot`` in no time."""
    return schedule.next_run(ran_in_no_time(slot, finished=slot), slot)


def first_slot_after(schedule: Schedule, slot: float, now: float, *, limit: int) -> float | None:
    """The first slot after ``now``, counting on from ``slot`` (<= ``now``); at most
    ``limit`` slots are stepped through (``None`` past that, or when there is none)."""
    own = getattr(schedule, "first_slot_after", None)
    # A subclass's method derived from its next_run (answered_its_own_way) steps as far
    # as this caller says, not as far as the method's own limit.
    if own is not None and getattr(own, "__func__", None) is not _first_slot_after_method:
        answer: float | None = own(slot, now)
        return answer
    return _first_slot_after_from_next_run(schedule, slot, now, limit=limit)


def _first_slot_after_from_next_run(
    schedule: Schedule, slot: float, now: float, *, limit: int
) -> float | None:
    """:func:`first_slot_after` derived from ``next_run``."""
    # A run of ``slot`` that finished now: cron, and well-behaved schedules, jump to the
    # first slot not before now (a slot exactly at a finish is due); the loop steps past
    # a slot at now, as this asks for the first slot strictly after it.
    following = schedule.next_run(ran_in_no_time(slot, finished=now), now)
    for _ in range(limit):
        if following is None or following > now:
            return following
        following = slot_after(schedule, following)
    return None


GridCount: TypeAlias = Callable[
    [ExecutionRecord, float, int], tuple[float | None, Sequence[float], float]
]
"""A schedule's ``next_on_grid(record, origin, limit)``: ``next_run_and_skipped``
counted on the task's grid from ``origin`` (at most ``limit + 1`` slots skipped), and
the origin counted on (``origin``, or the run's slot where a new grid starts).  The
core asks it after a run of every schedule that has it (``FixedRate.next_on_grid``; a
``Window``, ``Jittered`` or a catch-up plan around one passes it on), and keeps the
origin it answers with the task (``ScheduledTask._grid``) and in the row."""


def next_on_grid(
    schedule: Schedule, record: ExecutionRecord, origin: float, *, limit: int
) -> tuple[float | None, Sequence[float], float]:
    """``schedule``'s answer after the run ``record`` counted on the task's grid from
    ``origin``, and the origin counted on: its ``next_on_grid`` (:data:`GridCount`) when
    it counts on one (:func:`counts_on_grid`), else :func:`next_run_and_skipped` with
    ``origin`` as it is, which is what the core keeps for a schedule with no grid.  What a
    plan in front of the task's own schedule asks of it (:class:`~lldsched.schedules.
    catchup.CatchUp`); the core asks the method itself, one call fewer a run."""
    counted: GridCount | None = getattr(schedule, "next_on_grid", None)
    if counted is None:
        due, skipped = next_run_and_skipped(schedule, record, limit=limit)
        return due, skipped, origin
    return counted(record, origin, limit)


SEARCH_LIMIT = 100_000
"""Slots stepped through, at most, to find the first slot after an instant where the
caller names no limit: a decorator's ``first_slot_after`` and a subclass's derived from
its ``next_run``."""


def _slot_after_method(self: Schedule, slot: float) -> float | None:
    """The slot after ``slot``, had its run taken no time (``None``: there is none),
    derived from this schedule's ``next_run``: its base class's own arithmetic would not
    ask it (:func:`~lldsched.schedules.subclasses.answered_its_own_way`)."""
    instant(slot, name="slot_after()", of=self, error=ScheduleError)
    return _slot_after_from_next_run(self, slot)


def _first_slot_after_method(self: Schedule, slot: float, now: float) -> float | None:
    """The first slot after ``now``, counting on from ``slot`` (<= ``now``), derived from
    this schedule's ``next_run``
    (:func:`~lldsched.schedules.subclasses.answered_its_own_way`); ``None`` past
    :data:`SEARCH_LIMIT` slots, or when there is none."""
    instant(slot, name="first_slot_after() slot", of=self, error=ScheduleError)
    instant(now, name="first_slot_after() now", of=self, error=ScheduleError)
    return _first_slot_after_from_next_run(self, slot, now, limit=SEARCH_LIMIT)


def _next_run_and_skipped_method(
    self: Schedule, record: ExecutionRecord, *, limit: int
) -> tuple[float | None, Sequence[float]]:
    """The due instant after the run ``record`` and the slots it skipped (at most
    ``limit + 1``), derived from this schedule's ``next_run``
    (:func:`~lldsched.schedules.subclasses.answered_its_own_way`, :func:`next_run_and_skipped`)."""
    return _next_run_and_skipped_from_next_run(self, record, limit=limit)


FROM_NEXT_RUN: dict[str, Callable[..., object]] = {
    "next_run_and_skipped": _next_run_and_skipped_method,
    "slot_after": _slot_after_method,
    "first_slot_after": _first_slot_after_method,
}
"""The fast paths that are queries, each as a method that answers from ``next_run``:
what a subclass that answers ``next_run`` its own way has in their place
(:func:`~lldsched.schedules.subclasses.answered_its_own_way`).  The others (a fixed
rate's grid: ``slot_at``, ``on_grid``, ``next_on_grid``) are capabilities, not
questions: a subclass that answers its own way has none, and their absence (None) is
what says "no grid"."""


def counts_on_grid(schedule: object) -> bool:
    """True when ``schedule`` counts its slots on a grid origin the core keeps
    (:data:`GridCount`): its row keeps that origin (``TaskSnapshot.grid``)."""
    return getattr(schedule, "next_on_grid", None) is not None


def slot_after_on_grid(
    schedule: Schedule, slot: float, origin: float
) -> tuple[float | None, float]:
    """:func:`slot_after` counted on the grid from ``origin`` while ``slot`` is one of
    its slots (:func:`on_grid`, then the schedule's ``slot_at``), and the origin counted
    on; a schedule that keeps no origin steps on from ``slot``, the origin as it is.
    The slot a task whose runs overlap queues behind the run of ``slot`` as it begins."""
    grid = getattr(schedule, "slot_at", None)
    if grid is None or getattr(schedule, "on_grid", None) is None:
        return slot_after(schedule, slot), origin
    anchor, k = on_grid(schedule, slot, origin)
    following: float | None = grid(anchor, k + 1)
    return following, anchor


def on_grid(schedule: Schedule, slot: float, origin: float | None) -> tuple[float, int]:
    """Where ``slot`` stands on its grid: ``(anchor, k)``, with ``slot`` the schedule's
    ``slot_at(anchor, k)``.  For a schedule that keeps a grid origin (a fixed rate's
    ``on_grid``: the core keeps the origin with the task, ``ScheduledTask._grid``),
    ``(origin, k)`` while ``slot`` is that grid's slot, the very float; else, and for
    every other schedule, ``(slot, 0)``.  Recovery counts passed slots on from here
    (:func:`slots_on` with ``start=k``)."""
    locate = getattr(schedule, "on_grid", None)
    if origin is None or locate is None:
        return slot, 0
    anchor: float
    k: int
    anchor, k = locate(slot, origin)
    return anchor, k


def slots_on(schedule: Schedule, anchor: float, start: int = 0) -> Iterator[float]:
    """The slots after ``anchor`` (a slot), oldest first, for as long as the schedule
    has them: the one way every listing of slots steps along a schedule (the slots a
    run skipped, recovery's passed slots, a buffered overlap's latest slot).

    A schedule on a grid (one with ``slot_at(anchor, k)``: a fixed rate, a
    ``Window`` around one) gives its ``k``-th slot after ``anchor`` for k = 1, 2, ...,
    computed as its own next slot is, so a slot listed here is the same float as the
    slot its ``next_run`` jumps to: ``anchor + k * period``, not ``period`` added k
    times, which differs in the last bit (docs/decisions/schedules.md, "One grid for a fixed
    rate's slots").  Any other schedule is stepped by :func:`slot_after`, and the
    listing stops where it does not move on.

    ``start``: ``anchor`` is the grid's origin, and the listing begins after its
    ``start``-th slot (:func:`on_grid`); a schedule with no grid takes ``anchor`` for
    that slot."""
    grid = getattr(schedule, "slot_at", None)
    if grid is not None:
        k = start + 1
        while (slot := grid(anchor, k)) is not None:
            yield slot
            k += 1
        return
    current = anchor
    while (later := slot_after(schedule, current)) is not None and later > current:
        yield later
        current = later


def slots_between(schedule: Schedule, slot: float, following: float, *, limit: int) -> list[float]:
    """The slots after ``slot`` and before ``following``, oldest first: those a run of
    ``slot`` whose next due instant is ``following`` skipped.  At most ``limit + 1``
    are listed (more than ``limit`` says the list was cut short).

    Cheap when nothing was skipped: one ``slot_after``.
    """
    first = slot_after(schedule, slot)
    if first is None or first >= following:
        return []
    slots: list[float] = []
    for current in slots_on(schedule, slot):
        if current >= following or len(slots) > limit:
            break
        slots.append(current)
    return slots


def slots_from(
    schedule: Schedule,
    first: float,
    following: float,
    *,
    limit: int,
    origin: float | None = None,
) -> list[float]:
    """The slots from ``first`` (a slot, listed) on and before ``following``, oldest
    first, at most ``limit + 1``: the list :func:`slots_between` makes once it has found
    the first slot after the run's own (a cron schedule's ``next_run_and_skipped`` calls
    it when a run did skip slots; a fixed rate lists its own, from the run's slot).
    ``origin``: a grid origin the slots after ``first`` are counted from while ``first``
    is one of its slots (:func:`on_grid`)."""
    if first >= following or limit < 0:
        return []
    if origin is None:
        return [first, *slots_between(schedule, first, following, limit=limit - 1)]
    later = takewhile(
        lambda slot: slot < following, slots_on(schedule, *on_grid(schedule, first, origin))
    )
    return [first, *islice(later, limit)]


def next_run_and_skipped(
    schedule: Schedule, record: ExecutionRecord, *, limit: int
) -> tuple[float | None, Sequence[float]]:
    """What the core asks after each run: the next due instant after the run ``record``
    (``schedule.next_run(record, record.finished)``) and the slots that run skipped
    (``slots_between(schedule, record.slot, due, limit=limit)``; none when there is no
    next due instant), in one question.

    A schedule's own method of the same name (``next_run_and_skipped(record, *,
    limit)``) answers when it has one: a fixed rate or a cron schedule finds both in
    one pass, and a plan (:class:`~lldsched.schedules.catchup.CatchUp`) says its
    decided slots skip nothing (its last run is its own schedule's to answer).  It must
    give what the two questions give (``tests/test_next_run_and_skipped.py`` checks
    every schedule class).

    Raises :class:`SteppedPast` for a schedule that answered an instant not after its
    run's slot nor after its finish (:func:`stepped_past`): its ``due`` is the answer
    to use, and the caller says so (:func:`say_stepped_past`); and
    :class:`ScheduleError` for one that answered before both (:func:`before_its_run`).
    """
    own = getattr(schedule, "next_run_and_skipped", None)
    if own is not None:
        answer: tuple[float | None, Sequence[float]] = own(record, limit=limit)
        return answer
    return _next_run_and_skipped_from_next_run(schedule, record, limit=limit)


def _next_run_and_skipped_from_next_run(
    schedule: Schedule, record: ExecutionRecord, *, limit: int
) -> tuple[float | None, Sequence[float]]:
    """:func:`next_run_and_skipped` derived from ``next_run`` and :func:`slots_between`."""
    due = schedule.next_run(record, record.finished)
    if due is None:
        return None, ()
    # Rare: an answer not after the slot nor the finish (see stepped_past), or no
    # instant (NaN compares False; a str or a datetime raises TypeError, and is named).
    try:
        odd = not (due > record.slot or due > record.finished) or due > FARTHEST
    except TypeError:
        odd = True
    if odd:
        query = f"next_run({record.finished!r})"
        due = checked_answer(schedule, due, query=query)
        if due < record.slot and due < record.finished:
            raise ScheduleError(before_its_run(schedule, record, due, query=query))
        raise SteppedPast(schedule, record, due)  # no slot of its own was passed
    return due, slots_between(schedule, record.slot, due, limit=limit)


def before_its_run(schedule: Schedule, record: ExecutionRecord, due: float, *, query: str) -> str:
    """Why ``due``, what ``schedule`` answered to ``query`` after the run ``record``, fails
    its task: it is before both the slot that run served and its finish.

    No clock's coarseness answers that ("again as soon as it finishes" answers the
    finish, the slot itself where runs take no time: :func:`stepped_past`), so it is a
    schedule that went backwards (a day or a zone read wrong): stepped past a
    microsecond, it ran back to back for ever, and a simulation's ``run_for`` never
    returned (docs/decisions/extending.md, "A next_run answering an instant before its
    run's slot fails its task")."""
    return (
        f"{shown(schedule)}.{query} answered {due!r} ({instant_text(due)}), before the slot "
        f"{record.slot!r} ({instant_text(record.slot)}) its run served and its finish "
        f"{record.finished!r}: a schedule answers an instant after its run's slot, or None "
        f"to retire the task ({_OWN_SCHEDULE})"
    )


_log = logging.getLogger(JOBS)


def stepped_past(record: ExecutionRecord) -> float:
    """The due instant for a schedule whose ``next_run`` answered an instant not after
    the slot its run served nor after that run's finish: a microsecond after the later
    of the two (:data:`~lldsched.checks.FINEST`, a fixed delay's shortest step).

    The answer a schedule of one's own gives when it means "again as soon as it
    finishes" and answers the finish itself: where runs take no time (a ``FakeClock``,
    the simulation, a coarse clock) that is the slot it just served, and the task ran
    for ever at one instant.  Stepped past, it moves such a clock on one microsecond a
    run, as ``FixedDelay(1e-6)`` does (docs/decisions/schedules.md, "A schedule of one's own that
    answers its run's slot").  Asked only where a schedule has no
    ``next_run_and_skipped`` of its own: the built-in ones always answer after the
    slot."""
    return max(record.slot, record.finished) + FINEST


class SteppedPast(Exception):
    """:func:`next_run_and_skipped`'s answer for a schedule that answered ``answered``,
    not after its run's slot nor after its finish: due at ``due``
    (:func:`stepped_past`) instead, with no slot skipped.

    Raised rather than returned so that the caller, the core, says so with a rate
    limit of its own (:func:`say_stepped_past`): a limit kept here, per task id, was
    shared by every scheduler and simulation in the process, and one's line silenced
    another's for a task of the same id.  A raise costs the run path nothing until it
    happens (Python 3.11's exceptions are free until raised); a limit handed down to
    here would be one more argument a run."""

    def __init__(self, schedule: Schedule, record: ExecutionRecord, answered: float) -> None:
        super().__init__(schedule, record, answered)
        self.schedule = schedule
        self.record = record
        self.answered = answered
        self.due = stepped_past(record)


def say_stepped_past(stepped: SteppedPast, said: Repeats) -> None:
    """Say at WARNING that ``stepped``'s schedule was stepped past its answer, once a
    window per task id in ``said`` (a runtime's own; the caller guards it)."""
    record = stepped.record
    repeated = said.admit(record.task_id)
    if repeated is None:
        return
    _log.warning(
        "task %s %r: %r.next_run answered %r, not after the slot %r its run served (nor "
        "its finish %r); due %r instead, a microsecond later. A schedule must answer an "
        "instant after the run's slot (%s): for 'again as soon as it finishes' use "
        "FixedDelay(1e-6)%s",
        record.task_id,
        record.name,
        stepped.schedule,
        stepped.answered,
        record.slot,
        record.finished,
        stepped.due,
        _OWN_SCHEDULE,
        f" ({repeated} more times since its last line)" if repeated else "",
        extra={"task_id": record.task_id, "task_name": record.name},
    )


def measures_elapsed_time(schedule: Schedule) -> bool:
    """True when the schedule's due instants count elapsed seconds (a rate, a delay),
    so they move with the wall clock when it is set back; False for calendar
    instants (cron, a one-off at a given time)."""
    return bool(getattr(schedule, "measures_elapsed_time", False))


def ran_in_no_time(slot: float, *, finished: float) -> ExecutionRecord:
    """A successful first attempt of ``slot`` that started on time and ended at
    ``finished``: what recovery asks ``next_run`` about."""
    return ExecutionRecord(
        task_id="",
        name="",
        attempt=1,
        due=slot,
        slot=slot,
        worker=-1,
        started=slot,
        finished=finished,
        ok=True,
    )
