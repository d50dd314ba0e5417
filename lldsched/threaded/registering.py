"""Registering a task on the threaded scheduler: :meth:`Registering.schedule` and its
decorator form, :meth:`Registering.scheduled`.

:class:`Registering` is the part of :class:`~lldsched.threaded.scheduler.Scheduler`
a user's registration goes through: what only a threaded runtime refuses (an action
that is None, ``isolation="process"`` off POSIX, a scheduler shut down), then, under
the one lock, :meth:`SchedulerCore.add <lldsched.core.machine.SchedulerCore.add>`,
which validates and registers (a shared store's registration made elsewhere a moment
ago is followed first, and a clash on a caller's id tried once more after following
it); a task whose action is an ``async def`` is marked for the event loop.  This is
the registration hot path (``benchmarks/threaded_instructions.py register``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

from lldsched.core.calls import not_callable
from lldsched.core.isolation import is_loop_action
from lldsched.core.registration import F, Isolation, TaskIds, registering
from lldsched.core.store.interrupts import left_whole
from lldsched.core.task import ScheduledTask
from lldsched.errors import ValidationError, doc_url
from lldsched.model import Priority
from lldsched.policies import TWO_AT_ONCE, MisfirePolicy, Overlap, RetryPolicy
from lldsched.schedules.base import Schedule
from lldsched.storecalls import verb_call
from lldsched.threaded.parts import STOPPED, SchedulerParts, shut_down, torn
from lldsched.threaded.processes.pool import check_supported
from lldsched.threaded.redefined import Stored, say_replaced

__all__ = ["Registering", "refuse_shared_overlap"]


def refuse_shared_overlap(name: str, overlap: object) -> None:
    """ValidationError for an ``overlap`` a shared store cannot honour (registering
    ``name`` on it); any other value is left to the core's validation."""
    if overlap in TWO_AT_ONCE:
        raise ValidationError(
            f"task {name!r}: overlap={overlap} needs two runs of the task at once, and "
            "a shared store holds one lease per task, so its runs never overlap: "
            f"use Overlap.BUFFER_ONE or no overlap= ({doc_url('docs/CLUSTER.md')})"
        )


class Registering(SchedulerParts):
    """A task registered (``schedule``, ``scheduled``): mixed into the scheduler."""

    def schedule(
        self,
        name: str,
        action: Callable[..., Any] | str,
        schedule: Schedule | str,
        *,
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
        """Register ``action`` to run on ``schedule``; returns its live :class:`ScheduledTask`.

        ``schedule`` is a :class:`~lldsched.schedules.base.Schedule` or the text of a
        cron expression (``"0 3 * * 1-5"``, read in the scheduler's ``tz``).
        ``action(*args, **kwargs)`` is called on a worker; if it declares a parameter
        named ``ctx`` it also gets a :class:`~lldsched.core.context.RunContext`.  An
        ``async def`` action (or one that returns an awaitable) is awaited on the
        scheduler's event loop, and its record written when it completes.  ``retry``
        defaults to ``RetryPolicy()`` (3 attempts).  ``timeout`` is detected, not
        enforced, on a thread (see :mod:`lldsched.core.context`); a coroutine is
        cancelled at its timeout.  ``misfire`` says what happens to slots
        that pass while the scheduler is down (default ``MisfirePolicy()``: run once,
        60 s of grace; see :mod:`lldsched.policies`).  Every argument is validated
        here, including that ``action`` accepts ``args`` and ``kwargs``; with a durable
        store that includes the action's import path and JSON arguments.

        ``isolation="process"`` runs each attempt in a worker process (see
        :mod:`lldsched.threaded.processes.pool`): ``action`` is then an import path,
        ``"package.module:function"``, with ``args`` and ``kwargs`` that JSON keeps
        unchanged, and the ``timeout`` is *enforced*: the child is killed at the
        deadline, the run recorded timed out, and the worker freed at once.  POSIX only
        (Linux, macOS): refused on Windows with a ValidationError.  Default ``"thread"``.

        ``priority`` (:class:`~lldsched.model.Priority` or an int; default NORMAL)
        breaks ties between tasks due at the same instant: lower runs first.
        ``depends_on`` lists ids of registered upstream tasks: each slot waits, BLOCKED,
        until every one has succeeded since the task's previous slot started (see
        :mod:`lldsched.core.dependencies`).  ``overlap`` (an
        :class:`~lldsched.policies.Overlap`, with ``max_instances`` for
        ``Overlap.ALLOW``) says what a slot that comes due while a run is in flight
        does; by default runs never overlap.  On a shared store a task's runs never
        overlap (one lease per task): ``Overlap.ALLOW`` and ``Overlap.CANCEL_OTHER`` are
        refused there with a :class:`~lldsched.errors.ValidationError`.

        ``id`` is a caller-chosen task id (default ``task-1``, ``task-2``, ...).
        Registering an id that exists raises :class:`~lldsched.errors.ValidationError`
        naming it, unless ``replace_existing=True``: the task keeps its id, history
        and status and takes this definition (an unchanged schedule keeps its due
        time), so a service that registers its jobs at every start on a durable
        store gets the same tasks back, not copies.  A run already begun keeps the
        definition it began with (its action, arguments, ``ctx``, isolation and armed
        timeout); the next attempt takes the new one, and begins where it runs (a
        worker, a child process, the event loop) (docs/decisions/changing-a-task.md, "Changing a
        task").

        ``paused=True`` registers a new task paused (APScheduler's
        ``next_run_time=None``): nothing runs until :meth:`resume`, not even a first run
        due at once, here or in another process on a shared store, since the task is
        held before it is queued or written (the store never has it SCHEDULED).  A
        task that existed keeps its status (see
        :meth:`SchedulerCore.add <lldsched.core.machine.SchedulerCore.add>`).

        Raises :class:`~lldsched.errors.ValidationError` (a
        :class:`~lldsched.errors.ScheduleError` for a bad schedule) naming the bad value,
        or an id that exists without ``replace_existing``;
        :class:`~lldsched.errors.SchedulerShutDownError` (a ``SchedulerStateError``) after shutdown
        (once it has begun), and :class:`~lldsched.errors.SchedulerStateError` in a forked
        child; :class:`~lldsched.errors.StoreClosedError` once its store is closed, and a
        :class:`~lldsched.errors.StoreError` while another running scheduler holds its
        store, or when the store refuses the write.  Nothing registered changes then.
        """
        if action is None:  # a simulated task may have none; a thread must run something
            raise not_callable(name, action)
        if isolation == "process":
            check_supported(name)  # Windows: refused here, not at every attempt
        if overlap is not None and self._coordinator is not None:
            refuse_shared_overlap(name, overlap)
        on_loop = is_loop_action(action, isolation)
        with self._lock:
            if self._state is STOPPED:
                raise shut_down("schedule", name)
            # Whole or said to be cut, as the control verbs' _whole (threaded/control.py),
            # inlined: a generator's context manager around every registration cost more
            # than the +0.5 % it may (benchmarks/threaded_instructions.py register).  All
            # but its deferral of a store's interrupts: a Ctrl-C the store raises in a
            # registration's write refuses it, the core putting everything back
            # (StoreWrites.refused, which left_whole reads).
            core = self._core
            if core.under_way is not None:
                raise torn(core.under_way, "schedule", name)
            core.under_way = ("schedule", name)
            try:
                # shared: a task this process left out, taken over with the store muted (its
                # take_over writes the row) and the events held.  Entered only then, so the
                # usual registration pays no context manager: a `with nullcontext()` around
                # every add cost 6 % of a registration (benchmarks/threaded_instructions.py
                # register).
                taking: ExitStack | None = None
                held: ExitStack | None = None
                try:  # its finally ends the hold or the call, whatever the feed's read raised
                    if self._coordinator is not None:  # unshared: nothing to follow or hold
                        held = ExitStack()
                        if replace_existing and id is not None:
                            # a replacement: the row held from the feed's read to the write,
                            # as a verb holds it (_acting_on): a run settled elsewhere between
                            # the two was written over (its count lost)
                            held.enter_context(self._acting_on(id))
                        else:  # a new task: no row to hold, its calls one timeout in all
                            held.enter_context(verb_call(self._coordinator.store))
                            self._follow_others()  # replace what another process registered
                    before: Stored | None = None
                    for retry_once in (True, False):
                        if replace_existing and core.store_writes is not None:
                            # what the store holds (followed above), to say a change of it
                            stored = core.tasks.get(id) if id is not None else None
                            before = None if stored is None else Stored.of(stored)
                        try:
                            task = core.add(
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
                            break
                        except ValidationError:  # shared: registered elsewhere a moment ago?
                            coordinator = self._coordinator
                            if not (
                                retry_once
                                and coordinator is not None
                                and replace_existing
                                and id not in core.tasks
                            ):
                                raise
                            if coordinator.left_out(id):  # one it cannot load: take it over
                                taking = ExitStack()
                                taking.enter_context(coordinator.taking_over())
                            else:
                                self._follow_others()
                    if taking is not None and self._coordinator is not None:
                        self._coordinator.took_over(task)
                finally:
                    if taking is not None:
                        taking.close()
                    if held is not None:
                        held.close()
                if on_loop:
                    if core.holds(task):  # else it retired at once
                        self._loop_ids.add(task.id)
                elif self._loop_ids:
                    self._loop_ids.discard(task.id)  # an id handed out again
                if replace_existing:  # a new schedule may have moved all that was due
                    self._notify_idle()
                    if before is not None:
                        say_replaced(before, task, shared=self._coordinator is not None)
            except BaseException as exc:
                if left_whole(core.store_writes, exc):
                    core.under_way = None  # whole: refused, or made and then interrupted
                raise
            core.under_way = None
            return task

    def scheduled(
        self,
        schedule: Schedule | str,
        *,
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
        """The decorator form of :meth:`schedule`: ``@scheduler.scheduled(FixedRate(60))``
        registers the function under its ``__name__`` (or ``name``) and leaves it as it
        was.  (Not ``task``: :meth:`task` looks a task up by id.)  Raises what
        :meth:`schedule` raises, when it decorates."""

        def register(task_name: str, action: Callable[..., Any]) -> None:
            self.schedule(
                task_name,
                action,
                schedule,
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
