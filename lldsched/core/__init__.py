"""The core: the one state machine both runtimes drive.

No threads, no sleeps, no lock of its own: plain single-threaded bookkeeping that
reads time from an injected clock.  The threaded runtime (:mod:`lldsched.threaded`)
holds its one lock around every call in here; the simulation (:mod:`lldsched.sim`)
takes none.  The one lock in the core is :mod:`~lldsched.core.store.use`'s,
process-wide, over which running scheduler holds which store: taken at a scheduler's
``start()`` and ``shutdown()`` and, while some scheduler holds a store, by a verb's
check of it; never on the run path.

* :mod:`~lldsched.core.machine`: the registry and registration (:class:`SchedulerCore`;
  the transitions a run makes, the reads, the status and definition verbs and the
  rest are mixed into it from modules of their own: :mod:`~lldsched.core.runs`, ...);
* :mod:`~lldsched.core.task`: a registered task and where it is (:class:`ScheduledTask`);
* :mod:`~lldsched.core.lifecycle`: every allowed change of status, as data (``TRANSITIONS``);
* :mod:`~lldsched.core.registration`: the checks on what a registration passes;
* :mod:`~lldsched.core.duequeue`: the heap of due entries, with tombstones (:class:`TaskQueue`);
* :mod:`~lldsched.core.recovery`: tasks reloaded from a store, the start after them, clock jumps;
* :mod:`~lldsched.core.misfires`: the slots that passed unrun meeting their misfire policy;
* :mod:`~lldsched.core.store`: the store seen from the core (its writes, its outages, who holds it);
* :mod:`~lldsched.core.context`: what a running action may see (:class:`RunContext`);
* :mod:`~lldsched.core.ids`: task id generators.

These are the entry points; docs/ARCHITECTURE.md says what every module of the core owns.
"""

from lldsched.core.context import RunContext
from lldsched.core.duequeue import TaskQueue
from lldsched.core.machine import DueQueue, SchedulerCore
from lldsched.core.task import Run, ScheduledTask

__all__ = ["DueQueue", "Run", "RunContext", "ScheduledTask", "SchedulerCore", "TaskQueue"]
