"""Concurrency stress: thousands of tasks, random control verbs from several threads, then the
invariants: no due slot runs twice, nothing is lost, every status agrees with its history.
Run on the in-memory store and on the durable SQLite store (whose actions must be importable:
``tests.jobs.flaky``)."""

from __future__ import annotations

import itertools
import random
import threading
from collections import Counter
from pathlib import Path

import pytest

from lldsched import (
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    RetryPolicy,
    Scheduler,
    SqliteTaskStore,
    TaskStatus,
)
from tests import jobs

THREADS = 4
OPS_PER_THREAD = 2500


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_random_concurrent_control_keeps_every_invariant(kind: str, tmp_path: Path) -> None:
    jobs.CALLS.clear()
    calls = jobs.CALLS
    store = InMemoryTaskStore() if kind == "memory" else SqliteTaskStore(tmp_path / "tasks.db")
    scheduler = Scheduler(workers=4, store=store, seed=1, history_limit=None).start()
    retry = RetryPolicy(max_attempts=3, initial_backoff=0.001, max_backoff=0.004)
    ids: list[str] = []
    ids_lock = threading.Lock()

    def chaos(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(OPS_PER_THREAD):
            roll = rng.random()
            if roll < 0.45 or not ids:
                schedule = (
                    OneTime(delay=rng.uniform(0, 0.02))
                    if rng.random() < 0.7
                    else FixedRate(rng.uniform(0.005, 0.03))
                )
                task = scheduler.schedule(
                    "t", jobs.flaky, schedule, retry=retry, args=(rng.random() < 0.2,)
                )
                with ids_lock:
                    ids.append(task.id)
            else:
                with ids_lock:
                    target = rng.choice(ids)
                verb = rng.choice([scheduler.cancel, scheduler.pause, scheduler.resume])
                verb(target)

    threads = [threading.Thread(target=chaos, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    # Quiesce: resume what is paused, stop what recurs, and let the rest run out.
    for task in scheduler.tasks():
        scheduler.resume(task.id)
    for task in scheduler.tasks():
        if isinstance(task.schedule, FixedRate):
            scheduler.cancel(task.id)
    assert scheduler.wait_drained(timeout=30)
    assert scheduler.shutdown(timeout=10)

    tasks = scheduler.tasks()
    assert len(tasks) == len(ids) > 2000
    # No due slot ran twice: (task, due, attempt) is unique across every call.
    counted = Counter(calls)
    assert max(counted.values()) == 1
    # Nothing lost: every call has its record, and every record had its call.
    per_task = Counter(task_id for task_id, _, _ in calls)
    for task in tasks:
        runs = [record for record in task.history if record.outcome.ran]  # no skipped slots
        assert task.run_count == per_task[task.id] == len(runs)
    # Every status agrees with its history and with the store.
    for task in tasks:
        history = task.history
        assert task.status in (TaskStatus.SUCCEEDED, TaskStatus.CANCELLED, TaskStatus.FAILED)
        if task.status is TaskStatus.SUCCEEDED:
            assert isinstance(task.schedule, OneTime) and history[-1].ok
            assert sum(r.ok for r in history) == 1
        if task.status is TaskStatus.FAILED:
            assert not history[-1].ok and task.id in scheduler.dead_letter()
        if isinstance(task.schedule, OneTime) and task.status is not TaskStatus.CANCELLED:
            assert task.status is TaskStatus.SUCCEEDED  # fails twice at most, 3 attempts
        for earlier, later in itertools.pairwise(history):
            assert later.started >= earlier.finished  # one task never overlaps itself
        snapshot = store.get(task.id)
        assert snapshot is not None and snapshot.status is task.status
        assert [r.attempt for r in store.records(task.id)] == [r.attempt for r in history]
    assert scheduler.queue_stats().live == 0
    if isinstance(store, SqliteTaskStore):  # and a scheduler reopened on the file agrees
        reopened = Scheduler(store=store, history_limit=None)
        assert [(t.id, t.status, t.history) for t in reopened.tasks()] == [
            (t.id, t.status, t.history) for t in tasks
        ]
        assert reopened.dead_letter() == scheduler.dead_letter()
        store.close()
