"""A stand-in asyncio test for tests/test_browser_fixture_scope.py, run after
tests/browser/scope_probe.py in one process; not collected by the suite (its name is not
``test_*.py``).  Outside the browser package, what its fixtures set up is stopped:
Playwright's loop, Chromium and the Lab server."""

from __future__ import annotations

import asyncio

import pytest

from tests.browser import servers
from tests.browser.scope_probe import SEEN


async def answer() -> int:
    await asyncio.sleep(0)
    return 42


def test_after_the_browser_package_no_loop_runs_on_this_thread() -> None:
    """What 102 tests failed on when the fixtures were the session's: ``asyncio.run()
    cannot be called from a running event loop``."""
    with pytest.raises(RuntimeError, match="no running event loop"):
        asyncio.get_running_loop()
    assert asyncio.run(answer()) == 42
    assert servers.BROWSER is None and servers.SHARED is None
    assert not SEEN["browser"].is_connected(), "Chromium is still running"
    assert SEEN["lab"].stopped, "the Lab server is still running"
