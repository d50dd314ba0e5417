"""The shared state of a simulated cluster: the lease table, the task rows, and a sink.

What the shared store of docs/CLUSTER.md holds, as plain objects (one process
simulates every node, so no lock and no database):

* :class:`LeaseTable`: at most one lease per task, ``(slot, token, holder,
  expires_at)``, and the one counter tokens come from (it only ever increases).
  ``now`` is the *caller's* clock, as with SQLite, where each process passes its
  own time: a node whose clock is ahead sees a lease expire early.
* :class:`TaskRow`: the task's shared next slot, written by a settle, and the origin
  of the grid every node counts the slots from; a node that finds its own copy behind
  adopts it.
* :class:`Sink`: where actions write.  Fenced, it refuses a write carrying a token
  older than the newest it has seen for the task (the idempotent sink of the
  notebook); unfenced, every write lands.

Fencing also decides the settle: fenced, it is conditional on the token (a run
whose lease was taken over settles nothing); unfenced, the last writer wins.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Lease", "LeaseTable", "Sink", "TaskRow"]


@dataclass(slots=True)
class Lease:
    """A claim on one slot of one task, until ``expires_at`` (the claimer's clock)."""

    slot: float
    token: int
    holder: str
    expires_at: float


@dataclass(slots=True)
class TaskRow:
    """A task's shared state: the slot due next and its due instant (on the schedule's grid),
    and ``grid``, that grid's origin (its first slot), which every node counts the slots
    from, as the processes of a shared store count from the row's ``tasks.grid``: the
    ``k``-th slot is ``FixedRate.slot_at(grid, k)``, the same float on every node."""

    slot: float
    due: float
    grid: float


class LeaseTable:
    """Leases by task id, and the token counter."""

    def __init__(self, *, fencing: bool) -> None:
        self.fencing = fencing
        self.leases: dict[str, Lease] = {}
        self.rows: dict[str, TaskRow] = {}
        self._token = 0  # the last token handed out

    def holder_of(self, task_id: str, *, now: float) -> Lease | None:
        """The live lease on ``task_id`` at ``now`` (the asker's clock), or None."""
        lease = self.leases.get(task_id)
        return lease if lease is not None and lease.expires_at > now else None

    def claim(
        self, task_id: str, *, slot: float, holder: str, now: float, lease: float
    ) -> tuple[Lease, bool]:
        """Take ``slot`` of ``task_id`` for ``holder`` with a new token; returns the lease
        and whether it replaced one (a takeover).  The caller checked it was free."""
        self._token += 1
        replaced = task_id in self.leases
        taken = self.leases[task_id] = Lease(slot, self._token, holder, now + lease)
        return taken, replaced

    def renew(self, task_id: str, *, token: int, now: float, lease: float) -> bool:
        """Extend the lease ``token`` holds; False if it is no longer that token's."""
        held = self.leases.get(task_id)
        if held is None or held.token != token:
            return False
        held.expires_at = now + lease
        return True

    def settle(self, task_id: str, *, token: int, row: TaskRow) -> bool:
        """Release the lease and write the task's next slot.  Fenced: only if the lease
        is still ``token``'s (False otherwise, nothing written).  Unfenced: always."""
        held = self.leases.get(task_id)
        if self.fencing and (held is None or held.token != token):
            return False
        self.leases.pop(task_id, None)
        self.rows[task_id] = row
        return True


class Sink:
    """The actions' output: the writes it took per (task id, slot)."""

    def __init__(self, *, fencing: bool) -> None:
        self.fencing = fencing
        self._newest: dict[str, int] = {}  # the newest token seen, per task

    def write(self, task_id: str, *, token: int) -> bool:
        """Take a write carrying ``token``; False if refused (fenced, and older than the
        newest token seen for the task)."""
        newest = self._newest.get(task_id, 0)
        if self.fencing and token < newest:
            return False
        self._newest[task_id] = max(newest, token)
        return True
