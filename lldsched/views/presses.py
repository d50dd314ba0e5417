"""What a control panel says after a button press: what the verb did, in words.

A press acts at once, but a redrive only queues a run: "done" read as "it worked"
while the re-run could fail again.  So each verb says what it changed ("paused",
"queued again, due now"), a press that changed nothing says the status that made it
a no-op, and a redriven task is *watched*: when its re-run ends, the message says how
(succeeded; failed again and back in the dead letter; failed and a retry is due).
The watch reads the task as the panel's refresh sees it (no event is needed, so the
simulation player, which refreshes once a step, gets the outcome too); the panel
never blocks a button's callback waiting for the run.  A pause or a cancel of a task
with a run in flight says what becomes of that run (:func:`fate_in_flight`): on a
thread it finishes, but the threaded scheduler kills a process-isolated run and
cancels a coroutine run.  A pause on a shut-down scheduler, which takes it (it keeps
the books) but refuses the resume after it, says that nothing runs again rather than
"until resume"; so does a pause or a resume on a scheduler whose timer thread died,
which takes both and dispatches nothing, with what to do: the panel passes the
runtime's ``metrics().state``, which both runtimes answer (a simulation's is
``"stopped"`` after its ``shutdown()``, never ``"dead"``), and names the runtime as the
user built it (:func:`runtime_noun`: "the simulation is shut down", not "the scheduler").

Only strings are made here: :class:`lldsched.views.panel.ControlPanel` shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lldsched.core.isolation import is_loop_action
from lldsched.core.task import ScheduledTask
from lldsched.errors import DEAD_TIMER, DEAD_TIMER_ADVICE
from lldsched.model import TaskStatus
from lldsched.printable import one_line
from lldsched.runtime import Runtime, Stepped

__all__ = ["RedriveWatch", "fate_in_flight", "pressed", "runtime_noun"]

When = Callable[[float | None], str]
"""Formats a timestamp in the panel's zone ("—" for None)."""


def runtime_noun(runtime: Runtime) -> str:
    """What a message calls ``runtime``: ``"simulation"`` for one stepped in virtual time
    (:class:`~lldsched.runtime.Stepped`), else ``"scheduler"``."""
    return "simulation" if isinstance(runtime, Stepped) else "scheduler"


def fate_in_flight(runtime: Runtime, task: ScheduledTask) -> str:
    """What a pause or a cancel does to ``task``'s run in flight on ``runtime``: the
    threaded scheduler kills a process-isolated run and cancels a coroutine run
    (``lldsched/threaded/control.py``, ``_stop_running``); a run on a thread, and every
    simulated run (a simulated child is never killed), finishes."""
    if isinstance(runtime, Stepped):
        return "finishes"
    definition = task.definition
    if definition.isolation == "process":
        return "is killed"
    if is_loop_action(definition.action, definition.isolation):
        return "is cancelled"
    return "finishes"


def pressed(
    verb: str,
    task: ScheduledTask,
    *,
    changed: bool,
    when: When,
    in_flight: str | None = None,
    state: str = "running",
    noun: str = "scheduler",
) -> str:
    """The message after ``verb`` was pressed on ``task`` (read after the verb acted);
    ``changed`` is what the verb returned, ``in_flight`` what became of the run the task
    had in flight at the press (:func:`fate_in_flight`), None if it had none, and
    ``state`` the runtime's own (``metrics().state``, read after the verb) and ``noun``
    what the runtime is called (:func:`runtime_noun`).

    A pause says nothing runs until resume, a resume when the next run is due, and a
    redrive that its outcome follows; on a runtime that dispatches nothing any more
    (:func:`_stalled`: shut down, or its timer dead) each says that instead."""
    name = one_line(task.name)  # as the panel's table shows it
    if not changed:
        return f"{verb} {name}: nothing to do, it is {task.status.value}"
    after = f"its run in flight {in_flight}, " if in_flight else ""
    stalled = _stalled(state, noun)
    if verb == "pause":
        if stalled is not None:
            return f"pause {name}: paused; {after}{stalled}"
        return f"pause {name}: paused; {after}nothing runs until resume"
    if verb == "resume":
        if stalled is not None:
            return f"resume {name}: resumed, yet {stalled}"
        return f"resume {name}: resumed; next run {when(task.next_run_at)}"
    if verb == "cancel":
        return f"cancel {name}: cancelled; {after}no further run"
    if verb == "redrive":
        if stalled is not None:
            return f"redrive {name}: queued again, yet {stalled}"
        return f"redrive {name}: queued again, due now; its outcome shows here when it ends"
    return f"{verb} {name}: done"  # a verb this module has no words for yet


def _stalled(state: str, noun: str) -> str | None:
    """Why nothing runs again on a runtime in ``state`` (``metrics().state``), called
    ``noun``, or None while it dispatches.  ``"stopped"``: shut down; it still takes a
    pause (it keeps the books) but refuses a resume.  ``"dead"``: its timer thread died;
    it takes a pause and a resume alike and dispatches neither; said, with what to do,
    in the words of the verbs that refuse on a dead timer
    (:data:`~lldsched.errors.DEAD_TIMER`)."""
    if state == "stopped":
        return f"the {noun} is shut down: nothing runs again, and resume is refused"
    if state == "dead":
        return f"{DEAD_TIMER}: nothing runs again, resume included; {DEAD_TIMER_ADVICE}"
    return None


@dataclass(frozen=True)
class RedriveWatch:
    """A redriven task, watched until its re-run ends: its counts at the press."""

    task_id: str
    runs: int
    failures: int

    @classmethod
    def of(cls, task: ScheduledTask) -> RedriveWatch:
        return cls(task.id, task.run_count, task.failure_count)

    def outcome(self, task: ScheduledTask, *, when: When) -> tuple[str, bool] | None:
        """``(message, still_watching)`` once the re-run has ended, ``None`` until then.

        Still watching after a failed attempt with a retry due: the next attempt's
        outcome is shown too."""
        if task.running or task.run_count == self.runs:
            return None  # not run yet, or running
        name = one_line(task.name)
        successes = (task.run_count - task.failure_count) - (self.runs - self.failures)
        if successes > 0:
            return f"redrive {name}: re-driven, and the re-run succeeded", False
        error = task.last_error or "no error text"
        if task.status is TaskStatus.FAILED:
            return (
                f"redrive {name}: re-driven, and the re-run failed again ({error}); "
                "back in the dead letter",
                False,
            )
        if task.status is TaskStatus.RETRYING:
            return (
                f"redrive {name}: re-driven, the re-run failed ({error}); "
                f"retry due {when(task.next_run_at)}",
                True,
            )
        return (
            f"redrive {name}: re-driven, the re-run failed ({error}); now {task.status.value}",
            False,
        )
