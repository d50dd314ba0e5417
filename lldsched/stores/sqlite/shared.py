"""The shared mode of :class:`~lldsched.stores.sqlite.SqliteTaskStore`: leases, fencing
tokens and the change feed, in SQL on the store's one connection.

Owns the per-process state of a shared store (its node id, the leases it holds,
the versions of the rows it has seen) and every statement of the coordinated
protocol (:class:`~lldsched.coordination.CoordinatedStore`, docs/CLUSTER.md).  The
store calls in here holding its lock; every write is one ``BEGIN IMMEDIATE``
transaction, so writers in all processes are serialised by SQLite's write lock
(WAL readers are never blocked), taken in turn through the store's gate
(:mod:`lldsched.stores.sqlite.gate`: SQLite's busy handler alone let a process writing
back to back keep another out past its timeout).

* **Tokens and versions** come from one row each in ``counters``: ``token`` only
  grows, so a takeover always carries a larger token; ``change`` numbers every
  write of a task row (its ``version``) and every removal (a row in ``removed``),
  in commit order, since SQLite commits one writer at a time.  ``record`` numbers the
  records (their ``seq``, one order across tasks); unshared writes never move it, so a
  shared open raises it past the records kept (:func:`count_records`).
* **A claim** picks due rows without a live lease, oldest due first, and writes
  a lease per row with a fresh token (:func:`claim`).
* **A settle** deletes the lease with its token (0 rows: the lease is lost) and
  writes the task's state and the record in the same transaction.
* **The file stays the file**: a claim first makes sure the path still names the
  file this store opened (:meth:`SharedState.check_file`).  A
  file removed or replaced under running processes would split them in two groups,
  the old ones on the unlinked file and the new ones on a new file, each running
  every slot: the old ones refuse to claim instead, with a :class:`StoreError`
  saying so, until they are restarted.  So does a file **rewound in place** (a backup
  written into it, ``sqlite3 tasks.db ".restore backup.db"``, same inode): its
  ``token`` or ``change`` counter is then behind one this process was given or read
  (:meth:`SharedState.rewound`), and a claim would hand out tokens again and run
  slots again that ran since the backup.
* **The change feed** reads rows whose version passed the cursor, skipping the
  versions this process wrote itself; ``PRAGMA data_version`` (which changes when
  another connection commits) makes "nothing changed" cost one pragma.  Removals
  behind a cursor read a day ago are deleted (:mod:`lldsched.stores.removals`).
* **What it remembers per task is bounded like the registry** (:meth:`SharedState.wrote`):
  the version of a row this process wrote is what tells its own writes from the
  others' in the feed, needed only until the cursor passes that version.  A write
  or a removal right after the cursor (nobody else wrote a change since) moves the
  cursor past it at once; a finished task's entries (``seen``, ``settled``) are
  forgotten once the cursor is past its last write, and a deleted task's at its
  removal (:meth:`SharedState.deleted`), so a later version of that row is another
  process's (or this process's next write, which remembers it again).  A task another
  process deleted loses them (``seen``, ``settled``, its lease in ``held``) when the
  feed gives the removal (:meth:`SharedState.changed_rows`); before, ``settled`` and
  ``held`` kept it for good.  A process
  whose feed nothing changes trims the removals itself (:meth:`SharedState.changed`).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import sqlite3
import time
from collections.abc import Collection
from typing import Any

from lldsched.coordination import Claim, Lease, claim_narrowed
from lldsched.errors import StoreError, doc_url
from lldsched.logs import STORE
from lldsched.stores.held import HeldWrites
from lldsched.stores.removals import FeedHorizons
from lldsched.stores.rowvalues import lease_from
from lldsched.stores.sqlite.file import identity
from lldsched.stores.sqlite.gate import WriteGate
from lldsched.stores.sqlite.rows import (
    BLOCKED,
    FINISHED,
    KEPT_COLUMNS,
    RESUME_AT,
    SLOT,
    TASKS,
    fetch,
    immediate,
)
from lldsched.stores.unreadable import Unreadable

__all__ = ["TAKE", "SharedState", "bump", "count_records", "node_id"]

log = logging.getLogger(STORE)

SHARED_SCHEMA = """
CREATE TABLE leases (                    -- at most one per task: a task never overlaps itself
    task_id    TEXT PRIMARY KEY,
    slot       REAL NOT NULL,            -- the due instant claimed
    attempt    INTEGER NOT NULL,         -- the row's attempt counter at the claim
    token      INTEGER NOT NULL UNIQUE,  -- the fencing token
    holder     TEXT NOT NULL,            -- node id "host:pid:random"
    expires_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO counters VALUES ('token', 0), ('change', 0),
    ('record', (SELECT coalesce(max(seq), 0) FROM records));
CREATE TABLE removed (version INTEGER PRIMARY KEY, task_id TEXT NOT NULL);
CREATE INDEX tasks_due ON tasks (next_run_at) WHERE status IN ('scheduled', 'retrying');
CREATE INDEX tasks_version ON tasks (version)
"""
"""The tables and indexes of schema version 3 beyond the columns (also its migration)."""

# The last column: the holder of the task's lease (NOT NULL in leases: NULL here is no
# lease), one that expired, which the claim takes over (Claim.taken_over, taken_from).
_CLAIMABLE = """
SELECT t.id, t.next_run_at, t.attempt, t.version,
       (SELECT l.holder FROM leases l WHERE l.task_id = t.id) FROM tasks t
 WHERE t.status IN ('scheduled', 'retrying') AND t.next_run_at <= :now
   AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.task_id = t.id AND l.expires_at > :now)
 ORDER BY t.next_run_at, t.priority LIMIT :limit
"""
# The same, passing the tasks this process left out (ids as a JSON array, :ids): it cannot
# run them (unreadable.Unreadable).  Used only while there are any, so the usual claim's
# statement stays as it was.
_CLAIMABLE_LEAVING = _CLAIMABLE.replace(
    " ORDER BY", "   AND t.id NOT IN (SELECT value FROM json_each(:ids))\n ORDER BY"
)
# Only the tasks named (ids as a JSON array, :ids): a claim's ``among``, those it leaves
# taken out of it first.
_CLAIMABLE_AMONG = _CLAIMABLE.replace(
    " ORDER BY", "   AND t.id IN (SELECT value FROM json_each(:ids))\n ORDER BY"
)
TAKE = """
INSERT INTO leases (task_id, slot, attempt, token, holder, expires_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (task_id) DO UPDATE SET slot = excluded.slot, attempt = excluded.attempt,
    token = excluded.token, holder = excluded.holder, expires_at = excluded.expires_at
"""
_ROW = f"""
SELECT t.id, t.version, t.definition, t.status, t.next_run_at, t.attempt, t.run_count,
    t.failure_count, t.last_error, t.running, t.waited, {SLOT.format(t="t.")},
    {RESUME_AT.format(t="t.")}, t.grid, {BLOCKED.format(t="t.")},
    {KEPT_COLUMNS},
    EXISTS (SELECT 1 FROM leases l WHERE l.task_id = t.id AND l.holder != :node
            AND l.expires_at > :now)"""
_ROW_OF = f"{_ROW}\nFROM {TASKS} WHERE t.id = :id"
# The feed: the rows and the removals past the cursor in one statement, so one snapshot
# (the last column: 0 a row, 1 a removal).  Read in two statements, a row and then a
# removal committed between them moved the cursor past the row, which was never given.
# A third kind (2) says the change counter is behind the cursor: the file was rewound
# (SharedState.check_changes), said by the same statement at no extra round trip.
_NO_ROW = ", ".join(["NULL"] * 18)
_FEED = f"""{_ROW}, 0
FROM {TASKS} WHERE t.version > :cursor
UNION ALL
SELECT r.task_id, r.version, NULL, NULL, NULL, NULL, NULL, NULL, {_NO_ROW}, 1
FROM removed r WHERE r.version > :cursor
UNION ALL
SELECT NULL, c.value, NULL, NULL, NULL, NULL, NULL, NULL, {_NO_ROW}, 2
FROM counters c WHERE c.name = 'change' AND c.value < :cursor
ORDER BY 2
"""


_CHANGES = "SELECT value FROM counters WHERE name = 'change'"


def node_id() -> str:
    """This process's holder id: ``host:pid:random`` (random: a reused pid is another node)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def bump(connection: sqlite3.Connection, name: str, by: int = 1) -> int:
    """Add ``by`` to the counter ``name`` inside the open transaction; its new value."""
    (value,) = connection.execute(
        "UPDATE counters SET value = value + ? WHERE name = ? RETURNING value", (by, name)
    ).fetchone()
    return int(value)


_COUNT_RECORDS = """
UPDATE counters SET value = max(value, (SELECT coalesce(max(seq), 0) FROM records))
 WHERE name = 'record'
"""


def count_records(
    connection: sqlite3.Connection, *, last: int, gate: WriteGate | None = None
) -> None:
    """At a shared open: raise the ``record`` counter to the last record's ``seq`` if
    it is behind, that is if an unshared store wrote records since (it numbers them
    from the records, and never moves the counter): the next settle's record
    would take a number already used.  ``last``: the records' ``max(seq)`` the open
    read (after its claim), so the usual open reads one row more, not the records
    again.  Unshared stores cannot write meanwhile (the openers of both modes refuse
    each other, and this store holds its claim), so the only other writers are shared
    openers and shared settles, which never leave the counter behind; behind, the
    counter is raised in one write transaction to the ``max(seq)`` read in it, and
    ``max`` never lowers it under any of them.  A write at open, through the store's
    ``gate`` (:mod:`lldsched.stores.sqlite.gate`) as every other shared write."""
    (value,) = connection.execute("SELECT value FROM counters WHERE name = 'record'").fetchone()
    if value < last:
        with immediate(connection, gate):
            connection.execute(_COUNT_RECORDS)


class SharedState:
    """What one process's shared store knows and holds; its owner's lock guards it all."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        *,
        path: str,
        lease: float,
        poll: float,
        records: int,
        gate: WriteGate | None,
    ) -> None:
        """``records``: the records' ``max(seq)``, read at open (:func:`count_records`);
        ``gate``: the store's (None where there is no ``flock``), which every write
        passes, :func:`count_records`' at open too."""
        self.node = node_id()
        self.path = path
        self.file = identity(path)  # (device, inode) of the file opened; see check_file
        self.lease = lease
        self.poll = poll
        self.rejected = 0  # settles refused: the lease was lost
        self.muted = 0  # depth of muted() contexts: saves and deletes write nothing
        self.held: dict[str, int] = {}  # task id -> token of the lease this node holds
        self.settled: dict[str, int] = {}  # task id -> token of its last accepted settle
        # task id -> token of a lease a renewal found lost while its run goes on here (taken
        # over, or gone with its task): that run's RUNNING saves write no state (_save_shared)
        self.lost: dict[str, int] = {}
        self.seen: dict[str, int] = {}  # task id -> the row version this process wrote or read
        self.refetch: set[str] = set()  # rows to return from the next changes() whatever
        self.removals: set[int] = set()  # versions of the removals this process wrote
        self.hold: HeldWrites | None = None  # what the verb's hold under way wrote
        count_records(connection, last=records, gate=gate)
        (cursor,) = connection.execute(_CHANGES).fetchone()
        self.cursor = int(cursor)  # the feed starts at open: load_all gives what was before
        self.horizons = FeedHorizons()  # the cursors read, for trimming `removed`
        self.unreadable = Unreadable(repr(path))  # others' definitions this one cannot load
        self.data_version = _data_version(connection)
        # Every write passes it: the processes' writers take the lock in turn.
        self.gate = gate
        # The largest fencing token given, at open or to a claim of this process since: a
        # claim given one at or below it finds the file rewound (see rewound).
        (given,) = connection.execute("SELECT value FROM counters WHERE name = 'token'").fetchone()
        self.token = int(given)
        self.behind: str | None = None  # why the file was found rewound (see rewound)

    # -- the file ----------------------------------------------------------------------

    def check_file(self) -> None:
        """:class:`StoreError` if the path no longer names the file this store opened
        (removed, or replaced by another file): the other processes, and any process
        started from now on, coordinate through what the path names, and this store's
        claims would run every slot a second time.  One ``stat``."""
        try:
            now = identity(self.path)
        except OSError as exc:
            now, reason = None, f"it is gone ({exc.strerror})"
        else:
            reason = "another file is there now"
        if now != self.file:
            raise StoreError(
                f"the shared store {self.path!r} was removed or replaced since this process "
                f"opened it ({reason}): this process no longer claims anything, since the "
                "others would run the same slots on the new file. Restart it (open the store "
                "again) once the file is where it should be"
            )
        if self.behind is not None:
            raise self.rewound(self.behind)

    def rewound(self, behind: str) -> StoreError:
        """The :class:`StoreError` of a file rewound in place (a backup written into it
        while this process had it open: the same inode, so :meth:`check_file` cannot
        tell), found by a counter ``behind`` what this process was given or read; from
        now on every claim and read of the feed raises it.  Claimed, the tokens given
        since the backup would be given again, and the slots run since run again."""
        self.behind = behind
        return StoreError(
            f"the shared store {self.path!r} was restored or rewound in place since this "
            f"process opened it ({behind}): this process no longer claims anything, since "
            "it would run again the slots run since that copy was taken, with fencing tokens "
            "already given. Stop every process on the file, then restart them (open the "
            "store again) on the file to keep "
            f"({doc_url('docs/OPERATIONS.md#backing-up-and-restoring-a-store')})"
        )

    def check_changes(self, connection: sqlite3.Connection) -> None:
        """:meth:`rewound`'s :class:`StoreError` if the file's change counter is behind
        the feed's cursor: every version this process read or wrote came from that
        counter, which only grows, so the file was rewound under it.  One read."""
        if self.behind is not None:
            raise self.rewound(self.behind)
        (counter,) = connection.execute(_CHANGES).fetchone()
        if counter < self.cursor:
            raise self.rewound(self._counter_behind(counter))

    def _counter_behind(self, counter: int) -> str:
        return (
            f"its change counter is at {counter}, and this process read or wrote "
            f"version {self.cursor} already"
        )

    # -- claims ------------------------------------------------------------------------

    def claim(
        self,
        connection: sqlite3.Connection,
        *,
        now: float,
        limit: int,
        among: Collection[str] | None = None,
        leaving: Collection[str] = (),
    ) -> list[Claim]:
        """Claim up to ``limit`` due rows (see CoordinatedStore.claim: ``among``,
        ``leaving``), none of a task this process left out (it cannot load it:
        :class:`~lldsched.stores.unreadable.Unreadable`); the caller holds the store's lock
        and no transaction is open."""
        if limit <= 0:
            return []
        # Never claimed here: the tasks this process cannot run (left out), and those the
        # caller cannot start now (``among``, ``leaving``).
        narrowed = claim_narrowed(self.unreadable.left_out(), among, leaving)
        statement: str = _CLAIMABLE
        passed: dict[str, object] = {"now": now}
        if narrowed is not None:
            only, ids = narrowed
            statement = _CLAIMABLE_AMONG if only else _CLAIMABLE_LEAVING
            passed["ids"] = json.dumps(ids)
        if not connection.execute(statement, passed | {"limit": 1}).fetchone():
            return []  # nothing due: no write transaction at all (the idle path)
        with immediate(connection, self.gate):
            rows = connection.execute(statement, passed | {"limit": limit}).fetchall()
            claims: list[Claim] = []
            if rows:
                self.check_changes(connection)
                last = bump(connection, "token", len(rows))
                if last - len(rows) < self.token:  # tokens given again: raising rolls back
                    raise self.rewound(
                        f"its fencing tokens restart at {last - len(rows) + 1}, and this "
                        f"process was given {self.token} already"
                    )
                expires_at = now + self.lease
                for token, (task_id, slot, attempt, version, holder) in enumerate(
                    rows, start=last - len(rows) + 1
                ):
                    connection.execute(TAKE, (task_id, slot, attempt, token, self.node, expires_at))
                    # Written elsewhere since this one read it (a row loaded at its
                    # start was read: the cursor is past it, as the settle's test says).
                    stale = not self.knows(task_id, version)
                    claim = Claim(
                        task_id, slot, attempt, token, expires_at, version,
                        taken_over=holder is not None, taken_from=holder,
                    )  # fmt: skip
                    claims.append(claim._replace(stale=True) if stale else claim)
        for held in claims:  # committed: a claim rolled back moved no counter
            self.held[held.task_id] = held.token
            self.lost.pop(held.task_id, None)
            self.token = max(self.token, held.token)
        return claims

    def renew(
        self, connection: sqlite3.Connection, *, tokens: Collection[int], now: float
    ) -> set[int]:
        """Extend this node's leases with ``tokens``; the tokens still held."""
        if not tokens:
            return set()
        wanted = sorted(tokens)
        marks = ",".join("?" * len(wanted))
        with immediate(connection, self.gate):
            rows = connection.execute(
                f"UPDATE leases SET expires_at = ? WHERE holder = ? AND token IN ({marks}) "
                "RETURNING token",
                (now + self.lease, self.node, *wanted),
            ).fetchall()
        kept = {int(token) for (token,) in rows}
        for task_id, token in list(self.held.items()):
            if token in tokens and token not in kept:
                del self.held[task_id]
                self.lost[task_id] = token
        return kept

    def release(self, connection: sqlite3.Connection, *, task_id: str, token: int) -> None:
        """Drop the lease ``(task_id, token)`` if this node still holds it."""
        with immediate(connection, self.gate):
            connection.execute(
                "DELETE FROM leases WHERE task_id = ? AND token = ? AND holder = ?",
                (task_id, token, self.node),
            )
        if self.held.get(task_id) == token:
            del self.held[task_id]

    def take_lease(self, connection: sqlite3.Connection, *, task_id: str, token: int) -> bool:
        """Inside a settle's transaction: delete the lease with ``token``; False if it is
        gone (taken over, or the task removed)."""
        if self.held.get(task_id) == token:
            del self.held[task_id]
        self.lost.pop(task_id, None)  # the run is over: settled, or refused
        deleted = connection.execute(
            "DELETE FROM leases WHERE task_id = ? AND token = ?", (task_id, token)
        ).rowcount
        return deleted == 1

    def leases(self, connection: sqlite3.Connection) -> list[Lease]:
        rows = connection.execute(
            "SELECT task_id, slot, attempt, token, holder, expires_at FROM leases ORDER BY token"
        ).fetchall()
        return [lease_from(row) for row in rows]  # checked: rowvalues.lease_from

    # -- the change feed -----------------------------------------------------------------

    def wrote(self, task_id: str, version: int, *, finished: bool) -> None:
        """This process wrote ``task_id``'s row as ``version`` (inside the transaction
        that bumped it, or right after it committed).  If no other change came between
        the cursor and it, the cursor moves past it: the feed has nothing to skip.  A
        ``finished`` task (:func:`~lldsched.persistence.finished`) whose version
        the cursor passed is forgotten; anything else is remembered in ``seen``."""
        if version == self.cursor + 1:  # the counter was at the cursor: nothing between
            self.cursor = version
        if finished and version <= self.cursor:
            self.seen.pop(task_id, None)
            self.settled.pop(task_id, None)
        else:
            self.seen[task_id] = version

    def deleted(self, task_id: str, removal: int) -> None:
        """This process deleted ``task_id``'s row, its removal numbered ``removal`` (the
        delete committed, or is inside a verb's hold).  Nothing is kept of the row: its
        lease, its version and its last settle go.  The removal moves the cursor past it,
        as :meth:`wrote` moves it past a write, if no other change came between; else its
        version is kept in ``removals``, for the feed to leave out as this process's own.
        Before, every removal was kept there, and the cursor never moved past one: in a
        process no other wrote beside (the feed then never read), once ``purge_retired``
        had deleted a row, ``seen``, ``settled`` and ``removals`` kept an entry for every
        task it deleted, for good (docs/decisions/persistence.md, "A shared SQLite store that only
        this process writes")."""
        self.held.pop(task_id, None)
        self.seen.pop(task_id, None)
        self.settled.pop(task_id, None)
        if removal == self.cursor + 1:  # the counter was at the cursor: nothing between
            self.cursor = removal
        else:
            self.removals.add(removal)

    def knows(self, task_id: str, version: int) -> bool:
        """Whether ``task_id``'s row at ``version`` is one this process wrote or read: the
        feed's cursor passed it, or it is the version this process last wrote or read
        (one written after the cursor).  Else another process wrote it since, and the feed
        has yet to give it."""
        return (type(version) is int and version <= self.cursor) or self.seen.get(
            task_id
        ) == version  # a version that is no integer (a row set wrong) is not known

    def changed(self, connection: sqlite3.Connection) -> bool:
        """True if another connection committed since the last changes() (or a row is
        owed to the feed).  If not, the removals a day behind the cursor are trimmed
        here (:meth:`_trim`), as the feed's read does: a process no other writes beside
        reads no feed, and its own removals filled the table for good."""
        if (
            self.refetch
            or self.behind is not None  # the feed says so at every wake (a StoreError)
            or _data_version(connection) != self.data_version
        ):
            return True
        self._trim(connection)
        return False

    def changed_rows(self, connection: sqlite3.Connection) -> tuple[list[Any], list[Any]]:
        """The raw rows of the feed since the cursor, and the removals; moves the cursor
        and the versions seen.  Decoding is the caller's (outside the lock)."""
        if self.behind is not None:
            raise self.rewound(self.behind)
        self.data_version = _data_version(connection)
        now = time.time()  # the host's clock: every process on one SQLite file shares it
        rows: list[Any] = []
        removed: list[tuple[int, str]] = []
        feed = fetch(connection, _FEED, {"cursor": self.cursor, "node": self.node, "now": now})
        for *row, removal in feed:  # one statement: rows and removals of one snapshot
            if removal == 2:  # the counter behind the cursor: nothing of it is read
                raise self.rewound(self._counter_behind(row[1]))
            if removal:
                removed.append((row[1], row[0]))
            else:
                rows.append(tuple(row))
        fresh = [row for row in rows if self.seen.get(row[0]) != row[1]]
        for task_id in self.refetch:
            if not any(row[0] == task_id for row in fresh):
                fresh += fetch(connection, _ROW_OF, {"id": task_id, "node": self.node, "now": now})
        self.refetch.clear()
        gone = [(version, task_id) for version, task_id in removed if version not in self.removals]
        self.removals.difference_update(version for version, _ in removed)
        for row in fresh:
            self.seen[row[0]] = row[1]
        for _, task_id in gone:  # removed by another process: nothing of the row is kept,
            self.seen.pop(task_id, None)  # as at a removal of this one's (deleted); its
            self.settled.pop(task_id, None)  # lease went with its row (a run going on
            self.held.pop(task_id, None)  # here settles refused, as one taken over)
        # A version that is no integer (a row set wrong past the store: its read refuses
        # it, rowvalues.check_kept) moves nothing.
        versions = [row[1] for row in rows if type(row[1]) is int]
        versions += [version for version, _ in removed]
        if versions:
            self.cursor = max(self.cursor, *versions)
        for row in (*rows, *fresh):  # past the cursor now: a finished row is forgotten
            if row[3] in FINISHED and not row[9] and type(row[1]) is int and row[1] <= self.cursor:
                self.seen.pop(row[0], None)
                self.settled.pop(row[0], None)
        self._trim(connection)
        return fresh, gone

    def _trim(self, connection: sqlite3.Connection) -> None:
        """Delete the removals behind the cursor read a day ago (:mod:`lldsched.stores.
        removals` says when; the cursor is what the feed read, or this process's own
        writes and removals moved it past, each committed by then)."""
        behind = self.horizons.read(self.cursor)
        if behind is not None:
            try:  # the rows read are the caller's now: a busy file only delays the trim
                with immediate(connection, self.gate):
                    connection.execute("DELETE FROM removed WHERE version <= ?", (behind,))
            except sqlite3.OperationalError as exc:  # said with SQLite's reason
                log.warning(
                    "could not trim the removals of %s in %r (%s); trying again later",
                    self.node,
                    self.path,
                    exc,
                )


def _data_version(connection: sqlite3.Connection) -> int:
    (version,) = connection.execute("PRAGMA data_version").fetchone()
    return int(version)
