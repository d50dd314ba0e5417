"""One Chromium, one JupyterLab server and one Voila server for the browser tests a
pytest-xdist worker runs in a row (``--dist loadfile`` gives a worker whole files).
Each test's page has a browser context of its own in it
(``servers.browser_page``), and each test a folder, a kernel and a log of its own in the
servers (``servers.SharedServers`` says why sharing them is safe).

Package-scoped, not session-scoped: Playwright's sync API leaves an asyncio loop marked
running on the thread until it stops, so every asyncio test a worker ran after a browser
file failed while it lived ("Cannot run the event loop while another loop is running";
hidden only because the browser files were handed out last).  Stopped as the worker
leaves this package, they take that loop with them (tests/test_browser_fixture_scope.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser import servers


@pytest.fixture(scope="package", autouse=True)
def shared_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The servers (``servers.SHARED``): a Lab server's start took several seconds and
    its stop a kernel's shutdown, once for the browser files a worker runs in a row.
    Every browser file opens Lab, so its server starts here, importing while Chromium
    launches (:func:`one_chromium`); Voila's starts when a test first asks for it."""
    servers.SHARED = servers.SharedServers(tmp_path_factory.mktemp("servers"))
    try:
        servers.SHARED.server("jupyterlab")
        yield
    finally:
        servers.SHARED.close()
        servers.SHARED = None


@pytest.fixture(scope="package", autouse=True)
def one_chromium(shared_servers: None) -> Iterator[None]:
    """The browser (``servers.BROWSER``): a Chromium launch took 1-8 s.  After the
    servers, so that Lab's server starts first; closed before they stop."""
    with servers.chromium() as browser:
        servers.BROWSER = browser
        try:
            yield
        finally:
            servers.BROWSER = None
