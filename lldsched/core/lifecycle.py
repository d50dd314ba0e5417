"""The task lifecycle as data: every allowed change of status, and what triggers it.

:class:`~lldsched.core.machine.SchedulerCore` makes the transitions; this module
lists them, one :class:`Transition` per edge, so that the lifecycle can be read,
drawn and checked from one place:

* notebook 03 draws its state diagram from :data:`TRANSITIONS`
  (:func:`mermaid_state_diagram`), so the picture cannot drift from the code;
* ``tests/test_lifecycle.py`` drives the core through every trigger and checks
  that the changes it observes are exactly the edges listed here.

``None`` as a source is registration (a task enters SCHEDULED); a target of
``None`` never occurs.  SUCCEEDED and CANCELLED end a task; FAILED ends it until
``redrive``.  Two edges cross a restart rather than happen in a running
process: a task stored RUNNING at a crash is restored SCHEDULED (or RETRYING,
when it had attempts behind it) and its attempt runs again (at-least-once,
:mod:`lldsched.core.recovery`).

Standard library only, like the rest of the core.
"""

from __future__ import annotations

from typing import NamedTuple

from lldsched.model import TaskStatus

__all__ = ["TRANSITIONS", "Transition", "mermaid_state_diagram", "targets"]

SCHEDULED = TaskStatus.SCHEDULED
RUNNING = TaskStatus.RUNNING
RETRYING = TaskStatus.RETRYING
PAUSED = TaskStatus.PAUSED
SUCCEEDED = TaskStatus.SUCCEEDED
FAILED = TaskStatus.FAILED
CANCELLED = TaskStatus.CANCELLED


class Transition(NamedTuple):
    """One allowed change of status: ``source -> target`` when ``trigger`` happens."""

    source: TaskStatus | None  # None: the task is being registered
    target: TaskStatus
    trigger: str


TRANSITIONS: tuple[Transition, ...] = (
    Transition(None, SCHEDULED, "schedule()"),
    Transition(SCHEDULED, RUNNING, "due, a worker begins it"),
    Transition(RETRYING, RUNNING, "backoff elapsed, a worker begins it"),
    Transition(RUNNING, SCHEDULED, "ok, the schedule has a next run (attempt reset)"),
    Transition(RUNNING, SUCCEEDED, "ok, the schedule has no next run"),
    Transition(RUNNING, RETRYING, "failed or timed out, attempts remain (attempt kept)"),
    Transition(RUNNING, FAILED, "attempts exhausted or next_run raised (dead letter)"),
    Transition(SCHEDULED, PAUSED, "pause()"),
    Transition(RETRYING, PAUSED, "pause()"),
    Transition(RUNNING, PAUSED, "pause() mid-run (the run finishes)"),
    Transition(PAUSED, SCHEDULED, "resume() (a slept-through slot runs at once)"),
    Transition(PAUSED, RETRYING, "resume() of a paused retry (attempt kept)"),
    Transition(PAUSED, RUNNING, "resume() while its run is still going"),
    Transition(PAUSED, SUCCEEDED, "the run in flight at pause ends the task"),
    Transition(PAUSED, FAILED, "the run in flight at pause exhausts the attempts"),
    Transition(SCHEDULED, CANCELLED, "cancel()"),
    Transition(RETRYING, CANCELLED, "cancel()"),
    Transition(RUNNING, CANCELLED, "cancel() mid-run (the run finishes, its flag raised)"),
    Transition(PAUSED, CANCELLED, "cancel()"),
    Transition(FAILED, SCHEDULED, "redrive() (due now, fresh attempt counter)"),
    Transition(RUNNING, SCHEDULED, "restart after a crash mid-run (the run runs again)"),
    Transition(RUNNING, RETRYING, "restart after a crash mid-retry (the retry runs again)"),
)
"""Every allowed edge.  Two triggers may share a (source, target) pair."""


def targets(source: TaskStatus | None) -> frozenset[TaskStatus]:
    """The statuses a task in ``source`` may move to (``None``: at registration)."""
    return frozenset(edge.target for edge in TRANSITIONS if edge.source is source)


def mermaid_state_diagram() -> str:
    """The lifecycle as a Mermaid ``stateDiagram-v2`` (JupyterLab 4 renders it)."""
    lines = ["stateDiagram-v2"]
    for source, target, trigger in TRANSITIONS:
        start = "[*]" if source is None else source.name
        lines.append(f"    {start} --> {target.name}: {trigger}")
    for end in (SUCCEEDED, CANCELLED):
        lines.append(f"    {end.name} --> [*]")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m lldsched.core.lifecycle: the diagram notebook 03 shows
    print(mermaid_state_diagram())
