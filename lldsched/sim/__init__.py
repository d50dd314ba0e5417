"""The simulated runtime: the core state machine on virtual time (see :mod:`.simulation`),
and a simulated cluster of such nodes over one lease table (see :mod:`.cluster`)."""

from lldsched.sim.cluster import simulate_cluster
from lldsched.sim.cluster_scenario import ClusterScenario, ClusterTask, Crash, Pause
from lldsched.sim.models import (
    exponential,
    fails_on,
    fixed,
    lognormal,
    poisson_arrivals,
    uniform,
)
from lldsched.sim.simulation import SimStep, Simulation

__all__ = [
    "ClusterScenario",
    "ClusterTask",
    "Crash",
    "Pause",
    "SimStep",
    "Simulation",
    "exponential",
    "fails_on",
    "fixed",
    "lognormal",
    "poisson_arrivals",
    "simulate_cluster",
    "uniform",
]
