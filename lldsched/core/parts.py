"""What the core state machine is made of, declared once for its modules.

:class:`~lldsched.core.machine.SchedulerCore` is one class written in several
modules: construction and registration (:mod:`~lldsched.core.machine`) and, mixed
into it, the lifecycle edges a run takes (:mod:`~lldsched.core.runs`), the reads
(:mod:`~lldsched.core.reads`), the status verbs (:mod:`~lldsched.core.control`), the
definition verbs (:mod:`~lldsched.core.definition`), overlapping runs
(:mod:`~lldsched.core.overlapping`), blocked tasks (:mod:`~lldsched.core.waiting`),
restoring (:mod:`~lldsched.core.restoration`), the records of slots decided
without a run (:mod:`~lldsched.core.decided`) and a transition's store write and
event (:mod:`~lldsched.core.publishing`).  :class:`CoreParts` is their common base:
it declares the registry, the seams a runtime gives (:class:`DueQueue`, clock, store,
event hooks) and the helpers every part calls, so each module type-checks on its own
and mypy checks that ``SchedulerCore``'s definitions match these declarations.  At
run time it adds nothing.

**At most 29 instance attributes**, as for the threaded scheduler
(:mod:`lldsched.threaded.parts`): CPython 3.11 keeps up to 29 of an instance's
attributes inline, and a 30th of the core cost +2.0 % instructions a dispatched job and
+1.8 % a simulated run (``benchmarks/threaded_instructions.py dispatch``,
``benchmarks/sim_instructions.py sim``).  New state goes into an object it belongs
with (the graph of dependencies keeps its waits, :class:`Dependencies`);
``tests/test_scheduler_timer.py`` counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from lldsched.clock import Clock
from lldsched.core.departed import Departed
from lldsched.core.dependencies import Dependencies
from lldsched.core.names import Skipped
from lldsched.core.retention import Retention
from lldsched.core.store.writes import StoreWrites
from lldsched.core.tally import Tally
from lldsched.core.task import Entry, Flight, Run, RunStats, ScheduledTask
from lldsched.model import ExecutionRecord, Outcome, TaskEvent, TaskStatus
from lldsched.persistence import TaskSnapshot, TaskStore

if TYPE_CHECKING:
    from lldsched.schedules.base import Schedule

__all__ = ["CoreParts", "DueQueue"]


class DueQueue(Protocol):
    """Where the core puts tasks that have a due instant (the runtime's heap)."""

    def attach(self, tasks: Mapping[str, ScheduledTask]) -> None:
        """Resolve entries' task ids in ``tasks`` (the core's registry)."""
        ...

    def push(self, task: ScheduledTask, due: float) -> None:
        """Queue ``task`` at ``due`` (its earlier entry dies); set its ``generation``."""
        ...

    def discard(self, task: ScheduledTask) -> None:
        """``task``'s entry, queued or already popped, must not run: a tombstone."""
        ...

    def live(self, entry: Entry) -> ScheduledTask | None:
        """The task ``entry`` stands for, or None if the entry is a tombstone."""
        ...


class CoreParts:
    """The members the core's modules share (see the module docstring)."""

    clock: Clock
    tz: str  # the zone of cron schedules that name none (an IANA key)
    tasks: dict[str, ScheduledTask]  # the registry
    emit: Callable[[TaskEvent], None] | None
    on_cancel: Callable[[Run], None] | None
    on_retime: Callable[[Run], None] | None
    overdue_slots: list[Entry]  # CANCEL_OTHER's queued slots, earliest first (overlapping.py)
    under_way: tuple[str, str] | None  # a runtime's verb under way (machine.py)
    node: str | None  # the process its runs name (a shared store's holder id), or None
    _queue: DueQueue
    _store: TaskStore | None
    _writes: StoreWrites | None  # the calls the store failed; None without a store
    _on_record: Callable[[ExecutionRecord], None] | None
    _dead: dict[str, None]  # an ordered set of dead-lettered ids
    _tally: Tally  # the records made since the core was built, by outcome
    _deps: Dependencies | None
    _claims_held: dict[int, list[ExecutionRecord]]  # token -> records: DependencyWaits.claim_held
    _cut: dict[int, Run]  # id(run) -> run: a shutdown cut it (RunTransitions.cut_by_shutdown)
    _retention: Retention
    _seed: int  # retry jitter's (policies.retry_draws)
    _new_stats: Callable[[], RunStats]  # a task's RunStats, made at its first run
    departed: Departed  # what the views read of the tasks that left the registry
    _default_ids: bool
    _chosen_ids: bool  # a caller chose an id: the default generator skips taken ones
    _restored_names: dict[str, str]  # name -> id of a live task a store restored
    _orphans: dict[str, None]  # ids a store restored that no registration named since
    _owed: dict[str, tuple[float, int]]  # id -> (due, run count): Restoration.owe

    if TYPE_CHECKING:

        def get(self, task_id: str) -> ScheduledTask: ...

        def holds(self, task: ScheduledTask) -> bool: ...

        def _enqueue(self, task: ScheduledTask, due: float) -> None: ...

        def _stats(self, task: ScheduledTask) -> RunStats: ...

        def _keep(self, task: ScheduledTask, record: ExecutionRecord) -> None: ...

        def _write_and_publish(
            self, task: ScheduledTask, previous: TaskStatus, record: ExecutionRecord | None = None
        ) -> None: ...

        def _publish(
            self, task: ScheduledTask, previous: TaskStatus, record: ExecutionRecord | None
        ) -> None: ...

        def _snapshot(self, task: ScheduledTask) -> TaskSnapshot: ...

        def _after(
            self, task: ScheduledTask, record: ExecutionRecord, stats: RunStats
        ) -> tuple[TaskStatus, float | None, ExecutionRecord, Skipped]: ...

        def _save(self, task: ScheduledTask, *, as_claimed: Run | None = None) -> None: ...

        def _as_owed(self, task: ScheduledTask) -> TaskSnapshot: ...

        def _owed_no_more(self, task: ScheduledTask) -> None: ...

        def _write_all_and_publish(
            self, task: ScheduledTask, previous: TaskStatus, records: list[ExecutionRecord]
        ) -> None: ...

        def _skipped_by_run(
            self,
            task: ScheduledTask,
            record: ExecutionRecord,
            skipped: Skipped,
            *,
            previous: TaskStatus,
            due: float | None,
            at: float,
            token: int | None,
        ) -> None: ...

        def _record_skipped(
            self,
            task: ScheduledTask,
            skipped: Skipped,
            *,
            until: float | None,
            at: float,
        ) -> None: ...

        def _record_decided(
            self,
            task: ScheduledTask,
            slot: float,
            outcome: Outcome,
            error: str | None,
            at: float,
            *,
            token: int | None = None,
        ) -> ExecutionRecord: ...

        def _finished(self, task: ScheduledTask, at: float) -> None: ...

        def _retire(self, now: float) -> None: ...

        def _unrestored(self, task: ScheduledTask) -> None: ...

        def _first_write(
            self, task: ScheduledTask, *, store: TaskStore, retired_as: TaskStatus | None = None
        ) -> None: ...

        def _removed_run(self, task: ScheduledTask, record: ExecutionRecord) -> ExecutionRecord: ...

        def _dependencies(self) -> Dependencies: ...

        def _held(self, task: ScheduledTask, token: int | None = None) -> bool: ...

        def _upstream_moved(self, task: ScheduledTask, record: ExecutionRecord) -> None: ...

        def adopted_wait(
            self,
            task: ScheduledTask,
            previous: TaskStatus | None,
            blocked: tuple[float, float] | None = None,
        ) -> None: ...

        def _overlap(
            self, task: ScheduledTask, run: Run
        ) -> tuple[Run, tuple[Skipped, float, float] | None]: ...

        def _record_late(
            self, task: ScheduledTask, late: tuple[Skipped, float, float] | None
        ) -> None: ...

        def _alongside(
            self, task: ScheduledTask, entry: Entry, worker: int, *, token: int | None
        ) -> Run | None: ...

        @staticmethod
        def _leave(flight: Flight, run: Run, record: ExecutionRecord) -> ExecutionRecord: ...

        def _record_alongside(
            self, task: ScheduledTask, record: ExecutionRecord, stats: RunStats
        ) -> ExecutionRecord: ...

        def _after_flight(
            self, task: ScheduledTask, flight: Flight, record: ExecutionRecord, stats: RunStats
        ) -> tuple[TaskStatus, float | None, ExecutionRecord, Skipped]: ...

        def _relink(self, task: ScheduledTask, before: tuple[str, ...]) -> None: ...

        def _wait_moved(self, task: ScheduledTask) -> None: ...

        def _would_wait(self, task: ScheduledTask) -> bool: ...

        def _end_wait(self, task: ScheduledTask, error: str | None) -> ExecutionRecord: ...

        def _strand(self, upstream: ScheduledTask) -> None: ...

        # The verbs a misfire decision takes (lldsched/core/misfires/apply.py), so that rule
        # reads the parts and not the whole machine, which registration calls it from.

        def cancel(self, task_id: str) -> bool: ...

        def record_misfire(
            self,
            task: ScheduledTask,
            slot: float,
            outcome: Outcome,
            error: str | None = None,
            *,
            token: int | None = None,
        ) -> ExecutionRecord: ...

        def drop_pending(self, task: ScheduledTask) -> None: ...

        def replan(
            self,
            task: ScheduledTask,
            *,
            due: float,
            schedule: Schedule | None = None,
            slot: float | None = None,
            grid: float | None = None,
        ) -> None: ...
