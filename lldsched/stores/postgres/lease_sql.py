"""The SQL of the lease protocol on PostgreSQL (docs/CLUSTER.md): the claim
(:data:`CLAIM`; narrowed, :data:`CLAIM_LEAVING` and :data:`CLAIM_AMONG`), a lease renewed
(:data:`RENEW`), given back (:data:`RELEASE`), moved to a catch-up's slot
(:data:`MOVE_LEASE`) or standing for an attempt owed (:data:`OWED_LEASE`), the floor of
the fencing tokens a claim may be given (:data:`GIVEN`), and the fenced settle of a batch
of runs (:data:`SETTLE`, with the rule of whose write a row keeps when another node wrote
it during the run: ``_WHEN``, ``_STATUS``), and the settles of a batch whose reply was
lost found written (:data:`SETTLED`).

Lease expiry is the database's clock (:data:`~lldsched.stores.postgres.sql.DB_NOW`), as
:mod:`lldsched.stores.postgres.sql` says; the lock order every statement keeps is said
above :data:`CLAIM`.
"""

from __future__ import annotations

from lldsched.stores.postgres.sql import DB_NOW, LIVE

__all__ = [
    "CLAIM",
    "CLAIM_AMONG",
    "CLAIM_LEAVING",
    "GIVEN",
    "LOCK_TASK",
    "MOVE_LEASE",
    "OWED_LEASE",
    "RELEASE",
    "RENEW",
    "RUNNING_UNLEASED",
    "SETTLE",
    "SETTLED",
]

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
    SELECT t.id, t.next_run_at, t.attempt, t.version, t.priority, t.writer, l.holder,
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
SELECT c.task_id, c.slot, c.attempt, c.token, c.expires_at, c.version, d.taken_over, d.writer,
       d.holder
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


# The last fencing token the sequence gave (0 before its first): read at open, the floor
# of the tokens this node's claims may be given (PostgresCoordination.claim: a token at
# or below it means the database was restored under this node).
GIVEN = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing_token"


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
# the row is read back here.  The same rule as SQLite's (sqlite/coordinated._settle).
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
