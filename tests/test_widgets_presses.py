"""A press of a view's button made off the kernel's thread runs on it, each once, in order.

JupyterLab 4.4+ sends widget messages on a kernel subshell, which ipykernel 7 handles on
a thread of its own, beside the cell the main thread runs.  The simulation player's and
the control panel's buttons (and the player's "run until" box) ran their handler there,
beside a cell that may use the same simulation (which has no lock: the thread that
steps it is meant to be the only one).  A press is now handed to the kernel's event loop
(:class:`lldsched.views.widgetkit.EachOnKernelThread`), where it runs between cells; none
is merged with another (three presses of "+1 hour" are three hours).  Here the loop of
``asyncio.run`` plays the kernel's, and a thread plays the subshell's."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from lldsched import FakeClock, FixedRate, Scheduler
from lldsched.sim import Simulation, fixed
from lldsched.views.widgetkit import EachOnKernelThread
from lldsched.views.widgets import ControlPanel, SimulationPlayer

START = datetime(2026, 1, 5, tzinfo=UTC)
T0 = START.timestamp()


def on_a_subshell(presses: Callable[[], None]) -> None:
    """``presses()`` on a thread of its own, waited for: the loop is held meanwhile, as
    by a running cell."""
    thread = threading.Thread(target=presses)
    thread.start()
    thread.join()


async def between_cells(done: Callable[[], bool]) -> None:
    """The loop's next turns, until ``done()`` (the calls handed to it have run)."""
    for _ in range(100):
        if done():
            return
        await asyncio.sleep(0)
    raise AssertionError("the calls handed to the kernel's loop never ran")


def test_each_request_off_the_loops_thread_runs_on_it_once_in_order() -> None:
    calls: list[tuple[int, int]] = []

    def press(number: int) -> None:
        calls.append((number, threading.get_ident()))

    async def in_a_kernel() -> None:
        presses = EachOnKernelThread(press)

        def press_four() -> None:
            for number in (1, 2, 2, 3):
                presses.request(number)

        on_a_subshell(press_four)
        assert calls == []  # nothing ran on the subshell's thread
        await between_cells(lambda: len(calls) == 4)
        loop_thread = threading.get_ident()
        assert calls == [(1, loop_thread), (2, loop_thread), (2, loop_thread), (3, loop_thread)]
        presses.request(4)  # on the loop's own thread (a cell's click(), Voila): at once
        assert calls[-1] == (4, loop_thread)

    asyncio.run(in_a_kernel())


def test_without_a_loop_a_request_runs_at_once() -> None:
    calls: list[int] = []
    presses = EachOnKernelThread(calls.append)
    on_a_subshell(lambda: presses.request(1))
    assert calls == [1]


def test_the_players_presses_off_the_kernels_thread_step_on_it_each_once_in_order() -> None:
    """Three "+1 hour", Enter in "run until" 05:00, one more "+1 hour": 06:00.  Merged,
    it fell short; out of order, the run until came first and it ended at 08:00."""
    sim = Simulation(workers=2, start=START)
    sim.schedule("tick", FixedRate(600), duration=fixed(30))
    stepped_on: set[int] = set()
    sim.add_listener(lambda _event: stepped_on.add(threading.get_ident()))

    async def in_a_kernel() -> None:
        player = SimulationPlayer(sim, chart=False)

        def presses() -> None:
            for _ in range(3):
                player.buttons["+1 hour"].click()
            player.until.value = "2026-01-05 05:00"  # Enter in the box
            player.buttons["+1 hour"].click()

        on_a_subshell(presses)
        assert sim.now == T0  # nothing ran on the subshell's thread
        await between_cells(lambda: sim.now == T0 + 6 * 3600)
        assert stepped_on == {threading.get_ident()}
        assert player.clock.value == "<b>simulated time</b> 2026-01-05 06:00:00 UTC"
        player.close()

    asyncio.run(in_a_kernel())


def test_the_panels_presses_and_finds_off_the_kernels_thread_run_on_it() -> None:
    sim = Simulation(workers=2, start=START)
    tick = sim.schedule("tick", FixedRate(600), duration=fixed(30))

    async def in_a_kernel() -> None:
        panel = ControlPanel(sim)
        refreshes = panel.refreshes
        on_a_subshell(lambda: panel.button(tick.id, "pause").click())
        on_a_subshell(lambda: setattr(panel.find, "value", "ti"))
        assert tick.status.value == "scheduled" and panel.refreshes == refreshes
        await between_cells(lambda: panel.refreshes >= refreshes + 2)
        assert tick.status.value == "paused"
        assert panel.row(tick.id)["status"] == "paused"
        assert panel.message.value.startswith("pause tick: paused")
        panel.close()

    asyncio.run(in_a_kernel())


def test_a_threaded_schedulers_panel_acts_at_once_on_any_thread() -> None:
    """Its verbs are safe on any thread, and a press queued behind a cell that waits on
    a stuck task could not cancel it: the panel of a threaded scheduler does not queue."""
    with Scheduler(workers=1, clock=FakeClock(T0)) as scheduler:
        tick = scheduler.schedule("tick", lambda: None, FixedRate(600))

        async def in_a_kernel() -> None:
            panel = ControlPanel(scheduler)
            on_a_subshell(lambda: panel.button(tick.id, "pause").click())
            assert tick.status.value == "paused"  # the loop has not turned: done at once
            panel.close()

        asyncio.run(in_a_kernel())


def test_a_queued_press_that_raises_is_said_under_the_table_and_the_next_press_acts() -> None:
    """A press handed to the kernel's loop whose step raised (a duration model's bug) went
    to the loop's exception handler: the kernel's log, the terminal running Jupyter.  It
    is said under the player's table, with its traceback, and the next press steps on."""
    sim = Simulation(workers=1, start=START)
    calls: list[int] = []

    def breaks_once(*_args: object) -> float:
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("the duration model broke")
        return 30.0

    sim.schedule("tick", FixedRate(600), duration=breaks_once)
    logged: list[dict[str, object]] = []

    async def in_a_kernel() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, said: logged.append(said))
        player = SimulationPlayer(sim, chart=False)

        def press_three() -> None:
            for _ in range(3):
                player.buttons["step"].click()

        on_a_subshell(press_three)
        await between_cells(lambda: bool(player.table.said))
        said = player.table.said
        assert said.startswith("step failed: ValueError: the duration model broke\n"), said
        assert 'raise ValueError("the duration model broke")' in said  # its traceback
        assert "<details>" in player.table.message.value  # opened by a click
        assert "the duration model broke" in player.to_text()
        assert calls == [1, 1]  # the third press (the second run's start) raised
        assert logged == []  # nothing for the kernel's log
        player.buttons["step"].click()  # and the next press, on the kernel's thread, acts
        assert player.last_step.value.startswith("last step: tick started")
        player.close()

    asyncio.run(in_a_kernel())


def test_a_panels_press_that_raises_is_said_under_its_table() -> None:
    """The control panel's too: a runtime's verb that raised something other than the
    package's refusals (a bug; here a simulation made to break on pause)."""

    class Broken(Simulation):
        def pause(self, task_id: str) -> bool:
            raise RuntimeError(f"pause broke on {task_id}")

    sim = Broken(workers=1, start=START)
    tick = sim.schedule("tick", FixedRate(600), duration=fixed(30))
    logged: list[dict[str, object]] = []

    async def in_a_kernel() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, said: logged.append(said))
        panel = ControlPanel(sim)
        on_a_subshell(lambda: panel.button(tick.id, "pause").click())
        await between_cells(lambda: bool(panel.said))
        assert panel.said.startswith("pause tick failed: RuntimeError: pause broke on task-1\n")
        assert "Traceback (most recent call last)" in panel.said
        assert logged == []
        assert panel.row(tick.id)["status"] == "scheduled"
        panel.button(tick.id, "cancel").click()  # the next press acts
        assert panel.said.startswith("cancel tick: cancelled")
        panel.close()

    asyncio.run(in_a_kernel())
