"""A real browser: a notebook shows a ControlPanel over a running scheduler; headless Debian
Chromium, driven by Playwright, presses Pause; the status shown changes and the task stops
running.  Served by Voila (the notebook runs as an app) and by JupyterLab (the cells are run
by Lab's own "run all cells" command).  Needs /usr/bin/chromium (the Makefile installs
Debian's package)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
NOTEBOOK = [
    "import itertools\n"
    "from lldsched import FixedRate, Scheduler\n"
    "from lldsched.views.widgets import ControlPanel",
    "beats = itertools.count(1)\n"
    "scheduler = Scheduler(workers=2).start()\n"
    "heartbeat = scheduler.schedule('heartbeat', lambda: next(beats), FixedRate(0.25))\n"
    "ticker = scheduler.schedule('ticker', lambda: None, FixedRate(0.25))",
    "panel = ControlPanel(scheduler)\npanel",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_notebook(path: Path) -> None:
    cells: list[dict[str, object]] = [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": source}
        for source in NOTEBOOK
    ]  # fmt: skip
    notebook = {
        "nbformat": 4, "nbformat_minor": 5, "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    }  # fmt: skip
    path.write_text(json.dumps(notebook))


def tool(name: str) -> str:
    found = shutil.which(name, path=os.path.dirname(sys.executable))
    assert found is not None, f"{name} is not installed (see pyproject's extras)"
    return found


KERNEL_READY = """() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext && panel.sessionContext.session
        && panel.sessionContext.session.kernel;
    return !!kernel && kernel.connectionStatus === "connected" && kernel.status === "idle";
}"""


def run_cells_in_lab(page: Any) -> None:
    """JupyterLab opens the notebook without running it: once the notebook's kernel is
    connected and idle, run every cell through Lab's command registry (the app is
    exposed as ``window.jupyterapp`` by ``--LabApp.expose_app_in_browser``).  Clicking
    Run > Run All Cells as soon as the execution indicator showed idle left every
    cell unrun in 2 of 7 runs; the kernel's own connection state is what "ready" means."""
    page.wait_for_function(KERNEL_READY, timeout=60_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


SERVERS: dict[str, tuple[Callable[[Path, int], list[str]], str, Callable[[Any], None] | None]] = {
    # name: (command line, path to open, what to do once the page is there)
    "voila": (
        lambda path, port: [tool("voila"), str(path), "--no-browser", f"--port={port}",
                            "--Voila.ip=127.0.0.1"],
        "",
        None,
    ),
    "jupyterlab": (
        lambda path, port: [tool("jupyter"), "lab", "--no-browser", f"--port={port}",
                            "--ServerApp.ip=127.0.0.1", "--allow-root",
                            "--IdentityProvider.token=", f"--ServerApp.root_dir={path.parent}",
                            "--LabApp.expose_app_in_browser=True"],
        "lab/tree/panel.ipynb",
        run_cells_in_lab,
    ),
}  # fmt: skip


@pytest.fixture(params=sorted(SERVERS))
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """Start the server on loopback; yield the page's URL and what to do on it first."""
    command, page_path, prepare = SERVERS[request.param]
    path = tmp_path / "panel.ipynb"
    write_notebook(path)
    port = free_port()
    process = subprocess.Popen(
        command(path, port), cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    ready = threading.Event()
    log: list[str] = []

    def watch() -> None:  # the server logs its URL once it serves; no polling needed
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if url in line:
                ready.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        assert ready.wait(60), f"{request.param} did not start within 60 s:\n" + "".join(log)
        yield url + page_path, prepare
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def test_pressing_pause_in_a_browser_pauses_the_task_and_it_stops_running(
    served: tuple[str, Callable[[Any], None] | None],
) -> None:
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install chromium"
    from playwright.sync_api import expect, sync_playwright

    url, prepare = served
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url, timeout=60_000)
            if prepare is not None:
                prepare(page)
            # Cells carry the task's id: task-1 is the heartbeat, task-2 the ticker, a
            # live task whose runs measure time for the paused one.
            status = page.locator(".lldsched-status.lldsched-task-1")
            expect(page.locator(".lldsched-task.lldsched-task-1")).to_have_text(
                "heartbeat", timeout=60_000
            )

            def shown_runs(task_id: str) -> int:
                return int(page.locator(f".lldsched-runs.lldsched-{task_id}").inner_text())

            def wait_for_runs(task_id: str, more_than: int) -> None:
                cell = f".lldsched-runs.lldsched-{task_id}"
                page.wait_for_function(
                    f"() => Number(document.querySelector('{cell}').innerText) > {more_than}",
                    timeout=30_000,
                )

            # Events reach the page: the run count climbs while the task is live.
            wait_for_runs("task-1", 0)
            wait_for_runs("task-1", shown_runs("task-1"))
            page.locator(".lldsched-pause.lldsched-task-1").click()
            expect(status).to_have_text("paused", timeout=30_000)
            expect(page.locator(".lldsched-resume.lldsched-task-1")).to_be_enabled()
            # Two ticker runs later, a heartbeat run in flight at the click has landed
            # (events arrive in order); six more, and the heartbeat has not run again.
            wait_for_runs("task-2", shown_runs("task-2") + 1)
            paused_at = shown_runs("task-1")
            wait_for_runs("task-2", shown_runs("task-2") + 5)
            assert shown_runs("task-1") == paused_at
            expect(status).to_have_text("paused")
        finally:
            browser.close()
