"""Serving the shipped notebooks to a real browser: Voila (a notebook runs as an app) and
JupyterLab (Lab's own "run all cells" command runs it), on loopback, in a copy of
``notebooks/`` so nothing the servers write lands in the repository.  Debian's Chromium
(``/usr/bin/chromium``, which the Makefile installs) is driven by Playwright."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SERVER_NAMES = ("jupyterlab", "voila")
SCREENSHOTS = os.environ.get("LLDSCHED_SCREENSHOTS")
"""A directory to save the tests' screenshots in (to look at them); unset: none saved."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


RUN_ALL = """() => {
    window.lldschedRanAll = null;
    window.lldschedCleared = false;
    const commands = window.jupyterapp.commands;
    commands.execute("notebook:clear-all-cell-outputs")
        .then(() => {
            window.lldschedCleared = true;
            return commands.execute("notebook:run-all-cells");
        })
        .then(
            (ran) => { window.lldschedRanAll = String(ran); },
            (error) => { window.lldschedRanAll = "failed: " + error; });
}"""
RAN_ALL = """() => {
    if (window.lldschedRanAll !== null) {
        return true;
    }
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    if (!window.lldschedCleared || !kernel || kernel.status !== "idle") {
        return false;
    }
    const code = panel.content.widgets.filter((cell) => cell.model.type === "code");
    return code.length > 0 && code.every((cell) => cell.model.executionCount !== null);
}"""
COUNTED = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    if (!window.lldschedCleared || !panel) {
        return -1;
    }
    const code = panel.content.widgets.filter((cell) => cell.model.type === "code");
    return code.filter((cell) => cell.model.executionCount !== null).length;
}"""
RAN_ALL_OR_MOVED = f"""(counted) => ({RAN_ALL})() || ({COUNTED})() !== counted"""
PENDING = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    const prompts = [...document.querySelectorAll(".jp-InputPrompt")].map((p) => p.innerText);
    return `kernel ${kernel ? kernel.connectionStatus + "/" + kernel.status : "none"}, `
        + `${prompts.filter((p) => p.includes("*")).length} of ${prompts.length} cells pending`;
}"""
STALL_SECONDS = 120
"""The longest JupyterLab's run-all may go without a code cell finishing (or, the cells
all run, without the run being over): longer is a hang.  Measured at a load of 9-11 on
two cores, the longest wait between two cells finishing was 7.5 s (09, whose run-all
took 33 s; 04's 3.1 s of 14 s)."""


RUN_ALL_TEST_SECONDS = 600
"""pytest's timeout for a test that has JupyterLab run all of a notebook: the whole
test's last resort, never the failure a slow run meets first (the run-all's wait fails
on a stall, :data:`STALL_SECONDS`, and each later wait has a bound of its own, all of
them saying where the page stood)."""


def run_all_in_lab(page: Any, log: list[str]) -> None:
    """JupyterLab opens the notebook without running it: once the notebook's kernel is
    connected and idle, run every cell through Lab's command registry (the app is
    exposed as ``window.jupyterapp`` by ``--LabApp.expose_app_in_browser``).  Clicking
    Run > Run All Cells as soon as the execution indicator showed idle left every
    cell unrun in 2 of 7 runs; the kernel's own connection state is what "ready" means.

    The run is waited for with a bound: once in about a dozen runs (2026-12-01) the
    command's promise never settled and the test hung until pytest's timeout, with
    nothing to say why; now the failure says where the kernel and the cells stood.
    It then failed once (2026-12-03) with the kernel idle and no cell pending: the
    cells had run and only the promise was missing.  So the outputs (and execution
    counts, which the shipped notebook carries) are cleared first, and the run is
    over when the promise settles or, without it, when the clearing is done, the
    kernel is idle and every code cell has a count again.

    The bound is on progress, not on the whole run: the run fails once no code cell
    has finished for :data:`STALL_SECONDS` (a cell, or the run's end, that hangs), and
    a run that goes on finishing cells is waited for, however loaded the machine (a
    bound of 180 s on the whole run failed under two test suites at once; 04's run
    takes 14 s and 09's 33 s at a load of 9-11).  The test's own timeout bounds the
    whole (:data:`RUN_ALL_TEST_SECONDS`)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.wait_for_function(KERNEL_READY, timeout=60_000)
    page.evaluate(RUN_ALL)
    while not page.evaluate(RAN_ALL):
        counted = page.evaluate(COUNTED)
        try:
            page.wait_for_function(RAN_ALL_OR_MOVED, arg=counted, timeout=STALL_SECONDS * 1000)
        except PlaywrightTimeout:
            raise AssertionError(
                f"JupyterLab's run-all finished no cell in {STALL_SECONDS} s, at {counted} "
                f"cells run ({page.evaluate(PENDING)}); {where_it_stands(page, log)}"
            ) from None


def _command(server: str, notebook: Path, port: int, tmp_path: Path) -> list[str]:
    if server == "voila":
        return [tool("voila"), str(notebook), "--no-browser", f"--port={port}",
                "--Voila.ip=127.0.0.1"]  # fmt: skip
    return [tool("jupyter"), "lab", "--no-browser", f"--port={port}",
            "--ServerApp.ip=127.0.0.1", "--allow-root", "--IdentityProvider.token=",
            f"--ServerApp.root_dir={notebook.parent}",
            "--LabApp.expose_app_in_browser=True",
            # A fresh Lab: no workspace restored from another session, no news pop-up.
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
            f"--LabApp.user_settings_dir={_lab_settings(tmp_path / 'settings')}"]  # fmt: skip


def _lab_settings(directory: Path) -> Path:
    notification = directory / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    return directory


class Served(NamedTuple):
    """A notebook being served: the page's URL, what to do once the page is there (Lab:
    run all cells), and the server's log so far (for a failure's message)."""

    url: str
    prepare: Callable[[Any], None]
    log: list[str]


def where_it_stands(page: Any, log: list[str], *, lines: int = 25) -> str:
    """What a failed wait saw: the page's load state and visible text (Voila shows
    "Executing N of M" while its kernel runs the notebook) and the server log's tail."""
    state = page.evaluate("() => document.readyState")
    shown = page.evaluate("() => document.body ? document.body.innerText : ''")
    text = " ".join(str(shown).split())
    return f"page {state!r}, showing: {text[:300]!r}\nserver log, last {lines} lines:\n" + "".join(
        log[-lines:]
    )


@contextmanager
def served(
    server: str, name: str, tmp_path: Path, *, notebooks: Path = ROOT / "notebooks"
) -> Iterator[Served]:
    """Serve the notebook ``name`` of ``notebooks`` (the shipped ones unless given; a
    copy, so nothing the servers write lands there) with ``server``."""
    copy = tmp_path / "notebooks"
    shutil.copytree(notebooks, copy, ignore=shutil.ignore_patterns("src", ".ipynb_checkpoints"))
    notebook = copy / f"{name}.ipynb"
    assert notebook.exists(), f"no notebook {name}"
    port = free_port()
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}  # the kernels import this checkout's lldsched
    process = subprocess.Popen(
        _command(server, notebook, port, tmp_path), cwd=copy, env=env,
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
        assert ready.wait(60), f"{server} did not start within 60 s:\n" + "".join(log)
        if server == "voila":
            yield Served(url, lambda page: None, log)
        else:
            yield Served(
                url + f"lab/tree/{name}.ipynb", lambda page: run_all_in_lab(page, log), log
            )
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


@contextmanager
def browser_page() -> Iterator[Any]:
    """A fresh page in headless Chromium."""
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install chromium"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 1000})
        finally:
            browser.close()


def screenshot(page: Any, name: str) -> None:
    """Save a screenshot of the page as ``name``.png in :data:`SCREENSHOTS`, if set."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=False)
