"""How long a shared store keeps a removal for the other processes' change feeds: the one
rule both shared stores trim their removals table by (docs/CLUSTER.md, "Limits").

A removal is a row (``removed`` on SQLite, ``removals`` on PostgreSQL) that the
other processes' feeds read to learn a task is gone.  Each store samples the
cursor its own feed read (:meth:`FeedHorizons.read`), one sample a minute: every
removal at or behind a cursor read at instant *t* had committed by *t*, so every
process that read its feed since *t* has seen it.  Once a sample is
:data:`REMOVALS_KEPT` old, the removals behind it are deleted.  Only a process that
read no feed for that long (stalled, or a ``poll`` that long with nothing waking
it) misses them: the task stays in its registry, never run (there is no row left
to claim), until it restarts.
"""

from __future__ import annotations

import time
from collections import deque

__all__ = ["REMOVALS_KEPT", "SAMPLE_EVERY", "FeedHorizons"]

REMOVALS_KEPT = 86400.0
"""Seconds a removal stays readable by the other processes' feeds (a day)."""
SAMPLE_EVERY = 60.0
"""Seconds between the cursors kept (a day of them is 1,440 pairs of numbers)."""


class FeedHorizons:
    """The cursors one store's feed read, one a :data:`SAMPLE_EVERY`, each with when."""

    def __init__(self) -> None:
        self._samples: deque[tuple[float, int]] = deque()  # (monotonic, cursor), oldest first

    def read(self, cursor: int) -> int | None:
        """The feed just read up to ``cursor``; returns the newest cursor read at least
        :data:`REMOVALS_KEPT` ago (the removals behind it may go), or None."""
        now = time.monotonic()
        samples = self._samples
        if not samples or now - samples[-1][0] >= SAMPLE_EVERY:
            samples.append((now, cursor))
        behind = None
        while samples and now - samples[0][0] >= REMOVALS_KEPT:
            behind = samples.popleft()[1]
        return behind
