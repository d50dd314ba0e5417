"""The PostgreSQL store's tables: the schema a new database is given (:data:`SCHEMA`, with
the trigger that numbers a new row, :data:`FIRST_VERSION`), its version
(:data:`SCHEMA_VERSION`) and the in-place upgrade from each older one (:data:`UPGRADES`),
the tables it owns (:data:`TABLES`), and where a new store's tables would be created
(:data:`WHERE_TO_CREATE`).  Read by the install at open
(:mod:`lldsched.stores.postgres.schema`); the statements the store sends are
:mod:`lldsched.stores.postgres.sql`'s and :mod:`lldsched.stores.postgres.lease_sql`'s.
"""

from __future__ import annotations

from lldsched.stores.postgres.sql import ID_LOCK, LIVE

__all__ = ["FIRST_VERSION", "SCHEMA", "SCHEMA_VERSION", "TABLES", "UPGRADES", "WHERE_TO_CREATE"]

SCHEMA_VERSION = 10


# Where a new store's tables would be created, and whether they may be (the install, on a
# database or schema without them; postgres/schema._no_schema says why not): the schema
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
