"""A worker that runs a browser file, then an asyncio test, runs both (tests/browser/conftest.py).

Playwright's sync API leaves an asyncio loop marked running on its thread while it
lives.  The browser tests' Chromium and servers were session-scoped, so every asyncio
test a worker ran after a browser file failed ("Cannot run the event loop while another
loop is running"); the order ``--dist loadfile`` happened to hand files out in (the
browser files last) hid it, and handing the longest files out first failed 102 tests.
Now they are the browser package's, stopped as a worker leaves it.

Run in a pytest of its own, in that order, without xdist: a stand-in browser test
(tests/browser/scope_probe.py, set up by the package's own fixtures; it finds Playwright's
loop running on its thread), then a stand-in asyncio test outside the package
(tests/browser_scope_probe.py: no loop running, ``asyncio.run`` runs, Chromium and the Lab
server stopped).  Stand-ins, not a browser file and ``test_sim_running_loop.py``: every
one of the 102 failures was that loop, which the stand-ins look at directly, and a real
file's pages, kernels and subprocesses cost most of a minute under load and check
nothing of the fixture's.  nbval is not loaded: no notebook is collected, and its import
(nbformat, jsonschema) was most of the pytest's start.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BROWSER_TEST = "tests/browser/scope_probe.py"
ASYNCIO_TEST = "tests/browser_scope_probe.py"


@pytest.mark.timeout(300)
def test_asyncio_tests_after_a_browser_file_in_one_process_pass() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-p", "no:xdist", "-p", "no:nbval", "-o", "addopts=", BROWSER_TEST, ASYNCIO_TEST],
        capture_output=True, text=True, check=False, timeout=280, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    passed = [line.split(" ")[0] for line in ran.stdout.splitlines() if " PASSED" in line]
    assert [node.split("::")[0] for node in passed] == [BROWSER_TEST, ASYNCIO_TEST], ran.stdout
