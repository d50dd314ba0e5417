"""PostgresTaskStore: one set of tasks shared by scheduler processes on many hosts.

A :class:`~lldsched.persistence.CoordinatedStore` on a PostgreSQL server through
psycopg 3 (the optional extra ``pip install 'lldsched[postgres]'``; ``import
lldsched`` never imports it).  The guarantees are those of docs/CLUSTER.md: each
due run is claimed by one process at a time through a lease with a fencing token;
a settle is written only while its lease is held; a control verb from any
process reaches all of them.  How PostgreSQL provides them:

* **Claims** are one statement, ``SELECT … FOR UPDATE SKIP LOCKED`` feeding an
  ``INSERT … ON CONFLICT`` into ``leases`` (:data:`~lldsched.stores.postgres_sql.CLAIM`):
  concurrent claimers skip each other's rows instead of queueing behind them.
* **Fencing tokens** come from the sequence ``fencing_token``: strictly increasing
  across every process (gaps allowed).
* **Expiry is the database's clock** (``clock_timestamp()``); due instants stay the
  schedulers' own, as everywhere in lldsched.
* **Early wake across processes**: a write that makes its task the earliest due, or
  that writes or removes a row whose run is in flight on another node (a verb that run
  must follow: a pause, a cancel, a removal), notifies the channel of the store's
  schema (``lldsched:<schema>``: :func:`~lldsched.stores.postgres_sql.channel`; the
  stores of another schema of the database are not woken); every store that was given
  a ``wake`` callable (:meth:`subscribe`) LISTENs on a connection of its own and calls
  it.  Nothing polls for that; the runtime's bounded wait (:attr:`poll`) is the safety net.
* **Behind a pooler** (PgBouncer, transaction pooling: :attr:`pooled`, found as each
  connection is made) the store keeps nothing on a session: no setting, no prepared
  statement, no LISTEN (the poll reads other nodes' writes); docs/OPERATIONS.md,
  "Behind PgBouncer".
* **Settles in batches**: a run's settle is queued and written with the others
  waiting, in one statement that checks every run's token and names the refused
  ones (:mod:`lldsched.stores.postgres_batch`); :meth:`flush` writes what waits.
* **The change feed** reads rows by the id of the transaction that wrote them
  (see :mod:`lldsched.stores.postgres_sql`), so no global counter serialises writers;
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
(:meth:`~lldsched.stores.postgres_schema.SchemaInstall._follow_schema`, checked in
``_open``).  The runtime treats it as an outage that does not end.

**Where it is written.**  This module opens the store and holds the
:class:`~lldsched.persistence.TaskStore` writes; what it reads back (``load_all`` and
the history reads) is :class:`~lldsched.stores.postgres_reads.PostgresReads`', the
coordinated methods (claims, leases, settles, the feed) are
:class:`~lldsched.stores.postgres_coordinated.PostgresCoordination`'s, both mixed in, and
installing the schema at open is
:class:`~lldsched.stores.postgres_schema.SchemaInstall`'s.

**Threads.**  One connection behind one lock, like the SQLite store: the
scheduler already serialises its calls under its own lock (lock order: the
scheduler's, then this store's).  The settle writer thread takes only this
store's lock.  The listener has a connection of its own and never takes the lock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import socket
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from types import TracebackType
from typing import Any, NoReturn

from lldsched.checks import seconds, whole_or_none
from lldsched.core.storewrites import StoreWrites
from lldsched.errors import StoreClosedError, StoreError, ValidationError
from lldsched.logs import STORE
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import (
    Task,
    TaskSnapshot,
    finished,
)
from lldsched.stores import forks
from lldsched.stores import postgres_sql as sql
from lldsched.stores.codec import check_written, encode_task
from lldsched.stores.held import HeldWrites
from lldsched.stores.postgres_batch import SettleQueue
from lldsched.stores.postgres_coordinated import Connection, PostgresCoordination
from lldsched.stores.postgres_deadline import Deadline
from lldsched.stores.postgres_listen import (
    Listener,
    connect,
    psycopg,
    redact,
    redact_by_pattern,
    scrubbed,
    session_bounds,
    shown_keys,
    weakly,
)
from lldsched.stores.postgres_reads import PostgresReads, one_row
from lldsched.stores.postgres_rows import (
    check_keepable,
    record_row,
    state_row,
)
from lldsched.stores.postgres_schema import SchemaInstall
from lldsched.stores.removals import FeedHorizons
from lldsched.stores.unclosed import collected
from lldsched.stores.unreadable import Unreadable

__all__ = ["PostgresTaskStore"]

log = logging.getLogger(STORE)

_ABSENT: Any = object()  # a cache without the task (PostgresTaskStore._transaction)

_LEFT_IN_CHILD: list[Connection] = []
"""The connections a forked child's ``close()`` dropped unclosed: held, so that nothing
ever closes them (:meth:`PostgresTaskStore._let_go_in_child`)."""


def node_id() -> str:
    """A holder id for this process: ``"host:pid:random"``."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def _shown(dsn: object) -> str:
    """A dsn of the wrong type as an error names it: its repr, any password in it
    replaced by ``***`` as in every message that names a dsn (a ``bytes`` dsn is read as
    the text it holds, a mapping's values hidden but for the keys libpq displays)."""
    if isinstance(dsn, bytes | bytearray):
        return f"{type(dsn).__name__} {redact(bytes(dsn).decode('utf-8', 'replace'))!r}"
    if isinstance(dsn, Mapping):
        return repr({key: value if key in shown_keys() else "***" for key, value in dsn.items()})
    return repr(dsn)


_URI_BEFORE_QUERY = re.compile(r"\s*postgres(?:ql)?://([^?#]*)", re.IGNORECASE)
"""A libpq URI's user, password, hosts, ports and database (group 1)."""


def _check_dsn(dsn: object) -> None:
    """Refuse, as every store refuses a malformed argument (a :class:`ValidationError`
    naming it, its password hidden), a dsn that is not a connection string libpq can be
    given: not a ``str``; one holding a NUL, at which libpq's C string ends (the rest was
    dropped unseen, and a store opened what came before it); one holding a lone surrogate,
    which UTF-8 cannot encode (a bare ``UnicodeEncodeError`` naming no dsn); a URI whose
    user or password holds an ``@`` or a ``/`` not percent-encoded (libpq took the rest
    for the host, port or database, and its error quoted it).  The dsn is shown as
    :func:`~lldsched.stores.postgres_listen.redact_by_pattern` hides it: every value but
    those libpq displays, a misspelt key's (``pasword=``) included (was: the password's
    alone, and a misspelt key's value shown), and the bad part is named by its place,
    not shown: it may be inside a password."""
    if not isinstance(dsn, str):
        raise ValidationError(f"dsn must be a libpq connection string (a str), got {_shown(dsn)}")
    if "\x00" in dsn:
        raise ValidationError(
            f"dsn {redact_by_pattern(dsn)!r} holds a NUL (character {dsn.index(chr(0)) + 1} of "
            f"{len(dsn)}), where libpq would end it: remove it and what follows it if that was "
            "not meant"
        )
    uri = _URI_BEFORE_QUERY.match(dsn)
    authority, _, path = uri.group(1).partition("/") if uri is not None else ("", "", "")
    if authority.count("@") > 1 or "@" in path:  # a user part holds one '@', before the '/'
        raise ValidationError(
            f"dsn {redact_by_pattern(dsn)!r} holds an '@' or a '/' in its user or password that "
            "is not percent-encoded: libpq ends the user part at the first '@', the hosts at "
            "the first '/', and takes the rest for the host, port or database; write each "
            "'@' of the user and the password as %40, each '/' as %2F"
        )
    try:
        dsn.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"dsn {redact_by_pattern(dsn)!r} holds a lone surrogate (character "
            f"{exc.start + 1} of {len(dsn)}), which is not text UTF-8 can encode: a "
            "connection string is sent as UTF-8 (an undecodable byte of a file or an "
            "environment variable is read as one: decode it as its encoding is)"
        ) from None


class PostgresTaskStore(PostgresCoordination, PostgresReads, SchemaInstall):
    """A :class:`~lldsched.persistence.CoordinatedStore` in a PostgreSQL database.

    ``dsn`` is a libpq connection string or URI; the schema is created in it on first
    use (an empty database, or one that holds this schema).  ``lease``: seconds a
    claim lasts unless renewed; ``poll``: the longest the runtime waits before it
    claims and reads changes again.  ``retention`` bounds the records kept per task;
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
        self.lease = seconds(lease, name="lease", above=0)
        self.poll = seconds(poll, name="poll", above=0)
        self.retention = whole_or_none(retention, name="retention", at_least=1)
        timeout = seconds(timeout, name="timeout", above=0)
        _check_dsn(dsn)
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
        # Ends a call the network left unanswered for `timeout` (postgres_deadline.py).
        self._deadline = Deadline(timeout)
        connection = self._connect()
        try:
            self._install(connection)  # unbounded: a migration, or waiting for another's
            self._deadline.watch(connection.fileno())
            (horizon,) = one_row(connection.execute(sql.HORIZON))
            (given,) = one_row(connection.execute(sql.GIVEN))
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
        self._settles = SettleQueue(weakly(self.flush))
        # The batches of settles that failed: an outage said once (core/storewrites.py).
        # The store's own, not its scheduler's: the writer thread cannot take the
        # scheduler's lock, which guards that one.
        self._batches = StoreWrites(self)
        self._muted = 0  # depth of muted() contexts
        self._listener: Listener | None = None
        self._hold: HeldWrites | None = None  # what the verb's hold under way wrote
        # The connection of the verb's hold once its transaction began (None outside):
        # what a call inside writes is the hold's, stored or lost with it (_open, and
        # PostgresCoordination._write_settles).
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

    # -- opening ---------------------------------------------------------------------

    def _refuse_if_forked(self) -> None:
        """Refuse a call in a child forked since the store was opened (:mod:`forks
        <lldsched.stores.forks>`), before anything else: before the store's lock is
        waited for (a call under way on another thread at the fork holds it for good in
        the child), and before a settle queued at the fork (the parent's run's) is
        written or one is queued for a writer thread started in the child."""
        if self._opened_in != forks.current[0]:
            raise forks.refuse(repr(self.dsn), self._opened_in)  # a forked child's copy

    def _open(self) -> Connection:
        """The live connection, connecting again after an outage (caller holds the lock),
        armed to the end of the call under way; a :class:`StoreError` once that call has
        no time left (:meth:`Deadline.spent <lldsched.stores.postgres_deadline.Deadline.spent>`:
        one ``timeout`` a call, the settles held back that it writes first included)."""
        self._refuse_if_forked()
        if self._closed:
            raise StoreClosedError(f"the store {self.dsn!r} is closed")
        if self._refused is not None:  # a newer release upgraded the schema since open
            raise StoreError(self._refused)
        connection = self._connection
        dead = connection is None or connection.closed or connection.broken
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
        (:data:`~lldsched.stores.postgres_sql.LOCAL_BOUNDS`; a savepoint of a hold has
        them from the hold)."""
        if self.pooled and connection is not self._holding:
            connection.execute(
                sql.LOCAL_BOUNDS, session_bounds(lease=self.lease, timeout=self._timeout)
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
        with self._lock, self._deadline.call():  # one timeout for all it sends
            try:
                if self._settles.waiting:
                    self._write_settles()
                connection = self._open()
                yield connection
            except psycopg.Error as exc:  # a lost server, a deadlock, a constraint
                why = self._deadline.reason(scrubbed(exc, self._dsn))
                error = StoreError(f"the PostgreSQL store {self.dsn!r} failed: {why}")
                if self._holding is not None:
                    self._inside_failed(exc, why, error, doing, task_id)
                raise error from None

    def _inside_failed(
        self,
        exc: psycopg.Error,
        why: str,
        error: StoreError,
        doing: str,
        task_id: str | None,
    ) -> None:
        """A call inside a verb's hold (``doing`` ``task_id``) failed with ``exc`` (``why``:
        its words; ``error``: the StoreError it raises).  If it took the hold's
        transaction with it, noted for the hold's end to name
        (:meth:`HeldWrites.ended <lldsched.stores.held.HeldWrites.ended>`: the first such
        call, the cause; those after it counted): the call and the database's words with
        its SQLSTATE (the first line: the whole is ``error``'s, the hold's error's
        ``__cause__``), and how it ended the transaction: it lost the connection (``why``
        then kept for the calls refused after, :meth:`_hold_lost`), or it failed outside
        a savepoint of its own (a read, a RUNNING redefinition), which aborted it.  One
        that failed in a savepoint of its own ended nothing: the hold goes on.  Before,
        ``why`` was kept for every call that failed, the last one's named by a hold whose
        connection was lost, though an earlier read had aborted it."""
        holding, hold = self._holding, self._hold
        if hold is None or holding is None:
            return
        if holding.closed or holding.broken:
            self._hold_failed = why
            how = "which lost its connection"
        elif holding.info.transaction_status is psycopg.pq.TransactionStatus.INERROR:
            how = "outside a savepoint of its own, which aborted its transaction"
        else:
            return
        done = doing if task_id is None else f"{doing} {task_id!r}"
        said = why.partition("\n")[0]  # psycopg's next lines quote the statement
        code = f" (SQLSTATE {exc.sqlstate})" if exc.sqlstate else ""
        hold.ended(done, how, f"{said}{code}", error)

    def _hold_lost(self, held: HeldWrites | None = None) -> StoreError:
        """The error of a verb's hold whose connection was lost, naming why: the
        deadline's reason if it cut the connection, else psycopg's words for the call
        inside that failed on it (psycopg ends the hold's transaction without a word, and
        refusing a new connection has none of its own).  ``held``: the hold at its end,
        whose :class:`~lldsched.persistence.HoldNotCommitted` names the hold and says it
        was not committed (before, its message said both twice): the error names the
        call that ended the hold (:meth:`_inside_failed`: it lost the connection, or
        before that aborted its transaction), "lost its connection (why)" if none did;
        None for a call refused inside."""
        why = self._deadline.reason(self._hold_failed or "no call inside failed on it")
        store = f"the PostgreSQL store {self.dsn!r}"
        if held is not None:
            return held.ended_error(store, f"lost its connection ({why})")
        return StoreError(
            f"{store} failed: the connection of a verb's hold was lost ({why}); "
            "nothing more is written inside it"
        )

    # -- the TaskStore protocol --------------------------------------------------------

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        """Write the task's state (and ``record``); :class:`ValidationError` for a
        registration of an id another node registered (nothing written).  A record
        carrying a fencing token is a settle (:meth:`settle`): refused when its lease was
        lost, counted in :attr:`rejected` and logged, not raised.  Writes nothing while
        :meth:`muted`, or for the RUNNING state of a run whose lease this node holds.

        A settle is queued and written with the others waiting, by the store's writer
        thread (:mod:`lldsched.stores.postgres_batch`); :meth:`flush` waits for it.
        Text no durable store keeps is a :class:`ValidationError`, nothing written or
        queued (:func:`~lldsched.stores.codec.check_written`)."""
        if self._muted:
            return
        check_written(snapshot, () if record is None else (record,))
        token = None if record is None else record.token
        if token is not None and record is not None:
            self._lost.pop(snapshot.task.id, None)  # the run is over: settled, or refused
            self._fenced(snapshot, (record,), token=token)
            return
        if snapshot.status is TaskStatus.RUNNING and snapshot.task.id in self._held:
            self._redefine(snapshot, writer=self.node)
            return  # the lease says so
        if snapshot.status is TaskStatus.RUNNING and snapshot.task.id in self._lost:
            self._redefine(snapshot, writer="")
            return  # the row's state is its new holder's
        task_id = snapshot.task.id
        with (
            self._using("save task", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            self._write(connection, snapshot)
            if record is not None:
                self._append(connection, record)

    def _redefine(self, snapshot: TaskSnapshot, *, writer: str) -> None:
        """A RUNNING save, whose state is not this node's to write: a definition new here
        (a modify, a reschedule, a replacement during the run) is written alone, to a row
        that is there (a write of the verb's hold, if inside one, noted as :meth:`_write`
        notes its own).  Of a run whose lease this node holds (``writer`` this node): the
        state is the lease's, and the run's settle, finding the row its own
        (``postgres_sql._OWN``), decides the status and the next slot as before.  Before,
        that settle wrote the definition, and a node killed before its settle lost it:
        the slot was taken over and run under the old one.  Of a run whose lease a
        renewal found lost (taken over, or gone with its task; ``writer`` ''): the row's
        state is its new holder's, and a row written ``running`` is claimed by no node
        (the task never ran again), or a removed row came back; every node, this one
        included, reads the row again.  A definition PostgreSQL cannot keep is refused
        here (:func:`~lldsched.stores.postgres_rows.check_keepable`), and the caller
        puts the old one back."""
        task = snapshot.task
        if self._defined.get(task.id) == task:
            return
        check_keepable(task)
        if self._hold is not None:
            self._hold.wrote(task.id, snapshot)
        parameters = {
            "id": task.id,
            "name": task.name,
            "definition": encode_task(task),
            "priority": int(task.priority),
            "writer": writer,
        }
        with self._using("save the definition of task", task.id) as connection:
            if connection.execute(sql.REDEFINE, parameters).rowcount == 1:
                self._defined[task.id] = task

    def save_all(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]) -> None:
        """Write the task's state and every one of ``records`` (a run's, then the slots it
        skipped), all or none (:func:`~lldsched.persistence.save_all`): a run's settle
        is queued with all of them, written in one statement."""
        if self._muted:
            return
        check_written(snapshot, records)
        token = records[0].token
        if token is not None:
            self._lost.pop(snapshot.task.id, None)  # the run is over: settled, or refused
            self._fenced(snapshot, records, token=token)
            return
        task_id = snapshot.task.id
        with (
            self._using("save task", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            self._write(connection, snapshot)
            for record in records:
                self._append(connection, record)

    def _fenced(
        self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int
    ) -> None:
        """Records carrying the fencing token ``token``: a run's settle, queued with them,
        or records added to the settle queued under it."""
        self._refuse_if_forked()
        if self._closed:
            raise StoreClosedError(f"the store {self.dsn!r} is closed")
        if self._settles.add(snapshot, records, token=token):
            return
        # Records after their run's settle was taken (SKIPPED slots): once we hold the
        # connection, that settle's outcome is known; it decides these.
        with self._using("save the records of task", snapshot.task.id) as connection:
            if self._settles.add(snapshot, records, token=token):
                return  # its batch failed: held (SettleQueue.hold), these join it
            if not self._settles.outcome(token):
                return  # refused (or dropped): what follows it is dropped too
            with self._transaction(connection, snapshot.task.id):  # the settle: the row exists
                self._write(connection, snapshot, unknown=sql.UPSERT)
                for record in records:
                    self._append(connection, record)

    def _write(
        self, connection: Connection, snapshot: TaskSnapshot, *, unknown: str = sql.INSERT_NEW
    ) -> None:
        """Write the row (the definition too when it changed) and NOTIFY if it became the
        earliest due, or if another node's live lease holds it (a verb its run must
        follow: :data:`~lldsched.stores.postgres_sql.NOTIFY_IF_EARLIEST`).  ``unknown``:
        the statement for a task this node has not seen yet, a registration (refused if
        another node registered the id) unless a record after
        a settle, whose lease proved the row exists, says
        :data:`~lldsched.stores.postgres_sql.UPSERT`.  A finished task
        (:func:`~lldsched.persistence.finished`) is forgotten by the caches, as
        :meth:`_forget_finished` says; so a finished snapshot of a task not known here
        is an update too (it is never a new registration: a replacement of a finished
        task, its definition written in full)."""
        task = snapshot.task
        if self._hold is not None:
            self._hold.wrote(task.id, snapshot)
        state = {**state_row(snapshot), "slot": snapshot.slot, "writer": self.node}
        known = self._defined.get(task.id)
        done = finished(snapshot)
        if known == task:
            connection.execute(sql.UPDATE, state)
        else:
            check_keepable(task)
            row = {
                **state,
                "name": task.name,
                "definition": encode_task(task),
                "priority": int(task.priority),
            }
            statement = sql.UPSERT if known is not None or done else unknown
            if connection.execute(statement, row).fetchone() is None:
                raise ValidationError(  # a registration here of an id another node registered
                    f"task id {task.id!r} is already registered by another scheduler on "
                    f"{self.dsn!r}; pass replace_existing=True to update it"
                )
            self._defined[task.id] = task
        connection.execute(
            sql.NOTIFY_IF_EARLIEST, {**state, "node": self.node, "channel": self._channel}
        )
        if done:
            self._forget_finished(task.id)

    def _forget_finished(self, task_id: str) -> None:
        """``task_id`` finished (succeeded or cancelled, no run in flight): nothing runs it
        again, so the caches this node wrote through forget it (under the lock).  Before,
        they held every task ever saved.  The feed's ``_seen`` is another matter: it is
        forgotten in :meth:`changes`, once the feed can no longer read the row again."""
        self._defined.pop(task_id, None)
        self._added.pop(task_id, None)

    def _append(self, connection: Connection, record: ExecutionRecord) -> None:
        """Insert ``record``; every tenth of ``retention``, trim its task's oldest."""
        connection.execute(sql.INSERT_RECORD, record_row(record))
        if self._added_records(record.task_id, 1):
            self._trim(connection, record.task_id)

    def _added_records(self, task_id: str, count: int) -> bool:
        """``count`` records of ``task_id`` were inserted: True when a trim of its oldest
        is due (every tenth of ``retention``).  The count stays above that mark until
        :meth:`_trim` succeeds, so a trim that failed is due again at the next insert."""
        if self.retention is None:
            return False
        added = self._added[task_id] = self._added.get(task_id, 0) + count
        return added > max(1, self.retention // 10)

    def _trim(self, connection: Connection, task_id: str) -> None:
        """Trim ``task_id``'s oldest records to ``retention``; its count starts again
        (unless :meth:`_forget_finished` forgot the task meanwhile: not counted again)."""
        connection.execute(sql.TRIM_RECORDS, {"id": task_id, "keep": self.retention})
        if task_id in self._added:
            self._added[task_id] = 0

    def _trim_after_batch(self, task_ids: list[str]) -> None:
        """Trim the tasks a batch of settles made due (caller holds the lock), once the
        batch's outcomes are reported.  Housekeeping: a trim that fails is logged by
        :class:`~lldsched.core.storewrites.StoreWrites` as any failing call of this store
        (once an outage, then at debug level), the rest are left, and each is tried again
        at its task's next insert (:meth:`_added_records`).  A finished task, forgotten,
        is not: its records stay untrimmed until it has new ones (a replacement)."""
        for task_id in task_ids:
            try:
                self._trim(self._open(), task_id)
            except (psycopg.Error, StoreError) as exc:
                self._batches.call_failed(
                    exc,
                    "records trim",
                    f"trim of {task_id!r}'s oldest records: tried again at its next record",
                )
                return
        if task_ids and self._batches.outage is not None:
            self._batches.succeeded("records trim")

    def delete(self, task_id: str) -> None:
        """Forget ``task_id`` and its records (the other nodes' feeds say it was removed),
        whoever wrote the row last (a user's ``remove()``; a purge as a task retires is
        :meth:`purge`)."""
        if self._muted:
            return
        with (
            self._using("delete task", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            self._delete(connection, task_id)

    def resave(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord] = ()) -> bool:
        """Write ``snapshot`` again, a row a store outage left stale, with ``records`` (the
        records the writes that failed carried), only while its row is one this node
        wrote or read (as :meth:`purge` knows one) and no live lease holds it (the
        database's clock), in one transaction; False (nothing written) otherwise, or when
        it is gone (:func:`~lldsched.persistence.resave`): another node's write is the
        feed's to bring in, a lease's row its holder's settle to write.  A run this node
        holds writes nothing of the row (its settle will), as :meth:`save` does: only
        ``records``."""
        task_id = snapshot.task.id
        if self._muted:
            return True
        check_written(snapshot, records)
        held = snapshot.status is TaskStatus.RUNNING and task_id in self._held
        if held and not records:
            return True
        with (
            self._using("save task again", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            if not held:
                if not self._known(connection, task_id, sql.KNOWN_UNLEASED):  # or gone
                    return False
                self._write(connection, snapshot, unknown=sql.UPSERT)  # the row exists
            for record in records:
                self._append(connection, record)
        return True

    @contextlib.contextmanager
    def verb_held(self, task_id: str, also: Sequence[str] = ()) -> Iterator[None]:
        """Inside, no other node writes ``task_id``'s row: a control verb (pause, cancel,
        resume, modify, ...) reads the change feed and writes its rows in one transaction
        that holds the id's lock and the row's (the lock order: :meth:`_known`), and this
        store's lock throughout (see :func:`~lldsched.persistence.verb_held`).  So a run's
        settle on another node (its ``UPDATE`` of the row) waits for the verb's commit,
        and then keeps a pause or cancel written during its run, as ever; one that
        committed before is read by the verb's feed (a new statement's snapshot).  Every
        write inside is a savepoint of it; what they wrote is committed at the end,
        whatever the block raised (the verb's registry has it).  ``also``: the rows of other
        tasks it may write (a ``cancel``'s dependents), locked with the task's own in one
        statement, in the order of their ids (:data:`~lldsched.stores.postgres_sql.LOCK_HELD`),
        so that two holds never wait for each other's rows.

        A hold whose end fails (the COMMIT: the connection lost, the deadline passed)
        stored none of them: the caches are put back as they were before them and
        :class:`~lldsched.persistence.HoldNotCommitted` names every task written
        (:mod:`lldsched.stores.held`), for the runtime to write again.  Nothing else is
        written inside: the settles queued meanwhile wait for its end, and a call inside
        whose connection was lost fails (a new one would write outside the hold).  A hold
        whose connection was lost inside names why (:meth:`_hold_lost`); one whose
        transaction a call inside aborted names that call and the database's words
        (:meth:`_inside_failed`).  A hold inside a hold is the outer one's
        (:meth:`_hold_inside`).

        **One timeout a verb, in an outage.**  A hold that cannot be taken because the
        server is out of reach for its whole ``timeout`` (no connection to be had, or its
        round trips cut by the deadline: :meth:`_out_of_reach`) lets the verb run unheld,
        as the runtime does on any failure to hold, and every call the verb makes inside
        (its read of the feed, its writes) fails at once, sending nothing: they are the
        runtime's failed writes of an outage, written again once the store answers.
        Before, each of them waited its own timeout: a ``pause`` waited three (six with
        settles held back, which each call writes first).  A hold that fails at once (a
        connection found dead by a restart), or that the server itself ends (a lock
        timeout it answers), raises as before, and the verb's calls are made as ever; one
        whose wait for another process's hold (a stalled one) the deadline cut is out of
        reach as well: its writes would wait for the same lock."""
        raised: BaseException | None = None
        unheld: str | None = None  # why the verb goes on unheld, its calls refused
        with self.verb_call():  # the verb's, which its calls may share
            if self._hold is not None:  # a hold inside a hold: the outer one's, as one
                yield from self._hold_inside(task_id, also)
                return
            held = self._hold = HeldWrites(
                (self._defined, self._held, self._added, self._decoded, self._seen)
            )
            entered = False
            try:
                with self._using("take the row locks for a verb on task", task_id) as connection:
                    with connection.transaction() as transaction:
                        self._bound(connection)
                        connection.execute(sql.LOCK_ID, {"id": task_id})
                        connection.execute(sql.LOCK_HELD, {"ids": [task_id, *also]})
                        entered = True
                        self._holding = connection
                        try:
                            yield
                        except BaseException as exc:  # committed all the same, then raised
                            raised = exc
                        # A statement that failed inside outside a savepoint of its own (a
                        # read: the records a dependency recount reads, on a lock timeout)
                        # aborted the transaction: its COMMIT would roll back every write
                        # inside, and psycopg would say it committed.
                        if (
                            connection.info.transaction_status
                            is psycopg.pq.TransactionStatus.INERROR
                        ):
                            raise held.ended_error(
                                f"the PostgreSQL store {self.dsn!r}",
                                "failed: a statement on its connection inside it, not one of "
                                "the store's calls, aborted its transaction",
                            )
                        # The COMMIT is a round trip too: the writes inside disarmed the
                        # deadline as each ended, and a COMMIT sent into a silent network
                        # waited for ever, the scheduler's lock held.
                        if not (connection.closed or connection.broken):
                            self._deadline.watch(connection.fileno(), fresh=True)
                    # psycopg ends a transaction whose connection was lost inside (a write
                    # there failed so: a restart, a reset, the deadline) without a word.
                    if transaction.status is not transaction.Status.COMMITTED:
                        raise self._hold_lost(held)
            except StoreError as exc:
                if entered:
                    raise held.undo(exc) from exc.__cause__  # the call inside that ended it
                unheld = self._out_of_reach()
                if unheld is None:
                    raise  # the verb goes on unheld, its calls made as ever
                log.debug("no hold of task %r's row for a verb: %s", task_id, exc)
            finally:
                self._hold = None
                self._holding = None
                self._hold_failed = None
            if unheld is not None:
                self._deadline.spend(f"the server was out of reach at the verb's hold ({unheld})")
                yield  # every call inside refused at once (_open)
        if raised is not None:
            raise raised

    @contextlib.contextmanager
    def verb_call(self) -> Iterator[None]:
        """The calls of one verb or registration (:func:`~lldsched.persistence.verb_call`),
        under this store's lock, as one call of the deadline's (:meth:`Deadline.call
        <lldsched.stores.postgres_deadline.Deadline.call>`): each call inside has a
        ``timeout`` of its own while the server answers, and once one finds it out of
        reach (no connection to be had, or a round trip the deadline cut) every call after
        it fails at once, sending nothing.  So a verb or a registration waits one
        ``timeout`` in all during an outage, not one for each call it makes (its read of
        the change feed, its writes).  :meth:`verb_held` is one, holding the row too."""
        self._refuse_if_forked()
        with self._lock, self._deadline.call():
            yield

    def _out_of_reach(self) -> str | None:
        """Why the server could not be reached for the whole of the call under way (a
        verb's: :meth:`verb_held`), its ``timeout`` spent and no connection left; None if
        it could (it answered, or failed at once: a restart, a lock timeout it answered)."""
        spent = self._deadline.spent()
        connection = self._connection
        if spent is None or (
            connection is not None and not (connection.closed or connection.broken)
        ):
            return None
        return spent

    def _hold_inside(self, task_id: str, also: Sequence[str]) -> Iterator[None]:
        """A verb's hold inside another (caller holds the lock): its rows locked in the
        outer one's transaction, its writes the outer one's, stored or not with them and
        said once, by the outer hold.  Before, it was a savepoint of its own that checked
        the transaction as a hold's end does: a call inside that aborted it raised a
        plain StoreError naming no write, and the rollback to its savepoint let the outer
        hold commit without the inner one's writes, though the store's caches had them
        as written (never written again).  The locks are taken in a savepoint released
        at once (PostgreSQL keeps them to the outer hold's end), so a lock timeout there
        fails this hold alone (the verb runs unheld: ``verb_held``)."""
        doing = "take the row locks for a verb on task"
        with self._using(doing, task_id) as connection, connection.transaction():
            connection.execute(sql.LOCK_ID, {"id": task_id})
            connection.execute(sql.LOCK_HELD, {"ids": [task_id, *also]})
        yield

    def purge(self, task_id: str) -> bool:
        """Delete ``task_id``, which retired on this node, as :meth:`delete` does, only
        while its row is one this node wrote or read and no live lease of another node
        holds it; True if it is gone (:func:`~lldsched.persistence.purge`).  A row another
        node wrote since (a registration of the id again) is left, for the change feed to
        bring in: known is a row this node wrote last, one written before the feed's last
        horizon (the feed read it), or the version the feed last gave unless another node
        removed the id since (:data:`~lldsched.stores.postgres_sql.KNOWN_ROW`).  A row
        another node's live lease holds is left too
        (:data:`~lldsched.stores.postgres_sql.HELD_ELSEWHERE`): its run is in flight there,
        a take-over of a run whose settle here was refused (the run ended its task here,
        which retired), and its settle is that node's to write; before, the purge deleted
        it under that run."""
        if self._muted:
            return True
        with (
            self._using("purge task", task_id) as connection,
            self._transaction(connection, task_id),
        ):
            known = self._known(connection, task_id, sql.KNOWN_ROW)  # None: gone
            if known is False:
                return False
            lease = {"id": task_id, "node": self.node}
            if known and connection.execute(sql.HELD_ELSEWHERE, lease).fetchone():
                return False  # its run is in flight on that node
            self._delete(connection, task_id)
        return True

    @contextlib.contextmanager
    def _transaction(self, connection: Connection, task_id: str) -> Iterator[None]:
        """One transaction writing ``task_id``'s row (a savepoint of a verb's hold): if it
        does not commit, what this node's caches say of the task is put back as it was
        before it (its definition written, its lease, its records counted, its decoded
        text, the version its feed gave), as the database's row is.  They are told as
        each statement runs, inside the transaction: before, a registration whose COMMIT
        failed (a connection lost, a deferred check) or whose record was refused was taken
        as stored, and made again was an ``UPDATE`` of no row (nothing stored, no error); a
        replacement refused so kept the old definition when made again; a removal refused
        so took the task's later writes for another node's registration."""
        caches: tuple[dict[str, Any], ...] = (
            self._defined, self._held, self._added, self._decoded, self._seen,
        )  # fmt: skip
        before = [cache.get(task_id, _ABSENT) for cache in caches]
        try:
            with connection.transaction():
                self._bound(connection)
                yield
        except BaseException:
            for cache, value in zip(caches, before, strict=True):
                if value is _ABSENT:
                    cache.pop(task_id, None)
                else:
                    cache[task_id] = value
            raise

    def _known(self, connection: Connection, task_id: str, query: str) -> bool | None:
        """Inside a transaction: the id's lock taken first (the lock order, as in
        :meth:`_delete`), then ``query`` (:data:`~lldsched.stores.postgres_sql.KNOWN_ROW`
        or ``KNOWN_UNLEASED``) asked of the row, which it locks: True if this node wrote
        or read it (and no live lease holds it, for the second), None if there is none."""
        connection.execute(sql.LOCK_ID, {"id": task_id})
        row = connection.execute(
            query,
            {"id": task_id, "node": self.node, "since": self._since,
             "seen": self._seen.get(task_id)},
        ).fetchone()  # fmt: skip
        return None if row is None else bool(row[0])

    def _delete(self, connection: Connection, task_id: str) -> None:
        """Inside a transaction, under the lock: delete ``task_id``'s row and records, with
        a removal for the other nodes' feeds, and forget it (the version the feed gave
        too: a row registered again is another node's, or this one's next write).

        The id's lock (:data:`~lldsched.stores.postgres_sql.LOCK_ID`) is taken first, as
        every insert of a row takes it (``FIRST_VERSION``), always before the row's own
        lock (a caller that locks the row takes it before that, or the two orders would
        deadlock): a registration racing this removal on another node waits for its
        commit and starts past it, or this removal waits for that registration's and
        deletes its row.  The removal's version is one past the row's as deleted
        (:data:`~lldsched.stores.postgres_sql.REMOVE`): an id's versions grow in commit
        order.  A row another node's live lease holds (its run in flight there) is
        announced on the channel, as any other verb's write to it is: that node stops
        the run at once, not at its next renewal or poll."""
        if self._hold is not None:
            self._hold.wrote(task_id, None)
        connection.execute(sql.LOCK_ID, {"id": task_id})
        connection.execute(sql.REMOVE, {"id": task_id, "node": self.node, "channel": self._channel})
        connection.execute("DELETE FROM records WHERE task_id = %s", (task_id,))
        self._defined.pop(task_id, None)
        self._held.pop(task_id, None)
        self._added.pop(task_id, None)
        self._decoded.pop(task_id, None)
        self._seen.pop(task_id, None)

    # -- lifetime ------------------------------------------------------------------------

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
        server's ``max_connections`` (docs/DECISIONS.md, "A store dropped without close()
        lets its file go"); then it closed in silence."""
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
