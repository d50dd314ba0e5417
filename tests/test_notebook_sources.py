"""The committed notebooks match their percent-format sources, carry outputs, and no widget
state (rebuild them with `make notebooks`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from build_notebooks import parse  # noqa: E402

SOURCES = sorted((ROOT / "notebooks" / "src").glob("*.py"))


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
    marker = "NBVAL_"  # nbval's markers live in cell tags, not in what a learner reads
    assert not [text for _, text, _ in cells if marker in text]
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] is not None for c in code), "not executed"
    assert any(c["outputs"] for c in code)
