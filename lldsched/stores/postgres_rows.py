"""The rows a PostgreSQL store writes: a task's state columns and a record's columns, as
parameters, shared by the single statements (:mod:`lldsched.stores.postgres`) and the
batched settle (:mod:`lldsched.stores.postgres_batch`), which unnests them as arrays."""

from __future__ import annotations

from typing import Any

from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskSnapshot

__all__ = ["record_row", "state_row"]


def state_row(snapshot: TaskSnapshot) -> dict[str, Any]:
    """The task row's state columns (not its definition) that ``snapshot`` sets."""
    return {
        "id": snapshot.task.id,
        "status": snapshot.status.value,
        "next_run_at": snapshot.next_run_at,
        "attempt": snapshot.attempt,
        "run_count": snapshot.run_count,
        "failure_count": snapshot.failure_count,
        "last_error": snapshot.last_error,
        "running": snapshot.running,
        "waited": snapshot.waited,
    }


def record_row(record: ExecutionRecord) -> dict[str, Any]:
    """A record's columns: its fields but the task's name (the task row has it), the
    misfire outcome as its text."""
    row = record._asdict()
    del row["name"]
    row["misfire"] = None if record.misfire is None else record.misfire.value
    return row
