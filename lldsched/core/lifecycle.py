"""The task lifecycle as data: every allowed change of status, and what triggers it.

:class:`~lldsched.core.machine.SchedulerCore` makes the transitions; this module
lists them, one :class:`Transition` per edge, so that the lifecycle can be read,
drawn and checked from one place:

* notebook 03 draws its state diagram from :data:`TRANSITIONS`
  (:func:`mermaid_state_diagram`), so the picture cannot drift from the code;
* ``tests/test_lifecycle.py`` drives the core through every trigger and checks
  that the changes it observes are exactly the edges listed here.

``None`` as a source is registration (a task enters SCHEDULED, or PAUSED when
registered ``paused=True``: it never was SCHEDULED).  The triggers
are short, to label a diagram; what they mean:

* ``ok, next run`` resets the attempt counter, ``failed, attempts left`` keeps it
  (RETRYING is its own status for that reason);
* ``slot given up``: a recurring task's slot ran out of attempts; its last record
  says ``given_up`` and the task is due at its next slot, attempt counter reset;
* ``no attempts left`` is a one-off task's last failure, or the
  ``RetryPolicy.fail_after_given_up``-th slot in a row given up; it also covers a
  schedule whose ``next_run`` raised, and puts the id in the dead letter;
* ``mid-run``: the run in flight finishes and its record is kept (cancel raises
  its cooperative flag); a run in flight at pause that ends the task still reaches
  SUCCEEDED or FAILED; ``resume() mid-run`` returns a task whose run is still going;
* ``resume()`` runs a slept-through slot at once and re-anchors a fixed-rate grid
  (a run a plan decided, a catch-up slot or an extra run, keeps its slot);
  a paused retry resumes as RETRYING with its attempt counter;
* ``redrive()`` puts a FAILED task back, due now, with a fresh attempt counter;
* ``upstreams not met``: a task with ``depends_on`` whose slot fell due before each
  upstream succeeded since its previous slot waits BLOCKED, off the heap; the
  success it waits for releases it (SCHEDULED, due at once); an upstream that is
  FAILED or CANCELLED fails it (:mod:`lldsched.core.dependencies`).

SUCCEEDED and CANCELLED end a task; FAILED ends it until ``redrive``.  Two edges
cross a restart rather than happen in a running process (``restart``): a task
stored RUNNING at a crash is restored SCHEDULED (or RETRYING, when it had
attempts behind it) and its attempt runs again (at-least-once,
:mod:`lldsched.core.recovery`).  The same two edges take back a run a shutdown stopped
before it started (a process-isolated run no worker process took:
:meth:`~lldsched.core.runs.RunTransitions.unstarted`), its attempt unspent.

The verbs that change a task's definition (``schedule(..., replace_existing=True)``,
``reschedule``, ``modify``, ``run_now``) change no status, so they are no edge here:
listeners hear them as an event whose ``previous`` equals its ``status``.

Standard library only, like the rest of the core.
"""

from __future__ import annotations

from typing import NamedTuple

from lldsched.core.names import (
    BLOCKED,
    CANCELLED,
    FAILED,
    PAUSED,
    RETRYING,
    RUNNING,
    SCHEDULED,
    SUCCEEDED,
)
from lldsched.model import TaskStatus

__all__ = ["TRANSITIONS", "Transition", "mermaid_state_diagram", "targets"]


class Transition(NamedTuple):
    """One allowed change of status: ``source -> target`` when ``trigger`` happens."""

    source: TaskStatus | None  # None: the task is being registered
    target: TaskStatus
    trigger: str


TRANSITIONS: tuple[Transition, ...] = (
    Transition(None, SCHEDULED, "schedule()"),
    Transition(None, PAUSED, "schedule(paused=True)"),
    Transition(SCHEDULED, RUNNING, "due"),
    Transition(RETRYING, RUNNING, "backoff elapsed"),
    Transition(RUNNING, SCHEDULED, "ok, next run"),
    Transition(RUNNING, SUCCEEDED, "ok, no next run"),
    Transition(RUNNING, RETRYING, "failed, attempts left"),
    Transition(RUNNING, SCHEDULED, "slot given up"),
    Transition(RUNNING, FAILED, "no attempts left"),
    Transition(SCHEDULED, PAUSED, "pause()"),
    Transition(RETRYING, PAUSED, "pause()"),
    Transition(RUNNING, PAUSED, "pause() mid-run"),
    Transition(PAUSED, SCHEDULED, "resume()"),
    Transition(PAUSED, RETRYING, "resume()"),
    Transition(PAUSED, RUNNING, "resume() mid-run"),
    Transition(PAUSED, SUCCEEDED, "run ends, no next run"),
    Transition(PAUSED, FAILED, "run fails, no attempts left"),
    Transition(SCHEDULED, CANCELLED, "cancel()"),
    Transition(RETRYING, CANCELLED, "cancel()"),
    Transition(RUNNING, CANCELLED, "cancel() mid-run"),
    Transition(PAUSED, CANCELLED, "cancel()"),
    Transition(FAILED, SCHEDULED, "redrive()"),
    Transition(SCHEDULED, BLOCKED, "due, upstreams not met"),
    Transition(BLOCKED, SCHEDULED, "upstreams succeeded"),
    Transition(BLOCKED, PAUSED, "pause()"),
    Transition(BLOCKED, CANCELLED, "cancel()"),
    Transition(BLOCKED, FAILED, "upstream failed or cancelled"),
    Transition(SCHEDULED, FAILED, "due, upstream failed or cancelled"),
    Transition(RUNNING, SCHEDULED, "restart"),
    Transition(RUNNING, RETRYING, "restart, attempts behind it"),
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
