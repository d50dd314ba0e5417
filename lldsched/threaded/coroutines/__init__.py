"""The event loop that runs ``async def`` actions: :class:`CoroutineRunner`.

The runner is written in modules: ``runner.py`` (the hand-over, called under the
scheduler's lock), ``loopthread.py`` (its loop thread, mixed in), ``shutdown.py`` (its
end, mixed in) and ``flights.py`` (one run on the loop).  This package gives the runner
where the scheduler has always imported it from:
``from lldsched.threaded.coroutines import CoroutineRunner``.  It imports nothing of the
threaded runtime but its own modules and :mod:`lldsched.threaded.deadline`
(``tests/test_layering.py``).
"""

from lldsched.threaded.coroutines.runner import CoroutineRunner

__all__ = ["CoroutineRunner"]
