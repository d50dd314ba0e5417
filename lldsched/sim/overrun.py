"""Overrun and overlap policies side by side: one fixed-rate task whose runs outlast its
period, simulated under each policy asked for (what
:func:`lldsched.views.plots.overrun_comparison` draws)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from lldsched import checks
from lldsched.errors import ValidationError, shown
from lldsched.model import ExecutionRecord
from lldsched.policies import Overlap, OverrunPolicy
from lldsched.schedules.simple import FixedRate
from lldsched.sim.scenario import SCENARIO_START
from lldsched.sim.simulation import MAX_WORKERS, Simulation

__all__ = ["ALL_POLICIES", "Policy", "simulate_overrun"]

Policy = OverrunPolicy | Overlap
"""A fixed rate's overrun policy, or a task's overlap policy."""

ALL_POLICIES: tuple[Policy, ...] = (
    OverrunPolicy.SKIP,
    OverrunPolicy.CATCH_UP,
    Overlap.BUFFER_ONE,
    Overlap.CANCEL_OTHER,
    Overlap.ALLOW,
)
"""Every policy, in the order the notebook shows them."""


def simulate_overrun(
    period: float | timedelta = 60.0,
    duration: float | timedelta = 150.0,
    *,
    horizon: float | timedelta | None = None,
    start: float | datetime = SCENARIO_START,
    policies: Iterable[Policy] = (OverrunPolicy.SKIP, OverrunPolicy.CATCH_UP),
    max_instances: int = 2,
) -> dict[Policy, list[ExecutionRecord]]:
    """Simulate one fixed-rate task (every ``period`` seconds, each run ``duration``
    seconds) under each of ``policies`` for ``horizon`` seconds (default ten
    periods); returns each policy's records: its finished runs and the slots it
    dropped (``skipped`` or ``coalesced``: ``record.outcome.ran`` is False), in the
    order the simulation made them.  :func:`lldsched.views.runs.ran` keeps the runs.

    ``SKIP`` and ``CATCH_UP`` run on one worker (the task never overlaps itself);
    an overlap policy gets a worker more than it can use (``ALLOW`` runs up to
    ``max_instances`` at once), so only the policy decides what overlaps.

    Raises :class:`~lldsched.errors.ValidationError` naming a bad ``period`` or
    ``duration`` (seconds > 0, or a timedelta), ``horizon`` (seconds >= 0),
    ``policies`` (members of either, in an iterable) or ``max_instances`` (an int >= 1),
    before anything is simulated.
    """
    period = checks.seconds(period, name="simulate_overrun period", above=0)
    duration = checks.seconds(duration, name="simulate_overrun duration", above=0)
    if horizon is not None:
        horizon = checks.seconds(horizon, name="simulate_overrun horizon", at_least=0)
    checks.whole(max_instances, name="max_instances", at_least=1, at_most=MAX_WORKERS - 1)
    if isinstance(policies, OverrunPolicy | Overlap) or not isinstance(policies, Iterable):
        raise ValidationError(
            "policies must be an iterable of OverrunPolicy or Overlap members, "
            f"got {shown(policies)}"
        )
    policies = list(policies)
    for policy in policies:
        if not isinstance(policy, OverrunPolicy | Overlap):
            raise ValidationError(
                f"policies must be OverrunPolicy or Overlap members, got {shown(policy)}"
            )
    seconds = horizon if horizon is not None else 10 * period
    runs: dict[Policy, list[ExecutionRecord]] = {}
    for policy in policies:
        name = f"every {period:g} s, runs {duration:g} s"
        if isinstance(policy, OverrunPolicy):
            sim = Simulation(workers=1, start=start)
            sim.schedule(name, FixedRate(period, on_overrun=policy), duration=duration)
        else:
            limit = max_instances if policy is Overlap.ALLOW else None
            sim = Simulation(workers=(limit or 1) + 1, start=start)
            sim.schedule(
                name, FixedRate(period), duration=duration, overlap=policy, max_instances=limit
            )
        runs[policy] = sim.run_for(seconds).records()
    return runs
