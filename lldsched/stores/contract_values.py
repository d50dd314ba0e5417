"""The values the store contract's checks save (:data:`T0`, :func:`task_for`,
:func:`snapshot_for`, :func:`record_for`, :class:`OwnRetry`), and how they say what a
store gave back changed: each field named with both values (:func:`assert_kept`,
:func:`assert_field_kept`, :func:`assert_records_kept`), a save that raised naming its
task (:func:`save_each`).  Shared by the checks of
:class:`~lldsched.stores.contract.TaskStoreContract` and
:class:`~lldsched.stores.contract_fields.FieldChecks`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from lldsched.model import ExecutionRecord, Priority, TaskStatus
from lldsched.persistence import Task, TaskSnapshot, TaskStore
from lldsched.policies import RetryPolicy
from lldsched.schedules.base import Schedule
from lldsched.schedules.simple import FixedRate

__all__ = [
    "T0",
    "OwnRetry",
    "assert_field_kept",
    "assert_kept",
    "assert_records_kept",
    "changed_fields",
    "close_store",
    "ordinal",
    "record_for",
    "save_each",
    "snapshot_for",
    "task_for",
]

T0 = 1_767_603_600.0  # Monday 2026-01-05 09:00 UTC


class OwnRetry(RetryPolicy):
    """A retry policy of one's own (docs/EXTENDING.md): a store keeps its class (the
    codec's ``"policy"``), not only its fields."""

    __slots__ = ()


def task_for(task_id: str, schedule: Schedule | None = None, **fields: Any) -> Task:
    """A task whose action imports back (``json.dumps``), as a durable store needs."""
    values: dict[str, Any] = {
        "id": task_id,
        "name": f"job {task_id}",
        "action": json.dumps,
        "schedule": FixedRate(60) if schedule is None else schedule,
        "priority": Priority.NORMAL,
        "retry": RetryPolicy(),
        "timeout": None,
    }
    values.update(fields)
    return Task(**values)


def snapshot_for(
    task: Task, status: TaskStatus = TaskStatus.SCHEDULED, **state: Any
) -> TaskSnapshot:
    values: dict[str, Any] = {
        "next_run_at": T0 + 60,
        "attempt": 0,
        "run_count": 0,
        "failure_count": 0,
        "last_error": None,
        "running": False,
    }
    values.update(state)
    return TaskSnapshot(task=task, status=status, **values)


def changed_fields(saved: TaskSnapshot, loaded: TaskSnapshot) -> list[str]:
    """Each field of ``saved`` that ``loaded`` does not give back equal, named
    (``task.<field>`` for the definition's), with both values."""
    pairs: list[tuple[str, tuple[Any, ...], tuple[Any, ...], str]] = [
        (f"task.{name}", saved.task, loaded.task, name) for name in Task._fields
    ]
    pairs += [(name, saved, loaded, name) for name in TaskSnapshot._fields if name != "task"]
    return [
        f"{label}: saved {getattr(before, name)!r}, loaded {getattr(after, name)!r}"
        for label, before, after, name in pairs
        if getattr(before, name) != getattr(after, name)
    ]


def assert_field_kept(
    saved: Sequence[TaskSnapshot], loaded: Sequence[TaskSnapshot], *, field: str, meaning: str
) -> None:
    """Each of ``saved`` loaded back with its ``field`` as saved (``meaning``: what the
    field is for, in the message)."""
    by_id = {snapshot.task.id: snapshot for snapshot in loaded}
    for snapshot in saved:
        again = by_id.get(snapshot.task.id)
        value = getattr(snapshot, field)
        kept = None if again is None else getattr(again, field)
        assert kept == value, (
            f"task {snapshot.task.id!r}: {field}: saved {value!r}, loaded {kept!r} ({meaning})"
        )


def assert_kept(saved: Sequence[TaskSnapshot], loaded: Sequence[TaskSnapshot]) -> None:
    """Every snapshot of ``saved`` is in ``loaded`` (by task id), each field equal;
    one AssertionError naming each task and field that is not."""
    by_id = {snapshot.task.id: snapshot for snapshot in loaded}
    problems = []
    for snapshot in saved:
        again = by_id.get(snapshot.task.id)
        if again is None:
            problems.append(f"task {snapshot.task.id!r} was saved and is not loaded back")
        elif again != snapshot:
            changed = "; ".join(changed_fields(snapshot, again)) or "unequal"
            problems.append(f"task {snapshot.task.id!r}: {changed}")
    assert not problems, "\n".join(problems)


def assert_records_kept(
    task_id: str, saved: Sequence[ExecutionRecord], loaded: Sequence[ExecutionRecord]
) -> None:
    """``loaded``, what ``records(task_id)`` gave, is ``saved``, in its order; else one
    AssertionError saying how: a record missing (the first, by its position and slot),
    one more, the order, or each field a record lost."""
    if list(loaded) == list(saved):
        return
    where = f"records({task_id!r})"
    if len(loaded) != len(saved):
        missing = [(n, r) for n, r in enumerate(saved, 1) if r not in loaded]
        said = f"{where}: saved {len(saved)} records, loaded {len(loaded)}"
        if missing:
            n, record = missing[0]
            said += f": the {ordinal(n)} (slot {record.slot!r}) is missing"
        raise AssertionError(f"{said}; loaded {list(loaded)!r}")
    if all(record in saved for record in loaded):  # as many, each as saved
        slots = [record.slot for record in loaded]
        raise AssertionError(f"{where}: in another order, slots {slots}, saved oldest first")
    problems = []
    for n, (before, after) in enumerate(zip(saved, loaded, strict=True), 1):
        changed = [
            f"{name}: saved {getattr(before, name)!r}, loaded {getattr(after, name)!r}"
            for name in ExecutionRecord._fields
            if getattr(before, name) != getattr(after, name)
        ]
        if changed:
            problems.append(
                f"{where}: record {n} of {len(saved)} (slot {before.slot!r}): " + "; ".join(changed)
            )
    raise AssertionError("\n".join(problems))


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ... ``11th``, ``21st``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def save_each(store: TaskStore, snapshots: Sequence[TaskSnapshot]) -> None:
    """Save each snapshot; a save that raises is an AssertionError naming its task."""
    for snapshot in snapshots:
        try:
            store.save(snapshot)
        except Exception as exc:
            raise AssertionError(f"saving task {snapshot.task.id!r} raised {exc!r}") from exc


def record_for(task_id: str, n: int, **fields: Any) -> ExecutionRecord:
    values: dict[str, Any] = {
        "task_id": task_id,
        "name": f"job {task_id}",
        "attempt": 1,
        "due": T0 + 60 * n,
        "slot": T0 + 60 * n,
        "worker": 0,
        "started": T0 + 60 * n + 0.5,
        "finished": T0 + 60 * n + 1.5,
        "ok": True,
    }
    values.update(fields)
    return ExecutionRecord(**values)


def close_store(store: object) -> None:
    close: Callable[[], None] | None = getattr(store, "close", None)
    if close is not None:
        close()
