"""Tally: the records a core made, counted by outcome, since it was built.

What :meth:`Scheduler.metrics() <lldsched.threaded.scheduler.Scheduler.metrics>` and
:meth:`Simulation.metrics() <lldsched.sim.simulation.Simulation.metrics>` report as
``outcomes``: one count per :class:`~lldsched.model.Outcome`, each only ever growing
(a Prometheus counter), whatever later happens to the task (retired, removed,
redriven).  Records a store restored were made by an earlier process: not counted.

The cost is on the run path, so it is kept to one attribute increment a successful
run: :meth:`SchedulerCore.finish <lldsched.core.runs.RunTransitions.finish>` adds
1 to :attr:`Tally.ok` inline, and every other record (a failed run, a slot decided
without a run, a run beside others of its task) goes through :meth:`Tally.add` on
paths that already build a record of their own or log a line.  No thread, no lock:
the runtime serialises calls, as for the rest of the core.
"""

from __future__ import annotations

from lldsched.model import ExecutionRecord, Outcome

__all__ = ["Tally"]

_OK = Outcome.OK


class Tally:
    """Counts of records by outcome (see the module docstring)."""

    __slots__ = ("_others", "ok")

    def __init__(self) -> None:
        self.ok = 0  # successful runs: incremented inline by SchedulerCore.finish
        self._others = dict.fromkeys(Outcome, 0)  # the other outcomes (OK's stays 0)

    def add(self, record: ExecutionRecord) -> None:
        """Count ``record`` under its outcome."""
        outcome = record.outcome
        if outcome is _OK:
            self.ok += 1
        else:
            self._others[outcome] += 1

    def counts(self) -> dict[Outcome, int]:
        """Every outcome's count, in :class:`~lldsched.model.Outcome`'s order (zeros
        included: a dashboard's series exist before the first failure)."""
        counts = dict(self._others)
        counts[_OK] = self.ok
        return counts
