"""MisfirePolicy: what a task does with the slots that passed while nothing ran it.

A slot *misfires* when the scheduler was not there to run it: the process was
down (recovery from a durable store), or the wall clock jumped forward past it.
The model is Quartz's: a task whose oldest pending slot is no more than
``grace`` seconds late has not misfired at all (it runs at once, late, and its
schedule carries on as after any late run); beyond ``grace`` the policy decides
for every slot that passed:

* ``RUN_ONCE`` (coalesce): one run, for the latest slot that passed; the
  earlier slots are recorded ``coalesced`` into it;
* ``RUN_ALL`` (catch up, bounded): every slot that passed runs, oldest first,
  at most ``max_catch_up`` of them (the most recent); older ones are recorded
  ``missed``;
* ``SKIP``: nothing runs; every slot that passed is recorded ``missed`` and
  the task waits for its first slot after now.

Every decision is an :class:`~lldsched.model.ExecutionRecord` whose ``outcome``
says ``missed`` or ``coalesced``: nothing is skipped in silence.  The
decisions themselves are taken by :mod:`lldsched.recovery`.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from lldsched.errors import ValidationError

__all__ = ["DEFAULT_MISFIRE", "Misfire", "MisfirePolicy"]


class Misfire(enum.Enum):
    """What happens to the slots of a task that misfired (see the module docstring)."""

    RUN_ONCE = "run_once"
    RUN_ALL = "run_all"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class MisfirePolicy:
    """A task's misfire policy, validated at construction.

    ``grace`` is in seconds (>= 0); ``max_catch_up`` bounds ``RUN_ALL``.
    The defaults (run once, 60 s of grace, at most 100 catch-up runs) are
    written down in ``docs/DECISIONS.md``.
    """

    on_misfire: Misfire = Misfire.RUN_ONCE
    grace: float = 60.0
    max_catch_up: int = 100

    def __post_init__(self) -> None:
        if not isinstance(self.on_misfire, Misfire):
            raise ValidationError(
                f"on_misfire must be Misfire.RUN_ONCE, RUN_ALL or SKIP, got {self.on_misfire!r}"
            )
        grace = self.grace
        if (
            isinstance(grace, bool)
            or not isinstance(grace, int | float)
            or math.isnan(grace)
            or math.isinf(grace)
            or grace < 0
        ):
            raise ValidationError(f"misfire grace must be finite seconds >= 0, got {grace!r}")
        limit = self.max_catch_up
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError(f"max_catch_up must be an int >= 1, got {limit!r}")


DEFAULT_MISFIRE = MisfirePolicy()
"""The policy of a task registered without ``misfire=``."""
