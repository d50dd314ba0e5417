"""How many messages the views' widgets send to the page.  Each widget made, changed or
closed is a message on the kernel's IOPub, which drops what a slow front end has not
yet taken past its high-water mark (ZeroMQ's default: 1000 messages a subscriber), a
cell's status "idle" with the rest: JupyterLab then shows the cell running for ever
(docs/decisions/teaching-kit.md, "A table's rows share their layouts").  Notebook 04's two widget
cells, run one after the other by Run All, stay under one high-water mark together."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any, ClassVar

import comm
import pytest
from comm.base_comm import BaseComm

from lldsched.sim.scenario import build_scenario
from lldsched.views.widgets import SimulationPlayer

HIGH_WATER_MARK = 1000
"""ZeroMQ's default high-water mark, which ipykernel's IOPub socket keeps: the messages
it holds for one subscriber before it drops the next."""


class _Counting(BaseComm):
    """A comm that sends nothing and counts what it would have sent, by kind."""

    sent: ClassVar[collections.Counter[str]] = collections.Counter()

    def publish_msg(self, msg_type: str, *args: Any, **kwargs: Any) -> None:
        _Counting.sent[msg_type] += 1


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[str]]:
    """What the widgets made in the test send, counted (ipywidgets makes its comms with
    ``comm.create_comm``)."""
    _Counting.sent = collections.Counter()
    monkeypatch.setattr(comm, "create_comm", _Counting)
    yield _Counting.sent


def test_notebook_04s_player_and_demo_cells_stay_under_one_high_water_mark(
    sent: collections.Counter[str],
) -> None:
    # The player cell: made (its display is one display_data more, no widget message).
    player = SimulationPlayer(build_scenario(workers=4, seed=0))
    # The cell after it ("the same presses from code"): made, pressed, printed, closed.
    demo = SimulationPlayer(build_scenario(workers=4, seed=0), chart=False)
    demo.step()
    demo.advance(3600)
    assert "simulated time" in str(demo)
    demo.close()
    total = sum(sent.values())
    # 1,968 before the rows shared their layouts and styles and took their classes
    # when made (35 widgets and 22 class changes a row).
    assert total < HIGH_WATER_MARK, dict(sent)
    assert sent["comm_close"] == sent["comm_open"] - len(player_widgets(player)), dict(sent)
    player.close()


def player_widgets(player: SimulationPlayer) -> set[str]:
    """The ids of the widgets an open player holds (its tree, layouts and styles)."""
    import ipywidgets

    seen: set[str] = set()
    stack: list[Any] = [player.widget, *player.table._shared.all]
    while stack:
        widget = stack.pop()
        if widget.model_id in seen:
            continue
        seen.add(widget.model_id)
        for name in widget.keys:
            value = getattr(widget, name)
            if isinstance(value, ipywidgets.Widget):
                stack.append(value)
            elif isinstance(value, list | tuple):
                stack.extend(item for item in value if isinstance(item, ipywidgets.Widget))
    return seen


def test_a_row_leaving_the_table_leaves_the_others_layouts_and_styles_open() -> None:
    player = SimulationPlayer(build_scenario(workers=4, seed=0), chart=False)
    table = player.table
    names = [row["task"] for row in table.rows]
    table.find.value = names[0]  # the other rows leave the grid, and are closed
    (kept,) = table._rows.values()
    for widget in [*kept.cells.values(), *kept.buttons.values(), kept.controls]:
        assert widget.comm is not None and widget.layout.comm is not None
        style = getattr(widget, "style", None)
        assert style is None or style.comm is not None
    table.find.value = ""  # back: new rows, with the same shared layouts
    assert len(table.rows) == len(names)
    player.close()
    assert all(widget.comm is None for widget in table._shared.all)
