"""Upgrade day (docs/UPGRADING.md): a store written by the previous deploy opened by the
new code, on real SQLite files and on the tests' PostgreSQL server.

Each deploy's code is a module written to a directory on ``sys.path`` and imported
afresh (bytecode off, so a rewrite in the same second is read again): a function
renamed with an alias kept, then the alias gone; a custom schedule whose fields
changed; a signature that changed; definitions written by a newer lldsched; tasks
the new code no longer registers.
"""

from __future__ import annotations

import importlib
import itertools
import json
import logging
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

import pytest

from lldsched import (
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Overlap,
    Priority,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    StoreError,
)
from lldsched.coordination import Change
from lldsched.persistence import Task, TaskSnapshot
from lldsched.policies import Misfire, MisfirePolicy, RetryPolicy
from lldsched.stores import codec
from lldsched.stores.postgres.tables import SCHEMA_VERSION
from lldsched.stores.unreadable import Unreadable

if TYPE_CHECKING:
    from lldsched.persistence import TaskStore
    from lldsched.stores.postgres import PostgresTaskStore

    # What a shared store's process reads in these tests (its feed, the rows it left
    # out, its claims, a row, its records): both stores, so mypy checks every call.
    SharedStore = SqliteTaskStore | PostgresTaskStore

_names = itertools.count()


class Deploy(Protocol):
    def __call__(self, source: str, *, load: bool = True) -> ModuleType: ...


V1 = """
def report(who="ops"):
    return f"report for {who}"

def cleanup():
    return "clean"
"""
V2_ALIAS = """
def daily_report(who="ops"):
    return f"daily report for {who}"

report = daily_report  # the old name, kept for one release

def cleanup():
    return "clean"
"""
V3 = """
def daily_report(who="ops"):
    return f"daily report for {who}"

def cleanup():
    return "clean"
"""


@pytest.fixture
def deploy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Deploy]:
    """``deploy(source)``: this deploy's jobs module (one name per test), imported afresh
    (``load=False``: only written, for a module that raises when imported)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    name = f"upgrade_jobs_{next(_names)}"

    def install(source: str, *, load: bool = True) -> ModuleType:
        (tmp_path / f"{name}.py").write_text(source)
        sys.modules.pop(name, None)
        importlib.invalidate_caches()
        return importlib.import_module(name) if load else ModuleType(name)

    yield install
    sys.modules.pop(name, None)


def definitions(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as connection:
        return dict(connection.execute("SELECT id, definition FROM tasks"))


def start(store: TaskStore, jobs: ModuleType, action: str = "report") -> Simulation:
    """A deploy's start: the store restored, its jobs registered by id."""
    sim = Simulation(start=1_000.0, store=store)
    sim.schedule("report", FixedRate(3600), action=getattr(jobs, action), id="report",
                 replace_existing=True)  # fmt: skip
    return sim


# -- a renamed function, an alias kept for one release -----------------------------------


def test_an_alias_kept_for_a_rename_has_the_stored_path_rewritten_so_it_can_go(
    tmp_path: Path, deploy: Deploy, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tasks.db"
    jobs = deploy(V1)
    with SqliteTaskStore(path) as store:
        start(store, jobs).run_for(1)
    assert json.loads(definitions(path)["report"])["action"] == f"{jobs.__name__}:report"

    jobs = deploy(V2_ALIAS)  # renamed; the alias imports the new function
    with caplog.at_level(logging.INFO, logger="lldsched"), SqliteTaskStore(path) as store:
        sim = start(store, jobs, "daily_report")
        assert sim.task("report").run_count == 1  # history kept, same task
        assert sim.orphans() == []
    stored = json.loads(definitions(path)["report"])["action"]
    assert stored == f"{jobs.__name__}:daily_report"  # before: still ...:report
    assert any(
        "task report in" in m and f"{jobs.__name__}:report -> {jobs.__name__}:daily_report" in m
        for m in caplog.messages
    )

    jobs = deploy(V3)  # the alias gone in the next release: the store still opens
    with SqliteTaskStore(path) as store:
        assert start(store, jobs, "daily_report").task("report").run_count == 1


def test_a_retry_policy_class_renamed_with_an_alias_is_stored_under_its_new_path(
    deploy: Deploy,
) -> None:
    jobs = deploy(
        "from lldsched import RetryPolicy\n\n"
        "class Patient(RetryPolicy):\n    pass\n\n"
        "Careful = Patient  # its old name, kept for one release\n"
    )
    task = Task("t", "t", len, FixedRate(60), Priority.NORMAL, jobs.Patient(max_attempts=5), None)
    current = codec.encode_task(task)
    stored = current.replace(f'"{jobs.__name__}:Patient"', f'"{jobs.__name__}:Careful"')
    assert stored != current
    restored = codec.decode_task("t", stored)
    assert codec.moved_paths(restored, stored) == (
        current,
        [f"{jobs.__name__}:Careful -> {jobs.__name__}:Patient"],
    )
    assert codec.moved_paths(restored, current) is None  # its own path: nothing to write


def test_a_function_renamed_without_an_alias_refuses_the_store_naming_task_and_path(
    tmp_path: Path, deploy: Deploy
) -> None:
    path = tmp_path / "tasks.db"
    jobs = deploy(V1)
    with SqliteTaskStore(path) as store:
        start(store, jobs).run_for(1)
    before = definitions(path)
    deploy(V3)
    with SqliteTaskStore(path) as store, pytest.raises(StoreError) as refused:
        store.load_all()
    message = str(refused.value)
    assert f"task report: '{jobs.__name__}:report'" in message
    assert "an alias of a renamed one will do" in message
    assert definitions(path) == before  # untouched


def test_on_a_shared_store_a_function_renamed_without_an_alias_is_taken_over_by_its_id(
    tmp_path: Path, deploy: Deploy, caplog: pytest.LogCaptureFixture
) -> None:
    """What UPGRADING.md says a shared store does at a rename without an alias: no
    refusal (another process may run the old release), one WARNING naming the task and
    the path, and the registration by id takes it over, its history kept."""
    path = tmp_path / "tasks.db"
    jobs = deploy(V1)
    with SqliteTaskStore(path) as store:
        start(store, jobs).run_for(1)
    jobs = deploy(V3)  # renamed, no alias
    with (
        caplog.at_level(logging.INFO, logger="lldsched"),
        SqliteTaskStore(path, shared=True) as store,
    ):
        scheduler = Scheduler(store=store)
        assert store.unloaded() == ["report"]
        scheduler.schedule("report", jobs.daily_report, FixedRate(3600), id="report",
                           replace_existing=True)  # fmt: skip
        assert scheduler.task("report").run_count == 1  # its history kept
        scheduler.shutdown()
    assert json.loads(definitions(path)["report"])["action"] == f"{jobs.__name__}:daily_report"
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.name == "lldsched.store"
    assert "task report" in warning.getMessage()
    assert f"'{jobs.__name__}:report'" in warning.getMessage()


def test_a_module_that_fails_to_import_at_restore_names_each_task_and_the_error(
    tmp_path: Path, deploy: Deploy
) -> None:
    path = tmp_path / "tasks.db"
    jobs = deploy(V1)
    with SqliteTaskStore(path) as store:
        start(store, jobs).run_for(1)
    deploy('raise RuntimeError("DATABASE_URL is not set")\n', load=False)
    with SqliteTaskStore(path) as store, pytest.raises(StoreError) as refused:
        store.load_all()
    assert f"cannot import module '{jobs.__name__}'" in str(refused.value)
    assert "RuntimeError('DATABASE_URL is not set')" in str(refused.value)


# -- a changed signature -----------------------------------------------------------------


def test_a_restored_task_whose_arguments_no_longer_fit_is_warned_of_by_id(
    tmp_path: Path, deploy: Deploy, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tasks.db"
    jobs = deploy(V1)
    with SqliteTaskStore(path) as store:
        start(store, jobs).run_for(1)
    deploy("def report(who, when):\n    return who\n\ndef cleanup():\n    return 1\n")
    with caplog.at_level(logging.WARNING, logger="lldsched"), SqliteTaskStore(path) as store:
        Simulation(start=2_000.0, store=store)
    (line,) = [m for m in caplog.messages if "cannot be called as stored" in m]
    assert line.startswith("task report, restored from the store")
    assert "missing a required argument: 'who'" in line
    assert "id='report', replace_existing=True" in line


def test_the_warning_of_arguments_that_no_longer_fit_never_shows_their_values(
    tmp_path: Path, deploy: Deploy, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tasks.db"
    jobs = deploy("def report(who, api_key):\n    return who\n\ndef cleanup():\n    return 1\n")
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=1_000.0, store=store)
        sim.schedule("report", FixedRate(3600), action=jobs.report, id="report",
                     args=("s3cr3t-token",), kwargs={"api_key": "k3y"})  # fmt: skip
    deploy("def report():\n    return 1\n\ndef cleanup():\n    return 1\n")
    with caplog.at_level(logging.WARNING, logger="lldsched"), SqliteTaskStore(path) as store:
        Simulation(start=2_000.0, store=store)
    (line,) = [r for r in caplog.records if "cannot be called as stored" in r.getMessage()]
    assert (line.name, line.__dict__["task_id"]) == ("lldsched.store", "report")
    assert "s3cr3t-token" not in line.getMessage() and "k3y" not in line.getMessage()
    assert "1 positional argument and the keywords 'api_key'" in line.getMessage()


class _Unhashable:
    """A callable object with no hash (as a dataclass with ``eq=True`` has none)."""

    __hash__ = None  # type: ignore[assignment]

    def __call__(self) -> None:
        return None


def test_a_task_whose_action_is_an_unhashable_object_is_restored_and_runs() -> None:
    # The check of stored calls keeps the call shapes that fitted (a batch of many
    # tasks of one action parses its signature once); an unhashable action has no shape
    # to keep and is checked each time, not refused.
    store = InMemoryTaskStore()
    Simulation(start=1_000.0, store=store).schedule(
        "job", FixedRate(60), action=_Unhashable(), id="job"
    )
    sim = Simulation(start=1_030.0, store=store)
    assert [task.id for task in sim.tasks()] == ["job"]
    sim.run_for(120)  # the slot at 1,000 s (within grace), then 1,060 s and 1,120 s
    assert [(r.slot, r.outcome.value) for r in sim.records()] == [
        (1_000.0, "ok"), (1_060.0, "ok"), (1_120.0, "ok"),
    ]  # fmt: skip


def test_ids_of_ones_own_are_restored_and_new_ids_go_on_after_the_default_ones() -> None:
    # "task-x" and "job-7" are no ids of the default generator's form: restored as they
    # are, they leave it alone; it goes on after the highest "task-N" restored.
    store = InMemoryTaskStore()
    first = Simulation(start=1_000.0, store=store)
    for name, task_id in [("a", "task-x"), ("b", "job-7"), ("c", None)]:
        first.schedule(name, FixedRate(60), id=task_id)
    sim = Simulation(start=1_000.0, store=store)
    assert sorted(task.id for task in sim.tasks()) == ["job-7", "task-1", "task-x"]
    assert sim.schedule("d", FixedRate(60)).id == "task-2"


def test_a_store_of_ids_of_ones_own_only_leaves_the_first_new_id_task_1() -> None:
    # No "task-N" restored: the default generator starts where a fresh one does.
    store = InMemoryTaskStore()
    first = Simulation(start=1_000.0, store=store)
    for name, task_id in [("a", "task-x"), ("b", "job-7")]:
        first.schedule(name, FixedRate(60), id=task_id)
    sim = Simulation(start=1_000.0, store=store)
    assert sorted(task.id for task in sim.tasks()) == ["job-7", "task-x"]
    assert sim.schedule("c", FixedRate(60)).id == "task-1"


# -- a custom schedule changed -----------------------------------------------------------

EVERY = """
from lldsched.stores.codec import register_schedule

class Every:
    def __init__(self, seconds{extra}):
        self.seconds = seconds
    def first_run(self, now):
        return now
    def next_run(self, record, now):
        return record.slot + self.seconds
    def __eq__(self, other):
        return type(other) is Every and other.seconds == self.seconds

def tick():
    return 1

register_schedule("Every{name}", Every, lambda s: {{"seconds": s.seconds{field}}},
                  lambda d: Every(d["seconds"]{read}))
"""


def test_a_custom_schedule_whose_fields_changed_is_refused_naming_its_type_and_fields(
    tmp_path: Path, deploy: Deploy
) -> None:
    path = tmp_path / "tasks.db"
    kind = f"Every{next(_names)}"
    jobs = deploy(EVERY.format(extra="", name=kind[5:], field="", read=""))
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=0.0, store=store)
        sim.schedule("tick", jobs.Every(60), action=jobs.tick, id="tick")
    deploy(
        EVERY.format(extra=", offset=0", name=kind[5:], field=', "offset": 0', read=', d["offset"]')
    )
    with SqliteTaskStore(path) as store, pytest.raises(StoreError) as refused:
        store.load_all()
    assert (
        f"task tick: schedule {kind!r} cannot be rebuilt from the stored fields "
        "{'seconds': 60}: its from_dict (registered with register_schedule) raised "
        "KeyError('offset')"
    ) in str(refused.value)


# -- a definition written by a newer lldsched (a downgrade) ------------------------------


@pytest.mark.parametrize(
    ("where", "edit"),
    [
        ("the definition", lambda d: d.update(deadline=30)),
        ("its misfire policy", lambda d: d["misfire"].update(window=5)),
        ("its retry policy", lambda d: d["retry"].update(cap=5)),
        ("schedule 'FixedRate'", lambda d: d["schedule"].update(anchor=0)),
    ],
)
def test_a_field_this_lldsched_does_not_know_is_refused_never_dropped(
    tmp_path: Path, where: str, edit: Callable[[dict[str, object]], None]
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        Simulation(start=0.0, store=store).schedule(
            "job", FixedRate(60), action=len, args=["x"], id="job",
            misfire=MisfirePolicy(Misfire.SKIP),
        )  # fmt: skip
    document = json.loads(definitions(path)["job"])
    edit(document)  # what a newer lldsched wrote
    newer = json.dumps(document)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE tasks SET definition = ?", (newer,))
    with SqliteTaskStore(path) as store, pytest.raises(StoreError) as refused:
        store.load_all()
    assert f"task job: {where} has fields this lldsched does not know" in str(refused.value)
    assert "upgrade lldsched" in str(refused.value)
    assert definitions(path) == {"job": newer}


def test_every_key_a_definition_is_written_with_is_one_decode_knows() -> None:
    """Two definitions: no registration takes ``depends_on`` with ``Overlap.ALLOW``, the
    one overlap policy ``max_instances`` goes with (and a decode refuses it too)."""
    task = Task(
        "t", "t", len, FixedRate(60), Priority.HIGH, RetryPolicy(max_attempts=2),
        timeout=5.0, args=("x",), kwargs={"a": 1}, misfire=MisfirePolicy(Misfire.SKIP),
        isolation="process", depends_on=("u",), overlap=Overlap.BUFFER_ONE,
    )  # fmt: skip
    allowing = task._replace(depends_on=(), overlap=Overlap.ALLOW, max_instances=2)
    texts = [codec.encode_task(task), codec.encode_task(allowing)]
    written = set(json.loads(texts[0])) | set(json.loads(texts[1]))
    assert written == codec._DOCUMENT_FIELDS  # every optional key present
    assert [codec.decode_task("t", text) for text in texts] == [task, allowing]


def test_a_schema_version_newer_than_this_lldsched_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    SqliteTaskStore(path).close()
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="schema version 99, newer than this lldsched"):
        SqliteTaskStore(path)


# -- orphans -----------------------------------------------------------------------------


def test_tasks_the_new_code_no_longer_registers_are_listed_until_removed(
    tmp_path: Path, deploy: Deploy
) -> None:
    path = tmp_path / "tasks.db"
    jobs = deploy(V1)
    with SqliteTaskStore(path) as store:
        sim = start(store, jobs)
        sim.schedule("cleanup", FixedRate(60), action=jobs.cleanup, id="cleanup")
        sim.schedule("once", OneTime(delay=5), action=jobs.cleanup, id="once")
        sim.run_for(10)
    with SqliteTaskStore(path) as store:
        sim = Simulation(start=2_000.0, store=store)
        assert sim.orphans() == ["report", "cleanup", "once"]  # all restored, none named yet
        sim.schedule("report", FixedRate(3600), action=jobs.report, id="report",
                     replace_existing=True)  # fmt: skip
        assert sim.orphans() == ["cleanup", "once"]  # still run as stored
        assert sim.task("cleanup").status.value == "scheduled"
        for task_id in sim.orphans():
            sim.remove(task_id)
        assert sim.orphans() == []
    with SqliteTaskStore(path) as store:
        assert [s.task.id for s in store.load_all()] == ["report"]


def test_the_threaded_scheduler_lists_orphans_too(tmp_path: Path) -> None:
    from lldsched import Scheduler

    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store, Scheduler(store=store) as scheduler:
        scheduler.schedule("a", len, FixedRate(3600, start_delay=3600), args=["x"], id="a")
        scheduler.schedule("b", len, FixedRate(3600, start_delay=3600), args=["x"], id="b")
    with SqliteTaskStore(path) as store, Scheduler(store=store) as scheduler:
        scheduler.schedule("b", len, FixedRate(3600, start_delay=3600), args=["x"], id="b",
                           replace_existing=True)  # fmt: skip
        assert scheduler.orphans() == ["a"]


# -- PostgreSQL --------------------------------------------------------------------------


def test_postgres_rewrites_an_aliased_path_at_load(
    open_store: Callable[..., PostgresTaskStore], deploy: Deploy
) -> None:
    jobs = deploy(V1)
    first = open_store()
    start(first, jobs)
    first.close()
    jobs = deploy(V2_ALIAS)
    second = open_store()
    assert [s.task.action for s in second.load_all()] == [jobs.daily_report]
    deploy(V3)  # the alias gone: a third store still loads the task
    third = open_store()
    assert [s.task.id for s in third.load_all()] == ["report"]


def test_postgres_refuses_an_unknown_definition_field(
    open_store: Callable[..., PostgresTaskStore], postgres_server: object, postgres_dsn: str
) -> None:
    import psycopg

    store = open_store()
    Simulation(start=0.0, store=store).schedule(
        "job", FixedRate(60), action=len, args=["x"], id="job"
    )
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        connection.execute(
            "UPDATE tasks SET definition = jsonb_set(definition::jsonb, '{deadline}', '30')::text"
        )
    with pytest.raises(StoreError, match="task job: the definition has fields this lldsched"):
        open_store().load_all()


def test_a_damaged_definition_another_process_wrote_is_said_and_left_out_of_the_feed(
    open_store: Callable[..., PostgresTaskStore],
    postgres_dsn: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A row whose definition is JSON of another shape than the codec writes (a list:
    damaged, or hand-edited) is one more definition this process cannot load: said once
    at WARNING and left out, the feed's other rows delivered, the row kept.  Before, the
    decoder's AttributeError escaped ``changes()``: the rows written with it were never
    delivered, and every poll raised again."""
    import psycopg

    from tests.test_store_sqlite import snapshot, task

    here, other = open_store(), open_store()
    here.load_all()
    assert here.changes() == []
    other.save(snapshot(task(id="damaged")))
    other.save(snapshot(task(id="fine")))
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        connection.execute("UPDATE tasks SET definition = '[1, 2]' WHERE id = 'damaged'")
    caplog.set_level(logging.WARNING, logger="lldsched")
    assert [change.snapshot.task.id for change in here.changes() if change.snapshot] == ["fine"]
    assert "task damaged" in caplog.text and "it is JSON list, not an object" in caplog.text
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        (kept,) = connection.execute("SELECT definition FROM tasks WHERE id = 'damaged'")
    assert kept == ("[1, 2]",)


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        (
            str(SCHEMA_VERSION + 1),
            f"newer than this lldsched understands ({SCHEMA_VERSION}): it was written by a "
            "newer lldsched",
        ),
        ("0", f"older than this lldsched's ({SCHEMA_VERSION}), and it has no migration for it"),
        ("x", "not a version this lldsched knows"),
    ],
)
def test_postgres_says_whether_a_schema_version_is_newer_or_older(
    open_store: Callable[..., PostgresTaskStore], postgres_dsn: str, stored: str, said: str
) -> None:
    import psycopg

    open_store().close()
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        connection.execute("UPDATE lldsched_meta SET value = %s WHERE name = 'schema'", (stored,))
    with pytest.raises(StoreError) as refused:
        open_store()
    assert f"has store schema version {stored}, " in str(refused.value)
    assert said in str(refused.value)
    assert "It was left untouched" in str(refused.value)


# -- a rolling upgrade: another process's definition this one cannot load ----------------


@pytest.fixture(params=["sqlite", "postgres"])
def two_stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[SharedStore, SharedStore]]:
    """Two stores of one shared set of tasks, as two processes of a rolling upgrade hold."""
    if request.param == "sqlite":
        stores: list[SharedStore] = [
            SqliteTaskStore(tmp_path / "tasks.db", shared=True) for _ in range(2)
        ]
    else:
        open_store = request.getfixturevalue("open_store")
        stores = [open_store(), open_store()]
    yield stores[0], stores[1]
    for store in stores:
        store.close()


def row(store: SharedStore, task_id: str) -> TaskSnapshot:
    """``task_id``'s row in ``store``, which must have one."""
    found = store.get(task_id)
    assert found is not None, f"{store!r} has no row for {task_id!r}"
    return found


def written(change: Change) -> TaskSnapshot:
    """The row ``change`` brings, which must be no removal."""
    assert change.snapshot is not None, f"the change to {change.task_id!r} is a removal"
    return change.snapshot


def test_a_definition_newer_code_wrote_is_said_once_and_its_state_still_followed(
    two_stores: tuple[SharedStore, SharedStore],
    deploy: Deploy,
    make_scheduler: Callable[..., object],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lldsched import Scheduler, TaskStatus

    old_store, new_store = two_stores
    jobs = deploy(V1)
    later = FixedRate(3600, start_delay=3600)
    old = make_scheduler(start=False, store=old_store)
    assert isinstance(old, Scheduler)
    old.schedule("report", jobs.report, later, id="report")
    old.schedule("other", len, later, args=["x"], id="other")
    new = make_scheduler(start=False, store=new_store)
    assert isinstance(new, Scheduler)
    newer = ModuleType(f"upgrade_newer_{next(_names)}")  # only the new release has it
    exec("def daily_report():\n    return 'daily'\n", newer.__dict__)
    monkeypatch.setitem(sys.modules, newer.__name__, newer)
    new.schedule("report", newer.daily_report, later, id="report", replace_existing=True)
    new.schedule("fresh", newer.daily_report, later, id="fresh")
    new.pause("other")
    monkeypatch.setitem(sys.modules, newer.__name__, None)  # ...the old one cannot import it
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        changes = old_store.changes()  # before, PostgreSQL: raised
        assert [(c.task_id, written(c).status) for c in changes] == [
            ("report", TaskStatus.SCHEDULED),  # its state, with the definition the old one has
            ("other", TaskStatus.PAUSED),  # the other changes still come
        ]  # "fresh", which it never had, is left to the processes that can load it
        assert written(changes[0]).task.action is jobs.report
        new.pause("report")
        (change,) = old_store.changes()
        assert (change.task_id, written(change).status) == ("report", TaskStatus.PAUSED)
    said = [m for m in caplog.messages if "with a definition this one cannot load" in m]
    assert len(said) == 2  # once per task and text: the pause wrote the same definition
    assert said[0].startswith("another process wrote task report in ")
    assert f"'{newer.__name__}:daily_report'" in said[0]
    assert "it follows the task's state with the definition it has" in said[0]
    assert "it leaves the task to the processes that can" in said[1]


def test_a_definition_that_loaded_in_between_is_said_again_when_it_fails_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    unreadable = Unreadable("tasks.db")
    error = StoreError("task report: cannot import 'newer:daily_report'")
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        unreadable.failed("report", "v2", error, None)
        unreadable.failed("report", "v2", error, None)  # the same text: said once
        unreadable.read("report")  # it loaded (a deploy rolled back, say)
        unreadable.failed("report", "v2", error, None)  # ...and fails again: said again
    said = [m for m in caplog.messages if "with a definition this one cannot load" in m]
    assert len(said) == 2


def test_a_process_that_cannot_load_a_task_another_wrote_starts_and_leaves_it_alone(
    two_stores: tuple[SharedStore, SharedStore],
    deploy: Deploy,
    make_scheduler: Callable[..., object],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rolled-back (older) process starts on a store the newer release wrote: before,
    the task it cannot load made it refuse the whole store, and the advice offered,
    ``delete(task_id)``, removed a task the newer processes run."""
    from lldsched import Scheduler, TaskNotFoundError, TaskStatus, ValidationError

    old_store, new_store = two_stores
    jobs = deploy(V1)
    later = FixedRate(3600, start_delay=3600)
    new = make_scheduler(start=False, store=new_store)
    assert isinstance(new, Scheduler)
    newer = ModuleType(f"upgrade_newer_{next(_names)}")  # only the new release has it
    exec("def daily_report():\n    return 'daily'\n", newer.__dict__)
    monkeypatch.setitem(sys.modules, newer.__name__, newer)
    new.schedule("report", newer.daily_report, later, id="report")
    new.schedule("cleanup", jobs.cleanup, later, id="cleanup")
    new.pause("report")
    row_before = row(new_store, "report")
    monkeypatch.setitem(sys.modules, newer.__name__, None)  # ...the old one cannot import it
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        old = make_scheduler(start=False, store=old_store)  # before: StoreError
        assert isinstance(old, Scheduler)
        assert [task.id for task in old.tasks()] == ["cleanup"]  # the task it can load
        with pytest.raises(TaskNotFoundError):
            old.task("report")  # left to the processes that can load it
        assert old_store.unloaded() == ["report"]
        new.resume("report")
        new.pause("report")
        old.pause("cleanup")  # a verb: the feed read, the same text not said again
        with pytest.raises(ValidationError, match="already registered by another scheduler"):
            old.schedule("report", jobs.report, later, id="report")  # no replace: refused
    said = [r for r in caplog.records if "with a definition this one cannot load" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING]  # once per task per process
    assert "it leaves the task to the processes that can" in said[0].getMessage()
    assert "or registers the id itself with replace_existing=True" in said[0].getMessage()
    monkeypatch.setitem(sys.modules, newer.__name__, newer)
    after = row(new_store, "report")
    assert after.task == row_before.task  # neither deleted nor rewritten by the old one
    assert after.status is TaskStatus.PAUSED

    # A rollback: the old release registers its own definition with replace_existing.
    monkeypatch.setitem(sys.modules, newer.__name__, None)
    with pytest.raises(ValidationError, match="<lambda>"):  # bad input: nothing taken over
        old.schedule("report", lambda: 1, later, id="report", replace_existing=True)
    with pytest.raises(TaskNotFoundError):
        old.task("report")
    assert old_store.unloaded() == ["report"]
    task = old.schedule("report", jobs.report, later, id="report", replace_existing=True)
    assert task.action is jobs.report
    assert task.status is TaskStatus.PAUSED  # the row's state kept, as any replacement
    assert old_store.unloaded() == []
    (change,) = [c for c in new_store.changes() if c.task_id == "report"]
    assert written(change).task.action is jobs.report  # the others follow it
    assert written(change).status is TaskStatus.PAUSED


def test_a_process_never_claims_a_task_it_left_out_so_its_own_tasks_still_run(
    two_stores: tuple[SharedStore, SharedStore],
    deploy: Deploy,
    make_scheduler: Callable[..., object],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before, the claim handed this process the due slots of a task it cannot load,
    which it gave back: with as many of those due as it had room for, the process ran
    none of its own, and the task waited for a wake at which this one did not claim."""
    import time

    from lldsched import Scheduler

    old_store, new_store = two_stores
    jobs = deploy(V1)
    new = make_scheduler(start=False, store=new_store)
    assert isinstance(new, Scheduler)
    newer = ModuleType(f"upgrade_newer_{next(_names)}")  # only the new release has it
    exec("def daily_report():\n    return 'daily'\n", newer.__dict__)
    monkeypatch.setitem(sys.modules, newer.__name__, newer)
    new.schedule("report", newer.daily_report, FixedRate(3600), id="report")  # due first
    new.schedule("cleanup", jobs.cleanup, FixedRate(3600, start_delay=0.001), id="cleanup")
    monkeypatch.setitem(sys.modules, newer.__name__, None)  # ...the old one cannot import it
    make_scheduler(start=False, store=old_store)  # not started: the test claims by hand
    assert old_store.unloaded() == ["report"]
    later = time.time() + 60
    claims = old_store.claim(now=later, limit=1)
    assert [claim.task_id for claim in claims] == ["cleanup"]  # before: ["report"]
    assert old_store.claim(now=later, limit=5) == []
    claims = new_store.claim(now=later, limit=5)
    assert [claim.task_id for claim in claims] == ["report"]  # for the ones that can


# -- a take-over of a finished row: one rule with a replacement of a loaded one ---------


def _finish(scheduler: object, how: str, task_ids: list[str]) -> None:
    """Finish ``task_ids`` (one-off tasks registered on ``scheduler``, not started) as
    ``how`` says: run to success or failure, or cancelled (or only paused)."""
    from lldsched import Scheduler

    assert isinstance(scheduler, Scheduler)
    if how in ("cancelled", "paused"):
        for task_id in task_ids:
            (scheduler.cancel if how == "cancelled" else scheduler.pause)(task_id)
        return
    scheduler.start()
    assert scheduler.wait_idle(timeout=10.0), "the one-off runs did not finish within 10 s"


@pytest.mark.parametrize("retain_finished", [None, 0])
@pytest.mark.parametrize("how", ["succeeded", "failed", "cancelled", "paused"])
def test_a_task_taken_over_is_replaced_as_one_loaded_here_is_a_finished_one_included(
    two_stores: tuple[SharedStore, SharedStore],
    deploy: Deploy,
    make_scheduler: Callable[..., object],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    retain_finished: int | None,
) -> None:
    """A rollback's old release registers its one-off jobs with ``replace_existing=True``:
    one the newer release finished stays finished (nothing runs again), whether this
    process could load the newer definition ("loaded") or had left its row out
    ("leftout").  Before, the take-over told the listeners of a registration and of a
    transition the task never made here (SCHEDULED -> FAILED: a dead-letter alert for a
    deploy), and the retention never counted the task finished (it never retired)."""
    from lldsched import EventLog, Scheduler, TaskRetiredError, TaskStatus

    old_store, new_store = two_stores
    jobs = deploy(V1)
    newer = ModuleType(f"upgrade_newer_{next(_names)}")  # only the new release has it
    exec("def daily():\n    return 'daily'\ndef broken():\n    raise RuntimeError('no')\n",
         newer.__dict__)  # fmt: skip
    monkeypatch.setitem(sys.modules, newer.__name__, newer)
    from tests import jobs as loadable  # both releases have these

    new = make_scheduler(start=False, store=new_store, workers=2)
    assert isinstance(new, Scheduler)
    failing = how == "failed"
    once = RetryPolicy(max_attempts=1)
    new.schedule("loaded", loadable.broken if failing else loadable.noop, OneTime(0),
                 id="loaded", retry=once)  # fmt: skip
    new.schedule("leftout", newer.broken if failing else newer.daily, OneTime(0),
                 id="leftout", retry=once)  # fmt: skip
    _finish(new, how, ["loaded", "leftout"])
    finished = {"succeeded": TaskStatus.SUCCEEDED, "failed": TaskStatus.FAILED,
                "cancelled": TaskStatus.CANCELLED, "paused": TaskStatus.PAUSED}[how]  # fmt: skip
    assert {t.id: t.status for t in new.tasks()} == {"loaded": finished, "leftout": finished}
    records = {i: len(new_store.records(i)) for i in ("loaded", "leftout")}
    monkeypatch.setitem(sys.modules, newer.__name__, None)  # ...the old one cannot import it

    events = EventLog()
    old = make_scheduler(start=False, store=old_store, retain_finished=retain_finished,
                         listeners=[events])  # fmt: skip
    assert isinstance(old, Scheduler)
    assert old_store.unloaded() == ["leftout"]
    for task_id in ("loaded", "leftout"):  # the old release's own definition of each
        task = old.schedule(task_id, jobs.report, OneTime(0), id=task_id, replace_existing=True)
        assert task.status is finished
        assert task.action is jobs.report
    assert old_store.unloaded() == []
    old.start()
    assert old.wait_idle(timeout=10.0)
    old.schedule("last", jobs.cleanup, FixedRate(3600, start_delay=3600), id="last")
    assert events.wait_for(lambda e: e.task_id == "last", timeout=10.0)  # all before it too
    retires = retain_finished == 0 and how in ("succeeded", "cancelled")  # FAILED: dead letter
    for task_id in ("loaded", "leftout"):
        if retires:
            with pytest.raises(TaskRetiredError):
                old.task(task_id)
        else:
            assert old.task(task_id).status is finished
        assert (task_id in old.dead_letter()) is failing
        assert len(old_store.records(task_id)) == records[task_id]  # nothing ran
        kept = row(old_store, task_id)
        assert (kept.status, kept.task.action) == (finished, jobs.report)
    heard = {
        task_id: [(e.previous, e.status) for e in events.events if e.task_id == task_id]
        for task_id in ("loaded", "leftout")
    }
    assert heard["leftout"] == heard["loaded"] == [(finished, finished)]  # no transition


# -- a row left out is not tried again until its definition changes --------------------


class _Asked:
    """A finder first on ``sys.meta_path`` that counts the imports of one module, which
    no finder has: each is one attempt to load a definition that names it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname == self.name:
            self.count += 1


def test_a_definition_that_failed_is_tried_again_only_once_its_text_changes(
    two_stores: tuple[SharedStore, SharedStore],
    deploy: Deploy,
    make_scheduler: Callable[..., object],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every change to a row whose definition this process cannot load (each run settled
    elsewhere, each pause) came with another attempt to load it: an import searched for
    along ``sys.path`` per run of a busy task in another process.  Now a definition text
    that failed is not tried again; a new text (another definition written there) is."""
    from lldsched import Scheduler

    old_store, new_store = two_stores
    jobs = deploy(V1)
    later = FixedRate(3600, start_delay=3600)
    old = make_scheduler(start=False, store=old_store)
    assert isinstance(old, Scheduler)
    old.schedule("known", jobs.report, later, id="known")  # followed with this definition
    new = make_scheduler(start=False, store=new_store)
    assert isinstance(new, Scheduler)
    newer = ModuleType(f"upgrade_newer_{next(_names)}")  # only the new release has it
    exec("def daily_report(who='ops'):\n    return who\n", newer.__dict__)
    monkeypatch.setitem(sys.modules, newer.__name__, newer)
    new.schedule("known", newer.daily_report, later, id="known", replace_existing=True)
    new.schedule("leftout", newer.daily_report, later, id="leftout")
    monkeypatch.delitem(sys.modules, newer.__name__)  # ...the old one cannot import it
    asked = _Asked(newer.__name__)
    monkeypatch.setattr(sys, "meta_path", [asked, *sys.meta_path])
    old_store.changes()
    assert old_store.unloaded() == ["leftout"]
    assert asked.count == 2  # one attempt per task
    for _ in range(3):  # other changes to both rows, their definitions as they were
        for verb in (new.pause, new.resume):
            verb("known")
            verb("leftout")
            changes = old_store.changes()
            assert [change.task_id for change in changes] == ["known"]  # state followed
    assert asked.count == 2  # before: 2 more per read of the feed
    monkeypatch.setitem(sys.modules, newer.__name__, newer)
    new.schedule("leftout", newer.daily_report, later, id="leftout", args=["dev"],
                 replace_existing=True)  # fmt: skip  # another definition: tried again
    monkeypatch.delitem(sys.modules, newer.__name__)
    old_store.changes()
    assert asked.count == 3
    assert old_store.unloaded() == ["leftout"]


def test_the_commands_upgrading_md_gives_to_read_a_releases_schema_print_it() -> None:
    """ "Read it in that release ...: ``python -c "from lldsched.stores.sqlite import
    SCHEMA_VERSION; ..."`` (for PostgreSQL, ``MODULE``'s)": the module named for
    PostgreSQL was ``lldsched.stores.postgres.sql``, which has no ``SCHEMA_VERSION``
    (an ImportError for the operator who ran it); it is ``postgres/tables``'s."""
    import re
    import subprocess

    from lldsched.stores.postgres import tables as postgres_tables
    from lldsched.stores.sqlite import schema as sqlite_schema

    text = " ".join((Path(__file__).parent.parent / "docs" / "UPGRADING.md").read_text().split())
    found = re.search(r'`python -c "([^"`]+)"` \(for PostgreSQL, `([\w.]+)`\'s\)', text)
    assert found is not None, "UPGRADING.md lost the command"
    code, postgres_module = found.groups()
    for module, expected in (
        ("lldsched.stores.sqlite", sqlite_schema.SCHEMA_VERSION),
        (postgres_module, postgres_tables.SCHEMA_VERSION),
    ):
        given = code.replace("lldsched.stores.sqlite", module)
        done = subprocess.run(
            [sys.executable, "-c", given], capture_output=True, text=True, timeout=60, check=False
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, f"{expected}\n", ""), module
