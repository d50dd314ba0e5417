"""The committed notebooks match their percent-format sources, carry outputs, and no widget
state (rebuild them with `make notebooks`)."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from build_notebooks import coalesced, parse  # noqa: E402

SOURCES = sorted((ROOT / "notebooks" / "src").glob("*.py"))
MARKERS = ("NBVAL_", "fmt: skip", "fmt: off", "type: ignore", "noqa", "pragma: no cover")
ANSI_ESCAPE = "\x1b["


def test_every_source_has_a_notebook_and_every_notebook_a_source() -> None:
    notebooks = {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert notebooks == {p.stem for p in SOURCES}
    assert len(notebooks) >= 3


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_the_notebook_matches_its_source_and_carries_outputs_without_widget_state(
    source: Path,
) -> None:
    notebook = json.loads((ROOT / "notebooks" / f"{source.stem}.ipynb").read_text())
    cells = [
        (c["cell_type"], "".join(c["source"]), tuple(c["metadata"].get("tags", ())))
        for c in notebook["cells"]
    ]
    assert cells == parse(source.read_text()), "out of date: run `make notebooks`"
    assert "widgets" not in notebook["metadata"]
    # Tooling markers do not belong in what a learner reads (nbval's live in cell tags).
    marked = [(marker, text) for _, text, _ in cells for marker in MARKERS if marker in text]
    assert not marked, f"a tooling marker in a cell: {marked[0]}"
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] is not None for c in code), "not executed"
    assert any(c["outputs"] for c in code)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_the_notebook_outputs_are_plain_text_without_errors(source: Path) -> None:
    """What a learner reads after a clean run: no traceback, nothing on stderr, and no
    terminal colour codes (a notebook shows them as noise: 08's pytest run printed them)."""
    notebook = json.loads((ROOT / "notebooks" / f"{source.stem}.ipynb").read_text())
    for cell in notebook["cells"]:
        for output in cell.get("outputs", ()):
            where = f"{cell['id']}: {json.dumps(output)[:300]}"
            assert output["output_type"] != "error", f"an error in {where}"
            assert output.get("name") != "stderr", f"stderr in {where}"
            assert ANSI_ESCAPE not in _text_of(output), f"ANSI in {where}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_a_cells_printed_lines_are_one_output_a_stream(source: Path) -> None:
    """Adjacent outputs of one stream are one (the build coalesces them): how the kernel
    cut a cell's prints into messages is no part of what the notebook says."""
    notebook = json.loads((ROOT / "notebooks" / f"{source.stem}.ipynb").read_text())
    for cell in notebook["cells"]:
        kinds = [(o["output_type"], o.get("name")) for o in cell.get("outputs", ())]
        pairs = itertools.pairwise(kinds)
        assert not any(a == b and a[0] == "stream" for a, b in pairs), (
            f"{cell['id']}: adjacent outputs of one stream: run `make notebooks`"
        )


def test_coalescing_joins_adjacent_outputs_of_one_stream_only() -> None:
    out = {"output_type": "stream", "name": "stdout"}
    err = {"output_type": "stream", "name": "stderr"}
    data = {"output_type": "display_data", "data": {"text/plain": "x"}, "metadata": {}}
    outputs = [
        {**out, "text": ["a\n", "b\n"]},
        {**out, "text": "c\n"},
        {**err, "text": "d\n"},
        {**out, "text": "e\n"},
        data,
        {**out, "text": "f\n"},
    ]
    assert coalesced(outputs) == [
        {**out, "text": "a\nb\nc\n"},
        {**err, "text": "d\n"},
        {**out, "text": "e\n"},
        data,
        {**out, "text": "f\n"},
    ]


def _text_of(output: dict[str, Any]) -> str:
    """Every text an output holds: a stream's, an error's traceback, each data type's."""
    texts = [output.get("text", ""), *output.get("traceback", ()), *output.get("data", {}).values()]
    return "".join("".join(t) if isinstance(t, list) else str(t) for t in texts)


def _lab_results() -> list[str]:
    """The names of the result types the design lab's experiments return (NamedTuples)."""
    import importlib
    import pkgutil

    import lldsched.lab

    names = set()
    for module in pkgutil.iter_modules(lldsched.lab.__path__):
        space = vars(importlib.import_module(f"lldsched.lab.{module.name}"))
        names |= {
            name
            for name, value in space.items()
            if isinstance(value, type)
            and hasattr(value, "_fields")
            and value.__module__.startswith("lldsched.lab")  # not a schedule it imports
        }
    return sorted(names)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_no_output_shows_a_lab_result_as_its_bare_repr(source: Path) -> None:
    """``Lateness(ran_in_time=False, lateness=0.0)`` printed for the real queue reads as a
    run that was not in time, when the field means "ran before the fake clock moved": the
    right behaviour of a spurious wake-up.  Each experiment's result is said in words, as
    the lab's toggles say it."""
    notebook = json.loads((ROOT / "notebooks" / f"{source.stem}.ipynb").read_text())
    results = _lab_results()
    assert "Lateness" in results
    for cell in notebook["cells"]:
        for output in cell.get("outputs", ()):
            text = _text_of(output)
            shown = [name for name in results if f"{name}(" in text]
            assert not shown, f"{cell['id']} prints a bare {shown[0]}: {text[:200]}"
