"""multiprocessing's ``spawn`` and ``forkserver`` start methods (the default on macOS and
Windows, and on Linux from Python 3.14), run for real: each test starts its children
with the method it is given, whatever this platform's default is.

A store or a scheduler handed to such a child is refused in the parent, by
``Process.start()``, with an error saying to open it in the child
(lldsched/stores/forks.py); opened in the children by path, a shared SQLite store runs
each task once across them; process isolation (``python -c`` children, not
multiprocessing) works in a scheduler made in such a child; and the fork check of a
store holds each child's own pid, also in a forkserver that preloaded lldsched.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from multiprocessing.context import SpawnContext
from pathlib import Path
from typing import Any, cast

import pytest

from lldsched import (
    InMemoryTaskStore,
    OneTime,
    Scheduler,
    SchedulerStateError,
    SqliteTaskStore,
    StoreError,
)
from tests import start_method_jobs
from tests.processes import killed_at

METHODS = ["spawn", "forkserver"]
BOUND = 60.0  # seconds: the most a test waits for its children (interpreter starts included)
ROOT = Path(__file__).resolve().parent.parent


def _context(method: str) -> SpawnContext:
    """The context of ``method`` (typed as spawn's: each has the same Process API)."""
    return cast(SpawnContext, multiprocessing.get_context(method))


def _run(method: str, target: Any, *args: Any, children: int = 1) -> list[Any]:
    """Start ``children`` processes of ``target(*args, results)`` with ``method``; what
    each put in ``results``, once all have exited with code 0."""
    context = _context(method)
    results = context.SimpleQueue()
    processes = [context.Process(target=target, args=(*args, results)) for _ in range(children)]
    for process in processes:
        process.start()
    reported = [results.get() for _ in processes]  # before join: a full pipe would block
    for process in processes:
        process.join(BOUND)
        assert process.exitcode == 0, f"{process!r} ended with {process.exitcode}"
    return reported


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "open_store",
    [
        lambda path: SqliteTaskStore(path),
        lambda path: SqliteTaskStore(path, shared=True),
        lambda path: SqliteTaskStore(":memory:"),
        lambda path: InMemoryTaskStore(),
    ],
    ids=["sqlite", "sqlite-shared", "sqlite-memory", "in-memory"],
)
def test_a_store_handed_to_a_child_is_refused_by_start_naming_the_fix(
    method: str, open_store: Any, tmp_path: Path
) -> None:
    store = open_store(str(tmp_path / "tasks.db"))
    try:
        Scheduler(store=store).schedule("job", start_method_jobs.whose, OneTime(2e9), id="job")
        context = _context(method)
        process = context.Process(target=start_method_jobs.nothing, args=(store,))
        with pytest.raises(StoreError, match="cannot be pickled to another process") as caught:
            process.start()
        assert "open the store in the child" in str(caught.value)
        assert process.pid is None  # refused before any child started
        assert [snapshot.task.id for snapshot in store.load_all()] == ["job"]  # unharmed
    finally:
        store.close()


@pytest.mark.parametrize("method", METHODS)
def test_a_scheduler_handed_to_a_child_is_refused_by_start_naming_the_fix(method: str) -> None:
    scheduler = Scheduler().start()
    try:
        process = _context(method).Process(target=start_method_jobs.nothing, args=(scheduler,))
        with pytest.raises(SchedulerStateError, match="make the scheduler in the child"):
            process.start()
        assert process.pid is None
    finally:
        assert scheduler.shutdown(timeout=5)


@pytest.mark.parametrize("method", METHODS)
def test_a_shared_store_opened_by_path_in_each_child_runs_every_task_once(
    method: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "shared tasks.db")  # a space, as in a macOS or Windows user folder
    ids = [f"job-{n}" for n in range(8)]
    with SqliteTaskStore(path, shared=True) as store:
        registering = Scheduler(store=store)  # never started: it only writes the rows
        for task_id in ids:
            registering.schedule(task_id, start_method_jobs.whose, OneTime(delay=0), id=task_id)
        reported = _run(method, start_method_jobs.shared_runs, path, children=2)
        assert sorted(len(store.records(task_id)) for task_id in ids) == [1] * len(ids)
    pids = [pid for pid, _ in reported]
    assert os.getpid() not in pids and len(set(pids)) == 2
    ran = [task_id for _, mine in reported for task_id in mine]
    assert sorted(ran) == sorted(ids)  # each task once, by one of the children


@pytest.mark.parametrize("method", METHODS)
def test_process_isolation_runs_and_kills_in_a_scheduler_made_in_such_a_child(
    method: str,
) -> None:
    ((child, rows),) = _run(method, start_method_jobs.isolated_runs)
    added, hangs = rows
    ok, result, error, timed_out = added
    assert ok and not timed_out and error is None
    assert result.startswith("{'sum': 5, 'pid': ")
    assert f"'pid': {child}}}" not in result  # its own worker process, not the child itself
    ok, result, error, timed_out = hangs
    assert not ok and timed_out
    assert killed_at("0.3", error), error


@pytest.mark.parametrize("method", METHODS)
def test_the_fork_check_holds_each_childs_own_pid(method: str) -> None:
    ((pid, current),) = _run(method, start_method_jobs.process_ids)
    assert pid == current != os.getpid()


_PRELOADED = """
import json, multiprocessing
from tests import start_method_jobs

if __name__ == "__main__":
    multiprocessing.set_forkserver_preload(["lldsched.stores.forks", "tests.start_method_jobs"])
    context = multiprocessing.get_context("forkserver")
    results = context.SimpleQueue()
    children = [context.Process(target=start_method_jobs.process_ids, args=(results,))
                for _ in range(2)]
    for child in children:
        child.start()
    print(json.dumps([results.get() for _ in children]))
    for child in children:
        child.join()
"""


def test_a_forkserver_that_preloaded_lldsched_gives_each_child_its_own_pid() -> None:
    """The server imported the fork check, then forks every child from itself: the
    check's pid is the child's (os.register_at_fork), not the server's."""
    done = subprocess.run(
        [sys.executable, "-c", _PRELOADED],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=BOUND,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    reported = json.loads(done.stdout)
    assert len({pid for pid, _ in reported}) == 2
    assert all(pid == current for pid, current in reported), reported
