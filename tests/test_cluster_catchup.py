"""A catch-up plan in shared mode: a process that follows a task during its ``RUN_ALL``
catch-up (paused there, and resumed, or left by the process that decided it) runs every
slot of the plan, as the process that decided it would (and as a restart in one process
does: ``tests/test_recovery.py``).

Two schedulers on one shared SQLite file and one fake clock with a wall side
(:class:`~tests.test_recovery.JumpingClock`): the first decides the catch-up after a
forward jump and is paused during its first run (or stops once it ran); the second,
built before the jump (it was there: the slots are not misfires to it), follows the row
and resumes (or claims) the task.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched import FixedRate, Scheduler, SqliteTaskStore, TaskStatus
from lldsched.model import Outcome
from lldsched.policies import Misfire, MisfirePolicy
from tests import cluster_jobs
from tests.conftest import T0
from tests.test_recovery import HOUR, JumpingClock
from tests.waits import wait_until

LEASE = 30.0  # as long as the waits: no claim expires in a test
POLL = 0.05
PAUSED = TaskStatus.PAUSED


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[list[SqliteTaskStore]]:
    """Three connections to one shared file: the deciding process's, the follower's,
    and one to read it with."""
    opened = [
        SqliteTaskStore(tmp_path / "tasks.db", shared=True, lease=LEASE, poll=POLL)
        for _ in range(3)
    ]
    yield opened
    for store in opened:
        store.close()


@pytest.mark.parametrize("left", ["paused", "stopped"])
@pytest.mark.parametrize("registered", [False, True], ids=["learns-it", "follows-it"])
def test_a_process_following_a_task_mid_catch_up_runs_every_slot_of_its_plan(
    stores: list[SqliteTaskStore], registered: bool, left: str
) -> None:
    # Hourly from 10:00; the wall clock jumps from 09:00 to 13:30: RUN_ALL catches up
    # 10:00 to 13:00.  Paused while 10:00 runs (or stopped once 10:00 ran: ``stopped``,
    # its run held until the shutdown began), the row keeps 11:00 (due) and 12:00 (the
    # slot behind it).  The follower, resuming (or claiming 11:00, which decides no
    # misfire: it was there for the slot), runs 11:00, 12:00 and 13:00, and waits for
    # 14:00 (``registered``: it had the task before, and adopts the row; else it learns
    # the task from the row).  Stopped, it put back only 11:00 and 12:00, and its fixed
    # rate went on from 12:00's run: 13:00 was recorded skipped.
    clock = JumpingClock(T0)
    decider_store, follower_store, reader = stores
    name = "hourly"
    paused = left == "paused"
    follower = None if registered else Scheduler(workers=2, store=follower_store, clock=clock)
    decider = Scheduler(workers=2, store=decider_store, clock=clock).start()
    stopping = threading.Thread(target=decider.shutdown, kwargs={"drain": False})
    cluster_jobs.released.clear()
    _forget_what_runs_told()
    try:
        decider.schedule(
            name, cluster_jobs.held_until_released, FixedRate(HOUR, start_delay=HOUR),
            id=name, misfire=MisfirePolicy(Misfire.RUN_ALL),
        )  # fmt: skip
        if follower is None:  # not started: it claims nothing, and follows on start()
            follower = Scheduler(workers=2, store=follower_store, clock=clock)
        assert clock.parked.wait(5)
        clock.jump(4.5 * HOUR)
        try:
            cluster_jobs.seen.get(timeout=10)  # 10:00 runs, the catch-up decided
            if paused:
                assert decider.pause(name)
            else:
                stopping.start()
                assert decider._timer is not None
                decider._timer.join(5)  # nothing more is claimed
        finally:
            cluster_jobs.released.set()
        wait_until(lambda: bool(reader.records(name)) and not reader.leases(), timeout=10,
                   what="10:00's run to settle")  # fmt: skip
        (row,) = reader.load_all()
        assert row.status is (PAUSED if paused else TaskStatus.SCHEDULED)
        assert (row.next_run_at, row.waited) == (T0 + 2 * HOUR, T0 + 3 * HOUR)
        decider.shutdown()
        follower.start()  # a process built before the jump: it was there for the slots
        if paused:
            wait_until(lambda: [(t.id, t.status) for t in follower.tasks()] == [(name, PAUSED)],
                       timeout=5,
                       what="the follower to follow the pause")  # fmt: skip
            assert follower.resume(name)
        wait_until(lambda: reader.load_all()[0].next_run_at == T0 + 5 * HOUR
                   and not reader.leases(), timeout=10,
                   what="the plan to be run and the task to wait for 14:00")  # fmt: skip
        records = reader.records(name)
        ran = [(record.slot - T0) / HOUR for record in records if record.ok]
        assert ran == [1.0, 2.0, 3.0, 4.0], records  # the paused slot keeps its slot
        assert [record for record in records if not record.outcome.ran] == []
    finally:
        cluster_jobs.released.set()
        decider.shutdown()
        if stopping.is_alive():
            stopping.join(10)
        if follower is not None:
            follower.shutdown()
        _forget_what_runs_told()  # the next test reads its own runs' first


def _forget_what_runs_told() -> None:
    """Empty :data:`cluster_jobs.seen` (every run of ``held_until_released`` adds two)."""
    while not cluster_jobs.seen.empty():
        cluster_jobs.seen.get_nowait()


@pytest.mark.parametrize("built", ["learns-it", "follows-it", "after-the-jump"])
def test_a_process_following_a_task_paused_mid_capped_catch_up_runs_the_plan_as_cut(
    stores: list[SqliteTaskStore], built: str
) -> None:
    # Minutely from 09:01; the wall clock jumps a day: more than 1,000 slots passed.
    # RUN_ALL (max_catch_up=3) lists 1,000 of them and runs the last three it listed (the
    # 998th to the 1,000th); one record stands for the slots beyond, and the task resumes
    # at 09:01 (the 1,441st).  Paused while the 998th runs, the row keeps the 999th (due)
    # and the 1,000th.  The follower, resuming, runs the 999th and the 1,000th and waits
    # for the 1,441st, as the deciding process and a restart do.  It decided the plan
    # again from the row's 1,000th up to now: the 1,438th to the 1,440th ran (the cap's
    # record stood for them) and the 1,000th never did.  A follower built after the jump
    # (``after-the-jump``) was not there for the 999th: its claim decides that slot's
    # misfire, and found it a slot of the plan cut at the cap only in the store's records.
    clock = JumpingClock(T0)
    decider_store, follower_store, reader = stores
    name = "minutely"
    follower = None
    if built == "learns-it":  # the task is registered later: it learns it from the feed
        follower = Scheduler(workers=2, store=follower_store, clock=clock)
    decider = Scheduler(workers=2, store=decider_store, clock=clock).start()
    cluster_jobs.released.clear()
    _forget_what_runs_told()
    try:
        decider.schedule(
            name, cluster_jobs.held_until_released, FixedRate(60, start_delay=60),
            id=name, misfire=MisfirePolicy(Misfire.RUN_ALL, max_catch_up=3),
        )  # fmt: skip
        if built == "follows-it":  # not started: it claims nothing, and follows on start()
            follower = Scheduler(workers=2, store=follower_store, clock=clock)
        assert clock.parked.wait(5)
        clock.jump(86400 + 30)
        try:
            cluster_jobs.seen.get(timeout=10)  # the 998th runs, the catch-up decided
            assert decider.pause(name)
        finally:
            cluster_jobs.released.set()
        wait_until(lambda: any(r.outcome.ran for r in reader.records(name))
                   and not reader.leases(), timeout=10,
                   what="the paused run to settle")  # fmt: skip
        (row,) = reader.load_all()
        assert row.status is TaskStatus.PAUSED
        assert (row.next_run_at, row.waited) == (T0 + 999 * 60, T0 + 1000 * 60)
        decider.shutdown()
        if follower is None:
            follower = Scheduler(workers=2, store=follower_store, clock=clock)
        follower.start()
        wait_until(lambda: [(t.id, t.status) for t in follower.tasks()] == [(name, PAUSED)],
                   timeout=5,
                   what="the follower to follow the pause")  # fmt: skip
        assert follower.resume(name)
        wait_until(lambda: reader.load_all()[0].next_run_at == T0 + 1441 * 60
                   and not reader.leases(), timeout=10,
                   what="the plan to be run and the task to wait for the 1,441st")  # fmt: skip
        records = reader.records(name)
        ran = [(record.slot - T0) / 60 for record in records if record.outcome.ran]
        assert ran == [998, 999, 1000], records
        decided = [record for record in records if not record.outcome.ran]
        *missed, capped = decided  # the store keeps 1,000 records: the oldest went
        assert {r.outcome for r in missed} == {Outcome.MISSED}
        assert max(r.slot for r in missed) == T0 + 997 * 60
        assert capped.slot == T0 + 1001 * 60  # it stands for the slots beyond the cap
        assert capped.error is not None and "more than 1000 slots" in capped.error
    finally:
        cluster_jobs.released.set()
        decider.shutdown()
        if follower is not None:
            follower.shutdown()
        _forget_what_runs_told()


def test_a_capped_catch_up_in_one_shared_process_runs_its_plan_as_cut(
    stores: list[SqliteTaskStore],
) -> None:
    # Minutely from 09:01; the wall clock jumps a day.  RUN_ALL (max_catch_up=3) runs the
    # 998th to the 1,000th slot, then the 1,441st.  Each catch-up slot is due before the
    # jump, so each claim of one decides its misfire again (a slot this process was not
    # there for): it decided the plan again from the 999th, and ran the 1,438th to the
    # 1,440th (which the cap's record stood for) instead of the 999th and the 1,000th.
    clock = JumpingClock(T0)
    store, _, reader = stores
    name = "minutely"
    cluster_jobs.released.set()  # every run ends at once
    scheduler = Scheduler(workers=2, store=store, clock=clock).start()
    _forget_what_runs_told()
    try:
        scheduler.schedule(
            name, cluster_jobs.held_until_released, FixedRate(60, start_delay=60),
            id=name, misfire=MisfirePolicy(Misfire.RUN_ALL, max_catch_up=3),
        )  # fmt: skip
        assert clock.parked.wait(5)
        clock.jump(86400 + 30)
        wait_until(lambda: reader.load_all()[0].next_run_at == T0 + 1441 * 60
                   and not reader.leases(), timeout=10,
                   what="the plan to be run and the task to wait for the 1,441st")  # fmt: skip
        ran = [(record.slot - T0) / 60 for record in reader.records(name) if record.outcome.ran]
        assert ran == [998, 999, 1000]
    finally:
        scheduler.shutdown()
        _forget_what_runs_told()
