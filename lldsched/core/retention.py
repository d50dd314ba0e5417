"""Retention: which finished tasks the registry still holds, and what it keeps of the
tasks it retired.

A service that schedules "send the reminder in five minutes" all day must not hold
every task it ever ran (issue #19: a million one-off runs held a million tasks,
640 MiB).  So a *finished* task leaves the registry after a stated retention, the
runtimes' ``retain_finished`` (the same name and meaning on ``Scheduler`` and
``Simulation``):

* an ``int`` *n*: the *n* most recently finished tasks stay; those that finished
  earliest retire in batches of *n* // 100 + 1 (:data:`RETIRE_BATCH`), when that
  many more than *n* are held, so up to 1 % more are held between batches (100 at
  the default; ``0``, or any *n* under 100: a task retires as one more finishes);
* a ``timedelta``: a finished task stays that long after it finished, and retires
  at the first finish or cancel after that;
* ``None``: every task stays (the registry grows with every task registered).

The default is :data:`DEFAULT_RETAIN_FINISHED`.

*Finished* means SUCCEEDED or CANCELLED with no run in flight (a task cancelled
mid-run finishes when its run does): nothing will ever run it again.  FAILED is
not finished here: a FAILED task waits in the dead letter until it is redriven
or removed, however long that takes.

What stays of a retired task: every record it made is in the store (written
through as always), with the listeners, in the simulation's ``records()`` (its
run log keeps every record), and in the threaded scheduler's ``records()`` as far
as its ``history_limit`` reaches (retired tasks share one history of that bound:
:attr:`Retention.log`).  The ids of the last :data:`RETIRED_IDS_REMEMBERED` retired
tasks are remembered, so that ``task(id)`` and every control verb on one raise
:class:`~lldsched.errors.TaskRetiredError` saying so; an id retired longer ago gets
a :class:`~lldsched.errors.TaskNotFoundError` that names retirement as one reason.
Registering a retired id again is a new task.

``purge_retired=True`` (the same name on both runtimes) deletes a task from the store
as it retires, as :meth:`remove` would: its row and its records.  The store then
bounds what it keeps as the registry does, which a service that registers one-off
tasks all day on a durable store needs (without it the file keeps every task it was
ever given); what is left of a retired task is the listeners', and the retired
tasks' shared history.

On a shared store (docs/CLUSTER.md) a task this process follows into SUCCEEDED or
CANCELLED (a run settled in another process, a cancel made there, a finished row
loaded) is held and retires as one finished here, from when this process learnt of it;
retiring it writes nothing, but with ``purge_retired`` it is deleted from the store as
one finished here is, whoever finished it: a finished row is final (nothing runs it
again), and leaving it to the process that finished it leaked it for good when that
process stopped before retiring it (a restart loads it as finished elsewhere).  The
other processes that still hold it drop it, as a removal made elsewhere.

The rule lives here; :class:`~lldsched.core.machine.SchedulerCore` tells this
object when a task finishes and carries out the retirements it answers.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from datetime import timedelta
from itertools import islice
from typing import TypeVar

from lldsched.checks import WIDEST, flag, id_hint, seconds
from lldsched.errors import TaskNotFoundError, TaskRetiredError, ValidationError, shown
from lldsched.model import ExecutionRecord, TaskStatus

__all__ = [
    "DEFAULT_RETAIN_FINISHED",
    "RETIRED_IDS_REMEMBERED",
    "RetainFinished",
    "Retention",
    "check_retention",
    "oldest",
]

RetainFinished = int | timedelta | None
"""A retention: a count of finished tasks, an age, or None (keep every one)."""

DEFAULT_RETAIN_FINISHED = 10_000
"""Finished tasks the registry holds by default: a few MiB, and far more than a
notebook, a test or a dashboard looks back on."""

RETIRE_BATCH = 100
"""A count *n* retires in batches of ``n // RETIRE_BATCH + 1`` tasks.  A retirement
pass at every finish cost a dispatched one-off job 7.6 % of its instructions (44,540
-> 41,170 with the default count, 20,000 jobs; docs/DECISIONS.md)."""

RETIRED_IDS_REMEMBERED = 10_000
"""Retired ids remembered for :class:`TaskRetiredError` (about 1 MiB at most); the
oldest are forgotten in batches, as a count retires (up to 1 % more are remembered)."""

_NONE: tuple[str, ...] = ()
V = TypeVar("V")


_EXPECTED = "must be a count of finished tasks (an int >= 0), an age (a timedelta >= 0) or None"


def check_retention(value: object) -> RetainFinished:
    """``value`` if it is a retention, else a :class:`ValidationError` quoting it.  An age
    is checked by the rule of every duration (:func:`lldsched.checks.seconds`); a plain
    number is a count here, never seconds."""
    return _checked(value)[0]


def _checked(value: object) -> tuple[RetainFinished, float | None]:
    """:func:`check_retention`'s one home: ``value`` checked, and an age's seconds (None
    for a count or None), so that the age is checked and converted once."""
    if value is None:
        return None, None
    if isinstance(value, timedelta):
        return value, seconds(value, name="retain_finished", at_least=0, expected=_EXPECTED)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= WIDEST:
        return value, None  # WIDEST: a count of 640 digits at most, as every count's
    raise ValidationError(f"retain_finished {_EXPECTED}, got {shown(value)}")


class Retention:
    """The finished tasks still held, oldest finish first, and the memory of retired ones."""

    __slots__ = (
        "_age", "_count", "_retired", "held_since", "keep", "log", "purge", "retire_above",
    )  # fmt: skip

    def __init__(
        self, keep: RetainFinished, *, history_limit: int | None, purge: bool = False
    ) -> None:
        self.keep, self._age = _checked(keep)
        self.purge = flag(purge, name="purge_retired")
        """A retiring task is deleted from the store too (its row and records)."""
        self._count = keep if isinstance(keep, int) else None
        # More held than this, and a retirement pass is due (the core reads it after
        # each finish): a count's batch bound, or 0 for an age (any task held may be due).
        self.retire_above = 0 if self._count is None else self._count + self._count // RETIRE_BATCH
        # The ids of the finished tasks held, in the order they finished, to the
        # instant each finished (insertion order is the retirement order).  Public for
        # one reader: the core skips its retirement pass while it holds no more than
        # retire_above.  A count takes its oldest off a batch at a time (oldest()), so a
        # plain dict serves; an age takes them one at a time, at every finish, and
        # taking the oldest of a dict whose front was deleted scans the deleted slots
        # (a stream of one-off runs spent 4x its time there): an ordered dict.  A plain
        # dict's insert and delete cost a fraction of an ordered dict's: retiring a
        # task 7,155 -> 5,065 instructions (-29 %; callgrind of bench_dispatch's 20,000
        # jobs, retain_finished=0 against None), a dispatched job -2.8 % with the
        # default count (36,000 -> 35,000; half of the 20,000 retire).
        self.held_since: dict[str, float] = {} if self._age is None else OrderedDict()
        # Recently retired ids, oldest first, to the status each finished with.
        self._retired: dict[str, TaskStatus] = {}
        self.log: deque[ExecutionRecord] = deque(maxlen=history_limit)
        """The records of retired tasks, in the order they retired (bounded as one
        task's history is)."""

    def finished(self, task_id: str, at: float) -> None:
        """The task ``task_id`` finished at ``at``: it is held for the retention from now."""
        if self.keep is not None and task_id not in self.held_since:
            self.held_since[task_id] = at

    def purges(self, task_id: str) -> bool:
        """Whether ``task_id``, retiring now, is deleted from the store: with ``purge``,
        wherever it finished (see the module docstring)."""
        return self.purge

    def forget(self, task_id: str) -> None:
        """The task left the registry some other way (``remove``)."""
        self.held_since.pop(task_id, None)

    def registered(self, task_id: str) -> TaskStatus | None:
        """``task_id`` was registered: a retired task of that id is history.  Returns the
        status it retired with (None if it is not remembered as retired)."""
        if self._retired:
            return self._retired.pop(task_id, None)
        return None

    def due(self, now: float) -> tuple[str, ...] | list[str]:
        """The ids that retire at ``now``, oldest finish first, taken off the held list."""
        held = self.held_since
        count = self._count
        if count is not None:
            if len(held) <= self.retire_above:
                return _NONE
            return oldest(held, len(held) - count)
        if self._age is None or not held:  # None: every task stays
            return _NONE
        assert isinstance(held, OrderedDict)  # an age's (see __init__)
        limit = now - self._age
        due = []
        while held and next(iter(held.values())) <= limit:
            due.append(held.popitem(last=False)[0])
        return due

    def retired(
        self, task_id: str, status: TaskStatus, history: tuple[ExecutionRecord, ...]
    ) -> None:
        """Remember that ``task_id`` retired (as ``status``), and keep its records in the log."""
        retired = self._retired
        retired[task_id] = status
        remembered = RETIRED_IDS_REMEMBERED  # read here: a test lowers it
        if len(retired) > remembered + remembered // RETIRE_BATCH:
            oldest(retired, len(retired) - remembered)
        if history and self.log.maxlen != 0:
            self.log.extend(history)

    def not_found(self, task_id: object) -> TaskNotFoundError:
        """The error for an id the registry does not hold, saying whether it retired."""
        status = self._retired.get(task_id) if isinstance(task_id, str) else None
        if status is not None:
            return TaskRetiredError(
                f"task {shown(task_id)} finished ({status.value}) and was retired from the "
                "registry "
                f"(retain_finished={self.keep!r}); its runs stay in records() "
                + (
                    "(purge_retired: deleted from the store as it retired)"
                    if self.purge
                    else "and the store"
                )
            )
        hint = id_hint(task_id)  # the task itself, given for its id
        if self._retired and not hint:
            return TaskNotFoundError(
                f"no task with id {shown(task_id)}: never registered, removed, or finished and "
                f"retired long ago (retain_finished={self.keep!r})"
            )
        return TaskNotFoundError(f"no task with id {shown(task_id)}{hint}")

    def held(self) -> int:
        """How many finished tasks are held now."""
        return len(self.held_since)


def oldest(ids: dict[str, V], n: int) -> list[str]:
    """Take the ``n`` oldest keys off ``ids`` (insertion order) and return them.

    One pass from the front of a plain dict, which also walks the slots of keys
    deleted since the dict last resized: a batch pays that walk once, where taking
    the oldest one at a time would pay it per key."""
    taken = list(islice(ids, n))
    for key in taken:
        del ids[key]
    return taken
