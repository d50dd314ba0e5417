"""What counts as a schedule, and the scheduler's default zone read into one.

Decided here, once (:func:`schedule_of`): an object with ``first_run`` and
``next_run`` (never a class: :func:`~lldsched.schedules.objects.has_schedule_methods`),
or the text of a cron expression, which becomes a
:class:`~lldsched.schedules.cron.CronSchedule` in the scheduler's default zone
(:func:`check_zone`), by the rule a decorator reads the text it wraps by
(:func:`~lldsched.schedules.cron.schedule.from_text`).  A ``CronSchedule`` that
names no zone is read in that default zone too, also inside ``Jittered``, ``Window``
and a decorator of one's own (:func:`_in_zone`).  Asked on every registration, and
kept cheap by remembering which types are schedules (:data:`SCHEDULE_TYPES`).
"""

from __future__ import annotations

from datetime import tzinfo
from typing import cast

from lldsched.errors import ScheduleError, ValidationError, shown
from lldsched.schedules.base import Schedule
from lldsched.schedules.cron import CronSchedule
from lldsched.schedules.cron.schedule import from_text
from lldsched.schedules.decorators import Jittered, Window
from lldsched.schedules.objects import has_schedule_methods, seconds_hint, wrapped_schedule

__all__ = ["ORDERS", "SCHEDULE_TYPES", "check_zone", "is_schedule", "misplaced", "schedule_of"]

ORDERS = (
    "Scheduler.schedule(name, action, schedule) takes the action second, "
    "Simulation.schedule(name, schedule, action=...) by keyword"
)
"""Where each runtime's ``schedule`` takes the action, as the hints of a swapped action
and schedule say it (the two orders differ: a simulation's action is optional)."""

# Caches, filled as registrations come (plain structures written under the
# runtime's lock, or by the single-threaded simulation; a racing write stores the
# same answer).
SCHEDULE_TYPES: set[type] = set()  # types already seen to have first_run and next_run


def is_schedule(schedule: object) -> bool:
    """True when ``schedule`` has ``first_run`` and ``next_run`` (the rule is
    :func:`~lldsched.schedules.objects.has_schedule_methods`: a class is not a schedule, and
    remembering ``type`` let every class after one pass unchecked); remembers its type,
    unless it is a decorator's (``Jittered``, ``Window``, or one of one's own, which keeps
    what it wraps in ``.schedule``): :func:`schedule_of` reads the cron a decorator wraps
    in the default zone, so decorators never take the shortcut past it.  Nor a cron
    schedule's (``CronSchedule`` or a subclass), which that zone may move, nor a type of
    text (a ``str`` subclass with a schedule's methods is cron text): a type remembered
    here is taken as a schedule's, never asked whether it is text or cron
    (:func:`schedule_of`)."""
    if has_schedule_methods(schedule):
        if wrapped_schedule(schedule) is None and not isinstance(schedule, str | CronSchedule):
            SCHEDULE_TYPES.add(type(schedule))
        return True
    return False


def check_zone(tz: object) -> str:
    """A scheduler's default zone for cron: an IANA name (or a ZoneInfo), as its key;
    :class:`~lldsched.errors.ScheduleError` quoting it otherwise."""
    if not isinstance(tz, str | tzinfo):
        raise ScheduleError(f"tz={shown(tz)}: a zone is an IANA name such as 'Europe/Berlin'")
    try:
        return CronSchedule("* * * * *", tz=tz).tz
    except ScheduleError as exc:
        raise ScheduleError(f"tz={shown(tz)}: {exc}") from None


def schedule_of(name: str, schedule: object, *, tz: str) -> Schedule:
    """``schedule`` as a :class:`Schedule`: cron text becomes a ``CronSchedule`` read in
    ``tz``, as does a ``CronSchedule`` that names no zone; any other object must have
    ``first_run`` and ``next_run`` (ValidationError otherwise) and is returned as is."""
    kind = type(schedule)
    if kind in SCHEDULE_TYPES:  # the common case, first (never cron: is_schedule)
        return cast(Schedule, schedule)
    if isinstance(schedule, str):
        return from_text(schedule, tz=tz, of=f"task {name!r}")
    if isinstance(schedule, CronSchedule):  # a subclass's too, as its base is
        if schedule.names_zone or schedule.tz == tz:
            return schedule
        return schedule.in_zone(tz)
    if kind is Jittered or kind is Window:
        return _in_zone(cast(Schedule, schedule), tz)
    if not is_schedule(schedule):
        raise _not_a_schedule(name, schedule)
    if wrapped_schedule(schedule) is not None:  # a decorator of one's own
        return _in_zone(cast(Schedule, schedule), tz, task=name)
    return cast(Schedule, schedule)


def _in_zone(schedule: Schedule, tz: str, *, task: str = "") -> Schedule:
    """``schedule`` with a ``CronSchedule`` (or a subclass) that names no zone read in
    ``tz`` (its ``in_zone``), also inside a decorator: ``Jittered``, ``Window``, a
    subclass of either or one of one's own (a schedule that keeps what it wraps in
    ``.schedule``), rebuilt around it by its ``with_schedule(inner)`` with its own
    settings, or refused with a ScheduleError naming the ways out when it has none; the
    same object when nothing in it changes."""
    if isinstance(schedule, CronSchedule):
        return schedule if schedule.names_zone or schedule.tz == tz else schedule.in_zone(tz)
    wrapped = wrapped_schedule(schedule)
    if wrapped is None:
        return schedule
    inner = _in_zone(wrapped, tz, task=task)
    if inner is wrapped:
        return schedule
    rebuild = getattr(schedule, "with_schedule", None)
    if not callable(rebuild):
        raise ScheduleError(
            f"task {task!r}: {shown(schedule)} wraps a CronSchedule that names no zone, which "
            f"the scheduler reads in its tz={shown(tz)}; give the decorator a "
            "with_schedule(schedule) method that returns a copy wrapping the schedule it "
            "is given, or name the zone: CronSchedule(..., tz=...)"
        )
    rebuilt: Schedule = rebuild(inner)
    return rebuilt


def _not_a_schedule(name: str, schedule: object) -> ValidationError:
    """The error for an object that is no schedule; a number of seconds (or a timedelta),
    the likeliest, is told the two schedules it may have meant, and a function where the
    schedule goes (``Simulation.schedule("x", job)``, written as for a ``Scheduler``,
    whose action comes second) where a simulation takes its action."""
    message = (
        f"task {name!r}: schedule must provide first_run() and next_run(), got {shown(schedule)}"
    )
    if callable(schedule) and not isinstance(schedule, type):  # (FixedRate itself: no hint)
        message += f" (a function, where the schedule goes: {ORDERS})"
    else:
        message += seconds_hint(schedule)
    return ValidationError(message)


def misplaced(name: object, schedule: object, extra: tuple[object, ...]) -> ValidationError:
    """The error of ``Simulation.schedule`` given more than ``name`` and ``schedule`` by
    position (``extra``, what came after): most often the ``Scheduler``'s order,
    ``sim.schedule("x", job, FixedRate(60))``, which raised a bare ``TypeError: ... takes 3
    positional arguments but 4 were given``.  Names what each place got, and for that
    swap writes the call as the simulation takes it.  Only a refusal asks."""
    after = ", ".join(shown(value) for value in extra)
    message = (
        f"task {shown(name)}: Simulation.schedule(name, schedule, *, duration=..., "
        f"action=..., ...) takes 2 arguments by position, got "
        f"{2 + len(extra)}: {shown(schedule)} for schedule, then {after}"
    )
    swapped = (
        len(extra) == 1
        and callable(schedule)
        and not isinstance(schedule, type)
        and (has_schedule_methods(extra[0]) or isinstance(extra[0], str))
    )
    if swapped:
        action = getattr(schedule, "__name__", "")
        action = action if action.isidentifier() else "..."
        message += (
            " (Scheduler.schedule's order, name, action, schedule; a simulation takes "
            f"its action by keyword: schedule({shown(name)}, {shown(extra[0])}, "
            f"action={action}))"
        )
    return ValidationError(message)
