"""Records a policy decided without a run: a misfire, a skipped or coalesced slot.

:class:`DecidedRecords` is the part of :class:`~lldsched.core.machine.SchedulerCore`
that makes the record of a slot that did not run on its own (recovery's MISSED and
COALESCED, a run's SKIPPED slots, BUFFER_ONE's COALESCED ones: ``_skipped_by_run``)
and sends it where every record goes: the task's history and ``on_record``
(``_keep``), the store and the listeners (``_write_and_publish``).  Every slot leaves a
record; past :data:`~lldsched.core.names.MAX_SKIPPED` skipped slots, one record
stands for the rest.  No thread, no lock: the runtime serialises calls.
"""

from __future__ import annotations

from lldsched.core.names import BUFFER_ONE, COALESCED, MAX_SKIPPED, SKIPPED, Skipped
from lldsched.core.parts import CoreParts
from lldsched.core.task import ScheduledTask
from lldsched.model import ExecutionRecord, Outcome

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
        skipped: Skipped,
        *,
        due: float | None,
        at: float,
        token: int | None,
    ) -> None:
        """The slots a run that finished ``at`` skipped, up to its task's next ``due``:
        SKIPPED, or under ``Overlap.BUFFER_ONE`` COALESCED into the run due next."""
        if task._options.overlap is BUFFER_ONE:  # folded into the run due next
            note = f"Overlap.BUFFER_ONE: coalesced into one run for slot {due!r}"
            self._record_skipped(
                task, skipped, until=due, at=at, token=token, outcome=COALESCED, note=note
            )
        else:
            self._record_skipped(task, skipped, until=due, at=at, token=token)

    def _record_skipped(
        self,
        task: ScheduledTask,
        skipped: Skipped,
        *,
        until: float | None,
        at: float,
        token: int | None = None,
        outcome: Outcome = SKIPPED,
        note: str | None = None,
    ) -> None:
        """Record each slot in ``skipped`` as ``outcome`` (SKIPPED, or COALESCED by
        BUFFER_ONE; ``note`` is their text), decided ``at`` (the run's finish); past
        :data:`MAX_SKIPPED` slots, the last record stands for the rest, to ``until``.
        ``token``: the run's fencing token, which fences these records as well."""
        for slot in skipped[:MAX_SKIPPED]:
            self._record_decided(task, slot, outcome, note, at, token=token)
        if len(skipped) > MAX_SKIPPED:
            rest = skipped[MAX_SKIPPED]
            text = (
                f"SkipCap: more than {MAX_SKIPPED} slots skipped; this record stands for "
                f"the slots from {rest!r} to before {until!r}"
            )
            self._record_decided(task, rest, outcome, text, at, token=token)

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
        self._write_and_publish(task, task.status, record)
        return record
