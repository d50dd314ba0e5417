"""The simulated runtime: the core state machine on virtual time (see :mod:`.simulation`)."""

from lldsched.sim.models import exponential, fails_on, fixed, lognormal, uniform
from lldsched.sim.simulation import SimStep, Simulation

__all__ = ["SimStep", "Simulation", "exponential", "fails_on", "fixed", "lognormal", "uniform"]
