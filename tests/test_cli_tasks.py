"""``python -m lldsched tasks``: an operator lists a durable store's tasks, reads the dead
letter and one task whole, and acts on a task, without writing Python.

Against a real SQLite file and the session's throwaway PostgreSQL server, the command run
as a subprocess (an operator's shell: the jobs' module is not on its path unless given)
and in-process (``main``).  A verb on a shared store is applied by a running scheduler in
this test process, waited for by its own events (``EventLog.wait_for``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shlex
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import lldsched
from lldsched import (
    CronSchedule,
    EventLog,
    FakeClock,
    FixedRate,
    Jittered,
    OneTime,
    RetryPolicy,
    Scheduler,
    SqliteTaskStore,
    StoreError,
    TaskStatus,
)
from lldsched.cli import main, storetasks, storeurl
from lldsched.cli.tasksparser import EXAMPLE_STORE
from lldsched.errors import TaskNotFoundError
from lldsched.stores.sqlite.peek import peek_sqlite
from tests import jobs
from tests.test_cluster_verb_hold import FillingSqlite

JOBS = """
def fails():
    raise RuntimeError("the upstream sent no orders")

def noop():
    pass
"""
ROOT = str(Path(lldsched.__file__).parent.parent)  # the lldsched under test
NIGHTLY = "0 3 * * *"


@pytest.fixture
def code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, Path]]:
    """The service's jobs: a module of a folder this process imports from and a
    subprocess does not, unless told (an operator's shell is not the service's)."""
    folder = tmp_path / "service"
    folder.mkdir()
    name = f"opsjobs_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(JOBS)
    monkeypatch.syspath_prepend(str(folder))
    yield importlib.import_module(name), folder
    sys.modules.pop(name, None)


def cli(*argv: str, service: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m lldsched tasks ARGV`` in a process of its own (``service``: the folder of
    the jobs' code on its path too)."""
    path = ROOT if service is None else f"{ROOT}{os.pathsep}{service}"
    env = {**os.environ, "PYTHONPATH": path}
    env.pop("LLDSCHED_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "lldsched", "tasks", *argv],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["tasks", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def status_is(task_id: str, status: TaskStatus) -> Any:
    return lambda event: event.task_id == task_id and event.status is status


def fill(scheduler: Scheduler, jobs: ModuleType) -> EventLog:
    """Three tasks: ``sync`` dead-lettered (waited for), ``nightly`` due at 03:00 and
    ``report`` paused."""
    log = EventLog()
    scheduler.add_listener(log)
    scheduler.schedule("nightly", jobs.noop, NIGHTLY, id="nightly")
    scheduler.schedule("report", jobs.noop, NIGHTLY, id="report", paused=True)
    scheduler.schedule("sync", jobs.fails, OneTime(0), id="sync", retry=RetryPolicy(max_attempts=1))
    if not scheduler.running:
        scheduler.start()
    assert log.wait_for(status_is("sync", TaskStatus.FAILED), timeout=30)
    return log


@pytest.fixture
def sqlite_file(tmp_path: Path, code: tuple[ModuleType, Path]) -> Path:
    """An unshared store file, its scheduler shut down: nobody holds it."""
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        fill(scheduler, code[0])
        scheduler.shutdown()
    return path


def statuses(path: Path) -> dict[str, str]:
    """What the store holds, read as the command reads it (``stores.peek``)."""
    reader = peek_sqlite(str(path))
    try:
        return {row.id: row.snapshot.status.value for row in reader.tasks() if row.snapshot}
    finally:
        reader.close()


def test_the_table_the_dead_letter_and_one_task_read_without_the_jobs_code(
    sqlite_file: Path, code: tuple[ModuleType, Path]
) -> None:
    store = f"sqlite://{sqlite_file}"
    listed = cli("--store", store)  # the jobs' module is not importable here
    assert (listed.returncode, listed.stderr) == (0, "")
    header, *rows = listed.stdout.splitlines()
    assert header.split()[:4] == ["ID", "NAME", "STATUS", "SCHEDULE"]
    cells = {row.split()[0]: row for row in rows}
    assert set(cells) == {"nightly", "report", "sync"}
    assert "scheduled" in cells["nightly"] and "At 03:00 (UTC)" in cells["nightly"]
    assert "paused" in cells["report"]
    assert "failed: RuntimeError: the upstream sent no or..." in cells["sync"]  # cut

    dead = cli("--store", store, "--status", "failed")
    assert [row.split()[0] for row in dead.stdout.splitlines()[1:]] == ["sync"]

    shown = cli("--store", store, "show", "sync")
    assert shown.returncode == 0, shown.stderr
    assert f"  action      {code[0].__name__}:fails" in shown.stdout.splitlines()
    assert "  last error  RuntimeError: the upstream sent no orders" in shown.stdout
    # "runs 1 (1 failed)": the counter counts timeouts and cancellations too, which the
    # records under it call timed_out and cancelled
    assert "  runs        1 (0 ok; 1 failed, timed out or cancelled)" in shown.stdout
    assert "attempt 1  failed: RuntimeError: the upstream sent no orders" in shown.stdout


def test_json_gives_one_object_a_task(
    sqlite_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "--store", f"sqlite://{sqlite_file}", "--json")
    assert (status, err) == (0, "")
    tasks = [json.loads(line) for line in out.splitlines()]
    assert [task["id"] for task in tasks] == ["nightly", "report", "sync"]
    (sync,) = (task for task in tasks if task["id"] == "sync")
    assert sync["status"] == "failed"
    assert sync["last"]["outcome"] == "failed"
    assert sync["last_error"] == "RuntimeError: the upstream sent no orders"


@pytest.mark.parametrize(
    ("verb", "task_id", "after"),
    [
        ("redrive", "sync", "scheduled"),
        ("pause", "nightly", "paused"),
        ("resume", "report", "scheduled"),
        ("cancel", "nightly", "cancelled"),
        ("run-now", "nightly", "scheduled"),
        ("remove", "nightly", None),
    ],
)
def test_each_verb_takes_effect_on_a_store_nobody_holds(
    sqlite_file: Path, code: tuple[ModuleType, Path], verb: str, task_id: str, after: str | None
) -> None:
    before = statuses(sqlite_file)
    done = cli("--store", f"sqlite://{sqlite_file}", verb, task_id, service=code[1])
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"task {task_id}: ")
    expected = (
        {**before, task_id: after}
        if after is not None
        else {key: value for key, value in before.items() if key != task_id}
    )
    assert statuses(sqlite_file) == expected
    # The service's next start, unshared as it was, finds the change.
    with SqliteTaskStore(sqlite_file) as store:
        scheduler = Scheduler(store=store)
        try:
            if after is None:
                with pytest.raises(TaskNotFoundError):
                    scheduler.task(task_id)
            elif after != "cancelled":  # a finished task is not restored
                assert scheduler.task(task_id).status.value == after
        finally:
            scheduler.shutdown()


def test_run_now_says_when_there_is_nothing_to_do(
    sqlite_file: Path, code: tuple[ModuleType, Path]
) -> None:
    done = cli("--store", f"sqlite://{sqlite_file}", "redrive", "nightly", service=code[1])
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout
        == "task nightly: nothing to redrive (its status is scheduled); nothing changed\n"
    )


def test_a_verb_whose_code_does_not_import_here_is_refused_by_name_and_why(
    sqlite_file: Path, code: tuple[ModuleType, Path]
) -> None:
    """The line names what did not import, as the store found it: the operator learns
    which module to put on the path (before, only "its action or its schedule's class")."""
    before = statuses(sqlite_file)
    done = cli("--store", f"sqlite://{sqlite_file}", "pause", "nightly")  # no service code
    assert done.returncode == 2
    assert done.stderr.startswith("error: task 'nightly' cannot be loaded here")
    module = code[0].__name__
    assert f"cannot import module '{module}' for '{module}:noop'" in done.stderr
    assert f"No module named '{module}'" in done.stderr
    assert "nothing was changed" in done.stderr
    assert done.stderr.count("\n") == 1  # one error: line
    assert statuses(sqlite_file) == before


def test_a_shared_store_s_running_scheduler_applies_a_pause_and_a_resume(
    tmp_path: Path, code: tuple[ModuleType, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "shared.db"
    store = SqliteTaskStore(path, shared=True, poll=0.05)
    scheduler = Scheduler(store=store).start()
    try:
        log = fill(scheduler, code[0])
        done = cli("--store", f"sqlite://{path}", "pause", "nightly", service=code[1])
        assert (done.returncode, done.stdout) == (0, "task nightly: paused\n"), done.stderr
        assert log.wait_for(status_is("nightly", TaskStatus.PAUSED), timeout=30)
        assert scheduler.task("nightly").status is TaskStatus.PAUSED
        # Read beside the running shared scheduler, as its file is (WAL).
        status, out, _ = run(capsys, "--store", f"sqlite:{path}", "--status", "paused")
        assert status == 0
        assert [row.split()[0] for row in out.splitlines()[1:]] == ["nightly", "report"]
        # In-process too, while the scheduler runs; the redrive of the dead letter as well.
        assert run(capsys, "--store", f"sqlite:{path}", "resume", "nightly")[0] == 0
        assert log.wait_for(status_is("nightly", TaskStatus.SCHEDULED), timeout=30)
        assert run(capsys, "--store", f"sqlite:{path}", "redrive", "sync")[:2] == (
            0, "task sync: redriven: due now\n"
        )  # fmt: skip
        redriven = log.wait_for(
            lambda event: event.task_id == "sync" and event.previous is TaskStatus.FAILED
        )
        assert redriven is not None
    finally:
        scheduler.shutdown()
        store.close()


def test_a_store_held_unshared_by_a_running_scheduler_is_read_and_its_verbs_refused(
    tmp_path: Path, code: tuple[ModuleType, Path]
) -> None:
    path = tmp_path / "held.db"
    store = SqliteTaskStore(path)
    scheduler = Scheduler(store=store).start()
    try:
        fill(scheduler, code[0])
        listed = cli("--store", f"sqlite://{path}")  # WAL: a reader beside the writer
        assert listed.returncode == 0, listed.stderr
        assert len(listed.stdout.splitlines()) == 4
        done = cli("--store", f"sqlite://{path}", "pause", "nightly", service=code[1])
        assert (done.returncode, done.stdout) == (2, "")
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"error: the store {str(path)!r} is held by a running scheduler")
        assert "Nothing was changed" in line
        assert scheduler.task("nightly").status is TaskStatus.SCHEDULED
    finally:
        scheduler.shutdown()
        store.close()


def test_remove_of_a_task_others_depend_on_is_the_runtimes_refusal_and_changes_nothing(
    tmp_path: Path, code: tuple[ModuleType, Path]
) -> None:
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        scheduler.schedule("nightly", code[0].noop, NIGHTLY, id="nightly")
        scheduler.schedule("after", code[0].noop, NIGHTLY, id="after", depends_on=["nightly"])
        scheduler.shutdown()
    before = statuses(path)
    done = cli("--store", f"sqlite:{path}", "remove", "nightly", service=code[1])
    assert (done.returncode, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: cannot remove 'nightly'")
    assert "after depends on it" in line and line.endswith("; nothing was changed")
    assert statuses(path) == before


class FullDisk(FillingSqlite):
    """A store whose disk fills up as task ``nightly``'s row is written (its ``filler``
    table made by the test): SQLite refuses the write."""

    failing = True
    full = "nightly"


def test_a_full_disk_during_the_verb_is_status_1_saying_it_may_not_be_stored(
    sqlite_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime keeps a change whose write failed (an outage, said once in the log):
    before, the command said ``task nightly: paused`` and 0, and nothing was stored."""
    with contextlib.closing(sqlite3.connect(sqlite_file)) as connection, connection:
        connection.execute("CREATE TABLE filler (x)")
    monkeypatch.setattr("lldsched.stores.sqlite.SqliteTaskStore", FullDisk)
    before = statuses(sqlite_file)
    status, out, err = run(capsys, "--store", f"sqlite:{sqlite_file}", "pause", "nightly")
    assert (status, out) == (1, "")
    (line,) = err.splitlines()
    assert line.startswith(
        f"error: pause nightly: the store failed to write the change (the SQLite store "
        f"{str(sqlite_file)!r} failed to save task 'nightly': OperationalError: database or "
        "disk is full); it may not be stored"
    )
    assert line.endswith("see `tasks --store URL show nightly` before trying again")
    assert statuses(sqlite_file) == before  # its last try at the close failed too


def test_a_service_starting_unshared_during_a_verb_is_told_to_start_again(
    sqlite_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verb on a file nobody holds claims it shared for a moment: the service starting
    unshared in that moment (here: while the verb runs, a hook in it) is refused, told the
    operator's command holds it for a moment and to start again; then it starts."""
    refused: list[str] = []
    act_on = storeurl.act_on

    @contextlib.contextmanager
    def starting_meanwhile(*args: Any) -> Iterator[Any]:
        with act_on(*args) as scheduler:
            with pytest.raises(StoreError) as raised:
                SqliteTaskStore(sqlite_file)  # the service starts, unshared
            refused.append(str(raised.value))
            yield scheduler

    monkeypatch.setattr(storetasks, "act_on", starting_meanwhile)
    status, out, _ = run(capsys, "--store", f"sqlite:{sqlite_file}", "pause", "nightly")
    assert (status, out) == (0, "task nightly: paused\n")
    (said,) = refused
    assert said.startswith(
        f"the store {str(sqlite_file)!r} is held for a moment by an operator's command, "
        f"python -m lldsched tasks pause nightly (pid {os.getpid()} on "
    )
    assert "start again" in said and "one scheduler per file" not in said
    with SqliteTaskStore(sqlite_file) as store:  # started again: it opens
        assert {s.task.id: s.status for s in store.load_all()}["nightly"] is TaskStatus.PAUSED


def test_a_cron_schedule_names_its_zone_utc_too_beside_the_next_run_in_utc(
    tmp_path: Path, code: tuple[ModuleType, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "zones.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        scheduler.schedule("utc", code[0].noop, NIGHTLY, id="utc")
        scheduler.schedule(
            "paris", code[0].noop, CronSchedule(NIGHTLY, tz="Europe/Paris"), id="paris"
        )
        jittered = Jittered(CronSchedule(NIGHTLY), max_delay=5, seed=1)
        scheduler.schedule("jittered", code[0].noop, jittered, id="jittered")
        scheduler.schedule("rate", code[0].noop, FixedRate(60), id="rate")
        scheduler.shutdown()
    status, out, _ = run(capsys, "--store", f"sqlite:{path}", "--json")
    assert status == 0
    schedules = {task["id"]: task["schedule"] for task in map(json.loads, out.splitlines())}
    assert schedules == {
        "utc": "At 03:00 (UTC)",
        "paris": "At 03:00 (Europe/Paris)",
        "jittered": "At 03:00 (UTC), started up to 5 s late (jitter, seed 1)",
        "rate": "Every 60 s",
    }
    status, out, _ = run(capsys, "--store", f"sqlite:{path}")
    assert "NEXT RUN (UTC)" in out.splitlines()[0]
    assert "At 03:00 (UTC)" in out and "At 03:00 (Europe/Paris)" in out
    status, out, _ = run(capsys, "--store", f"sqlite:{path}", "show", "utc")
    assert "  schedule    At 03:00 (UTC)" in out.splitlines()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--store", "mysql://u:hunter22@h/db"], "error: --store 'mysql://u:***@h/db' is no"),
        (["--store", "sqlite:"], "error: --store 'sqlite:' names no file"),
        (["--store", "sqlite:///nowhere/jobs.db"], "error: there is no SQLite store file at "
         "'/nowhere/jobs.db'"),
        ([], "error: name the store: --store URL"),
    ],
)  # fmt: skip
def test_a_bad_store_is_refused_naming_it(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, "")
    assert err.startswith(said), err
    assert "hunter22" not in err
    assert not os.path.exists("/nowhere/jobs.db")


def test_a_row_this_release_cannot_read_is_listed_as_unreadable_beside_the_others(
    sqlite_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with contextlib.closing(sqlite3.connect(sqlite_file)) as connection, connection:
        connection.execute("UPDATE tasks SET status = 'hibernating' WHERE id = 'report'")
    status, out, err = run(capsys, "--store", f"sqlite:{sqlite_file}")
    assert (status, err) == (0, "")
    rows = {row.split()[0]: row.split()[2] for row in out.splitlines()[1:]}
    assert rows == {"nightly": "scheduled", "report": "unreadable", "sync": "failed"}
    status, out, _ = run(capsys, "--store", f"sqlite:{sqlite_file}", "show", "report")
    assert status == 0
    assert out.splitlines()[1].startswith("  cannot be read: task report: status 'hibernating'")


def test_a_bare_path_is_told_the_url_it_meant(
    sqlite_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "--store", str(sqlite_file))
    assert (status, out) == (2, "")
    assert err.endswith(f"; did you mean sqlite:{sqlite_file}?\n")


def test_sqlalchemys_relative_url_is_told_the_url_it_meant(
    sqlite_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An APScheduler user's ``sqlite:///jobs.db`` (relative in SQLAlchemy) names /jobs.db
    here: with nothing there and jobs.db in the current folder, the refusal names the
    URL meant; with no such file either, it says only what is missing."""
    monkeypatch.chdir(sqlite_file.parent)
    assert not os.path.exists("/jobs.db")
    status, out, err = run(capsys, "--store", "sqlite:///jobs.db", "pause", "nightly")
    assert (status, out) == (2, "")
    assert err == (
        "error: there is no SQLite store file at '/jobs.db'; '/jobs.db' is read as absolute "
        "(sqlite:///PATH names /PATH here, unlike SQLAlchemy): did you mean sqlite:jobs.db?\n"
    )
    assert statuses(sqlite_file)["nightly"] == "scheduled"
    status, _, err = run(capsys, "--store", "sqlite:///other.db")
    assert (status, err) == (2, "error: there is no SQLite store file at '/other.db'\n")


def test_a_file_that_is_no_store_is_refused_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database")
    status, _, err = run(capsys, "--store", f"sqlite:{path}")
    assert status == 2
    assert err == (
        f"error: {str(path)!r} is not a readable SQLite database (file is not a database); it "
        "was left untouched. If it is the store's file, it is damaged: restore it from a "
        "backup or move it aside; if not, name the store's file\n"
    )
    assert path.read_text() == "not a database"


def test_a_store_file_cut_short_is_refused_as_the_service_refuses_it(
    sqlite_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A copy that stopped short (a full disk, a transfer cut): the listing read what was
    # left and showed it with status 0, where the service's open refused the file.
    whole = sqlite_file.read_bytes()
    for cut, said in (
        (len(whole) - 1000, "is corrupted (quick_check: "),
        (len(whole) // 2, "is not a readable SQLite database (database disk image is malformed)"),
    ):
        path = tmp_path / f"cut-{cut}.db"
        path.write_bytes(whole[:cut])
        with pytest.raises(StoreError) as refused:
            SqliteTaskStore(path)
        assert str(refused.value).startswith(f"{str(path)!r} {said}")
        assert "restore it from a backup or move it aside" in str(refused.value)
        status, out, err = run(capsys, "--store", f"sqlite:{path}")
        one_line = str(refused.value).replace("\n", "; ")  # quick_check's report may hold one
        assert (status, out, err) == (2, "", f"error: {one_line}\n")
        assert path.read_bytes() == whole[:cut]


def test_a_folder_given_for_the_store_file_is_said_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(capsys, "--store", f"sqlite:{tmp_path}")
    said = f"error: {str(tmp_path)!r} is a folder, not an SQLite store file: name the store's file"
    assert (status, err) == (2, f"{said}\n")


def test_an_unknown_id_is_refused_naming_it_and_nothing_changes(
    sqlite_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = statuses(sqlite_file)
    for verb in ("show", "redrive", "remove"):
        status, out, err = run(capsys, "--store", f"sqlite:{sqlite_file}", verb, "task-404")
        assert (status, out) == (2, "")
        assert err == f"error: no task 'task-404' in the store {str(sqlite_file)!r}\n"
    assert statuses(sqlite_file) == before
    status, _, err = run(capsys, "--store", f"sqlite:{sqlite_file}", "redrive")
    assert (status, err) == (2, "error: redrive needs a task id: tasks --store URL redrive ID\n")


def test_every_example_of_the_help_runs(
    sqlite_file: Path, code: tuple[ModuleType, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["tasks", "--help"], prog="python -m lldsched")
    text = capsys.readouterr().out
    lines = text.split("examples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(lines) == 4
    for line in lines:
        argv = shlex.split(line.strip().removeprefix("python -m lldsched "))
        argv = [f"sqlite:{sqlite_file}" if arg == EXAMPLE_STORE else arg for arg in argv]
        argv = ["sync" if arg == "task-17" else arg for arg in argv]
        assert main(argv) == 0, line
        out, err = capsys.readouterr()
        assert out and err == "", line


def test_a_reader_that_leaves_early_is_no_error(sqlite_file: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "PYTHONPATH": ROOT}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "lldsched", "tasks", "--store", f"sqlite:{sqlite_file}"],
            stdout=write_end, stderr=subprocess.PIPE, timeout=60, env=env, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, b"")


# -- PostgreSQL ---------------------------------------------------------------------------


def test_postgres_list_dead_letter_pause_and_redrive_never_printing_the_password(
    postgres_dsn: str, postgres_server: Any, code: tuple[ModuleType, Path]
) -> None:
    from lldsched.stores.postgres import PostgresTaskStore

    password = postgres_server.password
    assert password in postgres_dsn
    store = PostgresTaskStore(postgres_dsn, poll=0.05)
    scheduler = Scheduler(store=store).start()
    try:
        log = fill(scheduler, code[0])
        listed = cli("--store", postgres_dsn)
        assert listed.returncode == 0, listed.stderr
        assert [row.split()[0] for row in listed.stdout.splitlines()[1:]] == [
            "nightly", "report", "sync"
        ]  # fmt: skip
        dead = cli("--store", postgres_dsn, "--status", "failed", "--json")
        assert [json.loads(line)["id"] for line in dead.stdout.splitlines()] == ["sync"]
        paused = cli("--store", postgres_dsn, "pause", "nightly", service=code[1])
        assert (paused.returncode, paused.stdout) == (0, "task nightly: paused\n"), paused.stderr
        assert log.wait_for(status_is("nightly", TaskStatus.PAUSED), timeout=30)
        redriven = cli("--store", postgres_dsn, "redrive", "sync", service=code[1])
        assert redriven.returncode == 0, redriven.stderr
        assert log.wait_for(
            lambda event: event.task_id == "sync" and event.previous is TaskStatus.FAILED,
            timeout=30,
        )
        missing = cli("--store", postgres_dsn, "show", "task-404")
        assert missing.returncode == 2
        assert missing.stderr.startswith("error: no task 'task-404' in the store ")
        for done in (listed, dead, paused, redriven, missing):
            assert password not in done.stdout + done.stderr
        assert "***" in missing.stderr
    finally:
        scheduler.shutdown()
        store.close()


def test_an_unreachable_server_or_a_wrong_password_is_refused_naming_the_store_not_the_password(
    postgres_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    for dsn in (
        "postgresql://postgres:s3cret-pw@127.0.0.1:1/postgres?connect_timeout=5",
        postgres_server.dsn(password="wrong-pass-1234"),
    ):
        status, out, err = run(capsys, "--store", dsn, "pause", "nightly")
        assert (status, out) == (2, "")
        assert err.startswith("error: cannot connect to the PostgreSQL store '"), err
        assert "s3cret-pw" not in err and "wrong-pass-1234" not in err
        assert len(err.splitlines()) == 1


def test_a_database_without_a_store_is_refused_and_nothing_is_installed(
    postgres_dsn: str, postgres_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(capsys, "--store", postgres_dsn, "redrive", "sync")
    assert status == 2
    assert "there is no lldsched store at" in err and "(no table lldsched_meta)" in err
    schema = postgres_dsn.rsplit("%3D", 1)[1]
    import psycopg

    with psycopg.connect(postgres_dsn) as connection:
        tables = connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchone()
    assert tables == (0,)


HEAVY = ("pandas", "matplotlib", "numpy", "psycopg")
IMPORTED = """
import sys
from lldsched.cli import main
if {hide!r}:
    sys.modules["psycopg"] = None  # not installed
status = main(["tasks", "--store", {store!r}])
print("imported:", sorted(name for name in {heavy!r} if sys.modules.get(name) is not None))
sys.exit(status)
"""


def imports_of(store: str, *, hide: bool = False) -> subprocess.CompletedProcess[str]:
    code = IMPORTED.format(store=store, heavy=HEAVY, hide=hide)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": ROOT}, check=False,
    )  # fmt: skip


def test_an_sqlite_store_is_listed_without_pandas_matplotlib_or_psycopg(sqlite_file: Path) -> None:
    done = imports_of(f"sqlite:{sqlite_file}")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[-1] == "imported: []"


def test_a_postgres_url_without_psycopg_names_the_extra() -> None:
    done = imports_of("postgresql://app:pw-1234@127.0.0.1:1/app", hide=True)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: PostgresTaskStore needs psycopg 3, which is not installed")
    assert "lldsched[postgres]" in line and "pw-1234" not in line


def test_a_postgres_server_gone_during_the_verb_is_status_1_saying_it_may_not_be_stored(
    postgres_dsn: str,
    postgres_server: Any,
    code: tuple[ModuleType, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The connection reset once the store is open and its tasks loaded (the verb begun),
    as the outage tests cut it: the verb's write fails, and its last try at the close."""
    from lldsched.stores.postgres import PostgresTaskStore
    from tests.tcp_proxy import TcpProxy

    with PostgresTaskStore(postgres_dsn) as store:
        scheduler = Scheduler(store=store)
        fill(scheduler, code[0])
        scheduler.shutdown()
    act_on = storeurl.act_on
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:

        @contextlib.contextmanager
        def cut_once_open(*args: Any) -> Iterator[Any]:
            with act_on(*args) as opened:
                proxy.reset()  # the server gone: every connection reset, new ones too
                yield opened

        monkeypatch.setattr(storetasks, "act_on", cut_once_open)
        dsn = proxy.dsn(postgres_dsn, port=postgres_server.port)
        status, out, err = run(capsys, "--store", dsn, "pause", "nightly")
        proxy.heal()
    assert (status, out) == (1, ""), err
    (line,) = err.splitlines()
    assert line.startswith("error: pause nightly: the store failed to write the change (")
    assert "it may not be stored" in line
    assert postgres_server.password not in line
    with PostgresTaskStore(postgres_dsn) as store:
        scheduler = Scheduler(store=store)
        try:
            assert scheduler.task("nightly").status is TaskStatus.SCHEDULED
        finally:
            scheduler.shutdown()


def _large(store: Any, tasks: int, records: int, failed: set[int]) -> None:
    """``tasks`` tasks of ``records`` records each, the ``failed`` ones dead-lettered."""
    from lldsched import ExecutionRecord, Priority, Task, TaskSnapshot
    from tests.jobs import noop

    for n in range(tasks):
        task = Task(f"t{n}", "report", noop, FixedRate(60), Priority.NORMAL, RetryPolicy(), None)
        dead = n in failed
        status = TaskStatus.FAILED if dead else TaskStatus.SCHEDULED
        snapshot = TaskSnapshot(task, status, None if dead else 1e9, 0, records, int(dead), None)
        for r in range(records):
            ok = not (dead and r == records - 1)
            record = ExecutionRecord(
                f"t{n}", "report", 1, 1e9 + r, 1e9 + r, 0, 1e9 + r, 1e9 + r + 1, ok,
                None if ok else "ValueError: boom",
            )  # fmt: skip
            store.save(snapshot, record)


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_the_dead_letter_reads_the_failed_tasks_alone(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """``tasks --status failed``, the operator's look for the dead letter in a large store,
    reads what it prints: one statement (the failed rows in the order they failed, each
    with its last record), returning the failed tasks' rows alone.  Before, it read
    every task's last record (a window over every record of the store), each decoded,
    for the few it printed; then three statements (the rows, their order, their last
    records).  A whole listing, and ``--json``, read each task with its last record in
    one statement.  A table reads the leases after (a statement of its own, the few runs
    in flight: tests/test_cli_tasks_in_flight.py)."""
    tasks, failed = 30, {7, 19}
    if engine == "sqlite":
        path = tmp_path / "jobs.db"
        with SqliteTaskStore(path) as store:
            _large(store, tasks, 4, failed)
        url = f"sqlite://{path}"
    else:
        from lldsched.stores.postgres import PostgresTaskStore

        url = request.getfixturevalue("postgres_dsn")
        with PostgresTaskStore(url) as shared:
            _large(shared, tasks, 4, failed)
    statements: list[tuple[str, int]] = []
    opened = storeurl.peek

    def counting(name: storeurl.StoreName) -> Any:
        reader = opened(name)
        query = reader._query

        def counted(statement: str, parameters: Any) -> list[Any]:
            rows = query(statement, parameters)
            statements.append((statement, len(rows)))
            return rows

        reader._query = counted
        return reader

    monkeypatch.setattr(storetasks, "peek", counting)
    status, out, err = run(capsys, "--store", url, "--status", "failed")
    assert (status, err) == (0, "")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["t7", "t19"]  # as they failed
    assert all("failed: ValueError: boom" in line for line in out.splitlines()[1:])
    # before: the last record of all 30; then the leases (none: no run in flight)
    assert [rows for _, rows in statements] == [2, 0]
    assert statements[1][0] == "SELECT task_id, expires_at FROM leases"
    statements.clear()
    status, out, _ = run(capsys, "--store", url)
    assert status == 0 and len(out.splitlines()) == tasks + 1
    assert [rows for _, rows in statements] == [tasks, 0]  # before: the rows, then their records
    statements.clear()
    status, out, _ = run(capsys, "--store", url, "--json", "--status", "failed")
    assert status == 0 and [json.loads(line)["id"] for line in out.splitlines()] == ["t7", "t19"]
    assert [rows for _, rows in statements] == [2]


@pytest.mark.parametrize("status", ["failed", None])
@pytest.mark.parametrize("read", ["listing", "whole"])
def test_a_task_s_last_record_is_looked_up_by_the_records_key_not_a_scan(
    tmp_path: Path, status: str | None, read: str
) -> None:
    """The SQLite statements reading the listed tasks with their last records (the
    table's, and ``--json``'s) find each record by the records' key (task id, seq): the
    tasks are scanned (their status filtered), the records never (before: every record
    read, for a window over them all).  For a whole listing too (no filter): SQLite's
    planner scanned every record there, each looked up in the tasks (1.1 s of 1,000,000
    records, 0.5 s the tasks first: a ``LEFT`` or ``CROSS JOIN`` keeps that order)."""
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        _large(store, 3, 2, {1})
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("DELETE FROM records WHERE task_id = 't2'")  # a task with none
    reader = peek_sqlite(str(path))
    statements: list[tuple[str, Any]] = []
    query = reader._query

    def recorded(statement: str, parameters: Any) -> list[Any]:
        statements.append((statement, parameters))
        return query(statement, parameters)

    reader._query = recorded
    try:
        found = {
            row.id: last and last.outcome.value
            for row, last in getattr(reader, read)(status=status)
        }
    finally:
        reader.close()
    assert found == ({"t1": "failed"} if status else {"t0": "ok", "t1": "failed", "t2": None})
    ((statement, parameters),) = statements
    with contextlib.closing(sqlite3.connect(path)) as connection:
        explained = connection.execute(f"EXPLAIN QUERY PLAN {statement}", parameters)
        plan = " | ".join(row[-1] for row in explained)
    assert "SCAN t" in plan and "SCAN r" not in plan and "SCAN m" not in plan, plan
    assert "SEARCH r USING PRIMARY KEY (task_id=? AND seq=?)" in plan, plan


def test_a_listing_words_each_schedule_once_and_each_row_as_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The SCHEDULE column's text is worked out once per schedule the rows share (a cron's
    words cost more than the rest of its row; before: once a row, 29 here), and each
    row's cells are the ones it has listed alone, an unreadable row's too."""
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        for n in range(30):
            schedule = (NIGHTLY, "*/5 * * * *", FixedRate(60))[n % 3]
            scheduler.schedule(f"job {n}", jobs.noop, schedule, id=f"t{n}")
        scheduler.shutdown()
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE tasks SET definition = '[]' WHERE id = 't4'")
    worded: list[object] = []

    def counted(schedule: Any) -> str:
        worded.append(schedule)
        return words(schedule)

    words = storetasks._schedule
    monkeypatch.setattr(storetasks, "_schedule", counted)
    status, out, err = run(capsys, "--store", f"sqlite:{path}")
    assert (status, err) == (0, "")
    assert len(worded) == 3 and len(out.splitlines()) == 31
    reader = peek_sqlite(str(path))
    try:
        alone = [storetasks._cells(reader.tasks(f"t{n}")[0], None, words) for n in range(30)]
        listed = [storetasks._cells(row, None, storetasks._Described()) for row in reader.tasks()]
    finally:
        reader.close()
    assert listed == alone
    assert alone[4][2:4] == ("unreadable", "task t4: its stored definition is invalid: Va...")
    assert {cells[3] for cells in alone} - {alone[4][3]} == {
        "At 03:00 (UTC)", "Every 5 minutes (UTC)", "Every 60 s"
    }  # fmt: skip


@pytest.mark.parametrize(
    "instant",
    [0.0, 1.8e9, 1.8e9 + 0.9999994, 1.8e9 + 0.9999996, -1.0, -3.0e10, -3.1e10, -6.0e10,
     253402300799.0, -62135596800.0],
)  # fmt: skip
def test_next_run_is_the_text_every_printed_instant_has(instant: float) -> None:
    """NEXT RUN is written by ``isoformat`` (half ``strftime``'s cost), as
    ``clock.dated`` writes every instant printed for people: at a second's last
    microsecond (rounded up), before 1970, and before the year 1000 (four digits, where
    glibc's ``strftime`` writes such a year without zeros)."""
    from lldsched.clock import dated, utc_datetime

    assert storetasks._when(instant) == dated(utc_datetime(instant), "%Y-%m-%d %H:%M:%S")


def test_a_next_run_past_year_9999_is_listed_as_the_panel_lists_it_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fixed rate that runs at the end of year 9999 is next due past it (the threaded
    runtime keeps it due there, never reached): the table and ``show`` list it as the
    control panel does (``after 9999``), ``--json`` gives its number.
    The whole listing ended in ``OverflowError: date value out of range``."""
    from lldsched.clock import LATEST
    from lldsched.testing import Stepper

    path = tmp_path / "tasks.db"
    store = SqliteTaskStore(str(path))
    scheduler = Scheduler(store=store, clock=FakeClock(LATEST - 90.0))
    task = scheduler.schedule("tick", jobs.noop, FixedRate(60))
    with Stepper(scheduler) as steps:
        steps.advance(30.0)
        steps.advance(30.0)
    store.close()
    assert task.next_run_at is not None and task.next_run_at > LATEST
    status, out, err = run(capsys, "--store", f"sqlite:{path}")
    assert (status, err) == (0, "")
    assert "  Every 60 s  after 9999  " in out.splitlines()[1]
    status, out, err = run(capsys, "--store", f"sqlite:{path}", "show", task.id)
    assert (status, err) == (0, "")
    assert "  next run    after 9999" in out.splitlines()
    status, out, err = run(capsys, "--store", f"sqlite:{path}", "--json")
    assert (status, err) == (0, "")
    assert json.loads(out)["next_run_at"] == task.next_run_at


@pytest.mark.parametrize("enabled", [True, False])
def test_a_listing_leaves_the_cyclic_collector_as_it_found_it(
    enabled: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The collector is off while the rows are read and printed (a sixth of a large
    table's time), and as it was after: on again, or still off, failed listing too."""
    import gc

    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        _large(store, 2, 1, set())
    seen: list[bool] = []
    listed = storetasks._list

    def watched(*args: Any) -> int:
        seen.append(gc.isenabled())
        return listed(*args)

    monkeypatch.setattr(storetasks, "_list", watched)
    (gc.enable if enabled else gc.disable)()
    try:
        status, out, _ = run(capsys, "--store", f"sqlite:{path}")
        assert (status, len(out.splitlines()), seen) == (0, 3, [False])
        assert gc.isenabled() is enabled
        with contextlib.closing(sqlite3.connect(path)) as connection, connection:
            connection.execute("DROP TABLE records")
        status, _, err = run(capsys, "--store", f"sqlite:{path}")
        assert status == 2 and "records" in err, err
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_a_store_url_of_four_slashes_is_read_and_acted_on(
    capsys: pytest.CaptureFixture[str], sqlite_file: Path
) -> None:
    """SQLAlchemy's absolute form, ``sqlite:////srv/jobs.db`` (the one SqliteTaskStore's
    own refusal of a URL names as ``/srv/jobs.db``), left ``//srv/jobs.db``: the verbs
    worked, and every read failed, "invalid uri authority: srv", the read-only URI taking
    the path's first folder for a host."""
    url = f"sqlite:///{sqlite_file}"  # three slashes and the absolute path's own: four
    assert url.startswith("sqlite:////")
    for argv in ([], ["show", "nightly"], ["--status", "failed"]):
        status, out, err = run(capsys, "--store", url, *argv)
        assert (status, err) == (0, ""), err
        assert ("nightly" if argv != ["--status", "failed"] else "sync") in out
    assert run(capsys, "--store", url, "resume", "report")[:2] == (0, "task report: resumed\n")
    assert statuses(sqlite_file)["report"] == "scheduled"


def dependent_store(tmp_path: Path, jobs: ModuleType, *, upstream: str) -> Path:
    """A store file whose ``load`` depends on ``extract``, which is ``upstream``
    ("failed": its run failed for good; "cancelled"), so ``load`` is FAILED waiting."""
    path = tmp_path / "pipeline.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        log = EventLog()
        scheduler.add_listener(log)
        action = jobs.fails if upstream == "failed" else jobs.noop
        delay = 0 if upstream == "failed" else 3600
        scheduler.schedule(
            "extract", action, OneTime(delay=delay), id="extract", retry=RetryPolicy(max_attempts=1)
        )
        scheduler.schedule("load", jobs.noop, OneTime(0), id="load", depends_on=["extract"])
        scheduler.start()
        if upstream == "cancelled":
            scheduler.cancel("extract")
        assert log.wait_for(status_is("load", TaskStatus.FAILED), timeout=30)
        scheduler.shutdown()
    return path


@pytest.mark.parametrize(
    ("upstream", "advice"),
    [
        ("failed", "redrive extract first, then load"),
        (
            "cancelled",
            "extract will not run again: register load again without it "
            "(replace_existing=True), or remove load",
        ),
    ],
)
def test_redrive_of_a_dependent_whose_upstream_is_dead_is_refused_naming_it(
    tmp_path: Path,
    code: tuple[ModuleType, Path],
    capsys: pytest.CaptureFixture[str],
    upstream: str,
    advice: str,
) -> None:
    """Before, ``redrive load`` said "task load: redriven: due now" and exited 0, and the
    service's next look at it failed it again at once, with the same UpstreamFailed
    (docs/decisions/dependencies.md, "A dead upstream fails its dependents")."""
    path = dependent_store(tmp_path, code[0], upstream=upstream)
    before = statuses(path)
    assert before == {"extract": upstream, "load": "failed"}
    assert run(capsys, "--store", f"sqlite:{path}", "redrive", "load") == (
        2,
        "",
        f"error: task load waits for its upstream extract, which is {upstream}: redriven, "
        f"it would fail again at once; {advice}; nothing was changed\n",
    )
    assert statuses(path) == before
    if upstream == "failed":
        assert run(capsys, "--store", f"sqlite:{path}", "redrive", "extract")[:2] == (
            0, "task extract: redriven: due now\n"
        )  # fmt: skip
        assert run(capsys, "--store", f"sqlite:{path}", "redrive", "load")[:2] == (
            0, "task load: redriven: due now\n"
        )  # fmt: skip
