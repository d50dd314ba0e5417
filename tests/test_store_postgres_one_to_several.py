"""A PostgreSQL database used by one process, then by several, then one again and
several again (docs/CLUSTER.md, "From one process to several"), with real started
schedulers: every record kept, numbered in the order it was written, each run's
fencing token above the ones before, the dead letter in the order of the failures,
and the change feed delivering each process's runs, registrations and removals to the
other.  A PostgreSQL store has one mode (``shared`` is always True) and
takes every number from the server (the ``records.seq`` and ``tasks.position``
identities, the ``fencing_token`` and ``dead_letter_seq`` sequences, the row's
``version``), so nothing is to be caught up on a move, unlike a SQLite file used
unshared first (``count_records`` in ``lldsched/stores/sqlite/shared.py``)."""

from __future__ import annotations

import itertools

from lldsched import FakeClock, FixedRate, OneTime, RetryPolicy, Scheduler
from lldsched.model import ExecutionRecord
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.testing import Stepper
from tests import jobs
from tests.cluster import follows
from tests.conftest import T0
from tests.waits import wait_until

PERIOD = 60.0
TASKS = ("a", "b")
FAR = T0 + 10**6  # c's one run: never reached here
# A one-off that fails in each phase, at its first slot (phase, slot number): the dead
# letter is in the order of the failures, not of the registrations.
FAILS = ((1, 1), (2, 2), (3, 4), (4, 5))


def _writes(scheduler: Scheduler, phase: int) -> None:
    """What a phase's (first) scheduler writes besides its runs: ``c`` removed and
    registered again (its row's version continues from the removal)."""
    scheduler.remove("c")
    scheduler.schedule(f"c-{phase}", jobs.noop, OneTime(FAR), id="c")


def _one_process(dsn: str, clock: FakeClock, phase: int) -> str:
    """One scheduler alone on the database runs the next slot of each task; its node."""
    with PostgresTaskStore(dsn, poll=0.05) as store:
        with Stepper(Scheduler(clock=clock, store=store)) as steps:
            _writes(steps.scheduler, phase)
            steps.advance(PERIOD)
        return store.node


def _several_processes(dsn: str, clock: FakeClock, phase: int, runs: int) -> tuple[str, str]:
    """Two schedulers (two stores, as two processes hold) on their own clocks: the
    first runs the next slot while the second, behind, follows it through the feed,
    then the second runs the slot after while the first follows; their nodes."""
    with (
        PostgresTaskStore(dsn, poll=0.05) as first_store,
        PostgresTaskStore(dsn, poll=0.05) as second_store,
    ):
        second = Scheduler(store=second_store, clock=FakeClock(clock.now())).start()
        try:
            with Stepper(Scheduler(clock=clock, store=first_store)) as steps:
                _writes(steps.scheduler, phase)
                steps.advance(PERIOD)
                wait_until(
                    lambda: follows(second, "c", lambda t: t.name == f"c-{phase}"),
                    timeout=10,
                    what="the second scheduler to follow c's removal and new row",
                )
                failed = [f"broken-{k}" for k in range(1, phase + 1)]
                wait_until(
                    lambda: (
                        follows(second, f"broken-{phase}", lambda t: True)
                        and second.dead_letter() == failed
                    ),
                    timeout=10,
                    what=f"the second scheduler's dead letter to be {failed}",
                )
                _follow_runs(second, runs + 1)  # the first one's runs, read from the feed
                with Stepper(second) as other:
                    other.advance(2 * PERIOD)  # its clock: the slot after the first's
                    _follow_runs(steps.scheduler, runs + 2)  # the second one's runs
        finally:
            second.shutdown()
        clock.set(second.clock.now())
        return first_store.node, second_store.node


def _follow_runs(scheduler: Scheduler, count: int) -> None:
    """Wait until ``scheduler`` has read from the feed that each task ran ``count`` times."""
    wait_until(
        lambda: all(
            follows(scheduler, task_id, lambda t: t.run_count == count) for task_id in TASKS
        ),
        timeout=10,
        what=f"{scheduler!r} to follow run {count} of {TASKS}",
    )


def _tokens_rise(records: list[ExecutionRecord]) -> bool:
    """Every slot's runs hold tokens above every earlier slot's (the runs of one slot
    are claimed together, in either order)."""
    by_slot: dict[float, list[int]] = {}
    for record in records:
        assert record.token is not None, record
        by_slot.setdefault(record.slot, []).append(record.token)
    slots = sorted(by_slot)
    return all(max(by_slot[s]) < min(by_slot[t]) for s, t in itertools.pairwise(slots))


def test_a_database_used_by_one_process_then_several_and_back_keeps_every_record_in_order(
    postgres_dsn: str,
) -> None:
    clock = FakeClock(T0)
    with PostgresTaskStore(postgres_dsn) as store:
        registrar = Scheduler(clock=clock, store=store)
        for task_id in TASKS:
            every = FixedRate(PERIOD, start_delay=PERIOD)
            registrar.schedule(task_id, jobs.noop, every, id=task_id)
        registrar.schedule("c-0", jobs.noop, OneTime(FAR), id="c")
        for phase, slot in reversed(FAILS):  # registered in the reverse of their failures
            registrar.schedule(
                f"broken-{phase}",
                jobs.broken,
                OneTime(T0 + PERIOD * slot),
                id=f"broken-{phase}",
                retry=RetryPolicy(max_attempts=1),
            )
        registrar.shutdown()
    nodes: list[str] = []  # the node that ran each slot, in slot order
    for phase, several in enumerate((False, True, False, True), start=1):
        if several:
            nodes.extend(_several_processes(postgres_dsn, clock, phase, len(nodes)))
        else:
            nodes.append(_one_process(postgres_dsn, clock, phase))
        with PostgresTaskStore(postgres_dsn) as store:
            records = store.records()  # every task's, in the order they were written
            slots = [T0 + PERIOD * k for k in range(1, len(nodes) + 1)]
            for task_id in TASKS:
                mine = [r for r in records if r.task_id == task_id]
                assert [(r.slot, r.ok, r.node) for r in mine] == [
                    (slot, True, node) for slot, node in zip(slots, nodes, strict=True)
                ]  # every run kept, by the node that ran it, in order
                assert [r.slot for r in store.records(task_id)] == slots
                stored = store.get(task_id)
                assert stored is not None and stored.run_count == len(nodes)
            assert [r.slot for r in records] == sorted(r.slot for r in records)
            failed = [f"broken-{k}" for k in range(1, phase + 1)]
            assert store.dead_letter() == failed  # oldest failure first
            assert [(r.task_id, r.ok) for r in records if not r.ok] == [
                (task_id, False) for task_id in failed
            ]
            c = store.get("c")
            assert c is not None and c.task.name == f"c-{phase}"
            assert _tokens_rise(records), [(r.task_id, r.slot, r.token) for r in records]
    assert len(set(nodes)) == len(nodes) == 6  # each process its own node
