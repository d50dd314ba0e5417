"""The connection of a :class:`~lldsched.stores.postgres.PostgresTaskStore`: the one
session every call of the store runs on, under the store's lock.

:class:`PostgresConnection` is mixed into the store: ``_using`` gives a call the
connection (the settles queued before written first, so that this store's writes reach
the database in the order they were made; a psycopg error turned into a
:class:`~lldsched.errors.StoreError` naming the call), ``_open`` connects again after an
outage within the call's one ``timeout``
(:mod:`~lldsched.stores.postgres.deadline`) and refuses a call once the store is closed,
refused (a newer schema) or its verb's hold lost the connection; ``_connect`` makes a
session with the store's bounds and finds whether a pooler lends it
(``_pooled_session``: docs/OPERATIONS.md, "Behind PgBouncer"), and ``_bound`` gives a
transaction on a pooled session those bounds.  The dsn was checked before
(:mod:`~lldsched.stores.postgres.dsn`); what a call inside a verb's hold does to the
hold is :mod:`~lldsched.stores.postgres.holds`'.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from lldsched.errors import LldschedError, StoreClosedError, StoreError
from lldsched.logs import STORE
from lldsched.stores.postgres import sql
from lldsched.stores.postgres.driver import Connection, idle, lost, pq, psycopg
from lldsched.stores.postgres.listen import connect, session_bounds
from lldsched.stores.postgres.parts import PostgresParts
from lldsched.stores.postgres.reads import one_row
from lldsched.stores.postgres.redact import scrubbed

__all__ = ["CANCEL_TIMEOUT", "PostgresConnection"]

log = logging.getLogger(STORE)

CANCEL_TIMEOUT = 2.0
"""Seconds the cancel of a statement cut in flight may take
(:meth:`PostgresConnection._cancel_in_flight`), the store's ``timeout`` if that is less:
the exception that cut the call (a signal handler's) waits for it.  A server that
answers takes a few round trips (a connection, TLS, the request); one that does not is
left to end the statement at its ``statement_timeout``."""


class PostgresConnection(PostgresParts):
    """The store's connection, given to each call: mixed into PostgresTaskStore."""

    def _open(self) -> Connection:
        """The live connection, connecting again after an outage (caller holds the lock),
        armed to the end of the call under way; a :class:`StoreError` once that call has
        no time left (:meth:`Deadline.spent <lldsched.stores.postgres.deadline.Deadline.spent>`:
        one ``timeout`` a call, the settles held back that it writes first included)."""
        self._refuse_if_forked()
        if self._closed:
            raise StoreClosedError(f"the store {self.dsn!r} is closed")
        if self._refused is not None:  # a newer release upgraded the schema since open
            raise StoreError(self._refused)
        connection = self._connection
        dead = connection is None or lost(connection)
        if dead and self._holding is not None:  # a new one would write outside the hold
            if self._hold is not None:
                self._hold.failed_after()  # the hold's end counts it after the loss
            raise self._hold_lost()  # (a round trip cut inside spent the verb's call too)
        spent = self._deadline.spent()
        if spent is not None:
            raise StoreError(
                f"the PostgreSQL store {self.dsn!r} failed: {spent}; the "
                f"{self._timeout:g} s timeout this call shares is spent, so nothing more is "
                "sent in it"
            )
        if connection is None or dead:
            # before the close frees the socket's number, which a new socket may take
            self._deadline.replaced()  # and a cut of the old one explains no new failure
            if connection is not None:
                connection.close()
            self._connection = None
            try:
                connection = self._connection = self._connect()
            except StoreError as exc:  # the server out of reach: the call tries no more
                self._deadline.spend(str(exc))
                raise
        self._deadline.watch(connection.fileno())  # disarmed when the call ends
        return connection

    def _connect(self) -> Connection:
        """A new connection whose session the server ends if it sits inside a transaction
        for a whole ``lease``: a process stalled mid-write (a SIGSTOP, a suspended VM)
        would otherwise keep its rows locked, and no one could take its runs over."""
        connection = connect(self._dsn, timeout=self._timeout)
        try:
            if self._schema is None:  # the first connection: the store's schema is found
                (self._schema,) = one_row(connection.execute("SELECT pg_catalog.current_schema()"))
            direct, isolation, *_ = one_row(connection.execute(sql.SESSION, {
                **session_bounds(lease=self.lease, timeout=self._timeout),
                "schema": self._schema or "",
                "pid": connection.info.backend_pid,
            }))  # fmt: skip
        except psycopg.Error as exc:
            connection.close()
            raise StoreError(
                f"the PostgreSQL store {self.dsn!r} failed: "
                f"{self._deadline.reason(scrubbed(exc, self._dsn))}"
            ) from None
        self.pooled = not direct
        if self.pooled:
            self._pooled_session(connection, str(isolation))
        return connection

    def _pooled_session(self, connection: Connection, isolation: str) -> None:
        """A session a pooler lends (``SESSION`` set nothing on it: docs/OPERATIONS.md,
        "Behind PgBouncer"): no statement is prepared on it (psycopg's, after five runs of
        a statement, are the server connection's, and the next run may be lent another:
        "prepared statement does not exist"); and a default isolation the store cannot
        set for its single statements (each one a transaction of its own, on whichever
        server connection) is refused, naming what to set instead."""
        connection.prepare_threshold = None
        if isolation != "read committed":
            connection.close()
            raise StoreError(
                f"the PostgreSQL store {self.dsn!r} is reached through a connection pooler "
                f"(PgBouncer?) whose sessions default to {isolation!r} isolation: the store "
                "needs READ COMMITTED and cannot set it on a pooled session; set it for the "
                "store's role (ALTER ROLE <user> SET default_transaction_isolation = "
                "'read committed') or connect directly"
            )

    def _bound(self, connection: Connection) -> None:
        """First in a transaction that may hold rows locked while this process does
        something else (a verb's hold, a write of several statements): on a pooled
        session, the session's bounds for that transaction alone
        (:data:`~lldsched.stores.postgres.sql.LOCAL_BOUNDS`; a savepoint of a hold has
        them from the hold)."""
        if self.pooled and connection is not self._holding:
            connection.execute(
                sql.LOCAL_BOUNDS, session_bounds(lease=self.lease, timeout=self._timeout)
            )

    @contextlib.contextmanager
    def _call(self) -> Iterator[None]:
        """One call of the store, under its lock, everything it sends within one
        ``timeout`` (:meth:`Deadline.call
        <lldsched.stores.postgres.deadline.Deadline.call>`: calls nest).  Once it ends
        outside a verb's hold, its connection is closed at once unless it is fit for the
        next call (:func:`~lldsched.stores.postgres.driver.idle`) and the call was ended
        by nothing but the store's own errors: an exception from elsewhere (a signal
        handler's, a ``KeyboardInterrupt``) may have stopped psycopg anywhere, between its
        count of transaction blocks and the BEGIN or COMMIT it sends, which left every
        later write failing ("transaction rollback at the wrong nesting level") or
        run inside a transaction never committed.  A statement still in flight on it is
        cancelled first (:meth:`_cancel_in_flight`).  The next call connects again; the
        server ends at once a transaction the call left open, and its row locks."""
        with self._lock:
            unsure = True
            try:
                with self._deadline.call():
                    yield
                unsure = False
            except LldschedError:
                unsure = False
                raise
            finally:
                connection = self._connection
                if (
                    connection is not None
                    and self._holding is None
                    and (unsure or not idle(connection))
                ):
                    cut = self._deadline.ended  # its socket shut: nothing more sent there
                    self._deadline.replaced()  # before the close frees the socket's number
                    self._connection = None
                    try:
                        if not cut:
                            self._cancel_in_flight(connection)
                    finally:
                        connection.close()

    def _cancel_in_flight(self, connection: Connection) -> None:
        """Cancel on the server the statement ``connection`` still has in flight, before
        the connection is closed: a call cut in psycopg's wait for the reply by an
        exception psycopg does not cancel for (it does for ``KeyboardInterrupt`` and
        ``SystemExit`` only), a signal handler's.  Closing alone does not stop the
        statement: the server notices a closed socket only as it next writes to it, and
        a statement waiting for a lock writes nothing, so it went on waiting, its session
        and its transaction's locks kept, until the lock was let go or
        ``statement_timeout`` (the store's ``timeout``) ended it.  The cancel is a request
        on a new connection, bounded by :data:`CANCEL_TIMEOUT` (the store's ``timeout`` if
        less): the exception that cut the call waits for it, and a network gone silent
        since the deadline last heard the server made the user wait a whole ``timeout``
        (10 s by default) for their interrupt.  One that fails is let go, the close and
        the server's ``statement_timeout`` left to end the statement, and the exception
        that cut the call goes on.  A connection the
        deadline cut (:class:`~lldsched.stores.postgres.deadline.Deadline`: no answer in
        time) is not cancelled: its caller checks that, the network likely as silent to
        the cancel."""
        if (
            connection.closed
            or connection.info.transaction_status is not pq.TransactionStatus.ACTIVE
        ):
            return
        try:
            connection.cancel_safe(timeout=min(self._timeout, CANCEL_TIMEOUT))
        except psycopg.Error as exc:
            log.debug(
                "the cancel of a statement cut in flight failed: %s", scrubbed(exc, self._dsn)
            )

    @contextlib.contextmanager
    def _using(self, doing: str, task_id: str | None = None) -> Iterator[Connection]:
        """The connection, under the lock, once the settles queued before were written
        (this store's writes reach the database in the order they were made); a lost
        server becomes a StoreError.  ``doing`` (and ``task_id``, the task it is done
        to): what the call does, as the SQLite store's ``_using`` says it
        (``"read the records of task"``), named by a verb's hold that this call's failure
        ended (:meth:`_inside_failed`)."""
        self._refuse_if_forked()
        with self._call():  # one timeout for all it sends
            try:
                if self._settles.waiting:
                    self._write_settles()
                connection = self._open()
                yield connection
            except psycopg.Error as exc:  # a lost server, a deadlock, a constraint
                interrupt = _interrupt_under(exc)
                if interrupt is not None:
                    raise interrupt from None  # (the call's connection closed: unsure)
                why = self._deadline.reason(scrubbed(exc, self._dsn))
                error = StoreError(f"the PostgreSQL store {self.dsn!r} failed: {why}")
                if self._holding is not None:
                    self._inside_failed(exc, why, error, doing, task_id)
                raise error from None


def _interrupt_under(exc: psycopg.Error) -> BaseException | None:
    """The ``KeyboardInterrupt`` or ``SystemExit`` that psycopg's ``exc`` replaced, if any.
    An interrupt that lands as a transaction block begins or ends (a Ctrl-C before the
    ``SAVEPOINT`` is sent) makes psycopg undo the block, and that undo can fail too
    ("transaction rollback at the wrong nesting level"), raised in the interrupt's
    place.  Turned into a :class:`StoreError`, the user's Ctrl-C became a failed write
    of the runtime's (an outage), and the verb returned as if nothing had been
    pressed.  So the interrupt is raised instead."""
    seen: BaseException | None = exc.__context__
    while isinstance(seen, psycopg.Error):
        seen = seen.__context__
    return None if seen is None or isinstance(seen, Exception) else seen
