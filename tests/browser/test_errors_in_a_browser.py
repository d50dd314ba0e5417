"""What a learner sees of a control's error in a real browser: in JupyterLab (whose page
sends widget messages on a kernel subshell, so each change and press is queued to the
kernel's thread) and in Voila (where it runs at once).

An ``interact`` box whose later call raised shows the traceback in the box, once, as the
notebook shows a cell's ("Cell In[1], line 13"); a return value whose ``_repr_html_``
raised is in the box too, not under the cell that ran last.  A player's press whose step
raised (a duration model's bug) says so under its table, its traceback a click away,
and the next press steps on; none of it goes to the server's log only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.browser.servers import (
    RUN_ALL_TEST_SECONDS,
    SERVER_NAMES,
    browser_page,
    screenshot,
    served,
    where_it_stands,
)
from tests.test_interact import DRAW

CONTROLS = f"{DRAW}\ninteract(draw, x=[0, 1, 2]);"

PLAYER = """\
from datetime import UTC, datetime
from lldsched import FixedRate
from lldsched.sim import Simulation
from lldsched.views.widgets import SimulationPlayer

calls = []

def breaks_once(*_args):
    calls.append(1)
    if len(calls) == 2:
        raise ValueError("the duration model broke")
    return 30.0

sim = Simulation(workers=1, start=datetime(2026, 1, 5, tzinfo=UTC))
sim.schedule("tick", FixedRate(600), duration=breaks_once)
SimulationPlayer(sim, chart=False)"""

LAST = 'print("the last cell")'


def notebook(folder: Path) -> Path:
    """A notebook of the three cells, unrun (nbformat 4, as Lab and Voila read it)."""
    folder.mkdir()
    cells: list[dict[str, object]] = [
        {"cell_type": "code", "execution_count": None, "id": f"cell-{index}", "metadata": {},
         "outputs": [], "source": source}
        for index, source in enumerate((CONTROLS, PLAYER, LAST))
    ]  # fmt: skip
    kernel = {"display_name": "Python 3", "language": "python", "name": "python3"}
    made = {"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}
    (folder / "errors.ipynb").write_text(json.dumps(made))  # Lab asks for no kernel
    return folder


@pytest.mark.timeout(RUN_ALL_TEST_SECONDS)
@pytest.mark.parametrize("server", SERVER_NAMES)
def test_a_controls_error_shows_in_its_own_view_once(server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    folder = notebook(tmp_path / "made")
    with (
        served(server, "errors", tmp_path, notebooks=folder) as (url, prepare, log),
        browser_page() as page,
    ):
        page.goto(url, timeout=60_000, wait_until="commit")
        prepare(page)
        box = page.locator(".widget-interact")
        try:
            expect(box.locator("b")).to_have_text("shown 0", timeout=90_000)
        except AssertionError as exc:
            raise AssertionError(f"no controls: {where_it_stands(page, log)}") from exc
        last_step = page.locator(".lldsched-player-last-step")
        expect(page.locator(".lldsched-player-step")).to_be_visible(timeout=60_000)

        box.locator("select").select_option("2")
        error = box.locator(".jp-OutputArea-output", has_text="ZeroDivisionError")
        expect(error).to_contain_text("x is 2", timeout=30_000)
        expect(error).to_contain_text("Cell In[1], line 13")  # as a cell's error reads
        expect(box.locator(".jp-OutputArea-output")).to_have_count(1)  # once, and alone

        box.locator("select").select_option("1")
        expect(box.locator(".jp-OutputArea-output", has_text="its html broke")).to_have_count(
            1, timeout=30_000
        )
        expect(box).not_to_contain_text("ZeroDivisionError")  # replaced by the next call
        screenshot(page, f"errors-{server}-interact")

        message = page.locator(".lldsched-message")
        step = page.locator(".lldsched-player-step")
        step.click()
        expect(last_step).to_contain_text("tick started", timeout=30_000)
        step.click()
        expect(last_step).to_contain_text("tick finished", timeout=30_000)
        step.click()  # the second run's start: its duration model raises
        expect(message).to_contain_text(
            "step failed: ValueError: the duration model broke", timeout=30_000
        )
        message.locator("summary").click()  # its traceback, opened
        expect(message.locator("pre")).to_contain_text('raise ValueError("the duration model')
        screenshot(page, f"errors-{server}-player")
        step.click()  # and the player still steps
        expect(last_step).to_contain_text("tick started", timeout=30_000)

        # Nothing of either error went anywhere else: not under the last cell (which
        # the kernel's parent of the moment was, in Lab), nor to the server's log.
        if server == "jupyterlab":
            outputs = page.locator(".jp-Cell").last.locator(".jp-OutputArea-output")
            expect(outputs).to_have_text(["the last cell"])
        errors = [line for line in log if "Traceback" in line or "Exception in" in line]
        assert not errors, errors
