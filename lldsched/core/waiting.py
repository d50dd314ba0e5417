"""Blocked tasks: the core's part that holds a dependent task BLOCKED and releases it.

The rule (which successes satisfy which slot, what a dead upstream does) is
:mod:`lldsched.core.dependencies`'; :class:`DependencyWaits`, mixed into
:class:`~lldsched.core.machine.SchedulerCore`, carries it out: ``begin`` asks
:meth:`~DependencyWaits._held` before a slot runs, ``finish`` tells it an upstream
moved, and a released task is queued at that instant (nothing polls).  No thread,
no lock: the runtime serialises calls.
"""

from __future__ import annotations

from lldsched.core.dependencies import Dependencies, Upstream
from lldsched.core.names import (
    BLOCKED,
    FAILED,
    SCHEDULED,
    WAITED,
)
from lldsched.core.parts import CoreParts
from lldsched.core.task import ScheduledTask
from lldsched.model import ExecutionRecord, TaskStatus

__all__ = ["DependencyWaits"]


class DependencyWaits(CoreParts):
    """Mixed into SchedulerCore (see the module docstring)."""

    # -- dependencies (the rule is lldsched.core.dependencies'; these carry it out) ------

    def _dependencies(self) -> Dependencies:
        """The dependency graph, made at the first task that has upstreams."""
        if self._deps is None:
            self._deps = Dependencies(self.tasks)
        return self._deps

    def _held(self, task: ScheduledTask) -> bool:
        """The readiness check of a SCHEDULED dependent whose entry is due: True when it
        must not start (it is BLOCKED now, or FAILED because an upstream it waits for
        is dead); False when its slot starts, and its next slot waits afresh."""
        deps = self._dependencies()
        if not deps.unmet(task):
            deps.started(task)
            return False
        self._queue.discard(task)  # its entry, already popped, must not run
        now = self.clock.now()
        task.status = BLOCKED
        deps.blocked_at[task.id] = now
        dead = deps.dead(task)
        if dead is not None:
            self._fail_waiting(task, dead, previous=SCHEDULED)
        else:
            self._write_and_publish(task, SCHEDULED)
        return True

    def _upstream_moved(self, task: ScheduledTask, record: ExecutionRecord) -> None:
        """``task`` finished a run: a success releases the dependents that waited only for
        it; if it is FAILED now, the dependents waiting for it fail."""
        deps = self._dependencies()
        if record.ok:
            for dependent in deps.succeeded(task.id):
                self._release(dependent)
        if task.status is FAILED:
            self._strand(task)

    def _release(self, task: ScheduledTask) -> None:
        """BLOCKED -> SCHEDULED: queued now (or at its due, if rescheduled later)."""
        now = self.clock.now()
        waited = self._end_wait(task, None)
        due = task.next_run_at
        task.status = SCHEDULED
        self._enqueue(task, now if due is None or due < now else due)
        self._write_and_publish(task, BLOCKED, waited)

    def _strand(self, upstream: ScheduledTask) -> None:
        """``upstream`` is FAILED or CANCELLED: fail the BLOCKED dependents waiting for it
        (and, through this same call, theirs)."""
        for dependent in self._dependencies().stranded(upstream.id):
            if dependent.status is BLOCKED:  # else failed already, by an earlier one's strand
                self._fail_waiting(dependent, upstream, previous=BLOCKED)

    def _fail_waiting(
        self, task: ScheduledTask, upstream: Upstream, *, previous: TaskStatus
    ) -> None:
        """A BLOCKED ``task`` waits for ``upstream``, which will not succeed on its own:
        FAILED, in the dead letter, its wait recorded with the reason."""
        error = (
            f"UpstreamFailed: upstream {upstream.id} ({upstream.name!r}) is "
            f"{upstream.status.value}; redrive it, then this task"
        )
        waited = self._end_wait(task, error)
        self._stats(task).last_error = error
        task.status = FAILED
        task.next_run_at = None
        self._dead[task.id] = None
        self._write_and_publish(task, previous, waited)
        self._strand(task)

    def _end_wait(self, task: ScheduledTask, error: str | None) -> ExecutionRecord:
        """The record of ``task``'s blocked wait, which ends now: kept in its history
        and given to ``on_record``; the caller publishes it with the transition."""
        now = self.clock.now()
        since = self._dependencies().blocked_at.pop(task.id, now)
        due = task.next_run_at
        record = ExecutionRecord.of(
            task_id=task.id,
            name=task.name,
            attempt=0,
            due=since if due is None else due,
            slot=task._slot,
            worker=-1,
            started=since,
            finished=now,
            ok=False,
            error=error,
            misfire=WAITED,
        )
        self._keep(task, record)
        return record

    def _relink(self, task: ScheduledTask) -> None:
        """``task`` was given other upstreams: wait for what they say, as a new task
        would; a BLOCKED task that now waits for nothing is released."""
        deps = self._dependencies()
        blocked_since = deps.blocked_at.get(task.id)  # both calls below forget it
        if task.depends_on:
            deps.link(task)
        else:
            deps.unlink(task.id)
        if blocked_since is not None:  # the wait goes on, or ends now: from when it began
            deps.blocked_at[task.id] = blocked_since
        if task.status is BLOCKED:
            self.release_if_ready(task)

    def release_if_ready(self, task: ScheduledTask) -> bool:
        """Release a BLOCKED ``task`` that waits for nothing any more (after recovery, or
        a new definition); fail it if an upstream it waits for is dead.  True if it
        left BLOCKED."""
        if task.status is not BLOCKED:
            return False
        deps = self._dependencies()
        deps.blocked_at.setdefault(task.id, self.clock.now())
        dead = deps.dead(task)
        if dead is not None:
            self._fail_waiting(task, dead, previous=BLOCKED)
        elif not deps.unmet(task):
            self._release(task)
        else:
            return False
        return True
