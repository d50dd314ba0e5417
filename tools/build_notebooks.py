"""Build the teaching notebooks from their sources, and execute them so they carry outputs.

Sources live in ``notebooks/src/NN-title.py`` in the "percent" format: a line
``# %%`` starts a code cell, ``# %% [markdown]`` a Markdown cell whose lines are
comments (``# text``).  Either may end in cell tags, as jupytext writes them:
``# %% tags=["nbval-check-output"]`` makes nbval compare that cell's output (the
tag lives in the cell's metadata, so the learner never reads a tooling marker).
Reviewing a diff of a ``.py`` file is easy; a diff of notebook JSON is not.  This
script writes ``notebooks/NN-title.ipynb``, runs it top to bottom on a fresh
kernel, and strips what should not be committed:
widget state (``metadata.widgets``) and the widget-view outputs that refer to it
(their ``text/plain`` fallback stays), and execution timings.

Usage: ``python tools/build_notebooks.py [NAME ...]`` (``make notebooks``).
``tests/test_notebook_sources.py`` fails when a notebook and its source disagree.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, NamedTuple

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "notebooks" / "src"
NOTEBOOKS = ROOT / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_CELL = re.compile(r"^# %%(?P<markdown> \[markdown\])?(?:\s+tags=(?P<tags>\[.*\]))?\s*$")


class Cell(NamedTuple):
    kind: str  # "code" or "markdown"
    text: str
    tags: tuple[str, ...] = ()


def parse(source: str) -> list[Cell]:
    """The cells of a percent-format source."""
    cells: list[tuple[str, list[str], tuple[str, ...]]] = []
    for line in source.splitlines():
        match = _CELL.match(line)
        if match:
            tags = tuple(json.loads(match["tags"])) if match["tags"] else ()
            cells.append(("markdown" if match["markdown"] else "code", [], tags))
        elif cells:
            kind, lines, _ = cells[-1]
            if kind == "markdown":
                line = line[2:] if line.startswith("# ") else line.lstrip("#")
            lines.append(line)
    return [Cell(kind, "\n".join(lines).strip("\n"), tags) for kind, lines, tags in cells]


def build(source_path: Path) -> Any:
    cells = []
    for index, cell in enumerate(parse(source_path.read_text(encoding="utf-8"))):
        maker = (
            nbformat.v4.new_markdown_cell if cell.kind == "markdown" else nbformat.v4.new_code_cell
        )
        # Stable ids: a rebuild changes only what the source or the outputs changed.
        made = maker(cell.text, id=f"cell-{index:02d}")
        if cell.tags:
            made.metadata["tags"] = list(cell.tags)
        cells.append(made)
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.metadata["language_info"] = {"name": "python"}
    return notebook


CELL_SECONDS = 120
"""How long a cell may run, and how long its output may take to arrive after it ran."""


def execute(notebook: Any) -> None:
    """Run ``notebook`` on a fresh kernel, every cell's output kept or the build fails.

    nbclient waits ``iopub_timeout`` (4 s by default) after a cell's reply for the rest
    of its output, then drops what has not arrived and goes on without a word.  Under
    load that dropped the output of 04's player cells (some 800 widget messages each to
    read before their printed text): the rebuilt notebook lacked the stdout nbval
    compares.  Here the output gets as long as the cell, and a timeout fails the build."""
    client = NotebookClient(
        notebook,
        timeout=CELL_SECONDS,
        iopub_timeout=CELL_SECONDS,
        raise_on_iopub_timeout=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()


def clean(notebook: Any) -> None:
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
        for output in cell.get("outputs", []):
            data = output.get("data")
            if data and WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
        if "outputs" in cell:
            cell.outputs = coalesced(cell.outputs)


def coalesced(outputs: list[Any]) -> list[Any]:
    """``outputs`` with each run of adjacent stream outputs of one stream made one, as
    JupyterLab shows them and nbval compares them: how a cell's printed lines are cut
    into messages depends on when the kernel flushed (a loaded machine cut 04's table of
    pool sizes into three), which a rebuild should not turn into a diff."""
    merged: list[Any] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (
            last is not None
            and output.get("output_type") == "stream"
            and last.get("output_type") == "stream"
            and output.get("name") == last.get("name")
        ):
            last["text"] = _joined(last["text"]) + _joined(output["text"])
        else:
            merged.append(output)
    return merged


def _joined(text: str | list[str]) -> str:
    return text if isinstance(text, str) else "".join(text)


def main(names: list[str]) -> int:
    sources = sorted(SOURCES.glob("*.py"))
    if names:
        sources = [s for s in sources if any(name in s.stem for name in names)]
    for source in sources:
        notebook = build(source)
        execute(notebook)
        clean(notebook)
        target = NOTEBOOKS / f"{source.stem}.ipynb"
        nbformat.write(notebook, target)
        print(f"built {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
