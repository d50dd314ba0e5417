"""What a user calls on a simulation: registering, the control verbs and the reads.

:class:`SimulationVerbs` is the part of :class:`~lldsched.sim.simulation.Simulation`
that carries out the verbs of :class:`lldsched.runtime.Runtime` at the simulated
instant: registering a task with its duration and failure models (``schedule``,
the ``scheduled`` decorator, ``model``), the control verbs (cancel, pause, resume,
redrive, remove, reschedule, modify, run now), the reads (a task, the dead letter,
the heap, ``metrics()``) and the listeners.  Each is a call into the core state
machine, plus what the simulation keeps per task (its models).  A mixin, so the
verbs (here), virtual time (:mod:`~lldsched.sim.simulation`) and its event loop
(:mod:`~lldsched.sim.eventloop`) read as modules of one class (:mod:`~lldsched.sim.parts`
says which); single-threaded, no lock.  Each verb runs whole or says it did not
(``SimulationVerbs._whole``): a ``KeyboardInterrupt`` a listener or its store raises in
it is raised once it is whole, and one that lands in the middle of it leaves the
simulation refusing to move on.
"""

from __future__ import annotations

import contextlib
import inspect
import random
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from typing import Any, Literal, Never

from lldsched import checks
from lldsched.core.duequeue import QueueStats
from lldsched.core.metrics import Metrics, take
from lldsched.core.names import RefusedVerb
from lldsched.core.registration import UNCHANGED, F, Isolation, TaskIds, Unchanged, registering
from lldsched.core.retention import RetainFinished
from lldsched.core.schedulearg import misplaced as misplaced_arguments
from lldsched.core.task import ScheduledTask
from lldsched.errors import SchedulerShutDownError
from lldsched.listeners import (
    Listener,
    as_callback,
    check_unregistered,
    same_listener,
)
from lldsched.model import Priority
from lldsched.policies import MisfirePolicy, Overlap, RetryPolicy
from lldsched.schedules.base import Schedule
from lldsched.sim.lanes import Reads
from lldsched.sim.models import (
    NO_RNG,
    DurationModel,
    FailureModel,
    TaskModels,
    check_duration,
    check_failure,
)
from lldsched.sim.parts import SimulationParts

__all__ = ["SimulationVerbs"]

NOTHING_ASIDE = Reads(0, 0, 0, None)  # no coroutine task was ever registered

MovesTime = Literal["run until", "run for", "step", "register an intervention at"]
"""The simulation's own verbs refused after its shutdown, as its errors word them: those
that move virtual time (``run``, ``run_for``, ``step``) or plan to (``at``)."""


class SimulationVerbs(SimulationParts):
    """Registration, control and reads: mixed into the simulation."""

    def schedule(
        self,
        name: str,
        schedule: Schedule | str,
        *misplaced: Never,  # the Scheduler's order: refused in words, not shown (below)
        duration: DurationModel | timedelta = 0.0,
        fails: FailureModel = 0.0,
        action: Callable[..., Any] | str | None = None,
        id: str | None = None,
        replace_existing: bool = False,
        priority: Priority | int = Priority.NORMAL,
        retry: RetryPolicy | None = None,
        timeout: float | timedelta | None = None,
        args: tuple[Any, ...] | list[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        misfire: MisfirePolicy | None = None,
        isolation: Isolation = "thread",
        depends_on: TaskIds = (),
        overlap: Overlap | None = None,
        max_instances: int | None = None,
        paused: bool = False,
    ) -> ScheduledTask:
        """Register a simulated task.  ``duration`` and ``fails`` are models (see
        :mod:`lldsched.sim.models`); a real ``action`` also runs, for its side effects
        (its wall time does not count, and if it raises, the run fails with that error).

        ``schedule`` may be cron text (read in the simulation's ``tz``); ``id`` and
        ``replace_existing`` work as in ``Scheduler.schedule`` (a replaced task also
        takes these models), and so do the options of how it runs: ``priority``,
        ``retry`` (default ``RetryPolicy()``), ``timeout`` (judged against the drawn
        duration), ``args`` and ``kwargs`` (for ``action``), ``misfire`` (slots that
        passed before a restored store's task was recovered), ``depends_on`` (ids of
        upstream tasks each slot waits for, BLOCKED), ``overlap`` with
        ``max_instances`` (a slot that comes due while a run is in flight; see
        :class:`~lldsched.policies.Overlap`), and ``paused`` (a new task registered
        paused).

        ``isolation`` takes the values, and follows the rules, it has in
        ``Scheduler.schedule``: with ``"process"``, an ``action`` is an import path
        with JSON arguments, checked at registration.  Here the task runs at its
        simulated instant on a worker, for the model's duration, cut at its timeout
        as its worker process is killed there (and at a pause, cancel or remove); no
        child is started, and an ``action`` given runs in this process.

        Raises :class:`~lldsched.errors.ValidationError` (a
        :class:`~lldsched.errors.ScheduleError` for a bad schedule) naming the bad value, or
        an id that exists without ``replace_existing``;
        :class:`~lldsched.errors.SchedulerShutDownError` (a ``SchedulerStateError``) after shutdown
        (once :meth:`shutdown <lldsched.sim.simulation.Simulation.shutdown>` was called),
        as on ``Scheduler``;
        :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while a running scheduler holds its store.
        Nothing registered changes then.  Given more than ``name`` and ``schedule`` by
        position (the ``Scheduler``'s order, ``schedule("x", job, FixedRate(60))``): a
        :class:`~lldsched.errors.ValidationError` naming what each place got.
        """
        if misplaced:
            raise misplaced_arguments(name, schedule, misplaced)
        self._check_running("schedule", name)
        duration = check_duration(duration)
        fails = check_failure(fails)
        with self._whole("schedule", name):  # a listener's or a store's Ctrl-C: once whole
            task = self._core.add(
                name,
                action,
                schedule,
                task_id=id,
                replace_existing=replace_existing,
                priority=priority,
                retry=retry,
                timeout=timeout,
                args=args,
                kwargs=kwargs,
                misfire=misfire,
                isolation=isolation,
                depends_on=depends_on,
                overlap=overlap,
                max_instances=max_instances,
                paused=paused,
            )
            self._set_models(task.id, duration, fails)
            self._note_lane(task)
        return task

    def scheduled(
        self,
        schedule: Schedule | str,
        *,
        duration: DurationModel | timedelta = 0.0,
        fails: FailureModel = 0.0,
        name: str | None = None,
        id: str | None = None,
        replace_existing: bool = False,
        priority: Priority | int = Priority.NORMAL,
        retry: RetryPolicy | None = None,
        timeout: float | timedelta | None = None,
        args: tuple[Any, ...] | list[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        misfire: MisfirePolicy | None = None,
        depends_on: TaskIds = (),
        overlap: Overlap | None = None,
        max_instances: int | None = None,
        paused: bool = False,
    ) -> Callable[[F], F]:
        """The decorator form of :meth:`schedule`: ``@sim.scheduled(FixedRate(60))``
        registers the function as the task's action, under its ``__name__`` (or
        ``name``), and leaves it as it was.  Raises what :meth:`schedule` raises, when it
        decorates."""

        def register(task_name: str, action: Callable[..., Any]) -> None:
            self.schedule(
                task_name,
                schedule,
                duration=duration,
                fails=fails,
                action=action,
                id=id,
                replace_existing=replace_existing,
                priority=priority,
                retry=retry,
                timeout=timeout,
                args=args,
                kwargs=kwargs,
                misfire=misfire,
                depends_on=depends_on,
                overlap=overlap,
                max_instances=max_instances,
                paused=paused,
            )

        return registering(schedule, name=name, register=register)

    def model(
        self,
        task_id: str,
        *,
        duration: DurationModel | timedelta = 0.0,
        fails: FailureModel = 0.0,
    ) -> None:
        """Give a task new duration and failure models (a task restored from a store
        has none: its runs take no time and never fail until this is called).  The
        task's generator starts again from its seed: given before the first run,
        ``uniform(120, 1200)`` in place of ``uniform(60, 600)`` makes the
        task's n-th attempt exactly twice as long, so a what-if compares like with like.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an unknown id
        (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.ValidationError` for a bad model.
        """
        self._core.get(task_id)
        self._set_models(task_id, check_duration(duration), check_failure(fails))

    @contextlib.contextmanager
    def _whole(self, verb: str, subject: object) -> Iterator[None]:
        """A verb (``verb`` of ``subject``, as the refusal of a torn simulation names it)
        made whole before a ``KeyboardInterrupt`` or ``SystemExit`` that a listener raised
        on its event, or a store in one of its writes, reaches the caller: the first is
        raised once the block ends, as inside :meth:`run
        <lldsched.sim.simulation.Simulation.run>` once the event is whole
        (``SimulationHearing._emit``, ``StoreWrites.collecting``).  Raised at once, it left the
        verb's later steps undone: a pause's cut of the task's coroutine run in flight, a
        modify's re-queue, the event of a resume, a redrive or a run now.  Dropped if the
        block raises something else; kept for the event loop when the verb is made inside
        it (an intervention's).

        Any other interrupt out of the block (a real Ctrl-C that landed between two of
        its statements, inside the core's verb) may have left it half made: the
        simulation is torn (``Interrupts.mark_torn``), but for a store's that refused the
        registration or the change of definition, which the core put back
        (``StoreWrites.refused``).  docs/decisions/simulation.md, "A Ctrl-C in a simulation's
        verb"."""
        outer = self._in_verb
        mine = not outer and not self._advancing  # raises what it heard, once whole
        writes = self._core.store_writes
        collecting = None
        if writes is not None:
            writes.refused = None  # (an id: one this verb's store refusal sets, if any)
            if mine:
                collecting, writes.collecting = writes.collecting, self._heard
        self._in_verb = True
        try:
            yield
        except GeneratorExit:  # closed unfinished: the with's exit never came, the block whole
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception) and (writes is None or id(exc) != writes.refused):
                self._interrupts.mark_torn(exc, self.now, f"{verb} {subject!r}")
            if mine:
                self._heard.clear()
            raise
        finally:
            self._in_verb = outer
            if writes is not None and mine:
                writes.collecting = collecting
        heard = self._heard
        if heard and mine:
            caught = heard[0]
            heard.clear()
            raise caught

    def _check_running(self, verb: RefusedVerb | MovesTime, *subject: object) -> None:
        """Refuse ``verb`` (on ``subject``, if given: a task's id or name, an instant) once
        the simulation is shut down, before it changes anything: the verbs a shut-down
        ``Scheduler`` refuses (:data:`~lldsched.core.names.REFUSED_AFTER_SHUTDOWN`), and
        those that move virtual time (docs/decisions/simulation.md, "The simulation's shutdown")."""
        if self._stopped_at is not None:
            what = "".join(f" {value!r}" for value in subject)
            raise SchedulerShutDownError(
                f"cannot {verb}{what}: the simulation is shut down (at {self.now!r})"
            )

    def _set_models(self, task_id: str, duration: DurationModel, fails: FailureModel) -> None:
        needs_rng = callable(duration) or callable(fails) or fails
        rng = random.Random(f"{self.seed}:{task_id}") if needs_rng else NO_RNG
        self._models[task_id] = TaskModels(duration, fails, rng)

    def cancel(self, task_id: str) -> bool:
        """Stop all future runs of the task; True if it was live.  A plain function's run in
        flight finishes (its record is kept); a *coroutine* run in flight is cancelled,
        and a *process-isolated* one cut (its worker process killed), as on a
        ``Scheduler``: its attempt ends now, failed (``CancelledError: task
        cancelled``).

        Raises as :meth:`pause` does: :class:`~lldsched.errors.TaskNotFoundError`
        (:class:`~lldsched.errors.TaskRetiredError`), :class:`~lldsched.errors.StoreClosedError`
        and :class:`~lldsched.errors.StoreError`.  Not after shutdown: a cancel only stops things.
        """
        with self._whole("cancel", task_id):
            return self._halt(task_id, self._core.cancel, "cancelled")

    def pause(self, task_id: str) -> bool:
        """Hold the task; True if this call paused it (False for one already paused,
        finished or failed).  A plain function's run in flight finishes; nothing follows.
        A *coroutine* run in flight is cancelled, and a *process-isolated* one cut (its
        worker process killed), as on a ``Scheduler``: its attempt ends now, failed
        (``CancelledError: task paused``), and is retried after :meth:`resume` while
        attempts remain.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an id that is not registered,
        whatever its type (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while a running scheduler holds its store
        (nothing is changed then).  Not after shutdown: a pause only stops things.
        """
        with self._whole("pause", task_id):
            return self._halt(task_id, self._core.pause, "paused")

    def _halt(self, task_id: str, verb: Callable[[str], bool], why: str) -> bool:
        """What cancel and pause share, as on a ``Scheduler``: the core's ``verb``, then,
        if it took, the task's coroutine runs in flight cut (``task <why>``)."""
        changed = verb(task_id)
        if changed:
            self._stop_awaited(task_id, why)
        return changed

    def resume(self, task_id: str) -> bool:
        """Return a paused task to where it was, as ``Scheduler.resume`` does: the slots
        slept through get one run, at once, and a fixed-rate grid re-anchors on it.

        Raises as :meth:`pause` does: :class:`~lldsched.errors.TaskNotFoundError`
        (:class:`~lldsched.errors.TaskRetiredError`), :class:`~lldsched.errors.StoreClosedError`
        and :class:`~lldsched.errors.StoreError`;
        :class:`~lldsched.errors.SchedulerShutDownError` (a ``SchedulerStateError``) after shutdown.
        """
        self._check_running("resume", task_id)
        with self._whole("resume", task_id):
            return self._core.resume(task_id)

    def redrive(self, task_id: str) -> bool:
        """Put a dead-lettered (FAILED) task back, due now, with a fresh attempt counter;
        False, changing nothing, for a task that is not FAILED.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an unknown id
        (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.SchedulerShutDownError` (a ``SchedulerStateError``) after shutdown;
        :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while a running scheduler holds its store
        (nothing changes then).
        """
        self._check_running("redrive", task_id)
        with self._whole("redrive", task_id):
            return self._core.redrive(task_id)

    def remove(self, task_id: str) -> ScheduledTask:
        """Cancel the task if live, and forget it (here, with its models, and in the
        store).  A plain function's run in flight finishes and is recorded (a coroutine run is
        cancelled now, and a process-isolated one cut, as :meth:`cancel` says).

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an unknown id
        (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.SchedulerStateError` naming them while other tasks depend
        on it; :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while a running scheduler holds its store
        (nothing changes then).  Not after shutdown: a remove only stops things.
        """
        with self._whole("remove", task_id):
            task = self._core.remove(task_id)
            self._stop_awaited(task_id, "cancelled")
            self._models.pop(task_id, None)
            self._core.departed.left(task)  # its records stay in records(): what they read
        return task

    def reschedule(self, task_id: str, schedule: Schedule | str) -> ScheduledTask:
        """Give the task a new *when* at the simulated instant: same id, history kept;
        see :meth:`SchedulerCore.reschedule <lldsched.core.machine.SchedulerCore.reschedule>`.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an unknown id
        (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.ValidationError` for a bad schedule
        (:class:`~lldsched.errors.ScheduleError` for cron text that does not parse);
        :class:`~lldsched.errors.SchedulerStateError` for a finished (succeeded or
        cancelled) task, and after shutdown its subclass
        :class:`~lldsched.errors.SchedulerShutDownError`;
        :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while a running scheduler holds its store
        (nothing changes then).
        """
        self._check_running("reschedule", task_id)
        with self._whole("reschedule", task_id):
            return self._core.reschedule(task_id, schedule)

    def modify(
        self,
        task_id: str,
        *,
        priority: Priority | int | Unchanged = UNCHANGED,
        retry: RetryPolicy | Unchanged | None = UNCHANGED,
        timeout: float | timedelta | Unchanged | None = UNCHANGED,
    ) -> ScheduledTask:
        """Change the task's priority, retry policy or timeout (what is not given stays);
        see :meth:`SchedulerCore.modify <lldsched.core.machine.SchedulerCore.modify>`.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an unknown id
        (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.ValidationError` for a bad value;
        :class:`~lldsched.errors.SchedulerStateError` for a finished (succeeded or
        cancelled) task; :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while a running scheduler holds its store
        (nothing changes then).  Not after shutdown: a modify keeps the books
        (:data:`~lldsched.core.names.REFUSED_AFTER_SHUTDOWN`).
        """
        ahead = self._waiting.ahead(task_id, self._clock.now())
        with self._whole("modify", task_id):
            task = self._core.modify(task_id, priority=priority, retry=retry, timeout=timeout)
            if ahead is not None and task.generation == ahead[2] and task.priority != ahead[1]:
                # Its entry was set aside before it was due (lldsched/sim/lanes.py): the
                # core counts it handed out and kept it; on threads it is in the heap,
                # re-queued.
                self._queue.push(task, ahead[0])
        return task

    def run_now(self, task_id: str) -> bool:
        """Run the task once more at the simulated instant, without moving its schedule;
        True if a run was queued (or a pending retry brought forward).  False if it is
        due at once anyway, running, paused, blocked on its upstreams (or would be: a
        dependent whose upstreams have not succeeded since its previous slot), failed or
        finished: nothing was queued, and nothing is kept to run later (a task running
        now, whatever its ``overlap``: call it again once that run has finished); see
        :meth:`SchedulerCore.run_now <lldsched.core.machine.SchedulerCore.run_now>`.

        Raises :class:`~lldsched.errors.TaskNotFoundError` for an unknown id
        (:class:`~lldsched.errors.TaskRetiredError` for one retired);
        :class:`~lldsched.errors.SchedulerShutDownError` (a ``SchedulerStateError``) after shutdown;
        :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while a running scheduler holds its store
        (nothing changes then).
        """
        self._check_running("run_now", task_id)
        with self._whole("run_now", task_id):
            return self._core.run_now(task_id)

    @property
    def tz(self) -> str:
        """The zone of cron schedules that name none (an IANA key)."""
        return self._core.tz

    @property
    def retain_finished(self) -> RetainFinished:
        """How long finished tasks stay registered (:mod:`lldsched.core.retention`)."""
        return self._core.retain_finished

    def task(self, task_id: str) -> ScheduledTask:
        """The task with this id, or :class:`~lldsched.errors.TaskNotFoundError`
        (:class:`~lldsched.errors.TaskRetiredError` if it finished and retired)."""
        return self._core.get(task_id)

    def tasks(self) -> list[ScheduledTask]:
        """Every registered task, in registration order (retired tasks are not)."""
        return list(self._core.tasks.values())

    def dead_letter(self) -> list[str]:
        """Ids of FAILED tasks, oldest failure first."""
        return self._core.dead_letter()

    def schedules(self) -> dict[str, Schedule]:
        """Task id to schedule of every task that has records: the registered ones, and
        those retired (``retain_finished``) or removed, whose records :meth:`records`
        keeps (a one-off task's only while registered: it never overruns;
        :mod:`lldsched.core.departed`).  What :func:`lldsched.views.frames.schedules_of`
        gives ``task_summary`` to count overruns."""
        return self._core.departed.schedules_of(self._core.tasks.values())

    def priorities(self) -> dict[str, int]:
        """Task id to :class:`~lldsched.model.Priority` value of every task that has
        records, retired and removed ones included (each as it was when it left,
        :mod:`lldsched.core.departed`): the priority column of
        :func:`lldsched.views.frames.to_frame`."""
        return self._core.departed.priorities_of(
            self._core.tasks.values(), self._log.columns().key_ids
        )

    def orphans(self) -> list[str]:
        """Ids of the tasks the store restored that no ``schedule(..., id=...)`` has named
        since this simulation was built, in the order restored (docs/UPGRADING.md)."""
        return self._core.orphans()

    def pending(self) -> list[ScheduledTask]:
        """Tasks waiting to start, in the order they fell or fall due: in the heap, or set
        aside from it while their lane is full (:mod:`lldsched.sim.lanes`).  After
        :meth:`shutdown <lldsched.sim.simulation.Simulation.shutdown>`, every task left
        due, as ``Scheduler.pending()`` lists them then (docs/decisions/simulation.md, "What a
        simulation's metrics read after its shutdown")."""
        aside = self._waiting.entries()
        if not aside:
            return self._queue.pending()
        tasks = self._queue.tasks
        return [tasks[entry[3]] for entry in sorted(self._queue.entries() + aside)]

    def queue_stats(self) -> QueueStats:
        """How many entries the heap holds, and how many are tombstones.  An entry set
        aside from the heap while its lane is full (:mod:`lldsched.sim.lanes`) counts as
        in it, but a coroutine task's live entry that is due, which waits for a slot of
        the event loop on threads (``metrics().coroutines``), until :meth:`shutdown
        <lldsched.sim.simulation.Simulation.shutdown>`: then it is left for the next start,
        as a thread task's is."""
        stats = self._queue.stats()
        if not self._loop_tasks:  # nothing is ever set aside
            return stats
        aside = self._waiting.reads(self._clock.now(), loop=self.running)
        return QueueStats(stats.entries + aside.held, stats.tombstones + aside.tombstones)

    def metrics(self, timeout: float | timedelta | None = None) -> Metrics:
        """One read of the simulation's health and load at the simulated instant, the
        same :class:`~lldsched.core.metrics.Metrics` as ``Scheduler.metrics()``: what a
        dashboard would show at this point of the replay.  The simulation's clock is its
        timer: ``state`` is ``"running"``, ``timer_alive`` True and ``timer_woke`` the
        simulated instant; a due task waits in the heap for a free worker (``lag``), never
        in a hand-off queue (``queued``, and ``handoff`` is 0), even set aside from it while
        its lane is full (:mod:`lldsched.sim.lanes`); ``coroutines`` counts the runs on
        the coroutine lane and the coroutine entries due (and the awaitables plain
        functions returned) that wait for a slot of it, as
        ``Scheduler.metrics()`` counts those on and waiting for its event loop; after
        :meth:`shutdown <lldsched.sim.simulation.Simulation.shutdown>`,
        ``state`` is ``"stopped"`` and ``timer_alive`` False, as on ``Scheduler``, and
        ``coroutines`` counts no entry left due (the scheduler's loop is closed, what
        waited for it dropped): a coroutine task left due is queued, and late in
        ``lag``, as a thread task left due is (docs/decisions/simulation.md, "What a simulation's
        metrics read after its shutdown").
        ``timeout`` is the threaded scheduler's wait for its lock, checked and unused here
        (nothing else holds the simulation)."""
        if timeout is not None:
            checks.seconds(timeout, name="metrics() timeout", at_least=0)
        now = self._clock.now()
        running = self.running
        aside = self._waiting.reads(now, loop=running) if self._loop_tasks else NOTHING_ASIDE
        return take(
            self._core,
            self._queue,
            at=now,
            state="running" if running else "stopped",
            timer_alive=running,
            timer_woke=now,
            workers=self.workers,
            busy=self.busy,
            handoff=0,
            coroutines=self._coroutines + len(self._handed) + aside.due_coroutines,
            handed_out_due=aside.first_due,
            dropped_events=0,
            aside=aside.held - aside.tombstones,
        )

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` on every event published from now on, in virtual time, on
        the caller's thread (added by a listener: not the event under way, nor those a
        verb published meanwhile).  Raises :class:`~lldsched.errors.ValidationError` for
        what is no listener (neither callable nor with ``on_event``; an ``async def``
        one) and for one already registered."""
        callback = as_callback(listener)
        check_unregistered(listener, (known for known, _ in self._callbacks))
        # a new list: an event waiting to be heard keeps the one it was published with
        self._callbacks = [*self._callbacks, (listener, callback)]
        self._core.emit = self._emit

    def remove_listener(self, listener: Listener) -> bool:
        """Stop calling ``listener``; True if it was registered.  Once this returns it
        hears no further event, not even one published before that waits to be heard;
        removed by a listener, it still hears the event under way if it comes after
        that one."""
        kept = [pair for pair in self._callbacks if not same_listener(pair[0], listener)]
        found = len(kept) != len(self._callbacks)
        self._callbacks = kept
        if not kept:
            self._core.emit = None
        return found


def _documented(function: Callable[..., Any]) -> None:
    """Show ``function``'s signature without its ``*misplaced``: that parameter only
    catches the ``Scheduler``'s order, to refuse it in words (a ``TypeError`` said
    nothing of the order), and is no part of the documented API, so ``inspect``,
    ``help()`` and the docs read the signature as written before it."""
    signature = inspect.signature(function)
    shown = [p for p in signature.parameters.values() if p.kind is not p.VAR_POSITIONAL]
    function.__signature__ = signature.replace(parameters=shown)  # type: ignore[attr-defined]


_documented(SimulationVerbs.schedule)
