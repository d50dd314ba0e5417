"""PostgresTaskStore: one set of tasks shared by scheduler processes on many hosts.

A :class:`~lldsched.coordination.CoordinatedStore` on a PostgreSQL server through
psycopg 3 (the optional extra ``pip install 'lldsched[postgres]'``; ``import
lldsched`` never imports it).  The guarantees are those of docs/CLUSTER.md: each
due run is claimed by one process at a time through a lease with a fencing token;
a settle is written only while its lease is held; a control verb from any
process reaches all of them.  How PostgreSQL provides them:

* **Claims** are one statement, ``SELECT … FOR UPDATE SKIP LOCKED`` feeding an
  ``INSERT … ON CONFLICT`` into ``leases`` (:data:`~lldsched.stores.postgres.lease_sql.CLAIM`):
  concurrent claimers skip each other's rows instead of queueing behind them.
* **Fencing tokens** come from the sequence ``fencing_token``: strictly increasing
  across every process (gaps allowed).
* **Expiry is the database's clock** (``clock_timestamp()``); due instants stay the
  schedulers' own, as everywhere in lldsched.
* **Early wake across processes**: a write that makes its task the earliest due, or
  that writes or removes a row whose run is in flight on another node (a verb that run
  must follow: a pause, a cancel, a removal), notifies the channel of the store's
  schema (``lldsched:<schema>``: :func:`~lldsched.stores.postgres.sql.channel`; the
  stores of another schema of the database are not woken); every store that was given
  a ``wake`` callable (:meth:`subscribe`) LISTENs on a connection of its own and calls
  it.  Nothing polls for that; the runtime's bounded wait (:attr:`poll`) is the safety net.
* **Behind a pooler** (PgBouncer, transaction pooling: :attr:`pooled`, found as each
  connection is made) the store keeps nothing on a session: no setting, no prepared
  statement, no LISTEN (the poll reads other nodes' writes); docs/OPERATIONS.md,
  "Behind PgBouncer".
* **Settles in batches**: a run's settle is queued and written with the others
  waiting, in one statement that checks every run's token and names the refused
  ones (:mod:`lldsched.stores.postgres.batch`); :meth:`flush` writes what waits.
* **The change feed** reads rows by the id of the transaction that wrote them
  (see :mod:`lldsched.stores.postgres.sql`), so no global counter serialises writers;
  one statement, and a definition the feed decoded before is not decoded again.

**Outages.**  A statement that fails because the server went away (a restart, a
network cut) raises :class:`~lldsched.errors.StoreError`, and the next call
connects again.  Leases held meanwhile expire on the server's clock and are
taken over (the runtime's renewal says which were lost); writes fenced by them
are refused.

**A newer schema.**  The feed's statement reads the schema version too: once a newer
release has upgraded the database since this store opened it, every later call raises a
:class:`~lldsched.errors.StoreError` saying so, and what to do (restart on the newer
release): this release's SQL is not run against a schema it does not know
(:meth:`~lldsched.stores.postgres.schema.SchemaInstall._follow_schema`, checked in
``_open``).  The runtime treats it as an outage that does not end.

**Where it is written.**  This module opens the store (its state, and what its lock
guards), refuses it in a forked child and closes it; the rest is mixed in:
the connection each call is given (``_using``, ``_open``) is
:class:`~lldsched.stores.postgres.connection.PostgresConnection`'s, a control verb's
hold of its rows (``verb_held``, ``verb_call``)
:class:`~lldsched.stores.postgres.holds.PostgresHolds`', the
:class:`~lldsched.persistence.TaskStore` writes (``save``, ``delete``, ``resave``,
``purge``) :class:`~lldsched.stores.postgres.writes.PostgresWrites`', the coordinated
methods (claims, leases, the feed)
:class:`~lldsched.stores.postgres.coordinated.PostgresCoordination`'s and the fenced
settles among them :class:`~lldsched.stores.postgres.settles.PostgresSettles`', what it
reads back
(``load_all`` and the history reads)
:class:`~lldsched.stores.postgres.reads.PostgresReads`', and installing the schema at open
:class:`~lldsched.stores.postgres.schema.SchemaInstall`'s.  What they share (the members
set here, the methods one calls of another) is declared once, by their common base
:class:`~lldsched.stores.postgres.parts.PostgresParts`.  The dsn is checked at open by
:func:`~lldsched.stores.postgres.dsn.check_dsn`.

**Threads.**  One connection behind one lock, like the SQLite store: the
scheduler already serialises its calls under its own lock (lock order: the
scheduler's, then this store's).  The settle writer thread takes only this
store's lock.  The listener has a connection of its own and never takes the lock.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable
from datetime import timedelta
from types import TracebackType
from typing import NoReturn

from lldsched.checks import seconds, whole_or_none
from lldsched.coordination import lease_seconds, poll_seconds
from lldsched.core.store.writes import StoreWrites
from lldsched.errors import StoreError
from lldsched.logs import STORE
from lldsched.persistence import Task
from lldsched.stores import forks
from lldsched.stores.held import HeldWrites
from lldsched.stores.postgres import lease_sql, sql
from lldsched.stores.postgres.batch import SettleQueue
from lldsched.stores.postgres.connection import PostgresConnection
from lldsched.stores.postgres.coordinated import PostgresCoordination
from lldsched.stores.postgres.deadline import Deadline
from lldsched.stores.postgres.driver import Connection, psycopg
from lldsched.stores.postgres.dsn import check_dsn
from lldsched.stores.postgres.holds import PostgresHolds
from lldsched.stores.postgres.listen import Listener, weakly
from lldsched.stores.postgres.reads import PostgresReads, one_row
from lldsched.stores.postgres.redact import redact, scrubbed
from lldsched.stores.postgres.schema import SchemaInstall
from lldsched.stores.postgres.settles import PostgresSettles
from lldsched.stores.postgres.writes import PostgresWrites
from lldsched.stores.removals import FeedHorizons
from lldsched.stores.unclosed import collected
from lldsched.stores.unreadable import Unreadable

__all__ = ["PostgresTaskStore"]

log = logging.getLogger(STORE)

_LEFT_IN_CHILD: list[Connection] = []
"""The connections a forked child's ``close()`` dropped unclosed: held, so that nothing
ever closes them (:meth:`PostgresTaskStore._let_go_in_child`)."""


def node_id() -> str:
    """A holder id for this process: ``"host:pid:random"``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class PostgresTaskStore(
    PostgresConnection,
    PostgresHolds,
    PostgresWrites,
    PostgresCoordination,
    PostgresSettles,
    PostgresReads,
    SchemaInstall,
):
    """A :class:`~lldsched.coordination.CoordinatedStore` in a PostgreSQL database.

    ``dsn`` is a libpq connection string or URI; the schema is created in it on first
    use (an empty database, or one that holds this schema).  ``lease``: seconds a
    claim lasts unless renewed; ``poll``: the longest the runtime waits before it
    claims and reads changes again (at least
    :data:`~lldsched.coordination.SHORTEST_LEASE` and
    :data:`~lldsched.coordination.SHORTEST_POLL`).  ``retention`` bounds the records kept per task;
    ``timeout`` bounds each call to the server: connecting, and every round trip,
    whatever the network does (docs/CLUSTER.md, "Network partitions").  Errors name the
    dsn with its password replaced by ``***``.  Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        dsn: str,
        *,
        lease: float | timedelta = 30.0,
        poll: float | timedelta = 1.0,
        retention: int | None = 1000,
        timeout: float | timedelta = 10.0,
    ) -> None:
        self.lease = lease_seconds(lease)
        self.poll = poll_seconds(poll)
        self.retention = whole_or_none(retention, name="retention", at_least=1)
        timeout = seconds(timeout, name="timeout", above=0)
        check_dsn(dsn)
        self._dsn = dsn
        self.dsn = redact(dsn)  # what messages and repr show
        self._timeout = timeout
        self._opened_in = forks.current[0]  # the process this store belongs to (forks.py)
        self.node = node_id()
        self.rejected = 0
        # The schema the store's tables are in: the first of the dsn's search_path, found
        # by the first connection; every session then searches it alone (sql.SESSION).
        self._schema: str | None = None
        # Whether the sessions are a pooler's, lent for a transaction at a time (PgBouncer
        # in transaction pooling): found by each connection (_connect).
        self.pooled = False
        # Ends a call the network left unanswered for `timeout` (postgres/deadline.py).
        self._deadline = Deadline(timeout)
        connection = self._connect()
        try:
            self._install(connection)  # unbounded: a migration, or waiting for another's
            self._deadline.watch(connection.fileno())
            (horizon,) = one_row(connection.execute(sql.HORIZON))
            (given,) = one_row(connection.execute(lease_sql.GIVEN))
        except psycopg.Error as exc:  # no schema to create in, no right to: a StoreError
            connection.close()
            raise StoreError(
                f"the PostgreSQL store {self.dsn!r} could not be opened: "
                f"{self._deadline.reason(scrubbed(exc, self._dsn))}"
            ) from None
        except BaseException:
            connection.close()
            raise
        finally:
            self._deadline.disarm()
        # The LISTEN/NOTIFY channel of this store's schema alone (found by the connection).
        self._channel = sql.channel(self._schema or "")
        # Guards the connection (one statement or transaction at a time), _refused, the
        # caches from _defined to _since, `rejected` and _batches.  Taken inside the
        # scheduler's lock when the runtime calls (lock order: the scheduler's, then this
        # one), and by the settle writer thread; never held while calling anything outside
        # this store (wake included).  _muted and _listener are set only by the runtime,
        # under its own lock; _decoded and _unreadable only by load_all() and changes(),
        # which the runtime calls under its lock.
        self._lock = threading.RLock()  # re-entered inside a verb's hold (verb_held)
        self._connection: Connection | None = connection
        self._closed = False
        # Why every call is refused from now on: a newer schema the feed read (the lock's).
        self._refused: str | None = None
        # The largest fencing token given, at open or to a claim of this node since: a
        # claim given one at or below it finds the database restored (a rewind's check).
        self._given = int(given)
        self._defined: dict[str, Task] = {}  # id -> the definition its row holds
        self._held: dict[str, int] = {}  # task id -> the token of the lease this node holds
        # task id -> the token of a lease a renewal found lost while its run goes on here
        # (taken over, or gone with its task): that run's RUNNING saves write no state
        self._lost: dict[str, int] = {}
        self._added: dict[str, int] = {}  # records added per task since its last trim
        self._seen: dict[str, int] = {}  # task id -> the version the feed last gave
        # Tasks whose settle (or misfire decision) was refused: their rows, the new
        # holder's, are given by the next changes() whatever the versions seen; and
        # whether flush() is to wake the scheduler for that read (``_wake``, subscribe()).
        self._reread: set[str] = set()
        self._reread_wake = False
        self._wake: Callable[[], None] | None = None
        self._since: int = int(horizon)  # the feed's cursor (a transaction id)
        self._decoded: dict[str, tuple[str, Task]] = {}  # id -> a definition's text, decoded
        self._unreadable = Unreadable(
            repr(self.dsn)
        )  # other nodes' definitions this one cannot load
        self._horizons = FeedHorizons()  # when to trim removals (lldsched.stores.removals)
        # Runs' settles not written yet; its thread does not keep the store alive (weakly).
        self._settles = SettleQueue(weakly(self.flush), store=self.dsn)
        # The batches of settles that failed: an outage said once (core/store/outage.py).
        # The store's own, not its scheduler's: the writer thread cannot take the
        # scheduler's lock, which guards that one.
        self._batches = StoreWrites(self)
        self._muted = 0  # depth of muted() contexts
        self._listener: Listener | None = None
        self._hold: HeldWrites | None = None  # what the verb's hold under way wrote
        # The connection of the verb's hold once its transaction began (None outside):
        # what a call inside writes is the hold's, stored or lost with it (_open, and
        # PostgresSettles._write_settles).
        self._holding: Connection | None = None
        # Why the connection of the verb's hold under way was lost (psycopg's words for the
        # call that failed on it, or the deadline's reason), for the calls refused after
        # it (_hold_lost); what ended the hold is its HeldWrites' (_inside_failed).
        self._hold_failed: str | None = None
        forks.opened_before_uwsgi_forks(repr(self.dsn))  # uWSGI would not refuse its copies

    @property
    def shared(self) -> bool:
        """Always True: a PostgreSQL store is there to be shared (one process is fine too)."""
        return True

    # -- lifetime ------------------------------------------------------------------------

    def _refuse_if_forked(self) -> None:
        """Refuse a call in a child forked since the store was opened (:mod:`forks
        <lldsched.stores.forks>`), before anything else: before the store's lock is
        waited for (a call under way on another thread at the fork holds it for good in
        the child), and before a settle queued at the fork (the parent's run's) is
        written or one is queued for a writer thread started in the child."""
        if self._opened_in != forks.current[0]:
            raise forks.refuse(repr(self.dsn), self._opened_in)  # a forked child's copy

    def close(self) -> None:
        """Stop listening and close the connection (idempotent).  Leases still held stay
        until they expire; later calls raise ``StoreClosedError`` (a ``StoreError``).
        Close a store after its scheduler's ``shutdown()``.

        In a child forked since the store was opened, only the child's copies are let
        go (:meth:`_let_go_in_child`)."""
        if self._opened_in != forks.current[0]:
            self._let_go_in_child()
            return
        if self._listener is not None:
            self._listener.stop()
            self._listener = None
        self.flush()  # nothing settled stays queued
        self._settles.stop()
        self._deadline.stop()
        with self._lock:
            self._closed = True
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __del__(self, _collected: Callable[..., None] = collected) -> None:
        """Collected open (dropped without ``close()``: a notebook cell run again, a
        service's reload): a ``ResourceWarning`` naming it (its dsn, the password as
        ``***``), then closed, what is queued written first, as ``close()`` does
        (:mod:`~lldsched.stores.unclosed`).  Before, its threads (the listener's, the
        settle writer's, the deadlines') and its two connections stayed for the life of
        the process, kept by those threads: each store dropped so took two more of the
        server's ``max_connections`` (docs/decisions/teaching-kit.md, "A store dropped without
        close() lets its file go"); then it closed in silence."""
        if getattr(self, "_closed", True) or not hasattr(self, "_listener"):
            return  # closed, or its constructor raised
        _collected(self, self.close, opened_in=self._opened_in)

    def _let_go_in_child(self) -> None:
        """``close()`` in a child forked since the store was opened, which has copies of
        the parent's objects and none of its threads: the store's lock and the settle
        queue's may have been held at the fork by a thread the child does not have (a
        call under way, the settle writer), so neither is taken, and nothing queued (the
        parent's runs' settles) is written.  The connection is the parent's session (its
        socket is shared): it is dropped, never closed, which would send the server the
        end of the session (libpq's Terminate) and end the parent's; kept from the
        collector (:data:`_LEFT_IN_CHILD`; psycopg's own finaliser closes nothing opened
        in another process either).  The listener's, the settle writer's and the
        deadlines' threads are the parent's: none is stopped.  Before, ``close()`` flushed
        under the store's lock, and hung for good in a child forked while a call held it
        (a gunicorn ``worker_exit``, an ``atexit`` hook closing a store opened at
        import), and closed the connection, which ended the parent's session: its next
        call failed as a lost server."""
        self._closed = True
        connection, self._connection = self._connection, None
        if connection is not None:
            _LEFT_IN_CHILD.append(connection)
        self._listener = None

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called (a scheduler's verbs then refuse)."""
        return self._closed

    def __enter__(self) -> PostgresTaskStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __reduce__(self) -> NoReturn:
        raise forks.not_sent(repr(self.dsn))  # multiprocessing's spawn would send a copy

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"PostgresTaskStore({self.dsn!r}, {state})"
