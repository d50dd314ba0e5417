"""The store contract (``lldsched/stores/contract.py``) on the package's own stores, and
what makes it worth running: a store that breaks a rule fails the check that names it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, cast

import pytest

from lldsched import InMemoryTaskStore, RetryPolicy, SqliteTaskStore, TaskSnapshot
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.persistence import Task, TaskStore
from lldsched.stores.contract import TaskStoreContract

CHECKS = 19  # the contract's test_* methods


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


class KeepsOnlyTheRun(InMemoryTaskStore):
    """Has a ``save_all`` of its own that writes the run's record and drops the rest."""

    def save_all(self, snapshot: TaskSnapshot, records: Sequence[ExecutionRecord]) -> None:
        self.save(snapshot, records[0])


class LosesTimedOut(InMemoryTaskStore):
    """Keeps each record without its ``timed_out`` (a table without its column)."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot, None if record is None else record._replace(timed_out=False))


class TakesWritesWhenClosed(InMemoryTaskStore):
    def close(self) -> None:
        """Says closed, and goes on writing."""


class LosesWaited(InMemoryTaskStore):
    """Keeps no ``waited`` (a table without its column): a run_now's slot is lost."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot._replace(waited=None), record)


class KeepsAnOldWaited(InMemoryTaskStore):
    """Writes ``waited`` only when it is set (``coalesce(new, old)``): a spent plan's slot
    comes back, and would run twice."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        before = self.get(snapshot.task.id)
        if snapshot.waited is None and before is not None:
            snapshot = snapshot._replace(waited=before.waited)
        super().save(snapshot, record)


class LosesSlot(InMemoryTaskStore):
    """Keeps no ``slot`` (a table without its column): a resumed plan's run records the
    resume instant as its slot."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot._replace(slot=None), record)


class KeepsAnOldSlot(InMemoryTaskStore):
    """Writes ``slot`` only when it is set: a run done gives the next one an old slot."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        before = self.get(snapshot.task.id)
        if snapshot.slot is None and before is not None:
            snapshot = snapshot._replace(slot=before.slot)
        super().save(snapshot, record)


class LosesTheSlotFoundBlocked(InMemoryTaskStore):
    """Keeps no ``blocked_due`` and ``blocked_slot`` (a table without their columns): after
    a restart a wait a reschedule moved is recorded for the new schedule's first run."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot._replace(blocked_due=None, blocked_slot=None), record)


class KeepsAnOldSlotFoundBlocked(InMemoryTaskStore):
    """Writes ``blocked_due`` and ``blocked_slot`` only when set: a later wait is recorded
    for a slot an earlier one was found blocked at."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        before = self.get(snapshot.task.id)
        if snapshot.blocked_slot is None and before is not None:
            snapshot = snapshot._replace(
                blocked_due=before.blocked_due, blocked_slot=before.blocked_slot
            )
        super().save(snapshot, record)


class LosesResumes(InMemoryTaskStore):
    """Keeps no ``resumes`` (a table without its column): a restart runs the slot a
    misfire's plan resumes at late."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot._replace(resumes=False), record)


class KeepsAnOldResumes(InMemoryTaskStore):
    """Writes ``resumes`` only when it is set: a ``run_now``'s slot in front of the slot to
    resume at is read as one to resume at, and skipped by a run that outlasts it."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        before = self.get(snapshot.task.id)
        if not snapshot.resumes and before is not None:
            snapshot = snapshot._replace(resumes=before.resumes)
        super().save(snapshot, record)


class LosesUntil(InMemoryTaskStore):
    """Keeps no ``until`` (a table that keeps only the slot to resume at): a restart
    catches up every slot after ``waited`` with a ``RUN_ALL`` plan."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        super().save(snapshot._replace(until=None), record)


class KeepsAnOldUntil(InMemoryTaskStore):
    """Writes ``until`` only when it is set: a later plan ends where an earlier one did."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        before = self.get(snapshot.task.id)
        if snapshot.until is None and before is not None:
            snapshot = snapshot._replace(until=before.until)
        super().save(snapshot, record)


class LosesIsolation(InMemoryTaskStore):
    """Writes its own definition columns and has none for ``isolation``."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        task = snapshot.task._replace(isolation="thread")
        super().save(snapshot._replace(task=task), record)


class LosesTheRetryClass(InMemoryTaskStore):
    """Keeps a retry policy's fields and not its class (a Fibonacci backoff comes back
    exponential)."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        retry = snapshot.task.retry
        plain = RetryPolicy(
            retry.max_attempts,
            initial_backoff=retry.initial_backoff,
            multiplier=retry.multiplier,
            max_backoff=retry.max_backoff,
            jitter=retry.jitter,
            fail_after_given_up=retry.fail_after_given_up,
        )
        super().save(snapshot._replace(task=snapshot.task._replace(retry=plain)), record)


class NeedsAnAction(InMemoryTaskStore):
    """Writes the action's import path without asking whether there is one."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        action = snapshot.task.action
        assert action is not None, f"task {snapshot.task.id!r} has no action to store"
        super().save(snapshot, record)


class KnowsNoBlocked(InMemoryTaskStore):
    """Maps statuses through a table written before BLOCKED existed: it reads back
    SCHEDULED."""

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        if snapshot.status is TaskStatus.BLOCKED:
            snapshot = snapshot._replace(status=TaskStatus.SCHEDULED)
        super().save(snapshot, record)


class BrokenContract(TaskStoreContract):
    durable = False
    store_type: type[InMemoryTaskStore] = InMemoryTaskStore

    def open_store(self) -> TaskStore:
        if not hasattr(self, "store"):
            self.store = self.store_type()
        return self.store


def test_check_all_passes_a_conforming_store_and_counts_its_checks() -> None:
    assert TestInMemoryTaskStore.check_all() == CHECKS


@pytest.mark.parametrize(
    ("store_type", "failing"),
    [
        (
            LosesOrder,
            [
                "test_a_history_store_gives_every_tasks_records_in_the_order_saved",
                "test_a_history_store_keeps_every_record_field_oldest_first",
                "test_a_run_and_the_slots_it_skipped_are_kept_in_order",
                "test_every_state_field_comes_back",
                "test_load_all_gives_the_latest_snapshot_in_first_saved_order",
            ],
        ),
        (TakesWritesWhenClosed, ["test_a_closed_store_refuses_writes"]),
        (KeepsOnlyTheRun, ["test_a_run_and_the_slots_it_skipped_are_kept_in_order"]),
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
    assert f"{len(failing)} of {CHECKS} store checks failed" in message
    for name in failing:
        assert f"{name}: AssertionError" in message


@pytest.mark.parametrize(
    ("store_type", "failing", "named"),
    [
        (
            LosesWaited,
            "test_waited_comes_back",
            "task 'run_now': waited: saved 1767603720.25, loaded None",
        ),
        (
            KeepsAnOldWaited,
            "test_waited_comes_back",
            "task 'spent': waited: saved None, loaded 1767603720.25",
        ),
        (
            LosesSlot,
            "test_slot_comes_back",
            "task 'resumed': slot: saved 1767603600.25, loaded None",
        ),
        (
            KeepsAnOldSlot,
            "test_slot_comes_back",
            "task 'ran': slot: saved None, loaded 1767603600.25",
        ),
        (
            LosesTheSlotFoundBlocked,
            "test_the_slot_a_moved_wait_was_found_blocked_at_comes_back",
            "task 'moved': blocked_due: saved 1767603600.6, loaded None",
        ),
        (
            KeepsAnOldSlotFoundBlocked,
            "test_the_slot_a_moved_wait_was_found_blocked_at_comes_back",
            "task 'released': blocked_due: saved None, loaded 1767603600.1",
        ),
        (
            LosesResumes,
            "test_resumes_comes_back",
            "task 'owed': resumes: saved True, loaded False",
        ),
        (
            KeepsAnOldResumes,
            "test_resumes_comes_back",
            "task 'run_now': resumes: saved False, loaded True",
        ),
        (
            LosesUntil,
            "test_until_comes_back",
            "task 'owed': until: saved 1767604200.25, loaded None",
        ),
        (
            KeepsAnOldUntil,
            "test_until_comes_back",
            "task 'spent': until: saved None, loaded 1767604200.25",
        ),
        (
            LosesIsolation,
            "test_every_schedule_and_option_comes_back_equal",
            "task 'isolation': task.isolation: saved 'process', loaded 'thread'",
        ),
        (
            LosesTheRetryClass,
            "test_every_schedule_and_option_comes_back_equal",
            "task 'retry-subclass': task.retry: saved OwnRetry(",
        ),
        (
            NeedsAnAction,
            "test_every_schedule_and_option_comes_back_equal",
            "saving task 'action=None' raised AssertionError(\"task 'action=None' has no action",
        ),
        (
            LosesTimedOut,
            "test_a_history_store_keeps_every_record_field_oldest_first",
            "records('r'): record 2 of 3 (slot 1767603720.0): timed_out: saved True, loaded False",
        ),
        (
            KeepsOnlyTheRun,
            "test_a_run_and_the_slots_it_skipped_are_kept_in_order",
            "records('s'): saved 3 records, loaded 1: the 2nd (slot 1767603720.0) is missing",
        ),
        (
            KnowsNoBlocked,
            "test_every_status_comes_back",
            "task 'blocked': status: saved TaskStatus.BLOCKED, loaded TaskStatus.SCHEDULED",
        ),
    ],
)
def test_check_all_names_the_field_a_store_loses(
    store_type: type[InMemoryTaskStore], failing: str, named: str
) -> None:
    contract = cast(
        type[BrokenContract], type("Broken", (BrokenContract,), {"store_type": store_type})
    )
    with pytest.raises(AssertionError) as raised:
        contract.check_all()
    lines = str(raised.value).splitlines()
    assert lines[0] == f"Broken: 1 of {CHECKS} store checks failed:", lines
    assert lines[1].startswith(f"  {failing}: AssertionError: "), lines
    assert named in str(raised.value), lines


class RecordsSaves(InMemoryTaskStore):
    """Keeps every snapshot the contract saves, in a list its class holds."""

    saved: ClassVar[list[TaskSnapshot]] = []

    def save(self, snapshot: TaskSnapshot, record: ExecutionRecord | None = None) -> None:
        RecordsSaves.saved.append(snapshot)
        super().save(snapshot, record)


def test_the_contract_saves_two_values_of_every_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """A field added to Task or TaskSnapshot is checked once a check saves it with a
    value other than the one every other snapshot has (its default, mostly): this fails
    until one does."""
    monkeypatch.setattr(RecordsSaves, "saved", [])
    contract = cast(
        type[BrokenContract], type("Recorded", (BrokenContract,), {"store_type": RecordsSaves})
    )
    contract.check_all()
    seen: dict[str, list[object]] = {}
    for snapshot in RecordsSaves.saved:
        for name in TaskSnapshot._fields[1:]:
            seen.setdefault(name, []).append(getattr(snapshot, name))
        for name in snapshot.task._fields:
            seen.setdefault(f"task.{name}", []).append(getattr(snapshot.task, name))
    one_value = [name for name, values in seen.items() if all(v == values[0] for v in values)]
    assert len(seen) == len(TaskSnapshot._fields) - 1 + len(Task._fields), sorted(seen)
    assert one_value == [], f"no check saves a second value of {one_value}"
