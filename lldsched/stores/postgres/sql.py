"""The SQL of :class:`~lldsched.stores.postgres.PostgresTaskStore`: its sessions and the
statements that write, read and remove its rows, and the change feed.

The text the store sends, so the store's modules read as the protocol (docs/CLUSTER.md)
and this one as the tables.  The tables themselves (the schema and its upgrades) are
:mod:`lldsched.stores.postgres.tables`'; the claim, the leases and the fenced settle
:mod:`lldsched.stores.postgres.lease_sql`'.  Parameters are named (``%(name)s``,
psycopg's style).

**Time.**  Due instants (``next_run_at``, ``slot``) are the schedulers' epoch
seconds, as everywhere in lldsched.  Lease expiry (``expires_at``) is the
*database's* clock, ``clock_timestamp()`` as epoch seconds (:data:`DB_NOW`): every
node compares against the same clock, so a node whose clock is skewed cannot
shorten or stretch someone else's lease.

**The change feed.**  Every task row carries the id of the transaction that wrote
it last (``xid``, ``pg_current_xact_id()``) and the node that wrote it
(``writer``).  A reader remembers the oldest transaction still in flight when it
last read (``pg_snapshot_xmin``) and next reads every row written by a transaction
at or after it: a transaction that had not committed then is read once it has, so
no write is missed, whatever order the writers commit in; a row read twice is
filtered by its ``version``.  No global counter serialises the writers.
"""

from __future__ import annotations

import hashlib

__all__ = ["DB_NOW", "ID_LOCK", "LIVE", "channel", "listen"]

_CHANNEL_BYTES = 63  # the longest channel name PostgreSQL keeps (NAMEDATALEN - 1)
DB_NOW = "extract(epoch FROM pg_catalog.clock_timestamp())::double precision"
LIVE = "('scheduled', 'retrying')"  # the statuses a claim takes


def channel(schema: str) -> str:
    """The LISTEN/NOTIFY channel of the store whose tables are in ``schema``:
    ``lldsched:<schema>``.  A NOTIFY reaches every session of the *database*, so one
    channel for all (``lldsched``, before) woke the stores of every other schema of it
    (two applications, a test and a staging schema) at each other's writes.  A name
    over the 63 bytes PostgreSQL keeps (it cuts a longer LISTEN name, and ``pg_notify``
    refuses it) is ``lldsched#`` and a digest of the schema instead: one per schema."""
    name = f"lldsched:{schema}"
    if len(name.encode("utf-8")) <= _CHANNEL_BYTES:
        return name
    return f"lldsched#{hashlib.sha256(schema.encode('utf-8')).hexdigest()[:40]}"


def listen(name: str) -> str:
    """``LISTEN`` on the channel ``name`` (:func:`channel`), quoted as an identifier: a
    schema's name may hold any character, and unquoted the name would be folded to
    lower case while ``pg_notify`` takes it as it is."""
    return 'LISTEN "{}"'.format(name.replace('"', '""'))


# Every session of the store: its idle-in-transaction and statement bounds
# (postgres/listen.session_bounds), and a search_path of the store's schema alone (left as
# it is if the dsn's path names no schema that exists or that the user may use: the
# install then refuses the store, saying so, postgres/schema._no_schema).  pg_catalog
# stays implicitly first, and no other schema of the dsn's path, one put before pg_catalog
# included, is searched for the operators and types the statements name
# (docs/decisions/security.md, "The PostgreSQL store's search_path").  Its transactions are READ
# COMMITTED whatever default the database or the role sets: every statement is written
# for it (a claim's SKIP LOCKED passing a row another claim just took, the install reading
# the tables once the lock that waited for another opener's is taken); at REPEATABLE READ
# or SERIALIZABLE those failed, "could not serialize access" (docs/decisions/persistence.md, "The
# PostgreSQL store's sessions are READ COMMITTED").
#
# All of it only on a session that is the client's own: the server's process id is the
# one the connection was given at log-in (%(pid)s, libpq's BackendKeyData).  A pooler
# (PgBouncer) gives its own instead, and in transaction pooling the session is a server
# connection lent for one transaction: a setting made on it stays with it, for whichever
# client is lent it next (another application's statements cut at this store's timeout,
# run in its schema), and is not there for this store's next statement.  Such a session
# sets nothing; what it answers (``direct``, the default isolation) the store checks
# (PostgresConnection._connect, docs/OPERATIONS.md, "Behind PgBouncer").
SESSION = """
SELECT s.direct, pg_catalog.current_setting('default_transaction_isolation'),
       CASE WHEN s.direct THEN
           pg_catalog.set_config('idle_in_transaction_session_timeout', %(idle)s, false) END,
       CASE WHEN s.direct THEN
           pg_catalog.set_config('statement_timeout', %(statement)s, false) END,
       CASE WHEN s.direct THEN
           pg_catalog.set_config('default_transaction_isolation', 'read committed', false) END,
       CASE WHEN s.direct THEN
           pg_catalog.set_config('search_path', CASE WHEN %(schema)s::text = ''
               THEN pg_catalog.current_setting('search_path')
               ELSE pg_catalog.quote_ident(%(schema)s::text) END, false) END
  FROM (SELECT pg_catalog.pg_backend_pid() = %(pid)s AS direct) s
"""

# A pooled session's bounds (SESSION sets none there), for one transaction alone: the
# first statement of each transaction of the store that may hold rows locked while this
# process does something else (a verb's hold, a write of several statements).
LOCAL_BOUNDS = """
SELECT pg_catalog.set_config('idle_in_transaction_session_timeout', %(idle)s, true),
       pg_catalog.set_config('statement_timeout', %(statement)s, true)
"""

# An id's changes, serialised: a removal (the store's ``_delete``) and every insert of a
# row (FIRST_VERSION's trigger) take this transaction-level lock on the id first, so a
# registration that races a removal of its id on another node waits for it to commit,
# and then reads its removal.  Two ids whose hashes meet only wait for each other.
# (The install's lock is the one-key form of the same number: another lock space.)
ID_LOCK = "pg_catalog.pg_advisory_xact_lock(7106659, pg_catalog.hashtext({}))"

LOCK_ID = f"SELECT {ID_LOCK.format('%(id)s::text')}"  # a statement of its own: see REMOVE

# A verb's hold (PostgresHolds.verb_held), once its id's LOCK_ID is taken: its task's
# row and those of the other tasks it may write (a cancel's dependents), locked in the
# order of their ids, all in one statement (the rows are locked as the sort hands them
# out).  Locked one by one as each was written, two cancels that fail the same dependents
# (learnt in other orders by their processes) each held one the other waited for.
LOCK_HELD = "SELECT 1 FROM tasks WHERE id = ANY(%(ids)s::text[]) ORDER BY id FOR UPDATE"

# A removal, once its transaction holds LOCK_ID (taken by a statement before, so this
# one's snapshot sees a row registered by the transaction it waited for): the row deleted
# first, its lock taken (a write that committed meanwhile is the one deleted), then its
# removal one past the version the row had then.  A removal numbered from a read before
# the row's lock was one version short when a write committed between the two: a feed
# that had read that write skipped the removal, and the task lived on there.  A row whose
# run is in flight on another node (a live lease it holds, read in the statement's
# snapshot, before the delete's cascade drops it) is announced on the channel, as
# NOTIFY_IF_EARLIEST announces any other verb's write to it: that node stops the run at
# once (its timer wakes and reads the removal), not at its next renewal or poll.
REMOVE = f"""
WITH gone AS (DELETE FROM tasks WHERE id = %(id)s RETURNING id, version),
removed AS (
    INSERT INTO removals (task_id, version, writer) SELECT id, version + 1, %(node)s FROM gone
    RETURNING task_id)
SELECT pg_catalog.pg_notify(%(channel)s, %(node)s) FROM removed
 WHERE EXISTS (SELECT FROM leases WHERE task_id = %(id)s AND holder <> %(node)s
                                    AND expires_at > {DB_NOW})
"""

# A write that resumes a paused task (or pauses a resumed one again) marks the row
# ``resumed``: its due instant is then the resume's "now, a slot slept through", which a
# run in flight elsewhere must overrule at its settle (see _WHEN).  Any other write
# (a reschedule, a run_now, a settle) clears the mark.  Schema version 2.
_RESUMED = f"""(tasks.status = 'paused' AND %(status)s IN {LIVE})
    OR (%(status)s = 'paused' AND tasks.resumed)"""

_STATE = f"""status = %(status)s, next_run_at = %(next_run_at)s, attempt = %(attempt)s,
    run_count = %(run_count)s, failure_count = %(failure_count)s, last_error = %(last_error)s,
    running = %(running)s, waited = %(waited)s, slot = %(slot)s, slot_due = %(next_run_at)s,
    resume_at = %(resume_at)s, grid = %(grid)s, blocked_due = %(blocked_due)s,
    blocked_slot = %(blocked_slot)s, blocked_next = tasks.version + 1,
    version = tasks.version + 1, writer = %(writer)s,
    xid = pg_catalog.pg_current_xact_id(), resumed = {_RESUMED},
    failed_seq = CASE WHEN %(status)s = 'failed'
        THEN coalesce(tasks.failed_seq, pg_catalog.nextval('dead_letter_seq')) END"""

UPDATE = f"UPDATE tasks SET {_STATE} WHERE id = %(id)s RETURNING version"

# Whether a node removed the id (a removal kept: FIRST_VERSION's index serves it); a row
# gone without one was deleted by hand (PostgresWrites._deleted_by_hand).
REMOVED = "SELECT 1 FROM removals WHERE task_id = %(id)s LIMIT 1"

UPSERT = f"""
INSERT INTO tasks (id, name, definition, priority, status, next_run_at, attempt, run_count,
    failure_count, last_error, running, waited, slot, slot_due, resume_at, grid, blocked_due,
    blocked_slot, blocked_next, failed_seq, version, writer)
VALUES (%(id)s, %(name)s, %(definition)s, %(priority)s, %(status)s, %(next_run_at)s,
    %(attempt)s, %(run_count)s, %(failure_count)s, %(last_error)s, %(running)s, %(waited)s,
    %(slot)s, %(next_run_at)s, %(resume_at)s, %(grid)s, %(blocked_due)s, %(blocked_slot)s,
    NULL,  -- blocked_next: the version is FIRST_VERSION's (BLOCKED_VERSION)
    CASE WHEN %(status)s = 'failed' THEN pg_catalog.nextval('dead_letter_seq') END,
    1, %(writer)s)  -- the version: FIRST_VERSION's trigger sets it
ON CONFLICT (id) DO UPDATE SET name = excluded.name, definition = excluded.definition,
    priority = excluded.priority, {_STATE}
RETURNING version
"""

# A registration: refused (no row returned) when another node registered the id.
INSERT_NEW = """
INSERT INTO tasks (id, name, definition, priority, status, next_run_at, attempt, run_count,
    failure_count, last_error, running, waited, slot, slot_due, resume_at, grid, blocked_due,
    blocked_slot, blocked_next, failed_seq, version, writer)
VALUES (%(id)s, %(name)s, %(definition)s, %(priority)s, %(status)s, %(next_run_at)s,
    %(attempt)s, %(run_count)s, %(failure_count)s, %(last_error)s, %(running)s, %(waited)s,
    %(slot)s, %(next_run_at)s, %(resume_at)s, %(grid)s, %(blocked_due)s, %(blocked_slot)s,
    NULL,  -- blocked_next: the version is FIRST_VERSION's (BLOCKED_VERSION)
    CASE WHEN %(status)s = 'failed' THEN pg_catalog.nextval('dead_letter_seq') END,
    1, %(writer)s)  -- the version: FIRST_VERSION's trigger sets it
ON CONFLICT (id) DO NOTHING
RETURNING version
"""

# A write that makes its task the earliest due of all wakes every node's timer; so does
# one to a row whose run is in flight on another node (a live lease it holds): a pause,
# cancel or resume written elsewhere, which that node's run must follow (its flag raised)
# now, not at its next poll.  The run path never writes such a row (a claim and a settle
# are its holder's own, a misfire decision its claimer's, a resave unleased rows'), so it
# notifies as before.
NOTIFY_IF_EARLIEST = f"""
SELECT pg_catalog.pg_notify(%(channel)s, %(node)s)
 WHERE %(status)s IN {LIVE} AND %(next_run_at)s::double precision IS NOT NULL
   AND %(next_run_at)s::double precision < coalesce(
       (SELECT pg_catalog.min(next_run_at) FROM tasks WHERE status IN {LIVE} AND id <> %(id)s),
       'Infinity')
    OR EXISTS (SELECT FROM leases WHERE task_id = %(id)s AND holder <> %(node)s
                                     AND expires_at > {DB_NOW})
"""

INSERT_RECORD = """
INSERT INTO records (task_id, attempt, due, slot, worker, started, finished, ok, error,
    timed_out, misfire, result, token, name, node)
VALUES (%(task_id)s, %(attempt)s, %(due)s, %(slot)s, %(worker)s, %(started)s, %(finished)s,
    %(ok)s, %(error)s, %(timed_out)s, %(misfire)s, %(result)s, %(token)s, %(name)s, %(node)s)
"""

TRIM_RECORDS = """
DELETE FROM records WHERE task_id = %(id)s AND seq <= (
    SELECT seq FROM records WHERE task_id = %(id)s ORDER BY seq DESC OFFSET %(keep)s LIMIT 1)
"""

# A row's ``slot`` (TaskSnapshot.slot) is written with the due instant it belongs to
# (``slot_due``), and read only while the row is still due then: a node of an older
# release (a rolling upgrade) writes rows without it, and its settle or reschedule moves
# the due instant, which leaves the slot behind; read, a later run would record it.  The
# same rule as SQLite's (sqlite/rows.SLOT).
_SLOT = "CASE WHEN t.slot_due = t.next_run_at THEN t.slot END"

# Whether a row's ``waited`` is the slot its plan resumes at (TaskSnapshot.resumes), or
# where its runs end (TaskSnapshot.until): the row keeps that slot (``resume_at``, written
# by rowvalues.resume_at), read with ``waited`` as SQLite's is (rowvalues.plan_ends): a row an
# older release wrote (a rolling upgrade) reads neither, as before.
_RESUME_AT = "t.resume_at"

# The slot a BLOCKED row's wait was found blocked at, when a reschedule moved its next
# slot (TaskSnapshot.blocked_due, blocked_slot), is written with the row's version
# (``blocked_next``; a write that keeps the values, REDEFINE and SETTLE, moves it with the
# version) and read only while the row is still that version, as SQLite's is
# (sqlite/rows.BLOCKED): a node of an older release writes rows without it, and a later
# wait it found blocked, at the same due instant too, would read an earlier wait's slot.
# An insert's version is FIRST_VERSION's, which the statement cannot name: the row's
# write that keeps the values sets it after, in its transaction (BLOCKED_VERSION).
_BLOCKED = (
    "CASE WHEN t.blocked_next = t.version THEN t.blocked_due END, "
    "CASE WHEN t.blocked_next = t.version THEN t.blocked_slot END"
)
BLOCKED_VERSION = "UPDATE tasks SET blocked_next = version WHERE id = %(id)s"

SNAPSHOT_COLUMNS = (  # the state, what is kept beside it (rowvalues.check_kept), the version
    "t.id, t.definition, t.status, t.next_run_at, t.attempt, t.run_count, t.failure_count, "
    f"t.last_error, t.running, t.waited, {_SLOT}, {_RESUME_AT}, t.grid, {_BLOCKED}, "
    "t.failed_seq, t.priority, "
    "t.version, "
    "t.slot_due, k.slot, k.attempt, k.token, k.holder, k.expires_at, t.version"
)
"""Read ``FROM`` :data:`TASKS`: the task's lease (``k``, NULL for none) is checked with the
row, as SQLite's is (a NaN or infinite ``expires_at`` is never past on the database's
clock: the task was held for good by a lease nobody holds)."""
TASKS = "tasks t LEFT JOIN leases k ON k.task_id = t.id"
"""A task's row and its lease, if any (:data:`SNAPSHOT_COLUMNS`)."""

RECORD_COLUMNS = (  # the name the run had; a record written before schema 3 has none kept
    "r.task_id, coalesce(r.name, t.name), r.attempt, r.due, r.slot, r.worker, r.started, "
    "r.finished, r.ok, r.error, r.timed_out, r.misfire, r.result, r.token, r.node, r.seq"
)

# A row's definition alone (its state kept): a take-over of a row this node left out, and
# a redefinition during a run whose lease a renewal found lost (the row's state is its new
# holder's; writer '' so every node, this one included, reads the row again).
REDEFINE = """
UPDATE tasks t SET name = %(name)s, definition = %(definition)s, priority = %(priority)s,
       version = t.version + 1, writer = %(writer)s, xid = pg_catalog.pg_current_xact_id(),
       blocked_next = CASE WHEN t.blocked_next = t.version THEN t.version + 1 END  -- _BLOCKED
  FROM (VALUES (1)) AS one LEFT JOIN leases k ON k.task_id = %(id)s  -- its lease, if any
 WHERE t.id = %(id)s"""

# Whether a task's row is one this node wrote or read (a purge deletes only such a row):
# written by this node last, before the feed's last horizon (read by it), or at the version
# the feed last gave (NULL: none) unless another node removed the id since that horizon.  A
# row registered again starts past its id's removals (FIRST_VERSION, since schema 6 for
# every writer), so its version is never the one the feed gave; the removal test stays for
# a database an older release still writes (a rolling upgrade).  The row is locked until
# the purge's transaction ends (after the id's LOCK_ID: the lock order).
_KNOWN = """(t.writer = %(node)s OR t.xid < %(since)s::text::xid8
       OR (t.version IS NOT DISTINCT FROM %(seen)s::bigint AND NOT EXISTS (
           SELECT 1 FROM removals r WHERE r.task_id = t.id
              AND r.xid >= %(since)s::text::xid8 AND r.writer <> %(node)s)))"""
KNOWN_ROW = f"SELECT {_KNOWN}\n  FROM tasks t WHERE t.id = %(id)s FOR UPDATE"

# KNOWN_ROW, and no live lease holds the row (the database's clock): a row an outage left
# stale is written again only so (PostgresWrites.resave); a leased row is its holder's.
KNOWN_UNLEASED = f"""
SELECT {_KNOWN}
   AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.task_id = t.id AND l.expires_at > {DB_NOW})
  FROM tasks t WHERE t.id = %(id)s FOR UPDATE
"""

# A live lease of another node on a row (its run in flight there), asked by a purge once
# KNOWN_ROW locked the row: a statement of its own, so that its snapshot sees the lease of a
# claim that held the row's lock before (a claim locks the row first and skips it after).
HELD_ELSEWHERE = f"""
SELECT 1 FROM leases l
 WHERE l.task_id = %(id)s AND l.holder <> %(node)s AND l.expires_at > {DB_NOW}
"""

# The feed's first cursor.
HORIZON = "SELECT pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())"

# The change feed, one statement: its horizon (the snapshot's xmin, the next cursor) and
# the rows and removals written by other nodes since the cursor, all in the statement's
# one snapshot (pg_current_snapshot() is the active one).  The first row is the horizon;
# its id column holds lldsched_meta's schema version, so that a process connected before
# a newer release upgraded the database sees it at its next poll, without a round trip of
# its own (PostgresCoordination.changes refuses from then on: postgres/schema.newer).
# _LIVE_ROW_WINS: a removal of an id that has a row in the snapshot came before that row
# (which was written after the removal deleted the one before it, or the removal found
# none): the id's state is the row.  So a removal is not given when that row is not given
# too (this node's own, or one read before, below the cursor), and
# PostgresCoordination.changes applies a removal given with its id's row before the row.
# Given alone, a removal read by the node that registered the id again dropped the task
# it had just registered, and one sorted after the new row (transaction ids are not
# commit order) dropped a task the database holds, from that node for good.
CHANGES = f"""
SELECT 0 AS kind, pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())::text AS xid,
       (SELECT m.value FROM lldsched_meta m WHERE m.name = 'schema') AS id,
       NULL AS definition, NULL AS status, NULL::double precision AS next_run_at,
       NULL::integer AS attempt, NULL::integer AS run_count, NULL::integer AS failure_count,
       NULL AS last_error, NULL::boolean AS running, NULL::double precision AS waited,
       NULL::double precision AS slot, NULL::double precision AS resume_at,
       NULL::double precision AS grid, NULL::double precision AS blocked_due,
       NULL::double precision AS blocked_slot,
       NULL::bigint AS failed_seq, NULL::integer AS priority,
       NULL::bigint AS kept_version, NULL::double precision AS slot_due,
       NULL::double precision AS lease_slot, NULL::integer AS lease_attempt,
       NULL::bigint AS token, NULL AS holder, NULL::double precision AS expires_at,
       NULL::bigint AS version,
       NULL::boolean AS leased
UNION ALL
SELECT 1, t.xid::text, {SNAPSHOT_COLUMNS},
       coalesce(k.holder <> %(node)s AND k.expires_at > {DB_NOW}, false)
  FROM {TASKS} WHERE t.xid >= %(since)s::text::xid8 AND t.writer <> %(node)s
UNION ALL
SELECT 2, r.xid::text, r.task_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       r.version,
       NULL
  FROM removals r WHERE r.xid >= %(since)s::text::xid8 AND r.writer <> %(node)s
   AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = r.task_id  -- _LIVE_ROW_WINS
                      AND (t.xid < %(since)s::text::xid8 OR t.writer = %(node)s))
ORDER BY kind
"""

# Removals every node has read: committed before a feed horizon this store read
# REMOVALS_KEPT ago (lldsched.stores.removals).
TRIM_REMOVALS = "DELETE FROM removals WHERE xid < %(below)s::text::xid8"

# The rows of tasks whose settle (or misfire decision) this node had refused, as the feed
# gives a row, whoever wrote them last and whatever version the feed gave: the rows of
# the runs that took them over, read by the next changes() so that this node's registry
# follows them (PostgresCoordination.changes) instead of what its refused run decided.
REREAD = f"""
SELECT 1, t.xid::text, {SNAPSHOT_COLUMNS},
       coalesce(k.holder <> %(node)s AND k.expires_at > {DB_NOW}, false)
  FROM {TASKS} WHERE t.id = ANY(%(ids)s::text[])
"""
