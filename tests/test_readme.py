"""The README stays true: every Python block in it runs."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_every_python_block_in_the_readme_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert blocks, "the README lost its API tour"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
