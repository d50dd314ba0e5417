"""The store seen from the core: its writes, its outages, and which scheduler holds it.

One class written in modules, :class:`~lldsched.core.store.writes.StoreWrites`, over
:class:`~lldsched.core.store.stalerows.StaleRows`, over
:class:`~lldsched.core.store.outage.OutageWrites`, over
:class:`~lldsched.core.store.interrupts.StoreInterrupts`; what an outage holds of one
task's records (:mod:`~lldsched.core.store.outagerecords`); and one running scheduler
per store object (:mod:`~lldsched.core.store.use`).  Of the rest of the core it imports
:mod:`lldsched.core.names` alone (``tests/test_layering.py``); the core's other modules
and the runtimes import it, each module by its own path: the package itself gives
nothing (docs/decisions/public-api.md, "The core's two groups are folders of their
own").
"""
