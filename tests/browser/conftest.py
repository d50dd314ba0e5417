"""One Chromium, one JupyterLab server and one Voila server for the browser tests a
pytest-xdist worker runs in a row (``--dist loadfile`` gives a worker whole files).
Each test's page has a browser context of its own in it
(``servers.browser_page``), and each test a folder, a kernel and a log of its own in the
servers (``servers.SharedServers`` says why sharing them is safe)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from tests.browser import servers


@pytest.fixture(scope="package", autouse=True)
def one_browser_and_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A Chromium launch took 1-8 s, a Lab server's start several more and its stop a
    kernel's shutdown: once each for the browser files a worker runs in a row.  Every
    browser test opens Lab, so its server starts first and imports while Chromium
    launches; Voila's starts when a test first asks for it.

    Package-scoped, not session-scoped: Playwright's sync API leaves an asyncio loop
    marked running on the thread until it stops, so every asyncio test a worker ran
    after a browser file failed while it lived ("Cannot run the event loop while another
    loop is running"; hidden only because the browser files were handed out last).
    Stopped as the worker leaves this package, it takes that loop with it
    (tests/test_browser_fixture_scope.py)."""
    with ExitStack() as stack:
        servers.SHARED = servers.SharedServers(tmp_path_factory.mktemp("servers"))
        stack.callback(setattr, servers, "SHARED", None)
        stack.callback(servers.SHARED.close)
        servers.SHARED.server("jupyterlab")
        servers.BROWSER = stack.enter_context(servers.chromium())
        stack.callback(setattr, servers, "BROWSER", None)
        yield
