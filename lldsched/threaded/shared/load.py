"""A shared store's rows that a :class:`~lldsched.threaded.shared.Coordinator` loads as they
are: all of them at start (instead of recovery), the ``running`` rows an unshared process
left owed, and the rows it leaves out (another release's, in a rolling deploy) until a
replacement registered here takes one over (docs/CLUSTER.md, "Rolling deploys").

:class:`SharedLoad` is mixed into the Coordinator, under the scheduler's one lock.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence

from lldsched.coordination import Change, CoordinatedStore
from lldsched.core.follow import follow, load
from lldsched.core.machine import SchedulerCore
from lldsched.core.task import ScheduledTask
from lldsched.errors import ValidationError
from lldsched.logs import CLUSTER
from lldsched.model import TaskStatus
from lldsched.policies import TWO_AT_ONCE

__all__ = ["SharedLoad"]

log = logging.getLogger(CLUSTER)


class SharedLoad:
    """The store's rows loaded and taken over, mixed into the
    :class:`~lldsched.threaded.shared.Coordinator` (which sets what is declared here)."""

    store: CoordinatedStore
    _core: SchedulerCore
    _taken: ScheduledTask | None  # taken over in a taking_over() block

    def load(self) -> None:
        """Register the store's rows as they are (instead of recovery), as a row learnt
        from the feed is (a retry's slot is its task's last run's:
        :func:`~lldsched.core.follow.load`).  A row this process cannot load (another
        release's, in a rolling deploy) is left out, said once, for the processes that
        can (``leave_out``; docs/CLUSTER.md, "Rolling deploys"): refusing the store
        would stop an older process from starting at all."""
        rows = self.store.load_all(leave_out=True)
        with self.store.muted():
            load(
                self._core,
                rows,
                records_of=self.store.records,
                dead_letter=self.store.dead_letter(),
            )
        self._owe([row.task.id for row in rows if row.status is TaskStatus.RUNNING])
        for task in self._core.tasks.values():  # rows written unshared, or by a simulation
            if task.overlap in TWO_AT_ONCE:
                log.warning(
                    "task %s has overlap=%s, which a shared store does not honour (one "
                    "lease per task): its runs never overlap; register it with "
                    "Overlap.BUFFER_ONE or no overlap=",
                    task.id,
                    task.overlap,
                    extra={"task_id": task.id},
                )

    def _owe(self, task_ids: Sequence[str]) -> None:
        """The ``running`` rows just loaded (an unshared process died during their runs,
        and the file is shared now; no shared write makes one): each was registered by the
        restart's rule (:func:`~lldsched.core.recovery.restored_state`, the attempt in
        flight owed), and the row is written so (:meth:`CoordinatedStore.owe
        <lldsched.coordination.CoordinatedStore.owe>`), with an expired lease standing for
        that attempt: a claim, one process's in its epoch, takes it over as owed, and its
        slots passed since meet the policy after it (:meth:`_misfire`), as at a restart.
        Before, no claim took such a row (they take ``scheduled`` and ``retrying``), and
        its task never ran again.  Processes starting together each write it; the first
        write takes, the others find the row decided.  A write that fails is said at
        WARNING: the row stays ``running``, for the next start to decide."""
        for task_id in task_ids:
            task = self._core.tasks.get(task_id)
            if task is None:
                continue
            try:
                owed = self.store.owe(self._core.snapshot(task))
            except Exception:
                log.warning(
                    "could not write the attempt owed of task %s (its row was left running "
                    "by a process that died mid-run); the next start decides it again",
                    task_id,
                    exc_info=True,
                    extra={"task_id": task_id},
                )
                continue
            if owed:
                log.info(
                    "task %s: its row was left running by a process that died mid-run; "
                    "attempt %d is owed and runs again (at-least-once)",
                    task_id,
                    task.attempt + 1,
                    extra={"task_id": task_id, "attempt": task.attempt + 1},
                )

    def left_out(self, task_id: str | None) -> bool:
        """True if ``task_id`` is a task of the store this process left out: it cannot
        load the stored definition (another release's, in a rolling deploy)."""
        return task_id is not None and task_id in self.store.unloaded()

    @contextlib.contextmanager
    def taking_over(self) -> Iterator[None]:
        """Around a registration with ``replace_existing=True`` of a task this process left
        out (:meth:`left_out`), which registers it here for :meth:`took_over` to take the
        row over: the store muted (``take_over`` writes the row) and the core's events
        held (that registration, and the row's state taken, are no transitions made here).
        Once the block is done, the task taken over, if any, ends as any replacement of a
        task the registry did not hold (:meth:`SchedulerCore.replaced_unheld
        <lldsched.core.definition.DefinitionVerbs.replaced_unheld>`: its status kept, a
        finished one included; the listeners hear the replacement, ``previous`` equal to
        its status; a finished one counted by the retention), with the store written and
        the listeners told again.  Under the scheduler's lock, as every registration."""
        core = self._core
        emit = core.emit
        core.emit = None
        self._taken = None
        try:
            with self.store.muted():
                yield
        finally:
            core.emit = emit
        taken, self._taken = self._taken, None
        if taken is not None:
            core.replaced_unheld(taken)

    def took_over(self, task: ScheduledTask) -> None:
        """``task`` was just registered here, inside :meth:`taking_over`, by a registration
        with ``replace_existing=True`` of a task this process left out (:meth:`left_out`):
        its row takes the new definition and keeps its state and history
        (:meth:`CoordinatedStore.take_over
        <lldsched.coordination.CoordinatedStore.take_over>`), and the task takes the row's
        state, as any replacement keeps it.  If that fails, the task is removed here again
        (nothing registered changes, nothing is heard) and the error raised: a
        :class:`~lldsched.errors.ValidationError` when the row was removed meanwhile."""
        core = self._core
        try:
            snapshot = self.store.take_over(task.definition)
            if snapshot is None:
                raise ValidationError(
                    f"task id {task.id!r} was removed from the store by another process "
                    "while this one took it over; register it again"
                )
            follow(core, Change(task.id, 0, snapshot), records_of=self.store.records)
        except BaseException:
            core.remove(task.id)
            raise
        self._taken = task
