"""The action's return value: kept on its record as bounded text, by the stores and the frames."""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lldsched import (
    ExecutionRecord,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Priority,
    RetryPolicy,
    Simulation,
    SqliteTaskStore,
    TaskSnapshot,
    TaskStatus,
)
from lldsched.core.results import RESULT_LIMIT, result_text
from lldsched.persistence import Task
from lldsched.stores.sqlite import SCHEMA_VERSION
from lldsched.views.frames import to_frame
from tests import jobs
from tests.conftest import T0, SchedulerFactory, settle


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_a_result_is_its_repr_and_none_stays_none() -> None:
    assert result_text(None) is None
    assert result_text(42) == "42"
    assert result_text("done") == "'done'"  # a repr: the string 1 and the number 1 differ
    assert result_text({"rows": 3}) == "{'rows': 3}"


def test_a_long_result_is_cut_to_the_stated_length() -> None:
    """200 characters, as docs/GUIDE.md states, the quote and the "..." included."""
    text = result_text("x" * 10_000)
    assert text == "'" + "x" * 196 + "..." and len(text) == RESULT_LIMIT == 200
    # a repr of exactly the limit is kept whole, one character more is cut
    assert result_text("x" * 198) == "'" + "x" * 198 + "'"
    assert result_text("x" * 199) == "'" + "x" * 196 + "..."
    assert result_text(b"x" * 197) == repr(b"x" * 197)  # 200 characters, as [10] * 50's
    assert result_text([10] * 50) == repr([10] * 50)


def repr_cut(value: object) -> str:
    """What a record kept before: the whole repr, then cut."""
    text = repr(value)
    return text if len(text) <= RESULT_LIMIT else text[: RESULT_LIMIT - 3] + "..."


scalars = (
    st.integers()
    | st.floats(allow_nan=False)
    | st.text(alphabet=st.sampled_from("ab'\"\\\n\x00é"), max_size=300)
    | st.binary(max_size=300)
    | st.binary(max_size=300).map(bytearray)
    | st.none()
)
results = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=40)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.integers() | st.text(max_size=30), inner, max_size=15)
        | st.frozensets(st.integers(), max_size=60)
        | st.sets(st.text(max_size=20), max_size=20)
    ),
    max_leaves=200,
)


@given(results)
def test_a_result_is_the_head_of_its_repr_however_long_and_nested(value: object) -> None:
    assert result_text(value) == (None if value is None else repr_cut(value))


@pytest.mark.parametrize(
    "value",
    [
        "x" * 300 + "'",  # a quote past the head: the whole repr is in double quotes
        "'" + "x" * 300 + '"',  # a single quote in the head, a double one past it
        "'" + "x" * 300,  # a single quote in the head alone: double quotes
        b"x" * 300 + b"'",
        b"'" + b"x" * 300 + b'"',
        bytearray(b"'" + b"x" * 300),
    ],
    ids=[
        "quote-past-head",
        "both-quotes",
        "quote-in-head",
        "bytes-quote-past-head",
        "bytes-both-quotes",
        "bytearray-quote-in-head",
    ],
)
def test_a_long_text_s_head_is_quoted_as_its_whole_repr_is(value: object) -> None:
    """``repr`` picks its quotes from the whole text: a head written alone is in the same
    quotes only when the quotes it holds would pick them as the whole does."""
    assert result_text(value) == repr_cut(value)


def test_a_container_that_holds_itself_reads_as_repr_writes_it() -> None:
    looped: list[object] = [1]
    looped.append(looped)
    assert result_text(looped) == "[1, [...]]"
    mapping: dict[str, object] = {"x" * 300: 1}
    mapping["self"] = mapping
    assert result_text(mapping) == repr_cut(mapping)


class Counted:
    shown = 0

    def __repr__(self) -> str:
        Counted.shown += 1
        return "Counted()"


def test_a_long_result_costs_the_repr_of_what_is_kept_not_of_the_whole_value() -> None:
    rows = [Counted() for _ in range(100_000)]
    text = result_text({"rows": rows, "body": b"\x00" * 10_000_000})
    assert text == repr_cut({"rows": rows[:30]})
    # Before, all 100,000 elements were repr'd (and the 10 MB of bytes, 40 MB of text)
    # to keep 200 characters: a job that returned its rows held its worker for seconds.
    assert Counted.shown < 2 * 30


def test_a_long_result_holding_one_row_many_times_costs_the_repr_of_what_is_kept() -> None:
    """A row met again beside itself is no cycle (``[row] * n``, ``{"a": d, "b": d}``):
    its head is written each time, not the whole value's ``repr`` as for a cycle."""
    row = (Counted(), Counted())
    values = [[row] * 100_000, {"first": row, "again": row, "rows": [row] * 100_000}]
    shown = Counted.shown
    texts = [result_text(value) for value in values]
    assert Counted.shown - shown < 2 * 2 * 30  # not 400,000
    assert texts == [
        repr_cut([row] * 20),
        repr_cut({"first": row, "again": row, "rows": [row] * 20}),
    ]


@pytest.mark.parametrize("kind", [str, bytes, bytearray])
def test_a_long_text_or_bytes_result_costs_the_memory_of_what_is_kept(kind: type) -> None:
    """A job that returned a downloaded file's 10 MB had its whole ``repr`` built (40 MB
    of text for bytes) to keep 200 characters: only the head is written now."""
    value = kind("x" * 10_000_000) if kind is str else kind(b"\x00" * 10_000_000)
    tracemalloc.start()
    try:
        text = result_text(value)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text == repr_cut(value)
    assert peak < 100_000, f"{peak:,} bytes allocated for a 200-character text"


def test_a_result_whose_repr_raises_is_text_that_says_so() -> None:
    assert result_text(Unprintable()) == "<Unprintable whose repr raised RuntimeError>"


def test_a_run_keeps_what_its_action_returned_and_a_failed_run_keeps_none(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    counts = scheduler.schedule("count", lambda: {"rows": 3}, OneTime(delay=0))
    quiet = scheduler.schedule("quiet", lambda: None, OneTime(delay=0))
    failing = scheduler.schedule(
        "failing", lambda: 1 / 0, OneTime(delay=0), retry=RetryPolicy(max_attempts=1)
    )
    huge = scheduler.schedule("huge", lambda: list(range(10_000)), OneTime(delay=0))
    settle(scheduler)
    assert counts.history[0].result == "{'rows': 3}"
    assert quiet.history[0].result is None
    assert failing.history[0].result is None and failing.history[0].error is not None
    assert len(huge.history[0].result or "") == RESULT_LIMIT


def test_the_memory_store_keeps_the_result_text(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    store = InMemoryTaskStore()
    scheduler = make_scheduler(clock=clock, store=store)
    scheduler.schedule("answer", lambda: 42, OneTime(delay=0))
    settle(scheduler)
    assert [record.result for record in store.records()] == ["42"]


def test_the_sqlite_store_keeps_the_result_as_text(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        store.save(SNAPSHOT, _record(result="{'rows': 3}"))
        store.save(SNAPSHOT, _record(result=None))
    with SqliteTaskStore(path) as store:
        assert [record.result for record in store.records()] == ["{'rows': 3}", None]
    connection = sqlite3.connect(path)
    (kind,) = connection.execute("SELECT typeof(result) FROM records LIMIT 1").fetchone()
    connection.close()
    assert kind == "text"


# The schema of version 1, exactly as lldsched wrote it before records kept results.
_VERSION_1 = """
CREATE TABLE tasks (
    position INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
    definition TEXT NOT NULL, status TEXT NOT NULL, next_run_at REAL,
    attempt INTEGER NOT NULL, run_count INTEGER NOT NULL, failure_count INTEGER NOT NULL,
    last_error TEXT, running INTEGER NOT NULL, failed_seq INTEGER
);
CREATE TABLE records (
    task_id TEXT NOT NULL, seq INTEGER NOT NULL, attempt INTEGER NOT NULL,
    due REAL NOT NULL, slot REAL NOT NULL, worker INTEGER NOT NULL, started REAL NOT NULL,
    finished REAL NOT NULL, ok INTEGER NOT NULL, error TEXT, timed_out INTEGER NOT NULL,
    misfire TEXT, PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;
PRAGMA application_id = 1819042931;
PRAGMA user_version = 1;
"""


def test_a_version_1_file_is_migrated_at_open_and_keeps_its_records(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    connection = sqlite3.connect(path)
    connection.executescript(_VERSION_1)
    definition = (
        '{"name":"t","action":"tests.jobs:noop","schedule":{"type":"FixedRate","period":60,'
        '"on_overrun":"skip","start_delay":0},"priority":1,"retry":{"max_attempts":3,'
        '"initial_backoff":1.0,"multiplier":2.0,"max_backoff":60.0,"jitter":0.0},'
        '"timeout":null,"args":[],"kwargs":null,"misfire":null}'
    )
    connection.execute(
        "INSERT INTO tasks VALUES (1, 'task-1', 't', ?, 'scheduled', ?, 0, 1, 0, NULL, 0, NULL)",
        (definition, T0 + 60),
    )
    connection.execute(
        "INSERT INTO records VALUES ('task-1', 1, 1, ?, ?, 0, ?, ?, 1, NULL, 0, NULL)",
        (T0, T0, T0, T0 + 1),
    )
    connection.commit()
    connection.close()
    with SqliteTaskStore(path) as store:
        assert [snap.task.action for snap in store.load_all()] == [jobs.noop]
        (old,) = store.records()
        assert old.ok and old.result is None
        store.save(SNAPSHOT, _record(result="'new'"))
        assert [record.result for record in store.records()] == [None, "'new'"]
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    connection.close()


def test_a_frame_shows_the_result_column(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    scheduler.schedule("answer", lambda: 42, OneTime(delay=0))
    scheduler.schedule("quiet", lambda: None, OneTime(delay=1))
    clock.advance(1)
    settle(scheduler)
    frame = to_frame(scheduler)
    assert str(frame["result"].dtype) == "string"
    results = frame.set_index("name")["result"]
    assert results["answer"] == "42" and results["quiet"] is pd.NA


SNAPSHOT = TaskSnapshot(
    Task("task-1", "t", jobs.noop, FixedRate(60), Priority.NORMAL, RetryPolicy(), None),
    TaskStatus.SCHEDULED, T0, 0, 0, 0, None,
)  # fmt: skip


def _record(*, result: str | None) -> ExecutionRecord:
    return ExecutionRecord("task-1", "t", 1, T0, T0, 0, T0, T0 + 1, True, result=result)


def test_a_simulated_run_keeps_what_its_real_action_returned() -> None:
    sim = Simulation(start=T0)
    sim.schedule("answer", OneTime(delay=0), action=lambda: 42, duration=3)
    sim.schedule("quiet", OneTime(delay=0), action=lambda: None)
    sim.run(T0 + 10)
    assert {record.name: record.result for record in sim.records()} == {
        "quiet": None,
        "answer": "42",
    }
