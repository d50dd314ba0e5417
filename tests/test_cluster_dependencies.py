"""Dependencies (depends_on) across schedulers on one shared store: each process
registers the upstream and its dependent at start; a downstream is released once per
upstream success, whichever process ran it (docs/CLUSTER.md, "Dependencies")."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    RetryPolicy,
    Scheduler,
    SchedulerStateError,
    SqliteTaskStore,
    TaskStatus,
)
from lldsched.coordination import CoordinatedStore
from lldsched.errors import StoreError
from lldsched.model import ExecutionRecord, Outcome
from lldsched.persistence import TaskSnapshot
from tests import cluster_jobs, jobs
from tests.cluster import Cluster, StoreSpec, open_store
from tests.waits import wait_until

LEASE = 30.0  # no claim expires within a test
POLL = 0.05
HOUR = 3600.0
BLOCKED = TaskStatus.BLOCKED
GIVE_UP_AT_ONCE = RetryPolicy(max_attempts=1, fail_after_given_up=1)  # FAILED at a failure

Pair = tuple[Scheduler, Scheduler, CoordinatedStore]


@pytest.fixture
def pair(store_spec: StoreSpec) -> Iterator[Pair]:
    stores = [open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(3)]
    first, second = (Scheduler(workers=2, store=store).start() for store in stores[:2])
    yield first, second, stores[2]
    first.shutdown()
    second.shutdown()
    for store in stores:
        store.close()


def _register(
    scheduler: Scheduler, *, every: float = 0.1, extract: Callable[[], None] = jobs.noop
) -> None:
    """What every process does at its start: the upstream, then its dependent."""
    scheduler.schedule("extract", extract, FixedRate(HOUR, start_delay=HOUR), id="extract",
                       retry=GIVE_UP_AT_ONCE, replace_existing=True)  # fmt: skip
    scheduler.schedule("load", jobs.noop, FixedRate(every), id="load", depends_on=["extract"],
                       replace_existing=True)  # fmt: skip


def _due_now(scheduler: Scheduler, task_id: str) -> None:
    """Bring the hourly dependent ``task_id``'s next slot to now (a new hourly grid from
    now): ``run_now`` adds no run that its upstreams would hold
    (docs/decisions/dependencies.md, "`run_now` on a dependent adds a run only when it
    can run now")."""
    scheduler.reschedule(task_id, FixedRate(HOUR))


def _ok(store: CoordinatedStore, task_id: str) -> int:
    return sum(1 for record in store.records(task_id) if record.ok)


def _ran(
    store: CoordinatedStore, task_id: str, n: int, then: TaskStatus | None = None
) -> Callable[[], bool]:
    """The condition: ``task_id`` has ``n`` successes (and its row says ``then``)."""
    return lambda: _ok(store, task_id) == n and then in (None, _row(store, task_id))


def _row(store: CoordinatedStore, task_id: str) -> TaskStatus:
    return next(s.status for s in store.load_all() if s.task.id == task_id)


def _holds(store: CoordinatedStore, node: str) -> bool:
    """Whether the process ``node`` holds a lease row (live or expired)."""
    return any(lease.holder == node for lease in store.leases())


def _records(store: CoordinatedStore, task_id: str, outcome: Outcome) -> list[ExecutionRecord]:
    return [record for record in store.records(task_id) if record.outcome is outcome]


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Three stores on one shared store: two for schedulers a test starts and stops as its
    story needs, and one to read it with."""
    opened = [open_store(store_spec, lease=LEASE, poll=POLL) for _ in range(3)]
    yield opened
    for store in opened:
        store.close()


def _hourly(scheduler: Scheduler) -> None:
    """The upstream and an hourly dependent whose first slot is now."""
    _register(scheduler, every=HOUR)


def test_a_success_another_process_ran_releases_a_slot_claimed_here(
    stores: list[CoordinatedStore],
) -> None:
    """B registered both when extract had never succeeded; A then ran extract twice (the
    second after load's run). A slot of load B claims runs: a success since load's last
    start exists, whoever ran it."""
    b = Scheduler(workers=2, store=stores[1])
    _hourly(b)
    a = Scheduler(workers=2, store=stores[0]).start()
    try:
        _hourly(a)
        a.run_now("extract")
        wait_until(lambda: _ok(stores[2], "load") == 1, timeout=10, what="load ran once")
        a.run_now("extract")
        wait_until(lambda: _ok(stores[2], "extract") == 2, timeout=10, what="extract again")
    finally:
        a.shutdown()
    b.start()
    try:
        wait_until(lambda: b.task("extract").run_count == 2, timeout=10, what="B follows")
        b.run_now("load")
        wait_until(lambda: _ok(stores[2], "load") == 2 or _row(stores[2], "load") is BLOCKED,
                   timeout=10, what="load's extra slot to run or block")  # fmt: skip
        assert _ok(stores[2], "load") == 2
    finally:
        b.shutdown()


def test_a_process_started_after_the_dependent_ran_waits_for_a_new_success(
    stores: list[CoordinatedStore],
) -> None:
    """A ran extract once and load once after it; B starts (a restart, or one more worker
    process) and claims load's next slot: no success since load's last start, so BLOCKED,
    not a second run on the success already used."""
    a = Scheduler(workers=2, store=stores[0]).start()
    try:
        _hourly(a)
        a.run_now("extract")
        wait_until(lambda: _ok(stores[2], "load") == 1, timeout=10, what="load ran once")
    finally:
        a.shutdown()
    b = Scheduler(workers=2, store=stores[1]).start()
    try:
        _hourly(b)
        assert b.run_now("load") is False  # counted from the records: it could only wait
        _due_now(b, "load")
        wait_until(lambda: _ok(stores[2], "load") == 2 or _row(stores[2], "load") is BLOCKED,
                   timeout=10, what="load's slot to run or block")  # fmt: skip
        assert _ok(stores[2], "load") == 1
        b.run_now("extract")
        wait_until(lambda: _ok(stores[2], "load") == 2, timeout=10, what="released by B")
    finally:
        b.shutdown()


def test_a_wait_blocked_in_one_process_and_ended_in_another_is_recorded_from_its_slot(
    stores: list[CoordinatedStore],
) -> None:
    """A found load BLOCKED; B, started later, followed that row and ran the success that
    released it: the wait's record starts at the blocked slot, not at the release."""
    a = Scheduler(workers=2, store=stores[0]).start()
    try:
        _hourly(a)
        wait_until(lambda: _row(stores[2], "load") is BLOCKED, timeout=10, what="blocked")
    finally:
        a.shutdown()
    (due,) = [s.next_run_at for s in stores[2].load_all() if s.task.id == "load"]
    b = Scheduler(workers=2, store=stores[1]).start()
    try:
        _hourly(b)
        b.run_now("extract")
        wait_until(lambda: _ok(stores[2], "load") == 1, timeout=10, what="released by B")
    finally:
        b.shutdown()
    (wait,) = _records(stores[2], "load", Outcome.BLOCKED)
    assert wait.started == due
    assert wait.finished > wait.started


@pytest.mark.parametrize("b_starts", ["after A stopped", "with A", "with A, which stops"])
def test_a_wait_a_reschedule_kept_blocked_and_another_process_ended_names_the_slot_found_blocked(
    stores: list[CoordinatedStore], b_starts: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A found load BLOCKED, then rescheduled it (still BLOCKED, its next slot an hour
    on); B ran the success that released it.  The wait's record names the slot found
    blocked, as in A (docs/decisions/dependencies.md, "A wait's record names the slot
    found blocked"): B knew only the row's new due instant, and recorded a wait of a slot
    an hour ahead, started when it ended.  With A running, A may claim the slot B's
    ``run_now`` made due: then A ran the success and ended the wait it found, its record
    started when A found it blocked (after the due instant, before the row said so
    here), where B starts it at the due instant (``DependencyWaits.adopted_wait``).
    Before, the test took B for the one that ran it, and failed when A did.  With A
    stopped once B followed the reschedule, B ends the wait it followed (the slot found
    blocked read from the row, not from a restart)."""
    a = Scheduler(workers=2, store=stores[0]).start()
    b: Scheduler | None = None
    try:
        _hourly(a)
        wait_until(lambda: _row(stores[2], "load") is BLOCKED, timeout=10, what="blocked")
        blocked_seen = time.time()  # A found it blocked before
        (due,) = [s.next_run_at for s in stores[2].load_all() if s.task.id == "load"]
        if b_starts != "after A stopped":
            b = Scheduler(workers=2, store=stores[1]).start()
        a.reschedule("load", FixedRate(HOUR, start_delay=HOUR))
        (moved,) = [s.next_run_at for s in stores[2].load_all() if s.task.id == "load"]
        assert moved is not None and due is not None and moved > due + HOUR / 2
        if b is None:
            a.shutdown()
            b = Scheduler(workers=2, store=stores[1]).start()
        else:
            seen = b
            wait_until(lambda: seen.task("load").next_run_at == moved, timeout=10,
                       what="B follows the reschedule")  # fmt: skip
            if b_starts == "with A, which stops":  # B ends the wait it followed
                a.shutdown()
        b.run_now("extract")
        wait_until(lambda: _row(stores[2], "load") is TaskStatus.SCHEDULED, timeout=10,
                   what="released by B")  # fmt: skip
    finally:
        a.shutdown()
        if b is not None:
            b.shutdown()
    (wait,) = _records(stores[2], "load", Outcome.BLOCKED)
    (ran,) = [record for record in stores[2].records("extract") if record.ok]
    assert (wait.slot, wait.due) == (due, due)
    if ran.node == stores[1].node:  # B ran the success, and ended the wait it followed
        assert wait.started == due
    else:  # A did (b_starts "with A"), and ended the wait it found
        assert (b_starts, ran.node) == ("with A", stores[0].node)
        assert due <= wait.started <= blocked_seen
    # B, started with A, followed load's BLOCKED row again (the reschedule) while it had
    # load BLOCKED already: applied, its wait going on, not an error logged.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_each_upstream_success_releases_the_dependent_once_whichever_process_ran_it(
    pair: Pair,
) -> None:
    """Both processes register both tasks at start; load, due every 0.1 s, waits BLOCKED
    between extract's runs. Each success releases it once: one run of load per success,
    not one per process, and one record per wait, each after the one before."""
    first, second, reader = pair
    _register(first)
    _register(second)
    wait_until(lambda: _row(reader, "load") is BLOCKED, timeout=10, what="load blocked")
    for n in (1, 2, 3, 4):
        (first if n % 2 else second).run_now("extract")
        wait_until(_ran(reader, "extract", n), timeout=10, what=f"extract ran {n}")
        wait_until(_ran(reader, "load", n, then=BLOCKED), timeout=10,
                   what=f"load ran {n} and waits again")  # fmt: skip
    threading.Event().wait(0.3)  # a short bounded wait to prove a negative: no extra run
    assert _ok(reader, "load") == 4
    waits = _records(reader, "load", Outcome.BLOCKED)
    assert len(waits) == 4
    for before, after in itertools.pairwise(waits):
        assert before.finished <= after.started < after.finished


def _both_see(pair: Pair, task_id: str, status: TaskStatus) -> Callable[[], bool]:
    first, second, _ = pair
    return lambda: all(s.task(task_id).status is status for s in (first, second))


def test_of_two_upstreams_the_process_that_ran_the_later_success_releases_the_dependent(
    pair: Pair,
) -> None:
    """load waits for extract and for clean; the first process runs extract, the second
    clean after it: clean's success completed the wait, so the second releases load, once
    (the first ran a success too, but not the one that completed it)."""
    first, second, reader = pair
    for scheduler in (first, second):
        for upstream in ("extract", "clean"):
            scheduler.schedule(upstream, jobs.noop, FixedRate(HOUR, start_delay=HOUR),
                               id=upstream, replace_existing=True)  # fmt: skip
        scheduler.schedule("load", jobs.noop, FixedRate(HOUR), id="load",
                           depends_on=["extract", "clean"], replace_existing=True)  # fmt: skip
    wait_until(_both_see(pair, "load", BLOCKED), timeout=10, what="load blocked in both")
    first.run_now("extract")
    wait_until(_ran(reader, "extract", 1), timeout=10, what="extract ran")
    second.run_now("clean")
    wait_until(_ran(reader, "load", 1, then=TaskStatus.SCHEDULED), timeout=10,
               what="load released, ran and scheduled")  # fmt: skip
    (wait,) = _records(reader, "load", Outcome.BLOCKED)
    (clean,) = [record for record in reader.records("clean") if record.ok]
    assert wait.finished >= clean.finished


@pytest.mark.parametrize("end", ["fails", "cancelled"])
def test_an_upstream_dead_in_one_process_fails_the_dependent_once(pair: Pair, end: str) -> None:
    """As in one process: a dependent waiting for an upstream that failed for good or was
    cancelled is FAILED, in the dead letter, naming it; one wait record, whichever
    process ended it."""
    first, second, reader = pair
    _register(first, extract=jobs.broken)
    _register(second, extract=jobs.broken)
    wait_until(_both_see(pair, "load", BLOCKED), timeout=10, what="load blocked in both")
    if end == "fails":
        second.run_now("extract")
    else:
        second.cancel("extract")
    wait_until(_both_see(pair, "load", TaskStatus.FAILED), timeout=10, what="load failed")
    assert _row(reader, "load") is TaskStatus.FAILED
    (wait,) = _records(reader, "load", Outcome.BLOCKED)
    assert wait.error is not None and "UpstreamFailed: upstream extract" in wait.error
    assert "load" in reader.dead_letter()


def test_a_cancelled_upstream_that_retired_still_fails_the_dependent_at_its_next_slot(
    stores: list[CoordinatedStore],
) -> None:
    """As in one process (docs/decisions/dependencies.md, "A retired upstream counts as it ended"):
    load had its success of extract and ran; extract is cancelled and retires at once
    (retain_finished=0). load's next slot (brought to now: _due_now) fails, naming extract;
    it ran instead, and would at every slot after, as if extract were not named."""
    scheduler = Scheduler(workers=2, store=stores[0], retain_finished=0).start()
    try:
        scheduler.schedule("extract", jobs.noop, FixedRate(HOUR), id="extract")
        load = scheduler.schedule("load", jobs.noop, FixedRate(HOUR), id="load",
                                  depends_on=["extract"])  # fmt: skip
        wait_until(_ran(stores[2], "load", 1, then=TaskStatus.SCHEDULED), timeout=10,
                   what="load ran once")  # fmt: skip
        scheduler.cancel("extract")
        assert [task.id for task in scheduler.tasks()] == ["load"]  # extract retired
        assert scheduler.run_now("load") is False  # its slot could not run now
        _due_now(scheduler, "load")
        wait_until(lambda: load.status is not TaskStatus.SCHEDULED or load.run_count == 2,
                   timeout=10, what="load's next slot decided")  # fmt: skip
        assert load.status is TaskStatus.FAILED and load.run_count == 1
        assert "UpstreamFailed: upstream extract is cancelled" in (load.last_error or "")
    finally:
        scheduler.shutdown()


class _FeedHeld(SqliteTaskStore):
    """A shared store whose change feed reads as unchanged once :attr:`hold` is set, until
    :data:`cluster_jobs.released` is: a process that has not read a change yet, whatever
    its timer does meanwhile (it reads the feed at every wake, and the wake that follows a
    dispatch may come after another process wrote, on a loaded machine). Nothing is
    lost: the changes held back are read at the first read after."""

    def __init__(self, path: Path, *, lease: float, poll: float) -> None:
        super().__init__(path, shared=True, lease=lease, poll=poll)
        self.hold = threading.Event()

    def changed(self) -> bool:
        if self.hold.is_set() and not cluster_jobs.released.is_set():
            return False
        return super().changed()


@pytest.mark.parametrize("ends", ["ok", "failed"])
def test_an_upstream_run_that_ended_a_wait_its_process_had_not_seen_yet_ends_it_there(
    tmp_path: Path, ends: str
) -> None:
    """B finds load BLOCKED while A's run of extract is going; A finishes before it has
    read that row (its store is polled hourly, and its feed held until the run is let
    go: the wake that follows the run's dispatch may read B's write on a loaded
    machine, and did, one run in five under load: _FeedHeld). A's run decided the
    wait: a success releases load, a failure for good fails it (UpstreamFailed), in A,
    once; B, which ran neither, leaves it alone. A reads the feed as its run ends (the
    run's task has dependents): nothing else wakes it (leases of an hour, renewed every
    20 minutes). Before, the failure waited for A's next renewal of a lease (10 s with
    30 s leases, the wait's timeout: it failed on a loaded machine)."""
    path = tmp_path / "tasks.db"
    cluster_jobs.released.clear()
    held = _FeedHeld(path, lease=HOUR, poll=HOUR)  # A's
    stores = [held, *(SqliteTaskStore(path, shared=True, lease=HOUR, poll=HOUR) for _ in "BC")]
    a, b = (Scheduler(workers=2, store=store).start() for store in stores[:2])
    extract = cluster_jobs.held_until_released if ends == "ok" else cluster_jobs.held_then_broken
    try:
        for scheduler in (a, b):
            scheduler.schedule("extract", extract, FixedRate(HOUR, start_delay=HOUR),
                               id="extract", retry=GIVE_UP_AT_ONCE,
                               replace_existing=True)  # fmt: skip
            scheduler.schedule("load", jobs.noop, FixedRate(HOUR, start_delay=HOUR), id="load",
                               depends_on=["extract"], replace_existing=True)  # fmt: skip
        held.hold.set()  # from here until the run is let go, A reads no change
        a.run_now("extract")
        assert cluster_jobs.seen.get(timeout=10)[0] == "extract"
        _due_now(b, "load")
        wait_until(lambda: _row(stores[2], "load") is BLOCKED, timeout=10, what="B blocks load")
        assert a.task("load").status is TaskStatus.SCHEDULED  # A has not read it
        cluster_jobs.released.set()
        cluster_jobs.seen.get(timeout=10)
        if ends == "ok":
            wait_until(_ran(stores[2], "load", 1), timeout=10, what="load released and run")
        else:
            wait_until(lambda: _row(stores[2], "load") is TaskStatus.FAILED, timeout=10,
                       what="load failed")  # fmt: skip
        threading.Event().wait(0.3)  # a short bounded wait to prove a negative: nothing more
        assert _ok(stores[2], "load") == (1 if ends == "ok" else 0)
        (wait,) = _records(stores[2], "load", Outcome.BLOCKED)
        assert (wait.error is None) is (ends == "ok")
    finally:
        cluster_jobs.released.set()
        a.shutdown()
        b.shutdown()
        for store in stores:
            store.close()


def _run_now(spec: StoreSpec, task_id: str) -> None:
    """``run_now(task_id)`` from a scheduler that reads the rows as they are now (one that
    is never started does not follow the others' changes)."""
    store = open_store(spec)
    try:
        assert Scheduler(store=store).run_now(task_id)
    finally:
        store.close()


def test_in_real_processes_each_success_runs_the_dependent_once_across_a_restart(
    store_spec: StoreSpec, cluster: Cluster, tmp_path: Path
) -> None:
    """Three child schedulers; the parent registers extract and load (as each process
    would at its start) and asks for extract's runs. One run of load per success, one
    wait record per run; a child killed while load is BLOCKED and another started in its
    place change nothing."""
    logs = [tmp_path / f"runs-{n}.jsonl" for n in range(4)]
    # LEASE, not a short one: no claim may expire here (a child starved past a 1 s lease
    # had its run of load taken over and run again, a seventh run), and none needs to:
    # the child is killed with nothing claimed (load BLOCKED, extract settled, and its
    # claim of the slot it found blocked dropped with the row's write: _holds).
    children = cluster.start(store_spec, logs[:3], lease=LEASE, poll=0.1)
    store = open_store(store_spec, lease=LEASE, poll=0.1)
    seeder = Scheduler(store=store)  # never started: it registers, the children run
    try:
        seeder.schedule("extract", cluster_jobs.claimed_run, FixedRate(HOUR, start_delay=HOUR),
                        id="extract")  # fmt: skip
        seeder.schedule("load", cluster_jobs.claimed_run, FixedRate(0.1), id="load",
                        depends_on=["extract"])  # fmt: skip
        wait_until(lambda: _row(store, "load") is BLOCKED, timeout=20, what="load blocked")
        for n in range(1, 7):
            if n == 4:
                # Killed holding no claim, as soon as load is BLOCKED: the claim of load's
                # slot found blocked wrote the row and dropped its lease in one transaction.
                # Before, two: the test waited here for the lease to go (a kill between
                # the two left it to expire, LEASE later).
                assert not _holds(store, children[0].node)
                children[0].kill()
                children.append(cluster.start(store_spec, logs[3:], lease=LEASE, poll=0.1)[0])
            _run_now(store_spec, "extract")
            wait_until(_ran(store, "extract", n), timeout=20, what=f"extract ran {n}")
            wait_until(_ran(store, "load", n, then=BLOCKED), timeout=20,
                       what=f"load ran {n} and waits again")  # fmt: skip
        threading.Event().wait(0.5)  # a short bounded wait to prove a negative: no extra run
        assert _ok(store, "load") == 6
        assert len(_records(store, "load", Outcome.BLOCKED)) == 6
    finally:
        store.close()


def test_an_upstream_cannot_be_removed_from_another_process_while_the_dependent_is_blocked(
    pair: Pair,
) -> None:
    """Every process has the dependent (the rows are one registry): a removal of the
    upstream is refused in either, naming the dependent, and nothing is lost."""
    first, second, reader = pair
    _register(first)
    wait_until(lambda: any(t.id == "load" and t.status is BLOCKED for t in second.tasks()),
               timeout=10, what="B has load, BLOCKED")  # fmt: skip
    with pytest.raises(SchedulerStateError, match=r"load"):
        second.remove("extract")
    assert {s.task.id for s in reader.load_all()} == {"extract", "load"}
    first.run_now("extract")
    wait_until(_ran(reader, "load", 1), timeout=10, what="load released and run")


def test_a_blocked_dependent_given_an_upstream_that_succeeded_before_its_start_stays_blocked(
    pair: Pair,
) -> None:
    """As in one process (tests/test_dependencies.py, same name): load ran on extract's
    success and waits BLOCKED for the next; registered again in the second process naming
    other instead, whose one success came before load's start, it stays BLOCKED (no
    release and block again) until other's next success, one wait record for that wait.
    Before, the process that registered it released it as a new task (other had
    succeeded), and the claim blocked it again from the records."""
    first, second, reader = pair
    for scheduler in (first, second):
        scheduler.schedule("other", jobs.noop, FixedRate(HOUR, start_delay=HOUR), id="other",
                           replace_existing=True)  # fmt: skip
        _hourly(scheduler)
    first.run_now("other")
    wait_until(_ran(reader, "other", 1), timeout=10, what="other ran")
    first.run_now("extract")
    wait_until(_ran(reader, "load", 1, then=TaskStatus.SCHEDULED), timeout=10,
               what="load released, ran and scheduled")  # fmt: skip
    _due_now(first, "load")
    wait_until(_both_see(pair, "load", BLOCKED), timeout=10, what="load's next slot blocked")
    load = second.schedule("load", jobs.noop, FixedRate(HOUR), id="load", depends_on=["other"],
                           replace_existing=True)  # fmt: skip
    assert load.status is BLOCKED
    wait_until(lambda: first.task("load").depends_on == ("other",), timeout=10,
               what="the first process follows the new definition")  # fmt: skip
    assert first.task("load").status is BLOCKED
    first.run_now("other")
    wait_until(_ran(reader, "load", 2), timeout=10, what="released by other's success")
    waits = _records(reader, "load", Outcome.BLOCKED)
    assert len(waits) == 2
    (_, latest) = [record for record in reader.records("other") if record.ok]
    assert waits[1].finished >= latest.finished


class _KilledBeforeRelease:
    """What a shared store is asked by a process killed right after its first write of a
    claim it does not run: ``release`` is recorded and does nothing (the kill came first),
    ``misfired`` (the claim's fenced write) is recorded and written."""

    def __init__(self, store: CoordinatedStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str, TaskStatus | None, int, bool]] = []
        written = store.misfired

        def release(*, task_id: str, token: int) -> None:
            self.calls.append(("release", task_id, None, 0, True))

        def misfired(
            snapshot: TaskSnapshot,
            records: Sequence[ExecutionRecord],
            *,
            token: int,
            release: bool,
        ) -> None:
            entry = ("misfired", snapshot.task.id, snapshot.status, len(records), release)
            self.calls.append(entry)
            written(snapshot, records, token=token, release=release)

        monkeypatch.setattr(store, "release", release)
        monkeypatch.setattr(store, "misfired", misfired)


def test_a_claimed_slot_found_blocked_is_written_with_its_leases_drop_in_one_transaction(
    stores: list[CoordinatedStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim of load's slot that finds extract has not succeeded writes the row BLOCKED
    and drops its lease in one fenced transaction (``misfired`` with ``release``): a
    process killed after the row's write (here ``release`` does nothing) leaves no lease
    behind.  Before, a save wrote the row and a release dropped the lease, two
    transactions: the lease stayed, holding load's next release back for up to ``lease``."""
    killed = _KilledBeforeRelease(stores[0], monkeypatch)
    scheduler = Scheduler(workers=1, store=stores[0]).start()
    try:
        _hourly(scheduler)
        wait_until(lambda: _row(stores[2], "load") is BLOCKED, timeout=10, what="load blocked")
        assert stores[2].leases() == []
        assert killed.calls == [("misfired", "load", BLOCKED, 0, True)]
    finally:
        scheduler.shutdown()


def test_a_claimed_slot_whose_upstream_is_dead_is_written_failed_with_its_leases_drop(
    stores: list[CoordinatedStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other held slot: extract was cancelled, so load's claimed slot fails
    (``UpstreamFailed``), its row, its wait's record and the lease's drop in one fenced
    transaction; report, BLOCKED on load before (its own claim's one transaction), fails
    with it, a write of its own that no claim fences (the store is not muted for it).
    The clock is a fake one, so that report's slot is claimed and blocked before load's.
    Each held slot is told to the listeners here as it happens, as on a store of one's
    own: report BLOCKED (no record yet), load FAILED with its wait's record, then report."""
    killed = _KilledBeforeRelease(stores[0], monkeypatch)
    clock = FakeClock(time.time())
    log = EventLog()
    scheduler = Scheduler(workers=1, store=stores[0], clock=clock, listeners=[log]).start()
    try:
        scheduler.schedule("extract", jobs.noop, FixedRate(HOUR, start_delay=HOUR), id="extract")
        scheduler.cancel("extract")
        scheduler.schedule("load", jobs.noop, FixedRate(HOUR, start_delay=60), id="load",
                           depends_on=["extract"])  # fmt: skip
        scheduler.schedule("report", jobs.noop, FixedRate(HOUR), id="report",
                           depends_on=["load"])  # fmt: skip
        wait_until(lambda: _row(stores[2], "report") is BLOCKED, timeout=10,
                   what="report blocked")  # fmt: skip
        clock.advance(60)
        # report's row (a plain save) is written before load's (the claim's fenced write,
        # which drops the lease): wait for both.
        wait_until(lambda: [_row(stores[2], task_id) for task_id in ("load", "report")]
                   == [TaskStatus.FAILED, TaskStatus.FAILED], timeout=10,
                   what="load failed, and report with it")  # fmt: skip
        assert stores[2].leases() == []  # dropped in load's write
        assert killed.calls == [
            ("misfired", "report", BLOCKED, 0, True),
            ("misfired", "load", TaskStatus.FAILED, 1, True),
        ]
        for task_id, upstream in (("load", "extract"), ("report", "load")):
            (waited,) = _records(stores[2], task_id, Outcome.BLOCKED)
            assert waited.error is not None and f"upstream {upstream}" in waited.error
        failed = log.wait_for(
            lambda event: event.task_id == "report" and event.status is TaskStatus.FAILED, 10
        )
        assert failed is not None
        changes = [
            (event.task_id, event.previous, event.status, event.record and event.record.outcome)
            for event in log.events
            if event.task_id != "extract" and event.previous not in (None, event.status)
        ]
        assert changes == [
            ("report", TaskStatus.SCHEDULED, BLOCKED, None),
            ("load", TaskStatus.SCHEDULED, TaskStatus.FAILED, Outcome.BLOCKED),
            ("report", BLOCKED, TaskStatus.FAILED, Outcome.BLOCKED),
        ]
    finally:
        scheduler.shutdown()


def _misfired_fails_once(
    store: CoordinatedStore, monkeypatch: pytest.MonkeyPatch, *, with_records: bool = False
) -> list[tuple[int, list[ExecutionRecord]]]:
    """Make ``store``'s ``misfired`` (a claim's fenced write of a slot it does not run)
    raise once (a store that flaps), at its first call (``with_records``: its first
    that carries records); the (token, records) refused."""
    written = store.misfired
    refused: list[tuple[int, list[ExecutionRecord]]] = []

    def fails_once(
        snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int, release: bool
    ) -> None:
        if not refused and (records or not with_records):
            refused.append((token, list(records)))
            raise StoreError("the store failed (injected)")
        written(snapshot, records, token=token, release=release)

    monkeypatch.setattr(store, "misfired", fails_once)
    return refused


def test_a_claimed_slot_found_blocked_whose_write_the_store_fails_is_written_again(
    stores: list[CoordinatedStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one transaction fails once (a store that flaps): neither the row nor the
    lease's drop was written.  The lease is released on its own and the row written
    again once the store takes calls, as a failed save's is, so the row says BLOCKED
    and no lease is left.  Left to expire instead, the lease came back to the process
    whose registry has load BLOCKED, which gave back every claim of its SCHEDULED row
    (a claim and a release a wake) and never wrote it BLOCKED."""
    failures = _misfired_fails_once(stores[0], monkeypatch)
    scheduler = Scheduler(workers=1, store=stores[0]).start()
    try:
        _hourly(scheduler)
        wait_until(lambda: _row(stores[2], "load") is BLOCKED, timeout=10, what="load blocked")
        assert failures and stores[2].leases() == []
    finally:
        scheduler.shutdown()


def test_a_claimed_slot_failed_by_a_dead_upstream_whose_write_fails_keeps_its_waits_record(
    stores: list[CoordinatedStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above with a dead upstream: load's claimed slot fails, its row, its wait's
    ``blocked`` record and the lease's drop in one transaction, which the store fails
    once.  The row is written again FAILED once the store takes calls, and now the
    wait's record with it: before, it went with the write that failed."""
    refused = _misfired_fails_once(stores[0], monkeypatch, with_records=True)
    scheduler = Scheduler(workers=1, store=stores[0]).start()
    try:
        scheduler.schedule("extract", jobs.noop, FixedRate(HOUR, start_delay=HOUR), id="extract")
        scheduler.cancel("extract")
        scheduler.schedule("load", jobs.noop, FixedRate(HOUR), id="load",
                           depends_on=["extract"])  # fmt: skip
        wait_until(lambda: _row(stores[2], "load") is TaskStatus.FAILED, timeout=10,
                   what="load failed in the store")  # fmt: skip
        wait_until(lambda: bool(_records(stores[2], "load", Outcome.BLOCKED)), timeout=10,
                   what="the wait's record written")  # fmt: skip
        assert _records(stores[2], "load", Outcome.BLOCKED) == refused[0][1]
        assert stores[2].leases() == []
    finally:
        scheduler.shutdown()
