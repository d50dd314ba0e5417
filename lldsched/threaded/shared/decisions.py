"""What a :class:`~lldsched.threaded.shared.Coordinator` decides for a slot it claimed
without running it, written with the lease's drop, fenced by the claim's token.

:class:`ClaimDecisions` is mixed into the Coordinator, under the scheduler's one lock:

* a claim whose first slot to decide (the slot claimed; for an owed attempt, a retry or
  a takeover, the slot after the one it runs:
  :func:`~lldsched.core.misfires.apply.first_decided`) was due before this process was there
  (before it was built or started, or jumped over by the wall clock: ``_since``) and is
  late beyond its grace meets its misfire policy here, in the one process that holds
  the claim (:meth:`ClaimDecisions._misfire`), as at a restart;
* a claim the readiness check held (BLOCKED, or FAILED: an upstream it waits for is
  dead), or of a run whose begin or record raised and failed its task, is given back
  with the task's row and records (:meth:`ClaimDecisions._give_back_held`);
* either is written in one transaction fenced by the claim's token, the lease dropped
  with it (:meth:`ClaimDecisions._write_decided`); a lease found lost meanwhile is said
  at the next tick (:class:`~lldsched.threaded.shared.leases.Lost`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lldsched.coordination import Claim, CoordinatedStore
from lldsched.core.duequeue import queued_entry
from lldsched.core.machine import SchedulerCore
from lldsched.core.misfires.apply import decide_misfire, first_decided
from lldsched.core.names import RUNNABLE
from lldsched.core.store.outage import Kind
from lldsched.core.task import Entry
from lldsched.errors import LeaseLost
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot
from lldsched.threaded.shared.leases import Lost

__all__ = ["ClaimDecisions"]


class ClaimDecisions:
    """A claimed slot decided without a run, mixed into the
    :class:`~lldsched.threaded.shared.Coordinator` (which sets what is declared here)."""

    store: CoordinatedStore
    _core: SchedulerCore
    _since: float  # slots due before it passed while this process was not there
    _lost_deciding: list[Lost]  # leases found lost by such a write: said at the next tick

    if TYPE_CHECKING:

        def _failed(self, error: Exception, kind: Kind, doing: str | None = None) -> None: ...

        def _succeeded(self, kind: Kind) -> None: ...

        def _release(self, task_id: str, token: int) -> None: ...

    def _unseen(self, task_id: str, owed: bool) -> bool:
        """Whether the claimed task's slots met downtime: the first slot a misfire decision
        of it covers (:func:`~lldsched.core.misfires.apply.first_decided`, the one rule a
        restart decides from) passed before this process was there to claim it."""
        first = first_decided(self._core.tasks[task_id], owed=owed)
        return first is not None and first < self._since

    def _misfire(self, claim: Claim, entry: Entry, now: float, *, owed: bool) -> Entry | None:
        """The claimed slot, due before this process was there to claim it, meets its
        task's misfire policy, here and only here: the claim is this process's alone in
        its epoch.  Late beyond grace (by ``now``, the clock the claim itself used),
        :func:`~lldsched.core.misfires.apply.decide_misfire` decides, as at start in one
        process (``owed``: a claim that took over an expired lease, or a retry, is an
        owed attempt, as one in flight at a crash or a RETRYING row is to recovery: it
        runs, and the policy decides the slots after it), and :meth:`_write_decided`
        writes its records and the due instant it chose, fenced by the claim's token.
        Returns the entry to run (the owed attempt or the catch-up run, under the same
        claim), or None: nothing runs (every slot skipped, the lease dropped) or nothing
        was written (the lease was lost, or the store failed).  A read of the
        task's records (for a plan cut at the cap) that fails decides nothing: the claim
        is given back, and the slot claimed again at the next wake."""
        core = self._core
        task = core.tasks[claim.task_id]
        try:
            with self.store.muted():  # written below, in one fenced transaction
                records = decide_misfire(
                    core,
                    task,
                    now,
                    owed=owed,
                    token=claim.token,
                    history=lambda: self._history(claim.task_id),  # a plan cut at the cap
                )
        except _Unread:  # nothing changed yet (decide_misfire reads before it decides)
            self._release(claim.task_id, claim.token)
            return None
        if records is None:  # within grace: runs as claimed
            return entry
        due = task.next_run_at  # a passed slot: a catch-up run; later: every slot skipped
        runs = task.status in RUNNABLE and due is not None and due <= now  # a retry too
        if records or due != claim.slot:  # else RUN_ALL's next catch-up: nothing new
            snapshot = core.snapshot(task)
            try:
                written = self._write_decided(
                    claim.task_id,
                    claim.token,
                    snapshot,
                    records,
                    release=not runs,
                    doing="deciding its misfire",
                )
            except Exception as exc:  # nothing written: the lease expires, someone decides again
                self._failed(exc, "misfire", f"write of the misfire decided for {task.id}")
                return None
            if not written:  # a lease lost: nothing written, which ends no outage
                return None
            self._succeeded("misfire")
        if not runs or due is None:
            return None
        return queued_entry(task, due)

    def _history(self, task_id: str) -> Sequence[ExecutionRecord]:
        """The store's records of ``task_id``, for a misfire's decision; :class:`_Unread`
        if the read raised anything (a failed call, counted into the outage: docs/
        decisions/store-failures.md, "A coordinated store's call that raises anything").  Before, it
        raised out of the claim into the timer, which died: nothing dispatched again."""
        try:
            return self.store.records(task_id)
        except Exception as exc:
            self._failed(exc, "claim", f"read of the records of {task_id} for its misfire")
            raise _Unread from exc

    def _give_back_held(
        self,
        task_id: str,
        token: int,
        records: list[ExecutionRecord],
        *,
        doing: str = "holding its slot for its upstreams",
    ) -> None:
        """Give back the claim (``token``) of a slot the readiness check held (BLOCKED, or
        FAILED: an upstream it waits for is dead), or of a run whose begin or record
        raised and failed its task (:meth:`broke`), with the task's row and ``records``
        (a wait's), in one transaction (:meth:`_write_decided`): before, the row was saved, then the
        lease released, and a process that died between the two left a BLOCKED row its
        lease held, the task's next release waiting for the lease to expire.

        A store that fails it wrote neither: the lease is released on its own, and the
        row is the core's write that failed, written again once the store takes calls
        and no lease holds it (:meth:`StoreWrites.failed
        <lldsched.core.store.writes.StoreWrites.failed>`), as the save's was.  Without the
        release, the lease left to expire came back to this process, whose registry has
        the task BLOCKED: it gave back each claim of the row (one a wake), and the row
        said SCHEDULED, until a success here released the task.

        Once written, or left to be written again (still this process's decision), a
        task the row leaves FAILED fails its BLOCKED dependents (:meth:`SchedulerCore.
        claim_written <lldsched.core.runs.RunTransitions.claim_written>`), whichever
        decided it (the readiness check, or :meth:`broke`); not when the lease was lost
        (nothing written: another process holds the slot, whose run or check decides for
        them).  Before, a readiness check's failure told them at once, before this write:
        a lease lost meanwhile left them FAILED, their rows too, for a failure never
        written (docs/decisions/logging.md, "A run whose begin or record raises is settled")."""
        core = self._core
        snapshot = core.snapshot(core.tasks[task_id])
        writes = core.store_writes
        assert writes is not None  # a core with a store has one
        try:
            written = self._write_decided(
                task_id, token, snapshot, records, release=True, doing=doing
            )
        except Exception as exc:
            writes.failed(exc, "save", task_id, snapshot, records=records)
            self._release(task_id, token)
            written = True
        else:
            if written and writes.outage is not None:  # its row stale no more, as a save's
                writes.succeeded("save", task_id)
        if written:
            core.claim_written(task_id)

    def _write_decided(
        self,
        task_id: str,
        token: int,
        snapshot: TaskSnapshot,
        records: list[ExecutionRecord],
        *,
        release: bool,
        doing: str,
    ) -> bool:
        """Write what this process decided for the slot of task ``task_id``'s claim with
        ``token`` without running it (``doing``: ``"deciding its misfire"``, holding the
        slot for a dependency wait, or failing the task after its begin or record
        raised): the task's row ``snapshot`` and ``records``, the lease dropped with
        ``release``, in one transaction fenced by the claim's token
        (:meth:`CoordinatedStore.misfired
        <lldsched.coordination.CoordinatedStore.misfired>`).  False when the lease was
        lost (nothing written; said at the next :meth:`tick`, after the feed, by
        :meth:`_say_lost`: a removal elsewhere is known only then).  A store's failure
        is raised: what then is the caller's (:meth:`_misfire`, :meth:`_give_back_held`)."""
        try:
            self.store.misfired(snapshot, records, token=token, release=release)
        except LeaseLost:  # said at the next tick, after the feed (a removal, or not)
            self._lost_deciding.append(Lost(task_id, token, doing=doing))
            return False
        return True


class _Unread(Exception):
    """A read of the store that failed (counted already): what it was for is not decided."""
