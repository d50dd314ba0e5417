"""The tests' one bounded wait: poll a condition until it holds, or fail naming it.

For what no event or ``wait_idle`` can signal (a thread that ends, a row another
process writes).  The poll is a bounded wait, not a fixed sleep: a failing test fails
after ``timeout``, a passing one goes on as soon as the condition holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["wait_until"]


def wait_until(
    condition: Callable[[], bool], *, timeout: float, what: str, every: float = 0.02
) -> None:
    """Poll ``condition`` every ``every`` seconds until it holds; AssertionError naming
    ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)  # a polling interval of a bounded wait, not a fixed sleep
