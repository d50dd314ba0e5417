"""The lifecycle table (lldsched.core.lifecycle) says exactly what the state machine does,
and notebook 03 draws the table."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from lldsched import FakeClock, FixedRate, OneTime, RetryPolicy, TaskStatus
from lldsched.core.lifecycle import TRANSITIONS, mermaid_state_diagram, targets
from lldsched.core.machine import SchedulerCore
from lldsched.core.recovery import recover
from lldsched.model import ExecutionRecord
from tests.harness import Harness, HeapQueue, RecordingStore

ROOT = Path(__file__).resolve().parent.parent
Edge = tuple[TaskStatus | None, TaskStatus]
TWO_TRIES = RetryPolicy(max_attempts=2, jitter=0)


def noop() -> None:
    return None


class Exploding:
    """A schedule whose next_run raises: the core fails the task loudly."""

    def first_run(self, now: float) -> float:
        return now

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        raise RuntimeError("broken schedule")


def observed(h: Harness) -> set[Edge]:
    """The status changes the core published (a finish after pause or cancel that changes
    nothing is published with previous == status: not a transition)."""
    return {(e.previous, e.status) for e in h.events if e.previous is not e.status}


def drive_every_trigger(clock: FakeClock) -> set[Edge]:
    """Register, run, fail, retry, pause, resume, cancel and redrive tasks through the core;
    return every change of status it made."""
    h = Harness(clock)
    core = h.core

    core.add(name="once", action=noop, schedule=OneTime(delay=0))
    h.step()  # SCHEDULED -> RUNNING -> SUCCEEDED
    tick = core.add(name="tick", action=noop, schedule=FixedRate(60))
    h.step()  # RUNNING -> SCHEDULED
    core.pause(tick.id)  # SCHEDULED -> PAUSED
    core.resume(tick.id)  # PAUSED -> SCHEDULED
    core.cancel(tick.id)  # SCHEDULED -> CANCELLED
    held = core.add(name="held", action=noop, schedule=FixedRate(60), paused=True)  # -> PAUSED
    core.cancel(held.id)
    hourly = core.add(
        name="hourly", action=noop, schedule=FixedRate(3600), retry=RetryPolicy.never()
    )
    h.step(error="boom")  # RUNNING -> SCHEDULED, the slot given up
    core.cancel(hourly.id)

    flaky = core.add(name="flaky", action=noop, schedule=OneTime(delay=0), retry=TWO_TRIES)
    h.step(error="boom")  # RUNNING -> RETRYING
    core.pause(flaky.id)  # RETRYING -> PAUSED
    core.resume(flaky.id)  # PAUSED -> RETRYING
    h.step(error="boom")  # RETRYING -> RUNNING -> FAILED
    core.redrive(flaky.id)  # FAILED -> SCHEDULED
    core.pause(flaky.id)
    core.cancel(flaky.id)  # PAUSED -> CANCELLED

    retrying = core.add(name="retrying", action=noop, schedule=OneTime(delay=0), retry=TWO_TRIES)
    h.step(error="boom")
    core.cancel(retrying.id)  # RETRYING -> CANCELLED

    for verb in ("pause-resume", "pause-succeed", "pause-fail", "cancel"):
        task = core.add(name=verb, action=noop, schedule=OneTime(delay=0), retry=TWO_TRIES)
        if verb == "pause-fail":  # one failed attempt behind it: the next failure is the last
            h.step(error="boom")
        run = h.begin()
        if verb == "cancel":
            core.cancel(task.id)  # RUNNING -> CANCELLED
        else:
            core.pause(task.id)  # RUNNING -> PAUSED
        if verb == "pause-resume":
            core.resume(task.id)  # PAUSED -> RUNNING
        error = "boom" if verb == "pause-fail" else None
        core.finish(run, clock.now(), clock.now(), error)  # PAUSED -> SUCCEEDED / FAILED

    core.add(name="exploding", action=noop, schedule=Exploding())
    h.step()  # RUNNING -> FAILED, through the schedule

    drive_dependencies(h)
    return observed(h)


def drive_dependencies(h: Harness) -> None:
    """The edges of BLOCKED: held back, released, paused, cancelled, failed by its upstream."""
    core = h.core
    never = RetryPolicy.never()
    doomed = core.add(name="doomed", action=noop, schedule=OneTime(delay=3600), retry=never)
    fine = core.add(name="fine", action=noop, schedule=OneTime(delay=7200))
    held = {}
    for verb in ("release", "pause", "cancel", "fail"):
        upstream = fine if verb == "release" else doomed
        held[verb] = core.add(
            name=verb, action=noop, schedule=OneTime(delay=0), depends_on=[upstream.id]
        )
        assert h.offer() is None  # SCHEDULED -> BLOCKED
    core.pause(held["pause"].id)  # BLOCKED -> PAUSED
    core.cancel(held["cancel"].id)  # BLOCKED -> CANCELLED
    h.step(error="boom")  # doomed: RUNNING -> FAILED; "fail": BLOCKED -> FAILED
    assert held["fail"].status is TaskStatus.FAILED
    late = core.add(name="late", action=noop, schedule=OneTime(delay=0), depends_on=[doomed.id])
    assert h.offer() is None  # late: SCHEDULED -> FAILED, its upstream is dead
    assert late.status is TaskStatus.FAILED
    h.step()  # fine succeeds: "release" goes BLOCKED -> SCHEDULED
    assert held["release"].status is TaskStatus.SCHEDULED


def crash_mid_run(clock: FakeClock, *, failures_before: int) -> TaskStatus:
    """Begin a run on a core writing through a store, drop the core (a crash), and restore
    a new core from the store: the status the task comes back in."""
    store = RecordingStore()
    h = Harness(clock, store=store)
    task = h.core.add(name="job", action=noop, schedule=FixedRate(60), retry=TWO_TRIES)
    for _ in range(failures_before):
        h.step(error="boom")
    h.begin()
    assert task.status is TaskStatus.RUNNING
    restarted = SchedulerCore(clock=clock, queue=HeapQueue())
    (restored,) = recover(restarted, store)
    return restored.status


def test_the_core_makes_every_transition_the_table_lists_and_no_other(clock: FakeClock) -> None:
    made = drive_every_trigger(clock)
    made.add((TaskStatus.RUNNING, crash_mid_run(clock, failures_before=0)))
    made.add((TaskStatus.RUNNING, crash_mid_run(clock, failures_before=1)))
    listed = {(edge.source, edge.target) for edge in TRANSITIONS}
    assert made - listed == set(), "the core made transitions the table does not list"
    assert listed - made == set(), "the table lists transitions the core never made"


def test_a_run_in_flight_at_a_crash_comes_back_scheduled_or_retrying(clock: FakeClock) -> None:
    assert crash_mid_run(clock, failures_before=0) is TaskStatus.SCHEDULED
    assert crash_mid_run(clock, failures_before=1) is TaskStatus.RETRYING


def test_control_verbs_outside_the_table_change_nothing(clock: FakeClock) -> None:
    h = Harness(clock)
    done = h.core.add(name="done", action=noop, schedule=OneTime(delay=0))
    h.step()
    assert done.status is TaskStatus.SUCCEEDED
    for verb in (h.core.pause, h.core.resume, h.core.cancel, h.core.redrive):
        assert verb(done.id) is False
        assert done.status is TaskStatus.SUCCEEDED
    assert targets(TaskStatus.SUCCEEDED) == frozenset()
    assert targets(TaskStatus.CANCELLED) == frozenset()
    assert targets(TaskStatus.FAILED) == {TaskStatus.SCHEDULED}


def test_every_status_appears_in_the_table() -> None:
    named = {edge.source for edge in TRANSITIONS} | {edge.target for edge in TRANSITIONS}
    assert named - {None} == set(TaskStatus)
    assert all(edge.trigger for edge in TRANSITIONS)


def test_notebook_03_draws_the_table_as_it_is_now() -> None:
    source = (ROOT / "notebooks" / "src" / "03-failure.py").read_text()
    blocks = re.findall(r"^# ```mermaid\n(.*?)^# ```$", source, flags=re.DOTALL | re.MULTILINE)
    drawn = ["\n".join(line.removeprefix("# ") for line in b.splitlines()) for b in blocks]
    assert mermaid_state_diagram() in drawn, (
        "notebook 03's state diagram differs from lldsched.core.lifecycle.TRANSITIONS: "
        "paste `python -m lldsched.core.lifecycle` into its Markdown cell"
    )


def test_python_m_lifecycle_prints_the_diagram_and_importing_it_prints_nothing() -> None:
    """The notebook's cell is pasted from ``python -m lldsched.core.lifecycle``."""

    def output(*arguments: str) -> str:
        done = subprocess.run(
            [sys.executable, *arguments], cwd=ROOT, capture_output=True, text=True, check=True
        )
        return done.stdout

    assert output("-m", "lldsched.core.lifecycle") == mermaid_state_diagram() + "\n"
    assert output("-c", "import lldsched.core.lifecycle") == ""
