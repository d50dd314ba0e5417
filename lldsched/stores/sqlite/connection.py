"""The connection each call of the SQLite store is given, and the one place SQLite's own
errors become a :class:`~lldsched.errors.StoreError`: :class:`_Using`, taken by every
call that reads or writes through :meth:`SqliteConnection._using`, mixed into
:class:`~lldsched.stores.sqlite.SqliteTaskStore`.

A call takes the store's lock and its one connection (:meth:`SqliteConnection._open`:
refused once closed, or in a child forked since the open,
:meth:`SqliteConnection._refuse_if_forked`; the path checked to still name the file
opened); SQLite's errors inside (a full disk, a read-only file, a database locked past
``timeout``) become a ``StoreError`` naming the file and the call, raised from SQLite's
(docs/decisions/store-failures.md, "A store's errors are StoreErrors, whichever the
store").  An unshared store that found the file's write lock held past ``timeout``
waits for no lock until a write gets through (:meth:`SqliteConnection._locked`).
"""

from __future__ import annotations

import sqlite3
from types import TracebackType

from lldsched.errors import StoreClosedError, StoreError
from lldsched.stores import forks
from lldsched.stores.sqlite.file import PRIVATE, no_room
from lldsched.stores.sqlite.parts import SqliteParts
from lldsched.stores.sqlite.rows import failure

__all__ = ["SqliteConnection"]


class _Using:
    """A store's connection under its lock for one operation, and the one place SQLite's
    own errors (a full disk, a read-only file, a database locked past ``timeout``, a
    table gone from a damaged file) become a :class:`StoreError` naming the file and the
    operation, raised ``from`` SQLite's (its ``__cause__``): a caller catches one type
    whichever store it has, as the PostgreSQL store's errors are StoreErrors too.

    A class, not a ``contextlib.contextmanager``: ``save`` takes it twice a run; over
    the bare lock a generator-based one added about 1.5 microseconds a call, this one
    about 0.3 (a save is some 30)."""

    __slots__ = ("doing", "store", "task_id")

    def __init__(self, store: SqliteConnection, doing: str, task_id: str | None) -> None:
        self.store = store
        self.doing = doing  # what is done, said in the error: "save task", "read the records"
        self.task_id = task_id  # the task it is done to, or None

    def __enter__(self) -> sqlite3.Connection:
        store = self.store
        store._refuse_if_forked()  # before the lock, which a forked child's parent may hold
        lock = store._lock
        lock.acquire()
        try:
            connection = store._open()
            shared = store._shared
            if shared is not None and shared.hold is not None and not connection.in_transaction:
                raise store._hold_gone(self.doing, self.task_id)  # rolled back under the hold
            if store._left_open is not None and not store._calls:
                self._refuse_if_still_open()
        except BaseException:
            lock.release()
            raise
        store._calls += 1
        return connection

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        store = self.store
        store._calls -= 1
        if not store._calls:  # the outermost call ends: nothing of it may stay open
            connection = store._connection
            if store._gate is not None or (connection is not None and connection.in_transaction):
                store._let_go_of_what_no_call_owns()
        if isinstance(error, sqlite3.Error):
            raise self._failed(error)
        if store._locked_out is not None:  # waits cut: given back once a write got through
            try:
                store._write_got_through()
            finally:
                store._lock.release()
            return
        store._lock.release()

    def _refuse_if_still_open(self) -> None:
        """The first thing of an outermost call once a transaction no call owns could not
        be rolled back (:meth:`SqliteConnection._let_go_of_what_no_call_owns`): roll it
        back now, or refuse the call with a :class:`StoreError` naming it and SQLite's
        words (caller holds the lock).  Before, the call ran inside that transaction: its
        writes were savepoints of it, answered, then rolled back with it as the call
        ended (a save said stored, and lost)."""
        store = self.store
        store._let_go_of_what_no_call_owns()
        error = store._left_open
        if error is not None:
            doing = self.doing if self.task_id is None else f"{self.doing} {self.task_id!r}"
            because = (
                "a transaction a call cut short left open could not be rolled back, and "
                "the file's write lock is held until it is; tried again at each call"
            )
            failed = failure(store.path, doing, error, because=because)
            raise failed from error

    def _failed(self, error: sqlite3.Error) -> StoreError:
        """The StoreError for SQLite's ``error`` (its ``__cause__``), once a verb's hold it
        ended was told (under the lock, then let go: the hold is the lock holder's)."""
        store = self.store
        doing = self.doing if self.task_id is None else f"{self.doing} {self.task_id!r}"
        code = getattr(error, "sqlite_errorcode", 0)  # none on an error raised by hand
        if code & 0xFF == sqlite3.SQLITE_BUSY and store._shared is None:
            because: str | None = store._locked()
        else:
            because = None if store.path in PRIVATE else no_room(store.path)  # a statvfs
        failed = failure(store.path, doing, error, because=because)
        failed.__cause__ = error
        try:
            store._ended_hold(doing, error, failed)
        finally:
            store._lock.release()
        return failed


class SqliteConnection(SqliteParts):
    """The SQLite store's connection, taken for each call (see the module docstring)."""

    def _locked(self) -> str:
        """What to say of an unshared store's call that found the file's write lock held
        past ``timeout`` (SQLite's "database is locked"); from now on its calls wait for no
        lock (``busy_timeout`` 0) until a write gets through (:meth:`_write_got_through`).
        Every save is made under the scheduler's lock: each waited the whole ``timeout``
        while another program's transaction held the file, and the scheduler with it (a
        verb, ``metrics()``, the runs' starts), for as long as that transaction lasted.
        The caller holds the store's lock."""
        connection = self._connection
        if self._locked_out is None and connection is not None:
            try:
                connection.execute("PRAGMA busy_timeout = 0")
            except sqlite3.Error:
                pass  # the next call waits as before: nothing worse
            else:
                self._locked_out = connection.total_changes
        return (
            f"another program holds its write lock past the {self._busy_ms / 1000:g} s "
            "timeout: a transaction left open (`fuser` names the process); until a write "
            "gets through, the store's calls do not wait for it"
        )

    def _write_got_through(self) -> None:
        """Give the connection back its ``busy_timeout`` once a write committed since the
        lock was found held (a read gets through a held lock: WAL).  The caller holds the
        store's lock."""
        connection = self._connection
        if connection is not None and connection.total_changes != self._locked_out:
            try:
                connection.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            except sqlite3.Error:
                return  # tried again at the next call
            self._locked_out = None

    def _let_go_of_what_no_call_owns(self) -> None:
        """As the outermost call ends (caller holds the lock): no transaction is left open
        on the connection, nor the write gate held.  An exception from outside SQLite (a
        signal handler's, a ``KeyboardInterrupt``) raised between a write's ``BEGIN
        IMMEDIATE`` and its ``try``, or inside its rollback, left both: every later write
        of this store ran as a savepoint of that transaction, answered and never
        committed, and SQLite's write lock (and a shared store's gate: every later write
        here then failed, "taken twice") kept every other process from writing, for
        good.  The call that left them raised: nothing it wrote was said stored.

        A ROLLBACK that fails with the transaction still open (SQLite ends it even when
        it reports an error, unless the statement failed before ending it: interrupted,
        out of memory) is tried again at once; one still open then is noted
        (``_left_open``), and every call after tries again as it starts, refused with a
        :class:`StoreError` while it stays open (:meth:`_Using._refuse_if_still_open`):
        the file's write lock is held until then, and the process has no other way to let
        it go than a call, or closing the store."""
        connection = self._connection
        try:
            if connection is not None:
                error: sqlite3.Error | None = None
                for _try in range(2):
                    if not connection.in_transaction:
                        break
                    try:
                        connection.execute("ROLLBACK")
                    except sqlite3.Error as exc:
                        error = exc
                self._left_open = error if connection.in_transaction else None
        finally:
            if self._gate is not None:
                self._gate.let_go_if_held()  # even if SQLite's lock still stands

    def _using(self, doing: str, task_id: str | None = None) -> _Using:
        """The connection, under the lock, for one operation (``doing``, of ``task_id``
        when it is one task's): ``with self._using("save task", task_id) as connection``.
        SQLite's own errors inside become a :class:`StoreError` naming the file and the
        operation (:class:`_Using`)."""
        return _Using(self, doing, task_id)

    def _refuse_if_forked(self) -> None:
        """Refuse a call in a child forked since the store was opened (:mod:`forks
        <lldsched.stores.forks>`), before anything else: before the store's lock is
        waited for.  A thread of the parent inside a store call at the fork (a save, a
        claim) leaves the child's copy of the lock held, and the child has no thread to
        let it go: every call but :meth:`close` waited for it for good.  Called by
        :class:`_Using` (every call that reads or writes), and by the calls that take the
        lock without it.  A private database is the child's own copy: not refused here,
        but by its lock, a :class:`~lldsched.stores.forks.Torn`, if another thread was
        inside a call of it at the fork."""
        if self._opened_in != forks.current[0] and self.path not in PRIVATE:
            raise forks.refuse(repr(self.path), self._opened_in)  # a forked child's copy

    def _open(self) -> sqlite3.Connection:
        """The connection (caller holds the lock, taken once :meth:`_refuse_if_forked`
        let the call through)."""
        if self._connection is None:
            raise StoreClosedError(f"the store {self.path!r} is closed")
        watch = self._watch
        if watch is not None and watch.due():  # deleted or replaced under it: StoreError
            watch.check()
            if self._claim is not None:  # its lock file deleted: claimed again, or StoreError
                try:
                    self._claim.check()
                except StoreError:
                    watch.at_every_call()  # until the other opener lets go
                    raise
        return self._connection
