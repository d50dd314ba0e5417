"""``python -m lldsched tasks remove ID`` of a task the command's environment cannot load.

After a rollback the newer release's task stays in a shared store, due, and no process
still running can load it; every start warns of it.  Before, ``remove`` was refused as
every verb on such a task ("run the command where the service's code imports"), an
environment that no longer exists: the operator's one tool could not take it out.  A
removal needs none of the task's code: it is deleted unloaded, its records with it, unless
a task depends on it (refused, nothing changed, as the runtime's ``remove``).  The other
verbs are still refused by name.  On a shared SQLite file and on the session's PostgreSQL
server, the command run as an operator's shell runs it: a process of its own, without the
jobs' code on its path.
"""

from __future__ import annotations

import importlib
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from lldsched import FixedRate, Scheduler, SqliteTaskStore
from lldsched.errors import TaskNotFoundError
from lldsched.stores.peek import Peek
from lldsched.stores.postgres.peek import peek_postgres
from lldsched.stores.sqlite.peek import peek_sqlite
from tests.test_cli_tasks import cli

if TYPE_CHECKING:
    from lldsched.stores.postgres import PostgresTaskStore

JOBS = """
def cleanup():
    return "cleaned"

def report():
    return "reported"
"""


@pytest.fixture
def newer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The newer release's jobs: a module this process imports and the command's does not
    (rolled back, no release still running has it)."""
    folder = tmp_path / "newer"
    folder.mkdir()
    name = f"newer_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(JOBS)
    monkeypatch.syspath_prepend(str(folder))
    yield importlib.import_module(name)
    sys.modules.pop(name, None)


Opener = Callable[[], "SqliteTaskStore | PostgresTaskStore"]


@pytest.fixture(params=["sqlite", "postgres"])
def engine(
    request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[str, Opener, Callable[[], Peek]]:
    """The store's ``--store`` value, an opener of it shared, and a reader as the command's."""
    if request.param == "sqlite":
        path = tmp_path / "shared.db"
        return (
            f"sqlite:{path}",
            lambda: SqliteTaskStore(path, shared=True),
            lambda: peek_sqlite(str(path)),
        )
    from lldsched.stores.postgres import PostgresTaskStore

    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn, lambda: PostgresTaskStore(dsn), lambda: peek_postgres(dsn)


def ids(reader: Peek) -> list[str]:
    try:
        return [row.id for row in reader.tasks()]
    finally:
        reader.close()


def registered(opener: Opener, newer: ModuleType, *, depends_on: list[str]) -> None:
    """The newer release's two tasks, ``cleanup`` and ``report`` (``report`` depending on
    ``depends_on``), registered by a process of it that then stops."""
    with opener() as store:
        scheduler = Scheduler(store=store)
        scheduler.schedule("cleanup", newer.cleanup, FixedRate(3600), id="cleanup")
        scheduler.schedule(
            "report", newer.report, FixedRate(3600), id="report", depends_on=depends_on
        )
        scheduler.shutdown()


def test_remove_deletes_a_task_whose_code_imports_nowhere_here(
    engine: tuple[str, Opener, Callable[[], Peek]], newer: ModuleType
) -> None:
    given, opener, reader = engine
    registered(opener, newer, depends_on=[])
    done = cli("--store", given, "pause", "cleanup")  # still refused: it needs the task
    assert done.returncode == 2
    assert "cannot be loaded here" in done.stderr
    assert "or remove the task (`tasks --store URL remove cleanup`)" in done.stderr
    done = cli("--store", given, "remove", "cleanup")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.startswith("task cleanup: removed, unloaded (it cannot be loaded here: ")
    assert f"No module named '{newer.__name__}'" in done.stdout
    assert ids(reader()) == ["report"]
    with opener() as store:  # a process of the newer release, started again: it is gone
        scheduler = Scheduler(store=store)
        try:
            with pytest.raises(TaskNotFoundError):
                scheduler.task("cleanup")
            assert scheduler.task("report").status.value == "scheduled"
        finally:
            scheduler.shutdown()


def test_remove_of_an_unloaded_task_others_depend_on_is_refused_and_changes_nothing(
    engine: tuple[str, Opener, Callable[[], Peek]], newer: ModuleType
) -> None:
    given, opener, reader = engine
    registered(opener, newer, depends_on=["cleanup"])
    done = cli("--store", given, "remove", "cleanup")
    assert (done.returncode, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    assert line == (
        "error: cannot remove 'cleanup': report depends on it; remove them first, or "
        "register them again without it; nothing was changed"
    )
    assert ids(reader()) == ["cleanup", "report"]


def tick() -> str:
    return "tick"


def test_a_verb_on_a_task_registered_from_a_scripts_main_says_so_and_offers_no_remove(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service run as ``python service.py`` stores its actions as ``__main__:tick``,
    which no other process imports (this command's ``__main__`` is lldsched's).  The
    refusal said to run the command where the service's code imports, then (with
    ``remove`` taking out unloadable tasks) to remove the task "if no release still
    running has its code": a running service's live job.  It says what is wrong instead."""
    main = sys.modules["__main__"]
    monkeypatch.setattr(tick, "__module__", "__main__")
    monkeypatch.setattr(main, "tick", tick, raising=False)
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        scheduler.schedule("tick", tick, FixedRate(2), id="job.tick")
        scheduler.shutdown()
    done = cli("--store", f"sqlite:{path}", "pause", "job.tick")
    assert (done.returncode, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: task 'job.tick' cannot be loaded here (")
    assert "its action was registered from the `__main__` of the service's own process" in line
    assert "define the jobs in a module the script imports" in line
    assert "remove" not in line and line.endswith("; nothing was changed")
    assert ids(peek_sqlite(str(path))) == ["job.tick"]
