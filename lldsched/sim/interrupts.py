"""Interrupts: what stops a simulation's event loop part way, and a Ctrl-C that tears it.

The event loop (:mod:`~lldsched.sim.eventloop`) lets out what an action, a model or an
intervention raises with its event whole (:attr:`Interrupts.whole`), and raises a
listener's or a store's ``KeyboardInterrupt`` once the event it came in is whole
(``Simulation._heard``).  A :meth:`Simulation.shutdown
<lldsched.sim.simulation.Simulation.shutdown>` made inside the loop is heard the same way
(:data:`SHUT_DOWN_INSIDE`), so the loop stops there without raising anything.  Any other
interrupt out of the loop, or out of the middle of a verb, landed mid-step: the
simulation is torn (:meth:`Interrupts.mark_torn`) and moves no further
(:meth:`Interrupts.refuse_torn`; docs/decisions/simulation.md, "A Ctrl-C that lands mid-step stops
the simulation for good").
"""

from __future__ import annotations

from lldsched.errors import SchedulerStateError, error_text
from lldsched.logs import instant_text

__all__ = ["SHUT_DOWN_INSIDE", "Interrupts", "ShutDownInside"]


class ShutDownInside(BaseException):
    """Never raised: heard (``Simulation._heard``) when :meth:`Simulation.shutdown
    <lldsched.sim.simulation.Simulation.shutdown>` was made inside the event loop (an
    intervention, a listener, an action), so that the loop stops there, as a Ctrl-C stops
    it, without raising anything."""


SHUT_DOWN_INSIDE = ShutDownInside()


class Interrupts:
    """What :meth:`mark_torn` keeps: ``whole``, what the event loop raises with its
    event whole (a model's error, an action's or an intervention's raise: anything else
    out of it landed mid-step); ``torn_at``, the instant a Ctrl-C that landed mid-step
    (or mid-verb) left the simulation at (None: it did not), ``torn_by``, that Ctrl-C as
    a record says an error, and ``torn_in``, the verb it landed in ("": the loop)."""

    __slots__ = ("torn_at", "torn_by", "torn_in", "whole")

    def __init__(self) -> None:
        self.whole: BaseException | None = None
        self.torn_at: float | None = None
        self.torn_by = ""
        self.torn_in = ""

    def mark_torn(self, exc: BaseException, now: float, inside: str = "") -> None:
        """``exc`` came out of the event loop mid-step, at the simulated instant ``now``:
        not from an action, a model or an intervention (each raised with its event
        whole), nor a listener's or a store's Ctrl-C (kept until the event is whole,
        ``Simulation._emit``), but one that landed between two of the loop's steps or
        inside the core's transition, as a real Ctrl-C (SIGINT) can, at any bytecode where
        Python checks for a signal.  What the simulation holds may be half updated then (a
        finish taken off its heap and never recorded, a worker never freed, a due entry
        taken and never started): it moves no further (:meth:`refuse_torn`), rather than
        give records that are silently wrong (docs/decisions/simulation.md, "A Ctrl-C that lands
        mid-step stops the simulation for good").  ``inside``: the verb it landed in the
        middle of instead (``"pause 'task-1'"``), a task resumed and never queued, a row
        never written (``SimulationVerbs._whole``)."""
        if self.torn_at is None:
            self.torn_at = now
            self.torn_by = error_text(exc)
            self.torn_in = inside

    def refuse_torn(self) -> None:
        """``run``, ``run_for``, ``step`` after :meth:`mark_torn`: a
        :class:`~lldsched.errors.SchedulerStateError` naming the instant and what tore it,
        and what to do (build it again: the same seed and scenario replay it)."""
        assert self.torn_at is not None
        where = (
            f"in the middle of its verb {self.torn_in}, not in a listener or a store "
            "call, and may have left it half made (a store's row of the task included)"
            if self.torn_in
            else "between two of its steps, not in an action, model, intervention, listener "
            "or store call, and may have left them half done"
        )
        raise SchedulerStateError(
            f"the simulation cannot move on from {instant_text(self.torn_at)}: an "
            f"interrupt ({self.torn_by}) landed there {where}; read what it holds, then "
            "build it again (the same seed and scenario replay it)"
        )
