"""The store contract: what every :class:`~lldsched.persistence.TaskStore` must do, as
checks a store's author runs against their own store.

The core writes every transition through ``save``; recovery reads ``load_all`` (and,
from a :class:`~lldsched.persistence.HistoryStore`, ``records`` and ``dead_letter``).
What a runtime relies on beyond the methods' signatures is checked here, on the store
alone, with no scheduler (a store is a plain object the core calls, under its
runtime's lock):

* ``load_all`` gives the **latest** snapshot of each task, in the order each was
  **first** saved, and a definition **equal** to the one saved (every schedule type,
  each option: ``isolation``, no action, a ``RetryPolicy`` subclass included): a
  durable store that loses a field changes a task at the next start;
* every field of the state comes back, every ``TaskStatus`` among them, and
  ``waited`` (the slot a ``run_now`` or a catch-up put off until after the extra run,
  and None once that run is done): recovery and the other processes of a shared store
  go on to that slot, so a store that drops it moves a fixed-rate grid at the next
  start; ``resumes`` (``waited`` is the slot a misfire's plan resumes at, which a run
  that outlasts it skips, where a slot decided to run runs late); ``until`` (where a
  misfire's plan's runs end, while ``waited`` is one of them: the slots after it meet
  the policy); ``slot`` (the slot of a plan's run that a resume made due later, None
  almost always), which that run's record says whichever process runs it; ``grid``
  (a fixed rate's grid origin, a float kept to the last bit): a store that drops it has
  a restart count the grid from the restored slot, and the slots drift off it; and
  ``blocked_due`` and ``blocked_slot`` (the slot a BLOCKED dependent was found blocked
  at, when a reschedule moved its next slot during the wait): a store that drops them
  has the wait's record name the new schedule's first run after a restart;
* ``delete`` forgets a task and its records; an unknown id is no error;
* a run's record and those of the slots it skipped, handed over together
  (:func:`~lldsched.storecalls.save_all`: the store's ``save_all`` when it has one),
  are kept in order with the snapshot;
* a history store keeps each task's records oldest first, every field of them, and
  the dead letter (the ``FAILED`` tasks) in the order they failed; ``records()`` of every
  task gives them in the order saved, the tasks' interleaved (not grouped by task: a
  frame of a store's records is the same whichever store), each task's bounded by
  ``retention`` the same way;
* a durable store gives a ``Window`` its count of successful runs back (the codec's
  ``decode_task(..., runs=run_count - failure_count)``);
* a store with ``close()`` refuses every later ``save``, ``delete`` and ``load_all``
  with :class:`~lldsched.errors.StoreClosedError` (the core says so once and its verbs
  refuse before changing anything), and says ``closed``;
* saves and reads from several threads at once lose nothing.

Use it from pytest (docs/EXTENDING.md): subclass :class:`TaskStoreContract` in a test
module as ``class TestMyStore(TaskStoreContract)`` and define :meth:`open_store`
(each call opens the store again on the same storage; a fresh storage per check, in
:attr:`directory`); pytest runs each check as a test.  Without pytest,
``TestMyStore.check_all()`` runs them all and raises one ``AssertionError`` naming
every check that failed.  ``tests/test_store_contract.py`` runs it on the package's own
stores.  A check that finds a field changed names it (``task.isolation``, ``waited``).

The checks that every field comes back are :class:`~lldsched.stores.contract_fields.FieldChecks`'
(a base of :class:`TaskStoreContract`), the values they save and their messages
:mod:`lldsched.stores.contract_values`'; this module holds the harness and the other checks.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from lldsched.errors import StoreClosedError
from lldsched.model import Outcome, TaskStatus
from lldsched.persistence import HistoryStore, TaskStore
from lldsched.schedules.decorators import Window
from lldsched.schedules.simple import FixedRate
from lldsched.storecalls import save_all
from lldsched.stores.contract_fields import FieldChecks
from lldsched.stores.contract_values import (
    T0,
    assert_kept,
    assert_records_kept,
    close_store,
    record_for,
    snapshot_for,
    task_for,
)

__all__ = ["TaskStoreContract"]


class TaskStoreContract(FieldChecks):
    """The checks of the store contract (see the module docstring), as ``test_*``
    methods.  Subclass it, define :meth:`open_store`, and set :attr:`durable` to False
    for a store that keeps nothing past its object (then "opening it again" must give
    the same object back)."""

    durable: ClassVar[bool] = True
    """True when a store opened again on the same storage finds what was saved."""

    directory: Path
    """A fresh directory for this check's storage, removed after it."""

    def open_store(self) -> TaskStore:
        """Open the store under test on this check's storage (in :attr:`directory`)."""
        raise NotImplementedError("define open_store() in the subclass")

    # -- the harness: fresh storage per check, stores closed after it ----------------------

    def setup_method(self, method: object = None) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="lldsched-contract-"))
        self._opened: list[TaskStore] = []

    def teardown_method(self, method: object = None) -> None:
        for store in self._opened:
            close_store(store)
        shutil.rmtree(self.directory, ignore_errors=True)

    def _open(self) -> TaskStore:
        store = self.open_store()
        self._opened.append(store)
        return store

    def _again(self, store: TaskStore) -> TaskStore:
        """The store as the next start would find it: closed and opened again (durable),
        or the same object."""
        if not self.durable:
            return store
        close_store(store)
        return self._open()

    @classmethod
    def check_all(cls) -> int:
        """Run every check on a fresh instance (without pytest); the number run.  One
        ``AssertionError`` names every check that failed, with its message."""
        failed: list[str] = []
        names = sorted(name for name in dir(cls) if name.startswith("test_"))
        for name in names:
            contract = cls()
            contract.setup_method()
            try:
                getattr(contract, name)()
            except Exception as exc:
                failed.append(f"{name}: {type(exc).__name__}: {exc}")
            finally:
                contract.teardown_method()
        if failed:
            raise AssertionError(
                f"{cls.__name__}: {len(failed)} of {len(names)} store checks failed:\n  "
                + "\n  ".join(failed)
            )
        return len(names)

    # -- the checks --------------------------------------------------------------------------

    def test_it_is_a_task_store(self) -> None:
        store = self._open()
        assert isinstance(store, TaskStore), f"{store!r} lacks save, delete or load_all"
        assert store.load_all() == [], "a fresh store holds no task"

    def test_load_all_gives_the_latest_snapshot_in_first_saved_order(self) -> None:
        store = self._open()
        first, second = task_for("a"), task_for("b")
        store.save(snapshot_for(first))
        store.save(snapshot_for(second))
        store.save(snapshot_for(first, TaskStatus.RUNNING, attempt=1, running=True))
        store.save(snapshot_for(first, next_run_at=T0 + 120, run_count=1), record_for("a", 1))
        loaded = self._again(store).load_all()
        assert [s.task.id for s in loaded] == ["a", "b"], "ordered by first save"
        assert_kept([snapshot_for(first, next_run_at=T0 + 120, run_count=1)], loaded[:1])

    def test_delete_forgets_a_task_and_its_records(self) -> None:
        store = self._open()
        gone, kept = task_for("gone"), task_for("kept")
        store.save(snapshot_for(gone), record_for("gone", 1))
        store.save(snapshot_for(kept), record_for("kept", 1))
        store.delete("gone")
        store.delete("never-saved")  # no error
        store = self._again(store)
        assert [s.task.id for s in store.load_all()] == ["kept"]
        if isinstance(store, HistoryStore):
            assert store.records("gone") == [], "delete forgets the records too"
            assert [r.task_id for r in store.records()] == ["kept"]

    def test_a_history_store_keeps_every_record_field_oldest_first(self) -> None:
        store = self._open()
        if not isinstance(store, HistoryStore):
            return  # a plain TaskStore keeps no records: recovery starts histories empty
        task = task_for("r")
        records = [
            record_for("r", 1, result="'done'"),
            record_for("r", 2, ok=False, error="ValueError: bad", timed_out=True, attempt=2),
            record_for("r", 3, ok=False, misfire=Outcome.COALESCED, worker=-1, attempt=0),
        ]
        for record in records:
            store.save(snapshot_for(task), record)
        store.save(snapshot_for(task_for("other")), record_for("other", 1))
        store = self._again(store)
        assert isinstance(store, HistoryStore)
        assert_records_kept("r", records, store.records("r"))
        assert store.records()[-1].task_id == "other", "every task's records, oldest first"

    def test_a_history_store_gives_every_tasks_records_in_the_order_saved(self) -> None:
        """``records()`` of every task interleaves them as they were saved, whatever the
        store: the in-memory store gave them grouped by task, the durable ones by their
        sequence, so a frame or a report of the same runs came out in another order."""
        store = self._open()
        if not isinstance(store, HistoryStore):
            return
        order = ["a", "b", "a", "c", "b", "a"]
        for n, task_id in enumerate(order, 1):
            store.save(snapshot_for(task_for(task_id)), record_for(task_id, n))
        store = self._again(store)
        assert isinstance(store, HistoryStore)
        got = [(r.task_id, r.due) for r in store.records()]
        saved = [(task_id, T0 + 60 * n) for n, task_id in enumerate(order, 1)]
        assert got == saved, f"records() gave {got}, saved {saved}"
        assert store.records("a") == [record_for("a", n) for n in (1, 3, 6)], store.records("a")

    def test_a_run_and_the_slots_it_skipped_are_kept_in_order(self) -> None:
        """What the core hands a run that overran its next slots (``storecalls.save_all``:
        the store's own ``save_all`` if it has one, one ``save`` a record otherwise)."""
        store = self._open()
        task = task_for("s")
        records = [
            record_for("s", 1, finished=T0 + 200),
            *(
                record_for("s", n, ok=False, misfire=Outcome.SKIPPED, worker=-1, attempt=0)
                for n in (2, 3)
            ),
        ]
        save_all(store, snapshot_for(task, next_run_at=T0 + 240, run_count=1), records)
        store = self._again(store)
        assert_kept([snapshot_for(task, next_run_at=T0 + 240, run_count=1)], store.load_all())
        if isinstance(store, HistoryStore):
            assert_records_kept("s", records, store.records("s"))

    def test_a_history_store_keeps_the_dead_letter_in_the_order_tasks_failed(self) -> None:
        store = self._open()
        if not isinstance(store, HistoryStore):
            return  # recovery rebuilds the dead letter from the FAILED snapshots' order
        for task_id in ("b", "a", "c"):
            store.save(snapshot_for(task_for(task_id)))
        for task_id in ("c", "a", "b"):
            store.save(snapshot_for(task_for(task_id), TaskStatus.FAILED, next_run_at=None))
        store.save(snapshot_for(task_for("a")))  # redriven: out of the dead letter
        store = self._again(store)
        assert isinstance(store, HistoryStore)
        assert store.dead_letter() == ["c", "b"], store.dead_letter()

    def test_a_durable_store_gives_a_window_its_count_back(self) -> None:
        store = self._open()
        window = Window(FixedRate(60), max_runs=5)
        store.save(snapshot_for(task_for("w", window), run_count=3, failure_count=1))
        (loaded,) = self._again(store).load_all()
        restored = loaded.task.schedule
        assert isinstance(restored, Window)
        assert restored.runs_counted("w") == (2 if self.durable else 0), (
            "a durable store passes runs=run_count - failure_count to decode_task"
        )

    def test_a_closed_store_refuses_writes(self) -> None:
        store = self._open()
        close = getattr(store, "close", None)
        if close is None:
            return  # nothing to close: the scheduler never finds it closed
        store.save(snapshot_for(task_for("a")))
        close()
        assert getattr(store, "closed", True) is True, "a closed store says closed"
        calls: dict[str, Callable[[], object]] = {
            "save": lambda: store.save(snapshot_for(task_for("b"))),
            "delete": lambda: store.delete("a"),
            "load_all": store.load_all,
        }
        for name, call in calls.items():
            try:
                call()
            except StoreClosedError:
                continue
            raise AssertionError(
                f"{store!r} took a {name} after close() (StoreClosedError expected)"
            )

    def test_saves_and_reads_from_several_threads_lose_nothing(self) -> None:
        store = self._open()
        errors: list[BaseException] = []

        def writer(prefix: str) -> None:
            try:
                for n in range(25):
                    task = task_for(f"{prefix}{n}")
                    store.save(snapshot_for(task), record_for(task.id, n))
                    store.load_all()
            except BaseException as exc:  # reported below, by the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(p,)) for p in "wxyz"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors, f"a thread failed: {errors[0]!r}"
        assert not any(thread.is_alive() for thread in threads), "a writer hung"
        assert len(self._again(store).load_all()) == 100
