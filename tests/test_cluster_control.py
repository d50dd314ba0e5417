"""Two schedulers on one shared store: control verbs from either take effect in both, each
slot runs once, and a run whose lease is taken over learns it and its write is refused.

Each scheduler has its own store connection, as two processes do (the multi-process
test, ``test_cluster_processes.py``, runs the same claims in real processes).

The schedulers hold their claims for ``PAIR_LEASE``, long enough that none expires
within a test: a process stalled past its lease (a loaded machine descheduling it, or
its timer starved of the lock) has its run's flag raised and the run taken over by the
other scheduler, as the shared mode promises (at-least-once, docs/CLUSTER.md), and these
tests assert each run's flag stayed down and each slot ran once.  ``LEASE`` is the short
one of the claims a test lets expire, or outlives by renewing them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    EventLog,
    FixedRate,
    OneTime,
    Outcome,
    Overlap,
    Priority,
    RetryPolicy,
    Scheduler,
    SqliteTaskStore,
    Task,
    TaskSnapshot,
    TaskStatus,
)
from lldsched.clock import utc_datetime
from lldsched.coordination import CoordinatedStore, Lease
from lldsched.core.task import Isolation
from lldsched.errors import ValidationError
from tests import cluster_jobs, jobs
from tests.cluster import POOLED, StoreSpec, hold_child_starts, open_store
from tests.waits import wait_until

ENGINES = POOLED  # through PgBouncer too (tests/cluster.py)

LEASE = 0.6  # renewed every 0.2 s: the claims a test lets expire or outlives
PAIR_LEASE = 30.0  # as long as the tests' waits: no claim of the pair expires in a test
POLL = 0.05

Pair = tuple[Scheduler, Scheduler, CoordinatedStore, CoordinatedStore]
"""The first scheduler, the second, a store to read the file with, and the first's store."""


def _pair(stores: list[CoordinatedStore]) -> Iterator[Pair]:
    first, second = (Scheduler(workers=2, store=store).start() for store in stores[:2])
    yield first, second, stores[2], stores[0]
    first.shutdown()
    second.shutdown()
    for store in stores:
        store.close()


@pytest.fixture
def pair(store_spec: StoreSpec) -> Iterator[Pair]:
    """Two started schedulers on one shared store (once per engine), a third store to
    read it with, and the first scheduler's store."""
    yield from _pair([open_store(store_spec, lease=PAIR_LEASE, poll=POLL) for _ in range(3)])


@pytest.fixture
def short_pair(store_spec: StoreSpec) -> Iterator[Pair]:
    """The pair, holding its claims for ``LEASE`` only."""
    yield from _pair([open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(3)])


def _sqlite_pair(path: Path, lease: float) -> Iterator[Pair]:
    yield from _pair([SqliteTaskStore(path, shared=True, lease=lease, poll=POLL) for _ in range(3)])


@pytest.fixture
def sqlite_pair(tmp_path: Path) -> Iterator[Pair]:
    """The pair on a shared SQLite file."""
    yield from _sqlite_pair(tmp_path / "tasks.db", PAIR_LEASE)


@pytest.fixture
def short_sqlite_pair(tmp_path: Path) -> Iterator[Pair]:
    """The pair on a shared SQLite file, whose lease expiry is the claimer's ``now``,
    holding its claims for ``LEASE`` only."""
    yield from _sqlite_pair(tmp_path / "tasks.db", LEASE)


def _status(scheduler: Scheduler, task_id: str, status: TaskStatus) -> Callable[[], bool]:
    """Whether ``scheduler`` holds ``task_id`` in ``status``: False while it has not
    followed the task yet (``task()`` would raise, ending the wait at once; seen when the
    other scheduler ran the first slots before this one's poll read the registration)."""
    return lambda: any(task.id == task_id and task.status is status for task in scheduler.tasks())


def _ok_runs(store: CoordinatedStore, task_id: str) -> list[float]:
    return [record.slot for record in store.records(task_id) if record.ok]


def test_each_slot_of_a_recurring_task_runs_once_across_two_schedulers(pair: Pair) -> None:
    first, _, reader, _ = pair
    first.schedule("tick", jobs.noop, FixedRate(0.05), id="tick")
    wait_until(lambda: len(_ok_runs(reader, "tick")) >= 12, timeout=20, what="12 runs")
    slots = _ok_runs(reader, "tick")
    assert len(slots) == len(set(slots))
    tokens = [record.token or 0 for record in reader.records("tick")]
    assert tokens == sorted(tokens) and 0 not in tokens


def test_a_pause_in_one_scheduler_holds_the_task_in_both_and_a_resume_in_the_other_frees_it(
    pair: Pair,
) -> None:
    first, second, reader, _ = pair
    first.schedule("tick", jobs.noop, FixedRate(0.05), id="tick")
    wait_until(lambda: len(_ok_runs(reader, "tick")) >= 2, timeout=20, what="two runs")
    first.pause("tick")
    wait_until(_status(second, "tick", TaskStatus.PAUSED), timeout=5, what="the pause in B")
    wait_until(lambda: not reader.leases(), timeout=5, what="the run in flight to settle")
    held = len(_ok_runs(reader, "tick"))
    threading.Event().wait(0.3)  # a short bounded wait to prove a negative: nothing runs
    assert len(_ok_runs(reader, "tick")) == held
    second.resume("tick")
    wait_until(lambda: len(_ok_runs(reader, "tick")) > held + 2, timeout=20, what="runs again")
    # The second may run every one of those slots before the first's poll reads the resume.
    wait_until(lambda: first.task("tick").status is not TaskStatus.PAUSED, timeout=5,
               what="the resume in A")  # fmt: skip


def test_a_pause_from_the_other_scheduler_during_a_run_leaves_the_task_at_its_next_slot(
    pair: Pair,
) -> None:
    """As in one process: the run that was going when the pause came settles the next
    slot, so a resume waits for it instead of running the slot that just ran again."""
    first, second, reader, _ = pair
    cluster_jobs.released.clear()
    first.schedule("hourly", cluster_jobs.held_until_released, FixedRate(3600), id="hourly")
    try:
        task_id, token, _, _ = cluster_jobs.seen.get(timeout=10)
        (lease,) = reader.leases()
        running, other = (first, second) if first.task("hourly").running else (second, first)
        wait_until(lambda: "hourly" in {t.id for t in other.tasks()}, timeout=5,
                   what="the other scheduler to follow")  # fmt: skip
        assert other.pause("hourly")
    finally:
        cluster_jobs.released.set()
    assert cluster_jobs.seen.get(timeout=10) == (task_id, token, False, None)
    wait_until(lambda: not reader.leases() and bool(reader.records("hourly")), timeout=10,
               what="the run to settle")  # fmt: skip
    (stored,) = reader.load_all()
    assert stored.status is TaskStatus.PAUSED and stored.next_run_at == lease.slot + 3600
    wait_until(lambda: running.task("hourly").status is TaskStatus.PAUSED, timeout=5,
               what="the runner to follow the pause")  # fmt: skip
    assert other.resume("hourly")
    assert other.task("hourly").next_run_at == lease.slot + 3600
    (stored,) = reader.load_all()
    assert stored.next_run_at == lease.slot + 3600


def _held_run(pair: Pair) -> tuple[Lease, Scheduler, Scheduler]:
    """Schedule ``hourly`` (``FixedRate(3600)``, :func:`tests.cluster_jobs.
    held_until_released`, held until the test sets ``released``) on the pair's first
    scheduler and wait for its first run to start: its lease, the scheduler running it
    and the other one."""
    first, second, reader, first_store = pair
    while not cluster_jobs.seen.empty():  # what an earlier test's run said after it failed
        cluster_jobs.seen.get()
    cluster_jobs.released.clear()
    first.schedule("hourly", cluster_jobs.held_until_released, FixedRate(3600), id="hourly")
    cluster_jobs.seen.get(timeout=10)
    (lease,) = reader.leases()
    mine = lease.holder == first_store.node
    return (lease, first, second) if mine else (lease, second, first)


def _settled_at_the_next_slot(reader: CoordinatedStore, lease: Lease) -> None:
    """Wait for the held run of ``hourly`` (its lease ``lease``) to end and settle: its row
    is then SCHEDULED at the next slot, an hour on."""
    cluster_jobs.seen.get(timeout=10)
    wait_until(lambda: not reader.leases() and bool(reader.records("hourly")), timeout=10,
               what="the run to settle")  # fmt: skip
    (stored,) = reader.load_all()
    assert (stored.status, stored.next_run_at) == (TaskStatus.SCHEDULED, lease.slot + 3600)


def test_a_pause_and_a_resume_from_the_other_scheduler_during_a_run_add_no_run(
    pair: Pair,
) -> None:
    """As in one process: a resume that comes while the run is still going returns the
    task to that run, whose settle decides the next slot; the resume made where the run
    is not adds no run at its own instant."""
    first, second, reader, _ = pair
    cluster_jobs.released.clear()
    first.schedule("hourly", cluster_jobs.held_until_released, FixedRate(3600), id="hourly")
    try:
        cluster_jobs.seen.get(timeout=10)
        (lease,) = reader.leases()
        running, other = (first, second) if first.task("hourly").running else (second, first)
        wait_until(lambda: "hourly" in {t.id for t in other.tasks()}, timeout=5,
                   what="the other scheduler to follow")  # fmt: skip
        assert other.pause("hourly")
        assert other.resume("hourly")
        wait_until(lambda: running.task("hourly").status is TaskStatus.RUNNING
                   and reader.load_all()[0].status is not TaskStatus.PAUSED, timeout=5,
                   what="the runner to follow the pause and the resume")  # fmt: skip
    finally:
        cluster_jobs.released.set()
    _settled_at_the_next_slot(reader, lease)
    wait_until(lambda: all(s.task("hourly").next_run_at == lease.slot + 3600 for s in pair[:2]),
               timeout=5, what="both schedulers to follow the settle")  # fmt: skip
    assert [record.slot for record in reader.records("hourly")] == [lease.slot]


def test_a_new_schedule_registered_in_the_other_scheduler_during_a_run_counts_from_its_finish(
    pair: Pair,
) -> None:
    """As in one process (``tests/test_replace_in_flight.py``): a replacement with another
    schedule while a run is in flight lets the run finish, and the new schedule's first
    run counts from that finish, whichever engine holds the row.  PostgreSQL kept the due
    instant the replacing process wrote (the new grid anchored at the replace), SQLite
    took the run's."""
    first, second, reader, _ = pair
    cluster_jobs.released.clear()
    first.schedule("report", cluster_jobs.held_until_released, FixedRate(3600), id="report")
    every_two_hours = FixedRate(7200, start_delay=7200)
    try:
        cluster_jobs.seen.get(timeout=10)
        running, other = (first, second) if first.task("report").running else (second, first)
        wait_until(lambda: "report" in {t.id for t in other.tasks()}, timeout=5,
                   what="the other scheduler to follow")  # fmt: skip
        other.schedule("report", cluster_jobs.held_until_released, every_two_hours,
                       id="report", replace_existing=True)  # fmt: skip
        replaced_by = other.now
        wait_until(lambda: running.task("report").schedule == every_two_hours, timeout=5,
                   what="the runner to follow the new definition")  # fmt: skip
        released_at = running.now
    finally:
        cluster_jobs.released.set()
    cluster_jobs.seen.get(timeout=10)
    wait_until(lambda: not reader.leases() and bool(reader.records("report")), timeout=10,
               what="the run to settle")  # fmt: skip
    (record,) = reader.records("report")
    (stored,) = reader.load_all()
    assert stored.task.schedule == every_two_hours
    assert stored.next_run_at is not None and replaced_by < released_at
    assert released_at + 7200 <= stored.next_run_at <= record.finished + 7200
    wait_until(lambda: all(s.task("report").next_run_at == stored.next_run_at for s in pair[:2]),
               timeout=5, what="both schedulers to follow the settle")  # fmt: skip


@pytest.fixture
def renewing_pair(store_spec: StoreSpec) -> Iterator[Pair]:
    """The pair, renewing its claims every second (a 3 s lease): soon enough for a test
    to wait for a renewal, long enough that no stall of a loaded machine loses one."""
    yield from _pair([open_store(store_spec, lease=3.0, poll=POLL) for _ in range(3)])


def test_a_run_whose_task_the_other_scheduler_removed_says_so_not_a_lost_lease(
    renewing_pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    """The removal deleted the lease with the task: the process running it says why, at
    INFO, instead of the WARNING of a lease lost to a stall or a takeover, which sends
    an operator looking for one (docs/OPERATIONS.md, the log table)."""
    first, second, _, _ = renewing_pair
    cluster_jobs.released.clear()
    first.schedule("report", cluster_jobs.held_until_released, FixedRate(3600), id="report")
    said = "task report was removed in another process"
    with caplog.at_level(logging.INFO, logger="lldsched"):
        try:
            _, token, _, _ = cluster_jobs.seen.get(timeout=10)
            running, other = (first, second) if first.task("report").running else (second, first)
            wait_until(lambda: "report" in {t.id for t in other.tasks()}, timeout=5,
                       what="the other scheduler to follow")  # fmt: skip
            other.remove("report")
            wait_until(lambda: any(said in m for m in caplog.messages), timeout=10,
                       what="the runner to say why its lease went")  # fmt: skip
        finally:
            cluster_jobs.released.set()
        assert cluster_jobs.seen.get(timeout=10)[:3] == ("report", token, True)  # flag up
        assert running.wait_idle(timeout=10)
    (record,) = [r for r in caplog.records if said in r.getMessage()]
    assert record.levelno == logging.INFO and record.name == "lldsched.cluster"
    assert f"(token {token})" in record.getMessage()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_run_now_from_another_process_keeps_the_grid_whoever_runs_the_extra_run(
    store_spec: StoreSpec,
) -> None:
    """run_now() moves no slot, in one process or several: the process that runs the
    extra run learns from the row that the slot it knew still comes next, and the
    process that asked drops its plan once the row says so (a plan left in place would
    hand out that slot again at its next run of the task)."""
    stores = [open_store(store_spec, lease=PAIR_LEASE, poll=POLL) for _ in range(3)]
    runner = Scheduler(workers=2, store=stores[0]).start()
    asker = Scheduler(workers=2, store=stores[1])  # not started: it cannot claim the run
    reader = stores[2]
    hourly = FixedRate(3600, start_delay=1800)
    try:
        runner.schedule("hourly", jobs.noop, hourly, id="hourly")
        asker.schedule("hourly", jobs.noop, hourly, id="hourly", replace_existing=True)
        waited = runner.task("hourly").next_run_at
        assert waited is not None and asker.task("hourly").next_run_at == waited
        assert asker.run_now("hourly")
        wait_until(lambda: bool(reader.records("hourly")) and not reader.leases(), timeout=10,
                   what="the runner to run the extra run")  # fmt: skip
        (stored,) = reader.load_all()
        assert stored.next_run_at == waited and stored.run_count == 1
        assert runner.task("hourly").next_run_at == waited
        asker.start()
        wait_until(lambda: asker.task("hourly").next_run_at == waited, timeout=5,
                   what="the asker to follow the run")  # fmt: skip
        assert asker.task("hourly").schedule == hourly  # its run_now plan is gone
    finally:
        runner.shutdown()
        asker.shutdown()
        for store in stores:
            store.close()


def test_run_now_keeps_the_grid_when_a_process_started_after_it_runs_the_extra_run(
    store_spec: StoreSpec,
) -> None:
    """The row carries the slot the run_now put off (``TaskSnapshot.waited``): a process
    that never saw the task before the click learns it from the row, runs the extra run
    and goes on to that slot, instead of counting the schedule on from the extra run."""
    stores = [open_store(store_spec, lease=PAIR_LEASE, poll=POLL) for _ in range(3)]
    asker = Scheduler(workers=2, store=stores[0])  # never started: it claims nothing
    reader = stores[2]
    hourly = FixedRate(3600, start_delay=1800)
    late: Scheduler | None = None
    try:
        asker.schedule("hourly", jobs.noop, hourly, id="hourly")
        waited = asker.task("hourly").next_run_at
        assert waited is not None and asker.run_now("hourly")
        (stored,) = reader.load_all()
        assert stored.waited == waited and stored.next_run_at is not None
        assert stored.next_run_at < waited
        late = Scheduler(workers=2, store=stores[1]).start()  # built after the run_now
        wait_until(lambda: bool(reader.records("hourly")) and not reader.leases(), timeout=10,
                   what="the late process to run the extra run")  # fmt: skip
        (stored,) = reader.load_all()
        assert (stored.next_run_at, stored.waited, stored.run_count) == (waited, None, 1)
        assert late.task("hourly").next_run_at == waited
        assert late.task("hourly").schedule == hourly  # its plan was used up
    finally:
        if late is not None:
            late.shutdown()
        asker.shutdown()
        for store in stores:
            store.close()


@pytest.mark.parametrize("built", ["before", "after"], ids=["follows-it", "learns-it"])
def test_an_extra_run_resumed_in_one_process_keeps_its_slot_whoever_runs_it(
    store_spec: StoreSpec, built: str
) -> None:
    """A run a plan decided keeps its slot when a resume makes it due (docs/decisions/schedules.md,
    "Resume re-anchors a fixed-rate grid"): its record says the slot it serves and, as
    due, the resume instant, in one process or several.  The process that runs it is
    not the one that resumed it: it follows the resume from the row (``built`` before
    the resume, holding the task paused), or learns the task from it (built after).
    Before the row kept the slot, its record said the resume instant as its slot."""
    stores = [open_store(store_spec, lease=PAIR_LEASE, poll=POLL) for _ in range(3)]
    asker = Scheduler(workers=2, store=stores[0])  # never started: it claims nothing
    reader = stores[2]
    hourly = FixedRate(3600, start_delay=1800)
    runner: Scheduler | None = None
    try:
        asker.schedule("hourly", jobs.noop, hourly, id="hourly")
        waited = asker.task("hourly").next_run_at
        assert asker.run_now("hourly") and asker.pause("hourly")
        clicked = asker.task("hourly").next_run_at  # the extra run's slot
        assert clicked is not None and waited is not None and clicked < waited
        if built == "before":  # it has the task, paused: it cannot claim it before the resume
            runner = Scheduler(workers=2, store=stores[1]).start()
            assert runner.task("hourly").status is TaskStatus.PAUSED
        wait_until(lambda: asker.now > clicked, timeout=5, what="the slot to pass")
        assert asker.resume("hourly")
        resumed = asker.task("hourly").next_run_at
        assert resumed is not None and resumed > clicked
        if runner is None:
            runner = Scheduler(workers=2, store=stores[1]).start()
        wait_until(lambda: bool(reader.records("hourly")) and not reader.leases(), timeout=10,
                   what="the runner to run the resumed extra run")  # fmt: skip
        (record,) = reader.records("hourly")
        assert record.ok and (record.slot, record.due) == (clicked, resumed)
        (stored,) = reader.load_all()
        assert (stored.next_run_at, stored.waited, stored.run_count) == (waited, None, 1)
        assert runner.task("hourly").next_run_at == waited
    finally:
        if runner is not None:
            runner.shutdown()
        asker.shutdown()
        for store in stores:
            store.close()


def test_a_cancel_or_remove_in_one_scheduler_reaches_the_other(pair: Pair) -> None:
    first, second, _, _ = pair
    first.schedule("later", jobs.noop, OneTime(first.now + 3600), id="later")
    first.schedule("gone", jobs.noop, OneTime(first.now + 3600), id="gone")
    wait_until(lambda: len(second.tasks()) == 2, timeout=5, what="B to learn both tasks")
    second.cancel("later")
    second.remove("gone")
    wait_until(_status(first, "later", TaskStatus.CANCELLED), timeout=5, what="the cancel in A")
    wait_until(lambda: [t.id for t in first.tasks()] == ["later"], timeout=5, what="the removal")


def test_a_reschedule_in_one_scheduler_moves_the_task_in_the_other(pair: Pair) -> None:
    first, second, _, _ = pair
    first.schedule("later", jobs.noop, OneTime(first.now + 3600), id="later")
    wait_until(lambda: len(second.tasks()) == 1, timeout=5, what="B to learn the task")
    soon = second.now + 1800
    second.reschedule("later", OneTime(soon))
    wait_until(lambda: first.task("later").next_run_at == soon, timeout=5, what="the move in A")
    assert first.task("later").schedule == OneTime(soon)


def test_registering_an_id_again_with_replace_existing_in_another_scheduler_updates_it(
    pair: Pair,
) -> None:
    first, second, reader, _ = pair
    first.schedule("report", jobs.noop, OneTime(first.now + 3600), id="report")
    second.schedule(
        "report v2", jobs.noop, OneTime(first.now + 3600), id="report", replace_existing=True
    )
    wait_until(lambda: first.task("report").name == "report v2", timeout=5, what="the update")
    assert [snapshot.task.name for snapshot in reader.load_all()] == ["report v2"]


def test_the_same_ids_registered_at_once_in_both_schedulers_end_as_one_definition_each(
    pair: Pair,
) -> None:
    """Two processes deploying the same jobs at the same moment (a rolling deploy's
    replicas, each registering every job by ``id=`` with ``replace_existing=True``):
    each id ends as one whole definition, the one or the other (never a field of each),
    one row per id, and both schedulers and the store agree on which."""
    first, second, reader, _ = pair
    ids = [f"job-{n}" for n in range(20)]
    start = threading.Barrier(2)

    def deploy(scheduler: Scheduler, who: str, every: float) -> None:
        start.wait(timeout=10)
        for task_id in ids:
            scheduler.schedule(f"{task_id} by {who}", jobs.note, FixedRate(every), args=(who,),
                               id=task_id, replace_existing=True)  # fmt: skip

    threads = [
        threading.Thread(target=deploy, args=(first, "first", 3600.0)),
        threading.Thread(target=deploy, args=(second, "second", 7200.0)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    def definitions(tasks: Iterable[Any]) -> dict[str, tuple[str, tuple[object, ...], str]]:
        return {task.id: (task.name, task.args, repr(task.schedule)) for task in tasks}

    stored = definitions([snapshot.task for snapshot in reader.load_all()])
    assert sorted(stored) == sorted(ids)
    for task_id, (name, args, schedule) in stored.items():
        (who,) = args
        every = {"first": "3600", "second": "7200"}[str(who)]
        assert name == f"{task_id} by {who}" and every in schedule, stored[task_id]

    def follows(scheduler: Scheduler) -> Callable[[], bool]:
        return lambda: definitions(scheduler.tasks()) == stored

    for scheduler in (first, second):
        wait_until(follows(scheduler), timeout=10, what="the scheduler to follow the store")


def test_an_overlap_policy_registered_again_in_another_scheduler_reaches_the_first(
    pair: Pair,
) -> None:
    first, second, reader, _ = pair
    hourly = FixedRate(3600, start_delay=3600)
    first.schedule("report", jobs.noop, hourly, id="report")
    wait_until(lambda: len(second.tasks()) == 1, timeout=5, what="B to learn the task")
    # BUFFER_ONE: the shared store refuses ALLOW and CANCEL_OTHER (test_cluster_overlap.py)
    second.schedule(
        "report", jobs.noop, hourly, id="report", replace_existing=True,
        overlap=Overlap.BUFFER_ONE,
    )  # fmt: skip
    wait_until(lambda: first.task("report").overlap is Overlap.BUFFER_ONE, timeout=5,
               what="overlap")  # fmt: skip
    assert first.task("report").definition == second.task("report").definition
    (snapshot,) = reader.load_all()
    assert snapshot.task.overlap is Overlap.BUFFER_ONE


def test_an_id_another_scheduler_registered_is_refused_without_replace_existing(
    pair: Pair,
) -> None:
    first, second, _, _ = pair
    first.schedule("report", jobs.noop, OneTime(first.now + 3600), id="report")
    with pytest.raises(ValidationError, match="'report' is already registered"):
        second.schedule("report", jobs.noop, OneTime(first.now + 3600), id="report")


def test_default_ids_of_two_schedulers_never_collide(pair: Pair) -> None:
    first, second, reader, _ = pair
    ids = {first.schedule("a", jobs.noop, OneTime(first.now + 60)).id for _ in range(3)}
    ids |= {second.schedule("b", jobs.noop, OneTime(first.now + 60)).id for _ in range(3)}
    assert len(ids) == 6
    assert len(reader.load_all()) == 6


def test_a_run_whose_lease_is_taken_over_is_told_and_its_write_refused(
    short_sqlite_pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    # SQLite only: it expires the lease by claiming with a later `now`; PostgreSQL
    # measures expiry on the server's clock (tests/test_store_postgres_claims.py takes a
    # lease over there, and the multi-process test stalls a holder past its lease). The
    # short lease: the holder learns of the takeover at its next renewal, lease / 3 on.
    first, second, reader, store = short_sqlite_pair
    second.shutdown()  # one scheduler runs; the test takes its lease over by hand
    first.schedule("hold", cluster_jobs.until_flag, OneTime(first.now), id="hold")
    task_id, token, _, _ = cluster_jobs.seen.get(timeout=10)
    assert (task_id, token) == ("hold", reader.leases()[0].token)
    assert token is not None
    (takeover,) = reader.claim(now=first.now + 100 * LEASE, limit=1)  # as if it had expired
    assert takeover.token > token
    assert cluster_jobs.seen.get(timeout=10) == ("hold", token, True, "lease")
    wait_until(lambda: store.rejected == 1, timeout=5, what="the stale settle to be refused")
    assert reader.records("hold") == []
    # Its own process keeps the record (the run ran there), as the warning says: before,
    # it said the record "was dropped", beside a history that held it.
    (kept,) = first.task("hold").history
    assert kept.token == token
    (said,) = [r.getMessage() for r in caplog.records if "the write was refused" in r.getMessage()]
    assert said.endswith(
        f"the record of attempt {kept.attempt} was not stored (this process's own history "
        "keeps it: the run ran here, and the store keeps the run that took it over)"
    )


@pytest.mark.parametrize(
    ("action", "isolation"),
    [(cluster_jobs.until_cancelled, "thread"), ("tests.jobs:hang_first_time", "process")],
    ids=["coroutine", "isolated"],
)
def test_a_run_whose_lease_is_taken_over_is_stopped_when_it_cannot_look_at_its_flag(
    short_sqlite_pair: Pair,
    tmp_path: Path,
    action: Callable[..., object] | str,
    isolation: Isolation,
) -> None:
    """A coroutine or a process-isolated run has no flag it must look at (neither
    declares ``ctx``): once the renewal finds its lease taken over, the runtime stops it,
    as it does at a timeout or a pause, instead of running the slot a second time beside
    the process that took it over (it ran to its end: a minute, or for ever)."""
    first, second, reader, store = short_sqlite_pair
    second.shutdown()  # one scheduler runs; the test takes its lease over by hand
    args = (str(tmp_path / "marker"),) if isolation == "process" else ()
    first.schedule("hold", action, OneTime(first.now), id="hold", isolation=isolation,
                   args=args)  # fmt: skip
    wait_until(lambda: first.task("hold").running and bool(reader.leases()), timeout=30,
               what="the run to start")  # fmt: skip
    (lease,) = reader.leases()
    (takeover,) = reader.claim(now=first.now + 100 * LEASE, limit=1)  # as if it had expired
    assert takeover.token > lease.token
    wait_until(lambda: not first.task("hold").running, timeout=10, what="the stale run to stop")
    wait_until(lambda: store.rejected == 1, timeout=5, what="the stale settle to be refused")
    assert reader.records("hold") == []
    (record,) = first.task("hold").history
    assert record.error is not None and "lease" in record.error, record.error


def test_an_isolated_run_whose_lease_went_before_a_child_took_it_is_never_sent(
    short_sqlite_pair: Pair,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The renewal found the lease gone while the run's worker was still starting its
    child: no child to kill then, so the worker asks once it holds one, and the run is
    never sent (it would have run the slot beside its new holder)."""
    first, second, reader, store = short_sqlite_pair
    second.shutdown()
    starting, let_start = hold_child_starts(monkeypatch)  # the child's, until the takeover
    first.schedule("hold", "tests.jobs:hang_first_time", OneTime(first.now), id="hold",
                   isolation="process", args=(str(tmp_path / "marker"),))  # fmt: skip
    assert starting.wait(30)
    (lease,) = reader.leases()
    (takeover,) = reader.claim(now=first.now + 100 * LEASE, limit=1)  # as if it had expired
    assert takeover.token > lease.token
    wait_until(lambda: "lost the lease of task hold" in caplog.text, timeout=10,
               what="the renewal to find the lease gone")  # fmt: skip
    let_start.set()
    wait_until(lambda: not first.task("hold").running, timeout=10, what="the run to end")
    (record,) = first.task("hold").history
    assert (
        record.error is not None and "lease" in record.error and "before its worker" in record.error
    ), record.error
    assert not (tmp_path / "marker").exists()  # the action never began
    wait_until(lambda: store.rejected == 1, timeout=5, what="the stale settle to be refused")


def test_a_registration_racing_one_from_another_scheduler_is_refused_not_overwritten(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True) as first, SqliteTaskStore(path, shared=True) as second:
        at = OneTime(2_000_000_000.0)
        Scheduler(store=first).schedule("report", jobs.noop, at, id="report")
        task = Task("report", "mine", jobs.noop, at, Priority.NORMAL, RetryPolicy(), None)
        registration = TaskSnapshot(task, TaskStatus.SCHEDULED, at.at, 0, 0, 0, None)
        with pytest.raises(ValidationError, match="'report' is already registered by another"):
            second.save(registration)  # what the core writes for a registration second made
        assert [snapshot.task.name for snapshot in second.load_all()] == ["report"]


def test_a_coroutine_run_carries_its_claims_token_and_settles_with_it(pair: Pair) -> None:
    first, _, reader, _ = pair
    first.schedule("async", cluster_jobs.token_of, OneTime(first.now), id="async")
    wait_until(lambda: bool(reader.records("async")), timeout=10, what="the coroutine's record")
    (record,) = reader.records("async")
    assert record.ok and record.token is not None and record.result == str(record.token)


def test_a_process_isolated_run_in_shared_mode_settles_with_its_token(pair: Pair) -> None:
    first, second, reader, _ = pair
    first.schedule("isolated", "tests.jobs:noop", OneTime(first.now), id="isolated",
                   isolation="process")  # fmt: skip
    wait_until(lambda: bool(reader.records("isolated")), timeout=30, what="the isolated run")
    (record,) = reader.records("isolated")
    assert record.ok and record.token is not None
    wait_until(_status(second, "isolated", TaskStatus.SUCCEEDED), timeout=5,
               what="the other scheduler to follow")  # fmt: skip


@pytest.mark.parametrize(
    ("action", "isolation"),
    [(cluster_jobs.until_cancelled, "thread"), ("tests.jobs:hang_first_time", "process")],
    ids=["coroutine", "isolated"],
)
def test_a_pause_in_the_other_scheduler_stops_a_run_this_one_cannot_let_finish(
    sqlite_pair: Pair, tmp_path: Path, action: Callable[..., object] | str, isolation: Isolation
) -> None:
    """As pause() does locally: the running scheduler cancels its coroutine, or kills
    its child, when it learns of a pause made elsewhere."""
    first, second, reader, _ = sqlite_pair
    args = (str(tmp_path / "marker"),) if isolation == "process" else ()
    first.schedule("long", action, OneTime(first.now), id="long", isolation=isolation,
                   args=args)  # fmt: skip

    def runs_it(scheduler: Scheduler) -> bool:  # the other may not have followed yet
        return any(task.id == "long" and task.running for task in scheduler.tasks())

    wait_until(lambda: runs_it(first) or runs_it(second), timeout=30, what="the run to start")
    running, other = (first, second) if runs_it(first) else (second, first)
    wait_until(lambda: "long" in {task.id for task in other.tasks()}, timeout=5,
               what="the other scheduler to follow")  # fmt: skip
    assert other.pause("long")
    wait_until(lambda: bool(reader.records("long")), timeout=10, what="the stopped run's record")
    (record,) = reader.records("long")
    assert not record.ok and record.error is not None and "task paused" in record.error
    wait_until(lambda: not runs_it(running), timeout=5, what="the run to end")


def test_a_scheduler_built_on_a_shared_store_has_the_stored_tasks_before_it_starts(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True) as first, SqliteTaskStore(path, shared=True) as second:
        Scheduler(store=first).schedule("report", jobs.noop, OneTime(2_000_000_000.0), id="report")
        late = Scheduler(store=second)
        assert [(task.id, task.status) for task in late.tasks()] == [
            ("report", TaskStatus.SCHEDULED)
        ]
        assert late.task("report").next_run_at == 2_000_000_000.0
        late.shutdown()


@pytest.mark.parametrize("drain", [True, False], ids=["drain", "no-drain"])
def test_a_scheduler_shutting_down_keeps_the_leases_of_its_runs_in_flight(
    short_pair: Pair, drain: bool
) -> None:
    """shutdown() waits for the runs in flight with its timer stopped: their leases are
    still renewed meanwhile, so no other process takes over a run that is finishing (the
    short lease: the run outlives the expiry its claim had)."""
    first, second, reader, _ = short_pair
    cluster_jobs.released.clear()
    first.schedule("long", cluster_jobs.held_until_released, OneTime(first.now), id="long")
    task_id, token, _, _ = cluster_jobs.seen.get(timeout=10)
    running = first if first.task("long").running else second
    stopping = threading.Thread(target=running.shutdown, kwargs={"drain": drain, "timeout": 30})
    stopping.start()
    try:
        wait_until(lambda: not running.running, timeout=5, what="the shutdown to begin")
        (lease,) = reader.leases()
        assert lease.token == token

        def renewed_past_its_expiry() -> bool:  # the lease as it stood would have lapsed
            leases = reader.leases()
            return (
                bool(leases)
                and leases[0].token == token
                and (leases[0].expires_at >= lease.expires_at + LEASE)
            )

        wait_until(renewed_past_its_expiry, timeout=10 * LEASE, what="a renewal in shutdown")
    finally:
        cluster_jobs.released.set()
        stopping.join(30)
    assert cluster_jobs.seen.get(timeout=10) == (task_id, token, False, None)
    wait_until(lambda: bool(reader.records("long")), timeout=10, what="the run's record")
    (record,) = reader.records("long")
    assert record.ok and record.token == token


def test_a_draining_scheduler_leaves_its_runs_retry_and_new_work_to_the_other(
    pair: Pair,
) -> None:
    """``shutdown(drain=True)`` in one process while the other goes on (docs/CLUSTER.md,
    "How it works": a drain runs what this process claimed before its timer stopped,
    nothing more): its run ends and settles under its own token, its retry, due at once,
    and a task registered during the drain are the other's, and the drain returns."""
    first, second, reader, first_store = pair
    while not cluster_jobs.seen.empty():  # what an earlier test's run said after it failed
        cluster_jobs.seen.get()
    cluster_jobs.released.clear()
    retry = RetryPolicy(max_attempts=2, initial_backoff=0)
    first.schedule("long", cluster_jobs.held_then_broken, OneTime(first.now), id="long",
                   retry=retry)  # fmt: skip
    stopped: list[bool] = []
    stopping: threading.Thread | None = None
    try:
        _, token, _, _ = cluster_jobs.seen.get(timeout=10)
        assert token is not None
        (lease,) = reader.leases()
        draining, other = (first, second) if lease.holder == first_store.node else (second, first)
        stopping = threading.Thread(
            target=lambda: stopped.append(draining.shutdown(drain=True, timeout=30))
        )
        stopping.start()
        wait_until(lambda: not draining.running, timeout=5, what="the drain to begin")
        other.schedule("later", jobs.noop, OneTime(delay=0), id="later")
        wait_until(lambda: bool(reader.records("later")), timeout=10, what="the new task's run")
    finally:
        cluster_jobs.released.set()
        if stopping is not None:
            stopping.join(30)
    assert stopped == [True]
    wait_until(lambda: len(reader.records("long")) == 2, timeout=10, what="the retry's record")
    first_attempt, retried = reader.records("long")
    assert (first_attempt.attempt, first_attempt.token) == (1, token)
    assert first_attempt.node == lease.holder and not first_attempt.ok
    assert retried.attempt == 2 and retried.node != lease.holder
    assert retried.token is not None and retried.token > token
    (later,) = reader.records("later")
    assert later.ok and later.node != lease.holder
    ran = {outcome: n for outcome, n in draining.metrics().outcomes.items() if n}
    assert ran == {Outcome.FAILED: 1}  # its own run, nothing more


def test_a_scheduler_that_takes_over_an_expired_lease_logs_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A process died holding a claim (its store closed, nothing settled): the one that
    takes the run over says so in its log, the only place that tells it ran again. Its
    slot reads as the job's failure lines read their instants, ISO 8601 in UTC (before:
    seconds since the epoch, "slot 1796348418.913")."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True, lease=LEASE) as dead:
        registrar = Scheduler(store=dead)
        registrar.schedule("job", jobs.noop, OneTime(registrar.now), id="job")
        (claim,) = dead.claim(now=registrar.now, limit=1)  # expires LEASE seconds from now
    with SqliteTaskStore(path, shared=True, lease=LEASE, poll=POLL) as alive:
        survivor = Scheduler(store=alive).start()
        try:
            wait_until(lambda: bool(alive.records("job")), timeout=10, what="the run taken over")
        finally:
            survivor.shutdown()
        (record,) = alive.records("job")
    assert record.token is not None and record.token > claim.token and record.attempt == 1
    slot = utc_datetime(claim.slot).isoformat(timespec="milliseconds")
    assert f"took over task job (slot {slot}, attempt 1) with token {record.token}" in (caplog.text)


@pytest.mark.parametrize("pauser", ["runner", "other"])
def test_a_resume_by_the_runner_during_its_run_is_written_and_outlives_the_pause(
    pair: Pair, pauser: str
) -> None:
    """A pause during a run (by the process running it, or by the other), then a resume by
    the runner while the run goes on: the resumed task's state is RUNNING there, and a
    RUNNING save by the lease's holder writes nothing (the lease says so), so the row
    stayed PAUSED.  The other processes read the task paused, and the run's settle took
    that pause for one written during the run, which wins: the task ended PAUSED in
    every process, the runner's registry too once it read the row back, whatever
    ``resume()`` had returned (on SQLite when the runner paused, on PostgreSQL when
    the other did).  A runner killed before its settle left it PAUSED for good.  Now
    the resume writes the row as the run's claim left it (runnable at the run's slot,
    its lease holding it): the others read it live, a process that takes over the
    lease runs the slot again, and the settle decides the next slot."""
    reader = pair[2]
    lease, running, other = _held_run(pair)
    try:
        wait_until(lambda: "hourly" in {t.id for t in other.tasks()}, timeout=5,
                   what="the other scheduler to follow")  # fmt: skip
        assert (running if pauser == "runner" else other).pause("hourly")
        wait_until(_status(running, "hourly", TaskStatus.PAUSED), timeout=5,
                   what="the runner to follow the pause")  # fmt: skip
        heard = EventLog()
        running.add_listener(heard)
        assert running.resume("hourly")
        assert running.task("hourly").status is TaskStatus.RUNNING
        resumed = heard.wait_for(lambda event: event.task_id == "hourly", timeout=5)
        assert resumed is not None  # told to the runner's listeners, as a resume always is
        assert (resumed.previous, resumed.status) == (TaskStatus.PAUSED, TaskStatus.RUNNING)
        (stored,) = reader.load_all()
        assert (stored.status, stored.next_run_at) == (TaskStatus.SCHEDULED, lease.slot)
        assert [held.token for held in reader.leases()] == [lease.token]  # still the run's
    finally:
        cluster_jobs.released.set()
    _settled_at_the_next_slot(reader, lease)
    wait_until(_status(other, "hourly", TaskStatus.SCHEDULED), timeout=5,
               what="the other scheduler to follow the settle")  # fmt: skip
    assert running.task("hourly").status is TaskStatus.SCHEDULED
    assert [record.slot for record in reader.records("hourly")] == [lease.slot]


def test_a_modify_by_the_runner_during_its_run_is_written_at_once(pair: Pair) -> None:
    """A new definition given by the process running the task, while the run goes on,
    is written at once, the row's state left to the run's lease: the reader sees it
    before the settle (which used to write it, so a runner killed first lost it:
    tests/cluster_verb_kill.py), and the settle decides the next slot as before."""
    reader = pair[2]
    lease, running, _ = _held_run(pair)
    try:
        running.modify("hourly", priority=Priority.HIGH)
        (stored,) = reader.load_all()
        assert stored.task.priority is Priority.HIGH
        assert (stored.status, stored.next_run_at) == (TaskStatus.SCHEDULED, lease.slot)
        assert [held.token for held in reader.leases()] == [lease.token]  # still the run's
    finally:
        cluster_jobs.released.set()
    _settled_at_the_next_slot(reader, lease)
    (stored,) = reader.load_all()
    assert stored.task.priority is Priority.HIGH
