"""A first run answered in the past: the slots before the task existed meet its misfire policy.

A built-in schedule's ``first_run(now)`` is never before ``now`` (``OneTime`` runs a
passed ``at`` at ``now``, an interval counts from ``now``, a cron fires after it).  A
schedule of one's own may answer an instant passed (a list of slots, some of them
gone; a calendar read from its start), and its ``next_run`` then answers the slots
after it, passed too.  Queued as answered, every passed slot ran back to back at the
registration, whatever ``misfire=`` said, where the same task registered on a
threaded ``Scheduler`` before ``start()`` met its policy there
(:func:`~lldsched.core.recovery.at_start`).  Nobody ran those slots, as in downtime, so
they meet the policy by the rule a restart applies (:func:`~lldsched.core.misfires.
decide_misfire`): ``RUN_ONCE`` runs once for them all, ``RUN_ALL`` at most
``max_catch_up`` of them, ``SKIP`` records each ``missed``; within ``grace`` nothing is
decided and the slot runs late (docs/decisions/extending.md, "A first run in the past
meets the misfire policy").

Called by the core, under the runtime's lock (or on the simulation's thread), after a
registration (:meth:`~lldsched.core.machine.SchedulerCore.add`) or a new schedule
(``reschedule``, a replacement) queued a task at an instant before ``now``: never on
the common path, which the built-in schedules keep to.  On a shared store nothing is
decided here: the process that claims the first slot decides its misfire, as for any
slot due before it was there (:mod:`lldsched.threaded.shared.decisions`), and a process
following another's registration (:mod:`lldsched.core.follow`) writes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lldsched.coordination import is_shared
from lldsched.core.misfires.apply import decide_misfire

if TYPE_CHECKING:
    from lldsched.core.parts import CoreParts
    from lldsched.core.task import ScheduledTask

__all__ = ["first_passed"]


def first_passed(core: CoreParts, task: ScheduledTask, now: float) -> None:
    """``task``, just queued at its first run, an instant before ``now``: the slots
    passed meet its misfire policy (:func:`~lldsched.core.misfires.apply.decide_misfire`)."""
    writes = core._writes
    if writes is not None and is_shared(writes.store):
        return  # the process that claims the slot decides (threaded/shared/decisions.py)
    decide_misfire(core, task, now)
