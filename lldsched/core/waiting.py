"""Blocked tasks: the core's part that holds a dependent task BLOCKED and releases it.

The rule (which successes satisfy which slot, what a dead upstream does) is
:mod:`lldsched.core.dependencies`'; :class:`DependencyWaits`, mixed into
:class:`~lldsched.core.machine.SchedulerCore`, carries it out: ``begin`` asks
:meth:`~DependencyWaits._held` before a slot runs, ``finish`` tells it an upstream
moved, and a released task is queued at that instant (nothing polls).  No thread,
no lock: the runtime serialises calls.

On a shared store (docs/CLUSTER.md, "Dependencies") the checks count from the store's
records (:meth:`Dependencies.recount <lldsched.core.dependencies.Dependencies.recount>`),
a wait ends only in the process that ran the success completing it, and a BLOCKED row
another process wrote starts this process's record of the wait at its slot's due
instant (:meth:`DependencyWaits.adopted_wait`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from lldsched.coordination import is_shared
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
from lldsched.persistence import HistoryStore
from lldsched.printable import name_after

__all__ = ["DependencyWaits"]


class DependencyWaits(CoreParts):
    """Mixed into SchedulerCore (see the module docstring)."""

    # -- dependencies (the rule is lldsched.core.dependencies'; these carry it out) ------

    def _dependencies(self) -> Dependencies:
        """The dependency graph, made at the first task that has upstreams."""
        if self._deps is None:
            shared = self._store is not None and is_shared(self._store)
            self._deps = Dependencies(self.tasks, self._counted_records if shared else None)
        return self._deps

    def _counted_records(self, task_id: str) -> Sequence[ExecutionRecord] | None:
        """A shared store's records of ``task_id`` for a count of what a dependent waits
        for (an upstream's, or a redefined dependent's own): :meth:`_read_records`."""
        return self._read_records(task_id, "a dependent's count")

    def _history(self, task: ScheduledTask, token: int | None) -> Sequence[ExecutionRecord] | None:
        """A shared store's records of the dependent ``task`` for the readiness check of
        the slot begun on the claim with ``token`` (:meth:`_read_records`): None when they
        could not be read, and the check decides nothing: the claim is given back as it
        is, for the next wake to read them again.  Read as none, the task had never run,
        and a success of an upstream it used already let it run again
        (docs/decisions/store-failures.md, "A dependent's readiness check that raises").  Without a
        claim to give back (``token`` None: no runtime begins a shared slot so), read as none."""
        history = self._read_records(task.id, "its readiness")
        return () if history is None and token is None else history

    def _read_records(self, task_id: str, deciding: str) -> Sequence[ExecutionRecord] | None:
        """A shared store's records of ``task_id``, read for ``deciding``: the one rule for
        a dependency's read.  None when the read raised anything (not only a
        :class:`~lldsched.errors.StoreError`: a user's store's driver error is the store
        failing too, docs/decisions/store-failures.md, "A coordinated store's call that raises
        anything"), counted into the outage as a failed claim (a claim's read, as a
        misfire's is, ended by the next claim that succeeds); what it was for is then
        not decided on them (:attr:`Wait.unread <lldsched.core.dependencies.Wait.unread>`)."""
        store = cast(HistoryStore, self._store)  # a shared store is a CoordinatedStore
        try:
            return store.records(task_id)
        except Exception as exc:
            writes = self._writes
            assert writes is not None  # a core with a store has one
            writes.call_failed(exc, "claim", f"read of the records of {task_id} for {deciding}")
            return None

    def _completed_here(self, task: ScheduledTask) -> bool:
        """Shared: the wait of the BLOCKED ``task`` ends here (:meth:`Dependencies.
        completed_here <lldsched.core.dependencies.Dependencies.completed_here>`, from its
        records, or None when they could not be read)."""
        history = self._read_records(task.id, "the end of its wait")
        return self._dependencies().completed_here(task, history)

    def _held(self, task: ScheduledTask, token: int | None = None) -> bool:
        """The readiness check of a SCHEDULED dependent whose entry is due: True when it
        must not start (it is BLOCKED now, or FAILED because an upstream it waits for
        is dead); False when its slot starts, and its next slot waits afresh.  A slot
        begun on a shared store's claim (``token``) that must not start is the claim's to
        write (:meth:`_write_wait`)."""
        deps = self._dependencies()
        if deps.shared:
            history = self._history(task, token)
            unread = history is None or bool(deps.recount(task, history).unread)
            # A read that failed decides nothing: the claim is given back, read next wake
            # (without one, token None, what was read counts: an unread upstream waits).
            if unread and token is not None:
                self._queue.discard(task)  # its entry, already popped, must not run
                return True
        if not deps.unmet(task):
            deps.started(task)
            return False
        self._queue.discard(task)  # its entry, already popped, must not run
        # The clock is read before the task changes (by _end_wait when it fails): a
        # reading that raises leaves it SCHEDULED with its entry gone, which the broken
        # begin fails (RunTransitions.broke), not BLOCKED on a dead upstream with nothing
        # written (docs/decisions/store-failures.md, "A dependent's readiness check that raises").
        dead = deps.dead(task)
        if dead is not None:
            deps.blocked_at.pop(task.id, None)  # its wait, zero long, ends at this slot
            self._fail_waiting(task, dead, previous=SCHEDULED, token=token)
        else:
            deps.blocked_at[task.id] = self.clock.now()
            task.status = BLOCKED
            self._write_wait(task, SCHEDULED, None, token)
        return True

    def _write_wait(
        self,
        task: ScheduledTask,
        previous: TaskStatus,
        record: ExecutionRecord | None,
        token: int | None,
    ) -> None:
        """Write and publish a wait's transition.  Of a slot begun on a shared store's
        claim (``token``), only published: the claim's holder writes the row (and
        ``record``) with its lease's drop, in one transaction fenced by the token
        (:meth:`claim_held`).  A process that died between a save here and the release
        left a BLOCKED row leased, its next release held back until the lease expired."""
        if token is None:
            self._write_and_publish(task, previous, record)
            return
        self._claims_held[token] = [] if record is None else [record]
        self._publish(task, previous, record)

    def claim_held(self, token: int) -> list[ExecutionRecord] | None:
        """The records to write with the row of the slot the claim with ``token`` began
        and the readiness check held (none when it is BLOCKED; its wait's record when it
        is FAILED), which the core did not write (:meth:`_write_wait`), or that a run
        whose begin or record raised failed (none: :meth:`~lldsched.core.runs.
        RunTransitions.broke`); None when that claim held nothing.  Each is given once.
        Once the runtime wrote them, it calls :meth:`~lldsched.core.runs.RunTransitions.
        claim_written`, which tells the dependents of a task they leave FAILED."""
        return self._claims_held.pop(token, None)

    def _upstream_moved(self, task: ScheduledTask, record: ExecutionRecord) -> None:
        """``task`` finished a run: a success releases the dependents that waited only for
        it; if it is FAILED now, the dependents waiting for it fail."""
        deps = self._dependencies()
        if record.ok and deps.shared:
            deps.succeeded_here(task.id, record.finished)
            for dependent in deps.dependents(task.id):
                if dependent.status is BLOCKED and self._completed_here(dependent):
                    self._release(dependent)
        elif record.ok:
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
        deps = self._dependencies()
        if deps.shared:
            deps.died_here(upstream.id)
        for dependent in deps.stranded(upstream.id):
            if dependent.status is BLOCKED:  # else failed already, by an earlier one's strand
                self._fail_waiting(dependent, upstream, previous=BLOCKED)

    def _fail_waiting(
        self,
        task: ScheduledTask,
        upstream: Upstream,
        *,
        previous: TaskStatus,
        token: int | None = None,
    ) -> None:
        """A BLOCKED ``task`` waits for ``upstream``, which will not succeed on its own:
        FAILED, in the dead letter, its wait recorded with the reason, and its own BLOCKED
        dependents fail through :meth:`_strand`.  With ``token`` (the claim of the slot
        held, :meth:`_write_wait`) they are told only once that claim's write is made
        (:meth:`~lldsched.core.runs.RunTransitions.claim_written`), not here: a lease
        lost before it leaves the slot to the process that took it over, and nothing
        was failed here (docs/decisions/logging.md, "A run whose begin or record raises is
        settled")."""
        advice = (  # a cancelled task has no verb that brings it back: redrive refuses it
            "redrive it, then this task"
            if upstream.status is FAILED
            else "it will not run again: register this task again without it "
            "(replace_existing=True)"
        )
        error = (
            f"UpstreamFailed: upstream {upstream.id}{name_after(upstream.id, upstream.name)} is "
            f"{upstream.status.value}; {advice}"
        )
        waited = self._end_wait(task, error)
        self._stats(task).last_error = error
        task.status = FAILED
        task.next_run_at = None
        self._dead[task.id] = None
        self._write_wait(task, previous, waited, token)
        if token is None:  # else told once the claim's write is made (claim_written)
            self._strand(task)

    def _end_wait(self, task: ScheduledTask, error: str | None) -> ExecutionRecord:
        """The record of ``task``'s blocked wait, which ends now, for the slot found
        blocked (:meth:`_wait_moved`): kept in its history and given to ``on_record``;
        the caller publishes it with the transition."""
        now = self.clock.now()
        deps = self._dependencies()
        since = deps.blocked_at.pop(task.id, now)
        moved = deps.blocked_slot.pop(task.id, None)  # a reschedule moved its next slot
        due, slot = (task.next_run_at, task._slot) if moved is None else moved
        record = ExecutionRecord.of(
            task_id=task.id,
            name=task.name,
            attempt=0,
            due=since if due is None else due,
            slot=slot,
            worker=-1,
            started=since,
            finished=now,
            ok=False,
            error=error,
            misfire=WAITED,
        )
        self._keep(task, record)
        return record

    def _would_wait(self, task: ScheduledTask) -> bool:
        """True when a slot of the SCHEDULED dependent ``task`` beginning now would wait
        for an upstream (or fail on a dead one): ``run_now`` then adds no run.  On a shared
        store counted again from the records, as the readiness check counts them; records
        that cannot be read decide nothing here (False): the check at the extra run's
        begin reads them again."""
        deps = self._dependencies()
        if deps.shared:
            history = self._read_records(task.id, "a run_now")
            if history is None or deps.recount(task, history).unread:
                return False
        return bool(deps.unmet(task))

    def _wait_moved(self, task: ScheduledTask) -> None:
        """A reschedule is about to move the next slot of the BLOCKED ``task``, which stays
        BLOCKED: its wait goes on, and its record names the slot found blocked (its due
        instant and slot, kept here until the wait ends), not the new schedule's first
        run, which is after the wait began (docs/decisions/dependencies.md, "A wait's
        record names the slot found blocked")."""
        due = task.next_run_at
        if due is not None:
            self._dependencies().blocked_slot.setdefault(task.id, (due, task._slot))

    def _relink(self, task: ScheduledTask, before: tuple[str, ...]) -> None:
        """``task`` was given other upstreams (``before``: those it named): its next slot
        waits for what they say since its latest slot started
        (:meth:`Dependencies.relink <lldsched.core.dependencies.Dependencies.relink>`);
        a BLOCKED task that now waits for nothing is released."""
        deps = self._dependencies()
        blocked_since = deps.blocked_at.get(task.id)  # both calls below forget it
        blocked_slot = deps.blocked_slot.get(task.id)
        if task.depends_on:
            deps.relink(task, before)
        else:
            deps.unlink(task.id)
        if blocked_since is not None:  # the wait goes on, or ends now: from when it began
            deps.blocked_at[task.id] = blocked_since
        if blocked_slot is not None:  # and for the slot found blocked
            deps.blocked_slot[task.id] = blocked_slot
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

    # -- a shared store: rows other processes wrote ------------------------------------

    def adopted_wait(
        self,
        task: ScheduledTask,
        previous: TaskStatus | None,
        blocked: tuple[float, float] | None = None,
    ) -> None:
        """``task`` took a row another process wrote (``previous``: its status here
        before; None: just registered).  An upstream not dead in it is not dead because
        of this process any more.  A BLOCKED row starts this process's record of
        the wait at the blocked slot's due instant (no later than now), unless it goes on
        with a wait already counted here; any other row ends what this process knew of
        a wait (another process ended it, and recorded it).  ``blocked``: the due instant
        and slot the row's wait was found blocked at, when a reschedule moved its next
        slot (:func:`~lldsched.core.recovery.blocked_of`): that is the slot blocked, and
        its record names it (docs/decisions/dependencies.md, "A wait's record names the
        slot found blocked")."""
        deps = self._dependencies()
        if task.status is not FAILED and task.status is not TaskStatus.CANCELLED:
            deps.revived(task.id)
        if not task.depends_on:
            return
        if task.status is not BLOCKED:
            deps.blocked_at.pop(task.id, None)
            deps.blocked_slot.pop(task.id, None)
            return
        if blocked is None:
            deps.blocked_slot.pop(task.id, None)
        else:
            deps.blocked_slot[task.id] = blocked
        now = self.clock.now()
        due = task.next_run_at if blocked is None else blocked[0]
        began = now if due is None else min(due, now)
        known = deps.blocked_at.get(task.id)
        if previous is not BLOCKED or known is None or known < began:
            deps.blocked_at[task.id] = began

    def decides_waits(self, task: ScheduledTask) -> bool:
        """Shared: True when tasks depend on ``task`` here, so that its run's end may have
        decided a wait whose BLOCKED row this process has not read yet: the runtime reads
        the change feed at once, not at its next wake (up to ``poll`` later), and ends
        the wait then (:meth:`wait_followed`)."""
        deps = self._deps
        return deps is not None and deps.shared and deps.named(task.id)

    def wait_followed(self, task: ScheduledTask) -> bool:
        """A BLOCKED row another process wrote, taken here: its wait ends here (written
        from here) if this process ran what decided it after it had last seen the task:
        the success that completed it (released), or the end of an upstream it waits for
        (FAILED); the one process to end that wait (see
        :meth:`Dependencies.completed_here
        <lldsched.core.dependencies.Dependencies.completed_here>`).  True if it ended."""
        deps = self._dependencies()
        if task.status is not BLOCKED or not deps.shared:
            return False
        if self._completed_here(task):  # (it counts again: dead_here reads that count)
            self._release(task)
        elif (dead := deps.dead_here(task)) is not None:
            self._fail_waiting(task, dead, previous=BLOCKED)
        else:
            return False
        return True
