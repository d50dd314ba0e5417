"""Short names the core's modules share: the statuses and outcomes they compare by
identity, the overlap policies, the cap on skipped slots recorded one by one, and
which of the two runnable statuses a task waiting to run has (:func:`runnable`), and
which statuses hold a slot still to run (:data:`SLOT_HELD`).

One home, so :mod:`~lldsched.core.machine` and its mixins
(:mod:`~lldsched.core.definition`, :mod:`~lldsched.core.overlapping`,
:mod:`~lldsched.core.waiting`, :mod:`~lldsched.core.restoration`), the lifecycle's
table (:mod:`~lldsched.core.lifecycle`), :mod:`~lldsched.core.dependencies`,
:mod:`~lldsched.core.recovery` and :mod:`~lldsched.core.misfires` read the same words; and
the verbs a shut-down runtime refuses
(:data:`REFUSED_AFTER_SHUTDOWN`), one rule both runtimes keep; and how the records
standing for the rest past a cap read (:func:`cap_text`: a misfire's, a run's skipped
slots', an outage's).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, get_args

from lldsched.logs import counted, instant_text
from lldsched.model import Outcome, TaskStatus
from lldsched.policies import Overlap
from lldsched.schedules.slotcount import COUNT_LIMIT

MAX_SKIPPED = 10
"""Slots one run skipped that are recorded one by one; one more record stands for the rest."""

MISFIRE_CAP = "MisfireCap:"
"""How the error text of the record standing for a misfire decision's slots beyond its cap
begins: a restart reads where a catch-up plan was cut from it (core/recovery.py), and an
outage's records keep it whole (core/store/outagerecords.py)."""

SKIP_CAP = "SkipCap:"
"""How the error text of the record standing for the slots past :data:`MAX_SKIPPED` that a
run skipped begins (core/decided.py)."""

OUTAGE_CAP = "OutageCap:"
"""How the error text of a record standing for the records a store outage folded begins
(core/store/outagerecords.py)."""


def cap_text(
    prefix: str, *, passed: str, kept: str, stands: str, first: float, last: str, then: str
) -> str:
    """The error text of a record standing for the records past a cap (``prefix``:
    :data:`MISFIRE_CAP`, :data:`SKIP_CAP` or :data:`OUTAGE_CAP`), all an operator reads of
    them (``tasks show``), in one wording for the three: what ``passed`` (what happened
    to them, why, and what decided them when), which of them are ``kept`` one by one,
    what this record ``stands`` for, from its ``first`` instant to the ``last`` (a
    phrase), and ``then``, what became of them and of the task.  Instants in UTC as every
    log line shows them (:func:`~lldsched.logs.instant_text`), the callers' own too, not
    seconds since the epoch.  Read back by its prefix alone (``misfireplan.cut_record``,
    :class:`~lldsched.core.store.outagerecords.Held`): the rest may say more, and a record
    written before reads as ever."""
    return (
        f"{prefix} {passed}; {kept} are recorded one by one, and this record stands for "
        f"{stands}, from {instant_text(first)} {last}: {then}"
    )


def stands_for(slots: int | None) -> str:
    """What the record past a run's skipped slots' cap (:data:`SKIP_CAP`) or a misfire's
    (:data:`MISFIRE_CAP`) stands for, :func:`cap_text`'s ``stands``: ``"395 slots, every
    later one"`` (``None``: ``"more than 100,000 slots"``, past what is stepped through
    one at a time, :data:`~lldsched.schedules.slotcount.COUNT_LIMIT`).  The views read the
    count back (:func:`~lldsched.views.report.slots_of`: :data:`SLOTS_STOOD_FOR`), one
    rule."""
    if slots is None:
        return f"more than {COUNT_LIMIT:,} slots, every later one"
    return f"{counted(slots, 'slot')}, every later one"


SLOTS_STOOD_FOR = re.compile(r"this record stands for (?:more than )?([\d,]+) slots?, ")
"""How the count a cap's record states (:func:`stands_for`) is found in its text: the
views read it (:func:`~lldsched.views.report.slots_of`); a record written before it
was stated says no count."""


def goes_on(after: float | None) -> str:
    """Where a task goes on after a cap's record (:func:`cap_text`): at ``after``, or
    nowhere when its schedule has no slot after."""
    if after is None:
        return "its schedule has no slot after that"
    return f"the task goes on at {instant_text(after)}"


GIVEN_UP = Outcome.GIVEN_UP
WAITED = Outcome.BLOCKED  # the record of a blocked wait
SKIPPED = Outcome.SKIPPED
COALESCED = Outcome.COALESCED
MISSED = Outcome.MISSED
OVERLAP_CANCELLED = Outcome.CANCELLED
SHUTDOWN_CUT = Outcome.CANCELLED  # a run a shutdown cut: its task stays due (core/runs.py)
BUFFER_ONE = Overlap.BUFFER_ONE
CANCEL_OTHER = Overlap.CANCEL_OTHER
ALLOW = Overlap.ALLOW
Skipped = Sequence[float]  # slots a run skipped, oldest first

SCHEDULED = TaskStatus.SCHEDULED
RUNNING = TaskStatus.RUNNING
RETRYING = TaskStatus.RETRYING
PAUSED = TaskStatus.PAUSED
SUCCEEDED = TaskStatus.SUCCEEDED
FAILED = TaskStatus.FAILED
CANCELLED = TaskStatus.CANCELLED
BLOCKED = TaskStatus.BLOCKED
RUNNABLE = (SCHEDULED, RETRYING)
SLOT_HELD = (SCHEDULED, RETRYING, PAUSED)
"""The statuses of a row whose due instant is a slot still to run: runnable, or paused
with it (its resume runs it).  The one rule of what a followed row's state holds:
:meth:`~lldsched.core.restoration.Restoration.adopt` takes a slot (and a fixed rate's
grid) only from such a row, and :func:`~lldsched.core.follow._adopt` reads a retry's
slot from the records only for one."""


def runnable(attempt: int) -> TaskStatus:
    """The status of a task waiting to run: RETRYING with ``attempt`` attempts of its
    slot behind it, SCHEDULED with none (RETRYING is its own status for that)."""
    return RETRYING if attempt else SCHEDULED


RefusedVerb = Literal["schedule", "reschedule", "run_now", "resume", "redrive"]
"""A verb a runtime refuses once shut down: one that would run something.  The checks of
both runtimes take it as their verb (``Scheduler._check_open``,
``SimulationVerbs._check_running``), so mypy holds each to this list."""

REFUSED_AFTER_SHUTDOWN: frozenset[str] = frozenset(get_args(RefusedVerb))
"""The verbs ``Scheduler`` and ``Simulation`` refuse after ``shutdown()`` (and
``aclose()``) with a :class:`~lldsched.errors.SchedulerStateError`, before they change
anything (and before any call of a shared store: no hold, no read of its feed):
``schedule`` (and so the ``scheduled`` decorator), ``reschedule``, ``run_now``,
``resume`` and ``redrive``.  The other control verbs (``pause``,
``cancel``, ``modify``, ``remove``) and every read still work: they keep the books a
durable store keeps for the next process.  A simulation also refuses the verbs that
move virtual time (``run``, ``run_for``, ``step``, ``at``), its own."""
