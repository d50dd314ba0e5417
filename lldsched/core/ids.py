"""Task ids: ``task-1``, ``task-2``, ... from an injectable, thread-safe counter."""

from __future__ import annotations

import itertools
from collections.abc import Callable

__all__ = ["IdGenerator", "sequential_ids"]

IdGenerator = Callable[[], str]
"""Anything that returns a fresh id on each call."""


def sequential_ids(prefix: str = "task-", start: int = 1) -> IdGenerator:
    """Return a generator of ``prefix1``, ``prefix2``, ...

    ``itertools.count`` advances atomically under the GIL, so two threads never
    receive the same id.
    """
    counter = itertools.count(start)
    return lambda: f"{prefix}{next(counter)}"
