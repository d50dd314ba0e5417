"""tools/build_notebooks.py keeps every output of a cell, however slowly its messages are
read: nbclient's default drops what arrives over 4 s after the cell's reply (under load,
04's player cells lost their printed text so)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from jupyter_core.utils import ensure_async
from nbclient import NotebookClient
from traitlets import Integer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_notebooks  # noqa: E402

DEFAULT_WAIT = 1
"""nbclient's default wait for a cell's output after its reply, in seconds, in this test
(4 s in nbclient): a client told nothing drops what arrives later."""

READ_DELAY = 0.5
"""Seconds added to every output message read: a client slowed by load. A cell's four
messages (busy, its input, its text, idle) then take 2 s, twice the default wait."""


class SlowReader(NotebookClient):
    """A NotebookClient that reads the kernel's output messages slowly, and whose default
    wait for them is DEFAULT_WAIT: the same race as a 2 s delay against nbclient's 4 s,
    at a quarter of the time (the build either sets its own wait or drops the text)."""

    iopub_timeout = Integer(DEFAULT_WAIT)

    async def async_execute_cell(self, *args: Any, **kwargs: Any) -> Any:
        assert self.kc is not None
        channel = self.kc.iopub_channel
        if not getattr(channel, "slowed", False):
            read = channel.get_msg

            async def slowly(*read_args: Any, **read_kwargs: Any) -> Any:
                message = await ensure_async(read(*read_args, **read_kwargs))
                await asyncio.sleep(READ_DELAY)
                return message

            channel.get_msg = slowly
            channel.slowed = True
        return await super().async_execute_cell(*args, **kwargs)


@pytest.mark.timeout(180)
def test_a_cells_output_read_slowly_is_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(build_notebooks, "NotebookClient", SlowReader)
    source = tmp_path / "99-kept.py"
    source.write_text('# %%\nprint("kept")\n')
    notebook = build_notebooks.build(source)
    build_notebooks.execute(notebook)
    (cell,) = notebook.cells
    assert [output.get("text") for output in cell.outputs] == ["kept\n"]
