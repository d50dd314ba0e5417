"""The tests' shared-SQLite store doubles' one base: the three calls the threaded
runtime's timer makes of a coordinated store on its own (a read of the change feed, a
claim, a renewal) each go through one hook first, so a double states only what it does
before them (fail, wait, count) and never copies the three overrides.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from pathlib import Path
from typing import Literal

from lldsched import SqliteTaskStore
from lldsched.coordination import Claim

__all__ = ["HookedStore", "StoreCall"]

StoreCall = Literal["changed", "claim", "renew"]
"""The calls :meth:`HookedStore.before` is told of, by their methods' names."""


class HookedStore(SqliteTaskStore):
    """A shared SQLite store at ``path`` (``lease``, ``poll``: the store's) whose
    :meth:`changed`, :meth:`claim` and :meth:`renew` call :meth:`before` with their name
    first: a double overrides that one method (raise there to fail the call).
    :meth:`by_the_test` tells a call made on the thread that built the store (the
    test's: a registration's read of the feed) from one made by the timer or a keeper."""

    def __init__(
        self, path: Path, *, lease: float | None = None, poll: float | None = None
    ) -> None:
        self._test = threading.current_thread()
        super().__init__(path, shared=True, lease=lease, poll=poll)

    def by_the_test(self) -> bool:
        """Whether the call under way was made on the thread that built the store."""
        return threading.current_thread() is self._test

    def before(self, call: StoreCall) -> None:
        """Called before the store call ``call`` is made; nothing here."""

    def changed(self) -> bool:
        self.before("changed")
        return super().changed()

    def claim(
        self,
        *,
        now: float,
        limit: int,
        among: Collection[str] | None = None,
        leaving: Collection[str] = (),
    ) -> list[Claim]:
        self.before("claim")
        return super().claim(now=now, limit=limit, among=among, leaving=leaving)

    def renew(self, *, tokens: Collection[int], now: float) -> set[int]:
        self.before("renew")
        return super().renew(tokens=tokens, now=now)
