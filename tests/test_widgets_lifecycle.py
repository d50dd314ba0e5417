"""The widgets' lifecycle: a closed ControlPanel, SimulationPlayer or Interaction leaves no
widget of its own open (its rows, buttons, boxes, outputs, and every one's layout and
style: ipywidgets' ``close`` closes only the widget it is called on), stops listening,
and is garbage once dropped; a closed one shown reads as text; and a notebook cell run
again closes what its run before made (its output is replaced, its listener was not)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import ipywidgets
import pytest
from ipywidgets.widgets.widget import _instances  # ipywidgets 8's registry of open widgets

from lldsched import FakeClock, FixedRate, OneTime, RetryPolicy
from lldsched.sim import Simulation, fixed
from lldsched.views.interact import Interaction
from lldsched.views.widgets import ControlPanel, SimulationPlayer
from tests.conftest import SchedulerFactory, settle

START = datetime(2026, 1, 5, tzinfo=UTC)


def simulation(tasks: int = 3) -> Simulation:
    sim = Simulation(workers=2, start=START)
    for number in range(tasks):
        sim.schedule(f"job-{number}", FixedRate(600), duration=fixed(30))
    return sim


def opened_by(make: Callable[[], Any]) -> tuple[Any, set[str]]:
    """What ``make()`` returns, and the ids of the widgets it opened."""
    before = set(_instances)
    made = make()
    return made, set(_instances) - before


def collected(ref: weakref.ref[Any]) -> bool:
    gc.collect()
    return ref() is None


def closed(view: Any, opened: set[str], *, still_listening: bool) -> weakref.ref[Any]:
    """Check that the closed ``view`` left none of the widgets it ``opened`` open and no
    listener (``still_listening``: whether its runtime could remove it again); a weak
    reference to it, for the caller to see it collected once dropped."""
    assert not (set(_instances) & opened), f"widgets the {type(view).__name__} made are open"
    assert not still_listening, f"the closed {type(view).__name__} still listens"
    return weakref.ref(view)


def test_a_closed_panel_leaves_none_of_its_widgets_open_and_is_garbage(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    for number in range(8):
        scheduler.schedule(f"job-{number}", lambda: None, FixedRate(60))
    panel, opened = opened_by(lambda: ControlPanel(scheduler, loop=None, max_rows=5))
    panel.find.value = "job-7"  # rows leave the grid: they are closed there, not at close()
    panel.find.value = ""
    assert len(panel.rows) == 5 and opened
    panel.close()
    ref = closed(panel, opened, still_listening=scheduler.remove_listener(panel._on_event))
    # The first runs' events delivered: a delivery under way holds the panel's bound
    # method in the listener thread's frame (fresh-clone CI saw it still referenced).
    settle(scheduler)
    del panel
    assert collected(ref), "the closed panel is still referenced"
    clock.advance(60)
    settle(scheduler)  # the scheduler's events reach no closed panel


def test_a_closed_player_leaves_none_of_its_widgets_open_and_is_garbage() -> None:
    sim = simulation()
    player, opened = opened_by(lambda: SimulationPlayer(sim))
    player.buttons["+1 hour"].click()
    player.close()
    ref = closed(player, opened, still_listening=sim.remove_listener(player._listener))
    del player
    assert collected(ref), "the closed player is still referenced"
    sim.run_for(3600)  # the simulation goes on without it


def test_a_closed_interaction_closes_what_it_made_and_leaves_a_given_control_to_its_owner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, str]] = []

    def show(period: int = 60, policy: str = "SKIP") -> None:
        calls.append((period, policy))

    given = ipywidgets.Dropdown(options=["SKIP", "CATCH_UP"])
    shown, opened = opened_by(lambda: Interaction(show, {"period": (10, 100), "policy": given}))
    shown.close()
    shown.close()  # idempotent
    assert not (set(_instances) & opened)  # the box, the output, the slider made here
    assert given.comm is not None and given.layout.comm is not None  # the caller's: open
    given.value = "CATCH_UP"
    assert calls == [(60, "SKIP")], "a closed interaction still calls its function"
    ref = weakref.ref(shown)
    del shown
    assert collected(ref)
    given.close()


def test_a_closed_view_shown_again_reads_as_its_text_said_closed() -> None:
    panel = ControlPanel(simulation(), loop=None, live=False)
    panel.close()
    assert panel._repr_mimebundle_() == {
        "text/plain": f"{panel.to_text()}\n(closed: no longer updated)"
    }
    player = SimulationPlayer(simulation(), chart=False)
    player.close()
    assert player._repr_mimebundle_()["text/plain"].startswith("simulated time 2026-01-05")
    shown = Interaction(lambda period=1: None, {"period": (1, 5)})
    shown.close()
    assert "(closed: no longer updated)" in shown._repr_mimebundle_()["text/plain"]


class Kernel:
    """Stands in for ipykernel: the request being run, as JupyterLab sends it."""

    def __init__(self) -> None:
        self.parent: dict[str, Any] = {}
        self.requests = 0

    def run(self, cell: str | None, msg_type: str = "execute_request") -> None:
        self.requests += 1
        self.parent = {
            "header": {"msg_id": f"request-{self.requests}", "msg_type": msg_type},
            "metadata": {"cellId": cell} if cell else {},
        }

    def get_parent(self) -> dict[str, Any]:
        return self.parent


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Kernel]:
    kernel = Kernel()
    shell = type("Shell", (), {"kernel": kernel})()
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    yield kernel


def test_a_cell_run_again_closes_the_views_its_run_before_made_and_no_other(
    kernel: Kernel, make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    scheduler.schedule("tick", lambda: None, FixedRate(60))
    kernel.run("cell-a")
    first, second = ControlPanel(scheduler, loop=None), ControlPanel(scheduler, loop=None)
    kernel.run("cell-b")
    elsewhere = ControlPanel(scheduler, loop=None)
    kernel.run("cell-a", msg_type="comm_msg")  # a button's callback: no cell runs
    from_a_button = ControlPanel(scheduler, loop=None)
    assert not (first.closed or second.closed or elsewhere.closed or from_a_button.closed)
    kernel.run("cell-a")  # run again
    again = ControlPanel(scheduler, loop=None)
    assert first.closed and second.closed, "the run before's panels are still open"
    assert scheduler.remove_listener(first._on_event) is False
    assert not (again.closed or elsewhere.closed or from_a_button.closed)
    kernel.run(None)  # a front end that does not name its cells (nbclient)
    unnamed = ControlPanel(scheduler, loop=None)
    kernel.run(None)
    ControlPanel(scheduler, loop=None).close()
    assert not unnamed.closed
    for panel in (again, elsewhere, from_a_button, unnamed):
        panel.close()


def test_a_cell_run_again_closes_its_player_and_its_interaction(kernel: Kernel) -> None:
    kernel.run("cell-a")
    player = SimulationPlayer(simulation(), chart=False)
    shown = Interaction(lambda period=1: None, {"period": (1, 5)})
    kernel.run("cell-a")
    Interaction(lambda period=1: None, {"period": (1, 5)}).close()
    assert player.table.closed and player.widget.comm is None and shown.widget.comm is None


def test_a_failed_run_again_loses_nothing_registered(kernel: Kernel) -> None:
    """The old panel is closed by the new one's making, not before: a new panel that
    cannot be made (bad input) leaves the one before live."""
    sim = simulation()
    kernel.run("cell-a")
    panel = ControlPanel(sim, loop=None)
    kernel.run("cell-a")
    with pytest.raises(ValueError, match="max_rows"):
        ControlPanel(sim, loop=None, max_rows=0)
    assert not panel.closed and len(sim.tasks()) == 3
    sim.schedule("late", OneTime(delay=60), retry=RetryPolicy.never())
    panel.refresh()
    assert [row["task"] for row in panel.rows][-1] == "late"
    panel.close()


def test_a_closed_player_refuses_every_control_and_advances_nothing() -> None:
    from lldsched.errors import SchedulerStateError

    sim = simulation()
    player = SimulationPlayer(sim, chart=False)
    player.close()
    controls: dict[str, Callable[[], object]] = {
        "step": player.step,
        "advance": lambda: player.advance(3600),
        "run until": lambda: player.run_until(START.timestamp() + 3600),
    }
    for verb, control in controls.items():
        with pytest.raises(SchedulerStateError, match=f"cannot {verb}: the player is closed"):
            control()
    with pytest.raises(SchedulerStateError, match="cannot run until: the player is closed"):
        player.until.value = "2026-01-05 01:00"  # the box's own path: refused, not said
    for button in player.buttons.values():
        button.click()  # a callback's error is logged by ipywidgets, not raised
    assert sim.now == START.timestamp() and sim.records() == []
    assert "is closed" not in player.table.message.value
    player.close()  # still idempotent


def test_a_closed_panel_refuses_its_buttons_as_the_player_does(
    make_scheduler: SchedulerFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    scheduler = make_scheduler(clock=clock)
    task = scheduler.schedule("job", lambda: None, FixedRate(60))
    panel = ControlPanel(scheduler, loop=None)
    button = panel.button(task.id, "pause")
    panel.close()
    button.click()  # the widget is closed, but click() still calls its callback
    assert scheduler.task(task.id).status.value == "scheduled"
    assert "cannot pause job: the control panel is closed" in caplog.text
