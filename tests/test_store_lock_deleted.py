"""A store's lock file deleted while the store is open (an operator's ``rm`` of a lock
file thought stale, a cleaner of old files): the store claims its file again, or says
that another opener claimed it since.

The claim is a ``flock`` on ``tasks.db.lock``; deleted, it let the next opener in
beside the store: a second unshared scheduler on the file (every task run twice), or an
operator's ``lldsched tasks ... pause`` that said "paused" while the running scheduler
overwrote the row.  The store now checks its lock file as often as its own file
(``lldsched/stores/sqlite/claim.py``, ``FileClaim.check``; at every call here).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lldsched import FakeClock, FixedRate, Scheduler, SqliteTaskStore, StoreError
from lldsched.stores.sqlite import file as sqlite_file
from lldsched.stores.sqlite.claim import claim_path
from tests import jobs
from tests.conftest import T0
from tests.test_store_sqlite import snapshot, task

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Check at every call: the default bound (a second) is wall-clock time."""
    monkeypatch.setattr(sqlite_file, "CHECK_EVERY", 0.0)


def test_a_deleted_lock_file_is_made_again_at_the_next_call_and_refuses_a_second_store(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        os.unlink(claim_path(str(path)))
        with caplog.at_level(logging.WARNING, logger="lldsched"):
            store.save(snapshot(task(id="a")))  # claims the file again
        assert caplog.messages == [
            f"the lock file {claim_path(str(path))!r} that claimed the store {str(path)!r} "
            "for this process was deleted while the store was open; the file is claimed "
            "again. Until then another scheduler or an operator's command could open the "
            "store beside this one (a change made so may have been overwritten since). "
            "Never delete a store's lock file: its process's exit lets it go"
        ]
        with pytest.raises(StoreError, match="is already open in this process"):
            SqliteTaskStore(path)
        store.save(snapshot(task(id="b")))  # said once: claimed
        assert len(caplog.messages) == 1


def test_a_store_whose_file_another_opener_claimed_meanwhile_writes_nothing_until_it_lets_go(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        scheduler.schedule("kept", jobs.noop, FixedRate(60), id="kept")
        os.unlink(claim_path(str(path)))
        second = SqliteTaskStore(path)  # in the window: nothing could tell it
        with pytest.raises(StoreError) as raised:
            scheduler.schedule("lost", jobs.noop, FixedRate(60), id="lost")
        said = str(raised.value)
        assert said.startswith(
            f"the lock file {claim_path(str(path))!r} that claimed the store {str(path)!r} "
            "for this process was deleted while the store was open, and the file was claimed "
            f"since by another opener (the store {str(path)!r} is already open in this process"
        )
        assert [t.id for t in scheduler.tasks()] == ["kept"]  # nothing registered, nothing lost
        with pytest.raises(StoreError, match="was claimed since by another opener"):
            store.delete("kept")  # every call, until the other lets go
        second.close()
        scheduler.schedule("later", jobs.noop, FixedRate(60), id="later")
        assert [s.task.id for s in store.load_all()] == ["kept", "later"]
        scheduler.shutdown()


def test_a_shared_store_claims_its_file_again_at_its_next_claim(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, shared=True) as store:
        os.unlink(claim_path(str(path)))
        store.claim(now=T0, limit=1)
        with pytest.raises(StoreError, match="is already open by shared=True schedulers"):
            SqliteTaskStore(path)


_RUNNING = """
import sys
from lldsched import FixedRate, Scheduler, SqliteTaskStore
from lldsched.stores.sqlite import file as sqlite_file
from tests import jobs

sqlite_file.CHECK_EVERY = 0.0
scheduler = Scheduler(store=SqliteTaskStore(sys.argv[1])).start()
scheduler.schedule("hourly", jobs.noop, FixedRate(3600), id="hourly")
print("ready", flush=True)
for line in sys.stdin:  # each line: delete the lock file, then one store call (a verb)
    import os
    os.unlink(sys.argv[1] + ".lock")
    scheduler.run_now("hourly")
    scheduler.wait_idle(timeout=30)
    print("called", flush=True)
"""


def test_an_operators_verb_is_refused_once_the_running_scheduler_claimed_its_file_again(
    tmp_path: Path,
) -> None:
    # Before: the lock file gone, `lldsched tasks ... pause hourly` said "paused" (status
    # 0) while the running scheduler went on, its next write of the row undoing the pause.
    path = tmp_path / "tasks.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, "-c", _RUNNING, str(path)],
        cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as running:  # fmt: skip
        try:
            assert running.stdout is not None and running.stdin is not None
            assert running.stdout.readline() == "ready\n"
            running.stdin.write("\n")
            running.stdin.flush()
            assert running.stdout.readline() == "called\n"
            verb = subprocess.run(
                [sys.executable, "-m", "lldsched", "tasks", "--store", f"sqlite://{path}",
                 "pause", "hourly"],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
        finally:
            running.kill()
    assert verb.returncode == 2, verb.stdout
    assert "is held by a running scheduler that does not share it" in verb.stderr
    assert "Nothing was changed" in verb.stderr
