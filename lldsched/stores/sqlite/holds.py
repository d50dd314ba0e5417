"""A control verb's hold of a shared :class:`~lldsched.stores.sqlite.SqliteTaskStore`
(:func:`~lldsched.storecalls.verb_held`): one transaction that holds SQLite's write
lock (``BEGIN IMMEDIATE``, taken in turn through the write gate:
:mod:`~lldsched.stores.sqlite.gate`) and the store's lock while the verb reads the
change feed and writes; every write inside is a savepoint of it, committed at its end.

:class:`SqliteHolds` is mixed into the store: ``verb_held`` (a hold inside a hold is the
outer one's), and what ends a hold: a call inside whose failure SQLite rolled the
transaction back, noted for the hold's end to name (``_ended_hold``), and the refusal of
a call made after that (``_hold_gone``, raised by
:class:`~lldsched.stores.sqlite.connection._Using`).
What a hold wrote, and the caches put back when it is not stored, is
:class:`~lldsched.stores.held.HeldWrites`'.  PostgreSQL's hold is
:mod:`~lldsched.stores.postgres.holds`'.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence

from lldsched.errors import StoreError
from lldsched.stores.held import HeldWrites
from lldsched.stores.sqlite.parts import SqliteParts
from lldsched.stores.sqlite.rows import begin, failure, rollback

__all__ = ["SqliteHolds"]


class SqliteHolds(SqliteParts):
    """A verb's hold of the file's write lock: mixed into SqliteTaskStore."""

    @contextlib.contextmanager
    def verb_held(self, task_id: str, also: Sequence[str] = ()) -> Iterator[None]:
        """Inside, this process writes alone: a control verb (pause, cancel, resume,
        modify, ...) reads the change feed and writes its rows in one transaction that
        holds SQLite's write lock (``BEGIN IMMEDIATE``) and this store's lock throughout
        (see :func:`~lldsched.storecalls.verb_held`): every row, ``also``'s included.  So
        no other process's write (a run's settle) lands between the row the verb read and
        the row it writes, which then wrote back the row as it was before that run.  Every
        write inside is a savepoint of it (:func:`~lldsched.stores.sqlite.rows.immediate`);
        what they wrote is committed at the end, whatever the block raised (the verb's
        registry has it).  The write lock not taken within ``timeout`` (another process
        holds it that long): the block runs unheld, as before, and a write of it that
        fails is a failed write (its rewrite is conditional:
        :func:`~lldsched.storecalls.resave`).

        A hold whose end fails stored none of them: its COMMIT failing (a full disk), or
        its transaction found gone at the end (SQLite rolls a whole transaction back on
        some errors of a statement inside, a full disk or an I/O error: the writes before
        it were lost; a call after it is refused, :meth:`_hold_gone`, where it committed
        alone, outside the hold, and let the hold's write gate go).  Then the caches are
        put back as they were before them (the feed's cursor too, which this process's own
        writes move on: a version rolled back is taken again by another process's next write)
        and :class:`~lldsched.storecalls.HoldNotCommitted` names every task written
        (:mod:`lldsched.stores.held`), for the runtime to write again, and what failed:
        the call inside whose failure SQLite rolled the transaction back, and SQLite's
        words (:meth:`_ended_hold`), or the COMMIT's error.  An interrupt (a Ctrl-C, a
        signal handler's exception) that lands in the end before the COMMIT returned is
        the same, the COMMIT taken as not made, the interrupt raised over the
        ``HoldNotCommitted`` (:meth:`HeldWrites.cut
        <lldsched.stores.held.HeldWrites.cut>`); one that lands after is raised alone.

        A hold inside a hold (on this store, the outer one still under way) is the outer
        one's: its writes are the outer transaction's, which holds every row already,
        stored or not with them and said once, by the outer hold, as PostgreSQL's
        (``PostgresHolds._hold_inside``).  Before, its ``BEGIN IMMEDIATE`` failed
        ("cannot start a transaction within a transaction"), taken for a write lock not
        had within ``timeout``: the block ran "unheld" (in the outer transaction all the
        same), its own error chained to that one, and the failed begin let the write gate
        go (:mod:`~lldsched.stores.sqlite.gate`), which the outer hold held: the other
        processes' writes then waited for its end in SQLite's busy handler."""
        with self._using("take the write lock for a verb on task", task_id) as connection:
            shared = self._coordinated()
            if shared.hold is not None:  # a hold inside a hold: the outer one's
                yield
                return
            gate = self._gate
            try:
                begin(connection, gate)  # in turn with the other processes' writes
            except sqlite3.OperationalError:  # locked past the timeout: as before, unheld
                yield
                return
            held = shared.hold = HeldWrites(
                (self._defined, self._counts, shared.seen, shared.settled, shared.held)
            )
            cursor, removals = shared.cursor, set(shared.removals)
            raised: BaseException | None = None  # what the block raised, if anything
            try:
                yield
            except BaseException as exc:
                raised = exc
                raise
            finally:
                shared.hold = None
                failed: StoreError | None = None
                made = False  # its COMMIT known to be made
                cut: BaseException | None = None  # an interrupt that landed in its end
                try:
                    try:
                        if connection.in_transaction:
                            connection.execute("COMMIT")
                            made = True
                        else:  # rolled back under the hold by a statement that failed inside
                            failed = held.ended_error(
                                f"the SQLite store {self.path!r}",
                                "found its transaction rolled back at its end, by no call of "
                                "the store's that failed",
                            )
                    except sqlite3.Error as exc:
                        rollback(connection)
                        failed = failure(self.path, "commit it", exc)
                        failed.__cause__ = exc
                except BaseException as exc:  # a Ctrl-C, a signal handler's: in or around it
                    if made:
                        raise  # stored: the runtime takes the verb for whole
                    cut = exc
                    with contextlib.suppress(sqlite3.Error):  # else _using's end tries again
                        rollback(connection)
                finally:
                    if gate is not None:
                        gate.release()
                if cut is not None or failed is not None:
                    shared.cursor = min(shared.cursor, cursor)  # read again from there
                    shared.removals &= removals  # the hold's own removals are undone
                if failed is not None:  # the interrupt, if any, over the block's error
                    held.undo(failed, raised=raised if cut is None else cut)
                if cut is not None:
                    held.cut(f"the SQLite store {self.path!r}", cut)

    def _ended_hold(self, doing: str, error: sqlite3.Error, failed: StoreError) -> None:
        """A call (``doing``: ``"save task 'a'"``) failed with SQLite's ``error`` (``failed``:
        the StoreError it raises; caller holds the lock): inside a verb's hold whose
        transaction SQLite rolled back with it (a full disk, an I/O error), noted for the
        hold's end to name (:meth:`HeldWrites.ended_error
        <lldsched.stores.held.HeldWrites.ended_error>`: the first such call, and how many
        failed after it).  Before, it said only that SQLite rolled its transaction back,
        not on what nor why."""
        shared, connection = self._shared, self._connection
        if shared is None or shared.hold is None or connection is None:
            return
        if not connection.in_transaction:
            shared.hold.ended(
                doing,
                "and SQLite rolled its transaction back",
                f"{type(error).__name__}: {error}",
                failed,
            )

    def _hold_gone(self, doing: str, task_id: str | None) -> StoreError:
        """The error of a call (``doing``, of ``task_id``) made inside a verb's hold whose
        transaction is gone (SQLite rolled it back under a call inside that failed, a full
        disk or an I/O error), refused by :class:`~lldsched.stores.sqlite.connection._Using` and
        counted for the hold's end after the call that ended it (caller holds the lock).
        As PostgreSQL's hold refuses a call once its connection is lost
        (``PostgresHolds._hold_lost``).  Before, the call ran in a transaction of its
        own: a write committed alone, outside the hold, which then named it among the
        writes not stored, and let go the write gate the hold held
        (:mod:`~lldsched.stores.sqlite.gate`: ``flock`` on a descriptor that holds it
        succeeds), the rest of the hold run with the gate free."""
        shared = self._shared
        assert shared is not None and shared.hold is not None
        held = shared.hold
        held.failed_after()
        if held.ended_by is None:  # a statement run on the connection directly
            why = "rolled back by no call of the store's that failed"
        else:
            ended, _, said, _ = held.ended_by
            why = f"SQLite rolled it back when the call inside to {ended} failed: {said}"
        done = doing if task_id is None else f"{doing} {task_id!r}"
        return StoreError(
            f"the SQLite store {self.path!r} failed to {done}: the verb's hold it was called "
            f"in has no transaction any more ({why}); nothing more is written inside it"
        )
