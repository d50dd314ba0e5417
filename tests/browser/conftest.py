"""One Chromium for the browser tests of a session (a launch took 1-8 s, by the load):
each test's page has a context of its own in it (``servers.browser_page``); and one
JupyterLab server for the Lab tests of a module (``servers.SharedLab``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser import servers


@pytest.fixture(scope="session", autouse=True)
def one_browser() -> Iterator[None]:
    with servers.chromium() as browser:
        servers.BROWSER = browser
        try:
            yield
        finally:
            servers.BROWSER = None


@pytest.fixture(scope="module", autouse=True)
def one_lab_a_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    servers.SHARED_LAB = servers.SharedLab(tmp_path_factory.mktemp("lab"))
    try:
        yield
    finally:
        servers.SHARED_LAB.close()
        servers.SHARED_LAB = None
