"""``python -m lldsched tasks``'s table, as it reads a store: only the values it shows.

A golden store (every kind of schedule and status, records of every outcome, texts cut
or spread over lines, instants past 9999 and before the year 1000, and rows whose shown
values no read takes) is listed on SQLite and on the session's PostgreSQL server, and
its table, dead letter and ``--json`` compared with what main printed before the table
read only its columns (``tests/baseline/tasks_*.txt``, written by the listing that
decoded every row whole).  The fallbacks are forced: a row the listing cannot show reads
whole, a definition the database cannot parse makes the whole table read as before.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    ExecutionRecord,
    FixedDelay,
    FixedRate,
    Jittered,
    Outcome,
    Priority,
    RetryPolicy,
    SqliteTaskStore,
    Task,
    TaskSnapshot,
    TaskStatus,
    Window,
)
from lldsched.cli import main
from lldsched.schedules.base import Schedule
from lldsched.schedules.simple import OneTime
from tests import jobs

BASELINE = Path(__file__).resolve().parent / "baseline"
T0 = 1_800_000_000.0
_S = TaskStatus


def _saved(n: int, name: str, schedule: Schedule, status: TaskStatus, *more: Any) -> TaskSnapshot:
    """Task ``t<n>``'s snapshot (``more``: next run, attempt, runs, failures, last error,
    running)."""
    task = Task(f"t{n:02}", name, jobs.noop, schedule, Priority.NORMAL, RetryPolicy(), None)
    return TaskSnapshot(task, status, *more)


def _record(
    n: int, name: str, *, ok: bool = True, error: str | None = None, **more: Any
) -> ExecutionRecord:
    at = T0 + n
    return ExecutionRecord.of(
        task_id=f"t{n:02}", name=name, attempt=1, due=at, slot=at, worker=0, started=at,
        finished=at + 1.5, ok=ok, error=error, **more,
    )  # fmt: skip


LONG_ERROR = "ValueError: the upstream sent\nno orders today,\tagain and again and again"
GOOD = [  # (snapshot, records): saved in this order (the table's)
    (_saved(0, "report", FixedRate(3600), _S.SCHEDULED, T0, 0, 1, 0, None),
     [_record(0, "report", result="'done'")]),
    (_saved(1, "nightly", CronSchedule("0 3 * * *"), _S.SCHEDULED, T0 + 3 * 3600, 0, 0, 0, None),
     []),
    (_saved(2, "paris", CronSchedule("30 6 * * 1-5", tz="Europe/Paris"), _S.PAUSED, T0, 0, 0, 0,
            None), []),
    (_saved(3, "once", OneTime(T0 - 60), _S.SUCCEEDED, None, 0, 1, 0, None),
     [_record(3, "once")]),
    (_saved(4, "flaky " * 12, FixedDelay(90), _S.RETRYING, T0 + 90, 2, 3, 2, LONG_ERROR),
     [_record(4, "flaky", ok=False), _record(4, "flaky " * 12, ok=False, error=LONG_ERROR)]),
    (_saved(5, "windowed", Window(FixedRate(60), start=T0, end=T0 + 3600, max_runs=3),
            _S.RUNNING, T0 + 60, 1, 2, 0, None, True), [_record(5, "windowed")]),
    (_saved(6, "jittered", Jittered(CronSchedule("*/5 * * * *"), 30, seed=7), _S.SCHEDULED,
            T0 + 300, 0, 0, 0, None), [_record(6, "jittered", timed_out=True, ok=False)]),
    (_saved(7, "later dead", FixedRate(60), _S.SCHEDULED, T0, 0, 0, 0, None), []),
    (_saved(8, "first dead", FixedRate(60), _S.FAILED, None, 0, 3, 3, "OSError: disk"),
     [_record(8, "first dead", ok=False, error="OSError: disk")]),
    (_saved(7, "later dead", FixedRate(60), _S.FAILED, None, 0, 1, 1, "KeyError: 'x'"),
     [_record(7, "later dead", ok=False, error="KeyError: 'x'")]),
    (_saved(9, "cancelled", FixedRate(60), _S.CANCELLED, T0, 0, 1, 0, None),
     [_record(9, "cancelled", misfire=Outcome.SKIPPED)]),
    (_saved(10, "far off", FixedRate(1e9), _S.SCHEDULED, 9.9e14, 0, 0, 0, None), []),
    (_saved(11, "long ago", FixedRate(60), _S.SCHEDULED, -3.1e10, 0, 0, 0, None), []),
    (_saved(12, "é unicode ✓", FixedRate(0.5), _S.SCHEDULED, T0 + 0.9999996, 0, 0, 0, None),
     []),
    (_saved(13, 'a "quote", a \\ and  spaces', FixedRate(60), _S.SCHEDULED, T0, 0, 0, 0, None),
     []),
]  # fmt: skip
BAD = {  # a task saved as t<n> (n from 20), then its row set so: SQL in both dialects
    "t20": "UPDATE tasks SET status = 'hibernating' WHERE id = 't20'",
    "t21": "UPDATE tasks SET next_run_at = 1e300 WHERE id = 't21'",
    "t22": "UPDATE tasks SET attempt = -1 WHERE id = 't22'",
    "t23": "UPDATE tasks SET attempt = 2 WHERE id = 't23'",  # scheduled: no attempt behind it
    "t24": "UPDATE tasks SET definition = replace(definition, '3600', '-5') WHERE id = 't24'",
    "t25": """UPDATE tasks SET definition = replace(definition, '"t25"', '25') WHERE id = 't25'""",
    "t26": "UPDATE tasks SET definition = '[]' WHERE id = 't26'",
    "t27": """UPDATE tasks SET definition = replace(definition, '"t27"', '"  "')
              WHERE id = 't27'""",  # a blank name
    "t28": """UPDATE tasks SET definition = replace(definition, '"FixedRate","period":3600',
              '"Lunar","phase":3') WHERE id = 't28'""",  # a schedule type lldsched lacks: its text
    "t29": "UPDATE tasks SET status = 'failed', failed_seq = 99, next_run_at = NULL, "
    "definition = '{}' WHERE id = 't29'",  # in the dead letter, unreadable
}


def build(save: Callable[[TaskSnapshot, ExecutionRecord | None], None]) -> None:
    """The golden store's rows, through a store's ``save``; then :data:`BAD`'s SQL."""
    for snapshot, records in GOOD:
        save(snapshot, None)
        for record in records:
            save(snapshot, record)
    for task_id in BAD:
        n = int(task_id[1:])
        save(_saved(n, task_id, FixedRate(3600), _S.SCHEDULED, T0, 0, 0, 0, None), None)


def golden_sqlite(path: Path) -> str:
    with SqliteTaskStore(path) as store:
        build(store.save)
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        for statement in BAD.values():
            connection.execute(statement)
    return f"sqlite:{path}"


def golden_postgres(dsn: str) -> str:
    import psycopg

    from lldsched.stores.postgres import PostgresTaskStore

    with PostgresTaskStore(dsn) as store:
        build(store.save)
    with psycopg.connect(dsn, autocommit=True) as connection:
        for statement in BAD.values():
            connection.execute(statement)
    return dsn


COMMANDS = {  # the baseline file of each listing
    "tasks_table.txt": (),
    "tasks_dead_letter.txt": ("--status", "failed"),
    "tasks_scheduled.txt": ("--status", "scheduled"),
    "tasks_json.txt": ("--json",),
}


def listed(capsys: pytest.CaptureFixture[str], store: str, *options: str) -> str:
    status, (out, err) = main(["tasks", "--store", store, *options]), capsys.readouterr()
    assert (status, err) == (0, ""), err
    return out


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_the_golden_store_lists_as_it_did_when_every_row_was_decoded_whole(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    if engine == "sqlite":
        store = golden_sqlite(tmp_path / "jobs.db")
    else:
        store = golden_postgres(request.getfixturevalue("postgres_dsn"))
    for name, options in COMMANDS.items():
        assert listed(capsys, store, *options) == (BASELINE / name).read_text(), name


def _store(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if engine == "sqlite":
        return golden_sqlite(tmp_path / "jobs.db")
    return golden_postgres(request.getfixturevalue("postgres_dsn"))


def _sql(store: str, statement: str) -> None:
    if store.startswith("sqlite:"):
        path = store.removeprefix("sqlite:")
        with contextlib.closing(sqlite3.connect(path)) as connection, connection:
            connection.execute(statement)
    else:
        import psycopg

        with psycopg.connect(store, autocommit=True) as server:
            server.execute(statement)


DAMAGED = {"t20", "t21", "t22", "t23", "t24", "t25", "t26", "t27", "t29"}


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_the_table_decodes_no_row_whole_but_those_it_cannot_show(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The listing reads the shown values of every row in one statement; only a row one
    of them is wrong in is read again whole (before: every row decoded whole, its
    ``Task`` and ``TaskSnapshot`` built, to show six of their values)."""
    from lldsched.cli.storeurl import parse_store, peek
    from lldsched.stores import peek as peeking
    from lldsched.stores.codec import decode_task
    from lldsched.stores.rowvalues import Listed

    store = _store(engine, tmp_path, request)
    decoded: list[str] = []

    def counted(task_id: str, *args: Any, **kwargs: Any) -> Task:
        decoded.append(task_id)
        return decode_task(task_id, *args, **kwargs)

    monkeypatch.setattr(peeking, "decode_task", counted)
    reader = peek(parse_store(store))
    try:
        rows = [row for row, _ in reader.listing()]
    finally:
        reader.close()
    assert {row.id for row in rows if not isinstance(row, Listed)} == DAMAGED
    assert sorted(decoded) == sorted(DAMAGED)
    assert len(rows) == len(GOOD) - 1 + len(BAD)  # t07 saved twice


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_definition_that_is_no_json_lists_the_whole_table_as_before(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The database refuses the listing's statement when a definition is not JSON (both
    read the name and schedule out of it): the table is then read row by row whole, as
    before, that row listed as unreadable beside the others."""
    store = _store(engine, tmp_path, request)
    _sql(store, """UPDATE tasks SET definition = '{"name": oops' WHERE id = 't28'""")
    lines = listed(capsys, store).splitlines()
    golden = (BASELINE / "tasks_table.txt").read_text().splitlines()
    assert [line for line in lines if not line.startswith("t28 ")] == [
        line for line in golden if not line.startswith("t28 ")
    ]
    (damaged,) = (line for line in lines if line.startswith("t28 "))
    assert "unreadable  task t28: its stored definition is invalid: J" in damaged, damaged


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_row_damaged_where_the_table_does_not_look_is_listed_and_show_names_it(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """What the table does not show is not read: a row whose retry policy holds a field
    no release writes, or whose run count is negative, is listed by what it shows
    (before: ``unreadable``, every row decoded whole); ``show ID`` and ``--json`` read it
    whole and name what is wrong."""
    store = _store(engine, tmp_path, request)
    _sql(store, "UPDATE tasks SET run_count = -1 WHERE id = 't00'")
    _sql(store, """UPDATE tasks SET definition = replace(definition, '"jitter"', '"jiter"')
                   WHERE id = 't01'""")  # fmt: skip
    golden = (BASELINE / "tasks_table.txt").read_text()
    assert listed(capsys, store) == golden
    for task_id, error in (("t00", "column run_count holds the integer -1"), ("t01", "jiter")):
        shown = listed(capsys, store, "show", task_id).splitlines()[1]
        assert shown.startswith(f"  cannot be read: task {task_id}: ") and error in shown
    documents = listed(capsys, store, "--json").splitlines()
    assert '"error": "task t00: its row holds' in documents[0], documents[0]
    assert '"error": "task t01: its retry policy has fields' in documents[1], documents[1]


def test_a_row_removed_before_it_is_read_again_whole_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A row the listing cannot show is read again by its id; removed meanwhile (by a
    running scheduler), it is no longer a task of the store, and is not listed."""
    from lldsched.stores.peek import Peek

    store = golden_sqlite(tmp_path / "jobs.db")
    tasks = Peek.tasks
    monkeypatch.setattr(
        Peek, "tasks", lambda self, task_id=None, **kw: [] if task_id == "t20" else
        tasks(self, task_id, **kw),
    )  # fmt: skip
    ids = [line.split()[0] for line in listed(capsys, store).splitlines()[1:]]
    golden = [line.split()[0] for line in (BASELINE / "tasks_table.txt").read_text().splitlines()]
    assert ids == [task_id for task_id in golden[1:] if task_id != "t20"]


def test_json_prints_each_task_as_its_row_is_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--json`` prints a task as soon as its row is decoded, none kept (before: every
    row decoded, and every last record, before the first line)."""
    from lldsched.cli import say, storetasks
    from lldsched.stores.peek import Peek

    store = golden_sqlite(tmp_path / "jobs.db")
    events: list[str] = []
    decode = Peek._row

    def decoded(*args: Any) -> Any:
        events.append("row")
        return decode(*args)

    def said(line: str) -> None:
        events.append("say")
        say(line)

    monkeypatch.setattr(Peek, "_row", decoded)
    monkeypatch.setattr(storetasks, "say", said)
    lines = listed(capsys, store, "--json").splitlines()
    assert events == ["row", "say"] * len(lines)


def test_a_last_record_no_read_takes_refuses_the_listing_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last records are read whole, as every read of records checks them: one whose
    outcome no release knows refuses the table, naming it, as before."""
    store = golden_sqlite(tmp_path / "jobs.db")
    _sql(store, "UPDATE records SET misfire = 'exploded' WHERE task_id = 't03'")
    for options in ((), ("--json",)):
        status, (out, err) = main(["tasks", "--store", store, *options]), capsys.readouterr()
        assert status == 2 and "column misfire holds the text 'exploded'" in err, err
        assert len(out.splitlines()) == (3 if options else 0)  # --json: t00 to t02 printed
