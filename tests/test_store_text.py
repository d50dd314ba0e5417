"""Text no durable store keeps (a lone surrogate, a NUL), given to a store's API directly
(a tool of one's own that saves snapshots or records it built), is one rule on SQLite
(unshared and shared) and on a real PostgreSQL server alike (docs/DECISIONS.md, "Text a
durable store cannot keep"): a ``ValidationError`` naming the task, the field and the
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
@pytest.mark.parametrize("kind", sorted(BAD))
@pytest.mark.parametrize("field", ["last_error", *RECORD_FIELDS])
@pytest.mark.parametrize("engine_name", ENGINES)
def test_text_no_store_keeps_is_refused_naming_task_field_and_value_and_nothing_is_written(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    engine_name: str,
    field: str,
    kind: str,
    how: str,
) -> None:
    engine = make_engine(request, tmp_path, engine_name)
    before = _kept(engine)
    value = BAD[kind]
    state = snapshot(task(id="c"))  # a new task: written whole, were it written
    made: ExecutionRecord | None = record("c", 3)
    if field == "last_error":
        state = state._replace(last_error=value)
        made = None
    else:
        assert made is not None
        changed: dict[str, Any] = {field: value}
        made = made._replace(**changed)
    task_id = value if field == "task_id" else "c"
    with engine.open() as store, pytest.raises(ValidationError) as raised:
        _write(store, how, state, made)
    said = str(raised.value)
    assert f"task {task_id!r}" in said
    assert f"{field} {value!r}" in said
    assert "nothing was written" in said
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
