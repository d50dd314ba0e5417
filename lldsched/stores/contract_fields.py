"""The store contract's checks that every field a store is given comes back as it was
saved: each schedule type and option of a definition, every field of the state, every
``TaskStatus``, and, each with what a store that drops it breaks, ``waited``,
``resumes``, ``until``, ``slot``, ``grid``, ``blocked_due`` and ``blocked_slot``
(:class:`FieldChecks`, a base of :class:`~lldsched.stores.contract.TaskStoreContract`,
whose module docstring says what each field is for).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lldsched.model import Priority, TaskStatus
from lldsched.persistence import TaskStore
from lldsched.policies import Misfire, MisfirePolicy, Overlap, OverrunPolicy, RetryPolicy
from lldsched.schedules.base import Schedule
from lldsched.schedules.cron import CronSchedule
from lldsched.schedules.decorators import Jittered, Window
from lldsched.schedules.simple import FixedDelay, FixedRate, OneTime
from lldsched.stores.contract_values import (
    T0,
    OwnRetry,
    assert_field_kept,
    assert_kept,
    save_each,
    snapshot_for,
    task_for,
)

__all__ = ["FieldChecks"]


class FieldChecks:
    """The field checks of the store contract, as ``test_*`` methods (see the module
    docstring); run through :class:`~lldsched.stores.contract.TaskStoreContract`."""

    if TYPE_CHECKING:  # the harness's, defined by TaskStoreContract

        def _open(self) -> TaskStore: ...

        def _again(self, store: TaskStore) -> TaskStore: ...

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
        tasks = [task_for(f"t{n}", schedule) for n, schedule in enumerate(schedules)]
        tasks += [
            task_for("options", FixedRate(60), **options),
            task_for("overlap", FixedRate(60), overlap=Overlap.ALLOW, max_instances=2),
            task_for("isolation", FixedRate(60), isolation="process"),
            task_for("action=None", FixedRate(60), action=None),  # a simulated task's
            task_for("retry-subclass", FixedRate(60), retry=OwnRetry(5, initial_backoff=2.0)),
        ]
        saved = [snapshot_for(task) for task in tasks]
        store = self._open()
        save_each(store, saved)
        assert_kept(saved, self._again(store).load_all())

    def test_every_state_field_comes_back(self) -> None:
        store = self._open()
        states = [
            snapshot_for(task_for("once", OneTime(T0)), TaskStatus.SUCCEEDED, next_run_at=None),
            snapshot_for(
                task_for("retrying"),
                TaskStatus.RETRYING,
                attempt=2,
                run_count=5,
                failure_count=3,
                last_error="RuntimeError: boom",
            ),
            snapshot_for(task_for("running"), TaskStatus.PAUSED, attempt=1, running=True),
        ]
        for snapshot in states:
            store.save(snapshot)
        loaded = self._again(store).load_all()
        ids = [s.task.id for s in states]
        got = [s.task.id for s in loaded]
        assert got == ids, f"ordered by first save: saved {ids}, loaded {got}"
        assert_kept(states, loaded)

    def test_every_status_comes_back(self) -> None:
        store = self._open()
        ended = (TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELLED)
        states = [
            snapshot_for(
                task_for(status.value),
                status,
                next_run_at=None if status in ended else T0 + 60,
                attempt=1 if status is TaskStatus.RETRYING else 0,  # a retry has one behind it
                running=status is TaskStatus.RUNNING,
            )
            for status in TaskStatus
        ]
        save_each(store, states)
        assert_kept(states, self._again(store).load_all())

    def test_waited_comes_back(self) -> None:
        """``waited``: the slot an extra run (a ``run_now``, a catch-up) put off.
        Recovery, and the other processes of a shared store, put it first again
        (``slot_first``); a store that drops it makes the next start count the
        schedule on from the extra run (a fixed-rate grid moves), and one that keeps
        an old value after a save of None hands an old slot out again."""
        store = self._open()
        put_off = T0 + 120.25  # not a whole second: a store must keep it as it is
        planned = [
            snapshot_for(task_for("run_now"), next_run_at=T0 + 5, waited=put_off),
            snapshot_for(task_for("paused"), TaskStatus.PAUSED, next_run_at=T0 + 5, waited=put_off),
            snapshot_for(task_for("none"), waited=None),
        ]
        save_each(store, planned)
        save_each(store, [snapshot_for(task_for("spent"), next_run_at=T0 + 5, waited=put_off)])
        spent = snapshot_for(task_for("spent"), next_run_at=put_off, run_count=1, waited=None)
        save_each(store, [spent])  # the extra run done: the schedule's own slot is next
        loaded = self._again(store).load_all()
        assert_field_kept(
            [*planned, spent],
            loaded,
            field="waited",
            meaning="the slot a run_now put off: recovery hands it out next",
        )
        assert_kept([*planned, spent], loaded)

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
            snapshot_for(task_for("owed"), **resuming),
            snapshot_for(task_for("paused"), TaskStatus.PAUSED, **resuming),
            snapshot_for(task_for("decided"), next_run_at=T0 + 5, waited=resume_at),
        ]
        save_each(store, planned)
        before = [snapshot_for(task_for(task_id), **resuming) for task_id in ("run_now", "spent")]
        save_each(store, before)
        after = [  # a run_now's slot put in front of the slot to resume at; the plan done
            snapshot_for(task_for("run_now"), next_run_at=T0 + 1, waited=T0 + 5),
            snapshot_for(task_for("spent"), next_run_at=resume_at, run_count=1),
        ]
        save_each(store, after)
        loaded = self._again(store).load_all()
        assert_field_kept(
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
            snapshot_for(task_for("owed"), **ending),
            snapshot_for(task_for("paused"), TaskStatus.PAUSED, **ending),
            snapshot_for(task_for("unknown"), next_run_at=T0 + 5, waited=T0 + 60),
        ]
        save_each(store, planned)
        before = [snapshot_for(task_for(task_id), **ending) for task_id in ("other", "spent")]
        save_each(store, before)
        after = [  # the plan's last run due; another plan, whose runs end is not kept
            snapshot_for(task_for("spent"), next_run_at=T0 + 540, run_count=9),
            snapshot_for(task_for("other"), next_run_at=T0 + 5, waited=T0 + 120),
        ]
        save_each(store, after)
        loaded = self._again(store).load_all()
        assert_field_kept(
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
            snapshot_for(task_for("resumed"), next_run_at=T0 + 90, slot=served),
            snapshot_for(task_for("paused"), TaskStatus.PAUSED, next_run_at=T0 + 90, slot=served),
        ]
        save_each(store, resumed)
        save_each(store, [snapshot_for(task_for("ran"), next_run_at=T0 + 90, slot=served)])
        ran = snapshot_for(task_for("ran"), next_run_at=T0 + 120, run_count=1, slot=None)
        save_each(store, [ran])  # the run done: the next slot is its own due instant
        loaded = self._again(store).load_all()
        assert_field_kept(
            [*resumed, ran],
            loaded,
            field="slot",
            meaning="the slot of a plan's run a resume put off: its record says it",
        )
        assert_kept([*resumed, ran], loaded)

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
            snapshot_for(task_for("counted"), next_run_at=origin + 3 * 0.1, grid=origin),
            snapshot_for(task_for("paused"), TaskStatus.PAUSED, next_run_at=origin, grid=origin),
        ]
        save_each(store, counted)
        save_each(store, [snapshot_for(task_for("left"), grid=origin)])
        left = snapshot_for(task_for("left", CronSchedule("0 * * * *")), grid=None)
        save_each(store, [left])  # rescheduled onto a cron: no grid any more
        loaded = self._again(store).load_all()
        assert_field_kept(
            [*counted, left],
            loaded,
            field="grid",
            meaning="a fixed rate's grid origin: a restart counts the slots from it",
        )
        assert_kept([*counted, left], loaded)

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
            snapshot_for(task_for("moved"), TaskStatus.BLOCKED, next_run_at=T0 + 1800,
                      blocked_due=found + 0.5, blocked_slot=found),
            snapshot_for(task_for("waits"), TaskStatus.BLOCKED),  # a wait of its own slot
        ]  # fmt: skip
        save_each(store, moved)
        save_each(store, [snapshot_for(task_for("released"), TaskStatus.BLOCKED,
                                     blocked_due=found, blocked_slot=found)])  # fmt: skip
        released = snapshot_for(task_for("released"), next_run_at=T0 + 1800)
        save_each(store, [released])  # released: no wait any more
        loaded = self._again(store).load_all()
        for field in ("blocked_due", "blocked_slot"):
            assert_field_kept(
                [*moved, released],
                loaded,
                field=field,
                meaning="the slot a moved wait was found blocked at: its record names it",
            )  # the other fields are test_every_state_field_comes_back's (BLOCKED included)
