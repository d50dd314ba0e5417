"""How the browser tests wait for JupyterLab's run-all (tests/browser/servers.py): on
progress, not on the whole run.  A run slower in all than the bound, each of its cells
well inside it (a loaded machine), is waited for; a cell that hangs fails the run once
the bound passed, saying where the cells stood, and a cell the kernel is done with that
never finishes in the page fails it once the kernel has been silent a while, saying
what the page heard for it.  On a small notebook of its own, with the bounds cut to
seconds (:data:`~tests.browser.servers.STALL_SECONDS`,
:data:`~tests.browser.servers.SILENT_SECONDS`).

And what makes sharing the package's one Chromium safe (``servers.browser_page``): each
page is in a browser context of its own, so a page finds nothing an earlier page stored
for the same server.  That test starts no kernel and loads no notebook."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.browser import servers
from tests.browser.servers import browser_page, served

STALL = 8  # seconds: the bound, cut down for these tests
SILENT = 3  # seconds: the kernel's silence after which a run with no cell running is over
STEP = 2  # seconds each cell of the slow notebook takes: well inside STALL
CELLS = 5  # and five of them take longer than STALL in all (10 s against 8)


def notebook(folder: Path, name: str, sources: list[str]) -> Path:
    """``folder`` with the notebook ``name``: one code cell per source, none run yet."""
    folder.mkdir()
    cells: list[dict[str, object]] = [
        {"cell_type": "code", "execution_count": None, "id": f"cell-{n}", "metadata": {},
         "outputs": [], "source": source}
        for n, source in enumerate(sources)
    ]  # fmt: skip
    kernel = {"kernelspec": {"display_name": "Python 3", "name": "python3"}}  # else Lab asks
    document = {"cells": cells, "metadata": kernel, "nbformat": 4, "nbformat_minor": 5}
    (folder / f"{name}.ipynb").write_text(json.dumps(document), encoding="utf-8")
    return folder


def run_all_failure(tmp_path: Path, sources: list[str]) -> str:
    """What Lab's run-all of a notebook of ``sources`` fails with."""
    folder = notebook(tmp_path / "source", "fails", sources)
    lab = served("jupyterlab", "fails", tmp_path, notebooks=folder)
    with lab as (url, prepare, _), browser_page() as page:
        page.goto(url, timeout=60_000, wait_until="commit")
        with pytest.raises(AssertionError) as failed:
            prepare(page)
    return str(failed.value)


@pytest.fixture
def short_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(servers, "STALL_SECONDS", STALL)
    monkeypatch.setattr(servers, "SILENT_SECONDS", SILENT)


@pytest.mark.usefixtures("short_stall")
@pytest.mark.timeout(300)
def test_a_run_all_slower_than_the_bound_whose_cells_each_finish_inside_it_passes(
    tmp_path: Path,
) -> None:
    sources = [f"import time\ntime.sleep({STEP})\n{n}" for n in range(CELLS)]
    folder = notebook(tmp_path / "source", "slow", sources)
    lab = served("jupyterlab", "slow", tmp_path, notebooks=folder)
    with lab as (url, prepare, _), browser_page() as page:
        page.goto(url, timeout=60_000, wait_until="commit")
        prepare(page)  # CELLS * STEP seconds, more than STALL: waited for
        counts = page.evaluate(
            """() => window.jupyterapp.shell.currentWidget.content.widgets.map(
                (cell) => cell.model.executionCount)"""
        )
    assert counts == list(range(1, CELLS + 1))


@pytest.mark.usefixtures("short_stall")
@pytest.mark.timeout(300)
def test_a_run_all_whose_cell_hangs_fails_once_no_cell_finished_within_the_bound(
    tmp_path: Path,
) -> None:
    said = run_all_failure(tmp_path, ["1", "import time\ntime.sleep(3600)", "3"])
    assert said.startswith(f"JupyterLab's run-all finished no cell in {STALL} s, at 1 cells run")
    # the kernel's state as the page last heard it, named (in a full suite under load the
    # page had heard "idle" once: the status message of the hanging cell came later)
    assert re.search(r"\(kernel connected/(busy|idle), 2 of 3 cells pending\)", said), said
    assert "; code cell 2 (import time) is running: its request went " in said, said


# The kernel runs the request of the cell `'no reply'` (busy, then idle) and never
# answers it: Lab's run-all waits for that reply forever.
NO_REPLY = """kernel = get_ipython().kernel
answer = kernel.shell_handlers["execute_request"]


async def no_reply(stream, ident, parent):
    if parent["content"]["code"] != "'no reply'":
        await answer(stream, ident, parent)


kernel.shell_handlers["execute_request"] = no_reply"""


@pytest.mark.timeout(300)
def test_a_run_all_whose_cell_the_kernel_left_unanswered_fails_once_the_kernel_is_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not after the stall's whole bound (left at its 120 s here): the kernel said it was
    idle after the request and then nothing, so nothing more is coming."""
    monkeypatch.setattr(servers, "SILENT_SECONDS", SILENT)
    said = run_all_failure(tmp_path, [NO_REPLY, "'no reply'", "3"])
    assert said.startswith(
        "JupyterLab's run-all stopped at 2 cells run (kernel connected/idle, 1 of 3 cells "
        "pending): the kernel said it was idle after the cell's request, and it has said "
        f"nothing for {SILENT} s; code cell 2 ('no reply') is running: its request went "
    ), said
    assert "and the page heard for it: status busy, status idle; the page handled" in said, said


def test_a_page_finds_nothing_an_earlier_page_stored() -> None:
    """What one page stores for the Lab server's address (a cookie, an entry of its
    local storage) the next page, on the same address, does not find."""
    assert servers.SHARED is not None and servers.BROWSER is not None  # the package's
    url = f"{servers.SHARED.server('jupyterlab').url}api"  # a small answer, of the origin
    with browser_page() as page:
        page.goto(url, timeout=60_000)
        page.evaluate("() => { localStorage.setItem('left', 'by the first page');"
                      " document.cookie = 'left=by-the-first-page; path=/'; }")  # fmt: skip
        stored = page.evaluate("() => [localStorage.getItem('left'), document.cookie]")
        assert stored[0] == "by the first page" and "left=by-the-first-page" in stored[1]
    with browser_page() as page:
        page.goto(url, timeout=60_000)
        found = page.evaluate("() => [localStorage.getItem('left'), document.cookie]")
    assert found[0] is None, found
    assert "left=" not in found[1], found
