"""Every per-task container empties when its task leaves (docs/decisions/lifecycle.md,
"Every per-task container empties when its task leaves"; the soak is
tools/soak_churn.py).  Each test makes a task leave by one path and asserts the size of
the container that outlived it, not a timing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lldsched import FakeClock, FixedRate, OneTime, Scheduler, Simulation, SqliteTaskStore
from lldsched.testing import Stepper
from tests.waits import wait_until

if TYPE_CHECKING:
    from lldsched.stores.postgres import PostgresTaskStore


def _noop() -> None:
    pass


def _followed(scheduler: Scheduler) -> bool:
    """Wake ``scheduler``'s timer (it reads the change feed) and say whether it holds no
    task (tests/cluster.py's ``follows``)."""
    clock = scheduler.clock
    assert isinstance(clock, FakeClock)
    clock.advance(0)
    return scheduler.tasks() == []


def _stored(path: Path) -> None:
    """A store holding a one-off ``once`` and a recurring ``every``, both unfinished."""
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=0.0, store=store)
        sim.schedule("once", OneTime(delay=5), action=len, args=["x"], id="once")
        sim.schedule("every", FixedRate(60), action=len, args=["x"], id="every")


def test_a_restored_task_that_retires_leaves_no_orphan_entry(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    _stored(path)
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=0.0, store=store, retain_finished=0)
        core = sim._core
        assert list(core._orphans) == ["once", "every"]
        sim.cancel("every")  # finished: retires at once (retain_finished=0)
        sim.run_for(10)  # once runs, finishes and retires
        assert sim.tasks() == []
        assert sim.orphans() == []
        assert core._orphans == {}  # was {'once': None, 'every': None}: held for good
        assert core._restored_names == {}  # was {'once': 'once', 'every': 'every'}


def test_a_restored_task_removed_leaves_no_orphan_entry(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    _stored(path)
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=0.0, store=store)
        core = sim._core
        # "every" registered again by its id: not an orphan, its name still restored's
        sim.schedule("every", FixedRate(60), action=len, args=["x"], id="every",
                     replace_existing=True)  # fmt: skip
        sim.remove("once")  # live: cancelled, then forgotten
        assert sim.orphans() == []
        sim.remove("every")  # no orphan left, but its name was remembered
        assert sim.tasks() == []
        assert core._orphans == {}
        assert core._restored_names == {}


def test_a_restored_task_the_threaded_scheduler_retires_leaves_no_orphan_entry(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    _stored(path)
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store, retain_finished=0)
        core = scheduler._core
        scheduler.cancel("once")
        scheduler.cancel("every")
        assert scheduler.tasks() == []
        assert core._orphans == {}
        assert core._restored_names == {}
        scheduler.shutdown()


def test_a_task_another_process_removes_leaves_no_lease_or_settle_entry(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with (
        SqliteTaskStore(path, shared=True, poll=0.05) as store,
        SqliteTaskStore(path, shared=True, poll=0.05) as other_store,
        Stepper(Scheduler(store=store, clock=FakeClock(0.0))) as steps,
    ):
        other = Scheduler(store=other_store, clock=FakeClock(-1_000.0))  # another process's
        steps.scheduler.schedule("x", _noop, FixedRate(30), id="x")
        other.schedule("y", _noop, FixedRate(30), id="y")
        steps.advance(30)  # x ran here: its settle is remembered
        shared = store._shared
        assert shared is not None and "x" in shared.settled
        (claim,) = store.claim(now=1_000.0, limit=1)  # a lease held here, its run not begun
        assert shared.held == {claim.task_id: claim.token}
        other.remove("x")  # both removed by the other process
        other.remove("y")
        wait_until(lambda: _followed(steps.scheduler), timeout=10, what="the removals followed")
        assert shared.settled == {}  # was {'x': 1}: kept for good
        assert shared.held == {}  # was {claim.task_id: claim.token}: kept for good
        other.shutdown()


def test_a_task_another_node_removes_leaves_no_lease_or_record_count_on_postgres(
    open_store: Callable[..., PostgresTaskStore],
) -> None:
    store, other_store = open_store(poll=0.05), open_store(poll=0.05)
    with Stepper(Scheduler(store=store, clock=FakeClock(0.0))) as steps:
        other = Scheduler(store=other_store, clock=FakeClock(-1_000.0))  # another node's
        steps.scheduler.schedule("x", _noop, FixedRate(30), id="x")
        other.schedule("y", _noop, FixedRate(30), id="y")
        steps.advance(30)  # x and y ran here: their records are counted
        assert {"x", "y"} <= set(store._added)
        (claim,) = store.claim(now=1_000.0, limit=1)  # a lease held here, its run not begun
        assert store._held == {claim.task_id: claim.token}
        other.remove("x")  # both removed by the other node
        other.remove("y")
        wait_until(lambda: _followed(steps.scheduler), timeout=10, what="the removals followed")
        assert store._added == {}
        assert store._held == {}
        other.shutdown()
