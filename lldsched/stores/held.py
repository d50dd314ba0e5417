"""What one control verb's hold of a shared store wrote (:func:`lldsched.persistence.verb_held`),
kept so that a hold whose end fails loses none of it.

A hold is one transaction; every write inside is a savepoint of it.  If the hold's end
fails (its COMMIT: the connection lost, the disk full; or the transaction rolled back
under it by the database), none of those writes is stored, yet each updated the store's
caches as written: a definition cached as written was never written again (a
replacement's new definition lost for good), a removal's version counted as this
process's own hid another process's removal of the same number, a shared SQLite
store's feed cursor moved past a version another process's next write then took.  So
the store notes each task it writes inside the hold (:meth:`HeldWrites.wrote`, with the
cache entries as they were before its first write there) and, the hold failed, puts the
caches back (:meth:`HeldWrites.undo`) and raises :class:`~lldsched.persistence.HoldNotCommitted`
naming every task written, which the runtime then writes again as any failed write.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from lldsched.persistence import HoldNotCommitted, TaskSnapshot

__all__ = ["HeldWrites"]

_ABSENT = object()


class HeldWrites:
    """The writes of one hold: each task written (to its last snapshot written, None for a
    delete) and the ``caches`` entries it had before its first write in the hold."""

    __slots__ = ("_before", "caches", "written")

    def __init__(self, caches: tuple[MutableMapping[str, Any], ...]) -> None:
        self.caches = caches
        self.written: dict[str, TaskSnapshot | None] = {}
        self._before: dict[str, tuple[Any, ...]] = {}

    def wrote(self, task_id: str, snapshot: TaskSnapshot | None) -> None:
        """``task_id``'s row is being written inside the hold as ``snapshot`` (None: deleted),
        before the store's caches are told."""
        if task_id not in self._before:
            self._before[task_id] = tuple(cache.get(task_id, _ABSENT) for cache in self.caches)
        self.written[task_id] = snapshot

    def undo(self, error: BaseException) -> HoldNotCommitted:
        """The hold's end failed with ``error``: the caches as they were before the hold's
        writes; returns the error to raise, naming what was written."""
        for task_id, before in self._before.items():
            for cache, value in zip(self.caches, before, strict=True):
                if value is _ABSENT:
                    cache.pop(task_id, None)
                else:
                    cache[task_id] = value
        return HoldNotCommitted(
            f"a verb's hold was not committed, none of its writes is stored "
            f"({', '.join(map(repr, self.written)) or 'nothing written'}): {error}",
            written=dict(self.written),
        )
