"""``lldsched.stores.peek``: a store read to be shown, importing none of the code its
tasks name and writing nothing (what ``python -m lldsched tasks`` lists).

A store's own reads import each task's action and classes (``decode_task``): a
definition naming a module this process does not have failed the whole read.  Here such
a task is read with its paths as text, and a row no read can follow (a status no release
knows) is listed as its error beside the others."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    FixedDelay,
    FixedRate,
    Jittered,
    Misfire,
    MisfirePolicy,
    OneTime,
    Priority,
    RetryPolicy,
    Scheduler,
    SqliteTaskStore,
    Task,
    Window,
)
from lldsched.errors import StoreError
from lldsched.schedules.base import Schedule
from lldsched.schedules.decorators import describe
from lldsched.stores.codec import NotImported, SharedParts, decode_task, encode_task
from lldsched.stores.sqlite.peek import peek_sqlite
from tests import jobs


def _digest(path: Path) -> str:
    """The store's data: the file and its write-ahead log (a reader marks its place in
    the ``-shm`` index, which holds no data)."""
    files = [path, path.with_name(f"{path.name}-wal")]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files if f.exists())).hexdigest()


def test_a_task_whose_code_is_elsewhere_is_read_as_text_and_an_unreadable_row_by_itself(
    tmp_path: Path,
) -> None:
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        for task_id in ("elsewhere", "zombie", "plain"):
            scheduler.schedule(task_id, jobs.noop, "0 3 * * *", id=task_id)
        scheduler.shutdown()
    with sqlite3.connect(path) as connection:  # another release's rows
        (text,) = connection.execute(
            "SELECT definition FROM tasks WHERE id = 'elsewhere'"
        ).fetchone()
        definition = json.loads(text)
        definition["action"] = "service.jobs:sync"
        definition["schedule"] = {"type": "Lunar", "phase": 3}
        definition["retry"]["policy"] = "service.policies:Backoff"
        connection.execute(
            "UPDATE tasks SET definition = ? WHERE id = 'elsewhere'", (json.dumps(definition),)
        )
        connection.execute("UPDATE tasks SET status = 'hibernating' WHERE id = 'zombie'")
    before = _digest(path)
    reader = peek_sqlite(str(path))
    try:
        elsewhere, zombie, plain = reader.tasks()
    finally:
        reader.close()
    assert _digest(path) == before  # nothing written
    assert elsewhere.snapshot is not None
    task = elsewhere.snapshot.task
    assert isinstance(task.action, NotImported) and repr(task.action) == "service.jobs:sync"
    assert describe(task.schedule) == 'Lunar {"phase": 3}'
    assert type(task.retry) is RetryPolicy
    assert (zombie.snapshot, zombie.id) == (None, "zombie")
    assert zombie.error is not None and "'hibernating'" in zombie.error
    assert plain.snapshot is not None and repr(plain.snapshot.task.action) == "tests.jobs:noop"


def test_a_task_read_as_text_cannot_run() -> None:
    task = Task("t", "n", jobs.noop, OneTime(0), Priority.NORMAL, RetryPolicy(), None)
    definition = json.loads(encode_task(task))
    definition["action"] = "service.jobs:sync"
    read = decode_task("t", json.dumps(definition), imports=False)
    assert read._replace(action=jobs.noop) == task
    assert read.action is not None
    with pytest.raises(StoreError, match=r"service\.jobs:sync was read as text, not imported"):
        read.action()


def test_a_status_and_an_id_are_the_statements_filter_only_those_rows_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tasks --status S`` decodes the rows in S alone (before: every row of the store,
    10,000 for a large one, then filtered); ``show ID`` its row alone."""
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        for task_id in ("a", "b", "c", "d"):
            scheduler.schedule(task_id, jobs.noop, "0 3 * * *", id=task_id, paused=task_id in "bd")
        scheduler.shutdown()
    decoded: list[str] = []

    def counted(task_id: str, *args: object, **kwargs: object) -> Task:
        decoded.append(task_id)
        return decode_task(task_id, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("lldsched.stores.peek.decode_task", counted)
    reader = peek_sqlite(str(path))
    try:
        assert [row.id for row in reader.tasks(status="paused")] == ["b", "d"]
        assert decoded == ["b", "d"]
        assert reader.tasks(status="failed") == []
        assert [row.id for row in reader.tasks("c")] == ["c"]
        assert decoded == ["b", "d", "c"]
    finally:
        reader.close()


def _definitions() -> list[str]:
    """Definitions of every kind of schedule, the variants ``==`` takes for one another
    (``1``, ``1.0`` and ``true``; ``-0.0`` and ``0.0``; null and absent), and bad ones."""
    schedules: list[Schedule] = [
        OneTime(1.8e9), OneTime(delay=30), FixedDelay(60, 5), FixedRate(3600), FixedRate(60.5),
        CronSchedule("0 3 * * *"), CronSchedule("0 3 * * *", tz="Europe/Paris"),
        Jittered(FixedRate(60), 5, seed=1), Window(CronSchedule("*/5 * * * *"), max_runs=3),
        Jittered(Window(FixedRate(60), start=1.8e9, end=1.9e9), 2, seed=7),
    ]  # fmt: skip
    texts = []
    for n, schedule in enumerate(schedules):
        task = Task(f"t{n}", f"job {n}", jobs.noop, schedule, Priority.NORMAL, RetryPolicy(), None)
        texts.append(encode_task(task))
    policies = Task(
        "p", "policies", jobs.noop, FixedRate(60), Priority.HIGH, RetryPolicy(5, jitter=0.5),
        12.5, misfire=MisfirePolicy(Misfire.RUN_ONCE, grace=30),
    )  # fmt: skip
    texts.append(encode_task(policies))
    base = json.loads(texts[3])  # FixedRate(3600)

    def edited(**changes: object) -> str:
        document = json.loads(json.dumps(base))
        for key, value in changes.items():
            if value is _DROP:
                del document[key]
            else:
                document[key] = value
        return json.dumps(document)

    retry = base["retry"]
    texts += [
        edited(priority=1.0), edited(priority=True), edited(priority=1),
        edited(schedule={**base["schedule"], "period": 3600.0}),
        edited(schedule={**base["schedule"], "start_delay": -0.0}),
        edited(retry={**retry, "jitter": -0.0}), edited(retry={**retry, "jitter": 0.0}),
        edited(timeout=_DROP), edited(timeout=None),
        edited(schedule={"type": "Lunar", "phase": 3}),
        edited(schedule={"type": "Lunar", "phase": 3.0}),
        edited(retry={**retry, "policy": "service.policies:Backoff"}),
        # bad: each is an error of its own, whatever a good row beside it holds
        edited(retry={**retry, "max_attempts": 0}), edited(schedule=_DROP),
        edited(schedule=[]), edited(schedule={"type": "CronSchedule", "expr": "no", "tz": "UTC"}),
        edited(misfire={"on_misfire": "sometimes", "grace": None, "max_catch_up": None}),
        edited(timeout=-1), edited(priority=7), edited(name=5), edited(colour="red"),
        edited(schedule={"type": "Jittered", "schedule": [[[[[[[[[[[]]]]]]]]]]],
                         "max_delay": 5, "seed": 1}),
        edited(schedule={"type": "Lunar", "phase": _nested(500)}), "[]", "{",
    ]  # fmt: skip
    return texts


_DROP = object()  # a key the edited definition lacks


def _nested(depth: int) -> object:
    """A value nested ``depth`` deep, as a schedule's field."""
    return json.loads("[" * depth + "]" * depth)


def _decoded(task_id: str, text: str, shared: SharedParts | None) -> str:
    """The task decoded from ``text`` as its repr (``==`` takes ``-0.0`` for ``0.0``), or
    the error's text."""
    try:
        task = decode_task(task_id, text, runs=1, imports=False, shared=shared)
    except StoreError as exc:
        return f"error: {exc}"
    return f"{task!r} {describe(task.schedule)}"


def test_shared_parts_decode_each_definition_as_it_decodes_alone() -> None:
    """A read of many rows decodes the parts they share once (``SharedParts``): each
    task, or each error, is the one its row decoded alone gives, for every kind of
    schedule, for values ``==`` confuses, and for bad rows (each its own error, whatever
    good row came before it).  Twice over, so every row meets its parts decoded."""
    texts = _definitions()
    shared = SharedParts()
    for round_ in range(2):
        for n, text in enumerate(texts):
            alone = _decoded(f"t{n}", text, None)
            assert _decoded(f"t{n}", text, shared) == alone, (round_, n, text)
    assert sum(_decoded("t", text, None).startswith("error: ") for text in texts) == 15


def test_a_listing_builds_the_parts_its_rows_share_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 tasks on two schedules and one retry policy: a listing builds two retry
    policies (before: 40, a tenth of a definition's decoding each), the rows of equal
    parts holding the same objects."""
    from lldsched.stores import codec

    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        scheduler = Scheduler(store=store)
        for n in range(40):
            schedule = FixedRate(60) if n % 2 else "0 3 * * *"
            scheduler.schedule(f"job {n}", jobs.note, schedule, id=f"t{n}", args=(f"l{n}",))
        scheduler.shutdown()
    built: list[RetryPolicy] = []

    def counted(*args: Any, **kwargs: Any) -> RetryPolicy:
        built.append(RetryPolicy(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(codec, "RetryPolicy", counted)
    reader = peek_sqlite(str(path))
    try:
        rows = reader.tasks()
    finally:
        reader.close()
    tasks = [row.snapshot.task for row in rows if row.snapshot is not None]
    assert [task.args for task in tasks] == [(f"l{n}",) for n in range(40)]
    assert len(built) == 2
    assert len({id(task.schedule) for task in tasks}) == 2
    assert {describe(task.schedule) for task in tasks} == {"At 03:00 (UTC)", "Every 60 s"}


@pytest.mark.parametrize(
    ("content", "refused"),
    [
        (b"this is not a database, just some bytes " * 200, "is not a readable SQLite database"),
        (None, "is not an lldsched store file"),  # a database of someone else's
    ],
)
def test_a_file_refused_at_open_is_left_with_no_connection_open(
    content: bytes | None, refused: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the refusal, the read-only connection the peek opened is closed: a file
    that is no database opens and fails at its first ``PRAGMA``, and was left open."""
    path = tmp_path / "file.db"
    if content is None:
        other = sqlite3.connect(path)
        other.execute("CREATE TABLE notes (text TEXT)")
        other.close()
    else:
        path.write_bytes(content)
    opened: list[sqlite3.Connection] = []
    connect = sqlite3.connect

    def recorded(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(connect(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(sqlite3, "connect", recorded)
    with pytest.raises(StoreError, match=refused):
        peek_sqlite(str(path))
    assert len(opened) == 1
    with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
        opened[0].execute("SELECT 1")
