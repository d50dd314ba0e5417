"""A worker that runs a browser file, then an asyncio test, runs both (tests/browser/conftest.py).

Playwright's sync API leaves an asyncio loop marked running on its thread while it
lives.  The browser tests' Chromium and servers were session-scoped, so every asyncio
test a worker ran after a browser file failed ("Cannot run the event loop while another
loop is running"); the order ``--dist loadfile`` happened to hand files out in (the
browser files last) hid it, and handing the longest files out first failed 102 tests.
Now they are the browser package's, stopped as a worker leaves it.  Run in a pytest of
its own, in that order, without xdist: one real browser test (the package's cheapest,
as the fixture is what is checked), then asyncio tests that need no loop running on
their thread.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The package's cheapest test (no kernel, no notebook): what fails is the package's
# fixture, whichever of its tests runs (the controls-error test took 22 s alone).
BROWSER_TEST = (
    "tests/browser/test_lab_run_all_in_a_browser.py"
    "::test_a_page_finds_nothing_an_earlier_page_stored"
)
ASYNCIO_TESTS = "tests/test_sim_running_loop.py"


@pytest.mark.timeout(300)
def test_asyncio_tests_after_a_browser_file_in_one_process_pass() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-p", "no:xdist", "-o", "addopts=", BROWSER_TEST, ASYNCIO_TESTS],
        capture_output=True, text=True, check=False, timeout=280, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    passed = [line.split(" ")[0] for line in ran.stdout.splitlines() if " PASSED" in line]
    assert passed[0] == BROWSER_TEST and len(passed) > 1, ran.stdout  # then the asyncio ones
    assert all(node.startswith(ASYNCIO_TESTS + "::") for node in passed[1:]), passed
