"""Dependencies: which tasks wait for which, and what each dependent still waits for.

A task registered with ``depends_on=[ids]`` is a *dependent*; the tasks it names
are its *upstreams*.  The rule, stated once (the core carries it out in
:meth:`SchedulerCore.begin <lldsched.core.runs.RunTransitions.begin>` and
:meth:`~lldsched.core.runs.RunTransitions.finish`):

* **A slot of a dependent runs when each upstream has succeeded since the
  dependent's previous slot started** (for its first slot: has ever succeeded,
  even before the dependent was registered).  An upstream that has SUCCEEDED for
  good (a one-off that ran) satisfies it from then on, so "initialise once, then
  sync every minute" works.  The check is made when the slot falls due, before
  dispatch: the heap does not change.
* A slot that falls due too early is **BLOCKED**: its task leaves the heap and
  nothing polls.  When the last upstream it waits for records a success, the core
  releases it: SCHEDULED, queued at that instant (dependents released by one
  success are queued in the order they were registered, so ties run by priority,
  then in that order).  A recurring dependent blocked past its own next slots runs
  once when released; the slots it slept through are recorded SKIPPED, as after
  an overrun.
* **Retries are never blocked**: the rule gates a slot, and a slot's retries belong
  to it.
* **A dead upstream fails its dependents**: a dependent waiting for an upstream
  that is FAILED or CANCELLED (it will not succeed without a person) is FAILED, in
  the dead letter, with ``UpstreamFailed`` naming it; so are its own dependents in
  turn.  ``redrive`` both once the upstream is fixed.  An upstream cannot be
  removed while tasks depend on it.
* Every blocked wait leaves one record, :attr:`~lldsched.model.Outcome.BLOCKED`,
  made when the wait ends, from the instant the slot was found blocked to then.
* An upstream that **retires** (a finished task leaving the registry, see
  :mod:`lldsched.core.retention`) counts as it ended, SUCCEEDED or CANCELLED, for
  as long as tasks still name it; a new task cannot name it (it is not registered).
  After a restart, an upstream a restored dependent names that the store no longer
  holds (``purge_retired`` deleted its row) counts as a retired success.

* **A new definition** (``replace_existing`` with other ``depends_on``) changes which
  upstreams the next slot waits for, not since when: one named anew counts by the
  rule above, from the dependent's latest slot (:meth:`Dependencies.relink`).

* Counted from records instead (after a restart, and on a shared store), the rule
  is :func:`wait_of`: the order of events is read from the records' times.

* **On a shared store** (several processes, docs/CLUSTER.md) the waiting sets of one
  process do not see the runs of the others, and the change feed keeps only each
  row's latest state, not the order of events.  So there the sets are counted again
  from the store's records whenever one decides something (:meth:`recount`): the rule
  after a restart, with this process's own successes added (their records may not be
  written yet).  The wait ends in one process: the one that ran the success that
  completed it (:meth:`completed_here`), at that run's end, or, if it had not seen the
  dependent BLOCKED then, when it does; likewise a dead upstream fails its dependents
  in the one process that left it dead (:meth:`dead_here`).

This module keeps the bookkeeping (the graph and the waiting sets); it changes
no status.  Standard library only, like the rest of the core.  The threaded
runtime's lock covers it as it covers the core.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from lldsched.core.names import SUCCEEDED
from lldsched.core.task import ScheduledTask
from lldsched.model import ExecutionRecord, TaskStatus

__all__ = ["Dependencies", "RetiredUpstream", "Successes", "Upstream", "Wait", "wait_of"]

_DEAD = (TaskStatus.FAILED, TaskStatus.CANCELLED)
_KEPT_HERE = 64  # an upstream's latest successes run here, kept for completed_here

Records = Callable[[str], Sequence[ExecutionRecord] | None]
"""A task id -> that task's records in a shared store, oldest first; None when they could
not be read (the read's failure counted as the store failing by whoever reads them:
:meth:`DependencyWaits._read_records <lldsched.core.waiting.DependencyWaits._read_records>`)."""


class Successes(NamedTuple):
    """What the rule needs to know of one upstream's successes."""

    finished: Sequence[float]
    """The finish times of its successes, as far as they are known (in any order)."""
    for_good: bool
    """It SUCCEEDED for good (a one-off that ran): it satisfies every slot."""
    ever: bool
    """It has succeeded (its counts say so, even where its records were trimmed)."""


class Wait(NamedTuple):
    """What a dependent's next slot still waits for, and what ended its wait."""

    waiting: set[str]
    """The upstreams it still needs a success of."""
    completed_by: float | None
    """The finish of the success that completed the wait: of each upstream's first
    success after the slot, the latest.  None while it waits, or when no upstream has a
    success after the slot (each counts for good, or by its counts alone)."""
    unread: frozenset[str] = frozenset()
    """The upstreams whose records could not be read (a shared store's): counted by this
    process's own successes alone, as if the store had none, so the count decides nothing
    on them (:meth:`Dependencies.recount`)."""


def wait_of(*, since: float | None, upstreams: Iterable[tuple[str, Successes]]) -> Wait:
    """The rule, on what is known: which ``upstreams`` a dependent's slot still waits for.

    ``since`` is when the dependent's latest slot started (None: it never ran).  An
    upstream counts when one of its successes finished strictly after ``since`` (for
    a first slot: when it ever succeeded), or when it SUCCEEDED for good.
    """
    waiting = set()
    completed_by = None
    for upstream, known in upstreams:
        counted = [t for t in known.finished if since is None or t > since]
        if counted:
            first = min(counted)
            if completed_by is None or first > completed_by:
                completed_by = first
        elif not known.for_good and (since is not None or not known.ever):
            waiting.add(upstream)
    return Wait(waiting=waiting, completed_by=None if waiting else completed_by)


def _latest_start(history: Iterable[ExecutionRecord]) -> float | None:
    """When a dependent's latest slot started (its latest first attempt that ran), from
    its records; None when they show none."""
    starts = [r.started for r in history if r.outcome.ran and r.attempt == 1]
    return starts[-1] if starts else None


def _since(task: ScheduledTask) -> float | None:
    """When ``task``'s latest slot started, from its history in memory; for a first
    attempt in flight (its record is not made yet), that slot's due instant (its start
    less the dispatch's delay)."""
    run = task._run
    if run is not None and run.attempt == 1:
        return run.due
    return _latest_start(task.history)


class Dependencies:
    """The graph of a core's registry and each dependent's waiting set.

    ``waiting[d]`` holds the upstreams dependent ``d`` still needs a success of
    before its next slot may start; ``blocked_at[d]`` the instant ``d`` became
    BLOCKED (while it is); ``blocked_slot[d]`` the due instant and slot found blocked,
    kept only once a reschedule moved ``d``'s next slot during its wait (its record
    names the slot that waited, docs/decisions/dependencies.md, "A wait's record names
    the slot found blocked"), and written with ``d``'s row
    (:attr:`TaskSnapshot.blocked_due <lldsched.persistence.TaskSnapshot.blocked_due>`), so
    a restarted process or another one of a shared store records it too.
    """

    def __init__(self, tasks: Mapping[str, ScheduledTask], records: Records | None = None) -> None:
        self._tasks = tasks
        # A shared store's records (None: not shared), and the finish times of the
        # latest successes each upstream had in this process (shared only).
        self._records = records
        self._here: dict[str, deque[float]] = {}
        self._died_here: set[str] = set()  # upstreams this process found dead (shared)
        self._dependents: dict[str, dict[str, None]] = {}  # upstream -> dependents, in order
        self.waiting: dict[str, set[str]] = {}
        self.blocked_at: dict[str, float] = {}
        self.blocked_slot: dict[str, tuple[float, float]] = {}
        # Upstreams that retired while tasks still name them, and how they ended.
        self._retired: dict[str, TaskStatus] = {}

    def link(self, task: ScheduledTask, history: Iterable[ExecutionRecord] = ()) -> None:
        """Register ``task``'s edges (replacing any it had) and what it waits for.

        ``history`` is the task's own records, for a task restored from a store:
        what it waits for is worked out from the records, as far back as the store
        keeps them (:meth:`_counted`).  Otherwise it waits for the upstreams that
        never succeeded (:func:`wait_of` for a first slot).
        """
        self.unlink(task.id)
        for upstream in task.depends_on:
            self._dependents.setdefault(upstream, {})[task.id] = None
        history = tuple(history)
        if history:
            self.waiting[task.id] = self._counted(task, history, self._succeeded_in_memory).waiting
        else:  # a new task's first slot, by what the registry knows
            known = [(upstream, self._known(upstream)) for upstream in task.depends_on]
            self.waiting[task.id] = wait_of(since=None, upstreams=known).waiting

    def relink(self, task: ScheduledTask, before: Collection[str]) -> None:
        """``task`` names other upstreams now (a new definition; ``before``: those it named).

        A new definition changes which upstreams its next slot waits for, not since when
        (docs/decisions/dependencies.md, "Dependencies"): one it named before is waited for as it
        was; one it names anew, unless a success of it finished after the task's latest slot
        started (:func:`wait_of`: for a task that never ran, unless it ever succeeded), as
        far as the histories in memory reach.  So a restart, or another process, which
        count from the records, agree.  On a shared store it is counted from the records
        (:meth:`recount`).
        """
        was = self.waiting.get(task.id, set())
        self.link(task)
        if self._records is not None:
            # What could not be read is not waited for here: a BLOCKED task is released
            # (_relink), and the readiness check at its begin, reading again, decides.
            wait = self.recount(task)
            self.waiting[task.id] = wait.waiting - wait.unread
            return
        fresh = [
            (upstream, self._in_memory(upstream))
            for upstream in task.depends_on
            if upstream not in before
        ]
        waits = wait_of(since=_since(task), upstreams=fresh).waiting
        kept = {upstream for upstream in task.depends_on if upstream in before and upstream in was}
        self.waiting[task.id] = kept | waits

    def unlink(self, task_id: str) -> None:
        """Forget ``task_id``'s own edges (as a dependent)."""
        for upstream, dependents in list(self._dependents.items()):
            dependents.pop(task_id, None)
            if not dependents and upstream in self._retired:  # nobody names it any more
                self._forget(upstream)
        self.waiting.pop(task_id, None)
        self.blocked_at.pop(task_id, None)
        self.blocked_slot.pop(task_id, None)

    def retired(self, task: ScheduledTask) -> None:
        """``task`` (SUCCEEDED or CANCELLED) left the registry: forget it as a dependent,
        and remember how it ended while tasks still name it."""
        self.unlink(task.id)
        if self._dependents.get(task.id):
            self._retired[task.id] = task.status
        else:
            self._forget(task.id)

    def removed(self, task_id: str) -> None:
        """``task_id`` was removed, unlinked and cancelled (``remove`` refuses an upstream
        still named): nothing is kept of it as an upstream either."""
        self._forget(task_id)

    def _forget(self, task_id: str) -> None:
        """``task_id`` left the registry and no task names it: nothing is kept of it.

        Without this, what was kept of a task as an upstream outlived it, one entry for
        every task that ever left: its (empty) set of dependents once removed, and on a
        shared store the times of its latest successes here and whether it died here,
        kept for every task that ran once a task had ``depends_on`` (a one-off task
        registered each minute added one a minute, for good)."""
        self._dependents.pop(task_id, None)
        self._retired.pop(task_id, None)
        self._here.pop(task_id, None)
        self._died_here.discard(task_id)

    def purged(self, task_id: str) -> None:
        """A restored dependent names ``task_id``, which its store no longer holds: a row
        ``purge_retired`` deleted as the task retired (``remove`` refuses an upstream
        still named).  It counts as a retired success, as it did in the process that
        retired it; one that retired CANCELLED had failed its dependents already."""
        self._retired[task_id] = SUCCEEDED

    def retired_named(self, task_id: str | None) -> list[str]:
        """The upstreams that retired which registered task ``task_id`` names (how they
        ended kept here): what a new definition of it may name again."""
        task = None if task_id is None else self._tasks.get(task_id)
        if task is None:
            return []
        return [upstream for upstream in task.depends_on if upstream in self._retired]

    def named(self, task_id: str) -> bool:
        """True when registered tasks depend on ``task_id``."""
        return bool(self._dependents.get(task_id))

    def dependents(self, task_id: str) -> list[ScheduledTask]:
        """The registered tasks that depend on ``task_id``, in registration order."""
        found = self._dependents.get(task_id, {})
        return [self._tasks[d] for d in found if d in self._tasks]

    def unmet(self, task: ScheduledTask) -> list[str]:
        """The upstreams ``task``'s next slot still waits for, in ``depends_on`` order."""
        waiting = self.waiting.get(task.id)
        if not waiting:
            return []
        return [upstream for upstream in task.depends_on if upstream in waiting]

    def dead(self, task: ScheduledTask) -> Upstream | None:
        """The first upstream ``task`` waits for that is FAILED or CANCELLED, if any."""
        for upstream in self.unmet(task):
            found = self._get(upstream)
            if found is not None and found.status in _DEAD:
                return found
            if self._retired.get(upstream) in _DEAD:
                return RetiredUpstream(upstream, self._retired[upstream])
        return None

    def started(self, task: ScheduledTask) -> None:
        """``task``'s slot starts: its next slot waits for a fresh success of each upstream
        that has not SUCCEEDED for good."""
        self.waiting[task.id] = {
            upstream for upstream in task.depends_on if self._status(upstream) is not SUCCEEDED
        }

    def downstream(self, task_id: str) -> list[str]:
        """The ids of the registered tasks that depend on ``task_id``, directly or through
        others, each once: every row a cancel of it may fail (:meth:`stranded`, and theirs
        in turn)."""
        found: dict[str, None] = {}
        todo = [task_id]
        while todo:
            for dependent in self._dependents.get(todo.pop(), ()):
                if dependent not in found and dependent in self._tasks:
                    found[dependent] = None
                    todo.append(dependent)
        return list(found)

    def succeeded(self, upstream: str) -> list[ScheduledTask]:
        """``upstream`` recorded a success: it is no longer waited for.  Returns the
        BLOCKED dependents that now wait for nothing, in registration order."""
        released = []
        for dependent in self.dependents(upstream):
            waiting = self.waiting.get(dependent.id)
            if waiting is None:
                continue
            waiting.discard(upstream)
            if not waiting and dependent.status is TaskStatus.BLOCKED:
                released.append(dependent)
        return released

    def stranded(self, upstream: str) -> list[ScheduledTask]:
        """The BLOCKED dependents waiting for ``upstream`` (which just died)."""
        return [
            dependent
            for dependent in self.dependents(upstream)
            if dependent.status is TaskStatus.BLOCKED
            and upstream in self.waiting.get(dependent.id, ())
        ]

    def _get(self, task_id: str) -> ScheduledTask | None:
        return self._tasks.get(task_id)

    def _status(self, task_id: str) -> TaskStatus | None:
        """The status of a registered or retired upstream (None: neither)."""
        found = self._tasks.get(task_id)
        return found.status if found is not None else self._retired.get(task_id)

    def _known(self, upstream: str) -> Successes:
        """What the registry knows of ``upstream``'s successes (no finish times)."""
        found = self._get(upstream)
        return Successes(
            finished=(),
            for_good=self._status(upstream) is SUCCEEDED,
            ever=_has_succeeded(found),
        )

    def _in_memory(self, upstream: str) -> Successes:
        """What the registry knows of ``upstream``'s successes, their finish times from its
        history in memory."""
        known = self._known(upstream)
        return known._replace(finished=self._succeeded_in_memory(upstream))

    def _succeeded_in_memory(self, upstream: str) -> list[float]:
        """The finish times of ``upstream``'s successes in its in-memory history."""
        found = self._get(upstream)
        return [] if found is None else [r.finished for r in found.history if r.ok]

    def _succeeded_shared(self, upstream: str) -> list[float] | None:
        """The finish times of ``upstream``'s successes in the shared store's records, and
        of those this process ran (their records may not be written yet); None when its
        records could not be read."""
        assert self._records is not None
        records = self._records(upstream)
        if records is None:
            return None
        return [r.finished for r in records if r.ok] + list(self._here.get(upstream, ()))

    @property
    def shared(self) -> bool:
        """True on a shared store: :meth:`recount` decides, not the in-memory sets."""
        return self._records is not None

    def succeeded_here(self, upstream: str, finished: float) -> None:
        """Shared: ``upstream`` succeeded in this process, its run ending at ``finished``."""
        self._here.setdefault(upstream, deque(maxlen=_KEPT_HERE)).append(finished)

    def died_here(self, upstream: str) -> None:
        """Shared: this process ran the failure that left ``upstream`` FAILED, or
        cancelled it: it fails the dependents waiting for it, even those it sees BLOCKED
        only later."""
        self._died_here.add(upstream)

    def revived(self, upstream: str) -> None:
        """``upstream`` is not dead any more (redriven, here or elsewhere)."""
        self._died_here.discard(upstream)

    def dead_here(self, task: ScheduledTask) -> Upstream | None:
        """Shared: :meth:`dead`, for a dead upstream this process left dead; None
        otherwise (whoever did fails ``task``)."""
        found = self.dead(task)
        return found if found is not None and found.id in self._died_here else None

    def recount(
        self, task: ScheduledTask, history: Sequence[ExecutionRecord] | None = None
    ) -> Wait:
        """Shared: what ``task`` waits for, counted again from the store's records (its
        own: ``history`` if read already, else read now, as none if they cannot be) and
        this process's own successes (:meth:`_counted`), and what ended its wait.  An
        upstream whose records cannot be read is counted by this process's successes
        alone and named in :attr:`Wait.unread`: the caller decides nothing on it (docs/
        decisions/store-failures.md, "A dependent's readiness check that raises")."""
        assert self._records is not None
        if history is None:
            history = self._records(task.id) or ()
        wait = self._counted(task, history, self._succeeded_shared)
        self.waiting[task.id] = wait.waiting
        return wait

    def completed_here(
        self, task: ScheduledTask, history: Sequence[ExecutionRecord] | None
    ) -> bool:
        """Shared: ``task`` waits for nothing (:meth:`recount`, from its records
        ``history``) and the success that completed its wait ran in this process: here is
        where the wait ends.

        ``history`` None: its records could not be read; or an upstream's could not
        (:attr:`Wait.unread`).  Then, counted as if it had never run, it waits for nothing
        but the upstreams unread, and a success of one of its upstreams ran here: it is
        released, and the readiness check at its begin, which reads them again (and holds
        its slot while it cannot), runs the slot or blocks it again.  Read as none, the
        success that completed the wait was the upstream's first ever (or an unread
        upstream's was never counted), which ran here only by chance: the task stayed
        BLOCKED until its upstream's next success (docs/decisions/store-failures.md, "A dependent's
        readiness check that raises")."""
        wait = self.recount(task, () if history is None else history)
        if wait.waiting - wait.unread:
            return False
        if history is None or wait.unread:
            return any(self._here.get(upstream) for upstream in task.depends_on)
        ended = wait.completed_by
        return ended is not None and any(
            ended in self._here.get(upstream, ()) for upstream in task.depends_on
        )

    def _counted(
        self,
        task: ScheduledTask,
        history: Sequence[ExecutionRecord],
        successes: Callable[[str], list[float] | None],
    ) -> Wait:
        """:func:`wait_of`, from records (after a restart; on a shared store).

        The in-memory sets follow the order in which the core saw events; records
        give the order by their times instead.  ``history`` is the dependent's records,
        ``successes(upstream)`` the finish times of an upstream's successes (None: its
        records unread, counted by this process's successes alone and named in
        :attr:`Wait.unread`).  A retired upstream counts as it ended: SUCCEEDED, for
        good; CANCELLED, waited for unless a success it had counts (then :meth:`dead`
        fails the dependent).
        """
        upstreams = []
        unread = []
        for upstream in task.depends_on:
            found = self._get(upstream)
            if found is None and self._retired.get(upstream) not in _DEAD:
                continue  # retired SUCCEEDED (or purged as it retired): satisfies every slot
            finished = successes(upstream)
            if finished is None:
                unread.append(upstream)
                finished = list(self._here.get(upstream, ()))
            if found is not None:
                known = Successes(
                    finished=finished,
                    for_good=found.status is SUCCEEDED,
                    ever=_has_succeeded(found),
                )
            else:
                known = Successes(finished=finished, for_good=False, ever=False)
            upstreams.append((upstream, known))
        wait = wait_of(since=_latest_start(history), upstreams=upstreams)
        return wait._replace(unread=frozenset(unread)) if unread else wait


class RetiredUpstream(NamedTuple):
    """A retired upstream, as far as an error message needs it."""

    id: str
    status: TaskStatus

    @property
    def name(self) -> str:
        return self.id


Upstream = ScheduledTask | RetiredUpstream
"""An upstream a dependent waits for: registered, or retired."""


def _has_succeeded(task: ScheduledTask | None) -> bool:
    """True when ``task`` has at least one successful run (or SUCCEEDED)."""
    if task is None:
        return False
    return task.status is SUCCEEDED or task.run_count > task.failure_count
