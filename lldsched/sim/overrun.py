"""SKIP against CATCH_UP: one fixed-rate task whose runs outlast its period, simulated
under each overrun policy (what :func:`lldsched.views.plots.overrun_comparison` draws)."""

from __future__ import annotations

from datetime import datetime

from lldsched.errors import ValidationError
from lldsched.model import ExecutionRecord
from lldsched.policies import OverrunPolicy
from lldsched.schedules.simple import FixedRate
from lldsched.sim.scenario import SCENARIO_START
from lldsched.sim.simulation import Simulation

__all__ = ["simulate_overrun"]


def simulate_overrun(
    period: float = 60.0,
    duration: float = 150.0,
    *,
    horizon: float | None = None,
    start: float | datetime = SCENARIO_START,
) -> dict[OverrunPolicy, list[ExecutionRecord]]:
    """Simulate one fixed-rate task (every ``period`` seconds, each run ``duration``
    seconds, one worker) under ``SKIP`` and under ``CATCH_UP`` for ``horizon``
    seconds (default ten periods); returns each policy's finished runs."""
    if not duration > 0 or not period > 0:
        raise ValidationError(
            f"period and duration must be > 0, got period={period!r} duration={duration!r}"
        )
    seconds = horizon if horizon is not None else 10 * period
    runs = {}
    for policy in (OverrunPolicy.SKIP, OverrunPolicy.CATCH_UP):
        sim = Simulation(workers=1, start=start)
        sim.schedule(
            f"every {period:g} s, runs {duration:g} s",
            FixedRate(period, on_overrun=policy),
            duration=duration,
        )
        runs[policy] = [r for r in sim.run_for(seconds).records() if r.outcome.ran]
    return runs
