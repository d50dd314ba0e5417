"""The threaded runtime: a heap-and-Condition timer, a bounded worker pool, and the
thread that delivers events to listeners, around the core state machine.

* :mod:`~lldsched.threaded.scheduler`: :class:`Scheduler`, the timer and the one lock;
* :mod:`~lldsched.threaded.pool`: the worker threads behind a bounded hand-off queue;
* :mod:`~lldsched.threaded.dispatcher`: listeners called off the hot path.
"""

from lldsched.threaded.scheduler import Scheduler

__all__ = ["Scheduler"]
