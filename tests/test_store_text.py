"""Text no durable store keeps (a lone surrogate, a NUL), given to a store's API directly
(a tool of one's own that saves snapshots or records it built), is one rule on SQLite
(unshared and shared) and on a real PostgreSQL server alike (docs/decisions/checking-input.md, "Text
a durable store cannot keep"): a ``ValidationError`` naming the task, the field and the
value, raised before anything is written, so every row and record kept stays as it was.

Before, a lone surrogate in a state's ``last_error`` or a record's ``task_id``, ``name``,
``error``, ``result`` or ``node`` raised a bare ``UnicodeEncodeError`` from both drivers
(naming neither the task nor the field), and a NUL was a ``StoreError`` naming neither on
PostgreSQL, kept as it was by SQLite (and a move of the file to PostgreSQL failed on it).
The runtimes never get here: they write ``errors.escaped`` text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lldsched import ExecutionRecord, ValidationError
from lldsched.persistence import TaskSnapshot
from tests.test_store_bad_rows import ENGINES, Engine, make_engine
from tests.test_store_sqlite import record, snapshot, task

BAD = {"surrogate": "bad \ud800 text", "nul": "bad \x00 text"}
RECORD_FIELDS = ("task_id", "name", "error", "result", "node")
BAD_TEXT = pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param(field, value, id=f"{field}-{kind}")
        for field in ("last_error", *RECORD_FIELDS)
        for kind, value in BAD.items()
    ],
)
"""Each text field a write carries, holding each kind of text no durable store keeps."""


def spoiled(
    state: TaskSnapshot, made: ExecutionRecord, field: str, value: str
) -> tuple[TaskSnapshot, ExecutionRecord]:
    """``state`` and ``made`` with ``value`` as the state's ``last_error`` or as the
    record's ``field``."""
    if field == "last_error":
        return state._replace(last_error=value), made
    changed: dict[str, Any] = {field: value}
    return state, made._replace(**changed)


@pytest.fixture(name="engine")
def engine_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    """The engine a test names as its ``engine`` parameter, ``indirect``
    (:func:`~tests.test_store_bad_rows.make_engine`)."""
    return make_engine(request, tmp_path, request.param)


@pytest.fixture(name="refusing_engine", scope="module")
def refusing_engine_fixture(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Engine:
    """The engine named as the ``refusing_engine`` parameter, ``indirect``, made once for
    this module's refusals (a file, or a schema of the session's server).  Safe to share:
    such a test writes nothing when it passes, and it compares what the engine holds
    after its refused write with what it held just before, so a write that slipped
    through fails the test that made it, whichever ran before it.  Made for each test,
    the engine (a new file or schema, the store's tables, three writes) was most of
    each test's time."""
    name = request.param
    dsn = request.getfixturevalue("postgres_server").create_schema() if name == "postgres" else None
    return make_engine(request, tmp_path_factory.mktemp(name), name, dsn=dsn)


def assert_refused(
    raised: pytest.ExceptionInfo[ValidationError], task_id: str, field: str, value: str
) -> None:
    """The refusal names the task ``task_id`` (the bad id itself for a record's
    ``task_id``), the field and the value, and says nothing was written."""
    said = str(raised.value)
    assert f"task {(value if field == 'task_id' else task_id)!r}" in said
    assert f"{field} {value!r}" in said
    assert "nothing was written" in said


def _kept(engine: Engine) -> tuple[list[Any], list[ExecutionRecord], list[TaskSnapshot]]:
    """What the engine holds: its task rows as written, and what a store reads back."""
    with engine.open() as store:
        return engine.rows(), store.records(), store.load_all()


def _write(store: Any, how: str, state: TaskSnapshot, made: ExecutionRecord | None) -> None:
    """Write ``state`` (and ``made``) through the store call ``how``."""
    records = () if made is None else (made,)
    if how == "save":
        store.save(state, made)
    elif how == "save_all":
        store.save_all(state, (record("c", 3), *records))
    else:
        store.resave(state, records)


@pytest.mark.parametrize("how", ["save", "save_all", "resave"])
@BAD_TEXT
@pytest.mark.parametrize("refusing_engine", ENGINES, indirect=True)
def test_text_no_store_keeps_is_refused_naming_task_field_and_value_and_nothing_is_written(
    refusing_engine: Engine, field: str, value: str, how: str
) -> None:
    engine = refusing_engine
    before = _kept(engine)
    # a new task: written whole, were it written
    state, made = spoiled(snapshot(task(id="c")), record("c", 3), field, value)
    with engine.open() as store, pytest.raises(ValidationError) as raised:
        _write(store, how, state, None if field == "last_error" else made)
    assert_refused(raised, "c", field, value)
    assert _kept(engine) == before


@pytest.mark.parametrize("engine_name", ENGINES)
def test_text_beyond_ascii_that_utf8_holds_is_kept_as_it_is(
    request: pytest.FixtureRequest, tmp_path: Path, engine_name: str
) -> None:
    engine = make_engine(request, tmp_path, engine_name)
    text = "Größe ✓ 😀"
    made = record("c", 3)._replace(error=text, result=text, name=text)
    with engine.open() as store:
        store.save(snapshot(task(id="c"))._replace(last_error=text), made)
    with engine.open() as store:
        (kept,) = [s for s in store.load_all() if s.task.id == "c"]
        assert kept.last_error == text
        assert store.records("c") == [made]
