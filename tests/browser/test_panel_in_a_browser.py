"""A real browser: Voila serves a notebook that shows a ControlPanel over a running scheduler;
headless Debian Chromium, driven by Playwright, presses Pause; the status shown changes and the
task stops running.  Needs /usr/bin/chromium (the Makefile installs Debian's package)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
NOTEBOOK = [
    "import itertools\n"
    "from lldsched import FixedRate, Scheduler\n"
    "from lldsched.widgets import ControlPanel",
    "beats = itertools.count(1)\n"
    "scheduler = Scheduler(workers=2).start()\n"
    "heartbeat = scheduler.schedule('heartbeat', lambda: next(beats), FixedRate(0.25))",
    "panel = ControlPanel(scheduler)\npanel",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def voila_url(tmp_path: Path) -> Iterator[str]:
    cells: list[dict[str, object]] = [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": source}
        for source in NOTEBOOK
    ]  # fmt: skip
    notebook = {
        "nbformat": 4, "nbformat_minor": 5, "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    }  # fmt: skip
    path = tmp_path / "panel.ipynb"
    path.write_text(json.dumps(notebook))
    port = free_port()
    voila = shutil.which("voila", path=os.path.dirname(sys.executable))
    assert voila is not None, "voila is not installed (it is in the test extra)"
    process = subprocess.Popen(
        [voila, str(path), "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    ready = threading.Event()
    log: list[str] = []

    def watch() -> None:  # Voila logs its URL once it serves; no polling needed
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if url in line:
                ready.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        assert ready.wait(60), "voila did not start within 60 s:\n" + "".join(log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def test_pressing_pause_in_a_browser_pauses_the_task_and_it_stops_running(voila_url: str) -> None:
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install chromium"
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(voila_url, timeout=60_000)
            status = page.locator(".lldsched-status")
            runs = page.locator(".lldsched-runs")
            expect(page.locator(".lldsched-task")).to_have_text("heartbeat", timeout=60_000)

            def shown_runs() -> int:
                return int(runs.inner_text())

            # Events reach the page: the run count climbs while the task is live.
            expect(runs).not_to_have_text("0", timeout=30_000)
            before = shown_runs()
            page.wait_for_function(
                f"() => Number(document.querySelector('.lldsched-runs').innerText) > {before}",
                timeout=30_000,
            )
            page.locator(".lldsched-pause").click()
            expect(status).to_have_text("paused", timeout=30_000)
            expect(page.locator(".lldsched-resume")).to_be_enabled()
            page.wait_for_timeout(500)  # a run in flight at the click may still land
            paused_at = shown_runs()
            page.wait_for_timeout(1500)  # six periods of the heartbeat: nothing may run
            assert shown_runs() == paused_at
            expect(status).to_have_text("paused")
        finally:
            browser.close()
