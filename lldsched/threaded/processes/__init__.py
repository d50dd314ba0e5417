"""The worker processes of ``isolation="process"``: :class:`ProcessPool`.

The pool is written in modules: ``pool.py`` (the pool: a child taken, a run sent, the
protocol's meaning), ``runs.py`` (a run in a child, mixed in), ``life.py`` (one child's
life from the parent's side: started, killed, reaped), ``wire.py`` (the frames on a
child's pipes) and ``child.py`` (the child's own side, the entry point of its command
line).  This package gives the pool where the scheduler has always imported it from,
``from lldsched.threaded.processes import ProcessPool``, and a child's entry point where
its command line (:mod:`~lldsched.threaded.processes.life`) has always imported it
from, ``from lldsched.threaded.processes import serve``.  It imports nothing of the
threaded runtime but its own modules and :mod:`lldsched.threaded.deadline`
(``tests/test_layering.py``).
"""

from lldsched.threaded.processes.child import serve
from lldsched.threaded.processes.pool import ProcessPool

__all__ = ["ProcessPool", "serve"]
