"""PrivateLoop: how the simulation runs a coroutine action at its simulated instant.

A simulated run calls its real action (for its side effects) when it starts.  An
``async def`` action returns a coroutine, which is not a result yet: it is run to
completion here, on a private event loop owned by the simulation (created at the
first coroutine, closed with the simulation), before the run goes on.  Its wall
time does not count: the run takes its *simulated* duration, as any action.

As in the threaded runtime, a coroutine's timeout is enforced: one still running
after its task's timeout (in wall seconds, here) is cancelled and its run is
recorded ``timed_out``; and a simulated duration over the timeout is cut at the
timeout (see :meth:`lldsched.sim.simulation.Simulation.schedule`).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from lldsched.core.results import result_text
from lldsched.errors import CANCELLED_INSIDE, error_text

if TYPE_CHECKING:
    import asyncio

__all__ = ["Awaited", "PrivateLoop"]

Awaited = tuple["str | None", "str | None", bool]
"""What awaiting produced: error text, result text, timed out."""


class PrivateLoop:
    """An event loop, created at first use, that runs one awaitable at a time."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def run(self, awaitable: Any, timeout: float | None) -> Awaited:
        """Run ``awaitable`` to completion (cancelled after ``timeout`` wall seconds)."""
        # Imported at the first coroutine a simulation awaits, not with lldsched.sim (as
        # the threaded runtime's CoroutineRunner._start_loop does: docs/PERFORMANCE.md, "Start-up").
        import asyncio

        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.new_event_loop()
            weakref.finalize(self, loop.close)
        future = None
        try:
            future = asyncio.ensure_future(awaitable, loop=loop)
            value = loop.run_until_complete(asyncio.wait_for(future, timeout))
        except TimeoutError as exc:
            if future is not None and future.cancelled():  # wait_for's, not its own
                return f"TimeoutError: cancelled at its {timeout:g} s timeout", None, True
            return error_text(exc), None, False
        except asyncio.CancelledError:  # not wait_for's: the coroutine's own
            return CANCELLED_INSIDE, None, False
        except Exception as exc:
            return error_text(exc), None, False
        return None, result_text(value), False
