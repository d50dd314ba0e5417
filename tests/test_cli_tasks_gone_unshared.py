"""``lldsched tasks`` on an unshared SQLite file whose process died mid-run: the row says
``running``, and no process runs it.  ``show`` said "(a run is in flight)" and the table
``running``, as of a run going on, until the service started again; now both say the
process is gone and that its next start runs the attempt again, found by trying the
file's claim without taking it (``claim.held_unshared``), and say a run is in flight
while a live unshared store holds the file (docs/decisions/command-line.md, "A run left
`running` by an unshared process that is gone is said so")."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lldsched import FakeClock, Scheduler, SqliteTaskStore, TaskStatus
from lldsched.cli import main
from lldsched.stores.sqlite.claim import FileClaim, held_unshared
from tests.conftest import T0
from tests.test_store_running_row import _crashed_mid_run, _paused_mid_run

GONE = (
    "  status      running  (a run was in flight: the process that ran it is gone, no "
    "process holds the store unshared nor a lease on the run; the next start runs the "
    "attempt again)"
)
LEGEND = (
    "! a run of it was in flight and the process that ran it is gone (no process holds the "
    "store unshared nor a lease on the run): the next start runs the attempt again"
)


@pytest.fixture
def crashed(tmp_path: Path) -> Path:
    """A store file left as a process that died during ``job``'s run leaves it: the row
    ``running``, no lease, the file's claim let go (the process's exit let it go)."""
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        _crashed_mid_run(store)
    return path


def tasks(capsys: pytest.CaptureFixture[str], path: Path, *argv: str) -> list[str]:
    status = main(["tasks", "--store", f"sqlite:{path}", *argv])
    out, err = capsys.readouterr()
    assert (status, err) == (0, ""), err
    return out.splitlines()


def test_show_says_the_process_is_gone(crashed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = tasks(capsys, crashed, "show", "job")
    assert GONE in lines


def test_the_table_marks_it_and_says_what_the_mark_means(
    crashed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _header, row, legend = tasks(capsys, crashed)
    assert row.split()[:3] == ["job", "job", "running!"]
    assert legend == LEGEND


def test_while_a_live_unshared_store_holds_the_file_its_run_is_in_flight(
    crashed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claim = FileClaim(str(crashed))  # a live unshared store's claim, as it holds it
    try:
        assert held_unshared(str(crashed)) is True
        assert "  status      running  (a run is in flight)" in tasks(
            capsys, crashed, "show", "job"
        )
        _header, row = tasks(capsys, crashed)
        assert row.split()[2] == "running"
    finally:
        claim.release()
    assert held_unshared(str(crashed)) is False


def test_the_probe_takes_no_claim_and_writes_nothing(crashed: Path) -> None:
    lock = Path(str(crashed) + ".lock")
    before = lock.read_bytes()
    assert held_unshared(str(crashed)) is False
    assert lock.read_bytes() == before
    FileClaim(str(crashed)).release()  # an unshared store opens it after: not refused


def test_a_file_never_claimed_is_held_by_nobody(tmp_path: Path) -> None:
    assert held_unshared(str(tmp_path / "none.db")) is False


def _resumed_later(status: str) -> str:
    return (
        "! a run of it was in flight and the process that ran it is gone (no process holds the "
        f"store unshared nor a lease on the run): {status}"
    )


def test_a_run_paused_mid_run_is_marked_by_the_rule_show_says_it_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flag of an attempt in flight, not the status: a task paused during the run its
    process died in is ``paused`` with the flag set (tests/test_cli_tasks_owed_after_restart.py
    has a ``scheduled`` one); the table showed a plain ``paused``.  What becomes of the
    attempt is the status's: a restart keeps the task paused, the attempt owed, and its
    ``resume`` runs it (tests/test_store_running_row.py,
    ``test_a_row_with_a_run_in_flight_is_read_by_a_shared_start_as_a_restart_reads_it``);
    both views said "the next start runs the attempt again"."""
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        _paused_mid_run(store)
    owed = "the attempt runs again once the task is resumed"
    said = GONE.replace("running", "paused", 1).replace(
        "the next start runs the attempt again", owed
    )
    assert said in tasks(capsys, path, "show", "job")
    _header, row, legend = tasks(capsys, path)
    assert (row.split()[2], legend) == ("paused!", _resumed_later(owed))


def test_a_run_cancelled_mid_run_says_its_attempt_does_not_run_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cancelled during the run its process died in: the flag set, and no start runs the
    attempt (a restart keeps the task cancelled)."""
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        _crashed_mid_run(store)
        (stored,) = store.load_all()
        store.save(stored._replace(status=TaskStatus.CANCELLED))
    owed = "the attempt does not run again (the task is cancelled)"
    shown = tasks(capsys, path, "show", "job")
    assert any(line.startswith("  status      cancelled  (") and line.endswith(f"; {owed})")
               for line in shown), shown  # fmt: skip
    _header, row, legend = tasks(capsys, path)
    assert (row.split()[2], legend) == ("cancelled!", _resumed_later(owed))


def test_a_crashed_row_and_a_paused_one_each_say_their_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One table, a row of each: two legend lines, each under its mark, the unpaused
    row's as before."""
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        _paused_mid_run(store)
        (stored,) = store.load_all()
        store.save(stored._replace(task=stored.task._replace(id="other", name="other"),
                                   status=TaskStatus.RUNNING))  # fmt: skip
    _header, *rows, first, second = tasks(capsys, path)
    assert sorted(line.split()[2] for line in rows) == ["paused!", "running!"]
    assert [first, second] == [
        LEGEND,
        _resumed_later("the attempt runs again once the task is resumed"),
    ]


@pytest.mark.parametrize("status", [TaskStatus.CANCELLED, TaskStatus.SUCCEEDED])
def test_a_restart_clears_the_flag_of_a_finished_task_whose_run_was_cut(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    status: TaskStatus,
) -> None:
    """Cancelled (or finished) during the run its process died in, the row kept its flag
    after a restart (which wrote nothing for a task it does not queue): marked ``!`` for
    ever, its line saying an attempt nobody will run, and the restart's log line said
    "that attempt runs again".  The restart writes the flag down, and says nothing."""
    caplog.set_level(logging.INFO, logger="lldsched")
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        _crashed_mid_run(store)
        (stored,) = store.load_all()
        store.save(stored._replace(status=status))
    with SqliteTaskStore(path) as store:
        restarted = Scheduler(clock=FakeClock(T0 + 60), store=store).start()
        assert restarted.shutdown()
        (row,) = store.load_all()
    assert (row.status, row.running) == (status, False)
    assert "runs again" not in caplog.text
    _header, line = tasks(capsys, path)  # no legend: nothing is marked
    assert line.split()[2] == status.value
    assert "in flight" not in "\n".join(tasks(capsys, path, "show", "job"))


def test_a_restart_keeps_the_flag_of_a_task_paused_mid_run() -> None:
    """Paused, the attempt is still owed (its resume runs it): the flag stays."""
    with SqliteTaskStore(":memory:") as store:
        _paused_mid_run(store)
        Scheduler(clock=FakeClock(T0 + 60), store=store)  # recovered, never started
        (row,) = store.load_all()
    assert (row.status, row.running) == (TaskStatus.PAUSED, True)
