"""Misfires in shared mode: slots that passed while no process ran meet their task's
misfire policy once, in the process that claims the first of them, not once per process.

Three real child schedulers on one shared store (per engine in ``tests.cluster.FACTORIES``)
race for a recurring task registered with due instants in the past (a parent scheduler on
a fake clock set an hour back registers it: its slots passed while nothing ran, as over a
deploy that stopped every process).  Checked per policy: SKIP writes one set of ``missed``
records and runs nothing; RUN_ONCE writes one set of ``coalesced`` records and runs the
latest slot once; RUN_ALL runs each passed slot once.  Every decision record carries the
fencing token of the one claim that decided it, and the row waits for the first slot after
now.

The children hold their claims for ``CHILD_LEASE``, long enough that none can expire
within a test: a child descheduled for longer than its lease (a loaded machine) has
its run taken over and run again, as the shared mode promises (at-least-once,
docs/CLUSTER.md), and these tests count each slot's runs and the settles refused.
``LEASE`` is the short one of the claims a test lets expire.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from lldsched import FakeClock, FixedRate, Scheduler
from lldsched.coordination import CoordinatedStore
from lldsched.errors import LeaseLost
from lldsched.model import ExecutionRecord, Outcome
from lldsched.persistence import TaskSnapshot
from lldsched.policies import Misfire, MisfirePolicy
from lldsched.threaded.shared import coordinator
from tests import cluster_jobs, jobs
from tests.cluster import Cluster, StoreSpec, open_store, stop_all
from tests.conftest import T0
from tests.test_recovery import HOUR, JumpingClock
from tests.waits import wait_until

PERIOD = 600.0
LEASE = 1.0
CHILD_LEASE = 30.0  # as long as the tests' waits: no child's claim expires in a test
POLL = 0.1
CHILDREN = 3


def _register(store: CoordinatedStore, policy: Misfire) -> list[float]:
    """Register the task with its slots an hour back; the slots passed by now (oldest
    first), the next one being ``PERIOD / 2`` from now (no run of its own in the test)."""
    back = 5 * PERIOD + PERIOD / 2
    seeder = Scheduler(store=store, clock=FakeClock(time.time() - back))  # never started
    task = seeder.schedule(
        "nightly",
        cluster_jobs.claimed_run,
        FixedRate(PERIOD),
        id="nightly",
        misfire=MisfirePolicy(policy),
    )
    first = task.next_run_at  # as registered (a child may decide on the row at once)
    assert first is not None
    now = time.time()
    passed = [first + k * PERIOD for k in range(10)]
    return [slot for slot in passed if slot <= now]


def _decisions(store: CoordinatedStore) -> list[ExecutionRecord]:
    return [record for record in store.records("nightly") if record.misfire is not None]


@pytest.mark.parametrize("policy", list(Misfire), ids=lambda policy: policy.value)
def test_slots_missed_while_every_process_was_down_are_decided_once_across_processes(
    store_spec: StoreSpec, cluster: Cluster, tmp_path: Path, policy: Misfire
) -> None:
    logs = [tmp_path / f"runs-{n}.jsonl" for n in range(CHILDREN)]
    children = cluster.start(store_spec, logs, lease=CHILD_LEASE, poll=POLL)
    store = open_store(store_spec, lease=LEASE, poll=POLL)
    try:
        passed = _register(store, policy)  # every child is polling: they race for it
        assert len(passed) >= 5
        runs_expected = {Misfire.SKIP: [], Misfire.RUN_ONCE: passed[-1:], Misfire.RUN_ALL: passed}
        expected_runs = runs_expected[policy]
        following = passed[-1] + PERIOD

        def settled() -> bool:
            rows = store.load_all()
            return (
                len(cluster.all_runs()) >= len(expected_runs)
                and rows[0].next_run_at == following
                and not store.leases()
            )

        wait_until(settled, timeout=30, what=f"the {policy.value} decision and its runs")
        assert [summary["rejected"] for summary in stop_all(children)] == [0] * CHILDREN

        runs = cluster.all_runs()
        assert sorted(run["slot"] for run in runs) == expected_runs, runs
        assert len({run["token"] for run in runs}) == len(runs)  # one claim each
        decided = _decisions(store)
        if policy is Misfire.SKIP:
            assert [(r.slot, r.misfire) for r in decided] == [(s, Outcome.MISSED) for s in passed]
        elif policy is Misfire.RUN_ONCE:
            assert [(r.slot, r.misfire) for r in decided] == [
                (s, Outcome.COALESCED) for s in passed[:-1]
            ]
            assert runs[0]["token"] == decided[0].token  # the catch-up ran under that claim
        else:
            assert decided == []
        assert len({record.token for record in decided}) <= 1, decided  # one claim decided
        assert all(record.token is not None for record in decided)
        ran = [record for record in store.records("nightly") if record.misfire is None]
        assert Counter(record.slot for record in ran) == Counter(expected_runs)
        assert store.load_all()[0].next_run_at == following
    finally:
        store.close()


def test_a_misfire_decision_under_a_lost_lease_is_refused_and_writes_nothing(
    store_spec: StoreSpec,
) -> None:
    """The decision's write is fenced: once the claim's lease was taken over, neither
    the records nor the due instant it chose are written."""
    store = open_store(store_spec, lease=LEASE, poll=POLL)
    other = open_store(store_spec, lease=LEASE, poll=POLL)
    try:
        passed = _register(store, Misfire.SKIP)
        now = time.time()
        (claim,) = store.claim(now=now, limit=1)
        wait_until(
            lambda: bool(other.claim(now=time.time(), limit=1)),
            timeout=10,
            what="the lease to expire and be taken over",
        )  # PostgreSQL's expiry is the server's clock: a real wait, bounded
        (row,) = store.load_all()
        record = ExecutionRecord.of(
            task_id="nightly", name="nightly", attempt=0, due=passed[0], slot=passed[0],
            worker=-1, started=now, finished=now, ok=False, error=None,
            misfire=Outcome.MISSED, token=claim.token,
        )  # fmt: skip
        moved = row._replace(next_run_at=passed[-1] + PERIOD)
        rejected = store.rejected
        with pytest.raises(LeaseLost, match=str(claim.token)):
            store.misfired(moved, [record], token=claim.token, release=True)
        assert store.rejected == rejected + 1
        assert _decisions(store) == []
        assert store.load_all()[0].next_run_at == passed[0]
    finally:
        other.close()
        store.close()


def test_a_slot_claimed_a_little_late_while_the_process_was_there_is_no_misfire(
    store_spec: StoreSpec,
) -> None:
    """Only slots due before the process was there meet the policy: a slot claimed a few
    milliseconds after it fell due (the timer's wake, a busy moment) runs, even with
    ``grace=0`` and SKIP, as in one process."""
    store = open_store(store_spec, lease=LEASE, poll=POLL)
    scheduler = Scheduler(workers=2, store=store).start()
    try:
        scheduler.schedule(
            "often", jobs.noop, FixedRate(0.05), id="often",
            misfire=MisfirePolicy(Misfire.SKIP, grace=0),
        )  # fmt: skip

        def ran() -> int:
            return sum(1 for record in store.records("often") if record.ok)

        wait_until(lambda: ran() >= 3, timeout=20, what="three runs")
        scheduler.shutdown(timeout=10)
        assert [r for r in store.records("often") if r.misfire is Outcome.MISSED] == []
    finally:
        scheduler.shutdown(timeout=10)
        store.close()


@pytest.mark.parametrize("suspend", [False, True], ids=["step", "suspend"])
def test_a_forward_wall_clock_jump_in_shared_mode_is_decided_by_the_claiming_process(
    store_spec: StoreSpec, suspend: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slots a forward jump passed over meet the policy when claimed, as downtime
    does (the unshared runtime re-evaluates its heap at once; here the claim decides).
    A suspend is such a jump to the timer (the wall clock moved, ``time.monotonic`` did
    not), and downtime too, though the lease clock counted it (Linux's CLOCK_BOOTTIME,
    a fake here): it cuts no trust, and still decides the slots it passed."""
    lease_clock = FakeClock(T0)
    monkeypatch.setattr(coordinator, "LEASE_CLOCK", lease_clock)
    clock = JumpingClock(T0)
    store = open_store(store_spec, lease=LEASE, poll=POLL)
    scheduler = Scheduler(workers=2, store=store, clock=clock).start()
    try:
        scheduler.schedule(
            "hourly", jobs.noop, FixedRate(HOUR, start_delay=HOUR), id="hourly",
            misfire=MisfirePolicy(Misfire.SKIP),
        )  # fmt: skip
        assert clock.parked.wait(5)
        if suspend:
            lease_clock.advance(3.5 * HOUR)
        clock.jump(3.5 * HOUR)

        def missed() -> list[float]:
            records = store.records("hourly")
            return [(r.slot - T0) / HOUR for r in records if r.misfire is Outcome.MISSED]

        wait_until(lambda: missed() == [1.0, 2.0, 3.0], timeout=20, what="three missed slots")
        wait_until(
            lambda: store.load_all()[0].next_run_at == T0 + 4 * HOUR,
            timeout=20,
            what="the row at its first slot after the jump",
        )
        assert [r for r in store.records("hourly") if r.ok] == []
    finally:
        scheduler.shutdown(timeout=10)
        store.close()


def test_a_backward_wall_clock_jump_in_shared_mode_leaves_the_rows_and_says_so(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """The shared rows keep their due times when this process's clock goes back (every
    process would disagree on them otherwise), and the log says that, not "re-evaluated"."""
    clock = JumpingClock(T0)
    store = open_store(store_spec, lease=LEASE, poll=POLL)
    scheduler = Scheduler(workers=2, store=store, clock=clock).start()
    said = "the wall clock jumped by -3600.000 s: the shared rows keep their due times"
    try:
        scheduler.schedule("hourly", jobs.noop, FixedRate(HOUR, start_delay=HOUR), id="hourly")
        assert clock.parked.wait(5)
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            clock.jump(-HOUR)
            wait_until(lambda: said in caplog.messages, timeout=20, what="the jump logged")
        assert store.load_all()[0].next_run_at == T0 + HOUR
    finally:
        scheduler.shutdown(timeout=10)
        store.close()


@pytest.mark.parametrize("policy", [Misfire.SKIP, Misfire.RUN_ONCE], ids=lambda p: p.value)
def test_a_run_in_flight_when_every_process_stopped_runs_again_before_the_policy_decides(
    store_spec: StoreSpec, cluster: Cluster, tmp_path: Path, policy: Misfire
) -> None:
    """At-least-once holds over downtime as in one process: the slot whose run was in
    flight (its lease never settled) runs again, and the policy decides the slots after
    it, once."""
    store = open_store(store_spec, lease=LEASE, poll=POLL)
    try:
        passed = _register(store, policy)
        (crashed,) = store.claim(now=time.time(), limit=1)  # a run that never settles
        assert crashed.slot == passed[0]
        logs = [tmp_path / f"runs-{n}.jsonl" for n in range(2)]
        children = cluster.start(store_spec, logs, lease=CHILD_LEASE, poll=POLL)
        expected_runs = [passed[0]] + ([passed[-1]] if policy is Misfire.RUN_ONCE else [])
        following = passed[-1] + PERIOD

        def settled() -> bool:
            return (
                len(cluster.all_runs()) >= len(expected_runs)
                and store.load_all()[0].next_run_at == following
                and not store.leases()
            )

        wait_until(settled, timeout=30, what=f"the owed run and the {policy.value} decision")
        stop_all(children)
        runs = cluster.all_runs()
        assert sorted(run["slot"] for run in runs) == expected_runs, runs
        assert all(run["token"] > crashed.token for run in runs)
        outcome = Outcome.MISSED if policy is Misfire.SKIP else Outcome.COALESCED
        later = passed[1:] if policy is Misfire.SKIP else passed[1:-1]
        decided = _decisions(store)
        assert [(r.slot, r.misfire) for r in decided] == [(s, outcome) for s in later]
        assert len({record.token for record in decided}) == 1
    finally:
        store.close()


def test_a_misfire_whose_task_another_process_removed_says_so_not_a_lost_lease(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """The removal deleted the lease with the row between the claim of a passed slot and
    the write of its misfire decision: the claiming process says why, at INFO, as for a
    run whose task was removed, not the WARNING of a lease lost to a stall or a takeover
    (docs/OPERATIONS.md, the log table)."""
    store = open_store(store_spec, lease=CHILD_LEASE, poll=POLL)
    other = open_store(store_spec, lease=CHILD_LEASE, poll=POLL)
    decided = store.misfired
    tokens: list[int] = []

    def removed_first(
        snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int, release: bool
    ) -> None:
        tokens.append(token)
        other.delete(snapshot.task.id)  # committed before the decision's fenced write
        decided(snapshot, records, token=token, release=release)

    store.misfired = removed_first  # type: ignore[method-assign]
    _register(other, Misfire.SKIP)
    scheduler = Scheduler(workers=2, store=store)
    said = "task nightly was removed in another process while this one was deciding its misfire"
    try:
        with caplog.at_level(logging.INFO, logger="lldsched"):
            scheduler.start()
            wait_until(lambda: any(said in m for m in caplog.messages), timeout=10,
                       what="the claimer to say why its lease went")  # fmt: skip
            wait_until(lambda: "nightly" not in {t.id for t in scheduler.tasks()}, timeout=10,
                       what="the removal followed")  # fmt: skip
        (record,) = [r for r in caplog.records if said in r.getMessage()]
        assert record.levelno == logging.INFO and record.name == "lldsched.cluster"
        assert f"(token {tokens[0]})" in record.getMessage()
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        assert _decisions(other) == [] and other.load_all() == []
    finally:
        scheduler.shutdown(timeout=10)
        other.close()
        store.close()


def test_a_misfire_decided_after_its_lease_was_taken_over_warns_of_the_lost_lease(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """The other side of the rule above: the task is still there, its lease taken over
    by another process while the claimer decided (a stall longer than the lease): the
    WARNING of a lost lease, naming the decision."""
    store = open_store(store_spec, lease=LEASE, poll=POLL)
    other = open_store(store_spec, lease=CHILD_LEASE, poll=POLL)
    decided = store.misfired
    tokens: list[int] = []

    def stalled_first(
        snapshot: TaskSnapshot, records: Sequence[ExecutionRecord], *, token: int, release: bool
    ) -> None:
        tokens.append(token)
        wait_until(lambda: bool(other.claim(now=time.time(), limit=1)), timeout=10,
                   what="the lease to expire and be taken over")  # fmt: skip
        decided(snapshot, records, token=token, release=release)

    store.misfired = stalled_first  # type: ignore[method-assign]
    _register(other, Misfire.SKIP)
    scheduler = Scheduler(workers=2, store=store)
    try:
        with caplog.at_level(logging.INFO, logger="lldsched"):
            scheduler.start()
            wait_until(lambda: any("while deciding its misfire" in m for m in caplog.messages),
                       timeout=20, what="the claimer to say its lease was lost")  # fmt: skip
        (record,) = [r for r in caplog.records if "while deciding its misfire" in r.getMessage()]
        assert record.levelno == logging.WARNING and record.name == "lldsched.cluster"
        assert record.getMessage() == (
            f"lost the lease of task nightly (token {tokens[0]}) while deciding its misfire"
        )
        assert not any("was removed" in m for m in caplog.messages)
    finally:
        scheduler.shutdown(timeout=10)
        other.close()
        store.close()
