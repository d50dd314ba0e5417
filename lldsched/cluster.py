"""What a simulated cluster reports: every claimed run, every pause and outage, and counts.

The vocabulary between :mod:`lldsched.sim.cluster` (which produces a
:class:`ClusterResult`) and the views that tabulate and draw one
(:func:`lldsched.views.cluster.cluster_frame`,
:func:`lldsched.views.plots.cluster_timeline`): views read these value objects and
never import a runtime.  Standard library only.

Times are true instants (seconds since the epoch on the simulation's one clock),
whatever a node's own clock said: a skewed node's claims show where they really
happened.

The counts, per slot (a task's due instant, the unit a lease claims):

* **executions**: how many times the slot's action started (a takeover after a
  pause or a crash starts it again: execution is at-least-once);
* **landed**: how many of its writes the sink accepted.  Two landed writes are a
  **duplicate**: the effect happened twice.  With fencing the sink refuses a write
  whose token is older than the newest it has seen for the task (**rejected**);
* **lost**: a slot due by the horizon that no write landed for (should be 0).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

__all__ = ["ClusterResult", "ClusterRun", "NodeSpan", "Write"]

Write = Literal["landed", "rejected", "none"]
"""What became of a run's write: the sink took it, refused it (an older token than
one it had seen), or there was none (its node crashed before the run finished)."""


@dataclass(frozen=True, slots=True)
class ClusterRun:
    """One execution of one slot on one node, from its claim to its write and settle."""

    node: str
    """The node that ran it (``"node-0"``, ...)."""
    task_id: str
    slot: float
    """The slot (the due instant, on the schedule's own grid) this run is for."""
    token: int
    """The fencing token of its claim: larger than every token handed out before."""
    claimed: float
    """When the node claimed the slot (a true instant)."""
    finished: float | None
    """When its action finished and it wrote (later than planned if its node was
    paused when it would have finished); None if its node crashed first."""
    write: Write
    settled: bool
    """True if its settle (the conditional delete of its lease and the task row's
    update) went through; with fencing, False when the lease had been taken over."""
    takeover: bool
    """True if the claim took the slot over from a lease that had expired."""
    lease_until: float
    """When its lease ended (a true instant): its finish, or the expiry its last
    claim or renewal set if that came first (its node stopped renewing)."""


@dataclass(frozen=True, slots=True)
class NodeSpan:
    """A stretch of time a node was not working: ``kind`` is ``"pause"`` (stopped the
    world: no renewals, no claims, its runs frozen) or ``"down"`` (crashed; ``end``
    is its restart, or the end of the simulation if it stayed down)."""

    node: str
    kind: Literal["pause", "down"]
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class ClusterResult:
    """One simulated cluster's runs, spans and settings, and the counts derived from them."""

    nodes: tuple[str, ...]
    fencing: bool
    lease: float
    renewal: float
    skews: tuple[float, ...]
    """Each node's clock offset, in seconds (positive: ahead of true time)."""
    start: float
    horizon: float
    """Slots due at or before this instant are expected to run (later ones are not claimed)."""
    runs: tuple[ClusterRun, ...]
    spans: tuple[NodeSpan, ...]
    expected: tuple[tuple[str, float], ...]
    """Every (task id, slot) due by the horizon."""

    def executions(self) -> Counter[tuple[str, float]]:
        """How many times each (task id, slot) started."""
        return Counter((run.task_id, run.slot) for run in self.runs)

    def landed(self) -> Counter[tuple[str, float]]:
        """How many writes the sink accepted for each (task id, slot)."""
        return Counter((run.task_id, run.slot) for run in self.runs if run.write == "landed")

    @property
    def duplicates(self) -> int:
        """Slots whose write landed more than once."""
        return sum(1 for count in self.landed().values() if count > 1)

    @property
    def rerun(self) -> int:
        """Slots that started more than once (at-least-once: with or without fencing)."""
        return sum(1 for count in self.executions().values() if count > 1)

    @property
    def rejected(self) -> int:
        """Writes the sink refused (a stale token); 0 without fencing."""
        return sum(1 for run in self.runs if run.write == "rejected")

    @property
    def takeovers(self) -> int:
        """Claims that took a slot over from an expired lease."""
        return sum(1 for run in self.runs if run.takeover)

    @property
    def lost(self) -> tuple[tuple[str, float], ...]:
        """Slots due by the horizon that no write landed for."""
        landed = self.landed()
        return tuple(key for key in self.expected if not landed[key])

    def summary(self) -> dict[str, int | bool]:
        """The counts in one small mapping (what a notebook prints)."""
        return {
            "fencing": self.fencing,
            "slots": len(self.expected),
            "executions": len(self.runs),
            "rerun": self.rerun,
            "takeovers": self.takeovers,
            "rejected": self.rejected,
            "duplicates": self.duplicates,
            "lost": len(self.lost),
        }
