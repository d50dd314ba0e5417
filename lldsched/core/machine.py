"""The core state machine: the registry of tasks and every transition between statuses.

This module is the scheduler's bookkeeping and nothing else.  It never sleeps,
never starts a thread and has no lock: the threaded runtime holds its one lock around
every call in here, and the simulation, single-threaded, takes none (a verb's check of
who holds its store takes :mod:`~lldsched.core.store.use`'s process-wide lock, briefly,
while some scheduler holds a store).
Both runtimes drive this same code, so retry, reschedule, overrun, pause and
dead-letter behaviour exist exactly once.

What a runtime gives it:

* a :class:`DueQueue` (:class:`~lldsched.core.duequeue.TaskQueue`): ``push(task, due)``
  whenever a task gets a due instant, ``discard(task)`` when its entry must not
  run; the core attaches its registry to it, in which entries' ids are resolved;
* a clock (for the instants of events and of pause/resume), an id generator, a
  seed for retry jitter (:func:`~lldsched.policies.retry_draws`);
* optionally a :class:`~lldsched.persistence.TaskStore` and an ``emit`` callable.
  With neither, no snapshot and no event object is ever built: the registry
  already holds the state;
* optionally an ``on_record`` callable, given every record the core makes (runs
  and slots decided without a run) in the order it makes them: the simulation
  keeps its list of records with it;
* a retention for finished tasks (``retain_finished``, :mod:`lldsched.core.retention`)
  and optionally an ``on_retire`` callable, given the id of each task that retires
  from the registry (just before it goes, so it can still be read), so the runtime
  drops what it keeps per task; what the views read of a task that retires (its
  priority, its schedule) is kept in ``departed`` (:mod:`lldsched.core.departed`,
  bounded by ``history_limit`` unless the runtime gives one of its own);
* ``packed_history``: each task's history keeps its older records packed
  (:mod:`lldsched.core.packedstats`; the threaded scheduler's, whose histories
  are all it keeps of its runs when it has no store).

What a runtime does with it: pops due entries, calls :meth:`SchedulerCore.begin`
(which rejects stale entries), runs the attempt (:meth:`Run.invoke`
or a simulated duration), and reports the outcome to :meth:`SchedulerCore.finish`.

The lifecycle, every allowed change of status and its trigger, is
:data:`~lldsched.core.lifecycle.TRANSITIONS` (drawn in docs/ARCHITECTURE.md, "The
lifecycle"); ``tests/test_lifecycle.py`` drives this class through each edge.

The dependency rule itself is :mod:`lldsched.core.dependencies`'s; a task without
``depends_on`` pays one attribute check for it in
:meth:`~lldsched.core.runs.RunTransitions.begin` and
:meth:`~lldsched.core.runs.RunTransitions.finish`, and none at all while no task has
dependencies.

The definition verbs (``add(..., replace_existing=True)``, :meth:`~SchedulerCore.reschedule`,
:meth:`~SchedulerCore.modify`, :meth:`~SchedulerCore.run_now`) change what a task
runs and when, never its status: no edge of the lifecycle is theirs.

``SchedulerCore`` is one class written in several modules, each a mixin over
:class:`~lldsched.core.parts.CoreParts` (which declares what they share).  This one
holds its construction, registration (``add``; kept here, on the registration hot
path: in a mixin of its own a registration cost 1 % more instructions, 35,038 ->
35,406 with ``benchmarks/threaded_instructions.py register``, two more misses of
Python's type attribute cache and no other change), counting a task finished
(``_finished``: here, or in another process this one follows) and retiring finished
tasks (``_retire``), and the helpers every part calls; the others are

* :mod:`~lldsched.core.runs`: a run's transitions (``begin``, ``finish`` and what a
  run leads to, ``_after``);
* :mod:`~lldsched.core.reads`: what the registry answers (a task by id, the dead
  letter, the records kept);
* :mod:`~lldsched.core.control`: the status verbs (pause, resume, cancel, redrive,
  remove);
* :mod:`~lldsched.core.definition`: the definition verbs, and a registration that
  names an id (``_replaced``: a free id, a task replaced, held or retired);
* :mod:`~lldsched.core.overlapping`: several runs of one task in flight;
* :mod:`~lldsched.core.waiting`: blocked tasks;
* :mod:`~lldsched.core.restoration`: restoring and following;
* :mod:`~lldsched.core.decided`: the records of slots decided without a run;
* :mod:`~lldsched.core.publishing`: a transition's snapshot, store write and event.

Slots a run skipped (a fixed rate's SKIP overrun policy, a cron fire that passed
while the run overran) are recorded SKIPPED after the run's own record, as the
misfire decisions of recovery are: every slot leaves a record.

A task paused or cancelled mid-run keeps that status when its run finishes: the
record is kept and nothing is queued after it.  A task paused mid-run whose run
*ends* the task (no next run, or retries exhausted) still reaches SUCCEEDED or
FAILED: pausing hides no outcome.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Mapping
from datetime import timedelta, tzinfo
from typing import Any

from lldsched.checks import flag, whole_or_none
from lldsched.clock import Clock
from lldsched.core.control import StatusVerbs
from lldsched.core.decided import DecidedRecords
from lldsched.core.definition import DefinitionVerbs, first_run
from lldsched.core.departed import Departed
from lldsched.core.dependencies import Dependencies
from lldsched.core.ids import IdGenerator, sequential_ids
from lldsched.core.isolation import isolated_action
from lldsched.core.misfires.firstpassed import first_passed
from lldsched.core.names import CANCELLED, MAX_SKIPPED, SCHEDULED, SUCCEEDED
from lldsched.core.overlapping import OverlappingRuns
from lldsched.core.packedstats import run_stats_maker
from lldsched.core.parts import DueQueue
from lldsched.core.publishing import Publishing
from lldsched.core.reads import RegistryReads
from lldsched.core.registration import (
    Isolation,
    TaskIds,
    check_graph,
    check_task_id,
    plain_text,
    validated,
)
from lldsched.core.restoration import Restoration
from lldsched.core.retention import DEFAULT_RETAIN_FINISHED, RetainFinished, Retention
from lldsched.core.runs import RunTransitions
from lldsched.core.schedulearg import check_zone
from lldsched.core.store.writes import StoreWrites, check_store, purge_retired, refused
from lldsched.core.tally import Tally
from lldsched.core.task import DEFAULT_OPTIONS, Entry, Run, RunStats, ScheduledTask, fit_flight
from lldsched.core.waiting import DependencyWaits
from lldsched.errors import ValidationError, shown
from lldsched.model import ExecutionRecord, Priority, TaskEvent, TaskStatus
from lldsched.persistence import TaskStore
from lldsched.policies import MisfirePolicy, Overlap, RetryPolicy
from lldsched.printable import check_name
from lldsched.schedules.base import Schedule
from lldsched.schedules.decorators import forget_runs
from lldsched.schedules.simple import OneTime
from lldsched.storechecks import check_storable, not_a_store

__all__ = ["MAX_SKIPPED", "DueQueue", "SchedulerCore"]


class SchedulerCore(
    RegistryReads,
    StatusVerbs,
    DefinitionVerbs,
    OverlappingRuns,
    DependencyWaits,
    Restoration,
    DecidedRecords,
    Publishing,
    RunTransitions,  # last: first, a simulated run cost 45,213 instructions, not 45,145
):
    """The registry and the transitions.  Not thread-safe: its runtime serialises calls.

    The definition verbs (``reschedule``, ``modify``, ``run_now`` and the replacing
    ``add``) are :class:`~lldsched.core.definition.DefinitionVerbs`'."""

    def __init__(
        self,
        *,
        clock: Clock,
        queue: DueQueue,
        ids: IdGenerator | None = None,
        store: TaskStore | None = None,
        emit: Callable[[TaskEvent], None] | None = None,
        seed: int | None = None,
        history_limit: int | None = 100,
        tz: str | tzinfo = "UTC",
        on_record: Callable[[ExecutionRecord], None] | None = None,
        retain_finished: RetainFinished = DEFAULT_RETAIN_FINISHED,
        on_retire: Callable[[str], None] | None = None,
        on_cancel: Callable[[Run], None] | None = None,
        on_retime: Callable[[Run], None] | None = None,
        packed_history: bool = False,
        purge_retired: bool = False,
        departed: Departed | None = None,
        user: object = None,
    ) -> None:
        # at_most: a deque's maxlen is a C ssize_t (10**400 raised OverflowError there)
        whole_or_none(history_limit, name="history_limit", at_least=0, at_most=sys.maxsize)
        # Which finished tasks stay registered; None when every one does.
        self._retention = Retention(
            retain_finished, history_limit=history_limit, purge=purge_retired
        )
        self._on_retire = on_retire
        # What the views read of the tasks that retire (core/departed.py): by default
        # of as many as the retired tasks' history reaches (history_limit records).
        self.departed = departed if departed is not None else Departed(bound=history_limit)
        self.tz = check_zone(tz)  # the zone of cron schedules that name none
        self.clock = clock
        self.tasks: dict[str, ScheduledTask] = {}
        self._queue = queue
        queue.attach(self.tasks)
        if ids is not None and not callable(ids):
            raise ValidationError(
                f"ids must be a function that returns a fresh id at each call, got {shown(ids)}"
            )
        self._ids = ids or sequential_ids()
        self._default_ids = ids is None  # restore() moves the default past restored ids
        self._chosen_ids = False  # a caller chose an id: the default generator skips taken ones
        self._restored_names = {}  # restore(): a second registration of one is warned of
        self._orphans = {}  # restore(): an ordered set, emptied as registrations name them
        self._owed = {}  # owe(): restored attempts owed whose rows keep saying so
        # A class has the methods too (store=InMemoryTaskStore: load_all raised TypeError).
        if store is not None and (not isinstance(store, TaskStore) or isinstance(store, type)):
            raise not_a_store(store)
        self._store = store
        # The calls the store failed, and a store closed early; None without a store.
        # Made only with one: a StoreWrites built for every core moved Python's type
        # attribute cache so that a registration without a store cost 1.3 % more
        # (34,259 -> 34,704 instructions, ``benchmarks/threaded_instructions.py register``).
        # The rows an outage left stale are written again when it ends
        # (core/store/outage.py), from the tasks as they are then (a shared store's only
        # while each is as this process last read it: storecalls.resave).
        self._writes = (
            None
            if store is None
            else StoreWrites(
                store,
                current=self._current,
                now=clock.now,
                user=user,  # its verbs refused while another scheduler holds the store
            )
        )
        # Where events go; a runtime sets it as listeners come and go (None: nobody
        # listens, and no event object is built).
        self.emit = emit
        self._on_record = on_record
        # Told of a run in flight that Overlap.CANCEL_OTHER cancelled (its flag is
        # raised already): a runtime stops what it can (a coroutine, a simulated run).
        self.on_cancel = on_cancel
        # Told of each run in flight whose task's timeout a modify or a replace changed
        # (docs/decisions/changing-a-task.md, "A run in flight is held to its task's timeout now"):
        # a runtime whose deadlines are armed re-arms that run's from its begin.
        self.on_retime = on_retime
        # The entries of the slots CANCEL_OTHER tasks queued behind their runs in flight,
        # earliest first: a runtime calls overdue() for one that comes due and finds no
        # place to begin, and drops them as they pass (core/overlapping.py).
        self.overdue_slots: list[Entry] = []
        # The process each run's record names (ExecutionRecord.node): a runtime on a
        # shared store sets it to the store's holder id (threaded/shared/coordinator.py);
        # None for a core that shares nothing.  An instance attribute: read from the class
        # (a default there), a simulated run cost 140 instructions more (45,703 -> 45,843).
        self.node: str | None = None
        # Retry jitter's seed (policies.retry_draws); none given, one of this core's own
        # (from the OS: a process forked from another draws another).
        self._seed = random.SystemRandom().getrandbits(64) if seed is None else seed
        # Makes a task's RunStats at its first run: packed_history keeps the older
        # records of each history packed (lldsched.core.packedstats).
        self._new_stats = run_stats_maker(history_limit, packed=packed_history)
        self._dead: dict[str, None] = {}  # an ordered set of dead-lettered ids
        self._tally = Tally()  # the records made, by outcome (what metrics() reports)
        # The dependency graph, made at the first task with depends_on: until then
        # begin() and finish() pay one attribute check for dependencies.
        self._deps: Dependencies | None = None
        # Token -> the records of a claimed slot its readiness check held, for the claim's
        # holder to write with the row (DependencyWaits.claim_held takes them).
        self._claims_held: dict[int, list[ExecutionRecord]] = {}
        # id(run) -> run, of the runs a shutdown cut whose finish is still to come
        # (RunTransitions.cut_by_shutdown): their finish keeps the task due.
        self._cut: dict[int, Run] = {}
        # The verb a runtime is making on the registry, (verb, subject), from before it
        # changes anything until it is whole: still set once the verb has returned or
        # raised, an interrupt landed in its middle and may have left it half made
        # (the threaded Scheduler refuses its verbs from then on: threaded/control.py
        # _whole).  None: no verb under way, or the runtime does not tell.
        self.under_way: tuple[str, str] | None = None

    # -- registration --------------------------------------------------------------

    def add(
        self,
        name: str,
        action: Callable[..., Any] | str | None,
        schedule: Schedule | str,
        *,
        task_id: str | None = None,
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
        check_arguments: bool = True,
    ) -> ScheduledTask:
        """Validate (:mod:`~lldsched.core.registration`), register and queue a task;
        nothing is registered if anything is wrong.

        ``paused=True`` pauses a task this call creates before anything sees it
        (:meth:`_add_paused`), APScheduler's ``next_run_time=None``: it is never
        queued, and its one store write says PAUSED, so no other process on a shared
        store can read it SCHEDULED, claim it or register it again as SCHEDULED in
        between; listeners hear one event, its registration (``previous`` None) saying
        PAUSED, as another process following the store does.  A task that existed
        (``replace_existing``; a finished one held or retired too) keeps its status,
        paused or not, as a replacement always does: registering the same jobs at every
        start must not pause again a task an operator resumed, nor make a finished
        one-off PAUSED, which ``resume`` would run again.

        ``check_arguments=False`` skips the check that ``action`` takes its arguments
        (:func:`~lldsched.core.calls.check_call`) and the one of ``task_id``'s form
        (:func:`~lldsched.core.registration.check_task_id`): for a definition another
        process registered (:mod:`lldsched.core.follow`), judged there already, by its
        release's rules (a follower that refused an id an older release allowed would
        lose the change).

        ``depends_on`` names registered tasks whose successes each slot waits for
        (:mod:`lldsched.core.dependencies`); an unknown id or a cycle is a
        :class:`ValidationError` naming it.

        ``action`` may be None: a simulated task needs none.  A runtime that must
        run something checks that first.  ``schedule`` may be the text of a cron
        expression (read in :attr:`tz`, as is a ``CronSchedule`` naming no zone).

        ``task_id`` is a caller-chosen id (default: the id generator's next).  An id
        already registered is a :class:`ValidationError` naming it, unless
        ``replace_existing``: then that task takes this definition (see
        :meth:`_replace`) and is returned, with its history.

        ``isolation="process"``: ``action`` is an import path, resolved here to the
        function it names (:func:`~lldsched.core.isolation.isolated_action`).
        """
        check_store(self._writes, "register", name)
        if paused is not False or replace_existing is not False:  # off the common path
            flag(paused, name=f"task {name!r}: paused")
            flag(replace_existing, name=f"task {name!r}: replace_existing")
        if isolation != "thread":  # a thread's action given as text: validated() says so
            action = isolated_action(name, action, isolation=isolation)
        action, schedule, priority, options = validated(
            name,
            action,
            schedule,
            tz=self.tz,
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
            check_arguments=check_arguments,
        )
        if type(name) is not str:  # a str subclass (a Job(str, Enum) member): its text
            name = plain_text(name)
        if task_id is not None and check_arguments:  # another process's id: judged there
            task_id = check_task_id(task_id)
        if check_arguments and not name.isprintable():  # whatever the store; printable
            check_storable("name", name, nothing="registered")  # text: UTF-8, no NUL
            check_name(name)  # no line break, escape sequence or bidi override
        upstreams = options.depends_on
        if upstreams:
            retired = () if self._deps is None else self._deps.retired_named(task_id)
            check_graph(name, task_id, upstreams, self.tasks, retired)
        if task_id is not None or replace_existing:  # off the common path
            replaced = self._replaced(
                task_id,
                replace_existing=replace_existing,
                name=name,
                action=action,
                schedule=schedule,
                priority=priority,
                options=options,
            )
            if replaced is not None:
                return replaced
        now = self.clock.now()
        first = first_run(name, schedule, now)
        if task_id is None:
            if self._restored_names:
                self._registered_again(name, action)
            task_id = self._ids()
            if not self._default_ids:  # an injected ids= may make anything
                task_id = check_task_id(task_id, who=f"the ids generator ({self._ids!r})")
            while self._chosen_ids and self._default_ids and task_id in self.tasks:
                task_id = self._ids()  # a caller chose this one: the counter moves on
        else:
            self._chosen_ids = True
        # Positional, once per registration: a class called with keywords gathers them
        # into a dict first, an eighth of a registration (benchmarks/bench_scale.py).
        task = ScheduledTask(task_id, name, action, schedule, priority, options, first)
        if options is not DEFAULT_OPTIONS and options.overlap is not None:
            fit_flight(task)
        if self.tasks.setdefault(task_id, task) is not task:  # one lookup in a big dict
            raise ValidationError(f"id generator returned {task_id!r}, which is already registered")
        if paused:  # off the common path (the one test of paused it had before, moved)
            return self._add_paused(task, now=now)
        if self._store is not None:  # tested here: no call without a store
            self._first_write(task, store=self._store)
        if upstreams:
            self._dependencies().link(task)
        self._queue.push(task, first)  # next_run_at is first already
        if self.emit is not None:
            self.emit(TaskEvent(task_id, name, None, SCHEDULED, now))
        if first < now:  # a schedule of one's own answered slots passed: its policy decides
            first_passed(self, task, now)
        return task

    def _add_paused(self, task: ScheduledTask, *, now: float) -> ScheduledTask:
        """The end of :meth:`add` for a new ``task`` registered paused: held by the pause
        rule (:meth:`~lldsched.core.control.StatusVerbs._hold`) before its first write,
        so the store never holds it SCHEDULED (on a shared store another process
        following it between a SCHEDULED write and a PAUSED one claimed and ran it);
        never queued.  One store write and one event, both PAUSED: it never was SCHEDULED
        where anyone could see it (docs/decisions/listeners.md, "A task registered paused
        is heard once")."""
        held = self._hold(task)
        assert held is not None  # a new task is SCHEDULED, and waits for nothing yet
        if self._store is not None:
            self._first_write(task, store=self._store)
        if task.depends_on:
            self._dependencies().link(task)
        if self.emit is not None:
            self.emit(TaskEvent(task.id, task.name, None, task.status, now))
        return task

    def _first_write(
        self, task: ScheduledTask, *, store: TaskStore, retired_as: TaskStatus | None = None
    ) -> None:
        """Write a task being registered through ``store``, before it is queued or
        published: a failed save registers nothing (it leaves the registry, and the error,
        the store's, naming what it could not keep, is raised).  ``retired_as``: the task
        replaces one that retired with that status
        (:meth:`~lldsched.core.definition.DefinitionVerbs._replace_retired`), which a
        failed save leaves retired.  The one home of that rule for both ends of
        :meth:`add` and for a retired task replaced."""
        try:
            store.save(self._snapshot(task))
        except BaseException as exc:
            del self.tasks[task.id]
            if retired_as is not None:  # and it is still retired (TaskRetiredError)
                self._retention.retired(task.id, retired_as, ())
            refused(self._writes, exc, task.id, None if retired_as is None else False)
            raise

    # -- internals -------------------------------------------------------------------------

    def _finished(self, task: ScheduledTask, at: float) -> None:
        """``task`` is finished as of ``at``, as far as this registry knows, if it is
        SUCCEEDED or CANCELLED with no run in flight here and still registered: the
        retention holds it from then (a task held already keeps its instant), and the
        tasks whose retention ran out retire.  A task that finished in another process,
        which this one followed (:meth:`adopt`), is held and retires the same way.

        The one home of that rule for every way a task comes to be finished here but
        two: a run's end inlines it (:meth:`~lldsched.core.runs.RunTransitions.finish`,
        the run path) and a restore counts its batch in the order its records tell
        (:meth:`~lldsched.core.restoration.Restoration.restore`)."""
        retention = self._retention
        if retention.keep is None:
            return
        status = task.status
        if (status is not SUCCEEDED and status is not CANCELLED) or task._run is not None:
            return
        if not self.holds(task):  # retired (or removed) already
            return
        retention.finished(task.id, at)
        self._retire(at)

    def _retire(self, now: float) -> None:
        """Take the finished tasks whose retention ran out at ``now`` off the registry."""
        retention = self._retention
        departed = self.departed
        store = self._store if retention.purge else None
        stopped: BaseException | None = None  # a store's Ctrl-C in one purge: once all retire
        for task_id in retention.due(now):
            if self._on_retire is not None:  # first: the runtime may read what it keeps
                self._on_retire(task_id)
            task = self.tasks.pop(task_id)
            retention.retired(task_id, task.status, task.history)
            if self._orphans or self._restored_names:  # a task a store restored
                self._unrestored(task)
            departed.left(task)  # what the views read of it (core/departed.py)
            if task._schedule.__class__ is not OneTime:  # a Window's count of it goes
                forget_runs(task.schedule, task_id)  # (behind a plan, if one is in front)
            if self._deps is not None:
                self._deps.retired(task)  # its dependents remember how it ended
            if store is not None and retention.purges(task_id):  # its row and records go too
                try:
                    purge_retired(self._writes, store, task_id)
                except BaseException as exc:  # raised at once, it left the rest of the batch
                    stopped = stopped or exc  # off the held list and registered for good
        if stopped is not None:
            raise stopped

    def _enqueue(self, task: ScheduledTask, due: float) -> None:
        """Make ``due`` the task's next run and queue it there."""
        task.next_run_at = due
        self._queue.push(task, due)

    def _stats(self, task: ScheduledTask) -> RunStats:
        """The task's run statistics, created at its first record."""
        stats = task._stats
        if stats is None:
            stats = task._stats = self._new_stats()
        return stats

    def _keep(self, task: ScheduledTask, record: ExecutionRecord) -> None:
        """Where every record goes: into the task's history, to ``on_record`` (the
        simulation's log) and into the tally of outcomes.  :meth:`finish` inlines it
        (the run path: its comment names the gain)."""
        self._stats(task).add(record)
        if self._on_record is not None:
            self._on_record(record)
        self._tally.add(record)
