"""Records a policy decided without a run: a misfire, a skipped or coalesced slot.

:class:`DecidedRecords` is the part of :class:`~lldsched.core.machine.SchedulerCore`
that makes the record of a slot that did not run on its own (recovery's MISSED and
COALESCED, a run's SKIPPED slots, BUFFER_ONE's COALESCED ones: ``_skipped_by_run``)
and sends it where every record goes: the task's history and ``on_record``
(``_keep``), the store and the listeners (``_write_and_publish``; a run's record and
the slots it skipped in one store write, ``_write_all_and_publish``).  Every slot leaves
a record; past :data:`~lldsched.core.names.MAX_SKIPPED` skipped slots, one record
stands for the rest.  No thread, no lock: the runtime serialises calls.
"""

from __future__ import annotations

from lldsched.core.names import (
    BUFFER_ONE,
    COALESCED,
    MAX_SKIPPED,
    SKIP_CAP,
    SKIPPED,
    Skipped,
    cap_text,
    goes_on,
    stands_for,
)
from lldsched.core.parts import CoreParts
from lldsched.core.task import ScheduledTask
from lldsched.logs import instant_text
from lldsched.model import ExecutionRecord, Outcome, TaskStatus
from lldsched.policies import Overlap
from lldsched.schedules.catchup import unwrap
from lldsched.schedules.slotcount import slots_counted

__all__ = ["DecidedRecords"]


class DecidedRecords(CoreParts):
    """Mixed into SchedulerCore (see the module docstring)."""

    def record_misfire(
        self,
        task: ScheduledTask,
        slot: float,
        outcome: Outcome,
        error: str | None = None,
        *,
        token: int | None = None,
    ) -> ExecutionRecord:
        """Record that ``slot`` of ``task`` did not run on its own (``outcome`` is
        :attr:`~Outcome.MISSED` or :attr:`~Outcome.COALESCED`): in its history, in
        the store and to the listeners.  ``token``: the fencing token of the claim
        that decided it (shared mode), which the record carries."""
        return self._record_decided(task, slot, outcome, error, self.clock.now(), token=token)

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
    ) -> None:
        """The run's ``record`` (its task moved on from ``previous``) and the slots it
        skipped, up to its task's next ``due`` (it finished ``at``): SKIPPED, or under
        ``Overlap.BUFFER_ONE`` COALESCED into the run due next.  One store write for all
        of them (:func:`~lldsched.storecalls.save_all`): killed between the run's and
        theirs, those slots lost their records for good."""
        if task._options.overlap is BUFFER_ONE:  # folded into the run due next
            note = f"Overlap.BUFFER_ONE: coalesced into one run for slot {instant_text(due)}"
            decided = self._skip_records(
                task, skipped, until=due, at=at, token=token, outcome=COALESCED, note=note
            )
        else:
            decided = self._skip_records(task, skipped, until=due, at=at, token=token)
        self._write_all_and_publish(task, previous, [record, *decided])

    def _record_skipped(
        self,
        task: ScheduledTask,
        skipped: Skipped,
        *,
        until: float | None,
        at: float,
    ) -> None:
        """Record each slot in ``skipped`` as SKIPPED, decided ``at`` without a run (a run
        that started late is not sent after the slots it is late for), in one store
        write; past :data:`MAX_SKIPPED` slots, the last record stands for the rest, to
        ``until``."""
        records = self._skip_records(task, skipped, until=until, at=at, token=None, late=True)
        self._write_all_and_publish(task, task.status, records)

    def _skip_records(
        self,
        task: ScheduledTask,
        skipped: Skipped,
        *,
        until: float | None,
        at: float,
        token: int | None,
        outcome: Outcome = SKIPPED,
        note: str | None = None,
        late: bool = False,
    ) -> list[ExecutionRecord]:
        """A record for each slot in ``skipped`` as ``outcome`` (SKIPPED, or COALESCED by
        BUFFER_ONE; ``note`` is their text), decided ``at``, each kept in the task's
        history (the caller writes and publishes them); past :data:`MAX_SKIPPED` slots,
        the last record stands for the rest, to ``until`` (:func:`_skip_cap_text`;
        ``late``: skipped as a run began late, not as it ended).  ``token``: the run's
        fencing token, which fences these records as well."""
        records = [
            self._decided(task, slot, outcome, note, at, token=token)
            for slot in skipped[:MAX_SKIPPED]
        ]
        if len(skipped) > MAX_SKIPPED:
            rest = skipped[MAX_SKIPPED]
            # how many slots it stands for, counted on the task's grid as its runs are
            slots = slots_counted(unwrap(task._schedule), rest, until, origin=task._grid)
            text = _skip_cap_text(task._options.overlap, rest, until, at, slots, late=late)
            records.append(self._decided(task, rest, outcome, text, at, token=token))
        return records

    def _record_decided(
        self,
        task: ScheduledTask,
        slot: float,
        outcome: Outcome,
        error: str | None,
        at: float,
        *,
        token: int | None = None,
    ) -> ExecutionRecord:
        """A record for ``slot`` of ``task``, which a policy decided at ``at`` without a
        run: in its history, to ``on_record``, in the store and to the listeners."""
        record = self._decided(task, slot, outcome, error, at, token=token)
        self._write_and_publish(task, task.status, record)
        return record

    def _decided(
        self,
        task: ScheduledTask,
        slot: float,
        outcome: Outcome,
        error: str | None,
        at: float,
        *,
        token: int | None,
    ) -> ExecutionRecord:
        """The record of ``slot``, decided at ``at`` without a run, kept in the task's
        history and given to ``on_record`` (not yet written nor published)."""
        record = ExecutionRecord.of(
            task_id=task.id,
            name=task.name,
            attempt=0,
            due=slot,
            slot=slot,
            worker=-1,
            started=at,
            finished=at,
            ok=False,
            error=error,
            misfire=outcome,
            token=token,
        )
        self._keep(task, record)
        return record


def _skip_cap_text(
    overlap: Overlap | None,
    first: float,
    until: float | None,
    at: float,
    slots: int | None,
    *,
    late: bool,
) -> str:
    """The error text of the record standing for the slots past :data:`MAX_SKIPPED` that a
    run skipped (:func:`~lldsched.core.names.cap_text`, as a misfire's cap reads): that
    they passed unrun and why (a run of the task still running, or, ``late``, one that
    began late), which overlap policy decided them and when (``at``), how many (``slots``,
    :func:`~lldsched.core.names.stands_for`), the first of them, what became of them
    (not run; under ``BUFFER_ONE`` coalesced into the one run for the slot after them)
    and where the task goes on (``until``)."""
    why = (
        "a run of this task for an earlier slot began late: it waited for a worker, or was resumed"
        if late
        else "a run of this task was still running"
    )
    policy = "none: its runs never overlap" if overlap is None else overlap.value
    fate = (
        "coalesced into the one run the policy made (the slot after them)"
        if overlap is BUFFER_ONE
        else "none of them run"
    )
    return cap_text(
        SKIP_CAP,
        passed=f"more than {MAX_SKIPPED} slots passed unrun ({why}) before the overlap "
        f"policy ({policy}) decided them at {instant_text(at)}",
        kept=f"the first {MAX_SKIPPED:,}",
        stands=stands_for(slots),
        first=first,
        last="up to then" if until is None else f"up to before {instant_text(until)}",
        then=f"{fate}; {goes_on(until)}",
    )
