"""A real Ctrl-C (SIGINT) lands at any point where Python checks for a signal, between
two statements of the simulation's loop or inside the core's transition, not only in an
action, a model, an intervention, a listener or a store call (tests/test_sim_interrupt.py).

Injected deterministically with ``sys.settrace``: a ``KeyboardInterrupt`` raised by the
trace function is raised in the traced frame there, as the signal's would be.  In the
loop's own frame (``Simulation._advance``) it is raised where CPython checks for a signal
(after each call, at the loop's backward jump: per-opcode tracing), and inside every
frame of the package below it at each line (more places than a signal reaches, none
fewer).  Whatever the place, the simulation is then either whole (every worker free or
running one run in flight, every running task in flight, and a second ``run()`` gives
the records an uninterrupted one gives; but an attempt a Ctrl-C stopped is recorded
failed with it, as an action's, and an intervention it stopped is spent) or it refuses
to move on, with a ``SchedulerStateError`` naming the instant, while its reads still
answer (docs/decisions/simulation.md, "A Ctrl-C that lands mid-step stops the simulation for
good").  A verb an intervention makes is whole or refuses as one made between two
``run()`` calls ("A Ctrl-C in a simulation's verb", tests/test_sim_verb_interrupts.py).
Before, a Ctrl-C landing between taking a due entry and starting it lost the task for
good, and one between a run's finish and its worker's release lost the worker: the
second ``run()`` went on, its records silently wrong."""

from __future__ import annotations

import dis
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from lldsched import EventLog, FixedRate, SchedulerStateError, TaskStatus
from lldsched.sim import Simulation
from lldsched.sim.simulation import Simulation as Loop

PACKAGE = str(Path(Loop._advance.__code__.co_filename).parent.parent)
LOOP = Loop._advance.__code__
# Where CPython checks for a signal (CALL_KW: Python 3.13's call with keywords).
CALLS = {"CALL", "CALL_KW", "CALL_FUNCTION_EX", "JUMP_BACKWARD"}
END = 25.0


def scenario() -> Simulation:
    """Two workers kept busy by three fixed rates (finishes, starts, waits), an
    intervention, and a listener: every kind of event, a few dozen of them."""
    sim = Simulation(workers=2, start=0.0, listeners=[EventLog()])
    sim.schedule("long", FixedRate(10), duration=15.0)
    sim.schedule("short", FixedRate(7), duration=3.0)
    sim.schedule("instant", FixedRate(5), duration=0.0)
    sim.at(12.0, lambda: sim.pause(sim.tasks()[2].id))
    sim.at(21.0, lambda: sim.resume(sim.tasks()[2].id))
    return sim


class Interrupter:
    """Raises ``KeyboardInterrupt`` at the ``at``-th place a signal could land; counts
    them all when ``at`` is None."""

    def __init__(self, at: int | None) -> None:
        self.at = at
        self.places = 0
        self.loop_places = 0  # of places, those in the loop's own frame
        self.where = ""
        self.after_call = False
        self.in_intervention = False  # landed inside an intervention (or a verb it made)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call":  # a frame of the package's: traced; the rest are not
            if not frame.f_code.co_filename.startswith(PACKAGE):
                return None
            frame.f_trace_opcodes = frame.f_code is LOOP
            return self
        if frame.f_code is LOOP:
            if event != "opcode":
                # Python 3.13 drops the f_trace_opcodes set at the "call" event (not yet
                # the frame's tracer then): set again, it holds.
                frame.f_trace_opcodes = True
                return self
            code = frame.f_code.co_code[frame.f_lasti]
            name = dis.opname[code]
            landing = self.after_call or name == "JUMP_BACKWARD"
            self.after_call = name in CALLS
            if landing:
                self.loop_places += 1
                self._place(frame)
        elif event == "line":
            self._place(frame)
        return self

    def _place(self, frame: FrameType) -> None:
        self.places += 1
        if self.places == self.at:
            self.where = f"{frame.f_code.co_name}:{frame.f_lineno}"
            caller: FrameType | None = frame
            while caller is not None and caller.f_code is not LOOP:
                self.in_intervention |= caller.f_code.co_filename == __file__
                caller = caller.f_back
            raise KeyboardInterrupt(f"Ctrl-C at {self.where}")


def interrupted_at(at: int | None) -> tuple[Simulation, Interrupter, bool]:
    sim = scenario()
    interrupter = Interrupter(at)
    # Python 3.12 reports opcodes to a frame's f_trace_opcodes only if some frame set it
    # before sys.settrace (it then turns the per-instruction events on).
    here = sys._getframe()
    here.f_trace_opcodes, here.f_trace_opcodes = True, False
    sys.settrace(interrupter)
    try:
        sim.run(END)
        raised = False
    except KeyboardInterrupt:
        raised = True
    finally:
        sys.settrace(None)
    return sim, interrupter, raised


def whole(sim: Simulation) -> list[str]:
    """What is not whole in ``sim`` (nothing: [])."""
    wrong = []
    in_flight = [(item[2], item[3].task.id) for item in sim._finishes]
    busy = sorted(worker for worker, _ in in_flight)
    if sorted(busy + list(sim._free)) != list(range(sim.workers)):
        wrong.append(f"workers busy {busy}, free {sorted(sim._free)}")
    running = {task.id for task in sim.tasks() if task.status is TaskStatus.RUNNING}
    if running != {task_id for _, task_id in in_flight}:
        wrong.append(f"running {sorted(running)}, in flight {in_flight}")
    return wrong


def test_a_ctrl_c_anywhere_in_the_loop_leaves_it_whole_or_refusing_to_move_on() -> None:
    reference = scenario().run(END).records()
    _, counted, raised = interrupted_at(None)
    assert not raised and counted.places > 500  # (the loop's own places, and the core's)
    assert counted.loop_places > 50  # the loop's own (none, on 3.12 and 3.13, before)
    refused, outcomes = set(), []
    for at in range(1, counted.places + 1):
        sim, interrupter, raised = interrupted_at(at)
        assert raised, f"the Ctrl-C at {interrupter.where} did not reach the caller"
        try:
            sim.run(END)
        except SchedulerStateError as refusal:
            assert f"an interrupt (KeyboardInterrupt: Ctrl-C at {interrupter.where})" in str(
                refusal
            )
            refused.add(interrupter.where)
            with pytest.raises(SchedulerStateError):
                sim.step()
            assert sim.shutdown() is False  # nothing drains; its loops are closed
            sim.records(), sim.metrics(), sim.tasks()  # the reads still answer
            continue
        records = sim.records()
        stopped = [
            r for r in records if r.error == f"KeyboardInterrupt: Ctrl-C at {interrupter.where}"
        ]
        if interrupter.in_intervention or stopped:  # spent, or recorded failed: as meant
            assert len(stopped) <= 1, stopped
            outcomes.append((interrupter.where, whole(sim), True))
        else:
            outcomes.append((interrupter.where, whole(sim), records == reference))
    assert [outcome for outcome in outcomes if outcome[1:] != ([], True)] == []
    # The places that tore the state before: refused now, never silently wrong.
    lines = {place.split(":")[0] for place in refused}
    assert {"_advance", "finish", "begin"} <= lines, sorted(refused)
