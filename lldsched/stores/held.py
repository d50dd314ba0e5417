"""What one control verb's hold of a shared store wrote (:func:`lldsched.storecalls.verb_held`),
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
caches back (:meth:`HeldWrites.undo`) and raises :class:`~lldsched.storecalls.HoldNotCommitted`
naming every task written, which the runtime then writes again as any failed write; or,
if the hold's block raised something not a store's (a Ctrl-C, a signal handler's
exception, the verb's own error), raises that, the ``HoldNotCommitted`` its
``__context__``: an interrupt is never replaced by the store's error, whoever holds the
store (the rule is :class:`~lldsched.storecalls.HoldNotCommitted`'s).  An interrupt
that lands in the hold's end, before its COMMIT is known to be made, takes it for not
made: the same, the interrupt raised (:meth:`HeldWrites.cut`), though the
``HoldNotCommitted`` then says its writes may or may not be stored (the COMMIT may have
been made as the interrupt was raised).

A call inside that failed and took the hold's transaction with it (PostgreSQL: a
statement outside a savepoint of its own, which aborts it, or one that lost the
connection; SQLite: a full disk or an I/O error, on which SQLite rolls it back) is noted
(:meth:`HeldWrites.ended`): the hold's end names it, the store's error for that call its
``__cause__``.  Before, it said only that a statement inside failed: not which, nor the
database's words (a lock timeout).

**The first such call is the cause**, one rule for both engines: the calls inside that
fail after it fail because the transaction is gone (PostgreSQL's "current transaction is
aborted", a call refused on a lost connection, a call SQLite's store refuses once SQLite
rolled the hold back), and are only counted ("; 2 later calls inside it failed too").
Before, a PostgreSQL hold whose connection was lost after a read had aborted it named the
loss (the last failure, as psycopg's words were kept) and not the read.  A call that
failed in a savepoint of its own, leaving the transaction as it was, ended nothing: the
hold went on, and it is neither named nor counted (its caller had its error).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, NoReturn

from lldsched.errors import StoreError
from lldsched.logs import counted
from lldsched.persistence import TaskSnapshot
from lldsched.storecalls import HoldNotCommitted

__all__ = ["HeldWrites"]

_ABSENT = object()
_NOT_STORED = "a verb's hold was not committed, none of its writes is stored"
_NOT_KNOWN = "a verb's hold may not have been committed, whether its writes are stored is not known"


class HeldWrites:
    """The writes of one hold: each task written (to its last snapshot written, None for a
    delete) and the ``caches`` entries it had before its first write in the hold."""

    __slots__ = ("_before", "caches", "ended_by", "later", "written")

    def __init__(self, caches: tuple[MutableMapping[str, Any], ...]) -> None:
        self.caches = caches
        self.written: dict[str, TaskSnapshot | None] = {}
        self._before: dict[str, tuple[Any, ...]] = {}
        # The first call inside that took the transaction with it: what it did, how it
        # ended the transaction, the database's words, the error it raised.
        self.ended_by: tuple[str, str, str, BaseException] | None = None
        self.later = 0  # the calls inside that failed after it

    def ended(self, doing: str, how: str, why: str, error: BaseException) -> None:
        """A call inside (``doing``: ``"read the records of task 'a'"``) failed with
        ``error`` and took the hold's transaction with it (``how``: ``"and SQLite rolled
        its transaction back"``; ``why``: the database's words).  Only the first is kept,
        the cause; each after it is counted (:meth:`failed_after`)."""
        if self.ended_by is None:
            self.ended_by = (doing, how, why, error)
        else:
            self.failed_after()

    def failed_after(self) -> None:
        """A call inside failed once the hold's transaction was gone: because it was
        (PostgreSQL: "current transaction is aborted", a call refused on the connection
        lost), said by the hold's end as a count after the call that ended it."""
        self.later += 1

    def ended_error(self, store: str, otherwise: str) -> StoreError:
        """The error the hold's end raises, said after
        :class:`~lldsched.storecalls.HoldNotCommitted`'s "a verb's hold was not committed
        ...: ": "``store`` failed to <what the first call noted by :meth:`ended` did>
        inside it, <how>: <the database's words>", then how many calls inside failed
        after it, if any ("; 2 later calls inside it failed too"), its ``__cause__`` that
        first call's own error (``store``: ``"the SQLite store '/srv/tasks.db'"``);
        ``store`` then ``otherwise`` when no call of the store's was noted (a statement
        run on its connection directly)."""
        if self.ended_by is None:
            return StoreError(f"{store} {otherwise}")
        doing, how, why, cause = self.ended_by
        after = f"; {counted(self.later, 'later call')} inside it failed too" if self.later else ""
        error = StoreError(f"{store} failed to {doing} inside it, {how}: {why}{after}")
        error.__cause__ = cause
        return error

    def wrote(self, task_id: str, snapshot: TaskSnapshot | None) -> None:
        """``task_id``'s row is being written inside the hold as ``snapshot`` (None: deleted),
        before the store's caches are told."""
        if task_id not in self._before:
            self._before[task_id] = tuple(cache.get(task_id, _ABSENT) for cache in self.caches)
        self.written[task_id] = snapshot

    def cut(self, store: str, interrupt: BaseException) -> NoReturn:
        """The hold's end was cut by ``interrupt`` (a Ctrl-C, a signal handler's exception,
        landing in its COMMIT or around it) before that COMMIT was known to be made
        (``store``: ``"the SQLite store '/srv/tasks.db'"``): taken as not made, so
        :meth:`undo`, ``interrupt`` raised, the
        :class:`~lldsched.storecalls.HoldNotCommitted` its ``__context__``.  The runtime
        then writes the hold's rows again, conditionally (a row the COMMIT did store is
        newer than the caches put back say: left as it is, the feed brings it in), and
        takes the verb for whole.  Before, the interrupt was raised alone: the caches said
        the rows written, none written again (a COMMIT not made lost the verb's rows for
        good: the next restart gave back the rows as before it), and the runtime took
        the verb for one the interrupt cut in the middle, refusing every later verb.

        Its message says the writes may or may not be stored (``known=False``): an
        interrupt raised as the COMMIT's call returns, made, cannot be told from one
        raised before it ran.  Before, it said none was, as after a COMMIT that failed."""
        name = type(interrupt).__name__
        self.undo(
            StoreError(
                f"{store} was cut by {name} as it ended it, before its COMMIT was known to "
                "be made (taken as not made: a row written again is written only where "
                "no newer one is stored)"
            ),
            raised=interrupt,
            known=False,
        )

    def undo(
        self, error: StoreError, *, raised: BaseException | None, known: bool = True
    ) -> NoReturn:
        """The hold's end failed with ``error``: the caches put back as they were before
        the hold's writes, then raised, by the rule of
        :class:`~lldsched.storecalls.HoldNotCommitted`: what the hold's block raised
        (``raised``: a Ctrl-C, a signal handler's exception, the verb's own error), the
        ``HoldNotCommitted`` its ``__context__``; that ``HoldNotCommitted`` itself if the
        block raised nothing or a store's error (a call inside that failed: the
        ``HoldNotCommitted`` says it all).  It names what was written, then ``error``'s
        words, which say what failed (not again that the hold was not committed), raised
        ``from`` ``error``'s cause, the call inside that ended the hold, if one did.
        ``known``: whether the hold is known not committed (a COMMIT that failed, a
        transaction rolled back), so that it says none of its writes is stored; False
        (:meth:`cut`) says whether they are is not known."""
        for task_id, before in self._before.items():
            for cache, value in zip(self.caches, before, strict=True):
                if value is _ABSENT:
                    cache.pop(task_id, None)
                else:
                    cache[task_id] = value
        not_committed = HoldNotCommitted(
            f"{_NOT_STORED if known else _NOT_KNOWN} "
            f"({', '.join(map(repr, self.written)) or 'nothing written'}): {error}",
            written=dict(self.written),
        )
        try:
            raise not_committed from error.__cause__
        except HoldNotCommitted:
            if raised is None or isinstance(raised, StoreError):
                raise
            raise raised  # noqa: B904 -- chained to the HoldNotCommitted on purpose
