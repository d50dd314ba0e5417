"""The design lab: switch one decision of the runtime off and watch what breaks.

Each decision of :mod:`lldsched.lab.decisions` is a named variant of the *real*
runtime, built by swapping one collaborator, never a copy of the scheduler:

* a clock whose ``wait`` polls (:mod:`~lldsched.lab.timer`);
* a queue whose push does not notify, a queue that trusts an ``if``
  (:mod:`~lldsched.lab.timer`);
* a queue that removes instead of tombstoning, entries without the sequence field
  (:mod:`~lldsched.lab.entries`);
* a hand-off without a bound (:mod:`~lldsched.lab.handoff`);
* a pool condition whose ``notify_all`` wakes one, a shutdown that stops the pool
  before the timer (:mod:`~lldsched.lab.shutdown`);
* a listener called under the lock (:mod:`~lldsched.lab.dispatch`);
* a fixed-rate job that keeps queueing a run per slot, on the simulation
  (:mod:`~lldsched.lab.overrun`);
* a hierarchical timing wheel instead of the heap (:mod:`~lldsched.lab.wheel`).

The threaded variants plug in through the seams ``Scheduler.queue_type``,
``Scheduler.pool_type``, ``Scheduler.dispatcher_type`` and
``WorkerPool.condition_type`` (class attributes read once in a constructor), or
through what the scheduler already takes (a clock, ``handoff=``).  Experiments are
deterministic where a fake clock or the simulation can make them so; the rest
report real time, to be read as ratios within one run, a median with the middle half
of its runs, or the quietest of a few repeats: a conclusion is stated only where it
holds on a busy machine (docs/decisions/teaching-kit.md, "The lab states only what holds under
load").

A variant of one's own plugs in the same way: subclass the collaborator, name it on a
``Scheduler`` subclass (``queue_type = MyQueue``) and pass the class to an experiment
that takes a ``scheduler_type``.  A variant that breaks what every variant keeps (it
loses a task, kills the timer thread, delivers no event, raises in ``shutdown``, holds
the scheduler's lock in a method that never returns) gets a :class:`VariantError`
naming it within seconds, never a hang (:mod:`~lldsched.lab.lockwatch` stops the last).

Run one from a shell with ``python -m lldsched lab <decision>``, or all of them in
``notebooks/09-design-lab.ipynb``.  Standard library only (plots live in
:mod:`lldsched.views.plots.lab`).
"""

from lldsched.lab._support import VariantError
from lldsched.lab.decisions import DECISIONS, Decision, decision

__all__ = ["DECISIONS", "Decision", "VariantError", "decision"]
