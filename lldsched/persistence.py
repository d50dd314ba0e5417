"""The persistence seam: the TaskStore protocol every status change is written through,
and what it is given: a task's definition (:class:`Task`) and its state (:class:`TaskSnapshot`).

The core calls ``save`` at every transition, with the run's record when the
transition ends a run, while its runtime holds the scheduler's lock: a store
should be quick, and must not call back into the scheduler.  ``delete`` forgets
a task removed from the scheduler; ``load_all`` returns the latest snapshot of
every task it holds (recovery after a restart builds on it).

A store is optional.  With ``store=None`` nothing is written (the registry
already holds the state) and the hot path builds no snapshot at all.

A runtime opened on a store that already holds tasks restores them (see
:mod:`lldsched.core.recovery`).  A store that also gives back the records it kept
and the dead-letter order (:class:`HistoryStore`) has those restored too.

The rest of the seam is in three modules beside this one: the methods a store may have
beyond the protocols, each called through a function that falls back to the protocol's
own when it has not (:mod:`lldsched.storecalls`); the bounds every store holds a task's
id and text to, whichever store it is, and the arguments its reads take
(:mod:`lldsched.storechecks`); and the protocol of a store several processes share,
:class:`~lldsched.coordination.CoordinatedStore`, with its claims, leases and change
feed (:mod:`lldsched.coordination`, docs/CLUSTER.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

from lldsched.model import ExecutionRecord, Priority, TaskStatus
from lldsched.policies import MisfirePolicy, Overlap, RetryPolicy
from lldsched.schedules.base import Schedule

__all__ = [
    "FINISHED_STATUSES",
    "HistoryStore",
    "Task",
    "TaskSnapshot",
    "TaskStore",
    "finished",
]


class Task(NamedTuple):
    """The definition of a task (the *Command*): what runs, when, and how it fails.

    Immutable: the queue, the pool and the stores move it around without knowing
    what it does.  Its live state is in :class:`~lldsched.core.task.ScheduledTask`.
    """

    id: str
    name: str
    action: Callable[..., Any] | None
    schedule: Schedule
    priority: Priority
    retry: RetryPolicy
    timeout: float | None
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] | None = None
    misfire: MisfirePolicy | None = None  # None: the default policy
    isolation: str = "thread"  # or "process" (lldsched.core.isolation.ISOLATIONS)
    depends_on: tuple[str, ...] = ()  # upstream task ids (lldsched.core.dependencies)
    overlap: Overlap | None = None  # None: runs never overlap (the schedule's own rule)
    max_instances: int | None = None  # with Overlap.ALLOW only


class TaskSnapshot(NamedTuple):
    """What a :class:`~lldsched.persistence.TaskStore` is given at every transition.

    ``running`` is True while an attempt is in flight (also for a task paused
    mid-run): recovery runs that attempt again (at-least-once).

    ``waited`` is the slot the task's own schedule waits for behind the run due at
    ``next_run_at``, when that run is an extra one planned in front of it (a
    ``run_now``, a misfire's catch-up); None when ``next_run_at`` is the schedule's
    own.  Every durable store keeps it (``lldsched/stores/contract.py`` checks it):
    recovery after a restart puts that slot first again, and so does whichever process
    of a shared store runs the extra run, instead of counting the schedule on from the
    extra run (a fixed-rate grid would move).

    ``slot`` is the slot the run due at ``next_run_at`` serves, when it is not that
    instant: a run a plan decided (a catch-up slot, a ``run_now``'s extra run) that a
    ``resume()`` made due after its slot had passed, due at the resume instant (its record
    says that slot and that due, docs/decisions/schedules.md, "Resume re-anchors a fixed-rate
    grid"); None otherwise, and always for a retry (whose slot the records keep).  Every
    durable store keeps it, so the record is the same whichever process runs that run.

    ``resumes`` is True when ``waited`` is the slot the task's own schedule resumes at
    after a misfire decision's plan (``SKIP`` behind an owed retry, a plan cut at the
    1,000-slot cap: :class:`~lldsched.schedules.catchup.CatchUp` ``resumes``), not a slot
    decided to run (a ``run_now``'s, a catch-up slot): a run before it that outlasts it
    skips it, as the own schedule skips the slots a run outlasts, where a decided slot
    runs late.  Every durable store keeps it with ``waited``, so a plan put back from the
    row (a restart within grace, a process following a shared store) skips that slot as
    the process that decided the plan does; False otherwise.

    ``until`` is where the slots a misfire decision's plan decided to run end, while
    ``waited`` is one of them: the task's own schedule's first slot after them
    (:attr:`CatchUp.until <lldsched.schedules.catchup.CatchUp.until>`); None otherwise.
    A ``RUN_ALL`` plan put back from the row runs its slots up to it, and only the slots
    from it on meet the misfire policy (they passed after the plan was made); without
    it, every slot after ``waited`` up to the restart was caught up as the plan's.  The
    durable stores keep it in the column that keeps the slot to resume at (it is always
    after ``waited``, which that slot is when ``resumes``): docs/decisions/persistence.md, "A
    RUN_ALL plan put back from a row ends where it was decided".

    ``grid`` is the origin of the grid a ``FixedRate`` task's slots are counted on (its
    ``k``-th slot is ``FixedRate.slot_at(grid, k)``: the first slot, or where a
    reschedule, a resume or a slot off the grid started it again); None for a task whose
    schedule counts on no such grid (a ``FixedRate``, or a ``Window`` or ``Jittered``
    around one, does: :func:`~lldsched.schedules.base.counts_on_grid`; for ``Jittered``
    a delayed instant, whose undelayed slot is the origin), and in a row an older
    release wrote.  Every durable store keeps it, so a restart, or another process of a shared
    store, counts the slots from the same origin, the very floats, instead of starting a
    grid at the restored slot (whose sums drift: docs/decisions/schedules.md, "A fixed rate's grid
    origin is kept in the row").  Read only where the task's slot is on that grid
    (``FixedRate.next_on_grid`` checks it): a stale one starts a new grid at the slot, as
    a row without one does.

    ``blocked_due`` and ``blocked_slot`` are the due instant and the slot of the slot a
    BLOCKED dependent was found blocked at, when a ``reschedule`` moved its next slot
    during that wait (``next_run_at`` is then the new schedule's first run); None
    otherwise.  Every durable store keeps them, so the wait's record names the slot that
    waited whichever process ends it, a restarted one included, as it does in the
    process that rescheduled it (docs/decisions/dependencies.md, "A wait's record names
    the slot found blocked").  Read only while the row is the write that kept them (its
    version): a row an older release wrote keeps none.
    """

    task: Task
    status: TaskStatus
    next_run_at: float | None
    attempt: int
    run_count: int
    failure_count: int
    last_error: str | None
    running: bool = False
    waited: float | None = None
    slot: float | None = None
    resumes: bool = False
    until: float | None = None
    grid: float | None = None
    blocked_due: float | None = None
    blocked_slot: float | None = None


FINISHED_STATUSES = (TaskStatus.SUCCEEDED, TaskStatus.CANCELLED)
"""The statuses of a task nothing runs again, once no run is in flight (:func:`finished`)."""


def finished(snapshot: TaskSnapshot) -> bool:
    """True for a task nothing runs again: succeeded or cancelled, with no run in flight
    (one cancelled mid-run finishes when its run is recorded).  No record is written for
    it after this save, and a later save (``replace_existing``) writes its definition in
    full, so the durable stores' caches forget it (before, they held every task ever
    saved: about 430 bytes a task, 430 MB after a million one-off runs): SQLite, shared
    or not, and PostgreSQL (docs/DECISIONS.md)."""
    return snapshot.status in FINISHED_STATUSES and not snapshot.running


@runtime_checkable
class TaskStore(Protocol):
    """Where task state is persisted.

    What the runtimes rely on (``lldsched/stores/contract.py`` checks each on a store,
    docs/EXTENDING.md shows one written from scratch):

    * ``save`` is called at every transition by the thread that made it, under the
      threaded runtime's lock: be quick, never call back into the scheduler, and be
      safe to call from several threads (a reader's ``records()`` may run beside it);
    * ``load_all`` gives each task's latest snapshot, in the order each was first
      saved, every field equal to the one saved (the definition's, every status, and
      ``waited``, None included); it is read once, by the runtime's constructor, and a
      :class:`~lldsched.errors.StoreError` from it fails that constructor with nothing
      changed;
    * a ``save`` that raises at a registration or a change of definition makes that
      call raise; one that raises later is logged and the registry stays
      authoritative (:mod:`lldsched.core.store.writes`);
    * a store with ``close()`` raises :class:`~lldsched.errors.StoreClosedError` from
      every later ``save``, ``delete`` and ``load_all``, and says ``closed``: the
      verbs then refuse before changing anything;
    * a store that writes definitions out uses :mod:`lldsched.stores.codec` and passes
      ``decode_task(..., runs=run_count - failure_count)``, so a ``Window``'s
      ``max_runs`` holds across a restart.
    """

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        """Persist the task's state now; ``record`` is the run this transition ends."""
        ...

    def delete(self, task_id: str) -> None:
        """Forget ``task_id`` and its records, whatever the row holds: a user's
        ``remove()`` (a purge as a task retires is :func:`purge`)."""
        ...

    def load_all(self) -> list[TaskSnapshot]:
        """The latest snapshot of every stored task, in the order they were first saved."""
        ...


@runtime_checkable
class HistoryStore(TaskStore, Protocol):
    """A TaskStore that also returns what recovery needs beyond the latest snapshots."""

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        """The records kept for ``task_id`` (for every task when None), oldest first."""
        ...

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, in the order they failed."""
        ...
