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
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from lldsched.errors import StoreClosedError
from lldsched.model import ExecutionRecord, Outcome, Priority, TaskStatus
from lldsched.persistence import HistoryStore, Task, TaskSnapshot, TaskStore
from lldsched.policies import Misfire, MisfirePolicy, Overlap, OverrunPolicy, RetryPolicy
from lldsched.schedules.base import Schedule
from lldsched.schedules.cron import CronSchedule
from lldsched.schedules.decorators import Jittered, Window
from lldsched.schedules.simple import FixedDelay, FixedRate, OneTime
from lldsched.storecalls import save_all

__all__ = ["TaskStoreContract"]

T0 = 1_767_603_600.0  # Monday 2026-01-05 09:00 UTC


class _OwnRetry(RetryPolicy):
    """A retry policy of one's own (docs/EXTENDING.md): a store keeps its class (the
    codec's ``"policy"``), not only its fields."""

    __slots__ = ()


def _definition(task_id: str, schedule: Schedule | None = None, **fields: Any) -> Task:
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


def _snapshot(task: Task, status: TaskStatus = TaskStatus.SCHEDULED, **state: Any) -> TaskSnapshot:
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


def _changed_fields(saved: TaskSnapshot, loaded: TaskSnapshot) -> list[str]:
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


def _assert_field_kept(
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


def _assert_kept(saved: Sequence[TaskSnapshot], loaded: Sequence[TaskSnapshot]) -> None:
    """Every snapshot of ``saved`` is in ``loaded`` (by task id), each field equal;
    one AssertionError naming each task and field that is not."""
    by_id = {snapshot.task.id: snapshot for snapshot in loaded}
    problems = []
    for snapshot in saved:
        again = by_id.get(snapshot.task.id)
        if again is None:
            problems.append(f"task {snapshot.task.id!r} was saved and is not loaded back")
        elif again != snapshot:
            changed = "; ".join(_changed_fields(snapshot, again)) or "unequal"
            problems.append(f"task {snapshot.task.id!r}: {changed}")
    assert not problems, "\n".join(problems)


def _assert_records_kept(
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
            said += f": the {_ordinal(n)} (slot {record.slot!r}) is missing"
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


def _ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ... ``11th``, ``21st``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _save_each(store: TaskStore, snapshots: Sequence[TaskSnapshot]) -> None:
    """Save each snapshot; a save that raises is an AssertionError naming its task."""
    for snapshot in snapshots:
        try:
            store.save(snapshot)
        except Exception as exc:
            raise AssertionError(f"saving task {snapshot.task.id!r} raised {exc!r}") from exc


def _record(task_id: str, n: int, **fields: Any) -> ExecutionRecord:
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


class TaskStoreContract:
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
            _close(store)
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
        _close(store)
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
        first, second = _definition("a"), _definition("b")
        store.save(_snapshot(first))
        store.save(_snapshot(second))
        store.save(_snapshot(first, TaskStatus.RUNNING, attempt=1, running=True))
        store.save(_snapshot(first, next_run_at=T0 + 120, run_count=1), _record("a", 1))
        loaded = self._again(store).load_all()
        assert [s.task.id for s in loaded] == ["a", "b"], "ordered by first save"
        _assert_kept([_snapshot(first, next_run_at=T0 + 120, run_count=1)], loaded[:1])

    def test_every_schedule_and_option_comes_back_equal(self) -> None:
        schedules: list[Schedule] = [
            OneTime(T0 + 5),
            OneTime(delay=5),
            FixedDelay(30, start_delay=3),
            FixedRate(60, OverrunPolicy.CATCH_UP, start_delay=1),
            CronSchedule("*/15 9-17 * * 1-5", tz="Europe/Berlin"),
            Jittered(CronSchedule("0 * * * *", tz="UTC"), 30, seed=7),
            Window(FixedRate(60), start=T0, end=T0 + 3600, max_runs=5),
        ]
        options: dict[str, Any] = {
            "priority": Priority.HIGH,
            "retry": RetryPolicy(
                4,
                initial_backoff=2.0,
                multiplier=3.0,
                max_backoff=90.0,
                jitter=0.5,
                fail_after_given_up=2,
            ),
            "timeout": 12.5,
            "args": ("x", 1, [2.5, None], {"k": True}),
            "kwargs": {"indent": 2},
            "misfire": MisfirePolicy(Misfire.RUN_ALL, grace=5, max_catch_up=7),
            "depends_on": ("t0",),
        }
        tasks = [_definition(f"t{n}", schedule) for n, schedule in enumerate(schedules)]
        tasks += [
            _definition("options", FixedRate(60), **options),
            _definition("overlap", FixedRate(60), overlap=Overlap.ALLOW, max_instances=2),
            _definition("isolation", FixedRate(60), isolation="process"),
            _definition("action=None", FixedRate(60), action=None),  # a simulated task's
            _definition("retry-subclass", FixedRate(60), retry=_OwnRetry(5, initial_backoff=2.0)),
        ]
        saved = [_snapshot(task) for task in tasks]
        store = self._open()
        _save_each(store, saved)
        _assert_kept(saved, self._again(store).load_all())

    def test_every_state_field_comes_back(self) -> None:
        store = self._open()
        states = [
            _snapshot(_definition("once", OneTime(T0)), TaskStatus.SUCCEEDED, next_run_at=None),
            _snapshot(
                _definition("retrying"),
                TaskStatus.RETRYING,
                attempt=2,
                run_count=5,
                failure_count=3,
                last_error="RuntimeError: boom",
            ),
            _snapshot(_definition("running"), TaskStatus.PAUSED, attempt=1, running=True),
        ]
        for snapshot in states:
            store.save(snapshot)
        loaded = self._again(store).load_all()
        ids = [s.task.id for s in states]
        got = [s.task.id for s in loaded]
        assert got == ids, f"ordered by first save: saved {ids}, loaded {got}"
        _assert_kept(states, loaded)

    def test_every_status_comes_back(self) -> None:
        store = self._open()
        ended = (TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELLED)
        states = [
            _snapshot(
                _definition(status.value),
                status,
                next_run_at=None if status in ended else T0 + 60,
                attempt=1 if status is TaskStatus.RETRYING else 0,  # a retry has one behind it
                running=status is TaskStatus.RUNNING,
            )
            for status in TaskStatus
        ]
        _save_each(store, states)
        _assert_kept(states, self._again(store).load_all())

    def test_waited_comes_back(self) -> None:
        """``waited``: the slot an extra run (a ``run_now``, a catch-up) put off.
        Recovery, and the other processes of a shared store, put it first again
        (``slot_first``); a store that drops it makes the next start count the
        schedule on from the extra run (a fixed-rate grid moves), and one that keeps
        an old value after a save of None hands an old slot out again."""
        store = self._open()
        put_off = T0 + 120.25  # not a whole second: a store must keep it as it is
        planned = [
            _snapshot(_definition("run_now"), next_run_at=T0 + 5, waited=put_off),
            _snapshot(_definition("paused"), TaskStatus.PAUSED, next_run_at=T0 + 5, waited=put_off),
            _snapshot(_definition("none"), waited=None),
        ]
        _save_each(store, planned)
        _save_each(store, [_snapshot(_definition("spent"), next_run_at=T0 + 5, waited=put_off)])
        spent = _snapshot(_definition("spent"), next_run_at=put_off, run_count=1, waited=None)
        _save_each(store, [spent])  # the extra run done: the schedule's own slot is next
        loaded = self._again(store).load_all()
        _assert_field_kept(
            [*planned, spent],
            loaded,
            field="waited",
            meaning="the slot a run_now put off: recovery hands it out next",
        )
        _assert_kept([*planned, spent], loaded)

    def test_resumes_comes_back(self) -> None:
        """``resumes``: ``waited`` is the slot a misfire decision's plan resumes at (``SKIP``
        behind an owed retry, a plan cut at the cap), not one decided to run.  A run before
        it that outlasts it skips it in the process that decided the plan; a store that
        drops it has a restart, or another process of a shared store, run it late, and one
        that keeps it after a save of another ``waited`` (a ``run_now``'s slot in front)
        or of None skips a slot decided to run."""
        store = self._open()
        resume_at = T0 + 180.25  # not a whole second: a store must keep it as it is
        resuming: dict[str, Any] = {"next_run_at": T0 + 5, "waited": resume_at, "resumes": True}
        planned = [
            _snapshot(_definition("owed"), **resuming),
            _snapshot(_definition("paused"), TaskStatus.PAUSED, **resuming),
            _snapshot(_definition("decided"), next_run_at=T0 + 5, waited=resume_at),
        ]
        _save_each(store, planned)
        before = [_snapshot(_definition(task_id), **resuming) for task_id in ("run_now", "spent")]
        _save_each(store, before)
        after = [  # a run_now's slot put in front of the slot to resume at; the plan done
            _snapshot(_definition("run_now"), next_run_at=T0 + 1, waited=T0 + 5),
            _snapshot(_definition("spent"), next_run_at=resume_at, run_count=1),
        ]
        _save_each(store, after)
        loaded = self._again(store).load_all()
        _assert_field_kept(
            [*planned, *after],
            loaded,
            field="resumes",
            meaning="waited is the slot a misfire's plan resumes at: a run that outlasts "
            "it skips it",
        )

    def test_until_comes_back(self) -> None:
        """``until``: where the runs a misfire decision's plan decided end, while ``waited``
        is one of them (the own schedule's first slot after them).  A ``RUN_ALL`` plan put
        back from the row runs its slots up to it, and the slots after it meet the misfire
        policy; a store that drops it has a restart, or another process of a shared store,
        catch up every slot after ``waited`` with the plan, and one that keeps it after a
        save of None (the plan spent, another plan) ends a later plan where the first one
        ended."""
        store = self._open()
        until = T0 + 600.25  # not a whole second: a store must keep it as it is
        ending: dict[str, Any] = {"next_run_at": T0 + 5, "waited": T0 + 60, "until": until}
        planned = [
            _snapshot(_definition("owed"), **ending),
            _snapshot(_definition("paused"), TaskStatus.PAUSED, **ending),
            _snapshot(_definition("unknown"), next_run_at=T0 + 5, waited=T0 + 60),
        ]
        _save_each(store, planned)
        before = [_snapshot(_definition(task_id), **ending) for task_id in ("other", "spent")]
        _save_each(store, before)
        after = [  # the plan's last run due; another plan, whose runs end is not kept
            _snapshot(_definition("spent"), next_run_at=T0 + 540, run_count=9),
            _snapshot(_definition("other"), next_run_at=T0 + 5, waited=T0 + 120),
        ]
        _save_each(store, after)
        loaded = self._again(store).load_all()
        _assert_field_kept(
            [*planned, *after],
            loaded,
            field="until",
            meaning="where the runs a misfire's plan decided end: the slots after it meet "
            "the policy",
        )

    def test_slot_comes_back(self) -> None:
        """``slot``: the slot of a plan's run (a catch-up slot, a ``run_now``'s extra run)
        that a resume made due after it had passed, due at the resume instant.  The
        process that runs it, recovery included, records that slot; a store that drops it
        has the record say the resume instant instead, and one that keeps an old value
        after a save of None gives the next run an old slot."""
        store = self._open()
        served = T0 + 0.25  # not a whole second: a store must keep it as it is
        resumed = [
            _snapshot(_definition("resumed"), next_run_at=T0 + 90, slot=served),
            _snapshot(_definition("paused"), TaskStatus.PAUSED, next_run_at=T0 + 90, slot=served),
        ]
        _save_each(store, resumed)
        _save_each(store, [_snapshot(_definition("ran"), next_run_at=T0 + 90, slot=served)])
        ran = _snapshot(_definition("ran"), next_run_at=T0 + 120, run_count=1, slot=None)
        _save_each(store, [ran])  # the run done: the next slot is its own due instant
        loaded = self._again(store).load_all()
        _assert_field_kept(
            [*resumed, ran],
            loaded,
            field="slot",
            meaning="the slot of a plan's run a resume put off: its record says it",
        )
        _assert_kept([*resumed, ran], loaded)

    def test_grid_comes_back(self) -> None:
        """``grid``: the origin a fixed rate's slots are counted from (``slot_at(grid,
        k)``), kept to the last bit (0.1 s steps at today's epochs are no whole number of
        the floats' spacing).  A store that drops it, or rounds it, has a restart (or
        another process of a shared store) count the grid from the restored slot, and a
        0.1 s grid drifts by a rounding a restart; one that keeps an old value after a save
        of None gives a task that left its fixed rate a grid it no longer has."""
        store = self._open()
        origin = T0 + 0.1  # not a whole second, nor a float a REAL rounded to 6 digits keeps
        counted = [
            _snapshot(_definition("counted"), next_run_at=origin + 3 * 0.1, grid=origin),
            _snapshot(_definition("paused"), TaskStatus.PAUSED, next_run_at=origin, grid=origin),
        ]
        _save_each(store, counted)
        _save_each(store, [_snapshot(_definition("left"), grid=origin)])
        left = _snapshot(_definition("left", CronSchedule("0 * * * *")), grid=None)
        _save_each(store, [left])  # rescheduled onto a cron: no grid any more
        loaded = self._again(store).load_all()
        _assert_field_kept(
            [*counted, left],
            loaded,
            field="grid",
            meaning="a fixed rate's grid origin: a restart counts the slots from it",
        )
        _assert_kept([*counted, left], loaded)

    def test_the_slot_a_moved_wait_was_found_blocked_at_comes_back(self) -> None:
        """``blocked_due`` and ``blocked_slot``: the slot a BLOCKED dependent was found
        blocked at, kept while a reschedule moved its next slot during the wait, floats
        kept to the last bit.  A store that drops them has the wait's record, made by a
        restarted process or another one of a shared store, name the new schedule's first
        run (a slot that never waited, due after the wait began); one that keeps them
        after a save of None (the wait ended, the task released) names an old slot in a
        later wait."""
        store = self._open()
        found = T0 + 0.1  # not a whole second, nor a float a REAL rounded to 6 digits keeps
        moved = [
            _snapshot(_definition("moved"), TaskStatus.BLOCKED, next_run_at=T0 + 1800,
                      blocked_due=found + 0.5, blocked_slot=found),
            _snapshot(_definition("waits"), TaskStatus.BLOCKED),  # a wait of its own slot
        ]  # fmt: skip
        _save_each(store, moved)
        _save_each(store, [_snapshot(_definition("released"), TaskStatus.BLOCKED,
                                     blocked_due=found, blocked_slot=found)])  # fmt: skip
        released = _snapshot(_definition("released"), next_run_at=T0 + 1800)
        _save_each(store, [released])  # released: no wait any more
        loaded = self._again(store).load_all()
        for field in ("blocked_due", "blocked_slot"):
            _assert_field_kept(
                [*moved, released],
                loaded,
                field=field,
                meaning="the slot a moved wait was found blocked at: its record names it",
            )  # the other fields are test_every_state_field_comes_back's (BLOCKED included)

    def test_delete_forgets_a_task_and_its_records(self) -> None:
        store = self._open()
        gone, kept = _definition("gone"), _definition("kept")
        store.save(_snapshot(gone), _record("gone", 1))
        store.save(_snapshot(kept), _record("kept", 1))
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
        task = _definition("r")
        records = [
            _record("r", 1, result="'done'"),
            _record("r", 2, ok=False, error="ValueError: bad", timed_out=True, attempt=2),
            _record("r", 3, ok=False, misfire=Outcome.COALESCED, worker=-1, attempt=0),
        ]
        for record in records:
            store.save(_snapshot(task), record)
        store.save(_snapshot(_definition("other")), _record("other", 1))
        store = self._again(store)
        assert isinstance(store, HistoryStore)
        _assert_records_kept("r", records, store.records("r"))
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
            store.save(_snapshot(_definition(task_id)), _record(task_id, n))
        store = self._again(store)
        assert isinstance(store, HistoryStore)
        got = [(r.task_id, r.due) for r in store.records()]
        saved = [(task_id, T0 + 60 * n) for n, task_id in enumerate(order, 1)]
        assert got == saved, f"records() gave {got}, saved {saved}"
        assert store.records("a") == [_record("a", n) for n in (1, 3, 6)], store.records("a")

    def test_a_run_and_the_slots_it_skipped_are_kept_in_order(self) -> None:
        """What the core hands a run that overran its next slots (``storecalls.save_all``:
        the store's own ``save_all`` if it has one, one ``save`` a record otherwise)."""
        store = self._open()
        task = _definition("s")
        records = [
            _record("s", 1, finished=T0 + 200),
            *(
                _record("s", n, ok=False, misfire=Outcome.SKIPPED, worker=-1, attempt=0)
                for n in (2, 3)
            ),
        ]
        save_all(store, _snapshot(task, next_run_at=T0 + 240, run_count=1), records)
        store = self._again(store)
        _assert_kept([_snapshot(task, next_run_at=T0 + 240, run_count=1)], store.load_all())
        if isinstance(store, HistoryStore):
            _assert_records_kept("s", records, store.records("s"))

    def test_a_history_store_keeps_the_dead_letter_in_the_order_tasks_failed(self) -> None:
        store = self._open()
        if not isinstance(store, HistoryStore):
            return  # recovery rebuilds the dead letter from the FAILED snapshots' order
        for task_id in ("b", "a", "c"):
            store.save(_snapshot(_definition(task_id)))
        for task_id in ("c", "a", "b"):
            store.save(_snapshot(_definition(task_id), TaskStatus.FAILED, next_run_at=None))
        store.save(_snapshot(_definition("a")))  # redriven: out of the dead letter
        store = self._again(store)
        assert isinstance(store, HistoryStore)
        assert store.dead_letter() == ["c", "b"], store.dead_letter()

    def test_a_durable_store_gives_a_window_its_count_back(self) -> None:
        store = self._open()
        window = Window(FixedRate(60), max_runs=5)
        store.save(_snapshot(_definition("w", window), run_count=3, failure_count=1))
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
        store.save(_snapshot(_definition("a")))
        close()
        assert getattr(store, "closed", True) is True, "a closed store says closed"
        calls: dict[str, Callable[[], object]] = {
            "save": lambda: store.save(_snapshot(_definition("b"))),
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
                    task = _definition(f"{prefix}{n}")
                    store.save(_snapshot(task), _record(task.id, n))
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


def _close(store: object) -> None:
    close: Callable[[], None] | None = getattr(store, "close", None)
    if close is not None:
        close()
