"""SqliteTaskStore: the file, the rows, retention, and every way opening it can go wrong."""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Literal

import pytest

from lldsched import (
    CronSchedule,
    ExecutionRecord,
    FakeClock,
    FixedDelay,
    FixedRate,
    InMemoryTaskStore,
    Misfire,
    MisfirePolicy,
    OneTime,
    Overlap,
    OverrunPolicy,
    Priority,
    RetryPolicy,
    ScheduledTask,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    StoreError,
    TaskSnapshot,
    TaskStatus,
    TaskStore,
    ValidationError,
)
from lldsched.importpath import NESTING_LIMIT
from lldsched.persistence import Task
from lldsched.stores import HistoryStore
from lldsched.stores.codec import callable_path, decode_task, encode_task
from lldsched.stores.sqlite import SCHEMA_VERSION
from tests import jobs
from tests.conftest import T0, SchedulerFactory, settle


def task(action: object = jobs.noop, **fields: object) -> Task:
    values: dict[str, object] = {
        "id": "task-1",
        "name": "t",
        "action": action,
        "schedule": FixedRate(60),
        "priority": Priority.NORMAL,
        "retry": RetryPolicy(),
        "timeout": None,
    }
    values.update(fields)
    return Task(**values)  # type: ignore[arg-type]


def snapshot(definition: Task, status: TaskStatus = TaskStatus.SCHEDULED) -> TaskSnapshot:
    return TaskSnapshot(definition, status, T0, 0, 0, 0, None)


def record(task_id: str, n: int) -> ExecutionRecord:
    return ExecutionRecord(task_id, "t", 1, T0 + n, T0 + n, 0, T0 + n, T0 + n + 1, True)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Job:
    @classmethod
    def build(cls) -> None:
        """A classmethod imports back as an equal bound method."""

    def run(self) -> None:
        """A method of an instance does not."""


# -- the file --------------------------------------------------------------------------


def test_a_new_store_is_a_versioned_lldsched_file_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        assert isinstance(store, TaskStore) and isinstance(store, HistoryStore)
        assert len(store) == 0 and store.load_all() == []
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert connection.execute("PRAGMA application_id").fetchone() == (0x6C6C6473,)
    connection.close()


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_a_store_restored_from_a_vacuum_into_copy_is_switched_back_to_wal(
    tmp_path: Path, shared: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # VACUUM INTO (a backup docs/OPERATIONS.md names) writes its copy in rollback-journal
    # mode; a store restored from it stayed so, unsaid: readers blocking its writes.
    path, copy = tmp_path / "tasks.db", tmp_path / "backup.db"
    with SqliteTaskStore(path) as store:
        store.save(snapshot(task(id="kept")), record("kept", 0))
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("VACUUM INTO ?", (str(copy),))
    with contextlib.closing(sqlite3.connect(copy)) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    with (
        caplog.at_level(logging.INFO, logger="lldsched.store"),
        SqliteTaskStore(copy, shared=shared) as store,
    ):
        assert [s.task.id for s in store.load_all()] == ["kept"]
        assert store.records("kept") == [record("kept", 0)]
    with contextlib.closing(sqlite3.connect(copy)) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert [r.getMessage() for r in caplog.records] == [
        f"switched {str(copy)!r} from journal mode 'delete' to WAL"
    ]


def test_every_schedule_and_option_round_trips_through_the_file(tmp_path: Path) -> None:
    definitions = [
        task(id="a", schedule=OneTime(T0 + 5)),
        task(id="b", schedule=OneTime(delay=2.5)),
        task(id="c", schedule=FixedDelay(30, start_delay=1)),
        task(id="d", schedule=FixedRate(60, OverrunPolicy.CATCH_UP, 0.5)),
        task(id="e", schedule=CronSchedule("*/15 9-17 * * 1-5")),
        task(
            id="f",
            action=jobs.note,
            priority=Priority.HIGH,
            retry=RetryPolicy(
                5, initial_backoff=0.5, multiplier=3.0, max_backoff=10.0, jitter=0.25
            ),
            timeout=2.0,
            args=("label",),
            kwargs={"nested": {"list": [1, 2.5, None, True]}},
            misfire=MisfirePolicy(Misfire.RUN_ALL, grace=5, max_catch_up=7),
        ),
        task(id="g", action=None),
        task(id="h", action=print),
        task(id="i", action=Job.build),
        task(id="j", overlap=Overlap.ALLOW, max_instances=3),
        task(id="k", schedule=CronSchedule("0 * * * *"), overlap=Overlap.BUFFER_ONE),
        task(id="l", overlap=Overlap.CANCEL_OTHER),
    ]
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        for definition in definitions:
            store.save(snapshot(definition))
    with SqliteTaskStore(path) as store:
        assert [s.task for s in store.load_all()] == definitions


def test_records_are_kept_per_task_up_to_the_retention_bound(tmp_path: Path) -> None:
    with SqliteTaskStore(tmp_path / "tasks.db", retention=5) as store:
        for task_id in ("a", "b"):
            store.save(snapshot(task(id=task_id)))
        for n in range(40):
            store.save(snapshot(task(id="a")), record("a", n))
        store.save(snapshot(task(id="b")), record("b", 0))
        assert [r.due - T0 for r in store.records("a")] == [35, 36, 37, 38, 39]
        assert [r.task_id for r in store.records()] == ["a"] * 5 + ["b"]
        (kept,) = store._open().execute("SELECT count(*) FROM records").fetchone()
        assert kept <= 5 + 1 + 1  # at most 10% (here: one) over the bound between trims


def test_the_dead_letter_is_the_failed_tasks_in_the_order_they_failed(tmp_path: Path) -> None:
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        for task_id in ("a", "b", "c"):
            store.save(snapshot(task(id=task_id)))
        store.save(snapshot(task(id="c"), TaskStatus.FAILED))
        store.save(snapshot(task(id="a"), TaskStatus.FAILED))
        store.save(snapshot(task(id="c"), TaskStatus.FAILED))  # still failed: keeps its place
        assert store.dead_letter() == ["c", "a"]
        store.save(snapshot(task(id="c"), TaskStatus.SCHEDULED))  # redriven
        assert store.dead_letter() == ["a"]
        store.delete("a")
        assert store.dead_letter() == [] and store.get("a") is None


def test_the_store_is_safe_to_write_from_many_threads(tmp_path: Path) -> None:
    with SqliteTaskStore(tmp_path / "tasks.db", retention=None) as store:

        def write(n: int) -> None:
            for i in range(100):
                store.save(snapshot(task(id=f"t{n}")), record(f"t{n}", i))

        threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert len(store) == 8 and len(store.records()) == 800


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = SqliteTaskStore(tmp_path / "tasks.db")
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.save(snapshot(task()))


# -- what cannot be stored: rejected at schedule time -----------------------------------


def make_closure() -> object:
    def inner() -> None:
        pass

    return inner


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (lambda: None, "has none"),
        (make_closure(), "has none"),
        (functools.partial(jobs.note, "x"), "has none"),
        (Job().run, "does not round-trip"),
    ],
    ids=["lambda", "closure", "partial", "bound-method"],
)
def test_an_action_without_an_import_path_is_rejected_at_schedule_time(
    make_scheduler: SchedulerFactory, clock: FakeClock, tmp_path: Path, action: object, message: str
) -> None:
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = make_scheduler(clock=clock, store=store)
        scheduler.schedule("kept", jobs.noop, FixedRate(60))
        with pytest.raises(ValidationError, match=message):
            scheduler.schedule("job", action, FixedRate(60))  # type: ignore[arg-type]
        assert [t.name for t in scheduler.tasks()] == ["kept"]
        assert [s.task.name for s in store.load_all()] == ["kept"]


@pytest.mark.parametrize(
    ("field", "text"),
    [("id", "report-\udcff.csv"), ("id", "a\x00b"), ("name", "report \udcff"), ("name", "a\x00b")],
    ids=["id-surrogate", "id-nul", "name-surrogate", "name-nul"],
)
def test_an_id_or_name_no_database_keeps_is_refused_naming_it(
    make_scheduler: SchedulerFactory, clock: FakeClock, tmp_path: Path, field: str, text: str
) -> None:
    """An id made from a file name os.listdir decoded with surrogateescape: SQLite's
    driver raised a bare UnicodeEncodeError naming neither the task nor the value (and
    PostgreSQL takes no NUL; SQLite kept one)."""
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = make_scheduler(clock=clock, store=store)
        scheduler.schedule("kept", jobs.noop, FixedRate(60), id="kept")
        name, task_id = ("report", text) if field == "id" else (text, None)
        with pytest.raises(ValidationError) as caught:
            scheduler.schedule(name, jobs.noop, FixedRate(60), id=task_id)
        # an id's is refused before the store sees it, as every unprintable id is
        said = "a task id must be printable" if field == "id" else f"task {field} {text!r} holds a "
        assert str(caught.value).startswith(said) and repr(text) in str(caught.value)
        assert [t.id for t in scheduler.tasks()] == ["kept"]
        assert [s.task.id for s in store.load_all()] == ["kept"]


def register(runtime: Scheduler | Simulation, name: str) -> None:
    """Register a task ``name`` due every minute, on either runtime."""
    if isinstance(runtime, Simulation):
        runtime.schedule(name, FixedRate(60))
    else:
        runtime.schedule(name, jobs.noop, FixedRate(60))


@pytest.mark.parametrize("text", ["report \udcff", "a\x00b"], ids=["surrogate", "nul"])
def test_a_name_no_durable_store_keeps_is_refused_alike_on_every_store_and_runtime(
    tmp_path: Path, text: str
) -> None:
    """A user tries a task on the in-memory store (or the simulation) and deploys it on a
    durable one: the same registration fails the same way on each, as an id over the
    bound does.  Before, the in-memory store and the simulation took the name."""
    said: list[str] = []
    with SqliteTaskStore(tmp_path / "tasks.db") as durable:
        for runtime in (
            Scheduler(store=durable), Scheduler(), Scheduler(store=InMemoryTaskStore()),
            Simulation(workers=1, start=T0),
        ):  # fmt: skip
            register(runtime, "kept")
            with pytest.raises(ValidationError) as caught:
                register(runtime, text)
            assert [t.name for t in runtime.tasks()] == ["kept"]
            said.append(str(caught.value))
            if isinstance(runtime, Scheduler):
                runtime.shutdown()
    assert said[0].startswith(f"task name {text!r} holds a ")
    assert "nothing was registered" in said[0]
    assert said == [said[0]] * 4


@pytest.mark.parametrize(
    "args",
    [(object(),), ((1, 2),), ({1: "int key"},), (float("nan"),)],
    ids=["object", "tuple", "int-key", "nan"],  # stable across processes (pytest-xdist)
)
def test_arguments_that_json_would_change_are_rejected(args: tuple[object, ...]) -> None:
    with pytest.raises(ValidationError, match="JSON keeps unchanged"):
        encode_task(task(action=jobs.note, args=args))


def nested(depth: int) -> list[object]:
    """A list holding a list ... ``depth`` deep (a tree walked into a job's arguments)."""
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_arguments_nested_deeper_than_json_can_write_are_refused_naming_the_task(
    tmp_path: Path, isolation: Literal["thread", "process"]
) -> None:
    # json.dumps and repr raised a bare RecursionError: no task named, no ValidationError.
    # Python 3.13 writes and reads JSON 10,000 deep: this was kept there (and a 3.11
    # node of the same store could not read it); lldsched's own limit refuses it on all.
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        scheduler.schedule("kept", jobs.noop, FixedRate(60), id="kept")
        action = jobs.hang_first_time if isolation == "thread" else "tests.jobs:hang_first_time"
        with pytest.raises(ValidationError) as caught:
            scheduler.schedule(
                "deep", action, FixedRate(60), args=(nested(5000),), isolation=isolation
            )
        said = str(caught.value)
        assert said.startswith("task 'deep': a ")
        assert (
            "got args=([[[...]]],), kwargs=None: they nest 5001 lists and dicts within one "
            "another, more than the 500 a stored or process-isolated call keeps" in said
        )
        assert [t.id for t in scheduler.tasks()] == ["kept"] and len(store) == 1
        scheduler.shutdown()


def restored_from_a_deep_stack(path: Path, frames: int) -> list[ScheduledTask]:
    """The tasks a new scheduler restores from ``path``, built ``frames`` calls deep (an
    application's stack: on Python 3.11 json reads against the same recursion limit)."""
    if frames:
        return restored_from_a_deep_stack(path, frames - 1)
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        restored = scheduler.tasks()
        scheduler.shutdown()
        return restored


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_arguments_at_the_nesting_limit_are_read_back_at_a_restart_one_more_is_refused(
    tmp_path: Path, isolation: Literal["thread", "process"]
) -> None:
    """The limit is lldsched's, the same on every Python: 985 lists deep passed the check
    on Python 3.11 and the restore, a few frames deeper, could not read the store."""
    action = jobs.hang_first_time if isolation == "thread" else "tests.jobs:hang_first_time"
    deepest = nested(NESTING_LIMIT - 1)  # the list given and the ones it holds: 500
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        scheduler.schedule("deep", action, FixedRate(60), id="deep", args=(deepest,),
                           isolation=isolation)  # fmt: skip
        with pytest.raises(ValidationError, match="they nest 501 lists and dicts within"):
            scheduler.schedule("deeper", action, FixedRate(60), args=([deepest],),
                               isolation=isolation)  # fmt: skip
        scheduler.shutdown()
    [restored] = restored_from_a_deep_stack(tmp_path / "tasks.db", frames=200)
    assert restored.id == "deep" and restored.args == (deepest,)


def test_a_task_runs_with_the_kwargs_it_was_registered_with_the_ones_stored(
    tmp_path: Path,
) -> None:
    """The caller's ``kwargs`` dict is copied at registration, as ``args`` is: changed
    afterwards (a dict of defaults updated for the next job), it changes neither what
    the task runs nor what the file keeps.  Before, the task held the caller's dict: it
    ran with the changed value while its row kept the one given, and the next start ran
    that one, the arguments of one job different in memory and on disk."""
    jobs.CALLS.clear()
    clock = FakeClock(T0)
    given = {"label": "erp"}
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store, Scheduler(clock=clock, store=store) as scheduler:
        task = scheduler.schedule(
            "sync", jobs.note, FixedRate(60, start_delay=60), kwargs=given, id="sync"
        )
        given["label"] = "changed"
        clock.advance(60)
        assert scheduler.wait_idle(timeout=5)
        assert task.kwargs == {"label": "erp"}
    with SqliteTaskStore(path) as store:
        [stored] = store.load_all()
    assert stored.task.kwargs == {"label": "erp"}
    assert [label for label, _, _ in jobs.CALLS] == ["erp"]


def test_a_task_s_kwargs_are_read_only_and_a_replacement_changes_them_and_the_row(
    tmp_path: Path,
) -> None:
    """``task.kwargs`` and ``task.definition.kwargs`` are read-only views, as ``task.args``
    is a tuple.  Before, each was the task's own dict: a caller that changed it (a
    dashboard tweaking a label) changed what the next run passed while the store's row
    kept the value registered, and the next start ran that one.  Now the change is
    refused, and a replacement is the way, which writes the row."""
    jobs.CALLS.clear()
    clock = FakeClock(T0)
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store, Scheduler(clock=clock, store=store) as scheduler:
        task = scheduler.schedule(
            "sync", jobs.note, FixedRate(60, start_delay=60), kwargs={"label": "erp"}, id="sync"
        )
        for read in (task.kwargs, task.definition.kwargs):
            assert read == {"label": "erp"}
            with pytest.raises(TypeError):
                read["label"] = "changed"  # type: ignore[index]
        clock.advance(60)
        assert scheduler.wait_idle(timeout=5)
        assert task.kwargs is not None
        scheduler.schedule(
            "sync", jobs.note, FixedRate(60, start_delay=60),
            kwargs={**task.kwargs, "label": "crm"}, id="sync", replace_existing=True,
        )  # fmt: skip
        clock.advance(60)
        assert scheduler.wait_idle(timeout=5)
    with SqliteTaskStore(path) as store:
        [stored] = store.load_all()
    assert stored.task.kwargs == {"label": "crm"}
    assert [label for label, _, _ in jobs.CALLS] == ["erp", "crm"]


def test_a_schedule_type_without_a_registered_form_is_rejected() -> None:
    class Weekly(FixedRate):
        pass

    with pytest.raises(ValidationError, match="register_schedule"):
        encode_task(task(schedule=Weekly(604800)))


def test_callable_paths_name_module_and_qualified_name() -> None:
    assert callable_path(jobs.noop) == "tests.jobs:noop"
    assert callable_path(Job.build) == "tests.test_store_sqlite:Job.build"
    assert callable_path(print) == "builtins:print"


# -- what cannot be loaded: a clear error, and the file untouched ------------------------


def test_a_corrupted_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    path.write_bytes(b"this is not a database, just some bytes " * 200)
    before = digest(path)
    with pytest.raises(StoreError, match="not a readable SQLite database"):
        SqliteTaskStore(path)
    assert digest(path) == before


def test_a_store_with_damaged_pages_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path, retention=None) as store:
        for n in range(200):
            store.save(snapshot(task(id=f"t{n}", name="x" * 200)), record(f"t{n}", n))
    data = bytearray(path.read_bytes())
    page = 4096
    data[2 * page : 4 * page] = b"\xff" * (2 * page)  # scribble over two pages
    path.write_bytes(bytes(data))
    before = digest(path)
    with pytest.raises(StoreError, match=r"corrupted|not a readable"):
        SqliteTaskStore(path)
    assert digest(path) == before


def test_a_schema_from_the_future_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        store.save(snapshot(task()))
    connection = sqlite3.connect(path)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.close()
    before = digest(path)
    with pytest.raises(
        StoreError, match=rf"schema version {SCHEMA_VERSION + 1}, newer .* upgrade lldsched"
    ):
        SqliteTaskStore(path)
    assert digest(path) == before


def test_an_sqlite_file_of_another_application_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE accounts (id INTEGER)")
    connection.commit()
    connection.close()
    before = digest(path)
    with pytest.raises(StoreError, match=r"not an lldsched store .*accounts"):
        SqliteTaskStore(path)
    assert digest(path) == before


def test_an_unimportable_callable_fails_the_load_naming_the_task_and_touches_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        store.save(snapshot(task(id="good")), record("good", 0))
        store.save(snapshot(task(id="gone")))
        store._open().execute(
            "UPDATE tasks SET definition = replace(definition, 'tests.jobs:noop', "
            "'tests.jobs_renamed:noop') WHERE id = 'gone'"
        )
    before = digest(path)
    with SqliteTaskStore(path) as store:
        with pytest.raises(StoreError, match=r"(?s)1 of the 2 tasks.*gone.*tests\.jobs_renamed"):
            Scheduler(store=store)  # recovery reads everything before it changes anything
        assert store.records("good") == [record("good", 0)]
    assert digest(path) == before


def test_options_no_registration_takes_leave_their_task_out_of_a_shared_start(
    tmp_path: Path,
) -> None:
    """Found by tools/fuzz/fuzz_codec.py: an isolation no registration takes was read as
    it was, and the start that restored it raised a ValidationError, on a shared store
    too (every node of it refused, for one row); now it is a bad row, left out there."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        store.save(snapshot(task(id="good")))
        store.save(snapshot(task(id="bad")))
        text = json.dumps({**json.loads(encode_task(task(id="bad"))), "isolation": "bogus"})
        store._open().execute("UPDATE tasks SET definition = ? WHERE id = 'bad'", (text,))
    with SqliteTaskStore(path, shared=True) as store:
        scheduler = Scheduler(store=store)
        try:
            assert [t.id for t in scheduler.tasks()] == ["good"]
            assert store.unloaded() == ["bad"]
        finally:
            scheduler.shutdown()


def test_a_definition_that_became_invalid_is_a_store_error() -> None:
    text = encode_task(task()).replace('"period":60', '"period":-1')
    with pytest.raises(StoreError, match="task-1: its stored definition is invalid"):
        decode_task("task-1", text)
    with pytest.raises(StoreError, match="no attribute"):
        decode_task("task-1", encode_task(task()).replace("jobs:noop", "jobs:nothing"))


def test_a_stored_overlap_policy_that_is_not_one_is_a_store_error() -> None:
    text = encode_task(task(overlap=Overlap.ALLOW, max_instances=2))
    assert '"overlap":"allow","max_instances":2' in text
    assert '"overlap"' not in encode_task(task())  # a task without one: as before
    with pytest.raises(StoreError, match="'sometimes' is not a valid Overlap"):
        decode_task("task-1", text.replace('"allow"', '"sometimes"'))


def test_a_task_with_an_overlap_policy_is_recovered_with_it(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        Simulation(start=T0, store=store).schedule(
            "t", FixedRate(60), action=jobs.noop, overlap=Overlap.ALLOW, max_instances=2
        )
    with SqliteTaskStore(path) as store:
        (restored,) = Simulation(start=T0, store=store).tasks()
    assert restored.overlap is Overlap.ALLOW and restored.max_instances == 2


def test_a_store_written_by_a_scheduler_lists_every_transition(
    make_scheduler: SchedulerFactory, clock: FakeClock, tmp_path: Path
) -> None:
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = make_scheduler(clock=clock, store=store)
        tick = scheduler.schedule("tick", jobs.noop, FixedRate(10))
        settle(scheduler)
        clock.advance(10)
        settle(scheduler)
        stored = store.get(tick.id)
        assert stored is not None and stored.status is TaskStatus.SCHEDULED
        assert stored.next_run_at == clock.now() + 10 and stored.run_count == 2
        assert [r.slot for r in store.records(tick.id)] == [r.slot for r in tick.history]


def held_definitions(name: str) -> int:
    """Task definitions named ``name`` alive in this process (the store's cache included)."""
    gc.collect()
    return sum(isinstance(thing, Task) and thing.name == name for thing in gc.get_objects())


def test_a_store_keeps_no_finished_task_in_memory_only_in_its_file(
    tmp_path: Path, make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        scheduler = make_scheduler(clock=clock, store=store, retain_finished=10)
        for _ in range(200):  # "send the reminder now", all day
            scheduler.schedule("reminder", jobs.noop, OneTime(delay=0), args=())
        settle(scheduler)
        assert len(scheduler.tasks()) <= 11  # the scheduler retired the rest...
        # ...and so did the store's caches (before: all 200 definitions, ~430 bytes each)
        assert held_definitions("reminder") <= 11
        assert len(store.load_all()) == 200  # every row stays in the file
        scheduler.shutdown()
    with SqliteTaskStore(path) as reopened:
        snapshots = reopened.load_all()  # read back, but a finished one is not cached
        assert len(snapshots) == 200
        del snapshots
        assert held_definitions("reminder") == 0
        assert reopened._counts == {}


def test_a_finished_task_registered_again_writes_its_new_definition(
    tmp_path: Path, make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = make_scheduler(clock=clock, store=store)
        scheduler.schedule("once", jobs.noop, OneTime(delay=0), id="once")
        settle(scheduler)
        scheduler.schedule(
            "once", jobs.noop, OneTime(delay=0), id="once", replace_existing=True, priority=0
        )
        stored = store.get("once")
        assert stored is not None and stored.status is TaskStatus.SUCCEEDED
        assert stored.task.priority is Priority.HIGH  # written in full, not skipped as known


@pytest.mark.parametrize(
    ("damaged", "said"),
    [
        ("[1, 2]", "it is JSON list, not an object"),
        ("null", "it is JSON NoneType, not an object"),
        ('"text"', "it is JSON str, not an object"),
        ('{"retry": []}', "'list' object has no attribute 'keys'"),
        ('{"misfire": "late"}', "'str' object has no attribute 'keys'"),
        ('{"name": 5}', "name must be a JSON string, got 5"),
        ('{"args": "ab"}', "args must be a JSON array, got 'ab'"),
        ('{"kwargs": [1]}', "kwargs must be a JSON object, got [1]"),
        # tools/fuzz/fuzz_codec.py: JSON's escapes write a name no write of lldsched makes;
        # it loaded, and every write of its task (a run's record holds the name) failed
        ('{"name": "a\\udcffb"}', "name 'a\\udcffb' holds a lone surrogate"),
        ('{"name": "a\\u0000b"}', "name 'a\\x00b' holds a NUL"),
        # tools/fuzz/fuzz_codec.py: options the codec read as they were, refused only as
        # the start restored them (a ValidationError, every node of a shared store's)
        ('{"isolation": "bogus"}', "isolation must be one of ('thread', 'process'), got 'bogus'"),
        ('{"overlap": "allow", "max_instances": "x"}', "max_instances must be an int >= 1"),
        ('{"max_instances": 2}', "max_instances=2 was given without overlap="),
        ('{"overlap": "allow"}', "overlap=Overlap.ALLOW needs max_instances=N"),
        ('{"depends_on": ["u", "u"]}', "depends_on names ['u'] more than once"),
        ('{"name": " "}', "task name must be a non-empty string, got ' '"),
        # json.loads' RecursionError escaped the load (a row edited by hand, or one
        # written near the limit and read deeper in a stack)
        ("[" * 100_000 + "]" * 100_000, "RecursionError("),
    ],
    ids=[
        "a-list",
        "null",
        "a-string",
        "retry-a-list",
        "misfire-a-string",
        "name-a-number",
        "args-a-string",
        "kwargs-a-list",
        "name-a-lone-surrogate",
        "name-with-a-nul",
        "isolation-unknown",
        "max-instances-a-string",
        "max-instances-without-allow",
        "allow-without-max-instances",
        "depends-on-twice",
        "name-blank",
        "nested-too-deep",
    ],
)
def test_a_damaged_definition_fails_the_load_naming_its_task_and_loses_no_other(
    tmp_path: Path, damaged: str, said: str
) -> None:
    """A definition stored as another JSON type than the codec writes (a damaged or
    hand-edited row) is refused as any invalid definition is, naming its task, the other
    rows read and the file left as it was.  Before, the decoder's AttributeError escaped
    the load (no task named, no other row's problem said) and a ``name`` of 5 or ``args``
    of ``"ab"`` were restored as a task named 5 called with ``("a", "b")``."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        store.save(snapshot(task(id="good")), record("good", 0))
        store.save(snapshot(task(id="bad")))
        text = encode_task(task(id="bad"))
        if damaged.startswith("{"):  # one part replaced
            text = json.dumps({**json.loads(text), **json.loads(damaged)})
        else:
            text = damaged
        store._open().execute("UPDATE tasks SET definition = ? WHERE id = 'bad'", (text,))
    before = digest(path)
    with SqliteTaskStore(path) as store:
        with pytest.raises(StoreError, match=r"1 of the 2 tasks") as caught:
            store.load_all()
        assert "task bad: its stored definition is invalid: " in str(caught.value)
        assert said in str(caught.value)
        assert store.records("good") == [record("good", 0)]
    assert digest(path) == before
