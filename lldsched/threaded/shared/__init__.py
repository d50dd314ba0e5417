"""The timer's side of a store several processes share: :class:`Coordinator`.

The coordinator is one class written in modules: ``coordinator.py`` (its construction,
its tick and its claims), ``leases.py`` (the leases it holds), ``decisions.py`` (a
claimed slot decided without a run) and ``load.py`` (the rows it loads as they are),
mixed in; ``leasewatch.py`` is how long a renewal vouches for the leases.  This package
gives the coordinator where the scheduler has always imported it from:
``from lldsched.threaded.shared import Coordinator``.  It imports nothing of the
threaded runtime but its own modules and :mod:`lldsched.threaded.deadline`
(``tests/test_layering.py``); the scheduler's verbs on a shared store are
:mod:`lldsched.threaded.sharedverbs`, a mixin of the scheduler's, not of the
coordinator's.
"""

from lldsched.threaded.shared.coordinator import Coordinator

__all__ = ["Coordinator"]
