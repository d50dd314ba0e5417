"""A stand-in browser test for tests/test_browser_fixture_scope.py, not collected by the
suite (its name is not ``test_*.py``; that check gives its path).  It loads no page and
starts no kernel: what is checked is the package's fixtures (tests/browser/conftest.py),
which set up as for any test of the package, Playwright's loop with them."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.browser import servers

SEEN: dict[str, Any] = {}
"""The package's Chromium and Lab server, for tests/browser_scope_probe.py to find
stopped."""


def test_the_package_has_its_browser_servers_and_playwright_loop() -> None:
    """The premise of the check: inside the package, Chromium and the servers are up,
    and Playwright's sync API has an asyncio loop marked running on this thread (the
    loop every asyncio test after the package would trip over, were it left)."""
    assert servers.BROWSER is not None and servers.SHARED is not None
    assert servers.BROWSER.is_connected()
    SEEN["browser"] = servers.BROWSER
    SEEN["lab"] = servers.SHARED.server("jupyterlab")  # started by the package's fixture
    assert not SEEN["lab"].stopped
    assert asyncio.get_running_loop() is not None  # raises RuntimeError where none runs
