"""notebooks/voila.json applies when Voila is started from notebooks/ (as docs/SIMULATION.md says,
and as tests/browser/servers.py starts it): its executor waits 30 s for a cell's output
after the cell's reply, not nbclient's 4 s, past which the rest of that output is dropped."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from nbformat import NotebookNode
from voila.app import Voila  # type: ignore[import-untyped]
from voila.execute import VoilaExecutor  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
EMPTY = NotebookNode(cells=[], metadata={}, nbformat=4, nbformat_minor=5)  # type: ignore[no-untyped-call]


def executor_of_voila_started_in(monkeypatch: pytest.MonkeyPatch, directory: Path) -> Any:
    """The executor Voila would run 04 with, started (``voila 04-...ipynb``) in ``directory``."""
    monkeypatch.chdir(directory)
    stop = signal.getsignal(signal.SIGTERM)  # Voila.initialize installs its own
    try:
        app = Voila()
        app.initialize([str(NOTEBOOKS / "04-simulation.ipynb")])
    finally:
        signal.signal(signal.SIGTERM, stop)
    return VoilaExecutor(EMPTY, config=app.config)


def test_voila_started_from_notebooks_gives_a_cells_output_30_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert executor_of_voila_started_in(monkeypatch, NOTEBOOKS).iopub_timeout == 30
    assert json.loads((NOTEBOOKS / "voila.json").read_text()) == {
        "VoilaExecutor": {"iopub_timeout": 30}
    }


def test_voila_started_elsewhere_keeps_nbclients_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert executor_of_voila_started_in(monkeypatch, tmp_path).iopub_timeout == 4
