"""The threaded runtime: a heap-and-Condition timer, a bounded worker pool, and the
thread that delivers events to listeners, around the core state machine.

* :mod:`~lldsched.threaded.scheduler`: :class:`Scheduler`, built of the modules below
  (:mod:`~lldsched.threaded.parts` declares what they share) around the one lock:
  :mod:`~lldsched.threaded.registering` (registration),
  :mod:`~lldsched.threaded.timer` (the timer thread), :mod:`~lldsched.threaded.running`
  (a run, from hand-off to record; its failure's log line:
  :mod:`~lldsched.threaded.failurelog`), :mod:`~lldsched.threaded.control` (the verbs;
  on a shared store: :mod:`~lldsched.threaded.sharedverbs`), :mod:`~lldsched.threaded.reads`
  (the reads), :mod:`~lldsched.threaded.stopping` (shutdown; its last writes:
  :mod:`~lldsched.threaded.lastwrites`; what it says it left:
  :mod:`~lldsched.threaded.shutdownwarnings`),
  :mod:`~lldsched.threaded.idlewaits` (``wait_idle`` and ``wait_drained``);
* :mod:`~lldsched.threaded.pool`: the worker threads behind a bounded hand-off queue;
* :mod:`~lldsched.threaded.dispatcher`: listeners called off the hot path;
* :mod:`~lldsched.threaded.coroutines` (a package): the event loop that runs
  ``async def`` actions (:mod:`~lldsched.threaded.coroutines.runner`; its thread:
  :mod:`~lldsched.threaded.coroutines.loopthread`; its end:
  :mod:`~lldsched.threaded.coroutines.shutdown`);
* :mod:`~lldsched.threaded.processes` (a package): the worker processes of
  ``isolation="process"`` (:mod:`~lldsched.threaded.processes.pool`;
  :mod:`~lldsched.threaded.processes.runs`: a run in one of them;
  :mod:`~lldsched.threaded.processes.life`: one child's life, from the parent's side);
* :mod:`~lldsched.threaded.shared` (a package): the timer's side of a store several
  processes share (:mod:`~lldsched.threaded.shared.coordinator`; mixed into it:
  :mod:`~lldsched.threaded.shared.leases`, the leases it holds;
  :mod:`~lldsched.threaded.shared.decisions`, a claimed slot decided without a run;
  :mod:`~lldsched.threaded.shared.load`, the rows it loads as they are);
* :mod:`~lldsched.threaded.deadline`: the scheduler's lock taken, and waited on, within
  the time a ``shutdown(timeout=...)`` has left, the one module of this package the
  three packages above import (each imports no other).
"""

from lldsched.threaded.scheduler import Scheduler

__all__ = ["Scheduler"]
