"""Whether a call made on a thread of its own returns: the tests of a timer that must let
the scheduler's lock go (a verb from another thread gets in, or waits for good)."""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["HANG_GUARD", "returns"]

HANG_GUARD = 60.0
"""Seconds a verb may take before the test says it hangs (it returns at once when fixed)."""


def returns(call: Callable[[], object]) -> bool:
    """Whether ``call``, made on a thread of its own, returns (before ``HANG_GUARD``)."""
    done = threading.Event()

    def make() -> None:
        call()
        done.set()

    threading.Thread(target=make, daemon=True).start()
    return done.wait(HANG_GUARD)
