"""Every per-task container empties when its task leaves (docs/decisions/lifecycle.md,
"Every per-task container empties when its task leaves"; the soak is
tools/soak_churn.py).  Each test makes a task leave by one path and asserts the size of
the container that outlived it, not a timing."""

from __future__ import annotations

from pathlib import Path

from lldsched import FixedRate, OneTime, Scheduler, Simulation, SqliteTaskStore


def _noop() -> None:
    pass


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
