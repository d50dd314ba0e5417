"""PostgresTaskStore's coordination on a real server: SKIP LOCKED claims, the token
sequence, expiry on the database's clock, fenced settles, the change feed, and
LISTEN/NOTIFY waking another process's timer."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from lldsched import Outcome, TaskStatus
from lldsched.coordination import Claim
from lldsched.errors import LeaseLost, StoreError
from lldsched.stores import removals as removals_rule
from lldsched.stores.postgres import PostgresTaskStore, sql
from tests.conftest import T0
from tests.pg_server import PostgresServer
from tests.test_store_postgres_open_together import LEVEL_IDS, LEVELS, with_isolation
from tests.test_store_sqlite import record, snapshot, task
from tests.waits import wait_until

ROOT = Path(__file__).resolve().parent.parent
Opener = Callable[..., PostgresTaskStore]


def due_tasks(store: PostgresTaskStore, count: int) -> None:
    for n in range(count):
        store.save(snapshot(task(id=f"t{n:04}")))  # all due at T0


@pytest.mark.parametrize("level", LEVELS, ids=LEVEL_IDS)
def test_concurrent_claimers_never_receive_the_same_task_and_tokens_only_grow(
    postgres_dsn: str, level: str | None
) -> None:
    """Whatever isolation level the database's sessions begin at: the store's sessions
    set their own (before, at REPEATABLE READ or SERIALIZABLE a claim that met a row
    another claim had just locked failed, "could not serialize access due to concurrent
    update": an outage logged at every such meeting)."""
    dsn = with_isolation(postgres_dsn, level)
    stores = [PostgresTaskStore(dsn, lease=60) for _ in range(4)]
    due_tasks(stores[0], 400)
    got: list[list[Claim]] = [[] for _ in stores]
    failed: list[str] = []
    start = threading.Barrier(len(stores))

    def claim_all(index: int) -> None:
        start.wait(10)
        try:
            while batch := stores[index].claim(now=T0, limit=7):
                got[index].extend(batch)
        except StoreError as exc:
            failed.append(str(exc))

    threads = [threading.Thread(target=claim_all, args=(n,)) for n in range(len(stores))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for store in stores:
            store.close()
    assert not failed
    claimed = [c.task_id for claims in got for c in claims]
    assert sorted(claimed) == [f"t{n:04}" for n in range(400)]  # each once, none lost
    tokens = [c.token for claims in got for c in claims]
    assert len(set(tokens)) == 400
    assert all(
        [c.token for c in claims] == sorted(c.token for c in claims) for claims in got
    )  # each claimer's tokens grow


def test_a_claim_passes_rows_another_transaction_holds_instead_of_waiting(
    open_store: Opener, postgres_dsn: str
) -> None:
    # SKIP LOCKED, shown without timing: another session holds five task rows locked
    # while the claim runs; the claim returns the others at once and never the locked.
    store = open_store(lease=60)
    due_tasks(store, 20)
    with psycopg.connect(postgres_dsn) as other, other.transaction():
        rows = other.execute("SELECT id FROM tasks ORDER BY id LIMIT 5 FOR UPDATE").fetchall()
        locked = {row[0] for row in rows}
        got: list[Claim] = []
        claimer = threading.Thread(target=lambda: got.extend(store.claim(now=T0, limit=100)))
        claimer.start()
        claimer.join(20)
        assert not claimer.is_alive(), "the claim waited for the locked rows"
    assert len(locked) == 5 and len(got) == 15
    assert not {claim.task_id for claim in got} & locked


def test_a_claim_takes_the_earliest_due_first_then_the_higher_priority(
    open_store: Opener,
) -> None:
    from lldsched import Priority

    store = open_store()
    store.save(snapshot(task(id="late"))._replace(next_run_at=T0 + 1))
    store.save(snapshot(task(id="low", priority=Priority.LOW)))
    store.save(snapshot(task(id="high", priority=Priority.HIGH)))
    store.save(snapshot(task(id="paused"), TaskStatus.PAUSED))
    store.save(snapshot(task(id="future"))._replace(next_run_at=T0 + 100))
    assert [c.task_id for c in store.claim(now=T0 + 1, limit=10)] == ["high", "low", "late"]
    assert store.claim(now=T0 + 1, limit=0) == []


def test_an_expired_lease_is_taken_over_with_a_larger_token_and_the_late_settle_is_refused(
    open_store: Opener,
) -> None:
    first, second = open_store(lease=60), open_store(lease=60)
    first.save(snapshot(task(id="a")))
    (old,) = first.claim(now=T0, limit=1)
    assert second.claim(now=T0, limit=1) == []  # held (a lease of 60 s: not by chance)
    with psycopg.connect(first._dsn, autocommit=True) as connection:  # expire it, server-side
        connection.execute("UPDATE leases SET expires_at = expires_at - 120")
    (new,) = second.claim(now=T0, limit=1)
    assert new.task_id == "a" and new.token > old.token
    assert first.renew(tokens=[old.token], now=T0) == set()  # the old holder finds out
    finished = snapshot(task(id="a"))._replace(next_run_at=T0 + 60, run_count=1)
    with pytest.raises(LeaseLost, match=f"token {old.token}"):
        first.settle(finished, record("a", 0)._replace(token=old.token), token=old.token)
    # What follows a refused settle under the same token (the core's SKIPPED records) is
    # dropped too, and not counted again.
    first.save(finished, record("a", 1)._replace(token=old.token))
    assert first.rejected == 1 and first.records("a") == []
    second.settle(finished, record("a", 2)._replace(token=new.token), token=new.token)
    assert [r.token for r in second.records("a")] == [new.token] and second.leases() == []


def test_expiry_is_measured_on_the_database_clock_not_the_claimers(
    open_store: Opener,
) -> None:
    """A claim's and a renewal's expiry is the server's clock during the statement plus
    the lease: at least ``lease`` after any reading of that clock taken before the call
    (the half of "a holder's flag goes up ``lease / 6`` before a takeover" that is the
    store's: its holder trusts the lease from a reading before the call, for ``lease -
    lease / 6``; see test_cluster_partition's black-holed holder), and no later than
    ``lease`` after the call.  Both bounds compare readings of the one clock, in the order
    the calls were made: nothing is timed."""
    holder, skewed = open_store(lease=60), open_store(lease=60)
    holder.save(snapshot(task(id="a")))
    before = server_clock(holder)
    (claim,) = holder.claim(now=T0, limit=1)
    after = server_clock(holder)
    assert before + 60 <= claim.expires_at <= after + 60
    # A node whose clock runs a day ahead sees the task due, but the lease has not expired
    # on the server's clock: it gets nothing.
    assert skewed.claim(now=T0 + 86_400, limit=1) == []
    before = server_clock(holder)
    assert holder.renew(tokens=[claim.token], now=0.0) == {claim.token}  # `now` is not used
    after = server_clock(holder)
    (lease,) = holder.leases()
    assert before + 60 <= lease.expires_at <= after + 60


def server_clock(store: PostgresTaskStore) -> float:
    """The database's clock now, as the store's expiries read it (``DB_NOW``)."""
    with psycopg.connect(store._dsn, autocommit=True) as connection:
        (now,) = connection.execute(f"SELECT {sql.DB_NOW}").fetchone() or (None,)
    return float(now)


def test_a_pause_written_during_a_run_wins_over_the_settle_and_the_record_is_kept(
    open_store: Opener,
) -> None:
    runner, controller = open_store(), open_store()
    runner.save(snapshot(task(id="a")))
    (claim,) = runner.claim(now=T0, limit=1)
    controller.load_all()
    controller.save(snapshot(task(id="a"), TaskStatus.PAUSED))
    finished = snapshot(task(id="a"))._replace(next_run_at=T0 + 60, run_count=1)
    runner.settle(finished, record("a", 0)._replace(token=claim.token), token=claim.token)
    stored = runner.get("a")
    assert stored is not None and stored.status is TaskStatus.PAUSED and stored.run_count == 1
    assert len(runner.records("a")) == 1
    (change,) = [c for c in runner.changes() if c.task_id == "a"]  # the runner reads it back
    assert change.snapshot is not None and change.snapshot.status is TaskStatus.PAUSED


def test_a_pause_written_during_a_run_keeps_the_runs_next_slot_so_a_resume_runs_no_slot_twice(
    open_store: Opener,
) -> None:
    """The pause left the row's due instant at the slot being run: the run's settle moves
    it on (as in one process and on SQLite), or a resume would run that slot again."""
    runner, controller = open_store(), open_store()
    runner.save(snapshot(task(id="a")))
    (claim,) = runner.claim(now=T0, limit=1)
    controller.load_all()
    controller.save(snapshot(task(id="a"), TaskStatus.PAUSED))  # due T0: the slot running
    finished = snapshot(task(id="a"))._replace(next_run_at=T0 + 60, run_count=1)
    runner.settle(finished, record("a", 0)._replace(token=claim.token), token=claim.token)
    stored = runner.get("a")
    assert stored is not None and stored.status is TaskStatus.PAUSED
    assert (stored.next_run_at, stored.attempt) == (T0 + 60, 0)


def test_a_pause_and_a_resume_written_during_a_run_leave_the_next_slot_to_the_run(
    open_store: Opener,
) -> None:
    """The resume, made where the run is not, moved the due instant to its now (a slot
    slept through); as in one process the task returns to its run, whose settle decides
    the next slot and the status (a paused one included: it had not seen the resume)."""
    runner, controller = open_store(), open_store()
    for task_id, settled_as in (("a", TaskStatus.SCHEDULED), ("b", TaskStatus.PAUSED)):
        runner.save(snapshot(task(id=task_id)))
        (claim,) = runner.claim(now=T0, limit=1)
        controller.load_all()
        controller.save(snapshot(task(id=task_id), TaskStatus.PAUSED))
        controller.save(snapshot(task(id=task_id))._replace(next_run_at=T0 + 5))  # resume
        finished = snapshot(task(id=task_id), settled_as)._replace(next_run_at=T0 + 60, run_count=1)
        runner.settle(finished, record(task_id, 0)._replace(token=claim.token), token=claim.token)
        stored = runner.get(task_id)
        assert stored is not None and stored.run_count == 1
        assert (stored.status, stored.next_run_at) == (TaskStatus.SCHEDULED, T0 + 60)


def test_a_run_that_ends_its_task_ends_it_after_a_pause_and_a_resume_written_during_it(
    open_store: Opener,
) -> None:
    runner, controller = open_store(), open_store()
    runner.save(snapshot(task(id="a")))
    (claim,) = runner.claim(now=T0, limit=1)
    controller.load_all()
    controller.save(snapshot(task(id="a"), TaskStatus.PAUSED))
    controller.save(snapshot(task(id="a"))._replace(next_run_at=T0 + 5))
    failed = snapshot(task(id="a"), TaskStatus.FAILED)._replace(next_run_at=None, run_count=1)
    runner.settle(failed, record("a", 0)._replace(token=claim.token), token=claim.token)
    stored = runner.get("a")
    assert stored is not None and (stored.status, stored.next_run_at) == (TaskStatus.FAILED, None)
    assert runner.dead_letter() == ["a"]


@pytest.mark.parametrize("ended", [TaskStatus.SUCCEEDED, TaskStatus.FAILED])
def test_a_run_that_ends_its_task_ends_it_though_a_pause_was_written_during_it(
    open_store: Opener, ended: TaskStatus
) -> None:
    """As in one process and on SQLite: left paused, the row had no due instant, and a
    resume had nothing to return the task to."""
    runner, controller = open_store(), open_store()
    runner.save(snapshot(task(id="a")))
    (claim,) = runner.claim(now=T0, limit=1)
    controller.load_all()
    controller.save(snapshot(task(id="a"), TaskStatus.PAUSED))
    last = snapshot(task(id="a"), ended)._replace(next_run_at=None, run_count=1)
    runner.settle(last, record("a", 0)._replace(token=claim.token), token=claim.token)
    stored = runner.get("a")
    assert stored is not None and (stored.status, stored.next_run_at) == (ended, None)
    assert runner.dead_letter() == (["a"] if ended is TaskStatus.FAILED else [])


def test_a_reschedule_after_a_resume_during_a_run_keeps_its_due_instant(
    open_store: Opener,
) -> None:
    runner, controller = open_store(), open_store()
    runner.save(snapshot(task(id="a")))
    (claim,) = runner.claim(now=T0, limit=1)
    controller.load_all()
    controller.save(snapshot(task(id="a"), TaskStatus.PAUSED))
    controller.save(snapshot(task(id="a"))._replace(next_run_at=T0 + 5))  # resume
    controller.save(snapshot(task(id="a"))._replace(next_run_at=T0 + 7))  # reschedule
    finished = snapshot(task(id="a"))._replace(next_run_at=T0 + 60, run_count=1)
    runner.settle(finished, record("a", 0)._replace(token=claim.token), token=claim.token)
    stored = runner.get("a")
    assert stored is not None and stored.next_run_at == T0 + 7


def test_a_reschedule_written_during_a_run_keeps_its_own_due_instant(open_store: Opener) -> None:
    runner, controller = open_store(), open_store()
    runner.save(snapshot(task(id="a")))
    (claim,) = runner.claim(now=T0, limit=1)
    controller.load_all()
    controller.save(snapshot(task(id="a"))._replace(next_run_at=T0 + 5))  # moved the when
    finished = snapshot(task(id="a"))._replace(next_run_at=T0 + 60, run_count=1)
    runner.settle(finished, record("a", 0)._replace(token=claim.token), token=claim.token)
    stored = runner.get("a")
    assert stored is not None and stored.next_run_at == T0 + 5 and stored.run_count == 1


def test_the_feed_gives_other_nodes_writes_and_removals_once_and_never_ones_own(
    open_store: Opener,
) -> None:
    writer, reader = open_store(), open_store()
    assert reader.changes() == []
    writer.save(snapshot(task(id="a")))
    writer.save(snapshot(task(id="b")))
    reader_own = snapshot(task(id="c"))
    reader.save(reader_own)
    assert [(c.task_id, c.snapshot is not None) for c in reader.changes()] == [
        ("a", True),
        ("b", True),
    ]
    assert reader.changes() == []  # each once
    writer.save(snapshot(task(id="a"), TaskStatus.PAUSED))
    writer.delete("b")
    changes = reader.changes()
    assert [(c.task_id, c.snapshot and c.snapshot.status) for c in changes] == [
        ("a", TaskStatus.PAUSED),
        ("b", None),
    ]
    assert [c.task_id for c in writer.changes()] == ["c"]


def removals(store: PostgresTaskStore) -> list[str]:
    with psycopg.connect(store._dsn, autocommit=True) as connection:
        return [row[0] for row in connection.execute("SELECT task_id FROM removals ORDER BY xid")]


def test_removals_are_trimmed_once_older_than_a_feed_horizon_read_long_enough_ago(
    open_store: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(removals_rule, "REMOVALS_KEPT", 0.2)  # a day, in production
    monkeypatch.setattr(removals_rule, "SAMPLE_EVERY", 3600.0)  # one sample: the first read's
    writer, late = open_store(), open_store()
    writer.save(snapshot(task(id="a")))
    writer.save(snapshot(task(id="b")))
    writer.delete("a")
    trimmer = open_store()
    assert trimmer.changes() == []  # its horizon now is past a's removal, not b's
    writer.delete("b")
    assert removals(writer) == ["a", "b"]  # the sample is not old enough yet

    def trimmed() -> bool:
        trimmer.changes()
        return removals(writer) == ["b"]

    wait_until(trimmed, timeout=10, what="the removal of a to be trimmed")
    # b's removal came after the horizon sampled: kept, and a feed that did not read it yet
    # still gets it.  a's is gone for a node that read no feed for longer than
    # REMOVALS_KEPT (here 0.2 s, a day in production): the rule's stated cost.
    assert [(c.task_id, c.snapshot) for c in late.changes()] == [("b", None)]
    monkeypatch.setattr(removals_rule, "REMOVALS_KEPT", 86400.0)
    trimmer.changes()
    assert removals(writer) == ["b"]


def test_an_id_registered_again_after_its_removals_were_trimmed_is_new_to_every_feed(
    open_store: Opener,
) -> None:
    """Once a removal is trimmed (``removals.REMOVALS_KEPT`` after it) a row registered
    again under its id starts at version 1 again; every node that read the removal, or
    made it, has forgotten the version it had for the id, and reads the row as new.
    Before, a feed remembered the removed id's last version for good and skipped the row,
    and so did the node that removed it, which remembered the version its feed last gave."""
    writer, reader, remover = open_store(), open_store(), open_store()
    writer.save(snapshot(task(id="a")))
    writer.save(snapshot(task(id="b")))
    assert [c.task_id for c in reader.changes()] == ["a", "b"]
    assert [c.task_id for c in remover.changes()] == ["a", "b"]
    writer.delete("a")
    remover.delete("b")
    assert [(c.task_id, c.snapshot) for c in reader.changes()] == [("a", None), ("b", None)]
    assert [(c.task_id, c.snapshot) for c in writer.changes()] == [("b", None)]
    assert [(c.task_id, c.snapshot) for c in remover.changes()] == [("a", None)]
    with psycopg.connect(writer._dsn, autocommit=True) as connection:
        connection.execute("DELETE FROM removals")  # as the trim leaves them a day later
    writer.save(snapshot(task(id="a", name="again")))
    writer.save(snapshot(task(id="b", name="again")))
    for store in (reader, remover):
        changes = store.changes()
        assert [(c.task_id, c.version) for c in changes] == [("a", 1), ("b", 1)]
        assert {c.snapshot and c.snapshot.task.name for c in changes} == {"again"}


def test_a_write_that_commits_after_a_later_one_is_still_in_the_feed(
    open_store: Opener, postgres_dsn: str
) -> None:
    writer, reader = open_store(), open_store()
    writer.save(snapshot(task(id="slow")))
    writer.save(snapshot(task(id="fast")))
    reader.changes()
    with psycopg.connect(postgres_dsn) as slow:  # a transaction that stays open ...
        slow.execute(
            "UPDATE tasks SET status = 'paused', version = version + 1, writer = 'x', "
            "xid = pg_current_xact_id() WHERE id = 'slow'"
        )
        writer.save(snapshot(task(id="fast"), TaskStatus.PAUSED))  # ... while a later one commits
        assert [c.task_id for c in reader.changes()] == ["fast"]
        slow.commit()
    assert [c.task_id for c in reader.changes()] == ["slow"]


def test_muted_saves_and_a_holders_running_state_write_nothing(
    open_store: Opener,
) -> None:
    store, other = open_store(), open_store()
    store.save(snapshot(task(id="a")))
    other.changes()
    with store.muted():
        store.save(snapshot(task(id="a"), TaskStatus.PAUSED))
        store.delete("a")
    (claim,) = store.claim(now=T0, limit=1)
    store.save(snapshot(task(id="a"), TaskStatus.RUNNING)._replace(running=True))
    stored = store.get("a")
    assert stored is not None and stored.status is TaskStatus.SCHEDULED
    assert other.changes() == []
    store.release(task_id="a", token=claim.token)
    assert store.leases() == [] and [c.task_id for c in other.claim(now=T0, limit=1)] == ["a"]


def test_a_redefinition_during_a_run_whose_lease_was_lost_leaves_the_row_claimable(
    open_store: Opener,
) -> None:
    """A run whose lease another node took over (and settled) is still RUNNING in this
    node's registry; a redefinition made here during it saves a RUNNING snapshot.  Its
    lease no longer held, that save once wrote the row ``running`` over the new holder's
    state (a status no claim picks: the task never ran again), or brought a removed row
    back.  Only the definition is written now, to a row that is there."""
    first, second = open_store(lease=60), open_store(lease=60)
    first.save(snapshot(task(id="a")))
    (old,) = first.claim(now=T0, limit=1)
    with psycopg.connect(first._dsn, autocommit=True) as connection:  # expire it, server-side
        connection.execute("UPDATE leases SET expires_at = expires_at - 120")
    (new,) = second.claim(now=T0, limit=1)
    finished = snapshot(task(id="a"))._replace(next_run_at=T0 + 60, run_count=1)
    second.settle(finished, record("a", 0)._replace(token=new.token), token=new.token)
    assert first.renew(tokens=[old.token], now=T0) == set()  # found lost
    renamed = task(id="a")._replace(name="renamed")
    first.save(snapshot(renamed, TaskStatus.RUNNING)._replace(running=True))
    stored = second.get("a")
    assert stored is not None
    assert (stored.status, stored.next_run_at, stored.task.name) == (
        TaskStatus.SCHEDULED, T0 + 60, "renamed",
    )  # fmt: skip
    assert [c.task_id for c in second.claim(now=T0 + 60, limit=1)] == ["a"]
    second.delete("a")  # removed elsewhere: a RUNNING save brings nothing back
    first.save(snapshot(task(id="a"), TaskStatus.RUNNING)._replace(running=True))
    assert first.get("a") is None


# -- LISTEN/NOTIFY ------------------------------------------------------------------------

WRITER = """
import sys
from lldsched.stores import removals as removals_rule
from lldsched.stores.postgres import PostgresTaskStore
from tests.test_store_sqlite import snapshot, task
from tests.waits import wait_until
from tests.conftest import T0
with PostgresTaskStore(sys.argv[1]) as store:
    store.save(snapshot(task(id=sys.argv[2]))._replace(next_run_at=T0 + float(sys.argv[3])))
"""


def write_from_another_process(dsn: str, task_id: str, *, due_in: float) -> None:
    subprocess.run(
        [sys.executable, "-c", WRITER, dsn, task_id, str(due_in)],
        cwd=ROOT,
        check=True,
        timeout=60,
        env={"PYTHONPATH": ":".join(sys.path)},
    )


def test_a_task_made_earliest_due_in_another_process_wakes_this_timer_at_once(
    open_store: Opener, postgres_dsn: str
) -> None:
    store = open_store(poll=3600)  # the bounded wait cannot be what wakes it
    store.save(snapshot(task(id="soon"))._replace(next_run_at=T0 + 10))
    woke = threading.Event()
    store.subscribe(woke.set)
    assert woke.wait(10)  # once when it starts listening
    woke.clear()
    with psycopg.connect(postgres_dsn, autocommit=True) as session:
        session.execute(sql.listen(store._channel))
        write_from_another_process(postgres_dsn, "later", due_in=20)  # not the earliest
        assert notified_before_a_marker(session, store._channel) == []
    write_from_another_process(postgres_dsn, "earliest", due_in=5)
    assert woke.wait(10)
    assert store.get("earliest") is not None


def test_the_listener_sleeps_until_something_arrives_and_a_close_ends_its_wait_at_once(
    open_store: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The LISTEN thread waits on its connection's socket and on ``stop()`` together: each
    time it asks psycopg for notifications it takes what has come (``timeout=0``), and a
    notification still wakes the timer.  Before, it asked with a 0.2 s wait, again and
    again, to look for the stop in between: a subscribed store's ``close()`` (each
    scheduler's shutdown on PostgreSQL) waited for the end of that wait."""
    asked: list[float | None] = []
    notifies = psycopg.Connection.notifies

    def spied(
        self: psycopg.Connection[Any],
        *,
        timeout: float | None = None,
        stop_after: int | None = None,
    ) -> Any:
        if threading.current_thread().name == "lldsched-pg-listen":
            asked.append(timeout)
        return notifies(self, timeout=timeout, stop_after=stop_after)

    monkeypatch.setattr(psycopg.Connection, "notifies", spied)
    store, other = open_store(poll=3600), open_store()
    woke = threading.Event()
    store.subscribe(woke.set)
    assert woke.wait(10)  # once when it starts listening
    woke.clear()
    other.save(snapshot(task(id="earliest"))._replace(next_run_at=T0 + 5))  # notified
    assert woke.wait(10)
    listener = store._listener
    assert listener is not None
    store.close()
    assert not listener._thread.is_alive()
    assert asked and set(asked) == {0}, asked  # never a wait of its own


MARKER = "marker"  # a payload no store sends: a node id is "host:pid:random"


def notified_before_a_marker(session: psycopg.Connection[Any], channel: str) -> list[str]:
    """The payloads ``session``, listening on ``channel``, hears before a NOTIFY of
    :data:`MARKER` it sends on it now.  PostgreSQL delivers notifications in the order
    their transactions committed, so every NOTIFY committed before this call comes
    first: an empty list proves, with no wait, that none was sent since the LISTEN."""
    session.execute("SELECT pg_catalog.pg_notify(%s, %s)", (channel, MARKER))
    heard: list[str] = []
    for notice in session.notifies(timeout=60):
        if notice.payload == MARKER:
            return heard
        heard.append(notice.payload)
    raise AssertionError(f"the marker NOTIFY on {channel!r} never came; heard {heard}")


def test_an_expired_lease_nobody_took_over_is_still_the_holders_to_renew_and_settle(
    open_store: Opener,
) -> None:
    holder = open_store(lease=60)
    holder.save(snapshot(task(id="a")))
    (claim,) = holder.claim(now=T0, limit=1)
    with psycopg.connect(holder._dsn, autocommit=True) as connection:
        connection.execute("UPDATE leases SET expires_at = expires_at - 120")
    assert holder.renew(tokens=[claim.token], now=T0) == {claim.token}  # no newer token
    assert open_store().claim(now=T0, limit=1) == []  # renewed: live again
    holder.settle(
        snapshot(task(id="a")), record("a", 0)._replace(token=claim.token), token=claim.token
    )
    assert holder.rejected == 0 and [r.token for r in holder.records("a")] == [claim.token]


def test_a_holder_stalled_inside_a_transaction_loses_its_session_and_its_run(
    open_store: Opener,
) -> None:
    stalled, other = open_store(lease=0.5), open_store(lease=60)
    stalled.save(snapshot(task(id="a")))
    (claim,) = stalled.claim(now=T0, limit=1)
    connection = stalled._open()  # as if stopped halfway through its settle
    connection.execute("BEGIN")
    connection.execute("SELECT 1 FROM tasks WHERE id = 'a' FOR UPDATE")
    taken: list[Claim] = []

    def take_over() -> bool:
        taken.extend(other.claim(now=T0, limit=1))
        return bool(taken)

    wait_until(
        take_over,
        timeout=20,
        what="the server to end the stalled session and the lease to be taken over",
    )
    assert taken[0].token > claim.token
    with pytest.raises(LeaseLost):  # resumed: once more on a new connection, then refused
        stalled.settle(snapshot(task(id="a")), record("a", 0), token=claim.token)
    assert stalled.rejected == 1 and stalled.records("a") == []


class Wakes:
    """A store's ``wake``: counts the wakes and lets a test wait for the next one."""

    def __init__(self) -> None:
        self.count = 0
        self.event = threading.Event()

    def __call__(self) -> None:
        self.count += 1
        self.event.set()

    def next(self) -> int:
        """Wait for a wake (at most a minute); the wakes so far."""
        assert self.event.wait(60), "no wake came"
        self.event.clear()
        return self.count


def test_a_write_wakes_the_stores_of_its_own_schema_and_none_of_another_schema(
    postgres_server: PostgresServer,
) -> None:
    # Two applications on one database, each in its schema.  A session listening on the
    # channel of one hears its writes alone: PostgreSQL delivers a session's
    # notifications in commit order, so the other schema's write, committed first, would
    # have come first.  And a store of that schema, subscribed, is woken by its writes.
    here_schema = "application_one"
    here, there = in_schema(postgres_server, here_schema), postgres_server.create_schema()
    with (
        PostgresTaskStore(here, poll=3600) as listening,
        PostgresTaskStore(there, poll=3600) as neighbour,
        PostgresTaskStore(here) as writer,
        psycopg.connect(postgres_server.dsn(), autocommit=True) as session,
    ):
        session.execute(sql.listen(sql.channel(here_schema)))
        wakes = Wakes()
        listening.subscribe(wakes)
        assert wakes.next() == 1  # once when it starts listening
        neighbour.save(snapshot(task(id="theirs")))  # the earliest due of its schema
        writer.save(snapshot(task(id="ours")))  # the earliest due of ours
        assert wakes.next() == 2
        heard = next(session.notifies(timeout=60, stop_after=1))
        assert (heard.channel, heard.payload) == (sql.channel(here_schema), writer.node)


def test_a_settle_wakes_only_its_own_schema_and_a_long_schema_name_has_a_channel_too(
    postgres_server: PostgresServer,
) -> None:
    # A schema named with the 63 bytes PostgreSQL keeps: its channel is a digest, which
    # the NOTIFY and the LISTEN agree on; the batched settle notifies it too.
    long_name = "s" * 63
    here, there = in_schema(postgres_server, long_name), postgres_server.create_schema()
    assert len(sql.channel(long_name).encode()) <= 63
    assert sql.channel(long_name) != sql.channel("s" * 62)
    with (
        PostgresTaskStore(here, poll=3600) as listening,
        PostgresTaskStore(there) as neighbour,
        PostgresTaskStore(here) as writer,
        psycopg.connect(postgres_server.dsn(), autocommit=True) as session,
    ):
        claims = {store: claimed(store) for store in (neighbour, writer)}
        session.execute(sql.listen(sql.channel(long_name)))
        wakes = Wakes()
        listening.subscribe(wakes)
        assert wakes.next() == 1
        for store, claim in claims.items():  # each now the earliest due of its schema
            settled = snapshot(task(id="a"))._replace(next_run_at=T0 + 10)
            store.settle(settled, record("a", 0)._replace(token=claim.token), token=claim.token)
        assert wakes.next() == 2
        heard = next(session.notifies(timeout=60, stop_after=1))  # in commit order
        assert (heard.channel, heard.payload) == (sql.channel(long_name), writer.node)


def in_schema(server: PostgresServer, name: str) -> str:
    """A dsn whose store is in a new schema ``name`` of the server's database."""
    server.sql(f"CREATE SCHEMA {name}")
    return f"{server.dsn()}?options=-csearch_path%3D{name}"


def claimed(store: PostgresTaskStore) -> Claim:
    """Task ``a`` claimed in ``store``, with task ``b`` due after it."""
    store.save(snapshot(task(id="a")))
    store.save(snapshot(task(id="b"))._replace(next_run_at=T0 + 50))
    (claim,) = store.claim(now=T0, limit=1)
    return claim


def test_a_store_never_loaded_writes_a_misfire_its_claim_decided(open_store: Opener) -> None:
    """A claim's ``misfired`` holds the lease, which proves the row exists: its write is
    an update of the row, as a settle's is.  A store that never loaded the task (a node
    started after another registered it, whose feed has not given the row yet) wrote it
    as a registration: refused, "already registered by another scheduler", and the
    misfire's records and the slot's decision were lost with the write."""
    registering, claiming = open_store(lease=60), open_store(lease=60)
    registering.save(snapshot(task(id="a")))
    (claim,) = claiming.claim(now=T0, limit=1)
    missed = record("a", 0)._replace(ok=False, token=claim.token, misfire=Outcome.SKIPPED)
    moved = snapshot(task(id="a"))._replace(next_run_at=T0 + 60)
    claiming.misfired(moved, [missed], token=claim.token, release=True)  # before: refused
    got = registering.get("a")
    assert got is not None and got.next_run_at == T0 + 60
    assert registering.records("a") == [missed]
    assert registering.leases() == []
