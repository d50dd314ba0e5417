"""Text no durable store keeps (a lone surrogate, a NUL) in a *fenced* write of a shared
store, a run's settle or what a claim decided for its slot (``misfired``), on shared SQLite
and a real PostgreSQL server: the rule of tests/test_store_text.py
(docs/decisions/checking-input.md, "Text a durable store cannot keep"), a ``ValidationError`` naming
the task, the field and the value, before anything is written.  The claim is left as it was: its
lease is still held (no ``LeaseLost``, nothing counted in ``rejected``), so the same token settles
the run once its text is one a store keeps (``errors.escaped``).

On PostgreSQL a settle is queued and written with the others waiting, in one statement
(``stores/postgres/batch.py``): a settle refused so never joins the queue, and the good
settles batched beside it are all written.  Without the check, its text reached the
driver inside the batch: a lone surrogate raised a bare ``UnicodeEncodeError`` out of
``flush()`` and a NUL failed the statement, and every settle of that batch was lost
(their runs run again once their leases expired)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lldsched import ExecutionRecord, TaskStatus, ValidationError
from lldsched.coordination import Claim
from lldsched.persistence import TaskSnapshot
from lldsched.stores.postgres import PostgresTaskStore
from tests.conftest import T0
from tests.test_store_bad_rows import Engine
from tests.test_store_postgres_batches import finished, hold_back
from tests.test_store_sqlite import record, snapshot, task
from tests.test_store_text import BAD, BAD_TEXT, assert_refused, spoiled
from tests.test_store_text import engine_fixture as engine_fixture  # the `engine` fixture

SHARED = ("sqlite-shared", "postgres")
WRITES = ("settle", "save", "misfired-release", "misfired-keep")
"""The fenced writes: ``settle``; ``save`` of a record carrying the token (the runtime's
settle, queued on PostgreSQL); ``misfired`` dropping the lease, or keeping it for the
catch-up run."""


def _state(engine: Engine) -> tuple[list[Any], list[ExecutionRecord]]:
    """The engine's task rows as written, and every record a store reads back."""
    with engine.open() as store:
        return engine.rows(), store.records()


def _claim(store: Any, task_id: str) -> Claim:
    """The claim of ``task_id`` (every task of ``make_engine`` is due at T0)."""
    claims: dict[str, Claim] = {claim.task_id: claim for claim in store.claim(now=T0, limit=10)}
    return claims[task_id]


def _held(store: Any) -> set[tuple[str, int]]:
    return {(lease.task_id, lease.token) for lease in store.leases()}


def _fenced(how: str) -> Callable[[Any, TaskSnapshot, ExecutionRecord, int], None]:
    """Write ``state`` and ``made`` through the fenced write ``how``, with ``token``."""

    def write(store: Any, state: TaskSnapshot, made: ExecutionRecord, token: int) -> None:
        if how == "settle":
            store.settle(state, made, token=token)
        elif how == "save":
            store.save(state, made)
        else:
            store.misfired(state, (made,), token=token, release=how == "misfired-release")
        store.flush()

    return write


@pytest.mark.parametrize("how", WRITES)
@BAD_TEXT
@pytest.mark.parametrize("engine", SHARED, indirect=True)
def test_a_fenced_write_of_text_no_store_keeps_is_refused_and_leaves_the_claim_held(
    engine: Engine, field: str, value: str, how: str
) -> None:
    write = _fenced(how)
    with engine.open() as store:
        store.load_all()  # as a scheduler starts: the rows are known
        claim = _claim(store, "b")
        before = _state(engine)
        state = snapshot(task(id="b"))._replace(next_run_at=T0 + 60, run_count=1)
        made = record("b", 5)._replace(token=claim.token)
        with pytest.raises(ValidationError) as raised:
            write(store, *spoiled(state, made, field, value), claim.token)
        assert_refused(raised, "b", field, value)
        assert _state(engine) == before
        assert (claim.task_id, claim.token) in _held(store)  # the claim stands
        assert store.rejected == 0  # not a lease lost
        write(store, state, made, claim.token)  # the same token writes good text
        assert store.records("b") == [made]
        kept = (claim.task_id, claim.token) in _held(store)
        assert kept is (how == "misfired-keep")  # dropped by all but a catch-up's misfired


@pytest.mark.parametrize("field", ["last_error", "error"])
@pytest.mark.parametrize("value", list(BAD.values()), ids=list(BAD))
def test_a_settle_refused_for_its_text_never_joins_the_batch_and_the_others_are_written(
    open_store: Callable[..., PostgresTaskStore], value: str, field: str
) -> None:
    store, reader = open_store(lease=60), open_store(lease=60)
    for task_id in ("a", "b", "c"):
        store.save(snapshot(task(id=task_id)))
    claims = {claim.task_id: claim for claim in store.claim(now=T0, limit=3)}
    batches = hold_back(store, only_flush=True)

    def settled(task_id: str, n: int) -> tuple[TaskSnapshot, ExecutionRecord]:
        return finished(task_id), record(task_id, n)._replace(token=claims[task_id].token)

    def bad(task_id: str, n: int) -> tuple[TaskSnapshot, ExecutionRecord]:
        return spoiled(*settled(task_id, n), field, value)

    store.save(*settled("a", 0))  # queued
    refusals: tuple[tuple[str, Callable[[], None]], ...] = (
        ("b", lambda: store.save(*bad("b", 1))),  # queued too, were it kept
        ("b", lambda: store.settle(*bad("b", 1), token=claims["b"].token)),
        ("a", lambda: store.save(*bad("a", 2))),  # a record after a's queued settle
    )
    for task_id, refused in refusals:
        with pytest.raises(ValidationError) as raised:
            refused()
        assert_refused(raised, task_id, field, value)
    store.save(*settled("c", 3))
    assert reader.records() == [] and batches == []  # all still queued

    store.flush()
    assert batches == [[claims["a"].token, claims["c"].token]]  # one batch, b never in it
    assert store.rejected == 0
    assert reader.records() == [settled("a", 0)[1], settled("c", 3)[1]]
    statuses = {state.task.id: state.status for state in reader.load_all()}
    assert statuses == {
        "a": TaskStatus.SUCCEEDED,
        "b": TaskStatus.SCHEDULED,
        "c": TaskStatus.SUCCEEDED,
    }
    assert _held(reader) == {("b", claims["b"].token)}  # b's claim stands

    store.save(*settled("b", 1))  # its text escaped: the same token settles it
    store.flush()
    assert reader.records("b") == [settled("b", 1)[1]]
    assert _held(reader) == set()
