"""The SQL of :class:`~lldsched.stores.postgres.PostgresTaskStore`: its schema and statements.

One place for the text the store sends, so the store's modules read as the
protocol (docs/CLUSTER.md) and this one as the tables.  Parameters are named
(``%(name)s``, psycopg's style).

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

__all__ = ["SCHEMA_VERSION"]

SCHEMA_VERSION = 10
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
# (postgres_listen.session_bounds), and a search_path of the store's schema alone (left as
# it is if the dsn's path names no schema that exists or that the user may use: the
# install then refuses the store, saying so, postgres_schema._no_schema).  pg_catalog
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

# Where a new store's tables would be created, and whether they may be (the install, on a
# database or schema without them; postgres_schema._no_schema says why not): the schema
# the session's search_path selects (NULL: none of its schemas exists or may be used),
# the path, the session's user, whether it may create there, and the first schema of the
# path that exists but that the user may not use (no USAGE: PostgreSQL skips it as if it
# did not exist, and a CREATE SCHEMA the message suggested would fail).
WHERE_TO_CREATE = """
SELECT pg_catalog.current_schema(), pg_catalog.current_setting('search_path'), current_user,
       COALESCE(pg_catalog.has_schema_privilege(pg_catalog.current_schema(), 'CREATE'), false),
       (SELECT n.nspname FROM pg_catalog.unnest(pg_catalog.string_to_array(
                pg_catalog.current_setting('search_path'), ',')) WITH ORDINALITY AS p (name, at)
          CROSS JOIN LATERAL pg_catalog.btrim(pg_catalog.btrim(p.name), '"') AS q (name)
          JOIN pg_catalog.pg_namespace n
            ON n.nspname = CASE WHEN q.name = '$user' THEN current_user::text ELSE q.name END
         WHERE NOT pg_catalog.has_schema_privilege(n.oid, 'USAGE')
         ORDER BY p.at LIMIT 1)
"""

# An id's changes, serialised: a removal (the store's ``_delete``) and every insert of a
# row (FIRST_VERSION's trigger) take this transaction-level lock on the id first, so a
# registration that races a removal of its id on another node waits for it to commit,
# and then reads its removal.  Two ids whose hashes meet only wait for each other.
# (The install's lock is the one-key form of the same number: another lock space.)
ID_LOCK = "pg_catalog.pg_advisory_xact_lock(7106659, pg_catalog.hashtext({}))"

# The version a new row of an id starts at: one past every removal of the id still kept
# (each one past the row it removed), so an id's versions grow in commit order across a
# removal and a feed never takes the new row for one it read before.  Set by a trigger on
# every insert into ``tasks`` (schema 6), whoever inserts: a statement's own value was
# computed in its snapshot, taken before it waited for a removal still in flight, and a
# process of an older release (a rolling upgrade) inserts version 1.  The trigger takes
# ID_LOCK first, then reads the removals in a snapshot of its own (a VOLATILE function's
# statement: READ COMMITTED gives it one), after the removal it waited for committed.
# Once an id's removals are trimmed (lldsched.stores.removals), every feed that read past
# them has forgotten the id (PostgresCoordination.changes), and 1 is new again.
FIRST_VERSION = f"""
CREATE FUNCTION lldsched_first_version() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM {ID_LOCK.format("NEW.id")};
    NEW.version := (SELECT coalesce(pg_catalog.max(r.version), 0) + 1 FROM removals r
                     WHERE r.task_id = NEW.id);
    RETURN NEW;
END $$;
CREATE TRIGGER tasks_first_version BEFORE INSERT ON tasks
    FOR EACH ROW EXECUTE FUNCTION lldsched_first_version();
"""

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

SCHEMA = f"""
CREATE TABLE lldsched_meta (name text PRIMARY KEY, value text NOT NULL);
CREATE TABLE tasks (
    position      bigint GENERATED ALWAYS AS IDENTITY,  -- the order tasks were first saved in
    id            text PRIMARY KEY,
    name          text NOT NULL,
    definition    text NOT NULL,            -- JSON, see lldsched.stores.codec
    status        text NOT NULL,
    next_run_at   double precision,
    priority      integer NOT NULL,         -- claim order among equal due instants
    attempt       integer NOT NULL,
    run_count     integer NOT NULL,
    failure_count integer NOT NULL,
    last_error    text,
    running       boolean NOT NULL,
    failed_seq    bigint,                   -- dead-letter order; NULL unless failed
    version       bigint NOT NULL,          -- bumped by every write of the row
    writer        text NOT NULL,            -- the node that wrote it ('' : every node reads it)
    resumed       boolean NOT NULL DEFAULT false,  -- the due instant is a resume's (_RESUMED)
    waited        double precision,         -- the slot a run_now put off (TaskSnapshot.waited)
    slot          double precision,         -- a resumed plan's run: its slot (TaskSnapshot.slot),
    slot_due      double precision,         -- read while next_run_at is this (_SLOT)
    resume_at     double precision,         -- waited, when it is the slot to resume at (_RESUMES)
    grid          double precision,         -- a fixed rate's grid origin (TaskSnapshot.grid)
    blocked_due   double precision,         -- the slot a moved wait was found blocked at
    blocked_slot  double precision,         -- (TaskSnapshot.blocked_due and blocked_slot),
    blocked_next  double precision,         -- read while version is this (_BLOCKED)
    xid           xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id()  -- the feed's cursor
);
CREATE INDEX tasks_due ON tasks (next_run_at, priority) WHERE status IN {LIVE};
CREATE INDEX tasks_xid ON tasks (xid);
CREATE TABLE removals (                     -- tasks removed, for the other nodes' feeds
    task_id text NOT NULL,
    version bigint NOT NULL,
    writer  text NOT NULL,
    xid     xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id()
);
CREATE INDEX removals_xid ON removals (xid);
CREATE INDEX removals_task ON removals (task_id);  -- FIRST_VERSION, KNOWN_ROW (version 5)
CREATE TABLE records (
    task_id   text NOT NULL,
    seq       bigint GENERATED ALWAYS AS IDENTITY,
    attempt   integer NOT NULL,
    due       double precision NOT NULL,
    slot      double precision NOT NULL,
    worker    integer NOT NULL,
    started   double precision NOT NULL,
    finished  double precision NOT NULL,
    ok        boolean NOT NULL,
    error     text,
    timed_out boolean NOT NULL,
    misfire   text,
    result    text,
    token     bigint,                       -- the claim's fencing token
    name      text,                         -- the task's name at the run; NULL: before 3
    node      text,                         -- the process that ran it; NULL: none, or before 7
    PRIMARY KEY (task_id, seq)
);
CREATE TABLE leases (                       -- at most one per task: a task never overlaps itself
    task_id    text PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    slot       double precision NOT NULL,   -- the due instant claimed
    attempt    integer NOT NULL,
    token      bigint NOT NULL UNIQUE,      -- fencing token
    holder     text NOT NULL,               -- node id "host:pid:random"
    expires_at double precision NOT NULL,   -- the database's clock
    version    bigint NOT NULL              -- the task row's version when claimed
);
CREATE INDEX leases_holder ON leases (holder);
CREATE SEQUENCE fencing_token;
CREATE SEQUENCE dead_letter_seq;
{FIRST_VERSION}
INSERT INTO lldsched_meta VALUES ('schema', '{SCHEMA_VERSION}');
"""

# In-place upgrades, keyed by the version they upgrade from: each brings a database of
# that version to the next one, inside the opening transaction (whole or not at all).
UPGRADES = {
    1: "ALTER TABLE tasks ADD COLUMN resumed boolean NOT NULL DEFAULT false;"
    " ALTER TABLE tasks ADD COLUMN waited double precision;"
    " UPDATE lldsched_meta SET value = '2' WHERE name = 'schema';",
    2: "ALTER TABLE records ADD COLUMN name text;"  # the name each run had
    " UPDATE lldsched_meta SET value = '3' WHERE name = 'schema';",
    3: "ALTER TABLE tasks ADD COLUMN slot double precision;"  # a resumed plan's run's slot
    " ALTER TABLE tasks ADD COLUMN slot_due double precision;"
    " UPDATE lldsched_meta SET value = '4' WHERE name = 'schema';",
    4: "CREATE INDEX removals_task ON removals (task_id);"  # a new row's first version
    " UPDATE lldsched_meta SET value = '5' WHERE name = 'schema';",
    5: FIRST_VERSION  # set on every insert, whoever inserts
    + " UPDATE lldsched_meta SET value = '6' WHERE name = 'schema';",
    6: "ALTER TABLE records ADD COLUMN node text;"  # the process each run had
    " UPDATE lldsched_meta SET value = '7' WHERE name = 'schema';",
    7: "ALTER TABLE tasks ADD COLUMN resume_at double precision;"  # a plan's slot to resume at
    " UPDATE lldsched_meta SET value = '8' WHERE name = 'schema';",
    8: "ALTER TABLE tasks ADD COLUMN grid double precision;"  # a fixed rate's grid origin
    " UPDATE lldsched_meta SET value = '9' WHERE name = 'schema';",
    9: "ALTER TABLE tasks ADD COLUMN blocked_due double precision;"  # the slot a moved wait
    " ALTER TABLE tasks ADD COLUMN blocked_slot double precision;"  # was found blocked at
    " ALTER TABLE tasks ADD COLUMN blocked_next double precision;"
    " UPDATE lldsched_meta SET value = '10' WHERE name = 'schema';",
}

TABLES = ("lldsched_meta", "tasks", "removals", "records", "leases")

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
# same rule as SQLite's (sqlite_rows.SLOT).
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
# (sqlite_rows.BLOCKED): a node of an older release writes rows without it, and a later
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

# Lock order, everywhere: the id's LOCK_ID (taken by a removal, a purge, a misfire's
# write and every insert of a row, never by the claim or the settle), a task's row, then
# its lease (the claim below, the settle, a delete's cascade); renewal and release lock
# leases only.  Two orders would deadlock.
#
# A lease of this node whose token it does not hold (%(held)s: the tokens of the leases it
# holds): a claim of its own that committed while its reply was lost (the connection cut
# after the COMMIT).  Nothing ran under it (its token never reached the runtime), so the
# node's next claim takes it again at once, as a lease nobody holds, not one taken over;
# before, the slot waited a whole lease and was then taken over as if this process had
# died mid-run.  Every other way a lease of this node's leaves its held set drops the
# lease first (a settle, a release) or finds it no longer this node's (a renewal).
_LOST_REPLY = "({0}.holder = %(node)s AND {0}.token <> ALL(%(held)s::bigint[]))"

# The claim, one statement.  FOR UPDATE OF t SKIP LOCKED: concurrent claimers pass each
# other's rows instead of queueing behind them.  A lease row that exists is replaced
# only if it has expired by the time its lock is ours (the ON CONFLICT WHERE is
# evaluated on the latest committed row): a renewal that committed first wins; or if
# it is one of this node's lost replies (_LOST_REPLY).
CLAIM = f"""
WITH due AS (
    SELECT t.id, t.next_run_at, t.attempt, t.version, t.priority, t.writer,
           l.task_id IS NOT NULL AND NOT {_LOST_REPLY.format("l")} AS taken_over
      FROM tasks t LEFT JOIN leases l ON l.task_id = t.id
     WHERE t.status IN {LIVE} AND t.next_run_at <= %(now)s
       AND (l.task_id IS NULL OR l.expires_at <= {DB_NOW} OR {_LOST_REPLY.format("l")})
     ORDER BY t.next_run_at, t.priority
     LIMIT %(limit)s
     FOR UPDATE OF t SKIP LOCKED),
claimed AS (
    INSERT INTO leases (task_id, slot, attempt, token, holder, expires_at, version)
    SELECT id, next_run_at, attempt, pg_catalog.nextval('fencing_token'), %(node)s,
           {DB_NOW} + %(lease)s, version FROM due
    ON CONFLICT (task_id) DO UPDATE SET slot = excluded.slot, attempt = excluded.attempt,
        token = excluded.token, holder = excluded.holder, expires_at = excluded.expires_at,
        version = excluded.version
     WHERE leases.expires_at <= {DB_NOW} OR {_LOST_REPLY.format("leases")}
    RETURNING task_id, slot, attempt, token, expires_at, version)
SELECT c.task_id, c.slot, c.attempt, c.token, c.expires_at, c.version, d.taken_over, d.writer
  FROM claimed c JOIN due d ON d.id = c.task_id
 ORDER BY c.slot, d.priority
"""

# The same, passing the tasks this node left out (it cannot run them: unreadable.Unreadable)
# and those the caller leaves (``leaving``); or only the tasks named (``among``).  Used
# only while the claim is narrowed (coordination.claim_narrowed), so the usual claim's
# statement stays as it was.
_DUE_ORDER = "     ORDER BY t.next_run_at"
CLAIM_LEAVING = CLAIM.replace(_DUE_ORDER, f"       AND t.id <> ALL(%(ids)s)\n{_DUE_ORDER}", 1)
CLAIM_AMONG = CLAIM.replace(_DUE_ORDER, f"       AND t.id = ANY(%(ids)s)\n{_DUE_ORDER}", 1)

# Renewal extends every lease this node still holds, expired or not: an expired lease
# that nobody took over is still the holder's (no newer token exists, nothing ran twice),
# as on SQLite.  A claim that locked the row first replaced the token: not renewed.  A
# renewal that committed first makes the claim's ON CONFLICT WHERE fail: not taken.
RENEW = f"""
UPDATE leases SET expires_at = {DB_NOW} + %(lease)s
 WHERE holder = %(node)s AND token = ANY(%(tokens)s)
RETURNING token
"""

# A row's definition alone (its state kept): a take-over of a row this node left out, and
# a redefinition during a run whose lease a renewal found lost (the row's state is its new
# holder's; writer '' so every node, this one included, reads the row again).
REDEFINE = """
UPDATE tasks t SET name = %(name)s, definition = %(definition)s, priority = %(priority)s,
       version = t.version + 1, writer = %(writer)s, xid = pg_catalog.pg_current_xact_id(),
       blocked_next = CASE WHEN t.blocked_next = t.version THEN t.version + 1 END  -- _BLOCKED
  FROM (VALUES (1)) AS one LEFT JOIN leases k ON k.task_id = %(id)s  -- its lease, if any
 WHERE t.id = %(id)s"""

SETTLED = """
SELECT g.token, (SELECT pg_catalog.count(*) FROM records c
                  WHERE c.task_id = g.id AND c.token = g.token)
  FROM unnest(%(id)s::text[], %(token)s::bigint[], %(attempt)s::integer[],
              %(started)s::double precision[], %(finished)s::double precision[])
    AS g(id, token, attempt, started, finished)
 WHERE EXISTS (SELECT 1 FROM records r WHERE r.task_id = g.id AND r.token = g.token
                  AND r.attempt = g.attempt AND r.started = g.started
                  AND r.finished = g.finished)
"""  # the settles of a batch whose reply was lost that were written (each run's record),
# and how many records under its token that write stored (those queued after it: not)
# A row a shared write never makes (a held run's RUNNING save writes nothing): one a
# process left as it died mid-run outside the protocol, for ``owe`` to decide; locked.
RUNNING_UNLEASED = """
SELECT 1 FROM tasks t WHERE t.id = %(id)s AND t.status = 'running'
   AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.task_id = t.id)
   FOR UPDATE
"""
# The expired lease standing for the attempt that process had in flight (expired at 0, the
# epoch: a finite value, as every lease's, for every node's read): a claim takes it over
# (``taken_over``), the attempt owed.
OWED_LEASE = """
INSERT INTO leases (task_id, slot, attempt, token, holder, expires_at, version)
SELECT t.id, %(slot)s, %(attempt)s, pg_catalog.nextval('fencing_token'), %(holder)s,
       0, t.version
  FROM tasks t WHERE t.id = %(id)s
"""
RELEASE = "DELETE FROM leases WHERE task_id = %(task_id)s AND token = %(token)s"
LOCK_TASK = "SELECT 1 FROM tasks WHERE id = %(task_id)s FOR UPDATE"  # before its lease
MOVE_LEASE = """
UPDATE leases SET slot = %(slot)s WHERE task_id = %(task_id)s AND token = %(token)s
"""  # a misfire's catch-up run keeps the claim: its lease names the new slot

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

# The last fencing token the sequence gave (0 before its first): read at open, the floor
# of the tokens this node's claims may be given (PostgresCoordination.claim: a token at
# or below it means the database was restored under this node).
GIVEN = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing_token"

# The change feed, one statement: its horizon (the snapshot's xmin, the next cursor) and
# the rows and removals written by other nodes since the cursor, all in the statement's
# one snapshot (pg_current_snapshot() is the active one).  The first row is the horizon;
# its id column holds lldsched_meta's schema version, so that a process connected before
# a newer release upgraded the database sees it at its next poll, without a round trip of
# its own (PostgresCoordination.changes refuses from then on: postgres_schema.newer).
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

# A run "owns" its task's row at its settle unless another node wrote the row during the
# run (its version moved past the claim's, and the writer is not this node): then that
# write (a pause, a cancel, a reschedule) wins and the run adds only its counts and its
# record; writer '' makes every node, this one included, read the row again.  The one
# exception is the row's *when*: a write that left it where the claim found it (the
# lease's slot and attempt: a pause, a modify) did not decide the next slot, so the run's
# settle does, as it does in one process; otherwise a pause made during the run kept the
# slot that had just run, and a resume ran it again.  Nor did a resume (the row is
# ``resumed``): made where the run is not, it moved the due instant to now as for a slot
# slept through, and one process returns a task resumed mid-run to its run instead, which
# decides the next slot and the status (a run that ended the task ends it; a run that
# followed the pause here but not yet the resume is a runnable task again, _RUNNABLE).
# Nor did a write this node had followed before its run finished (_FOLLOWED: the row's
# version is the one its feed last read, and the settle's definition is that row's): a
# reschedule or a replacement with another schedule, which this node's registry took as
# one process takes it, the new schedule counted from the run's finish.  Only a write it
# had not followed keeps its own when (the new schedule counted from that write), and
# the row is read back here.  The same rule as SQLite's (sqlite_coordinated._settle).
_OWN = "(t.version = s.claimed OR t.writer = %(node)s)"
_AS_RESUMED = f"(t.resumed AND t.status IN {LIVE})"
_FOLLOWED = "(t.version = s.seen AND s.definition IS NULL)"
_OWED = f"(s.status IN ('retrying', 'failed') AND t.status IN {LIVE})"
_WHEN = f"""({_OWN} OR {_AS_RESUMED} OR {_FOLLOWED} OR {_OWED}
          OR (t.next_run_at = s.slot AND t.attempt = s.claimed_attempt))"""
# The run's status goes with the when it decides, unless a control verb (pause, cancel)
# was written: the row was left scheduled with no due instant, and a failure for good out
# of the dead letter, when another node's modify or followed replacement came during it.
_DECIDES = f"({_WHEN} AND t.status IN {LIVE} AND s.status <> 'paused')"
_RUNNABLE = "CASE WHEN s.attempt > 0 THEN 'retrying' ELSE 'scheduled' END"  # core/names.runnable
# A run that ends its task (succeeded, or failed for good) ends it even when a pause was
# written elsewhere during it, as in one process and on SQLite: left paused, the row had
# no due instant, and a resume had nothing to return it to.  A cancel still wins.
_ENDS = "(s.status IN ('succeeded', 'failed') AND t.status = 'paused')"
_STATUS = f"""CASE WHEN {_OWN} OR {_ENDS} THEN s.status
            WHEN {_AS_RESUMED} AND s.status = 'paused' THEN {_RUNNABLE}
            WHEN {_AS_RESUMED} OR {_DECIDES} THEN s.status ELSE t.status END"""

# _SETTLED_SLOT: a settle's own state has no ``slot`` (TaskSnapshot.slot): the run's
# finish makes the next due a fresh slot (or a retry, or none), never a plan's run put
# off by a resume, which only a resume writes.  So the settle clears it where its when
# stands, and sends no array for it (the settle's statement costs what it did).  Nor
# does it have a wait's slot found blocked (TaskSnapshot.blocked_due, blocked_slot): a
# run's finish leaves its task in no wait, and it is cleared likewise.
# The fenced settles of a batch of runs, one statement (one round trip, one commit): each
# run's lease is dropped, its task's row written and its records inserted only while the
# lease with its token is held; the answer names every token and whether it was written.
# Lock order as in the claim: the tasks' rows first (in id order, so two batches never
# wait for each other in a cycle), then their leases.  A write that makes a task the
# earliest due of all notifies, as a single write does.  Its two unnest calls stay
# unqualified: PostgreSQL expands a multi-argument unnest in FROM into pg_catalog's own,
# and a qualified one would be a call of a function that does not exist.
SETTLE = f"""
WITH given AS (
    SELECT * FROM unnest(%(id)s::text[], %(token)s::bigint[], %(status)s::text[],
        %(next_run_at)s::double precision[], %(attempt)s::integer[],
        %(run_count)s::integer[], %(failure_count)s::integer[], %(last_error)s::text[],
        %(running)s::boolean[], %(name)s::text[], %(definition)s::text[],
        %(priority)s::integer[], %(waited)s::double precision[], %(seen)s::bigint[],
        %(resume_at)s::double precision[], %(grid)s::double precision[])
      AS g(id, token, status, next_run_at, attempt, run_count, failure_count, last_error,
           running, name, definition, priority, waited, seen, resume_at, grid)),
locked AS (
    SELECT t.id FROM tasks t WHERE t.id IN (SELECT id FROM given) ORDER BY t.id
       FOR UPDATE),
dropped AS (
    DELETE FROM leases l USING locked k, given g
     WHERE l.task_id = k.id AND g.id = k.id AND l.token = g.token AND l.holder = %(node)s
    RETURNING l.task_id, l.token, l.version AS claimed, l.slot,
              l.attempt AS claimed_attempt),
settled AS (
    UPDATE tasks t SET
        status = {_STATUS},
        next_run_at = CASE WHEN {_WHEN} THEN s.next_run_at ELSE t.next_run_at END,
        attempt = CASE WHEN {_WHEN} THEN s.attempt ELSE t.attempt END,
        waited = CASE WHEN {_WHEN} THEN s.waited ELSE t.waited END,
        resume_at = CASE WHEN {_WHEN} THEN s.resume_at ELSE t.resume_at END,
        grid = CASE WHEN {_WHEN} THEN s.grid ELSE t.grid END,
        slot = CASE WHEN {_WHEN} THEN NULL ELSE t.slot END,  -- _SETTLED_SLOT
        blocked_due = CASE WHEN {_WHEN} THEN NULL ELSE t.blocked_due END,  -- and no wait
        blocked_slot = CASE WHEN {_WHEN} THEN NULL ELSE t.blocked_slot END,
        blocked_next = CASE WHEN t.blocked_next = t.version THEN t.version + 1 END,
        run_count = s.run_count, failure_count = s.failure_count, last_error = s.last_error,
        running = CASE WHEN {_OWN} THEN s.running ELSE false END,
        failed_seq = CASE WHEN NOT ({_OWN} OR {_AS_RESUMED} OR {_ENDS} OR {_DECIDES})
                THEN t.failed_seq
            WHEN s.status = 'failed'
                THEN coalesce(t.failed_seq, pg_catalog.nextval('dead_letter_seq'))
            END,
        name = CASE WHEN {_OWN} THEN coalesce(s.name, t.name) ELSE t.name END,
        definition = CASE WHEN {_OWN} THEN coalesce(s.definition, t.definition)
            ELSE t.definition END,
        priority = CASE WHEN {_OWN} THEN coalesce(s.priority, t.priority) ELSE t.priority END,
        version = t.version + 1,
        writer = CASE WHEN {_OWN} THEN %(node)s ELSE '' END,
        xid = pg_catalog.pg_current_xact_id(), resumed = false
      FROM (SELECT g.*, d.claimed, d.slot, d.claimed_attempt
              FROM dropped d JOIN given g ON g.token = d.token) s
     WHERE t.id = s.id
    RETURNING t.id, t.status, t.next_run_at, t.writer),
recorded AS (
    INSERT INTO records (task_id, attempt, due, slot, worker, started, finished, ok, error,
        timed_out, misfire, result, token, name, node)
    SELECT r.task_id, r.attempt, r.due, r.slot, r.worker, r.started, r.finished, r.ok,
           r.error, r.timed_out, r.misfire, r.result, r.token, r.name, r.node
      FROM unnest(%(r_task_id)s::text[], %(r_attempt)s::integer[],
           %(r_due)s::double precision[], %(r_slot)s::double precision[],
           %(r_worker)s::integer[], %(r_started)s::double precision[],
           %(r_finished)s::double precision[], %(r_ok)s::boolean[], %(r_error)s::text[],
           %(r_timed_out)s::boolean[], %(r_misfire)s::text[], %(r_result)s::text[],
           %(r_token)s::bigint[], %(r_name)s::text[], %(r_node)s::text[]) WITH ORDINALITY
        AS r(task_id, attempt, due, slot, worker, started, finished, ok, error, timed_out,
             misfire, result, token, name, node, n)
     WHERE r.token IN (SELECT token FROM dropped)
     ORDER BY r.n),
notified AS (
    SELECT pg_catalog.pg_notify(%(channel)s, %(node)s) FROM (
        SELECT pg_catalog.min(next_run_at) AS soonest FROM settled WHERE status IN {LIVE}) m
     WHERE m.soonest < coalesce((SELECT pg_catalog.min(next_run_at) FROM tasks
                                  WHERE status IN {LIVE} AND id <> ALL(%(id)s::text[])),
                                'Infinity'))
SELECT g.token, d.token IS NOT NULL AS written, s.writer = %(node)s AS own,
       (SELECT pg_catalog.count(*) FROM notified) AS notified
  FROM given g LEFT JOIN dropped d ON d.token = g.token LEFT JOIN settled s ON s.id = d.task_id
"""
