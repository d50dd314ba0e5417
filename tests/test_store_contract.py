"""The store contract (``lldsched/stores/contract.py``) on the package's own stores, and
what makes it worth running: a store that breaks a rule fails the check that names it."""

from __future__ import annotations

from typing import cast

import pytest

from lldsched import InMemoryTaskStore, SqliteTaskStore, TaskSnapshot
from lldsched.model import ExecutionRecord
from lldsched.persistence import TaskStore
from lldsched.stores.contract import TaskStoreContract


class TestInMemoryTaskStore(TaskStoreContract):
    durable = False

    def open_store(self) -> TaskStore:
        if not hasattr(self, "store"):
            self.store = InMemoryTaskStore()
        return self.store


class TestSqliteTaskStore(TaskStoreContract):
    def open_store(self) -> TaskStore:
        return SqliteTaskStore(self.directory / "tasks.db")


class TestSharedSqliteTaskStore(TaskStoreContract):
    def open_store(self) -> TaskStore:
        return SqliteTaskStore(self.directory / "tasks.db", shared=True)


class TestPostgresTaskStore(TaskStoreContract):
    @pytest.fixture(autouse=True)
    def _schema(self, postgres_dsn: str) -> None:
        self.dsn = postgres_dsn  # a fresh schema per check

    def open_store(self) -> TaskStore:
        from lldsched.stores.postgres import PostgresTaskStore

        return PostgresTaskStore(self.dsn)


class LosesOrder(InMemoryTaskStore):
    """Gives the snapshots back newest-saved first, and its records newest first."""

    def load_all(self) -> list[TaskSnapshot]:
        return sorted(super().load_all(), key=lambda s: s.task.id, reverse=True)

    def records(self, task_id: str | None = None) -> list[ExecutionRecord]:
        return super().records(task_id)[::-1]


class TakesWritesWhenClosed(InMemoryTaskStore):
    def close(self) -> None:
        """Says closed, and goes on writing."""


class BrokenContract(TaskStoreContract):
    durable = False
    store_type: type[InMemoryTaskStore] = InMemoryTaskStore

    def open_store(self) -> TaskStore:
        if not hasattr(self, "store"):
            self.store = self.store_type()
        return self.store


def test_check_all_passes_a_conforming_store_and_counts_its_checks() -> None:
    assert TestInMemoryTaskStore.check_all() == 10


@pytest.mark.parametrize(
    ("store_type", "failing"),
    [
        (
            LosesOrder,
            [
                "test_a_history_store_keeps_every_record_field_oldest_first",
                "test_every_state_field_comes_back",
                "test_load_all_gives_the_latest_snapshot_in_first_saved_order",
            ],
        ),
        (TakesWritesWhenClosed, ["test_a_closed_store_refuses_writes"]),
    ],
)
def test_check_all_names_each_rule_a_store_breaks(
    store_type: type[InMemoryTaskStore], failing: list[str]
) -> None:
    contract = cast(
        type[BrokenContract], type("Broken", (BrokenContract,), {"store_type": store_type})
    )
    with pytest.raises(AssertionError) as raised:
        contract.check_all()
    message = str(raised.value)
    assert f"{len(failing)} of 10 store checks failed" in message
    for name in failing:
        assert f"{name}: AssertionError" in message
